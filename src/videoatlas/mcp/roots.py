"""The folders an MCP server may open files under: every path a client names is checked against them."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from videoatlas.errors import BadInputError


@dataclass(frozen=True, slots=True)
class Roots:
    """Resolved folders (symbolic links followed); a path is allowed when it resolves inside one of them."""

    folders: tuple[Path, ...]

    @classmethod
    def of(cls, folders: Sequence[str | os.PathLike[str]]) -> Roots:
        """The roots named (each must be an existing folder); at least one is needed."""
        if not folders:
            raise BadInputError("give at least one --root: the server opens no file outside its roots")
        resolved = []
        for folder in folders:
            path = Path(folder).expanduser()
            if not path.is_dir():
                raise BadInputError(f"--root {folder}: not a folder")
            resolved.append(path.resolve())
        return cls(tuple(dict.fromkeys(resolved)))

    def check(self, path: str | os.PathLike[str]) -> Path:
        """``path`` resolved, or a clear error when it lies outside every root (``..`` and links are followed)."""
        if not str(path).strip():
            raise BadInputError("empty path")
        given = Path(path).expanduser()
        if not given.is_absolute():
            raise BadInputError(f"{path}: give an absolute path (under {self.describe()})")
        resolved = given.resolve()
        if not any(resolved.is_relative_to(folder) for folder in self.folders):
            raise BadInputError(f"{path} is outside the folders this server may open ({self.describe()})")
        return resolved

    def describe(self) -> str:
        """The roots, for messages."""
        return ", ".join(str(f) for f in self.folders)
