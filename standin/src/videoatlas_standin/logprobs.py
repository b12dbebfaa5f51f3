"""``logprobs`` and ``top_logprobs`` on chat completions: refused as vLLM 0.33 refuses them, shaped as it returns them.

One entry per generated token, the reasoning's and its closing tag included (as vLLM with a reasoning parser), in the
stand-in's own tokens (:func:`.tokens.text_pieces`); the numbers are its policy's (rule 8): where the reply writes the
answer, a token's alternatives are what the candidates weighed would have written there, with their shares; every
other token is certain (logprob 0.0, itself its one alternative). docs/standin.md has the details.
"""

from __future__ import annotations

import bisect
import itertools
import json
import math
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ValidationError

from videoatlas_standin.contract import Refusal, request_validation, vllm_validation
from videoatlas_standin.tokens import text_pieces

MAX_LOGPROBS = 20
"""vLLM's ``--max-logprobs`` default: the most alternatives a request may ask for per token."""
VOCAB_SIZE = {28: 152_064, 32: 151_936}
"""The vocabulary a ``top_logprobs`` of -1 asks for: Qwen2.5-VL's, Qwen3-VL's (by visual token size)."""
THINK_OPEN = "<think>\n"
THINK_CLOSE = "\n</think>\n\n"
FLOOR = -9999.0
"""vLLM's floor for a logprob it returns (an impossible token's ``-inf``)."""


class _Asked(BaseModel):
    """The two fields of vLLM's ``ChatCompletionRequest`` that ask for logprobs, typed as it types them."""

    logprobs: bool | None = False
    top_logprobs: Annotated[int, BeforeValidator(lambda v: 0 if v is None else v)] = 0


def requested(body: dict[str, Any]) -> int | Refusal | None:
    """How many alternatives each token lists when the request asks for logprobs (None: it does not).

    Checked as vLLM's request model does (``check_logprobs``, then the types); too many is :func:`too_many`'s to refuse.
    """
    top = body.get("top_logprobs")
    if top is not None and not isinstance(top, int | float):
        return vllm_validation("`top_logprobs` must be an integer.", "top_logprobs", top)
    if top is not None:
        if top < 0 and top != -1:
            return vllm_validation("`top_logprobs` must be a positive value or -1.", "top_logprobs", top)
        if (top == -1 or top > 0) and not body.get("logprobs"):
            return vllm_validation("when using `top_logprobs`, `logprobs` must be set to true.", "top_logprobs")
    try:
        asked = _Asked.model_validate({k: body[k] for k in ("logprobs", "top_logprobs") if k in body})
    except ValidationError as exc:
        errors = [{**e, "loc": ("body", *e["loc"])} for e in exc.errors(include_url=False)]
        return request_validation(errors)
    return asked.top_logprobs if asked.logprobs else None


def too_many(top: int, patch: int) -> Refusal | None:
    """The engine's refusal of more alternatives than ``max_logprobs`` (-1 asks for the whole vocabulary)."""
    count = VOCAB_SIZE.get(patch, VOCAB_SIZE[28]) if top == -1 else top
    if count <= MAX_LOGPROBS:
        return None
    message = f"Requested sample logprobs of {count}, which is greater than max allowed: {MAX_LOGPROBS}"
    return vllm_validation(message, "logprobs", count)


@dataclass(frozen=True, slots=True)
class Answer:
    """Where the reply writes the answer, and what each candidate would have written there."""

    start: int
    end: int
    """The answer's characters in the reply text: the digits of a number, the inside of a string."""
    candidates: tuple[tuple[str, float], ...]
    """Each candidate's text as it would stand there (JSON-escaped), with its share; the shares sum to 1."""


