"""The uniform-sampling baseline's state: the Master's input in, the same output keys as Video-RLM out."""

from __future__ import annotations

from typing import Annotated

from videoatlas.state.models import Cost, Evidence, add_cost
from videoatlas.state.run import QuestionInput


class UniformState(QuestionInput):
    """One question answered from uniformly sampled frames in a single call."""

    evidence: list[Evidence]
    """The sampled frames the answer cites (for grounding and reports)."""
    cost: Annotated[Cost, add_cost]
    answer: str
    answer_index: int | None
    reasoning: str
    cited: list[str]
    stop_reason: str
    round: int
    """Always 0: the baseline does not explore."""
