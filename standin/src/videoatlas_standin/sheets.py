"""Pictures that are pages of one contact sheet: frames at one even step, split over several images.

A look through many frames may come as several pictures (mosaics of six, say), each labelled with
its frames' times. The frame that follows the last one of a picture is then the first one of the
next, so a walk in time ("what comes right after X") goes on from one page to the next.
:func:`sheet_cells` joins the pictures that continue one another: their frames are as far apart as
each page's own, and the next page starts about one step after the last ended. Pictures whose times
overlap or jump (a grid beside a close-up of one of its cells, or two stretches far apart) are not
pages of one sheet. Nothing here names a video, a prompt or an agent.
"""

from __future__ import annotations

import itertools
import statistics

from videoatlas_standin.perception import Sight, Tile

SAME_STEP = 0.25
"""How far (as a share) two pages' steps between frames may differ and still be one sheet's."""


def timed_tiles(sight: Sight) -> list[Tile]:
    """A picture's tiles that carry a time, in time order."""
    return sorted((t for t in sight.tiles if t.time is not None), key=lambda t: t.time or 0.0)


def grid_cells(sight: Sight) -> list[Tile]:
    """A picture's time-labelled grid cells, in time order (cell number within one time)."""
    return sorted(
        (t for t in sight.tiles if t.cell is not None and t.time is not None), key=lambda t: (t.time or 0.0, t.cell)
    )


def _step(cells: list[Tile]) -> float | None:
    """The typical step between a page's frames (None: fewer than two, or no time between them)."""
    gaps = [(b.time or 0.0) - (a.time or 0.0) for a, b in itertools.pairwise(cells)]
    gaps = [g for g in gaps if g > 0]
    return statistics.median(gaps) if gaps else None


def sheet_cells(sights: list[Sight], image: int) -> list[Tile]:
    """The time-labelled cells of picture ``image`` and of the pictures that continue it as pages, in time order.

    Pages are joined forwards and backwards from ``image``, one at a time: a page joins when its
    step is the sheet's (within :data:`SAME_STEP`) and its first frame comes after the sheet's last
    one by no more than one and a half steps (or its last before the sheet's first, going back).
    Pictures of one frame each are pages of one another, their step the typical one between them.
    """
    own = grid_cells(sights[image])
    step = _step(own) if len(own) > 1 else _single_step(sights)
    if step is None or not own:
        return own
    pages = [
        c
        for i, s in enumerate(sights)
        if i != image and (c := grid_cells(s)) and (_near(_step(c), step) or (len(c) == 1 and len(own) == 1))
    ]
    sheet = list(own)
    joined = True
    while joined:
        joined = False
        for page in pages:
            first, last = page[0].time or 0.0, page[-1].time or 0.0
            after = 0 < first - (sheet[-1].time or 0.0) <= 1.5 * step
            before = 0 < (sheet[0].time or 0.0) - last <= 1.5 * step
            if after or before:
                sheet = page + sheet if before else sheet + page
                pages.remove(page)
                joined = True
                break
    return sheet


def _single_step(sights: list[Sight]) -> float | None:
    """The typical step between the frames sent one picture each (None: fewer than two such pictures)."""
    singles = [c[0] for s in sights if len(c := grid_cells(s)) == 1]
    return _step(sorted(singles, key=lambda t: t.time or 0.0))


def _near(step: float | None, other: float) -> bool:
    return step is not None and abs(step - other) <= SAME_STEP * other
