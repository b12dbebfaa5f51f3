"""The agents a run can use, by name: each a compiled graph over the same environment and client.

Each agent also names the code its answers depend on; :meth:`Agent.code_version` hashes that code,
and the eval runner keys every result by it, so an edited node re-runs the questions it can change
and an edit elsewhere (tracing, the database, the CLI) re-runs none.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.types import StateSnapshot

from videoatlas.errors import BadInputError
from videoatlas.graph import uniform, video_rlm
from videoatlas.persistence.checkpoint import open_checkpointer
from videoatlas.prompts import TEMPLATE_SPEC

SHARED_SOURCES = (
    "videoatlas.runs",
    "videoatlas.graph.context",
    "videoatlas.graph.budget",
    "videoatlas.nodes.common",
    "videoatlas.state",
    "videoatlas.prompts",
    "videoatlas.environment.atlas",
    "videoatlas.environment.cache",
    "videoatlas.environment.concat",
    "videoatlas.environment.decodable",
    "videoatlas.environment.frames",
    "videoatlas.environment.geometry",
    "videoatlas.environment.keyframes",
    "videoatlas.environment.orientation",
    "videoatlas.environment.plan",
    "videoatlas.environment.readers",
    "videoatlas.environment.render",
    "videoatlas.environment.subtitles",
    "videoatlas.environment.timefmt",
    "videoatlas.environment.video",
    "videoatlas.llm.chat_model",
    "videoatlas.llm.client",
    "videoatlas.llm.images",
    "videoatlas.llm.records",
    "videoatlas.llm.repair",
    "videoatlas.llm.settings",
)
"""Code every agent's answers depend on: running a question, the state and reply schemas, the
template loader, video access and rendering, and the model client. The stand-in server
(``llm.sim``) is not here: it is the model, versioned by the model id the endpoint reports."""

UNVERSIONED = (
    "videoatlas.errors",
    "videoatlas.graph.agents",
    "videoatlas.graph.tracing",
    "videoatlas.logging",
    "videoatlas.paths",
    "videoatlas.persistence",
)
"""Code the agents import that records or reports a run without changing its answer (a test checks
that every module an agent's sources import is either among its sources or here)."""


@dataclass(frozen=True, slots=True)
class Agent:
    """A graph builder, the prompt templates its answers depend on, and the code they depend on."""

    name: str
    build: Callable[[BaseCheckpointSaver[Any] | None], Any]
    templates: tuple[str, ...]
    sources: tuple[str, ...]
    """Modules and packages (dotted names) whose code decides what the agent answers."""

    def code_version(self) -> str:
        """A hash of the agent's source code: changes when, and only when, one of its sources changes."""
        return source_sha(self.sources)


AGENTS: dict[str, Agent] = {
    video_rlm.AGENT_NAME: Agent(
        video_rlm.AGENT_NAME,
        video_rlm.build_graph,
        tuple(name for name in TEMPLATE_SPEC if name != "uniform.user"),
        (
            "videoatlas.graph.video_rlm",
            "videoatlas.graph.worker",
            "videoatlas.nodes.extract_search_task",
            "videoatlas.nodes.choose_traversal",
            "videoatlas.nodes.global_probe",
            "videoatlas.nodes.merge",
            "videoatlas.nodes.analyze_uncertainty",
            "videoatlas.nodes.decide",
            "videoatlas.nodes.worker_observe",
            "videoatlas.nodes.worker_decide",
            "videoatlas.nodes.worker_act",
            "videoatlas.nodes.worker_finish",
            *SHARED_SOURCES,
        ),
    ),
    uniform.AGENT_NAME: Agent(
        uniform.AGENT_NAME,
        uniform.build_uniform_graph,
        uniform.TEMPLATES,
        ("videoatlas.graph.uniform", "videoatlas.nodes.answer_uniform", *SHARED_SOURCES),
    ),
}


def get_agent(name: str) -> Agent:
    """The agent called ``name``, or a clear error listing the known ones."""
    try:
        return AGENTS[name]
    except KeyError:
        raise BadInputError(f"unknown agent {name!r}; choose one of {', '.join(AGENTS)}") from None


def source_files(module: str) -> dict[str, Traversable]:
    """The ``.py`` files of a module, or of every module in a package, by their path from the source root.

    Read through :mod:`importlib.resources` without importing them; a name with no Python source
    (a typo, a compiled module) is an error, never an empty contribution to the hash.
    """
    spec = importlib.util.find_spec(module)
    if spec is None:
        raise LookupError(f"agent source {module!r} is not an importable module")
    if spec.submodule_search_locations is not None:
        return dict(_package_files(resources.files(module), module.replace(".", "/")))
    parent, _, leaf = module.rpartition(".")
    path = resources.files(parent).joinpath(f"{leaf}.py")
    if not path.is_file():
        raise LookupError(f"agent source {module!r} has no Python source file")
    return {f"{parent.replace('.', '/')}/{leaf}.py": path}


def _package_files(folder: Traversable, prefix: str) -> Iterator[tuple[str, Traversable]]:
    for entry in folder.iterdir():
        if entry.is_dir() and entry.name != "__pycache__":
            yield from _package_files(entry, f"{prefix}/{entry.name}")
        elif entry.is_file() and entry.name.endswith(".py"):
            yield f"{prefix}/{entry.name}", entry


@functools.cache
def source_sha(modules: tuple[str, ...]) -> str:
    """sha256 (first 16 hex digits) over the sources of ``modules``, the same on every machine.

    Files are taken in path order, each under its path from the source root, with line endings
    normalised: a checkout with CRLF endings or another install location hashes the same.
    """
    files: dict[str, Traversable] = {}
    for module in modules:
        files.update(source_files(module))
    digest = hashlib.sha256()
    for path in sorted(files):
        text = files[path].read_bytes().replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        digest.update(f"{path}\0{len(text)}\0".encode())
        digest.update(text)
    return digest.hexdigest()[:16]


async def saved_snapshot(url: str, agent: str, run_id: str) -> StateSnapshot:
    """The last checkpointed state of run ``run_id`` (a thread of ``agent``'s graph) in database ``url``."""
    async with open_checkpointer(url) as saver:
        snapshot: StateSnapshot = (
            await get_agent(agent).build(saver).aget_state({"configurable": {"thread_id": run_id}})
        )
    return snapshot
