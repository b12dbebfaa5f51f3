"""How an agent's runs are shown: the one views hook each agent brings (its trace, page, progress, extras, pictures).

Nothing above the agents names one: ``trace``, the run page, the report, ``ask``'s progress lines
and a run's result ask the agent's :class:`AgentViews`, and show what every agent has (the node
timeline, the decision, the evidence) where a field is None.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from langgraph.types import StateSnapshot

    from videoatlas.agents.page import PageContext
    from videoatlas.environment.atlas import RenderedImage, VideoAtlas


@dataclass(frozen=True, slots=True)
class Picture:
    """A picture of a finished run for people (``demo`` writes each as ``runs/<run id>/<name>.jpg`` and lists it)."""

    name: str
    """Its key in ``demo --json`` and its file's stem (``root_grid``, ``scratchpad_1``)."""
    caption: str
    """What it shows, in a few words (``evidence scratchpad``)."""
    image: RenderedImage


def evidence_pictures(state: dict[str, Any], atlas: VideoAtlas) -> list[Picture]:
    """The run's evidence as scratchpad pages, in label order: what every agent's run can be shown by."""
    from videoatlas.environment.render import ScratchTile

    tiles = [ScratchTile(i, e.time, e.subtitle) for i, e in enumerate(state.get("evidence") or [])]
    return [
        Picture(f"scratchpad_{n + 1}", "evidence scratchpad", page) for n, page in enumerate(atlas.scratchpad(tiles))
    ]


@dataclass(frozen=True, slots=True)
class AgentViews:
    """An agent's own ways of showing its runs; every field may be left out."""

    trace_detail: Callable[[dict[str, Any], Sequence[dict[str, Any]]], dict[str, Any]] | None = None
    """(checkpointed state, model calls) -> the agent's own view of a run, as plain data (``trace --json``)."""
    trace_lines: Callable[[dict[str, Any], dict[int, list[str]]], list[str]] | None = None
    """(that view, repair lines by round or turn) -> lines for ``trace``; without it the timeline alone is shown."""
    page: Callable[[dict[str, Any], PageContext], dict[str, Any]] | None = None
    """(trace, page context) -> the agent's section of the run page, as plain data: any of ``facts``
    (label, text) for the header, ``turns``, ``timeline``, ``steps`` (how many were taken: a page
    following the run reloads when it grows), ``repairs`` (those shown outside the section),
    ``duration`` (the video's length when the trace tells it better than the probe) and whatever its
    own template (:attr:`page_template`) lays out. Without it the page shows the node timeline."""
    page_template: str | None = None
    """A Jinja template in the agent package's ``templates/`` folder that lays out its section of the run page
    (it sees the page's ``view`` and the shared macros); None: the shared page's generic blocks only."""
    history: Callable[[AsyncIterator[StateSnapshot]], Awaitable[dict[int, dict[str, Any]]]] | None = None
    """(the run's checkpointed states, newest first) -> what the page view needs from earlier checkpoints,
    by round (:attr:`PageContext.history`); without it, nothing is read."""
    describe_event: Callable[[dict[str, Any]], str | None] | None = None
    """A progress event the agent's nodes sent -> a line for ``ask`` (None: not its event, or not worth a line)."""
    decision_node: str | None = None
    """The node whose call makes the final decision (the run page shows that call with the answer)."""
    decision_grid: bool = False
    """Whether the final call's first image is the root grid: the page then shows it, with the cells
    that gave evidence outlined, apart from the scratchpad pages."""
    extras: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    """The agent's final state -> what its runs report beyond every agent's answer, evidence and cost (plain
    data: a run result's ``extras``; Video-RLM's rounds, search task and traversal, an index's size)."""
    pictures: Callable[[dict[str, Any], VideoAtlas], list[Picture]] | None = None
    """(the agent's final state, an atlas of the run's video at its grid) -> pictures that show the run to people
    (``demo`` writes them); None: its evidence as scratchpad pages (:func:`evidence_pictures`)."""

    @classmethod
    def of(cls, trace: ModuleType, **hooks: Any) -> AgentViews:
        """The views of an agent whose trace module reads its runs back, ``hooks`` the rest.

        The module's ``detail``, ``lines`` and ``page_view`` functions are the trace and page hooks; ``hooks`` give
        the others (``describe_event``, ``decision_node``...).
        """
        return cls(trace_detail=trace.detail, trace_lines=trace.lines, page=trace.page_view, **hooks)

    def result_extras(self, state: dict[str, Any]) -> dict[str, Any]:
        """What :attr:`extras` makes of ``state`` ({} without it)."""
        return self.extras(state) if self.extras is not None else {}

    def run_pictures(self, state: dict[str, Any], atlas: VideoAtlas) -> list[Picture]:
        """What :attr:`pictures` makes of ``state`` (the evidence scratchpad without it)."""
        return self.pictures(state, atlas) if self.pictures is not None else evidence_pictures(state, atlas)


def step_head(step: dict[str, Any], said: str, repairs: dict[int, list[str]]) -> list[str]:
    """The first lines of a thinker's step in ``trace``: its header, what it said, the repairs made at it.

    ``said``: the step's key for what the thinker said (its first 200 characters are shown); ``repairs``: lines by
    step index.
    """
    return [
        f"  {step['header']}",
        f"    {said}: {step[said][:200]}",
        *(f"    {line}" for line in repairs.get(step["index"], [])),
    ]
