"""The ``videoatlas`` console command: the top parser, dispatch, exit codes, and errors turned into one line.

Each command group keeps its commands and their options together (``video``: probe, grid, synth;
``ask``: ask, resume, demo; ``runs``: runs, trace, report; ``servers``: standin, serve, ui;
``evals``: eval ...; ``graph``); options that several commands take are declared once, in
``options``.

Parsing imports nothing heavy: the agents' settings models (pydantic) are read only when the command
line names a command that takes agent options (``ask``, ``eval run``), and each command imports the
code it runs when it runs, so ``videoatlas --help``, ``probe`` and ``grid`` start quickly.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator, Sequence

from videoatlas import __version__
from videoatlas.cli import ask, evals, graph, mcp, runs, servers, video
from videoatlas.cli.options import Parser, add_logging_options
from videoatlas.cli.signals import Interrupted, raise_on_sigterm
from videoatlas.errors import VideoAtlasError
from videoatlas.textsafe import escape

EXIT_CODES = (
    (0, "success"),
    (1, "failed (an eval run in which some questions failed to run; re-run it to retry them)"),
    (2, "bad argument or input (a value out of range, a file where a folder goes, an image over the server's limit)"),
    (3, "unreadable video (missing, not a video, no video stream, zero duration)"),
    (4, "unreadable subtitles"),
    (5, "the VLM endpoint is unreachable, does not serve the model, or refused a request"),
    (6, "the model's reply could not be read, even after a repair and a re-ask"),
    (7, "the run is being run by another live process (its lease is held; resume --force takes it)"),
    (
        75,
        "interrupted by an outage: the VLM endpoint or the database went away for longer than "
        "--endpoint-patience; runs are left interrupted, resumable (re-run the eval, or videoatlas resume RUN)",
    ),
    (130, "interrupted (Ctrl-C); a run is left interrupted, resumable with videoatlas resume RUN"),
    (143, "stopped by SIGTERM (Slurm preemption or time limit); the same as 130"),
)
"""Every exit code the command uses (also in the README and at the end of ``videoatlas --help``)."""

AGENT_COMMANDS = ("ask", "run")
"""Command words whose parsers carry every agent's settings as options (``ask``, ``eval run``)."""


def build_parser(agent_settings: bool = True) -> argparse.ArgumentParser:
    """The full command-line interface (``agent_settings=False``: without the agents' own options)."""
    parser = Parser(
        prog="videoatlas",
        description="Answer questions about very long videos by navigating a hierarchical grid of frames.",
        epilog=_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"videoatlas {__version__}")
    add_logging_options(parser, argparse.SUPPRESS)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=Parser)
    # In the order --help lists them: the video tools, a question, reading runs back, the servers, evals.
    video.add_probe_parser(sub)
    video.add_grid_parser(sub)
    video.add_synth_parser(sub)
    ask.add_ask_parser(sub, agent_settings)
    graph.add_graph_parser(sub)
    runs.add_runs_parser(sub)
    runs.add_trace_parser(sub)
    ask.add_resume_parser(sub)
    runs.add_report_parser(sub)
    servers.add_ui_parser(sub)
    servers.add_standin_parser(sub)
    servers.add_serve_parser(sub)
    evals.add_eval_parser(sub, agent_settings)
    ask.add_demo_parser(sub)
    mcp.add_mcp_parser(sub)
    for command in subcommand_parsers(parser):
        add_logging_options(command, argparse.SUPPRESS)
    return parser


def subcommand_parsers(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    """Every command's parser under ``parser`` (``eval run`` and the other ``eval`` commands included)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in dict.fromkeys(action.choices.values()):
                yield child
                yield from subcommand_parsers(child)


def _epilog() -> str:
    codes = "\n".join(f"  {code:>3}  {meaning}" for code, meaning in EXIT_CODES)
    return f"exit codes:\n{codes}\n\nEvery command has --help; errors are one line on stderr."


def _wants_agent_settings(argv: Sequence[str]) -> bool:
    """Whether the command line may name a command with agent options (a stray word only costs start-up time)."""
    return any(word in AGENT_COMMANDS for word in argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the process exit code."""
    words = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(agent_settings=_wants_agent_settings(words))
    args = parser.parse_args(words)
    from videoatlas.logging import configure_logging

    configure_logging(getattr(args, "log_level", "warning"), bool(getattr(args, "log_json", False)))
    raise_on_sigterm()
    name = f"videoatlas {args.command}"  # as argparse names it in usage errors: "videoatlas eval check"
    if getattr(args, "eval_command", None):
        name += f" {args.eval_command}"
    try:
        code: int = args.func(args)
        return code
    except VideoAtlasError as exc:
        sys.stderr.write(f"{name}: error: {escape(str(exc))}\n")
        return exc.exit_code
    except Interrupted as exc:
        sys.stderr.write(f"{name}: {escape(exc.message())}\n")
        return exc.exit_code
    except KeyboardInterrupt:
        sys.stderr.write(f"{name}: interrupted\n")
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
