"""Dynamic query management: new queries from the frames just seen, then retrieval and anchors again.

The round's expansion call, shown its frames and the queries held, proposed 2-5 new ones with its scores; with
``update_call`` on, a call of its own asks for them instead, shown the same frames (the paper's layout: the
frames are prefilled twice a round). Those empty or repeating a held one are dropped (and the drop recorded);
the rest are matched against the index, their hits merged with the earlier ones (one per moment) and
everything re-clustered into anchors. With query updates off the node only passes on.
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from videoatlas.agents.eea.discover import ROOT
from videoatlas.agents.eea.evaluate import round_images
from videoatlas.agents.eea.retrieve import anchors_of, clean_queries, merge_hits, search_hits, speech_hits
from videoatlas.agents.eea.schemas import UPDATE_QUERIES, queries_schema
from videoatlas.agents.eea.settings import EEASettings, eea
from videoatlas.agents.eea.state import EEAState, Round
from videoatlas.agents.eea.views import SYSTEM, moments, queries_block
from videoatlas.environment.geometry import Interval
from videoatlas.errors import ModelReplyError
from videoatlas.runtime.calls import ask, choices_block, emit, fallback, hear, with_heard
from videoatlas.runtime.context import AgentContext
from videoatlas.runtime.frame_index import frame_index, query_vectors
from videoatlas.runtime.speech import Where
from videoatlas.state.models import Cost, Repair


async def update(state: EEAState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    """Propose new queries from this round's frames and re-anchor."""
    ctx = runtime.context
    settings = eea(ctx)
    if not settings.query_update:
        return {}
    this_round = state["rounds"][-1]
    held = state.get("queries") or []
    repairs: list[Repair] = []
    if settings.update_call:
        proposed, cost, repairs = await _ask_queries(ctx, settings, state, this_round, held)
    else:
        proposed, cost = this_round.proposed, Cost()
    new, dropped = clean_queries(proposed, held)
    if dropped:
        detail = "empty or repeated queries dropped: " + "; ".join(repr(q) for q in dropped)
        repairs.append(Repair(node="update", round=this_round.index, kind="dropped", detail=detail))
    out: dict[str, Any] = {"cost": cost, "repairs": repairs}
    if new:
        index, _ = await frame_index(ctx, settings)
        vectors, embedded = await query_vectors(ctx, settings, new)
        # The speech heard where the search looked: the first look over the whole video and each stretch opened.
        looked = [Interval(s.start, s.end) for s in state.get("segments") or [] if s.expanded or s.id == ROOT]
        heard = await hear(ctx, looked, Where("update", this_round.index))
        out = with_heard(out, heard)
        spoken, texts = await speech_hits(ctx, settings, vectors, heard.subtitles)
        hits = merge_hits(state.get("hits") or [], [*search_hits(index, vectors, settings), *spoken])
        out |= {
            "queries": [*held, *new],
            "hits": hits,
            "anchors": anchors_of(hits, settings.cluster_gap_s),
            "embedded": embedded + texts,
        }
    emit("queries", round=this_round.index, new=len(new), dropped=len(dropped))
    out["rounds"] = [this_round.model_copy(update={"new_queries": new})]
    return out


async def _ask_queries(
    ctx: AgentContext, settings: EEASettings, state: EEAState, this_round: Round, held: list[str]
) -> tuple[list[str], Cost, list[Repair]]:
    """The query update as a call of its own: the round's frames and the queries held, 2-5 new ones back."""
    values = {
        "question": state["question"],
        "choices": choices_block(state["choices"]),
        "queries": queries_block(held),
        "frames": moments(this_round.frames),
    }
    images = await round_images(ctx, settings, this_round.frames)
    try:
        reply, cost = await ask(
            ctx, queries_schema(*UPDATE_QUERIES), "update", "update", images, values,
            system=SYSTEM, thinker="searcher", meta={"round": this_round.index},
        )  # fmt: skip
    except ModelReplyError as exc:
        cost, repair = fallback(exc, "update", this_round.index, "no new queries this round")
        return [], cost, [repair]
    return list(reply.value.search_queries), cost, []  # type: ignore[attr-defined]
