"""lmms-eval's own CLI runs our agent (``--model videoatlas``) over our tasks, against the stand-in as a process.

Run by ``make lmms-check`` (lmms-eval lives in ``.venv-lmms``; see ``tests/conftest.py``). The videos are real
(synthetic, one minute), the endpoint is real HTTP, the run store a SQLite file; lmms-eval reads no hub.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import httpx
import pytest

from db_helpers import sqlite_url
from lmms_helpers import synthetic_items, write_items_file, write_longvideobench, write_lvbench, write_videomme
from process_helpers import EXE, StandIn
from videoatlas.evals.answering import Keys, run_id_for
from videoatlas.evals.items import EvalItem
from videoatlas.evals.results import read_rows
from videoatlas.limits import CHOICE_LETTERS
from videoatlas.lmms import TASKS
from videoatlas.lmms.docs import run_of
from videoatlas.persistence.store import TraceStore
from videoatlas.runtime.config import RunConfig

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

PYTHON = os.environ.get("VIDEOATLAS_LMMS_PYTHON", "")
AGENT = "uniform"


@dataclass
class World:
    tmp: Path
    items: list[EvalItem]
    items_file: Path
    standin: StandIn
    env: dict[str, str]

    @property
    def base_url(self) -> str:
        return self.standin.url + "/v1"

    def chat_requests(self) -> int:
        return int(self.standin.stats()["chat_requests"])


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    tmp = tmp_path_factory.mktemp("lmms")
    items = synthetic_items(tmp / "suite", 3)
    # A fourth question whose recorded answer is not what the video shows: a right reading scores wrong.
    first = items[0]
    wrong = ((first.answer_index or 0) + 1) % len(first.choices)
    items.append(replace(first, id=first.id + "-mislabelled", answer_index=wrong))
    env = {
        **os.environ,
        "VIDEOATLAS_HOME": str(tmp / "home"),
        "VIDEOATLAS_LMMS_ITEMS": str(write_items_file(tmp / "items.jsonl", items)),
        "HF_HOME": str(tmp / "hf"),  # empty: nothing may come from the hub
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
    }
    standin = StandIn(latency=0.0)
    try:
        yield World(tmp, items, tmp / "items.jsonl", standin, env)
    finally:
        standin.stop()


def _command(world: World, tasks: str, model_args: str, out: Path) -> list[str]:
    return [
        PYTHON, "-m", "lmms_eval", "--model", "videoatlas", "--model_args", model_args, "--tasks", tasks,
        "--include_path", str(TASKS), "--output_path", str(out), "--log_samples",
    ]  # fmt: skip


def _lmms(world: World, tasks: str, model_args: str, out: Path, **env: str) -> subprocess.CompletedProcess[str]:
    cmd = _command(world, tasks, model_args, out)
    return subprocess.run(cmd, env={**world.env, **env}, capture_output=True, text=True, timeout=600)


def _model_args(world: World, db: str, **extra: str) -> str:
    return ",".join(f"{k}={v}" for k, v in {"agent": AGENT, "base_url": world.base_url, "db": db, **extra}.items())


def _outputs(out: Path) -> tuple[dict[str, Any], dict[str, list[dict[str, Any]]]]:
    """The newest results file lmms-eval wrote under ``out`` and its samples, by task (in document order)."""
    results_file = max(out.rglob("*_results.json"), key=lambda p: p.stat().st_mtime)
    stamp = results_file.name.removesuffix("_results.json")
    samples = {}
    for path in results_file.parent.glob(f"{stamp}_samples_*.jsonl"):
        task = path.stem.removeprefix(f"{stamp}_samples_")
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        samples[task] = sorted(rows, key=lambda r: r["doc_id"])
    return json.loads(results_file.read_text()), samples


def _answered_line(stderr: str) -> dict[str, int]:
    """Our summary line of a command's questions: how many were run, resumed, read back."""
    line = next(x for x in stderr.splitlines() if "videoatlas questions answered" in x)
    return {k: int(v) for k, v in re.findall(r"(\S+)=(\d+)", line)}


