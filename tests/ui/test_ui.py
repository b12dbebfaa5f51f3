"""The web UI (``videoatlas ui``) driven in real headless Chromium, and ``videoatlas report``.

One store, one UI server and one browser serve the whole module: scripted runs on a real video
(one finished, one whose answer is wrong, one that failed, many rows for paging), two eval folders
over them, and a live run against the stand-in VLM. Screenshots go to ``tmp/artifacts/ui``.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from agent_helpers import ScriptedChat, default_reply, step
from browser_helpers import ARTIFACTS, chromium, free_port, ui_server, wait_http, watched_tab
from db_helpers import run_row, sqlite_url
from process_helpers import EXE
from videoatlas.errors import EndpointError
from videoatlas.llm.settings import EndpointSettings
from videoatlas.persistence.store import TraceStore
from videoatlas.runs import run_question
from videoatlas.runtime.context import RunConfig
from videoatlas.synth.counter import write_counter_video

pytestmark = [pytest.mark.e2e, pytest.mark.browser]

HOSTILE = "<script>window.__pwned = 1</script>"
QUESTION = "What number is shown first?"


def script_for(answer: int, hostile: bool) -> Any:
    """Probe two cells, record one frame, finish; the decision cites it and answers ``answer``."""

    added: list[bool] = []

    def script(name: str, text: str, schema: dict[str, Any]) -> Any:
        if name == "GlobalProbe":
            n = schema["properties"]["cells"]["minItems"]
            return {"cells": [3, 1, 0, 2][:n], "reason": "the counter starts here " + (HOSTILE if hostile else "")}
        if name == "WorkerStep":
            if not added:
                added.append(True)
                return step("ADD_TO_SCRATCHPAD", [0], summary="the counter reads a number")
            return step("FINISHED", summary="nothing more here")
        if name == "FinalDecision":
            return {
                "judgements": [],
                "answer": answer,
                "reasoning": "the frame shows it " + (HOSTILE if hostile else ""),
                "evidence": ["[A]"],
            }
        return default_reply(name, text, schema)

    return script


def failing(name: str, text: str, schema: dict[str, Any]) -> Any:
    if name == "GlobalProbe":
        raise EndpointError("the endpoint went away")
    return default_reply(name, text, schema)


async def scripted_run(video: Path, db: str, run_id: str, script: Any) -> None:
    await run_question(
        video,
        QUESTION,
        ["zero", "one"],
        RunConfig.of(cell_px=64, k=4, workers=2, rounds=1),
        EndpointSettings(model="scripted-vlm", base_url="http://user:hunter2@vlm.example:9000/v1"),
        chat_model=ScriptedChat(script=script),
        db_url=db,
        run_id=run_id,
    )


def add_filler_runs(db: str, n: int) -> None:
    """Runs written straight to the store: enough for several pages, one of them stale."""
    store = TraceStore(db)
    old = datetime.now(UTC) - timedelta(days=2)
    try:
        for i in range(n):
            store.start_run(
                run_row(
                    f"filler-{i:03d}",
                    created_at=old + timedelta(minutes=i),
                    updated_at=old + timedelta(minutes=i),
                    status="running" if i == 0 else "finished",
                    question=f"filler question {i}",
                    video_path=f"/videos/set{i % 2}/video.mp4",  # one file name in two folders
                    answer="a",
                    answer_index=0,
                    cost={"tokens": 100, "calls": 1, "wall_s": 1.0},
                )
            )
    finally:
        store.close()


def eval_folder(path: Path, rows: list[dict[str, Any]], prompt_set: str) -> Path:
    path.mkdir(parents=True)
    meta = {
        "dataset": "synthetic",
        "agent": "video-rlm",
        "prompt_set": prompt_set,
        "prompt_sha": prompt_set,
        "model": "scripted-vlm",
        "results": "results.jsonl",
        "keys": {r["item"]: r["key"] for r in rows},
    }
    (path / "eval.json").write_text(json.dumps(meta))
    (path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def result(item: str, run_id: str, truth: int, answer: int | None, status: str = "ok") -> dict[str, Any]:
    return {
        "status": status,
        "key": f"k-{item}",
        "item": item,
        "video_id": item,
        "categories": ["counting" if item == "q1" else "reading"],
        "groups": {},
        "duration": 80.0,
        "truth_index": truth,
        "truth_ranges": [],
        "answer_index": answer,
        "correct": answer == truth,
        "parse_failed": False,
        "calls": 5,
        "tokens": 5000,
        "prompt_tokens": 4900,
        "cached_tokens": 0,
        "master_tokens": 2000,
        "worker_tokens": 3000,
        "wall_s": 3.5,
        "rounds": 1,
        "evidence": 1,
        "evidence_times": [],
        "cited_times": [],
        "run_id": run_id,
    }


class World:
    def __init__(self, root: Path, video: Path, db: str, base: str, evals: tuple[Path, Path]) -> None:
        self.root, self.video, self.db, self.base, self.evals = root, video, db, base, evals


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    root = tmp_path_factory.mktemp("ui")
    video = write_counter_video(root / "counter.mp4", 500, fps=25.0, gop=50)  # 20 s
    db = sqlite_url(root / "runs.db")
    add_filler_runs(db, 70)
    with pytest.MonkeyPatch.context() as env:
        env.setenv("VIDEOATLAS_HOME", str(root / "home"))
        asyncio.run(scripted_run(video, db, "ui-right", script_for(0, hostile=True)))
        asyncio.run(scripted_run(video, db, "ui-wrong", script_for(1, hostile=False)))
        with pytest.raises(EndpointError):
            asyncio.run(scripted_run(video, db, "ui-failed", failing))
    # Eval A got q2 wrong (run ui-wrong); eval B, with other prompts, got it right (run ui-right).
    a = eval_folder(
        root / "eval-a", [result("q1", "ui-right", 0, 0), result("q2", "ui-wrong", 0, 1)], "builtin:default"
    )
    b = eval_folder(root / "eval-b", [result("q1", "ui-right", 0, 0), result("q2", "ui-right", 0, 0)], "terse")
    with ui_server(db, root / "home", [a, b]) as base:
        yield World(root, video, db, base, (a, b))


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as launched:
        yield launched


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    with watched_tab(browser) as tab:
        yield tab


def shot(page: Page, name: str, full: bool = False) -> Path:
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=full)
    return path


# -- runs ---------------------------------------------------------------------------------------------


def test_runs_list_filters_to_failed_runs_and_pages(world: World, page: Page) -> None:
    page.goto(world.base + "/")
    rows = page.locator("tr.run-row")
    expect(rows).to_have_count(50)
    expect(page.locator("h1")).to_contain_text("73")
    expect(page.locator(".pager")).to_contain_text("page 1 of 2")
    videos = page.locator("tr.run-row td.video").all_inner_texts()
    assert {"set0/video.mp4", "set1/video.mp4", f"{world.root.name}/counter.mp4"} <= set(videos)  # by folder
    shot(page, "runs")
    page.select_option("select[name=status]", "failed")
    page.click("form.filters button")
    expect(rows).to_have_count(1)
    expect(rows.first).to_have_attribute("data-status", "failed")
    expect(rows.first).to_contain_text("ui-failed")
    expect(rows.first).to_contain_text("EndpointError")
    shot(page, "runs-failed")
    page.goto(world.base + "/runs?status=stale")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("filler-000")
    page.goto(world.base + "/runs?q=filler+question+12")
    expect(rows).to_have_count(1)
    page.goto(world.base + "/runs?page=2")
    expect(rows).to_have_count(23)


def test_run_page_shows_the_probe_and_opens_a_step_image_at_full_size(world: World, page: Page) -> None:
    page.goto(world.base + "/runs")
    page.click("a[href='/runs/ui-right']")
    expect(page.locator("#run-status")).to_have_text("finished")
    header = page.locator("#run-header")
    expect(header).to_contain_text("counter.mp4")
    expect(header).to_contain_text("00:20.0")  # duration
    expect(header).to_contain_text("scripted-vlm")
    expect(header).to_contain_text("vlm.example:9000")
    expect(header).not_to_contain_text("hunter2")
    expect(header).to_contain_text("builtin:default")
    settings = header.locator("table.settings")  # a table of the run's options, not a Python repr
    expect(settings.locator("tr", has_text="--token-budget")).to_contain_text("none")
    expect(settings.locator("tr", has_text="--workers")).to_have_count(1)
    expect(header).not_to_contain_text("None")
    expect(header).not_to_contain_text("=")
    # The probe's root grid with the chosen cells outlined, each named with its worker.
    probe = page.locator("#round-1 .probe")
    outlined = probe.locator(".grid .cell")
    expect(outlined).to_have_count(2)
    expect(probe.locator(".cell[data-cell='3']")).to_contain_text("r1w1")
    # Both boxes from one layout, once the grid image has loaded: measured one after the other, a layout
    # shift between the two (the image or a font arriving) moved one and not the other (seen once, 10 px).
    expect(probe.locator(".grid img")).to_have_js_property("complete", True)
    box, grid = probe.evaluate(
        """p => [p.querySelector(".cell[data-cell='3']"), p.querySelector(".grid img")]
            .map(e => { const r = e.getBoundingClientRect(); return {x: r.x, y: r.y, width: r.width}; })"""
    )
    assert abs(box["x"] - (grid["x"] + 3 * grid["width"] / 4)) < 2 and abs(box["y"] - grid["y"]) < 2
    expect(probe).to_contain_text("the counter starts here")
    shot(page, "run", full=True)
    # Steps: an action with no cells is shown without an empty list.
    steps = page.locator("tr.step")
    expect(steps.filter(has_text="ADD_TO_SCRATCHPAD")).to_contain_text("ADD_TO_SCRATCHPAD 0")
    expect(page.locator("body")).not_to_contain_text("FINISHED []")
    thumb = steps.first.locator("img.zoomable")
    natural = thumb.evaluate("img => img.naturalWidth")
    assert thumb.evaluate("img => img.clientWidth") < natural  # a thumbnail
    thumb.click()
    zoomed = page.locator("dialog#zoom img")
    expect(page.locator("dialog#zoom")).to_be_visible()
    assert zoomed.evaluate("img => img.naturalWidth") == natural
    assert zoomed.evaluate("img => img.clientWidth") == natural  # shown at full size
    shot(page, "run-step-full-size")
    # The decision: the root grid with the cells that gave findings, the cited scratchpad.
    decision = page.locator(".decision")
    expect(decision.locator(".grid .cell.found")).to_have_count(1)
    expect(decision.locator("table.evidence")).to_contain_text("cited")


def test_model_text_is_shown_as_text(world: World, page: Page) -> None:
    page.goto(world.base + "/runs/ui-right")
    expect(page.locator(".decision")).to_contain_text(HOSTILE)
    expect(page.locator("#round-1 .probe")).to_contain_text(HOSTILE)
    assert page.evaluate("() => window.__pwned") is None


def test_failed_run_shows_its_error(world: World, page: Page) -> None:
    page.goto(world.base + "/runs/ui-failed")
    expect(page.locator("#run-status")).to_have_text("failed")
    expect(page.locator("#failure")).to_contain_text("the endpoint went away")


# -- evals ----------------------------------------------------------------------------------------------


def test_eval_links_a_wrong_answer_to_its_run(world: World, page: Page) -> None:
    page.goto(world.base + "/evals")
    page.click("a[href='/evals/0']")
    expect(page.locator("#accuracy")).to_have_text("50.0%")
    wrong = page.locator("tr.question.wrong")
    expect(wrong).to_have_count(1)
    expect(wrong).to_contain_text(QUESTION)
    expect(wrong).to_contain_text("A. zero")  # the truth, with its choice text
    page.wait_for_function("() => document.querySelector(\"img[alt^='tokens per question']\").naturalWidth > 0")
    shot(page, "eval", full=True)
    wrong.locator("a.run-link").click()
    expect(page).to_have_url(world.base + "/runs/ui-wrong")
    expect(page.locator("#question")).to_have_text(QUESTION)


def test_compare_shows_the_flipped_questions(world: World, page: Page) -> None:
    page.goto(world.base + "/evals")
    page.select_option("select[name=a]", "0")
    page.select_option("select[name=b]", "1")
    page.click("form.filters button")
    table = page.locator("table.comparison")
    expect(table).to_contain_text("overall")
    expect(table).to_contain_text("+50.0%")
    expect(table.locator("th")).to_contain_text(["errors A", "errors B"])  # as eval compare prints them
    expect(table.locator("td.errors-a").first).to_have_text("0.0%")
    expect(page.locator("text=means next to nothing")).to_have_count(1)  # two questions: too few
    flips = page.locator("tr.flip")
    expect(flips).to_have_count(1)
    expect(flips.first).to_have_attribute("data-item", "q2")
    shot(page, "compare", full=True)
    flips.first.locator("a.run-b").click()
    expect(page).to_have_url(world.base + "/runs/ui-right")
    page.go_back()
    page.locator("tr.flip a.run-a").click()
    expect(page).to_have_url(world.base + "/runs/ui-wrong")


# -- safety ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "/img/..%2f..%2fetc%2fpasswd",
        "/img/../../etc/passwd",
        "/runs/..%2f..%2fetc%2fpasswd",
        "/runs/ui-right/..%2f..%2fetc%2fpasswd",
        "/evals/..%2f..%2fetc%2fpasswd",
        "/evals/7",
        "/evals/7/tokens.png",
        "/img/" + "0" * 64,
        "/runs/no-such-run",
        "/static/..%2f..%2fetc%2fpasswd",
    ],
)
def test_paths_outside_the_store_are_not_found(world: World, path: str) -> None:
    reply = httpx.get(world.base + path, timeout=30)
    assert reply.status_code == 404
    assert "root:" not in reply.text


def test_compare_of_an_unknown_eval_is_not_found(world: World) -> None:
    assert httpx.get(world.base + "/compare?a=0&b=9", timeout=30).status_code == 404


def test_ui_refuses_a_folder_without_an_eval(tmp_path: Path) -> None:
    done = subprocess.run([EXE, "ui", "--evals", str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "holds no eval" in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


# -- report ---------------------------------------------------------------------------------------------


def test_report_is_the_run_page_in_one_file(world: World, page: Page, tmp_path: Path) -> None:
    out = tmp_path / "run.html"
    done = subprocess.run(
        [EXE, "report", "ui-right", "--db", world.db, "-o", str(out)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    html = out.read_text()
    assert 'src="/img/' not in html and "data:image/jpeg;base64," in html
    assert "hunter2" not in html and HOSTILE not in html
    page.goto(out.as_uri())
    expect(page.locator("#run-header")).to_contain_text("scripted-vlm")
    expect(page.locator("#round-1 .probe .grid .cell")).to_have_count(2)
    expect(page.locator(".decision")).to_contain_text(HOSTILE)
    assert page.evaluate("() => window.__pwned") is None
    page.locator("tr.step img.zoomable").first.click()
    expect(page.locator("dialog#zoom")).to_be_visible()
    shot(page, "report", full=True)


def test_report_shows_a_failure_escaped() -> None:
    from videoatlas.ui.render import render_report
    from videoatlas.ui.view import run_view

    trace: dict[str, Any] = {
        "run": {
            "id": "r1",
            "status": "failed",
            "question": "q?",
            "choices": [],
            "video": "/v.mp4",
            "answer": None,
            "answer_index": None,
            "reasoning": None,
            "stop_reason": None,
            "error": "EndpointError: down",
            "config": {"k": 8},
            "endpoint": {},
            "prompt_set": "builtin:default",
            "prompt_sha": "0",
            "created_at": "2026-01-01T00:00:00+00:00",
            "updated_at": None,
            "finished_at": None,
            "cost": {},
        },
        "agent": "uniform",
        "pending": [],
        "detail": {},
        "timeline": [],
        "evidence": [],
        "repairs": [],
        "grounded": False,
        "cited": [],
        "cost_state": {},
        "calls": [],
        "images": {},
        "failure": {  # the shape load_trace gives a failed run
            "error": "ModelReplyError: bad",
            "node": {"node": "answer", "worker": None, "round": None, "error": "ModelReplyError: bad"},
            "call": {
                "node": "answer",
                "worker": None,
                "round": None,
                "schema": "FinalDecision",
                "attempts": 2,
                "error": "no usable reply",
                "parse_errors": ["answer: not one of the choices"],
            },
            "reply": HOSTILE,
            "spent": {"calls": 1, "tokens": 900, "failed_calls": 1},
        },
    }
    html = render_report(run_view(trace), {})
    box = re.search(r'<div class="box failure" id="failure">(.*?)</div>', html, re.S)
    assert box is not None
    assert "ModelReplyError: bad" in box.group(1) and "&lt;script&gt;" in box.group(1)
    assert "FinalDecision from answer, 2 attempt(s)" in box.group(1) and "1 calls (1 failed), 900 tokens" in box.group(
        1
    )
    assert HOSTILE not in html
    assert "No evidence was collected" not in html  # no decision was reached: no empty scratchpad either


def test_report_of_an_unknown_run_is_one_line(world: World, tmp_path: Path) -> None:
    done = subprocess.run(
        [EXE, "report", "nope", "--db", world.db, "-o", str(tmp_path / "x.html")], capture_output=True, text=True
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


# -- a run in progress ----------------------------------------------------------------------------------


def test_run_page_follows_a_run_in_progress(world: World, page: Page) -> None:
    port = free_port()
    standin = subprocess.Popen([EXE, "standin", "--port", str(port), "--latency", "0.4"], stderr=subprocess.DEVNULL)
    env = {**os.environ, "VIDEOATLAS_HOME": str(world.root / "home")}
    ask = subprocess.Popen(
        [
            EXE,
            "ask",
            str(world.video),
            "-q",
            "What number is shown?",
            "-c",
            "zero",
            "-c",
            "one",
            "--base-url",
            f"http://127.0.0.1:{port}/v1",
            "--db",
            world.db,
            "--k",
            "4",
            "--cell-px",
            "96",
            "--workers",
            "2",
            "--rounds",
            "2",
            "--json",
            "--quiet",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        wait_http(f"http://127.0.0.1:{port}/health", standin)
        link = page.locator("tr.run-row a").first
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:  # the list shows the run once it started
            assert ask.poll() is None, ask.communicate()[1]
            page.goto(world.base + "/runs?status=running&agent=video-rlm")
            if link.count():
                break
            time.sleep(0.2)
        link.click()
        expect(page.locator("#run-status")).to_have_text("running")
        body = page.locator("section.run")
        steps_at_open = int(body.get_attribute("data-steps") or 0)
        page.evaluate("() => { window.__same_page = true; }")
        page.wait_for_function(
            f"() => Number(document.querySelector('section.run').dataset.steps) > {steps_at_open}", timeout=240_000
        )
        shot(page, "run-live")
        expect(page.locator("#run-status")).to_have_text("finished", timeout=240_000)
        assert page.evaluate("() => window.__same_page") is True  # updated in place, not reloaded
        assert page.locator("tr.step").count() >= 2
        out, err = ask.communicate(timeout=240)
        assert ask.returncode == 0, err
        page.goto(world.base + f"/runs/{json.loads(out)['run_id']}")
        shot(page, "run-standin")
    finally:
        if ask.poll() is None:
            ask.kill()
            ask.wait()
        standin.terminate()
        standin.wait(timeout=30)
