"""What used to be Video-RLM's in the shared core is each agent's own (issue 69).

Tokens are counted by the role in its agent that spent them; where evidence was found is the agent's
``place`` and ``where``; the image-limit check is the agent's (one that never renders the K x K grid is
not refused for it); ``demo``'s pictures come through the agent's views; one default agent name.
"""

from __future__ import annotations

import argparse
import inspect
import shutil
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from agent_helpers import default_reply, make_context, run_graph
from videoatlas import api, request
from videoatlas.agents import registry
from videoatlas.agents.registry import DEFAULT_AGENT, check_images, get_agent
from videoatlas.agents.uniform.graph import build_uniform_graph
from videoatlas.agents.uniform.settings import UniformSettings, uniform
from videoatlas.agents.video_rlm.settings import VideoRLMSettings, rlm
from videoatlas.agents.views import evidence_pictures
from videoatlas.cli.options import add_agent_option
from videoatlas.defaults import DEFAULT_AGENT as DEFINED
from videoatlas.environment.atlas import VideoAtlas
from videoatlas.environment.cache import RenderCache
from videoatlas.environment.frames import FrameSource
from videoatlas.errors import ImageLimitError, ModelReplyError
from videoatlas.llm.records import CallRecord
from videoatlas.request import EndpointChoice, open_endpoint
from videoatlas.runtime.calls import choices_block, failed_call_cost
from videoatlas.runtime.config import RunConfig
from videoatlas.state.models import Cost, Evidence, FrameRef, add_roles

FIXTURES = Path(__file__).parents[1] / "fixtures" / "e9ceea9"


@pytest.fixture
def video(tmp_path: Path) -> Path:
    """A 30-second counter video (the one the old runs in the fixtures were made on)."""
    return Path(shutil.copy(FIXTURES / "counter.mp4", tmp_path / "counter.mp4"))


# -- tokens by role -------------------------------------------------------------------------------------


@pytest.mark.unit
def test_costs_add_role_by_role() -> None:
    a = Cost(calls=1, prompt_tokens=1000, completion_tokens=20, tokens_by_role={"master": 1020})
    b = Cost(calls=2, prompt_tokens=1400, completion_tokens=60, tokens_by_role={"worker": 1460})
    c = Cost(calls=1, prompt_tokens=500, completion_tokens=10, tokens_by_role={"master": 510})
    total = a + b + c
    assert total.tokens_by_role == {"master": 1530, "worker": 1460} and total.tokens == 2990
    assert total.summary()["tokens_by_role"] == {"master": 1530, "worker": 1460}
    assert add_roles({"planner": 5}, {}) == {"planner": 5}


@pytest.mark.unit
def test_a_cost_written_with_the_old_two_roles_reads_as_a_mapping() -> None:
    old: dict[str, Any] = {"calls": 3, "prompt_tokens": 2900, "completion_tokens": 100}
    old |= {"master_tokens": 1000, "worker_tokens": 2000}
    assert Cost(**old).tokens_by_role == {"master": 1000, "worker": 2000}
    assert Cost(**{**old, "worker_tokens": 0}).tokens_by_role == {"master": 1000}
    assert "master_tokens" not in Cost(**old).model_dump()


@pytest.mark.unit
def test_a_failed_call_counts_under_the_role_its_record_names() -> None:
    exc = ModelReplyError("unusable")
    exc.record = CallRecord("look", "Report", 0.0, prompt_tokens=800, completion_tokens=40, role="looker")
    cost = failed_call_cost(exc)
    assert (cost.calls, cost.failed_calls, cost.tokens_by_role) == (1, 1, {"looker": 840})
    assert failed_call_cost(ModelReplyError("no record")).tokens_by_role == {}


def _tokens(messages: Any, content: str) -> tuple[int, int]:
    return (700, 30) if '"step"' in content else (1000, 20)


async def test_video_rlm_counts_its_master_and_its_workers(video: Path, tmp_path: Path) -> None:
    config = RunConfig.of(cell_px=64, k=4, workers=2, rounds=1)
    out, chat, _ = await run_graph(video, tmp_path, default_reply, config, usage=_tokens)
    names = sorted(name for name, _ in chat.seen)
    assert names == ["FinalDecision", "GlobalProbe", "SearchTask", "TraversalChoice", "WorkerStep", "WorkerStep"]
    assert out["cost"].tokens_by_role == {"master": 4 * 1020, "worker": 2 * 730}


