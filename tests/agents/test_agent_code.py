"""The agent code version that eval results are keyed by: stable, sensitive, and covering what it must."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

from videoatlas.agents.base import UNVERSIONED, source_files, source_sha
from videoatlas.agents.registry import all_agents

AGENTS = all_agents()

pytestmark = pytest.mark.unit


def _probe_package(root: Path, body: str, newline: str = "\n") -> None:
    package = root / "agent_code_probe"
    package.mkdir(exist_ok=True)
    (package / "__init__.py").write_bytes(b"")
    (package / "node.py").write_bytes(body.replace("\n", newline).encode())


def test_the_version_follows_the_code_not_its_line_endings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    sources = ("agent_code_probe",)
    _probe_package(tmp_path, "def node():\n    return 1\n")
    source_sha.cache_clear()
    lf = source_sha(sources)
    _probe_package(tmp_path, "def node():\n    return 1\n", newline="\r\n")
    source_sha.cache_clear()
    assert source_sha(sources) == lf
    assert source_sha(("agent_code_probe.node",)) != lf  # a module alone is not its package
    _probe_package(tmp_path, "def node():\n    return 2\n")
    source_sha.cache_clear()
    assert source_sha(sources) != lf
    source_sha.cache_clear()


def test_an_unknown_source_is_an_error() -> None:
    with pytest.raises(LookupError):
        source_files("videoatlas.agents.video_rlm.nodes.no_such_node")


def test_each_agent_has_its_own_version() -> None:
    versions = {name: agent.code_version() for name, agent in AGENTS.items()}
    assert len(set(versions.values())) == len(versions)
    assert all(len(v) == 16 for v in versions.values())


def _imports(path: str, text: str) -> set[str]:
    """The videoatlas modules a source file imports (``from pkg import module`` names the module)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(text, path)):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "videoatlas"}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("videoatlas"):
            module = node.module or ""
            spec = importlib.util.find_spec(module)
            assert spec is not None, f"{path} imports {module}, which does not exist"
            is_package = spec.submodule_search_locations is not None
            subs = {f"{module}.{a.name}" for a in node.names} if is_package else set()
            subs = {s for s in subs if importlib.util.find_spec(s) is not None}
            found |= subs or {module}
    return found


@pytest.mark.parametrize("name", sorted(AGENTS))
def test_every_module_an_agent_runs_is_versioned_or_declared_not_to_matter(name: str) -> None:
    # A new node module that nobody adds to the agent's sources would leave stale results cached.
    agent = AGENTS[name]
    allowed = (*agent.sources, *UNVERSIONED)

    def covered(module: str) -> bool:
        return any(module == a or module.startswith(a + ".") for a in allowed)

    missing = set()
    for module in agent.sources:
        for path, file in source_files(module).items():
            missing |= {m for m in _imports(path, file.read_text(encoding="utf-8")) if not covered(m)}
    assert not missing, f"{name} imports modules that are neither among its sources nor UNVERSIONED: {missing}"
