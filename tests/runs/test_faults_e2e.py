"""End to end over HTTP against a stand-in that sends bad replies: every run ends, none is lost.

The stand-in injects replies that ignore the schema, cut-off JSON and out-of-range cell ids, each
at 30% of requests. Replies with some bad entries are used in part; replies that cannot be read
even after a re-ask are replaced by the node's fallback; the final decision is never guessed. Each
run either finishes (with an answer, or with "no valid final decision" when that call failed
twice) or stops with a clean error that leaves it resumable. Nothing is left running.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text

from db_helpers import sqlite_url
from videoatlas.errors import VideoAtlasError
from videoatlas.llm.settings import EndpointSettings
from videoatlas.runs import resume_run, run_question
from videoatlas.runtime.context import RunConfig
from videoatlas_standin.perception import Reader
from videoatlas_standin.server import RunningServer, StandinConfig, StandinServer

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


@pytest.fixture(scope="module")
def faulty() -> Iterator[RunningServer]:
    faults = {"schema": 0.3, "malformed": 0.3, "range": 0.3}
    with RunningServer(StandinServer(StandinConfig(faults=faults, seed=7), reader=Reader())) as server:
        yield server


async def test_runs_against_bad_replies_finish_or_stop_resumably(
    synth_video: tuple[Path, dict[str, Any]], faulty: RunningServer, tmp_path: Path
) -> None:
    video, truth = synth_video
    db = sqlite_url(tmp_path / "runs.db")
    endpoint = EndpointSettings(base_url=faulty.base_url, model="", max_retries=1, backoff_s=0.01)
    config = RunConfig.of(cell_px=160, workers=2, rounds=2, dfs_steps=3)
    outcomes: dict[str, str] = {}
    for n, q in enumerate(truth["questions"][:4]):
        run_id = f"faulty-{n}"
        try:
            result = await run_question(video, q["question"], q["choices"], config, endpoint, db_url=db, run_id=run_id)
        except VideoAtlasError as exc:  # a clean error: the run must be resumable
            outcomes[run_id] = f"error: {exc}"
            continue
        assert result.answer or "final decision failed" in result.stop_reason, result.stop_reason
        outcomes[run_id] = "answered" if result.answer else "no valid decision"
        repairs = result.state["repairs"]
        assert result.cost.fallbacks == sum(1 for r in repairs if r.kind == "fallback")
    with create_engine(db.replace("sqlite://", "sqlite+pysqlite://")).connect() as conn:
        rows: dict[str, str] = {str(r[0]): str(r[1]) for r in conn.execute(text("SELECT id, status FROM va_runs"))}
    assert set(rows) == set(outcomes)  # none is lost
    for run_id, outcome in outcomes.items():
        expected = "failed" if outcome.startswith("error") else "finished"
        assert rows[run_id] == expected, (run_id, outcome)
        if expected == "failed":  # resumable: a second attempt picks it up from its checkpoint
            with contextlib.suppress(VideoAtlasError):  # the faults may strike again: resuming is what counts
                await resume_run(run_id, db, endpoint=endpoint)
    assert any(o == "answered" for o in outcomes.values()), outcomes
    stats = faulty.standin.stats
    assert sum(stats.faults.values()) >= 10  # the faults really were sent
