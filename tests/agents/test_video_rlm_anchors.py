"""Video-RLM's semantic anchors (``anchors``): scores from the frame index decide what upper-level cells show.

Unit checks of the scoring and the picks, then one question end to end on the stand-in (its
embeddings route runs multilingual-e5-small over what it reads in each frame), with the index kept
in real SQLite: the picks stay inside their cells, and a second run reuses the index and the search
task's vector with no embedding call. With a scripted search task that names the sign, the cell
holding the sign scores highest (the stand-in's own search task is its choice).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from action_video import Sign, write_signs_video
from agent_helpers import ScriptedChat, default_reply
from db_helpers import sqlite_url
from videoatlas.agents.registry import get_agent
from videoatlas.agents.video_rlm.anchors import Relevance, cell_picks
from videoatlas.cli.main import main
from videoatlas.environment.geometry import grid_for_path
from videoatlas.environment.timefmt import format_ts
from videoatlas.llm.settings import EndpointSettings
from videoatlas.runs import run_question
from videoatlas.runtime import frame_index
from videoatlas.runtime.config import RunConfig
from videoatlas.ui.report import report_html
from videoatlas_standin.perception import Reader
from videoatlas_standin.server import RunningServer, StandinConfig, StandinServer
from videoatlas_standin.version import STANDIN_MODEL

DURATION = 64.0
SIGNS = (Sign(49.0, 55.0, "LIGHTHOUSE", 56, 320, 70, card=(20, 60, 140)),)
QUESTION = "What word is printed on the blue card?"
CHOICES = ["LIGHTHOUSE", "WINDMILL", "HARBOUR"]
SMALL = {"k": 4, "cell_px": 160, "rounds": 1, "workers": 2, "index_fps": 0.5, "anchors": "both"}


@pytest.mark.unit
def test_scores_run_from_the_median_frame_to_the_best() -> None:
    times = np.arange(10.0)
    sims = np.array([0.80, 0.81, 0.80, 0.82, 0.95, 0.80, 0.81, 0.79, 0.80, 0.83])
    rel = Relevance.of(times, sims)
    assert rel.scores[4] == pytest.approx(1.0) and rel.scores.min() == 0.0
    best = rel.best_in(3.0, 6.0)
    assert best is not None and best[0] == 4.0 and best[1] == pytest.approx(1.0)
    assert rel.best_in(4.5, 4.9) is None  # no indexed frame in there
    assert np.all(Relevance.of(times, np.full(10, 0.5)).scores == 0.0)  # nothing stands out


@pytest.mark.unit
@pytest.mark.parametrize("mode", ["frames", "marks", "both"])
def test_picks_follow_the_mode_and_stay_inside_their_cells(mode: str) -> None:
    grid = grid_for_path(100.0, (), 4)
    rng = np.random.default_rng(3)
    times = np.sort(rng.uniform(0.0, 100.0, 300))
    rel = Relevance.of(times, rng.normal(0.8, 0.02, 300))
    picks = cell_picks(grid.cells, rel, mode, threshold=0.5)
    assert picks
    for index, pick in picks.items():
        cell = grid.cells[index].interval
        if pick.time is not None:
            assert mode != "marks" and cell.start <= pick.time < cell.end
            assert pick.score is None or pick.score >= 0.5
        assert (pick.score is not None) == (mode != "frames")
    substituted = [i for i, p in picks.items() if p.time is not None]
    best = {c.index: rel.best_in(c.interval.start, c.interval.end) for c in grid.cells}
    assert sorted(substituted) == sorted(i for i, b in best.items() if b and b[1] >= 0.5 and mode != "marks")


@pytest.mark.unit
def test_a_prompt_directory_written_before_the_anchors_still_loads(tmp_path: Path) -> None:
    agent = get_agent("video-rlm")
    default = agent.load_prompts()
    for name, template in default.templates.items():
        if not name.startswith("anchor_") and name != "reask":
            (tmp_path / f"{name}.txt").write_text(template.text)
    older = agent.load_prompts(str(tmp_path))
    assert older.render("anchor_marks.note") == default.render("anchor_marks.note")


@pytest.fixture(scope="module")
def lighthouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_signs_video(tmp_path_factory.mktemp("anchors") / "lighthouse.mp4", SIGNS, DURATION)


@pytest.fixture(scope="module")
def standin() -> Iterator[RunningServer]:
    with RunningServer(StandinServer(StandinConfig(), reader=Reader())) as server:
        yield server


def assert_picks_inside_their_cells_and_listed(anchor_log: list[Any], page: str) -> None:
    """Every probe's picks lie inside their cells with scores in 0-1, and the run page lists them under its grid."""
    root = grid_for_path(DURATION, (), 4)
    for probe in anchor_log:
        for cell, time, score in probe.cells:
            assert time is None or root.cells[cell].interval.start <= time < root.cells[cell].interval.end
            assert score is not None and 0.0 <= score <= 1.0
            at = f" @{format_ts(time, 1)}" if time is not None else ""
            assert f"{cell}{at} rel {min(99, round(100 * (score or 0.0)))}" in page


