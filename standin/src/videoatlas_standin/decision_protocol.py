"""vLLM 0.33's Decisions request model (``vllm/entrypoints/openai/decisions/protocol.py``), field for field.

The stand-in validates a ``/v1/decisions`` body with the same pydantic models vLLM's FastAPI route does, so a
refused body gets vLLM's error list word for word (:func:`.contract.request_validation` formats it as vLLM's
handler does). Copied, not imported: the stand-in does not install vLLM. Only the request is modelled; the
response is written by :mod:`.decisions`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictStr, model_validator

from videoatlas_standin.contract import Refusal, vllm_validation

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
