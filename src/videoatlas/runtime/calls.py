"""Helpers shared by nodes: prompt text blocks, model calls with cost accounting, rendering evidence."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

import structlog
from langgraph.config import get_stream_writer
from pydantic import BaseModel

from videoatlas.environment.atlas import RenderedImage
from videoatlas.environment.geometry import Interval
from videoatlas.environment.render import evidence_label
from videoatlas.environment.subtitles import SubtitleLine, Subtitles, fitting_lines
from videoatlas.environment.timefmt import format_ts
from videoatlas.limits import CHOICE_LETTERS
from videoatlas.llm.client import Reply
from videoatlas.llm.images import ImagePart
from videoatlas.llm.records import CallRecord
from videoatlas.prompts import PromptSet
from videoatlas.runtime.budget import estimate_tokens
from videoatlas.runtime.context import AgentContext
from videoatlas.runtime.speech import Heard, Where
from videoatlas.state.models import Cost, Evidence, Repair

T = TypeVar("T", bound=BaseModel)
log = structlog.get_logger(__name__)


def emit(event: str, **data: Any) -> None:
    """Progress for whoever streams the run (``stream_mode="custom"``); a no-op otherwise."""
    try:
        writer = get_stream_writer()
    except RuntimeError:
        return
    writer({"event": event, **data})


def choices_block(choices: Sequence[str]) -> str:
    """``A. first`` lines, or a note that the question is open-ended."""
    if not choices:
        return "(none: an open question; the answer is the value it asks for)"
    return "\n".join(f"{CHOICE_LETTERS[i] if i < len(CHOICE_LETTERS) else i}. {c}" for i, c in enumerate(choices))


def decision_values(prompts: PromptSet, question: str, choices: Sequence[str]) -> dict[str, str]:
    """The values every final call's template has: the question, its choices, the reply format asked for.

    The reply format is the prompt set's ``format_choices.note`` or ``format_open.note`` (shared by every
    agent unless its set holds its own), so every agent's final decision is held to the same answer format.
    It describes the JSON schema that is also sent as ``response_format``
    (:func:`videoatlas.state.schemas.decision_schema`).
    """
    reply_format = prompts.note("format_choices.note" if choices else "format_open.note")
    return {"question": question, "choices": choices_block(choices), "format": reply_format}


def labelled(evidence: Sequence[Evidence]) -> list[tuple[str, Evidence]]:
    """Evidence in order with its label ([A], [B], ...): how every agent's final decision cites it."""
    return [(evidence_label(i), e) for i, e in enumerate(evidence)]


def as_image(rendered: RenderedImage, label: str) -> ImagePart:
    """A rendered observation as an image for a prompt, with the times of the frames it shows."""
    shown = tuple(float(f["time"]) for f in rendered.frames if f.get("method") != "unavailable" and "time" in f)
    return ImagePart(rendered.jpeg, rendered.width, rendered.height, label, shown)


async def ask(
    ctx: AgentContext,
    schema: type[T],
    node: str,
    template: str,
    images: Sequence[ImagePart],
    values: dict[str, Any],
    *,
    system: str,
    thinker: str,
    budgeted: bool = False,
    meta: dict[str, Any] | None = None,
    temperature: float | None = None,
    logprobs: bool = False,
) -> tuple[Reply[T], Cost]:
    """A structured call with the node's templates; returns the reply and its cost.

    ``system`` names the system-prompt template, ``template`` the user template (``<template>.user``).
    ``thinker`` names the caller's role in its agent (``master``, ``planner``, ``searcher``...): the run's
    thinking setting for that role decides whether a reasoning model thinks, and the cost counts the
    call's tokens under it (:attr:`Cost.tokens_by_role`). A ``budgeted`` call (one that explores, which
    the run can do without) first reserves room in the run's shared budget (:class:`BudgetSpent` when
    there is none left); every call's real cost is settled in the ledger, failed ones included.
    ``temperature`` overrides the endpoint's sampling temperature for this call (None: the endpoint's).
    ``logprobs``: the reply's tokens come with their log-probabilities (:attr:`Reply.tokens`).
    """
    said = ctx.prompts.call(system, template, values, k=ctx.config.k)
    reservation = ctx.ledger.reserve(estimate_tokens(images, said.system + said.head + said.user)) if budgeted else None
    if ctx.tracer is not None:
        for image in images:
            ctx.tracer.image(image.sha256, image.label or "image", image.width, image.height, image.jpeg)
    labels = {
        "images": [image.sha256 for image in images],
        "frames": sorted({round(t, 3) for image in images for t in image.frames}),
        **said.labels,
        **(meta or {}),
    }
    try:
        reply = await ctx.vlm.ask(
            schema,
            system=said.system,
            text=said.user,
            images=images,
            head=said.head,
            node=node,
            meta=labels,
            role=thinker,
            thinking=ctx.config.thinking_for(thinker),
            temperature=temperature,
            logprobs=logprobs,
        )
    except BaseException as exc:
        ctx.ledger.settle(reservation, failed_call_cost(exc))
        raise
    cost = call_cost(reply.record, thinker, images)
    ctx.ledger.settle(reservation, cost)
    return reply, cost


