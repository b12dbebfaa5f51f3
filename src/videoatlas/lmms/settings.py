"""The ``videoatlas`` model's ``--model_args``: the agent and its settings, the endpoint, the database.

``agent=video-rlm,base_url=http://host:8000/v1,db=sqlite:///runs.db,workers=2,rounds=2``: every key
that is not one of :data:`OWN_KEYS` is a run option, checked like ``videoatlas.ask``'s (a shared knob
such as ``k`` or ``token_budget``, or the agent's own setting); an unknown one is refused in one line.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from videoatlas.agents.registry import DEFAULT_AGENT, check_prompts
from videoatlas.api import run_config
from videoatlas.errors import BadInputError
from videoatlas.runtime.config import RunConfig

OWN_KEYS = ("agent", "base_url", "model", "api_key", "standin", "db", "concurrency", "log_level")
"""Keys of ``--model_args`` that are the model's own; every other key is a run option."""

HARNESS_KEYS = ("batch_size", "max_batch_size", "device")
"""What lmms-eval hands every model from its own flags; runs are not batched on a device, so they are unused."""


@dataclass(frozen=True, slots=True)
class ModelArgs:
    """The parsed ``--model_args``."""

    config: RunConfig
    base_url: str | None = None
    model: str | None = None
    api_key: str | None = None
    standin: bool = False
    """Answer with the stand-in VLM, started in this process (a test backend)."""
    db: str | None = None
    """Database URL for runs and traces (default ``VIDEOATLAS_DB`` or the data directory's SQLite file)."""
    concurrency: int = 1
    """Questions answered at once."""
    log_level: str = "info"


def _text(args: dict[str, Any], key: str) -> str | None:
    """A string argument (lmms-eval turns ``model=7`` into an int: take it back as written)."""
    value = args.get(key)
    return None if value is None else str(value)


def _option(value: Any) -> Any:
    """An option's value: a JSON object or list as given in quotes (``thinking='{"all": false}'``) is parsed."""
    if isinstance(value, str) and value.strip()[:1] in ("{", "["):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            raise BadInputError(f"--model_args: {value!r} is not valid JSON") from None
    return value


def parse_model_args(args: dict[str, Any]) -> ModelArgs:
    """``--model_args`` as lmms-eval parsed them into ``ModelArgs``; a clear one-line error for a bad one."""
    agent = _text(args, "agent") or DEFAULT_AGENT
    options = {k: _option(v) for k, v in args.items() if k not in OWN_KEYS and k not in HARNESS_KEYS}
    config = run_config(agent, options)
    check_prompts(config.agent, config.prompts)
    standin = args.get("standin", False)
    if not isinstance(standin, bool):
        raise BadInputError(f"--model_args: standin must be true or false, got {standin!r}")
    base_url = _text(args, "base_url")
    if standin and base_url is not None:
        raise BadInputError("--model_args: standin=true and base_url name two endpoints: give one")
    concurrency = args.get("concurrency", 1)
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise BadInputError(f"--model_args: concurrency must be a whole number of at least 1, got {concurrency!r}")
    return ModelArgs(
        config=config,
        base_url=base_url,
        model=_text(args, "model"),
        api_key=_text(args, "api_key"),
        standin=standin,
        db=_text(args, "db"),
        concurrency=concurrency,
        log_level=_text(args, "log_level") or "info",
    )
