"""How videoatlas starts the stand-in: in-process for a run, or in the foreground for ``videoatlas standin``.

These two functions, reached through the product's one door (``videoatlas.standin``), are the whole interface
between the product and its test double.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import socket
import sys
from collections.abc import Iterator
from pathlib import Path

from videoatlas.errors import BadInputError
from videoatlas_standin.context import StandinConfig
from videoatlas_standin.server import RunningServer, StandinServer, serve_forever
from videoatlas_standin.version import STANDIN_MODEL

NOTICE = "starting the STAND-IN VLM (OCR-based test backend, not a real VLM) in-process"


@contextlib.contextmanager
def running(
    *, reasoning: str = "off", max_image_pixels: int | None = None, max_images: int | None = None
) -> Iterator[RunningServer]:
    """A stand-in server on a free local port for the duration (settings left None take the stand-in's own)."""
    config = StandinConfig(reasoning=reasoning)
    if max_image_pixels is not None:
        config.max_image_pixels = max_image_pixels
    if max_images is not None:
        config.max_images = max_images
    local = StandinServer(config)  # refuses bad settings from the environment before the notice
    sys.stderr.write(NOTICE + "\n")
    with RunningServer(local) as server:
        yield server


def _faults(specs: list[str]) -> dict[str, float]:
    """``--fault NAME=RATE`` options as rates (the names are the config's to check)."""
    faults: dict[str, float] = {}
    for spec in specs:
        name, _, rate = spec.partition("=")
        try:
            faults[name] = float(rate)
        except ValueError:
            raise BadInputError(f"--fault {spec!r} must look like NAME=RATE, e.g. http500=0.1") from None
        if not 0 <= faults[name] <= 1:
            raise BadInputError(f"--fault rate must be between 0 and 1, got {faults[name]}")
    return faults


def serve_command(args: argparse.Namespace) -> int:
    """``videoatlas standin``: the stand-in VLM in the foreground, with the options the product's parser read."""
    try:
        config = StandinConfig(
            model=args.model or STANDIN_MODEL,
            seed=args.seed,
            latency_s=args.latency,
            per_token_s=args.per_token,
            patch=args.patch,
            cache_blocks=args.cache_blocks,
            min_text_px=args.min_text_px,
            faults=_faults(args.fault),
            record=Path(args.record) if args.record else None,
            reasoning=args.reasoning,
            max_model_len=args.max_model_len,
            max_images=args.limit_mm_per_prompt,
            structured_outputs_backend=args.structured_outputs_backend,
            enable_auto_tool_choice=args.enable_auto_tool_choice,
            tool_call_parser=args.tool_call_parser,
            decisions=bool(args.decisions),
        )
    except ValueError as exc:  # settings the config refuses (unknown faults, tool flags vLLM would refuse)
        raise BadInputError(str(exc)) from None
    if config.record is not None and not config.record.parent.is_dir():
        raise BadInputError(f"--record: folder {config.record.parent} does not exist")
    server = StandinServer(config)  # refuses bad settings from the environment before it binds or says it serves
    _check_port_free(args.host, args.port)
    sys.stderr.write(
        f"STAND-IN VLM (OCR-based test backend, not a real model) serving '{config.model}' "
        f"at http://{args.host}:{args.port}/v1; stats at /stats\n"
    )
    try:
        serve_forever(server, args.host, args.port)
    except OSError as exc:  # taken between the check and the server's own bind
        raise BadInputError(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}") from None
    return 0


def _check_port_free(host: str, port: int) -> None:
    """Refuse, before saying it serves, an address the server could not listen on."""
    try:
        with socket.create_server((host, port)):
            pass
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise BadInputError(f"port {port} on {host} is already in use; choose another with --port") from None
        raise BadInputError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
