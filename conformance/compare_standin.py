"""Does the stand-in refuse what vLLM refuses? The same requests to both, on three routes beside chat.

On the embeddings, transcription and decisions routes, each probe is one of our clients' requests
(``EmbeddingsClient``: texts in ``input``, an image in ``messages``, ``encoding_format`` float;
``Transcriber``: a WAV with ``model``, ``language``, ``response_format``, ``timestamp_granularities[]`` and
``temperature``; a decision: a text, and a choice, a predicate and a score question; and a final decision's read
as ``llm/decisions.py`` makes it) with at most one field changed. It goes to vLLM 0.33.0's own routes
in-process, up to the engine (:mod:`vllm_routes`), and to a stand-in server (serving decisions) on a thread of
its own; what matters is whether each accepts it. A probe of a field our clients send must get the same
verdict from both, or the script exits 1; a probe of a field they never send is reported as a known difference
(the stand-in cannot give what vLLM would, such as binary vectors).

    VLLM_TARGET_DEVICE=cpu .venv-vllm/bin/python conformance/compare_standin.py
"""

from __future__ import annotations

import base64
import io
import os
import sys
from dataclasses import dataclass, field
from typing import Any

import check_routes
import vllm_routes

MODEL = "<model>"
"""Stands for the model name the server at hand serves."""


@dataclass(frozen=True)
class Probe:
    """One request, to both servers."""

    name: str
    route: str
    body: dict[str, Any] | None = None
    """The JSON body (embeddings)."""
    form: list[tuple[str, str]] = field(default_factory=list)
    """The form fields (transcriptions), sent with :attr:`audio` as the file ``audio.wav``."""
    audio: bytes = b""
    ours: bool = True
    """Whether our clients send the field this probe changes (a disagreement then fails the check)."""


def _jpeg() -> str:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (64, 48), (90, 120, 150)).save(out, format="JPEG")
    return "data:image/jpeg;base64," + base64.b64encode(out.getvalue()).decode("ascii")


def _wav(seconds: float) -> bytes:
    import numpy as np

    from videoatlas.environment.audio import wav_bytes

    return wav_bytes(np.zeros(int(seconds * 16000), dtype=np.int16))


def probes() -> list[Probe]:
    """Our clients' requests, and each with one field changed."""
    e, t = check_routes.EMBEDDINGS, check_routes.TRANSCRIPTIONS
    text: dict[str, Any] = {
        "model": MODEL,
        "input": ["query: a harbour", "passage: a ship"],
        "encoding_format": "float",
    }
    image_message = {"role": "user", "content": [{"type": "image_url", "image_url": {"url": _jpeg()}}]}
    image: dict[str, Any] = {"model": MODEL, "messages": [image_message], "encoding_format": "float"}
    with_text = {**image_message, "content": [{"type": "text", "text": "passage: a frame"}, *image_message["content"]]}
    out = [
        Probe("embeddings: our texts", e, text),
        Probe("embeddings: our image", e, image),
        Probe("embeddings: a model not served", e, {**text, "model": "not-served"}),
        Probe("embeddings: no model", e, {k: v for k, v in text.items() if k != "model"}),
        Probe("embeddings: one text as a string", e, {**text, "input": "query: a harbour"}),
        Probe("embeddings: no input", e, {**text, "input": []}),
        Probe("embeddings: encoding_format base64", e, {**text, "encoding_format": "base64"}),
        Probe("embeddings: encoding_format hex", e, {**text, "encoding_format": "hex"}),
        Probe("embeddings: image with a text part", e, {**image, "messages": [with_text]}),
        Probe("embeddings: encoding_format bytes", e, {**text, "encoding_format": "bytes"}, ours=False),
        Probe("embeddings: dimensions", e, {**text, "dimensions": 128}, ours=False),
        Probe("embeddings: token ids", e, {**text, "input": [[101, 2023, 102]]}, ours=False),
        Probe("embeddings: removed field normalize", e, {**text, "normalize": True}, ours=False),
    ]
    base = [
        ("model", MODEL),
        ("language", "en"),
        ("response_format", "verbose_json"),
        ("timestamp_granularities[]", "segment"),
        ("temperature", "0.0"),
    ]
    second = _wav(1.0)

    def changed(name: str, value: str | None) -> list[tuple[str, str]]:
        kept = [(n, v) for n, v in base if n != name]
        return kept if value is None else [*kept, (name, value)]

    changes: list[tuple[str, str | None, bool]] = [
        ("model", "not-served", True),
        ("model", None, True),
        ("language", None, True),
        ("language", "fr", True),
        ("language", "xx", True),
        ("response_format", "json", True),
        ("response_format", "text", True),
        ("response_format", "srt", True),
        ("response_format", "vtt", True),
        ("response_format", "diarized_json", True),
        ("response_format", "xml", True),
        ("timestamp_granularities[]", "word", True),
        ("timestamp_granularities[]", "sentence", True),
        ("temperature", "1.0", True),
        ("temperature", "2.5", True),
        ("temperature", "-0.5", True),
        ("temperature", "warm", True),
        ("prompt", "The harbour at dawn.", False),
    ]
    out.append(Probe("transcription: our request", t, form=base, audio=second))
    for name, value, ours in changes:
        what = "unset" if value is None else repr(value)
        out.append(Probe(f"transcription: {name} {what}", t, form=changed(name, value), audio=second, ours=ours))
    out.append(Probe("transcription: a file of 26 MB", t, form=base, audio=_wav(26 * 1024 * 1024 / 32000)))
    out.append(Probe("transcription: a file that is not audio", t, form=base, audio=b"not audio at all"))
    return out + decision_probes()


