"""Helpers shared by nodes: prompt text blocks, model calls with cost accounting, rendering evidence."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any, TypeVar

import structlog
from langgraph.config import get_stream_writer
from pydantic import BaseModel

from videoatlas.environment.atlas import RenderedImage
from videoatlas.environment.geometry import Grid, Interval, covered_fraction, merge_intervals
from videoatlas.environment.render import ScratchTile, evidence_label
from videoatlas.environment.timefmt import format_ts
from videoatlas.graph.budget import estimate_tokens
from videoatlas.graph.context import AgentContext
from videoatlas.llm.client import Reply
from videoatlas.llm.images import ImagePart
from videoatlas.state.master import MasterState
from videoatlas.state.models import Cost, Evidence, Repair, Zone, zones_as_intervals

T = TypeVar("T", bound=BaseModel)
log = structlog.get_logger(__name__)
LETTERS = "ABCDEFGHIJ"


# The reply-format lines of a final decision, shared by the Video-RLM decision and the uniform
# baseline so both are held to the same answer format. They describe the JSON schema that is also
# sent as ``response_format``; the wording of each task lives in the prompt set's templates.
FORMAT_CHOICES = (
    'Reply in JSON: "judgements" (for each choice its index, a verdict and the evidence labels), '
    '"answer" (the index of the chosen choice, 0 for A), "reasoning", and "evidence" (the labels it rests on).'
)
FORMAT_OPEN = (
    'Reply in JSON: "answer" (a short answer in your own words that cites evidence labels and times), '
    '"reasoning", and "evidence" (the labels it rests on).'
)


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
        return "(none: answer in your own words)"
    return "\n".join(f"{LETTERS[i] if i < len(LETTERS) else i}. {c}" for i, c in enumerate(choices))


def cells_block(grid: Grid, dead: Sequence[Interval] = ()) -> str:
    """One line per cell: id, span, and whether it is explored."""
    lines = []
    decimals = 0 if grid.cell_span >= 10 else 1 if grid.cell_span >= 1 else 2
    for cell in grid.cells:
        iv = cell.interval
        mark = ""
        if dead:
            covered = covered_fraction(iv, dead)
            mark = " [explored]" if covered >= 0.999 else (f" [{covered:.0%} explored]" if covered > 0 else "")
        lines.append(f"{cell.index}: {format_ts(iv.start, decimals)}-{format_ts(iv.end, decimals)}{mark}")
    return "\n".join(lines)


def labelled(evidence: Sequence[Evidence]) -> list[tuple[str, Evidence]]:
    """Evidence in scratchpad order with its label ([A], [B], ...)."""
    return [(evidence_label(i), e) for i, e in enumerate(evidence)]


def evidence_block(evidence: Sequence[Evidence]) -> str:
    """One line per evidence item, with label, time, cell and description."""
    if not evidence:
        return "(none yet)"
    lines = []
    for label, e in labelled(evidence):
        where = f"cell {e.cell}" if e.cell else f"range {format_ts(e.start)}-{format_ts(e.end)}"
        sub = f' subtitle: "{e.subtitle}"' if e.subtitle else ""
        lines.append(
            f"[{label}] @{e.time:.1f} s ({where}, starts {e.start:.1f} s): {e.description} "
            f"(confidence {e.confidence:.2f}){sub}"
        )
    return "\n".join(lines)


def explored_share(zones: Sequence[Zone], duration: float) -> float:
    """Share of the video inside dead zones."""
    return covered_fraction(Interval(0.0, duration), zones_as_intervals(zones))


def coverage_text(state: MasterState, duration: float) -> str:
    """How much of the video workers have searched, and how much of it held nothing."""
    covered = explored_share(state.get("searched", []), duration)
    empty = explored_share(state["dead_zones"], duration)
    return f"{covered:.0%} of the video covered by workers ({empty:.0%} explored without findings)"


def gaps_text(evidence: Sequence[Evidence], zones: Sequence[Zone], duration: float, limit: int = 6) -> str:
    """Unexplored stretches between consecutive evidence moments (for temporal interpolation)."""
    times = sorted({round(e.time, 1) for e in evidence})
    dead = merge_intervals(zones_as_intervals(zones))
    gaps = []
    for a, b in itertools.pairwise(times):
        if b - a < 1.0:
            continue
        share = covered_fraction(Interval(a, b), dead)
        if share < 0.9:
            gaps.append(f"{format_ts(a)}-{format_ts(b)} ({b - a:.0f} s, {share:.0%} explored)")
    if not gaps:
        return "(none)"
    return "; ".join(gaps[:limit]) + ("; ..." if len(gaps) > limit else "")


def as_image(rendered: RenderedImage, label: str) -> ImagePart:
    """A rendered observation as an image for a prompt."""
    return ImagePart(rendered.jpeg, rendered.width, rendered.height, label)


CLOSE_UPS = 4
"""At most this many collected close-ups are shown beside the scratchpad (each ~1,200 visual tokens)."""


async def scratchpad_images(ctx: AgentContext, evidence: Sequence[Evidence]) -> list[ImagePart]:
    """The scratchpad pages as images (each frame rendered again from its reference).

    An item a worker recorded from a close-up (ZOOM, then ADD) is also shown as that close-up,
    labelled with its scratchpad label, so the Master reads what the worker read. The most recent
    :data:`CLOSE_UPS` are shown, within the server's image limit.
    """
    if not evidence:
        return []
    tiles = [ScratchTile(i, e.time, e.subtitle) for i, e in enumerate(evidence)]
    pages = await ctx.atlas.ascratchpad(tiles, ctx.config.scratchpad_page)
    images = [as_image(page, f"scratchpad p{n + 1}") for n, page in enumerate(pages)]
    room = max(0, ctx.vlm.settings.max_images - 1 - len(images))  # the root grid comes first
    zoomed = [(label, e) for label, e in labelled(evidence) if e.frame.px > ctx.config.cell_px]
    zoomed = sorted(zoomed, key=lambda pair: (pair[1].round, pair[1].time))[-min(room, CLOSE_UPS) :] if room else []
    for label, e in sorted(zoomed, key=lambda pair: pair[1].time):
        shot = await ctx.atlas.azoom(e.time, tag=label)
        images.append(as_image(shot, f"close-up [{label}]"))
    return images


async def ask(
    ctx: AgentContext,
    schema: type[T],
    node: str,
    template: str,
    images: Sequence[ImagePart],
    values: dict[str, Any],
    role: str = "master",
    meta: dict[str, Any] | None = None,
) -> tuple[Reply[T], Cost]:
    """A structured call with the node's templates; returns the reply and its cost.

    A worker's call first reserves room in the run's shared budget (:class:`BudgetSpent` when
    there is none left); every call's real cost is settled in the ledger, failed ones included.
    """
    system = ctx.prompts.render("worker.system" if role == "worker" else "master.system", k=ctx.config.k)
    text = ctx.prompts.render(f"{template}.user", **values)
    reservation = ctx.ledger.reserve(estimate_tokens(images, system + text)) if role == "worker" else None
    if ctx.tracer is not None:
        for image in images:
            ctx.tracer.store.artifact(image.sha256, image.label or "image", image.width, image.height, image.jpeg)
    labels = {
        "images": [image.sha256 for image in images],
        "prompt_set": ctx.prompts.name,
        "prompt_set_sha": ctx.prompts.sha256,
        "template": f"{template}:{ctx.prompts[f'{template}.user'].sha256}",
        **(meta or {}),
    }
    try:
        reply = await ctx.vlm.ask(schema, system=system, text=text, images=images, node=node, meta=labels)
    except BaseException as exc:
        ctx.ledger.settle(reservation, failed_call_cost(exc, role))
        raise
    record = reply.record
    tokens = record.prompt_tokens + record.completion_tokens
    cost = Cost(
        calls=1,
        prompt_tokens=record.prompt_tokens,
        completion_tokens=record.completion_tokens,
        cached_tokens=record.cached_tokens,
        images=record.images,
        master_tokens=tokens if role == "master" else 0,
        worker_tokens=tokens if role == "worker" else 0,
    )
    ctx.ledger.settle(reservation, cost)
    return reply, cost


def subtitles_by_cell(ctx: AgentContext, cells: Sequence[tuple[int, Interval]], max_chars: int = 1600) -> str:
    """The subtitles of a grid, one line per cell labelled with its id (empty without subtitles)."""
    if ctx.subtitles is None:
        return ""
    return ctx.subtitles.by_cell([(f"cell {i}", iv) for i, iv in cells], max_chars)


def fallback(exc: BaseException, node: str, round_no: int, rule: str) -> tuple[Cost, Repair]:
    """Cost and trace entry of a call whose reply could not be used even after a re-ask.

    The node goes on without it by ``rule``; the run's cost counts the fallback and ``trace``
    shows it, so a run that went on this way is never mistaken for one that did not.
    """
    log.warning("model_reply_fallback", node=node, round=round_no, rule=rule, error=str(exc))
    cost = failed_call_cost(exc, "master") + Cost(fallbacks=1)
    return cost, Repair(node=node, round=round_no, kind="fallback", detail=f"{rule} (reply unusable: {exc})")


def failed_call_cost(exc: BaseException, role: str) -> Cost:
    """What a call that ended in an error cost (from the record the client attached to the error)."""
    record = getattr(exc, "record", None)
    prompt = int(getattr(record, "prompt_tokens", 0))
    completion = int(getattr(record, "completion_tokens", 0))
    return Cost(
        calls=1,
        failed_calls=1,
        prompt_tokens=prompt,
        completion_tokens=completion,
        cached_tokens=int(getattr(record, "cached_tokens", 0)),
        images=int(getattr(record, "images", 0)),
        master_tokens=prompt + completion if role == "master" else 0,
        worker_tokens=prompt + completion if role == "worker" else 0,
    )


def budget_exhausted(cost: Cost, calls: int | None, tokens: int | None) -> str | None:
    """Why the run's global budget is spent, or None while it is not."""
    if calls is not None and cost.calls >= calls:
        return f"call budget of {calls} spent"
    if tokens is not None and cost.tokens >= tokens:
        return f"token budget of {tokens} spent"
    return None
