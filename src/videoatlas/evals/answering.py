"""One evaluation question as a run whose id follows from its result key: read back, resumed, or run.

Both harnesses answer a question this way: ``videoatlas eval run`` (:mod:`.runner`) and lmms-eval's
``videoatlas`` model (:mod:`videoatlas.lmms`). A question whose run finished on the database before,
under any output folder or harness, is read back without a model call; one whose run was interrupted
is resumed from its checkpoint; any other is run under :func:`run_id_for` its key.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import structlog

from videoatlas import limits
from videoatlas.agents.registry import get_agent
from videoatlas.agents.registry import knobs as agent_knobs
from videoatlas.evals.items import EvalItem
from videoatlas.evals.results import result_key
from videoatlas.llm.settings import EndpointSettings
from videoatlas.request import EndpointChoice, RunRequest, answer
from videoatlas.runs import RunResult
from videoatlas.runs.result import Source
from videoatlas.runtime.context import RunConfig

__all__ = ["Answered", "Keys", "Source", "answer_item", "run_id_for"]

log = structlog.get_logger(__name__)


def run_id_for(key: str) -> str:
    """The run id of the question whose result key is ``key`` (the same in every harness on one database)."""
    return f"ev-{key[:24]}"


@dataclass(frozen=True, slots=True)
class Keys:
    """What a result key is made of besides the question: the agent, its code and prompts, the model, the knobs."""

    agent: str
    agent_code: str
    prompt_set: str
    prompt_sha: str
    model: str
    knobs: dict[str, Any]

    @classmethod
    def of(cls, config: RunConfig, model: str) -> Keys:
        """The key parts of runs of ``config`` answered by ``model`` (the id the endpoint reports)."""
        agent = get_agent(config.agent)
        prompts = agent.load_prompts(config.prompts)
        return cls(agent.name, agent.code_version(), prompts.name, prompts.sha256, model, agent_knobs(config))

    def key(self, item: EvalItem) -> str:
        """The result key of ``item`` (:func:`~videoatlas.evals.results.result_key`)."""
        return result_key(item, self.agent, self.prompt_sha, self.model, self.knobs, agent_code=self.agent_code)


@dataclass(frozen=True, slots=True)
class Answered:
    """A question's finished run and where it came from."""

    result: RunResult
    source: Source


async def answer_item(item: EvalItem, run_id: str, config: RunConfig, endpoint: EndpointSettings, url: str) -> Answered:
    """The finished run of ``item`` under ``run_id`` in the database at ``url``: read back, resumed, or run now.

    Through the front door (:func:`videoatlas.request.answer`), on the eval's open endpoint, with the item's
    question and choices checked as ``ask`` checks them. Errors are the run's own
    (:class:`~videoatlas.errors.VideoAtlasError` kinds); the caller decides what a failed or interrupted
    question means for its harness.
    """
    limits.check_question(item.question, item.choices)
    request = RunRequest(
        video=item.video,
        question=item.question,
        choices=tuple(item.choices),
        config=config,
        endpoint=EndpointChoice(),
        subtitles=item.subtitles,
        subtitle_offset=item.subtitle_offset,
        db=url,
        run_id=run_id,
    )
    result = await answer(request, endpoint=endpoint)
    if result.source == "resumed":
        log.info("resumed interrupted question", run_id=run_id)
    return Answered(result, result.source)
