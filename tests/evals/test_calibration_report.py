"""Calibration in `eval report` and `eval compare`: ECE, both Brier forms, accuracy at coverage, the counts.

A hand-made results file whose figures are worked out by hand below, checked through the commands'
own code (``videoatlas eval report`` / ``eval compare``, text and ``--json``); declined and
no-probability rows counted apart; rows written before probabilities were recorded still report.

The twelve calibrated rows (truth is choice 0 unless said; ✓ right, ✗ wrong):

====  =====================  ======  ==========  =====  ===================================
row   probabilities          answer  confidence  right  multi-class Brier sum (p_i - [i=truth])^2
====  =====================  ======  ==========  =====  ===================================
q01   .9 .1 0 0              0       0.9         ✓      .01 + .01                  = 0.02
q02   1 0 0 0                0       1.0         ✓      0                          = 0
q03   .05 .95 0 0            1       0.95        ✗      .9025 + .9025              = 1.805
q04   .7 .1 .1 .1            0       0.7         ✓      .09 + 3 x .01              = 0.12
q05   .7 .3 0 0              0       0.7         ✓      .09 + .09                  = 0.18
q06   .2 .7 .1 0             1       0.7         ✗      .64 + .49 + .01            = 1.14
q07   .7 .2 .1 0             0       0.7         ✓      .09 + .04 + .01            = 0.14
q08   .4 .5 .1 0             1       0.5         ✗      .36 + .25 + .01            = 0.62
q09   .5 .3 .2 0             0       0.5         ✓      .25 + .09 + .04            = 0.38
q10   .3 .25 .25 .2 (truth 1) 0      0.3         ✗      .09 + .5625 + .0625 + .04  = 0.755
q11   open, no choices       "3"     0.8         ✓      binary (0.8 - 1)^2         = 0.04
q12   open, no choices       "7"     0.2         ✗      binary (0.2 - 0)^2         = 0.04
====  =====================  ======  ==========  =====  ===================================

Brier (choices) = (0.02 + 0 + 1.805 + 0.12 + 0.18 + 1.14 + 0.14 + 0.62 + 0.38 + 0.755) / 10 = 5.16 / 10 = 0.516;
Brier (binary) = (0.04 + 0.04) / 2 = 0.04; never averaged together.

Bins (an edge goes to the bin above it; 1.0 to the last):
  [0.2, 0.3): q12            1 row,  mean conf 0.2,  accuracy 0,    gap 0.2
  [0.3, 0.4): q10            1 row,  mean conf 0.3,  accuracy 0,    gap 0.3
  [0.5, 0.6): q08 q09        2 rows, mean conf 0.5,  accuracy 0.5,  gap 0
  [0.7, 0.8): q04 .. q07     4 rows, mean conf 0.7,  accuracy 0.75, gap 0.05
  [0.8, 0.9): q11            1 row,  mean conf 0.8,  accuracy 1,    gap 0.2
  [0.9, 1.0]: q01 q02 q03    3 rows, mean conf 0.95, accuracy 2/3,  gap |2/3 - 0.95|, x 3 = 0.85
ECE = (0.2 + 0.3 + 0 + 4 x 0.05 + 0.2 + 0.85) / 12 = 1.75 / 12 = 0.1458333...

Coverage, most confident first (ties by item id):
  q02 ✓ q03 ✗ q01 ✓ q11 ✓ q04 ✓ q05 ✓ | q06 ✗ q07 ✓ q08 ✗ q09 ✓ | q10 ✗ q12 ✗
  50%: ceil(6) = 6 rows, 5 right: 5/6 = 0.8333 (the tie at 0.7 is cut by item id: q04 and q05 in, q06 out);
  80%: ceil(9.6) = 10 rows, 7 right: 0.7;  100%: 12 rows, 7 right: 7/12 = 0.5833.

Left out and counted apart: q13 declined (even with a confidence), q14 a parse failure with probabilities
but no confidence and q15 a row written before probabilities were kept ("no probability": 2), q16 a
failed run, q17 an open question without a known value (unscored).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from calibration_helpers import choice_row, eval_folder, hand_made_rows, open_row, plain_row
from videoatlas.cli.main import main
from videoatlas.errors import BadInputError
from videoatlas.evals.calibration import bin_of, calibrate

pytestmark = pytest.mark.unit

FIXTURES = Path(__file__).parents[1] / "fixtures" / "e9ceea9"
PNG = b"\x89PNG\r\n\x1a\n"


HAND_MADE_LINE = "| all | 12 | 0.146 | 0.516 (10) | 0.040 (2) | 83.3% | 70.0% | 58.3% | 1 | 2 |"
"""The report's calibration line: calibrated, ECE, Brier (choices) and (binary) with their rows, accuracy
at 50/80/100% coverage, declined, no probability."""


def _json_out(capsys: pytest.CaptureFixture[str], argv: list[str]) -> dict[str, Any]:
    assert main(argv) == 0
    out: dict[str, Any] = json.loads(capsys.readouterr().out)
    return out


def test_the_report_gives_the_figures_worked_out_by_hand(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = eval_folder(tmp_path / "ev", hand_made_rows())
    rep = _json_out(capsys, ["eval", "report", str(folder), "--json"])
    c = rep["calibration"]
    assert c["recorded"] is True
    assert (c["rows"], c["declined"], c["without_probability"], c["failed"], c["unscored"]) == (12, 1, 2, 1, 1)
    assert c["ece"] == pytest.approx(1.75 / 12, abs=1e-12)
    assert (c["brier"], c["brier_rows"]) == (pytest.approx(0.516, abs=1e-12), 10)
    assert (c["brier_binary"], c["brier_binary_rows"]) == (pytest.approx(0.04, abs=1e-12), 2)
    assert c["accuracy_at_coverage"] == {"50": pytest.approx(5 / 6), "80": pytest.approx(0.7), "100": 7 / 12}
    bins = {round(b["low"], 1): (b["count"], b["mean_confidence"], b["accuracy"]) for b in c["bins"] if b["count"]}
    assert bins == {
        0.2: (1, 0.2, 0.0),
        0.3: (1, 0.3, 0.0),
        0.5: (2, 0.5, 0.5),
        0.7: (4, pytest.approx(0.7), 0.75),
        0.8: (1, 0.8, 1.0),
        0.9: (3, pytest.approx(0.95), pytest.approx(2 / 3)),
    }
    assert [b["count"] for b in c["bins"]] == [0, 0, 1, 1, 0, 2, 0, 4, 1, 3]
    assert rep["reliability_plot"] == str(folder / "reliability.png")
    assert (folder / "reliability.png").read_bytes()[:8] == PNG
    assert json.loads((folder / "report.json").read_text())["calibration"] == c

    assert main(["eval", "report", str(folder)]) == 0
    text = capsys.readouterr().out
    assert "| calibration | calibrated | ECE | Brier (choices) | Brier (binary) | accuracy at 50% |" in text
    assert HAND_MADE_LINE in text
    assert "| 0.9-1.0 | 3 | 0.950 | 66.7% |" in text and "| 0.7-0.8 | 4 | 0.700 | 75.0% |" in text
    assert "| 0.0-0.1 |" not in text  # empty bins are not listed
    assert f"reliability plot: {folder / 'reliability.png'}" in text
    assert HAND_MADE_LINE in (folder / "report.md").read_text()


def test_the_calibration_does_not_depend_on_the_rows_order() -> None:
    rows = hand_made_rows()
    assert calibrate(rows) == calibrate(list(reversed(rows)))


def test_several_agents_report_their_calibration_side_by_side(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = eval_folder(tmp_path / "a", hand_made_rows())
    b = eval_folder(tmp_path / "b", [plain_row(f"q{i}") for i in range(1, 4)], agent="uniform")  # no probabilities
    plot = tmp_path / "all-reliability.png"
    out = _json_out(capsys, ["eval", "report", str(a), str(b), "--reliability-plot", str(plot), "--json"])
    assert [r["calibration"]["rows"] for r in out["reports"]] == [12, 0]
    assert out["reports"][1]["calibration"]["without_probability"] == 3
    assert out["reliability_plot"] == str(plot) and plot.read_bytes()[:8] == PNG
    assert main(["eval", "report", str(a), str(b)]) == 0
    text = capsys.readouterr().out
    assert HAND_MADE_LINE.replace("| all |", "| a (video-rlm, prompts default) |") in text
    assert "| b (uniform, prompts default) | 0 | - | - | - | - | - | - | 0 | 3 |" in text


def test_compare_puts_both_sides_calibration_side_by_side(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """B answers every question right, each with 0.8 on its answer: all in the [0.8, 0.9) bin, accuracy 1.

    ECE = |1 - 0.8| = 0.2; Brier (choices) = (0.8 - 1)^2 + 0.2^2 = 0.08 over the 13 multiple-choice
    questions (q01-q10, q14-q16), binary (0.8 - 1)^2 = 0.04 over the three open ones (q11-q13); q17
    has no known answer, so it is not paired and A's side is the hand-made figures.
    """
    rows_a = hand_made_rows()
    rows_b = []
    for row in rows_a:
        if row.get("truth_text"):
            rows_b.append(open_row(row["item"], row["truth_text"], 0.8, truth=row["truth_text"]))
        elif row["item"] != "q17":
            truth = row["truth_index"]
            rows_b.append(choice_row(row["item"], _shifted(truth), truth, truth))
    a, b = eval_folder(tmp_path / "a", rows_a), eval_folder(tmp_path / "b", rows_b, agent="uniform")
    plot = tmp_path / "cmp-reliability.png"
    cmp = _json_out(capsys, ["eval", "compare", str(a), str(b), "--reliability-plot", str(plot), "--json"])
    ca, cb = cmp["calibration"]["a"], cmp["calibration"]["b"]
    assert (ca["rows"], ca["ece"], ca["brier"], ca["unscored"]) == (
        12,
        pytest.approx(1.75 / 12),
        pytest.approx(0.516),
        0,
    )
    assert (cb["rows"], cb["ece"], cb["declined"], cb["without_probability"]) == (16, pytest.approx(0.2), 0, 0)
    assert (cb["brier"], cb["brier_rows"]) == (pytest.approx(0.08), 13)
    assert (cb["brier_binary"], cb["brier_binary_rows"]) == (pytest.approx(0.04), 3)
    assert cb["accuracy_at_coverage"] == {"50": 1.0, "80": 1.0, "100": 1.0}
    assert cmp["reliability_plot"] == str(plot) and plot.read_bytes()[:8] == PNG

    assert main(["eval", "compare", str(a), str(b)]) == 0
    text = capsys.readouterr().out
    assert "| side | calibrated | ECE | Brier (choices) | Brier (binary) |" in text
    assert HAND_MADE_LINE.replace("| all |", "| A |") in text
    assert "| B | 16 | 0.200 | 0.080 (13) | 0.040 (3) | 100.0% | 100.0% | 100.0% | 0 | 0 |" in text


def _shifted(truth: int) -> list[float]:
    """0.8 on the truth, 0.2 on the next choice, 0 on the others (four choices)."""
    out = [0.0] * 4
    out[truth], out[(truth + 1) % 4] = 0.8, 0.2
    return out


def test_old_rows_still_report_and_say_no_probabilities_were_recorded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The rows commit e9ceea9 wrote (one finished, one failed run) have neither field."""
    folder = shutil.copytree(FIXTURES / "eval-rlm", tmp_path / "eval-rlm")
    rep = _json_out(capsys, ["eval", "report", str(folder), "--json"])
    c = rep["calibration"]
    assert (c["recorded"], c["rows"], c["without_probability"], c["failed"]) == (False, 0, 1, 1)
    assert (c["ece"], c["brier"], c["brier_binary"]) == (None, None, None)
    assert c["accuracy_at_coverage"] == {"50": None, "80": None, "100": None}
    assert rep["overall"]["accuracy"] == 0.5 and rep["reliability_plot"] is None
    assert not (folder / "reliability.png").exists()
    assert main(["eval", "report", str(folder)]) == 0
    text = capsys.readouterr().out
    assert "Calibration: no probabilities were recorded (1 answered question(s) without one" in text
    assert "| calibration | calibrated |" not in text
    assert "reliability plot: none (no probabilities were recorded)" in text
    other = shutil.copytree(FIXTURES / "eval-rlm", tmp_path / "other")
    assert main(["eval", "compare", str(folder), str(other), "--resamples", "100"]) == 0
    assert "Calibration: no probabilities were recorded." in capsys.readouterr().out


