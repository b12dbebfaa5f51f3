"""Building blocks of a run page that every agent's own section and the web UI share, as plain data.

An agent's page hook (:attr:`videoatlas.agents.base.Agent.page_view`) turns its trace into the
section of the run page that shows how it worked; the UI (``videoatlas.ui.view``) lays out the
rest. Both read replies, outline grid cells and write intervals the same way through this module,
which sits with the agents so that both may import it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from videoatlas.environment.geometry import cell_interval, parse_path
from videoatlas.environment.timefmt import format_ts


@dataclass(frozen=True, slots=True)
class PageContext:
    """What an agent's page hook is given besides the trace."""

    k: int
    """The run's grid size."""
    duration: float | None = None
    """The video's length as probed from its file (None: the file cannot be read now)."""
    history: dict[int, dict[str, Any]] = field(default_factory=dict)
    """What the agent's history hook read from the run's checkpoints (empty without one)."""


def reply_json(call: dict[str, Any] | None) -> dict[str, Any]:
    """A call's reply as parsed JSON (empty when there is none or it is not a JSON object)."""
    if not call or not call.get("reply_text"):
        return {}
    try:
        value = json.loads(call["reply_text"])
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def grid_cells(cells: Sequence[int], k: int, labels: dict[int, str] | None = None) -> list[dict[str, Any]]:
    """Where root cells lie on a K x K sheet, in percent (cells outside the sheet are left out)."""
    out = []
    for cell in sorted(set(cells)):
        if 0 <= cell < k * k:
            row, col = divmod(cell, k)
            out.append(
                {
                    "cell": cell,
                    "left": round(100 * col / k, 3),
                    "top": round(100 * row / k, 3),
                    "size": round(100 / k, 3),
                    "label": (labels or {}).get(cell, str(cell)),
                }
            )
    return out


def root_cell(path: str | None) -> int | None:
    """The root cell a cell path starts in (``12/5`` -> 12); None for no path or a time range."""
    if not path:
        return None
    head = path.strip("/").split("/")[0]
    return int(head) if head.isdigit() else None


def interval_text(start: float, end: float) -> str:
    """``01:02.5–01:10.0``."""
    return f"{format_ts(start, 1)}–{format_ts(end, 1)}"


def view_interval(view: str, duration: float | None, k: int) -> str:
    """The stretch of video a view shows: a time range (``12.0-30.5``) or a cell path (needs the duration)."""
    if "-" in view:
        start, _, end = view.partition("-")
        try:
            return interval_text(float(start), float(end))
        except ValueError:
            return view
    if duration is None:
        return ""
    try:
        iv = cell_interval(duration, parse_path(view, k), k)
    except ValueError:
        return ""
    return interval_text(iv.start, iv.end)


def call_view(call: dict[str, Any] | None) -> dict[str, Any] | None:
    """A model call as the page shows it: the call with its total tokens."""
    if call is None:
        return None
    return {
        **call,
        "tokens": call["prompt_tokens"] + call["completion_tokens"],
    }


def timeline(trace: dict[str, Any]) -> list[dict[str, Any]]:
    """Any agent's node events in order, each with the calls it made (reply text, images)."""
    made: dict[tuple[str, str | None, int | None], list[dict[str, Any]]] = {}
    for call in trace["calls"]:
        made.setdefault((call["node"], call["worker"], call["round"]), []).append(call)
    out = []
    for event in trace["timeline"]:
        mine = made.pop((event["node"], event["worker"], event["round"]), [])
        out.append({**event, "call_list": [call_view(c) for c in mine]})
    for (node, worker, round_no), rest in made.items():  # calls of a node that has not ended yet
        out.append(
            {
                "node": node,
                "worker": worker,
                "round": round_no,
                "duration_s": None,
                "error": None,
                "calls": len(rest),
                "tokens": sum(c["prompt_tokens"] + c["completion_tokens"] for c in rest),
                "call_list": [call_view(c) for c in rest],
            }
        )
    return out
