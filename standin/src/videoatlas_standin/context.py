"""What every route of one stand-in server shares: its settings, counters, prefix cache, OCR reader and faults.

Routes are handed this and nothing else, and answer their errors through it (:meth:`ServerContext.refuse`).
"""

from __future__ import annotations

import random
import threading
from collections import Counter
from dataclasses import dataclass, field, fields
from typing import Any

from aiohttp import web

from videoatlas_standin import faults, record
from videoatlas_standin.config import StandinConfig
from videoatlas_standin.contract import Refusal
from videoatlas_standin.perception import Reader, model_threads, shared_reader
from videoatlas_standin.tokens import PrefixCache


@dataclass(slots=True)
class StandinStats:
    """Request counters, exposed at ``GET /stats``: what tests and benchmarks measure the client by."""

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
        """Plain data for ``GET /stats``: the counters in field order, then what follows from them."""
        counters = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "completions_by_request"}
        repeated = sum(n - 1 for n in self.completions_by_request.values() if n > 1)
        return {
            **{name: dict(value) if isinstance(value, Counter) else value for name, value in counters.items()},
            "distinct_requests_completed": len(self.completions_by_request),
            "repeated_completions": repeated,
            "cache_hit_rate": round(self.cached_tokens / self.prompt_tokens, 4) if self.prompt_tokens else 0.0,
        }


class ServerContext:
    """One stand-in server's state (its routes read and update it)."""

    def __init__(self, config: StandinConfig | None = None, reader: Reader | None = None) -> None:
        self.config = config or StandinConfig()
        model_threads()  # a bad $VIDEOATLAS_STANDIN_THREADS stops the server at its start, not at its first image
        self.stats = StandinStats()
        self.cache = PrefixCache(self.config.cache_blocks)
        self._rng = random.Random(self.config.seed)
        self._reader = reader
        self._reader_lock = threading.Lock()
        self._stopping = threading.Event()

    @property
    def reader(self) -> Reader:
        """The OCR reader: the process's, loaded on first use (model load takes a second or two)."""
        with self._reader_lock:
            if self._reader is None:
                self._reader = shared_reader(self.config.min_text_px)
            return self._reader

    def stop_reading(self) -> None:
        """Give up the OCR reads queued or waiting for the recogniser: the server is stopping."""
        self._stopping.set()

    def stopping(self) -> bool:
        """Whether the server is stopping (OCR reads still waiting then give up)."""
        return self._stopping.is_set()

    def draw_fault(self) -> str | None:
        """The fault to inject into this chat request, if any (counted in ``stats.faults``)."""
        return faults.draw(self.config.faults, self.config.fault_budget, self.stats.faults, self._rng)

    def refuse(self, refusal: Refusal, counted: str = "") -> web.Response:
        """``refusal`` answered, and counted in ``stats.errors`` as ``counted`` (by default ``refused_<its param>``)."""
        self.stats.errors[counted or f"refused_{refusal.param or 'request'}"] += 1
        return refusal.response()

    async def json_body(self, request: web.Request, route: str) -> Any:
        """The request's JSON body, recorded (:mod:`.record`); a 400 response when the body is not JSON."""
        try:
            body = await request.json()
        except ValueError:  # not JSON, or not text
            return self.refuse(Refusal(400, "request body is not valid JSON"), "bad_json")
        record.json_request(self.config.record, route, body)
        return body
