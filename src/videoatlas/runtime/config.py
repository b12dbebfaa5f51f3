"""A run's configuration: what every agent shares, and each agent's own settings (plain data, stored with the run)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from videoatlas import limits


class AgentSettings(BaseModel):
    """Base of every agent's own settings: strict (an unknown setting is an error), described field by field.

    Each field's docstring is its description (the CLI shows it as the flag's help).
    """

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, frozen=True)

    @property
    def parallel(self) -> int:
        """Graph tasks this agent runs at once at most (Video-RLM: its workers)."""
        return 1


class RunConfig(BaseModel):
    """Every knob of a run (stored with the run, so it can be resumed and compared).

    What every agent shares sits here: which agent, the grid the environment renders, the run's
    budget, the prompt set. What only one agent has is in ``settings``, validated by that agent's
    own settings model (see :class:`videoatlas.agents.base.Agent`). A flat mapping, as configs were
    stored before agents had their own settings, is read with every other key as a setting.
    """

    agent: str = "video-rlm"
    """Which agent answers (``video-rlm``, ``uniform``, ``videoseek``...)."""
    k: int = Field(default=8, ge=limits.K_MIN, le=limits.K_MAX)
    cell_px: int = Field(default=320, ge=limits.CELL_PX_MIN, le=limits.CELL_PX_MAX)
    token_budget: int | None = Field(default=None, ge=1)
    call_budget: int | None = Field(default=None, ge=1)
    prompts: str = "default"
    max_concurrency: int = Field(default=8, ge=1, le=64)
    """Node executions running at once (never more than the agent runs in parallel; see AgentContext.slots)."""
    settings: dict[str, Any] = Field(default_factory=dict)
    """The agent's own settings, as given (defaults are the agent's settings model's)."""

    @model_validator(mode="before")
    @classmethod
    def _settings_apart(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        shared = set(cls.model_fields) - {"settings"}
        own = {key: value for key, value in data.items() if key not in shared and key != "settings"}
        if not own:
            return data
        return {**{k: v for k, v in data.items() if k in shared}, "settings": {**data.get("settings", {}), **own}}

    @model_validator(mode="after")
    def _grid_renders(self) -> RunConfig:
        problem = limits.grid_problem(self.k, self.cell_px)
        if problem is not None:
            raise ValueError(problem)
        return self

    @classmethod
    def of(cls, **values: Any) -> RunConfig:
        """A configuration from flat keyword values: shared knobs by name, the rest as the agent's settings."""
        return cls.model_validate(values)

    def with_settings(self, **values: Any) -> RunConfig:
        """A copy with some of the agent's settings changed."""
        return self.model_copy(update={"settings": {**self.settings, **values}})
