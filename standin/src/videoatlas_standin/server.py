"""STAND-IN VLM SERVER for tests and the demo: an OpenAI-compatible endpoint that reads pixels with OCR.

This module is its lifecycle: the app wiring one module per route (as vLLM's ``entrypoints/openai/<endpoint>/``,
the server's own in :mod:`.status`; a new endpoint is a module with a ``routes`` function, listed in
:data:`ROUTES`), served on a thread of its own (:class:`RunningServer`) or in the foreground.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from aiohttp import web

from videoatlas_standin import chat, decisions, embeddings, status, transcriptions
from videoatlas_standin.context import ServerContext, StandinConfig, StandinStats
from videoatlas_standin.faults import FAULTS

__all__ = ["FAULTS", "ROUTES", "RunningServer", "StandinConfig", "StandinServer", "StandinStats", "serve_forever"]

ROUTES: tuple[Callable[[ServerContext], list[web.RouteDef]], ...] = (
    chat.routes,
    embeddings.routes,
    transcriptions.routes,
    decisions.routes,
    status.routes,
)
"""Each route module's ``routes``, in the order the app registers them."""


class StandinServer(ServerContext):
    """The stand-in server: its shared state (:class:`.context.ServerContext`) and the app serving its routes."""

    def app(self) -> web.Application:
        """The aiohttp application."""
        self._stopping.clear()
        app = web.Application(client_max_size=256 * 1024 * 1024)
        for routes in ROUTES:
            app.router.add_routes(routes(self))
        app.middlewares.append(self._count)
        return app

    @web.middleware
    async def _count(self, request: web.Request, handler: Any) -> web.StreamResponse:
        if request.path not in status.UNCOUNTED:
            self.stats.requests += 1
        response: web.StreamResponse = await handler(request)
        return response


class RunningServer:
    """A stand-in server running on its own thread and event loop (for tests, the demo, benchmarks)."""

    def __init__(self, standin: StandinServer, host: str = "127.0.0.1", port: int = 0) -> None:
        self.standin = standin
        self.host = host
        self._port = port
        self._loop = asyncio.new_event_loop()
        # Its own pool for the OCR, so that stopping drops the reads still queued (see _shutdown).
        self._pool = ThreadPoolExecutor(thread_name_prefix="standin-ocr")
        self._loop.set_default_executor(self._pool)
        self._ready = threading.Event()
        self._runner: web.AppRunner | None = None
        self._thread = threading.Thread(target=self._run, name="standin-vlm", daemon=True)
        self._error: BaseException | None = None
        self.port = 0

    def start(self) -> RunningServer:
        """Start the server thread and wait until it listens."""
        self._thread.start()
        self._ready.wait(timeout=30)
        if self._error is not None:
            raise self._error
        return self

    @property
    def base_url(self) -> str:
        """The OpenAI base URL (``http://host:port/v1``)."""
        return f"http://{self.host}:{self.port}/v1"

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self._start())
        except BaseException as exc:  # reported to start()
            self._error = exc
            self._ready.set()
            return
        self._ready.set()
        self._loop.run_forever()
        self._loop.run_until_complete(self._shutdown())
        self._loop.close()

    async def _start(self) -> None:
        self._runner = web.AppRunner(self.standin.app(), access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self._port)
        await site.start()
        self.port = int(self._runner.addresses[0][1])

    async def _shutdown(self) -> None:
        """Cancel what is still in flight and wait for it to end, then close the listener.

        Handlers a gone client left waiting on OCR are awaited before aiohttp's graceful wait (whose timeout can race
        one finishing), so none is destroyed pending; reads not yet started are dropped, not run at exit.
        """
        self._pool.shutdown(wait=False, cancel_futures=True)
        await _cancel_others()
        if self._runner is not None:
            await self._runner.cleanup()
        await _cancel_others()

    def stop(self) -> None:
        """Stop serving and wait for the thread to finish."""
        self.standin.stop_reading()
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)

    def __enter__(self) -> RunningServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


async def _cancel_others() -> None:
    """Cancel every task on this loop but the caller's, and wait until they have ended."""
    current = asyncio.current_task()
    pending = [t for t in asyncio.all_tasks() if t is not current]
    for task in pending:
        task.cancel()
    await asyncio.gather(*pending, return_exceptions=True)


def serve_forever(standin: StandinServer, host: str, port: int) -> None:
    """Run the stand-in in the foreground until interrupted (``videoatlas standin``)."""
    web.run_app(standin.app(), host=host, port=port, access_log=None, print=None)
