"""The final decision every agent ends with: one call to the decision schema, its answer and its citations.

An agent brings what the call shows (images, template values, the labels an answer may cite) and
how a cited label becomes evidence; asking, the progress events, a failed reply recorded as the
run's result (never guessed) and the result's shape are written here once.

The answer comes with the server's probability of each choice, from one of two reads (the answer, its
reasoning and its citations always come from the chat reply):

* **``/v1/decisions``**, for a multiple-choice decision over text only (a call with no images; VideoSeek's
  today) on an endpoint that serves it (:mod:`videoatlas.llm.decisions`: vLLM 0.33 for Qwen3 and Qwen3.5 with
  ``--logprobs-mode raw_logprobs`` or ``processed_logprobs``; detected on the first decision, remembered for
  the process). One read, before the chat call, of the same text the chat call shows (system and user
  prompts), asking which choice answers the question (``decision_question.note``), each choice's text an
  option. That probability is conditioned on the text alone: it is the model's before any judgement the
  reply then writes (the reply's judgements of each choice do not move it), with thinking off, and the
  chat answer may differ from its most likely choice (``confidence`` is the chat answer's).
* **The reply's token log-probabilities** everywhere else (images, an endpoint without decisions, a model that
  is no HTTP endpoint): the chat call asks for ``logprobs`` and the distribution is read where the reply's
  ``answer`` index starts (:mod:`videoatlas.llm.logprobs`), after the judgements the reply writes before it:
  conditioned on them. An open question's answer carries its sequence probability (decisions have no open
  question).

Both are rounded to 4 places; ``confidence`` is the chosen answer's. The decisions read is a model call of
its own: recorded in the trace (schema ``Decisions``) and counted in the run's cost.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from videoatlas.agents.relation import Anchor, Relation, anchor_label, relation_text, with_time_check
from videoatlas.errors import EndpointError, ModelReplyError
from videoatlas.llm.client import Reply
from videoatlas.llm.images import ImagePart
from videoatlas.llm.logprobs import choice_probabilities, sequence_probability
from videoatlas.runtime.calls import (
    ask,
    decision_values,
    emit,
    failed_call_cost,
    labelled,
    read_choice,
    with_heard,
)
from videoatlas.runtime.context import AgentContext
from videoatlas.runtime.speech import Heard
from videoatlas.state.models import Cost, Evidence
from videoatlas.state.schemas import cited_ids, decided, decision_schema, declined

DECIDE_EVENT = "decide"
"""The progress event sent as the final call starts (``answer`` follows with its result)."""

Citing = Callable[[Sequence[str]], tuple[list[str], list[Evidence] | None]]
"""A reply's cited labels -> the ids of the evidence they name, and the evidence the result records
(None: the evidence passed to :func:`decide_final`, or none written)."""


@dataclass(frozen=True, slots=True)
class DecisionCall:
    """What an agent's final call shows, and how its result reads."""

    node: str
    """The caller's name in the trace (the node the call is recorded under)."""
    template: str
    """The user template (``<template>.user``)."""
    system: str
    """The system template."""
    images: Sequence[ImagePart]
    values: dict[str, Any]
    """The user template's variables."""
    choices: Sequence[str]
    labels: Sequence[str]
    """The labels the reply may cite (the schema allows only these)."""
    stop: str
    """The run's stop reason; a failed call adds ``; <step> failed`` to it."""
    step: str
    """What the agent calls this step (``final decision``, ``answer``): named in a failure."""
    thinker: str
    """The caller's role in its agent (its thinking setting applies; its tokens count under it)."""
    extra: dict[str, Any] = field(default_factory=dict)
    """State keys the result also sets, whatever the outcome (after all the others)."""


def cite_labels(labelled: dict[str, Evidence]) -> Citing:
    """Citations of evidence labels (``[A]``, ``B``): each cited item once; the evidence itself is not rewritten."""

    def cite(cited: Sequence[str]) -> tuple[list[str], list[Evidence] | None]:
        return cited_ids(cited, labelled), None

    return cite


def _result(
    answer: str,
    index: int | None,
    reasoning: str,
    cited: list[str],
    evidence: list[Evidence] | None,
    cost: Cost,
    stop: str,
    extra: dict[str, Any],
    declined: bool = False,
    probabilities: list[float] | None = None,
    confidence: float | None = None,
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "answer": answer,
        "answer_index": index,
        "declined": declined,
        "reasoning": reasoning,
        "cited": cited,
        "probabilities": probabilities,
        "confidence": confidence,
    }
    if evidence is not None:
        out["evidence"] = evidence
    return {**out, "cost": cost, "stop_reason": stop, **extra}


