"""How a VideoSeek run reads back: turn by turn, the planner's thought, the tool it called, what came back.

``trace`` shows the turns; the run page shows them above the node timeline.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from videoatlas.agents.page import PageContext, timeline
from videoatlas.agents.videoseek.views import turn_header
from videoatlas.agents.views import step_head


def detail(values: dict[str, Any], calls: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The trajectory as plain data."""
    return {
        "turns": [
            {
                "index": t.index,
                "header": turn_header(t),
                "thought": t.thought,
                "tool": t.tool,
                "query": t.query,
                "span": [t.start, t.end],
                "frames": len(t.frames),
                "observation": t.observation,
                "flagged": t.relevant,
            }
            for t in values.get("turns", [])
        ]
    }


def lines(found: dict[str, Any], repairs: dict[int, list[str]]) -> list[str]:
    """One block per turn: call, thought, the first lines of the report."""
    out = []
    for turn in found["turns"]:
        out += step_head(turn, "thought", repairs)
        report = [ln for ln in turn["observation"].splitlines() if ln.strip()]
        out += [f"    | {ln[:160]}" for ln in report[:6]]
        if len(report) > 6:
            out.append(f"    | ... {len(report) - 6} more line(s)")
    return out


def page_view(trace: dict[str, Any], context: PageContext) -> dict[str, Any]:
    """The run page's VideoSeek section: the turns, then every node with its calls."""
    return {"turns": trace["detail"].get("turns", []), "timeline": timeline(trace)}
