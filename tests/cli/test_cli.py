"""The console command as a user runs it: a real process, its stdout, stderr and exit code."""

from __future__ import annotations

import argparse
import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from process_helpers import EXE
from videoatlas.agents.registry import agent_names
from videoatlas.cli.main import EXIT_CODES, build_parser
from videoatlas.errors import VideoAtlasError
from videoatlas_standin.version import STANDIN_MODEL

pytestmark = pytest.mark.e2e


def run(*args: str, env_home: Path | None = None) -> subprocess.CompletedProcess[str]:
    import os

    env = dict(os.environ)
    if env_home is not None:
        env["VIDEOATLAS_HOME"] = str(env_home)
    return subprocess.run([EXE, *args], capture_output=True, text=True, timeout=300, env=env)


def assert_one_line_error(proc: subprocess.CompletedProcess[str], code: int, fragment: str) -> None:
    assert proc.returncode == code, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert fragment in lines[0]


@pytest.mark.parametrize("command", ["probe", "grid", "synth", "demo"])
def test_help(command: str) -> None:
    proc = run(command, "--help")
    assert proc.returncode == 0 and "usage: videoatlas" in proc.stdout


def test_top_level_help_lists_commands() -> None:
    proc = run("--help")
    for name in ("probe", "grid", "synth", "demo"):
        assert name in proc.stdout


def test_probe_json(counter_video: Path) -> None:
    proc = run("probe", str(counter_video), "--json")
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout)
    assert info["frame_count"] == 2000 and info["fps"] == pytest.approx(25.0) and info["has_audio"] is False


def test_probe_reports_the_decodable_duration_of_a_cut_file(cut_mkv: Path) -> None:
    proc = run("probe", str(cut_mkv))
    assert proc.returncode == 0, proc.stderr
    lines = {line.split(":", 1)[0]: line for line in proc.stdout.splitlines()}
    assert "(80.000 s)" in lines["duration"]
    decodable = float(lines["decodable"].split("(")[1].split(" s)")[0])
    assert 30 < decodable < 50


def test_grid_renders_caches_and_reports(counter_video: Path, tmp_path: Path) -> None:
    out = tmp_path / "g.jpg"
    args = (
        "grid",
        str(counter_video),
        "--cell",
        "3",
        "--cell-px",
        "96",
        "--dead",
        "4-4.2",
        "-o",
        str(out),
        "--json",
    )
    first = run(*args, env_home=tmp_path / "home")
    assert first.returncode == 0, first.stderr
    a: dict[str, Any] = json.loads(first.stdout)
    bytes_a = out.read_bytes()
    second = run(*args, env_home=tmp_path / "home")
    b: dict[str, Any] = json.loads(second.stdout)
    assert not a["cache_hit"] and b["cache_hit"]
    assert a["sha256"] == b["sha256"] and out.read_bytes() == bytes_a
    assert a["interval"] == [3.75, 5.0] and a["cell"] == "3" and a["width"] == 768
    assert a["visual_tokens_28px"] == 27 * 27  # 768 px / 28 = 27.4: 27 patches a side


def test_grid_text_output_prints_render_time(counter_video: Path, tmp_path: Path) -> None:
    proc = run("grid", str(counter_video), "--start", "10", "--end", "0:20", "-o", str(tmp_path / "r.jpg"))
    assert proc.returncode == 0, proc.stderr
    assert "render time:" in proc.stdout and "time range 00:10.0-00:20.0" in proc.stdout


