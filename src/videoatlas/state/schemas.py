"""Structured outputs every agent shares: field helpers, and the one final-decision schema.

Every agent ends with :func:`decision_schema`, so answers are parsed and scored alike.

Each schema says everything a constrained decoder can enforce: ids are enums of what can be chosen
right now, id lists have ``uniqueItems`` and their lengths, times have bounds, objects forbid extra
keys (added when the request is built, see :func:`videoatlas.llm.client.response_format`).

Validation on our side is deliberately looser than what is sent: a reply that a model without
constrained decoding got partly wrong (one explored cell among four, a range written backwards,
a reason a little too long) is kept, and the node drops the bad entries and records that it did
(:class:`~videoatlas.state.models.Repair`). Only a reply that cannot be read at all is re-asked.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, Field, JsonValue, create_model


def text(limit: int) -> Any:
    """A string with ``maxLength`` in the schema; a longer reply is cut, not refused."""
    return Annotated[str, AfterValidator(lambda v: v[:limit]), Field(json_schema_extra={"maxLength": limit})]


def one_of(values: Sequence[int]) -> Any:
    """An integer from ``values`` (an enum in the schema; any integer passes validation, the node checks)."""
    enum: list[JsonValue] = list(sorted(set(values)))
    return Annotated[int, Field(json_schema_extra={"enum": enum})]


def some_of(values: Sequence[int], lo: int = 0, hi: int | None = None) -> Any:
    """Distinct integers from ``values``, ``lo`` to ``hi`` of them (enforced by the schema, checked by the node)."""
    extra: dict[str, Any] = {
        "items": {"type": "integer", "enum": sorted(set(values))},
        "uniqueItems": True,
        "minItems": lo,
    }
    if hi is not None:
        extra["maxItems"] = hi
    return Annotated[list[int], Field(json_schema_extra=extra)]


def labels_of(labels: Sequence[str], hi: int) -> Any:
    """Distinct evidence labels from ``labels`` (an empty list when there are none)."""
    items: dict[str, Any] = {"type": "string", "enum": list(labels)} if labels else {"type": "string"}
    extra: dict[str, Any] = {"items": items, "uniqueItems": True, "maxItems": hi if labels else 0}
    return Annotated[list[str], Field(json_schema_extra=extra)]


class Judgement(BaseModel):
    """One choice judged against the evidence labels."""

    choice: int = Field(ge=0)
    verdict: Literal["supported", "contradicted", "no_evidence"]
    evidence: list[str]


def decision_schema(n_choices: int, labels: Sequence[str] = ()) -> type[BaseModel]:
    """The final answer: a choice index (or free text when there are no choices), reasons, labels."""
    fields: dict[str, Any]
    cited = (labels_of(labels, 32), ...)
    if n_choices:
        judgement = create_model(
            "Judgement",
            __base__=Judgement,
            choice=(one_of(range(n_choices)), ...),
            evidence=(labels_of(labels, 16), ...),
        )
        fields = {
            "judgements": (Annotated[list[judgement], Field(json_schema_extra={"maxItems": n_choices})], ...),  # type: ignore[valid-type]
            "answer": (Annotated[int, Field(ge=0, le=n_choices - 1)], ...),
            "reasoning": (text(1200), ...),
            "evidence": cited,
        }
    else:
        fields = {
            "answer": (text(600), ...),
            "reasoning": (text(1200), ...),
            "evidence": cited,
        }
    model: type[BaseModel] = create_model("FinalDecision", **fields)
    return model


def decided(value: Any, choices: Sequence[str]) -> tuple[int | None, str]:
    """A :func:`decision_schema` reply's answer: the choice's index and text, or (None, the free text)."""
    if choices:
        index = int(value.answer)
        return index, choices[index]
    return None, str(value.answer)


def cited_ids(cited: Sequence[str], labels: dict[str, Any]) -> list[str]:
    """The ids of the labelled items a reply cites (``[B]`` or ``B``); labels it does not hold are left out."""
    return [labels[lbl.strip("[] ")].id for lbl in cited if lbl.strip("[] ") in labels]