def answer_in(content: str, value: Any, field: str, mixture: list[tuple[Any, float]]) -> Answer | None:
    """Where ``content`` (the JSON of ``value``, as the stand-in writes it) holds its top-level ``field``.

    A string is located by its inside, where a null candidate (declining) would have closed it. None when the text is
    not that JSON (spoiled by a fault, cut by the token limit) or the value written is none of the candidates.
    """
    if not isinstance(value, dict) or field not in value or content != json.dumps(value, ensure_ascii=False):
        return None
    keys = list(value)
    upto = {k: value[k] for k in keys[: keys.index(field)]} | {field: None}  # the fields before it, then it
    start = len(json.dumps(upto, ensure_ascii=False)) - len("null}")  # where its value starts
    held = value[field]
    quoted = isinstance(held, str)
    shares: dict[str, float] = {}
    for candidate, share in mixture:
        if quoted and candidate is not None and not isinstance(candidate, str):
            continue
        text = json.dumps("" if quoted and candidate is None else candidate, ensure_ascii=False)
        text = text[1:-1] if quoted else text
        shares[text] = shares.get(text, 0.0) + share
    written = json.dumps(held, ensure_ascii=False)
    inner = written[1:-1] if quoted else written
    if inner not in shares:
        return None
    total = sum(shares.values())
    at = start + 1 if quoted else start
    return Answer(at, at + len(inner), tuple((t, share / total) for t, share in shares.items()))


def content(
    thought: str | None, opened: bool, closed: bool, text: str, answer: Answer | None, top: int
) -> dict[str, Any]:
    """``choices[0].logprobs``: ``thought`` (None: none), then ``text``, with ``top`` alternatives a token.

    The thinking is ``opened`` by the model (else by the chat template) and ``closed`` unless the limit cut it.
    """
    entries: list[dict[str, Any]] = []
    if thought is not None:
        tokens = [*([THINK_OPEN] if opened else []), *text_pieces(thought), *([THINK_CLOSE] if closed else [])]
        entries += [_entry([(t, 1.0)], top) for t in tokens]
    writings = _writings(text, answer) if answer is not None else []
    position = 0
    for piece in text_pieces(text):
        end = position + len(piece)
        within = answer is not None and end > answer.start and position <= answer.end
        entries.append(_entry(_next_tokens(text, position, piece, writings) if within else [(piece, 1.0)], top))
        position = end
    return {"content": entries}


def _writings(text: str, answer: Answer) -> list[tuple[str, list[int], float]]:
    """``text`` as each candidate would have written it, where its tokens end, and the candidate's share."""
    others = [(text[: answer.start] + candidate + text[answer.end :], share) for candidate, share in answer.candidates]
    return [(other, list(itertools.accumulate(map(len, text_pieces(other)))), share) for other, share in others]


def _next_tokens(
    text: str, at: int, piece: str, writings: list[tuple[str, list[int], float]]
) -> list[tuple[str, float]]:
    """``piece`` (written at ``at``) and its alternatives: the candidates agreeing before ``at``, by their token."""
    found: dict[str, float] = {}
    for other, ends, share in writings:
        covering = bisect.bisect_right(ends, at)  # its token that covers ``at``
        if other[:at] != text[:at] or covering == len(ends):
            continue
        edge = ends[covering]
        found[other[at:edge]] = found.get(other[at:edge], 0.0) + share
    total = sum(found.values())
    others = sorted((t for t in found if t != piece), key=lambda t: -found[t])
    return [(t, found.get(t, 0.0) / total) for t in (piece, *others)]


def _entry(tokens: list[tuple[str, float]], top: int) -> dict[str, Any]:
    """One token's entry: the first of ``tokens`` (sampled), with the first ``top`` of them as its alternatives."""
    token, probability = tokens[0]
    return {**_logprob(token, probability), "top_logprobs": [_logprob(t, p) for t, p in tokens[:top]]}


def _logprob(token: str, probability: float) -> dict[str, Any]:
    logprob = max(math.log(probability), FLOOR) if probability > 0 else FLOOR
    return {"token": token, "logprob": logprob, "bytes": list(token.encode("utf-8", errors="replace"))}
