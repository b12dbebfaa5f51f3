"""What every model call cost and how it ended."""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Outcome = Literal["ok", "repaired", "reasked", "failed", "cancelled"]
"""How a call ended; ``cancelled``: the run was stopped (a signal, a lost lease): no fault of the call."""

CANCELLED: Outcome = "cancelled"
"""The outcome of a call, and the error of a node, stopped by a cancellation (``trace`` reads it as interrupted)."""


@dataclass(slots=True)
class CallRecord:
    """One structured call: latency, tokens, images, the schema asked for, and the outcome."""

    node: str
    schema: str
    started_at: float
    latency_s: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    images: int = 0
    image_pixels: int = 0
    image_tokens: int = 0
    """The prompt tokens the call's images take, estimated from their sizes (``llm.images.image_tokens``)."""
    outcome: Outcome = "failed"
    attempts: int = 0
    """HTTP requests made, retries and the re-ask included."""
    retries: int = 0
    parse_errors: list[str] = field(default_factory=list)
    reply_text: str = ""
    error: str | None = None
    role: str = ""
    """Whose call this is in its agent (``master``, ``worker``, ``planner``...): what a thinking setting names."""
    thinking: bool | None = None
    """What the request asked of a reasoning model (``enable_thinking``); None: nothing, the server's default."""
    reasoning: str = ""
    """The model's reasoning before its answer (a field of the reply, or a ``<think>`` block taken out of it)."""
    reasoning_tokens: int = 0
    """Completion tokens spent thinking (part of ``completion_tokens``)."""
    reasoning_tokens_estimated: bool = False
    """The server did not count ``reasoning_tokens``: they were estimated from the reasoning's length."""
    meta: dict[str, Any] = field(default_factory=dict)
    """Caller's labels: prompt set, template hash, worker, round."""

    def as_dict(self) -> dict[str, Any]:
        """Plain data for traces and JSON output."""
        return asdict(self)


@dataclass(slots=True)
class CallTotals:
    """Running totals over many calls, safe to update from several tasks and threads."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    reasoning_tokens: int = 0
    reasoning_estimated_calls: int = 0
    """Calls whose reasoning tokens were estimated, not counted by the server."""
    images: int = 0
    latency_s: float = 0.0
    outcomes: Counter[str] = field(default_factory=Counter)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, record: CallRecord) -> None:
        """Count one finished call."""
        with self._lock:
            self.calls += 1
            self.prompt_tokens += record.prompt_tokens
            self.completion_tokens += record.completion_tokens
            self.cached_tokens += record.cached_tokens
            self.reasoning_tokens += record.reasoning_tokens
            self.reasoning_estimated_calls += record.reasoning_tokens_estimated
            self.images += record.images
            self.latency_s += record.latency_s
            self.outcomes[record.outcome] += 1

    @property
    def cache_hit_rate(self) -> float:
        """Share of prompt tokens served from the server's prefix cache."""
        return self.cached_tokens / self.prompt_tokens if self.prompt_tokens else 0.0

    def as_dict(self) -> dict[str, Any]:
        """Plain data."""
        return {
            "calls": self.calls,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cached_tokens": self.cached_tokens,
            "cache_hit_rate": round(self.cache_hit_rate, 4),
            "reasoning_tokens": self.reasoning_tokens,
            "reasoning_estimated_calls": self.reasoning_estimated_calls,
            "images": self.images,
            "latency_s": round(self.latency_s, 3),
            "outcomes": dict(self.outcomes),
        }
