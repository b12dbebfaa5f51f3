"""Long variants of a benchmark, as in the paper: each target video among distractors of the same benchmark.

The target goes to a random position among distractor videos until the whole lasts ``hours``.

Nothing is re-encoded: each variant video is a concatenation manifest
(:mod:`videoatlas.environment.concat`), its subtitles are every segment's cues shifted by the
segment's start and written as one SRT, and the ground-truth ranges move with the target. The new
questions go to ``items.jsonl``, read back with ``--dataset jsonl``.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import structlog

from videoatlas.environment.concat import write_manifest
from videoatlas.environment.subtitles import SubtitleLine, load_subtitles, write_srt
from videoatlas.environment.video import probe
from videoatlas.errors import BadInputError
from videoatlas.evals.items import EvalItem, write_items

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class SourceVideo:
    """A video of the benchmark, with its length and (optionally) its subtitles on its own clock."""

    video_id: str
    path: str
    duration: float
    subtitles: str | None
    subtitle_offset: float


@dataclass(frozen=True, slots=True)
class Layout:
    """One variant: the segments in order and where the target starts."""

    target: str
    order: list[str]
    target_offset: float
    total: float


def plan_layout(target: SourceVideo, pool: Sequence[SourceVideo], seconds: float, seed: int) -> Layout:
    """Distractors drawn at random (each at most once) up to ``seconds``, the target at a random place.

    Deterministic for a given seed and target.
    """
    others = [v for v in pool if v.video_id != target.video_id]
    salt = int(hashlib.sha256(f"{seed}:{target.video_id}".encode()).hexdigest()[:12], 16)
    rng = random.Random(salt)
    rng.shuffle(others)
    chosen: list[SourceVideo] = []
    total = target.duration
    for video in others:
        if total >= seconds:
            break
        chosen.append(video)
        total += video.duration
    if total < seconds:
        raise BadInputError(
            f"the benchmark's videos last {total / 3600:.1f} h in all, less than the {seconds / 3600:g} h asked for"
        )
    position = rng.randint(0, len(chosen))
    order = [v.video_id for v in chosen[:position]] + [target.video_id] + [v.video_id for v in chosen[position:]]
    offset = sum(v.duration for v in chosen[:position])
    return Layout(target.video_id, order, offset, total)


def _sources(items: Sequence[EvalItem]) -> dict[str, SourceVideo]:
    videos: dict[str, SourceVideo] = {}
    for item in items:
        if item.video_id in videos:
            continue
        if not Path(item.video).is_file():
            raise BadInputError(f"video of {item.id} is missing: {item.video}")
        videos[item.video_id] = SourceVideo(
            item.video_id, item.video, probe(item.video).duration, item.subtitles, item.subtitle_offset
        )
    return videos


def build_long_variants(
    items: Sequence[EvalItem], out: str | Path, hours: float = 10.0, seed: int = 0
) -> tuple[Path, list[EvalItem]]:
    """Write a manifest and subtitles per target video and ``items.jsonl``; returns its path and items."""
    if hours <= 0:
        raise BadInputError("--hours must be positive")
    folder = Path(out).expanduser()
    videos = _sources(items)
    pool = list(videos.values())
    layouts: dict[str, Layout] = {}
    new_items: list[EvalItem] = []
    for item in items:
        target = videos[item.video_id]
        layout = layouts.get(item.video_id)
        if layout is None:
            layout = layouts[item.video_id] = plan_layout(target, pool, hours * 3600, seed)
            _write_variant(folder, layout, videos)
            log.info("variant written", video=item.video_id, segments=len(layout.order), offset=layout.target_offset)
        subs = folder / "subtitles" / f"{item.video_id}.srt"
        new_items.append(
            replace(
                item,
                dataset=f"{item.dataset}-{hours:g}h",
                video=f"videos/{item.video_id}.concat.json",
                subtitles=f"subtitles/{item.video_id}.srt" if subs.is_file() else None,
                subtitle_offset=0.0,
                duration=layout.total,
                evidence=[[s + layout.target_offset, e + layout.target_offset] for s, e in item.evidence],
                groups={**item.groups, "variant": f"{hours:g}h"},
            )
        )
    return write_items(folder / "items.jsonl", new_items), new_items


def _write_variant(folder: Path, layout: Layout, videos: dict[str, SourceVideo]) -> None:
    write_manifest(folder / "videos" / f"{layout.target}.concat.json", [videos[v].path for v in layout.order])
    cues: list[SubtitleLine] = []
    offset = 0.0
    for vid in layout.order:
        video = videos[vid]
        if video.subtitles and Path(video.subtitles).is_file():
            subs = load_subtitles(video.subtitles, video.subtitle_offset + offset, video.duration)
            for ln in subs.lines:
                # Cues outside their own clip (LongVideoBench clips of a longer upload) are dropped.
                if ln.end > offset and ln.start < offset + video.duration:
                    cues.append(SubtitleLine(max(ln.start, offset), min(ln.end, offset + video.duration), ln.text))
        offset += video.duration
    if cues:
        (folder / "subtitles").mkdir(parents=True, exist_ok=True)
        write_srt(folder / "subtitles" / f"{layout.target}.srt", cues)
