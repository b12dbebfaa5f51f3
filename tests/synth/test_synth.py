"""Synthetic videos: deterministic by seed, navigable, and their ground truth matches their pixels."""

from __future__ import annotations

import itertools
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from videoatlas.environment.frames import FrameSource
from videoatlas.environment.subtitles import load_subtitles
from videoatlas.environment.video import probe
from videoatlas.errors import BadInputError
from videoatlas.synth import SynthSpec, planned_questions
from videoatlas.synth.chapters import plan_timeline
from videoatlas.synth.counter import counter_frame, read_counter


@pytest.mark.unit
def test_timeline_is_deterministic_by_seed() -> None:
    a = plan_timeline(SynthSpec(duration=3600, seed=5))
    b = plan_timeline(SynthSpec(duration=3600, seed=5))
    c = plan_timeline(SynthSpec(duration=3600, seed=6))
    assert a.events == b.events and a.questions == b.questions and a.chapters == b.chapters
    assert a.events != c.events


@pytest.mark.unit
@pytest.mark.parametrize("duration", [60.0, 600.0, 3600.0, 36000.0])
def test_timeline_structure(duration: float) -> None:
    tl = plan_timeline(SynthSpec(duration=duration, seed=1))
    assert tl.chapters[0].start == 0 and tl.chapters[-1].end == duration
    for a, b in zip(tl.chapters, tl.chapters[1:], strict=False):
        assert a.end == b.start
    assert len({c.title for c in tl.chapters}) == len(tl.chapters)
    events = sorted(tl.events, key=lambda e: e.start)
    for before, after_ev in itertools.pairwise(events):
        assert before.end <= after_ev.start, "events overlap"
    for e in tl.events:
        ch = tl.chapters[e.chapter]
        assert ch.start <= e.start < e.end <= ch.end
    kinds = {q.kind for q in tl.questions}
    assert kinds == {"needle_in_chapter", "counting", "order", "after_anchor"}
    needles = [e for e in tl.events if e.kind == "needle"]
    assert len(needles) == len(tl.chapters)  # one per chapter: the others are its distractors
    for q in tl.questions:
        assert q.answer_index is not None  # this style asks only multiple-choice questions
        assert len(set(q.choices)) == len(q.choices) and 0 <= q.answer_index < len(q.choices)
        assert q.evidence and all(s < e for s, e in q.evidence)
    count_q = next(q for q in tl.questions if q.kind == "counting")
    assert int(count_q.answer) == sum(1 for e in tl.events if e.kind == "marker")
    order_q = next(q for q in tl.questions if q.kind == "order")
    first = min((e for e in tl.events if e.kind == "order"), key=lambda e: e.start)
    assert order_q.answer == first.text
    after_q = next(q for q in tl.questions if q.kind == "after_anchor")
    anchor = next(e for e in tl.events if e.kind == "anchor")
    after = next(e for e in tl.events if e.kind == "after")
    assert after.text == after_q.answer and 0 <= after.start - anchor.end < 1.0
    # Long videos: events outlast a depth-1 cell, so expanding the right root cell shows them.
    assert tl.spec.event_duration >= 1.25 * duration / 64**2


@pytest.mark.unit
def test_bad_specs() -> None:
    with pytest.raises(BadInputError, match="at least 30 s"):
        SynthSpec(duration=5)
    with pytest.raises(BadInputError, match="even"):
        SynthSpec(duration=60, width=641)
    with pytest.raises(BadInputError, match="fps"):
        SynthSpec(duration=60, fps=0)


@pytest.mark.unit
def test_counter_frames_round_trip_at_any_scale() -> None:
    from PIL import Image

    for n in (0, 1, 999, 123456):
        img = counter_frame(n, 320, 240)
        assert read_counter(img) == n
        small = np.asarray(Image.fromarray(img).resize((100, 75)))
        assert read_counter(small) == n


def _white_card(image: np.ndarray) -> bool:
    h, w = image.shape[:2]
    centre = image[int(h * 0.52) : int(h * 0.68), int(w * 0.35) : int(w * 0.65)]
    return float((centre.min(axis=2) > 235).mean()) > 0.5


@pytest.mark.e2e
def test_written_video_matches_its_ground_truth(synth_video: tuple[Path, dict[str, Any]]) -> None:
    video, truth = synth_video
    info = probe(video)
    assert info.duration == pytest.approx(180.0, abs=0.3)
    assert (info.width, info.height) == (640, 360) and info.fps == pytest.approx(5.0)
    assert truth["frames"] == 900
    needles = [e for e in truth["events"] if e["kind"] == "needle"]
    with FrameSource(video) as src:
        inside = src.frames_at([(e["start"] + e["end"]) / 2 for e in needles], 640)
        outside = src.frames_at([max(0.0, e["start"] - 3.0) for e in needles], 640)
    for frame in inside:
        assert frame.image is not None and _white_card(frame.image)
    for frame in outside:
        assert frame.image is not None and not _white_card(frame.image)
    subs = load_subtitles(video.with_suffix(".srt"))
    assert len(subs) > 0 and "about" in subs.lines[0].text
    # The questions are known before the video is drawn (the eval suite draws only what it asks about).
    assert planned_questions(SynthSpec(duration=180, seed=3)) == truth["questions"]


@pytest.mark.e2e
def test_same_seed_same_file(tmp_path: Path) -> None:
    from videoatlas.synth import synthesize

    spec = SynthSpec(duration=40, seed=9, width=320, height=180, fps=2, subtitles=False)
    synthesize(spec, tmp_path / "a")
    synthesize(spec, tmp_path / "b")
    assert (tmp_path / "a" / "video.mp4").read_bytes() == (tmp_path / "b" / "video.mp4").read_bytes()
    assert (tmp_path / "a" / "video.json").read_text() == (tmp_path / "b" / "video.json").read_text()


@pytest.mark.e2e
def test_a_video_drawn_by_an_older_version_is_not_reused(tmp_path: Path) -> None:
    import json

    from videoatlas.synth import load_current, synthesize
    from videoatlas.synth.chapters import SCHEMA_VERSION

    spec = SynthSpec(duration=40, seed=9, width=320, height=180, fps=2, subtitles=False)
    truth = synthesize(spec, tmp_path)
    assert load_current(tmp_path) == json.loads(json.dumps(truth))
    stale = {**truth, "schema": SCHEMA_VERSION - 1}
    (tmp_path / "video.json").write_text(json.dumps(stale))
    assert load_current(tmp_path) is None
    (tmp_path / "video.json").write_text(json.dumps(truth))
    (tmp_path / "video.mp4").unlink()
    assert load_current(tmp_path) is None


@pytest.mark.e2e
def test_a_script_that_synthesizes_a_video_gets_no_log_lines_on_stdout(tmp_path: Path) -> None:
    code = (
        "import sys\nfrom videoatlas.synth import SynthSpec, synthesize\n"
        "synthesize(SynthSpec(duration=30, seed=1), sys.argv[1])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "v")], capture_output=True, text=True, timeout=120, check=True
    )
    assert (tmp_path / "v" / "video.mp4").is_file()
    assert done.stdout == ""
