"""videoatlas: question answering over very long videos by navigating a hierarchical frame grid.

``videoatlas.ask(video, question, choices, ...)`` answers a question from Python and returns the
answer, the evidence and the run id (see :mod:`videoatlas.api`); the package imports its agents and
LangGraph only when one of these is first used, so ``import videoatlas`` stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from videoatlas.api import RunResult, aask, aresume, ask, resume

__version__ = "0.1.0"
__all__ = ["RunResult", "__version__", "aask", "aresume", "ask", "resume"]

_API = frozenset({"RunResult", "aask", "aresume", "ask", "resume"})


def __getattr__(name: str) -> Any:
    if name in _API:
        from videoatlas import api
        from videoatlas.logging import library_defaults

        library_defaults()  # logs to stderr, never the caller's stdout (unless it configured structlog itself)
        return getattr(api, name)
    raise AttributeError(f"module 'videoatlas' has no attribute {name!r}")
