"""The ``videoatlas`` console command: argument parsing, dispatch, and turning errors into one line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

import structlog

from videoatlas import __version__
from videoatlas.agents.registry import agent_names, settings_model
from videoatlas.cli import commands, eval_commands
from videoatlas.cli.runs_table import STATUSES
from videoatlas.cli.signals import Interrupted, raise_on_sigterm
from videoatlas.cli.terminal import escape
from videoatlas.environment.synth import STYLES
from videoatlas.errors import VideoAtlasError
from videoatlas.evals.datasets import DATASETS
from videoatlas.logging import configure_logging

log = structlog.get_logger(__name__)


class _Parser(argparse.ArgumentParser):
    """argparse that reports a usage mistake in one line and exits 2."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"{self.prog}: error: {message} (see --help)\n")
        raise SystemExit(2)


def add_agent_options(p: argparse.ArgumentParser) -> None:
    """The agent to run, the knobs every agent shares, and each agent's own settings (one group per agent).

    An agent's options are generated from its settings model: ``--bfs-cells`` sets Video-RLM's
    ``bfs_cells``, ``--frames`` the uniform baseline's ``frames``; the help is the field's description.
    """
    names = agent_names()
    p.add_argument(
        "--agent",
        choices=names,
        default="video-rlm",
        help="which agent answers (default video-rlm); uniform: one call over evenly spaced frames (the baseline)",
    )
    p.add_argument("--prompts", default="default", help="prompt set: the agent's built-in set name or a directory")
    p.add_argument("--k", type=int, default=8, help="grid size K (default 8)")
    p.add_argument("--cell-px", type=int, default=320, help="pixels per cell (default 320)")
    p.add_argument("--token-budget", type=int, default=None, help="stop exploring after this many tokens")
    p.add_argument("--call-budget", type=int, default=None, help="stop exploring after this many model calls")
    p.add_argument("--max-concurrency", type=int, default=8, help="model tasks running at once at most (default 8)")
    seen: dict[str, str] = {}
    for name in names:
        group = p.add_argument_group(f"{name} settings (with --agent {name})")
        for field, info in settings_model(name).model_fields.items():
            flag = "--" + field.replace("_", "-")
            if flag in seen:  # two agents with a setting of one name share its flag
                continue
            seen[flag] = name
            summary = (info.description or field).split(". ")[0].rstrip(".")
            group.add_argument(
                flag, dest=f"setting__{field}", default=None, metavar="V", help=f"{summary} (default {info.default})"
            )


def add_endpoint_options(p: argparse.ArgumentParser) -> None:
    """Where the VLM is; flags override VIDEOATLAS_BASE_URL / VIDEOATLAS_MODEL / VIDEOATLAS_API_KEY."""
    p.add_argument("--base-url", default=None, help="OpenAI-compatible endpoint (env VIDEOATLAS_BASE_URL)")
    p.add_argument("--model", default=None, help="model id (env VIDEOATLAS_MODEL; default: first served)")
    p.add_argument("--api-key", default=None, help="API key (env VIDEOATLAS_API_KEY)")
    p.add_argument("--timeout", type=float, default=None, help="seconds per request (default 120)")
    p.add_argument(
        "--no-strict-schema",
        action="store_true",
        help='send reply schemas with "strict": false, for a server that refuses strict mode '
        "(env VIDEOATLAS_STRICT_SCHEMA=0)",
    )
    p.add_argument(
        "--standin",
        action="store_true",
        help="start the STAND-IN VLM in-process and use it (OCR-based test backend, not a VLM)",
    )


