"""``langgraph.json``: the agents on LangGraph's in-memory Agent Server (``langgraph dev``), over its HTTP API.

The server runs as its own process on a loopback port, with the stand-in as the endpoint; a client
(LangGraph's SDK) makes a thread, runs a question on it, and reads back the final state and the
thread's node-by-node history, as LangGraph Studio does.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_sync_client
from langgraph_sdk.client import SyncLangGraphClient

from process_helpers import StandIn

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
LANGGRAPH = str(Path(sys.executable).with_name("langgraph"))
SMALL = {"k": 4, "cell_px": 160, "rounds": 2, "workers": 2}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SyncLangGraphClient]:
    """``langgraph dev`` on our ``langgraph.json``, the stand-in its model endpoint."""
    standin = StandIn(latency=0.0)
    work = tmp_path_factory.mktemp("agent-server")  # the in-memory server keeps its files in its folder
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "VIDEOATLAS_BASE_URL": standin.url + "/v1", "VIDEOATLAS_HOME": str(work)}
    cmd = [LANGGRAPH, "dev", "--config", str(ROOT / "langgraph.json"), "--port", str(port), "--no-browser"]
    proc = subprocess.Popen([*cmd, "--no-reload"], cwd=work, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, proc.communicate()[1][-3000:]
            assert time.monotonic() < deadline, "langgraph dev did not start in 120 s"
            try:
                if httpx.get(url + "/ok", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        yield get_sync_client(url=url, timeout=300.0)  # no run may hang the suite
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        standin.stop()


def test_a_question_runs_on_a_thread_whose_state_and_node_history_read_back(
    server: SyncLangGraphClient, synth_video: tuple[Path, dict[str, Any]]
) -> None:
    video, truth = synth_video
    question = next(q for q in truth["questions"] if q["kind"] == "needle_in_chapter")
    [assistant] = server.assistants.search(graph_id="video-rlm")
    context_form = server.assistants.get_schemas(assistant["assistant_id"])["context_schema"]
    assert context_form is not None
    assert context_form["required"] == ["video"]
    assert {"k", "cell_px", "prompts", "rounds", "workers"} <= set(context_form["properties"])

    thread = server.threads.create()
    done = server.runs.wait(
        thread["thread_id"],
        "video-rlm",
        input={"question": question["question"], "choices": question["choices"]},
        context={"video": str(video), **SMALL},
    )
    assert isinstance(done, dict)
    assert done["answer"] in question["choices"]  # which one is the stand-in's choice
    assert done["cost"]["calls"] >= 4
    assert all(0.0 <= e["start"] <= e["end"] <= truth["duration"] for e in done["evidence"])
    assert all(0.0 <= e["time"] <= truth["duration"] for e in done["evidence"])

    state = server.threads.get_state(thread["thread_id"])
    values = state["values"]
    assert isinstance(values, dict) and state["next"] == []
    assert values["answer"] == done["answer"] and 1 <= values["round"] <= SMALL["rounds"]
    history = server.threads.get_history(thread["thread_id"], limit=200)
    steps = [sorted(task["name"] for task in checkpoint["tasks"]) for checkpoint in reversed(history)]
    stepped = {name for step in steps for name in step}
    assert {"extract_search_task", "choose_traversal", "worker", "merge", "analyze_uncertainty", "decide"} <= stepped
    assert ["worker", "worker"] in steps  # the round's two workers ran side by side
    assert steps.index(["choose_traversal", "extract_search_task"]) < steps.index(["decide"])
    assert server.threads.get(thread["thread_id"])["status"] == "idle"


def test_a_run_on_a_missing_video_fails_with_its_reason_and_the_thread_stays_usable(
    server: SyncLangGraphClient, synth_video: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    video, truth = synth_video
    question = truth["questions"][0]
    thread = server.threads.create()
    inputs = {"question": question["question"], "choices": question["choices"]}
    missing = tmp_path / "nowhere.mp4"
    with pytest.raises(Exception, match=r"ValueError: no such file: \S*nowhere\.mp4$"):
        server.runs.wait(thread["thread_id"], "uniform", input=inputs, context={"video": str(missing)})
    assert server.threads.get(thread["thread_id"])["status"] == "error"
    with pytest.raises(Exception, match=r"ValueError: grid size K must be an integer between 2 and 16, got 99"):
        server.runs.wait(thread["thread_id"], "uniform", input=inputs, context={"video": str(video), "k": 99})

    grid = {"k": SMALL["k"], "cell_px": SMALL["cell_px"]}
    done = server.runs.wait(thread["thread_id"], "uniform", input=inputs, context={"video": str(video), **grid})
    assert isinstance(done, dict) and done["answer"] in question["choices"]


@pytest.mark.unit
def test_langgraph_json_names_every_agent_of_the_registry() -> None:
    from videoatlas.agents.registry import agent_names
    from videoatlas.served import graphs

    spec = json.loads((ROOT / "langgraph.json").read_text())
    assert set(spec["graphs"]) == set(agent_names())
    for name, target in spec["graphs"].items():
        module, variable = target.split(":")
        assert module == "videoatlas.served.graphs"
        assert getattr(graphs, variable) is graphs.FACTORIES[name]
