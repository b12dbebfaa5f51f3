"""The signage style, the suite of kinds: every kind with its ground truth, fair events, drawn legibly and quickly."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

from videoatlas.environment.frames import FrameSource
from videoatlas.errors import BadInputError
from videoatlas.evals.datasets.synthetic import load
from videoatlas.synth import SynthSpec, load_current, planned_questions, synthesize
from videoatlas.synth.signage import COUNTED, SignagePlan, event_length, plan_signage

KINDS = {"needle", "count", "count_open", "order", "right_after", "first_last", "open_value"}


def _plan(duration: float, seed: int = 1) -> SignagePlan:
    return plan_signage(SynthSpec(duration=duration, seed=seed, style="signage"))


@pytest.mark.unit
@pytest.mark.parametrize("duration", [600.0, 3600.0, 3 * 3600.0])
def test_every_kind_has_its_ground_truth_and_events_are_fair(duration: float) -> None:
    tl = _plan(duration).timeline
    kinds = {q.kind for q in tl.questions}
    assert kinds == KINDS
    for before, after in itertools.pairwise(tl.events):
        assert before.end <= after.start, "events overlap"
    shortest = event_length(tl.spec)
    assert all(e.end - e.start >= shortest - 1e-6 for e in tl.events)
    if duration >= 3600:
        assert shortest < duration / 64, "on long videos an event is shorter than a root cell"
    for q in tl.questions:
        assert q.evidence and all(0 <= s < e <= duration for s, e in q.evidence)
        if q.choices:
            assert q.answer_index is not None and q.answer_text is None and len(set(q.choices)) == len(q.choices)
        else:
            assert q.answer_index is None and q.answer_text


@pytest.mark.unit
@pytest.mark.parametrize("seed", range(1, 9))
def test_count_truth_is_separate_appearances_among_decoys(seed: int) -> None:
    tl = _plan(3600.0, seed).timeline
    counted = [e for e in tl.events if e.kind == "count"]
    decoys = [e for e in tl.events if e.kind == "count_decoy"]
    assert 1 <= len(counted) <= 5 and decoys and all(d.text != COUNTED for d in decoys)
    assert all(b.start - a.end >= 2 * event_length(tl.spec) for a, b in itertools.pairwise(counted))
    mcq = next(q for q in tl.questions if q.kind == "count")
    opened = next(q for q in tl.questions if q.kind == "count_open")
    assert mcq.answer == str(len(counted)) == opened.answer_text
    assert mcq.evidence == opened.evidence == [[e.start, e.end] for e in counted]


@pytest.mark.unit
@pytest.mark.parametrize("seed", range(1, 9))
def test_order_right_after_and_first_last_truths(seed: int) -> None:
    tl = _plan(600.0, seed).timeline
    by = {q.kind: q for q in tl.questions}
    order = [e for e in tl.events if e.kind == "order"]
    assert by["order"].answer == order[0].text
    anchor = next(e for e in tl.events if e.kind == "anchor")
    after = next(e for e in tl.events if e.kind == "after")
    assert 2.0 <= after.start - anchor.end <= 6.0 and by["right_after"].answer == after.text
    decoys = [e for e in tl.events if e.kind == "platform_decoy"]
    assert decoys and all(d.text != after.text and d.text in by["right_after"].choices for d in decoys)
    routes = [e for e in tl.events if e.kind == "route"]
    q = by["first_last"]
    assert q.answer == (routes[0].text if "first" in q.id else routes[-1].text)
    gate = next(e for e in tl.events if e.kind == "gate")
    assert gate.text == f"GATE {by['open_value'].answer_text}"


@pytest.mark.unit
def test_plans_are_deterministic_and_short_videos_are_refused() -> None:
    a, b = _plan(3600.0, 3), _plan(3600.0, 3)
    assert a.timeline.events == b.timeline.events and a.timeline.questions == b.timeline.questions
    assert a.timeline.events != _plan(3600.0, 4).timeline.events
    with pytest.raises(BadInputError, match="at least 300"):
        _plan(120.0)


@pytest.mark.unit
def test_the_eval_suite_carries_open_values_and_kinds(tmp_path: Path) -> None:
    items = load(tmp_path, [600.0], styles=["signage"])
    assert {i.categories[0] for i in items} == KINDS
    opened = [i for i in items if i.is_open]
    assert {i.categories[0] for i in opened} == {"count_open", "open_value"}
    assert all(i.answer_text and i.answer_index is None and i.answerable for i in opened)
    assert all(i.groups == {"duration": "10min", "style": "signage"} for i in items)
    assert planned_questions(SynthSpec(duration=600.0, seed=1, style="signage"))[0]["answer"]


@pytest.mark.e2e
def test_a_drawn_video_shows_its_cards_where_the_truth_says(tmp_path: Path) -> None:
    """Every event's card is on screen during its span (the frame differs from the moment before it)."""
    spec = SynthSpec(duration=300.0, seed=2, style="signage", fps=2.0)
    truth = synthesize(spec, tmp_path)
    assert load_current(tmp_path, style="signage") is not None
    assert truth["style"] == "signage" and {q["kind"] for q in truth["questions"]} == KINDS
    source = FrameSource(tmp_path / "video.mp4")
    try:
        for event in truth["events"]:
            mid = (event["start"] + event["end"]) / 2
            shown, empty = source.frames_at([mid, max(0.0, event["start"] - 1.0)], 640)
            assert shown.image is not None and empty.image is not None
            with_card = np.asarray(shown.image, dtype=np.int16)
            before = np.asarray(empty.image, dtype=np.int16)
            # A card covers a good share of the frame: far more changes than the sliding band alone.
            changed = (np.abs(with_card - before).max(axis=2) > 60).mean()
            assert changed > 0.02, (event, changed)
    finally:
        source.close()
