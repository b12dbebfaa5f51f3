"""A run as the run page shows it: the trace of :func:`videoatlas.inspect.load_trace` turned into plain view data.

The templates only lay out what this module computes (intervals, which cells to outline, which
call belongs to which step), so the page served by ``videoatlas ui`` and the file written by
``videoatlas report`` are one rendering of one view. How the agent worked is its own section, from
its page hook (:attr:`videoatlas.agents.base.Agent.page_view`); an agent without one is shown by
its node timeline. The header, the failure and the final decision are the same for every agent.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

from videoatlas.agents.base import Agent
from videoatlas.agents.page import PageContext, call_view, grid_cells, root_cell, timeline
from videoatlas.agents.registry import get_agent
from videoatlas.environment.render import evidence_label
from videoatlas.environment.timefmt import format_ts
from videoatlas.inspect import node_place, spent_text
from videoatlas.persistence.db import redact_url
from videoatlas.persistence.tables import aware
from videoatlas.state.models import former_roles, roles_text
from videoatlas.state.run import probability_note


def endpoint_host(base_url: str | None) -> str:
    """Only the host (and port) of an endpoint: never its path, user or password."""
    if not base_url:
        return ""
    parts = urlsplit(redact_url(base_url))
    host = parts.hostname or ""
    return f"{host}:{parts.port}" if parts.port else host


def _parse_time(text: str | None) -> datetime | None:
    if not text:
        return None
    return aware(datetime.fromisoformat(text))


def settings_rows(values: dict[str, Any]) -> list[tuple[str, str]]:
    """Settings as the command line takes them: ``(--cell-px, 96)``, ``(--token-budget, none)``."""
    return [("--" + key.replace("_", "-"), _setting_text(value)) for key, value in values.items()]


def _setting_text(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list | tuple):
        return ", ".join(_setting_text(v) for v in value)
    return str(value)


def header(trace: dict[str, Any], duration: float | None, status: str | None = None) -> dict[str, Any]:
    """What the run was: video, model, endpoint host, prompts, settings, dates, total cost and wall time.

    ``status``: the run's status as the runs list shows it (``stale`` for a dead run still marked running).
    """
    run = trace["run"]
    now = datetime.now(UTC)
    cost = {**(trace.get("cost_state") or {}), **(run.get("cost") or {})}
    created = _parse_time(run.get("created_at"))
    finished = _parse_time(run.get("finished_at"))
    updated = _parse_time(run.get("updated_at"))
    status = status or run["status"]
    wall = cost.get("wall_s")
    if wall is None and created is not None:
        wall = ((finished or (now if status == "running" else updated or now)) - created).total_seconds()
    config = dict(run.get("config") or {})
    agent_settings = config.pop("settings", None) or {}
    endpoint = run.get("endpoint") or {}
    tokens = cost.get("tokens")
    if tokens is None and "prompt_tokens" in cost:
        tokens = cost["prompt_tokens"] + cost.get("completion_tokens", 0)
    return {
        "status": status,
        "video": run["video"],
        "video_name": run["video"].replace("\\", "/").rsplit("/", 1)[-1],
        "duration": format_ts(duration, 1) if duration else "unknown",
        "model": endpoint.get("model") or "(the endpoint's first model)",
        "host": endpoint_host(endpoint.get("base_url")),
        "prompt_set": run.get("prompt_set"),
        "prompt_sha": run.get("prompt_sha"),
        "settings": settings_rows({k: v for k, v in config.items() if k != "agent" and (k != "thinking" or v)}),
        "agent_settings": settings_rows(agent_settings),
        "created": created,
        "finished": finished,
        "updated": updated,
        "tokens": tokens,
        "roles": roles_text(cost.get("tokens_by_role") or former_roles(cost)),
        "calls": cost.get("calls"),
        "cached_tokens": cost.get("cached_tokens"),
        "reasoning_tokens": cost.get("reasoning_tokens"),
        "frames_viewed": cost.get("frames_viewed"),
        "index_frames": cost.get("index_frames"),
        "index_s": cost.get("index_s"),
        "audio_s": cost.get("audio_s"),
        "transcriptions": cost.get("transcriptions"),
        "transcribe_s": cost.get("transcribe_s"),
        "fallbacks": cost.get("fallbacks"),
        "wall_s": wall,
    }


def decision(trace: dict[str, Any], k: int, agent: Agent) -> dict[str, Any] | None:
    """The final decision: its call, the root grid with cells that gave findings, the scratchpad, citations."""
    call = next((c for c in reversed(trace["calls"]) if c["node"] == agent.views.decision_node), None)
    run = trace["run"]
    if call is None and run["answer"] is None:
        return None
    cited = set(trace.get("cited", []))
    evidence = [{**e, "cited": e["id"] in cited} for e in trace["evidence"]]
    findings: dict[int, int] = {}
    for e in evidence:
        cell = root_cell(str((e.get("where") or {}).get("cell") or "")) if agent.views.decision_grid else None
        if cell is not None:
            findings[cell] = findings.get(cell, 0) + 1
    images = call["images"] if call else []
    grid_call = call if agent.views.decision_grid else None
    return {
        "call": call_view(call),
        "grid": images[0] if grid_call and images else None,
        "findings": grid_cells(list(findings), k, {c: f"{c}: {n} found" for c, n in findings.items()}),
        "scratchpad": images[1:] if grid_call else images,
        "evidence": evidence,
        "answer": run["answer"],
        "answer_letter": chr(ord("A") + run["answer_index"]) if run.get("answer_index") is not None else "",
        "reasoning": run["reasoning"],
        "stop_reason": run["stop_reason"],
        "grounded": trace["grounded"],
        "support": trace["support"],
        "declined": bool(trace.get("declined")),
        "confidence": probability_note(trace.get("probabilities"), trace.get("confidence")),
    }


def _failure(failure: Any) -> dict[str, Any] | None:
    """Why a run stopped, as lines to show: the error, the node and call that failed, the unusable reply, the cost."""
    if not failure:
        return None
    if not isinstance(failure, dict):
        return {
            "error": str(failure),
            "interrupted": False,
            "node": None,
            "call": None,
            "problems": [],
            "reply": None,
            "spent": None,
        }
    node, call, spent = failure.get("node"), failure.get("call"), failure.get("spent")
    where = node if isinstance(node, str) else node_place(failure)
    what = call if isinstance(call, str) else ""
    if isinstance(call, dict):
        who = f" ({call['worker']})" if call.get("worker") else ""
        what = (
            f"{call.get('schema')} from {call.get('node')}{who}, {call.get('attempts')} attempt(s): {call.get('error')}"
        )
    return {
        "error": failure.get("error"),
        "interrupted": bool(failure.get("interrupted")),
        "node": where or None,
        "call": what or None,
        "problems": list(call.get("parse_errors") or []) if isinstance(call, dict) else [],
        "reply": failure.get("reply"),
        "spent": spent_text(spent) if isinstance(spent, dict) else None,
    }


def section(trace: dict[str, Any], agent: Agent, context: PageContext) -> dict[str, Any]:
    """The agent's section of the page (its own view, or the node timeline), with what it leaves out filled in."""
    shown: dict[str, Any] = {
        "duration": context.duration,
        "facts": [],
        "turns": [],
        "timeline": [],
        "steps": 0,
        "repairs": trace["repairs"],
    }
    shown.update(agent.views.page(trace, context) if agent.views.page is not None else {"timeline": timeline(trace)})
    return shown


def run_view(
    trace: dict[str, Any],
    after: dict[int, dict[str, Any]] | None = None,
    duration: float | None = None,
    status: str | None = None,
) -> dict[str, Any]:
    """Everything the run page shows, as plain data.

    ``after``: what the agent's history hook read from the run's checkpoints (:func:`videoatlas.ui.history.history`).
    """
    config = trace["run"].get("config") or {}
    k = int(config.get("k", 8))
    agent = get_agent(trace["agent"])
    own = section(trace, agent, PageContext(k, duration, after or {}))
    return {
        "run": trace["run"],
        "agent": trace["agent"],
        "header": header(trace, own["duration"], status),
        "failure": _failure(trace.get("failure")),
        "pending": trace["pending"],
        "facts": own["facts"],
        "k": k,
        "section": own,
        "section_template": f"{agent.name}/{agent.views.page_template}" if agent.views.page_template else None,
        "turns": own["turns"],
        "timeline": own["timeline"],
        "decision": decision(trace, k, agent),
        "repairs": own["repairs"],
        "steps": own["steps"],
        "calls": len(trace["calls"]),
        "labels": {e["id"]: e["label"] for e in trace["evidence"]},
        "evidence_label": evidence_label,
    }
