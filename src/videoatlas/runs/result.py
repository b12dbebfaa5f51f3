"""What a run produced (:class:`RunResult`), built from an agent's final state, and the row that records it."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from videoatlas.environment.render import evidence_label
from videoatlas.llm.records import CallRecord
from videoatlas.state.models import Cost, Evidence

Source = Literal["run", "resumed", "db-cache"]
"""Where a question's answer came from: a new run, an interrupted run gone on with, or a finished run read back."""

INDEX_COST = ("index_frames", "index_s")
"""Extras that are a cost (a frame embedding index built or read): stored with the run's cost as well."""


@dataclass(slots=True)
class RunResult:
    """What a question's run produced, and what it cost."""

    run_id: str
    question: str
    choices: list[str]
    answer: str
    answer_index: int | None
    reasoning: str
    evidence: list[Evidence]
    cited: list[str]
    cost: Cost
    rounds: int
    """Rounds, turns or steps the agent took (what one iteration is depends on the agent)."""
    stop_reason: str
    wall_s: float
    declined: bool = False
    """The final decision found no answer to the open question (the answer is empty): unanswered, not a failed
    reply (:func:`videoatlas.state.schemas.declined`). A run from before the decision could decline reads False."""
    probabilities: list[float] | None = None
    """The server's probability of each choice (:class:`videoatlas.state.run.AnswerOutput`); None when not known."""
    confidence: float | None = None
    """The probability of the answer given (an open answer's sequence probability); None when not known."""
    source: Source = "run"
    """How this call got the result: a new run, an interrupted one gone on with, or a finished one read back."""
    records: list[CallRecord] = field(default_factory=list)
    state: dict[str, Any] = field(default_factory=dict)
    extras: dict[str, Any] = field(default_factory=dict)
    """What the agent reports beyond what every agent does (its views' ``extras``: Video-RLM's search task and
    traversal; ``index_frames`` and ``index_s`` for an agent that searched a frame embedding index)."""

    @property
    def grounded(self) -> bool:
        """Whether the answer rests on evidence the final decision cited (False: a pick without evidence, or none)."""
        return bool(self.answer) and bool(self.cited)

    @property
    def cache_hit_rate(self) -> float:
        """Share of prompt tokens the server reported as cached."""
        return self.cost.cached_tokens / self.cost.prompt_tokens if self.cost.prompt_tokens else 0.0

    def as_dict(self) -> dict[str, Any]:
        """Plain data for ``--json``."""
        return {
            "run_id": self.run_id,
            "question": self.question,
            "choices": self.choices,
            "answer": self.answer,
            "answer_index": self.answer_index,
            "declined": self.declined,
            "probabilities": self.probabilities,
            "confidence": self.confidence,
            "reasoning": self.reasoning,
            "evidence": [
                {
                    "label": evidence_label(i),
                    "time": e.time,
                    "interval": [e.start, e.end],
                    "place": e.place,
                    "where": dict(e.where),
                    "description": e.description,
                    "confidence": e.confidence,
                    "subtitle": e.subtitle,
                    "cited": e.id in self.cited,
                }
                for i, e in enumerate(self.evidence)
            ],
            "cost": {
                **self.cost.summary(),
                "cache_hit_rate": round(self.cache_hit_rate, 4),
            },
            "grounded": self.grounded,
            "repairs": [r.model_dump() for r in self.state.get("repairs", [])],
            "rounds": self.rounds,
            "stop_reason": self.stop_reason,
            "wall_s": round(self.wall_s, 3),
            "extras": self.extras,
        }


def result_from_state(
    thread: str,
    question: str,
    choices: list[str],
    final: dict[str, Any],
    wall: float,
    records: list[CallRecord],
    extras: dict[str, Any] | None = None,
) -> RunResult:
    """The result of run ``thread`` from the agent's final state (the fields every agent's state shares).

    ``extras``: what the agent's views make of that state (:meth:`videoatlas.agents.views.AgentViews.result_extras`).
    """
    return RunResult(
        run_id=thread,
        question=question,
        choices=list(choices),
        answer=final.get("answer", ""),
        answer_index=final.get("answer_index"),
        reasoning=final.get("reasoning", ""),
        evidence=list(final.get("evidence", [])),
        cited=list(final.get("cited", [])),
        cost=final.get("cost") or Cost(),
        rounds=int(final.get("round", 0)),
        stop_reason=final.get("stop_reason", ""),
        wall_s=wall,
        declined=bool(final.get("declined", False)),
        probabilities=final.get("probabilities"),
        confidence=final.get("confidence"),
        records=records,
        state=final,
        extras=dict(extras or {}),
    )


def finished_values(result: RunResult) -> dict[str, Any]:
    """The run row's values once ``result`` is in: finished, with its answer and cost."""
    return {
        "status": "finished",
        "finished_at": datetime.now(UTC),
        "answer": result.answer,
        "answer_index": result.answer_index,
        "reasoning": result.reasoning,
        "cost": {
            **result.cost.summary(),
            "wall_s": round(result.wall_s, 3),
            **{key: result.extras[key] for key in INDEX_COST if key in result.extras},
        },
        "stop_reason": result.stop_reason,
    }
