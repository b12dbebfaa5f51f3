"""``videoatlas runs``: the runs in a database, with their agent, their owner's liveness, error and cost so far."""

from __future__ import annotations

from typing import Any

from videoatlas.persistence.lease import LeaseTiming
from videoatlas.persistence.queries import RunSearch, recent_runs
from videoatlas.persistence.store import TraceStore
from videoatlas.textsafe import escape


def list_runs(store: TraceStore, search: RunSearch, limit: int, timing: LeaseTiming) -> list[dict[str, Any]]:
    """The newest runs ``search`` finds, as plain data (its status is the status as shown, ``stale`` included)."""
    found = recent_runs(store.engine, search, limit, timing)
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
                "agent": r.agent,
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
    from rich.cells import cell_len
    from rich.console import Console
    from rich.table import Table

    show_error = any(d["error"] for d in data)
    fixed = ["id", "status", "agent", "created (UTC)", "calls", "tokens"]
    rows = [
        [
            escape(d["id"]),
            escape(d["status"]),
            escape(d["agent"]),
            escape(d["created_at"][:19].replace("T", " ")),
            "" if d["calls"] is None else str(d["calls"]),
            "" if d["tokens"] is None else f"{d['tokens']:,}",
            f"{_brief(d['question'], 60)} -> {_brief(d['answer'] or '-', 30)}",
            *([_brief(d["error"] or "", 100)] if show_error else []),
        ]
        for d in data
    ]
    question_w, error_w = _shrunk(
        [max(cell_len(cell) for cell in [name, *(row[i] for row in rows)]) for i, name in enumerate(fixed)],
        max((cell_len(row[-1]) for row in rows), default=0) if show_error else None,
        width,
    )
    table = Table(box=None, pad_edge=False, show_edge=False, header_style="")
    for name in fixed:
        table.add_column(name, no_wrap=True, justify="right" if name in ("calls", "tokens") else "left")
    # These two shrink to fit a narrow terminal; their headers are cut like their cells, never wrapped.
    table.add_column(_cell("question -> answer"), min_width=12, max_width=question_w)
    if show_error:
        table.add_column(_cell("error"), min_width=5, max_width=error_w)
    for row in rows:
        table.add_row(*(_cell(cell) for cell in row))
    console = Console(
        width=width or 100_000, color_system=None, force_terminal=False, emoji=False, markup=False, highlight=False
    )
    with console.capture() as captured:
        console.print(table, crop=False)
    return [line.rstrip() for line in captured.get().splitlines()]


def _shrunk(fixed: list[int], error: int | None, width: int | None) -> tuple[int | None, int | None]:
    """Widths for the question and error columns so that the table fits ``width`` (None: no limit).

    The fixed columns keep their widths; the error column takes at most a third of what is left, at
    least 5 cells, and the question the rest, at least 12 (a terminal narrower than that overflows).
    """
    if width is None:
        return None, None
    columns = len(fixed) + 1 + (error is not None)
    left = width - sum(fixed) - 2 * (columns - 1)
    if error is None:
        return max(12, left), None
    error_w = min(error, max(5, left // 3))
    return max(12, left - error_w - 2), error_w


def _cell(text: str) -> Any:
    """A table cell of plain text (never read as rich markup) kept on one line, cut with an ellipsis."""
    from rich.text import Text

    return Text(escape(text), no_wrap=True, overflow="ellipsis")


def _brief(text: str, cells: int) -> str:
    """``text`` escaped and cut to at most ``cells`` terminal cells (a wide character takes two)."""
    from rich.cells import cell_len, set_cell_size

    text = escape(text)
    return text if cell_len(text) <= cells else set_cell_size(text, cells - 1) + "…"
