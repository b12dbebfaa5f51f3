"""VideoSeek's reply schemas: the planner's turn (a thought and one tool call), and what each tool reports."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, create_model

from videoatlas.agents.tool_loop import seconds_within, step_model
from videoatlas.state.schemas import one_of, reply_schema, some_of, text


def _turn_examples() -> Iterator[dict[str, Any]]:
    full = ("overview", "skim", "focus", "answer")
    # every tool; the window's (no overview); answering alone; asked again after an answer held back (no answer)
    for tools in (full, full[1:], ("answer",), full[:3], full[1:3]):
        for duration in (60.0, 36_000.0):
            yield {"tools": tools, "duration": duration}
            yield {"tools": tools, "duration": duration, "relation": True}
            yield {"tools": tools, "duration": duration, "window": (duration / 4, duration / 2)}


def _frame_ids() -> Iterator[list[int]]:
    for n in (1, 8, 32, 128):
        yield list(range(n))


@reply_schema(_turn_examples)
def turn_schema(
    tools: Sequence[str], duration: float, relation: bool = False, window: tuple[float, float] | None = None
) -> type[BaseModel]:
    """A planner turn: ``thought``, then ``call``, one variant per tool offered (spans bounded by the video).

    ``relation``: the turn also says the question's time relation (:data:`~videoatlas.agents.relation.RELATION_FIELDS`);
    ``window``: the spans are bounded by it instead (the stretch beside an anchor just found).
    """
    seconds = seconds_within(duration, window)
    variants: list[type[BaseModel]] = []
    for tool in tools:
        fields: dict[str, Any] = {"tool": (Literal[tool], ...)}
        if tool in ("skim", "focus"):
            fields |= {"query": (text(300), ...), "start": (seconds, ...), "end": (seconds, ...)}
        variants.append(create_model(f"{tool.capitalize()}Call", **fields))
    return step_model("PlannerTurn", "thought", variants, relation)


@reply_schema(
    lambda: (
        {"ids": ids, "flag": flag, "anchored": anchored}
        for ids in _frame_ids()
        for flag in (False, True)
        for anchored in (False, True)
    )
)
def describe_schema(ids: Sequence[int], flag: bool, anchored: bool = False) -> type[BaseModel]:
    """What overview (``flag`` False) and skim (``flag`` True) report: each frame described, relevant ones flagged.

    ``anchored``: the tool also names the frame that shows the relation's anchor (``anchor``: 0 or 1 id).
    """
    frame = create_model("FrameNote", id=(one_of(ids), ...), description=(text(300), ...))
    fields: dict[str, Any] = {"frames": (Annotated[list[frame], Field(json_schema_extra={"maxItems": len(ids)})], ...)}  # type: ignore[valid-type]
    if flag:
        fields["relevant"] = (some_of(ids, 0, len(ids)), ...)
    fields["summary"] = (text(600), ...)
    if anchored:
        fields["anchor"] = (some_of(ids, 0, 1), ...)
    model: type[BaseModel] = create_model("SkimReport" if flag else "OverviewReport", **fields)
    return model


@reply_schema(lambda: ({"ids": ids, "anchored": anchored} for ids in _frame_ids() for anchored in (False, True)))
def focus_schema(ids: Sequence[int], anchored: bool = False) -> type[BaseModel]:
    """What focus reports: whether the span answers the query, what the frames show, and which frames.

    ``anchored``: also the frame that shows the relation's anchor (``anchor``: 0 or 1 id).
    """
    fields: dict[str, Any] = {
        "found": (bool, ...),
        "description": (text(600), ...),
        "relevant": (some_of(ids, 0, len(ids)), ...),
    }
    if anchored:
        fields["anchor"] = (some_of(ids, 0, 1), ...)
    model: type[BaseModel] = create_model("FocusReport", **fields)
    return model
