"""What EEA's prompts show in words: spans, candidate segments with their scores, the queries, the rounds."""

from __future__ import annotations

from collections.abc import Sequence

from videoatlas.agents.eea.state import Remembered, Round, Segment
from videoatlas.environment.render import evidence_label
from videoatlas.environment.timefmt import format_ts

SYSTEM = "system"


def span(start: float, end: float) -> str:
    """A stretch of the video as clock times (the frames' labels use the same clock)."""
    return f"{format_ts(start, 1)}-{format_ts(end, 1)}"


def moments(times: Sequence[float]) -> str:
    """Moments as a comma-separated list of clock times."""
    return ", ".join(format_ts(t, 1) for t in times) if times else "(none)"


def children_block(children: Sequence[Segment]) -> str:
    """One line per child: its id and span."""
    return "\n".join(f"stretch {c.id}: {span(c.start, c.end)}" for c in children)


def history_block(rounds: Sequence[Round], segments: Sequence[Segment]) -> str:
    """The search so far, round by round: the stretch each round opened, then its stretches' scores and reasons.

    Append-only: a round's lines never change once written, so the prompts of later rounds start with the
    same text, which a server's prefix cache serves again.
    """
    by_id = {s.id: s for s in segments}
    scored: dict[int, list[Segment]] = {}
    for seg in segments:
        if seg.round > 0:
            scored.setdefault(seg.round, []).append(seg)
    lines: list[str] = []
    for r in rounds:
        if r.index not in scored:
            continue
        opened = by_id.get(r.segment)
        where = f" {span(opened.start, opened.end)}" if opened else ""
        lines.append(f"Round {r.index} opened stretch {r.segment}{where}:")
        lines.extend(
            f"stretch {seg.id}: {span(seg.start, seg.end)}, score {round(seg.reward * 100)}: {seg.explanation}"
            for seg in sorted(scored[r.index], key=lambda seg: seg.id)
        )
    return "\n".join(lines) or "(nothing yet: this is the first round)"


def candidates_block(candidates: Sequence[Segment]) -> str:
    """The stretches the selection may pick: span, fused score, explanation."""
    return "\n".join(
        f"stretch {s.id}: {span(s.start, s.end)}, score {s.fused:.2f}: {s.explanation}" for s in candidates
    )


def candidate_scores(candidates: Sequence[Segment]) -> str:
    """The stretches the selection may pick by id with their fused score, for a prompt that lists them already."""
    return ", ".join(f"{s.id} ({s.fused:.2f})" for s in candidates)


def opened_block(rounds: Sequence[Round], segments: Sequence[Segment]) -> str:
    """The stretches opened so far, in order."""
    by_id = {s.id: s for s in segments}
    opened = [by_id[r.segment] for r in rounds if r.segment in by_id]
    return "; ".join(f"stretch {s.id} {span(s.start, s.end)}" for s in opened) if opened else "(none)"


def memory_block(memory: Sequence[Remembered]) -> str:
    """The memory frames by label and time, as drawn on the pages shown."""
    if not memory:
        return "(none yet)"
    return ", ".join(f"[{evidence_label(i)}] {format_ts(m.time, 1)}" for i, m in enumerate(memory))


def queries_block(queries: Sequence[str]) -> str:
    """One query a line."""
    return "\n".join(f"- {q}" for q in queries) if queries else "(none)"


def rounds_block(rounds: Sequence[Round], segments: Sequence[Segment]) -> str:
    """How the search went, one line per round."""
    if not rounds:
        return "(no stretch was opened)"
    by_id = {s.id: s for s in segments}
    lines = []
    for r in rounds:
        seg = by_id.get(r.segment)
        where = span(seg.start, seg.end) if seg is not None else f"stretch {r.segment}"
        best = max((by_id[c] for c in r.children if c in by_id), key=lambda s: s.reward, default=None)
        top = f"; best child {span(best.start, best.end)} scored {round(best.reward * 100)}" if best else ""
        lines.append(f"round {r.index}: opened {where} with frames at {moments(r.frames)}{top}")
    return "\n".join(lines)
