"""What the run page needs from a run's earlier checkpoints, read by the agent's own history hook.

The last checkpoint holds only the run's final state; an agent whose page shows how its state
changed along the way (what each round added, say) reads the checkpoints before it
(:attr:`videoatlas.agents.views.AgentViews.history`). The hook is handed the run's checkpoints, newest
first; it never opens the database itself.
"""

from __future__ import annotations

from contextlib import aclosing
from typing import Any

from videoatlas.agents.registry import get_agent, state_history


async def history(url: str, agent: str, run_id: str) -> dict[int, dict[str, Any]]:
    """The agent's reading of run ``run_id``'s checkpoints in database ``url`` (empty for an agent without one)."""
    hook = get_agent(agent).views.history
    if hook is None:
        return {}
    async with aclosing(state_history(url, agent, run_id)) as snapshots:  # closed even if the hook stops early
        return await hook(snapshots)
