"""The vLLM command our workload needs, built (and optionally run) by ``videoatlas serve``."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass

from videoatlas.errors import BadInputError


@dataclass(frozen=True, slots=True)
class ServeOptions:
    """What differs between deployments; everything else follows from the workload."""

    model: str
    gpus: int = 1
    host: str = "0.0.0.0"
    port: int = 8000
    max_images: int = 16
    max_model_len: int = 65536
    max_pixels: int = 2560 * 2560
    gpu_memory_utilization: float = 0.90
    served_name: str | None = None

    def __post_init__(self) -> None:
        if not self.model:
            raise BadInputError("--model is required (a Hugging Face id or a local path)")
        if self.gpus < 1:
            raise BadInputError("--gpus must be >= 1")
        if not 0.1 <= self.gpu_memory_utilization <= 0.99:
            raise BadInputError("--gpu-memory-utilization must be between 0.1 and 0.99")


def vllm_command(opts: ServeOptions) -> list[str]:
    """``vllm serve`` arguments for grid-navigating agents.

    * several images per prompt (a grid plus the scratchpad pages; the old default was one);
    * a context long enough for a 2560 px grid (~8.5K tokens) plus scratchpad pages and text;
    * automatic prefix caching, and per-request cached-token counts in ``usage``;
    * images up to a full 8 x 8 sheet of 320 px cells without the processor shrinking them;
    * Qwen's tool-call parser, for agents that use tool calling. Structured outputs
      (``response_format`` json_schema) are on by default in vLLM's OpenAI-compatible server.
    """
    cmd = [
        "vllm",
        "serve",
        opts.model,
        "--host",
        opts.host,
        "--port",
        str(opts.port),
        "--tensor-parallel-size",
        str(opts.gpus),
        "--max-model-len",
        str(opts.max_model_len),
        "--limit-mm-per-prompt",
        json.dumps({"image": opts.max_images, "video": 0}),
        "--mm-processor-kwargs",
        json.dumps({"max_pixels": opts.max_pixels}),
        "--enable-prefix-caching",
        "--enable-prompt-tokens-details",
        "--enable-auto-tool-choice",
        "--tool-call-parser",
        "hermes",
        "--gpu-memory-utilization",
        f"{opts.gpu_memory_utilization:.2f}",
    ]
    if opts.served_name:
        cmd += ["--served-model-name", opts.served_name]
    return cmd


def vllm_executable() -> str | None:
    """Path of the ``vllm`` command, if the serve extra is installed."""
    return shutil.which("vllm")
