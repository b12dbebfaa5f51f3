"""The ``videoatlas`` console command: argument parsing, dispatch, and turning errors into one line.

Parsing imports nothing heavy: the agents' settings models (pydantic) are read only when the command
line names a command that takes agent options (``ask``, ``eval run``), and each command imports the
code it runs when it runs, so ``videoatlas --help``, ``probe`` and ``grid`` start quickly.
"""

from __future__ import annotations

import argparse
import sys
import types
import typing
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, NoReturn

from videoatlas import __version__, limits
from videoatlas.agents.registry import DEFAULT_AGENT
from videoatlas.cli import commands, eval_commands, graph_command
from videoatlas.cli.signals import Interrupted, raise_on_sigterm
from videoatlas.errors import VideoAtlasError
from videoatlas.persistence.statuses import RUN_STATUSES
from videoatlas.standin.version import STANDIN_MODEL
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
    (130, "interrupted (Ctrl-C); a run is left interrupted, resumable with videoatlas resume RUN"),
    (143, "stopped by SIGTERM (Slurm preemption or time limit); the same as 130"),
)
"""Every exit code the command uses (also in the README and at the end of ``videoatlas --help``)."""

AGENT_COMMANDS = ("ask", "run")
"""Command words whose parsers carry every agent's settings as options (``ask``, ``eval run``)."""


class _Parser(argparse.ArgumentParser):
    """argparse that reports a usage mistake in one line and exits 2."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"{self.prog}: error: {message} (see --help)\n")
        raise SystemExit(2)


class _Lazy:
    """Choices read when first needed (for a check or a help page), so building the parser imports nothing."""

    def __init__(self, load: Callable[[], Iterable[str]]) -> None:
        self._load = load
        self._values: list[str] | None = None

    def _get(self) -> list[str]:
        if self._values is None:
            self._values = list(self._load())
        return self._values

    def __contains__(self, item: object) -> bool:
        return item in self._get()

    def __iter__(self) -> Iterator[str]:
        return iter(self._get())

    def __len__(self) -> int:
        return len(self._get())


def _styles() -> Iterable[str]:
    from videoatlas.synth import STYLES

    return STYLES


def _agents() -> Iterable[str]:
    from videoatlas.agents.registry import agent_names

    return agent_names()


def _datasets() -> Iterable[str]:
    from videoatlas.evals.datasets import DATASETS

    return DATASETS


def positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def context_length(text: str) -> int | str:
    """An argparse type: a context length in tokens, or ``auto`` (the longest that fits the GPU)."""
    return "auto" if text.strip().lower() == "auto" else positive_int(text)


def port(text: str) -> int:
    """An argparse type: a TCP port, 1 to 65535."""
    value = positive_int(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"a port is at most 65535, got {value}")
    return value


def add_agent_options(p: argparse.ArgumentParser, with_settings: bool = True) -> None:
    """The agent to run, the knobs every agent shares, and each agent's own settings (one group per agent).

    An agent's options are generated from its settings model: a field ``some_field`` is set by
    ``--some-field``, and the help is the field's description (one flag serves agents that share a field).
    ``with_settings=False`` leaves those out (and the settings models unimported): for a command line
    that does not run this parser.
    """
    from videoatlas.agents.registry import agent_names

    names = agent_names()
    p.add_argument(
        "--agent",
        choices=names,
        default=DEFAULT_AGENT,
        help="which agent answers: %(choices)s (default %(default)s)",
    )
    p.add_argument("--prompts", default="default", help="prompt set: the agent's built-in set name or a directory")
    p.add_argument(
        "--k", type=int, default=8, help=f"grid size K (default 8: 64 cells; {limits.K_MIN} to {limits.K_MAX})"
    )
    p.add_argument(
        "--cell-px",
        type=int,
        default=320,
        help=f"pixels per cell side (default 320; {limits.CELL_PX_MIN} to {limits.CELL_PX_MAX}, and K x cell-px "
        "within the endpoint's image limit)",
    )
    p.add_argument("--token-budget", type=positive_int, default=None, help="stop exploring after this many tokens")
    p.add_argument("--call-budget", type=positive_int, default=None, help="stop exploring after this many model calls")
    p.add_argument(
        "--max-concurrency", type=positive_int, default=8, help="model tasks running at once at most (default 8)"
    )
    p.add_argument(
        "--thinking",
        default=None,
        metavar="on|off|ROLE=on,...",
        help="a reasoning model's thinking, for every role or per role (each agent has its own roles; an unknown "
        "one is refused with the list), sent as enable_thinking (env VIDEOATLAS_THINKING; default: "
        "nothing sent, the server's default)",
    )
    if not with_settings:
        return
    from videoatlas.agents.registry import settings_model

    seen: dict[str, str] = {}
    for name in names:
        group = p.add_argument_group(f"{name} settings (with --agent {name})")
        for field, info in settings_model(name).model_fields.items():
            flag = "--" + field.replace("_", "-")
            if flag in seen:  # two agents with a setting of one name share its flag
                continue
            seen[flag] = name
            summary = (info.description or field).split(". ")[0].rstrip(".").replace("`", "")  # no reST in help
            group.add_argument(
                flag,
                dest=f"setting__{field}",
                default=None,
                metavar=metavar(info.annotation),
                help=f"{summary} (default {info.default})",
            )


def metavar(annotation: Any) -> str:
    """What a setting's option takes, from its type: ``N`` (whole number), ``X`` (number), ``auto|bfs|dfs``..."""
    names: list[str] = []
    for kind in _alternatives(annotation):
        if typing.get_origin(kind) is typing.Literal:
            names.extend(str(value) for value in typing.get_args(kind))
        elif kind is bool:
            names.append("true|false")
        else:
            names.append({int: "N", float: "X"}.get(kind, "TEXT"))
    return "|".join(dict.fromkeys(names))


