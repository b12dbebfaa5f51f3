"""Check recorded embeddings, transcription and decisions requests with vLLM's own routes (:mod:`vllm_routes`).

Each recorded request is sent again, as it was sent, to vLLM 0.33.0's ``/v1/embeddings``,
``/v1/audio/transcriptions`` or ``/v1/decisions`` served in-process; it is accepted when it reaches the
engine (for decisions: the read strategy), refused
with vLLM's status and message otherwise. Its model name is replaced by the one the in-process server
serves (the recording names the stand-in's). Fields vLLM's request model does not know are reported
too: vLLM ignores them silently.

A transcription request is recorded without its audio (its size and digest only), so its file is
made again: a silent 16 kHz mono WAV of the recorded size, by the client's own encoder
(``videoatlas.environment.audio.wav_bytes``). vLLM decodes it, measures it and splits it into
Whisper's 30 s clips as it would the real one; what the audio *says* is not checked (no model runs).
A file that encoder cannot have made (another type, or a size no WAV of it has) cannot be remade,
and its request counts as refused, with the reason.
"""

from __future__ import annotations

import copy
import logging
import uuid
from dataclasses import dataclass, field
from typing import Any

import vllm_routes
from shapes import form_shape_key, shape_key

EMBEDDINGS = "/v1/embeddings"
TRANSCRIPTIONS = "/v1/audio/transcriptions"
DECISIONS = "/v1/decisions"
WAV_HEADER = 44


@dataclass
class RouteVerdict:
    """What vLLM said about one request shape of one route."""

    example: dict[str, Any]
    requests: int = 0
    refusals: dict[str, str] = field(default_factory=dict)
    """``HTTP status`` -> vLLM's error (the first one seen)."""
    ignored: set[str] = field(default_factory=set)
    chosen: set[str] = field(default_factory=set)
    """The request model vLLM validated each request as (embeddings: one of its five request classes)."""


def describe_embeddings(body: dict[str, Any]) -> str:
    """One line naming an embeddings request shape: its input or its conversation, and its other fields."""
    given = body.get("input")
    if "messages" in body:
        parts = []
        for message in body.get("messages") or []:
            content = message.get("content") if isinstance(message, dict) else None
            kinds = [str(p.get("type")) for p in content if isinstance(p, dict)] if isinstance(content, list) else []
            counted = ",".join(f"{k}x{kinds.count(k)}" for k in dict.fromkeys(kinds)) or "text"
            parts.append(f"{message.get('role') if isinstance(message, dict) else '?'}[{counted}]")
        what = "messages " + " ".join(parts)
    elif isinstance(given, list):
        what = f"input list[{type(given[0]).__name__ if given else ''}]"
    else:
        what = f"input {type(given).__name__}"
    extras = sorted(
        f"{k}={v}" if k == "encoding_format" else k for k, v in body.items() if k not in {"model", "input", "messages"}
    )
    return f"{what}; {', '.join(extras) or 'no other fields'}"


def describe_decisions(body: dict[str, Any]) -> str:
    """One line naming a decisions request shape: its input's form, its question types, its other fields."""
    given = body.get("input")
    what = "input str" if isinstance(given, str) else f"input messages x{len(given) if isinstance(given, list) else 0}"
    questions = body.get("questions") if isinstance(body.get("questions"), list) else []
    kinds = [str(q.get("type")) if isinstance(q, dict) else "?" for q in questions]
    counted = ",".join(f"{k}x{kinds.count(k)}" for k in dict.fromkeys(kinds)) or "none"
    extras = sorted(k for k in body if k not in {"model", "input", "questions"})
    return f"{what}; questions {counted}; {', '.join(extras) or 'no other fields'}"


def describe_transcription(record: dict[str, Any]) -> str:
    """One line naming a transcription request shape: its form fields (values that choose) and its files."""
    fields = [f"{n}={v}" if n in {"response_format", "timestamp_granularities[]", "language"} else n for n, v in
              record.get("form") or []]  # fmt: skip
    files = [f"{f.get('field')}: {f.get('content_type')}" for f in record.get("files") or []]
    return f"form {', '.join(fields) or 'no fields'}; files {', '.join(files) or 'none'}"


