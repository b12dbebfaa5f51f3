"""Task definitions: what ends an episode and what it is worth. Swapping one changes the task, not the environment.

Every step costs ``step_cost`` (a setting). Question answering ends with an ANSWER: ``correct`` or
``wrong``. Temporal grounding ends with COMMIT: the temporal IoU between the span the scratchpad
marks (from its earliest to its latest recorded cell) and the annotated moment.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


def iou(a: tuple[float, float], b: tuple[float, float]) -> float:
    """Temporal intersection over union of two intervals (0 when they do not overlap)."""
    inter = max(0.0, min(a[1], b[1]) - max(a[0], b[0]))
    union = max(a[1], b[1]) - min(a[0], b[0])
    return inter / union if union > 0 else 0.0


@dataclass(frozen=True, slots=True)
class QAReward:
    """Multiple-choice question answering: the episode ends with an answer."""

    correct: float = 1.0
    wrong: float = 0.0
    step_cost: float = 0.01
    kind: Literal["qa"] = "qa"

    def answered(self, choice: int, answer: int | None) -> float:
        """What answering ``choice`` is worth."""
        return self.correct if answer is not None and choice == answer else self.wrong


@dataclass(frozen=True, slots=True)
class GroundingReward:
    """Temporal grounding: the episode ends when the agent commits to the span its scratchpad marks."""

    step_cost: float = 0.01
    kind: Literal["grounding"] = "grounding"

    def committed(self, marked: tuple[float, float], target: tuple[float, float] | None) -> float:
        """What committing to ``marked`` is worth: its IoU with the annotated moment."""
        return iou(marked, target) if target is not None else 0.0


Reward = QAReward | GroundingReward
