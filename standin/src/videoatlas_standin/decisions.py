"""``POST /v1/decisions``: vLLM 0.33's Decisions route, each question answered from what the stand-in reads in the text.

vLLM serves it for a few architectures only (here: Qwen3 and Qwen3.5 with ``--logprobs-mode raw_logprobs``); any
other server validates the request, then answers 501, as the stand-in does unless started with ``--decisions``. As
vLLM's route, it holds the body to vLLM's request model (copied below, field for field: a refused body gets vLLM's
error list word for word), the one model served, at most 64 questions of at most 26 options and no ``joint`` read.
Each question is one read of the prompt vLLM's ``NextTokenStrategy`` writes (:func:`_prompt`), its tokens counted
and cached as the chat route's; one token is generated. The probabilities are the policy's over every line of the
text (rule 8); an option's label takes the whole mass, where a model's labels leave some to other tokens.
"""

from __future__ import annotations

import asyncio
import functools
import json
from typing import Annotated, Any, Literal

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictStr, ValidationError, model_validator

from videoatlas_standin import contract, policy, record
from videoatlas_standin.context import ServerContext
from videoatlas_standin.contract import Refusal, vllm_validation
from videoatlas_standin.tokens import BLOCK, prompt_tokens

MAX_QUESTIONS = 64
"""Questions a request may ask (vLLM's ``NextTokenStrategy.limits``)."""
LABELS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
"""An option's label is its letter, so a question has at most 26."""
REPLY_INSTRUCTION = "Answer with the letter of one option only."
THINKING_OFF = ("<think>", "\n\n", "</think>", "\n\n")
"""What Qwen3's chat template adds to the generation prompt with thinking off: the read's first token is the label."""
JSON_MEDIA = "application/json"


def routes(standin: ServerContext) -> list[web.RouteDef]:
    """The decisions route, bound to ``standin``."""
    return [web.post(record.DECISIONS, functools.partial(decide, standin))]


