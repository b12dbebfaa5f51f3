"""The pre-flight of an eval: whether every question, video and subtitle file is there and readable.

``videoatlas eval check`` prints it (``eval run`` too, before it starts): a long eval should not
learn at question 900 that a video is missing. Videos are probed, not decoded, so it stays fast,
and a generated suite's videos not made yet are named with their length, not made: ``eval run``
makes them (those its selected questions need) before it starts.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from videoatlas.environment.concat import media_duration
from videoatlas.environment.subtitles import load_subtitles
from videoatlas.environment.timefmt import format_ts
from videoatlas.errors import VideoAtlasError
from videoatlas.evals.datasets import Loaded, Skipped, VideoToMake, get_adapter

SHOWN = 10
"""Problems of one kind listed by name in the table (all of them in ``--json``)."""


@dataclass(slots=True)
class CheckReport:
    """What an eval of these questions would meet."""

    dataset: str
    root: str
    subset: list[str] | None
    questions: int
    videos: int
    missing_videos: list[str] = field(default_factory=list)
    unreadable_videos: list[tuple[str, str]] = field(default_factory=list)
    """(path, why) of files that exist but cannot be opened as video."""
    missing_subtitles: list[str] = field(default_factory=list)
    unreadable_subtitles: list[tuple[str, str]] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    generated: bool = False
    """A suite made under ``--root`` (synthetic), not read from it."""
    to_make: list[VideoToMake] = field(default_factory=list)
    """Its videos that ``eval run`` would make first (not made yet, or left half made): none is missing."""

    @property
    def to_make_s(self) -> float:
        """How long the videos to make are, together, in seconds."""
        return sum(v.duration for v in self.to_make)

    @property
    def malformed(self) -> list[Skipped]:
        """Skipped records that are broken (not those the benchmark leaves out by design)."""
        return [s for s in self.skipped if s.malformed]

    @property
    def ok(self) -> bool:
        """Whether every question would run: nothing missing, unreadable or malformed."""
        return not (
            self.missing_videos
            or self.unreadable_videos
            or self.missing_subtitles
            or self.unreadable_subtitles
            or self.malformed
        )

    def as_dict(self) -> dict[str, Any]:
        """Plain data (``--json``)."""
        return {
            "dataset": self.dataset,
            "root": self.root,
            "subset": self.subset,
            "ok": self.ok,
            "questions": self.questions,
            "videos": self.videos,
            "to_make": [v.as_dict() for v in self.to_make],
            "to_make_s": self.to_make_s,
            "missing_videos": self.missing_videos,
            "unreadable_videos": [{"path": p, "reason": r} for p, r in self.unreadable_videos],
            "missing_subtitles": self.missing_subtitles,
            "unreadable_subtitles": [{"path": p, "reason": r} for p, r in self.unreadable_subtitles],
            "skipped": len(self.skipped),
            "skipped_by_reason": skipped_by_reason(self.skipped),
            "malformed": [s.as_dict() for s in self.malformed],
        }


def skipped_by_reason(skipped: Sequence[Skipped]) -> dict[str, int]:
    """How many records were skipped for each reason a benchmark gives (malformed ones: 'malformed')."""
    return dict(Counter("malformed" if s.malformed else s.reason for s in skipped))


def check_loaded(dataset: str, root: str, subset: list[str] | None, loaded: Loaded) -> CheckReport:
    """Probe every video and read every subtitle file the loaded questions name, but those still to be made."""
    items = loaded.items
    rep = CheckReport(
        dataset,
        root,
        subset,
        len(items),
        len({i.video for i in items}),
        skipped=list(loaded.skipped),
        generated=get_adapter(dataset).generated,
        to_make=list(loaded.to_make),
    )
    unmade = {v.video for v in loaded.to_make}  # their files (and subtitles) come when they are made
    items = [i for i in items if i.video not in unmade]
    for video in sorted({i.video for i in items}):
        if not Path(video).is_file():
            rep.missing_videos.append(video)
            continue
        try:
            media_duration(video)
        except VideoAtlasError as exc:
            rep.unreadable_videos.append((video, str(exc)))
    for subtitles, offset in sorted({(i.subtitles, i.subtitle_offset) for i in items if i.subtitles}):
        if not Path(subtitles).is_file():
            rep.missing_subtitles.append(subtitles)
            continue
        try:
            load_subtitles(subtitles, offset)
        except VideoAtlasError as exc:
            rep.unreadable_subtitles.append((subtitles, str(exc)))
    rep.missing_subtitles = sorted(set(rep.missing_subtitles))
    return rep


def _listed(title: str, entries: Sequence[str], note: str = "") -> list[str]:
    if not entries:
        return []
    more = [f"  ... and {len(entries) - SHOWN} more (all of them with --json)"] if len(entries) > SHOWN else []
    return [f"{title} ({len(entries)}{note}):", *(f"  {e}" for e in entries[:SHOWN]), *more]


def render_check(rep: CheckReport) -> str:
    """The pre-flight for people: a count table, then each problem by name."""
    subset = f" subset {','.join(rep.subset)}" if rep.subset else ""
    rows = [
        ("questions", rep.questions),
        ("videos", rep.videos),
        *((("videos to make (by eval run)", len(rep.to_make)),) if rep.generated else ()),
        ("missing videos", len(rep.missing_videos)),
        ("undecodable or unreadable videos", len(rep.unreadable_videos)),
        ("missing subtitle files", len(rep.missing_subtitles)),
        ("unreadable subtitle files", len(rep.unreadable_subtitles)),
        ("malformed records (skipped)", len(rep.malformed)),
        *((f"skipped: {reason}", n) for reason, n in skipped_by_reason(rep.skipped).items() if reason != "malformed"),
    ]
    width = max(len(name) for name, _ in rows)
    lines = [f"{rep.dataset}{subset} under {rep.root}:"]
    lines += [f"  {name:<{width}}  {n:>6}" for name, n in rows]
    made = [f"{v.label} ({format_ts(v.duration, 0)}): {v.video}" for v in rep.to_make]
    lines += _listed("videos to make", made, f", {format_ts(rep.to_make_s, 0)} of video in all")
    lines += _listed("missing videos", rep.missing_videos)
    lines += _listed("undecodable or unreadable videos", [f"{p}: {r}" for p, r in rep.unreadable_videos])
    lines += _listed("missing subtitle files", rep.missing_subtitles)
    lines += _listed("unreadable subtitle files", [f"{p}: {r}" for p, r in rep.unreadable_subtitles])
    lines += _listed("malformed records", [f"{s.file} record {s.record}: {s.reason}" for s in rep.malformed])
    if not rep.ok:
        lines.append("problems found: the questions above would fail or are left out")
    elif rep.to_make:
        lines.append(f"ready to run; eval run makes the {len(rep.to_make)} video(s) above first")
    else:
        lines.append("ready to run")
    return "\n".join(lines) + "\n"
