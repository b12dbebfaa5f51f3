"""The stand-in's behaviour version and model id, in a module of their own so ``--help`` can name them cheaply."""

from __future__ import annotations

BEHAVIOUR_VERSION = 32
"""Bumped whenever a source of the stand-in changes (a rule here or in perception changing what it answers,
or anything else: tests/standin/test_standin_general.py holds each version's sources hash); part of its model id."""
STANDIN_MODEL = f"videoatlas-standin-v{BEHAVIOUR_VERSION}"
"""The stand-in's model id carries its behaviour version: results keyed by model re-run when its rules change."""
