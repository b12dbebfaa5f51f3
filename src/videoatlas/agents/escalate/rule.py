"""When the uniform answer is handed over: the one rule, as a plain function."""

from __future__ import annotations


def hands_over(confidence: float | None, below: float) -> bool:
    """Whether a uniform answer of this ``confidence`` goes to the search agent.

    Below the threshold it does; at or above it, it is kept (never replaced). An answer without a probability
    (the server sent no log-probabilities, or the uniform call gave no answer) cannot be trusted by this rule,
    so it is handed over.
    """
    return confidence is None or confidence < below