async def decide_final(
    ctx: AgentContext, call: DecisionCall, cite: Citing, evidence: list[Evidence] | None = None
) -> dict[str, Any]:
    """Ask for the final decision and return the state update that records it.

    Judges each choice against what ``call`` shows and answers. A reply that cannot be used (or an
    endpoint that fails) ends the run with no answer and the error as its reasoning, never a guess.
    An open reply that says it found no answer (:func:`~videoatlas.state.schemas.declined`) ends it
    with no answer and ``declined`` set: unanswered, not a failed reply.
    The server's own probabilities come with the answer: from ``/v1/decisions`` for a text-only choice on an
    endpoint that serves it, else from the reply's token log-probabilities (:func:`answer_probabilities`;
    the module doc says what each is conditioned on).
    ``evidence``: the evidence the result records (None: the state's evidence is left as it is).
    """
    emit(DECIDE_EVENT)
    schema = decision_schema(len(call.choices), list(call.labels))
    read: list[float] | None = None
    spent = Cost()
    try:
        if call.choices and not call.images:
            read, spent = await read_choice(
                ctx, call.node, call.template, call.values,
                system=call.system, thinker=call.thinker, choices=call.choices,
            )  # fmt: skip
        reply, cost = await ask(
            ctx, schema, call.node, call.template, call.images, call.values,
            system=call.system, thinker=call.thinker, logprobs=read is None,
        )  # fmt: skip
    except (ModelReplyError, EndpointError) as exc:
        failed = spent + failed_call_cost(exc)
        reason = f"no valid {call.step}: {exc}"
        return _result("", None, reason, [], evidence, failed, f"{call.stop}; {call.step} failed", call.extra)
    value: Any = reply.value
    cited, found = cite(value.evidence)
    gave_up = declined(value, call.choices)
    index, answer = (None, "") if gave_up else decided(value, call.choices)
    emit("answer", answer=answer, index=index, grounded=bool(cited) and not gave_up, declined=gave_up)
    recorded = found if found is not None else evidence
    if gave_up:
        probabilities, confidence = None, None
    elif read is not None:
        probabilities, confidence = read_probabilities(read, index)
    else:
        probabilities, confidence = answer_probabilities(reply, len(call.choices), index)
    return _result(
        answer, index, value.reasoning, cited, recorded, spent + cost, call.stop, call.extra, gave_up,
        probabilities, confidence,
    )  # fmt: skip


def read_probabilities(read: Sequence[float], index: int | None) -> tuple[list[float], float | None]:
    """The decisions read's per-choice probabilities (rounded to 4 places) and the chosen answer's."""
    probabilities = [round(p, 4) for p in read]
    return probabilities, probabilities[index] if index is not None else None


def answer_probabilities(reply: Reply[Any], choices: int, index: int | None) -> tuple[list[float] | None, float | None]:
    """Per-choice probabilities (rounded to 4 places) and the chosen answer's: the open answer's sequence probability.

    Read from the reply's token log-probabilities (:mod:`videoatlas.llm.logprobs`); (None, None) when the server
    sent none (a server without ``logprobs``, a model that is no HTTP endpoint) or they do not place the answer.
    """
    if not reply.tokens:
        return None, None
    if choices:
        read = choice_probabilities(reply.tokens, reply.record.reply_text, choices)
        if read is None:
            return None, None
        probabilities = [round(p, 4) for p in read]
        return probabilities, probabilities[index] if index is not None else None
    sequence = sequence_probability(reply.tokens, reply.record.reply_text)
    return None, round(sequence, 4) if sequence is not None else None


async def decide_on_evidence(
    ctx: AgentContext,
    state: Mapping[str, Any],
    evidence: list[Evidence],
    *,
    system: str,
    images: Sequence[ImagePart],
    values: dict[str, Any],
    stop: str,
    node: str = "answer",
    template: str = "answer",
    step: str = "final answer",
    thinker: str,
    extra: dict[str, Any] | None = None,
    record_evidence: bool = True,
    anchor: Anchor | None = None,
    heard: Heard | None = None,
) -> dict[str, Any]:
    """The final decision over labelled evidence (``[A]``, ``[B]``...), the way most agents end.

    The question, the choices, the time relation and the stop reason come from ``state`` (``stop``:
    the reason when the state records none); ``values`` adds the agent's own template variables. The
    reply may cite the evidence's labels; ``record_evidence``: the result records ``evidence`` as the
    run's (False: the state's evidence is left as it is). The template's ``relation`` says the state's
    relation and the ``anchor``'s time when found, and the answer's cited times are checked against the
    anchor in its reasoning. ``heard``: the speech the call's values were made from; what hearing it cost
    and the lines it left join the result.
    """
    pairs = labelled(evidence)
    labels = dict(pairs)
    relation: Relation = state.get("relation") or Relation()
    values = {**values, "relation": relation_text(ctx.prompts, relation, anchor, anchor_label(anchor, pairs))}
    choices = state["choices"]
    call = DecisionCall(
        node=node,
        template=template,
        system=system,
        images=images,
        values={**decision_values(ctx.prompts, state["question"], choices), **values},
        choices=choices,
        labels=list(labels),
        stop=state.get("stop_reason") or stop,
        step=step,
        thinker=thinker,
        extra=extra or {},
    )
    result = await decide_final(ctx, call, cite_labels(labels), evidence if record_evidence else None)
    cited = set(result.get("cited") or [])
    checked = with_time_check(result, relation, anchor, [e for e in evidence if e.id in cited])
    return with_heard(checked, heard) if heard is not None else checked


def describe_event(event: dict[str, Any]) -> str | None:
    """The progress line of the final decision's event (None for any other event)."""
    return "final decision..." if event.get("event") == DECIDE_EVENT else None
