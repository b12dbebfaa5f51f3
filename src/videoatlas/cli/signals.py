"""SIGTERM handled like SIGINT: the work in progress is cancelled cleanly and the command exits with one line.

Slurm sends SIGTERM on preemption and at the time limit, then SIGKILL after KillWait (30 s by
default). Cancelling the command's task lets in-flight model calls go, marks runs ``interrupted``
and gives their leases back (so ``resume``, or the same ``eval run`` again, continues at once),
within that window.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import Coroutine
from typing import Any, TypeVar

from videoatlas.runtime.stopping import clear_stop, note_stop

T = TypeVar("T")

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(KeyboardInterrupt):
    """The command was stopped by a signal; it exits with 128 + the signal's number.

    A :class:`KeyboardInterrupt`, as Python's own SIGINT is, so that an event loop passes it on: a
    SIGTERM that lands in one of asyncio's callbacks (a server's loop before its library takes the
    signal over) stops the loop, where an ordinary exception would be logged and dropped and the
    process would serve on with SIGTERM ignored. Every ``except Exception`` lets it through.
    """

    def __init__(self, signum: int, hint: str = "") -> None:
        self.signum = signum
        self.hint = hint
        super().__init__(signal.Signals(signum).name)

    @property
    def exit_code(self) -> int:
        """130 for SIGINT, 143 for SIGTERM, as a shell reports a process killed by them."""
        return 128 + self.signum

    def message(self) -> str:
        """``stopped by SIGTERM; <hint>``."""
        return f"stopped by {signal.Signals(self.signum).name}" + (f"; {self.hint}" if self.hint else "")


def raise_on_sigterm() -> None:
    """Outside :func:`run_stoppable`, SIGTERM raises :class:`Interrupted` where the program is, like SIGINT."""

    def handler(signum: int, _frame: Any) -> None:
        stay_stopping()
        raise Interrupted(signum)

    signal.signal(signal.SIGTERM, handler)


def run_stoppable(work: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(work)``; SIGINT or SIGTERM cancels ``work`` and raises :class:`Interrupted`.

    The cancellation carries the signal's name (runs record ``interrupted by SIGTERM``). While the
    clean-up runs, a second Ctrl-C ends the process at once (the user will not wait); a repeated
    SIGTERM is ignored (a Slurm job's script and its children can each receive one, and the
    scheduler's SIGKILL follows anyway).
    """
    return asyncio.run(_guarded(work))


async def _guarded(work: Coroutine[Any, Any, T]) -> T:
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    assert task is not None
    received: list[int] = []

    def on_signal(signum: int) -> None:
        if received:
            if signum == signal.SIGINT:  # a second Ctrl-C: the user will not wait for the clean-up
                sys.stderr.write("stopped by SIGINT during clean-up\n")
                sys.stderr.flush()
                os._exit(128 + signum)
            return
        received.append(signum)
        note_stop(signal.Signals(signum).name)  # the run reads it there, whichever way the cancellation came
        task.cancel(msg=signal.Signals(signum).name)

    previous = {sig: signal.getsignal(sig) for sig in STOP_SIGNALS}
    for sig in STOP_SIGNALS:
        loop.add_signal_handler(sig, on_signal, sig)
    try:
        return await work
    except asyncio.CancelledError:
        if received:
            raise Interrupted(received[0]) from None
        raise
    finally:
        for sig in STOP_SIGNALS:
            loop.remove_signal_handler(sig)
            handler = previous[sig]
            if callable(handler) or isinstance(handler, int):
                signal.signal(sig, handler)
        if received:
            clear_stop()
            stay_stopping()


def stay_stopping() -> None:
    """Ignore SIGTERM from now on: the process is already on its way out.

    A repeated SIGTERM (Slurm signals a job's script and its children) must not kill the process
    with the default action while it writes its last line or while the interpreter shuts down,
    which takes most of a second after a run: the exit code would be -15 instead of 143. An
    ignored disposition also survives the interpreter's own reset of signal handlers at exit.
    """
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
