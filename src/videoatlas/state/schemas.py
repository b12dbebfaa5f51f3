"""Structured outputs every agent shares: field helpers, and the one final-decision schema.

Every agent ends with :func:`decision_schema`, so answers are parsed and scored alike.

Each schema says everything a constrained decoder can enforce, in keywords that every structured-
output backend of vLLM both accepts and enforces (llguidance and xgrammar; see
:mod:`videoatlas.state.portable`): ids are enums of what can be chosen right now, id lists have
their lengths, times have bounds, objects forbid extra keys (added when the request is built, see
:func:`videoatlas.llm.client.response_format`). What no backend can express is left out of the
schema and checked after parsing: that ids in a list are distinct (``uniqueItems`` is refused by
llguidance and by vLLM's xgrammar check), and rules across fields (a range's start before its end).

Every schema an agent sends is registered here (:func:`reply_schema`, :func:`reply_model`) with
the argument shapes it is built with, so a test can compile all of them with vLLM's backends.

Validation on our side is deliberately looser than what is sent: a reply that a model without
constrained decoding got partly wrong (one explored cell among four, a range written backwards,
a reason a little too long) is kept, and the node drops the bad entries and records that it did
(:class:`~videoatlas.state.models.Repair`). Only a reply that cannot be read at all is re-asked.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Annotated, Any, Literal, TypeVar

from pydantic import AfterValidator, BaseModel, Field, JsonValue, create_model

SchemaFactory = Callable[..., type[BaseModel]]
F = TypeVar("F", bound=SchemaFactory)
M = TypeVar("M", bound=type[BaseModel])

_FACTORIES: dict[str, tuple[SchemaFactory, Callable[[], Iterable[dict[str, Any]]]]] = {}
_MODELS: dict[str, type[BaseModel]] = {}


def reply_schema(examples: Callable[[], Iterable[dict[str, Any]]]) -> Callable[[F], F]:
    """Register a schema factory with the keyword arguments it is built with (every size and option).

    The examples should span what runs send: each option count, grid size and label count that
    changes the schema's shape, so a schema check covers every shape without running an agent.
    """

    def register(factory: F) -> F:
        _FACTORIES[f"{factory.__module__}.{factory.__qualname__}"] = (factory, examples)
        return factory

    return register


def reply_model(model: M) -> M:
    """Register a fixed reply model (one that is sent as it is)."""
    _MODELS[f"{model.__module__}.{model.__qualname__}"] = model
    return model


def registered_factories() -> dict[str, SchemaFactory]:
    """Every registered schema factory by qualified name (import the agents first to register theirs)."""
    return {name: factory for name, (factory, _) in _FACTORIES.items()}


def registered_schemas() -> Iterator[tuple[str, type[BaseModel]]]:
    """Every registered reply schema, built with each of its example arguments: ``(label, model)``."""
    yield from _MODELS.items()
    for name, (factory, examples) in _FACTORIES.items():
        for kwargs in examples():
            yield f"{name}({_brief(kwargs)})", factory(**kwargs)


def _brief(kwargs: dict[str, Any]) -> str:
    def short(v: Any) -> str:
        if isinstance(v, (list, tuple, range)) and len(v) > 3:
            return f"<{len(v)} items>"
        return repr(list(v) if isinstance(v, range) else v)

    return ", ".join(f"{k}={short(v)}" for k, v in kwargs.items())


def distinct(values: Iterable[Any]) -> tuple[list[Any], list[Any]]:
    """``values`` in order without repeats, and the repeats that were left out.

    Lists of ids are meant to be distinct, but no vLLM backend can enforce it while decoding, so
    each node that reads such a list drops the repeats and records that it did.
    """
    seen: set[Any] = set()
    kept: list[Any] = []
    repeated: list[Any] = []
    for value in values:
        if value in seen:
            repeated.append(value)
        else:
            seen.add(value)
            kept.append(value)
    return kept, repeated


def text(limit: int) -> Any:
    """A string with ``maxLength`` in the schema; a longer reply is cut, not refused."""
    return Annotated[str, AfterValidator(lambda v: v[:limit]), Field(json_schema_extra={"maxLength": limit})]


def one_of(values: Sequence[int]) -> Any:
    """An integer from ``values`` (an enum in the schema; any integer passes validation, the node checks)."""
    enum: list[JsonValue] = list(sorted(set(values)))
    return Annotated[int, Field(json_schema_extra={"enum": enum})]


def some_of(values: Sequence[int], lo: int = 0, hi: int | None = None) -> Any:
    """Integers from ``values``, ``lo`` to ``hi`` of them (enforced by the schema).

    They are meant to be distinct; the node that reads them drops repeats (:func:`distinct`).
    """
    extra: dict[str, Any] = {
        "items": {"type": "integer", "enum": sorted(set(values))},
        "minItems": lo,
    }
    if hi is not None:
        extra["maxItems"] = hi
    return Annotated[list[int], Field(json_schema_extra=extra)]


def labels_of(labels: Sequence[str], hi: int) -> Any:
    """Evidence labels from ``labels`` (an empty list when there are none); repeats are dropped by the reader."""
    items: dict[str, Any] = {"type": "string", "enum": list(labels)} if labels else {"type": "string"}
    extra: dict[str, Any] = {"items": items, "maxItems": hi if labels else 0}
    return Annotated[list[str], Field(json_schema_extra=extra)]


class Judgement(BaseModel):
    """One choice judged against the evidence labels."""

    choice: int = Field(ge=0)
    verdict: Literal["supported", "contradicted", "no_evidence"]
    evidence: list[str]


def _decision_examples() -> Iterator[dict[str, Any]]:
    for n_choices in (0, 2, 4, 5, 26):
        for n_labels in (0, 1, 12, 40):
            yield {"n_choices": n_choices, "labels": [_label(i) for i in range(n_labels)]}


def _label(i: int) -> str:
    """Evidence-like labels (A ... Z, then AA ...), only to give the examples their shape."""
    return ("" if i < 26 else chr(ord("A") + i // 26 - 1)) + chr(ord("A") + i % 26)


FOUND = (
    "true when what you saw (frames, evidence, what is said) gives the value the question asks for; false when it "
    "does not answer the question, so that the question is reported as unanswered instead of answered with a guess"
)
"""What the open decision's ``found`` field asks of the model (stated before the answer, so the reply decides first)."""


@reply_schema(_decision_examples)
def decision_schema(n_choices: int, labels: Sequence[str] = ()) -> type[BaseModel]:
    """The final answer: a choice index (or free text when there are no choices), reasons, labels.

    An open decision also says whether it ``found`` the answer at all (:func:`declined` reads it); a
    multiple-choice one always picks a choice.
    """
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
            "found": (bool, Field(description=FOUND)),
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


def declined(value: Any, choices: Sequence[str]) -> bool:
    """Whether a :func:`decision_schema` reply declines to answer: an open reply whose ``found`` is false.

    The one rule every agent's final decision follows (:func:`videoatlas.agents.decision.decide_final`):
    a declined question is unanswered, never scored right, and not a reply that failed to parse. A
    multiple-choice reply never declines.
    """
    return not choices and value.found is False


def cited_ids(cited: Sequence[str], labels: dict[str, Any]) -> list[str]:
    """The ids of the labelled items a reply cites (``[B]`` or ``B``), each once; unknown labels are left out."""
    ids, _ = distinct(labels[lbl.strip("[] ")].id for lbl in cited if lbl.strip("[] ") in labels)
    return ids
