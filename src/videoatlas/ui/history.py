"""What the run page needs from a run's earlier checkpoints, read by the agent's own history hook.

The last checkpoint holds only the run's final state; an agent whose page shows how its state
changed along the way (what each round added, say) reads the checkpoints before it
(:attr:`videoatlas.agents.base.Agent.history`).
"""

from __future__ import annotations

from typing import Any

from videoatlas.agents.registry import get_agent


async def history(url: str, agent: str, run_id: str) -> dict[int, dict[str, Any]]:
    """The agent's reading of run ``run_id``'s checkpoints in database ``url`` (empty for an agent without one)."""
    hook = get_agent(agent).views.history
    return await hook(url, run_id) if hook is not None else {}
