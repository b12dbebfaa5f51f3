"""lmms-eval documents read as our questions, and our answers written as the text lmms-eval's scorers read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from videoatlas.errors import BadInputError
from videoatlas.evals.items import EvalItem
from videoatlas.lmms.docs import ITEM_FIELD, answer_text, item_of, response, run_of
from videoatlas.runs import RunResult
from videoatlas.state.models import Cost

pytestmark = pytest.mark.unit


def _result(answer: str, index: int | None, run_id: str = "ev-0123456789abcdef01234567") -> RunResult:
    return RunResult(run_id, "q", [], answer, index, "", [], [], Cost(), 1, "answered", 1.0)


def test_our_tasks_carry_the_question_whole() -> None:
    item = EvalItem("jsonl", "q1", "v", "/videos/v.mp4", "Which?", ["a", "b"], 1, subtitles="/videos/v.srt")
    doc = {ITEM_FIELD: json.dumps(item.as_dict()), "question": "shown only"}
    assert item_of(doc, "videoatlas_jsonl", 0, ["/elsewhere.mp4"]) == item


def test_video_mme_document_options_lose_their_letters_and_the_subtitle_variant_takes_the_srt(tmp_path: Path) -> None:
    video = tmp_path / "videomme" / "data" / "abc.mp4"
    srt = tmp_path / "videomme" / "subtitle" / "abc.srt"
    srt.parent.mkdir(parents=True)
    srt.write_text("1\n00:00:01,000 --> 00:00:02,000\nhi\n")
    doc = {"question_id": "001-1", "videoID": "abc", "question": "How many?", "options": ["A. 1.", "B. 2.", "C. 3."]}
    plain = item_of(doc, "videomme", 4, [str(video)])
    assert (plain.id, plain.video_id, plain.video, plain.choices) == ("001-1", "abc", str(video), ["1.", "2.", "3."])
    assert plain.subtitles is None and plain.answer_index is None  # the truth stays with lmms-eval's task
    assert item_of(doc, "videomme_w_subtitle", 4, [str(video)]).subtitles == str(srt)


def test_longvideobench_document_drops_the_padding_options() -> None:
    doc = {"id": "x_0", "video_id": "x", "question": "Q?", "correct_choice": 1}
    doc |= {"option0": "red", "option1": "blue", "option2": "green", "option3": "N/A", "option4": "N/A"}
    item = item_of(doc, "longvideobench_val_v", 0, ["/v/x.mp4"])
    assert (item.id, item.choices) == ("x_0", ["red", "blue", "green"])


def test_lvbench_document_with_options_apart_or_inside_the_question() -> None:
    apart = item_of({"uid": 7, "key": "k", "question": "Q?", "options": ["a", "b"]}, "lvbench", 0, ["/v/k.mp4"])
    inside = item_of({"uid": 7, "key": "k", "question": "Q?\n(A) a\n(B) b", "options": []}, "lvbench", 0, ["/v/k.mp4"])
    assert (apart.id, apart.question, apart.choices) == ("7", "Q?", ["a", "b"])
    assert (inside.question, inside.choices) == ("Q?", ["a", "b"])


def test_documents_the_model_cannot_read_are_refused_in_one_line() -> None:
    with pytest.raises(BadInputError, match="task mmmu_val: the videoatlas model answers the videoatlas_"):
        item_of({"question": "Q?"}, "mmmu_val", 0, ["/v.mp4"])
    with pytest.raises(BadInputError, match="takes one video file per question"):
        item_of({"question": "Q?", "options": ["a", "b"]}, "videomme", 0, [object(), object()])
    with pytest.raises(BadInputError, match="not an items-file record"):
        item_of({ITEM_FIELD: "[1, 2]"}, "videoatlas_jsonl", 3, [])


def test_the_response_names_the_run_then_gives_the_letter_the_scorer_reads() -> None:
    mcq = EvalItem("d", "1", "v", "/v.mp4", "Q?", ["a", "b", "c"], 2)
    text = response(mcq, _result("c", 2))
    assert text == "<think>videoatlas run ev-0123456789abcdef01234567</think>C"
    assert run_of(text) == "ev-0123456789abcdef01234567"
    assert text.split("</think>")[0] == text.split("</think>")[0].lower()  # no letter a scorer could take
    assert answer_text(mcq, _result("", None)) == ""  # no option chosen: nothing to read, never a guess
    open_ended = EvalItem("d", "1", "v", "/v.mp4", "What is shown?", [], None)
    assert answer_text(open_ended, _result("a red card", None)) == "a red card"
    assert run_of("B") is None
