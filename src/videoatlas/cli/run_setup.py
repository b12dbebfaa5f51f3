"""What a run is given from the command line: its configuration and its endpoint (``ask`` and ``eval run``).

Both are checked before anything heavy starts: a bad setting or a grid picture over the endpoint's
image limit is refused before a stand-in server starts or LangGraph is imported.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING

from videoatlas import limits
from videoatlas.errors import BadInputError, EndpointUnreachableError
from videoatlas.llm.settings import DEFAULT_BASE_URL, EndpointSettings

if TYPE_CHECKING:
    from videoatlas.runtime.config import RunConfig


def run_config_from(args: argparse.Namespace) -> RunConfig:
    """The run's configuration from command-line flags: shared knobs, and the chosen agent's settings.

    A flag of another agent's settings is refused (it would be silently ignored otherwise).
    """
    from pydantic import ValidationError

    from videoatlas.agents.registry import check_thinking, settings_model
    from videoatlas.runtime.config import RunConfig, parse_thinking

    limits.check_grid(args.k, args.cell_px)
    spec = getattr(args, "thinking", None) or os.environ.get("VIDEOATLAS_THINKING", "").strip()
    thinking = parse_thinking(spec) if spec else {}
    model = settings_model(args.agent)
    given = {
        key.removeprefix("setting__"): value
        for key, value in vars(args).items()
        if key.startswith("setting__") and value is not None
    }
    foreign = sorted(set(given) - set(model.model_fields))
    if foreign:
        flags = ", ".join("--" + f.replace("_", "-") for f in foreign)
        raise BadInputError(f"{flags}: not a setting of the {args.agent} agent (see --help)")
    try:
        config = RunConfig(
            agent=args.agent,
            k=args.k,
            cell_px=args.cell_px,
            token_budget=args.token_budget,
            call_budget=args.call_budget,
            prompts=args.prompts,
            max_concurrency=args.max_concurrency,
            settings=given,
            thinking=thinking,
        )
        model.model_validate(given)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = str(first["loc"][0]) if first["loc"] else "settings"
        raise BadInputError(f"--{where.replace('_', '-')}: {first['msg']}") from None
    check_thinking(config)
    return config


def _unreachable_hint(base_url: str) -> str:
    if base_url == DEFAULT_BASE_URL:
        return (
            "no endpoint was given, so the default was tried: point --base-url or VIDEOATLAS_BASE_URL at an "
            "OpenAI-compatible VLM server (`videoatlas serve` starts one on a GPU), or add --standin to answer "
            "with the stand-in (a test backend)"
        )
    return "is the server up? Check --base-url or VIDEOATLAS_BASE_URL, or add --standin to answer with the stand-in"


@contextlib.contextmanager
def standin_endpoint(
    pixels: int | None,
    timeout_s: float | None,
    config: RunConfig | None = None,
    model: str = "",
    reasoning: str = "off",
) -> Iterator[EndpointSettings]:
    """The STAND-IN VLM started in this process for the duration, and the settings that reach it.

    ``pixels``: its image limit (default its own); with ``config``, the grid picture is checked
    against that limit before the server starts.
    """
    from videoatlas.standin.server import RunningServer, StandinConfig, StandinServer

    sim = StandinConfig(reasoning=reasoning)
    if pixels is not None:
        sim.max_image_pixels = pixels
    if config is not None:
        limits.check_image_fits(config.k, config.cell_px, sim.max_image_pixels)
    sys.stderr.write("starting the STAND-IN VLM (OCR-based test backend, not a real VLM) in-process\n")
    with RunningServer(StandinServer(sim)) as server:
        yield EndpointSettings.from_env(
            {},
            base_url=server.base_url,
            model=model,
            timeout_s=timeout_s,
            max_image_pixels=sim.max_image_pixels,
            standin=True,
        )


@contextlib.contextmanager
def endpoint_from(args: argparse.Namespace, config: RunConfig | None = None) -> Iterator[EndpointSettings]:
    """Endpoint settings from the environment and flags; with ``--standin``, a stand-in server for the duration.

    With ``config``, its grid picture is checked against the endpoint's image limit before anything
    starts (the stand-in's limit is its own configuration's). An endpoint that does not answer is
    reported with the ways to name one (``--base-url``, ``VIDEOATLAS_BASE_URL``) or to use the stand-in.
    """
    pixels = getattr(args, "max_image_pixels", None)
    if getattr(args, "standin", False):
        with standin_endpoint(
            pixels, args.timeout, config, reasoning=getattr(args, "standin_reasoning", "off")
        ) as endpoint:
            yield endpoint
        return
    settings = EndpointSettings.from_env(
        None,
        base_url=args.base_url,
        model=args.model,
        api_key=args.api_key,
        timeout_s=args.timeout,
        patience_s=getattr(args, "endpoint_patience", None),
        strict_schema=False if getattr(args, "no_strict_schema", False) else None,
        max_image_pixels=pixels,
    )
    if config is not None:
        limits.check_image_fits(config.k, config.cell_px, settings.max_image_pixels)
    try:
        yield settings
    except EndpointUnreachableError as exc:
        raise EndpointUnreachableError(f"{exc}; {_unreachable_hint(settings.base_url)}") from None
