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


def quoted_lines(
    subtitles: Subtitles | None,
    max_chars: int,
    about: str,
    span: Interval | None = None,
    labels_from: int | None = None,
) -> tuple[list[SubtitleLine], int]:
    """The subtitle lines a prompt quotes (of ``span``, or the whole track) and how many it leaves out.

    Those bearing most on ``about`` are kept when not all fit in ``max_chars``: see
    :func:`videoatlas.environment.subtitles.fitting_lines`. ``labels_from``: the lines are quoted with
    evidence labels from that index on, and the room the labels take counts against the budget.
    """
    if subtitles is None:
        return [], 0
    lines = subtitles.overlapping(span) if span is not None else list(subtitles.lines)
    label_room = 0 if labels_from is None else len(f"[{evidence_label(labels_from + len(lines))}] ")
    kept = fitting_lines(lines, about, max_chars, lambda ln: len(said_line(ln)) + 1 + label_room)
    return kept, len(lines) - len(kept)


def said_line(line: SubtitleLine, label: str | None = None) -> str:
    """A quoted line with its times, after its evidence label when it has one."""
    text = f"[{format_ts(line.start, 1)}-{format_ts(line.end, 1)}] {line.text}"
    return f"[{label}] {text}" if label else text


def subtitles_text(subtitles: Subtitles | None, max_chars: int, about: str, span: Interval | None = None) -> str:
    """Timed subtitle lines (of ``span``, or the whole track); those bearing most on ``about`` when not all fit.

    ``about`` is what the reader is after (the question and its choices, or a tool's query).
    """
    return lines_text(*quoted_lines(subtitles, max_chars, about, span))


def lines_text(lines: Sequence[SubtitleLine], left: int, labels_from: int | None = None) -> str:
    """Quoted lines one a row, then how many were left out; ``labels_from``: labelled as evidence from that index.

    The final answer's lines follow its flagged frames' labels, so an answer resting on what is said can cite it.
    """
    if not lines:
        return "(none)"
    out = [
        said_line(ln, None if labels_from is None else evidence_label(labels_from + i)) for i, ln in enumerate(lines)
    ]
    if left:
        out.append(f"({left} more lines not shown: they share fewer words with what is asked)")
    return "\n".join(out)


def evidence_block(evidence: Sequence[Evidence]) -> str:
    """One line per flagged frame: label, time, which turn flagged it, what was said of it."""
    if not evidence:
        return "(none: no tool flagged a frame)"
    return "\n".join(
        f"[{evidence_label(i)}] {format_moment(e.time)}, turn {e.where.get('turn', 0)}: {e.description}"
        for i, e in enumerate(evidence)
    )