@pytest.mark.e2e
async def test_the_sign_cell_scores_highest_for_a_search_task_that_names_it(
    lighthouse: Path, standin: RunningServer, tmp_path: Path
) -> None:
    """A scripted search task; the stand-in's embeddings route (multilingual-e5-small over what each frame
    shows) scores the frames: the probe's anchors stay inside their cells and the best-scored cell shows the sign."""
    db = sqlite_url(tmp_path / "runs.db")
    endpoint = EndpointSettings(base_url=standin.base_url, model=STANDIN_MODEL)

    def script(name: str, text: str, schema: dict[str, Any]) -> Any:
        if name == "SearchTask":
            return {"search_task": "a blue card with the word LIGHTHOUSE printed on it"}
        return default_reply(name, text, schema)

    frame_index.forget()
    chat = ScriptedChat(script=script)
    first = await run_question(
        lighthouse, QUESTION, CHOICES, RunConfig.of(agent="video-rlm", **SMALL), endpoint, chat_model=chat, db_url=db
    )
    [probe] = first.state["anchor_log"]
    root = grid_for_path(DURATION, (), 4)
    scores = {cell: score for cell, _, score in probe.cells}
    top = root.cells[max(scores, key=lambda c: scores[c] or 0.0)].interval
    assert top.start < SIGNS[0].end and SIGNS[0].start < top.end  # the best-scored cell shows the sign
    assert_picks_inside_their_cells_and_listed(first.state["anchor_log"], await report_html(first.run_id, db))
    probe_text = next(t for n, t in chat.seen if n == "GlobalProbe")
    assert "[rel " in probe_text  # the marks are in the probe's cell list


@pytest.mark.e2e
async def test_anchors_are_scored_and_a_second_run_embeds_nothing(
    lighthouse: Path, standin: RunningServer, tmp_path: Path
) -> None:
    """Over HTTP: the index is built once (its frames and the search task embedded), stored, and read back by a
    second run; frames of another size are another index. Which cell scores best follows the stand-in's
    search task: that is checked with a scripted one above."""
    db = sqlite_url(tmp_path / "runs.db")
    endpoint = EndpointSettings(base_url=standin.base_url)
    frame_index.forget()
    before = standin.standin.stats.embedding_inputs
    first = await run_question(
        lighthouse, QUESTION, CHOICES, RunConfig.of(agent="video-rlm", **SMALL), endpoint, db_url=db
    )
    assert first.extras["index_frames"] == 32 and first.extras["index_s"] > 0
    task = 1 if first.state["search_task"].strip() else 0  # an empty search task is not embedded
    assert standin.standin.stats.embedding_inputs - before == 32 + task  # the frames, and the search task
    assert first.answer in CHOICES
    assert_picks_inside_their_cells_and_listed(first.state["anchor_log"], await report_html(first.run_id, db))

    frame_index.forget()  # as a new process: the index and the search task's vector come from the store
    before = standin.standin.stats.embedding_requests
    second = await run_question(
        lighthouse, QUESTION, CHOICES, RunConfig.of(agent="video-rlm", **SMALL), endpoint, db_url=db
    )
    assert standin.standin.stats.embedding_requests == before  # zero embedding calls
    assert second.extras["index_frames"] == 32 and second.extras["index_s"] == 0.0 and second.state["index"].reused
    assert [p.cells for p in second.state["anchor_log"]] == [p.cells for p in first.state["anchor_log"]]

    # Frames embedded at another size are another index: built anew, never the stored one reused.
    before = standin.standin.stats.embedding_inputs
    larger = RunConfig.of(agent="video-rlm", **SMALL, index_px=320)
    third = await run_question(lighthouse, QUESTION, CHOICES, larger, endpoint, db_url=db)
    assert not third.state["index"].reused and third.state["index"].embedded == 32
    assert standin.standin.stats.embedding_inputs - before == 32  # the frames again; the task's vector is stored


@pytest.mark.e2e
def test_ask_and_eval_run_take_the_anchor_settings(
    lighthouse: Path, standin: RunningServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``videoatlas ask`` and ``videoatlas eval run`` pass ``--anchors`` and its siblings to video-rlm."""
    flags = ["--agent", "video-rlm", "--k", "4", "--cell-px", "160", "--rounds", "1", "--workers", "2"]
    flags += ["--anchors", "frames", "--anchor-min", "0.5", "--index-fps", "0.5", "--base-url", standin.base_url]
    db = sqlite_url(tmp_path / "runs.db")
    frame_index.forget()
    argv = ["ask", str(lighthouse), "-q", QUESTION, *[a for c in CHOICES for a in ("-c", c)], *flags]
    assert main([*argv, "--db", db, "--json"]) == 0
    asked = json.loads(capsys.readouterr().out)
    assert asked["answer"] in CHOICES and asked["extras"]["index_frames"] == 32

    items = tmp_path / "items.jsonl"
    item: dict[str, Any] = {"dataset": "own", "id": "q1", "video_id": "lighthouse", "video": str(lighthouse)}
    item |= {"question": QUESTION, "choices": CHOICES, "answer_index": 0}
    items.write_text(json.dumps(item) + "\n")
    out = tmp_path / "eval"
    code = main(["eval", "run", "--dataset", "jsonl", "--root", str(items), "--out", str(out), *flags, "--quiet"])
    assert code == 0
    [row] = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert row["status"] == "ok" and row["index_frames"] == 32