@pytest.mark.parametrize(
    ("confidence", "index"), [(0.0, 0), (0.0999, 0), (0.1, 1), (0.3, 3), (0.7, 7), (0.8999, 8), (0.9, 9), (1.0, 9)]
)
def test_a_confidence_on_an_edge_goes_to_the_bin_above(confidence: float, index: int) -> None:
    assert bin_of(confidence) == index


def test_coverage_keeps_the_ceiling_of_its_share() -> None:
    """15 rows: 80% keeps 12 (0.8 x 15 is 12.000000000000002 in floats, whose ceiling would be 13), 50% keeps 8."""
    rows = [choice_row(f"q{i:02}", [1 - i / 100, i / 100, 0.0, 0.0], 0 if i < 12 else 1) for i in range(15)]
    coverage = calibrate(rows).accuracy_at_coverage
    assert coverage == {"50": 1.0, "80": 1.0, "100": 12 / 15}


def test_a_confidence_outside_zero_to_one_is_refused() -> None:
    with pytest.raises(BadInputError, match=r"'q1': confidence 1\.5 is not a probability"):
        calibrate([open_row("q1", "3", 1.5)])
    with pytest.raises(BadInputError, match="truth index 4 is not one of its 4 choices"):
        calibrate([choice_row("q1", [0.7, 0.1, 0.1, 0.1], 0, truth=4)])