async def read_choice(
    ctx: AgentContext,
    node: str,
    template: str,
    values: dict[str, Any],
    *,
    system: str,
    thinker: str,
    choices: Sequence[str],
) -> tuple[list[float] | None, Cost]:
    """The server's probability of each choice, from one ``/v1/decisions`` read of a text-only call's text.

    The text is what :func:`ask` would send with the same templates and no images, less the reply format
    note: the system prompt and the user text, a blank line apart. The question is the prompt set's
    ``decision_question.note`` on the values' ``question``; each choice's text is an option. (None, no cost)
    where the endpoint does not serve decisions (:meth:`~videoatlas.llm.client.VLMClient.read_choice`). The
    call's tokens count as :func:`ask`'s do, under ``thinker``; a failed one's are settled in the ledger before
    its error goes on.
    """
    # Without the chat reply's format note: the read asks for one option's letter (vLLM's own instruction), and a
    # note asking for JSON with an index would contradict it in the model's prompt.
    said = ctx.prompts.call(system, template, {**values, "format": ""}, k=ctx.config.k)
    text = "\n\n".join(part for part in (said.system.rstrip("\n"), said.head + said.user) if part)
    instructions = ctx.prompts.note("decision_question.note", question=values["question"])
    try:
        read = await ctx.vlm.read_choice(
            text=text, instructions=instructions, options=choices, node=node, meta=said.labels, role=thinker
        )
    except BaseException as exc:
        ctx.ledger.settle(None, failed_call_cost(exc))
        raise
    if read is None:
        return None, Cost()
    cost = call_cost(read.record, thinker)
    ctx.ledger.settle(None, cost)
    return list(read.probabilities), cost


def call_cost(record: CallRecord, thinker: str, images: Sequence[ImagePart] = ()) -> Cost:
    """What one answered call costs the run: its tokens (counted under ``thinker``), its images and their frames."""
    tokens = record.prompt_tokens + record.completion_tokens
    return Cost(
        calls=1,
        prompt_tokens=record.prompt_tokens,
        completion_tokens=record.completion_tokens,
        cached_tokens=record.cached_tokens,
        reasoning_tokens=record.reasoning_tokens,
        images=record.images,
        image_tokens=record.image_tokens,
        tokens_by_role={thinker: tokens} if tokens else {},
        **frame_ledger(images),
    )


def frame_ledger(images: Sequence[ImagePart]) -> dict[str, Any]:
    """What a call's images add to the run's frame ledger: frames sent, and which moments (ms) they show."""
    return {
        "frames_sent": sum(len(image.frames) for image in images),
        "frames_seen": tuple(sorted({round(t * 1000) for image in images for t in image.frames})),
    }


async def hear(ctx: AgentContext, spans: Sequence[Interval], where: Where, whole: bool = False) -> Heard:
    """What is said during ``spans``: the subtitle file's lines when one is given, else the speech track's.

    The speech track is transcribed as needed (see :mod:`videoatlas.runtime.speech`): add the
    returned cost and repairs to the node's update. ``whole``: every stretch of ``spans``, not a
    sample of the wide ones.
    """
    if ctx.subtitles is not None:
        return Heard(ctx.subtitles)
    if ctx.speech is None:
        return Heard(None)
    return await ctx.speech.hear(spans, where, whole)


def with_heard(update: dict[str, Any], heard: Heard) -> dict[str, Any]:
    """A node's state update with what hearing cost and the lines it left added."""
    if heard.cost == Cost() and not heard.repairs:
        return update
    cost = update.get("cost") or Cost()
    return {**update, "cost": cost + heard.cost, "repairs": [*(update.get("repairs") or []), *heard.repairs]}


