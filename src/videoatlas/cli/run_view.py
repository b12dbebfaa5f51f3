"""A run as people follow it: a progress line per event, the way back when it is interrupted, the result.

Shared by ``ask``, ``resume`` and ``demo``. Lines are escaped: they carry the question and model text.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

from videoatlas.cli.outputs import command_name
from videoatlas.cli.outputs import write_line as _out
from videoatlas.cli.signals import Interrupted
from videoatlas.environment.timefmt import format_ts
from videoatlas.errors import OutageError
from videoatlas.textsafe import escape, one_line

if TYPE_CHECKING:
    from videoatlas.runs import RunResult


def describe_event(event: dict[str, Any]) -> str | None:
    """One progress line for a streamed event (None: not worth a line); the agent that sent it words its own."""
    if event.get("event") == "run_started":
        return f"run id: {event['run_id']}" + (" (resumed)" if event.get("resumed") else "")
    from videoatlas.agents.registry import describe_event as agent_line

    return agent_line(event)


class RunProgress:
    """Progress lines on stderr (escaped: they carry model text); remembers the run's id for an interruption.

    ``db``: the ``--db`` the command was given, repeated in the resume command it prints.
    """

    def __init__(self, quiet: bool, db: str | None = None, stream: bool = False) -> None:
        self.quiet = quiet
        self.db = db
        self.stream = stream
        """Also print every event as a JSON line on stdout (``ask --stream-json``)."""
        self.run_id: str | None = None

    def __call__(self, event: dict[str, Any]) -> None:
        """Show ``event`` (when it is worth a line)."""
        if event.get("event") == "run_started":
            self.run_id = str(event["run_id"])
        if self.stream:
            sys.stdout.write(json.dumps(event, default=str) + "\n")
            sys.stdout.flush()
        line = describe_event(event)
        if line and not self.quiet:
            sys.stderr.write(escape(line) + "\n")
            sys.stderr.flush()

    def stopped(self, exc: Interrupted) -> Interrupted:
        """``exc`` with the way back: the run is interrupted and resumable."""
        hint = self.resume_hint()
        if hint:
            exc.hint = hint
        return exc

    def outage(self, exc: OutageError) -> OutageError:
        """An outage's error (the endpoint or the database gone past the patience), with the way back."""
        hint = self.resume_hint()
        return type(exc)(f"{exc}; {hint}") if hint else exc

    def resume_hint(self) -> str:
        """``run R is interrupted; resume it with: videoatlas resume R`` (empty before the run started)."""
        if self.run_id is None:
            return ""
        import shlex

        where = f" --db {shlex.quote(self.db)}" if self.db else ""
        return f"run {self.run_id} is interrupted; resume it with: {command_name()} resume {self.run_id}{where}"


DECLINED = "no answer found (the model declined)"
"""The answer line of a run whose final decision found no answer to its open question."""


def answer_text(result: RunResult) -> str:
    """The answer as people read it: the choice with its letter, the value, or why there is none."""
    if result.declined:
        return DECLINED
    if result.answer_index is not None:
        return f"{chr(ord('A') + result.answer_index)}. {result.answer}"
    return result.answer or "(none)"


def print_result(result: RunResult) -> None:
    """The answer, the evidence with timestamps, and the cost, for people."""
    from videoatlas.environment.render import evidence_label
    from videoatlas.state.models import roles_text

    unsupported = "" if result.grounded or not result.answer else " (answered without evidence: no evidence cited)"
    _out(f"answer: {answer_text(result)}{unsupported}")
    if result.reasoning:
        _out(f"reasoning: {result.reasoning}")
    _out(f"evidence ({len(result.evidence)}):")
    for i, e in enumerate(result.evidence):
        cited = " *" if e.id in result.cited else ""
        where = e.place or f"{format_ts(e.start)}-{format_ts(e.end)}"
        _out(
            f"  [{evidence_label(i)}] {format_ts(e.time, 1)} ({where}, conf {e.confidence:.2f}){cited}: {e.description}"
        )
    c = result.cost
    roles = f"; tokens by role: {roles_text(c.tokens_by_role)}" if c.tokens_by_role else ""
    _out(
        f"cost: {c.calls} calls, {c.tokens:,} tokens ({c.prompt_tokens:,} prompt, {c.cached_tokens:,} cached = "
        f"{result.cache_hit_rate:.0%}{roles}), "
        f"{c.frames_viewed:,} distinct frames viewed ({c.frames_sent:,} sent), "
        f"{result.rounds} round(s), {result.wall_s:.1f} s"
    )
    if c.transcriptions or c.audio_s:
        _out(
            f"speech: {c.audio_s:,.1f} s of audio transcribed in {c.transcriptions} request(s), {c.transcribe_s:.1f} s"
        )
    for key, value in result.extras.items():  # what this agent reports beyond every agent's figures
        if value not in ("", None, 0, 0.0, [], {}):
            _out(f"{key.replace('_', ' ')}: {one_line(value) if isinstance(value, str) else value}")
    repairs = result.state.get("repairs", [])
    fallbacks = [r for r in repairs if r.kind == "fallback"]
    if repairs:
        _out(
            f"repairs: {len(repairs)} reply(ies) used in part or not at all ({len(fallbacks)} fallback(s)); "
            f"see `{command_name()} trace {result.run_id}`"
        )
    _out(f"stopped: {result.stop_reason}; run id {result.run_id}")
