"""The run's token and call budget, shared by every call in flight at once.

Workers of a round run in parallel. If each compared only its own spend with what was left when
the round began, seven of them could together overshoot the budget by seven calls. Instead every
worker call reserves its expected size here before it is sent and settles the real figure after;
a call that would not fit beside what is already spent and reserved is not sent. The overshoot is
then bounded by how far one call's real size exceeds its reservation, and reservations are never
smaller than the largest call seen so far in the run.

The ledger lives in the runtime context (it is not state): each round starts it again from the
checkpointed cost, so a resumed run continues from what its state says was spent.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from videoatlas.llm.images import ImagePart
from videoatlas.state.models import Cost

REPLY_TOKENS = 256
"""Completion tokens assumed for a call before any was measured (worker steps are short JSON)."""


@dataclass(frozen=True, slots=True)
class Reservation:
    """What one call set aside."""

    tokens: int


class BudgetSpent(Exception):
    """The call would not fit in what is left of the run's budget; it was not sent."""


@dataclass
class BudgetLedger:
    """Spent and reserved tokens and calls against the run's ``--token-budget`` and ``--call-budget``."""

    tokens: int | None
    calls: int | None
    spent_tokens: int = 0
    spent_calls: int = 0
    reserved_tokens: int = 0
    reserved_calls: int = 0
    largest: int = 0
    """The largest single call settled so far (reservations are never smaller)."""
    round: int = -1

    def begin_round(self, round_no: int, spent: Cost) -> None:
        """Start a round from the checkpointed cost (once per round; later calls for it change nothing)."""
        if round_no == self.round:
            return
        self.round = round_no
        self.spent_tokens, self.spent_calls = spent.tokens, spent.calls
        self.reserved_tokens = self.reserved_calls = 0

    def reserve(self, estimate: int) -> Reservation:
        """Set aside room for one call of about ``estimate`` tokens, or raise :class:`BudgetSpent`."""
        size = max(estimate, self.largest)
        if self.tokens is not None and self.spent_tokens + self.reserved_tokens + size > self.tokens:
            raise BudgetSpent(f"token budget of {self.tokens} spent")
        if self.calls is not None and self.spent_calls + self.reserved_calls + 1 > self.calls:
            raise BudgetSpent(f"call budget of {self.calls} spent")
        self.reserved_tokens += size
        self.reserved_calls += 1
        return Reservation(size)

    def settle(self, reservation: Reservation | None, cost: Cost) -> None:
        """Replace a reservation (if any) by what the call really cost."""
        if reservation is not None:
            self.reserved_tokens -= reservation.tokens
            self.reserved_calls -= 1
        self.spent_tokens += cost.tokens
        self.spent_calls += cost.calls
        self.largest = max(self.largest, cost.tokens)


def estimate_tokens(images: Sequence[ImagePart], text: str, patch: int = 28) -> int:
    """A generous size for a call: image patches (28 px, the smaller and so costlier patch), text, a reply."""
    visual = sum(math.ceil(i.width / patch) * math.ceil(i.height / patch) for i in images)
    return visual + len(text) // 3 + REPLY_TOKENS
