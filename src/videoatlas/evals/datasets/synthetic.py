"""The synthetic long-video suite: videos of 1 min, 10 min, 1 h, 3 h and 10 h with every question kind.

Each length comes in both styles: ``chapters`` (the style the stand-in and agent were developed on)
and ``broadcast`` (a different look, layout, vocabulary and wording, for the same four question
kinds), so accuracy per kind can be compared on video the system was not built for. Items are
grouped by ``duration`` and ``style``.

A video's questions are planned from its spec alone (:func:`~videoatlas.synth.planned_questions`),
so the suite's items exist before any video does; :func:`make_videos` then draws, under ``--root``
(``synth-{seconds}s-seed{seed}/``, and ``synth-{seconds}s-seed{seed}-broadcast/``), only the
videos the selected questions are about, once, reused after; :func:`videos_to_make` names them
without drawing any (``eval check``). The 10-hour ones take about two and about five minutes on
two cores. Ground-truth evidence ranges come with every question, so temporal grounding is scored
too.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import structlog

from videoatlas.environment.timefmt import format_ts
from videoatlas.evals.datasets._common import Loaded, VideoToMake
from videoatlas.evals.datasets.adapter import Adapter, SuiteOptions
from videoatlas.evals.datasets.adapter import MakingProgress as MakingProgress  # callers import it from here
from videoatlas.evals.items import EvalItem
from videoatlas.synth import (
    Progress,
    Style,
    SynthSpec,
    default_fps,
    load_current,
    planned_questions,
    synthesize,
)
from videoatlas.synth.encode import frame_count

NAME = "synthetic"
DEFAULT_DURATIONS = (60.0, 600.0, 3600.0, 3 * 3600.0, 10 * 3600.0)
DEFAULT_STYLES: tuple[Style, ...] = ("chapters", "broadcast")
"""The styles a suite has unless ``--styles`` says otherwise (``signage``, the suite of kinds, is asked for by name)."""
KINDS = (
    "needle",
    "needle_in_chapter",
    "count",
    "count_open",
    "counting",
    "order",
    "first_last",
    "right_after",
    "after_anchor",
    "open_value",
)
"""The question kinds the suite's styles ask, as its items carry them in ``categories`` (``--subset``'s names)."""
log = structlog.get_logger(__name__)


def duration_label(seconds: float) -> str:
    """``600`` -> ``"10min"``, ``36000`` -> ``"10h"`` (the report's duration axis)."""
    if seconds >= 3600 and seconds % 3600 == 0:
        return f"{int(seconds // 3600)}h"
    if seconds >= 60 and seconds % 60 == 0:
        return f"{int(seconds // 60)}min"
    return f"{seconds:g}s"


def video_folder(root: Path, duration: float, seed: int, style: Style = "chapters") -> Path:
    """Where the suite keeps a video (the chapters style keeps its original, suffix-free name)."""
    suffix = "" if style == "chapters" else f"-{style}"
    return root / f"synth-{duration:g}s-seed{seed}{suffix}"


def suite_spec(duration: float, seed: int, style: Style = "chapters") -> SynthSpec:
    """The spec of the suite's video of this length and style (SynthSpec refuses bad lengths and styles)."""
    return SynthSpec(duration=duration, seed=seed, fps=default_fps(duration), style=style)


def ensure_video(
    root: Path, duration: float, seed: int, style: Style = "chapters", progress: Progress | None = None
) -> tuple[Path, dict[str, Any]]:
    """The suite's video of this length and style, made if missing; returns its folder and ground truth.

    ``progress`` hears ``(frames done, frames)`` while a video is drawn, ``(0, frames)`` first.
    """
    folder = video_folder(root, duration, seed, style)
    truth = load_current(folder, style=style)
    if truth is None:
        spec = suite_spec(duration, seed, style)
        began = time.perf_counter()
        log.info("making synthetic video (once)", duration=format_ts(duration, 0), style=style, folder=str(folder))
        if progress is not None:
            progress(0, frame_count(spec))
        truth = synthesize(spec, folder, progress=progress)
        log.info("synthetic video made", seconds=round(time.perf_counter() - began, 1))
    return folder, truth


def _unmade(root: Path, items: Sequence[EvalItem], seed: int) -> list[tuple[float, Style]]:
    """The length and style of each video ``items`` are about that is not made yet or was left half made, once each.

    A video counts as made once its ground truth is there and current (it is written last): a video file
    without it, or one drawn by an older version, is made again.
    """
    wanted: dict[str, tuple[float, Style]] = {}
    for item in items:  # the suite's own items: each has its video's length and style
        wanted.setdefault(item.video_id, (float(item.duration or 0.0), cast(Style, item.groups["style"])))
    return [(d, s) for d, s in wanted.values() if load_current(video_folder(root, d, seed, s), style=s) is None]


def _label(duration: float, style: Style) -> str:
    return f"synthetic {duration_label(duration)} {style}"


def videos_to_make(root: Path, items: Sequence[EvalItem], seed: int) -> list[VideoToMake]:
    """The videos :func:`make_videos` would draw for ``items``, in their order; nothing is drawn here."""
    return [
        VideoToMake(_label(duration, style), str(video_folder(root, duration, seed, style) / "video.mp4"), duration)
        for duration, style in _unmade(root, items, seed)
    ]


def make_videos(root: Path, items: Sequence[EvalItem], seed: int, making: MakingProgress | None = None) -> None:
    """Draw the suite's videos that ``items`` are about and that are not drawn yet, each under its own progress."""
    for duration, style in _unmade(root, items, seed):
        if making is None:
            ensure_video(root, duration, seed, style)
            continue
        with making(_label(duration, style)) as progress:
            ensure_video(root, duration, seed, style, progress)


def load(
    root: Path,
    durations: Sequence[float] = DEFAULT_DURATIONS,
    seed: int = 1,
    styles: Sequence[Style] = DEFAULT_STYLES,
) -> list[EvalItem]:
    """Every question of every video of the suite (each duration in each style), planned: no video is drawn here."""
    items = []
    for duration, style in itertools.product(durations, styles):
        spec = suite_spec(duration, seed, style)
        folder = video_folder(root, duration, seed, style)
        label = duration_label(duration)
        video_id = folder.name
        for q in planned_questions(spec):
            items.append(
                EvalItem(
                    dataset=NAME,
                    id=f"{video_id}/{q['id']}",
                    video_id=video_id,
                    video=str(folder / "video.mp4"),
                    question=q["question"],
                    choices=list(q["choices"]),
                    answer_index=None if q["answer_index"] is None else int(q["answer_index"]),
                    answer_text=q.get("answer_text"),
                    categories=[q["kind"]],
                    groups={"duration": label, "style": style},
                    duration=spec.duration,
                    subtitles=str(folder / "video.srt") if spec.subtitles else None,
                    evidence=[list(map(float, r)) for r in q["evidence"]],
                )
            )
    return items


def _plan(root: Path, options: SuiteOptions) -> Loaded:
    durations, styles = options.durations or DEFAULT_DURATIONS, options.styles or DEFAULT_STYLES
    return Loaded(load(root, durations, options.seed, styles))


def _make(root: Path, items: Sequence[EvalItem], options: SuiteOptions, making: MakingProgress | None) -> None:
    make_videos(root, items, options.seed, making)


def _to_make(root: Path, items: Sequence[EvalItem], options: SuiteOptions) -> list[VideoToMake]:
    return videos_to_make(root, items, options.seed)


ADAPTER = Adapter(NAME, _plan, subsets=KINDS, generated=True, make_videos=_make, to_make=_to_make)
"""``--subset`` takes its question kinds; its videos are drawn for the questions kept, and only those."""
