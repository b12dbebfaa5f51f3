"""The one scoring rule of a result row, for every agent: failed, scored, declined, right.

Reports, comparisons, calibration and the web UI all read a row through these predicates, so a
question is counted the same way everywhere.
"""

from __future__ import annotations

from typing import Any


def failed(row: dict[str, Any]) -> bool:
    """Whether the question's run failed (it has no answer, costs or evidence)."""
    return row.get("status") != "ok"


def scored(row: dict[str, Any]) -> bool:
    """Whether the question counts in accuracy: it has a known answer, whether its run finished or not."""
    if row.get("truth_text") is not None:
        return True  # an open question with a known value
    if "truth_index" in row:
        return row["truth_index"] is not None
    # Failed rows written before result schema 2 did not record the truth; an eval only runs
    # questions with an answer or open-ended ones, and counting such a row as wrong is the side
    # that cannot flatter the accuracy.
    return failed(row)


def is_correct(row: dict[str, Any]) -> bool:
    """The one answering rule for every agent: the run finished and its answer is the truth.

    A multiple-choice answer is right when its index is the truth's; an open one when the reply is
    the value by :mod:`videoatlas.evals.open_answers` (decided when the row was written). A declined
    question is never right.
    """
    return not failed(row) and not declined(row) and bool(row.get("correct"))


def declined(row: dict[str, Any]) -> bool:
    """Whether the run finished with its final decision declining to answer (rows written before: False)."""
    return not failed(row) and bool(row.get("declined"))
