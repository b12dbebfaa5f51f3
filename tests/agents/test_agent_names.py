"""``ui/`` and ``cli/`` name no agent: each agent brings its own views through the agent interface.

Read from the source: no agent's name (in any spelling) anywhere in those units' code, comments or
templates, and none of any agent's node names as a string in their code or templates, other than
as the key of a record field (a run's ``answer`` is every agent's, whatever a node is called).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import videoatlas
from videoatlas.agents.registry import PACKAGES, all_agents

pytestmark = pytest.mark.unit

ROOT = Path(videoatlas.__file__).parent
UNITS = ("ui", "cli")
SOURCES = ("*.py", "*.html", "*.js", "*.css")


def _files() -> list[Path]:
    return sorted(p for unit in UNITS for pattern in SOURCES for p in (ROOT / unit).rglob(pattern))


def _node_names() -> set[str]:
    """Every node of every agent's graph, subgraphs' nodes included (``worker:decide`` -> ``decide``)."""
    names = set()
    for agent in all_agents().values():
        names |= {node.rsplit(":", 1)[-1] for node in agent.build(None).get_graph(xray=True).nodes}
    return names - {"__start__", "__end__"}


def _spellings() -> re.Pattern[str]:
    """Each agent's name and its package's, with ``-``, ``_``, a space or nothing between the parts."""
    words = {*PACKAGES, *(package.rsplit(".", 1)[-1] for package in PACKAGES.values())}
    parts = [re.split(r"[-_ ]", word) for word in words]
    return re.compile("|".join(r"\b" + r"[-_ ]?".join(map(re.escape, p)) + r"\b" for p in parts), re.IGNORECASE)


def _field_keys(tree: ast.AST) -> set[int]:
    """Ids of the string constants that are record keys: ``x["answer"]``, ``{"answer": ...}``, ``x.get("answer")``."""
    keys: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript):
            keys.add(id(node.slice))
        elif isinstance(node, ast.Dict):
            keys |= {id(k) for k in node.keys if k is not None}
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
            keys |= {id(a) for a in node.args[:1]}
    return keys


def test_ui_and_cli_name_no_agent() -> None:
    spelled = _spellings()
    found = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for path in _files()
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if spelled.search(line)
    ]
    assert found == [], "ui/ or cli/ names an agent:\n" + "\n".join(found)


def test_ui_and_cli_name_no_agents_node() -> None:
    nodes = _node_names()
    found = []
    for path in _files():
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".py":
            tree = ast.parse(text)
            keys = _field_keys(tree)
            found += [
                f"{path.relative_to(ROOT)}:{node.lineno}: {node.value!r}"
                for node in ast.walk(tree)
                if isinstance(node, ast.Constant) and node.value in nodes and id(node) not in keys
            ]
        else:  # a template's expressions and a script's strings (not HTML attributes or CSS classes)
            code = " ".join(re.findall(r"{[{%](.*?)[}%]}", text, re.S)) if path.suffix == ".html" else text
            quoted = re.findall(r"""["']([A-Za-z_]+)["']""", code) if path.suffix != ".css" else []
            found += [f"{path.relative_to(ROOT)}: {name!r}" for name in quoted if name in nodes]
    assert found == [], "ui/ or cli/ names an agent's node:\n" + "\n".join(found)


def test_the_checks_see_an_agent_and_a_node() -> None:
    # The checks can fail: they know the agents' names and nodes, and a node name as a value is caught.
    assert _spellings().search("if agent == 'Video RLM':") and not _spellings().search("a uniformly drawn sample")
    assert {"decide", "answer"} <= _node_names()
    tree = ast.parse('call["node"] in ("decide", "answer") and row["answer"]')
    keys = _field_keys(tree)
    named = [str(n.value) for n in ast.walk(tree) if isinstance(n, ast.Constant) and id(n) not in keys]
    assert sorted(named) == ["answer", "decide"]  # the keys ("node", the second "answer") are record fields