def test_grid_prints_subtitles_in_view(synth_video: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    video, _ = synth_video
    proc = run("grid", str(video), "--subtitles", str(video.with_suffix(".srt")), "-o", str(tmp_path / "s.jpg"))
    assert proc.returncode == 0, proc.stderr
    assert "subtitles in view:" in proc.stdout and "about" in proc.stdout


def test_synth_json(tmp_path: Path) -> None:
    proc = run("synth", "--duration", "45s", "--seed", "2", "--size", "320x180", "--out", str(tmp_path), "--json")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    truth = json.loads(Path(result["ground_truth"]).read_text())
    assert Path(result["video"]).is_file() and truth["spec"]["seed"] == 2 and result["questions"] >= 7


@pytest.mark.slow
def test_demo(tmp_path: Path) -> None:
    proc = run("demo", "--out", str(tmp_path / "demo"), "--json")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["answer"] == result["truth"] and result["correct"] is True
    for key in ("root_grid", "scratchpad_1"):
        assert Path(result[key]).parent == tmp_path / "demo" / "runs" / result["run_id"]  # the run's own folder
        with Image.open(result[key]) as picture:  # a picture of frames, not a blank
            brightest = picture.convert("L").getextrema()[1]
            assert min(picture.size) >= 200 and isinstance(brightest, int) and brightest > 128
    assert result["cost"]["calls"] > 3 and result["evidence"]
    assert "STAND-IN" in proc.stderr  # the stand-in is labelled as such wherever it runs


def test_corrupt_stream_renders_with_marked_cells(corrupt_video: Path, tmp_path: Path) -> None:
    proc = run("grid", str(corrupt_video), "--cell-px", "64", "-o", str(tmp_path / "c.jpg"))
    assert proc.returncode == 0, proc.stderr
    assert "marked 'frame unavailable'" in proc.stdout


@pytest.mark.parametrize(
    ("fixture", "code", "fragment"),
    [
        ("missing", 3, "no such file"),
        ("not_a_video", 3, "is not a readable video"),
        ("empty_video", 3, "zero duration"),
        ("audio_only", 3, "no video stream (audio only)"),
    ],
)
def test_bad_videos(request: pytest.FixtureRequest, tmp_path: Path, fixture: str, code: int, fragment: str) -> None:
    path = tmp_path / "missing.mp4" if fixture == "missing" else request.getfixturevalue(fixture)
    assert_one_line_error(run("probe", str(path)), code, fragment)
    assert_one_line_error(run("grid", str(path), "-o", str(tmp_path / "x.jpg")), code, fragment)
    assert not (tmp_path / "x.jpg").exists()


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("--k", "1"), "K must be an integer between 2 and 16"),
        (("--cell", "64"), "out of range"),
        (("--cell", "1/a"), "cell ids separated by '/'"),
        (("--start", "70", "--end", "95"), "outside the video"),
        (("--start", "50", "--end", "40"), "ends before it starts"),
        (("--start", "5"), "--start and --end go together"),
        (("--dead", "9-3"), "ends before it starts"),
        (("--cell-px", "8"), "cell size must be between"),
    ],
)
def test_bad_grid_arguments(counter_video: Path, tmp_path: Path, args: tuple[str, ...], fragment: str) -> None:
    assert_one_line_error(run("grid", str(counter_video), *args, "-o", str(tmp_path / "x.jpg")), 2, fragment)


def test_unreadable_subtitles(counter_video: Path, tmp_path: Path) -> None:
    subs = tmp_path / "s.srt"
    subs.write_text("nothing here")
    proc = run("grid", str(counter_video), "--subtitles", str(subs), "-o", str(tmp_path / "x.jpg"))
    assert_one_line_error(proc, 4, "no subtitle cues")


def test_usage_errors_are_one_line() -> None:
    assert_one_line_error(run("grid"), 2, "the following arguments are required")
    assert_one_line_error(run("synth", "--duration", "soon", "--out", "/tmp/x"), 2, "cannot read 'soon' as a time")
    assert_one_line_error(run("synth", "--duration", "10", "--out", "/tmp/x"), 2, "at least 30 s")


def test_errors_name_the_whole_command(tmp_path: Path) -> None:
    """An error in ``eval check`` says ``videoatlas eval check``, as argparse's own usage errors there do."""
    proc = run("eval", "check", "--dataset", "lvbench", "--root", str(tmp_path / "gone"))
    assert_one_line_error(proc, 2, "does not exist")
    assert proc.stderr.startswith("videoatlas eval check: error: lvbench: dataset root "), proc.stderr
    assert run("probe", str(tmp_path / "gone.mp4")).stderr.startswith("videoatlas probe: error: no such file")


def test_serve_dry_run_builds_the_vllm_command() -> None:
    proc = run("serve", "--model", "Qwen/Qwen2.5-VL-7B-Instruct", "--gpus", "4", "--dry-run", "--json")
    assert proc.returncode == 0, proc.stderr
    cmd = json.loads(proc.stdout)
    assert cmd[:3] == ["vllm", "serve", "Qwen/Qwen2.5-VL-7B-Instruct"]
    assert cmd[cmd.index("--tensor-parallel-size") + 1] == "4"
    assert json.loads(cmd[cmd.index("--limit-mm-per-prompt") + 1]) == {"image": 16, "video": 0}
    for flag in ("--enable-prefix-caching", "--enable-prompt-tokens-details", "--enable-auto-tool-choice"):
        assert flag in cmd
    assert cmd[cmd.index("--tool-call-parser") + 1] == "hermes"


