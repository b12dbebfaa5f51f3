"""A run's record (``runs/frame.py``) over a real SQLite store: a new run's row written, a stored run gone on with
only on the video it started on, the lease given back on the way out, the start told to the progress callback."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from videoatlas.errors import BadInputError
from videoatlas.persistence.store import RunRow, TraceStore
from videoatlas.runs.frame import open_frame

pytestmark = pytest.mark.unit


def _row(run_id: str, identity: str) -> RunRow:
    return RunRow(
        id=run_id, status="running", agent="uniform", question="Which code?", choices=["A1", "B2"],
        video_path="/videos/v.mp4", video_identity=identity, config={}, endpoint={}, prompt_set="builtin:default",
        prompt_sha="0" * 16, templates={}, subtitles=None, subtitle_offset=0.0, cost={},
    )  # fmt: skip


async def test_a_stored_run_goes_on_only_on_its_own_video(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path}/runs.db"
    events: list[dict[str, Any]] = []
    async with open_frame("run-one", db, True, None, False, False) as frame:
        assert not frame.resumed and frame.tracer is not None and frame.tracer.run_id == "run-one"
        await frame.start(_row("run-one", "identity-a"), events.append)
    assert events == [{"event": "run_started", "run_id": "run-one"}]
    store = TraceStore.shared(db)
    try:
        row = store.run("run-one")
        assert row is not None and (row.status, row.video_identity) == ("running", "identity-a")
        store.update_run("run-one", status="interrupted", error="interrupted by SIGTERM")
    finally:
        store.release()

    # The same id again: the stored run, refused on another video, its row left as it was.
    async with open_frame("run-one", db, True, None, True, False) as frame:
        assert frame.resumed
        with pytest.raises(BadInputError, match="is not the video run run-one was started on"):
            await frame.start(_row("run-one", "identity-b"), events.append)
    # On its own video it runs again, and the callback hears that it was resumed; the lease was given back
    # on the way out each time, or this claim would be refused.
    async with open_frame("run-one", db, True, None, True, False) as frame:
        await frame.start(_row("run-one", "identity-a"), events.append)
    assert events[1:] == [{"event": "run_started", "run_id": "run-one", "resumed": True}]
    store = TraceStore.shared(db)
    try:
        row = store.run("run-one")
        assert row is not None and (row.status, row.error) == ("running", None)
    finally:
        store.release()


async def test_a_run_that_is_not_kept_has_no_store_lease_or_tracer(tmp_path: Path) -> None:
    events: list[dict[str, Any]] = []
    async with open_frame("loose", f"sqlite:///{tmp_path}/unused.db", False, None, True, False) as frame:
        assert (frame.url, frame.store, frame.owned, frame.tracer, frame.resumed) == (None, None, None, None, False)
        await frame.start(_row("loose", "identity-a"), events.append)
    assert events == [{"event": "run_started", "run_id": "loose"}]
    assert not (tmp_path / "unused.db").exists()
