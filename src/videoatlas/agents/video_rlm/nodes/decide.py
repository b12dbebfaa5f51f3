"""The final decision, from the evidence rendered as labelled frames plus their descriptions."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from videoatlas.agents.decision import decide_on_evidence
from videoatlas.agents.video_rlm.nodes.prefix import master_prefix
from videoatlas.agents.video_rlm.nodes.views import SYSTEM, coverage_text
from videoatlas.agents.video_rlm.occurrences import occurrences_block
from videoatlas.agents.video_rlm.settings import rlm
from videoatlas.agents.video_rlm.state.master import MasterState
from videoatlas.runtime.calls import hear, speech_lines
from videoatlas.runtime.context import AgentContext
from videoatlas.runtime.speech import Where
from videoatlas.state.models import zones_as_intervals


async def decide(state: MasterState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    """Judge each choice against the evidence and answer; a failed reply is recorded, never guessed.

    Beside the evidence, the call shows its distinct occurrences (records of one appearance merged
    across zoom levels, workers and rounds): a count counts those, not records. A question with a
    time relation is told its anchor's time, and the answer's cited times are checked against it in
    the reasoning (:func:`videoatlas.agents.relation.time_check`).
    """
    ctx = runtime.context
    # The same images, in the same order, as the last uncertainty analysis: the prefix comes from the cache.
    root = await ctx.atlas.agrid((), zones_as_intervals(state["dead_zones"]))
    images, shared = await master_prefix(ctx, state, root)
    # What was said where the search looked: the root grid's cells (as the probe heard them) and each stretch searched.
    probed = [*(c.interval for c in root.grid.cells), *zones_as_intervals(state["searched"])]
    heard = await hear(ctx, probed, Where("decide", state.get("round", 0)))
    speech = speech_lines(heard.subtitles, probed, state["question"], state["choices"])
    return await decide_on_evidence(
        ctx,
        state,
        state["evidence"],
        system=SYSTEM,
        images=images,
        values={
            **shared,
            "coverage": coverage_text(state, ctx.atlas.duration, rlm(ctx).bfs_step(ctx.atlas.duration, ctx.config.k)),
            "occurrences": occurrences_block(state["evidence"]),
            "speech": speech,
        },
        stop="evidence sufficient",
        node="decide",
        thinker="master",
        template="decide",
        step="final decision",
        record_evidence=False,  # the scratchpad stays the state's evidence
        anchor=state.get("anchor"),
        heard=heard,
    )