@pytest.fixture(scope="module")
def eval_run(world: World) -> list[dict[str, Any]]:
    """The same items through ``videoatlas eval run --dataset jsonl``, on a database of its own."""
    cmd = [
        EXE, "eval", "run", "--dataset", "jsonl", "--root", str(world.items_file), "--agent", AGENT,
        "--concurrency", "1", "--base-url", world.base_url, "--db", sqlite_url(world.tmp / "eval.db"),
        "--out", str(world.tmp / "eval"), "--quiet",
    ]  # fmt: skip
    done = subprocess.run(cmd, env=world.env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    rows = {r["item"]: r for r in read_rows(world.tmp / "eval" / "results.jsonl")}
    return [rows[item.id] for item in world.items]


def _run_ids(world: World) -> list[str]:
    model = httpx.get(world.base_url + "/models", timeout=10).json()["data"][0]["id"]
    keys = Keys.of(RunConfig.of(agent=AGENT), model)
    return [run_id_for(keys.key(item)) for item in world.items]


def _finished(db: str, run_ids: list[str]) -> int:
    store = TraceStore.shared(db)
    try:
        return sum(1 for r in run_ids if (row := store.run(r)) is not None and row.status == "finished")
    finally:
        store.release()


def test_lmms_eval_answers_an_items_file_resumes_when_killed_and_agrees_with_eval_run(
    world: World, eval_run: list[dict[str, Any]], tmp_path: Path
) -> None:
    db = sqlite_url(tmp_path / "lmms.db")
    model_args = _model_args(world, db, concurrency="1")
    out = tmp_path / "out"
    run_ids = _run_ids(world)

    # Killed once the first question's run has finished.
    killed = subprocess.Popen(
        _command(world, "videoatlas_jsonl", model_args, out), env=world.env,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 300
    while killed.poll() is None and time.monotonic() < deadline and _finished(db, run_ids) < 1:
        time.sleep(0.2)
    assert killed.poll() is None, "lmms-eval ended before it could be interrupted"
    os.kill(killed.pid, signal.SIGKILL)
    killed.wait()
    finished_before = _finished(db, run_ids)
    assert 1 <= finished_before < len(run_ids)

    # Run again: what finished is read back from the run store, the rest is run (or resumed).
    again = _lmms(world, "videoatlas_jsonl", model_args, out)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    tally = _answered_line(again.stderr)
    count = len(world.items)
    assert tally["questions"] == count and tally.get("db-cache", 0) >= finished_before
    assert tally.get("run", 0) + tally.get("resumed", 0) == count - tally["db-cache"]

    results, samples = _outputs(out)
    scores = results["results"]["videoatlas_jsonl"]
    logged = samples["videoatlas_jsonl"]
    assert [s["doc_id"] for s in logged] == list(range(len(world.items)))
    # The same answers as `videoatlas eval run`, under the same run ids (both derive them from the result key).
    assert [s["filtered_resps"] for s in logged] == [CHOICE_LETTERS[r["answer_index"]] for r in eval_run]
    assert [run_of(s["resps"]) for s in logged] == [r["run_id"] for r in eval_run] == run_ids
    assert [s["target"] for s in logged] == [CHOICE_LETTERS[i.answer_index or 0] for i in world.items]
    assert [s["accuracy"] for s in logged] == [float(r["correct"]) for r in eval_run]
    assert scores["accuracy,none"] == pytest.approx(sum(r["correct"] for r in eval_run) / count)
    assert scores["accuracy,none"] < 1  # a question and its mislabelled copy, answered alike: one is scored wrong
    assert scores["parse_failed,none"] == 0.0

    # A sample's run opens with `videoatlas trace`.
    trace = subprocess.run([EXE, "trace", run_ids[0], "--db", db], env=world.env, capture_output=True, text=True)
    assert trace.returncode == 0, trace.stderr
    assert world.items[0].question in trace.stdout

    # A third run asks the endpoint nothing.
    before = world.chat_requests()
    third = _lmms(world, "videoatlas_jsonl", model_args, tmp_path / "out3")
    assert third.returncode == 0, third.stderr[-3000:]
    assert _answered_line(third.stderr) == {"questions": count, "db-cache": count}
    assert world.chat_requests() == before
    assert _outputs(tmp_path / "out3")[0]["results"]["videoatlas_jsonl"] == scores


def test_the_benchmarks_local_copies_are_scored_by_lmms_eval_s_own_tasks(
    world: World, eval_run: list[dict[str, Any]], tmp_path: Path
) -> None:
    roots = {
        "VIDEOATLAS_LMMS_VIDEOMME": str(write_videomme(tmp_path / "Video-MME", world.items)),
        "VIDEOATLAS_LMMS_LONGVIDEOBENCH": str(write_longvideobench(tmp_path / "LongVideoBench", world.items)),
        "VIDEOATLAS_LMMS_LVBENCH": str(write_lvbench(tmp_path / "LVBench", world.items)),
    }
    tasks = "videoatlas_videomme,videoatlas_longvideobench_val,videoatlas_lvbench"
    done = _lmms(world, tasks, _model_args(world, sqlite_url(tmp_path / "lmms.db")), tmp_path / "out", **roots)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    results, samples = _outputs(tmp_path / "out")
    letters = [CHOICE_LETTERS[r["answer_index"]] for r in eval_run]
    right = sum(r["correct"] for r in eval_run) / len(eval_run)
    for task in tasks.split(","):
        assert [s["filtered_resps"] for s in samples[task]] == letters  # the same questions, the same answers
        assert all(run_of(s["resps"]) for s in samples[task])
    scores = results["results"]
    assert scores["videoatlas_videomme"]["videomme_perception_score,none"] == pytest.approx(100 * right)
    assert scores["videoatlas_longvideobench_val"]["lvb_acc,none"] == pytest.approx(right)
    assert scores["videoatlas_lvbench"]["lvbench_score,none"] == pytest.approx(right)


def _our_frames(output: str) -> list[str]:
    return [line for line in output.splitlines() if re.search(r'File ".*/videoatlas/', line)]


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("setting", "not an option of the uniform agent: workers"),
        ("agent", "unknown agent 'nobody'; choose one of"),
        ("endpoint", "127.0.0.1:9"),
        ("video", "1 of 4 question(s) cannot run (question"),
        ("items", "no-such-items.jsonl does not exist"),
    ],
)
def test_bad_input_is_one_line_on_lmms_eval_s_error_path(world: World, tmp_path: Path, case: str, message: str) -> None:
    db = sqlite_url(tmp_path / "lmms.db")
    model_args = _model_args(world, db)
    env: dict[str, str] = {}
    if case == "setting":
        model_args += ",workers=2"
    elif case == "agent":
        model_args = model_args.replace(f"agent={AGENT}", "agent=nobody")
    elif case == "endpoint":
        model_args = model_args.replace(world.base_url, "http://127.0.0.1:9/v1")
    elif case == "items":
        env["VIDEOATLAS_LMMS_ITEMS"] = str(tmp_path / "no-such-items.jsonl")
    else:
        gone = replace(world.items[1], video=str(tmp_path / "gone.mp4"))
        broken = [world.items[0], gone, *world.items[2:]]
        env["VIDEOATLAS_LMMS_ITEMS"] = str(write_items_file(tmp_path / "items.jsonl", broken))
    before = world.chat_requests()
    done = _lmms(world, "videoatlas_jsonl", model_args, tmp_path / "out", **env)
    output = done.stdout + done.stderr
    assert message in output and "Error during evaluation" in output, output[-3000:]
    assert len(_our_frames(output)) <= 1, _our_frames(output)  # no traceback wall from our code
    assert world.chat_requests() == before  # nothing was asked
