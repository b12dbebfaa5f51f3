"""``videoatlas ui``: a read-only web application over the trace store and the eval folders it was given.

Routes take only ids (a run id, an image's SHA-256, an eval's position on the command line), each
checked against a pattern; nothing in a request becomes a file path. Database reads run on a
thread, so one slow query never stalls the other requests.
"""

from __future__ import annotations

import asyncio
import re
import socket
from pathlib import Path
from typing import Any

import structlog
from aiohttp import web

from videoatlas.environment.concat import media_duration
from videoatlas.errors import BadInputError, VideoAtlasError
from videoatlas.evals.compare import MIN_QUESTIONS_FOR_CI
from videoatlas.evals.report import EvalData
from videoatlas.inspect import load_trace
from videoatlas.persistence import queries
from videoatlas.persistence.store import TraceStore
from videoatlas.ui import evals as ev
from videoatlas.ui import runs_list
from videoatlas.ui.history import history
from videoatlas.ui.render import render, render_run, render_run_body
from videoatlas.ui.view import run_view

log = structlog.get_logger(__name__)

RUN_ID = r"[A-Za-z0-9_.-]{1,64}"
SHA = r"[0-9a-f]{64}"

STORE: web.AppKey[TraceStore] = web.AppKey("store", TraceStore)
EVALS: web.AppKey[ev.EvalFolders] = web.AppKey("evals", ev.EvalFolders)
DURATIONS: web.AppKey[dict[str, float | None]] = web.AppKey("durations", dict)


def _html(text: str, status: int = 200) -> web.Response:
    return web.Response(text=text, content_type="text/html", charset="utf-8", status=status)


def _not_found(what: str) -> web.HTTPNotFound:
    return web.HTTPNotFound(text=f"not found: {what}", content_type="text/plain")


def _image_url(sha: str) -> str:
    return f"/img/{sha}"


@web.middleware
async def _headers(request: web.Request, handler: Any) -> web.StreamResponse:
    """Pages never sniffed, framed or cached by anyone else."""
    response: web.StreamResponse = await handler(request)
    response.headers.setdefault("X-Content-Type-Options", "nosniff")
    response.headers.setdefault("X-Frame-Options", "DENY")
    response.headers.setdefault("Referrer-Policy", "no-referrer")
    return response


def _duration(app: web.Application, video: str) -> float | None:
    """The length of a run's video (probed once per path; None when the file cannot be read now)."""
    cache = app[DURATIONS]
    if video not in cache:
        try:
            cache[video] = media_duration(video) if Path(video).is_file() else None
        except VideoAtlasError:
            cache[video] = None
    return cache[video]


async def _run_view(request: web.Request) -> dict[str, Any]:
    store = request.app[STORE]
    run_id = request.match_info["run_id"]
    try:
        trace = await load_trace(run_id, store=store)
    except BadInputError:
        raise _not_found(f"run {run_id}") from None
    run = trace["run"]
    summaries = await asyncio.to_thread(runs_list.runs_by_id, store.engine, [run["id"]])
    status = summaries.get(run["id"], {}).get("status")
    after = await history(store.url, trace["agent"], run["id"])
    duration = await asyncio.to_thread(_duration, request.app, run["video"])
    return run_view(trace, after, duration, status)


async def runs(request: web.Request) -> web.Response:
    """Every run, filtered and paged."""
    q = request.query
    try:
        page = int(q.get("page", "1"))
    except ValueError:
        page = 1
    status = q.get("status", "")
    flt = runs_list.RunFilter(
        status=status if status in runs_list.STATUSES else "",
        video=q.get("video", "").strip(),
        agent=q.get("agent", "").strip(),
        prompt_set=q.get("prompt_set", "").strip(),
        text=q.get("q", "").strip(),
        page=page,
    )
    found = await asyncio.to_thread(runs_list.runs_page, request.app[STORE].engine, flt)
    return _html(render("runs.html", page=found, flt=flt, statuses=runs_list.STATUSES))


async def run(request: web.Request) -> web.Response:
    """One run as it happened."""
    view = await _run_view(request)
    live = f"/runs/{view['run']['id']}/body" if view["header"]["status"] == "running" else None
    return _html(render_run(view, _image_url, live))


async def run_body(request: web.Request) -> web.Response:
    """The run's body alone, for a page that follows a run in progress."""
    view = await _run_view(request)
    return _html(render_run_body(view, _image_url))


async def image(request: web.Request) -> web.Response:
    """An image the model saw, by content hash, from the store."""
    sha = request.match_info["sha"]
    data = await asyncio.to_thread(queries.image, request.app[STORE].engine, sha)
    if data is None:
        raise _not_found(f"image {sha}")
    return web.Response(body=data, content_type="image/jpeg", headers={"Cache-Control": "max-age=86400, immutable"})


