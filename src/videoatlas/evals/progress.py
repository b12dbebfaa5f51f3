"""Where an evaluation stands (:class:`EvalProgress`), updated with each result row as it is written."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class EvalProgress:
    """Where an evaluation stands, passed to the progress callback after every question."""

    total: int
    done: int = 0
    cached: int = 0
    correct: int = 0
    scored: int = 0
    """Questions with a known answer, whether their run finished or failed (a failed one is wrong)."""
    parse_failures: int = 0
    declined: int = 0
    """Questions left unanswered: the final decision found no answer (scored, never correct, not a parse failure)."""
    errors: int = 0
    """Questions whose run failed (counted in ``scored``, never in ``correct``)."""
    tokens: int = 0
    started: float = field(default_factory=time.monotonic)
    ran: int = 0
    """Questions answered by this invocation (not taken from a cache): the ETA's basis."""
    interrupted: int = 0
    """Questions whose run an outage stopped (the endpoint or the database gone past the patience): not done,
    not scored; the next invocation resumes them."""
    endpoint_down_s: float | None = None
    """Seconds the VLM endpoint has been down (None: it answers); no question starts meanwhile."""

    @property
    def accuracy(self) -> float | None:
        """Correct over scored so far: a run that failed counts as a wrong answer, never as no question."""
        return self.correct / self.scored if self.scored else None

    @property
    def error_rate(self) -> float | None:
        """Share of the questions done so far whose run failed."""
        return self.errors / self.done if self.done else None

    @property
    def eta_s(self) -> float | None:
        """Seconds left at this invocation's pace so far."""
        if not self.ran:
            return None
        return (time.monotonic() - self.started) / self.ran * (self.total - self.done)

    def add(self, row: dict[str, Any]) -> None:
        """Count one result row (read back from the results file, or just written)."""
        self.done += 1
        if row.get("truth_index") is not None or row.get("truth_text") is not None:
            self.scored += 1
        if row.get("status") != "ok":
            self.errors += 1  # scored above and never correct: a failed run is a wrong answer
            return
        self.tokens += int(row.get("tokens", 0))
        self.correct += bool(row.get("correct"))
        self.parse_failures += bool(row.get("parse_failed"))
        self.declined += bool(row.get("declined"))
