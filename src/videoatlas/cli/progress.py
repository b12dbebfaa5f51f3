"""Progress on stderr: a live tqdm bar on a terminal, plain periodic lines otherwise (no carriage returns in a log)."""

from __future__ import annotations

import io
import os
import sys
import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self, TextIO

from videoatlas.environment.timefmt import format_ts

if TYPE_CHECKING:
    from videoatlas.evals.runner import EvalProgress

QUIET_AT_MOST_S = 7.0
"""A run's progress (``ask``, ``resume``, ``demo``) writes a status line after this long without one."""

PLAIN_EVERY_S = 30.0
"""Without a terminal, a line at least this often while something changes (and at every tenth of the work)."""


def _live_bar(stream: TextIO, **options: Any) -> Any:
    from tqdm import tqdm  # only a terminal draws a bar

    try:
        size = os.get_terminal_size(stream.fileno())
    except (OSError, ValueError, io.UnsupportedOperation):
        size = os.terminal_size((0, 0))
    # A terminal that reports no size (some containers' ptys) would get no bar at all from tqdm.
    sizing: dict[str, Any] = {"dynamic_ncols": True} if size.columns and size.lines else {"ncols": 100, "nrows": 40}
    return tqdm(file=stream, leave=True, **sizing, **options)


class _Reporter:
    """What both kinds of progress share: where to write, whether to draw a bar, when the last line was."""

    def __init__(self, stream: TextIO | None = None, quiet: bool = False) -> None:
        self.stream = stream or sys.stderr
        self.quiet = quiet
        self.tty = self.stream.isatty()
        self.bar: Any = None
        self.last_line = -1.0
        self.last_tenth = -1
        self.down_line: float | None = None

    def _plain_due(self, done: int, total: int) -> bool:
        """Whether a plain line is due: the first, every tenth of the work, the last, or after a quiet while."""
        tenth = 10 * done // total if total else 10
        now = time.monotonic()
        due = tenth != self.last_tenth or done == total or now - self.last_line >= PLAIN_EVERY_S
        if due:
            self.last_tenth, self.last_line = tenth, now
        return due

    def _line(self, text: str) -> None:
        self.stream.write(text + "\n")
        self.stream.flush()

    def close(self) -> None:
        """End the bar (the line stays on screen)."""
        if self.bar is not None:
            self.bar.close()
            self.bar = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


class Progress(_Reporter):
    """Units of work done of a total (frames encoded): a bar with rate and ETA, or ``label: 40% (600/1500)`` lines."""

    def __init__(self, label: str, unit: str = "frame", stream: TextIO | None = None, quiet: bool = False) -> None:
        super().__init__(stream, quiet)
        self.label = label
        self.unit = unit

    def __call__(self, done: int, total: int) -> None:
        """Report ``done`` of ``total`` units."""
        if self.quiet:
            return
        if self.tty:
            if self.bar is None:
                self.bar = _live_bar(self.stream, total=total, desc=self.label, unit=self.unit)
            self.bar.update(done - self.bar.n)
            if done >= total:
                self.close()
        elif self._plain_due(done, total):
            pct = int(100 * done / total) if total else 100
            self._line(f"{self.label}: {pct}% ({done:,}/{total:,} {self.unit}s)")


DOWN_EVERY_S = 10.0
"""Without a terminal, while the endpoint is down, a line this often (the wait goes on for minutes)."""


def down_status(p: EvalProgress) -> str:
    """``endpoint down, waiting (42 s)`` while the VLM endpoint is down, else nothing."""
    return "" if p.endpoint_down_s is None else f"endpoint down, waiting ({p.endpoint_down_s:.0f} s)"


def eval_status(p: EvalProgress) -> str:
    """An evaluation's running figures, as the bar's postfix and in every plain line."""
    acc = "-" if p.accuracy is None else f"{p.accuracy:.1%}"
    err = "-" if p.error_rate is None else f"{p.error_rate:.1%}"
    eta = "-" if p.eta_s is None else format_ts(p.eta_s, 0)
    down = down_status(p)
    return (
        f"{format_ts(time.monotonic() - p.started, 0)} elapsed | "
        + (f"{down} | " if down else "")
        + (f"{p.interrupted} interrupted | " if p.interrupted else "")
        + f"acc {acc} | errors {err} ({p.errors}) |"
        f" {p.parse_failures} parse fail | {p.tokens / 1e6:.2f}M tokens "
        f"| {p.cached} cached | ETA {eta}"
    )


class Ticker:
    """A daemon thread that calls ``tick`` once a second from :meth:`start` until :meth:`stop`.

    What a progress view uses to keep its promise while nothing it is told about happens.
    """

    def __init__(self, name: str, tick: Callable[[], None]) -> None:
        self._tick = tick
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(1.0):
            self._tick()

    def start(self) -> None:
        """Start ticking."""
        self._thread.start()

    def stop(self) -> None:
        """Stop ticking (waits a moment for a tick in progress)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=2)


class EvalProgressBar(_Reporter):
    """An evaluation's progress: a bar with accuracy, errors, tokens and ETA, or ``12/40 questions | acc ...`` lines.

    Used as a context manager it keeps its promise while questions are slow: the bar's elapsed time is
    redrawn every second, and without a terminal the last status is written again after
    :data:`PLAIN_EVERY_S` seconds without a line.
    """

    def __init__(self, stream: TextIO | None = None, quiet: bool = False) -> None:
        super().__init__(stream, quiet)
        self.last: EvalProgress | None = None
        self._lock = threading.Lock()
        self._ticker = Ticker("videoatlas-eval-progress", self._tick)

    def __enter__(self) -> Self:
        if not self.quiet:
            self._ticker.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._ticker.stop()
        super().__exit__(kind, exc, tb)

    def _tick(self) -> None:
        with self._lock:
            if self.last is None:
                return
            if self.tty:
                if self.bar is not None:
                    self.bar.set_postfix_str(eval_status(self.last), refresh=True)
            elif time.monotonic() - self.last_line >= PLAIN_EVERY_S:
                self._show(self.last)

    def __call__(self, p: EvalProgress) -> None:
        """Show ``p`` (called after every question)."""
        if self.quiet:
            return
        with self._lock:
            self.last = p
            self._show(p)

    def _show(self, p: EvalProgress) -> None:
        if self.tty:
            if self.bar is None:
                # The ETA is the runner's own (this invocation's pace), not tqdm's, which counts cached answers.
                fmt = "{l_bar}{bar}| {n_fmt}/{total_fmt} {postfix}"
                self.bar = _live_bar(self.stream, total=p.total, desc="eval", unit="question", bar_format=fmt)
            self.bar.set_postfix_str(eval_status(p), refresh=p.endpoint_down_s is not None)
            self.bar.update(p.done - self.bar.n)
            if p.done >= p.total:
                self.close()
        elif self._down_due(p) or self._plain_due(p.done, p.total):
            self._line(f"{p.done}/{p.total} questions | {eval_status(p)}")

    def _down_due(self, p: EvalProgress) -> bool:
        """Whether a plain line is due because the endpoint went down or stays down (one every few seconds)."""
        if p.endpoint_down_s is None:
            self.down_line = None
            return False
        now = time.monotonic()
        if self.down_line is not None and now - self.down_line < DOWN_EVERY_S:
            return False
        self.down_line = now
        return True
