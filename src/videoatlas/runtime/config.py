"""A run's configuration: what every agent shares, and each agent's own settings (plain data, stored with the run)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Literal, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

from videoatlas import limits
from videoatlas.defaults import DEFAULT_AGENT
from videoatlas.errors import BadInputError


class AgentSettings(BaseModel):
    """Base of every agent's own settings: strict (an unknown setting is an error), described field by field.

    Each field's docstring is its description (the CLI shows it as the flag's help).
    """

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, frozen=True)
    thinking_roles: ClassVar[tuple[str, ...]] = ()
    """The roles whose calls ``--thinking`` can turn thinking on or off for (here, so that checking the setting
    does not load the agent's graph)."""

    @property
    def parallel(self) -> int:
        """Graph tasks this agent runs at once at most (Video-RLM: its workers)."""
        return 1

    def check_images(self, config: RunConfig, max_pixels: int) -> None:
        """Refuse, before a run starts, pictures the configuration makes too large for the endpoint (``max_pixels``).

        Each agent knows what it renders: one that shows the environment's K x K grid refuses a grid over the
        limit (:func:`videoatlas.limits.check_image_fits`); by default nothing is refused here (every picture
        is still checked against the limit when it is sent).
        """
        return None


class StopsOnConfidence(AgentSettings):
    """Settings of an agent that decides when to stop searching: its stop is held to the server's probability."""

    confidence: float = Field(default=0.8, gt=0.0, le=1.0)
    """A stop stands when the server's probability of it, read from its logprobs, is at least this (Video-RLM:
    that the evidence suffices; EEA, VideoARM, VideoSeek: that the step's action is to answer); a server that
    gives none leaves the model's own choice. Higher: a stop the model is less sure of searches on; below 0.5,
    a stop it leaned towards without taking is taken (fewer calls)."""


class RunConfig(BaseModel):
    """Every knob of a run (stored with the run, so it can be resumed and compared).

    What every agent shares sits here: which agent, the grid the environment renders, the run's
    budget, the prompt set. What only one agent has is in ``settings``, validated by that agent's
    own settings model (see :class:`videoatlas.agents.base.Agent`). A flat mapping, as configs were
    stored before agents had their own settings, is read with every other key as a setting.
    """

    agent: str = DEFAULT_AGENT
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
    speech: Literal["auto", "off", "full"] = "auto"
    """The speech track: ``auto`` transcribes the stretches the agent looks at when the video has sound and the
    endpoint transcribes; ``full`` transcribes the whole track at the first look; ``off`` never listens. A
    subtitle file, when given, is used instead."""
    speech_url: str | None = None
    """The server that transcribes (``/v1/audio/transcriptions``), when it is not the VLM's (None: the VLM's)."""
    speech_model: str = ""
    """The model named in transcription requests (empty: the speech server's first model, or the chat model)."""
    thinking: dict[str, bool] = Field(default_factory=dict)
    """A reasoning model's thinking per role (``master``, ``worker``, ``planner``...; ``all`` for every role not
    named), sent as ``enable_thinking``. A role in none of these is sent nothing: the server's default."""

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

    def thinking_for(self, role: str) -> bool | None:
        """Whether calls of ``role`` ask the model to think (None: the setting says nothing of it)."""
        return self.thinking.get(role, self.thinking.get(ALL_ROLES))


S = TypeVar("S", bound=AgentSettings)


class _HoldsSettings(Protocol):
    settings: Any


def settings_reader(kind: type[S]) -> Callable[[_HoldsSettings], S]:
    """A typed accessor of an agent's settings in its nodes' context (each agent's settings module names one).

    VideoARM's: ``arm = settings_reader(VideoArmSettings)``, so its nodes call ``arm(ctx)``. A node runs only
    in its own agent's graph, so the context holds ``kind``; anything else is a wiring fault.
    """

    def read(ctx: _HoldsSettings) -> S:
        settings = ctx.settings
        if not isinstance(settings, kind):
            raise TypeError(f"a node of the agent with {kind.__name__} ran with {type(settings).__name__}")
        return settings

    return read


ALL_ROLES = "all"
"""The key of a thinking setting that applies to every role it does not name."""
_SWITCH = {"on": True, "off": False, "true": True, "false": False, "1": True, "0": False}


def parse_thinking(spec: str) -> dict[str, bool]:
    """``on``, ``off`` or ``ROLE=on,ROLE=off`` (also ``on,worker=off``) as a role -> thinking map.

    Checks the form only; which roles exist is the agents' business (:func:`videoatlas.agents.registry.check_thinking`).
    """
    out: dict[str, bool] = {}
    for item in (part.strip() for part in spec.split(",")):
        if not item:
            continue
        role, _, value = item.rpartition("=")
        role = role.strip().lower() or ALL_ROLES
        switch = _SWITCH.get(value.strip().lower())
        if switch is None or not role.replace("_", "").replace("-", "").isalnum():
            raise BadInputError(f"thinking setting {item!r} must be on, off or ROLE=on|off")
        if role in out:
            raise BadInputError(f"thinking setting names {role!r} twice")
        out[role] = switch
    if not out:
        raise BadInputError("thinking setting is empty: give on, off or ROLE=on|off")
    return out
