"""What the CLI gives people: lines and JSON on stdout, images in the asked-for format, folders, commands to type.

Outputs are checked before any work (a wrong suffix or a folder where a file should go is refused
up front), written whole or not at all (a temporary file renamed into place), and a command that
fails part-way removes what it created (no half-written video, no empty folder).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shlex
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from videoatlas.errors import BadInputError
from videoatlas.textsafe import escape

IMAGE_FORMATS = {".jpg": "JPEG", ".jpeg": "JPEG", ".png": "PNG"}
"""Output suffix -> the format written (the suffix decides; anything else is refused)."""


def write_line(text: str) -> None:
    """One line on stdout, control characters escaped (questions and model text reach the terminal here)."""
    sys.stdout.write(escape(text) + "\n")


def write_json(data: Any) -> None:
    """``data`` on stdout as indented JSON, keys sorted (``--json``)."""
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=True) + "\n")


def _check_parents(out: Path, option: str) -> None:
    """Refuse ``out`` when its nearest existing parent is a file (it could never be created)."""
    for parent in out.parents:
        if parent.exists():
            if not parent.is_dir():
                raise BadInputError(f"{option} {out}: {parent} is a file, not a folder")
            return


def image_output(path: str | os.PathLike[str], option: str = "-o") -> Path:
    """``path`` checked as an image to write: a known suffix, not a folder, under a folder (or nothing)."""
    out = Path(path).expanduser()
    if out.is_dir():
        raise BadInputError(f"{option} {out} is a folder; give a file name such as {out / 'grid.jpg'}")
    if out.suffix.lower() not in IMAGE_FORMATS:
        accepted = ", ".join(IMAGE_FORMATS)
        raise BadInputError(f"{option} {out}: the suffix picks the format; use one of {accepted}")
    _check_parents(out, option)
    return out


def write_image(jpeg: bytes, path: Path) -> Path:
    """Write ``jpeg`` to ``path`` in the format its suffix names (see :func:`image_output`), atomically."""
    fmt = IMAGE_FORMATS[path.suffix.lower()]
    data = jpeg
    if fmt != "JPEG":
        from PIL import Image

        buf = io.BytesIO()
        with Image.open(io.BytesIO(jpeg)) as img:
            img.save(buf, format=fmt)
        data = buf.getvalue()
    with _created_folders(path.parent):
        write_atomically(path, data)
    return path


def write_atomically(path: Path, data: bytes) -> None:
    """``data`` at ``path`` whole, or ``path`` untouched (a temporary file beside it, renamed into place)."""
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".partial")
    except OSError as exc:
        raise BadInputError(f"cannot write {path}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise BadInputError(f"cannot write {path}: {exc.strerror or exc}") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def output_folder(path: str | os.PathLike[str], option: str = "--out") -> Path:
    """``path`` checked as a folder to write into: a folder or nothing yet, not a file."""
    out = Path(path).expanduser()
    if out.exists() and not out.is_dir():
        raise BadInputError(f"{option} {out} is a file; give a folder (it is created if missing)")
    _check_parents(out, option)
    return out


@contextlib.contextmanager
def undo_on_failure(folder: Path) -> Iterator[Path]:
    """Create ``folder`` if needed; if the body fails, remove what it added there (and folders it created).

    Files that were there before are never touched, so a re-run into a folder of earlier results
    loses nothing.
    """
    before = set(folder.iterdir()) if folder.is_dir() else set()
    with _created_folders(folder):
        try:
            yield folder
        except BaseException:
            added = (set(folder.iterdir()) - before) if folder.is_dir() else set()
            for entry in added:
                if entry.is_dir() and not entry.is_symlink():
                    shutil.rmtree(entry, ignore_errors=True)
                else:
                    entry.unlink(missing_ok=True)
            raise


@contextlib.contextmanager
def _created_folders(folder: Path) -> Iterator[None]:
    """Make ``folder`` (and missing parents); remove the ones made here if the body fails and leaves them empty."""
    missing = [p for p in (folder, *folder.parents) if not p.exists()]
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BadInputError(f"cannot create {folder}: {exc.strerror or exc}") from None
    try:
        yield
    except BaseException:
        for made in missing:  # deepest first
            with contextlib.suppress(OSError):
                made.rmdir()
        raise


def command_name() -> str:
    """How to type the ``videoatlas`` command that is running, so that printed commands work as printed.

    ``videoatlas`` when that name on PATH is this very program; otherwise its path (``.venv/bin/videoatlas``
    after ``make``, when the virtual environment is not activated), or ``python -m videoatlas.cli.main``.
    """
    argv0 = Path(sys.argv[0])
    if argv0.name != "videoatlas":
        return f"{shlex.quote(sys.executable)} -m videoatlas.cli.main"
    found = shutil.which("videoatlas")
    if found is not None and Path(found).resolve() == argv0.resolve():
        return "videoatlas"
    try:
        shown = argv0.resolve().relative_to(Path.cwd())
    except ValueError:
        shown = argv0.resolve()
    return shlex.quote(str(shown))
