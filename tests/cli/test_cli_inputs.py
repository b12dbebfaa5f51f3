"""Issue 16 as a new user meets it: bad input is one line and a non-zero exit, before any work, leaving nothing.

Every case runs the installed console script in a real process on a 30-second synthetic video made
once for the module (by the console script too).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from process_helpers import EXE

pytestmark = pytest.mark.e2e
LONG_QUESTION = "x" * 100_000


def run(*args: str, home: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "VIDEOATLAS_HOME": str(home)}
    env.pop("VIDEOATLAS_BASE_URL", None)
    return subprocess.run([EXE, *args], capture_output=True, text=True, timeout=timeout, env=env)


def assert_one_line(proc: subprocess.CompletedProcess[str], code: int, fragment: str) -> str:
    assert proc.returncode == code, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert fragment in lines[0], lines[0]
    return lines[0]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cli_inputs")


@pytest.fixture(scope="module")
def video(workdir: Path) -> Path:
    """30 s of 320x180 at 5 fps (150 frames), made by ``videoatlas synth`` with its logging options after it."""
    out = workdir / "video"
    args = ["synth", "--duration", "30", "--size", "320x180", "--out", str(out), "--log-level", "info", "--log-json"]
    proc = run(*args, home=workdir / "home")
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stderr.splitlines() if line.startswith("{")]
    assert any(e.get("event") == "synthesized" for e in events), proc.stderr  # --log-* after the command work
    assert "\r" not in proc.stderr  # no terminal: plain progress lines
    return out / "video.mp4"


@pytest.fixture
def place(workdir: Path, tmp_path: Path) -> dict[str, str]:
    folder = tmp_path / "existing_folder"
    folder.mkdir()
    existing = tmp_path / "existing_file"
    existing.write_text("keep me")
    return {"DIR": str(folder), "FILE": str(existing), "NEW": str(tmp_path / "new"), "TMP": str(tmp_path)}


BAD_INPUTS: list[tuple[str, list[str], int, str]] = [
    ("synth-huge-frame", ["synth", "--duration", "30", "--size", "100000x100000", "--out", "{NEW}"], 2, "3840x2160"),
    ("synth-too-much-work", ["synth", "--duration", "24h", "--fps", "60", "--size", "3840x2160", "--out", "{NEW}"], 2,
     "gigapixels to encode"),
    ("synth-out-is-a-file", ["synth", "--duration", "30", "--out", "{FILE}"], 2, "is a file; give a folder"),
    ("synth-name-is-a-path", ["synth", "--duration", "30", "--out", "{NEW}", "--name", "../x"], 2, "plain file stem"),
    ("grid-k-100", ["grid", "{V}", "--k", "100", "-o", "{NEW}/g.jpg"], 2, "between 2 and 16, got 100"),
    ("grid-picture-too-large", ["grid", "{V}", "--k", "16", "--cell-px", "1024", "-o", "{NEW}/g.jpg"], 2,
     "16384 px on a side"),
    ("grid-out-is-a-folder", ["grid", "{V}", "-o", "{DIR}"], 2, "is a folder; give a file name"),
    ("grid-out-gif", ["grid", "{V}", "-o", "{NEW}/g.gif"], 2, "use one of .jpg, .jpeg, .png"),
    ("grid-out-under-a-file", ["grid", "{V}", "-o", "{FILE}/g.jpg"], 2, "is a file, not a folder"),
    ("grid-empty-cell", ["grid", "{V}", "--cell", "", "-o", "{NEW}/g.jpg"], 2, "--cell needs a cell path"),
    ("grid-clock-1-99", ["grid", "{V}", "--start", "1:99", "--end", "2:00", "-o", "{NEW}/g.jpg"], 2,
     "minutes and seconds must be below 60"),
    ("grid-finer-than-a-frame", ["grid", "{V}", "--cell", "12/5/3", "-o", "{NEW}/g.jpg"], 2,
     "the finest level here is 1"),
    ("grid-range-under-a-frame", ["grid", "{V}", "--start", "10", "--end", "10.1", "-o", "{NEW}/g.jpg"], 2,
     "shorter than one frame"),
    ("runs-limit-negative", ["runs", "--limit", "-1"], 2, "--limit: must be at least 1"),
    ("ask-one-choice", ["ask", "{V}", "-q", "why?", "-c", "only", "--standin"], 2, "at least two answer choices"),
    ("ask-duplicate-choices", ["ask", "{V}", "-q", "why?", "-c", "red", "-c", "Red ", "--standin"], 2, "given twice"),
    ("ask-huge-question", ["ask", "{V}", "-q", LONG_QUESTION, "--standin"], 2, "100,000 characters long"),
    ("ask-k-17", ["ask", "{V}", "-q", "why?", "--k", "17", "--standin"], 2, "between 2 and 16, got 17"),
    ("ask-k-16-over-pixel-limit", ["ask", "{V}", "-q", "why?", "--k", "16", "--standin"], 2,
     "over the endpoint's limit of 12,845,056 px"),
    ("ask-cell-1024-over-pixel-limit", ["ask", "{V}", "-q", "why?", "--cell-px", "1024", "--standin"], 2,
     "cells of at most 448 px fit"),
    ("ask-real-server-limit", ["ask", "{V}", "-q", "why?", "--max-image-pixels", "1000000", "--base-url",
                               "http://127.0.0.1:9/v1"], 2, "limit of 1,000,000 px"),
    ("ask-max-images-zero", ["ask", "{V}", "-q", "why?", "--max-images", "0", "--standin"], 2,
     "--max-images: must be at least 1"),
    ("ask-budget-zero", ["ask", "{V}", "-q", "why?", "--call-budget", "0", "--standin"], 2, "at least 1"),
    ("ask-timeout-zero", ["ask", "{V}", "-q", "why?", "-c", "a", "-c", "b", "--timeout", "0", "--standin"], 2,
     "the request timeout in seconds (--timeout) must be positive"),  # before the stand-in starts: one line
    ("ask-unreachable", ["ask", "{V}", "-q", "why?", "--base-url", "http://127.0.0.1:9/v1", "--timeout", "1"], 5,
     "--standin"),
    ("eval-out-is-a-file", ["eval", "run", "--dataset", "synthetic", "--root", "{TMP}", "--out", "{FILE}",
                            "--standin"], 2, "is a file; give a folder"),
    ("eval-duration-too-long", ["eval", "run", "--dataset", "synthetic", "--root", "{TMP}", "--out", "{NEW}",
                                "--durations", "30h", "--standin"], 2, "--durations: synthetic videos are limited"),
    ("eval-over-pixel-limit", ["eval", "run", "--dataset", "synthetic", "--root", "{TMP}", "--out", "{NEW}",
                               "--k", "16", "--standin"], 2, "over the endpoint's limit"),
    ("demo-question-out-of-range", ["demo", "--out", "{NEW}", "--question", "99"], 2, "--question must be between"),
]  # fmt: skip


@pytest.mark.parametrize(("args", "code", "fragment"), [c[1:] for c in BAD_INPUTS], ids=[c[0] for c in BAD_INPUTS])
def test_bad_input_is_one_line_and_leaves_nothing(
    video: Path, place: dict[str, str], tmp_path: Path, args: list[str], code: int, fragment: str
) -> None:
    filled = [a.replace("{V}", str(video)).format(**place) if a != LONG_QUESTION else a for a in args]
    home = tmp_path / "home"
    line = assert_one_line(run(*filled, home=home), code, fragment)
    if code == 5:
        assert "VIDEOATLAS_BASE_URL" in line
    assert not Path(place["NEW"]).exists()  # no output, no empty folder
    assert Path(place["FILE"]).read_text() == "keep me"
    runs = run("runs", "--json", home=home)  # a refused question never became a run
    assert runs.returncode == 0 and json.loads(runs.stdout) == [], runs.stdout


def test_a_bad_image_limit_in_the_environment_is_one_line_and_no_run(video: Path, tmp_path: Path) -> None:
    env = {**os.environ, "VIDEOATLAS_HOME": str(tmp_path), "VIDEOATLAS_MAX_IMAGES": "lots"}
    args = [EXE, "ask", str(video), "-q", "why?", "--base-url", "http://127.0.0.1:9/v1"]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=300, env=env)
    assert_one_line(proc, 2, "VIDEOATLAS_MAX_IMAGES must be a positive whole number, got 'lots'")
    assert json.loads(run("runs", "--json", home=tmp_path).stdout) == []


def test_the_image_limit_flag_reaches_the_stand_in_and_the_agent(video: Path, tmp_path: Path) -> None:
    """``--max-images 4``: VideoARM's smallest survey (30 frames, 5 mosaics) cannot be sent, and it says so."""
    proc = run("ask", str(video), "-q", "why?", "--agent", "videoarm", "--max-images", "4", "--standin", home=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == (
        "videoatlas ask: error: VideoARM's smallest survey (30 frames) needs 5 images in one prompt and the endpoint "
        "takes 4 (raise vLLM's --limit-mm-per-prompt and videoatlas' --max-images together)"
    )
    [failed] = json.loads(run("runs", "--json", home=tmp_path).stdout)
    assert failed["status"] == "failed" and failed["calls"] == 0


def test_unreachable_endpoint_names_both_ways_to_give_one(video: Path, tmp_path: Path) -> None:
    args = ["ask", str(video), "-q", "why?", "--base-url", "http://127.0.0.1:9/v1", "--timeout", "1"]
    line = assert_one_line(run(*args, home=tmp_path), 5, "cannot reach the VLM endpoint at http://127.0.0.1:9/v1")
    assert "--standin" in line and "VIDEOATLAS_BASE_URL" in line


def test_sim_server_on_a_taken_port_is_one_line(tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = str(taken.getsockname()[1])
        proc = run("standin", "--port", port, home=tmp_path, timeout=60)
    assert_one_line(proc, 2, f"port {port} on 127.0.0.1 is already in use")


@pytest.mark.parametrize(("name", "magic"), [("g.png", b"\x89PNG\r\n\x1a\n"), ("g.jpeg", b"\xff\xd8\xff")])
def test_output_format_follows_the_suffix(video: Path, tmp_path: Path, name: str, magic: bytes) -> None:
    out = tmp_path / "sub" / name
    proc = run("grid", str(video), "--cell", "12", "--cell-px", "64", "-o", str(out), "--json", home=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes().startswith(magic)
    summary = json.loads(proc.stdout)
    assert summary["bytes"] == out.stat().st_size and summary["cell"] == "12"
    assert [p.name for p in out.parent.iterdir()] == [name]  # no temporary file left beside it


def test_interrupted_synth_removes_what_it_wrote(tmp_path: Path) -> None:
    out = tmp_path / "new" / "deeper"
    env = {**os.environ, "VIDEOATLAS_HOME": str(tmp_path / "home")}
    args = [EXE, "synth", "--duration", "1h", "--size", "320x180", "--out", str(out)]
    # Ctrl-C as a terminal sends it: the child starts with SIGINT's default action even when this test
    # runs in a background job, whose children inherit SIGINT ignored (and Python then keeps ignoring it).
    proc = subprocess.Popen(
        args,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        while not list(out.glob(".video.*.partial.mp4")):  # wait until it is writing the video (its own temp file)
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr and stderr.strip().splitlines()[-1] == "videoatlas synth: interrupted"
    assert not (tmp_path / "new").exists()


@pytest.fixture
def no_heavy_imports_script() -> Iterator[str]:
    yield (
        "import sys\n"
        "from videoatlas.cli.main import main\n"
        "try:\n"
        "    code = main(sys.argv[1:])\n"
        "except SystemExit as exc:\n"
        "    code = exc.code\n"
        "heavy = sorted({m.split('.')[0] for m in sys.modules} & {'langgraph', 'langchain_core', 'openai', "
        "'pydantic', 'sqlalchemy', 'matplotlib', 'aiohttp'})\n"
        "sys.stderr.write(f'HEAVY={heavy} CODE={code}\\n')\n"
    )


@pytest.mark.parametrize("command", ["--help", "probe", "grid"])
def test_help_probe_and_grid_do_not_load_the_model_stack(
    video: Path, tmp_path: Path, no_heavy_imports_script: str, command: str
) -> None:
    args = {"--help": ["--help"], "probe": ["probe", str(video)], "grid": ["grid", str(video), "-o", "x.jpg"]}
    proc = subprocess.run(
        [sys.executable, "-c", no_heavy_imports_script, *args[command]],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={**os.environ, "VIDEOATLAS_HOME": str(tmp_path / "home")},
    )
    assert "HEAVY=[] CODE=0" in proc.stderr, proc.stderr


ASK_TYPOS = [
    ("missing-video", ["ask", "{TMP}/nope.mp4", "-q", "why?", "--standin"], 3, "no such file"),
    ("missing-subtitles", ["ask", "{V}", "-q", "why?", "--subtitles", "{TMP}/nope.srt", "--standin"], 4,
     "no such subtitle file"),
    ("unknown-prompt-set", ["ask", "{V}", "-q", "why?", "--prompts", "nosuch", "--standin"], 2,
     "prompt set 'nosuch' is neither a built-in set nor a directory"),
    ("url-without-scheme", ["ask", "{V}", "-q", "why?", "--base-url", "localhost:8000/v1"], 2,
     "must start with http:// or https://"),
]  # fmt: skip


@pytest.mark.parametrize(("args", "code", "fragment"), [c[1:] for c in ASK_TYPOS], ids=[c[0] for c in ASK_TYPOS])
def test_a_typo_in_ask_is_reported_before_the_stand_in_starts_or_the_agent_stack_loads(
    video: Path, tmp_path: Path, args: list[str], code: int, fragment: str
) -> None:
    filled = [a.replace("{V}", str(video)).replace("{TMP}", str(tmp_path)) for a in args]
    script = (
        "import sys\n"
        "from videoatlas.cli.main import main\n"
        "code = main(sys.argv[1:])\n"
        "heavy = sorted({m.split('.')[0] for m in sys.modules} & {'langgraph', 'langchain_core', 'openai', "
        "'sqlalchemy', 'aiohttp', 'rapidocr_onnxruntime'})\n"
        "sys.stdout.write(f'HEAVY={heavy}\\n')\n"
        "raise SystemExit(code)\n"
    )
    env = {**os.environ, "VIDEOATLAS_HOME": str(tmp_path / "home")}
    env.pop("VIDEOATLAS_BASE_URL", None)
    proc = subprocess.run([sys.executable, "-c", script, *filled], capture_output=True, text=True, timeout=120, env=env)
    assert_one_line(proc, code, fragment)  # one line: no "starting the STAND-IN VLM" before it
    assert "HEAVY=[]" in proc.stdout


def test_a_base_url_without_v1_that_gets_404_asks_whether_v1_was_meant(video: Path, tmp_path: Path) -> None:
    from videoatlas_standin.server import RunningServer, StandinServer

    with RunningServer(StandinServer()) as server:
        root = f"http://127.0.0.1:{server.port}"
        proc = run("ask", str(video), "-q", "why?", "--base-url", root, "--timeout", "10", home=tmp_path)
    line = assert_one_line(proc, 5, "HTTP 404")
    assert line.endswith(f"did you mean {root}/v1?"), line


@pytest.mark.parametrize("command", ["ask", "sim-server"])
def test_a_bad_stand_in_thread_count_is_one_line_before_it_starts(video: Path, tmp_path: Path, command: str) -> None:
    env = {**os.environ, "VIDEOATLAS_HOME": str(tmp_path), "VIDEOATLAS_STANDIN_THREADS": "two"}
    args = (
        [EXE, "ask", str(video), "-q", "why?", "--standin"] if command == "ask" else [EXE, "sim-server", "--port", "1"]
    )
    proc = subprocess.run(args, capture_output=True, text=True, timeout=300, env=env)
    assert_one_line(proc, 2, "VIDEOATLAS_STANDIN_THREADS must be a whole number of threads, 1 or more; got 'two'")
    assert json.loads(run("runs", "--json", home=tmp_path).stdout) == []
