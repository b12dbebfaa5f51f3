"""The CLI's progress reporting and output files: bars on a terminal, plain lines in a log, nothing half-written."""

from __future__ import annotations

import io
import os
import re
import time
from pathlib import Path

import pytest
from PIL import Image

from videoatlas.cli import progress as progress_module
from videoatlas.cli import run_view
from videoatlas.cli.outputs import command_name, image_output, undo_on_failure, write_image
from videoatlas.cli.progress import EvalProgressBar, Progress
from videoatlas.errors import BadInputError
from videoatlas.evals.runner import EvalProgress

pytestmark = pytest.mark.unit


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_plain_progress_is_a_line_per_tenth_without_carriage_returns() -> None:
    log = io.StringIO()
    with Progress("synth 10:00", stream=log) as progress:
        for done in range(0, 3001, 100):
            progress(done, 3000)
    lines = log.getvalue().splitlines()
    assert "\r" not in log.getvalue()
    assert lines[0] == "synth 10:00: 0% (0/3,000 frames)"
    assert lines[-1] == "synth 10:00: 100% (3,000/3,000 frames)"
    assert [line.split(": ")[1].split("%")[0] for line in lines] == [str(p) for p in range(0, 101, 10)]


def test_terminal_progress_is_a_live_bar() -> None:
    screen = Terminal()
    progress = Progress("synth", stream=screen)
    for done in range(0, 1001, 250):
        progress(done, 1000)
    drawn = screen.getvalue()
    assert "\r" in drawn and "100%" in drawn and "1000/1000" in drawn
    assert progress.bar is None  # closed at the end


def test_quiet_progress_writes_nothing() -> None:
    log = io.StringIO()
    Progress("synth", stream=log, quiet=True)(5, 10)
    EvalProgressBar(log, quiet=True)(EvalProgress(total=3, done=1))
    assert log.getvalue() == ""


def test_eval_progress_keeps_its_figures_in_both_forms() -> None:
    states = [EvalProgress(total=2, done=1, scored=1, correct=1, tokens=1_500_000), EvalProgress(total=2, done=2)]
    log, screen = io.StringIO(), Terminal()
    for stream in (log, screen):
        bar = EvalProgressBar(stream)
        for p in states:
            bar(p)
    first = log.getvalue().splitlines()[0]
    assert first.startswith(
        "1/2 questions | 00:00 elapsed | acc 100.0% | errors 0.0% (0) | 0 parse fail | 1.50M tokens | 0 cached"
    )
    assert "\r" not in log.getvalue()
    assert "\r" in screen.getvalue() and "2/2" in screen.getvalue() and "parse fail" in screen.getvalue()


def test_a_slow_eval_writes_its_status_again_while_no_question_ends(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(progress_module, "PLAIN_EVERY_S", 0.5)
    log = io.StringIO()
    with EvalProgressBar(log) as bar:
        bar(EvalProgress(total=3, done=0))
        time.sleep(2.6)  # no question ends meanwhile
    lines = log.getvalue().splitlines()
    assert len(lines) >= 3 and all(line.startswith("0/3 questions | ") for line in lines)
    assert "00:02 elapsed" in lines[-1]


def test_a_quiet_run_gets_a_status_line_naming_the_call_it_waits_on(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(run_view, "QUIET_AT_MOST_S", 0.5)
    with run_view.RunProgress(quiet=False, standin=True) as progress:
        progress({"event": "run_started", "run_id": "r1"})
        progress({"event": "call_started", "call": 1, "node": "worker", "worker": "r1w2", "round": 1, "step": 3})
        progress({"event": "call_finished", "call": 1, "node": "worker", "tokens": 1200, "outcome": "ok"})
        progress({"event": "call_started", "call": 2, "node": "worker", "worker": "r1w2", "round": 1, "step": 3})
        time.sleep(2.8)
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == "run id: r1"
    status = lines[1]
    assert re.match(r"\[00:0\d\] 1 call\(s\), 1,200 tokens so far; waiting \d s on the worker call", status)
    assert "on the worker call (worker r1w2, round 1, step 4)" in status
    assert "last: run id: r1" in status
    assert sum("the stand-in reads the text" in line for line in lines) == 1  # said once, when a call takes long
    ticks = lines[1:]
    assert len(ticks) >= 2  # it goes on while the call is out


def test_a_quiet_flag_starts_no_status_lines(capsys: pytest.CaptureFixture[str]) -> None:
    with run_view.RunProgress(quiet=True) as progress:
        progress({"event": "call_started", "call": 1, "node": "decide"})
        time.sleep(0.2)
    assert capsys.readouterr().err == ""


def test_undo_on_failure_removes_only_what_the_command_added(tmp_path: Path) -> None:
    kept = tmp_path / "out"
    kept.mkdir()
    (kept / "earlier.json").write_text("{}")
    with pytest.raises(KeyboardInterrupt), undo_on_failure(kept) as folder:
        (folder / ".video.partial.mp4").write_bytes(b"half")
        (folder / "sub").mkdir()
        raise KeyboardInterrupt
    assert sorted(p.name for p in kept.iterdir()) == ["earlier.json"]

    fresh = tmp_path / "a" / "b"
    with pytest.raises(BadInputError), undo_on_failure(fresh):
        (fresh / "video.mp4").write_bytes(b"x")
        raise BadInputError("stop")
    assert not (tmp_path / "a").exists()

    with undo_on_failure(fresh):
        (fresh / "video.mp4").write_bytes(b"x")
    assert (fresh / "video.mp4").read_bytes() == b"x"


def test_image_output_checks_before_any_work(tmp_path: Path) -> None:
    with pytest.raises(BadInputError, match="is a folder"):
        image_output(tmp_path)
    with pytest.raises(BadInputError, match=r"use one of \.jpg, \.jpeg, \.png"):
        image_output(tmp_path / "grid.webp")
    (tmp_path / "file").write_text("")
    with pytest.raises(BadInputError, match="is a file, not a folder"):
        image_output(tmp_path / "file" / "deeper" / "grid.jpg")
    assert image_output(tmp_path / "new" / "GRID.PNG") == tmp_path / "new" / "GRID.PNG"
    assert not (tmp_path / "new").exists()


def test_write_image_converts_by_suffix(tmp_path: Path) -> None:
    buf = io.BytesIO()
    Image.new("RGB", (64, 32), (200, 10, 10)).save(buf, format="JPEG")
    out = write_image(buf.getvalue(), tmp_path / "x" / "grid.png")
    with Image.open(out) as img:
        assert img.format == "PNG" and img.size == (64, 32)
    same = write_image(buf.getvalue(), tmp_path / "x" / "grid.jpeg")
    assert same.read_bytes() == buf.getvalue()
    assert sorted(p.name for p in (tmp_path / "x").iterdir()) == ["grid.jpeg", "grid.png"]


def test_command_name_is_what_works_in_this_shell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = tmp_path / "venv" / "bin"
    bin_dir.mkdir(parents=True)
    script = bin_dir / "videoatlas"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    monkeypatch.setattr("sys.argv", [str(script), "demo"])
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    assert command_name() == os.path.join("venv", "bin", "videoatlas")  # not on PATH: its path
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    assert command_name() == "videoatlas"  # activated: the plain name
    monkeypatch.setattr("sys.argv", [str(tmp_path / "main.py")])
    assert command_name().endswith(" -m videoatlas.cli.main")
