"""Structured outputs: one pydantic schema per decision, sent to the model as ``response_format``.

Schemas that depend on the situation are built per call: cell ids are bounded by the grid size,
the probe asks for exactly N distinct cells, and a worker's ``action`` enum holds only the actions
it has right now, so it cannot pick one it does not have.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, create_model, field_validator, model_validator

ACTIONS = ("EXPAND", "BACKTRACK", "ZOOM", "INVESTIGATE", "ADD_TO_SCRATCHPAD", "MARK_PROMISING", "FINISHED")
MAX_RANGE_S = 60.0


class SearchTask(BaseModel):
    """What to look for, written from the question before any frame is seen."""

    search_task: str = Field(max_length=800)


class TraversalChoice(BaseModel):
    """BFS for sequence, order and counting questions; DFS for one localized detail."""

    traversal: Literal["bfs", "dfs"]
    reason: str = Field(max_length=300)


class _DistinctCells(BaseModel):
    cells: list[int]

    @field_validator("cells")
    @classmethod
    def _distinct(cls, value: list[int]) -> list[int]:
        if len(set(value)) != len(value):
            raise ValueError("cell ids must be distinct")
        return value


def probe_schema(n: int, n_cells: int) -> type[BaseModel]:
    """Exactly ``n`` distinct cell ids of a grid of ``n_cells`` cells, and why."""
    cell = Annotated[int, Field(ge=0, le=n_cells - 1)]
    fields: dict[str, Any] = {
        "cells": (list[cell], Field(min_length=n, max_length=n)),
        "reason": (str, Field(max_length=400)),
    }
    model: type[BaseModel] = create_model("GlobalProbe", __base__=_DistinctCells, **fields)
    return model


def worker_step_schema(allowed: list[str], n_cells: int) -> type[BaseModel]:
    """One worker step: an action from ``allowed`` and what it applies to."""
    unknown = set(allowed) - set(ACTIONS)
    if unknown or not allowed:
        raise ValueError(f"bad action set {allowed}")
    cell = Annotated[int, Field(ge=0, le=n_cells - 1)]
    item = create_model(
        "EvidenceItem",
        cell=(cell, ...),
        description=(str, Field(max_length=300)),
        confidence=(float, Field(ge=0.0, le=1.0)),
    )
    fields: dict[str, Any] = {
        "action": (Literal.__getitem__(tuple(allowed)), ...),
        "cells": (list[cell], Field(max_length=8)),
        "direction": (Literal["before", "after", "none"], ...),
        "items": (list[item], Field(max_length=8)),  # type: ignore[valid-type]
        "summary": (str, Field(max_length=240)),
    }
    model: type[BaseModel] = create_model("WorkerStep", **fields)
    return model


class ChoiceStatus(BaseModel):
    """How one answer choice stands against the evidence."""

    choice: int = Field(ge=0)
    status: Literal["supported", "contradicted", "unclear"]


class TimeRange(BaseModel):
    """An explicit stretch of video to look at next (shorter than a minute)."""

    start: float = Field(ge=0.0)
    end: float = Field(ge=0.0)

    @model_validator(mode="after")
    def _short(self) -> TimeRange:
        if not 0 < self.end - self.start <= MAX_RANGE_S:
            raise ValueError(f"a range must be longer than 0 and at most {MAX_RANGE_S:.0f} s")
        return self


def uncertainty_schema(n_choices: int, n_cells: int, max_suggestions: int) -> type[BaseModel]:
    """Sufficiency per choice, where to look next (cells or short ranges), what to erase."""
    cell = Annotated[int, Field(ge=0, le=n_cells - 1)]
    fields: dict[str, Any] = {
        "statuses": (list[ChoiceStatus], Field(max_length=max(n_choices, 0))),
        "sufficient": (bool, ...),
        "explore_cells": (list[cell], Field(max_length=max_suggestions)),
        "explore_ranges": (list[TimeRange], Field(max_length=max_suggestions)),
        "erase": (list[str], Field(max_length=32)),
        "reasoning": (str, Field(max_length=600)),
    }
    model: type[BaseModel] = create_model("UncertaintyAnalysis", **fields)
    return model


class Judgement(BaseModel):
    """One choice judged against the evidence labels."""

    choice: int = Field(ge=0)
    verdict: Literal["supported", "contradicted", "no_evidence"]
    evidence: list[str] = Field(max_length=16)


def decision_schema(n_choices: int) -> type[BaseModel]:
    """The final answer: a choice index (or free text when there are no choices), reasons, labels."""
    fields: dict[str, Any]
    if n_choices:
        fields = {
            "judgements": (list[Judgement], Field(max_length=n_choices)),
            "answer": (int, Field(ge=0, le=n_choices - 1)),
            "reasoning": (str, Field(max_length=1200)),
            "evidence": (list[str], Field(max_length=32)),
        }
    else:
        fields = {
            "answer": (str, Field(max_length=600)),
            "reasoning": (str, Field(max_length=1200)),
            "evidence": (list[str], Field(max_length=32)),
        }
    model: type[BaseModel] = create_model("FinalDecision", **fields)
    return model
