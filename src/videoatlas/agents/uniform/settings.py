"""The uniform baseline's own settings."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from pydantic import Field

from videoatlas.runtime.config import AgentSettings

if TYPE_CHECKING:
    from videoatlas.runtime.context import AgentContext


class UniformSettings(AgentSettings):
    """How many frames the baseline samples."""

    thinking_roles: ClassVar[tuple[str, ...]] = ("answerer",)

    frames: int = Field(default=64, ge=1, le=1024)
    """Frames sampled evenly over the video, rounded up to whole K x K sheets."""


def uniform(ctx: AgentContext) -> UniformSettings:
    """The run's uniform-baseline settings."""
    settings = ctx.settings
    assert isinstance(settings, UniformSettings), "a uniform node runs with uniform settings"
    return settings


Settings = UniformSettings
"""The name every agent's settings module gives its settings model."""
