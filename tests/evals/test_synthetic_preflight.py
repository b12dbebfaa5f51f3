"""The synthetic suite's pre-flight makes nothing, and an eval makes only the videos its questions need.

Real files and real synthesis: ``eval check`` is run as the installed command on an empty folder and
on a half-made one; ``eval run`` with the stand-in and the uniform baseline; the runner itself with its
question runs scripted (the videos are still really made).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from process_helpers import EXE
from suite_helpers import recorder
from videoatlas.evals.datasets.synthetic import ensure_video, video_folder
from videoatlas.evals.runner import EvalSpec, load_selected, read_rows, run_eval
from videoatlas.llm.settings import EndpointSettings
from videoatlas.request import RunRequest
from videoatlas.runs import RunResult
from videoatlas.runtime.context import RunConfig
from videoatlas.state.models import Cost
from videoatlas.synth import load_current

pytestmark = pytest.mark.e2e

SUITE_S = 2 * (60 + 600 + 3600 + 3 * 3600 + 10 * 3600)
"""The default suite's length: five durations, in two styles."""


def files_under(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")) if root.exists() else []


def videoatlas(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """The installed command, not on a terminal (progress comes as plain lines)."""
    return subprocess.run([EXE, *args], capture_output=True, text=True, timeout=timeout, env=os.environ.copy())


def test_eval_check_of_the_default_suite_makes_no_video_and_says_what_eval_run_would_make(tmp_path: Path) -> None:
    root = tmp_path / "suite"
    done = videoatlas("eval", "check", "--dataset", "synthetic", "--root", str(root))
    assert done.returncode == 0, done.stderr
    # Nothing made, no progress to show (it made all ten videos before: about 2.5 minutes, 500 MB).
    assert not root.exists() and "made once" not in done.stderr
    out = done.stdout
    assert "videos to make (10, 28:22:00 of video in all):" in out
    assert f"synthetic 10h broadcast (10:00:00): {root}/synth-36000s-seed1-broadcast/video.mp4" in out
    assert out.rstrip().endswith("ready to run; eval run makes the 10 video(s) above first")

    data = json.loads(videoatlas("eval", "check", "--dataset", "synthetic", "--root", str(root), "--json").stdout)
    assert data["ok"] and data["videos"] == 10 and data["missing_videos"] == [] and data["missing_subtitles"] == []
    assert len(data["to_make"]) == 10 and data["to_make_s"] == SUITE_S
    assert {v["label"] for v in data["to_make"]} >= {"synthetic 1min chapters", "synthetic 3h broadcast"}
    assert not root.exists()


def test_eval_check_probes_made_videos_and_names_half_made_ones_which_are_made_again(tmp_path: Path) -> None:
    ensure_video(tmp_path, 60.0, 1, "chapters")
    half = video_folder(tmp_path, 60.0, 1, "broadcast")
    half.mkdir()
    (half / "video.mp4").write_bytes(b"cut short: its ground truth was never written")
    before = files_under(tmp_path)
    args = ["eval", "check", "--dataset", "synthetic", "--root", str(tmp_path), "--durations", "1m", "--json"]
    done = videoatlas(*args)
    assert done.returncode == 0, done.stdout + done.stderr
    data = json.loads(done.stdout)
    assert data["ok"] and data["unreadable_videos"] == [] and data["missing_videos"] == []
    [todo] = data["to_make"]
    assert todo == {"label": "synthetic 1min broadcast", "video": str(half / "video.mp4"), "duration": 60.0}
    assert files_under(tmp_path) == before  # checked, not made

    made: list[str] = []
    spec = EvalSpec("synthetic", str(tmp_path), str(tmp_path / "out"), RunConfig(), durations=[60.0])
    assert load_selected(spec, recorder(made)).to_make == []
    assert made == ["synthetic 1min broadcast"]  # the half-made one, not the one made before
    assert load_current(half, style="broadcast") is not None
    assert json.loads(videoatlas(*args).stdout)["to_make"] == []


@pytest.mark.slow
def test_eval_run_makes_the_one_video_its_question_needs_once_and_shows_it_being_made(tmp_path: Path) -> None:
    root, out = tmp_path / "suite", tmp_path / "ev"
    args = ["eval", "run", "--dataset", "synthetic", "--root", str(root), "--durations", "1m", "--limit", "1"]
    args += ["--standin", "--agent", "uniform", "--frames", "4", "--out", str(out)]
    first = videoatlas(*args)
    assert first.returncode == 0, first.stderr
    lines = first.stderr.splitlines()
    # The pre-flight names the video first, then it is made with its progress, then the question runs.
    plan = lines.index("videos to make (1, 01:00 of video in all):")
    start = lines.index("synthetic 1min chapters (made once): 0% (0/300 frames)")
    assert plan < start < lines.index("synthetic 1min chapters (made once): 100% (300/300 frames)")
    assert "ready to run; eval run makes the 1 video(s) above first" in lines and "\r" not in first.stderr
    assert [p.name for p in root.iterdir()] == ["synth-60s-seed1"]
    video = root / "synth-60s-seed1" / "video.mp4"
    made_at = video.stat().st_mtime_ns
    [row] = read_rows(out / "results.jsonl")
    assert row["item"].startswith("synth-60s-seed1/") and row["status"] == "ok"

    again = videoatlas(*args)
    assert again.returncode == 0, again.stderr
    assert "made once" not in again.stderr and "videos to make (1," not in again.stderr
    assert "1 from cache" in again.stdout
    assert [p.name for p in root.iterdir()] == ["synth-60s-seed1"] and video.stat().st_mtime_ns == made_at


async def test_the_runner_makes_only_the_video_of_its_selected_question(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[str] = []

    async def model(endpoint: EndpointSettings) -> str:
        return "scripted-model"

    async def answer(request: RunRequest, on_progress: Any = None, endpoint: Any = None) -> RunResult:
        asked.append(request.video)
        assert request.run_id is not None  # the eval names each question's run
        return RunResult(
            run_id=request.run_id,
            question=request.question,
            choices=list(request.choices),
            answer=request.choices[0] if request.choices else "",
            answer_index=0 if request.choices else None,
            reasoning="scripted",
            evidence=[],
            cited=[],
            cost=Cost(calls=1, prompt_tokens=10, completion_tokens=1),
            rounds=0,
            stop_reason="single call",
            wall_s=0.0,
        )

    monkeypatch.setattr("videoatlas.evals.runner.resolve_model", model)
    monkeypatch.setattr("videoatlas.evals.answering.answer", answer)
    root = tmp_path / "suite"
    # One question of a suite that holds a 10-hour video (eval run --quiet makes the videos in the runner).
    spec = EvalSpec(
        "synthetic", str(root), str(tmp_path / "ev"), RunConfig.of(agent="uniform"), limit=1, durations=[60.0, 36000.0]
    )
    outcome = await run_eval(spec, EndpointSettings(base_url="http://127.0.0.1:9/v1", model=""))
    assert outcome.progress.done == 1 and asked == [str(root / "synth-60s-seed1" / "video.mp4")]
    assert [p.name for p in root.iterdir()] == ["synth-60s-seed1"]
    assert load_current(root / "synth-60s-seed1") is not None