async def test_the_uniform_baseline_counts_its_one_answerer(video: Path, tmp_path: Path) -> None:
    reply = {"judgements": [], "answer": 1, "reasoning": "seen", "evidence": ["1/3"]}
    config = RunConfig.of(agent="uniform", frames=16, k=4, cell_px=64)
    ctx, _, source = make_context(video, tmp_path, lambda n, t, s: reply, config)
    try:
        out = await build_uniform_graph(InMemorySaver()).ainvoke(
            {"question": "What number?", "choices": ["zero", "one"]}, {"configurable": {"thread_id": "u"}}, context=ctx
        )
    finally:
        source.close()
    assert out["cost"].tokens_by_role == {"answerer": 1020}
    (item,) = out["evidence"]
    assert (item.id, item.place, dict(item.where)) == ("u-1-3", "cell 1/3", {"sheet": 1, "cell": 3})


# -- where evidence was found ------------------------------------------------------------------------


@pytest.mark.unit
def test_evidence_written_with_the_old_location_fields_keeps_its_id_and_cell() -> None:
    old: dict[str, Any] = {
        "id": "r2-r2w1-3", "time": 7.5, "start": 7.0, "end": 8.0, "depth": 2, "cell": "12/5", "description": "a 7",
        "confidence": 0.8, "subtitle": None, "frame": {"video": "v", "time": 7.5, "px": 64}, "round": 2,
        "worker": "r2w1", "erased": False,
    }  # fmt: skip
    item = Evidence(**old)
    assert (item.id, item.place) == ("r2-r2w1-3", "cell 12/5")
    assert item.where == {"round": 2, "worker": "r2w1", "depth": 2, "cell": "12/5"}
    ranged = Evidence(**{**old, "cell": None, "depth": None})
    assert (ranged.place, ranged.where) == ("", {"round": 2, "worker": "r2w1"})
    assert Evidence(**item.model_dump()) == item  # what a checkpoint now holds reads back the same


@pytest.mark.unit
def test_shared_code_shows_the_agents_place_or_the_stretch(capsys: pytest.CaptureFixture[str]) -> None:
    from videoatlas.cli.run_view import print_result
    from videoatlas.runs import RunResult

    frame = FrameRef(video="v", time=2.0, px=64)
    said = Evidence(id="said-0", time=2.0, start=1.5, end=2.5, description="said: hi", confidence=0.8, frame=frame)
    seen = Evidence(
        id="s3-0", time=4.0, start=4.0, end=4.0, description="a one", confidence=0.6, frame=frame,
        place="step 3, scene_snapper", where={"step": 3, "tool": "scene_snapper"},
    )  # fmt: skip
    result = RunResult(
        run_id="r", question="q", choices=["a", "b"], answer="b", answer_index=1, reasoning="", evidence=[said, seen],
        cited=["s3-0"], rounds=3, stop_reason="done", wall_s=1.0,
        cost=Cost(
            calls=2, prompt_tokens=1900, completion_tokens=100, tokens_by_role={"controller": 1200, "tools": 800}
        ),
    )  # fmt: skip
    print_result(result)
    printed = capsys.readouterr().out
    assert "[A] 00:02.0 (00:01.5-00:02.5, conf 0.80): said: hi" in printed
    assert "[B] 00:04.0 (step 3, scene_snapper, conf 0.60) *: a one" in printed
    assert "tokens by role: controller 1,200, tools 800)" in printed
    assert result.as_dict()["evidence"][1]["where"] == {"step": 3, "tool": "scene_snapper"}


# -- the image limit is the agent's -----------------------------------------------------------------


@pytest.mark.unit
@pytest.mark.parametrize(
    ("agent", "settings", "refused"),
    [
        ("video-rlm", {}, True),
        ("uniform", {}, True),
        ("videoseek", {}, False),
        ("videoarm", {}, False),
        ("eea", {}, False),
    ],
)
def test_only_an_agent_that_renders_the_grid_is_held_to_it(agent: str, settings: dict[str, Any], refused: bool) -> None:
    config = RunConfig.of(agent=agent, k=16, cell_px=512, **settings)  # an 8192 x 8192 grid
    limit = 1_000_000
    if refused:
        with pytest.raises(ImageLimitError, match=r"8192x8192 = 67,108,864 px, over the endpoint's limit of 1,000,000"):
            check_images(config, limit)
    else:
        check_images(config, limit)
        check_images(config, 1)  # whatever the limit: this agent sends no K x K grid


