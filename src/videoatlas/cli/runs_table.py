"""``videoatlas runs``: the runs in a database, with their owner's liveness, error and cost so far."""

from __future__ import annotations

from typing import Any

from videoatlas.cli.terminal import RUN_STATUSES, escape
from videoatlas.persistence.lease import LeaseTiming, effective_status
from videoatlas.persistence.store import TraceStore

STATUSES = RUN_STATUSES


def _brief(text: str, width: int) -> str:
    text = escape(text)
    return text if len(text) <= width else text[: width - 1] + "…"


def list_runs(store: TraceStore, status: str | None, limit: int, timing: LeaseTiming) -> list[dict[str, Any]]:
    """Recent runs as plain data, newest first; ``status`` filters on the status as shown (``stale`` included)."""
    stored = "running" if status == "stale" else status
    rows = store.runs(stored, limit)
    owners = store.holders([r.id for r in rows if r.status == "running"], timing)
    spent = store.call_totals([r.id for r in rows if r.status != "finished"])
    data: list[dict[str, Any]] = []
    for r in rows:
        holder = owners.get(r.id)
        shown = effective_status(r.status, holder)
        if status is not None and shown != status:
            continue
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


def runs_lines(data: list[dict[str, Any]]) -> list[str]:
    """The runs as an aligned table; every column is as wide as its longest entry, text escaped."""
    cells = []
    for d in data:
        answer = d["answer"] or "-"
        cells.append(
            (
                escape(d["id"]),
                d["status"],
                d["created_at"][:19].replace("T", " "),
                "" if d["calls"] is None else str(d["calls"]),
                "" if d["tokens"] is None else f"{d['tokens']:,}",
                _brief(f"{_brief(d['question'], 60)} -> {_brief(answer, 30)}", 94),
                _brief(d["error"] or "", 100),
            )
        )
    header = ("id", "status", "created (UTC)", "calls", "tokens", "question -> answer", "error")
    widths = [max(len(row[i]) for row in [header, *cells]) for i in range(len(header))]
    right = {3, 4}
    show_error = any(row[6] for row in cells)
    lines = []
    for row in [header, *cells]:
        shown = row if show_error else row[:6]
        parts = [
            cell.rjust(w) if i in right else cell.ljust(w)
            for i, (cell, w) in enumerate(zip(shown, widths, strict=False))
        ]
        lines.append("  ".join(parts).rstrip())
    return lines
