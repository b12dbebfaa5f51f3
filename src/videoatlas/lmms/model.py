"""``--model videoatlas``: lmms-eval's documents answered by one of our agents, each as a resumable run.

``--model_args agent=video-rlm,base_url=http://host:8000/v1,db=sqlite:///runs.db,workers=2`` (see
:mod:`.settings`). lmms-eval hands the model every request of a command at once: the questions are read
from their documents (:mod:`.docs`), answered by a :class:`~videoatlas.lmms.session.Session`, and each
answer goes back as the text the task's scorer reads, after a reasoning block naming its run.

Our errors reach lmms-eval as one line raised from here (the frames below are ours and tell a user
nothing), so its own error path reports them; the questions answered before are kept.
"""

from __future__ import annotations

from typing import Any

import structlog
from lmms_eval.api.instance import Instance
from lmms_eval.api.model import lmms

from videoatlas.errors import VideoAtlasError
from videoatlas.lmms.docs import item_of
from videoatlas.lmms.session import Session
from videoatlas.lmms.settings import parse_model_args
from videoatlas.logging import configure_logging

log = structlog.get_logger(__name__)


class VideoAtlasModel(lmms):  # type: ignore[misc]
    """Our agents as an lmms-eval model (a simple one: it reads each request's document itself)."""

    is_simple = True

    def __init__(self, **model_args: Any) -> None:
        super().__init__()
        try:
            args = parse_model_args(model_args)
            configure_logging(args.log_level)
            session = Session(args)
            session.open()
        except VideoAtlasError as exc:
            raise exc.with_traceback(None) from None  # lmms-eval prints the traceback: only this frame of ours
        self._session = session

    def generate_until(self, requests: list[Instance]) -> list[str]:
        """Each request's answer, in order: a letter for a multiple-choice question, else the answer's text."""
        try:
            items = []
            for request in requests:
                _context, _gen_kwargs, doc_to_visual, doc_id, task, split = request.args
                doc = self.task_dict[task][split][doc_id]
                items.append(item_of(doc, task, doc_id, doc_to_visual(doc)))
            responses = self._session.answer(items)
        except VideoAtlasError as exc:
            raise exc.with_traceback(None) from None
        tally = self._session.tally
        log.info("videoatlas questions answered", questions=len(requests), **dict(tally.sources))
        if tally.parse_failed:
            log.warning("runs that chose no option (their tasks score an empty answer)", count=tally.parse_failed)
        return responses

    def loglikelihood(self, requests: list[Instance]) -> list[tuple[float, bool]]:
        """Not something an agent gives: refused in one line."""
        raise NotImplementedError("the videoatlas model answers generate_until tasks only (no log-likelihoods)")

    def generate_until_multi_round(self, requests: list[Instance]) -> list[str]:
        """Not something an agent does: refused in one line."""
        raise NotImplementedError("the videoatlas model answers one-round generate_until tasks only")

    def clean(self) -> None:
        """After the requests: stop the in-process stand-in, if one was started."""
        self._session.close()
        super().clean()
