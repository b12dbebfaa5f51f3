"""The front door of a question: a run request built and checked once, and the endpoint it is answered on.

Every way in (``videoatlas ask``, :func:`videoatlas.ask`, ``videoatlas mcp``, ``eval run``, the LangGraph
Agent Server, ``resume``) goes through here:

* :func:`config_of` turns flat options (``k``, ``rounds``, ``thinking``...) into a checked
  :class:`~videoatlas.runtime.config.RunConfig`: shared knobs by name, the agent's own settings by
  theirs, anything else refused;
* :class:`EndpointChoice` says how the run reaches its model: a named server (flags over the
  ``VIDEOATLAS_*`` environment) or the stand-in; :func:`open_endpoint` is the one place the
  stand-in is started, and has the agent check its pictures against the endpoint's image limit;
* :func:`make_request` checks everything that takes milliseconds (the question and its choices, the
  configuration, the video and subtitle files, the prompt set, the endpoint's form) before anything
  heavy is imported or any server starts: a typo costs no start-up;
* :func:`answer` runs a :class:`RunRequest` to its :class:`~videoatlas.runs.RunResult`, and
  :func:`resume_endpoint` chooses the endpoint a stopped run goes on with.

The callers only parse their own input and show the result.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from videoatlas import limits
from videoatlas.agents.registry import DEFAULT_AGENT
from videoatlas.errors import BadInputError, EndpointUnreachableError
from videoatlas.llm.settings import DEFAULT_BASE_URL, EndpointSettings

if TYPE_CHECKING:
    from videoatlas.runs import Progress, RunResult
    from videoatlas.runtime.config import RunConfig

__all__ = [
    "EndpointChoice",
    "RunRequest",
    "answer",
    "check_setup",
    "config_of",
    "make_request",
    "open_endpoint",
    "resume_endpoint",
]

Spell = Callable[[str], str]
"""How the caller names an option in a message: ``--cell-px`` on the command line, ``cell_px`` from Python."""


def _as_named(name: str) -> str:
    return name


def config_of(agent: str, options: Mapping[str, Any], spell: Spell = _as_named) -> RunConfig:
    """A run's configuration from flat options: the shared knobs by name, the rest the agent's own settings.

    ``thinking`` may be a role map or its text form (``on``, ``worker=off``); when it is not given,
    ``VIDEOATLAS_THINKING`` is read. An option that is neither a shared knob nor one of the agent's
    settings is refused, as is a value out of range (named as the caller spells it).
    """
    from pydantic import ValidationError

    from videoatlas.agents.registry import check_thinking, settings_model
    from videoatlas.runtime.config import RunConfig, parse_thinking

    model = settings_model(agent)
    values = {key: value for key, value in options.items() if value is not None}
    thinking = values.pop("thinking", None)
    if thinking is None:
        thinking = os.environ.get("VIDEOATLAS_THINKING", "").strip() or {}
    if isinstance(thinking, str):
        thinking = parse_thinking(thinking)
    shared = set(RunConfig.model_fields) - {"agent", "settings", "thinking"}
    unknown = sorted(set(values) - shared - set(model.model_fields))
    if unknown:
        known = sorted(shared | {"thinking"} | set(model.model_fields))
        raise BadInputError(
            f"not an option of the {agent} agent: {', '.join(spell(u) for u in unknown)} "
            f"(options: {', '.join(spell(k) for k in known)})"
        )
    if "k" in values or "cell_px" in values:
        limits.check_grid(values.get("k", 8), values.get("cell_px", 320))
    try:
        config = RunConfig.of(agent=agent, thinking=thinking, **values)
        model.model_validate(config.settings)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"] if part != "settings") or "options"
        raise BadInputError(f"{spell(where)}: {first['msg']}") from None
    check_thinking(config)
    return config


@dataclass(frozen=True, slots=True)
class EndpointChoice:
    """How a run reaches its model: a named server (None fields: the environment's), or the stand-in."""

    base_url: str | None = None
    model: str | None = None
    api_key: str | None = None
    timeout_s: float | None = None
    patience_s: float | None = None
    strict_schema: bool | None = None
    max_image_pixels: int | None = None
    """The server's pixel limit per image (for the stand-in: its own, default its configuration's)."""
    max_images: int | None = None
    """The server's limit of images per prompt (for the stand-in: its own, default its configuration's)."""
    standin: bool = False
    """Start the stand-in VLM in this process for the run's duration."""
    standin_reasoning: str = "off"
    """The stand-in's reply style (``off``, ``field``, ``tags``: see ``videoatlas standin --reasoning``)."""

    def __post_init__(self) -> None:
        if self.standin and self.base_url is not None:
            raise BadInputError("the stand-in and a base URL name two endpoints: give one")

    def settings(self) -> EndpointSettings:
        """The named server's settings, flags over the environment (checked: a malformed URL is refused)."""
        return EndpointSettings.from_env(
            None,
            base_url=self.base_url,
            model=self.model,
            api_key=self.api_key,
            timeout_s=self.timeout_s,
            patience_s=self.patience_s,
            strict_schema=self.strict_schema,
            max_image_pixels=self.max_image_pixels,
            max_images=self.max_images,
        )


def _unreachable_hint(base_url: str) -> str:
    if base_url == DEFAULT_BASE_URL:
        return (
            "no endpoint was given, so the default was tried: point --base-url or VIDEOATLAS_BASE_URL at an "
            "OpenAI-compatible VLM server (`videoatlas serve` starts one on a GPU), or add --standin to answer "
            "with the stand-in (a test backend)"
        )
    return "is the server up? Check --base-url or VIDEOATLAS_BASE_URL, or add --standin to answer with the stand-in"


@contextlib.contextmanager
def open_endpoint(choice: EndpointChoice, config: RunConfig | None = None) -> Iterator[EndpointSettings]:
    """The endpoint's settings for the duration: the named server's, or those of a stand-in started here.

    With ``config``, the agent checks the pictures it will send against the endpoint's image limit
    before anything starts (:func:`videoatlas.agents.registry.check_images`). An endpoint that does
    not answer is reported with the ways to name one or to use the stand-in. This is the one place the
    stand-in is started for a run.
    """
    from videoatlas.agents.registry import check_images

    if choice.standin:
        from videoatlas import standin

        settings = EndpointSettings.from_env({}, base_url="http://127.0.0.1/v1", model="")
        pixels = choice.max_image_pixels or settings.max_image_pixels
        if config is not None:
            check_images(config, pixels)
        with standin.running(
            reasoning=choice.standin_reasoning, max_image_pixels=pixels, max_images=choice.max_images
        ) as server:
            yield EndpointSettings.from_env(
                {},
                base_url=server.base_url,
                model=choice.model or "",
                timeout_s=choice.timeout_s,
                max_image_pixels=server.standin.config.max_image_pixels,
                max_images=server.standin.config.max_images,
                standin=True,
            )
        return
    settings = choice.settings()
    if config is not None:
        check_images(config, settings.max_image_pixels)
    try:
        yield settings
    except EndpointUnreachableError as exc:
        raise EndpointUnreachableError(f"{exc}; {_unreachable_hint(settings.base_url)}") from None


@dataclass(frozen=True, slots=True)
class RunRequest:
    """One question about one video, with everything its run needs, checked (see :func:`make_request`)."""

    video: str
    question: str
    choices: tuple[str, ...]
    config: RunConfig
    endpoint: EndpointChoice
    subtitles: str | None = None
    subtitle_offset: float = 0.0
    db: str | None = None
    """The run store (None: ``VIDEOATLAS_DB`` or the data directory's SQLite file)."""
    persist: bool = True
    """False: checkpoints in memory, no trace (nothing is kept)."""
    run_id: str | None = None
    """The run's id (None: a new one); a run id in use by a live process is refused."""

    def with_endpoint(self, endpoint: EndpointChoice) -> RunRequest:
        """The same request answered on another endpoint."""
        return replace(self, endpoint=endpoint)


def check_setup(
    video: str | Path,
    *,
    agent: str = DEFAULT_AGENT,
    options: Mapping[str, Any] | None = None,
    endpoint: EndpointChoice | None = None,
    subtitles: str | Path | None = None,
    spell: Spell = _as_named,
) -> tuple[RunConfig, EndpointChoice]:
    """What a run is set up with, checked: its configuration and its endpoint choice.

    The configuration (:func:`config_of`), the video and subtitle files (present, files), the agent's
    prompt set, the endpoint's form and, for a named endpoint, the agent's pictures against its image
    limit (the stand-in's limit is its own: :func:`open_endpoint` checks that one when it starts it).
    """
    from videoatlas.agents.registry import check_images, check_prompts
    from videoatlas.environment.files import check_file, check_subtitle_file

    config = config_of(agent, options or {}, spell)
    check_file(video)
    if subtitles is not None:
        check_subtitle_file(subtitles)
    check_prompts(config.agent, config.prompts)
    choice = endpoint or EndpointChoice()
    if not choice.standin:
        check_images(config, choice.settings().max_image_pixels)
    return config, choice


def make_request(
    video: str | Path,
    question: str,
    choices: Sequence[str] = (),
    *,
    agent: str = DEFAULT_AGENT,
    options: Mapping[str, Any] | None = None,
    endpoint: EndpointChoice | None = None,
    subtitles: str | Path | None = None,
    subtitle_offset: float = 0.0,
    db: str | None = None,
    persist: bool = True,
    run_id: str | None = None,
    spell: Spell = _as_named,
) -> RunRequest:
    """A checked run request: everything that takes milliseconds to check, checked before anything heavy runs.

    The question and its choices (:func:`videoatlas.limits.check_question`), then the run's set-up
    (:func:`check_setup`).
    """
    limits.check_question(question, list(choices))
    config, choice = check_setup(
        video, agent=agent, options=options, endpoint=endpoint, subtitles=subtitles, spell=spell
    )
    return RunRequest(
        video=str(video),
        question=question,
        choices=tuple(choices),
        config=config,
        endpoint=choice,
        subtitles=str(subtitles) if subtitles is not None else None,
        subtitle_offset=subtitle_offset,
        db=db,
        persist=persist,
        run_id=run_id,
    )


async def answer(
    request: RunRequest, on_progress: Progress | None = None, endpoint: EndpointSettings | None = None
) -> RunResult:
    """Run ``request`` to its result: the endpoint opened (the stand-in started if asked), the run checkpointed.

    ``endpoint``: settings already open (a server that holds its endpoint, such as ``videoatlas mcp``), in
    place of the request's choice.
    """
    from videoatlas.runs import run_question

    with contextlib.ExitStack() as stack:
        settings = endpoint or stack.enter_context(open_endpoint(request.endpoint, request.config))
        return await run_question(
            request.video,
            request.question,
            list(request.choices),
            request.config,
            settings,
            subtitles=request.subtitles,
            subtitle_offset=request.subtitle_offset,
            on_progress=on_progress,
            db_url=request.db,
            persist=request.persist,
            run_id=request.run_id,
        )


def _stored_endpoint(run_id: str, db: str | None) -> dict[str, Any]:
    """The endpoint a run recorded ({}: no such run; resuming it then says so)."""
    from videoatlas.persistence.db import resolve_db_url
    from videoatlas.persistence.store import TraceStore

    store = TraceStore.shared(resolve_db_url(db))
    try:
        row = store.run(run_id)
        return dict(row.endpoint) if row is not None else {}
    finally:
        store.release()


@contextlib.contextmanager
def resume_endpoint(run_id: str, db: str | None, choice: EndpointChoice) -> Iterator[EndpointSettings | None]:
    """The endpoint a stopped run goes on with: the one named, a new stand-in, or None (the stored one).

    A run answered by the in-process stand-in stored that, not the stand-in's port, which died with
    it: the stand-in is started again (``choice.standin`` starts it for any run).
    """
    named = choice.standin or choice.base_url is not None
    stored = {} if named else _stored_endpoint(run_id, db)
    if choice.standin or stored.get("standin"):
        pixels, images = stored.get("max_image_pixels"), stored.get("max_images")
        standin = replace(
            choice,
            standin=True,
            max_image_pixels=pixels if isinstance(pixels, int) else choice.max_image_pixels,
            max_images=images if isinstance(images, int) else choice.max_images,
        )
        with open_endpoint(standin) as settings:
            yield settings
        return
    if choice.base_url is not None or choice.model is not None or choice.api_key is not None:
        yield choice.settings()
        return
    yield None
