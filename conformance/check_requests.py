"""Check recorded chat requests with vLLM's own code, on a CPU, without an engine or a model.

Every request body that ``videoatlas standin --record FILE`` wrote (one JSON line each) goes through
the steps vLLM 0.33.0's OpenAI server and engine apply to it before any token is generated:

1. ``ChatCompletionRequest.model_validate``: the request model and its validators (a refusal here is
   vLLM's HTTP 400); fields the model does not know are reported too, since vLLM ignores them silently;
2. ``get_max_tokens``: the completion budget within the context (64K, the Qwen2.5-VL / Qwen3-VL presets'),
   with the prompt estimated from its text tokens and its images at 28 px per visual token side;
3. ``ChatCompletionRequest.to_sampling_params``, as the server converts it;
4. ``SamplingParams.verify`` with a ``StructuredOutputsConfig`` of each backend (``auto``, ``xgrammar``,
   ``guidance``), the front-end validation the engine's input processor runs;
5. the engine-side compile: the backend that step 4 settled on compiles the grammar against the tokenizer
   (``XgrammarBackend`` / ``GuidanceBackend`` / ``OutlinesBackend``.compile_grammar).

The tokenizer comes from a package, never from a model hub: the Qwen BPE ranks shipped as
``qwen.tiktoken`` in the ``dashscope`` wheel, converted to a fast Hugging Face tokenizer (the tokenizer
Qwen2.5 / Qwen3 use: same ranks, same pre-tokenizer pattern, ``<|endoftext|>`` / ``<|im_start|>`` /
``<|im_end|>`` at 151643-151645).

Requests are grouped into request shapes (the same keys, the same schema up to enum values and the
same message and content structure). The script prints ``N/N request shapes accepted`` and every refused
shape with vLLM's error, and exits 1 unless every shape is accepted by every backend. A control request
that vLLM must refuse (a ``uniqueItems`` schema) is checked first: if it passes, the check exits 2.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import importlib.util
import io
import json
import math
import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

BACKENDS = ("auto", "xgrammar", "guidance")
MAX_MODEL_LEN = 65536
PATCH_PX = 28
QWEN_PATTERN = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"""
    r"""| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
)
QWEN_SPECIAL = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")

# Inside a schema these keys hold values that vary with the question or the grid, not the schema's form.
_SCHEMA_VALUE_KEYS = frozenset({"enum", "const", "description", "title", "default", "examples"})
# Outside a schema only these strings name a structure; every other string is content.
_STRUCTURAL_STRINGS = frozenset({"role", "type"})


def _shape(value: Any, key: str | None = None, in_schema: bool = False) -> Any:
    """The structure of a request with its content abstracted away (see the module doc)."""
    if key == "schema" or key == "json":
        in_schema = True
    if in_schema and key in _SCHEMA_VALUE_KEYS:
        return f"<{key}>"
    if isinstance(value, dict):
        return {k: _shape(v, k, in_schema) for k, v in sorted(value.items())}
    if isinstance(value, list):
        if in_schema and key == "required":
            return sorted(str(v) for v in value)
        shapes: list[Any] = []
        for item in value:
            s = _shape(item, None, in_schema)
            if not shapes or shapes[-1] != s:  # runs of the same part (several images) are one structure
                shapes.append(s)
        return shapes
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int | float):
        return "<number>"
    if isinstance(value, str):
        if key in _STRUCTURAL_STRINGS or (in_schema and key in {"$ref", "format"}):
            return value
        return "<str>"
    return f"<{type(value).__name__}>"


def shape_key(body: dict[str, Any]) -> str:
    """A short stable id of a request's shape."""
    canonical = json.dumps(_shape(body), sort_keys=True)
    return hashlib.sha256(canonical.encode()).hexdigest()[:10]


def describe(body: dict[str, Any]) -> str:
    """One line naming a request shape for people: its schema's name, message roles and parts, options."""
    rf = body.get("response_format") or {}
    js = rf.get("json_schema") or {}
    name = js.get("name") or rf.get("type") or "no response_format"
    parts: list[str] = []
    for message in body.get("messages", []):
        content = message.get("content")
        if isinstance(content, list):
            kinds = [str(p.get("type")) for p in content if isinstance(p, dict)]
            counted = [f"{k}x{kinds.count(k)}" for k in dict.fromkeys(kinds)]
            parts.append(f"{message.get('role')}[{','.join(counted)}]")
        else:
            parts.append(str(message.get("role")))
    extras = sorted(k for k in body if k not in {"model", "messages", "response_format"})
    return f"{name}: {' '.join(parts)}; {', '.join(extras) or 'no other fields'}"


