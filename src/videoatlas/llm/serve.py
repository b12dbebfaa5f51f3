"""The ``vllm serve`` command our workload needs, one preset per model family (``videoatlas serve``).

Every flag below was read from vLLM 0.33.0's own argument definitions (``vllm/engine/arg_utils.py``,
``vllm/config/*.py``, ``vllm/entrypoints/common/cli_args.py``) and its parser registries
(``vllm/reasoning/__init__.py``, ``vllm/tool_parsers/__init__.py``); ``tests/llm/test_serve_presets.py``
parses each preset with vLLM's own parser wherever vLLM is installed (``make conformance``).
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, Literal

from videoatlas.errors import BadInputError
from videoatlas.limits import CELL_PX_MIN, K_MIN

Preset = Literal["qwen2.5-vl", "qwen3-vl", "qwen3.5", "whisper"]
PRESETS: Final[tuple[Preset, ...]] = ("qwen2.5-vl", "qwen3-vl", "qwen3.5", "whisper")

AUTO_CONTEXT: Final = "auto"
"""``--max-model-len auto``: vLLM takes the model's own context length if its KV cache fits the GPU, else the
longest that fits (``ModelConfig.max_model_len``, -1 or 'auto')."""

DEFAULT_MAX_PIXELS: Final = 2560 * 2560
"""A full 8 x 8 sheet of 320 px cells, the largest grid picture the agents send by default."""

MIN_IMAGE_PIXELS: Final = (K_MIN * CELL_PX_MIN) ** 2
"""The smallest grid picture the limits allow (2 x 2 cells of 32 px). A pixel floor at or below it means
the processor never upscales a picture we send, so its token count is the one the client computed."""

# Model ids name their family: Qwen/Qwen2.5-VL-7B-Instruct, Qwen/Qwen3-VL-8B-Thinking, Qwen/Qwen3.5-35B-A3B,
# Qwen/Qwen3.6-27B-FP8, or a local folder named after them (qwen2_5_vl, qwen3-vl, qwen3_5 spellings too).
_FAMILY_PATTERNS: Final[tuple[tuple[Preset, re.Pattern[str]], ...]] = (
    ("qwen2.5-vl", re.compile(r"qwen2[._-]?5[._-]?vl")),
    ("qwen3-vl", re.compile(r"qwen3[._-]?vl")),
    ("qwen3.5", re.compile(r"qwen3[._-]?[56](?![0-9])")),
    ("whisper", re.compile(r"whisper")),
)


@dataclass(frozen=True, slots=True)
class ServeOptions:
    """What differs between deployments; everything else follows from the model family and the workload."""

    model: str
    preset: Preset | None = None
    """The model family's preset; ``None``: told from the model id."""
    gpus: int = 1
    host: str = "0.0.0.0"
    port: int = 8000
    max_images: int = 16
    max_model_len: int | Literal["auto"] | None = None
    """Context length; ``None``: the preset's own (64K for Qwen2.5-VL / Qwen3-VL, ``auto`` for Qwen3.5)."""
    max_pixels: int = DEFAULT_MAX_PIXELS
    gpu_memory_utilization: float = 0.90
    served_name: str | None = None

    def __post_init__(self) -> None:
        if not self.model:
            raise BadInputError("--model is required (a Hugging Face id or a local path)")
        if self.preset is not None and self.preset not in PRESETS:
            raise BadInputError(f"--preset must be one of {', '.join(PRESETS)}, not {self.preset!r}")
        if self.gpus < 1:
            raise BadInputError("--gpus must be >= 1")
        if self.max_images < 1:
            raise BadInputError("--max-images must be >= 1")
        if isinstance(self.max_model_len, int) and self.max_model_len < 1:
            raise BadInputError("--max-model-len must be >= 1 or 'auto'")
        if self.max_pixels < MIN_IMAGE_PIXELS:
            raise BadInputError(f"--max-pixels must be >= {MIN_IMAGE_PIXELS}")
        if not 0.1 <= self.gpu_memory_utilization <= 0.99:
            raise BadInputError("--gpu-memory-utilization must be between 0.1 and 0.99")


def detect_preset(model: str) -> Preset:
    """The model family named by a model id or a local path's last folder."""
    name = model.rstrip("/").rsplit("/", 1)[-1].lower()
    for preset, pattern in _FAMILY_PATTERNS:
        if pattern.search(name):
            return preset
    raise BadInputError(f"cannot tell the model family of {model!r}; name it with --preset {'|'.join(PRESETS)}")


def resolve_preset(opts: ServeOptions) -> Preset:
    """The preset asked for, else the one the model id names."""
    return opts.preset if opts.preset is not None else detect_preset(opts.model)


