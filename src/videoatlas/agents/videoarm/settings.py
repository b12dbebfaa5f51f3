"""VideoARM's own settings: the step budget, the tools' frame sizes and counts, and whether it may listen.

What it hears, and through which server and model, is the run's speech track (``--speech``,
``--speech-url``, ``--speech-model``: :mod:`videoatlas.runtime.speech`), shared with every agent.
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from videoatlas.runtime.config import StopsOnConfidence, settings_reader

SNAP_FRAMES = (30, 60, 90, 150)
"""The frame counts scene_snapper may be asked for (the paper samples 30 to 150)."""


class VideoArmSettings(StopsOnConfidence):
    """How VideoARM works (the paper's values by default)."""

    thinking_roles: ClassVar[tuple[str, ...]] = ("controller", "tools")

    # N tool calls, then the answer, as the paper's Algorithm 1 and VideoSeek's turns (issue 69); before,
    # the Nth step was the forced answer, so a run made N - 1 tool calls at most.
    steps: int = Field(default=10, ge=1, le=30)
    """Tool steps at most, one tool call each (the paper's N: 10); then one forced answer."""
    snap_px: int = Field(default=256, ge=64, le=1024)
    """Short side of scene_snapper's frames, in pixels (tiled 3 x 2 to a mosaic)."""
    clip_px: int = Field(default=512, ge=64, le=1280)
    """Short side of clip_analyzer's frames, in pixels."""
    clip_frames: int = Field(default=50, ge=1, le=50)
    """Frames clip_analyzer looks at, at most (the paper: 50)."""
    clip_fps: float = Field(default=2.0, gt=0.0, le=10.0)
    """Frames per second clip_analyzer samples its stretch at (up to clip_frames)."""
    no_audio: bool = False
    """Never offer audio_transcriber (the ablation without listening)."""


arm = settings_reader(VideoArmSettings)
"""The run's VideoARM settings."""


Settings = VideoArmSettings
"""The name every agent's settings module gives its settings model."""
