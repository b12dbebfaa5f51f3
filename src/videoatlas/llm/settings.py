"""Endpoint settings: environment variables first, command-line flags on top."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any

from videoatlas.errors import BadInputError

DEFAULT_BASE_URL = "http://127.0.0.1:8000/v1"
DEFAULT_PATIENCE_S = 300.0
"""Five minutes: a vLLM server restarted after an out-of-memory error or a preemption loads its model in that time."""


POSITIVE = {
    "timeout_s": "the request timeout in seconds (--timeout)",
    "max_concurrency": "the calls in flight at once (--max-concurrency)",
    "max_tokens": "the reply's token limit (max_tokens)",
    "thinking_max_tokens": "the token limit of a reply with thinking (thinking_max_tokens)",
    "max_images": "the images per prompt (--max-images, VIDEOATLAS_MAX_IMAGES)",
    "max_image_pixels": "the pixels per image (--max-image-pixels, VIDEOATLAS_MAX_IMAGE_PIXELS)",
}
"""Settings that must be above 0, with how a user names them in a refusal."""


@dataclass(frozen=True, slots=True)
class EndpointSettings:
    """How to reach an OpenAI-compatible VLM server, and how patiently."""

    base_url: str = DEFAULT_BASE_URL
    model: str = ""
    """Empty: use the first model the server lists."""
    api_key: str = "EMPTY"
    timeout_s: float = 120.0
    """Per HTTP request."""
    max_retries: int = 4
    """Retries after the first attempt, on connection errors, timeouts, 408, 409, 429 and 5xx, for every request
    to the endpoint (chat, model listing, embeddings, transcription: :mod:`videoatlas.llm.transport`)."""
    backoff_s: float = 0.5
    """The first retry's backoff ceiling; it doubles with each retry (the sleep is drawn below it: full jitter)."""
    backoff_cap_s: float = 8.0
    """The highest backoff ceiling."""
    patience_s: float = DEFAULT_PATIENCE_S
    """How long requests (chat, model listing, embeddings, transcription) wait for an endpoint that answered before
    and stopped (restarted, preempted) before the runs stop as interrupted (``--endpoint-patience``,
    ``VIDEOATLAS_ENDPOINT_PATIENCE``; see :mod:`videoatlas.llm.outage`). The run store and the checkpointer wait
    as long for their database."""
    max_concurrency: int = 16
    """Requests in flight at once, across every node and worker."""
    max_tokens: int = 4096
    """Completion tokens a call may take (sent as ``max_completion_tokens``): room for the longest reply a schema
    allows (a report on 32 frames with a description each runs past 2,000), since a reply cut at the limit is
    broken JSON and costs a re-ask."""
    thinking_max_tokens: int = 8192
    """Completion tokens of a call with thinking on: the reasoning comes out of the same budget as the answer,
    and a model that runs out while thinking never answers."""
    temperature: float = 0.0
    max_images: int = 16
    """Images per prompt the server accepts (vLLM ``--limit-mm-per-prompt``, 16 in our serving recipe); a server
    started with more or fewer: ``VIDEOATLAS_MAX_IMAGES`` or ``--max-images``. Checked before every call; an agent
    that chooses how many pictures to send (VideoARM's surveys, Video-RLM's decision) keeps within it."""
    max_image_pixels: int = 12_845_056
    """Pixels per image the server accepts (Qwen2.5-VL's default ``max_pixels``, 16384 x 28 x 28); a server
    configured for more or fewer: ``VIDEOATLAS_MAX_IMAGE_PIXELS`` or ``--max-image-pixels``. Checked before a run
    starts (:func:`videoatlas.limits.check_image_fits`) and before every call."""
    strict_schema: bool = True
    """Send ``"strict": true`` with each reply schema (vLLM and OpenAI-style servers accept it; turn it off,
    ``VIDEOATLAS_STRICT_SCHEMA=0`` or ``--no-strict-schema``, for a server that refuses it)."""
    standin: bool = False
    """The endpoint is the stand-in started in this process (``--standin``): its port dies with the process,
    so a run records this rather than the URL as the way to reach it again (``resume`` starts a new one)."""

    def __post_init__(self) -> None:
        if not self.base_url.startswith(("http://", "https://")):
            raise BadInputError(f"endpoint URL must start with http:// or https://, got {self.base_url!r}")
        for name, told in POSITIVE.items():
            value = getattr(self, name)
            if not value > 0:
                raise BadInputError(f"{told} must be positive, got {value!r}")
        if self.max_retries < 0:
            raise BadInputError("max_retries must be >= 0")
        if not (self.backoff_s >= 0 and self.backoff_cap_s >= 0):
            raise BadInputError("backoff_s and backoff_cap_s must be >= 0")
        if not self.patience_s >= 0:
            raise BadInputError(f"the endpoint patience must be 0 or more seconds, got {self.patience_s!r}")

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> EndpointSettings:
        """Settings from the ``VIDEOATLAS_*`` environment variables, ``overrides`` on top.

        Read: ``VIDEOATLAS_BASE_URL``, ``VIDEOATLAS_MODEL``, ``VIDEOATLAS_API_KEY``, ``VIDEOATLAS_STRICT_SCHEMA``,
        ``VIDEOATLAS_MAX_IMAGES``, ``VIDEOATLAS_MAX_IMAGE_PIXELS``, ``VIDEOATLAS_ENDPOINT_PATIENCE``. ``overrides``
        (command-line flags) win.
        """
        source = os.environ if env is None else env
        values: dict[str, Any] = {}
        for key, var in (
            ("base_url", "VIDEOATLAS_BASE_URL"),
            ("model", "VIDEOATLAS_MODEL"),
            ("api_key", "VIDEOATLAS_API_KEY"),
        ):
            if source.get(var):
                values[key] = source[var]
        for key, var in (("max_images", "VIDEOATLAS_MAX_IMAGES"), ("max_image_pixels", "VIDEOATLAS_MAX_IMAGE_PIXELS")):
            number = source.get(var, "").strip().replace("_", "")
            if number:
                if not number.isdigit() or int(number) <= 0:
                    raise BadInputError(f"{var} must be a positive whole number, got {number!r}")
                values[key] = int(number)
        patience = source.get("VIDEOATLAS_ENDPOINT_PATIENCE", "").strip()
        if patience:
            values["patience_s"] = parse_patience(patience, "VIDEOATLAS_ENDPOINT_PATIENCE")
        strict = source.get("VIDEOATLAS_STRICT_SCHEMA", "").strip().lower()
        if strict:
            if strict not in ("0", "1", "true", "false", "yes", "no", "on", "off"):
                raise BadInputError(f"VIDEOATLAS_STRICT_SCHEMA must be 1 or 0, got {strict!r}")
            values["strict_schema"] = strict in ("1", "true", "yes", "on")
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)

    def with_model(self, model: str) -> EndpointSettings:
        """A copy naming ``model``."""
        return replace(self, model=model)

    def redacted(self) -> dict[str, Any]:
        """Plain data safe to log or store: the API key is never included."""
        data = asdict(self)
        data["api_key"] = "***" if self.api_key and self.api_key != "EMPTY" else self.api_key
        return data


def parse_patience(text: str, where: str = "--endpoint-patience") -> float:
    """Seconds of patience from ``text`` (a number, 0 or more); ``where`` names the flag or variable in the error."""
    try:
        value = float(text)
    except ValueError:
        raise BadInputError(f"{where} must be a number of seconds, got {text!r}") from None
    if not value >= 0 or value == float("inf"):
        raise BadInputError(f"{where} must be 0 or more seconds, got {text!r}")
    return value
