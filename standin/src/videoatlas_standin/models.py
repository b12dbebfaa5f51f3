"""``GET /v1/models``: the one model a stand-in server serves (vLLM's ``/v1/models``)."""

from __future__ import annotations

import functools

from aiohttp import web

from videoatlas_standin.context import ServerContext


def routes(standin: ServerContext) -> list[web.RouteDef]:
    """The models route, bound to ``standin``."""
    return [web.get("/v1/models", functools.partial(models, standin))]


async def models(standin: ServerContext, request: web.Request) -> web.Response:
    """``GET /v1/models``: the one model this stand-in serves."""
    model = {"id": standin.config.model, "object": "model", "owned_by": "videoatlas (stand-in, not a VLM)"}
    return web.json_response({"object": "list", "data": [model]})
