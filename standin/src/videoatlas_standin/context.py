"""What every route of one stand-in server shares: its settings, counters, prefix cache, OCR reader and faults.

Routes are handed this and nothing else, and answer their errors through it (:meth:`ServerContext.refuse`).
"""

from __future__ import annotations

import random
import threading
from collections import Counter
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from aiohttp import web

from videoatlas_standin import contract, faults, record
from videoatlas_standin.contract import Refusal
from videoatlas_standin.perception import Reader, model_threads, shared_reader
from videoatlas_standin.thinking import MODES as REASONING_MODES
from videoatlas_standin.tokens import PrefixCache
from videoatlas_standin.tools import PARSERS
from videoatlas_standin.version import STANDIN_MODEL


@dataclass(slots=True)
class StandinConfig:
    """How one stand-in server behaves: its model id, speed, limits, reply style and injected faults."""

    model: str = STANDIN_MODEL
    seed: int = 0
    latency_s: float = 0.0
    """Fixed delay per completion."""
    per_token_s: float = 0.0
    """Extra delay per completion token."""
    patch: int = 28
    """Pixels per visual token side: 28 (Qwen2.5-VL) or 32 (Qwen3-VL)."""
    cache_blocks: int = 32768
    """Prefix-cache capacity in 16-token blocks."""
    min_text_px: int = 9
    """Text lines shorter than this are not read (a model cannot read them at this size either)."""
    faults: dict[str, float] = field(default_factory=dict)
    """Fault name -> probability per chat request."""
    hang_s: float = 600.0
    fault_budget: int | None = None
    """Stop injecting after this many faults (None: no limit); makes "fail, then recover" exact."""
    max_images: int = 16
    """Images per prompt (vLLM ``--limit-mm-per-prompt``); more are refused with vLLM's error."""
    max_image_pixels: int = 12_845_056
    max_model_len: int = 65_536
    """Context length in tokens (vLLM ``--max-model-len``); a longer prompt is refused with vLLM's error."""
    structured_outputs_backend: contract.Backend = "auto"
    """Which vLLM structured-output backend's rules reply schemas are held to: auto, xgrammar or guidance."""
    enable_auto_tool_choice: bool = False
    """vLLM ``--enable-auto-tool-choice``: with a tool-call parser, requests may ask for tool calls."""
    tool_call_parser: str | None = None
    """vLLM ``--tool-call-parser`` (one of the names vLLM 0.33 registers); without it every tool call is refused."""
    speech: bool = True
    """Serve ``/v1/audio/transcriptions`` with a real speech model (False: no such route)."""
    decisions: bool = False
    """Serve ``/v1/decisions`` as vLLM 0.33 does for a model that has it (False: 501, after validating the request)."""
    record: Path | None = None
    """Append every chat, embeddings, transcription and decisions request here, before validation (:mod:`.record`)."""
    reasoning: str = "off"
    """Reply like a reasoning model (:data:`.thinking.MODES`); not to a request with ``enable_thinking`` false."""

    def __post_init__(self) -> None:
        unknown = set(self.faults) - set(faults.FAULTS)
        if unknown:
            raise ValueError(f"unknown fault(s) {', '.join(sorted(unknown))}; known: {', '.join(faults.FAULTS)}")
        if self.reasoning not in REASONING_MODES:
            raise ValueError(f"reasoning must be one of {', '.join(REASONING_MODES)}")
        if self.patch not in (14, 16, 28, 32):
            raise ValueError("patch must be 14, 16, 28 or 32")
        if self.structured_outputs_backend not in contract.BACKENDS:
            raise ValueError(f"structured-outputs backend must be one of {', '.join(contract.BACKENDS)}")
        if self.enable_auto_tool_choice and not self.tool_call_parser:
            raise ValueError("--enable-auto-tool-choice requires --tool-call-parser")
        if self.enable_auto_tool_choice and self.tool_call_parser not in PARSERS:
            raise ValueError(f"invalid tool call parser: {self.tool_call_parser} (choose from {', '.join(PARSERS)})")
        if self.max_model_len < 1 or self.max_images < 0:
            raise ValueError("max_model_len must be positive and max_images not negative")

    @property
    def auto_tools(self) -> bool:
        """Whether the server has a tool parser (vLLM builds one only with both tool flags)."""
        return self.enable_auto_tool_choice and self.tool_call_parser is not None


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
        self._stopping = threading.Event()

    @property
    def reader(self) -> Reader:
        """The OCR reader: the process's, loaded on first use (model load takes a second or two)."""
        if self._reader is None:  # two threads at once get the same one
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
