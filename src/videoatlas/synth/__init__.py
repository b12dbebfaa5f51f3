"""Synthetic test videos with ground truth, deterministic by seed, for the demo, tests and benchmarks.

Not part of the environment an agent moves through: these generators make the videos it is tested
on. Two styles draw the same four question kinds: ``chapters`` (:mod:`.chapters`) and ``broadcast``
(:mod:`.broadcast`); a third, ``signage`` (:mod:`.signage`), draws a suite of question kinds (counts
with decoys, order, right after, first or last, open values, a needle as control); :mod:`.counter`
makes the video whose frames show their own number.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from videoatlas.logging import library_defaults
from videoatlas.synth import broadcast, chapters, signage
from videoatlas.synth.encode import Progress, StyleKit, question_records
from videoatlas.synth.spec import CODECS, STYLES, Codec, Style, SynthSpec, default_fps

library_defaults()  # "synthesized" and other lines go to stderr when a script calls synthesize()

__all__ = [
    "CODECS",
    "STYLES",
    "Codec",
    "Progress",
    "Style",
    "SynthSpec",
    "default_fps",
    "load_current",
    "planned_questions",
    "synthesize",
]


KITS: dict[Style, StyleKit[Any]] = {kit.style: kit for kit in (chapters.STYLE, broadcast.STYLE, signage.STYLE)}
"""What each style brings: its drawing version, its planner, its encoder, its speech."""


def synthesize(
    spec: SynthSpec, out_dir: str | Path, name: str = "video", progress: Progress | None = None
) -> dict[str, Any]:
    """Write ``name.mp4``, ``name.json`` (ground truth) and maybe ``name.srt`` into ``out_dir``, in ``spec.style``."""
    return KITS[spec.style].make(spec, out_dir, name, progress)


def planned_questions(spec: SynthSpec) -> list[dict[str, Any]]:
    """The questions :func:`synthesize` would write for ``spec``, as its ground truth lists them, without drawing.

    A video's timeline and questions are planned from its spec and seed alone; only the drawing takes time.
    """
    kit = KITS[spec.style]
    return question_records(kit.timeline(kit.plan(spec)))


def load_current(out_dir: str | Path, name: str = "video", style: Style = "chapters") -> dict[str, Any] | None:
    """The ground truth of a ``style`` video already in ``out_dir``, or None to make it (again).

    None when the files are missing, are of another style, or were drawn by an older version.
    """
    out = Path(out_dir)
    truth_path = out / f"{name}.json"
    if not (truth_path.is_file() and (out / f"{name}.mp4").is_file()):
        return None
    truth: dict[str, Any] = json.loads(truth_path.read_text(encoding="utf-8"))
    # Records written before styles existed carry no "style": they are all chapters videos.
    current = truth.get("style", "chapters") == style and truth.get("schema") == KITS[style].schema
    return truth if current else None