def remade_file(spec: dict[str, Any]) -> bytes | str:
    """A silent WAV of the recorded file's size by the client's own encoder, or why none can be made."""
    import numpy as np

    from videoatlas.environment.audio import wav_bytes

    size = int(spec.get("size") or 0)
    if spec.get("content_type") != "audio/wav":
        return f"a {spec.get('content_type')} file cannot be remade (only the client's WAV can)"
    if size < WAV_HEADER or (size - WAV_HEADER) % 2:
        return f"no 16-bit WAV is {size} bytes long"
    made = wav_bytes(np.zeros((size - WAV_HEADER) // 2, dtype=np.int16))
    return made if len(made) == size else f"the client's encoder makes {len(made)} bytes, not {size}"


def multipart(fields: list[tuple[str, str]], files: list[tuple[str, str, str, bytes]]) -> tuple[bytes, str]:
    """A multipart/form-data body of ``fields`` then ``files`` (field, filename, content type, bytes), and its boundary.

    Written out here because the test client's form encoder drops fields given as pairs (repeated names).
    """
    boundary = uuid.uuid4().hex
    out = bytearray()
    for name, value in fields:
        out += f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode()
    for name, filename, content_type, data in files:
        head = f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"; filename="{filename}"\r\n'
        out += f"{head}Content-Type: {content_type}\r\n\r\n".encode() + data + b"\r\n"
    out += f"--{boundary}--\r\n".encode()
    return bytes(out), boundary


class RouteChecker:
    """vLLM's embeddings and transcription routes, in-process, and what they say of each request."""

    def __init__(self) -> None:
        from fastapi.testclient import TestClient

        self.quiet()
        self.client = TestClient(vllm_routes.app(), raise_server_exceptions=False)

    @staticmethod
    def quiet() -> None:
        """Keep vLLM's log to errors: each refusal is printed with vLLM's message, which its log would repeat.

        (It would also warn, each time, that torchcodec cannot load without a system FFmpeg, so that
        soundfile decodes the audio.)
        """
        logging.getLogger("vllm").setLevel(logging.ERROR)

    def _verdict(self, response: Any, engine_call: str, verdict: RouteVerdict) -> bool:
        """Record a refusal unless the request reached the engine; whether it did."""
        if response.status_code == 200 and response.json().get("reached") == engine_call:
            return True
        try:
            error = response.json().get("error") or {}
            message = str(error.get("message") or response.text)
        except ValueError:
            message = response.text
        verdict.refusals.setdefault(f"HTTP {response.status_code}", " ".join(message.split())[:600])
        return False

    def embeddings(self, body: dict[str, Any], verdict: RouteVerdict) -> None:
        """Send one recorded embeddings body through vLLM's route; record what vLLM said."""
        from pydantic import TypeAdapter, ValidationError
        from vllm.entrypoints.pooling.embed.protocol import EmbeddingRequest
        from vllm.exceptions import VLLMError

        sent = copy.deepcopy(body)
        if "model" in sent:
            sent["model"] = vllm_routes.SERVED
        if not self._verdict(self.client.post(EMBEDDINGS, json=sent), "encode", verdict):
            return
        try:  # the validation FastAPI ran, again, to see which request class vLLM took it as
            request = TypeAdapter(EmbeddingRequest).validate_python(sent)
        except (ValidationError, VLLMError, ValueError) as exc:
            verdict.refusals.setdefault("request model", f"{type(exc).__name__}: {exc}"[:600])
            return
        verdict.chosen.add(type(request).__name__)
        verdict.ignored |= set(request.model_extra or {})

    def decisions(self, body: dict[str, Any], verdict: RouteVerdict) -> None:
        """Send one recorded decisions body through vLLM's route; record what vLLM said."""
        from vllm.entrypoints.openai.decisions.protocol import DecisionRequest

        sent = copy.deepcopy(body)
        if "model" in sent:
            sent["model"] = vllm_routes.SERVED
        if self._verdict(self.client.post(DECISIONS, json=sent), "read", verdict):
            # Its extra="forbid": a field it does not know is refused, never ignored.
            verdict.chosen.add(DecisionRequest.__name__)

    def transcription(self, record: dict[str, Any], verdict: RouteVerdict) -> None:
        """Send one recorded transcription form (its file remade) through vLLM's route; record what vLLM said."""
        from vllm.entrypoints.speech_to_text.transcription.protocol import TranscriptionRequest

        fields = [(str(n), vllm_routes.SERVED if n == "model" else str(v)) for n, v in record.get("form") or []]
        files = []
        for spec in record.get("files") or []:
            data = remade_file(spec)
            if isinstance(data, str):
                verdict.refusals.setdefault("not checked", data)
                return
            files.append((str(spec["field"]), str(spec.get("filename") or "file"), str(spec["content_type"]), data))
        body, boundary = multipart(fields, files)
        media = str(record.get("content_type") or "multipart/form-data")
        headers = {"content-type": f"{media}; boundary={boundary}"}
        if not self._verdict(self.client.post(TRANSCRIPTIONS, content=body, headers=headers), "generate", verdict):
            return
        known = set(TranscriptionRequest.model_fields) | {
            f.alias for f in TranscriptionRequest.model_fields.values() if f.alias
        }
        verdict.chosen.add(TranscriptionRequest.__name__)
        verdict.ignored |= {name for name, _ in fields} - known


def check_all(checker: RouteChecker, endpoint: str, records: list[dict[str, Any]]) -> dict[str, RouteVerdict]:
    """Every record of one route, grouped by shape, each checked."""
    verdicts: dict[str, RouteVerdict] = {}
    for record in records:
        if endpoint in (EMBEDDINGS, DECISIONS):
            body = record.get("body")
            body = body if isinstance(body, dict) else {"<not an object>": body}
            verdict = verdicts.setdefault(shape_key(body), RouteVerdict(example=body))
            verdict.requests += 1
            (checker.embeddings if endpoint == EMBEDDINGS else checker.decisions)(body, verdict)
        else:
            verdict = verdicts.setdefault(form_shape_key(record), RouteVerdict(example=record))
            verdict.requests += 1
            checker.transcription(record, verdict)
    return verdicts


def longest_clip(record: dict[str, Any]) -> dict[str, Any]:
    """``record`` with its file as long as the client ever sends (``transcribe.CHUNK_S`` of 16 kHz WAV).

    The agents' runs send short clips; a long video's sound goes up in clips of up to 600 s (19.2 MB),
    which vLLM takes whole and cuts into Whisper's 30 s windows itself.
    """
    from videoatlas.environment.audio import WAV_BYTES_PER_S
    from videoatlas.llm.transcribe import CHUNK_S

    longest = copy.deepcopy(record)
    for spec in longest.get("files") or []:
        spec["size"] = WAV_HEADER + int(CHUNK_S * WAV_BYTES_PER_S)
    return longest


def _wav_spec(seconds: float) -> dict[str, Any]:
    size = WAV_HEADER + int(seconds * 16000) * 2
    return {"field": "file", "filename": "audio.wav", "content_type": "audio/wav", "size": size, "sha256": ""}


# Requests vLLM must refuse, one its request model refuses and one only its serving code does, per route.
# Each run checks them first, so a harness that could not refuse cannot pass.
CONTROLS: dict[str, list[dict[str, Any]]] = {
    EMBEDDINGS: [
        {"body": {"model": "m", "input": ["query: a"], "encoding_format": "float16"}},
        {"body": {"model": "m", "input": ["query: a"], "encoding_format": "float", "dimensions": 256}},
    ],
    DECISIONS: [
        {
            "body": {
                "model": "m",
                "input": [{"role": "user", "content": [{"type": "input_image", "image_url": "data:,"}]}],
                "questions": [{"type": "predicate", "instructions": "Is it daytime?"}],
            }
        },
        {
            "body": {
                "model": "m",
                "input": "a",
                "questions": [{"type": "predicate", "instructions": "Is it daytime?"}],
                "joint": True,
            }
        },
    ],
    TRANSCRIPTIONS: [
        {
            "content_type": "multipart/form-data",
            "form": [["model", "m"], ["timestamp_granularities[]", "sentence"]],
            "files": [_wav_spec(1.0)],
        },
        {
            "content_type": "multipart/form-data",
            "form": [["model", "m"], ["response_format", "srt"]],
            "files": [_wav_spec(1.0)],
        },
        {
            "content_type": "multipart/form-data",
            "form": [["model", "m"], ["language", "en"], ["temperature", "2.5"]],
            "files": [_wav_spec(1.0)],
        },
    ],
}
"""Per route: unknown encoding format and dimensions for a model without Matryoshka; an image in a decision's input
(its request model refuses it) and a joint read (its serving code refuses it for Qwen3's strategy); an unknown
timestamp granularity, a format the request model takes but the serving code refuses, a temperature SamplingParams
refuses."""


def controls_refused(checker: RouteChecker, endpoint: str) -> list[str] | str:
    """What vLLM says to each control of ``endpoint`` (all refused), or the first control it accepted."""
    said: list[str] = []
    for control in CONTROLS[endpoint]:
        verdict = RouteVerdict(example=control)
        if endpoint == EMBEDDINGS:
            checker.embeddings(control["body"], verdict)
        elif endpoint == DECISIONS:
            checker.decisions(control["body"], verdict)
        else:
            checker.transcription(control, verdict)
        if not verdict.refusals or "not checked" in verdict.refusals:
            return str(control.get("body") or control.get("form"))
        said.extend(f"{k}: {v[:120]}" for k, v in verdict.refusals.items())
    return said
