"""The uniform-sampling baseline's state: the Master's input in, the same output keys as Video-RLM out."""

from __future__ import annotations

from videoatlas.state.run import AnsweringState


class UniformState(AnsweringState):
    """One question answered from uniformly sampled frames in a single call.

    ``evidence`` holds the sampled frames the answer cites (for grounding and reports); ``round`` is
    always 0, since the baseline does not explore.
    """
