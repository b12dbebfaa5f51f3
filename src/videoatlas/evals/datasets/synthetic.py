"""The synthetic long-video suite: videos of 1 min, 10 min, 1 h, 3 h and 10 h with every question kind.

Videos are made under ``--root`` on first use (``synth-{seconds}s-seed{seed}/``) and reused after;
the 10-hour one takes about two minutes on two cores. Ground-truth evidence ranges come with every
question, so temporal grounding is scored too.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import structlog

from videoatlas.environment.synth import SynthSpec, default_fps, load_current, synthesize
from videoatlas.environment.timefmt import format_ts
from videoatlas.evals.items import EvalItem

NAME = "synthetic"
DEFAULT_DURATIONS = (60.0, 600.0, 3600.0, 3 * 3600.0, 10 * 3600.0)
log = structlog.get_logger(__name__)


def duration_label(seconds: float) -> str:
    """``600`` -> ``"10min"``, ``36000`` -> ``"10h"`` (the report's duration axis)."""
    if seconds >= 3600 and seconds % 3600 == 0:
        return f"{int(seconds // 3600)}h"
    if seconds >= 60 and seconds % 60 == 0:
        return f"{int(seconds // 60)}min"
    return f"{seconds:g}s"


def ensure_video(root: Path, duration: float, seed: int) -> tuple[Path, dict[str, Any]]:
    """The suite's video of this length, made if missing; returns its folder and ground truth."""
    folder = root / f"synth-{duration:g}s-seed{seed}"
    truth = load_current(folder)
    if truth is None:
        spec = SynthSpec(duration=duration, seed=seed, fps=default_fps(duration))  # refuses bad lengths first
        began = time.perf_counter()
        log.warning("making synthetic video (once)", duration=format_ts(duration, 0), folder=str(folder))
        truth = synthesize(spec, folder)
        log.info("synthetic video made", seconds=round(time.perf_counter() - began, 1))
    return folder, truth


def load(root: Path, durations: Sequence[float] = DEFAULT_DURATIONS, seed: int = 1) -> list[EvalItem]:
    """Every question of every video of the suite."""
    items = []
    for duration in durations:
        folder, truth = ensure_video(root, duration, seed)
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
                    groups={"duration": label},
                    duration=float(truth["duration"]),
                    subtitles=str(folder / truth["subtitles"]) if truth.get("subtitles") else None,
                    evidence=[list(map(float, r)) for r in q["evidence"]],
                )
            )
    return items
