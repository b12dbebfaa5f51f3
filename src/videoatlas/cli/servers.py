"""The servers: ``standin`` (the stand-in VLM; alias ``sim-server``), ``serve`` (vLLM for a real VLM), ``ui``.

Each runs in the foreground until stopped; its server code (aiohttp, vLLM) is imported when it starts.
"""

from __future__ import annotations

import argparse
import sys

from videoatlas.cli.options import (
    Subparsers,
    add_db_option,
    add_json_option,
    add_listen_options,
    add_model_option,
    add_reasoning_option,
    add_seed_option,
    context_length,
    positive_int,
)
from videoatlas.cli.outputs import write_json as _json
from videoatlas.cli.outputs import write_line as _out
from videoatlas.errors import BadInputError


def add_ui_parser(sub: Subparsers) -> None:
    """``videoatlas ui [--evals DIR ...]``."""
    p = sub.add_parser("ui", help="browse runs and evals in a local, read-only web UI")
    add_db_option(p)
    p.add_argument("--evals", nargs="+", default=[], metavar="DIR", help="eval folders to show (and compare)")
    add_listen_options(
        p, "127.0.0.1", "address to bind (default 127.0.0.1: this machine only)", 8765, "port (default 8765)", int
    )
    p.set_defaults(func=cmd_ui)


def add_standin_parser(sub: Subparsers) -> None:
    """``videoatlas standin`` (or ``sim-server``)."""
    p = sub.add_parser(
        "standin",
        aliases=["sim-server"],  # its name before 0.2, kept for scripts that use it
        help="run the STAND-IN VLM server (OCR-based, for tests and demos; not a VLM); alias: sim-server",
    )
    add_listen_options(
        p, "127.0.0.1", "address to listen on (default 127.0.0.1)", 8001, "port to listen on (default 8001)"
    )
    add_model_option(p, "model id it serves (default: the stand-in's own id, videoatlas-standin-...)")
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
    add_seed_option(p, 0, "seed of the injected faults (default 0)")
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
        help="append every chat, embeddings and transcription request it receives to FILE, one JSON line each "
        "naming its route (make conformance checks them with vLLM's own code)",
    )
    add_reasoning_option(
        p,
        "--reasoning",
        "reply like a reasoning model: its reasoning in the reply's reasoning fields with reasoning tokens "
        "counted (field: vLLM with a reasoning parser) or in <think> tags before the answer (tags: without one); "
        "a request with enable_thinking false gets no reasoning (default off)",
    )
    p.add_argument(
        "--enable-auto-tool-choice",
        action="store_true",
        help="let requests ask for tool calls (tool_choice auto, required or a named function), as vLLM's flag; "
        "needs --tool-call-parser. Without both, tool calls are refused with vLLM's error",
    )
    p.add_argument(
        "--tool-call-parser",
        default=None,
        metavar="NAME",
        help="tool-call parser, as vLLM's flag (any name vLLM 0.33 registers, e.g. hermes for Qwen2.5-VL and "
        "Qwen3-VL); the stand-in writes calls in OpenAI's form whichever is named",
    )
    p.add_argument(
        "--decisions",
        action="store_true",
        help="serve POST /v1/decisions as vLLM 0.33 does for a model that has it (Qwen3 / Qwen3.5 with "
        "--logprobs-mode raw_logprobs); without it the route answers as for a model that lacks it (501)",
    )
    p.set_defaults(func=cmd_standin)


def add_serve_parser(sub: Subparsers) -> None:
    """``videoatlas serve --model M [--dry-run]``."""
    p = sub.add_parser("serve", help="build and run the vLLM server command for a real VLM (needs a GPU)")
    add_model_option(p, "Hugging Face id or local path, e.g. Qwen/Qwen2.5-VL-7B-Instruct", required=True)
    p.add_argument(
        "--preset",
        choices=["qwen2.5-vl", "qwen3-vl", "qwen3.5", "whisper"],
        default=None,
        help="model family whose vLLM flags to use (qwen3.5 also covers Qwen3.6; whisper: a speech server for "
        "--speech-url; default: told from --model)",
    )
    p.add_argument("--gpus", type=positive_int, default=1, help="tensor-parallel GPUs")
    add_listen_options(p, "0.0.0.0", "address to listen on (default 0.0.0.0)", 8000, "port to listen on (default 8000)")
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
    add_json_option(p, "print the command as a JSON list")
    p.set_defaults(func=cmd_serve)


def cmd_standin(args: argparse.Namespace) -> int:
    """``videoatlas standin``: the stand-in VLM in the foreground (a package of its own, reached by its door)."""
    from videoatlas import standin

    return standin.serve(args)


def cmd_serve(args: argparse.Namespace) -> int:
    """``videoatlas serve``: build the vLLM command, and run it unless ``--dry-run``."""
    import os
    import shlex

    from videoatlas.llm.serve import ServeOptions, vllm_command, vllm_executable

    opts = ServeOptions(
        model=args.model,
        preset=args.preset,
        gpus=args.gpus,
        host=args.host,
        port=args.port,
        max_images=args.max_images,
        max_model_len=args.max_model_len,
        max_pixels=args.max_pixels,
        gpu_memory_utilization=args.gpu_memory_utilization,
        served_name=args.served_name,
    )
    cmd = vllm_command(opts)
    if args.json:
        _json(cmd)
    else:
        _out(shlex.join(cmd))
    if args.dry_run:
        return 0
    exe = vllm_executable()
    if exe is None:
        raise BadInputError("vllm is not installed here: pip install 'videoatlas[serve]' on a machine with a GPU")
    sys.stdout.flush()
    os.execv(exe, cmd)
    return 0  # not reached


def cmd_ui(args: argparse.Namespace) -> int:
    """``videoatlas ui``: the web UI over runs and evals, until interrupted."""
    from videoatlas.cli import listen
    from videoatlas.persistence.db import resolve_db_url
    from videoatlas.ui.app import is_safe_host, serve
    from videoatlas.ui.evals import EvalFolders

    if not 0 < args.port < 65536:
        raise BadInputError(f"--port must be between 1 and 65535, got {args.port}")
    url = resolve_db_url(args.db)
    folders = EvalFolders.check(args.evals)
    if not is_safe_host(args.host):
        sys.stderr.write(f"warning: --host {args.host} serves every run to anyone who can reach it (no login)\n")
    with listen.bind(args.host, args.port) as sock:
        sys.stderr.write(f"videoatlas ui: {listen.url(args.host, args.port)} (Ctrl-C stops it)\n")
        sys.stderr.flush()
        serve(url, folders, sock)
    return 0
