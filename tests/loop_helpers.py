"""VideoARM's and VideoSeek's tool loops as the tests drive them: each thinker's schemas, a tool call, its words."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from videoatlas.agents.registry import get_agent
from videoatlas.environment.frames import FrameSource
from videoatlas.runtime.context import AgentContext


@dataclass(frozen=True)
class Loop:
    """How a test drives one agent's loop: its thinker's and tool's schemas, its tool call, its words."""

    thinker: str
    """The thinker's reply schema."""
    tool: str
    """The report schema of the tool it calls."""
    said: str
    """The thinker's words field."""
    call: dict[str, Any]
    """A tool call it makes (every time: it never answers by itself)."""
    report: dict[str, Any]
    """The tool's report."""
    limit: str
    """The setting that limits its tool steps."""
    taken: str
    """The output key that lists its tool steps."""
    at: str
    """How its prompt numbers a step ("This is step")."""
    who: str
    """Its role, as a run it ends says ("the controller answered")."""
    settings: dict[str, Any]
    """Settings that keep its tools' looks small."""


LOOPS = {
    "videoarm": Loop(
        thinker="ControllerStep",
        tool="SnapReport",
        said="reason",
        call={"tool": "scene_snapper", "ranges": [], "num_frames": 30},
        report={"caption": "numbers in blocks", "frames": []},
        limit="steps",
        taken="memory",
        at="This is step",
        who="controller",
        settings={"snap_px": 96},
    ),
    "videoseek": Loop(
        thinker="PlannerTurn",
        tool="SkimReport",
        said="thought",
        call={"tool": "skim", "query": "a number", "start": 0.0, "end": 8.0},
        report={"frames": [], "summary": "numbers in blocks", "relevant": []},
        limit="turns",
        taken="turns",
        at="This is turn",
        who="planner",
        settings={"alpha": 1},
    ),
}


async def counter_question(agent: str, ctx: AgentContext, source: FrameSource) -> dict[str, Any]:
    """``agent``'s answer to "Which number is shown?" (4 or 7) on the counter video ``ctx`` sees; ``source`` closed."""
    question = {"question": "Which number is shown?", "choices": ["4", "7"]}
    try:
        out = await get_agent(agent).build(None).ainvoke(question, {"recursion_limit": 100}, context=ctx)
    finally:
        source.close()
    return dict(out)
