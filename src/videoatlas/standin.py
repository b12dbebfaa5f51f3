"""The one door from videoatlas to its stand-in VLM, a test and demo backend installed apart (``./standin``).

The stand-in is the package ``videoatlas-standin`` (import name ``videoatlas_standin``), kept in this
repository's ``standin/`` folder and never a dependency of ``pip install videoatlas``. Nothing else in
videoatlas imports it (a test reads every import to keep it so): a run started with ``--standin``, the
demo, and the ``standin`` command (alias ``sim-server``) come here, and where the package is missing they
stop with one line that says how to install it.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
from collections.abc import Iterator
from types import ModuleType
from typing import Any

from videoatlas.errors import BadInputError

INSTALL = "pip install ./standin"
"""How to install the stand-in, from a checkout of videoatlas (it is not on any package index)."""


def _launch() -> ModuleType:
    try:
        return importlib.import_module("videoatlas_standin.launch")
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] != "videoatlas_standin":
            raise  # the stand-in is there but one of its own dependencies is not: its own error says which
        raise BadInputError(
            f"the stand-in VLM is not installed: run `{INSTALL}` in a checkout of videoatlas (`make demo` does)"
        ) from None


def require() -> None:
    """Refuse, in one line, a command that needs the stand-in where it is not installed (before any other work)."""
    _launch()


@contextlib.contextmanager
def running(
    *, reasoning: str = "off", max_image_pixels: int | None = None, max_images: int | None = None
) -> Iterator[Any]:
    """A stand-in started in this process for the duration; it has ``base_url`` and its ``standin.config``."""
    with _launch().running(reasoning=reasoning, max_image_pixels=max_image_pixels, max_images=max_images) as server:
        yield server


def serve(args: argparse.Namespace) -> int:
    """``videoatlas standin``: the stand-in in the foreground, with the options read by the command's parser."""
    result: int = _launch().serve_command(args)
    return result
