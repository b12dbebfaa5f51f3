"""The stand-in VLM over real HTTP: protocol, perception, accounting, and every fault type."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import httpx
import jsonschema
import pytest
from pydantic import BaseModel, Field

from videoatlas.environment.atlas import VideoAtlas
from videoatlas.environment.frames import FrameSource
from videoatlas.errors import EndpointError, ModelNotServedError, ModelReplyError
from videoatlas.llm.chat_model import OpenAICompatibleChat
from videoatlas.llm.client import VLMClient
from videoatlas.llm.images import ImagePart
from videoatlas.llm.schemas import choice_schema, response_format
from videoatlas.llm.settings import EndpointSettings
from videoatlas_standin.perception import Reader
from videoatlas_standin.server import RunningServer, StandinConfig, StandinServer
from videoatlas_standin.version import STANDIN_MODEL

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="session")
def reader() -> Reader:
    return Reader()


@pytest.fixture(scope="session")
def server(reader: Reader) -> Iterator[RunningServer]:
    with RunningServer(StandinServer(StandinConfig(), reader=reader)) as running:
        yield running


@pytest.fixture(scope="session")
def grids(synth_video: tuple[Path, dict[str, Any]]) -> dict[str, Any]:
    video, truth = synth_video
    with FrameSource(video) as src:
        atlas = VideoAtlas(src)
        root = atlas.grid()
        small = VideoAtlas(src, cell_px=48).grid()
        needle = next(e for e in truth["events"] if e["kind"] == "needle")
        from videoatlas.environment.geometry import path_at

        cell = path_at(src.duration, (needle["start"] + needle["end"]) / 2, 0)
        child = atlas.grid(cell)
    return {"root": root, "small": small, "child": child, "truth": truth, "needle": needle}


def client_for(base_url: str, **overrides: Any) -> VLMClient:
    settings = EndpointSettings(base_url=base_url, model=STANDIN_MODEL, backoff_s=0.01, backoff_cap_s=0.02, **overrides)
    return VLMClient(OpenAICompatibleChat(settings=settings), settings)


def question_text(truth: dict[str, Any], needle: dict[str, Any] | None = None, kind: str = "") -> str:
    """The question and choices as our prompts write them: the needle's question, or the one of ``kind``."""
    if needle is not None:
        q = next(q for q in truth["questions"] if q["id"] == f"needle-{needle['chapter']}")
    else:
        q = next(q for q in truth["questions"] if q["kind"] == kind)
    letters = "ABCD"
    lines = [f"Question: {q['question']}", "Choices:"] + [f"{letters[i]}. {c}" for i, c in enumerate(q["choices"])]
    return "\n".join(lines)


def step_schema(*actions: str) -> type[BaseModel]:
    """A worker-step schema with these actions and a list of cell ids."""
    return choice_schema("Step", "action", list(actions), cells=(list[int], Field(default_factory=list, max_length=64)))


class Probe(BaseModel):
    cells: list[int] = Field(min_length=3, max_length=3)
    reason: str


def stats(server: RunningServer) -> dict[str, Any]:
    return httpx.get(f"http://{server.host}:{server.port}/stats").json()  # type: ignore[no-any-return]


def test_models_endpoint_labels_the_stand_in(server: RunningServer) -> None:
    data = httpx.get(server.base_url + "/models").json()
    assert [m["id"] for m in data["data"]] == [STANDIN_MODEL]
    assert "stand-in" in data["data"][0]["owned_by"]


async def test_probe_picks_the_named_chapter_from_pixels(server: RunningServer, grids: dict[str, Any]) -> None:
    truth, needle = grids["truth"], grids["needle"]
    chapter = truth["chapters"][needle["chapter"]]
    client = client_for(server.base_url)
    image = ImagePart.from_jpeg(grids["root"].image.jpeg, "root")
    reply = await client.ask(Probe, system="Pick cells.", images=[image], text=question_text(truth, needle))
    cells = reply.value.cells
    spans = [grids["root"].grid.cells[c].interval for c in cells]
    # Every pick overlaps the chapter the question names (its title is what the stand-in read).
    assert all(s.start < chapter["end"] and s.end > chapter["start"] for s in spans), (cells, chapter)


async def test_text_too_small_to_read_is_not_read(server: RunningServer, grids: dict[str, Any], reader: Reader) -> None:
    import io

    import numpy as np
    from PIL import Image

    def seen(jpeg: bytes) -> str:
        return reader.see(np.asarray(Image.open(io.BytesIO(jpeg)).convert("RGB"))).text

    title = grids["truth"]["chapters"][0]["title"]
    assert title in seen(grids["root"].image.jpeg).replace(" ", "")
    assert title not in seen(grids["small"].image.jpeg).replace(" ", "")  # 48 px cells: titles ~3 px tall


