"""The speech track's geometry: which chunks a view needs (all of a short stretch, the middle of a wide one)."""

from __future__ import annotations

from itertools import pairwise

import pytest

from videoatlas.environment.geometry import Interval
from videoatlas.environment.speech import (
    CHUNK_S,
    WIDE_CHUNKS,
    SpeechTrack,
    chunk_count,
    chunk_span,
    chunks_over,
    chunks_to_hear,
    spread_chunks,
)
from videoatlas.environment.subtitles import SubtitleLine

pytestmark = pytest.mark.unit
HOUR = 3600.0


def test_chunks_cut_the_video_in_30_s_pieces_the_last_one_shorter() -> None:
    assert CHUNK_S == 30.0
    assert chunk_count(24.0) == 1 and chunk_count(30.0) == 1 and chunk_count(30.5) == 2 and chunk_count(HOUR) == 120
    assert chunk_count(0.0) == 1
    assert chunk_span(0, 75.0) == Interval(0.0, 30.0) and chunk_span(2, 75.0) == Interval(60.0, 75.0)


@pytest.mark.parametrize(
    ("span", "chunks"),
    [
        (Interval(0.0, 30.0), [0]),  # a chunk's end is the next one's start: not an overlap
        (Interval(29.0, 31.0), [0, 1]),
        (Interval(45.0, 45.0), [1]),  # an instant: the chunk it lies in
        (Interval(60.0, 60.0), [2]),
        (Interval(70.0, 500.0), [2]),  # past the end: the last chunk
        (Interval(0.0, 75.0), [0, 1, 2]),
    ],
)
def test_a_stretch_overlaps_the_chunks_it_shares_time_with(span: Interval, chunks: list[int]) -> None:
    assert chunks_over(span, 75.0) == chunks


def test_a_view_hears_short_stretches_whole_and_wide_ones_at_their_middle() -> None:
    # 64 cells over two hours: each 112.5 s wide, longer than two chunks: each gives its middle chunk only.
    cells = [Interval(i * 2 * HOUR / 64, (i + 1) * 2 * HOUR / 64) for i in range(64)]
    assert chunks_to_hear(cells, 2 * HOUR) == [int(cell.mid // CHUNK_S) for cell in cells]
    # 64 cells over an hour: each 56 s wide, no longer than two chunks, but over 2 or 3 of them as the
    # boundaries fall. Each is heard whole all the same: how a cell lies on the chunks' clock decides nothing.
    cells = [Interval(i * HOUR / 64, (i + 1) * HOUR / 64) for i in range(64)]
    assert {len(chunks_over(cell, HOUR)) for cell in cells} == {2, 3}
    assert chunks_to_hear(cells, HOUR) == list(range(120))
    assert WIDE_CHUNKS * CHUNK_S == 60.0
    # The whole video at once is one chunk, its middle; asked whole, every chunk.
    assert chunks_to_hear([Interval(0.0, HOUR)], HOUR) == [60]
    assert chunks_to_hear([Interval(0.0, HOUR)], HOUR, whole=True) == list(range(120))
    # A cell of a finer grid is heard whole.
    assert chunks_to_hear([Interval(100.0, 140.0)], HOUR) == [3, 4]


def test_an_index_of_the_track_hears_every_chunk_or_a_spread_of_them() -> None:
    assert spread_chunks(HOUR, 240) == list(range(120))  # an hour: every chunk
    ten_hours = spread_chunks(10 * HOUR, 240)
    assert len(ten_hours) == 240 and ten_hours == sorted(set(ten_hours))
    gaps = {b - a for a, b in pairwise(ten_hours)}
    assert gaps == {5}  # 1,200 chunks, one in five, evenly
    assert ten_hours[0] == 2 and ten_hours[-1] == 1197  # the middle of each fifth
    assert spread_chunks(HOUR, 0) == [] and spread_chunks(10.0, 5) == [0]


def test_the_track_keeps_each_chunks_lines_inside_the_chunk_and_reads_like_subtitles() -> None:
    track = SpeechTrack(75.0)
    assert track.missing([0, 1, 2]) == [0, 1, 2] and len(track.subtitles()) == 0
    track.add(1, [SubtitleLine(31.0, 35.0, " hello there "), SubtitleLine(58.0, 64.0, "cut at the end")])
    track.add(0, [])
    assert track.missing([0, 1, 2]) == [2] and track.heard == [0, 1] and 1 in track
    said = track.subtitles()
    assert [(ln.start, ln.end, ln.text) for ln in said.lines] == [
        (31.0, 35.0, "hello there"),
        (58.0, 60.0, "cut at the end"),
    ]
    assert said.text_for(Interval(33.0, 33.0)) == "hello there"
    assert said.by_cell([("cell 0", Interval(30.0, 40.0)), ("cell 1", Interval(40.0, 50.0))]) == "cell 0: hello there"
