"""EEA end to end over real HTTP against the stand-in (its embeddings route runs multilingual-e5-small), on a
real decoded video, with the index cached in real SQLite and PostgreSQL.

Each round takes B frames with at most B_s anchors among them and makes three calls; the memory
keeps to its cap; no query is held twice; the three ablations run; a second run on the same video
embeds nothing; an index build stopped midway is never read as whole and resumes where it stopped.
What the rounds find and answer is the stand-in's choice: EEA's scoring is checked with a scripted
model in ``test_eea_scripted.py``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from action_video import Sign, write_signs_video
from db_helpers import rows, sqlite_url
from videoatlas.agents.eea.evaluate import candidates
from videoatlas.agents.eea.search import children
from videoatlas.agents.eea.settings import EEASettings
from videoatlas.errors import EndpointError
from videoatlas.llm.embeddings import EmbeddingsClient
from videoatlas.llm.settings import EndpointSettings
from videoatlas.runs import RunResult, run_question
from videoatlas.runtime import frame_index as index_module
from videoatlas.runtime.config import RunConfig
from videoatlas.runtime.frame_index import plan_index
from videoatlas_standin.perception import Reader
from videoatlas_standin.server import RunningServer, StandinConfig, StandinServer

pytestmark = pytest.mark.e2e

DURATION = 60.0
SIGNS = (
    Sign(30.0, 42.0, "HARBOR", 56, 320, 70, card=(20, 60, 140)),
    Sign(33.0, 39.0, "tag QZ-7781", 16, 320, 300),
)
QUESTION = "Which tag is printed under the HARBOR banner?"
CHOICES = ["QZ-1234", "QZ-7781", "MT-7781"]
FAST = {"index_fps": 0.25, "expansions": 3, "memory_frames": 4}
"""15 index frames, three rounds, a memory small enough to evict."""


@pytest.fixture(scope="module")
def harbor(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_signs_video(tmp_path_factory.mktemp("eea") / "harbor.mp4", SIGNS, DURATION)


@pytest.fixture(scope="module")
def standin() -> Iterator[RunningServer]:
    with RunningServer(StandinServer(StandinConfig(), reader=Reader())) as server:
        yield server


@pytest.fixture(autouse=True)
def _fresh_process_cache() -> Iterator[None]:
    """Each test starts as a new process would: no index or query vector in memory."""
    index_module.forget()
    yield
    index_module.forget()


async def ask(server: RunningServer, video: Path, db: str | None = None, **settings: Any) -> RunResult:
    config = RunConfig.of(agent="eea", **{**FAST, **settings})
    endpoint = EndpointSettings(base_url=server.base_url)
    return await run_question(video, QUESTION, CHOICES, config, endpoint, db_url=db, persist=db is not None)


def _norm(query: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", query.lower()).split())


async def test_each_round_keeps_the_papers_shape(harbor: Path, standin: RunningServer) -> None:
    result = await ask(standin, harbor)
    state = result.state
    segments = {s.id: s for s in state["segments"]}
    assert state["rounds"], "no round was taken"
    calls = Counter((r.node, r.meta.get("round")) for r in result.records)
    for rnd in state["rounds"]:
        parent = segments[rnd.segment]
        assert len(rnd.frames) == 6 and len(rnd.anchor_frames) <= 3
        assert set(rnd.anchor_frames) <= set(rnd.frames)
        spans = [(segments[c].start, segments[c].end) for c in rnd.children]
        assert spans == children(parent.start, parent.end, rnd.frames)  # B + 1 children tiling the segment
        asked = calls[("evaluate", rnd.index)] + calls[("update", rnd.index)] + calls[("select", rnd.index)]
        last_at_cap = rnd.index == FAST["expansions"]
        assert asked == (2 if last_at_cap else 3), rnd  # at the round cap the answer needs no selection call
    assert len(state["memory"]) <= FAST["memory_frames"]
    assert len({_norm(q) for q in state["queries"]}) == len(state["queries"])
    assert calls[("discover", None)] == 1 and calls[("answer", None)] == 1
    assert result.extras["index_frames"] == 15 and result.answer in CHOICES


@pytest.mark.parametrize(
    ("setting", "value"), [("anchors", 0), ("uarf", False), ("query_update", False)], ids=lambda v: str(v)
)
async def test_the_ablations_run(harbor: Path, standin: RunningServer, setting: str, value: Any) -> None:
    result = await ask(standin, harbor, **{setting: value})
    state = result.state
    assert result.answer_index is not None and state["rounds"]
    if setting == "anchors":
        assert all(r.anchor_frames == [] for r in state["rounds"])
    if setting == "uarf":  # every stretch offered (long enough for B frames of the 20 fps video) has h = r
        offered = candidates(state["segments"], (EEASettings().expand_frames + 1) / 20.0)
        assert offered and all(s.fused == s.reward for s in offered)
    if setting == "query_update":
        assert not any(r.node == "update" for r in result.records)
        assert all(r.new_queries == [] for r in state["rounds"])


async def test_a_second_run_on_the_same_video_embeds_nothing(harbor: Path, standin: RunningServer, db_url: str) -> None:
    before = standin.standin.stats.embedding_inputs
    first = await ask(standin, harbor, db_url)
    assert first.state["index"].embedded == 15 and not first.state["index"].reused
    assert first.extras["index_s"] > 0 and standin.standin.stats.embedding_inputs - before == first.state["embedded"]
    index_module.forget()  # as a new process: the index comes from the store
    before = standin.standin.stats.embedding_requests
    second = await ask(standin, harbor, db_url)
    assert standin.standin.stats.embedding_requests == before  # zero embedding calls
    assert second.state["embedded"] == 0 and second.state["index"].reused and second.extras["index_s"] == 0.0
    assert second.answer == first.answer
    stored = rows(db_url, "SELECT frames, complete FROM va_frame_indexes")
    assert [(int(n), bool(c)) for n, c in stored] == [(15, True)]


class _Failing(httpx.AsyncHTTPTransport):
    """A transport to the real stand-in that loses its connection after ``allowed`` requests."""

    def __init__(self, allowed: int) -> None:
        super().__init__()
        self.allowed = allowed

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if self.allowed <= 0:
            raise httpx.ConnectError("connection lost (test)")
        self.allowed -= 1
        return await super().handle_async_request(request)


async def test_a_build_stopped_midway_is_not_used_and_resumes(
    harbor: Path, standin: RunningServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = sqlite_url(tmp_path / "runs.db")
    stop_after = index_module.BATCH  # the first batch goes in, the second fails
    transport = _Failing(stop_after)

    def failing_client(ctx: Any, settings: Any) -> EmbeddingsClient:
        return EmbeddingsClient(standin.base_url, ctx.vlm.settings.model, transport=transport, max_retries=0)

    long_index = {"index_fps": 0.6}  # 36 frames: two batches
    monkeypatch.setattr(index_module, "embeddings_client", failing_client)
    with pytest.raises(EndpointError, match="cannot reach the embeddings endpoint"):
        await ask(standin, harbor, db, **long_index)
    stored = rows(db, "SELECT complete FROM va_frame_indexes")
    assert [bool(c) for (c,) in stored] == [False]  # never marked whole
    assert rows(db, "SELECT count(*) FROM va_frame_vectors")[0][0] == stop_after
    monkeypatch.undo()
    index_module.forget()
    result = await ask(standin, harbor, db, **long_index)
    info = result.state["index"]
    assert info.embedded == len(plan_index(DURATION, 0.6, 4000).times) - stop_after  # only what was missing
    assert rows(db, "SELECT count(*) FROM va_frame_vectors")[0][0] == 36
    assert [bool(c) for (c,) in rows(db, "SELECT complete FROM va_frame_indexes")] == [True]