class Nested(BaseModel):
    class Item(BaseModel):
        cell: int = Field(ge=0, le=63)
        description: str
        confidence: float = Field(ge=0, le=1)

    sufficient: bool
    answer: int | None = Field(default=None, ge=0, le=3)
    mode: Literal["bfs", "dfs"]
    items: list[Item] = Field(max_length=4)
    explore: list[int] = Field(default_factory=list, max_length=2)
    note: str = Field(max_length=40)


@pytest.mark.parametrize("schema", [Probe, Nested, choice_schema("S", "direction", ["before", "after"])])
async def test_any_schema_gets_a_schema_valid_reply(
    server: RunningServer, grids: dict[str, Any], schema: type[BaseModel]
) -> None:
    fmt = response_format(schema)
    body = {
        "model": STANDIN_MODEL,
        "messages": [
            {"role": "system", "content": "Reply in JSON."},
            {
                "role": "user",
                "content": [
                    {
                        "type": "image_url",
                        "image_url": {"url": ImagePart.from_jpeg(grids["child"].image.jpeg).data_url()},
                    },
                    {"type": "text", "text": question_text(grids["truth"], grids["needle"])},
                ],
            },
        ],
        "response_format": fmt,
    }
    reply = httpx.post(server.base_url + "/chat/completions", json=body, timeout=120).json()
    value = json.loads(reply["choices"][0]["message"]["content"])
    jsonschema.validate(value, fmt["json_schema"]["schema"])
    schema.model_validate(value)


async def test_usage_counts_image_tokens_and_prefix_cache(reader: Reader, grids: dict[str, Any]) -> None:
    image = ImagePart.from_jpeg(grids["root"].image.jpeg, "root")
    for patch, per_image in ((28, 91 * 91), (32, 80 * 80)):
        with RunningServer(StandinServer(StandinConfig(patch=patch), reader=reader)) as srv:
            client = client_for(srv.base_url)
            first = await client.ask(Probe, system="Pick cells.", images=[image], text="Question: which? A. x\nB. y")
            again = await client.ask(Probe, system="Pick cells.", images=[image], text="Question: other? A. x\nB. y")
            assert per_image < first.record.prompt_tokens < per_image + 60
            assert first.record.cached_tokens == 0
            # Same system prompt and image, different trailing text: the stable prefix is served from cache.
            assert per_image <= again.record.cached_tokens < again.record.prompt_tokens
            s = stats(srv)
            assert s["cached_tokens"] == again.record.cached_tokens and s["images"] == 2


def fault_server(reader: Reader, fault: str, budget: int | None = None, **extra: Any) -> RunningServer:
    return RunningServer(StandinServer(StandinConfig(faults={fault: 1.0}, fault_budget=budget, **extra), reader=reader))


@pytest.mark.parametrize("fault", ["http500", "http429", "drop"])
async def test_transient_faults_are_retried_then_succeed(reader: Reader, fault: str) -> None:
    with fault_server(reader, fault, budget=2) as srv:
        reply = await client_for(srv.base_url).ask(Probe, system="s", text="Question: q? A. x\nB. y")
        assert reply.record.retries == 2 and reply.record.outcome == "ok"
        s = stats(srv)
        assert s["faults"] == {fault: 2} and s["completed"] == 1


@pytest.mark.parametrize("fault", ["http500", "http429", "drop"])
async def test_persistent_faults_exhaust_the_retry_budget(reader: Reader, fault: str) -> None:
    with fault_server(reader, fault) as srv:
        with pytest.raises(EndpointError, match=srv.base_url.replace(".", r"\.")):
            await client_for(srv.base_url, max_retries=2).ask(Probe, system="s", text="t")
        assert stats(srv)["chat_requests"] == 3


async def test_hang_past_the_client_timeout_is_retried(reader: Reader) -> None:
    with fault_server(reader, "hang", budget=1, hang_s=30.0) as srv:
        reply = await client_for(srv.base_url, timeout_s=0.5).ask(Probe, system="s", text="Question: q? A. x\nB. y")
        assert reply.record.retries == 1 and reply.record.outcome == "ok"