def said(ctx: AgentContext) -> Subtitles | None:
    """What is known to be said, without asking for more: the subtitle file, or the speech heard so far."""
    if ctx.subtitles is not None:
        return ctx.subtitles
    return ctx.speech.said() if ctx.speech is not None else None


SPEECH_CHARS = 1500
"""Characters of speech one prompt quotes at most (:func:`speech_lines`)."""


def speech_lines(
    subtitles: Subtitles | None,
    spans: Sequence[Interval],
    question: str,
    choices: Sequence[str],
    max_chars: int = SPEECH_CHARS,
) -> str:
    """What is said during ``spans``: one timed, quoted line per stretch of speech, in time order, within a budget.

    When the lines do not all fit, those that bear most on the question and its choices are kept
    (:func:`videoatlas.environment.subtitles.fitting_lines`). ``(none)`` when nothing is said (no
    subtitles, no speech track, or silence there).
    """
    if subtitles is None:
        return "(none)"
    said = {ln for sp in spans for ln in subtitles.overlapping(sp)}
    lines = sorted(said, key=lambda ln: (ln.start, ln.end, ln.text))

    def quoted(ln: SubtitleLine) -> str:
        return f'{format_ts(ln.start, 1)}-{format_ts(ln.end, 1)}: "{ln.text}"'

    kept = fitting_lines(lines, " ".join([question, *choices]), max_chars, lambda ln: len(quoted(ln)) + 1)
    out = [quoted(ln) for ln in kept]
    if len(kept) < len(lines):
        out.append(f"(and {len(lines) - len(kept)} more stretches of speech, sharing fewer words with the question)")
    return "\n".join(out) or "(none)"


def subtitles_by_cell(
    subtitles: Subtitles | None,
    cells: Sequence[tuple[int, Interval]],
    question: str = "",
    choices: Sequence[str] = (),
    max_chars: int = 1600,
) -> str:
    """What is said during each cell of a grid, one line per cell labelled with its id (empty when nothing is).

    When the cells' words do not all fit, what bears on the question and its choices is quoted whole
    first (:meth:`videoatlas.environment.subtitles.Subtitles.by_cell`).
    """
    if subtitles is None:
        return ""
    return subtitles.by_cell([(f"cell {i}", iv) for i, iv in cells], max_chars, " ".join([question, *choices]).strip())


def fallback(exc: BaseException, node: str, round_no: int, rule: str) -> tuple[Cost, Repair]:
    """Cost and trace entry of a call whose reply could not be used even after a re-ask.

    The node goes on without it by ``rule``; the run's cost counts the fallback and ``trace``
    shows it, so a run that went on this way is never mistaken for one that did not.
    """
    log.warning("model_reply_fallback", node=node, round=round_no, rule=rule, error=str(exc))
    cost = failed_call_cost(exc) + Cost(fallbacks=1)
    return cost, Repair(node=node, round=round_no, kind="fallback", detail=f"{rule} (reply unusable: {exc})")


def failed_call_cost(exc: BaseException) -> Cost:
    """What a call that ended in an error cost (from the record the client attached to the error).

    Its tokens count under the role the record names (the caller's, as :func:`ask` gave it).
    """
    record = getattr(exc, "record", None)
    prompt = int(getattr(record, "prompt_tokens", 0))
    completion = int(getattr(record, "completion_tokens", 0))
    role = str(getattr(record, "role", "") or "")
    return Cost(
        calls=1,
        failed_calls=1,
        prompt_tokens=prompt,
        completion_tokens=completion,
        cached_tokens=int(getattr(record, "cached_tokens", 0)),
        reasoning_tokens=int(getattr(record, "reasoning_tokens", 0)),
        images=int(getattr(record, "images", 0)),
        image_tokens=int(getattr(record, "image_tokens", 0)) if prompt else 0,  # only a prompt the server took
        tokens_by_role={role: prompt + completion} if role and prompt + completion else {},
    )


def budget_exhausted(cost: Cost, calls: int | None, tokens: int | None) -> str | None:
    """Why the run's global budget is spent, or None while it is not."""
    if calls is not None and cost.calls >= calls:
        return f"call budget of {calls} spent"
    if tokens is not None and cost.tokens >= tokens:
        return f"token budget of {tokens} spent"
    return None
