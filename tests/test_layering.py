"""The layering is a contract: every import of the package points down, and no module imports itself back.

Read from the source's own import statements, deferred imports inside functions included (a deferred
import is still a dependency). ``docs/ARCHITECTURE.md`` draws the same layers. One exception: the
package root (``videoatlas/__init__.py``) is the public facade, and hands ``videoatlas.ask`` and its
siblings over from :mod:`videoatlas.api` on first use; its own imports are not held to the layers
(they are to the no-cycle rule).
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

import videoatlas

pytestmark = pytest.mark.unit

LAYERS: list[set[str]] = [
    {"cli"},
    {"ui", "gym", "mcp", "served", "lmms"},
    {"evals", "api"},
    {"request"},
    {"runs", "inspect"},
    {"agents"},
    {"runtime"},
    {"persistence", "llm", "standin", "synth"},
    {"state", "prompts", "logging"},
    {"environment"},
    {"limits", "paths", "textsafe"},
    {"errors", "__init__"},
]
"""Top-level units from the top down. A unit may import any unit of a lower layer, none of its own or above."""

ROOT = Path(videoatlas.__file__).parent


def _module(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports() -> dict[str, set[str]]:
    """Module -> the package modules it imports (``from videoatlas.x import y``: ``videoatlas.x.y`` if a module)."""
    modules = {_module(p) for p in ROOT.rglob("*.py")}
    edges: dict[str, set[str]] = defaultdict(set)
    for path in ROOT.rglob("*.py"):
        here = _module(path)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [
                    f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in modules else node.module
                    for a in node.names
                ]
            for target in targets:
                if target.split(".")[0] == "videoatlas" and target in modules and target != here:
                    edges[here].add(target)
    return edges


def _unit(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _layer(unit: str) -> int:
    for i, layer in enumerate(LAYERS):
        if unit in layer:
            return i
    raise AssertionError(f"top-level unit {unit!r} is in no layer: add it to LAYERS and docs/ARCHITECTURE.md")


def test_every_import_points_down_the_layers() -> None:
    against = []
    for module, targets in _imports().items():
        if module == "videoatlas":  # the facade (see the module docstring)
            continue
        for target in targets:
            a, b = _unit(module), _unit(target)
            if a != b and _layer(b) <= _layer(a):
                against.append(f"{module} -> {target}")
    assert against == [], "imports against the layering:\n" + "\n".join(sorted(against))


def test_nothing_imports_the_lmms_package() -> None:
    # lmms/ runs inside lmms-eval's process (its modules import lmms-eval): no other unit may depend on it.
    importers = sorted(
        m for m, targets in _imports().items() if _unit(m) != "lmms" and any(_unit(t) == "lmms" for t in targets)
    )
    assert importers == []


def test_no_module_imports_itself_back() -> None:
    edges = _imports()
    cycles: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(module: str) -> None:
        state[module] = 1
        path.append(module)
        for target in sorted(edges.get(module, ())):
            if state.get(target) == 1:
                cycles.append([*path[path.index(target) :], target])
            elif target not in state:
                visit(target)
        path.pop()
        state[module] = 2

    for module in sorted(edges):
        if module not in state:
            visit(module)
    assert cycles == [], "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_the_check_sees_a_back_import() -> None:
    # The contract holds because the rules can fail: a unit in no layer, or an upward import, is caught.
    assert _layer("environment") > _layer("agents")
    with pytest.raises(AssertionError):
        _layer("no_such_unit")
    assert any(_unit(t) == "environment" for t in _imports()["videoatlas.state.models"])