def _server(opts: ServeOptions) -> list[str]:
    """``vllm serve MODEL`` on the address and GPUs asked for: how every preset's command begins."""
    return [
        "vllm",
        "serve",
        opts.model,
        "--host",
        opts.host,
        "--port",
        str(opts.port),
        "--tensor-parallel-size",
        str(opts.gpus),
    ]


def _common(opts: ServeOptions, context: int | Literal["auto"]) -> list[str]:
    """Flags every family shares.

    * ``--tensor-parallel-size``: the GPUs one engine spans;
    * ``--max-model-len``: the option's value, else the preset's context;
    * ``--limit-mm-per-prompt {"image": N, "video": 0}``: several images per prompt (a grid plus scratchpad
      pages; vLLM's old default was one) and no video, which the agents never send: vLLM then reserves no
      encoder budget or profiling memory for video;
    * ``--enable-prefix-caching --enable-prompt-tokens-details``: prefix caching (the system prompt and the
      root grid repeat across calls) and its per-request ``usage.prompt_tokens_details.cached_tokens``,
      which the client records;
    * ``--gpu-memory-utilization``, ``--served-model-name``: as given.
    """
    max_len = opts.max_model_len if opts.max_model_len is not None else context
    cmd = [
        *_server(opts),
        "--max-model-len",
        str(max_len),
        "--limit-mm-per-prompt",
        json.dumps({"image": opts.max_images, "video": 0}),
        "--enable-prefix-caching",
        "--enable-prompt-tokens-details",
        "--gpu-memory-utilization",
        f"{opts.gpu_memory_utilization:.2f}",
    ]
    if opts.served_name:
        cmd += ["--served-model-name", opts.served_name]
    return cmd


def _size_kwargs(opts: ServeOptions) -> str:
    """``--mm-processor-kwargs`` in the form the Qwen3-VL image processor reads.

    Its ``size`` is a pixel budget, not edges: ``longest_edge`` is the most pixels an image keeps before
    the processor shrinks it, ``shortest_edge`` the fewest before it enlarges it.
    """
    return json.dumps({"size": {"longest_edge": opts.max_pixels, "shortest_edge": MIN_IMAGE_PIXELS}})


def qwen25_vl(opts: ServeOptions) -> list[str]:
    """Qwen2.5-VL (28 px per visual token).

    * the shared flags (see ``_common``) with a 64K context: a 2560 px grid is ~8.4K tokens, and a worker
      call holds one grid, scratchpad pages and text (Qwen2.5-VL's own window is 128K; 64K leaves KV-cache
      room for parallel workers);
    * ``--mm-processor-kwargs {"max_pixels": N}``: Qwen2.5-VL's processor reads ``max_pixels``; at 2560 x 2560
      a full 8 x 8 sheet of 320 px cells reaches the model unshrunk;
    * ``--enable-auto-tool-choice --tool-call-parser hermes``: Qwen2.5 writes tool calls as hermes-style JSON
      in ``<tool_call>`` tags (0.33.0's ``qwen3_json`` is an alias of the same parser); the agents answer
      through ``response_format``, which vLLM's server enables by default, so this serves tool-calling
      clients of the same server.
    """
    return [
        *_common(opts, 65536),
        "--mm-processor-kwargs",
        json.dumps({"max_pixels": opts.max_pixels}),
        "--enable-auto-tool-choice",
        "--tool-call-parser",
        "hermes",
    ]


def qwen3_vl(opts: ServeOptions) -> list[str]:
    """Qwen3-VL (32 px per visual token).

    * the shared flags (see ``_common``) with a 64K context, as for Qwen2.5-VL; image-only limits
      (``"video": 0``) as the vLLM Qwen3-VL recipe's image-only deployments set them;
    * ``--mm-processor-kwargs {"size": {"longest_edge": N, "shortest_edge": M}}``: the Qwen3-VL processor
      ignores ``max_pixels`` and reads its pixel budget from ``size`` (``longest_edge`` = most pixels,
      ``shortest_edge`` = fewest; see ``_size_kwargs``);
    * ``--mm-encoder-tp-mode data``: with several GPUs each holds the whole (small) vision encoder and
      encodes its share of the images, instead of splitting every encoder layer across GPUs and paying an
      all-reduce per layer; Qwen3-VL's encoder supports it (``supports_encoder_tp_data``);
    * ``--async-scheduling``: schedules the next step while the GPU runs the current one. vLLM turns it on
      by default where it can; asking for it makes an incompatible setting an error at start instead of a
      silent slowdown;
    * ``--enable-auto-tool-choice --tool-call-parser hermes``: Qwen3-VL writes JSON tool calls in
      ``<tool_call>`` tags, like Qwen2.5;
    * ``--reasoning-parser qwen3`` for the ``-Thinking`` checkpoints only: they open every reply with a
      ``<think>`` block, which the parser moves to ``reasoning_content`` so the JSON answer stays parseable.
    """
    cmd = [
        *_common(opts, 65536),
        "--mm-processor-kwargs",
        _size_kwargs(opts),
        "--mm-encoder-tp-mode",
        "data",
        "--async-scheduling",
        "--enable-auto-tool-choice",
        "--tool-call-parser",
        "hermes",
    ]
    if "thinking" in opts.model.lower():
        cmd += ["--reasoning-parser", "qwen3"]
    return cmd


