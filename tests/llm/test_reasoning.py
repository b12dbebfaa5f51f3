"""Reasoning models: thinking read from a reply field or taken out of ``<think>`` tags, switched per role, counted.

Unit tests feed the client replies shaped like vLLM's (a ``reasoning`` or ``reasoning_content`` field,
think tags in the content, a reply cut while thinking). End-to-end, every agent answers a question
over real HTTP against the stand-in imitating both server behaviours (``field``: vLLM with a reasoning
parser, ``tags``: without one), with thinking turned off for some roles; what the stand-in received,
what the trace shows and what the ledger counted are checked against each other.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.outputs import ChatResult
from openai.types.chat import ChatCompletion
from pydantic import BaseModel, Field

from action_video import Sign, write_signs_video
from db_helpers import run_row, sqlite_url
from process_helpers import EXE, bare_env
from videoatlas.agents.registry import check_thinking, get_agent, knobs
from videoatlas.errors import BadInputError, ModelReplyError
from videoatlas.inspect import load_trace, trace_lines
from videoatlas.llm.chat_model import OpenAICompatibleChat
from videoatlas.llm.client import VLMClient
from videoatlas.llm.reasoning import estimate_tokens, split_reasoning
from videoatlas.llm.records import CallRecord, CallTotals
from videoatlas.llm.settings import EndpointSettings
from videoatlas.persistence.store import TraceStore
from videoatlas.runs import run_question
from videoatlas.runtime.config import RunConfig, parse_thinking
from videoatlas_standin.chat import _reply
from videoatlas_standin.perception import Reader
from videoatlas_standin.server import RunningServer, StandinConfig, StandinServer, StandinStats

ARTIFACTS = (
    Path(os.environ.get("VIDEOATLAS_ARTIFACTS", Path(__file__).resolve().parents[2] / "tmp" / "artifacts")) / "ui"
)


class Pick(BaseModel):
    cells: list[int] = Field(min_length=1)
    reason: str


ANSWER = '{"cells": [2], "reason": "seen there"}'


def completion(message: dict[str, Any], usage: dict[str, Any] | None = None, finish: str = "stop") -> ChatCompletion:
    """A chat completion as the openai client parses a server's JSON (vLLM's extra fields included)."""
    return ChatCompletion.model_validate(
        {
            "id": "x",
            "object": "chat.completion",
            "created": 0,
            "model": "m",
            "choices": [{"index": 0, "finish_reason": finish, "message": {"role": "assistant", **message}}],
            "usage": usage or {"prompt_tokens": 10, "completion_tokens": 30, "total_tokens": 40},
        }
    )


class Served(BaseChatModel):
    """Answers with canned server responses, read by the production chat model's own reply reader."""

    responses: list[Any]
    kwargs: list[dict[str, Any]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "served"

    def _generate(self, *args: Any, **kwargs: Any) -> ChatResult:
        raise NotImplementedError("use the async API")

    async def _agenerate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        self.kwargs.append(kwargs)
        return OpenAICompatibleChat._result(self.responses.pop(0))


async def ask(*responses: ChatCompletion, thinking: bool | None = None) -> tuple[Pick, CallRecord, Served]:
    model = Served(responses=list(responses))
    reply = await VLMClient(model, EndpointSettings()).ask(
        Pick, system="S", text="T", node="probe", role="master", thinking=thinking
    )
    return reply.value, reply.record, model


# -- the client -------------------------------------------------------------------------------------


@pytest.mark.unit
@pytest.mark.parametrize(
    ("content", "reasoning", "answer"),
    [
        (f"<think>\nCell 2 shows it.\n</think>\n\n{ANSWER}", "Cell 2 shows it.", ANSWER),
        (f"  <think>a</think>{ANSWER}", "a", ANSWER),
        (f"Cell 2 shows it.\n</think>\n\n{ANSWER}", "Cell 2 shows it.", ANSWER),  # the template opened <think>
        ("<think>\nCell 2 shows it, and then the limit", "Cell 2 shows it, and then the limit", ""),  # cut
        (ANSWER, "", ANSWER),
        ('{"reason": "a <think> in a string"}', "", '{"reason": "a <think> in a string"}'),
    ],
)
def test_think_blocks_are_taken_out_of_the_answer(content: str, reasoning: str, answer: str) -> None:
    assert split_reasoning(content) == (reasoning, answer)


@pytest.mark.unit
@pytest.mark.parametrize("name", ["reasoning", "reasoning_content"])  # vLLM 0.33, and the servers before it
async def test_reasoning_field_and_server_count_reach_the_record(name: str) -> None:
    usage = {"prompt_tokens": 10, "completion_tokens": 30, "total_tokens": 40}
    response = completion(
        {"content": ANSWER, name: "Cell 2 shows it."},
        {**usage, "completion_tokens_details": {"reasoning_tokens": 21}},
    )
    value, record, _ = await ask(response)
    assert value == Pick(cells=[2], reason="seen there") and record.outcome == "ok"
    assert record.reasoning == "Cell 2 shows it." and record.reply_text == ANSWER
    assert record.reasoning_tokens == 21 and not record.reasoning_tokens_estimated
    assert record.completion_tokens == 30


@pytest.mark.unit
async def test_think_tags_are_parsed_around_and_their_tokens_estimated() -> None:
    thought = "The banner is in cell 2; the small print under it names the tag."
    value, record, _ = await ask(completion({"content": f"<think>{thought}</think>\n{ANSWER}"}))
    assert value.cells == [2] and record.reply_text == ANSWER
    assert record.reasoning == thought
    assert record.reasoning_tokens == estimate_tokens(thought) > 0 and record.reasoning_tokens_estimated


@pytest.mark.unit
async def test_a_reply_cut_while_thinking_is_reasked_and_both_thoughts_are_kept() -> None:
    cut = completion({"content": None, "reasoning": "first try"}, finish="length")
    fine = completion({"content": f"<think>second try</think>{ANSWER}"})
    value, record, _ = await ask(cut, fine)
    assert value.cells == [2] and record.outcome == "reasked" and record.attempts == 2
    assert record.reasoning == "first try\n\nsecond try"


@pytest.mark.unit
async def test_the_switch_is_sent_only_when_set() -> None:
    for thinking in (True, False, None):
        _, record, model = await ask(completion({"content": ANSWER}), thinking=thinking)
        (sent,) = model.kwargs
        expected = None if thinking is None else {"enable_thinking": thinking}
        assert sent.get("chat_template_kwargs") == expected and record.thinking is thinking


@pytest.mark.unit
def test_request_body_uses_max_completion_tokens_and_a_larger_budget_when_thinking() -> None:
    chat = OpenAICompatibleChat(settings=EndpointSettings(model="m", max_tokens=512, thinking_max_tokens=4096))
    messages = [HumanMessage(content="hi")]
    plain = chat._request(messages, None, response_format={"type": "json_object"})
    assert plain["max_completion_tokens"] == 512 and "max_tokens" not in plain and "extra_body" not in plain
    thinking = chat._request(messages, None, chat_template_kwargs={"enable_thinking": True})
    assert thinking["max_completion_tokens"] == 4096
    assert thinking["extra_body"] == {"chat_template_kwargs": {"enable_thinking": True}}
    off = chat._request(messages, None, chat_template_kwargs={"enable_thinking": False})
    assert off["max_completion_tokens"] == 512 and off["extra_body"]["chat_template_kwargs"] == {
        "enable_thinking": False
    }
    with pytest.raises(BadInputError, match="thinking_max_tokens"):
        EndpointSettings(thinking_max_tokens=0)


@pytest.mark.unit
def test_totals_count_reasoning_tokens_and_estimates() -> None:
    totals = CallTotals()
    totals.add(CallRecord("a", "S", 0.0, completion_tokens=50, reasoning_tokens=40))
    totals.add(CallRecord("b", "S", 0.0, completion_tokens=20, reasoning_tokens=9, reasoning_tokens_estimated=True))
    totals.add(CallRecord("c", "S", 0.0, completion_tokens=5))
    data = totals.as_dict()
    assert data["reasoning_tokens"] == 49 and data["reasoning_estimated_calls"] == 1 and data["completion_tokens"] == 75


# -- the setting ----------------------------------------------------------------------------------


@pytest.mark.unit
def test_thinking_setting_per_role() -> None:
    assert parse_thinking("on") == {"all": True} and parse_thinking("OFF") == {"all": False}
    assert parse_thinking("master=on, worker=off") == {"master": True, "worker": False}
    config = RunConfig.of(thinking=parse_thinking("off,planner=on"))
    assert config.thinking_for("planner") is True and config.thinking_for("looker") is False
    assert RunConfig.of().thinking_for("master") is None
    for bad in ("maybe", "worker=", "worker=on,worker=off", " , ", "wor ker=on"):
        with pytest.raises(BadInputError, match="thinking setting"):
            parse_thinking(bad)
    check_thinking(RunConfig.of(agent="uniform", thinking={"master": True}))  # another agent's role: allowed
    with pytest.raises(BadInputError, match=r"unknown role.*mastr"):
        check_thinking(RunConfig.of(thinking={"mastr": True}))
    # Stored with the run (resume reads it back) and part of an eval result's key only when set.
    stored = RunConfig.model_validate(RunConfig.of(thinking={"worker": False}).model_dump())
    assert stored.thinking == {"worker": False}
    assert "thinking" not in knobs(RunConfig.of())
    assert knobs(stored)["thinking"] == {"master": None, "worker": False}


@pytest.mark.e2e
def test_cli_refuses_a_bad_thinking_setting_in_one_line(tmp_path: Path) -> None:
    env = bare_env(tmp_path)
    for extra, env_value, fragment in (
        (["--thinking", "worker=perhaps"], "", "must be on, off or ROLE=on|off"),
        ([], "mastr=on", "unknown role(s) mastr"),
    ):
        proc = subprocess.run(
            [EXE, "ask", str(tmp_path / "none.mp4"), "-q", "what?", *extra],
            capture_output=True,
            text=True,
            timeout=120,
            env={**env, "VIDEOATLAS_THINKING": env_value},
        )
        assert proc.returncode == 2 and fragment in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr


# -- the stand-in -------------------------------------------------------------------------------------


@pytest.mark.unit
def test_standin_reasoning_spends_the_completion_budget() -> None:
    thought = " ".join(["word"] * 50)
    whole = _reply(ANSWER, thought, "field", 1000)
    assert whole.finish_reason == "stop" and whole.message["content"] == ANSWER and whole.reasoning_tokens == 50
    cut = _reply(ANSWER, thought, "field", 20)  # runs out while thinking: no answer at all
    assert cut.finish_reason == "length" and cut.message["content"] is None
    assert cut.completion_tokens == cut.reasoning_tokens == 20
    tags = _reply(ANSWER, thought, "tags", 20)
    assert tags.finish_reason == "length" and split_reasoning(tags.message["content"])[1] == ""
    answer_cut = _reply(ANSWER, thought, "tags", 55)  # thinks to the end, then the answer is cut
    reasoning, answer = split_reasoning(answer_cut.message["content"])
    assert answer_cut.finish_reason == "length" and reasoning == thought and answer and answer != ANSWER
    assert _reply(ANSWER, "", "tags", 1000).message == {"role": "assistant", "content": ANSWER}
    plain_cut = _reply(ANSWER, "", "tags", 5)  # no reasoning: the answer alone meets the limit
    assert plain_cut.finish_reason == "length" and plain_cut.completion_tokens == 5
    assert ANSWER.startswith(plain_cut.message["content"].split()[0]) and plain_cut.message["content"] != ANSWER
    with pytest.raises(ValueError, match="reasoning"):
        StandinConfig(reasoning="loud")


@pytest.mark.e2e
async def test_standin_out_of_thinking_budget_never_answers(reader: Reader) -> None:
    with RunningServer(StandinServer(StandinConfig(reasoning="field"), reader=reader)) as server:
        settings = EndpointSettings(base_url=server.base_url, model=server.standin.config.model, thinking_max_tokens=8)
        client = VLMClient(OpenAICompatibleChat(settings=settings), settings)
        with pytest.raises(ModelReplyError) as caught:
            await client.ask(Pick, system="S", text="Which cell? Reply in JSON.", thinking=True)
        record = caught.value.record
        assert isinstance(record, CallRecord)
        assert record.attempts == 2 and record.reply_text == "" and record.reasoning
        assert record.reasoning_tokens == 16 == server.standin.stats.reasoning_tokens  # 8 a try, all spent thinking
        # Thinking off: the answer has its own budget, and the stand-in does not think.
        reply = await client.ask(Pick, system="S", text="Which cell? Reply in JSON.", thinking=False)
        assert reply.record.reasoning == "" and reply.record.reasoning_tokens == 0
        assert server.standin.stats.enable_thinking == Counter({"true": 2, "false": 1})


# -- whole questions, every agent, both server behaviours ------------------------------------------------

SIGNS = (
    Sign(40.0, 70.0, "HARBOR", 56, 320, 70, card=(20, 60, 140)),
    Sign(40.0, 70.0, "tag QZ-7781", 24, 320, 300),
)
QUESTION = "Which tag is printed under the HARBOR banner?"
CHOICES = ["QZ-1234", "QZ-7781", "MT-7781"]


@pytest.fixture(scope="module")
def video(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_signs_video(tmp_path_factory.mktemp("reasoning") / "signs.mp4", SIGNS, 120.0)


@pytest.fixture(scope="module")
def reader() -> Reader:
    return Reader()


@pytest.fixture(scope="module")
def standins(reader: Reader) -> Iterator[dict[str, RunningServer]]:
    with (
        RunningServer(StandinServer(StandinConfig(reasoning="field"), reader=reader)) as field,
        RunningServer(StandinServer(StandinConfig(reasoning="tags"), reader=reader)) as tags,
    ):
        yield {"field": field, "tags": tags}


CASES = [
    ("field", "video-rlm", {"worker": False}),
    ("tags", "video-rlm", {}),
    ("field", "videoseek", {"looker": False}),
    ("tags", "videoseek", {"all": True}),
    ("field", "uniform", {"all": True}),
    ("tags", "uniform", {}),
]


@pytest.mark.e2e
@pytest.mark.parametrize(("mode", "agent", "thinking"), CASES, ids=[f"{m}-{a}" for m, a, _ in CASES])
async def test_every_agent_answers_with_reasoning_shown_and_counted(
    mode: str, agent: str, thinking: dict[str, bool], video: Path, standins: dict[str, RunningServer], tmp_path: Path
) -> None:
    server = standins[mode]
    server.standin.stats = StandinStats()
    db = sqlite_url(tmp_path / "runs.db")
    config = RunConfig.of(agent=agent, thinking=thinking)
    endpoint = EndpointSettings(base_url=server.base_url, model="")
    result = await run_question(video, QUESTION, CHOICES, config, endpoint, db_url=db)
    stats = server.standin.stats
    assert result.answer in CHOICES  # which one is the stand-in's reading, not what this test is about

    trace = await load_trace(result.run_id, db)
    calls = trace["calls"]
    assert trace["run"]["config"]["thinking"] == thinking  # stored: `resume` runs with it
    # Each call asked what its role's setting says, and the stand-in received exactly that.
    received: Counter[str] = Counter()
    for call in calls:
        expected = config.thinking_for(call["role"])
        assert call["thinking"] is expected, call["node"]
        received[{True: "true", False: "false", None: "null"}[expected]] += call["attempts"]
        # A call told not to think came back without reasoning; every other one with it.
        assert bool(call["reasoning"]) is (expected is not False), call["node"]
    assert stats.enable_thinking == received
    assert {c["role"] for c in calls} == set(get_agent(agent).roles)  # every role the agent names makes calls
    assert any(c["thinking"] is False for c in calls) is (False in thinking.values())
    thought = [c for c in calls if c["reasoning"]]
    assert thought, "no call came back with reasoning"
    # The ledger: the server's own count where it gives one, an estimate (marked) where it does not.
    spent = sum(c["reasoning_tokens"] for c in calls)
    assert result.cost.reasoning_tokens == spent == sum(r.reasoning_tokens for r in result.records) > 0
    if mode == "field":
        assert spent == stats.reasoning_tokens and not any(c["reasoning_estimated"] for c in calls)
    else:
        assert all(c["reasoning_estimated"] for c in thought) and stats.reasoning_tokens > 0
    # Nothing of the reasoning leaks into the answer the agents parsed.
    assert not any("<think>" in c["reply_text"] for c in calls)
    shown = trace_lines(trace)
    header = next(i for i, line in enumerate(shown) if line.startswith("  reasoning ("))
    assert shown[header] == f"  reasoning ({len(thought)} of {len(calls)} calls; whole text: trace --json):"
    for line, call in zip(shown[header + 1 :], thought, strict=True):
        assert line.startswith(f"    {call['node']}") and f"{call['reasoning_tokens']:,} tokens" in line
    assert f"({result.cost.reasoning_tokens:,} reasoning)" in next(s for s in shown if s.startswith("  cost: "))


@pytest.mark.e2e
@pytest.mark.browser
async def test_reasoning_is_shown_collapsed_in_the_report_and_the_ui(
    video: Path, standins: dict[str, RunningServer], tmp_path: Path
) -> None:
    from playwright.async_api import async_playwright, expect

    from videoatlas.ui.report import report_html

    db = sqlite_url(tmp_path / "runs.db")
    endpoint = EndpointSettings(base_url=standins["field"].base_url, model="")
    result = await run_question(video, QUESTION, CHOICES, RunConfig.of(agent="uniform"), endpoint, db_url=db)
    (call,) = result.records
    assert call.reasoning
    report = tmp_path / "run.html"
    report.write_text(await report_html(result.run_id, db))
    port = _free_port()
    ui = subprocess.Popen([EXE, "ui", "--db", db, "--port", str(port)], stderr=subprocess.PIPE, text=True)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    try:
        await _wait_http(f"http://127.0.0.1:{port}/runs", ui)
        async with async_playwright() as p:
            browser = await p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
            page = await browser.new_page(viewport={"width": 1280, "height": 900})
            for name, url in (("report", report.as_uri()), ("ui", f"http://127.0.0.1:{port}/runs/{result.run_id}")):
                await page.goto(url)
                await expect(page.locator("#run-header")).to_contain_text(f"({call.reasoning_tokens:,} reasoning)")
                details = page.locator("details.reasoning")
                await expect(details).to_have_count(1)
                await expect(details.locator("summary")).to_contain_text(f"{call.reasoning_tokens:,} tokens")
                text = details.locator("pre")
                await expect(text).to_be_hidden()  # collapsed until asked for
                await page.screenshot(path=str(ARTIFACTS / f"reasoning-{name}-collapsed.png"), full_page=True)
                await details.locator("summary").click()
                await expect(text).to_be_visible()
                await expect(text).to_contain_text(call.reasoning.splitlines()[0])
                await details.scroll_into_view_if_needed()
                await page.screenshot(path=str(ARTIFACTS / f"reasoning-{name}.png"), full_page=True)
            await browser.close()
    finally:
        ui.terminate()
        ui.communicate(timeout=30)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def _wait_http(url: str, proc: subprocess.Popen[str]) -> None:
    import asyncio

    async with httpx.AsyncClient() as client:
        for _ in range(600):
            if proc.poll() is not None:
                raise RuntimeError(f"{url}: the server exited with {proc.returncode}")
            try:
                await client.get(url, timeout=1)
                return
            except httpx.HTTPError:
                await asyncio.sleep(0.05)
    raise RuntimeError(f"{url} did not come up")


# -- the trace store -------------------------------------------------------------------------------------


NEW_COLUMNS = ("role", "thinking", "reasoning", "reasoning_tokens", "reasoning_estimated")


def _record_with_reasoning() -> CallRecord:
    return CallRecord("decide", "S", 0.0, outcome="ok", role="master", reasoning="because", reasoning_tokens=3)


@pytest.mark.unit
def test_a_store_made_before_reasoning_gains_its_columns(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    TraceStore(sqlite_url(path)).close()
    with sqlite3.connect(path) as conn:  # the table as it was before these columns
        for column in NEW_COLUMNS:
            conn.execute(f"ALTER TABLE va_model_calls DROP COLUMN {column}")
    _check_store_upgrade(sqlite_url(path))


@pytest.mark.e2e
@pytest.mark.postgres
def test_a_postgres_store_made_before_reasoning_gains_its_columns() -> None:
    import psycopg

    from db_helpers import PG_URL, pg_available

    if not pg_available():
        pytest.skip("no PostgreSQL server at 127.0.0.1:5432")
    name = f"va_reasoning_{os.getpid()}"
    admin = psycopg.connect(PG_URL, autocommit=True)
    try:
        admin.execute(f"DROP DATABASE IF EXISTS {name}")
        admin.execute(f"CREATE DATABASE {name}")
        url = PG_URL.rsplit("/", 1)[0] + f"/{name}"
        TraceStore(url).close()
        with psycopg.connect(url, autocommit=True) as conn:
            for column in NEW_COLUMNS:
                conn.execute(f"ALTER TABLE va_model_calls DROP COLUMN {column}")
        _check_store_upgrade(url)
    finally:
        admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        admin.close()


def _check_store_upgrade(url: str) -> None:
    """Opening the store adds the missing columns, and a call with reasoning is written and read back."""
    store = TraceStore(url)
    try:
        store.start_run(run_row("old", status="running"))
        store.model_call("old", _record_with_reasoning())
        store.flush()
        assert store.failed == 0
        (call,) = store.calls("old")
        assert (call.role, call.reasoning, call.reasoning_tokens, call.reasoning_estimated) == (
            "master",
            "because",
            3,
            False,
        )
    finally:
        store.close()
