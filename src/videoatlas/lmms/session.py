"""lmms-eval's questions answered by one agent on one endpoint, each as a resumable run in our run store.

Each question's run id follows from its result key (:mod:`videoatlas.evals.answering`, the eval
runner's code), so an interrupted lmms-eval command, run again, reads back every question that
finished, resumes the ones that were cut off, and asks the endpoint only for the rest. The same
question under ``videoatlas eval run`` on the same database is the same run.

A question that cannot be answered stops the evaluation in one line once the questions in flight
have finished: a missing video before anything is asked; a failed run or an outage after, with the
finished answers kept for the next try.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter, deque
from collections.abc import Sequence
from dataclasses import dataclass

import structlog

from videoatlas.agents.registry import check_images
from videoatlas.environment.files import check_file, check_subtitle_file
from videoatlas.errors import DatabaseDownError, VideoAtlasError, VideoError
from videoatlas.evals.answering import Answered, Keys, answer_item, run_id_for
from videoatlas.evals.items import EvalItem
from videoatlas.evals.runner import resolve_model
from videoatlas.llm.settings import EndpointSettings
from videoatlas.lmms.docs import response
from videoatlas.lmms.settings import ModelArgs
from videoatlas.persistence.db import redact_url, resolve_db_url
from videoatlas.persistence.patience import is_connection_loss
from videoatlas.request import EndpointChoice, open_endpoint

__all__ = ["Session", "Tally"]

log = structlog.get_logger(__name__)


@dataclass(slots=True)
class Tally:
    """How a session's questions were answered so far."""

    sources: Counter[str]
    """``run``, ``resumed`` and ``db-cache`` counts."""
    parse_failed: int = 0
    """Multiple-choice questions whose run chose no option (scored by the task as the text it got: empty)."""


class Session:
    """One agent, endpoint and database for the questions of one lmms-eval command."""

    def __init__(self, args: ModelArgs) -> None:
        self.args = args
        self.tally = Tally(Counter())
        self._open = contextlib.ExitStack()
        self._endpoint: EndpointSettings | None = None
        self._keys: Keys | None = None
        self.url = resolve_db_url(args.db)

    def open(self) -> None:
        """Open the endpoint (the in-process stand-in is started if asked for) and learn the model it answers with.

        The agent's pictures are checked against the endpoint's image limit first (a pre-flight for the whole
        harness: a picture too large is one error, not one per question), then the endpoint is opened as
        every entry point opens it (:func:`videoatlas.request.open_endpoint`).
        """
        args = self.args
        choice = EndpointChoice(base_url=args.base_url, model=args.model, api_key=args.api_key, standin=args.standin)
        check_images(args.config, choice.image_limit())
        endpoint = self._open.enter_context(open_endpoint(choice))
        model = asyncio.run(resolve_model(endpoint))
        self._endpoint = endpoint.with_model(model)
        self._keys = Keys.of(args.config, model)
        log.info("videoatlas model ready", agent=args.config.agent, model=model, db=redact_url(self.url))

    def close(self) -> None:
        """Close the endpoint (stop the in-process stand-in, if one was started)."""
        self._open.close()

    def answer(self, items: Sequence[EvalItem]) -> list[str]:
        """The response to each of ``items``, in order (one run per distinct question)."""
        return asyncio.run(self._answer_all(items))

    async def _answer_all(self, items: Sequence[EvalItem]) -> list[str]:
        if self._endpoint is None or self._keys is None:
            raise RuntimeError("Session.open() first")
        _check_inputs(items)
        keys = [self._keys.key(item) for item in items]
        pending = deque(dict(zip(keys, items, strict=True)).items())  # a repeated question runs once
        unique = len(pending)
        answered: dict[str, Answered] = {}
        failures: list[tuple[EvalItem, str, VideoAtlasError]] = []
        endpoint = self._endpoint

        async def worker() -> None:
            while pending and not failures:
                key, item = pending.popleft()
                run_id = run_id_for(key)
                try:
                    done = await answer_item(item, run_id, self.args.config, endpoint, self.url)
                except VideoAtlasError as exc:
                    failures.append((item, run_id, exc))
                    return
                except Exception as exc:
                    if not is_connection_loss(exc):
                        raise
                    lost = str(exc).strip().splitlines()[0]
                    failures.append((item, run_id, DatabaseDownError(f"the database connection was lost: {lost}")))
                    return
                answered[key] = done
                self._count(item, done)

        outcomes = await asyncio.gather(
            *(worker() for _ in range(min(self.args.concurrency, max(1, unique)))), return_exceptions=True
        )
        unexpected = [o for o in outcomes if isinstance(o, BaseException)]
        if unexpected:
            raise unexpected[0]
        if failures:
            item, run_id, exc = failures[0]
            raise type(exc)(
                f"question {item.id} (run {run_id}): {exc}; {len(answered)} of {unique} question(s) are answered "
                "and kept in the run store: run the same command again to go on"
            ) from None
        return [response(item, answered[key].result) for key, item in zip(keys, items, strict=True)]

    def _count(self, item: EvalItem, done: Answered) -> None:
        self.tally.sources[done.source] += 1
        result = done.result
        if item.choices and result.answer_index is None:
            self.tally.parse_failed += 1
            log.warning("the run chose no option: the task scores an empty answer", item=item.id, run_id=result.run_id)
        log.info("answered", item=item.id, run_id=result.run_id, source=done.source, answer=result.answer)


def _check_inputs(items: Sequence[EvalItem]) -> None:
    """Every question's video (and subtitle file) is there, before anything is asked."""
    missing: list[str] = []
    for item in items:
        try:
            check_file(item.video)
            if item.subtitles is not None:
                check_subtitle_file(item.subtitles)
        except VideoAtlasError as exc:
            missing.append(f"question {item.id}: {exc}")
    if missing:
        raise VideoError(f"{len(missing)} of {len(items)} question(s) cannot run ({missing[0]}); nothing was asked")
