"""The MCP server: the tools of :mod:`.tools` on the official SDK's ``MCPServer``, over stdio or streamable HTTP.

A tool that fails hands back one line (an MCP tool error), never a traceback, and the server goes on.
A question runs as a stored run, like ``videoatlas ask``: a client that goes away mid-question cancels
it, which leaves it ``interrupted`` and resumable (the ``resume`` tool, or ``videoatlas resume RUN``).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Annotated, Any, Literal, ParamSpec, TypeVar

import structlog
from mcp.server.mcpserver import Context, Image, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from videoatlas.agents.registry import DEFAULT_AGENT, agent_names, describe_event
from videoatlas.errors import VideoAtlasError
from videoatlas.mcp import tools
from videoatlas.mcp.tools import Service

log = structlog.get_logger(__name__)

P = ParamSpec("P")
T = TypeVar("T")

INSTRUCTIONS = (
    "Answers questions about long videos with a vision-language model that navigates a grid of the video's "
    "frames. `ask` takes an absolute path under the server's roots; its reply gives the answer, the evidence "
    "(times in seconds) and a run id, which `trace`, `evidence_frames` and `resume` take."
)

PATH_HELP = "absolute path of the video, under the server's roots"
AGENT_HELP = f"the agent: one of {', '.join(agent_names())}"
SPEECH_HELP = (
    "the video's speech track: auto (default) transcribes what the agent looks at when the video has sound and the "
    "endpoint transcribes, full the whole track at the first look, off never listens"
)
"""The ``agent`` argument's description (module level: the SDK reads tool annotations from the module)."""


def _one_line(fn: Callable[P, Awaitable[T]]) -> Callable[P, Awaitable[T]]:
    """The user's errors as a tool error of one line (the SDK logs it without a traceback)."""

    @functools.wraps(fn)
    async def run(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return await fn(*args, **kwargs)
        except VideoAtlasError as exc:
            raise ToolError(str(exc)) from None

    return run


_DETACHED: set[asyncio.Task[Any]] = set()
"""Runs whose client went away, finishing their clean-up (held so that they are not collected meanwhile)."""


async def _run_detached(work: Awaitable[T]) -> T:
    """Run a question as a task of its own, which a client that goes away cancels once.

    The SDK cancels a call whose client is gone through an anyio cancel scope, which cancels every
    await in it again and again, the run's own clean-up included: the run would be left ``running``
    until its lease went stale. Cancelled once from here, the run records itself ``interrupted``
    (resumable) and its task ends on its own.
    """
    task = asyncio.ensure_future(work)
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        task.cancel()
        _DETACHED.add(task)
        task.add_done_callback(_DETACHED.discard)
        raise


@contextlib.asynccontextmanager
async def _progress(ctx: Context) -> AsyncIterator[Callable[[dict[str, Any]], None]]:
    """A run's events -> MCP progress notifications (sent in order, from a task of their own)."""
    queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()

    async def forward() -> None:
        count = 0
        while (event := await queue.get()) is not None:
            count += 1
            line = describe_event(event) or str(event.get("event", "step"))
            if event.get("event") == "run_started":
                line = f"run {event.get('run_id')} started"
            await ctx.report_progress(count, None, line)

    task = asyncio.create_task(forward())
    try:
        yield queue.put_nowait
    finally:
        queue.put_nowait(None)
        with contextlib.suppress(Exception):  # a client gone mid-run cannot be told any more
            await asyncio.wait_for(asyncio.shield(task), 5)


def build_server(service: Service) -> MCPServer:
    """The MCP server with every tool, serving ``service``."""
    server: MCPServer = MCPServer("videoatlas", instructions=INSTRUCTIONS, log_level="WARNING")

    @server.tool(description="Answer a question about a video (multiple choice with `choices`); reports progress.")
    @_one_line
    async def ask(
        path: Annotated[str, Field(description=PATH_HELP)],
        question: Annotated[str, Field(description="the question")],
        ctx: Context,
        choices: Annotated[list[str] | None, Field(description="answer options (none: open-ended)")] = None,
        agent: Annotated[str, Field(description=AGENT_HELP)] = DEFAULT_AGENT,
        token_budget: Annotated[int | None, Field(description="tokens the run may spend", gt=0)] = None,
        call_budget: Annotated[int | None, Field(description="model calls the run may make", gt=0)] = None,
        speech: Annotated[Literal["auto", "off", "full"] | None, Field(description=SPEECH_HELP)] = None,
        options: Annotated[
            dict[str, Any] | None, Field(description="more run options by name (k, cell_px, the agent's settings)")
        ] = None,
    ) -> dict[str, Any]:
        knobs = {**(options or {}), **({"speech": speech} if speech is not None else {})}
        async with _progress(ctx) as on_event:
            return await _run_detached(
                tools.ask(service, path, question, choices or [], agent, token_budget, call_budget, knobs, on_event)
            )

    @server.tool(description="Continue an interrupted run from its last checkpoint; reports progress.")
    @_one_line
    async def resume(run_id: str, ctx: Context) -> dict[str, Any]:
        async with _progress(ctx) as on_event:
            return await _run_detached(tools.resume(service, run_id, on_event))

    @server.tool(
        description="List the newest runs with their status (running, finished, interrupted, stale...), "
        "optionally only those with one status or of one agent."
    )
    @_one_line
    async def list_runs(status: str | None = None, limit: int = 20, agent: str | None = None) -> list[dict[str, Any]]:
        return await asyncio.to_thread(tools.list_runs, service, status, limit, agent)

    @server.tool(description="Read a run's trace: its question, answer, evidence, node timeline, cost and failure.")
    @_one_line
    async def trace(run_id: str) -> dict[str, Any]:
        return await tools.read_trace(service, run_id)

    @server.tool(
        description="The video frames a run's evidence points at, as images (labels: A, B...; none: all).",
        structured_output=False,
    )
    @_one_line
    async def evidence_frames(
        run_id: str, labels: list[str] | None = None, size: Annotated[int, Field(ge=64, le=2048)] = 512
    ) -> list[str | Image]:
        out: list[str | Image] = []
        for item, png in await tools.evidence_frames(service, run_id, labels or [], size):
            out.append(f"{item['label']} at {item['time']:.2f}s: {item['description']}")
            out.append(Image(data=png, format="png"))
        return out

    @server.tool(description="Probe a video: duration, frame rate, frame count, size, codec, audio.")
    @_one_line
    async def probe(path: Annotated[str, Field(description=PATH_HELP)]) -> dict[str, Any]:
        return await asyncio.to_thread(tools.probe_video, service, path)

    return server


def serve(service: Service, sock: socket.socket | None, host: str = "127.0.0.1") -> None:
    """Serve until stopped: over stdio (``sock`` None) or streamable HTTP at /mcp on ``sock``.

    Over stdio the client started this process. Over HTTP ``sock`` is bound and listening already, and
    ``host`` is the name it was bound by (the one requests may give as their Host).
    """
    server = build_server(service)
    if sock is None:
        server.run("stdio")
        return
    import anyio
    import uvicorn

    # the SDK's own run("streamable-http") binds by itself; here the socket is bound already (a port taken is refused
    # in one line before anything is said), so its app goes to uvicorn as the SDK's run would hand it
    app = server.streamable_http_app(host=host)
    log.info("mcp_listening", address=sock.getsockname())
    config = uvicorn.Config(app, log_level=server.settings.log_level.lower())
    anyio.run(functools.partial(uvicorn.Server(config).serve, sockets=[sock]))
