"""A run as people follow it: a progress line per event, the way back when it is interrupted, the result.

Shared by ``ask``, ``resume`` and ``demo``. Lines are escaped: they carry the question and model text.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from typing import TYPE_CHECKING, Any

from videoatlas.cli.outputs import command_name
from videoatlas.cli.outputs import write_line as _out
from videoatlas.cli.progress import QUIET_AT_MOST_S, Ticker
from videoatlas.cli.signals import Interrupted
from videoatlas.environment.timefmt import format_ts
from videoatlas.errors import OutageError
from videoatlas.textsafe import cut, escape, one_line

if TYPE_CHECKING:
    from videoatlas.runs import RunResult


def call_label(event: dict[str, Any]) -> str:
    """``the worker call (worker r1w2, round 1, step 3)``: a model call as a status line names it."""
    shown = {**event, "step": event["step"] + 1} if isinstance(event.get("step"), int) else event  # counted from 0
    where = ", ".join(f"{key} {shown[key]}" for key in ("worker", "round", "step") if shown.get(key) is not None)
    return f"the {event.get('node') or 'model'} call" + (f" ({where})" if where else "")


def describe_event(event: dict[str, Any]) -> str | None:
    """One progress line for a streamed event (None: not worth a line); the agent that sent it words its own."""
    if event.get("event") == "run_started":
        return f"run id: {event['run_id']}" + (" (resumed)" if event.get("resumed") else "")
    from videoatlas.agents.registry import describe_event as agent_line

    return agent_line(event)


class RunProgress:
    """Progress lines on stderr (escaped: they carry model text); remembers the run's id for an interruption.

    While the run is quiet (a long model call, a slow endpoint), a status line at least every
    :data:`~videoatlas.cli.progress.QUIET_AT_MOST_S` seconds: elapsed time, calls and tokens so far, the
    calls that are out and for how long, and the last thing the agent said it did. Use it as a context
    manager: the status lines stop when the run does. ``db``: the ``--db`` the command was given,
    repeated in the resume command it prints. ``standin``: the run is answered by the stand-in, which
    reads every image's text on this machine's CPU (said once when a call takes long).
    """

    def __init__(self, quiet: bool, db: str | None = None, stream: bool = False, standin: bool = False) -> None:
        self.quiet = quiet
        self.db = db
        self.stream = stream
        """Also print every event as a JSON line on stdout (``ask --stream-json``)."""
        self.standin = standin
        self.run_id: str | None = None
        self.began = time.monotonic()
        self.last_line = self.began
        self.calls = 0
        self.tokens = 0
        self.out: dict[Any, tuple[str, float]] = {}
        """The model calls that are out: (what the call is, when it was sent)."""
        self.doing = ""
        """The last progress line shown (what the agent last said it did)."""
        self.standin_said = False
        self._lock = threading.Lock()
        self._ticker = Ticker("videoatlas-progress", self._tick)

    def __enter__(self) -> RunProgress:
        if not self.quiet:
            self._ticker.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._ticker.stop()

    def __call__(self, event: dict[str, Any]) -> None:
        """Show ``event`` (when it is worth a line), and keep count of the calls for the status lines."""
        kind = event.get("event")
        if kind == "run_started":
            self.run_id = str(event["run_id"])
        with self._lock:
            if kind == "call_started":
                self.out[event["call"]] = (call_label(event), time.monotonic())
            elif kind == "call_finished":
                self.out.pop(event["call"], None)
                self.calls += 1
                self.tokens += int(event.get("tokens") or 0)
        if self.stream:
            sys.stdout.write(json.dumps(event, default=str) + "\n")
            sys.stdout.flush()
        line = describe_event(event)
        if line and not self.quiet:
            self._write(escape(line))
            self.doing = line.strip()

    def _write(self, line: str) -> None:
        with self._lock:
            sys.stderr.write(line + "\n")
            sys.stderr.flush()
            self.last_line = time.monotonic()

    def _tick(self) -> None:
        # From the run's start: before it, a refusal (a bad input, an endpoint that never answers) is
        # one line, and the steps before it are checks and start-ups that take seconds.
        if self.run_id is not None and time.monotonic() - self.last_line >= QUIET_AT_MOST_S:
            self._write(self.status())

    def status(self) -> str:
        """``[01:12] 7 calls, 45,210 tokens; waiting 14 s on the worker call (worker r1w2, step 3); last: ...``."""
        now = time.monotonic()
        with self._lock:
            out = sorted(self.out.values(), key=lambda o: o[1])
            parts: list[str] = []
            parts.append(f"{self.calls} call(s), {self.tokens:,} tokens so far")
            if len(out) == 1:
                label, since = out[0]
                parts.append(f"waiting {now - since:.0f} s on {label}")
            elif out:
                parts.append(
                    f"waiting on {len(out)} calls ({'; '.join(label for label, _ in out[:4])}"
                    f"{'; ...' if len(out) > 4 else ''}), the longest for {now - out[0][1]:.0f} s"
                )
            if out and self.standin and not self.standin_said and now - out[0][1] >= QUIET_AT_MOST_S:
                self.standin_said = True
                parts.append("the stand-in reads the text of every image it is sent on this machine's CPU")
            if self.doing:
                parts.append(f"last: {cut(one_line(self.doing), 90)}")
        return escape(f"[{format_ts(now - self.began, 0)}] " + "; ".join(parts))

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
    from videoatlas.state.models import prefill_text, roles_text
    from videoatlas.state.run import probability_note, support_note

    note = support_note(bool(result.answer), len(result.cited), len(result.evidence))
    unsupported = f" ({note})" if note else ""
    _out(f"answer: {answer_text(result)}{unsupported}")
    if sure := probability_note(result.probabilities, result.confidence):
        _out(f"confidence: {sure} (the server's probabilities at the answer)")
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
    _out(f"prefill: {prefill_text(c.summary())}")
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
