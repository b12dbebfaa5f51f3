"""The eval runner end to end: real generated videos, the stand-in over HTTP, SQLite checkpoints."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from prompt_helpers import copy_default
from videoatlas.cli.main import main
from videoatlas.evals.datasets.synthetic import ensure_video
from videoatlas.evals.report import load_eval
from videoatlas.evals.runner import EvalSpec, Shard, read_rows, run_eval
from videoatlas.llm.settings import EndpointSettings
from videoatlas.runtime.context import RunConfig
from videoatlas_standin.perception import Reader
from videoatlas_standin.server import RunningServer, StandinConfig, StandinServer

UNIFORM = "videoatlas.agents.uniform"

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


@pytest.fixture(scope="module")
def suite_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("suite")
    ensure_video(root, 60.0, 1)
    return root


@pytest.fixture(scope="module")
def reader() -> Reader:
    return Reader()


@pytest.fixture
def standin(reader: Reader) -> Iterator[RunningServer]:
    with RunningServer(StandinServer(StandinConfig(latency_s=0.5), reader=reader)) as server:
        yield server


def _eval_cmd(root: Path, out: Path, base_url: str, limit: int) -> list[str]:
    return [
        sys.executable, "-m", "videoatlas.cli.main", "eval", "run", "--dataset", "synthetic", "--root", str(root),
        "--durations", "1m", "--limit", str(limit), "--agent", "uniform", "--concurrency", "1",
        "--base-url", base_url, "--out", str(out), "--quiet",
    ]  # fmt: skip


def test_killed_eval_finishes_on_rerun_without_redoing_finished_questions(
    suite_root: Path, standin: RunningServer, tmp_path: Path
) -> None:
    out = tmp_path / "ev"
    cmd = _eval_cmd(suite_root, out, standin.base_url, limit=6)
    proc = subprocess.Popen(cmd, env=os.environ.copy(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    results = out / "results.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if results.is_file() and results.read_text().count("\n") >= 2:  # whole lines: one may be half written
            break
        time.sleep(0.05)
    assert proc.poll() is None, "the eval ended before it could be interrupted"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    before = read_rows(results)
    assert 2 <= len(before) < 6

    done = subprocess.run(cmd, env=os.environ.copy(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert f"{len(before)} from cache" in done.stdout
    after = read_rows(results)
    assert after[: len(before)] == before  # nothing rewritten
    items = [r["item"] for r in after]
    assert len(items) == 6 and len(set(items)) == 6  # every question once: none redone
    assert all(r["status"] == "ok" for r in after)
    assert len(load_eval(out).rows) == 6


async def test_prompt_sets_compare_and_only_changed_templates_rerun(
    suite_root: Path, standin: RunningServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    endpoint = EndpointSettings(base_url=standin.base_url, model="", timeout_s=120)

    def spec(prompts: str, out: str) -> EvalSpec:
        config = RunConfig.of(agent="uniform", prompts=prompts)
        # One style, so that four questions cover the four kinds.
        folder = str(tmp_path / out)
        return EvalSpec("synthetic", str(suite_root), folder, config, limit=4, durations=[60.0], styles=["chapters"])

    base = await run_eval(spec("default", "base"), endpoint)
    assert base.progress.done == 4 and base.progress.ran == 4

    edited = copy_default(tmp_path / "terse", UNIFORM)
    text = (edited / "answer.user.txt").read_text()
    (edited / "answer.user.txt").write_text(text.replace("Check each choice", "Look hard. Check each choice"))
    other = await run_eval(spec(str(edited), "terse"), endpoint)
    assert other.progress.cached == 0 and other.progress.ran == 4  # a changed template re-runs

    # The same templates under another name and folder: results are keyed by the text, so they are reused.
    renamed = copy_default(tmp_path / "same-text", UNIFORM)
    reused = await run_eval(spec(str(renamed), "same-text"), endpoint)
    assert reused.progress.cached == 4 and reused.progress.ran == 0

    meta_a = json.loads((tmp_path / "base" / "eval.json").read_text())
    meta_b = json.loads((tmp_path / "terse" / "eval.json").read_text())
    assert meta_a["prompt_sha"] != meta_b["prompt_sha"]
    terse_rows = read_rows(tmp_path / "terse" / "results.jsonl")
    assert {r["prompt_sha"] for r in terse_rows} == {meta_b["prompt_sha"]}
    assert {r["prompt_set"] for r in terse_rows} == {"terse"}

    capsys.readouterr()  # what the runs logged
    assert main(["eval", "compare", str(tmp_path / "base"), str(tmp_path / "terse"), "--json"]) == 0
    cmp = json.loads(capsys.readouterr().out)
    assert cmp["overall"]["questions"] == 4 and "prompts default" in cmp["a"] and "prompts terse" in cmp["b"]
    assert cmp["overall"]["ci_low"] <= cmp["overall"]["difference"] <= cmp["overall"]["ci_high"]
    assert set(cmp["categories"]) == {"needle_in_chapter", "counting", "order", "after_anchor"}


async def test_video_rlm_through_the_runner_is_scored_and_reported(
    suite_root: Path, reader: Reader, tmp_path: Path
) -> None:
    """Whether the stand-in's answer is right is its own; the row scores it against the truth either way
    (scoring and grounding with scripted runs: ``test_eval_runner.py``)."""
    with RunningServer(StandinServer(StandinConfig(), reader=reader)) as server:
        endpoint = EndpointSettings(base_url=server.base_url, model="", timeout_s=120)
        config = RunConfig.of(workers=2, rounds=2)
        spec = EvalSpec("synthetic", str(suite_root), str(tmp_path / "rlm"), config, limit=1, durations=[60.0])
        outcome = await run_eval(spec, endpoint)
    [row] = read_rows(outcome.results_file)
    assert row["status"] == "ok" and row["item"].endswith("needle-0")
    assert row["answer_index"] is not None and row["correct"] is (row["answer_index"] == row["truth_index"])
    assert row["calls"] > 3 and isinstance(row["evidence"], int)
    # The server's probabilities of the choices (from the decision's logprobs), and the answer's among them.
    assert len(row["probabilities"]) == 4 and sum(row["probabilities"]) == pytest.approx(1, abs=1e-3)  # 4 choices
    assert row["confidence"] == row["probabilities"][row["answer_index"]]
    assert row["truth_ranges"] and row["duration"] == pytest.approx(60.0, abs=0.5)
    assert main(["eval", "report", str(tmp_path / "rlm"), "--json"]) == 0


def test_missing_videos_are_refused_before_anything_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "ego"
    root.mkdir()
    (root / "questions.json").write_text(
        json.dumps([{"q_uid": "u1", "question": "?", **{f"option {i}": str(i) for i in range(5)}}])
    )
    (root / "subset_answers.json").write_text(json.dumps({"u1": 1}))
    code = main(
        ["eval", "run", "--dataset", "egoschema", "--root", str(root), "--out", str(tmp_path / "o"),
         "--base-url", "http://127.0.0.1:9"]
    )  # fmt: skip
    assert code == 2
    err = capsys.readouterr().err
    assert "1 video file(s) are missing" in err and "Traceback" not in err
    assert not (tmp_path / "o" / "results.jsonl").exists()


@pytest.mark.postgres
async def test_shards_share_a_folder_and_a_postgres_database(
    suite_root: Path, standin: RunningServer, tmp_path: Path, pg_url: str
) -> None:
    endpoint = EndpointSettings(base_url=standin.base_url, model="", timeout_s=120)
    out = tmp_path / "sharded"
    done = []
    for index in (0, 1):
        spec = EvalSpec(
            "synthetic",
            str(suite_root),
            str(out),
            RunConfig.of(agent="uniform"),
            limit=5,
            durations=[60.0],
            shard=Shard(index, 2),
            db_url=pg_url,
        )
        done.append((await run_eval(spec, endpoint)).progress.done)
    assert done == [3, 2]
    assert (out / "results-shard0of2.jsonl").is_file() and (out / "results-shard1of2.jsonl").is_file()
    data = load_eval(out)
    assert len(data.rows) == 5 and data.pending == 0 and len(data.metas) == 2
    assert len({r["item"] for r in data.rows}) == 5
