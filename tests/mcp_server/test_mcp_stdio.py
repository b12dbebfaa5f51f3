"""``videoatlas mcp`` over stdio, driven by the MCP SDK's own client: every tool, and bad input that leaves it up."""

from __future__ import annotations

import base64
import io
import os
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types import ImageContent, TextContent
from PIL import Image

from agent_helpers import ScriptedChat, default_reply, step
from db_helpers import sqlite_url
from process_helpers import EXE
from videoatlas.llm.settings import EndpointSettings
from videoatlas.runs import run_question
from videoatlas.runtime.context import RunConfig

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SMALL = {"workers": 2, "rounds": 1, "k": 4, "cell_px": 160}
"""A run of about ten calls on small grids."""


def filing(name: str, text: str, schema: dict[str, Any]) -> Any:
    """A scripted model whose workers file cell 3 of what they first see, then finish."""
    if name == "WorkerStep":
        if "(nothing yet)" in text:
            return step("ADD_TO_SCRATCHPAD", [3], [{"cell": 3, "description": "a white card", "confidence": 0.8}])
        return step("FINISHED")
    return default_reply(name, text, schema)


def text_of(result: Any) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, TextContent))


async def test_stdio_server_answers_reads_back_and_refuses_bad_input(
    synth_video: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    video, truth = synth_video
    question = next(q for q in truth["questions"] if q["kind"] == "needle_in_chapter")
    db = sqlite_url(tmp_path / "runs.db")
    params = StdioServerParameters(
        command=EXE,
        args=["mcp", "--root", str(video.parent), "--standin", "--db", db],
        env={**os.environ, "VIDEOATLAS_HOME": str(tmp_path / "home")},
    )
    async with Client(params, read_timeout_seconds=300) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) == {"ask", "resume", "list_runs", "trace", "evidence_frames", "probe"}
        assert "speech" in tools["ask"].input_schema["properties"]  # --speech auto|off|full, as on the command line

        probed = await client.call_tool("probe", {"path": str(video)})
        assert not probed.is_error, text_of(probed)
        assert probed.structured_content is not None
        assert probed.structured_content["duration"] == pytest.approx(180, abs=1)

        # Bad input: one line each, and the server goes on answering.
        outside = await client.call_tool("probe", {"path": "/etc/hostname"})
        assert outside.is_error and "outside the folders this server may open" in text_of(outside)
        sneaky = await client.call_tool("probe", {"path": f"{video.parent}/../../etc/hostname"})
        assert sneaky.is_error and "outside the folders" in text_of(sneaky)
        missing = await client.call_tool("probe", {"path": str(video.parent / "nope.mp4")})
        assert missing.is_error and "no such file" in text_of(missing)
        bad_option = await client.call_tool(
            "ask", {"path": str(video), "question": "what?", "options": {"no_such_knob": 1}}
        )
        assert bad_option.is_error and "not an option of the video-rlm agent: no_such_knob" in text_of(bad_option)
        bad_agent = await client.call_tool("ask", {"path": str(video), "question": "what?", "agent": "nobody"})
        assert bad_agent.is_error and "unknown agent 'nobody'" in text_of(bad_agent)
        loud = await client.call_tool("ask", {"path": str(video), "question": "what?", "speech": "loud"})
        assert loud.is_error and "speech" in text_of(loud)
        for result in (outside, missing, bad_option, bad_agent):
            assert "Traceback" not in text_of(result) and len(text_of(result).splitlines()) == 1

        seen: list[tuple[float, str | None]] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            seen.append((progress, message))

        answered = await client.call_tool(
            "ask",
            {"path": str(video), "question": question["question"], "choices": question["choices"], "options": SMALL},
            progress_callback=on_progress,
        )
        assert not answered.is_error, text_of(answered)
        result = answered.structured_content
        assert result is not None
        run_id = result["run_id"]
        assert result["answer"] in question["choices"]
        assert all(0 <= e["time"] <= 180 for e in result["evidence"])
        assert seen[0] == (1, f"run {run_id} started")
        assert len(seen) >= 3 and [v for v, _ in seen] == sorted(v for v, _ in seen)

        runs = await client.call_tool("list_runs", {})
        assert runs.structured_content is not None
        [row] = [r for r in runs.structured_content["result"] if r["id"] == run_id]
        assert row["status"] == "finished" and row["answer"] == result["answer"]
        assert (await client.call_tool("list_runs", {"status": "bogus"})).is_error
        of_rlm = await client.call_tool("list_runs", {"agent": "video-rlm"})
        assert of_rlm.structured_content is not None
        assert [r["id"] for r in of_rlm.structured_content["result"]] == [run_id]
        of_eea = await client.call_tool("list_runs", {"agent": "eea"})
        assert of_eea.structured_content is not None and of_eea.structured_content["result"] == []
        assert "unknown agent 'gpt'" in text_of(await client.call_tool("list_runs", {"agent": "gpt"}))

        trace = await client.call_tool("trace", {"run_id": run_id})
        assert trace.structured_content is not None
        assert trace.structured_content["run"]["answer"] == result["answer"]
        assert trace.structured_content["calls"]["count"] == result["cost"]["calls"]
        assert "no run 'nope'" in text_of(await client.call_tool("trace", {"run_id": "nope"}))

        # evidence_frames shows a stored run's evidence: a run whose worker filed some (a scripted model's: whether
        # the stand-in's run files any is its choice), written to the store the server reads.
        filed = await run_question(
            video, question["question"], question["choices"], RunConfig.of(**SMALL), EndpointSettings(model="scripted"),
            chat_model=ScriptedChat(script=filing), db_url=db, run_id="filed",
        )  # fmt: skip
        frames = await client.call_tool("evidence_frames", {"run_id": "filed", "labels": ["A"], "size": 256})
        assert not frames.is_error, text_of(frames)
        images = [c for c in frames.content if isinstance(c, ImageContent)]
        assert len(images) == 1 and images[0].mime_type == "image/png"
        picture = Image.open(io.BytesIO(base64.b64decode(images[0].data)))
        assert max(picture.size) <= 256 and picture.size[0] > 16
        assert text_of(frames).startswith(f"A at {filed.evidence[0].time:.2f}s")
        no_label = await client.call_tool("evidence_frames", {"run_id": run_id, "labels": ["ZZ"]})
        assert no_label.is_error and "has no evidence ZZ" in text_of(no_label)
