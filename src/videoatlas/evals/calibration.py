"""How well an agent's confidence matches how often it is right, from its result rows (pure; no I/O).

A row's ``confidence`` is the probability of the answer the agent gave: on a multiple-choice question
the choice's share of ``probabilities`` (one per choice, in the item's order, summing to 1), on an
open question the answer's sequence probability. The rows that count are the finished, scored ones
with an answer and a confidence (the *calibrated* rows); the others are counted apart and left out:

* declined: the final decision found no answer (no answer, so nothing to be confident in);
* without probability: finished with an answer (or a parse failure) but no ``confidence`` (the server
  gave no log-probabilities, or the row was written before they were recorded);
* failed runs and questions without a known answer (unscored) have no correctness to calibrate against.

Over the calibrated rows:

* **ECE** (expected calibration error): the confidences fall into :data:`BINS` equal-width bins
  ``[0, 0.1), [0.1, 0.2), ..., [0.9, 1.0]`` (a value on an edge goes to the bin above it; 1.0 to the
  last); ECE = sum over bins of (rows in the bin / calibrated rows) x |accuracy in the bin - mean
  confidence in the bin|, i.e. weighted by bin count. 0 is perfectly calibrated.
* **Brier score**, in two forms never averaged together: rows with ``probabilities`` (multiple choice)
  score sum over choices of (p_i - [i is the truth])^2, from 0 (all mass on the truth) to 2 (all mass on
  one wrong choice), and :attr:`Calibration.brier` is its mean; rows with only a ``confidence`` (open
  questions) score the binary (confidence - correct)^2, from 0 to 1, and :attr:`Calibration.brier_binary`
  is its mean. Each is None when no row has that form.
* **accuracy at coverage** X%: the calibrated rows sorted by confidence, highest first (ties by item
  id, so the file's order does not matter), the first ceil(X% of them) kept, their accuracy: how right
  the agent is when it answers only what it is most sure of. At 100% it is the calibrated rows' accuracy.
* **reliability bins**: per bin, its rows, their mean confidence and their accuracy (the diagram's points).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from videoatlas.errors import BadInputError
from videoatlas.evals.scoring import declined, failed, is_correct, scored

BINS = 10
"""Equal-width confidence bins of the ECE and the reliability diagram."""

COVERAGES = (50, 80, 100)
"""The coverages (percent of the calibrated rows, most confident first) whose accuracy is reported."""

_INNER_EDGES = [i / BINS for i in range(1, BINS)]
"""The bins' inner edges as the same floats JSON reads (0.3 is the float ``0.3``), so an edge value lands above."""


@dataclass(frozen=True, slots=True)
class ReliabilityBin:
    """One confidence bin of the reliability diagram."""

    low: float
    """The bin's lower edge (included)."""
    high: float
    """Its upper edge (excluded, but for the last bin, which holds 1.0)."""
    count: int
    """Calibrated rows whose confidence falls in the bin."""
    mean_confidence: float | None
    """Their mean confidence (None: an empty bin)."""
    accuracy: float | None
    """The share of them that is right (None: an empty bin)."""


@dataclass(frozen=True, slots=True)
class Calibration:
    """The calibration of one agent's confidence over a set of result rows (see the module's docstring)."""

    rows: int
    """Calibrated rows: finished, scored, answered (not declined), with a confidence."""
    declined: int
    """Finished rows whose final decision declined: left out."""
    without_probability: int
    """Finished, scored, not declined rows without a confidence: left out."""
    failed: int
    """Rows whose run failed: left out."""
    unscored: int
    """Finished rows of questions without a known answer: left out."""
    ece: float | None
    """Expected calibration error over :data:`BINS` equal-width bins, weighted by bin count (None: no rows)."""
    brier: float | None
    """Mean multi-class Brier score over the rows with ``probabilities`` (None: no such row)."""
    brier_rows: int
    """How many rows :attr:`brier` is over."""
    brier_binary: float | None
    """Mean binary Brier score (confidence - correct)^2 over the rows with only a confidence (None: none)."""
    brier_binary_rows: int
    """How many rows :attr:`brier_binary` is over."""
    accuracy_at_coverage: dict[str, float | None]
    """Accuracy of the most confident ceil(X%) of the rows, keyed by X as text (``"50"``, ``"80"``, ``"100"``)."""
    bins: list[ReliabilityBin]
    """The reliability diagram's bins, lowest confidence first, empty ones included."""

    @property
    def recorded(self) -> bool:
        """Whether any row had a confidence (rows written before probabilities were recorded have none)."""
        return self.rows > 0

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON (``recorded`` included)."""
        return {**asdict(self), "recorded": self.recorded}


def confidence_of(row: dict[str, Any]) -> float | None:
    """The row's confidence in its answer (None: none recorded); a value outside [0, 1] is refused."""
    value = row.get("confidence")
    if value is None:
        return None
    confidence = float(value)
    if not 0.0 <= confidence <= 1.0:
        raise BadInputError(f"result row {row.get('item')!r}: confidence {value!r} is not a probability in [0, 1]")
    return confidence


