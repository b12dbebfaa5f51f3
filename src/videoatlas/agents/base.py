"""What an agent is to the rest of the project: its graph, templates, settings, code, and how its runs read back.

Each agent also names the code its answers depend on; :meth:`Agent.code_version` hashes that code,
and the eval runner keys every result by it, so an edited node re-runs the questions it can change
and an edit elsewhere (tracing, the database, the CLI) re-runs none.

How a run reads back is the agent's too, so that nothing above the agents names one: its views
(:class:`~videoatlas.agents.views.AgentViews`) give ``trace`` its lines, the run page its section and
the final decision's panel its details, ``ask`` its progress lines and a run's result its extras. An
agent without them is shown by what every agent has (the node timeline, the decision, the evidence).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from importlib import resources
from importlib.resources.abc import Traversable
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver

from videoatlas.agents.views import AgentViews
from videoatlas.prompts import PromptSet, TemplateSpec, load_prompt_set
from videoatlas.runtime.config import AgentSettings

SHARED_SOURCES = (
    "videoatlas.runs",
    "videoatlas.runtime.config",
    "videoatlas.runtime.context",
    "videoatlas.runtime.budget",
    "videoatlas.runtime.calls",
    "videoatlas.runtime.speech",
    "videoatlas.state",
    "videoatlas.prompts",
    "videoatlas.agents.decision",
    "videoatlas.agents.tool_loop",
    "videoatlas.agents.relation",
    "videoatlas.environment.atlas",
    "videoatlas.environment.audio",
    "videoatlas.environment.cache",
    "videoatlas.environment.concat",
    "videoatlas.environment.decodable",
    "videoatlas.environment.files",
    "videoatlas.environment.frames",
    "videoatlas.environment.geometry",
    "videoatlas.environment.keyframes",
    "videoatlas.environment.orientation",
    "videoatlas.environment.plan",
    "videoatlas.environment.readers",
    "videoatlas.environment.render",
    "videoatlas.environment.speech",
    "videoatlas.environment.subtitles",
    "videoatlas.environment.timefmt",
    "videoatlas.environment.video",
    "videoatlas.llm.chat_model",
    "videoatlas.llm.client",
    "videoatlas.llm.decisions",
    "videoatlas.llm.images",
    "videoatlas.llm.logprobs",
    "videoatlas.state.portable",
    "videoatlas.llm.reasoning",
    "videoatlas.llm.records",
    "videoatlas.llm.repair",
    "videoatlas.llm.schemas",
    "videoatlas.llm.settings",
    "videoatlas.llm.transcribe",
)
"""Code every agent's answers depend on: running a question, the state and reply schemas, the
template loader, the final decision, video access and rendering, and the model client. The stand-in server
(``standin``) is not here: it is the model, versioned by the model id the endpoint reports."""

UNVERSIONED = (
    "videoatlas.errors",
    "videoatlas.limits",
    "videoatlas.agents",
    "videoatlas.agents.base",
    "videoatlas.agents.registry",
    "videoatlas.agents.page",
    "videoatlas.llm.server_errors",
    "videoatlas.llm.outage",
    "videoatlas.llm.transport",
    "videoatlas.llm.langsmith_redact",
    "videoatlas.runtime.tracing",
    "videoatlas.runtime.stopping",
    "videoatlas.logging",
    "videoatlas.paths",
    "videoatlas.defaults",
    "videoatlas.persistence",
    "videoatlas.textsafe",
)
"""Code the agents import that records or reports a run without changing its answer (a test checks
that every module an agent's sources import is either among its sources or here)."""


@dataclass(frozen=True, slots=True)
class Agent:
    """An agent as the rest of the project sees it: its graph, prompt templates, code.

    ``package`` is the agent's package (``videoatlas.agents.<name>``): its code, and its built-in
    prompt sets under ``prompts/<set>/``.
    """

    name: str
    build: Callable[[BaseCheckpointSaver[Any] | None], Any]
    templates: TemplateSpec
    """The prompt templates the agent uses and the variables each may use (a set's hash covers exactly these)."""
    package: str
    settings: type[AgentSettings]
    """The agent's own settings model (what ``RunConfig.settings`` holds for it). It also says, without the graph
    being loaded, which pictures a configuration makes too large for the endpoint (``check_images``: an agent
    that shows the environment's K x K grid refuses one over the image limit; one that never renders it, nothing)."""
    views: AgentViews = field(default_factory=AgentViews)
    """How the agent's runs are shown: its trace, its section of the run page, its progress lines, its extras in
    a run's result (:class:`videoatlas.agents.views.AgentViews`; an agent without them is shown generically)."""
    extra_sources: tuple[str, ...] = ()
    """Modules outside the agent's package that only it uses and that decide its answers (its version covers them,
    no other agent's does)."""
    defaulted_templates: frozenset[str] = frozenset()
    """Templates a prompt directory may leave out (the default set's are used): ones added for an optional mode
    after prompt sets were written for the agent, so those sets keep loading."""

    @property
    def roles(self) -> tuple[str, ...]:
        """Who makes the agent's model calls (``--thinking ROLE=on|off`` names them): its settings say."""
        return self.settings.thinking_roles

    @property
    def sources(self) -> tuple[str, ...]:
        """Modules and packages (dotted names) whose code decides what the agent answers."""
        return (self.package, *self.extra_sources, *SHARED_SOURCES)

    def code_version(self) -> str:
        """A hash of the agent's source code: changes when, and only when, one of its sources changes."""
        return source_sha(self.sources)

    def load_prompts(self, name_or_path: str = "default") -> PromptSet:
        """One of the agent's built-in prompt sets by name, or a directory of its templates."""
        prompts = resources.files(self.package).joinpath("prompts")
        return load_prompt_set(name_or_path, self.templates, prompts, self.defaulted_templates)


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
