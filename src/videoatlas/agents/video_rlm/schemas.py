"""Video-RLM's reply schemas: search task, traversal, global probe, worker step, uncertainty analysis.

A worker's step is a union with one variant per action it has now, so EXPAND fills one cell id and
nothing else; ids are enums of the cells that can be chosen (see :mod:`videoatlas.state.schemas`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, Field, JsonValue, create_model

from videoatlas.agents.relation import ANCHOR_CHARS, RelationKind
from videoatlas.state.schemas import labels_of, one_of, reply_model, reply_schema, some_of, text

ACTIONS = ("EXPAND", "BACKTRACK", "ZOOM", "INVESTIGATE", "ADD_TO_SCRATCHPAD", "MARK_PROMISING", "FINISHED")
MAX_RANGE_S = 60.0
GRID_SIZES = (2, 4, 8, 16)
"""K values the schema examples span (the limits allow 2 to 16; the schema's shape only grows with K)."""


def _open_cells(k: int) -> Iterator[list[int]]:
    """Open-cell sets of a K x K grid: all, about half, one."""
    n = k * k
    yield list(range(n))
    yield list(range(0, n, 2))
    yield [n - 1]


@reply_model
class SearchTask(BaseModel):
    """What to look for, written from the question before any frame is seen, and the time relation it asks about."""

    search_task: text(800)  # type: ignore[valid-type]
    relation: RelationKind = "none"
    anchor: text(ANCHOR_CHARS) = ""  # type: ignore[valid-type]
    other_anchor: text(ANCHOR_CHARS) = ""  # type: ignore[valid-type]


@reply_model
class TraversalChoice(BaseModel):
    """BFS for sequence, order and counting questions; DFS for one localized detail."""

    traversal: Literal["bfs", "dfs"]
    reason: text(300)  # type: ignore[valid-type]


def _probe_examples() -> Iterator[dict[str, Any]]:
    for k in GRID_SIZES:
        for cells in _open_cells(k):
            for n in sorted({1, min(4, len(cells)), min(16, len(cells))}):
                yield {"n": n, "open_cells": cells}


@reply_schema(_probe_examples)
def probe_schema(n: int, open_cells: Sequence[int]) -> type[BaseModel]:
    """Exactly ``n`` distinct ids among ``open_cells`` (the cells not explored yet), and why."""
    fields: dict[str, Any] = {
        "cells": (some_of(open_cells, n, n), ...),
        "reason": (text(400), ...),
    }
    model: type[BaseModel] = create_model("GlobalProbe", **fields)
    return model


def _worker_examples() -> Iterator[dict[str, Any]]:
    action_sets = [
        ACTIONS,
        ("EXPAND", "BACKTRACK", "ZOOM", "INVESTIGATE", "ADD_TO_SCRATCHPAD", "FINISHED"),
        ("ADD_TO_SCRATCHPAD", "MARK_PROMISING", "FINISHED"),
        ("BACKTRACK", "FINISHED"),
        ("FINISHED",),
        ("EXPAND",),
    ]
    for k in GRID_SIZES:
        for cells in _open_cells(k):
            for allowed in action_sets:
                yield {"allowed": allowed, "open_cells": cells}
                yield {"allowed": allowed, "open_cells": cells, "expandable": cells[:1], "addable": []}


@reply_schema(_worker_examples)
def worker_step_schema(
    allowed: Sequence[str],
    open_cells: Sequence[int],
    expandable: Sequence[int] | None = None,
    addable: Sequence[int] | None = None,
) -> type[BaseModel]:
    """One worker step: ``{"step": ...}`` holding one variant per action in ``allowed``.

    ``open_cells`` are the cells of the view not explored yet (ZOOM, INVESTIGATE); ``expandable``
    those that can be opened (EXPAND, MARK_PROMISING; default: the open cells); ``addable`` those
    whose frame can be recorded and is not in the scratchpad yet (default: the open cells). An
    action whose cell set is empty is left out.
    """
    unknown = set(allowed) - set(ACTIONS)
    if unknown or not allowed:
        raise ValueError(f"bad action set {list(allowed)}")
    expandable = open_cells if expandable is None else expandable
    addable = open_cells if addable is None else addable
    summary = (text(240), ...)
    variants: list[type[BaseModel]] = []
    for action in allowed:
        fields: dict[str, Any] = {"action": (Literal[action], ...)}
        if action == "EXPAND":
            if not expandable:
                continue
            fields["cell"] = (one_of(expandable), ...)
        elif action in ("ZOOM", "INVESTIGATE"):
            if not open_cells:
                continue
            fields["cell"] = (one_of(open_cells), ...)
            if action == "INVESTIGATE":
                fields["direction"] = (Literal["before", "after"], ...)
        elif action == "ADD_TO_SCRATCHPAD":
            if not addable:
                continue
            item = create_model(
                "EvidenceItem",
                cell=(one_of(addable), ...),
                description=(text(300), ...),
                confidence=(Annotated[float, Field(ge=0.0, le=1.0)], ...),
            )
            fields["items"] = (Annotated[list[item], Field(min_length=1, max_length=8)], ...)  # type: ignore[valid-type]
        elif action == "MARK_PROMISING":
            if not expandable:
                continue
            fields["cells"] = (some_of(expandable, 1, 8), ...)
        fields["summary"] = summary
        variants.append(create_model(_variant_name(action), **fields))
    union = Union[tuple(variants)] if len(variants) > 1 else variants[0]  # noqa: UP007 - built at run time
    step: Any = Annotated[union, Field(discriminator="action")] if len(variants) > 1 else union
    model: type[BaseModel] = create_model("WorkerStep", step=(step, ...))
    return model


def _variant_name(action: str) -> str:
    return "".join(part.capitalize() for part in action.split("_")) + "Step"


def flatten_step(value: BaseModel) -> dict[str, Any]:
    """A validated :func:`worker_step_schema` reply as one flat dict (``action``, ``cells``, ``items``...)."""
    step = getattr(value, "step").model_dump()  # noqa: B009 - the model is built at run time
    cells = step.pop("cells", None)
    cell = step.pop("cell", None)
    return {
        "action": step["action"],
        "cells": list(cells) if cells is not None else ([cell] if cell is not None else []),
        "items": step.get("items") or [],
        "direction": step.get("direction", "none"),
        "summary": step.get("summary", ""),
    }


class ChoiceStatus(BaseModel):
    """How one answer choice stands against the evidence."""

    choice: int = Field(ge=0)
    status: Literal["supported", "contradicted", "unclear"]


class TimeRange(BaseModel):
    """An explicit stretch of video to look at next (bounds are checked by the node, which drops bad ones)."""

    start: float
    end: float


def _uncertainty_examples() -> Iterator[dict[str, Any]]:
    for n_choices in (0, 2, 5, 26):
        for k in GRID_SIZES:
            for n_cells, cells in enumerate(_open_cells(k)):
                for labels in ([], ["A", "B", "C"], [f"{chr(65 + i // 26)}{chr(65 + i % 26)}" for i in range(40)]):
                    # The anchor field's shape depends only on the labels: one cell set per grid covers it.
                    for anchored in (False, True) if n_cells == 0 else (False,):
                        yield {
                            "n_choices": n_choices,
                            "open_cells": cells,
                            "max_suggestions": 4,
                            "duration": 36_000.0,
                            "labels": labels,
                            "anchored": anchored,
                        }


@reply_schema(_uncertainty_examples)
def uncertainty_schema(
    n_choices: int,
    open_cells: Sequence[int],
    max_suggestions: int,
    duration: float,
    labels: Sequence[str] = (),
    anchored: bool = False,
) -> type[BaseModel]:
    """Sufficiency per choice, where to look next (open cells or short ranges), what to erase.

    ``anchored``: the question places its answer against an anchor event (right after, just before,
    between, how long after); the reply also names the evidence label showing that anchor, if any.
    """
    status = create_model(
        "ChoiceStatus",
        __base__=ChoiceStatus,
        choice=(one_of(range(n_choices)) if n_choices else int, ...),
    )
    bound: dict[str, JsonValue] = {"minimum": 0.0, "maximum": round(duration, 3)}
    time_range = create_model(
        "TimeRange",
        __base__=TimeRange,
        start=(Annotated[float, Field(json_schema_extra=bound)], ...),
        end=(Annotated[float, Field(json_schema_extra=bound)], ...),
    )
    fields: dict[str, Any] = {
        "statuses": (Annotated[list[status], Field(json_schema_extra={"maxItems": n_choices})], ...),  # type: ignore[valid-type]
        "sufficient": (bool, ...),
        "explore_cells": (some_of(open_cells, 0, max_suggestions), ...),
        "explore_ranges": (Annotated[list[time_range], Field(json_schema_extra={"maxItems": max_suggestions})], ...),  # type: ignore[valid-type]
        "erase": (labels_of(labels, len(labels)), ...),
        "reasoning": (text(600), ...),
    }
    if anchored:
        fields["anchor"] = (labels_of(labels, 1), ...)
    model: type[BaseModel] = create_model("UncertaintyAnalysis", **fields)
    return model