async def decide(standin: ServerContext, request: web.Request) -> web.Response:
    """``POST /v1/decisions``."""
    checked = await _request(standin, request)
    if isinstance(checked, Refusal):
        return standin.refuse(checked)
    if not standin.config.decisions:
        refusal = Refusal(501, "The model does not support the Decisions API", "NotImplementedError")
        return standin.refuse(refusal, "decisions_not_served")
    refused = _served(standin, checked)
    if refused is not None:
        return standin.refuse(refused)
    text = input_text(checked.input)
    patch = standin.config.patch
    prompts = [prompt_tokens([("user", [_prompt(text, q)])], patch) + list(THINKING_OFF) for q in checked.questions]
    for tokens in prompts:  # the renderer's check: a read's prompt must leave room for its one token
        refused = contract.context_limit(len(tokens), standin.config.max_model_len, generated=1)
        if refused is not None:
            return standin.refuse(refused)
    loop = asyncio.get_running_loop()
    answers = [await loop.run_in_executor(None, _answer, text, q) for q in checked.questions]
    cached = [standin.cache.lookup_and_insert(tokens) for tokens in prompts]  # one read each, in order
    written = [max(0, len(t) // BLOCK * BLOCK - c) for t, c in zip(prompts, cached, strict=True)]
    given, generated = sum(map(len, prompts)), len(prompts)
    standin.stats.decision_requests += 1
    standin.stats.decision_questions += len(prompts)
    standin.stats.prompt_tokens += given
    standin.stats.cached_tokens += sum(cached)
    standin.stats.completion_tokens += generated
    usage = {
        "input_tokens": given,
        "input_tokens_details": {"cached_tokens": sum(cached), "cache_write_tokens": sum(written)},
        "output_tokens": generated,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": given + generated,
    }
    return web.json_response({"model": standin.config.model, "answers": answers, "usage": usage})


async def _request(standin: ServerContext, request: web.Request) -> DecisionRequest | Refusal:
    """The body as vLLM's FastAPI route takes it: JSON of vLLM's request model (recorded before any check)."""
    raw = await request.read()
    body: Any = None
    bad: json.JSONDecodeError | None = None
    if raw:
        try:
            body = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            bad = exc if isinstance(exc, json.JSONDecodeError) else json.JSONDecodeError(str(exc), "", 0)
        else:
            record.json_request(standin.config.record, record.DECISIONS, body)
    if request.headers.get("Content-Type", "").lower().split(";", maxsplit=1)[0] != JSON_MEDIA:
        return contract.request_validation(["Unsupported Media Type: Only 'application/json' is allowed"])
    if bad is not None:
        error = {"type": "json_invalid", "loc": ("body", bad.pos), "msg": "JSON decode error", "input": {}}
        return contract.request_validation([{**error, "ctx": {"error": bad.msg}}])
    if body is None:
        missing = {"type": "missing", "loc": ("body",), "msg": "Field required", "input": None}
        return contract.request_validation([missing])
    try:
        return DecisionRequest.model_validate(body, from_attributes=True)
    except SaltRefused as exc:
        return exc.refusal
    except ValidationError as exc:
        return contract.request_validation([{**e, "loc": ("body", *e["loc"])} for e in exc.errors(include_url=False)])


def _served(standin: ServerContext, asked: DecisionRequest) -> Refusal | None:
    """What vLLM's serving code refuses before reading: another model, too many questions or options, a joint read."""
    if asked.model and asked.model != standin.config.model:
        message = f"The model `{asked.model}` does not exist. Valid aliases: {standin.config.model}."
        return Refusal(404, message, "NotFoundError", "model")
    if len(asked.questions) > MAX_QUESTIONS:
        return Refusal(400, f"questions: at most {MAX_QUESTIONS} for this model")
    if any(len(_options(q)) > len(LABELS) for q in asked.questions):
        return Refusal(400, f"This model supports at most {len(LABELS)} choices per question")
    if asked.joint:
        text = "joint: this model reads each question on its own; joint reads need DiffusionGemma"
        return Refusal(400, text)
    return None


def _options(question: Any) -> list[tuple[str, str]]:
    """The question's options as vLLM's read writes them: (name, description)."""
    if isinstance(question, PredicateQuestion):
        return [("false", ""), ("true", "")]
    if isinstance(question, ChoiceQuestion):
        return [(json.dumps(c.value, ensure_ascii=False), c.description) for c in question.choices]
    return [(level.label, level.description) for level in question.levels]


def _prompt(text: str, question: Any) -> str:
    """A read's user turn, as vLLM's ``NextTokenStrategy`` writes it: the text, then the question with its options."""
    options = zip(LABELS, _options(question), strict=False)
    lines = [f"{label}: {name} - {about}" if about else f"{label}: {name}" for label, (name, about) in options]
    body = "\n".join([*lines, REPLY_INSTRUCTION])
    asked = f"Question: {question.instructions}\n{body}" if question.instructions else body
    return f"{text}\n\n{asked}"


def _answer(text: str, question: Any) -> dict[str, Any]:
    """One question's answer, from the policy's reading of ``text`` (rule 8), shaped as vLLM's ``make_answer``."""
    if isinstance(question, PredicateQuestion):
        shares = policy.weigh(question.instructions, text, []).truth_shares()
        return {"type": "predicate", "name": question.name, "probability": shares[1]}
    chosen = isinstance(question, ChoiceQuestion)
    values = [c.value for c in question.choices] if chosen else [level.label for level in question.levels]
    words = [v if isinstance(v, str) else json.dumps(v) for v in values]
    shares = policy.weigh(question.instructions, text, words).choice_shares()
    top = max(range(len(shares)), key=shares.__getitem__)
    if chosen:
        listed = [{"value": v, "probability": p} for v, p in zip(values, shares, strict=True)]
        answer = {"type": "choice", "name": question.name, "choice": values[top]}
    else:
        listed = [{"value": i, "label": v, "probability": shares[i]} for i, v in enumerate(values)]
        answer = {"type": "score", "name": question.name, "score": sum(i * p for i, p in enumerate(shares))}
    return {**answer, "probabilities": listed, "confidence": shares[top]}


# vLLM 0.33's request model (vllm/entrypoints/openai/decisions/protocol.py), copied: vLLM is not installed here.
ShortText = Annotated[StrictStr, Field(max_length=1048576)]
InputText = Annotated[StrictStr, Field(max_length=10485760)]
ChoiceValue = StrictStr | StrictBool


class SaltRefused(Exception):
    """vLLM's ``VLLMValidationError`` from ``validate_cache_salt``: not a ValueError, so pydantic passes it on."""

    def __init__(self, refusal: Refusal) -> None:
        super().__init__(refusal.message)
        self.refusal = refusal


def _check_salt(salt: object) -> None:
    """The cache salt checked as vLLM's ``validate_cache_salt`` checks it."""
    if salt is None:
        return
    if not isinstance(salt, str) or not salt:
        text = "Parameter 'cache_salt' must be a non-empty string if provided."
        raise SaltRefused(vllm_validation(text, "cache_salt"))
    if len(salt) > 128 or any(c in "@/\\\x00" for c in salt):
        text = "Parameter 'cache_salt' must be at most 128 characters and must not contain '@', '/', '\\\\', or NUL."
        raise SaltRefused(vllm_validation(text, "cache_salt"))


class DecisionModel(BaseModel):
    """vLLM's base of the Decisions models: no field beyond those named."""

    model_config = ConfigDict(extra="forbid")


class DecisionInputText(DecisionModel):
    """A text part of an input message."""

    type: Literal["input_text"]
    text: InputText


class DecisionInputMessage(DecisionModel):
    """A user message of the input; its parts are text (an image is refused with vLLM's words)."""

    role: Literal["user"]
    content: InputText | Annotated[list[DecisionInputText], Field(max_length=16384)]
    type: Literal["message"] = "message"

    @model_validator(mode="before")
    @classmethod
    def reject_images(cls, data: Any) -> Any:
        """An image part is refused with vLLM's words."""
        parts = data.get("content") if isinstance(data, dict) else None
        if isinstance(parts, list) and any(isinstance(p, dict) and p.get("type") == "input_image" for p in parts):
            raise ValueError("Decisions supports text input only; images are not supported")
        return data


class QuestionBase(DecisionModel):
    """What every question has: its instructions and an optional name."""

    instructions: ShortText
    name: ShortText | None = None

    @model_validator(mode="after")
    def validate_name(self) -> QuestionBase:
        """A name given as null is refused."""
        if "name" in self.model_fields_set and self.name is None:
            raise ValueError("name must be a string when provided")
        return self


class PredicateQuestion(QuestionBase):
    """True or false."""

    type: Literal["predicate"]


class ChoiceOption(DecisionModel):
    """One option of a choice: a string or a boolean, and what it means."""

    value: ChoiceValue
    description: ShortText = ""


class ChoiceQuestion(QuestionBase):
    """One of 2 to 255 distinct options."""

    type: Literal["choice"]
    choices: list[ChoiceOption] = Field(min_length=2, max_length=255)

    @model_validator(mode="after")
    def validate_choices(self) -> ChoiceQuestion:
        """The values are distinct (a string and a boolean are never the same)."""
        values = [(type(c.value), c.value) for c in self.choices]
        if len(set(values)) != len(values):
            raise ValueError("choice values must be distinct")
        return self


class ScoreLevel(DecisionModel):
    """One level of a score."""

    label: ShortText
    description: ShortText = ""


class ScoreQuestion(QuestionBase):
    """A level of 2 to 10, in order."""

    type: Literal["score"]
    levels: list[ScoreLevel] = Field(min_length=2, max_length=10)


DecisionQuestion = Annotated[PredicateQuestion | ChoiceQuestion | ScoreQuestion, Field(discriminator="type")]


class DecisionRequest(DecisionModel):
    """A ``/v1/decisions`` request: the text read, and the questions asked of it."""

    model: ShortText
    input: InputText | Annotated[list[DecisionInputMessage], Field(max_length=131072)]
    questions: list[DecisionQuestion] = Field(min_length=1, max_length=200)
    safety_identifier: Annotated[StrictStr, Field(max_length=128)] | None = None
    joint: StrictBool = False
    cache_salt: str | None = Field(default=None, min_length=1, max_length=1024)

    @model_validator(mode="before")
    @classmethod
    def check_cache_salt_support(cls, data: Any) -> Any:
        """The cache salt is checked before any field, as vLLM does."""
        if isinstance(data, dict):
            _check_salt(data.get("cache_salt"))
        return data


def input_text(given: str | list[DecisionInputMessage]) -> str:
    """The text the questions are asked of (vLLM's ``input_text``): messages apart by a blank line, parts by a line."""
    if isinstance(given, str):
        return given
    return "\n\n".join(
        m.content if isinstance(m.content, str) else "\n".join(part.text for part in m.content) for m in given
    )
