"""Every agent as a graph of the LangGraph Agent Server (``langgraph.json``: ``langgraph dev``, Studio).

The server calls a graph's factory for each thing it does with the graph. To run one, it passes the
run's context as JSON: here the video, its subtitles and the run's settings (:class:`ServedRun`).
The factory opens that video and the model client (the endpoint from the environment, as for the
CLI: ``VIDEOATLAS_BASE_URL`` and its siblings), yields the agent's graph bound to that live context,
and closes them when the run ends. For everything else (schemas, drawing the graph, reading a
thread's state) it yields the same graph with no video open.

The server keeps its own checkpoints and threads: a run made here is not in videoatlas's trace
store (``videoatlas runs`` does not list it); its node-by-node history is the thread's history.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING, Any

from langgraph.graph.state import CompiledStateGraph
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from videoatlas.agents.registry import agent_names, check_images, get_agent
from videoatlas.errors import VideoAtlasError
from videoatlas.llm.langsmith_redact import langsmith_scope
from videoatlas.request import check_setup
from videoatlas.runs import prepare
from videoatlas.runs.execute import Prepared
from videoatlas.runtime.context import AgentContext, RunConfig
from videoatlas.served.langgraph_json import variable

if TYPE_CHECKING:
    from langgraph_sdk.runtime import ServerRuntime


class ServedRun(BaseModel):
    """A run's context as a client of the server sends it (JSON).

    ``video`` is a path on the server's machine. Every other key is a run setting, named as in
    :class:`~videoatlas.runtime.context.RunConfig` (``k``, ``cell_px``, ``prompts``, ``call_budget``...) or
    as one of the agent's own settings (``rounds``, ``workers``... for video-rlm): the same names
    ``videoatlas ask`` stores with a run.
    """

    model_config = ConfigDict(extra="allow")

    video: str = Field(description="Path of the video on the server's machine.")
    subtitles: str | None = Field(default=None, description="Path of a subtitle file (SRT, VTT or JSON).")
    subtitle_offset: float = Field(default=0.0, description="Seconds added to every subtitle time.")


def context_schema(agent: str) -> dict[str, Any]:
    """The JSON schema of a run's context for ``agent`` (what Studio's form and the server's filter read)."""
    schema = ServedRun.model_json_schema()
    shared = RunConfig.model_json_schema()
    for name, prop in shared.get("properties", {}).items():
        if name != "agent":
            schema["properties"].setdefault(name, prop)
    schema["$defs"] = {**shared.get("$defs", {}), **schema.get("$defs", {})}
    own = get_agent(agent).settings.model_json_schema()
    for name, prop in own.get("properties", {}).items():
        schema["properties"].setdefault(name, prop)
    schema["$defs"].update(own.get("$defs", {}))
    schema["title"] = f"{agent} run"
    return schema


class ServedGraph(CompiledStateGraph[Any, Any, Any, Any]):
    """An agent's compiled graph that runs on a live :class:`AgentContext` in place of the JSON it is sent.

    ``live`` is a constructor argument, so the copies LangGraph and the server make keep it.
    """

    def __init__(self, *, live: AgentContext | None = None, served_agent: str = "", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.live = live
        self.served_agent = served_agent

    @classmethod
    def of(cls, graph: CompiledStateGraph[Any, Any, Any, Any], agent: str, live: AgentContext | None) -> ServedGraph:
        """``graph`` (as an agent's ``build`` compiles it), served."""
        return cls(**{k: v for k, v in graph.__dict__.items() if k != "__orig_class__"}, live=live, served_agent=agent)

    def astream(self, *args: Any, **kwargs: Any) -> Any:
        """Stream the graph with the live context (the server passes the run's JSON)."""
        if self.live is not None:
            kwargs["context"] = self.live
        return super().astream(*args, **kwargs)

    def get_context_jsonschema(self) -> dict[str, Any] | None:
        """The JSON a run's context is sent as (:class:`ServedRun` and the agent's settings)."""
        return context_schema(self.served_agent)


async def _prepare(agent: str, sent: Any) -> Prepared:
    """The live context of a run sent ``sent`` as its context.

    What is wrong with the request (a bad setting, a missing or unreadable video, an endpoint that
    does not serve the model) is raised as a one-line :class:`ValueError`: the server shows the
    message of that kind of error to the client, and only the error's name for others.
    """
    try:
        run = ServedRun.model_validate(sent if isinstance(sent, dict) else {})
        # The checks read files (the video, the subtitles, the prompt set): off the server's event loop.
        config, choice = await asyncio.to_thread(
            functools.partial(check_setup, run.video, agent=agent, options=run.model_extra, subtitles=run.subtitles)
        )
        settings = choice.settings()
        check_images(config, settings.max_image_pixels)  # as the front door does, once per run
        return await prepare(run.video, config, settings, run.subtitles, run.subtitle_offset, None, None)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "context"
        raise ValueError(f"bad run context: {where}: {first['msg']}") from None
    except VideoAtlasError as exc:
        raise ValueError(str(exc)) from None


def _factory(agent: str) -> Callable[[ServerRuntime[Any]], AbstractAsyncContextManager[ServedGraph]]:
    @asynccontextmanager
    async def graph(runtime: ServerRuntime[Any]) -> AsyncIterator[ServedGraph]:
        built = get_agent(agent).build(None)
        execution = runtime.execution_runtime
        if execution is None:  # schemas, drawing, reading a thread: no video is opened
            yield ServedGraph.of(built, agent, None)
            return
        prepared = await _prepare(agent, execution.context)
        try:
            with langsmith_scope():  # LangSmith (if on) gets no image unless asked
                yield ServedGraph.of(built, agent, prepared.context)
        finally:
            await prepared.aclose()

    graph.__name__ = variable(agent)
    graph.__doc__ = f"The {agent} agent for the LangGraph Agent Server."
    return graph


FACTORIES = {name: _factory(name) for name in agent_names()}
"""Agent name -> its graph factory (``langgraph.json`` names each one)."""

# One module attribute per registered agent (``video-rlm`` -> ``video_rlm``), the names langgraph.json
# gives: the server looks a graph up in the module's namespace, so a module ``__getattr__`` would not do.
_SERVED = {variable(name): factory for name, factory in FACTORIES.items()}
if _clashes := sorted(_SERVED.keys() & globals().keys()):
    raise ImportError(f"agent name(s) {', '.join(_clashes)} would hide names of {__name__}: rename the agent")
globals().update(_SERVED)
