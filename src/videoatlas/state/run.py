"""What every agent's graph takes in and gives back: a question in, an answer with its cost and evidence out."""

from __future__ import annotations

from typing import TypedDict

from videoatlas.state.models import Cost, Evidence, Repair


class QuestionInput(TypedDict):
    """A question about the video in the runtime context."""

    question: str
    choices: list[str]
    """Answer candidates; empty for an open-ended question."""


class AnswerOutput(TypedDict):
    """What every agent's run returns (an agent may return more)."""

    answer: str
    answer_index: int | None
    reasoning: str
    cited: list[str]
    """Evidence ids the final decision rests on (none: the answer was picked without evidence)."""
    evidence: list[Evidence]
    cost: Cost
    round: int
    """Rounds, turns or steps the agent took (what one iteration is depends on the agent)."""
    stop_reason: str
    repairs: list[Repair]