def _eval(request: web.Request, key: str = "index") -> tuple[int, EvalData]:
    raw = request.match_info.get(key) or request.query.get(key, "")
    index = int(raw) if raw.isdigit() else -1
    data = request.app[EVALS].get(index)
    if data is None:
        raise _not_found(f"eval {raw}")
    return index, data


async def evals(request: web.Request) -> web.Response:
    """The eval folders given on the command line."""
    folders = request.app[EVALS]
    found = [ev.summary(i, data) for i in range(len(folders.folders)) if (data := folders.get(i)) is not None]
    return _html(render("evals.html", evals=found))


async def eval_page(request: web.Request) -> web.Response:
    """One eval: accuracy overall and per category, calibration, the plots, and every question linked to its run."""
    index, data = await asyncio.to_thread(_eval, request)
    ids = [r["run_id"] for r in data.rows if r.get("run_id")]
    found = await asyncio.to_thread(runs_list.runs_by_id, request.app[STORE].engine, ids)
    return _html(
        render(
            "eval.html",
            index=index,
            name=data.folder.name,
            rep=ev.report_of(data),
            questions=ev.question_rows(data, found),
        )
    )


async def eval_plot(request: web.Request) -> web.Response:
    """The eval's tokens-vs-duration plot."""
    _, data = await asyncio.to_thread(_eval, request)
    png = await asyncio.to_thread(ev.plot_png, data)
    return web.Response(body=png, content_type="image/png")


async def eval_reliability(request: web.Request) -> web.Response:
    """The eval's reliability plot (not found when no answer carried a probability)."""
    _, data = await asyncio.to_thread(_eval, request)
    png = await asyncio.to_thread(ev.reliability_png, data)
    if png is None:
        raise _not_found("a reliability plot: no probabilities were recorded")
    return web.Response(body=png, content_type="image/png")


async def compare_page(request: web.Request) -> web.Response:
    """Two evals side by side, with the paired bootstrap interval and the questions that flipped."""
    index_a, a = await asyncio.to_thread(_eval, request, "a")
    index_b, b = await asyncio.to_thread(_eval, request, "b")
    try:
        cmp = await asyncio.to_thread(ev.comparison, a, b)
    except BadInputError as exc:
        raise web.HTTPBadRequest(text=str(exc), content_type="text/plain") from None
    ids = [r["run_id"] for r in [*a.rows, *b.rows] if r.get("run_id")]
    found = await asyncio.to_thread(runs_list.runs_by_id, request.app[STORE].engine, ids)
    sections = [("overall", cmp["overall"]), *cmp["categories"].items()]
    return _html(
        render(
            "compare.html",
            cmp=cmp,
            index_a=index_a,
            index_b=index_b,
            name_a=a.folder.name,
            name_b=b.folder.name,
            sections=sections,
            too_few=any(s["too_few_questions"] for _, s in sections),
            min_questions=MIN_QUESTIONS_FOR_CI,
            flipped=ev.flipped(a, b, found),
        )
    )


async def home(request: web.Request) -> web.Response:
    """The runs list is the front page."""
    raise web.HTTPFound("/runs")


def build_app(db_url: str, eval_folders: ev.EvalFolders) -> web.Application:
    """The application over the store at ``db_url`` (opened now, closed with the app)."""
    app = web.Application(middlewares=[_headers])
    app[STORE] = TraceStore(db_url)
    app[EVALS] = eval_folders
    app[DURATIONS] = {}

    async def close(app: web.Application) -> None:
        await asyncio.to_thread(app[STORE].close)

    app.on_cleanup.append(close)
    app.router.add_get("/", home)
    app.router.add_get("/runs", runs)
    app.router.add_get(f"/runs/{{run_id:{RUN_ID}}}", run)
    app.router.add_get(f"/runs/{{run_id:{RUN_ID}}}/body", run_body)
    app.router.add_get(f"/img/{{sha:{SHA}}}", image)
    app.router.add_get("/evals", evals)
    app.router.add_get(r"/evals/{index:\d{1,4}}", eval_page)
    app.router.add_get(r"/evals/{index:\d{1,4}}/tokens.png", eval_plot)
    app.router.add_get(r"/evals/{index:\d{1,4}}/reliability.png", eval_reliability)
    app.router.add_get("/compare", compare_page)
    return app


def serve(db_url: str, eval_folders: ev.EvalFolders, sock: socket.socket) -> None:
    """Serve on ``sock`` (bound and listening: a taken port was refused before) until interrupted."""
    app = build_app(db_url, eval_folders)
    log.info("ui_serving", address=sock.getsockname())
    web.run_app(app, sock=sock, print=None, handle_signals=True)


def is_safe_host(host: str) -> bool:
    """Whether ``host`` is a loopback address (the UI has no authentication)."""
    return host in ("localhost", "::1") or re.fullmatch(r"127(\.\d{1,3}){3}", host) is not None
