"""Copies of an agent's built-in prompt set, to edit in a test the way a user would."""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def copy_default(target: Path, package: str = "videoatlas.agents.video_rlm") -> Path:
    """Copy an agent's built-in default set's templates into ``target`` (created); returns it."""
    source = resources.files(package).joinpath("prompts", "default")
    target.mkdir(parents=True)
    for entry in source.iterdir():
        if entry.name.endswith(".txt"):
            (target / entry.name).write_text(entry.read_text(encoding="utf-8"), encoding="utf-8")
    return target
