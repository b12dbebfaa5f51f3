"""Every entry (ask, resume, demo, API, MCP, both eval harnesses) reaches the one door; one ``ask`` checks once.

The run frame (:func:`videoatlas.runs.run_question`) is wrapped: each call records the functions on its
stack, and runs with a scripted chat model in place of the endpoint's client, so every entry runs a
real question (real video, real SQLite store, real checkpoints) without a server's answers. The resumed
runs are the interrupted Video-RLM run of ``tests/fixtures/e9ceea9`` (see its README).
"""

from __future__ import annotations

import inspect
import shutil
import sqlite3
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_helpers import ScriptedChat, default_reply
from db_helpers import sqlite_url
from lmms_helpers import synthetic_items
from videoatlas import api, limits
from videoatlas.agents.uniform.settings import UniformSettings
from videoatlas.agents.video_rlm.settings import VideoRLMSettings
from videoatlas.cli.main import main
from videoatlas.environment import files
from videoatlas.evals.items import EvalItem
from videoatlas.evals.runner import run_eval
from videoatlas.evals.spec import EvalSpec
from videoatlas.llm.settings import EndpointSettings
from videoatlas.lmms.session import Session
from videoatlas.lmms.settings import parse_model_args
from videoatlas.mcp import tools
from videoatlas.mcp.roots import Roots
from videoatlas.runtime.config import RunConfig
from videoatlas_standin.server import RunningServer, StandinServer

pytestmark = pytest.mark.e2e

FIXTURES = Path(__file__).parents[1] / "fixtures" / "e9ceea9"
QUESTION, CHOICES = "What number does the counter show first?", ["zero", "one"]
UNIFORM = ["--agent", "uniform", "--frames", "4", "--k", "2", "--cell-px", "64"]

Frame = tuple[str, str]
"""(module, function) of one frame on the run frame's stack."""


def _reply(name: str, text: str, schema: dict[str, Any]) -> dict[str, Any]:
    return default_reply(name, text, schema)


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[set[Frame]]:
    """The stack of each call of the run frame; the frame runs with the scripted model."""
    import videoatlas.runs as runs

    real = runs.run_question
    seen: list[set[Frame]] = []

    async def frame(*args: Any, **kwargs: Any) -> Any:
        seen.append({(f.frame.f_globals.get("__name__", ""), f.function) for f in inspect.stack()})
        kwargs["chat_model"] = ScriptedChat(script=_reply)
        return await real(*args, **kwargs)

    monkeypatch.setattr(runs, "run_question", frame)
    return seen


@pytest.fixture
def old_db(tmp_path: Path) -> Callable[[str], str]:
    """A fresh copy of the fixture database (named ``name``), its runs pointed at the copied video."""
    shutil.copy(FIXTURES / "counter.mp4", tmp_path / "counter.mp4")

    def copy(name: str) -> str:
        path = tmp_path / f"{name}.db"
        shutil.copy(FIXTURES / "runs.db", path)
        with sqlite3.connect(path) as conn:
            conn.execute("UPDATE va_runs SET video_path = ?", (str(tmp_path / "counter.mp4"),))
        return sqlite_url(path)

    return copy


@pytest.fixture
def standin() -> Iterator[RunningServer]:
    with RunningServer(StandinServer()) as server:
        yield server


def _through_the_door(stack: set[Frame], entry: Frame) -> bool:
    return entry in stack and ("videoatlas.request", "answer") in stack


def _status(db: str, run_id: str) -> str:
    path = db.removeprefix("sqlite:///")
    with sqlite3.connect(path) as conn:
        (status,) = conn.execute("SELECT status FROM va_runs WHERE id = ?", (run_id,)).fetchone()
    return str(status)


