from __future__ import annotations

import pytest

from videoatlas.environment.timefmt import format_ts, parse_range, parse_time
from videoatlas.errors import BadInputError

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90", 90.0),
        ("90.5", 90.5),
        ("1:30", 90.0),
        ("01:02:03.5", 3723.5),
        ("0:59.9", 59.9),
        ("90:00", 5400.0),
        ("1h", 3600.0),
        ("10h", 36000.0),
        ("1h30m", 5400.0),
        ("45s", 45.0),
        ("250ms", 0.25),
        ("2m30s", 150.0),
    ],
)
def test_parse_time(text: str, seconds: float) -> None:
    assert parse_time(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "abc", "1h30x", "-5", "1:2:3:4", "inf", "nan", "1:99", "1:60:00", "0:00:60.5"])
def test_parse_time_rejects_garbage(text: str) -> None:
    with pytest.raises(BadInputError):
        parse_time(text)


def test_parse_range() -> None:
    assert parse_range("60-90") == (60.0, 90.0)
    assert parse_range("1:00-1:30") == (60.0, 90.0)
    with pytest.raises(BadInputError, match="ends before"):
        parse_range("90-60")
    with pytest.raises(BadInputError, match="START-END"):
        parse_range("90")


def test_format_ts() -> None:
    assert format_ts(3723.46) == "1:02:03.5"
    assert format_ts(59.99, 1) == "01:00.0"
    assert format_ts(5.0, 0) == "00:05"
    assert format_ts(0.137, 3) == "00:00.137"
