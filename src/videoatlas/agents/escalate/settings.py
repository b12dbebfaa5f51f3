"""The escalating agent's own settings: the uniform pass's frames, whom to hand over to, and below what."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from pydantic import Field, field_validator

from videoatlas.agents.eea.settings import EEASettings
from videoatlas.agents.uniform.settings import UniformSettings
from videoatlas.agents.video_rlm.settings import VideoRLMSettings
from videoatlas.agents.videoarm.settings import VideoArmSettings
from videoatlas.agents.videoseek.settings import VideoSeekSettings
from videoatlas.runtime.config import AgentSettings, settings_reader

if TYPE_CHECKING:
    from videoatlas.runtime.config import RunConfig

AGENT_NAME = "escalate"
DEFAULT_SEARCH = "video-rlm"
DEFAULT_THRESHOLD = 0.7
"""Below this confidence the uniform answer is handed over (docs/agents.md, "Escalate", says why 0.7)."""


SEARCH_SETTINGS: dict[str, type[AgentSettings]] = {
    "video-rlm": VideoRLMSettings,
    "videoseek": VideoSeekSettings,
    "eea": EEASettings,
    "videoarm": VideoArmSettings,
    "uniform": UniformSettings,
}
"""The agents a run may hand over to, by name, with their settings models. Imported, not looked up in the
registry: the registry loads this agent, so this agent must not load the registry (no import cycle). A test holds
this table (and :data:`videoatlas.agents.escalate.passes.AGENTS`) to every registered agent but this one."""


def _search_roles() -> tuple[str, ...]:
    """Every role an agent it may hand over to has (which one runs is a setting; the roles are read without it)."""
    return tuple(sorted({role for model in SEARCH_SETTINGS.values() for role in model.thinking_roles}))


class EscalateSettings(UniformSettings):
    """The uniform pass's ``frames``, the search agent it hands over to, and the confidence it hands over below."""

    thinking_roles: ClassVar[tuple[str, ...]] = _search_roles()

    escalate_to: str = DEFAULT_SEARCH
    """The agent that searches when the uniform answer is not sure enough (any registered agent but this one)."""
    escalate_below: float = Field(default=DEFAULT_THRESHOLD, ge=0.0, le=1.0)
    """Hand over when the uniform answer's probability is below this (an answer without one is handed over too)."""

    @field_validator("escalate_to")
    @classmethod
    def _a_search_agent(cls, name: str) -> str:
        if name not in SEARCH_SETTINGS:
            others = ", ".join(SEARCH_SETTINGS)
            raise ValueError(f"{name!r} is not an agent to hand over to; choose one of {others}")
        return name

    def check_images(self, config: RunConfig, max_pixels: int) -> None:
        """The uniform pass's sheets (the K x K grid), then what the search agent would send, by its own check."""
        super().check_images(config, max_pixels)
        SEARCH_SETTINGS[self.escalate_to]().check_images(config, max_pixels)


escalate = settings_reader(EscalateSettings)
"""The run's escalation settings."""


Settings = EscalateSettings
"""The name every agent's settings module gives its settings model."""
