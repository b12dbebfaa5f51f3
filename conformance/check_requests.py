"""Check recorded requests with vLLM's own code, on a CPU, without an engine or a model.

Every request that ``videoatlas standin --record FILE`` wrote (one JSON line each, naming its route:
``{"endpoint": ..., "body": ...}``, or a form; a line that is a bare body is a chat request, as the
stand-in recorded them before v11) is checked with vLLM 0.33.0's code.

Chat requests (``/v1/chat/completions``) go through the steps vLLM's OpenAI server and engine apply
to them before any token is generated:

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

A chat request asking for ``logprobs`` / ``top_logprobs`` is checked by the same steps: the request model's
``check_logprobs``, and ``SamplingParams.verify`` against a ``max_logprobs`` of 20 (vLLM's default).

Embeddings (``/v1/embeddings``), transcription (``/v1/audio/transcriptions``) and decisions
(``/v1/decisions``) requests are sent again through vLLM's own routers and serving classes, in-process, up
to the engine (:mod:`check_routes`, :mod:`vllm_routes`): FastAPI's parsing of the JSON body or the multipart
form, vLLM's request models, the pooling parameters and their ``verify``, vLLM's checks of the response
format, the language, the file size, the audio's decoding and the sampling parameters, the decisions'
limits of Qwen3's read strategy. Not run: the renderer (chat template, tokenizer, image processor of the
embedding model) and the model itself.

Requests are grouped into request shapes (:mod:`shapes`). For each route the script prints
``N/N ... request shapes accepted`` and every refused shape with vLLM's error, and exits 1 unless every
shape of every route is accepted (by every backend, for chat). Controls that vLLM must refuse are
checked first (chat: a ``uniqueItems`` schema; embeddings and transcriptions: see
``check_routes.CONTROLS``): if one passes, the check exits 2.
"""

from __future__ import annotations

import argparse
import base64
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
from typing import Any, cast

from shapes import shape_key