def choice_brier(row: dict[str, Any]) -> float | None:
    """The multi-class Brier score of a row with ``probabilities`` (None: it has none)."""
    probabilities = row.get("probabilities")
    if probabilities is None:
        return None
    truth = row.get("truth_index")
    if truth is None or not 0 <= truth < len(probabilities):
        raise BadInputError(
            f"result row {row.get('item')!r}: truth index {truth!r} is not one of its {len(probabilities)} choices"
        )
    return math.fsum((float(p) - (1.0 if i == truth else 0.0)) ** 2 for i, p in enumerate(probabilities))


def bin_of(confidence: float) -> int:
    """The index of the equal-width bin that holds ``confidence`` (edges go up; 1.0 to the last bin)."""
    return bisect.bisect_right(_INNER_EDGES, confidence)


def calibrate(rows: Sequence[dict[str, Any]]) -> Calibration:
    """The calibration of the confidences in ``rows`` (one agent's current rows, finished and failed).

    Sums are exact (:func:`math.fsum`) and ties ranked by item id, so the figures do not depend on the rows' order.
    """
    left_out = {"declined": 0, "without_probability": 0, "failed": 0, "unscored": 0}
    kept: list[tuple[float, bool, dict[str, Any]]] = []
    for row in rows:
        if failed(row):
            left_out["failed"] += 1
        elif declined(row):
            left_out["declined"] += 1
        elif not scored(row):
            left_out["unscored"] += 1
        elif (confidence := confidence_of(row)) is None:
            left_out["without_probability"] += 1
        else:
            kept.append((confidence, is_correct(row), row))

    by_bin: list[list[tuple[float, bool]]] = [[] for _ in range(BINS)]
    for confidence, right, _ in kept:
        by_bin[bin_of(confidence)].append((confidence, right))
    bins = [
        ReliabilityBin(
            low=i / BINS,
            high=(i + 1) / BINS,
            count=len(members),
            mean_confidence=math.fsum(c for c, _ in members) / len(members) if members else None,
            accuracy=sum(r for _, r in members) / len(members) if members else None,
        )
        for i, members in enumerate(by_bin)
    ]
    gaps = [
        b.count * abs(b.accuracy - b.mean_confidence)
        for b in bins
        if b.accuracy is not None and b.mean_confidence is not None
    ]
    ece = math.fsum(gaps) / len(kept) if kept else None

    choice_scores = [s for _, _, row in kept if (s := choice_brier(row)) is not None]
    binary_scores = [(c - float(r)) ** 2 for c, r, row in kept if row.get("probabilities") is None]

    ranked = [right for _, right, _ in sorted(kept, key=lambda k: (-k[0], str(k[2].get("item"))))]
    coverage: dict[str, float | None] = {}
    for percent in COVERAGES:
        top = -(-percent * len(ranked) // 100)  # ceil in integers: 0.8 * 15 is 12.000000000000002 in floats
        coverage[str(percent)] = sum(ranked[:top]) / top if top else None

    return Calibration(
        rows=len(kept),
        declined=left_out["declined"],
        without_probability=left_out["without_probability"],
        failed=left_out["failed"],
        unscored=left_out["unscored"],
        ece=ece,
        brier=math.fsum(choice_scores) / len(choice_scores) if choice_scores else None,
        brier_rows=len(choice_scores),
        brier_binary=math.fsum(binary_scores) / len(binary_scores) if binary_scores else None,
        brier_binary_rows=len(binary_scores),
        accuracy_at_coverage=coverage,
        bins=bins,
    )
