"""Helpers for tests of the synthetic suite's videos being made."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager


def recorder(made: list[str]) -> Callable[[str], AbstractContextManager[Callable[[int, int], None]]]:
    """A ``making`` progress that notes the label of each video made in ``made``."""

    @contextmanager
    def making(label: str) -> Iterator[Callable[[int, int], None]]:
        made.append(label)
        yield lambda done, total: None

    return making
