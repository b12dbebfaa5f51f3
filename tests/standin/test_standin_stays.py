"""Sightings grouped into stays on screen (standin/stays.py): the rules a count rests on, as plain arithmetic."""

from __future__ import annotations

from videoatlas_standin.stays import Sighted, stays

TOUCH, REACH = 0.25, 30.0


def seen(t: float) -> Sighted:
    """A moment a picture showed the thing."""
    return Sighted(t, t, t, t)


def test_moments_seconds_apart_with_nothing_absent_between_are_one_stay() -> None:
    absent = [100.0, 200.0]
    assert stays([seen(110.0), seen(118.0), seen(125.0)], absent, TOUCH, REACH) == [(110.0, 125.0)]
    assert stays([seen(110.0), seen(118.0), seen(260.0)], absent, TOUCH, REACH) == [(110.0, 118.0), (260.0, 260.0)]


def test_a_frame_without_the_thing_between_keeps_two_moments_apart() -> None:
    assert stays([seen(110.0), seen(118.0)], [114.0], TOUCH, REACH) == [(110.0, 110.0), (118.0, 118.0)]
    # A frame lacking it at the very moment of a sighting (another picture of it, say) is not between.
    assert stays([seen(110.0), seen(118.0)], [110.0, 118.0], TOUCH, REACH) == [(110.0, 118.0)]


def test_moments_further_apart_than_the_reach_stay_apart() -> None:
    assert stays([seen(110.0), seen(140.5)], [50.0], TOUCH, REACH) == [(110.0, 110.0), (140.5, 140.5)]
    assert stays([seen(110.0), seen(140.0)], [50.0], TOUCH, REACH) == [(110.0, 140.0)]


def test_a_selection_of_frames_that_all_show_the_thing_says_nothing_of_what_lay_between() -> None:
    assert stays([seen(110.0), seen(118.0)], [], TOUCH, REACH) == [(110.0, 110.0), (118.0, 118.0)]


def test_written_sightings_join_only_when_their_spans_touch() -> None:
    written = [Sighted(110.0, 112.0), Sighted(112.2, 115.0), Sighted(120.0, 121.0)]
    assert stays(written, [100.0], TOUCH, REACH) == [(110.0, 115.0), (120.0, 121.0)]
    # A written report beside a picture's moment is not bridged to it either: only pictures show a stay.
    assert stays([seen(100.0), Sighted(110.0, 111.0)], [90.0], TOUCH, REACH) == [(100.0, 100.0), (110.0, 111.0)]


def test_a_run_of_grid_cells_is_bridged_from_its_last_cell_shown() -> None:
    # Cells 100-150 showing it (span to 160, where the next cell lacks it), then a close-up at 165.
    run = Sighted(100.0, 160.0, 100.0, 150.0)
    assert stays([run, seen(165.0)], [160.0], TOUCH, REACH) == [(100.0, 160.0), (165.0, 165.0)]
    assert stays([run, seen(165.0)], [90.0], TOUCH, REACH) == [(100.0, 165.0)]
