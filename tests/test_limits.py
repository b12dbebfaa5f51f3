"""The shared limits: what every command and a stored run configuration accept and refuse."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from videoatlas import limits
from videoatlas.errors import BadInputError, ImageLimitError
from videoatlas.runtime.config import RunConfig
from videoatlas.synth import SynthSpec

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(("k", "ok"), [(1, False), (2, True), (16, True), (17, False), (100, False), (True, False)])
def test_k_range(k: int, ok: bool) -> None:
    assert (limits.k_problem(k) is None) is ok


@pytest.mark.parametrize(("px", "ok"), [(31, False), (32, True), (1024, True), (1025, False)])
def test_cell_px_range(px: int, ok: bool) -> None:
    assert (limits.cell_px_problem(px) is None) is ok


def test_grid_side_is_capped_whatever_k_and_cell_size() -> None:
    limits.check_grid(8, 1024)  # 8192 px: the largest picture rendered
    with pytest.raises(BadInputError, match="16x16 grid of 1024 px cells is 16384 px on a side"):
        limits.check_grid(16, 1024)


def test_run_config_uses_the_same_limits() -> None:
    with pytest.raises(ValidationError, match="less than or equal to 16"):
        RunConfig(k=17)
    with pytest.raises(ValidationError, match="over the limit of 8192"):
        RunConfig(k=16, cell_px=1024)
    assert RunConfig(k=16, cell_px=512).k == 16


def test_image_fits_names_what_fits_and_how_to_raise_the_limit() -> None:
    limits.check_image_fits(8, 320, 12_845_056)  # the defaults, 2560 x 2560
    with pytest.raises(ImageLimitError, match=r"4096x4096 = 16,777,216 px.*cells of at most 224 px fit") as info:
        limits.check_image_fits(16, 256, 12_845_056)
    assert "VIDEOATLAS_MAX_IMAGE_PIXELS" in str(info.value)


@pytest.mark.parametrize(
    ("duration", "fps", "size", "fragment"),
    [
        (30, 5, (100_000, 100_000), "size must be even and between 160x90 and 3840x2160"),
        (10, 5, (640, 360), "at least 30 s"),
        (30, 0, (640, 360), "fps must be between"),
        (30, 5, (641, 360), "size must be even"),
        (86_400, 60, (3840, 2160), "gigapixels to encode"),
        (90_000, 2, (640, 360), "limited to 24 hours"),
    ],
)
def test_synthetic_videos_are_refused_before_any_work(
    duration: float, fps: float, size: tuple[int, int], fragment: str
) -> None:
    with pytest.raises(BadInputError, match=fragment):
        SynthSpec(duration=duration, fps=fps, width=size[0], height=size[1])


def test_synthetic_limits_accept_what_the_suite_makes() -> None:
    SynthSpec(duration=36_000, fps=2)  # the 10-hour suite video
    SynthSpec(duration=86_400, fps=5, width=1280, height=720)  # 398 gigapixels: just under the limit


@pytest.mark.parametrize(
    ("question", "choices", "fragment"),
    [
        ("  ", [], "the question is empty"),
        ("x" * 100_000, [], "100,000 characters long"),
        ("why?", ["only"], "at least two answer choices"),
        ("why?", ["yes", " Yes "], "given twice"),
        ("why?", ["yes", ""], "choice is empty"),
        ("why?", [str(i) for i in range(27)], "at most 26"),
        ("why?", ["a", "b" * 2000], "2,000 characters long"),
    ],
)
def test_bad_questions_and_choices(question: str, choices: list[str], fragment: str) -> None:
    with pytest.raises(BadInputError, match=fragment):
        limits.check_question(question, choices)


def test_good_questions() -> None:
    limits.check_question("What happens?", [])
    limits.check_question("Which?", ["red", "green"])