def qwen_tokenizer() -> Any:
    """A fast Hugging Face tokenizer from the Qwen BPE ranks that the dashscope wheel ships."""
    transformers: Any = importlib.import_module("transformers")
    convert: Any = importlib.import_module("transformers.convert_slow_tokenizer")

    spec = importlib.util.find_spec("dashscope")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("check_requests: the dashscope wheel (Qwen's qwen.tiktoken) is not installed")
    ranks = Path(next(iter(spec.submodule_search_locations))) / "resources" / "qwen.tiktoken"
    if not ranks.is_file():
        raise SystemExit(f"check_requests: {ranks} is missing from the dashscope wheel")
    converted = convert.TikTokenConverter(
        vocab_file=str(ranks), pattern=QWEN_PATTERN, extra_special_tokens=list(QWEN_SPECIAL)
    ).converted()
    return transformers.PreTrainedTokenizerFast(
        tokenizer_object=converted,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        additional_special_tokens=["<|im_start|>"],
    )


def prompt_tokens(body: dict[str, Any], tokenizer: Any) -> int:
    """Text tokens of every message plus each image's visual tokens (no chat-template tokens: a lower bound)."""
    from PIL import Image

    total = 0
    for message in body.get("messages", []):
        content = message.get("content")
        parts: list[Any] = content if isinstance(content, list) else [{"type": "text", "text": content or ""}]
        for part in parts:
            if part.get("type") == "text":
                total += len(tokenizer.encode(part.get("text") or "", add_special_tokens=False))
            elif part.get("type") == "image_url":
                url = str((part.get("image_url") or {}).get("url", ""))
                if url.startswith("data:") and "," in url:
                    with Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))) as img:
                        w, h = img.size
                    total += math.ceil(w / PATCH_PX) * math.ceil(h / PATCH_PX)
    return total


@dataclass
class Verdict:
    """What vLLM said about one request shape."""

    example: dict[str, Any]
    requests: int = 0
    refusals: dict[str, str] = field(default_factory=dict)
    """Step or backend -> vLLM's error (the first one seen)."""
    ignored: set[str] = field(default_factory=set)
    auto_chose: set[str] = field(default_factory=set)
    """The backends ``auto`` settled on (it tries xgrammar first and falls back)."""


class Checker:
    """vLLM's request model, sampling conversion, validation and grammar compile, with one tokenizer."""

    def __init__(self, tokenizer: Any) -> None:
        from vllm.config.structured_outputs import StructuredOutputsConfig

        self.tokenizer = tokenizer
        self.vocab_size = len(tokenizer)
        # SamplingParams.verify reads these ModelConfig values (a ModelConfig itself needs a model's files).
        self.model_facts = SimpleNamespace(
            max_logprobs=20,
            max_model_len=MAX_MODEL_LEN,
            is_diffusion=False,
            get_vocab_size=lambda: self.vocab_size,
        )
        self.configs = {b: StructuredOutputsConfig(backend=b) for b in BACKENDS}
        self._engines: dict[str, Any] = {}

    def engine_backend(self, name: str) -> Any:
        """The engine-side backend of that name, built once (building one indexes the vocabulary)."""
        if name not in self._engines:
            from vllm.config.structured_outputs import StructuredOutputsConfig
            from vllm.v1.structured_output.backend_guidance import GuidanceBackend
            from vllm.v1.structured_output.backend_outlines import OutlinesBackend
            from vllm.v1.structured_output.backend_xgrammar import XgrammarBackend

            classes = {"xgrammar": XgrammarBackend, "guidance": GuidanceBackend, "outlines": OutlinesBackend}
            vllm_config = SimpleNamespace(
                structured_outputs_config=StructuredOutputsConfig(backend=name),
                model_config=None,
                speculative_config=None,
            )
            self._engines[name] = classes[name](
                vllm_config=vllm_config, tokenizer=self.tokenizer, vocab_size=self.vocab_size
            )
        return self._engines[name]

    def check(self, body: dict[str, Any], verdict: Verdict) -> None:
        """Run one request through every step; record the first error of each step or backend."""
        from pydantic import ValidationError
        from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
        from vllm.entrypoints.serve.utils.api_utils import get_max_tokens
        from vllm.exceptions import VLLMClientError
        from vllm.v1.structured_output.request import get_structured_output_key

        refused = (ValidationError, VLLMClientError, ValueError)
        try:
            request = ChatCompletionRequest.model_validate(body)
        except refused as exc:
            verdict.refusals.setdefault("request", _one_line(exc))
            return
        verdict.ignored |= set(request.model_extra or {})
        try:
            max_tokens = get_max_tokens(
                MAX_MODEL_LEN,
                request.max_completion_tokens if request.max_completion_tokens is not None else request.max_tokens,
                prompt_tokens(body, self.tokenizer),
                {},
            )
        except refused as exc:
            verdict.refusals.setdefault("context", _one_line(exc))
            return
        for backend in BACKENDS:
            try:
                params = request.to_sampling_params(max_tokens, {})
                params.verify(self.model_facts, None, self.configs[backend], self.tokenizer)
                so = params.structured_outputs
                if so is None and (body.get("response_format") or {}).get("type") in {"json_schema", "json_object"}:
                    verdict.refusals.setdefault(backend, "response_format was dropped: the reply is not constrained")
                    continue
                if so is not None:
                    chosen = so._backend or backend
                    if backend == "auto":
                        verdict.auto_chose.add(chosen)
                    kind, spec = get_structured_output_key(so)
                    self.engine_backend(chosen).compile_grammar(kind, spec)
            except refused as exc:
                verdict.refusals.setdefault(backend, _one_line(exc))


