"""What VideoSeek's prompts show: the trajectory so far, subtitles within a budget, the evidence flagged."""

from __future__ import annotations

from collections.abc import Sequence

from videoatlas.agents.videoseek.state import Turn
from videoatlas.environment.geometry import Interval
from videoatlas.environment.render import evidence_label
from videoatlas.environment.subtitles import SubtitleLine, Subtitles, fitting_lines
from videoatlas.environment.timefmt import format_moment, format_ts
from videoatlas.state.models import Evidence

PLANNER_SYSTEM = "planner.system"
TOOL_SYSTEM = "tool.system"


def turn_header(turn: Turn) -> str:
    """One line naming a turn's tool call as it was carried out."""
    if turn.tool == "overview":
        return f"Turn {turn.index}: overview of the whole video ({len(turn.frames)} frames)"
    span = f"{turn.start or 0.0:.1f}-{turn.end or 0.0:.1f} s"
    return f'Turn {turn.index}: {turn.tool} {span} for "{turn.query}" ({len(turn.frames)} frames)'


def history(turns: Sequence[Turn]) -> str:
    """The trajectory as the planner reads it: each turn's call, then the tool's report, indented."""
    if not turns:
        return "(nothing yet: no tool has been called)"
    blocks = []
    for turn in turns:
        report = "\n".join(f"  {line}" for line in turn.observation.splitlines() if line.strip())
        blocks.append(f"{turn_header(turn)}\n{report}" if report else turn_header(turn))
    return "\n".join(blocks)


def subtitles_text(subtitles: Subtitles | None, max_chars: int, about: str, span: Interval | None = None) -> str:
    """Timed subtitle lines (of ``span``, or the whole track); those bearing most on ``about`` when not all fit.

    ``about`` is what the reader is after (the question and its choices, or a tool's query): see
    :func:`videoatlas.environment.subtitles.fitting_lines`.
    """
    if subtitles is None:
        return "(none)"
    lines = subtitles.overlapping(span) if span is not None else list(subtitles.lines)
    if not lines:
        return "(none)"

    def rendered(ln: SubtitleLine) -> str:
        return f"[{format_ts(ln.start, 1)}-{format_ts(ln.end, 1)}] {ln.text}"

    kept = fitting_lines(lines, about, max_chars, lambda ln: len(rendered(ln)) + 1)
    out = [rendered(ln) for ln in kept]
    if len(kept) < len(lines):
        out.append(f"({len(lines) - len(kept)} more lines not shown: they share fewer words with what is asked)")
    return "\n".join(out)


def evidence_block(evidence: Sequence[Evidence]) -> str:
    """One line per flagged frame: label, time, which turn flagged it, what was said of it."""
    if not evidence:
        return "(none: no tool flagged a frame)"
    return "\n".join(
        f"[{evidence_label(i)}] {format_moment(e.time)}, turn {e.round}: {e.description}"
        for i, e in enumerate(evidence)
    )
