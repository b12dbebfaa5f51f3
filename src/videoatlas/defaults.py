"""What a run is when its caller names nothing: the agent (imports nothing, so every layer may read it)."""

from __future__ import annotations

DEFAULT_AGENT = "video-rlm"
"""The agent a run uses when none is named: ``RunConfig``'s default, every command's ``--agent`` and the Python
API's ``agent``, all through :data:`videoatlas.agents.registry.DEFAULT_AGENT`, which names the agents."""
