"""The stand-in's own routes, which no vLLM server has: ``GET /health``, ``GET /stats``, ``POST /stats/reset``.

Requests to them are not counted in ``stats.requests`` (:data:`UNCOUNTED`): reading the counters
does not change them.
"""

from __future__ import annotations

import functools

from aiohttp import web

from videoatlas_standin.context import ServerContext, StandinStats

UNCOUNTED = ("/stats", "/stats/reset", "/health")
"""Paths left out of ``stats.requests``."""


def routes(standin: ServerContext) -> list[web.RouteDef]:
    """The health and counter routes, bound to ``standin``."""
    return [
        web.get("/stats", functools.partial(get_stats, standin)),
        web.post("/stats/reset", functools.partial(reset_stats, standin)),
        web.get("/health", health),
    ]


async def health(request: web.Request) -> web.Response:
    """``GET /health``."""
    return web.json_response({"ok": True, "standin": True})


async def get_stats(standin: ServerContext, request: web.Request) -> web.Response:
    """``GET /stats``: request counters."""
    return web.json_response(standin.stats.as_dict())


async def reset_stats(standin: ServerContext, request: web.Request) -> web.Response:
    """``POST /stats/reset``: zero the counters."""
    standin.stats = StandinStats()
    return web.json_response({"ok": True})
