"""The stand-in's request counters (``GET /stats``): what tests and benchmarks measure the client by."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class StandinStats:
    """Request counters, exposed at ``GET /stats``."""

    requests: int = 0
    chat_requests: int = 0
    completed: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    faults: Counter[str] = field(default_factory=Counter)
    prompt_tokens: int = 0
    cached_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int = 0
    enable_thinking: Counter[str] = field(default_factory=Counter)
    """Chat requests by the ``enable_thinking`` they sent (``true``, ``false``, ``null`` when none)."""
    images: int = 0
    tool_calls: int = 0
    """Tool calls made in replies (``tool_choice`` required, named or auto)."""
    completions_by_request: Counter[str] = field(default_factory=Counter)
    in_flight: int = 0
    in_flight_max: int = 0
    embedding_requests: int = 0
    """``/v1/embeddings`` requests answered with vectors."""
    embedding_inputs: int = 0
    """Texts and images embedded."""
    logprobs_requests: int = 0
    """Chat requests that asked for ``logprobs`` (and passed vLLM's checks of it)."""
    decision_requests: int = 0
    """``/v1/decisions`` requests answered."""
    decision_questions: int = 0
    """Questions they asked (one read each, its tokens counted with the chat route's)."""

    def as_dict(self) -> dict[str, Any]:
        """Plain data for ``GET /stats``."""
        repeated = sum(n - 1 for n in self.completions_by_request.values() if n > 1)
        return {
            "requests": self.requests,
            "chat_requests": self.chat_requests,
            "completed": self.completed,
            "errors": dict(self.errors),
            "faults": dict(self.faults),
            "prompt_tokens": self.prompt_tokens,
            "cached_tokens": self.cached_tokens,
            "completion_tokens": self.completion_tokens,
            "reasoning_tokens": self.reasoning_tokens,
            "enable_thinking": dict(self.enable_thinking),
            "images": self.images,
            "tool_calls": self.tool_calls,
            "in_flight": self.in_flight,
            "in_flight_max": self.in_flight_max,
            "embedding_requests": self.embedding_requests,
            "embedding_inputs": self.embedding_inputs,
            "logprobs_requests": self.logprobs_requests,
            "decision_requests": self.decision_requests,
            "decision_questions": self.decision_questions,
            "distinct_requests_completed": len(self.completions_by_request),
            "repeated_completions": repeated,
            "cache_hit_rate": round(self.cached_tokens / self.prompt_tokens, 4) if self.prompt_tokens else 0.0,
        }