# A request vLLM must refuse (the measurement: uniqueItems is unimplemented in llguidance and
# unsupported by xgrammar). Each run checks it first, so a harness that could not refuse cannot pass.
CONTROL: dict[str, Any] = {
    "model": "control",
    "messages": [{"role": "user", "content": "Name two letters."}],
    "max_completion_tokens": 16,
    "response_format": {
        "type": "json_schema",
        "json_schema": {
            "name": "Control",
            "schema": {
                "type": "object",
                "properties": {"ids": {"type": "array", "items": {"enum": ["a", "b", "c"]}, "uniqueItems": True}},
                "required": ["ids"],
                "additionalProperties": False,
            },
        },
    },
}


def say(line: str) -> None:
    """One line of the report, on stdout."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:600]}"


def read_requests(paths: Iterable[Path]) -> list[dict[str, Any]]:
    """Every JSON line of the recording files, in order."""
    bodies: list[dict[str, Any]] = []
    for path in paths:
        if not path.is_file():
            raise SystemExit(f"check_requests: no recording at {path} (run conformance/run_agents.sh first)")
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            body = json.loads(line)
            if not isinstance(body, dict):
                raise SystemExit(f"check_requests: {path}:{n} is not a JSON object")
            bodies.append(body)
    return bodies


def main(argv: list[str] | None = None) -> int:
    """Check the recorded requests; print the summary; 0 only when every shape is accepted."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("records", nargs="+", type=Path, help="JSONL files written by standin --record")
    parser.add_argument("--json", type=Path, default=None, help="also write the verdicts to this JSON file")
    args = parser.parse_args(argv)
    os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")  # no GPU here; the checks below do not use one

    import vllm

    bodies = read_requests(args.records)
    if not bodies:
        sys.stderr.write("check_requests: no request was recorded; nothing to check\n")
        return 2
    checker = Checker(qwen_tokenizer())
    control = Verdict(example=CONTROL)
    checker.check(CONTROL, control)
    if set(control.refusals) != set(BACKENDS):
        accepted_by = ", ".join(b for b in BACKENDS if b not in control.refusals)
        sys.stderr.write(f"check_requests: the control request (uniqueItems) was accepted under {accepted_by}\n")
        return 2
    say(f"control: a uniqueItems schema is refused under every backend ({control.refusals['guidance']})")
    verdicts: dict[str, Verdict] = {}
    for body in bodies:
        verdict = verdicts.setdefault(shape_key(body), Verdict(example=body))
        verdict.requests += 1
        checker.check(body, verdict)

    accepted = [k for k, v in verdicts.items() if not v.refusals and not v.ignored]
    say(f"vLLM {vllm.__version__}: {len(bodies)} requests, {len(verdicts)} request shapes, backends {BACKENDS}")
    for key, verdict in sorted(verdicts.items(), key=lambda kv: describe(kv[1].example)):
        mark = "ok     " if key in accepted else "REFUSED"
        auto = f" [auto: {','.join(sorted(verdict.auto_chose))}]" if verdict.auto_chose else ""
        say(f"  {mark} {key} x{verdict.requests:<3} {describe(verdict.example)}{auto}")
        for where, error in sorted(verdict.refusals.items()):
            say(f"           {where}: {error}")
        if verdict.ignored:
            say(f"           ignored by vLLM (unknown fields): {', '.join(sorted(verdict.ignored))}")
    say(f"{len(accepted)}/{len(verdicts)} request shapes accepted")
    if args.json is not None:
        args.json.write_text(
            json.dumps(
                {
                    "vllm": vllm.__version__,
                    "requests": len(bodies),
                    "shapes": {
                        k: {
                            "describe": describe(v.example),
                            "requests": v.requests,
                            "refusals": v.refusals,
                            "ignored": sorted(v.ignored),
                            "auto_chose": sorted(v.auto_chose),
                        }
                        for k, v in verdicts.items()
                    },
                    "accepted": len(accepted),
                },
                indent=2,
            ),
            encoding="utf-8",
        )
    return 0 if len(accepted) == len(verdicts) else 1


if __name__ == "__main__":
    raise SystemExit(main())
