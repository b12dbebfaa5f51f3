"""The uniform baseline's own settings."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from pydantic import Field

from videoatlas import limits
from videoatlas.runtime.config import AgentSettings, settings_reader

if TYPE_CHECKING:
    from videoatlas.runtime.config import RunConfig


class UniformSettings(AgentSettings):
    """How many frames the baseline samples."""

    thinking_roles: ClassVar[tuple[str, ...]] = ("answerer",)

    frames: int = Field(default=64, ge=1, le=1024)
    """Frames sampled evenly over the video, rounded up to whole K x K sheets."""

    def check_images(self, config: RunConfig, max_pixels: int) -> None:
        """Its sheets are the environment's K x K grid of ``cell_px`` cells: one too large is refused."""
        limits.check_image_fits(config.k, config.cell_px, max_pixels)


uniform = settings_reader(UniformSettings)
"""The run's uniform-baseline settings."""


Settings = UniformSettings
"""The name every agent's settings module gives its settings model."""
