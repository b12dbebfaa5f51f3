"""``langgraph.json`` is made from the agent registry: every registered agent served, nothing else."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from videoatlas.agents.registry import agent_names
from videoatlas.served import langgraph_json

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]


def test_the_checked_in_file_is_what_the_registry_makes() -> None:
    text = (ROOT / "langgraph.json").read_text(encoding="utf-8")
    assert text == langgraph_json.render(), "rerun: python -m videoatlas.served.langgraph_json langgraph.json"


def test_every_registered_agent_is_served_and_nothing_else() -> None:
    graphs = json.loads((ROOT / "langgraph.json").read_text(encoding="utf-8"))["graphs"]
    assert list(graphs) == agent_names()


def test_each_graph_path_resolves_as_the_server_resolves_it() -> None:
    from videoatlas.served.graphs import FACTORIES

    graphs = json.loads((ROOT / "langgraph.json").read_text(encoding="utf-8"))["graphs"]
    for name, target in graphs.items():
        module, attribute = target.split(":")
        # The Agent Server reads the module's namespace (not getattr): the factory must be a real attribute.
        factory = importlib.import_module(module).__dict__[attribute]
        assert factory is FACTORIES[name] and callable(factory)
        assert attribute == name.replace("-", "_") and factory.__name__ == attribute


def test_the_command_writes_the_file(tmp_path: Path) -> None:
    out = tmp_path / "langgraph.json"
    done = subprocess.run(
        [sys.executable, "-m", "videoatlas.served.langgraph_json", str(out)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert out.read_text(encoding="utf-8") == langgraph_json.render()
