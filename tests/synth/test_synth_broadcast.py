"""The broadcast style: deterministic, fair (events long enough to find), legible, and unlike the chapters style."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from videoatlas.environment.frames import FrameSource
from videoatlas.environment.geometry import cell_span
from videoatlas.environment.subtitles import load_subtitles
from videoatlas.environment.video import probe
from videoatlas.errors import BadInputError
from videoatlas.synth import SynthSpec, load_current, planned_questions, synthesize
from videoatlas.synth import chapters as synth
from videoatlas.synth.broadcast import BroadcastPlan, min_event_s, plan_broadcast
from videoatlas.synth.broadcast_draw import event_sprite, frame_planes, make_texture
from videoatlas.synth.encode import stretches

KINDS = {"needle_in_chapter", "counting", "order", "after_anchor"}
CHAPTERS_WORDS = {"CHAPTER", "CODE", "STAR", "BELL", "CARD"} | set(synth.TOPICS + synth.ORDER_WORDS + synth.AFTER_WORDS)


def _plan(duration: float, seed: int = 1, **kw: Any) -> BroadcastPlan:
    return plan_broadcast(SynthSpec(duration=duration, seed=seed, style="broadcast", **kw))


def _words(text: str) -> set[str]:
    return set(re.findall(r"[A-Z]+", text.upper()))


@pytest.mark.unit
def test_plan_is_deterministic_by_seed() -> None:
    a, b, c = _plan(3600, 5), _plan(3600, 5), _plan(3600, 6)
    assert a.timeline.events == b.timeline.events and a.timeline.questions == b.timeline.questions
    assert a.timeline.chapters == b.timeline.chapters and a.looks == b.looks and a.slots == b.slots
    assert a.timeline.events != c.timeline.events


@pytest.mark.unit
@pytest.mark.parametrize("duration", [60.0, 600.0, 3600.0, 36000.0])
def test_plan_structure(duration: float) -> None:
    plan = _plan(duration)
    tl = plan.timeline
    assert tl.chapters[0].start == 0 and tl.chapters[-1].end == duration
    for a, b in itertools.pairwise(tl.chapters):
        assert a.end == b.start
    for before, after in itertools.pairwise(tl.events):
        assert before.end <= after.start, "events overlap"
    shortest = max(3.0, 1.25 * cell_span(duration, 1, 8))
    assert min_event_s(tl.spec) == pytest.approx(shortest)
    for e in tl.events:
        ch = tl.chapters[e.chapter]
        assert ch.start <= e.start < e.end <= ch.end
        assert e.end - e.start >= shortest - 1e-6, "an event a depth-1 cell could miss"
    lengths = {round(e.end - e.start, 2) for e in tl.events}
    assert len(lengths) > 1 or duration < 120  # random lengths (the shortest videos have no room to vary)

    assert {q.kind for q in tl.questions} == KINDS
    needles = [e for e in tl.events if e.kind == "needle"]
    assert sorted(e.chapter for e in needles) == list(range(len(tl.chapters)))  # one per segment
    intervals = {(e.start, e.end): e for e in tl.events}
    for q in tl.questions:
        assert 2 <= len(q.choices) <= 5 and len(set(q.choices)) == len(q.choices)
        assert q.answer_index is not None and 0 <= q.answer_index < len(q.choices)
        assert q.evidence and all((s, e) in intervals for s, e in q.evidence), "evidence is where events are"

    for q in (q for q in tl.questions if q.kind == "needle_in_chapter"):
        [(begin, end)] = q.evidence
        event = intervals[(begin, end)]
        assert event.kind == "needle" and q.answer == event.text and tl.chapters[event.chapter].title in q.question
    count_q = next(q for q in tl.questions if q.kind == "counting")
    markers = [e for e in tl.events if e.kind == "marker"]
    assert int(count_q.answer) == len(markers) and len(count_q.evidence) == len(markers)
    order_q = next(q for q in tl.questions if q.kind == "order")
    orders = [e for e in tl.events if e.kind == "order"]
    assert sorted(order_q.choices) == sorted(e.text for e in orders) and order_q.answer == orders[0].text
    anchor_q = next(q for q in tl.questions if q.kind == "after_anchor")
    anchor = next(e for e in tl.events if e.kind == "anchor")
    target = next(e for e in tl.events if e.kind in ("after", "before"))
    assert anchor_q.answer == target.text and target.kind in anchor_q.question
    gap = target.start - anchor.end if target.kind == "after" else anchor.start - target.end
    assert 1.0 - 1e-6 <= gap <= 5.0 + 1e-6
    decoys = {e.text for e in tl.events if e.kind == "decoy"}
    assert set(anchor_q.choices) == decoys | {target.text}

    texts = [c.title for c in tl.chapters] + [e.text for e in tl.events]
    texts += [q.question for q in tl.questions] + [c for q in tl.questions for c in q.choices]
    assert not set().union(*map(_words, texts)) & CHAPTERS_WORDS, "the chapters style's vocabulary"


@pytest.mark.unit
def test_choice_counts_directions_and_wordings_vary_with_the_seed() -> None:
    counts: set[int] = set()
    wordings: dict[str, set[str]] = {}
    kinds: set[str] = set()
    for seed in range(1, 13):
        tl = _plan(3600, seed).timeline
        for q in tl.questions:
            counts.add(len(q.choices))
            wordings.setdefault(q.kind, set()).add(re.sub(r"[A-Z]{2,}.*", "", q.question))
        kinds |= {e.kind for e in tl.events}
    assert counts == {2, 3, 4, 5}
    assert all(len(w) > 1 for w in wordings.values()), wordings
    assert {"after", "before"} <= kinds


@pytest.mark.unit
def test_refuses_what_it_cannot_make() -> None:
    with pytest.raises(BadInputError, match="at least 60 s"):
        _plan(45)
    with pytest.raises(BadInputError, match="too short"):
        _plan(60, event_s=12.0)
    with pytest.raises(BadInputError, match="unknown synthetic style"):
        SynthSpec(duration=60, style="cartoon")  # type: ignore[arg-type]


@pytest.mark.unit
def test_textures_pan_and_are_not_flat() -> None:
    import av

    for seed in range(6):  # every pattern kind comes up in a few seeds
        texture = make_texture(seed, 0.6, 320, 180)
        a, b = av.VideoFrame(320, 180, "yuv420p"), av.VideoFrame(320, 180, "yuv420p")
        texture.paint(0.0, frame_planes(a))
        texture.paint(1.0, frame_planes(b))
        ya, yb = frame_planes(a)[0].astype(int), frame_planes(b)[0].astype(int)
        assert ya.std() > 4, "a flat background"
        assert np.abs(ya - yb).mean() > 1, "a background that does not move"


@pytest.fixture(scope="module")
def broadcast(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any], BroadcastPlan]:
    """A 90-second broadcast-style video, 640x360 at 2 fps, with its ground truth and plan."""
    spec = SynthSpec(duration=90, seed=3, fps=2, style="broadcast")
    out = tmp_path_factory.mktemp("broadcast")
    truth = synthesize(spec, out)
    return out / "video.mp4", truth, plan_broadcast(spec)


@pytest.mark.e2e
def test_written_video_matches_its_ground_truth(
    broadcast: tuple[Path, dict[str, Any], BroadcastPlan], tmp_path: Path
) -> None:
    video, truth, _ = broadcast
    info = probe(video)
    assert info.duration == pytest.approx(90.0, abs=0.6)
    assert (info.width, info.height) == (640, 360) and info.fps == pytest.approx(2.0)
    assert truth["frames"] == 180 and truth["style"] == "broadcast"
    chapters = synthesize(SynthSpec(duration=40, width=320, height=180, fps=1, subtitles=False), tmp_path)
    assert truth.keys() == chapters.keys()
    assert truth["questions"][0].keys() == chapters["questions"][0].keys()
    assert json.loads(json.dumps(truth)) == load_current(video.parent, style="broadcast")
    # The questions are known before the video is drawn (the eval suite draws only what it asks about).
    assert planned_questions(SynthSpec(duration=90, seed=3, fps=2, style="broadcast")) == truth["questions"]
    assert load_current(video.parent) is None  # not mistaken for a chapters-style video
    subs = load_subtitles(video.with_suffix(".srt"))
    assert len(subs) > 0 and not any("This is part" in line.text for line in subs.lines)


@pytest.mark.e2e
def test_backgrounds_move_behind_the_text(broadcast: tuple[Path, dict[str, Any], BroadcastPlan]) -> None:
    video, _, plan = broadcast
    start = next(a for a, b, _, event in stretches(plan.timeline) if event is None and b - a >= 3)
    with FrameSource(video) as src:
        first, second = (f.image for f in src.frames_at([start + 0.5, start + 2.5], 640))
    assert first is not None and second is not None
    luma = first.astype(float).mean(axis=2)
    patches = luma[:352, :640].reshape(11, 32, 20, 32).std(axis=(1, 3))
    assert np.median(patches) > 2, "a flat-colour background"
    assert np.abs(first.astype(int) - second.astype(int)).mean() > 2, "a still background"


@pytest.mark.e2e
def test_every_kind_of_event_is_legible_at_grid_cell_size(
    broadcast: tuple[Path, dict[str, Any], BroadcastPlan],
) -> None:
    from videoatlas_standin.perception import Reader

    video, _, plan = broadcast
    tl = plan.timeline
    firsts = {e.kind: e for e in reversed(tl.events)}
    assert set(firsts) >= {"needle", "marker", "order", "anchor", "decoy"}
    reader = Reader()
    with FrameSource(video) as src:
        frames = src.frames_at([(e.start + e.end) / 2 for e in firsts.values()], 320)
    for event, frame in zip(firsts.values(), frames, strict=True):
        assert frame.image is not None and frame.image.shape[1] == 320
        # The whole cell, and the event's own region of it: legibility is what is checked, not how a
        # reader splits a frame into lines (stacked header and value can be taken for one line).
        sprite = event_sprite(event, plan.looks[event.chapter], plan.slots[event], 640, 360)
        assert sprite is not None
        h, w = sprite.keep[0].shape
        x0, y0 = max(0, sprite.x // 2 - 6), max(0, sprite.y // 2 - 6)
        region = frame.image[y0 : (sprite.y + h) // 2 + 6, x0 : (sprite.x + w) // 2 + 6]
        seen = [reader.see(frame.image).text, reader.see(np.ascontiguousarray(region)).text]
        assert any(event.text.replace(" ", "") in s.replace(" ", "").upper() for s in seen), (event, seen)


@pytest.mark.e2e
def test_same_seed_same_file(tmp_path: Path) -> None:
    spec = SynthSpec(duration=60, seed=9, width=320, height=180, fps=1, subtitles=False, style="broadcast")
    synthesize(spec, tmp_path / "a")
    synthesize(spec, tmp_path / "b")
    assert (tmp_path / "a" / "video.mp4").read_bytes() == (tmp_path / "b" / "video.mp4").read_bytes()
    assert (tmp_path / "a" / "video.json").read_text() == (tmp_path / "b" / "video.json").read_text()


@pytest.mark.e2e
def test_the_synthetic_suite_holds_both_styles(tmp_path: Path) -> None:
    from videoatlas.evals.datasets import load_items

    items = load_items("synthetic", tmp_path, durations=[60.0])
    assert {i.video_id for i in items} == {"synth-60s-seed1", "synth-60s-seed1-broadcast"}
    assert {i.groups["style"] for i in items} == {"chapters", "broadcast"}
    assert all(i.groups["duration"] == "1min" for i in items)
    for style in ("chapters", "broadcast"):
        assert {i.categories[0] for i in items if i.groups["style"] == style} == KINDS
    only = load_items("synthetic", tmp_path, durations=[60.0], styles=["broadcast"])
    assert {i.id for i in only} == {i.id for i in items if i.groups["style"] == "broadcast"}


@pytest.mark.e2e
def test_cli_synth_style(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from videoatlas.cli.main import main

    args = ["synth", "--duration", "1m", "--style", "broadcast", "--size", "320x180", "--fps", "1"]
    assert main([*args, "--out", str(tmp_path), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    truth = json.loads(Path(result["ground_truth"]).read_text())
    assert result["style"] == truth["style"] == truth["spec"]["style"] == "broadcast"


@pytest.mark.unit
def test_eval_run_refuses_an_unknown_style(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from videoatlas.cli.main import main

    args = ["eval", "run", "--dataset", "synthetic", "--root", str(tmp_path), "--out", str(tmp_path / "o")]
    assert main([*args, "--styles", "chapters,cartoon", "--base-url", "http://127.0.0.1:9"]) == 2
    err = capsys.readouterr().err
    assert "--styles" in err and "Traceback" not in err
    assert not list(tmp_path.glob("synth-*"))  # refused before any video was made
