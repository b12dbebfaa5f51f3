"""The Python API: what ``videoatlas ask`` and ``videoatlas resume`` do, called from Python.

``ask`` answers one question about one video with one agent and returns a
:class:`~videoatlas.runs.RunResult` (the answer, the evidence with its timestamps, the cost, the run
id, and the agent's own extras); the run is checkpointed and traced like a command-line run, so
``videoatlas trace RUN``, ``videoatlas ui`` and :func:`resume` work on it. ``aask`` and ``aresume``
are the same for code that already runs an event loop (a notebook, a LangGraph application).

Both go through the front door (:mod:`videoatlas.request`), as the command line does: the same
checks, the same messages. Errors are the CLI's: :class:`~videoatlas.errors.VideoAtlasError`
subclasses with a one-line message.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from videoatlas.agents.registry import DEFAULT_AGENT
from videoatlas.errors import BadInputError
from videoatlas.llm.settings import EndpointSettings
from videoatlas.request import EndpointChoice, answer, config_of, make_request, resume_request
from videoatlas.runs import RunResult
from videoatlas.runtime.config import RunConfig

__all__ = ["RunResult", "aask", "aresume", "ask", "resume", "run_config"]

P = ParamSpec("P")
R = TypeVar("R")
Events = Callable[[dict[str, Any]], None]
"""Called with each event the run streams (``run_started``, ``worker_step``, ``round_done``...)."""


def run_config(agent: str, options: dict[str, Any]) -> RunConfig:
    """The run's configuration; an option that is neither a shared knob nor the agent's setting is refused."""
    return config_of(agent, options)


async def aask(
    video: str | Path,
    question: str,
    choices: Sequence[str] = (),
    *,
    agent: str = DEFAULT_AGENT,
    base_url: str | None = None,
    model: str | None = None,
    api_key: str | None = None,
    standin: bool = False,
    subtitles: str | Path | None = None,
    db: str | None = None,
    persist: bool = True,
    on_event: Events | None = None,
    endpoint: EndpointSettings | None = None,
    run_id: str | None = None,
    **options: Any,
) -> RunResult:
    """Answer ``question`` about ``video``: multiple choice with ``choices``, open-ended without.

    ``agent``: ``video-rlm``, ``videoseek``, ``videoarm``, ``eea`` or ``uniform``. The endpoint is
    ``base_url``/``model``/``api_key`` over ``VIDEOATLAS_BASE_URL``/``VIDEOATLAS_MODEL``/``VIDEOATLAS_API_KEY``,
    or, with ``standin=True``, the OCR-based stand-in started in this process (a test backend, not a VLM), or
    ``endpoint``: settings made already (a server that holds its endpoint, such as ``videoatlas mcp``).
    ``options`` are the command line's knobs by their Python names: the shared ones (``k``, ``cell_px``,
    ``token_budget``, ``call_budget``, ``prompts``, ``max_concurrency``, ``thinking``, ``speech`` (``auto``,
    ``off``, ``full``), ``speech_url``, ``speech_model``) and the agent's own
    settings (``workers=2``, ``rounds=2``, ``frames=32``...). ``db``: the database for checkpoints and traces
    (default ``VIDEOATLAS_DB`` or the data directory's SQLite file); ``persist=False`` keeps nothing.
    ``run_id``: the run's id (default: a new one; a harness that asks again under the same id can read a
    finished run back or resume it). ``on_event`` sees each progress event as it happens.

    Example, on the demo's video (``videoatlas demo`` makes it) with the stand-in::

        import videoatlas
        result = videoatlas.ask("demo/video.mp4", "Which code is shown on the card?", ["SN-1248", "EH-3484"],
                                standin=True, rounds=2)
        print(result.answer, [f"{e.time:.1f}s" for e in result.evidence], result.run_id)

    ``ask`` blocks until the answer; ``aask`` is the same coroutine for code inside an event loop.
    """
    if endpoint is not None and (standin or base_url is not None or model is not None or api_key is not None):
        raise BadInputError("endpoint= and base_url/model/api_key/standin name the endpoint twice: give one")
    request = make_request(
        video,
        question,
        choices,
        agent=agent,
        options=options,
        endpoint=EndpointChoice(
            base_url=base_url,
            model=model,
            api_key=api_key,
            standin=standin,
            max_image_pixels=endpoint.max_image_pixels if endpoint is not None else None,
            max_images=endpoint.max_images if endpoint is not None else None,
        ),
        subtitles=subtitles,
        db=db,
        persist=persist,
        run_id=run_id,
    )
    return await answer(request, on_event, endpoint=endpoint)


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
    """Continue an interrupted run from its last checkpoint, on its stored endpoint unless one is given.

    A run answered by the in-process stand-in goes on with a stand-in started again (its server stopped
    with it). ``resume`` blocks until the answer; ``aresume`` is the same coroutine for code inside an
    event loop.
    """
    choice = EndpointChoice(base_url=base_url, model=model, api_key=api_key, standin=standin)
    return await answer(resume_request(run_id, db, choice, force), on_event)


def _blocking(coroutine: Callable[P, Awaitable[R]]) -> Callable[P, R]:
    """``coroutine`` as a function that runs it to its end in a new event loop (same signature and docs)."""

    @functools.wraps(coroutine)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        return asyncio.run(coroutine(*args, **kwargs))  # type: ignore[arg-type]

    return run


ask = _blocking(aask)
"""Answer a question about a video, blocking until the answer (see :func:`aask`)."""
resume = _blocking(aresume)
"""Continue an interrupted run, blocking until its answer (see :func:`aresume`)."""