def test_serve_without_vllm_is_a_clear_error() -> None:
    import shutil

    if shutil.which("vllm"):
        pytest.skip("vllm is installed here; this checks the message on machines without it")
    proc = run("serve", "--model", "Qwen/Qwen2.5-VL-7B-Instruct")
    assert proc.returncode == 2 and "pip install 'videoatlas[serve]'" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_sim_server_command_serves_the_protocol() -> None:
    import socket
    import time

    import httpx

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([EXE, "standin", "--port", str(port)], stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(100):
            try:
                models = httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=1).json()
                break
            except httpx.HTTPError:
                time.sleep(0.1)
        else:
            pytest.fail("standin did not start")
        assert models["data"][0]["id"] == STANDIN_MODEL
        reply = httpx.post(
            f"http://127.0.0.1:{port}/v1/chat/completions",
            json={
                "model": STANDIN_MODEL,
                "messages": [{"role": "user", "content": "Question: why? A. x\nB. y"}],
                "response_format": {
                    "type": "json_schema",
                    "json_schema": {
                        "name": "A",
                        "schema": {
                            "type": "object",
                            "properties": {"answer": {"type": "integer", "minimum": 0, "maximum": 1}},
                            "required": ["answer"],
                        },
                    },
                },
            },
            timeout=60,
        ).json()
        assert json.loads(reply["choices"][0]["message"]["content"])["answer"] in (0, 1)
        assert reply["usage"]["prompt_tokens"] > 0
    finally:
        server.terminate()
        server.wait(timeout=10)
    assert "STAND-IN VLM" in (server.stderr.read() if server.stderr else "")


def test_bad_fault_spec_is_one_line() -> None:
    assert_one_line_error(run("standin", "--fault", "meteor=0.5"), 2, "unknown fault")
    assert_one_line_error(run("standin", "--fault", "http500=lots"), 2, "NAME=RATE")


