"""The Python API: what ``videoatlas ask`` and ``videoatlas resume`` do, called from Python.

``ask`` answers one question about one video with one agent and returns a
:class:`~videoatlas.runs.RunResult` (the answer, the evidence with its timestamps, the cost and the
run id); the run is checkpointed and traced like a command-line run, so ``videoatlas trace RUN``,
``videoatlas ui`` and :func:`resume` work on it. ``aask`` and ``aresume`` are the same for code that
already runs an event loop (a notebook, a LangGraph application).

Errors are the CLI's: :class:`~videoatlas.errors.VideoAtlasError` subclasses with a one-line message.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from videoatlas import limits
from videoatlas.agents.registry import check_prompts, settings_model, settings_of
from videoatlas.environment.files import check_file, check_subtitle_file
from videoatlas.errors import BadInputError
from videoatlas.llm.settings import EndpointSettings
from videoatlas.runs import RunResult, resume_run, run_question
from videoatlas.runtime.config import RunConfig

__all__ = ["RunResult", "aask", "aresume", "ask", "resume", "run_config"]

Events = Callable[[dict[str, Any]], None]
"""Called with each event the run streams (``run_started``, ``worker_step``, ``round_done``...)."""


@contextlib.contextmanager
def _endpoint(
    standin: bool, base_url: str | None, model: str | None, api_key: str | None
) -> Iterator[EndpointSettings | None]:
    """The stand-in started for the duration, the endpoint named (over the environment's), or None."""
    if standin:
        if base_url is not None:
            raise BadInputError("standin=True and base_url name two endpoints: give one")
        from videoatlas.standin.server import RunningServer, StandinServer

        with RunningServer(StandinServer()) as server:
            yield EndpointSettings.from_env({}, base_url=server.base_url, model=model or "", standin=True)
        return
    if base_url is None and model is None and api_key is None:
        yield None
        return
    yield EndpointSettings.from_env(None, base_url=base_url, model=model, api_key=api_key)


def run_config(agent: str, options: dict[str, Any]) -> RunConfig:
    """The run's configuration; an option that is neither a shared knob nor the agent's setting is refused."""
    from pydantic import ValidationError

    model = settings_model(agent)
    unknown = sorted(set(options) - set(RunConfig.model_fields) - set(model.model_fields))
    if unknown:
        known = sorted(set(RunConfig.model_fields) - {"agent", "settings"} | set(model.model_fields))
        raise BadInputError(f"not an option of the {agent} agent: {', '.join(unknown)} (options: {', '.join(known)})")
    try:
        config = RunConfig.of(agent=agent, **options)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise BadInputError(f"{'.'.join(str(p) for p in first['loc']) or 'options'}: {first['msg']}") from None
    settings_of(config)
    return config


async def aask(
    video: str | Path,
    question: str,
    choices: Sequence[str] = (),
    *,
    agent: str = "video-rlm",
    base_url: str | None = None,
    model: str | None = None,
    api_key: str | None = None,
    standin: bool = False,
    subtitles: str | Path | None = None,
    db: str | None = None,
    persist: bool = True,
    on_event: Events | None = None,
    endpoint: EndpointSettings | None = None,
    **options: Any,
) -> RunResult:
    """Answer ``question`` about ``video`` (see :func:`ask`).

    ``endpoint``: settings made already (a server that holds its endpoint, such as ``videoatlas mcp``), in place
    of ``base_url``/``model``/``api_key``/``standin``.
    """
    if endpoint is not None and (standin or base_url is not None or model is not None or api_key is not None):
        raise BadInputError("endpoint= and base_url/model/api_key/standin name the endpoint twice: give one")
    limits.check_question(question, list(choices))
    config = run_config(agent, options)
    check_file(video)
    if subtitles is not None:
        check_subtitle_file(subtitles)
    check_prompts(config.agent, config.prompts)
    with _endpoint(standin, base_url, model, api_key) as given:
        return await run_question(
            video,
            question,
            list(choices),
            config,
            endpoint or given or EndpointSettings.from_env(),
            subtitles=subtitles,
            on_progress=on_event,
            db_url=db,
            persist=persist,
        )


def ask(
    video: str | Path,
    question: str,
    choices: Sequence[str] = (),
    *,
    agent: str = "video-rlm",
    base_url: str | None = None,
    model: str | None = None,
    api_key: str | None = None,
    standin: bool = False,
    subtitles: str | Path | None = None,
    db: str | None = None,
    persist: bool = True,
    on_event: Events | None = None,
    **options: Any,
) -> RunResult:
    """Answer ``question`` about ``video``: multiple choice with ``choices``, open-ended without.

    ``agent``: ``video-rlm``, ``videoseek``, ``videoarm`` or ``uniform``. The endpoint is ``base_url``/``model``/
    ``api_key`` over ``VIDEOATLAS_BASE_URL``/``VIDEOATLAS_MODEL``/``VIDEOATLAS_API_KEY``, or, with
    ``standin=True``, the OCR-based stand-in started in this process (a test backend, not a VLM).
    ``options`` are the command line's knobs by their Python names: the shared ones (``k``,
    ``cell_px``, ``token_budget``, ``call_budget``, ``prompts``, ``max_concurrency``) and the agent's
    own settings (``workers=2``, ``rounds=2``, ``frames=32``...). ``db``: the database for checkpoints
    and traces (default ``VIDEOATLAS_DB`` or the data directory's SQLite file); ``persist=False`` keeps
    nothing. ``on_event`` sees each progress event as it happens.
    """
    return asyncio.run(
        aask(
            video,
            question,
            choices,
            agent=agent,
            base_url=base_url,
            model=model,
            api_key=api_key,
            standin=standin,
            subtitles=subtitles,
            db=db,
            persist=persist,
            on_event=on_event,
            **options,
        )
    )


async def aresume(
    run_id: str,
    *,
    base_url: str | None = None,
    model: str | None = None,
    api_key: str | None = None,
    standin: bool = False,
    db: str | None = None,
    force: bool = False,
    on_event: Events | None = None,
) -> RunResult:
    """Continue an interrupted run (see :func:`resume`)."""
    with _endpoint(standin, base_url, model, api_key) as endpoint:
        return await resume_run(run_id, db, on_event, endpoint=endpoint, force=force)


def resume(
    run_id: str,
    *,
    base_url: str | None = None,
    model: str | None = None,
    api_key: str | None = None,
    standin: bool = False,
    db: str | None = None,
    force: bool = False,
    on_event: Events | None = None,
) -> RunResult:
    """Continue an interrupted run from its last checkpoint, on its stored endpoint unless one is given.

    A run answered by the in-process stand-in needs ``standin=True`` (its server stopped with it).
    """
    return asyncio.run(
        aresume(
            run_id,
            base_url=base_url,
            model=model,
            api_key=api_key,
            standin=standin,
            db=db,
            force=force,
            on_event=on_event,
        )
    )
