"""The limits every entry point checks before doing any work: grid size, cells, synthetic videos, questions.

One place for them, so that ``grid``, ``ask``, ``eval run``, ``synth``, ``demo`` and a stored
:class:`~videoatlas.runtime.config.RunConfig` accept and refuse the same values with the same words.
Each ``*_problem`` function returns what is wrong (one line) or None; each ``check_*`` raises it as a
:class:`BadInputError`. This module imports nothing heavy: the CLI uses it before loading any model code.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from videoatlas.errors import BadInputError, ImageLimitError

K_MIN = 2
K_MAX = 16
"""Grid sizes: a 1 x 1 grid refines nothing; beyond 16 x 16 cells are too small to read at any cell size."""
CELL_PX_MIN = 32
CELL_PX_MAX = 1024
GRID_SIDE_MAX = 8192
"""The largest grid picture rendered at all (K x cell_px on a side): 67 megapixels, about 200 MB decoded."""

SYNTH_DURATION_MIN = 30.0
SYNTH_DURATION_MAX = 24 * 3600.0
SYNTH_WIDTH_RANGE = (160, 3840)
SYNTH_HEIGHT_RANGE = (90, 2160)
SYNTH_FPS_RANGE = (0.5, 60.0)
SYNTH_GIGAPIXELS_MAX = 400.0
"""Frames x pixels a synthetic video may take to encode: 24 hours of 1280x720 at 5 fps is 398 (hours of work);
the default 10-hour video (640x360 at 2 fps) is 17."""

QUESTION_MAX_CHARS = 4000
CHOICE_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
"""The labels of choices, in order (prompts, lmms-eval's documents and their scoring)."""
CHOICES_MAX = len(CHOICE_LETTERS)
"""Choices are labelled A to Z."""
CHOICE_MAX_CHARS = 1000


def k_problem(k: object) -> str | None:
    """Why ``k`` cannot be a grid size, or None."""
    if isinstance(k, bool) or not isinstance(k, int) or not K_MIN <= k <= K_MAX:
        return f"grid size K must be an integer between {K_MIN} and {K_MAX}, got {k!r}"
    return None


def cell_px_problem(cell_px: object) -> str | None:
    """Why ``cell_px`` cannot be a cell size, or None."""
    if isinstance(cell_px, bool) or not isinstance(cell_px, int) or not CELL_PX_MIN <= cell_px <= CELL_PX_MAX:
        return f"cell size must be between {CELL_PX_MIN} and {CELL_PX_MAX} px, got {cell_px!r}"
    return None


def grid_problem(k: object, cell_px: object) -> str | None:
    """Why a ``k`` x ``k`` grid of ``cell_px`` cells cannot be rendered, or None."""
    problem = k_problem(k) or cell_px_problem(cell_px)
    if problem is not None:
        return problem
    assert isinstance(k, int) and isinstance(cell_px, int)
    if k * cell_px > GRID_SIDE_MAX:
        return (
            f"a {k}x{k} grid of {cell_px} px cells is {k * cell_px} px on a side, over the limit of "
            f"{GRID_SIDE_MAX}; use a smaller K or cell size"
        )
    return None


def check_k(k: object) -> None:
    """Refuse a grid size outside ``K_MIN..K_MAX``."""
    _raise(k_problem(k))


def check_grid(k: object, cell_px: object) -> None:
    """Refuse a grid size, a cell size, or a grid picture larger than ``GRID_SIDE_MAX`` on a side."""
    _raise(grid_problem(k, cell_px))


def check_image_fits(k: int, cell_px: int, max_pixels: int) -> None:
    """Refuse, before a run starts, a grid picture the endpoint would not accept (``max_pixels`` per image)."""
    side = k * cell_px
    if side * side > max_pixels:
        fitting = math.isqrt(max_pixels) // k
        hint = f"at K={k}, cells of at most {fitting} px fit" if fitting >= CELL_PX_MIN else "use a smaller K"
        raise ImageLimitError(
            f"a {k}x{k} grid of {cell_px} px cells is {side}x{side} = {side * side:,} px, over the endpoint's "
            f"limit of {max_pixels:,} px per image ({hint}; a server that takes more: --max-image-pixels or "
            "VIDEOATLAS_MAX_IMAGE_PIXELS)"
        )


def finest_level(duration: float, fps: float, k: int) -> int:
    """The longest cell path worth expanding: its cell still spans at least one frame (``K**(2L) <= T * fps``)."""
    frames = duration * fps
    level = 0
    while k ** (2 * (level + 1)) <= frames:
        level += 1
    return level


def depth_problem(path: Sequence[int], duration: float, fps: float, k: int) -> str | None:
    """Why expanding ``path`` would show less than one frame per cell of the expanded cell, or None.

    Past the video's resolution every cell of the grid shows the same frame: such a path is refused
    with the finest level the video has.
    """
    if not path or fps <= 0 or not math.isfinite(fps):
        return None
    finest = finest_level(duration, fps, k)
    if len(path) <= finest:
        return None
    shown = "/".join(str(i) for i in path)
    first_too_fine = "/".join(str(i) for i in path[: finest + 1])
    span = duration / k ** (2 * (finest + 1))
    ids = "id" if finest == 1 else "ids"
    deepest = (
        f"the finest level here is {finest}: expand paths of at most {finest} {ids}, such as "
        + "/".join(str(i) for i in path[:finest])
        if finest
        else "only the root grid can be shown here (leave --cell out)"
    )
    return (
        f"cell {shown} is finer than the video: cell {first_too_fine} lasts {span:.3f} s, less than one frame "
        f"({1 / fps:.3f} s at {fps:g} fps); {deepest}"
    )


def synth_problem(duration: float, fps: float, width: int, height: int) -> str | None:
    """Why a synthetic video of this length, rate and size cannot be made, or None."""
    if not math.isfinite(duration) or duration < SYNTH_DURATION_MIN:
        return f"synthetic videos must last at least {SYNTH_DURATION_MIN:g} s, got {duration}"
    if duration > SYNTH_DURATION_MAX:
        return f"synthetic videos are limited to {SYNTH_DURATION_MAX / 3600:g} hours"
    (w_min, w_max), (h_min, h_max) = SYNTH_WIDTH_RANGE, SYNTH_HEIGHT_RANGE
    if not (w_min <= width <= w_max and h_min <= height <= h_max) or width % 2 or height % 2:
        return f"size must be even and between {w_min}x{h_min} and {w_max}x{h_max}, got {width}x{height}"
    low, high = SYNTH_FPS_RANGE
    if not (math.isfinite(fps) and low <= fps <= high):
        return f"fps must be between {low:g} and {high:g}, got {fps}"
    gigapixels = duration * fps * width * height / 1e9
    if gigapixels > SYNTH_GIGAPIXELS_MAX:
        return (
            f"{duration / 3600:.3g} hours at {fps:g} fps and {width}x{height} is {gigapixels:,.0f} gigapixels to "
            f"encode, over the limit of {SYNTH_GIGAPIXELS_MAX:g}; use a smaller size, a lower fps or a shorter video"
        )
    return None


def check_synth(duration: float, fps: float, width: int, height: int) -> None:
    """Refuse a synthetic video that is too short, too long, too large or too much work to encode."""
    _raise(synth_problem(duration, fps, width, height))


def question_problem(question: str) -> str | None:
    """Why ``question`` cannot be asked, or None."""
    if not question.strip():
        return "the question is empty"
    if len(question) > QUESTION_MAX_CHARS:
        return f"the question is {len(question):,} characters long; at most {QUESTION_MAX_CHARS:,} are accepted"
    return None


def choices_problem(choices: Sequence[str]) -> str | None:
    """Why these answer choices cannot be offered, or None (none at all: an open-ended question)."""
    if not choices:
        return None
    if len(choices) < 2:
        return "give at least two answer choices (or none, for an open-ended question)"
    if len(choices) > CHOICES_MAX:
        return f"{len(choices)} answer choices; at most {CHOICES_MAX} (A to Z) are accepted"
    seen: set[str] = set()
    for choice in choices:
        if not choice.strip():
            return "an answer choice is empty"
        if len(choice) > CHOICE_MAX_CHARS:
            return f"an answer choice is {len(choice):,} characters long; at most {CHOICE_MAX_CHARS:,} are accepted"
        folded = " ".join(choice.split()).casefold()
        if folded in seen:
            return f"answer choice {choice.strip()!r} is given twice"
        seen.add(folded)
    return None


def check_question(question: str, choices: Sequence[str]) -> None:
    """Refuse an empty or overlong question, a single choice, duplicate, empty or overlong choices."""
    _raise(question_problem(question) or choices_problem(choices))


def _raise(problem: str | None) -> None:
    if problem is not None:
        raise BadInputError(problem)
