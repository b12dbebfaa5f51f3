"""Which signal is stopping the work, as the code that received it knows.

A run records why it stopped (``interrupted by SIGTERM``). The cancellation that reaches the run
carries the signal's name only as far as every layer in between re-raises it unchanged; an HTTP
library that raises a fresh ``CancelledError`` drops it. The receiver notes the name here first, so
the run reads it whatever path the cancellation took. A signal reaches the process, not one task:
the note is the process's, and the receiver clears it once the work it stopped is over.
"""

from __future__ import annotations

_RECEIVED: list[str] = []


def note_stop(name: str) -> None:
    """Note that signal ``name`` (``SIGTERM``) is stopping the work; the first one noted stands."""
    if not _RECEIVED:
        _RECEIVED.append(name)


def stop_signal() -> str | None:
    """The name of the signal stopping the work (``SIGTERM``), or None when none was received."""
    return _RECEIVED[0] if _RECEIVED else None


def clear_stop() -> None:
    """Forget the signal noted: the work it stopped is over."""
    _RECEIVED.clear()
