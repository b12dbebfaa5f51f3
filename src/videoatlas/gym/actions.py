"""The environment's discrete action space: the paper's actions over (action, cell) pairs, then the commits.

For a ``K x K`` grid the space is laid out as six blocks of ``K*K`` per-cell actions, then the
actions that take no cell, then one ANSWER per choice slot::

    EXPAND c | ZOOM c | INVESTIGATE_BEFORE c | INVESTIGATE_AFTER c | ADD c | MARK c
    BACKTRACK | FINISHED | COMMIT | ANSWER 0 .. ANSWER max_choices-1

``ADD`` is ADD_TO_SCRATCHPAD of one cell's frame and ``MARK`` is MARK_PROMISING of one cell;
``COMMIT`` ends a grounding episode with the scratchpad's span, ``ANSWER i`` a question-answering one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

CellAction = Literal["EXPAND", "ZOOM", "INVESTIGATE_BEFORE", "INVESTIGATE_AFTER", "ADD", "MARK"]
CELL_ACTIONS: tuple[CellAction, ...] = ("EXPAND", "ZOOM", "INVESTIGATE_BEFORE", "INVESTIGATE_AFTER", "ADD", "MARK")
PLAIN_ACTIONS = ("BACKTRACK", "FINISHED", "COMMIT")


@dataclass(frozen=True, slots=True)
class Action:
    """A decoded action: its name and the cell (or choice) it applies to."""

    name: str
    arg: int | None = None

    def __str__(self) -> str:
        return self.name if self.arg is None else f"{self.name}({self.arg})"


@dataclass(frozen=True, slots=True)
class ActionLayout:
    """The mapping between action ids and :class:`Action` for one grid size and choice count."""

    k: int
    max_choices: int

    @property
    def cells(self) -> int:
        """Cells per grid."""
        return self.k * self.k

    @property
    def size(self) -> int:
        """How many actions there are."""
        return len(CELL_ACTIONS) * self.cells + len(PLAIN_ACTIONS) + self.max_choices

    def decode(self, action: int) -> Action:
        """The action an id stands for."""
        if not 0 <= action < self.size:
            raise ValueError(f"action {action} is outside the action space (0..{self.size - 1})")
        block, rest = divmod(action, self.cells)
        if block < len(CELL_ACTIONS):
            return Action(CELL_ACTIONS[block], rest)
        rest = action - len(CELL_ACTIONS) * self.cells
        if rest < len(PLAIN_ACTIONS):
            return Action(PLAIN_ACTIONS[rest])
        return Action("ANSWER", rest - len(PLAIN_ACTIONS))

    def encode(self, name: str, arg: int | None = None) -> int:
        """The id of an action (``encode("EXPAND", 5)``, ``encode("ANSWER", 2)``, ``encode("BACKTRACK")``)."""
        if name in CELL_ACTIONS:
            if arg is None or not 0 <= arg < self.cells:
                raise ValueError(f"{name} needs a cell 0..{self.cells - 1}")
            return CELL_ACTIONS.index(name) * self.cells + arg
        base = len(CELL_ACTIONS) * self.cells
        if name in PLAIN_ACTIONS:
            return base + PLAIN_ACTIONS.index(name)
        if name == "ANSWER":
            if arg is None or not 0 <= arg < self.max_choices:
                raise ValueError(f"ANSWER needs a choice 0..{self.max_choices - 1}")
            return base + len(PLAIN_ACTIONS) + arg
        raise ValueError(f"unknown action {name!r}")
