"""The calibration on the web UI's eval and compare pages, in real headless Chromium.

Three eval folders served by ``videoatlas ui``: the hand-made rows whose figures are worked out in
``tests/evals/test_calibration_report.py`` (the page must show the same numbers and the reliability
plot); rows commit e9ceea9 wrote, before probabilities were recorded (the page says so, and there is
no plot); and the hand-made questions again without the two fields, to compare with the first.
Screenshots go to ``tmp/artifacts/ui``.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Page, expect

from browser_helpers import ARTIFACTS, chromium, ui_server, watched_tab
from calibration_helpers import eval_folder, hand_made_rows
from db_helpers import sqlite_url

pytestmark = [pytest.mark.e2e, pytest.mark.browser]

FIXTURES = Path(__file__).parents[1] / "fixtures" / "e9ceea9"


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("ui-calibration")
    calibrated = eval_folder(root / "calibrated", hand_made_rows())
    old = shutil.copytree(FIXTURES / "eval-rlm", root / "old")
    unrecorded = [{k: v for k, v in r.items() if k not in ("probabilities", "confidence")} for r in hand_made_rows()]
    before = eval_folder(root / "before", unrecorded, agent="uniform")
    with ui_server(sqlite_url(root / "runs.db"), root / "home", [calibrated, old, before], ready="/evals") as url:
        yield url


@pytest.fixture(scope="module")
def page(base: str) -> Iterator[Page]:
    with chromium() as browser, watched_tab(browser) as tab:
        yield tab


def test_the_eval_page_shows_the_calibration_and_the_reliability_plot(base: str, page: Page) -> None:
    page.goto(base + "/evals/0")
    row = page.locator("#calibration tr.calibration-row[data-name='all']")
    expect(row.locator(".rows")).to_have_text("12")
    expect(row.locator(".ece")).to_have_text("0.146")
    expect(row.locator(".brier")).to_have_text("0.516 (10)")
    expect(row.locator(".brier-binary")).to_have_text("0.040 (2)")
    expect(row.locator(".coverage-50")).to_have_text("83.3%")
    expect(row.locator(".coverage-80")).to_have_text("70.0%")
    expect(row.locator(".coverage-100")).to_have_text("58.3%")
    expect(row.locator(".declined-count")).to_have_text("1")
    expect(row.locator(".no-probability")).to_have_text("2")
    bins = page.locator("#calibration table.reliability tr.bin")
    expect(bins).to_have_count(6)
    expect(bins.nth(5).locator("td")).to_have_text(["0.9–1.0", "3", "0.950", "66.7%"])
    plot = page.locator("#reliability-plot")
    plot.scroll_into_view_if_needed()
    page.wait_for_function("document.querySelector('#reliability-plot').naturalWidth > 0")
    assert plot.evaluate("img => img.naturalWidth") > 300
    page.locator("#calibration").screenshot(path=str(ARTIFACTS / "eval-calibration.png"))
    page.screenshot(path=str(ARTIFACTS / "eval-calibration-page.png"), full_page=True)


def test_an_eval_without_probabilities_says_so_and_has_no_plot(base: str, page: Page) -> None:
    page.goto(base + "/evals/1")
    expect(page.locator("#no-probabilities")).to_contain_text("no probabilities were recorded (1 answered question(s)")
    expect(page.locator("#reliability-plot")).to_have_count(0)
    assert httpx.get(base + "/evals/1/reliability.png").status_code == 404
    assert httpx.get(base + "/evals/0/reliability.png").content[:8] == b"\x89PNG\r\n\x1a\n"


def test_compare_shows_both_sides_calibration(base: str, page: Page) -> None:
    """B's 14 answered questions carry no probability (q13 declined, q16 failed; q17 has no known answer: unpaired)."""
    page.goto(base + "/compare?a=0&b=2")
    a = page.locator("#calibration tr.calibration-row[data-name='A']")
    b = page.locator("#calibration tr.calibration-row[data-name='B']")
    expect(a.locator(".rows")).to_have_text("12")
    expect(a.locator(".ece")).to_have_text("0.146")
    expect(a.locator(".brier")).to_have_text("0.516 (10)")
    expect(b.locator(".rows")).to_have_text("0")
    expect(b.locator(".ece")).to_have_text("-")
    expect(b.locator(".declined-count")).to_have_text("1")
    expect(b.locator(".no-probability")).to_have_text("14")
    page.locator("#calibration").screenshot(path=str(ARTIFACTS / "compare-calibration.png"))
