"""The synthetic long-video suite: videos of 1 min, 10 min, 1 h, 3 h and 10 h with every question kind.

Each length comes in both styles: ``chapters`` (the style the stand-in and agent were developed on)
and ``broadcast`` (a different look, layout, vocabulary and wording, for the same four question
kinds), so accuracy per kind can be compared on video the system was not built for. Items are
grouped by ``duration`` and ``style``.

Videos are made under ``--root`` on first use (``synth-{seconds}s-seed{seed}/``, and
``synth-{seconds}s-seed{seed}-broadcast/``) and reused after; the 10-hour ones take about two and
about five minutes on two cores. Ground-truth evidence ranges come with every question, so
temporal grounding is scored too.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import structlog

from videoatlas.environment.timefmt import format_ts
from videoatlas.evals.items import EvalItem
from videoatlas.synth import STYLES, Style, SynthSpec, default_fps, load_current, synthesize

NAME = "synthetic"
DEFAULT_DURATIONS = (60.0, 600.0, 3600.0, 3 * 3600.0, 10 * 3600.0)
DEFAULT_STYLES: tuple[Style, ...] = STYLES
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


def ensure_video(root: Path, duration: float, seed: int, style: Style = "chapters") -> tuple[Path, dict[str, Any]]:
    """The suite's video of this length and style, made if missing; returns its folder and ground truth."""
    folder = video_folder(root, duration, seed, style)
    truth = load_current(folder, style=style)
    if truth is None:
        # SynthSpec refuses bad lengths and styles before anything is written.
        spec = SynthSpec(duration=duration, seed=seed, fps=default_fps(duration), style=style)
        began = time.perf_counter()
        log.info("making synthetic video (once)", duration=format_ts(duration, 0), style=style, folder=str(folder))
        truth = synthesize(spec, folder)
        log.info("synthetic video made", seconds=round(time.perf_counter() - began, 1))
    return folder, truth


def load(
    root: Path,
    durations: Sequence[float] = DEFAULT_DURATIONS,
    seed: int = 1,
    styles: Sequence[Style] = DEFAULT_STYLES,
) -> list[EvalItem]:
    """Every question of every video of the suite (each duration in each style)."""
    items = []
    for duration, style in itertools.product(durations, styles):
        folder, truth = ensure_video(root, duration, seed, style)
        label = duration_label(duration)
        video_id = folder.name
        for q in truth["questions"]:
            items.append(
                EvalItem(
                    dataset=NAME,
                    id=f"{video_id}/{q['id']}",
                    video_id=video_id,
                    video=str(folder / truth["video"]),
                    question=q["question"],
                    choices=list(q["choices"]),
                    answer_index=int(q["answer_index"]),
                    categories=[q["kind"]],
                    groups={"duration": label, "style": style},
                    duration=float(truth["duration"]),
                    subtitles=str(folder / truth["subtitles"]) if truth.get("subtitles") else None,
                    evidence=[list(map(float, r)) for r in q["evidence"]],
                )
            )
    return items