def add_eval_parsers(sub: Any) -> None:
    """``videoatlas eval run|report|compare|make-long``."""
    ev = sub.add_parser("eval", help="run benchmarks, report and compare results (see `eval --help`)")
    evsub = ev.add_subparsers(dest="eval_command", required=True, metavar="EVAL_COMMAND", parser_class=_Parser)

    p = evsub.add_parser("run", help="answer a dataset's questions concurrently; re-run the command to resume")
    p.add_argument("--dataset", required=True, choices=list(DATASETS))
    p.add_argument("--root", required=True, metavar="DIR", help="the dataset's folder (synthetic: where videos go)")
    p.add_argument("--out", required=True, metavar="DIR", help="results folder (re-using it resumes)")
    p.add_argument("--limit", type=int, default=None, help="first N questions, spread over videos")
    p.add_argument("--shard", default="0/1", metavar="i/n", help="run only shard i of n (e.g. a Slurm array task)")
    p.add_argument("--concurrency", type=int, default=4, help="questions running at once (default 4)")
    p.add_argument("--durations", default=None, help="synthetic only: e.g. 1m,10m,1h (default 1m,10m,1h,3h,10h)")
    p.add_argument("--seed", type=int, default=1, help="synthetic only: video seed (default 1)")
    p.add_argument("--styles", default=None, help=f"synthetic only: e.g. broadcast (default all: {','.join(STYLES)})")
    p.add_argument("--no-subtitles", action="store_true", help="run without the benchmark's subtitles")
    add_agent_options(p)
    add_endpoint_options(p)
    p.add_argument("--db", default=None, help="database for checkpoints, traces and the result cache (VIDEOATLAS_DB)")
    p.add_argument("--json", action="store_true", help="print a JSON summary at the end")
    p.add_argument("--quiet", action="store_true", help="no progress line")
    p.set_defaults(func=eval_commands.cmd_eval_run)

    p = evsub.add_parser("report", help="accuracy per category, costs, grounding; writes report.md and a plot")
    p.add_argument("folder", metavar="DIR")
    p.add_argument("--plot", default=None, metavar="PNG", help="tokens-vs-duration plot (default DIR/tokens.png)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=eval_commands.cmd_eval_report)

    p = evsub.add_parser("compare", help="two evals side by side, with paired bootstrap CIs clustered by video")
    p.add_argument("folder_a", metavar="DIR_A")
    p.add_argument("folder_b", metavar="DIR_B")
    p.add_argument("--plot", default=None, metavar="PNG", help="also write a tokens-vs-duration plot of both")
    p.add_argument("--resamples", type=int, default=2000, help="bootstrap resamples (default 2000)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=eval_commands.cmd_eval_compare)

    p = evsub.add_parser("make-long", help="long variants: each target among distractor videos of its benchmark")
    p.add_argument("--dataset", required=True, choices=[d for d in DATASETS if d != "synthetic"])
    p.add_argument("--root", required=True, metavar="DIR")
    p.add_argument("--out", required=True, metavar="DIR", help="where manifests, subtitles and items.jsonl go")
    p.add_argument("--hours", type=float, default=10.0, help="length of each variant (default 10)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--limit", type=int, default=None, help="first N questions, spread over videos")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=eval_commands.cmd_eval_make_long)


def build_parser() -> argparse.ArgumentParser:
    """The full command-line interface."""
    parser = _Parser(
        prog="videoatlas",
        description="Answer questions about very long videos by navigating a hierarchical grid of frames.",
    )
    parser.add_argument("--version", action="version", version=f"videoatlas {__version__}")
    parser.add_argument("--log-level", default="warning", choices=["debug", "info", "warning", "error"])
    parser.add_argument("--log-json", action="store_true", help="log JSON lines to stderr")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=_Parser)

    p = sub.add_parser("probe", help="show a video's duration, frame rate, frame count, size and audio")
    p.add_argument("video")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=commands.cmd_probe)

    p = sub.add_parser("grid", help="render a K x K contact sheet of the video or of one cell or time range")
    p.add_argument("video")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--cell", metavar="PATH", help="expand this cell, e.g. 12/5 (default: the root grid)")
    where.add_argument("--start", metavar="S", help="start of an explicit time range (90, 1:30, 1h2m)")
    p.add_argument("--end", metavar="E", help="end of the explicit time range")
    p.add_argument("--k", type=int, default=8, help="grid size K (default 8: 64 cells)")
    p.add_argument("--cell-px", type=int, default=320, help="pixels per cell side (default 320)")
    p.add_argument("--dead", action="append", default=[], metavar="S-E", help="explored interval to black out")
    p.add_argument("--subtitles", metavar="FILE", help="SRT, WebVTT or LongVideoBench JSON; prints the lines in view")
    p.add_argument("--subtitle-offset", default="0", metavar="S", help="seconds added to every subtitle time")
    p.add_argument("--backend", choices=["pyav", "decord"], default=None, help="decoder (default pyav)")
    p.add_argument("--no-cache", action="store_true", help="render afresh, ignoring the render cache")
    p.add_argument("-o", "--output", required=True, metavar="OUT.jpg")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=commands.cmd_grid)

    p = sub.add_parser("synth", help="write a synthetic long video with ground-truth questions")
    p.add_argument("--duration", required=True, help="length, e.g. 10m, 1h, 10h or seconds")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out", required=True, metavar="DIR")
    p.add_argument("--name", default="video", help="file stem (default 'video')")
    p.add_argument("--size", default="640x360", help="WIDTHxHEIGHT (default 640x360)")
    p.add_argument("--fps", type=float, default=None, help="frame rate (default 5, or 2 beyond 3 hours)")
    p.add_argument("--gop", type=float, default=10.0, help="seconds between keyframes (default 10)")
    p.add_argument("--no-scenecut", action="store_true", help="keyframes only at the fixed interval")
    p.add_argument("--no-subtitles", action="store_true", help="do not write an .srt file")
    p.add_argument("--style", choices=list(STYLES), default="chapters", help="look and questions (default chapters)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=commands.cmd_synth)

    p = sub.add_parser("ask", help="answer a question about a video with the Video-RLM agent")
    p.add_argument("video")
    p.add_argument("-q", "--question", required=True)
    p.add_argument("-c", "--choice", action="append", default=[], help="an answer choice (repeat); none: open-ended")
    p.add_argument("--subtitles", metavar="FILE", help="SRT, WebVTT or LongVideoBench JSON")
    p.add_argument("--subtitle-offset", default="0", metavar="S", help="seconds added to every subtitle time")
    add_agent_options(p)
    add_endpoint_options(p)
    p.add_argument("--db", default=None, help="database URL for checkpoints and traces (env VIDEOATLAS_DB)")
    p.add_argument("--no-persist", action="store_true", help="keep checkpoints in memory, write no traces")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    p.set_defaults(func=commands.cmd_ask)

    p = sub.add_parser("runs", help="list runs and their status")
    p.add_argument(
        "--status",
        choices=STATUSES,
        default=None,
        help="only runs shown with this status (stale: marked running, but its process stopped renewing its lease)",
    )
    p.add_argument("--limit", type=int, default=50)
    p.add_argument("--db", default=None, help="database URL (env VIDEOATLAS_DB)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=commands.cmd_runs)

    p = sub.add_parser("trace", help="show a run as rounds -> workers -> steps with tokens and latency")
    p.add_argument("run")
    p.add_argument("--db", default=None, help="database URL (env VIDEOATLAS_DB)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=commands.cmd_trace)

    p = sub.add_parser("resume", help="continue an interrupted run from its last checkpoint")
    p.add_argument("run")
    p.add_argument("--db", default=None, help="database URL (env VIDEOATLAS_DB)")
    p.add_argument("--base-url", default=None, help="endpoint to use instead of the stored one")
    p.add_argument("--model", default=None, help="model to use instead of the stored one")
    p.add_argument(
        "--force",
        action="store_true",
        help="take the run over even from a live process (which then stops); default: only from a stale one",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    p.set_defaults(func=commands.cmd_resume)

    p = sub.add_parser("report", help="write one self-contained HTML page about a run")
    p.add_argument("run")
    p.add_argument("-o", "--output", required=True, metavar="run.html")
    p.add_argument("--db", default=None, help="database URL (env VIDEOATLAS_DB)")
    p.set_defaults(func=commands.cmd_report)

    p = sub.add_parser("sim-server", help="run the STAND-IN VLM server (OCR-based, for tests and demos; not a VLM)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8001)
    p.add_argument("--model", default=None, help="model id it serves (default videoatlas-standin)")
    p.add_argument("--latency", type=float, default=0.0, help="fixed seconds per completion")
    p.add_argument("--per-token", type=float, default=0.0, help="extra seconds per completion token")
    p.add_argument("--patch", type=int, default=28, choices=[28, 32], help="visual token patch size")
    p.add_argument("--cache-blocks", type=int, default=32768, help="prefix-cache capacity in 16-token blocks")
    p.add_argument("--min-text-px", type=int, default=9, help="text lines shorter than this are not read")
    p.add_argument(
        "--fault",
        action="append",
        default=[],
        metavar="NAME=RATE",
        help="inject a fault per request: http500, http429, hang, drop, malformed, schema, range",
    )
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(func=commands.cmd_sim_server)

    p = sub.add_parser("serve", help="build and run the vLLM server command for a real VLM (needs a GPU)")
    p.add_argument("--model", required=True, help="Hugging Face id or local path, e.g. Qwen/Qwen2.5-VL-7B-Instruct")
    p.add_argument("--gpus", type=int, default=1, help="tensor-parallel GPUs")
    p.add_argument("--host", default="0.0.0.0")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--max-images", type=int, default=16, help="images per prompt")
    p.add_argument("--max-model-len", type=int, default=65536)
    p.add_argument("--gpu-memory-utilization", type=float, default=0.90)
    p.add_argument("--served-name", default=None, help="model id clients use (default: the model argument)")
    p.add_argument("--dry-run", action="store_true", help="print the command and exit")
    p.add_argument("--json", action="store_true", help="print the command as a JSON list")
    p.set_defaults(func=commands.cmd_serve)

    add_eval_parsers(sub)

    p = sub.add_parser("demo", help="synthesise a video, start the stand-in VLM, answer a question about it")
    p.add_argument("--out", default=None, metavar="DIR", help="where to write (default: the data directory)")
    p.add_argument("--question", type=int, default=0, help="which of the demo video's questions to ask")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=commands.cmd_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the process exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    configure_logging(args.log_level, args.log_json)
    raise_on_sigterm()
    try:
        code: int = args.func(args)
        return code
    except VideoAtlasError as exc:
        sys.stderr.write(f"videoatlas {args.command}: error: {escape(str(exc))}\n")
        return exc.exit_code
    except Interrupted as exc:
        sys.stderr.write(f"videoatlas {args.command}: {escape(exc.message())}\n")
        return exc.exit_code
    except KeyboardInterrupt:
        sys.stderr.write(f"videoatlas {args.command}: interrupted\n")
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
