"""What every call of the Master shows first: the root grid, the scratchpad's pages, the question and the evidence.

The probe, the uncertainty analysis and the final decision open with the same images in the same
order (the root grid with the dead zones blacked out, then the scratchpad), under one system prompt,
and their templates open with the same text (the question, its choices, the evidence): between two of
them in a round nothing of it changes, so the server serves the whole prefix from its cache. Each call
adds its own values after it.
"""

from __future__ import annotations

from typing import Any

from videoatlas.agents.video_rlm.nodes.views import evidence_block, scratchpad_images
from videoatlas.agents.video_rlm.state.master import MasterState
from videoatlas.environment.atlas import GridView
from videoatlas.llm.images import ImagePart
from videoatlas.runtime.calls import as_image, choices_block
from videoatlas.runtime.context import AgentContext


async def master_prefix(
    ctx: AgentContext, state: MasterState, root: GridView
) -> tuple[list[ImagePart], dict[str, Any]]:
    """The images (``root``, then the scratchpad) and template values every Master call shares."""
    images = [as_image(root.image, "root grid"), *await scratchpad_images(ctx, state["evidence"])]
    values = {
        "question": state["question"],
        "choices": choices_block(state["choices"]),
        "search_task": state["search_task"],
        "evidence": evidence_block(state["evidence"]),
    }
    return images, values
