"""The one renderer of every page: Jinja2 templates shipped in the package, autoescaped, with a few filters.

A run page is rendered the same way for the web UI (images served by hash) and for ``videoatlas
report`` (one self-contained file, images inlined as data URIs): only ``image_src`` differs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from functools import cache
from typing import Any
from urllib.parse import urlencode

from jinja2 import ChoiceLoader, Environment, PackageLoader, PrefixLoader, StrictUndefined, select_autoescape

from videoatlas.agents.registry import all_agents
from videoatlas.environment.timefmt import format_ts
from videoatlas.evals.calibration import COVERAGES
from videoatlas.evals.report import CALIBRATION_NOTE, no_probability_text

ImageSource = Callable[[str], str | None]
"""A stored image's hash -> what an ``<img src>`` gets (None: the image is not stored)."""


def _num(value: float | None) -> str:
    return "" if value is None else f"{value:,.0f}"


def _secs(value: float | None) -> str:
    if value is None:
        return ""
    return f"{value:.2f} s" if value < 60 else format_ts(value, 0)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def _iou(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _score(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _when(value: datetime | str | None) -> str:
    if value is None:
        return ""
    when = datetime.fromisoformat(value) if isinstance(value, str) else value
    return when.strftime("%Y-%m-%d %H:%M:%S")


def _ts(value: float | None) -> str:
    return "" if value is None else format_ts(value, 1)


def _shortpath(path: str) -> str:
    """The file and its folder (``set1/video.mp4``): files of one name in different folders told apart."""
    parts = [p for p in path.replace("\\", "/").split("/") if p]
    return "/".join(parts[-2:])


def _url(path: str, query: Mapping[str, str]) -> str:
    return f"{path}?{urlencode(query)}" if query else path


@cache
def environment() -> Environment:
    """The template environment (built once): every value is HTML-escaped unless a template says otherwise.

    The UI's own templates, and each agent's under its name (the section of the run page it lays out).
    """
    # An agent's own section of the run page is its template, named "<agent>/<file>" (AgentViews.page_template).
    own = {
        name: PackageLoader(agent.package, "templates")
        for name, agent in all_agents().items()
        if agent.views.page_template is not None
    }
    env = Environment(
        loader=ChoiceLoader([PackageLoader("videoatlas.ui", "templates"), PrefixLoader(own)]),
        autoescape=select_autoescape(enabled_extensions=("html",), default_for_string=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(num=_num, secs=_secs, pct=_pct, iou=_iou, score=_score, when=_when, ts=_ts, shortpath=_shortpath)
    # The eval pages say what the calibration's figures are in the words `eval report` uses.
    env.globals.update(
        url=_url, coverages=COVERAGES, calibration_note=CALIBRATION_NOTE, no_probability_text=no_probability_text
    )
    return env


def render(template: str, **context: Any) -> str:
    """A page from ``template`` (``standalone`` defaults to False: the page links to the rest of the UI)."""
    context.setdefault("standalone", False)
    return environment().get_template(template).render(**context)


def render_run(view: dict[str, Any], image_src: ImageSource, live: str | None = None) -> str:
    """The run page served by the web UI; ``live``: the URL its body refreshes from while the run goes on."""
    return render("run.html", view=view, image_src=image_src, live=live)


def render_run_body(view: dict[str, Any], image_src: ImageSource) -> str:
    """Only the run's body (what a live page swaps in)."""
    return render("_run_body.html", view=view, image_src=image_src)


def render_report(view: dict[str, Any], images: Mapping[str, str]) -> str:
    """The run page as one self-contained file: ``images`` (base64 JPEG by hash) inlined as data URIs."""

    def inline(sha: str) -> str | None:
        data = images.get(sha)
        return f"data:image/jpeg;base64,{data}" if data else None

    return render("run.html", view=view, image_src=inline, live=None, standalone=True)
