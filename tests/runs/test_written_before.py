"""Runs and checkpoints written before tokens by role and agent-owned evidence locations still read, report and resume.

The database in ``tests/fixtures/e9ceea9/`` was written by the code of commit e9ceea9 (see its README): a finished
Video-RLM run, a Video-RLM run stopped while its uncertainty analysis waited (round 1's evidence in its
checkpoint) and a finished uniform run, their costs with ``master_tokens``/``worker_tokens`` and their evidence
with ``round``/``worker``/``depth``/``cell``.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from agent_helpers import ScriptedChat, default_reply
from db_helpers import sqlite_url
from videoatlas.agents.registry import saved_snapshot
from videoatlas.agents.video_rlm.state.models import found_by, found_in_cell, found_in_round
from videoatlas.cli.run_view import print_result
from videoatlas.inspect import load_trace, trace_lines
from videoatlas.runs import load_finished, resume_run
from videoatlas.ui.report import report_html

pytestmark = pytest.mark.e2e

FIXTURES = Path(__file__).parents[1] / "fixtures" / "e9ceea9"

RLM_WHERE = {
    "r1-r1w2-0": {"round": 1, "worker": "r1w2", "depth": 2, "cell": "1/0"},
    "r1-r1w1-0": {"round": 1, "worker": "r1w1", "depth": 2, "cell": "3/0"},
}
"""Where Video-RLM's workers found round 1's two items, as the old fields said it."""


@pytest.fixture
def db(tmp_path: Path) -> str:
    """A copy of the old database, its runs pointed at the copied video (the same file: its identity matches)."""
    shutil.copy(FIXTURES / "counter.mp4", tmp_path / "counter.mp4")
    shutil.copy(FIXTURES / "runs.db", tmp_path / "runs.db")
    with sqlite3.connect(tmp_path / "runs.db") as conn:
        conn.execute("UPDATE va_runs SET video_path = ?", (str(tmp_path / "counter.mp4"),))
    return sqlite_url(tmp_path / "runs.db")


async def test_an_old_finished_run_reads_back_with_its_roles_and_places(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    result = await load_finished("rlm-finished", db)
    assert result is not None and result.answer == "one" and result.cited == ["r1-r1w2-0"]
    assert [(e.id, e.place, dict(e.where)) for e in result.evidence] == [
        ("r1-r1w2-0", "cell 1/0", RLM_WHERE["r1-r1w2-0"]),
        ("r1-r1w1-0", "cell 3/0", RLM_WHERE["r1-r1w1-0"]),
    ]
    first = result.evidence[0]
    assert (found_in_round(first), found_by(first), found_in_cell(first)) == (1, "r1w2", "1/0")
    assert result.cost.tokens_by_role == {"master": 5100, "worker": 2920} and result.cost.tokens == 8020
    shown = result.as_dict()
    assert shown["evidence"][0]["place"] == "cell 1/0" and shown["evidence"][0]["where"] == RLM_WHERE["r1-r1w2-0"]
    assert shown["cost"]["tokens_by_role"] == {"master": 5100, "worker": 2920}
    assert "master_tokens" not in shown["cost"]
    print_result(result)
    printed = capsys.readouterr().out
    assert "tokens by role: master 5,100, worker 2,920)" in printed
    assert "(cell 1/0, conf 0.50) *: the counter reads a number" in printed


async def test_an_old_uniform_run_keeps_its_cell_and_counts_its_calls_as_the_old_master_role(db: str) -> None:
    result = await load_finished("uniform-finished", db)
    assert result is not None
    (item,) = result.evidence
    assert (item.id, item.place, dict(item.where)) == (
        "u-1-3",
        "cell 1/3",
        {"round": 0, "worker": "uniform", "depth": 0, "cell": "1/3"},
    )
    assert result.cost.tokens_by_role == {"master": 1020}  # the worker role spent nothing: left out


async def test_an_old_run_traces_and_reports(db: str) -> None:
    trace = await load_trace("rlm-finished", db)
    assert [(e["id"], e["place"], e["where"]) for e in trace["evidence"]] == [
        ("r1-r1w2-0", "cell 1/0", RLM_WHERE["r1-r1w2-0"]),
        ("r1-r1w1-0", "cell 3/0", RLM_WHERE["r1-r1w1-0"]),
    ]
    assert trace["cost_state"]["tokens_by_role"] == {"master": 5100, "worker": 2920}
    lines = trace_lines(trace)
    assert "  tokens by role: master 5,100, worker 2,920" in lines
    assert "  [A] 00:01.9 cell 1/0: the counter reads a number" in lines
    page = await report_html("rlm-finished", db)
    assert "<td>cell 1/0</td>" in page and "<td>cell 3/0</td>" in page
    assert "8,020 tokens in 9 calls (by role: master 5,100, worker 2,920)" in page


async def test_an_old_stopped_run_resumes_with_its_evidence_ids_and_roles_kept(db: str) -> None:
    before = await saved_snapshot(db, "video-rlm", "rlm-stopped")
    assert before.next == ("analyze_uncertainty",)
    assert before.values["cost"].tokens_by_role == {"master": 3060, "worker": 2920}

    def script(name: str, text: str, schema: dict[str, Any]) -> Any:
        if name == "FinalDecision":
            return {"judgements": [], "answer": 1, "reasoning": "the frame shows it", "evidence": ["[A]"]}
        return default_reply(name, text, schema)

    chat = ScriptedChat(script=script)
    resumed = await resume_run("rlm-stopped", db, chat_model=chat)
    assert [name for name, _ in chat.seen] == ["UncertaintyAnalysis", "FinalDecision"]  # round 1 is not re-run
    assert resumed.answer == "one" and resumed.cited == ["r1-r1w2-0"]
    assert {e.id: dict(e.where) for e in resumed.evidence} == RLM_WHERE
    # The old checkpoint's tokens stay under the old roles; the two new calls are the master's (1,020 each).
    assert resumed.cost.tokens_by_role == {"master": 3060 + 2 * 1020, "worker": 2920}
    assert resumed.cost.tokens == sum(resumed.cost.tokens_by_role.values())
