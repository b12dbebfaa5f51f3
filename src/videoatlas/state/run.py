"""What every agent's graph takes in and gives back: a question in, an answer with its cost and evidence out."""

from __future__ import annotations

from typing import Annotated, TypedDict

from videoatlas.state.models import Cost, Evidence, Repair, add_cost, add_repairs


class QuestionInput(TypedDict):
    """A question about the video in the runtime context."""

    question: str
    choices: list[str]
    """Answer candidates; empty for an open-ended question."""


class AnswerOutput(TypedDict):
    """What every agent's run returns (an agent may return more)."""

    answer: str
    answer_index: int | None
    declined: bool
    """The final decision found no answer to an open question (the answer is then empty): unanswered, not failed."""
    probabilities: list[float] | None
    """The server's probability of each choice, read from the final decision's token log-probabilities (they sum
    to 1); None for an open question, or when the server gave none (:mod:`videoatlas.llm.logprobs`)."""
    confidence: float | None
    """The probability of the answer given: the chosen choice's, or an open answer's sequence probability."""
    reasoning: str
    cited: list[str]
    """Evidence ids the final decision rests on (none: the answer was picked without evidence)."""
    evidence: list[Evidence]
    cost: Cost
    round: int
    """Rounds, turns or steps the agent took (what one iteration is depends on the agent)."""
    stop_reason: str
    repairs: list[Repair]


class AnsweringState(QuestionInput):
    """The keys a single-loop agent's state shares (VideoSeek, VideoARM, EEA, uniform): cost, repairs, answer.

    Each agent's state adds its own keys; ``round`` counts what one iteration is for that agent.
    """

    cost: Annotated[Cost, add_cost]
    repairs: Annotated[list[Repair], add_repairs]
    evidence: list[Evidence]
    answer: str
    answer_index: int | None
    declined: bool
    probabilities: list[float] | None
    confidence: float | None
    reasoning: str
    cited: list[str]
    stop_reason: str
    round: int


def probability_note(probabilities: list[float] | None, confidence: float | None) -> str:
    """How sure the server was of the answer, in the same words for every agent and view ("" when unknown).

    ``p 0.63 (A 0.32, B 0.63, C 0.05)`` for a choice; ``p 0.45`` for an open answer's sequence probability.
    """
    if confidence is None:
        return ""
    spread = ", ".join(f"{chr(ord('A') + i)} {p:.2f}" for i, p in enumerate(probabilities or []))
    return f"p {confidence:.2f}" + (f" ({spread})" if spread else "")


def support_note(answered: bool, cited: int, evidence: int) -> str:
    """What backs an answer, when nothing does, in the same words for every agent and every view.

    Empty when there is no answer or the final decision cited evidence; ``answered without evidence``
    when the run gathered none; else how much it gathered that the answer does not cite.
    """
    if not answered or cited:
        return ""
    if not evidence:
        return "answered without evidence"
    return f"the answer cites none of the {evidence} evidence item(s) gathered"
