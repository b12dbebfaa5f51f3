"""structlog configuration: a readable console view on stderr, or JSON lines for machines.

Logs never go to stdout, which belongs to a command's output (and to the program that imports us).
structlog's own default prints every level to stdout, so an application that has not configured
structlog gets ours instead: warnings and errors on stderr (:func:`library_defaults`, applied when
this module is first imported, which every run does, and by the package's public entry points).
An application that configures structlog itself, before or after, keeps its own configuration.
"""

from __future__ import annotations

import contextlib
import json
import logging
import sys
import threading
from collections.abc import Iterator, MutableMapping
from pathlib import Path
from typing import Any, TextIO

import structlog


class _RunFile:
    """A run's log file, created with its first line: a run that logged nothing leaves no file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.handle: TextIO | None = None

    def write(self, line: str) -> None:
        if self.handle is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.handle = self.path.open("a", encoding="utf-8")
        self.handle.write(line)
        self.handle.flush()

    def close(self) -> None:
        if self.handle is not None:
            self.handle.close()


_run_files: dict[str, _RunFile] = {}
_run_files_lock = threading.Lock()


def _tee_to_run_file(_logger: Any, _method: str, event_dict: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """Append every event bound to a run id to that run's JSON-lines file (see :func:`run_log`)."""
    run_id = event_dict.get("run_id")
    if run_id is not None:
        with _run_files_lock:
            handle = _run_files.get(run_id)
            if handle is not None:
                handle.write(json.dumps(event_dict, default=str) + "\n")
    return event_dict


@contextlib.contextmanager
def run_log(run_id: str) -> Iterator[Path]:
    """While open, log events of ``run_id`` also go to ``$VIDEOATLAS_HOME/logs/<run>.jsonl``.

    The file is made with the run's first logged line (at the configured level): a run that logged
    nothing leaves none.
    """
    from videoatlas.paths import home_dir

    run_file = _RunFile(home_dir() / "logs" / f"{run_id}.jsonl")
    with _run_files_lock:
        _run_files[run_id] = run_file
    try:
        yield run_file.path
    finally:
        with _run_files_lock:
            _run_files.pop(run_id, None)
        run_file.close()


class _StderrLogger:
    """Writes each line to whatever ``sys.stderr`` is at the time (a stream bound once may be closed later)."""

    def msg(self, message: str) -> None:
        """Write one rendered line."""
        sys.stderr.write(message + "\n")
        sys.stderr.flush()

    log = debug = info = warn = warning = error = critical = exception = fatal = msg


def _stderr_logger(*_args: Any) -> _StderrLogger:
    return _StderrLogger()


def _escape_for_terminal(_logger: Any, _method: str, event_dict: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """Console view only: control characters in logged text (model replies, questions) shown escaped."""
    from videoatlas.textsafe import escape

    for key, value in event_dict.items():
        if isinstance(value, str):
            event_dict[key] = escape(value)
    return event_dict


def configure_logging(level: str = "warning", json_lines: bool = False) -> None:
    """Route structlog to stderr at ``level``; ``json_lines`` switches to one JSON object per line."""
    numeric = logging.getLevelName(level.upper())
    if not isinstance(numeric, int):
        numeric = logging.WARNING
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer() if json_lines else structlog.dev.ConsoleRenderer(colors=False)
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            _tee_to_run_file,
            *([] if json_lines else [_escape_for_terminal]),
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=_stderr_logger,
        cache_logger_on_first_use=False,
    )


def library_defaults() -> None:
    """Route structlog to stderr at warning level, unless the application has configured it already."""
    if not structlog.is_configured():
        configure_logging()


library_defaults()
