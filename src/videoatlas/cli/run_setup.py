"""The command line's words for a run: its options and its endpoint, as the front door takes them.

``ask``, ``eval run``, ``resume`` and ``mcp`` parse their flags here into the plain values
:mod:`videoatlas.request` checks (:func:`videoatlas.request.config_of`,
:class:`videoatlas.request.EndpointChoice`); nothing is checked twice and nothing heavy is imported.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from videoatlas.request import EndpointChoice
    from videoatlas.runtime.config import RunConfig

SHARED = (
    "k", "cell_px", "token_budget", "call_budget", "prompts", "max_concurrency", "thinking", "speech", "speech_url",
    "speech_model",
)  # fmt: skip
"""The flags every agent takes that are part of a run's configuration (``--k``, ``--cell-px``...)."""


def flag(name: str) -> str:
    """An option as the command line spells it (``cell_px`` -> ``--cell-px``)."""
    return "--" + name.replace("_", "-")


def options_from(args: argparse.Namespace) -> dict[str, Any]:
    """The run's options from its flags: the shared knobs given, and the agent-setting flags given.

    A flag of another agent's settings is kept, so that :func:`videoatlas.request.config_of` refuses
    it by name (it would be silently ignored otherwise).
    """
    options = {name: getattr(args, name) for name in SHARED if getattr(args, name, None) is not None}
    options.update(
        {
            key.removeprefix("setting__"): value
            for key, value in vars(args).items()
            if key.startswith("setting__") and value is not None
        }
    )
    return options


def run_config_from(args: argparse.Namespace) -> RunConfig:
    """The run's configuration from its flags, checked (see :func:`videoatlas.request.config_of`)."""
    from videoatlas.request import config_of

    return config_of(args.agent, options_from(args), spell=flag)


def endpoint_choice(args: argparse.Namespace) -> EndpointChoice:
    """The endpoint the flags name (``--base-url``, ``--model``...; ``--standin``), over the environment's."""
    from videoatlas.request import EndpointChoice

    return EndpointChoice(
        base_url=getattr(args, "base_url", None),
        model=getattr(args, "model", None),
        api_key=getattr(args, "api_key", None),
        timeout_s=getattr(args, "timeout", None),
        patience_s=getattr(args, "endpoint_patience", None),
        strict_schema=False if getattr(args, "no_strict_schema", False) else None,
        max_image_pixels=getattr(args, "max_image_pixels", None),
        max_images=getattr(args, "max_images", None),
        standin=getattr(args, "standin", False),
        standin_reasoning=getattr(args, "standin_reasoning", "off"),
    )
