"""VideoSeek's reply schemas: the planner's turn (a thought and one tool call), and what each tool reports."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, Field, JsonValue, create_model

from videoatlas.state.schemas import one_of, reply_schema, some_of, text


def _turn_examples() -> Iterator[dict[str, Any]]:
    for tools in (("overview", "skim", "focus", "answer"), ("skim", "focus", "answer"), ("answer",)):
        for duration in (60.0, 36_000.0):
            yield {"tools": tools, "duration": duration}


def _frame_ids() -> Iterator[list[int]]:
    for n in (1, 8, 32, 128):
        yield list(range(n))


@reply_schema(_turn_examples)
def turn_schema(tools: Sequence[str], duration: float) -> type[BaseModel]:
    """A planner turn: ``thought``, then ``call``, one variant per tool offered (spans bounded by the video)."""
    bound: dict[str, JsonValue] = {"minimum": 0.0, "maximum": round(duration, 3)}
    seconds = Annotated[float, Field(json_schema_extra=bound)]
    variants: list[type[BaseModel]] = []
    for tool in tools:
        fields: dict[str, Any] = {"tool": (Literal[tool], ...)}
        if tool in ("skim", "focus"):
            fields |= {"query": (text(300), ...), "start": (seconds, ...), "end": (seconds, ...)}
        variants.append(create_model(f"{tool.capitalize()}Call", **fields))
    union = Union[tuple(variants)] if len(variants) > 1 else variants[0]  # noqa: UP007 - built at run time
    call: Any = Annotated[union, Field(discriminator="tool")] if len(variants) > 1 else union
    model: type[BaseModel] = create_model("PlannerTurn", thought=(text(1200), ...), call=(call, ...))
    return model


@reply_schema(lambda: ({"ids": ids, "flag": flag} for ids in _frame_ids() for flag in (False, True)))
def describe_schema(ids: Sequence[int], flag: bool) -> type[BaseModel]:
    """What overview (``flag`` False) and skim (``flag`` True) report: each frame described, relevant ones flagged."""
    frame = create_model("FrameNote", id=(one_of(ids), ...), description=(text(300), ...))
    fields: dict[str, Any] = {"frames": (Annotated[list[frame], Field(json_schema_extra={"maxItems": len(ids)})], ...)}  # type: ignore[valid-type]
    if flag:
        fields["relevant"] = (some_of(ids, 0, len(ids)), ...)
    fields["summary"] = (text(600), ...)
    model: type[BaseModel] = create_model("SkimReport" if flag else "OverviewReport", **fields)
    return model


@reply_schema(lambda: ({"ids": ids} for ids in _frame_ids()))
def focus_schema(ids: Sequence[int]) -> type[BaseModel]:
    """What focus reports: whether the span answers the query, what the frames show, and which frames."""
    model: type[BaseModel] = create_model(
        "FocusReport",
        found=(bool, ...),
        description=(text(600), ...),
        relevant=(some_of(ids, 0, len(ids)), ...),
    )
    return model
