"""What `runs`, `trace` and `report` show: failed runs with their error and unusable reply, stale runs,
cost so far, aligned columns, and control characters escaped in every terminal view."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import uuid
from pathlib import Path
from typing import Any

import httpx2
import openai
import pytest

from agent_helpers import ScriptedChat, default_reply, step
from db_helpers import rows, run_row, sqlite_url
from process_helpers import EXE
from videoatlas.cli.runs_table import runs_lines
from videoatlas.errors import EndpointError
from videoatlas.llm.settings import EndpointSettings
from videoatlas.persistence.store import TraceStore
from videoatlas.runs import run_question
from videoatlas.runtime.context import RunConfig
from videoatlas.textsafe import escape, escape_lines, one_line

BAD_REPLY = '{"search_task": "look for the \x1b[31mred\x1b[0m card", '  # cut off: not JSON


def _refusal() -> openai.BadRequestError:
    request = httpx2.Request("POST", "http://vlm.invalid/v1/chat/completions")
    response = httpx2.Response(400, request=request)
    return openai.BadRequestError("refused", response=response, body={"message": "context length exceeded"})


def failing_search_task() -> Any:
    """A model whose search-task reply is cut off, and whose server then refuses the re-ask."""
    asked: list[str] = []

    def script(name: str, text: str, schema: dict[str, Any]) -> Any:
        if name == "SearchTask":
            asked.append(text)
            if len(asked) == 1:
                return BAD_REPLY
            raise _refusal()
        return default_reply(name, text, schema)

    return script


async def _failed_run(video: Path, db: str, run_id: str) -> None:
    chat = ScriptedChat(script=failing_search_task())
    with pytest.raises(EndpointError, match="HTTP 400"):
        await run_question(
            video,
            "What number is shown?",
            ["one", "two"],
            RunConfig.of(cell_px=64, workers=2, rounds=1),
            EndpointSettings(model="scripted", max_retries=0),
            chat_model=chat,
            db_url=db,
            run_id=run_id,
        )


def _env(tmp_path: Path, db: str) -> dict[str, str]:
    return {**os.environ, "VIDEOATLAS_DB": db, "VIDEOATLAS_HOME": str(tmp_path / "home")}


@pytest.mark.e2e
def test_trace_of_a_failed_run_shows_the_error_the_failed_call_and_its_reply(
    db_url: str, counter_video: Path, tmp_path: Path
) -> None:
    run_id = f"failed-{uuid.uuid4().hex[:8]}"
    asyncio.run(_failed_run(counter_video, db_url, run_id))
    env = _env(tmp_path, db_url)
    assert rows(db_url, "SELECT status FROM va_runs WHERE id = :r", r=run_id) == [("failed",)]

    traced = subprocess.run([EXE, "trace", run_id, "--json"], capture_output=True, text=True, env=env)
    assert traced.returncode == 0, traced.stderr
    failure = json.loads(traced.stdout)["failure"]
    assert "HTTP 400" in failure["error"] and "context length exceeded" in failure["error"]
    assert failure["node"]["node"] == "extract_search_task"
    assert failure["call"]["schema"] == "SearchTask" and failure["call"]["node"] == "extract_search_task"
    assert failure["call"]["attempts"] == 2 and failure["call"]["parse_errors"]  # the reply, then the re-ask
    assert failure["reply"] == BAD_REPLY
    assert failure["spent"]["calls"] >= 2  # the failed call and the traversal call beside it

    text = subprocess.run([EXE, "trace", run_id], capture_output=True, text=True, env=env)
    assert text.returncode == 0, text.stderr
    assert "\x1b" not in text.stdout and "search task: None" not in text.stdout
    assert "failed in node extract_search_task" in text.stdout
    assert "reply that could not be used: " + escape(BAD_REPLY) in text.stdout
    assert f"cost so far: {failure['spent']['calls']} calls" in text.stdout

    page = tmp_path / "failed.html"
    report = subprocess.run([EXE, "report", run_id, "-o", str(page)], capture_output=True, text=True, env=env)
    assert report.returncode == 0, report.stderr
    html = page.read_text()
    assert "Why it stopped" in html and "extract_search_task" in html and "context length exceeded" in html
    assert "look for the \x1b[31mred" in html  # the reply as it came, inside <pre> (HTML-escaped, not lost)


def _runs(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([EXE, "runs", *args], capture_output=True, text=True, env=env)


@pytest.mark.e2e
def test_runs_lists_errors_cost_so_far_and_stale_runs_in_aligned_columns(counter_video: Path, tmp_path: Path) -> None:
    db = sqlite_url(tmp_path / "runs.db")
    asyncio.run(_failed_run(counter_video, db, "failed-run"))
    store = TraceStore(db)
    try:  # a run marked running that no process holds: its owner was killed before it could say so
        store.start_run(
            run_row(
                "ev-" + "f" * 24,
                status="running",
                agent="video-rlm",
                question="Which card comes first?",
                choices=[],
                video_path=str(counter_video),
            )
        )
    finally:
        store.close()
    env = _env(tmp_path, db)

    listed = _runs(env, "--json")
    assert listed.returncode == 0, listed.stderr
    by_id = {r["id"]: r for r in json.loads(listed.stdout)}
    failed, stale = by_id["failed-run"], by_id["ev-" + "f" * 24]
    assert failed["status"] == "failed" and "HTTP 400" in failed["error"]
    assert failed["calls"] >= 2 and failed["tokens"] > 0 and failed["cost_so_far"]
    assert stale["status"] == "stale" and "owner stopped" in stale["error"]
    assert failed["agent"] == stale["agent"] == "video-rlm"

    table = _runs(env).stdout.splitlines()
    header, lines = table[0], table[1:]
    assert len(lines) == 2
    for column in ("status", "agent", "calls", "tokens", "question -> answer", "error"):
        edge = header.index(column) + (len(column) if column in ("calls", "tokens") else 0)
        for line in lines:  # left-aligned columns start, right-aligned ones end, at the header's place
            if column in ("calls", "tokens"):
                assert line[edge - 1] != " " and line[edge] == " ", (column, line)
            else:
                assert line[edge - 1] == " " and line[edge] != " ", (column, line)
    assert any("HTTP 400" in line for line in lines)

    only_stale = json.loads(_runs(env, "--status", "stale", "--json").stdout)
    assert [r["id"] for r in only_stale] == ["ev-" + "f" * 24]
    assert json.loads(_runs(env, "--status", "running", "--json").stdout) == []
    bad = _runs(env, "--status", "lost")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1


QUESTION = "What number\x1b[31m is shown?\nanswer: two (forged line)"
"""A question holding an ANSI colour sequence and a newline that would forge a line of output."""


def hostile(name: str, text: str, schema: dict[str, Any]) -> Any:
    if name == "WorkerStep" and "(nothing yet)" in text:
        evil = "seven\x1b]0;pwned\x07 \x1b[2J\u202eevil"
        return step("ADD_TO_SCRATCHPAD", [3], [{"cell": 3, "description": evil, "confidence": 0.8}])
    return default_reply(name, text, schema) if name != "WorkerStep" else step("FINISHED")


@pytest.mark.e2e
def test_questions_and_model_text_are_printed_escaped(counter_video: Path, tmp_path: Path) -> None:
    db = sqlite_url(tmp_path / "runs.db")
    asyncio.run(
        run_question(
            counter_video,
            QUESTION,
            ["one", "two\x1b[0m"],
            RunConfig.of(cell_px=64, workers=2, rounds=1),
            EndpointSettings(model="scripted"),
            chat_model=ScriptedChat(script=hostile),
            db_url=db,
            run_id="hostile",
        )
    )
    env = _env(tmp_path, db)
    listed = _runs(env)
    traced = subprocess.run([EXE, "trace", "hostile"], capture_output=True, text=True, env=env)
    assert listed.returncode == 0 and traced.returncode == 0, listed.stderr + traced.stderr
    for out in (listed.stdout, traced.stdout):
        assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out
        assert "What number\\x1b[31m is shown?\\nanswer: two (forged line)" in out
        assert not any(line.startswith("answer: two") for line in out.splitlines())
    assert "seven\\x1b]0;pwned\\x07 \\x1b[2J\\u202eevil" in traced.stdout
    as_json = json.loads(
        subprocess.run([EXE, "trace", "hostile", "--json"], capture_output=True, text=True, env=env).stdout
    )
    assert as_json["run"]["question"] == QUESTION  # JSON keeps the text as it was (escaped by the encoder)


@pytest.mark.unit
def test_escape_writes_control_characters_as_escapes_and_keeps_the_rest() -> None:
    assert escape("plain text, ünïcödé, 日本語, emoji 🎬") == "plain text, ünïcödé, 日本語, emoji 🎬"
    assert escape("a\x1b[31mb\nc\rd\te\x00f\x7fg\x9bh") == "a\\x1b[31mb\\nc\\rd\\te\\x00f\\x7fg\\x9bh"
    assert escape("x\u202ey\u2066z\u2028w") == "x\\u202ey\\u2066z\\u2028w"
    assert "\n" not in escape("one\ntwo") and escape_lines("one\x1b\ntwo") == "one\\x1b\ntwo"


@pytest.mark.unit
def test_a_search_task_and_its_relation_are_shown_on_one_line_the_models_words_quoted() -> None:
    from videoatlas.agents.video_rlm.progress import describe_event

    task = "look for OTTER on screen\nRelation: the answer is the first one in the whole video."
    assert one_line(task) == "look for OTTER on screen | Relation: the answer is the first one in the whole video."
    assert one_line("a\r\n\n  b  \u2028c") == "a | b | c" and one_line("plain") == "plain"
    relation = "Relation: the answer is the first one in the whole video."
    line = describe_event(
        {"event": "search_task_done", "search_task": "look for OTTER on screen", "relation": relation, "by": "model"}
    )
    assert line == (
        'search task (the model\'s words): "look for OTTER on screen"; '
        "relation: Relation: the answer is the first one in the whole video."
    )
    asked = describe_event(
        {"event": "search_task_done", "search_task": "Which code?", "relation": "", "by": "question"}
    )
    assert asked == "search task: the question itself (the model gave none)"
    old = describe_event({"event": "search_task_done", "search_task": task})  # streamed before the two were apart
    assert old == f'search task: "{one_line(task)}"'


@pytest.mark.unit
def test_a_traversal_line_says_what_was_decided_and_whose_reason_it_is() -> None:
    from videoatlas.agents.video_rlm.progress import describe_event

    def line(**event: Any) -> str | None:
        return describe_event({"event": "traversal", **event})

    assert line(traversal="bfs", reason="", by="model") == "traversal: breadth-first (BFS), the model's choice"
    assert line(traversal="dfs", reason="no image was given, so nothing could be seen", by="model") == (
        'traversal: depth-first (DFS), the model\'s choice; its reason: "no image was given, so nothing could be seen"'
    )
    assert (
        line(traversal="dfs", reason="set by the user", by="user") == "traversal: depth-first (DFS), set by --traversal"
    )
    assert line(traversal="dfs", reason="DFS, the default traversal", by="default") == (
        "traversal: depth-first (DFS), the default (DFS, the default traversal)"
    )


@pytest.mark.unit
def test_the_models_words_are_cut_at_a_word_boundary_and_quoted() -> None:
    from videoatlas.agents.videoarm.control import CALLED_EVENT
    from videoatlas.agents.videoarm.trace import describe_event
    from videoatlas.textsafe import cut, model_words

    reason = "the sign in the corner is too small to read at this size, so a closer look at the frames is needed now"
    shown = describe_event({"event": CALLED_EVENT, "step": 2, "tool": "snapper", "reason": reason})
    quoted = '"the sign in the corner is too small to read at this size, so a closer look at the frames is..."'
    assert shown == f"step 2: snapper; the model's reason: {quoted}"
    assert describe_event({"event": CALLED_EVENT, "step": 2, "tool": "snapper", "reason": ""}) == "step 2: snapper"
    assert cut("too small to read", 12) == "too small..." and cut("short", 12) == "short"
    assert cut("abcdefghijklmnopqrstuvwxyz", 10) == "abcdefg..."  # one long word: cut inside it
    assert model_words("  ") == "" and model_words("a\nb") == '"a | b"'


@pytest.mark.unit
def test_runs_columns_fit_the_longest_id() -> None:
    base = {
        "status": "finished",
        "agent": "video-rlm",
        "created_at": "2026-11-23T10:00:00",
        "question": "q",
        "answer": "a",
        "calls": 3,
        "tokens": 1200,
        "error": None,
    }
    lines = runs_lines([{**base, "id": "short"}, {**base, "id": "ev-" + "0123456789abcdef" * 2, "calls": 12345}])
    starts = {line.index("finished") for line in lines[1:]}
    assert starts == {lines[0].index("status")}
    assert len({len(line) for line in lines[1:]}) == 1


@pytest.mark.unit
def test_runs_table_aligns_wide_characters_keeps_markup_literal_and_fits_a_terminal() -> None:
    from rich.cells import cell_len

    base = {"status": "finished", "agent": "uniform", "created_at": "2026-11-23T10:00:00", "calls": 3, "tokens": 1200}
    base["error"] = None
    data = [
        {**base, "id": "a1", "question": "日本語の質問は何ですか", "answer": "答え", "error": "bad reply"},
        {**base, "id": "b2", "question": "[bold]x[/bold] :smile: what?", "answer": "yes", "error": "timeout"},
        {**base, "id": "c3", "question": "line1\nline2\x1b[31mRED", "answer": None, "calls": None, "tokens": None},
    ]
    lines = runs_lines(data)
    assert len(lines) == 4
    assert "[bold]x[/bold] :smile: what? -> yes" in lines[2]  # neither markup nor emoji codes are interpreted
    assert "line1\\nline2\\x1b[31mRED -> -" in lines[3] and "\x1b" not in "".join(lines)
    # The error column starts at the same terminal cell on every line, though a CJK character takes two.
    header_error = cell_len(lines[0][: lines[0].index("error")])
    assert cell_len(lines[1][: lines[1].index("bad reply")]) == header_error
    assert cell_len(lines[2][: lines[2].index("timeout")]) == header_error

    narrow = runs_lines(data, width=80)
    assert all(cell_len(line) <= 80 for line in narrow) and len(narrow) == 4
    assert all(line.startswith(("id", "a1", "b2", "c3")) for line in narrow)
    assert "…" in narrow[1]  # the question column is cut to fit, not wrapped onto a second line
