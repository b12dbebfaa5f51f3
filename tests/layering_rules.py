"""The layering checker behind ``tests/test_layering.py``, pointed at a package's folder.

It reads a package's own import statements (deferred imports inside functions included: a deferred
import is still a dependency) and finds every edge from one of its modules to another, however the
import is spelled: ``import pkg.x``, ``from pkg.x import y``, relative imports (``from . import y``,
``from ..state import z``), imports of the package root (``import pkg``, ``from pkg import name``), and
modules loaded by name through :func:`importlib.import_module` (or ``__import__``) with a literal
name or an f-string whose holes stand for one dotted part each. A load whose name the source does not
spell (a variable, an f-string that starts with a hole) cannot be read: it must be declared in a
:class:`LazyLoad`, with the modules it may load and why, or the checker reports it.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT_UNIT = "__init__"
"""The unit name of the package root (``pkg/__init__.py``): the public facade."""


@dataclass(frozen=True)
class LazyLoad:
    """A module that loads others by a name its source does not spell, declared with what it may load and why."""

    module: str
    loads: tuple[str, ...]
    """Patterns of the modules it may load (``*`` stands for one dotted part)."""
    reason: str


@dataclass
class Graph:
    """A package's import edges, and what could not be read."""

    edges: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    unread: list[str] = field(default_factory=list)
    """``module: line N: ...`` for each load by an unspelled name that no :class:`LazyLoad` declares."""
    stale: list[str] = field(default_factory=list)
    """Declarations no load uses, or whose patterns match no module."""


def module_name(root: Path, path: Path) -> str:
    """The dotted name of the module in ``path`` (a package's ``__init__.py`` is the package)."""
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _pattern(glob: str) -> re.Pattern[str]:
    return re.compile(".".join("[^.]+" if part == "*" else re.escape(part) for part in glob.split(".")))


def _fstring_pattern(node: ast.JoinedStr) -> re.Pattern[str] | None:
    """A pattern for the names an f-string can give, or None when it does not start with literal text."""
    pieces: list[str] = []
    for value in node.values:
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            pieces.append(re.escape(value.value))
        else:
            pieces.append("[^.]+")
    first = node.values[0] if node.values else None
    if not (isinstance(first, ast.Constant) and isinstance(first.value, str) and first.value):
        return None
    return re.compile("".join(pieces))


def _is_import_call(node: ast.Call, importlib_names: set[str]) -> bool:
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr == "import_module":
        return isinstance(func.value, ast.Name) and func.value.id == "importlib"
    return isinstance(func, ast.Name) and (func.id == "__import__" or func.id in importlib_names)


def _relative_base(here: str, is_package: bool, level: int) -> str:
    """The package a relative import of ``level`` dots starts from, inside module ``here``."""
    parts = here.split(".")
    package = parts if is_package else parts[:-1]
    if level - 1 > len(package) - 1:
        raise ValueError(f"{here}: relative import beyond the top-level package")
    return ".".join(package[: len(package) - (level - 1)])


def import_graph(root: Path, lazy: Sequence[LazyLoad] = ()) -> Graph:
    """Every import edge between modules of the package in folder ``root``."""
    files = sorted(root.rglob("*.py"))
    modules = {module_name(root, p) for p in files}
    package = root.name
    graph = Graph()
    declared = {entry.module: entry for entry in lazy}
    used: set[str] = set()
    for path in files:
        here = module_name(root, path)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        importlib_names = {
            alias.asname or alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module == "importlib" and node.level == 0
            for alias in node.names
            if alias.name == "import_module"
        }
        targets: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = _relative_base(here, path.name == "__init__.py", node.level)
                    source = f"{base}.{node.module}" if node.module else base
                else:
                    source = node.module or ""
                for alias in node.names:
                    sub = f"{source}.{alias.name}"
                    targets.add(sub if sub in modules else source)
            elif isinstance(node, ast.Call) and _is_import_call(node, importlib_names) and node.args:
                arg = node.args[0]
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    targets.add(arg.value)
                    continue
                pattern = _fstring_pattern(arg) if isinstance(arg, ast.JoinedStr) else None
                if pattern is not None:
                    targets.update(m for m in modules if pattern.fullmatch(m))
                elif here in declared:
                    used.add(here)
                    for glob in declared[here].loads:
                        targets.update(m for m in modules if _pattern(glob).fullmatch(m))
                else:
                    unspelled = "loads a module by a name the source does not spell"
                    graph.unread.append(f"{here}: line {node.lineno}: {unspelled}")
        for target in targets:
            if target.split(".")[0] == package and target in modules and target != here:
                graph.edges[here].add(target)
    for entry in lazy:
        if entry.module not in used:
            graph.stale.append(f"{entry.module}: declared as a lazy loader, but loads nothing by an unspelled name")
        for glob in entry.loads:
            if not any(_pattern(glob).fullmatch(m) for m in modules):
                graph.stale.append(f"{entry.module}: declared pattern {glob!r} matches no module")
    return graph


def unit_of(module: str) -> str:
    """A module's top-level unit (``pkg.agents.base`` -> ``agents``; the root itself -> ``__init__``)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ROOT_UNIT


def layer_of(unit: str, layers: Sequence[Iterable[str]]) -> int:
    """The index of the layer holding ``unit`` (0: the top)."""
    for i, layer in enumerate(layers):
        if unit in layer:
            return i
    raise AssertionError(f"top-level unit {unit!r} is in no layer: add it to LAYERS and docs/ARCHITECTURE.md")


def against_layers(edges: Mapping[str, set[str]], layers: Sequence[Iterable[str]]) -> list[str]:
    """``a -> b`` for each import from a unit to one of its own layer or above."""
    against = []
    for module, targets in edges.items():
        for target in targets:
            a, b = unit_of(module), unit_of(target)
            if a != b and layer_of(b, layers) <= layer_of(a, layers):
                against.append(f"{module} -> {target}")
    return sorted(against)


def cycles(edges: Mapping[str, set[str]]) -> list[list[str]]:
    """Import cycles, each as the path that closes it (first module repeated at the end)."""
    found: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(module: str) -> None:
        state[module] = 1
        path.append(module)
        for target in sorted(edges.get(module, ())):
            if state.get(target) == 1:
                found.append([*path[path.index(target) :], target])
            elif target not in state:
                visit(target)
        path.pop()
        state[module] = 2

    for module in sorted(edges):
        if module not in state:
            visit(module)
    return found