def _options(parser: argparse.ArgumentParser, prefix: str) -> Iterator[tuple[str, argparse.Action]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from _options(child, f"{prefix} {name}")
        elif not isinstance(action, argparse._HelpAction | argparse._VersionAction):
            yield prefix, action


def test_every_option_of_every_command_has_help() -> None:
    parser = build_parser(agent_settings=True)
    seen = list(_options(parser, "videoatlas"))
    assert len({command for command, _ in seen}) >= 15  # every command, eval's included
    missing = [f"{command} {action.option_strings or action.dest}" for command, action in seen if not action.help]
    assert missing == []


def _help_pages(parser: argparse.ArgumentParser, prefix: str) -> Iterator[tuple[str, str]]:
    yield prefix, parser.format_help()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from _help_pages(child, f"{prefix} {name}")


def test_help_texts_say_what_the_code_does() -> None:
    pages = dict(_help_pages(build_parser(agent_settings=True), "videoatlas"))
    assert [command for command, page in pages.items() if "`" in page] == []  # plain text, no reST
    ask = pages["videoatlas ask"]
    assert " V " not in ask and "--workers N " in ask and "--traversal auto|bfs|dfs" in ask and "--frames N" in ask
    top = pages["videoatlas"]
    assert "Video-RLM agent" not in top and "(--agent)" in top  # ask offers every agent
    assert "0 to 6" in pages["videoatlas demo"]
    assert "(default: the stand-in's own id, videoatlas-standin-...)" in " ".join(pages["videoatlas standin"].split())


def documentation() -> dict[str, str]:
    """The README and every page of the manual in docs/, by path."""
    root = Path(__file__).resolve().parents[2]
    pages = [root / "README.md", *sorted((root / "docs").glob("*.md"))]
    return {str(page.relative_to(root)): page.read_text(encoding="utf-8") for page in pages}


def test_docs_name_every_agent_and_the_folders_that_exist() -> None:
    root = Path(__file__).resolve().parents[2]
    docs = documentation()
    synopsis = docs["docs/commands.md"]
    eval_run = synopsis[synopsis.index("videoatlas eval run") : synopsis.index("videoatlas eval check")]
    listed = eval_run.split("[--agent ", 1)[1].split("]", 1)[0].split("|")
    assert sorted(listed) == sorted(agent_names())
    for page, text in docs.items():  # every list of the agents, anywhere, names them all
        for alternatives in re.findall(r"--agent ([\w-]+(?:\|[\w-]+)+)", text):
            assert sorted(alternatives.split("|")) == sorted(agent_names()), (page, alternatives)
    for folder in ("agents/video_rlm/graph.py", "agents/video_rlm/nodes/", "agents/video_rlm/state/"):
        assert f"`{folder}`" in docs["docs/agents.md"] and (root / "src" / "videoatlas" / folder).exists(), folder


@pytest.mark.parametrize(("command", "option"), [("ask", "--choice"), ("grid", "--dead"), ("standin", "--fault")])
def test_repeatable_options_say_so(command: str, option: str) -> None:
    parser = build_parser(agent_settings=True)
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[command]
    action = next(a for a in sub._actions if option in a.option_strings)
    assert isinstance(action, argparse._AppendAction) and "repeat" in (action.help or "")


def test_every_exit_code_is_documented() -> None:
    def kinds(cls: type[VideoAtlasError]) -> Iterator[type[VideoAtlasError]]:
        yield cls
        for sub in cls.__subclasses__():
            yield from kinds(sub)

    documented = {code for code, _ in EXIT_CODES}
    assert {kind.exit_code for kind in kinds(VideoAtlasError)} <= documented
    help_text = run("--help").stdout
    docs = documentation()
    tables = {page: text for page, text in docs.items() if "| code | meaning |" in text}
    assert set(tables) >= {"README.md", "docs/reliability.md"}
    for code, _ in EXIT_CODES:
        assert f"  {code:>3}  " in help_text
        for page, text in tables.items():
            assert f"| {code} |" in text, (page, code)
    for page, text in tables.items():  # no code the command does not use
        assert {int(c) for c in re.findall(r"^\| (\d+) \|", text, re.M)} == documented, page


def test_logging_options_work_before_and_after_the_command(counter_video: Path) -> None:
    for args in (("--log-level", "debug", "probe", str(counter_video)), ("probe", str(counter_video), "--log-json")):
        proc = run(*args)
        assert proc.returncode == 0, proc.stderr


def test_ask_stream_json_prints_each_event_as_it_happens_then_the_result(
    synth_video: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    import os

    video, truth = synth_video
    question = next(q for q in truth["questions"] if q["kind"] == "needle_in_chapter")
    cmd = [EXE, "ask", str(video), "-q", question["question"], "--standin", "--no-persist", "--stream-json"]
    cmd += ["--workers", "2", "--rounds", "2", "--k", "4", "--cell-px", "96"]
    for choice in question["choices"]:
        cmd += ["-c", choice]
    env = {**os.environ, "VIDEOATLAS_HOME": str(tmp_path)}
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    first = json.loads(proc.stdout.readline())
    running = proc.poll() is None  # the first event came while the run was still going
    rest, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    events = [first, *(json.loads(line) for line in rest.splitlines())]
    assert first["event"] == "run_started" and running
    assert {"search_task_done", "worker_step", "round_done"} <= {e["event"] for e in events}
    result = events[-1]
    assert result["event"] == "result" and result["run_id"] == first["run_id"]
    assert result["answer"] in question["choices"]


@pytest.mark.parametrize(
    ("agent", "nodes"),
    [
        ("video-rlm", ["global_probe", "worker", "merge", "decide"]),
        ("videoseek", ["plan", "look"]),
        ("videoarm", ["control", "act", "answer"]),
        ("uniform", []),
    ],
)
def test_graph_prints_each_agents_graph_as_mermaid(agent: str, nodes: list[str]) -> None:
    proc = run("graph", "--agent", agent)
    assert proc.returncode == 0, proc.stderr
    assert "graph TD;" in proc.stdout and "__start__" in proc.stdout and "__end__" in proc.stdout
    for node in nodes:
        assert f"\t{node}(" in proc.stdout or f"subgraph {node}" in proc.stdout, node


def test_graph_writes_mermaid_and_a_png_only_where_it_can_be_drawn(tmp_path: Path) -> None:
    import importlib.util

    text = run("graph", "-o", str(tmp_path / "g.mmd"))
    assert text.returncode == 0 and "graph TD;" in (tmp_path / "g.mmd").read_text()
    png = run("graph", "-o", str(tmp_path / "g.png"))
    if importlib.util.find_spec("pygraphviz") is not None:
        assert png.returncode == 0 and (tmp_path / "g.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    else:
        assert_one_line_error(png, 2, "a PNG needs pygraphviz")
        assert not (tmp_path / "g.png").exists()
