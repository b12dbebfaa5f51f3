"""The layering is a contract: every import of the package points down, and no module imports itself back.

Read from the source's own import statements by :mod:`layering_rules` (relative imports, imports of
the package root and modules loaded by name included). ``docs/ARCHITECTURE.md`` draws the same layers.
The package root (``videoatlas/__init__.py``) is the public facade: it hands ``videoatlas.ask`` and
its siblings over from :mod:`videoatlas.api`, so it stands above ``api`` and nothing below it may
import it. The fake packages at the end prove that each kind of import is seen.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

import videoatlas
from layering_rules import LazyLoad, against_layers, cycles, import_graph, layer_of, unit_of

pytestmark = pytest.mark.unit

LAYERS: list[set[str]] = [
    {"cli"},
    {"__init__"},
    {"ui", "gym", "mcp", "served", "lmms"},
    {"evals", "api"},
    {"request"},
    {"runs", "inspect"},
    {"agents"},
    {"runtime"},
    {"persistence", "llm", "standin", "synth"},
    {"state", "prompts", "logging"},
    {"environment"},
    {"limits", "paths", "textsafe", "defaults"},
    {"errors"},
]
"""Top-level units from the top down. A unit may import any unit of a lower layer, none of its own or above."""

LAZY_LOADS = (
    LazyLoad(
        "videoatlas.agents.registry",
        ("videoatlas.agents.*.agent", "videoatlas.agents.*.settings"),
        "an agent's code (and LangGraph with it) is imported only when that agent is asked for, so listing "
        "the agents and their options stays cheap; the package names sit in its PACKAGES table",
    ),
)
"""Modules that load others by a name their source does not spell, and why."""

ROOT = Path(videoatlas.__file__).parent


def test_every_import_points_down_the_layers() -> None:
    against = against_layers(import_graph(ROOT, LAZY_LOADS).edges, LAYERS)
    assert against == [], "imports against the layering:\n" + "\n".join(against)


def test_nothing_imports_the_lmms_package() -> None:
    # lmms/ runs inside lmms-eval's process (its modules import lmms-eval): no other unit may depend on it.
    edges = import_graph(ROOT, LAZY_LOADS).edges
    importers = sorted(
        m for m, targets in edges.items() if unit_of(m) != "lmms" and any(unit_of(t) == "lmms" for t in targets)
    )
    assert importers == []


def test_no_module_imports_itself_back() -> None:
    found = cycles(import_graph(ROOT, LAZY_LOADS).edges)
    assert found == [], "import cycles:\n" + "\n".join(" -> ".join(c) for c in found)


def test_every_load_by_name_is_read_or_declared() -> None:
    graph = import_graph(ROOT, LAZY_LOADS)
    assert graph.unread == [], "modules loaded by a name no one declared:\n" + "\n".join(graph.unread)
    assert graph.stale == [], "lazy-load declarations not used:\n" + "\n".join(graph.stale)


def test_the_registry_loads_every_agent() -> None:
    # The declaration is what the cycle check sees of the registry: it must reach every agent package.
    from videoatlas.agents.registry import PACKAGES

    loaded = import_graph(ROOT, LAZY_LOADS).edges["videoatlas.agents.registry"]
    assert {f"{package}.agent" for package in PACKAGES.values()} <= loaded
    assert {f"{package}.settings" for package in PACKAGES.values()} <= loaded


def test_units_sit_in_layers() -> None:
    assert layer_of("environment", LAYERS) > layer_of("agents", LAYERS)
    assert unit_of("videoatlas") == "__init__" and unit_of("videoatlas.agents.base") == "agents"
    with pytest.raises(AssertionError):
        layer_of("no_such_unit", LAYERS)


# -- the checker sees each kind of import: a fake package with one of each -------------------------------

FAKE_LAYERS: list[set[str]] = [{"top"}, {"__init__"}, {"mid"}, {"low"}]


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "fakepkg"
    for name, text in {"__init__.py": "", "top/__init__.py": "", "mid/__init__.py": "", "low/__init__.py": ""}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(text))
    return root


def test_a_clean_fake_package_passes(tmp_path: Path) -> None:
    root = _package(
        tmp_path,
        {
            "top/cmd.py": "from fakepkg.mid import work\nfrom fakepkg import ask\n",
            "mid/work.py": "from ..low import base\nfrom . import helper\n",
            "mid/helper.py": "import importlib\nimportlib.import_module('fakepkg.low.base')\n",
            "low/base.py": "X = 1\n",
        },
    )
    graph = import_graph(root)
    assert graph.edges["fakepkg.mid.work"] == {"fakepkg.low.base", "fakepkg.mid.helper"}
    assert graph.edges["fakepkg.mid.helper"] == {"fakepkg.low.base"}
    assert graph.edges["fakepkg.top.cmd"] == {"fakepkg.mid.work", "fakepkg"}
    assert against_layers(graph.edges, FAKE_LAYERS) == []
    assert cycles(graph.edges) == [] and graph.unread == []


@pytest.mark.parametrize(
    "source",
    [
        "from ..mid import work\n",  # relative, up two dots
        "from ..mid.work import run\n",
        "from .. import mid\n",  # a relative import of a package
    ],
)
def test_a_relative_import_up_the_layers_is_reported(tmp_path: Path, source: str) -> None:
    root = _package(tmp_path, {"low/base.py": source, "mid/work.py": "def run() -> None: ...\n"})
    against = against_layers(import_graph(root).edges, FAKE_LAYERS)
    assert against and all(line.startswith("fakepkg.low.base -> fakepkg.mid") for line in against)


def test_a_relative_import_cycle_is_reported(tmp_path: Path) -> None:
    root = _package(tmp_path, {"low/a.py": "from . import b\n", "low/b.py": "from .a import X\n"})
    assert cycles(import_graph(root).edges) == [["fakepkg.low.a", "fakepkg.low.b", "fakepkg.low.a"]]


@pytest.mark.parametrize(
    "source",
    [
        "import fakepkg\n",
        "from fakepkg import ask\n",
        "def f():\n    from fakepkg import ask\n",  # deferred
        "from .. import ask\n",  # relative, to the root
    ],
)
def test_an_import_of_the_package_root_from_below_is_reported(tmp_path: Path, source: str) -> None:
    root = _package(tmp_path, {"low/base.py": source})
    assert against_layers(import_graph(root).edges, FAKE_LAYERS) == ["fakepkg.low.base -> fakepkg"]


@pytest.mark.parametrize(
    "source",
    [
        "import importlib\nimportlib.import_module('fakepkg.mid.work')\n",
        "from importlib import import_module\nimport_module('fakepkg.mid.work')\n",
        "from importlib import import_module as load\nload('fakepkg.mid.work')\n",
        "import importlib\ndef f(name):\n    return importlib.import_module(f'fakepkg.mid.{name}')\n",
        "__import__('fakepkg.mid.work')\n",
    ],
)
def test_a_module_loaded_by_name_up_the_layers_is_reported(tmp_path: Path, source: str) -> None:
    root = _package(tmp_path, {"low/base.py": source, "mid/work.py": "X = 1\n"})
    assert "fakepkg.low.base -> fakepkg.mid.work" in against_layers(import_graph(root).edges, FAKE_LAYERS)


def test_a_load_by_an_unspelled_name_must_be_declared(tmp_path: Path) -> None:
    source = (
        "import importlib\nNAMES = {'w': 'fakepkg.low.work'}\ndef f(n):\n    return importlib.import_module(NAMES[n])\n"
    )
    root = _package(tmp_path, {"mid/loader.py": source, "low/work.py": "from fakepkg.mid import loader\n"})
    graph = import_graph(root)
    assert graph.unread == ["fakepkg.mid.loader: line 4: loads a module by a name the source does not spell"]
    # Declared, its loads are edges like any other: here they close a cycle (and the back import is against the layers).
    declared = import_graph(root, [LazyLoad("fakepkg.mid.loader", ("fakepkg.low.*",), "test")])
    assert declared.unread == [] and declared.stale == []
    assert cycles(declared.edges) == [["fakepkg.low.work", "fakepkg.mid.loader", "fakepkg.low.work"]]
    assert against_layers(declared.edges, FAKE_LAYERS) == ["fakepkg.low.work -> fakepkg.mid.loader"]


def test_an_unused_declaration_is_reported(tmp_path: Path) -> None:
    root = _package(tmp_path, {"mid/loader.py": "X = 1\n"})
    graph = import_graph(root, [LazyLoad("fakepkg.mid.loader", ("fakepkg.nothing.*",), "test")])
    assert graph.stale == [
        "fakepkg.mid.loader: declared as a lazy loader, but loads nothing by an unspelled name",
        "fakepkg.mid.loader: declared pattern 'fakepkg.nothing.*' matches no module",
    ]
