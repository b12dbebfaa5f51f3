"""``langgraph.json``, made from the agent registry: one graph per agent, nothing else to keep in step.

``python -m videoatlas.served.langgraph_json`` writes the file the project's root holds (a test checks
that the two agree, so an agent added to the registry is served once this is rerun).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from videoatlas.agents.registry import agent_names

MODULE = "videoatlas.served.graphs"
"""The module that holds every agent's graph factory."""


def variable(agent: str) -> str:
    """The attribute of :data:`MODULE` that is ``agent``'s graph factory (``video-rlm`` -> ``video_rlm``)."""
    return agent.replace("-", "_")


def served_graphs() -> dict[str, str]:
    """Graph id -> ``module:attribute``, for every registered agent (``langgraph.json``'s ``graphs``)."""
    return {agent: f"{MODULE}:{variable(agent)}" for agent in agent_names()}


def config() -> dict[str, Any]:
    """The whole of ``langgraph.json``: the project installed as it is, and its graphs."""
    return {
        "$schema": "https://langgra.ph/schema.json",
        "dependencies": ["."],
        "graphs": served_graphs(),
        "python_version": "3.11",
    }


def render() -> str:
    """``langgraph.json``'s text, as checked in."""
    return json.dumps(config(), indent=2) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Write ``langgraph.json`` to the path given (default: stdout)."""
    args = sys.argv[1:] if argv is None else argv
    if args:
        Path(args[0]).write_text(render(), encoding="utf-8")
    else:
        sys.stdout.write(render())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
