"""``videoatlas mcp``: the agents as tools of an MCP server (stdio for a client that starts it, or HTTP)."""

from __future__ import annotations

import argparse
import contextlib
import sys

from videoatlas.cli.options import Subparsers, add_db_option, add_endpoint_options, add_listen_options

LOOPBACK = ("127.0.0.1", "::1", "localhost")
DEFAULT_PORT = 8766
"""``--http``'s port: one above ``videoatlas ui``'s, so both can run at once on their defaults."""


def add_mcp_parser(sub: Subparsers) -> None:
    """``videoatlas mcp --root DIR [--http]``."""
    p = sub.add_parser(
        "mcp",
        help="serve the agents as MCP tools (ask, resume, list_runs, trace, evidence_frames, probe)",
        description="An MCP server over stdio (default: for a client that starts this command) or streamable "
        "HTTP (--http, at http://HOST:PORT/mcp). It opens files under the --root folders only.",
    )
    p.add_argument(
        "--root",
        action="append",
        default=[],
        metavar="DIR",
        required=True,
        help="a folder whose files (videos) the tools may open; repeat for more",
    )
    p.add_argument("--http", action="store_true", help="streamable HTTP instead of stdio")
    add_listen_options(
        p,
        "127.0.0.1",
        "with --http: address to listen on (default 127.0.0.1, this machine only)",
        DEFAULT_PORT,
        f"with --http: port (default {DEFAULT_PORT}; the web UI's is 8765)",
    )
    add_db_option(p, "database the runs are kept in (env VIDEOATLAS_DB)")
    add_endpoint_options(p)
    p.set_defaults(func=cmd_mcp)


def cmd_mcp(args: argparse.Namespace) -> int:
    """Serve until the client hangs up (stdio) or the process is stopped (HTTP)."""
    import structlog

    from videoatlas.cli.run_setup import endpoint_choice
    from videoatlas.mcp.roots import Roots
    from videoatlas.mcp.server import serve
    from videoatlas.mcp.tools import Service
    from videoatlas.persistence.db import resolve_db_url

    roots = Roots.of(args.root)
    if args.http and args.host not in LOOPBACK:
        structlog.get_logger(__name__).warning(
            "mcp_not_loopback", host=args.host, detail="the tools answer anyone who can reach this address"
        )
    from videoatlas.cli import listen
    from videoatlas.request import open_endpoint

    with contextlib.ExitStack() as stack:
        # bound before the endpoint is opened: a taken port is refused at once, before a stand-in starts
        sock = stack.enter_context(listen.bind(args.host, args.port)) if args.http else None
        endpoint = stack.enter_context(open_endpoint(endpoint_choice(args)))
        service = Service(endpoint=endpoint, roots=roots, db=resolve_db_url(args.db))
        if sock is not None:
            sys.stderr.write(f"videoatlas mcp: {listen.url(args.host, args.port, '/mcp')} (Ctrl-C stops it)\n")
            sys.stderr.flush()
        serve(service, sock, args.host)
    return 0