BACKENDS = ("auto", "xgrammar", "guidance")
MAX_MODEL_LEN = 65536
PATCH_PX = 28
QWEN_PATTERN = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"""
    r"""| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
)
QWEN_SPECIAL = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")


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
        self.model_facts: Any = SimpleNamespace(
            max_logprobs=20,
            max_model_len=MAX_MODEL_LEN,
            is_diffusion=False,
            get_vocab_size=lambda: self.vocab_size,
        )
        self.configs = {b: StructuredOutputsConfig(backend=cast(Any, b)) for b in BACKENDS}
        self._engines: dict[str, Any] = {}

    def engine_backend(self, name: str) -> Any:
        """The engine-side backend of that name, built once (building one indexes the vocabulary)."""
        if name not in self._engines:
            from vllm.config.structured_outputs import StructuredOutputsConfig
            from vllm.v1.structured_output.backend_guidance import GuidanceBackend
            from vllm.v1.structured_output.backend_outlines import OutlinesBackend
            from vllm.v1.structured_output.backend_xgrammar import XgrammarBackend

            classes: dict[str, Any] = {
                "xgrammar": XgrammarBackend,
                "guidance": GuidanceBackend,
                "outlines": OutlinesBackend,
            }
            vllm_config = SimpleNamespace(
                structured_outputs_config=StructuredOutputsConfig(backend=cast(Any, name)),
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


CHAT = "/v1/chat/completions"


def read_requests(paths: Iterable[Path]) -> dict[str, list[dict[str, Any]]]:
    """Every recorded line of the files, in order, by route: a chat line is its body, another line the record."""
    by_route: dict[str, list[dict[str, Any]]] = {}
    for path in paths:
        if not path.is_file():
            raise SystemExit(f"check_requests: no recording at {path} (run conformance/run_agents.sh first)")
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            record = json.loads(line)
            if not isinstance(record, dict):
                raise SystemExit(f"check_requests: {path}:{n} is not a JSON object")
            if "endpoint" not in record:  # a bare body: a chat request recorded before the stand-in's v11
                record = {"endpoint": CHAT, "body": record}
            endpoint = str(record["endpoint"])
            if endpoint == CHAT:
                body = record.get("body")
                if not isinstance(body, dict):
                    raise SystemExit(f"check_requests: {path}:{n}: the chat body is not a JSON object")
                record = body
            by_route.setdefault(endpoint, []).append(record)
    return by_route


def check_chat(bodies: list[dict[str, Any]]) -> tuple[bool, int, dict[str, Any]]:
    """The chat check: (control refused, exit status, verdicts as JSON)."""
    checker = Checker(qwen_tokenizer())
    control = Verdict(example=CONTROL)
    checker.check(CONTROL, control)
    if set(control.refusals) != set(BACKENDS):
        accepted_by = ", ".join(b for b in BACKENDS if b not in control.refusals)
        sys.stderr.write(f"check_requests: the control request (uniqueItems) was accepted under {accepted_by}\n")
        return False, 2, {}
    say(f"control: a uniqueItems schema is refused under every backend ({control.refusals['guidance']})")
    verdicts: dict[str, Verdict] = {}
    for body in bodies:
        verdict = verdicts.setdefault(shape_key(body), Verdict(example=body))
        verdict.requests += 1
        checker.check(body, verdict)
    accepted = [k for k, v in verdicts.items() if not v.refusals and not v.ignored]
    say(f"chat: {len(bodies)} requests, {len(verdicts)} request shapes, backends {BACKENDS}")
    for key, verdict in sorted(verdicts.items(), key=lambda kv: describe(kv[1].example)):
        mark = "ok     " if key in accepted else "REFUSED"
        auto = f" [auto: {','.join(sorted(verdict.auto_chose))}]" if verdict.auto_chose else ""
        say(f"  {mark} {key} x{verdict.requests:<3} {describe(verdict.example)}{auto}")
        for where, error in sorted(verdict.refusals.items()):
            say(f"           {where}: {error}")
        if verdict.ignored:
            say(f"           ignored by vLLM (unknown fields): {', '.join(sorted(verdict.ignored))}")
    say(f"{len(accepted)}/{len(verdicts)} request shapes accepted")
    shapes = {
        k: {
            "describe": describe(v.example),
            "requests": v.requests,
            "refusals": v.refusals,
            "ignored": sorted(v.ignored),
            "auto_chose": sorted(v.auto_chose),
        }
        for k, v in verdicts.items()
    }
    summary = {"requests": len(bodies), "shapes": shapes, "accepted": len(accepted)}
    return True, 0 if len(accepted) == len(verdicts) else 1, summary


def check_other_routes(by_route: dict[str, list[dict[str, Any]]]) -> tuple[int, dict[str, Any]]:
    """The embeddings, transcription and decisions checks (each only when it has requests): (status, verdicts)."""
    import check_routes

    names = {
        check_routes.EMBEDDINGS: "embeddings",
        check_routes.TRANSCRIPTIONS: "transcription",
        check_routes.DECISIONS: "decisions",
    }
    describers = {
        check_routes.EMBEDDINGS: check_routes.describe_embeddings,
        check_routes.TRANSCRIPTIONS: check_routes.describe_transcription,
        check_routes.DECISIONS: check_routes.describe_decisions,
    }
    status = 0
    out: dict[str, Any] = {}
    routes = [r for r in names if by_route.get(r)]
    if not routes:
        return 0, {}
    checker = check_routes.RouteChecker()
    for route in routes:
        name = names[route]
        said = check_routes.controls_refused(checker, route)
        if isinstance(said, str):
            sys.stderr.write(f"check_requests: vLLM's {route} accepted the control request {said}\n")
            return 2, out
        say(f"control: {len(said)} {name} requests vLLM must refuse are refused ({'; '.join(said)})")
        records = by_route[route]
        verdicts = check_routes.check_all(checker, route, records)
        accepted = [k for k, v in verdicts.items() if not v.refusals and not v.ignored]
        say(f"{name}: {len(records)} requests, {len(verdicts)} request shapes ({route}, vLLM's route in-process)")
        for key, verdict in sorted(verdicts.items(), key=lambda kv: describers[route](kv[1].example)):
            mark = "ok     " if key in accepted else "REFUSED"
            taken = f" [{','.join(sorted(verdict.chosen))}]" if verdict.chosen else ""
            say(f"  {mark} {key} x{verdict.requests:<3} {describers[route](verdict.example)}{taken}")
            for where, error in sorted(verdict.refusals.items()):
                say(f"           {where}: {error}")
            if verdict.ignored:
                say(f"           ignored by vLLM (unknown fields): {', '.join(sorted(verdict.ignored))}")
        extra: dict[str, Any] = {}
        if route == check_routes.TRANSCRIPTIONS:
            longest = check_routes.RouteVerdict(example=check_routes.longest_clip(records[0]))
            checker.transcription(longest.example, longest)
            size = sum(int(f["size"]) for f in longest.example.get("files") or [])
            said = "; ".join(f"{k}: {v}" for k, v in longest.refusals.items()) or "accepted"
            mark = "ok     " if not longest.refusals else "REFUSED"
            say(f"  {mark} the first shape again, its file as long as the client sends ({size} bytes): {said}")
            extra["longest_clip"] = {"bytes": size, "refusals": longest.refusals}
        refused_extra = any(v["refusals"] for v in extra.values())
        but = ", but not the longest clip" if refused_extra else ""
        say(f"{len(accepted)}/{len(verdicts)} {name} request shapes accepted{but}")
        status = max(status, 0 if len(accepted) == len(verdicts) and not refused_extra else 1)
        out[name] = {
            **extra,
            "requests": len(records),
            "accepted": len(accepted),
            "shapes": {
                k: {
                    "describe": describers[route](v.example),
                    "requests": v.requests,
                    "refusals": v.refusals,
                    "ignored": sorted(v.ignored),
                    "request_model": sorted(v.chosen),
                }
                for k, v in verdicts.items()
            },
        }
    return status, out


def main(argv: list[str] | None = None) -> int:
    """Check the recorded requests; print the summary; 0 only when every shape of every route is accepted."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("records", nargs="+", type=Path, help="JSONL files written by standin --record")
    parser.add_argument("--json", type=Path, default=None, help="also write the verdicts to this JSON file")
    args = parser.parse_args(argv)
    os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")  # no GPU here; the checks below do not use one

    import vllm

    by_route = read_requests(args.records)
    if not by_route:
        sys.stderr.write("check_requests: no request was recorded; nothing to check\n")
        return 2
    say(f"vLLM {vllm.__version__}: {', '.join(f'{len(v)} {k}' for k, v in sorted(by_route.items()))}")
    status, report = 0, {"vllm": vllm.__version__}
    if by_route.get(CHAT):
        refused, status, chat = check_chat(by_route[CHAT])
        if not refused:
            return 2
        report |= chat  # the chat verdicts stay at the top level, where earlier reports had them
    other_status, others = check_other_routes(by_route)
    if other_status == 2:
        return 2
    report |= others
    unknown = sorted(set(by_route) - {CHAT, "/v1/embeddings", "/v1/audio/transcriptions", "/v1/decisions"})
    if unknown:
        say(f"NOT CHECKED: requests to {', '.join(unknown)} (no check for this route)")
        status = 1
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2), encoding="utf-8")
    return max(status, other_status)


if __name__ == "__main__":
    raise SystemExit(main())
