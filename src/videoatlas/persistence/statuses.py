"""The statuses a run can have, in a module with no heavy imports (the CLI's parser offers them as choices)."""

from __future__ import annotations

RUN_STATUSES = ("running", "stale", "finished", "failed", "interrupted")
"""Run statuses as shown (``stale``: stored as running, but its owner stopped renewing the run's lease:
killed, or lost with its node). Here, in a module with no heavy imports, for the parser."""
