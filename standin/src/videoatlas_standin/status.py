"""What a stand-in server says of itself: ``GET /v1/models`` (as vLLM's), and its own ``/health`` and ``/stats``.

``GET /health``, ``GET /stats`` and ``POST /stats/reset`` are left out of ``stats.requests`` (:data:`UNCOUNTED`).
"""

from __future__ import annotations

import functools

from aiohttp import web

from videoatlas_standin.context import ServerContext, StandinStats

UNCOUNTED = ("/stats", "/stats/reset", "/health")
"""Paths left out of ``stats.requests``."""


def routes(standin: ServerContext) -> list[web.RouteDef]:
    """The models, health and counter routes, bound to ``standin``."""
    return [
        web.get("/v1/models", functools.partial(models, standin)),
        web.get("/stats", functools.partial(get_stats, standin)),
        web.post("/stats/reset", functools.partial(reset_stats, standin)),
        web.get("/health", health),
    ]


async def models(standin: ServerContext, request: web.Request) -> web.Response:
    """``GET /v1/models``: the one model this stand-in serves."""
    model = {"id": standin.config.model, "object": "model", "owned_by": "videoatlas (stand-in, not a VLM)"}
    return web.json_response({"object": "list", "data": [model]})


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