def test_every_entry_reaches_the_same_door(
    calls: list[set[Frame]],
    old_db: Callable[[str], str],
    standin: RunningServer,
    tmp_path: Path,
    tmp_path_factory: pytest.TempPathFactory,
    capsys: pytest.CaptureFixture[str],
) -> None:
    video = str(FIXTURES / "counter.mp4")
    endpoint = ["--base-url", "http://vlm.example:9000/v1", "--model", "scripted-vlm"]
    db = sqlite_url(tmp_path / "runs.db")
    expected: list[Frame] = []

    # CLI ask and resume
    assert main(["ask", video, "-q", QUESTION, "-c", "zero", "-c", "one", *UNIFORM, *endpoint, "--db", db]) == 0
    expected.append(("videoatlas.cli.ask", "cmd_ask"))
    cli_db = old_db("cli")
    assert main(["resume", "rlm-stopped", "--db", cli_db, "--quiet"]) == 0
    expected.append(("videoatlas.cli.ask", "cmd_resume"))
    assert _status(cli_db, "rlm-stopped") == "finished"
    assert main(["demo", "--out", str(tmp_path / "demo"), "--json"]) == 0  # its 10-minute video, the stand-in up
    expected.append(("videoatlas.cli.ask", "cmd_demo"))

    # The Python API
    settings = EndpointSettings(model="scripted-vlm", base_url="http://vlm.example:9000/v1")
    asked = api.ask(video, QUESTION, CHOICES, agent="uniform", frames=4, k=2, cell_px=64, endpoint=settings, db=db)
    assert asked.answer == "zero" and asked.source == "run"
    expected.append(("videoatlas.api", "aask"))
    api_db = old_db("api")
    resumed = api.resume("rlm-stopped", db=api_db)
    assert resumed.source == "resumed" and _status(api_db, "rlm-stopped") == "finished"
    expected.append(("videoatlas.api", "aresume"))

    # MCP ask and resume
    import asyncio

    mcp_db = old_db("mcp")
    service = tools.Service(settings, Roots.of([str(FIXTURES), str(tmp_path)]), mcp_db)
    out = asyncio.run(tools.ask(service, video, QUESTION, CHOICES, "uniform", None, None, {"frames": 4}, None))
    assert out["answer"] == "zero"
    expected.append(("videoatlas.mcp.tools", "ask"))
    out = asyncio.run(tools.resume(service, "rlm-stopped", None))
    assert out["run_id"] == "rlm-stopped" and _status(mcp_db, "rlm-stopped") == "finished"
    expected.append(("videoatlas.mcp.tools", "resume"))

    # eval run and lmms-eval, on one question of the one-minute synthetic suite, on the stand-in's model id
    root = tmp_path_factory.mktemp("suite")
    item: EvalItem = synthetic_items(root, 1)[0]
    config = RunConfig.of(agent="uniform", frames=4, k=2, cell_px=64)
    live = EndpointSettings(base_url=standin.base_url)
    spec = EvalSpec(
        dataset="synthetic", root=str(root), out=str(tmp_path / "ev"), config=config, limit=1,
        durations=[60.0], styles=["chapters"], db_url=db, concurrency=1,
    )  # fmt: skip
    outcome = asyncio.run(run_eval(spec, live))
    assert outcome.progress.errors == 0 and outcome.progress.done == 1
    expected.append(("videoatlas.evals.runner", "_answer"))  # each question is a task of its own
    session = Session(parse_model_args({"agent": "uniform", "frames": 4, "base_url": standin.base_url, "db": db}))
    session.open()
    try:
        assert session.answer([item])[0][-1] in "ABCD"  # after the run id the harness records
    finally:
        session.close()
    expected.append(("videoatlas.lmms.session", "worker"))  # the session's question workers
    capsys.readouterr()

    assert len(calls) == len(expected), [sorted(c) for c in calls]
    for stack, entry in zip(calls, expected, strict=True):
        assert _through_the_door(stack, entry), (entry, sorted(stack))
    harnesses = [
        stack for stack, (module, _) in zip(calls, expected, strict=True) if "eval" in module or "lmms" in module
    ]
    assert len(harnesses) == 2 and all(("videoatlas.evals.answering", "answer_item") in s for s in harnesses)


def test_one_ask_runs_each_check_once(
    calls: list[set[Frame]], monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    counts: Counter[str] = Counter()

    def counted(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            counts[name] += 1
            return function(*args, **kwargs)

        return wrapper

    # Wrapped where they are defined, so every caller is counted, however it imported them.
    monkeypatch.setattr(limits, "question_problem", counted("question", limits.question_problem))
    monkeypatch.setattr(limits, "grid_problem", counted("grid", limits.grid_problem))
    monkeypatch.setattr(files, "check_file", counted("video file", files.check_file))
    for model in (UniformSettings, VideoRLMSettings):
        monkeypatch.setattr(model, "check_images", counted("pictures", model.check_images))
    from videoatlas.agents import registry

    monkeypatch.setattr(registry, "check_prompts", counted("prompts", registry.check_prompts))
    video = str(FIXTURES / "counter.mp4")
    db = sqlite_url(tmp_path / "runs.db")
    args = ["ask", video, "-q", QUESTION, "-c", "zero", "-c", "one", *UNIFORM, "--db", db]
    assert main([*args, "--base-url", "http://vlm.example:9000/v1", "--model", "scripted-vlm", "--quiet"]) == 0
    capsys.readouterr()
    assert len(calls) == 1
    assert counts == {"question": 1, "grid": 1, "video file": 1, "pictures": 1, "prompts": 1}
