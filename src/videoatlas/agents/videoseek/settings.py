"""VideoSeek's own settings: how many frames each tool takes (in units of alpha) and how many turns."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from videoatlas.runtime.config import StopsOnConfidence, settings_reader


class VideoSeekSettings(StopsOnConfidence):
    """How VideoSeek looks (the paper's values by default)."""

    thinking_roles: ClassVar[tuple[str, ...]] = ("planner", "looker")

    alpha: int = Field(default=2, ge=1, le=8)
    """Frame budget unit: overview 16 alpha frames, skim 4 alpha frames over at least 4 alpha s, focus at most
    4 alpha s at 1 fps (the paper: 4 on LVBench, 2 elsewhere)."""
    turns: int = Field(default=20, ge=1, le=100)
    """Planner turns at most, one tool call each (the paper: 20); then one forced answer."""
    short_px: int = Field(default=256, ge=64, le=1024)
    """Short side of overview and skim frames, in pixels."""
    per_image: int = Field(default=8, ge=1, le=64)
    """Overview and skim frames tiled per image (4 to a row)."""
    subtitle_chars: int = Field(default=6000, ge=0, le=200_000)
    """Characters of subtitles the planner starts from (the whole track when it fits, else spread over it)."""
    speech_chunks: int = Field(default=240, ge=0, le=100_000)
    """With a speech track and no subtitle file, the chunks of it (30 s each) heard before the first turn, so
    that the planner starts from what is said as it would from a subtitle file (the paper's first query carries
    the subtitles): every chunk of a video up to two hours, that many spread evenly over a longer one (0: only
    what the tools listen to, as they look)."""

    @property
    def overview_frames(self) -> int:
        """Frames an overview takes: 16 alpha."""
        return 16 * self.alpha

    @property
    def skim_frames(self) -> int:
        """Frames a skim takes: 4 alpha."""
        return 4 * self.alpha

    @property
    def span_s(self) -> float:
        """The span bound in seconds, 4 alpha: a skim covers at least this much, a focus at most this much."""
        return 4.0 * self.alpha


seek = settings_reader(VideoSeekSettings)
"""The run's VideoSeek settings."""


Settings = VideoSeekSettings
"""The name every agent's settings module gives its settings model."""
