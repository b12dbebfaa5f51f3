"""The web UI's word for a declined open answer, in real headless Chromium: "no answer found", not an answer.

Two scripted runs of the uniform baseline on an open question, kept in a real SQLite store: one whose
final decision declined (found no answer; its reply guessed a value, which is not kept) and one that
answered without citing anything. The run page shows the first as unanswered and the second as
"answered without evidence"; an eval over the first calls it unanswered. Screenshots go to
``tmp/artifacts/ui``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from agent_helpers import ScriptedChat
from browser_helpers import ARTIFACTS, chromium, ui_server, watched_tab
from db_helpers import sqlite_url
from videoatlas.llm.settings import EndpointSettings
from videoatlas.runs import run_question
from videoatlas.runtime.context import RunConfig
from videoatlas.synth.counter import write_counter_video

pytestmark = [pytest.mark.e2e, pytest.mark.browser]

QUESTION = "What number does the counter show first?"


def decides(found: bool, answer: str) -> Any:
    """The uniform baseline's one call: ``found`` and ``answer``, citing nothing."""

    def script(name: str, text: str, schema: dict[str, Any]) -> Any:
        assert name == "FinalDecision"
        return {"found": found, "answer": answer, "reasoning": "the counter is too small to read", "evidence": []}

    return script


async def scripted_run(video: Path, db: str, run_id: str, script: Any) -> None:
    await run_question(
        video,
        QUESTION,
        [],
        RunConfig.of(agent="uniform", frames=16, k=4, cell_px=64),
        EndpointSettings(model="scripted-vlm"),
        chat_model=ScriptedChat(script=script),
        db_url=db,
        run_id=run_id,
    )


def eval_folder(path: Path) -> Path:
    """An eval of the open question whose one row is the declined run's."""
    path.mkdir(parents=True)
    row = {
        "status": "ok", "key": "k-q1", "item": "q1", "video_id": "v1", "categories": ["reading"], "groups": {},
        "duration": 20.0, "truth_index": None, "truth_text": "3", "truth_ranges": [], "answer": "",
        "answer_index": None, "declined": True, "correct": False, "parse_failed": False, "grounded": False,
        "calls": 1, "tokens": 1000, "prompt_tokens": 900, "cached_tokens": 0, "master_tokens": 1000,
        "worker_tokens": 0, "wall_s": 1.0, "rounds": 0, "evidence": 0, "evidence_times": [], "cited_times": [],
        "run_id": "ui-declined",
    }  # fmt: skip
    meta = {
        "dataset": "synthetic", "agent": "uniform", "prompt_set": "builtin:default", "prompt_sha": "abc",
        "model": "scripted-vlm", "results": "results.jsonl", "keys": {"q1": "k-q1"},
    }  # fmt: skip
    (path / "eval.json").write_text(json.dumps(meta))
    (path / "results.jsonl").write_text(json.dumps(row) + "\n")
    return path


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("ui-declined")
    video = write_counter_video(root / "counter.mp4", 500, fps=25.0, gop=50)  # 20 s
    db = sqlite_url(root / "runs.db")
    with pytest.MonkeyPatch.context() as env:
        env.setenv("VIDEOATLAS_HOME", str(root / "home"))
        asyncio.run(scripted_run(video, db, "ui-declined", decides(False, "maybe 7")))
        asyncio.run(scripted_run(video, db, "ui-unsupported", decides(True, "7")))
    with ui_server(db, root / "home", [eval_folder(root / "eval")]) as url:
        yield url


@pytest.fixture(scope="module")
def page(base: str) -> Iterator[Page]:
    with chromium() as browser, watched_tab(browser) as tab:
        yield tab


def test_a_declined_run_is_shown_unanswered(base: str, page: Page) -> None:
    page.goto(base + "/runs/ui-declined")
    expect(page.locator("#run-status")).to_have_text("finished")
    header = page.locator("#run-header")
    expect(header.locator("#declined")).to_have_text("no answer found")
    expect(header).to_contain_text("Answer: no answer found (the model declined: unanswered)")
    expect(header).not_to_contain_text("answered without evidence")
    expect(header).not_to_contain_text("maybe 7")  # the guess in the declined reply is not an answer
    decision = page.locator(".decision")
    expect(decision).to_contain_text("Answer: no answer found (the model declined: unanswered)")
    expect(decision).to_contain_text("the counter is too small to read")
    page.screenshot(path=str(ARTIFACTS / "run-declined.png"), full_page=True)


def test_an_answer_without_evidence_is_still_shown_as_one(base: str, page: Page) -> None:
    page.goto(base + "/runs/ui-unsupported")
    header = page.locator("#run-header")
    expect(header).to_contain_text("Answer: 7 (answered without evidence)")
    expect(header).not_to_contain_text("no answer found")
    expect(page.locator(".decision")).to_contain_text("Answer: 7")


def test_the_eval_page_counts_the_declined_question_unanswered(base: str, page: Page) -> None:
    page.goto(base + "/evals/0")
    expect(page.locator("#declined")).to_have_text("1")
    row = page.locator("tr.question[data-item='q1']")
    expect(row).to_contain_text("unanswered (the model declined)")
    expect(row.locator("td.declined")).to_have_count(1)
    page.screenshot(path=str(ARTIFACTS / "eval-declined.png"), full_page=True)