async def test_client_errors_are_not_retried(reader: Reader, server: RunningServer) -> None:
    bad = EndpointSettings(base_url=server.base_url, model="qwen-that-is-not-here", backoff_s=0.01)
    client = VLMClient(OpenAICompatibleChat(settings=bad), bad)
    before = stats(server)["chat_requests"]
    with pytest.raises(ModelNotServedError, match=f"served: {STANDIN_MODEL}"):
        await client.ask(Probe, system="s", text="t")
    assert stats(server)["chat_requests"] == before + 1  # one attempt only
    with pytest.raises(ModelNotServedError, match=STANDIN_MODEL):
        await client.check_model()


@pytest.mark.parametrize(("fault", "outcome"), [("malformed", "reasked"), ("schema", "reasked"), ("range", "reasked")])
async def test_bad_replies_are_reasked(reader: Reader, fault: str, outcome: str) -> None:
    class Bounded(BaseModel):
        cell: int = Field(ge=0, le=63)

    with fault_server(reader, fault, budget=1) as srv:
        reply = await client_for(srv.base_url).ask(Bounded, system="s", text="t")
        assert reply.record.outcome == outcome and reply.record.attempts == 2 and 0 <= reply.value.cell <= 63
    with fault_server(reader, fault) as srv, pytest.raises(ModelReplyError):
        await client_for(srv.base_url).ask(Bounded, system="s", text="t")


async def test_unreachable_endpoint_names_the_url() -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    client = client_for(url, max_retries=1)
    with pytest.raises(EndpointError, match=f"cannot reach the VLM endpoint at {url}"):
        await client.check_model()
    with pytest.raises(EndpointError, match=url):
        await client.ask(Probe, system="s", text="t")


async def test_check_model_picks_the_served_model(server: RunningServer) -> None:
    settings = EndpointSettings(base_url=server.base_url, model="")
    client = VLMClient(OpenAICompatibleChat(settings=settings), settings)
    assert await client.check_model() == STANDIN_MODEL


async def test_global_concurrency_limit(reader: Reader) -> None:
    with RunningServer(StandinServer(StandinConfig(latency_s=0.2), reader=reader)) as srv:
        client = client_for(srv.base_url, max_concurrency=2)
        await asyncio.gather(*(client.ask(Probe, system="s", text=f"Question: q{i}? A. x\nB. y") for i in range(8)))
        s = stats(srv)
        assert s["completed"] == 8 and s["in_flight_max"] == 2


def _card(text: str) -> str:
    """A data URL of a white card with ``text`` in large black letters (something the OCR will read)."""
    import base64
    import io

    from PIL import Image, ImageDraw, ImageFont

    img = Image.new("RGB", (480, 120), "white")
    ImageDraw.Draw(img).text((20, 30), text, fill="black", font=ImageFont.load_default(size=48))
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def test_stopping_with_reads_in_flight_runs_no_read_still_waiting() -> None:
    """A Ctrl-C of a --standin run waits for the one recognition in progress, not for every read queued behind it."""
    import threading

    reader = Reader()
    before = set(threading.enumerate())
    recognitions: list[int] = []
    started, release = threading.Event(), threading.Event()
    recognise = reader._engine.text_rec

    def held(crops: Any) -> Any:  # the first recognition waits until the server has stopped
        recognitions.append(len(crops))
        started.set()
        release.wait(60)
        return recognise(crops)

    reader._engine.text_rec = held
    server = RunningServer(StandinServer(StandinConfig(), reader=reader)).start()

    def ask(n: int) -> None:
        image = {"type": "image_url", "image_url": {"url": _card(f"CARD {n}")}}
        body = {"model": server.standin.config.model, "messages": [{"role": "user", "content": [image]}]}
        with contextlib.suppress(httpx.HTTPError):
            httpx.post(server.base_url + "/chat/completions", json=body, timeout=60)

    clients = [threading.Thread(target=ask, args=(n,)) for n in range(8)]
    for client in clients:
        client.start()
    assert started.wait(60)
    deadline = time.monotonic() + 60
    while server.standin.stats.chat_requests < len(clients):  # every request in: one reading, the rest waiting
        assert time.monotonic() < deadline, "the requests never all arrived"
        time.sleep(0.05)
    server.stop()  # does not wait for the read in flight
    assert not [t for t in set(threading.enumerate()) - before if t.name == "standin-vlm"]  # its loop ended
    release.set()
    for client in clients:
        client.join(60)
    deadline = time.monotonic() + 60
    while set(threading.enumerate()) - before:  # the server's, the clients' and the OCR threads all ended
        assert time.monotonic() < deadline, f"threads still running: {set(threading.enumerate()) - before}"
        time.sleep(0.05)
    assert len(recognitions) == 1  # the reads queued or waiting for the recogniser gave up
