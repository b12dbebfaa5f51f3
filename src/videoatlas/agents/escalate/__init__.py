"""Escalation: a uniform pass first, a search agent only when its answer is not sure enough."""
