"""``videoatlas graph --agent NAME``: an agent's LangGraph graph as Mermaid text, or a PNG where one can be drawn."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from videoatlas.cli.options import Subparsers, add_agent_option, add_output_option
from videoatlas.cli.outputs import write_atomically
from videoatlas.errors import BadInputError

TEXT_SUFFIXES = (".mmd", ".mermaid")


def add_graph_parser(sub: Subparsers) -> None:
    """``videoatlas graph [--agent NAME] [-o FILE]``."""
    p = sub.add_parser("graph", help="print an agent's LangGraph graph as Mermaid text (or write it with -o)")
    add_agent_option(p, "%(choices)s (default %(default)s)", metavar="NAME")
    add_output_option(
        p,
        "FILE",
        "write to FILE instead: .mmd or .mermaid (Mermaid text), .png (needs pygraphviz)",
        required=False,
    )
    p.set_defaults(func=cmd_graph)


def _png_unavailable() -> str | None:
    """Why a PNG cannot be drawn here, or None when it can (LangGraph's ``draw_png``, through pygraphviz)."""
    import importlib.util

    if importlib.util.find_spec("pygraphviz") is None:
        return (
            "a PNG needs pygraphviz (pip install pygraphviz, with Graphviz installed), which is not installed "
            "here; Mermaid's own PNG renderer needs the network: write -o graph.mmd and render it elsewhere"
        )
    return None


def cmd_graph(args: argparse.Namespace) -> int:
    """Print the graph as Mermaid text, or write it to ``-o`` (``.mmd``: Mermaid text, ``.png``: a picture)."""
    out = Path(args.output) if args.output else None
    if out is not None:
        suffix = out.suffix.lower()
        if suffix not in (*TEXT_SUFFIXES, ".png"):
            raise BadInputError(f"-o {out}: use .mmd or .mermaid (Mermaid text) or .png")
        if out.is_dir():
            raise BadInputError(f"-o {out} is a folder; give a file name")
        if not out.parent.is_dir():
            raise BadInputError(f"-o {out}: no folder {out.parent}")
        if suffix == ".png" and (problem := _png_unavailable()) is not None:
            raise BadInputError(problem)
    from videoatlas.agents.registry import get_agent

    drawable = get_agent(args.agent).build(None).get_graph(xray=1)  # xray: the workers' subgraph too
    if out is None:
        sys.stdout.write(drawable.draw_mermaid())
        return 0
    if out.suffix.lower() == ".png":
        write_atomically(out, drawable.draw_png())
    else:
        write_atomically(out, drawable.draw_mermaid().encode())
    sys.stdout.write(f"wrote {out}\n")
    return 0
