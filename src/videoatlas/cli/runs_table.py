"""``videoatlas runs``: the runs in a database, with their owner's liveness, error and cost so far."""

from __future__ import annotations

from typing import Any

from videoatlas.persistence.lease import LeaseTiming
from videoatlas.persistence.queries import recent_runs
from videoatlas.persistence.statuses import RUN_STATUSES
from videoatlas.persistence.store import TraceStore
from videoatlas.textsafe import escape

STATUSES = RUN_STATUSES


def list_runs(store: TraceStore, status: str | None, limit: int, timing: LeaseTiming) -> list[dict[str, Any]]:
    """Recent runs as plain data, newest first; ``status`` filters on the status as shown (``stale`` included)."""
    found = recent_runs(store.engine, status, limit, timing)
    spent = store.call_totals([s.row.id for s in found if s.row.status != "finished"])
    data: list[dict[str, Any]] = []
    for s in found:
        r, holder, shown = s.row, s.holder, s.status
        cost = r.cost or {}
        so_far = r.status != "finished" and "calls" not in cost
        if so_far:
            cost = spent.get(r.id, {"calls": 0, "tokens": 0})
        error = r.error
        if shown == "stale" and not error:
            error = (
                f"owner stopped: {holder.describe()}"
                if holder is not None
                else "owner stopped: no process holds the run (stopped before leases were kept, or its lease was lost)"
            )
        data.append(
            {
                "id": r.id,
                "status": shown,
                "created_at": r.created_at.isoformat(),
                "question": r.question,
                "answer": r.answer,
                "video": r.video_path,
                "calls": cost.get("calls"),
                "tokens": cost.get("tokens"),
                "cost_so_far": so_far,
                "stop_reason": r.stop_reason,
                "error": error,
                "owner": None
                if holder is None
                else {"owner": holder.owner, "host": holder.host, "pid": holder.pid, "heartbeat_age_s": holder.age_s},
            }
        )
    return data


def runs_lines(data: list[dict[str, Any]], width: int | None = None) -> list[str]:
    """The runs as a table (rich), one line a run, every cell escaped and measured in terminal cells.

    ``width``: the terminal's width, which the question and error columns shrink to fit (cut with
    an ellipsis); None (a pipe, a file) lays the table out at its natural width. The error column
    is shown only when some run has an error.
    """
    from rich.console import Console
    from rich.table import Table

    show_error = any(d["error"] for d in data)
    table = Table(box=None, pad_edge=False, show_edge=False, header_style="")
    for name in ("id", "status", "created (UTC)"):
        table.add_column(name, no_wrap=True)
    for name in ("calls", "tokens"):
        table.add_column(name, justify="right", no_wrap=True)
    table.add_column("question -> answer", min_width=12)  # these two shrink to fit a narrow terminal
    if show_error:
        table.add_column("error", min_width=5)
    for d in data:
        answer = d["answer"] or "-"
        row = [
            _cell(d["id"]),
            _cell(d["status"]),
            _cell(d["created_at"][:19].replace("T", " ")),
            _cell("" if d["calls"] is None else str(d["calls"])),
            _cell("" if d["tokens"] is None else f"{d['tokens']:,}"),
            _cell(f"{_brief(d['question'], 60)} -> {_brief(answer, 30)}"),
        ]
        if show_error:
            row.append(_cell(_brief(d["error"] or "", 100)))
        table.add_row(*row)
    console = Console(
        width=width or 100_000, color_system=None, force_terminal=False, emoji=False, markup=False, highlight=False
    )
    with console.capture() as captured:
        console.print(table, crop=False)
    return [line.rstrip() for line in captured.get().splitlines()]


def _cell(text: str) -> Any:
    """A table cell of plain text (never read as rich markup) kept on one line, cut with an ellipsis."""
    from rich.text import Text

    return Text(escape(text), no_wrap=True, overflow="ellipsis")


def _brief(text: str, cells: int) -> str:
    """``text`` escaped and cut to at most ``cells`` terminal cells (a wide character takes two)."""
    from rich.cells import cell_len, set_cell_size

    text = escape(text)
    return text if cell_len(text) <= cells else set_cell_size(text, cells - 1) + "…"
