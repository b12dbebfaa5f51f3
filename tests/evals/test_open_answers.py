"""The open-answer scorer: the reply must be the value (normalised exact match, or number match)."""

from __future__ import annotations

import pytest

from videoatlas.evals.items import EvalItem
from videoatlas.evals.open_answers import as_number, normalise, open_match
from videoatlas.evals.results import answered_right, result_key

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("reply", "truth"),
    [
        ("QU-8424", "QU-8424"),
        ("  qu-8424. ", "QU-8424"),
        ('"QU\u20118424"', "QU-8424"),  # a non-breaking hyphen and quotes
        ("The red star", "red star"),
        ("Red   STAR!", "red star"),
        ("3", "3"),
        ("three", "3"),
        ("3 times", "3"),
        ("3.0", "3"),
        ("1,200", "1200"),
        ("1:02:03", "3723"),
        ("01:02:03", "1:02:03"),
        ("62:03", "1:02:03"),
        ("harbour", "port|harbour"),
    ],
)
def test_a_reply_that_is_the_value_matches(reply: str, truth: str) -> None:
    assert open_match(reply, truth)


@pytest.mark.parametrize(
    ("reply", "truth"),
    [
        ("Seen: item A at 5400.0 s shows: QU-8424", "QU-8424"),  # contains the value: not the value
        ("QU-8424 and ZQ-5717", "QU-8424"),
        ("QU8424", "QU-8424"),
        ("4", "3"),
        ("about 3 times in all", "3"),
        ("3 or 4", "3"),
        ("the code 3", "3"),
        ("", "3"),
        ("   ", "red star"),
        ("red", "red star"),
        ("1:02:05", "1:02:03"),
    ],
)
def test_a_reply_that_is_not_exactly_the_value_is_wrong(reply: str, truth: str) -> None:
    assert not open_match(reply, truth)


def test_a_numeric_truth_takes_its_tolerance() -> None:
    assert open_match("1:02:05", "1:02:03", tolerance=2.0)
    assert not open_match("1:02:06", "1:02:03", tolerance=2.0)
    assert open_match("3725 s", "3723", tolerance=2.0)


def test_normalise_and_as_number() -> None:
    assert normalise("  The  Quick\tFox. ") == "quick fox"
    assert normalise("a") == "a"  # an article alone is the value, not dropped
    assert as_number("twelve") == 12.0
    assert as_number("2.5 s") == 2.5
    assert as_number("QU-8424") is None
    assert as_number("3 4") is None


def _open(**kw: object) -> EvalItem:
    base: dict[str, object] = {
        "dataset": "d",
        "id": "q",
        "video_id": "v",
        "video": "v.mp4",
        "question": "How many?",
        "choices": [],
        "answer_index": None,
    }
    return EvalItem(**{**base, **kw})  # type: ignore[arg-type]


def test_the_one_scoring_rule_covers_open_and_multiple_choice_items() -> None:
    assert answered_right(_open(answer_text="2"), "two", None)
    assert not answered_right(_open(answer_text="2"), "Seen: 2 items", None)
    assert not answered_right(_open(), "anything", None)  # no known value: never right
    mcq = _open(choices=["1", "2"], answer_index=1)
    assert answered_right(mcq, "2", 1)
    assert not answered_right(mcq, "2", 0)


def test_result_keys_of_multiple_choice_items_do_not_change_with_open_fields() -> None:
    """Adding the open-answer fields left every existing key as it was; setting them changes the key."""
    mcq = _open(choices=["1", "2"], answer_index=1)
    material = mcq.key_material()
    assert "answer_text" not in material and "answer_tolerance" not in material
    opened = _open(answer_text="2")
    assert result_key(opened, "a", "p", "m", {}, agent_code="c") != result_key(
        _open(answer_text="3"), "a", "p", "m", {}, agent_code="c"
    )
