"""Which signal is stopping the work in this context, as the code that received it knows.

A run records why it stopped (``interrupted by SIGTERM``). The cancellation that reaches the run
carries the signal's name only as far as every layer in between re-raises it unchanged; an HTTP
library that raises a fresh ``CancelledError`` drops it. The receiver writes the name here first,
so the run reads it whatever path the cancellation took.
"""

from __future__ import annotations

from contextvars import ContextVar

_RECEIVED: ContextVar[list[str] | None] = ContextVar("videoatlas_stop_signal", default=None)


def watch_for_stop() -> list[str]:
    """Start recording in this context (and the tasks it starts); returns the list a receiver appends to."""
    received: list[str] = []
    _RECEIVED.set(received)
    return received


def stop_signal() -> str | None:
    """The name of the signal stopping the work (``SIGTERM``), or None when none was received."""
    received = _RECEIVED.get()
    return received[0] if received else None