class _PastTheCheck(RuntimeError):
    """Raised where the door opens the video: the request got past the image check."""


@pytest.mark.unit
async def test_the_front_door_asks_the_agent(video: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    small = EndpointChoice(base_url="http://vlm.invalid/v1", model="m", max_image_pixels=1_000_000)
    options = {"k": 16, "cell_px": 512}  # an 8192 x 8192 grid

    def no_video(path: object) -> None:
        raise _PastTheCheck(str(path))

    monkeypatch.setattr("videoatlas.environment.concat.open_source", no_video)
    # The set-up checks pass for every agent; the door refuses the one that renders the grid, before
    # the video is opened or the endpoint called.
    rlm = request.make_request(video, "What?", ["a", "b"], agent="video-rlm", options=options, endpoint=small)
    with pytest.raises(ImageLimitError, match="over the endpoint's limit of 1,000,000 px"):
        await request.answer(rlm)
    seek = request.make_request(video, "What?", ["a", "b"], agent="videoseek", options=options, endpoint=small)
    with pytest.raises(_PastTheCheck):
        await request.answer(seek)
    with open_endpoint(small) as settings:  # a named endpoint: nothing starts
        assert settings.max_image_pixels == 1_000_000 == small.image_limit()


# -- demo's pictures through the agent's views -------------------------------------------------------


async def test_each_agent_shows_its_run_in_its_own_pictures(tmp_path: Path) -> None:
    from videoatlas.agents.registry import saved_snapshot

    shutil.copy(FIXTURES / "runs.db", tmp_path / "runs.db")
    db = f"sqlite:///{tmp_path / 'runs.db'}"
    rlm_state = dict((await saved_snapshot(db, "video-rlm", "rlm-finished")).values)
    uniform_state = dict((await saved_snapshot(db, "uniform", "uniform-finished")).values)
    source = FrameSource(FIXTURES / "counter.mp4")
    atlas = VideoAtlas(source, k=4, cell_px=64, cache=RenderCache(tmp_path / "renders"))
    try:
        rlm_pictures = get_agent("video-rlm").views.run_pictures(rlm_state, atlas)
        uniform_pictures = get_agent("uniform").views.run_pictures(uniform_state, atlas)
    finally:
        source.close()
    assert [(p.name, p.caption) for p in rlm_pictures] == [
        ("root_grid", "root grid with explored regions blacked out"),
        ("worker_grid", "the grid a worker found [A] on (cell 1)"),
        ("scratchpad_1", "evidence scratchpad"),
    ]
    assert rlm_pictures[0].image.width == 4 * 64  # the K x K root grid of the run's cells
    assert len(rlm_pictures[2].image.frames) == 2  # both items on one page
    assert [(p.name, len(p.image.frames)) for p in uniform_pictures] == [("scratchpad_1", 1)]
    assert evidence_pictures({"evidence": []}, atlas) == []


# -- one default agent, one accessor, one set of letters --------------------------------------------


@pytest.mark.unit
def test_the_default_agent_is_named_once() -> None:
    assert DEFAULT_AGENT == DEFINED == "video-rlm" and DEFAULT_AGENT in registry.PACKAGES
    assert RunConfig().agent == DEFAULT_AGENT
    for function in (api.aask, request.check_setup, request.make_request):
        assert inspect.signature(function).parameters["agent"].default == DEFAULT_AGENT
    parser = argparse.ArgumentParser()
    add_agent_option(parser, "the agent")
    assert parser.parse_args([]).agent == DEFAULT_AGENT
    from videoatlas.lmms.settings import parse_model_args

    assert parse_model_args({}).config.agent == DEFAULT_AGENT


@pytest.mark.unit
def test_one_settings_accessor_serves_every_agent() -> None:
    class Held:
        settings: Any = UniformSettings(frames=8)

    assert uniform(Held()).frames == 8
    with pytest.raises(TypeError, match="VideoRLMSettings ran with UniformSettings"):
        rlm(Held())
    Held.settings = VideoRLMSettings(workers=3)
    assert rlm(Held()).workers == 3


@pytest.mark.unit
def test_choices_are_lettered_a_to_z() -> None:
    lines = choices_block([f"c{i}" for i in range(12)]).splitlines()
    assert lines[0] == "A. c0" and lines[10] == "K. c10" and lines[11] == "L. c11"