def _alternatives(annotation: Any) -> Iterator[Any]:
    """The types a union (or one type) allows, ``Annotated`` metadata and ``None`` left out."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        yield from _alternatives(typing.get_args(annotation)[0])
    elif origin is typing.Union or origin is types.UnionType:
        for arg in typing.get_args(annotation):
            yield from _alternatives(arg)
    elif annotation is not type(None):
        yield annotation


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
    p.add_argument(
        "--max-image-pixels",
        type=positive_int,
        default=None,
        metavar="N",
        help="pixels per image the server accepts (env VIDEOATLAS_MAX_IMAGE_PIXELS; default 12845056, "
        "Qwen2.5-VL's); K x cell-px squared must fit, checked before the run starts",
    )
    p.add_argument(
        "--standin-reasoning",
        choices=["off", "field", "tags"],
        default="off",
        help="with --standin: the stand-in replies like a reasoning model, its reasoning in a field of the "
        "reply (field) or in <think> tags before the answer (tags); default off",
    )


_SUBSET_HELP = (
    "only these published splits, comma-separated: videomme short,medium,long; longvideobench 15,60,600,3600 "
    "(duration groups, s); lvbench ER,EU,KIR,TG,Rea,Sum (question types)"
)


def add_eval_parsers(sub: Any, with_settings: bool = True) -> None:
    """``videoatlas eval run|check|report|compare|make-long``."""
    ev = sub.add_parser("eval", help="run benchmarks, report and compare results (see: videoatlas eval --help)")
    evsub = ev.add_subparsers(dest="eval_command", required=True, metavar="EVAL_COMMAND", parser_class=_Parser)

    p = evsub.add_parser("run", help="answer a dataset's questions concurrently; re-run the command to resume")
    p.add_argument("--dataset", required=True, choices=_Lazy(_datasets), metavar="NAME", help="benchmark: %(choices)s")
    p.add_argument("--root", required=True, metavar="DIR", help="the dataset's folder (synthetic: where videos go)")
    p.add_argument("--out", required=True, metavar="DIR", help="results folder (re-using it resumes)")
    p.add_argument("--limit", type=positive_int, default=None, help="first N questions, spread over videos")
    p.add_argument("--shard", default="0/1", metavar="i/n", help="run only shard i of n (e.g. a Slurm array task)")
    p.add_argument("--concurrency", type=positive_int, default=4, help="questions running at once (default 4)")
    p.add_argument("--durations", default=None, help="synthetic only: e.g. 1m,10m,1h (default 1m,10m,1h,3h,10h)")
    p.add_argument("--seed", type=int, default=1, help="synthetic only: video seed (default 1)")
    p.add_argument("--styles", default=None, help="synthetic only: comma-separated, e.g. broadcast (default: all)")
    p.add_argument("--no-subtitles", action="store_true", help="run without the benchmark's subtitles")
    p.add_argument("--subset", default=None, metavar="NAMES", help=_SUBSET_HELP)
    add_agent_options(p, with_settings)
    add_endpoint_options(p)
    p.add_argument("--db", default=None, help="database for checkpoints, traces and the result cache (VIDEOATLAS_DB)")
    p.add_argument("--json", action="store_true", help="print a JSON summary at the end")
    p.add_argument("--quiet", action="store_true", help="no progress bar or lines")
    p.set_defaults(func=eval_commands.cmd_eval_run)

    p = evsub.add_parser("check", help="pre-flight: count questions, list missing or unreadable videos and subtitles")
    p.add_argument("--dataset", required=True, choices=_Lazy(_datasets), metavar="NAME", help="benchmark: %(choices)s")
    p.add_argument("--root", required=True, metavar="DIR", help="the dataset's folder")
    p.add_argument("--subset", default=None, metavar="NAMES", help=_SUBSET_HELP)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=eval_commands.cmd_eval_check)

    p = evsub.add_parser("report", help="accuracy per category, costs, grounding; writes report.md and a plot")
    p.add_argument("folder", metavar="DIR", help="an eval's results folder (eval run --out)")
    p.add_argument("--plot", default=None, metavar="PNG", help="tokens-vs-duration plot (default DIR/tokens.png)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=eval_commands.cmd_eval_report)

    p = evsub.add_parser("compare", help="two evals side by side, with paired bootstrap CIs clustered by video")
    p.add_argument("folder_a", metavar="DIR_A", help="the first eval's results folder")
    p.add_argument("folder_b", metavar="DIR_B", help="the second eval's results folder (same questions)")
    p.add_argument("--plot", default=None, metavar="PNG", help="also write a tokens-vs-duration plot of both")
    p.add_argument("--resamples", type=int, default=2000, help="bootstrap resamples (default 2000)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=eval_commands.cmd_eval_compare)

    p = evsub.add_parser("make-long", help="long variants: each target among distractor videos of its benchmark")
    p.add_argument(
        "--dataset",
        required=True,
        choices=_Lazy(lambda: [d for d in _datasets() if d != "synthetic"]),
        metavar="NAME",
        help="benchmark: %(choices)s",
    )
    p.add_argument("--root", required=True, metavar="DIR", help="the dataset's folder")
    p.add_argument("--out", required=True, metavar="DIR", help="where manifests, subtitles and items.jsonl go")
    p.add_argument("--hours", type=float, default=10.0, help="length of each variant (default 10)")
    p.add_argument("--seed", type=int, default=0, help="seed choosing the distractor videos (default 0)")
    p.add_argument("--limit", type=positive_int, default=None, help="first N questions, spread over videos")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=eval_commands.cmd_eval_make_long)


def build_parser(agent_settings: bool = True) -> argparse.ArgumentParser:
    """The full command-line interface (``agent_settings=False``: without the agents' own options)."""
    parser = _Parser(
        prog="videoatlas",
        description="Answer questions about very long videos by navigating a hierarchical grid of frames.",
        epilog=_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"videoatlas {__version__}")
    add_logging_options(parser, argparse.SUPPRESS)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=_Parser)

    p = sub.add_parser("probe", help="show a video's duration, frame rate, frame count, size and audio")
    p.add_argument("video", help="a video file or a concatenation manifest")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=commands.cmd_probe)

    p = sub.add_parser("grid", help="render a K x K contact sheet of the video or of one cell or time range")
    p.add_argument("video", help="a video file or a concatenation manifest")
    where = p.add_mutually_exclusive_group()
    where.add_argument(
        "--cell", metavar="PATH", help="expand this cell, e.g. 12/5 (default: the root grid); no finer than a frame"
    )
    where.add_argument("--start", metavar="S", help="start of an explicit time range (90, 1:30, 1h2m)")
    p.add_argument("--end", metavar="E", help="end of the explicit time range")
    p.add_argument(
        "--k", type=int, default=8, help=f"grid size K (default 8: 64 cells; {limits.K_MIN} to {limits.K_MAX})"
    )
    p.add_argument(
        "--cell-px",
        type=int,
        default=320,
        help=f"pixels per cell side (default 320; {limits.CELL_PX_MIN} to {limits.CELL_PX_MAX})",
    )
    p.add_argument(
        "--dead", action="append", default=[], metavar="S-E", help="explored interval to black out (repeat for more)"
    )
    p.add_argument("--subtitles", metavar="FILE", help="SRT, WebVTT or LongVideoBench JSON; prints the lines in view")
    p.add_argument("--subtitle-offset", default="0", metavar="S", help="seconds added to every subtitle time")
    p.add_argument("--backend", choices=["pyav", "decord"], default=None, help="decoder (default pyav)")
    p.add_argument("--no-cache", action="store_true", help="render afresh, ignoring the render cache")
    p.add_argument(
        "-o", "--output", required=True, metavar="OUT.jpg", help="image to write: .jpg or .jpeg (JPEG), .png (PNG)"
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=commands.cmd_grid)

    p = sub.add_parser("synth", help="write a synthetic long video with ground-truth questions")
    p.add_argument("--duration", required=True, help="length, e.g. 10m, 1h, 10h or seconds (30 s to 24 h)")
    p.add_argument("--seed", type=int, default=1, help="the same seed gives the same video (default 1)")
    p.add_argument("--out", required=True, metavar="DIR", help="folder to write into (created if missing)")
    p.add_argument("--name", default="video", help="file stem (default 'video')")
    p.add_argument("--size", default="640x360", help="WIDTHxHEIGHT, even, up to 3840x2160 (default 640x360)")
    p.add_argument("--fps", type=float, default=None, help="frame rate (default 5, or 2 beyond 3 hours)")
    p.add_argument("--gop", type=float, default=10.0, help="seconds between keyframes (default 10)")
    p.add_argument("--no-scenecut", action="store_true", help="keyframes only at the fixed interval")
    p.add_argument("--no-subtitles", action="store_true", help="do not write an .srt file")
    p.add_argument(
        "--style",
        choices=_Lazy(_styles),
        default="chapters",
        metavar="STYLE",
        help="look and questions: %(choices)s (default chapters)",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=commands.cmd_synth)

    p = sub.add_parser("ask", help="answer a question about a video with one of the agents (--agent)")
    p.add_argument("video", help="a video file or a concatenation manifest")
    p.add_argument("-q", "--question", required=True, help=f"the question (at most {limits.QUESTION_MAX_CHARS} chars)")
    p.add_argument(
        "-c",
        "--choice",
        action="append",
        default=[],
        help="an answer choice (repeat for each: at least 2, all different); none: an open-ended question",
    )
    p.add_argument("--subtitles", metavar="FILE", help="SRT, WebVTT or LongVideoBench JSON")
    p.add_argument("--subtitle-offset", default="0", metavar="S", help="seconds added to every subtitle time")
    add_agent_options(p, agent_settings)
    add_endpoint_options(p)
    p.add_argument("--db", default=None, help="database URL for checkpoints and traces (env VIDEOATLAS_DB)")
    p.add_argument("--no-persist", action="store_true", help="keep checkpoints in memory, write no traces")
    shown = p.add_mutually_exclusive_group()
    shown.add_argument("--json", action="store_true", help="machine-readable output")
    shown.add_argument(
        "--stream-json",
        action="store_true",
        help="print each event of the run (node progress) as a JSON line on stdout as it happens, "
        'then the result as a last line with "event": "result"',
    )
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    p.set_defaults(func=commands.cmd_ask)

    p = sub.add_parser("graph", help="print an agent's LangGraph graph as Mermaid text (or write it with -o)")
    p.add_argument(
        "--agent",
        choices=_Lazy(_agents),
        default=DEFAULT_AGENT,
        metavar="NAME",
        help="%(choices)s (default %(default)s)",
    )
    p.add_argument(
        "-o",
        "--output",
        default=None,
        metavar="FILE",
        help="write to FILE instead: .mmd or .mermaid (Mermaid text), .png (needs pygraphviz)",
    )
    p.set_defaults(func=graph_command.cmd_graph)

    p = sub.add_parser("runs", help="list runs and their status")
    p.add_argument(
        "--status",
        choices=RUN_STATUSES,
        default=None,
        help="only runs shown with this status (stale: marked running, but its process stopped renewing its lease)",
    )
    p.add_argument("--limit", type=positive_int, default=50, help="newest N runs (default 50)")
    p.add_argument("--db", default=None, help="database URL (env VIDEOATLAS_DB)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=commands.cmd_runs)

    p = sub.add_parser("trace", help="show a run as rounds -> workers -> steps with tokens and latency")
    p.add_argument("run", help="run id (see: videoatlas runs)")
    p.add_argument("--db", default=None, help="database URL (env VIDEOATLAS_DB)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=commands.cmd_trace)

    p = sub.add_parser("resume", help="continue an interrupted run from its last checkpoint")
    p.add_argument("run", help="run id (see: videoatlas runs)")
    p.add_argument("--db", default=None, help="database URL (env VIDEOATLAS_DB)")
    p.add_argument("--base-url", default=None, help="endpoint to use instead of the stored one")
    p.add_argument("--model", default=None, help="model to use instead of the stored one")
    p.add_argument(
        "--standin",
        action="store_true",
        help="answer with the STAND-IN VLM started in-process (the default for a run started with ask --standin)",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="take the run over even from a live process (which then stops); default: only from a stale one",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    p.set_defaults(func=commands.cmd_resume)

    p = sub.add_parser("report", help="write one self-contained HTML page about a run")
    p.add_argument("run", help="run id (see: videoatlas runs)")
    p.add_argument("-o", "--output", required=True, metavar="run.html", help="HTML file to write")
    p.add_argument("--db", default=None, help="database URL (env VIDEOATLAS_DB)")
    p.set_defaults(func=commands.cmd_report)

    p = sub.add_parser("ui", help="browse runs and evals in a local, read-only web UI")
    p.add_argument("--db", default=None, help="database URL (env VIDEOATLAS_DB)")
    p.add_argument("--evals", nargs="+", default=[], metavar="DIR", help="eval folders to show (and compare)")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=int, default=8765, help="port (default 8765)")
    p.set_defaults(func=commands.cmd_ui)

    p = sub.add_parser(
        "standin",
        aliases=["sim-server"],  # its name before 0.2, kept for scripts that use it
        help="run the STAND-IN VLM server (OCR-based, for tests and demos; not a VLM); alias: sim-server",
    )
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=port, default=8001, help="port to listen on (default 8001)")
    p.add_argument("--model", default=None, help=f"model id it serves (default {STANDIN_MODEL})")
    p.add_argument("--latency", type=float, default=0.0, help="fixed seconds per completion")
    p.add_argument("--per-token", type=float, default=0.0, help="extra seconds per completion token")
    p.add_argument("--patch", type=int, default=28, choices=[28, 32], help="visual token patch size")
    p.add_argument("--cache-blocks", type=positive_int, default=32768, help="prefix-cache capacity in 16-token blocks")
    p.add_argument("--min-text-px", type=positive_int, default=9, help="text lines shorter than this are not read")
    p.add_argument(
        "--fault",
        action="append",
        default=[],
        metavar="NAME=RATE",
        help="inject a fault per request (repeat for more): http500, http429, hang, drop, malformed, schema, range",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the injected faults (default 0)")
    p.add_argument(
        "--max-model-len",
        type=positive_int,
        default=65536,
        metavar="TOKENS",
        help="context length; a longer prompt is refused with vLLM's error, as vLLM --max-model-len (default 65536)",
    )
    p.add_argument(
        "--limit-mm-per-prompt",
        type=positive_int,
        default=16,
        metavar="IMAGES",
        help="images per prompt; more are refused with vLLM's error, as vLLM --limit-mm-per-prompt (default 16)",
    )
    p.add_argument(
        "--structured-outputs-backend",
        choices=["auto", "xgrammar", "guidance"],
        default="auto",
        help="whose rules reply schemas are held to, as vLLM's structured-outputs backend (default auto: xgrammar, "
        "then guidance for what xgrammar declines)",
    )
    p.add_argument(
        "--record",
        default=None,
        metavar="FILE",
        help="append every chat request it receives to FILE, one JSON line each (make conformance checks them)",
    )
    p.add_argument(
        "--reasoning",
        choices=["off", "field", "tags"],
        default="off",
        help="reply like a reasoning model: its reasoning in the reply's reasoning fields with reasoning tokens "
        "counted (field: vLLM with a reasoning parser) or in <think> tags before the answer (tags: without one); "
        "a request with enable_thinking false gets no reasoning (default off)",
    )
    p.set_defaults(func=commands.cmd_standin)

    p = sub.add_parser("serve", help="build and run the vLLM server command for a real VLM (needs a GPU)")
    p.add_argument("--model", required=True, help="Hugging Face id or local path, e.g. Qwen/Qwen2.5-VL-7B-Instruct")
    p.add_argument(
        "--preset",
        choices=["qwen2.5-vl", "qwen3-vl", "qwen3.5"],
        default=None,
        help="model family whose vLLM flags to use (qwen3.5 also covers Qwen3.6; default: told from --model)",
    )
    p.add_argument("--gpus", type=positive_int, default=1, help="tensor-parallel GPUs")
    p.add_argument("--host", default="0.0.0.0", help="address to listen on (default 0.0.0.0)")
    p.add_argument("--port", type=port, default=8000, help="port to listen on (default 8000)")
    p.add_argument("--max-images", type=positive_int, default=16, help="images per prompt")
    p.add_argument(
        "--max-model-len",
        type=context_length,
        default=None,
        metavar="N|auto",
        help="context length (default: the preset's, 65536 for Qwen2.5-VL and Qwen3-VL, auto for Qwen3.5: "
        "the longest that fits the GPU)",
    )
    p.add_argument(
        "--max-pixels",
        type=positive_int,
        default=2560 * 2560,
        help="pixels an image may have before the server's processor shrinks it (default 6553600: 2560 x 2560)",
    )
    p.add_argument(
        "--gpu-memory-utilization", type=float, default=0.90, help="share of GPU memory vLLM takes (default 0.90)"
    )
    p.add_argument("--served-name", default=None, help="model id clients use (default: the model argument)")
    p.add_argument("--dry-run", action="store_true", help="print the command and exit")
    p.add_argument("--json", action="store_true", help="print the command as a JSON list")
    p.set_defaults(func=commands.cmd_serve)

    add_eval_parsers(sub, agent_settings)

    p = sub.add_parser("demo", help="synthesise a video, start the stand-in VLM, answer a question about it")
    p.add_argument("--out", default=None, metavar="DIR", help="where to write (default: the data directory)")
    p.add_argument(
        "--question",
        type=int,
        default=0,
        metavar="0-6",
        help="index of the demo video's question to ask, 0 to 6 (default 0)",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=commands.cmd_demo)
    for command in subcommand_parsers(parser):
        add_logging_options(command, argparse.SUPPRESS)
    return parser


def add_logging_options(p: argparse.ArgumentParser, default: Any) -> None:
    """``--log-level`` and ``--log-json``: on the main parser and, so that either order works, on every command."""
    p.add_argument(
        "--log-level",
        default=default,
        choices=["debug", "info", "warning", "error"],
        help="log messages from this level up on stderr (default warning)",
    )
    p.add_argument("--log-json", action="store_true", default=default, help="log JSON lines to stderr")


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
