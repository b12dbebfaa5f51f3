"""The long spoken video (synth/long_talk.py): facts said once, placed where the measure needs them."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import pytest

from videoatlas.environment.video import probe
from videoatlas.synth import speech
from videoatlas.synth.long_talk import FACT_S, ROUTINE_GAP_S, STRETCH_S, long_talk


@pytest.mark.unit
@pytest.mark.parametrize("duration", [300.0, 600.0, 3600.0, 36000.0])
def test_each_fact_is_said_once_inside_one_stretch_and_apart_from_the_routine(duration: float) -> None:
    talk = long_talk(duration)
    facts = [line for line in talk.lines if line.text in {f.text for f in speech.LINES}]
    assert [f.text for f in facts] == [f.text for f in speech.LINES]  # each once, in the order of the questions
    assert tuple(f.start for f in facts) == talk.said_at
    for at in talk.said_at:
        inside = at % STRETCH_S
        assert inside >= 3.0 and inside + FACT_S <= STRETCH_S
        assert all(abs(line.start - at) > 20.0 for line in talk.lines if line.start != at)
    thirds = [int(at // (duration / 3)) for at in talk.said_at]
    assert thirds == [0, 1, 2]  # spread: one fact in each third of the video
    assert [q.answer for q in talk.questions] == ["Bristol", "Maria", "400"]
    assert talk.cards[0].start == 0.0 and talk.cards[-1].end == duration
    assert long_talk(duration) == talk and long_talk(duration, seed=2) != talk


@pytest.mark.unit
def test_a_dense_talk_fills_the_track_and_keeps_its_facts_clear() -> None:
    sparse, dense = long_talk(3600.0), long_talk(3600.0, routine_gap=(8.0, 12.0))
    assert long_talk(3600.0, routine_gap=ROUTINE_GAP_S) == sparse  # the default is the gap asked for by name
    routine = [line for line in dense.lines if line.start not in dense.said_at]
    assert len(routine) > 8 * len(sparse.lines)
    for a, b in pairwise(routine):
        if not any(a.start < at < b.start for at in dense.said_at):  # away from a fact, one every 8-12 s
            assert 8.0 - 0.1 <= b.start - a.start <= 12.0 + 0.1
    for at in dense.said_at:
        assert all(abs(line.start - at) > 8.0 for line in dense.lines if line.start != at)
    assert [f.text for f in dense.lines if f.start in dense.said_at] == [f.text for f in speech.LINES]


@pytest.mark.unit
def test_a_long_talk_shorter_than_five_minutes_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 300 s"):
        long_talk(120.0)
    with pytest.raises(ValueError, match="routine_gap"):
        long_talk(600.0, routine_gap=(4.0, 12.0))


@pytest.mark.e2e
def test_the_video_lasts_the_talk_and_carries_its_sound(tmp_path: Path) -> None:
    talk = long_talk(300.0)
    video = speech.write_speech_video(tmp_path / "talk.mp4", cards=talk.cards, lines=talk.lines, duration=300.0)
    info = probe(video)
    assert info.has_audio and info.duration == pytest.approx(300.0, abs=0.5)
