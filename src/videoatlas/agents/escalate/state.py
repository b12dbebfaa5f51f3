"""The escalating agent's state: every agent's answer keys, what the uniform pass answered, and which path ran."""

from __future__ import annotations

from typing import Any, TypedDict

from videoatlas.state.models import Cost, Evidence
from videoatlas.state.run import AnsweringState, AnswerOutput


class EscalatePath(TypedDict):
    """Which path a run took and what each pass gave.

    The one declaration of these keys: the run's state and its output both hold them.
    """

    escalated: bool
    """Whether the search agent ran (the uniform answer's confidence was below the threshold, or unknown)."""
    search_agent: str
    """The agent handed over to (set when the run escalated; ``""`` otherwise)."""
    uniform_answer: str
    uniform_answer_index: int | None
    uniform_confidence: float | None
    """The uniform answer's probability (None: the server gave no log-probabilities)."""
    uniform_evidence: list[Evidence]
    """The sampled frames the uniform answer cited (passed on to the search agent when it runs)."""
    uniform_cost: Cost
    search_cost: Cost | None
    """The search agent's cost (None: it did not run)."""
    search_extras: dict[str, Any]
    """What the search agent's own views report of its run (its run result's extras), when it ran."""


class EscalateOutput(AnswerOutput, EscalatePath):
    """What a run returns: the answer every agent gives, what the uniform pass answered, what each path cost."""


class EscalateState(AnsweringState, EscalatePath):
    """The answer keys (the kept uniform answer, or the search agent's) and the path keys (:class:`EscalatePath`).

    ``cost`` sums both paths (its reducer adds each node's share); ``round`` is the answering agent's.
    """
