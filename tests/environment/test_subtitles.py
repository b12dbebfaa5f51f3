from __future__ import annotations

import json
from pathlib import Path

import pytest

from videoatlas.environment.geometry import Interval
from videoatlas.environment.subtitles import SubtitleLine, Subtitles, fitting_lines, load_subtitles
from videoatlas.errors import SubtitleError
from videoatlas.runtime.calls import speech_lines, subtitles_by_cell

pytestmark = pytest.mark.unit

SRT = """1
00:00:01,000 --> 00:00:04,500
Hello <i>there</i>.

2
00:01:00,250 --> 00:01:02,000
Second line
wrapped over two rows

3
01:00:00,000 --> 01:00:03,000
An hour in &amp; counting
"""

VTT = """WEBVTT

NOTE a comment block

intro
00:01.000 --> 00:04.500 align:start
Hello there.

00:01:00.250 --> 00:01:02.000
<v Speaker>Second line</v>
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_srt(tmp_path: Path) -> None:
    subs = load_subtitles(write(tmp_path, "a.srt", SRT))
    assert [(ln.start, ln.end) for ln in subs.lines] == [(1.0, 4.5), (60.25, 62.0), (3600.0, 3603.0)]
    assert subs.lines[0].text == "Hello there."
    assert subs.lines[1].text == "Second line wrapped over two rows"
    assert subs.lines[2].text == "An hour in & counting"


def test_vtt(tmp_path: Path) -> None:
    subs = load_subtitles(write(tmp_path, "a.vtt", VTT))
    assert [(ln.start, ln.end, ln.text) for ln in subs.lines] == [
        (1.0, 4.5, "Hello there."),
        (60.25, 62.0, "Second line"),
    ]


def test_longvideobench_json_both_shapes(tmp_path: Path) -> None:
    data = [
        {"timestamp": [0.5, 2.0], "text": "first"},
        {"start": "00:00:10.5", "end": "00:00:12.0", "line": "second"},
    ]
    subs = load_subtitles(write(tmp_path, "lvb.json", json.dumps(data)))
    assert [(ln.start, ln.end, ln.text) for ln in subs.lines] == [(0.5, 2.0, "first"), (10.5, 12.0, "second")]


def test_offset_shifts_every_cue(tmp_path: Path) -> None:
    subs = load_subtitles(write(tmp_path, "a.srt", SRT), offset=3600.0)
    assert subs.lines[0].start == 3601.0 and subs.lines[-1].end == 7203.0


def test_overlap_lookup() -> None:
    subs = Subtitles([SubtitleLine(0, 10, "long"), SubtitleLine(5, 6, "short"), SubtitleLine(20, 21, "late")])
    assert [ln.text for ln in subs.overlapping(Interval(5.5, 5.6))] == ["long", "short"]
    assert [ln.text for ln in subs.overlapping(Interval(6, 20))] == ["long"]  # touching ends do not overlap
    assert [ln.text for ln in subs.overlapping(Interval(19, 30))] == ["late"]
    assert [ln.text for ln in subs.overlapping(Interval(20.5, 20.5))] == ["late"]  # an instant
    assert subs.overlapping(Interval(11, 19)) == []
    assert subs.text_for(Interval(0, 30), max_chars=12) == "long short…"


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("bad.srt", "this is not a subtitle file\n", "no subtitle cues"),
        ("bad.vtt", "00:01.000 --> 00:02.000\nx\n", "must start with 'WEBVTT'"),
        ("bad.json", "{not json", "invalid JSON"),
        ("bad2.json", json.dumps({"a": 1}), "must be a JSON list"),
        ("bad3.json", json.dumps([{"timestamp": [1]}]), "timestamp must be"),
        ("bad4.json", json.dumps([{"start": "soon", "end": "later"}]), "unreadable time"),
        ("bad.ass", "[Script Info]", "unsupported subtitle format"),
    ],
)
def test_unreadable_subtitles_raise_clear_errors(tmp_path: Path, name: str, text: str, message: str) -> None:
    with pytest.raises(SubtitleError, match=message):
        load_subtitles(write(tmp_path, name, text))


def test_missing_and_binary_subtitle_files(tmp_path: Path) -> None:
    with pytest.raises(SubtitleError, match="no such subtitle file"):
        load_subtitles(tmp_path / "nope.srt")
    binary = tmp_path / "bin.srt"
    binary.write_bytes(b"\xff\xfe\x00\x81\x9f garbage")
    with pytest.raises(SubtitleError, match="not UTF-8"):
        load_subtitles(binary)


def test_subtitles_by_cell_share_one_budget_and_keep_first_and_last_lines() -> None:
    lines = [SubtitleLine(float(t), t + 0.9, f"line {t} " + "words " * 6) for t in range(0, 60)]
    subs = Subtitles(lines)
    cells = [(f"cell {i}", Interval(i * 10.0, (i + 1) * 10.0)) for i in range(8)]  # cells 6 and 7 are silent
    text = subs.by_cell(cells, max_chars=600)
    rows = text.splitlines()
    assert [r.split(":")[0] for r in rows] == [f"cell {i}" for i in range(6)]
    assert len(text) <= 600 + len(rows) * len("cell 0: ")
    # Each cell's ten lines do not fit its share: its first and its last line are shown, not only the first.
    first = rows[2]
    assert first.startswith("cell 2: line 20") and "line 29" in first and "…" in first
    assert subs.by_cell([("cell 0", Interval(100.0, 110.0))]) == ""
    short = Subtitles([SubtitleLine(1.0, 2.0, "hi"), SubtitleLine(3.0, 4.0, "there")])
    assert short.by_cell([("cell 5", Interval(0.0, 10.0))]) == "cell 5: hi there"


def test_neighbouring_cells_that_hear_the_same_lines_share_one_line() -> None:
    # A sentence longer than the cells: said once for the run of cells it spans, whole within the budget.
    long = "Good evening. The night train tonight goes to Bristol."
    subs = Subtitles([SubtitleLine(1.0, 7.0, long), SubtitleLine(9.0, 11.0, "Your driver today is Maria.")])
    cells = [(f"1/{i}", Interval(i * 0.5, (i + 1) * 0.5)) for i in range(48)]
    assert subs.by_cell(cells, max_chars=120).splitlines() == [
        f"1/2 to 1/13: {long}",
        "1/18 to 1/21: Your driver today is Maria.",
    ]


def _deck_calls(cells: int) -> list[SubtitleLine]:
    """Four calls a minute for ``cells`` minutes, the same few sentences over and over."""
    calls = ("Mind the step on the deck.", "Hot drinks are sold on the deck.", "Lifejackets are under the seats.")
    return [SubtitleLine(15.0 * i, 15.0 * i + 4, calls[i % 3]) for i in range(4 * cells)]


def test_wide_cells_quote_what_bears_on_the_question_first() -> None:
    fact = SubtitleLine(5 * 60.0 + 31, 5 * 60.0 + 34, "The island ferry is painted orange this week.")
    subs = Subtitles([*_deck_calls(8), fact])
    cells = [(f"cell {i}", Interval(i * 60.0, (i + 1) * 60.0)) for i in range(8)]
    about = "What colour is the island ferry painted? orange green"
    plain = subs.by_cell(cells, max_chars=400).splitlines()
    asked = subs.by_cell(cells, max_chars=400, about=about).splitlines()
    # Without the question, cell 5 shows its first and its last call and cuts the fact away.
    assert not any("island" in row for row in plain)
    # With it, the fact is quoted whole in its own cell, marked as part of what was said there.
    assert asked[5] == "cell 5: … The island ferry is painted orange this week. …"
    # Every other cell still has its line, within the budget that is left to them.
    assert [r.split(":")[0] for r in asked] == [f"cell {i}" for i in range(8)]
    assert sum(len(r.split(": ", 1)[1]) for r in asked) <= 400
    # Here the fact's quote is as short as the share it replaces: the other cells read as they did without it.
    assert asked[:5] == plain[:5] and asked[6:] == plain[6:]
    # The nodes' helper asks with the question and its choices.
    ids = [(i, iv) for i, (_, iv) in enumerate(cells)]
    by_node = subtitles_by_cell(subs, ids, "What colour is the island ferry painted?", ["orange", "green"], 400)
    assert by_node.splitlines()[5] == asked[5]


def test_a_word_most_lines_say_marks_no_line() -> None:
    # "on", "the" and "deck" are said by most calls: sharing them is no reason to quote a call whole.
    subs = Subtitles(_deck_calls(8))
    cells = [(f"cell {i}", Interval(i * 60.0, (i + 1) * 60.0)) for i in range(8)]
    about = "What is on the deck?"
    assert subs.by_cell(cells, max_chars=400, about=about) == subs.by_cell(cells, max_chars=400)


ROUTINE = [
    SubtitleLine(60.0 * i, 60.0 * i + 3, "Please keep your belongings with you at all times.") for i in range(40)
]
FACT = SubtitleLine(1509.2, 1512.0, "Your driver today is Maria.")


def test_lines_that_fit_are_all_quoted_in_time_order() -> None:
    lines = ROUTINE[:3]
    assert fitting_lines(lines, "Who is the driver?", 10_000, lambda ln: len(ln.text)) == lines


def test_over_budget_the_line_sharing_the_rarest_words_with_the_question_is_kept() -> None:
    lines = sorted([*ROUTINE, FACT], key=lambda ln: ln.start)
    about = "Who does the announcer say is the driver today? Maria Peter Sofia James"
    kept = fitting_lines(lines, about, 300, lambda ln: len(ln.text) + 1)
    assert FACT in kept  # a cut in time order keeps the first five routine lines and drops it
    assert kept == sorted(kept, key=lambda ln: ln.start)
    assert sum(len(ln.text) + 1 for ln in kept) <= 300
    others = [ln for ln in kept if ln is not FACT]  # the room left: five routine lines, spread over the hour
    assert [ln.start for ln in others] == [0.0, 480.0, 960.0, 1860.0, 2340.0]


def test_speech_lines_quote_what_bears_on_the_question_and_count_what_was_left_out() -> None:
    said = Subtitles(sorted([*ROUTINE, FACT], key=lambda ln: ln.start))
    text = speech_lines(said, [Interval(0.0, 3600.0)], "Who is the driver today?", ["Maria", "Peter"], max_chars=400)
    assert '25:09.2-25:12.0: "Your driver today is Maria."' in text
    quoted = text.splitlines()[:-1]
    assert text.splitlines()[-1].startswith(f"(and {41 - len(quoted)} more stretches of speech")
    assert speech_lines(None, [Interval(0.0, 10.0)], "Who?", []) == "(none)"