def qwen35(opts: ServeOptions) -> list[str]:
    """Qwen3.5 / Qwen3.6 (hybrid: Gated DeltaNet linear attention with full attention; 32 px per token).

    * the shared flags (see ``_common``) with ``--max-model-len auto``: the model's own window is 262K tokens,
      which does not fit one GPU's KV cache beside the weights for most sizes; ``auto`` takes the longest
      that fits the GPU instead of failing at start;
    * ``--enable-prefix-caching`` (shared): on a hybrid model it also caches the linear-attention (Mamba)
      state at block boundaries (vLLM 0.33.0 sets its Mamba cache mode to ``align`` whenever prefix caching
      is on). ``--mamba-cache-mode`` is deprecated and without effect in 0.33.0, so it is not passed;
    * ``--mm-processor-kwargs {"size": ...}``: Qwen3.5 uses the Qwen3-VL processor (see ``qwen3_vl``);
    * ``--mm-encoder-tp-mode data``: Qwen3.5's vision encoder supports data parallelism too;
    * ``--reasoning-parser qwen3``: Qwen3.5 thinks by default; the parser moves the ``<think>`` block to
      ``reasoning_content``, and ``chat_template_kwargs: {"enable_thinking": false}`` turns thinking off
      per request;
    * ``--enable-auto-tool-choice --tool-call-parser qwen3_coder``: Qwen3.5's chat template writes tool calls
      as ``<tool_call><function=...><parameter=...>`` XML, the format of vLLM's Qwen3 engine parser
      (registered as ``qwen3_coder``), not hermes JSON.
    """
    return [
        *_common(opts, AUTO_CONTEXT),
        "--mm-processor-kwargs",
        _size_kwargs(opts),
        "--mm-encoder-tp-mode",
        "data",
        "--reasoning-parser",
        "qwen3",
        "--enable-auto-tool-choice",
        "--tool-call-parser",
        "qwen3_coder",
    ]


def whisper(opts: ServeOptions) -> list[str]:
    """Whisper (speech to text on ``/v1/audio/transcriptions``): the speech server beside the VLM's.

    vLLM serves one model per server, so the speech track's transcriptions (``--speech-url``) go to a
    server of their own. Its command holds only what every vLLM server takes, as the VLM presets pass
    it: ``--host``, ``--port``, ``--tensor-parallel-size``, ``--gpu-memory-utilization`` (a Whisper model
    is small: lower it to share a GPU with the VLM's server) and ``--served-model-name``. Left out on
    purpose: the image and video limits of ``--limit-mm-per-prompt`` (Whisper takes one audio clip, its
    own limit), ``--enable-prefix-caching`` (an encoder-decoder model whose prompt is the audio has no
    shared prefix to reuse), the tool and reasoning parsers (no chat), and ``--max-model-len`` unless
    given (vLLM takes the decoder's own 448 tokens: a 30 s window's text).
    """
    cmd = [
        *_server(opts),
        "--gpu-memory-utilization",
        f"{opts.gpu_memory_utilization:.2f}",
    ]
    if opts.max_model_len is not None:
        cmd += ["--max-model-len", str(opts.max_model_len)]
    if opts.served_name:
        cmd += ["--served-model-name", opts.served_name]
    return cmd


PRESET_BUILDERS: Final[dict[Preset, Callable[[ServeOptions], list[str]]]] = {
    "qwen2.5-vl": qwen25_vl,
    "qwen3-vl": qwen3_vl,
    "qwen3.5": qwen35,
    "whisper": whisper,
}


def vllm_command(opts: ServeOptions) -> list[str]:
    """``vllm serve`` arguments for grid-navigating agents on the model's family (see each preset)."""
    return PRESET_BUILDERS[resolve_preset(opts)](opts)


def vllm_executable() -> str | None:
    """Path of the ``vllm`` command, if the serve extra is installed."""
    return shutil.which("vllm")
