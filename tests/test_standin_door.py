"""The stand-in is a package apart: videoatlas reaches it through one module, and runs without it.

Every import the product makes is read (at the top, deferred inside functions, and through
``importlib`` by a name spelled anywhere in the source), so a second way in cannot creep back; and a
product without the stand-in installed says, in one line and exit 2, how to install it.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import videoatlas
from videoatlas import standin

ROOT = Path(videoatlas.__file__).parent
DOOR = ROOT / "standin.py"


def _mentions(path: Path, root: Path = ROOT) -> list[str]:
    """Where a module imports the stand-in or spells its package's name (an ``importlib`` load needs the name)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            names = [node.value]
        line = getattr(node, "lineno", 0)
        found += [f"{path.relative_to(root)}:{line}" for name in names if "videoatlas_standin" in name]
    return found


@pytest.mark.unit
def test_only_the_door_names_the_stand_in() -> None:
    mentions = [m for path in sorted(ROOT.rglob("*.py")) if path != DOOR for m in _mentions(path)]
    assert mentions == []
    assert _mentions(DOOR), "the door itself must name the package it loads"


@pytest.mark.unit
def test_the_scan_sees_a_deferred_and_a_named_import(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "import importlib\n"
        "def f():\n"
        "    from videoatlas_standin.server import StandinServer\n"
        "    return importlib.import_module('videoatlas_standin.chat')\n",
        encoding="utf-8",
    )
    assert len(_mentions(module, tmp_path)) == 2


# The stand-in made unimportable, as in an environment where only `pip install .` ran.
_WITHOUT = (
    "import sys; sys.modules['videoatlas_standin'] = None; from videoatlas.cli.main import main; sys.exit(main())"
)


@pytest.mark.e2e
@pytest.mark.parametrize(
    "argv",
    [
        ["standin", "--port", "18999"],
        ["sim-server"],
        ["ask", "VIDEO", "-q", "Which code is shown?", "-c", "A", "-c", "B", "--standin"],
        ["demo"],
    ],
)
def test_without_the_stand_in_a_run_says_how_to_install_it(argv: list[str], counter_video: Path) -> None:
    argv = [str(counter_video) if word == "VIDEO" else word for word in argv]
    done = subprocess.run(
        [sys.executable, "-c", _WITHOUT, *argv], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert standin.INSTALL in lines[0]
    assert "Traceback" not in done.stderr
