"""The front door of a question: a run request built and checked once, and the endpoint it is answered on.

Every way in (``videoatlas ask``, :func:`videoatlas.ask`, ``videoatlas mcp``, ``eval run``, the LangGraph
Agent Server, ``resume``) goes through here:

* :func:`config_of` turns flat options (``k``, ``rounds``, ``thinking``...) into a checked
  :class:`~videoatlas.runtime.config.RunConfig`: shared knobs by name, the agent's own settings by
  theirs, anything else refused;
* :class:`EndpointChoice` says how the run reaches its model: a named server (flags over the
  ``VIDEOATLAS_*`` environment) or the stand-in; :func:`open_endpoint` is the one place the
  stand-in is started;
* :func:`make_request` checks everything that takes milliseconds (the question and its choices, the
  configuration, the video and subtitle files, the prompt set, the endpoint's form) before anything
  heavy is imported or any server starts: a typo costs no start-up; :func:`resume_request` is the
  request of a stored run that is left to finish;
* :func:`answer` is the one door below them all: it runs a :class:`RunRequest` to its
  :class:`~videoatlas.runs.RunResult`, idempotent by run id (a finished run read back, an interrupted
  one gone on with, any other run new), with the agent's pictures checked against the endpoint's
  image limit once, and the video probed, before any stand-in starts.

The callers only parse their own input and show the result.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog

from videoatlas import limits
from videoatlas.agents.registry import DEFAULT_AGENT
from videoatlas.errors import BadInputError, EndpointUnreachableError
from videoatlas.llm.settings import DEFAULT_BASE_URL, EndpointSettings

if TYPE_CHECKING:
    from langchain_core.language_models.chat_models import BaseChatModel

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
    "resume_request",
]

log = structlog.get_logger(__name__)

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
    try:  # the configuration checks its grid as it is made (RunConfig), once
        config = RunConfig.of(agent=agent, thinking=thinking, **values)
        model.model_validate(config.settings)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"] if part != "settings") or "options"
        if where in ("k", "cell_px", "options"):  # the grid's own words: sizes and the picture's side
            fields = RunConfig.model_fields
            k, cell_px = values.get("k", fields["k"].default), values.get("cell_px", fields["cell_px"].default)
            problem = limits.grid_problem(k, cell_px)
            if problem is not None:
                raise BadInputError(problem) from None
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

    def image_limit(self) -> int:
        """The pixels one image may have on this endpoint (the stand-in's own limit, as it will be started)."""
        if self.standin:  # its form checked as the named server's is, before it starts
            local = EndpointSettings.from_env(
                {}, base_url="http://127.0.0.1/v1", timeout_s=self.timeout_s, max_images=self.max_images
            )
            return self.max_image_pixels or local.max_image_pixels
        return self.settings().max_image_pixels

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
def open_endpoint(choice: EndpointChoice) -> Iterator[EndpointSettings]:
    """The endpoint's settings for the duration: the named server's, or those of a stand-in started here.

    An endpoint that does not answer is reported with the ways to name one or to use the stand-in.
    This is the one place the stand-in is started for a run.
    """
    if choice.standin:
        from videoatlas import standin

        with standin.running(
            reasoning=choice.standin_reasoning, max_image_pixels=choice.image_limit(), max_images=choice.max_images
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
    """The run's id (None: a new one). A finished run of that id is read back, an interrupted one gone on
    with; one held by a live process is refused unless ``force``."""
    force: bool = False
    """Take the run over from a live process that holds it."""

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
    prompt set and the endpoint's form. The pictures are checked against the endpoint's image limit at
    the door (:func:`answer`), once.
    """
    from videoatlas.agents.registry import check_prompts
    from videoatlas.environment.files import check_file, check_subtitle_file

    config = config_of(agent, options or {}, spell)
    check_file(video)
    if subtitles is not None:
        check_subtitle_file(subtitles)
    check_prompts(config.agent, config.prompts)
    choice = endpoint or EndpointChoice()
    choice.image_limit()  # the endpoint's form: a malformed URL or limit is refused here
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
    request: RunRequest,
    on_progress: Progress | None = None,
    endpoint: EndpointSettings | None = None,
    chat_model: BaseChatModel | None = None,
) -> RunResult:
    """The one door: ``request`` run to its result, idempotent by its run id.

    A finished run of the request's id is read back (nothing opened, no model call); otherwise the
    agent's pictures are checked against the endpoint's image limit and the video is probed, before
    the endpoint is opened (the stand-in started, if asked for), and the run goes on from its last
    checkpoint or starts (:func:`videoatlas.runs.run_question`). ``endpoint``: settings already open (a
    server or an eval that holds its endpoint), in place of the request's choice. ``chat_model``: a model
    of the caller's in place of the endpoint's client (tests, notebooks).
    """
    import asyncio

    from videoatlas.agents.registry import check_images
    from videoatlas.environment.concat import open_source
    from videoatlas.runs import load_finished, run_question

    if request.run_id is not None and request.persist:
        done = await load_finished(request.run_id, request.db)
        if done is not None:
            log.info("answered_from_store", run_id=done.run_id)
            return done
    check_images(request.config, endpoint.max_image_pixels if endpoint is not None else request.endpoint.image_limit())
    source = await asyncio.to_thread(open_source, request.video)
    try:
        with contextlib.ExitStack() as stack:
            settings = endpoint or stack.enter_context(open_endpoint(request.endpoint))
            return await run_question(
                request.video,
                request.question,
                list(request.choices),
                request.config,
                settings,
                subtitles=request.subtitles,
                subtitle_offset=request.subtitle_offset,
                on_progress=on_progress,
                chat_model=chat_model,
                db_url=request.db,
                persist=request.persist,
                run_id=request.run_id,
                force=request.force,
                source=source,
            )
    finally:
        source.close()  # the run closed it already unless it stopped before taking it


def resume_request(run_id: str, db: str | None, choice: EndpointChoice, force: bool = False) -> RunRequest:
    """The request that goes on with stored run ``run_id`` (or a unique prefix): its question, video and set-up.

    Refused when there is no such run or it finished. The endpoint is the one ``choice`` names, else the
    one the run recorded; a run answered by the in-process stand-in stored that, not the stand-in's
    port, which died with it: the stand-in is started again (with the limits it had).
    """
    from videoatlas.runs import unfinished_run
    from videoatlas.runtime.config import RunConfig

    row = unfinished_run(run_id, db)
    stored = row.endpoint
    if choice.standin or (choice.base_url is None and stored.get("standin")):
        pixels, images = stored.get("max_image_pixels"), stored.get("max_images")
        choice = replace(
            choice,
            standin=True,
            max_image_pixels=pixels if isinstance(pixels, int) else choice.max_image_pixels,
            max_images=images if isinstance(images, int) else choice.max_images,
        )
    elif choice.base_url is None:
        choice = replace(
            choice,
            base_url=stored.get("base_url"),
            model=choice.model or stored.get("model") or None,
            strict_schema=stored.get("strict_schema") if choice.strict_schema is None else choice.strict_schema,
        )
    return RunRequest(
        video=row.video_path,
        question=row.question,
        choices=tuple(row.choices),
        config=RunConfig.model_validate(row.config),
        endpoint=choice,
        subtitles=row.subtitles,
        subtitle_offset=row.subtitle_offset,
        db=db,
        run_id=row.id,
        force=force,
    )
