"""How one stand-in server behaves: its model id, speed, limits, reply style and injected faults."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from videoatlas_standin import contract
from videoatlas_standin.faults import FAULTS
from videoatlas_standin.thinking import MODES as REASONING_MODES
from videoatlas_standin.tools import PARSERS
from videoatlas_standin.version import STANDIN_MODEL


@dataclass(slots=True)
class StandinConfig:
    """How the stand-in behaves."""

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
        unknown = set(self.faults) - set(FAULTS)
        if unknown:
            raise ValueError(f"unknown fault(s) {', '.join(sorted(unknown))}; known: {', '.join(FAULTS)}")
        if self.reasoning not in REASONING_MODES:
            raise ValueError(f"reasoning must be one of {', '.join(REASONING_MODES)}")
        if self.patch not in (14, 16, 28, 32):
            raise ValueError("patch must be 14, 16, 28 or 32")
        if self.structured_outputs_backend not in contract.BACKENDS:
            raise ValueError(f"structured-outputs backend must be one of {', '.join(contract.BACKENDS)}")
        if self.enable_auto_tool_choice and not self.tool_call_parser:
            raise ValueError("--enable-auto-tool-choice requires --tool-call-parser")
        if self.enable_auto_tool_choice and self.tool_call_parser not in PARSERS:
            raise ValueError(
                f"invalid tool call parser: {self.tool_call_parser} (chose from {{ {','.join(PARSERS)} }})"
            )
        if self.max_model_len < 1 or self.max_images < 0:
            raise ValueError("max_model_len must be positive and max_images not negative")

    @property
    def auto_tools(self) -> bool:
        """Whether the server has a tool parser (vLLM builds one only with both tool flags)."""
        return self.enable_auto_tool_choice and self.tool_call_parser is not None