def decision_probes() -> list[Probe]:
    """A decision request, and each with one field changed."""
    d = check_routes.DECISIONS
    choice = {"type": "choice", "instructions": "Which gate?", "choices": [{"value": "A7"}, {"value": "B12"}]}
    score = {"type": "score", "instructions": "How busy?", "levels": [{"label": "quiet"}, {"label": "packed"}]}
    asked = [choice, {"type": "predicate", "instructions": "Is it late?"}, score]
    body: dict[str, Any] = {"model": MODEL, "input": "The board reads B12.", "questions": asked}
    image = [{"role": "user", "content": [{"type": "input_image", "image_url": _jpeg()}]}]
    changes: list[tuple[str, dict[str, Any]]] = [
        ("messages of text parts", {"input": [{"role": "user", "content": [{"type": "input_text", "text": "B12"}]}]}),
        ("an image", {"input": image}),
        ("no questions", {"questions": []}),
        ("a choice of one", {"questions": [{**choice, "choices": choice["choices"][:1]}]}),
        ("27 choices", {"questions": [{**choice, "choices": [{"value": f"g{n}"} for n in range(27)]}]}),
        ("65 questions", {"questions": asked[1:2] * 65}),
        ("joint", {"joint": True}),
        ("an unknown field", {"temperature": 0}),
        ("a cache salt", {"cache_salt": "s1"}),
        ("a cache salt with a slash", {"cache_salt": "s/1"}),
        ("a model not served", {"model": "not-served"}),
        ("a null name", {"questions": [{**choice, "name": None}]}),
    ]
    return [Probe("decisions: our request", d, body), Probe("decisions: a final decision's read", d, final_read())] + [
        Probe(f"decisions: {name}", d, {**body, **change}) for name, change in changes
    ]


def final_read() -> dict[str, Any]:
    """The request a text-only final decision sends, made by the client's own code (``llm/decisions.py``)."""
    from videoatlas.llm.decisions import choice_body

    text = "You answer questions about a video.\n\nQuestion: Which gate?\nChoices:\nA. A7\nB. B12\n\nSaid: B12."
    return choice_body(MODEL, text, "Which of the choices answers the question: Which gate?", ["A7", "B12"], "answer")


def _send(client: Any, probe: Probe, model: str) -> tuple[int, str]:
    """POST ``probe`` through ``client`` (an httpx-like client) naming ``model``; the status and error message."""
    if probe.body is not None:
        body = {k: (model if v == MODEL else v) for k, v in probe.body.items()}
        response = client.post(probe.route, json=body)
    else:
        fields = [(n, model if v == MODEL else v) for n, v in probe.form]
        content, boundary = check_routes.multipart(fields, [("file", "audio.wav", "audio/wav", probe.audio)])
        headers = {"content-type": f"multipart/form-data; boundary={boundary}"}
        response = client.post(check_routes.TRANSCRIPTIONS, content=content, headers=headers)
    try:
        error = response.json().get("error") if response.status_code != 200 else None
    except ValueError:
        error = None
    message = str(error.get("message")) if isinstance(error, dict) else ""
    return response.status_code, " ".join(message.split())[:140]


def main() -> int:
    """Send every probe to both servers; print each verdict; 0 when they agree on every field our clients send."""
    os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
    import httpx
    from fastapi.testclient import TestClient

    from videoatlas_standin.server import RunningServer, StandinConfig, StandinServer

    vllm = TestClient(vllm_routes.app(), raise_server_exceptions=False)
    check_routes.RouteChecker.quiet()
    disagree, known = 0, 0
    all_probes = probes()
    with RunningServer(StandinServer(StandinConfig(decisions=True))) as server:
        root = server.base_url.removesuffix("/v1")
        with httpx.Client(base_url=root, timeout=300) as standin:
            for probe in all_probes:
                v_status, v_message = _send(vllm, probe, vllm_routes.SERVED)
                s_status, s_message = _send(standin, probe, server.standin.config.model)
                same = (v_status == 200) == (s_status == 200)
                if same:
                    mark = "agree  " if v_status == s_status else "agree* "  # * both refuse, with other codes
                elif probe.ours:
                    mark, disagree = "DIFFER ", disagree + 1
                else:
                    mark, known = "known  ", known + 1
                sys.stdout.write(f"  {mark} vLLM {v_status} stand-in {s_status}  {probe.name}\n")
                if not same or v_status != s_status:
                    sys.stdout.write(f"           vLLM: {v_message or 'accepted'}\n")
                    sys.stdout.write(f"           stand-in: {s_message or 'accepted'}\n")
    ours = sum(p.ours for p in all_probes)
    sys.stdout.write(
        f"{ours - disagree}/{ours} probes of fields our clients send get the same verdict from the stand-in as from "
        f"vLLM; {known} known difference(s) on fields they never send\n"
    )
    return 1 if disagree else 0


if __name__ == "__main__":
    raise SystemExit(main())
