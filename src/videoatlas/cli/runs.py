"""Reading stored runs back: ``runs`` (the list), ``trace`` (one run's steps) and ``report`` (one HTML page)."""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
from pathlib import Path

from videoatlas.cli.options import (
    Subparsers,
    add_agent_option,
    add_db_option,
    add_json_option,
    add_limit_option,
    add_output_option,
    add_prompts_option,
    add_run_argument,
)
from videoatlas.cli.outputs import write_json as _json
from videoatlas.cli.outputs import write_line as _out
from videoatlas.persistence.statuses import RUN_STATUSES


def add_runs_parser(sub: Subparsers) -> None:
    """``videoatlas runs [--status S] [--agent A] [--video PART] [--prompts SET] [--search TEXT]``."""
    p = sub.add_parser("runs", help="list runs: their status, agent, cost, question and answer")
    p.add_argument(
        "--status",
        choices=RUN_STATUSES,
        default=None,
        help="only runs shown with this status (stale: marked running, but its process stopped renewing its lease)",
    )
    add_agent_option(p, "only runs of this agent: %(choices)s", default=None)
    p.add_argument("--video", default=None, metavar="PART", help="only runs whose video path contains PART")
    add_prompts_option(p, "only runs with this prompt set, named as ask's --prompts names it", default=None)
    p.add_argument(
        "--search",
        default=None,
        metavar="TEXT",
        help="only runs whose question or answer contains TEXT (any case), or whose id starts with it",
    )
    add_limit_option(p, "newest N runs (default 50)", default=50)
    add_db_option(p)
    add_json_option(p)
    p.set_defaults(func=cmd_runs)


def add_trace_parser(sub: Subparsers) -> None:
    """``videoatlas trace RUN``."""
    p = sub.add_parser("trace", help="show a run as rounds -> workers -> steps with tokens and latency")
    add_run_argument(p)
    add_db_option(p)
    add_json_option(p)
    p.set_defaults(func=cmd_trace)


def add_report_parser(sub: Subparsers) -> None:
    """``videoatlas report RUN -o run.html``."""
    p = sub.add_parser("report", help="write one self-contained HTML page about a run")
    add_run_argument(p)
    add_output_option(p, "run.html", "HTML file to write")
    add_db_option(p)
    p.set_defaults(func=cmd_report)


def cmd_runs(args: argparse.Namespace) -> int:
    """``videoatlas runs``: status (``stale`` when the owner is gone), agent, cost so far, error.

    The filters are the web UI's list's (:class:`~videoatlas.persistence.queries.RunSearch`), applied in SQL.
    """
    from videoatlas.cli.runs_table import list_runs, runs_lines
    from videoatlas.persistence.db import resolve_db_url
    from videoatlas.persistence.lease import LeaseTiming
    from videoatlas.persistence.queries import RunSearch
    from videoatlas.persistence.store import TraceStore
    from videoatlas.prompts import prompt_source

    search = RunSearch(
        status=args.status or "",
        video=args.video or "",
        agent=args.agent or "",
        prompt_set=prompt_source(args.prompts) if args.prompts else "",
        text=args.search or "",
    )
    timing = LeaseTiming.from_env()
    store = TraceStore(resolve_db_url(args.db))
    try:
        data = list_runs(store, search, args.limit, timing)
    finally:
        store.close()
    if args.json:
        _json(data)
        return 0
    if not data:
        _out("no runs" if search == RunSearch() else "no runs match")
        return 0
    width = shutil.get_terminal_size().columns if sys.stdout.isatty() else None
    for line in runs_lines(data, width):
        sys.stdout.write(line + "\n")  # already escaped cell by cell (the table's own spacing is kept)
    return 0


def cmd_trace(args: argparse.Namespace) -> int:
    """``videoatlas trace RUN``: the run's header, then the agent's own view of it (or its node timeline)."""
    from videoatlas.inspect import load_trace, trace_lines

    trace = asyncio.run(load_trace(args.run, args.db))
    if args.json:
        _json(trace)
        return 0
    for line in trace_lines(trace):
        _out(line)
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    """``videoatlas report RUN -o run.html``: the UI's run page as one self-contained file."""
    from videoatlas.ui.report import write_report

    out = Path(args.output)
    asyncio.run(write_report(args.run, args.db, out))
    _out(f"wrote {out} ({out.stat().st_size // 1024} KB)")
    return 0
