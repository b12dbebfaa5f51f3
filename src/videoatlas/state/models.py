"""The records every agent keeps: evidence, frame references, costs, repairs, dead zones, the index used; reducers.

Nothing here holds pixels: an evidence item keeps a reference (video identity, time, render size)
from which its frame is rendered again whenever it is shown.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

from videoatlas.environment.geometry import Interval, merge_intervals

K = TypeVar("K")


def merge_by(current: Sequence[K] | None, update: Sequence[K] | None, key: Callable[[K], int]) -> list[K]:
    """A reducer's body: the records of both, one per ``key`` (the update's replaces the current's), by key."""
    by_key = {key(r): r for r in current or []}
    for record in update or []:
        by_key[key(record)] = record
    return [by_key[k] for k in sorted(by_key)]


class Frozen(BaseModel):
    """Immutable state records: a node returns new ones, it never edits what it was given."""

    model_config = ConfigDict(frozen=True)

    former_modules: ClassVar[tuple[str, ...]] = ()
    """Modules that defined this class in earlier releases: their checkpoints name it there, and the
    checkpoint reader rebuilds it from those names too (each such module still exports it)."""


class FrameRef(Frozen):
    """Enough to render an evidence frame again: which video, which moment, at what size."""

    video: str
    time: float
    px: int


JSONScalar = str | int | float | bool | None

FORMER_LOCATION = ("round", "worker", "depth", "cell")
"""The fields evidence had before its location was its agent's (Video-RLM's words): read into ``where``."""


class Evidence(Frozen):
    """One piece of visual evidence in the scratchpad.

    Where it was found is the agent's own: ``place`` says it for people, ``where`` keeps it as the agent's
    fields; shared code shows the one and passes the other on, reading neither.
    """

    id: str
    """Stable id, unique in its run; the agent's own (Video-RLM: ``r{round}-{worker}-{n}``)."""
    time: float
    """The moment the frame shows, in video seconds."""
    start: float
    end: float
    """The stretch of video it was found in."""
    description: str
    confidence: float
    subtitle: str | None = None
    frame: FrameRef
    place: str = ""
    """Where the agent found it, in its own words (``cell 12/5``, ``turn 3, focus``); empty: shown by its stretch."""
    where: Mapping[str, JSONScalar] = Field(default_factory=dict)
    """Where the agent found it, as its own fields (Video-RLM: ``round``, ``worker``, ``depth``, ``cell``;
    VideoARM: ``step``, ``tool``): what its nodes and views read back."""
    erased: bool = False
    """Set on a copy to remove the item through the reducer (uncertainty analysis erasing noise)."""

    @model_validator(mode="before")
    @classmethod
    def _former_location(cls, data: Any) -> Any:
        """Evidence checkpointed before the location was the agent's: ``round``, ``worker``, ``depth``, ``cell``.

        They become ``where`` (the ones that were None left out), and a cell path its ``place``, as Video-RLM,
        the agent those fields were made for, now writes them; the id is kept as it was.
        """
        if not isinstance(data, dict) or not any(key in data for key in FORMER_LOCATION):
            return data
        former = {key: data[key] for key in FORMER_LOCATION if data.get(key) is not None}
        kept = {key: value for key, value in data.items() if key not in FORMER_LOCATION}
        cell = former.get("cell")
        return {"where": former, "place": f"cell {cell}" if cell else "", **kept}


class Cost(Frozen):
    """Model usage, summed over calls; tokens also by the role in its agent that spent them."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    reasoning_tokens: int = 0
    """Completion tokens a reasoning model spent thinking (part of ``completion_tokens``)."""
    images: int = 0
    image_tokens: int = 0
    """The prompt tokens the images took, estimated from their sizes (the server counts them with the text)."""
    tokens_by_role: Mapping[str, int] = Field(default_factory=dict)
    """Prompt plus completion tokens by the role whose calls spent them, as its agent names its roles (Video-RLM:
    ``master``, ``worker``; VideoSeek: ``planner``, ``looker``...); only roles that spent any."""
    failed_calls: int = 0
    fallbacks: int = 0
    """Calls whose reply could not be used even after a re-ask, where the node went on without it."""
    frames_sent: int = 0
    """Frames shown to the model, summed over calls (a frame shown twice counts twice)."""
    frames_seen: tuple[int, ...] = ()
    """The distinct moments (ms) of every frame shown: the frame ledger behind :attr:`frames_viewed`."""
    audio_s: float = 0.0
    """Seconds of the sound track sent to the transcription route (what the cache already held is not counted)."""
    transcriptions: int = 0
    """Requests to the transcription route."""
    transcribe_s: float = 0.0
    """Seconds spent waiting for transcriptions (decoding the audio included)."""

    @model_validator(mode="before")
    @classmethod
    def _former_roles(cls, data: Any) -> Any:
        """A cost checkpointed before roles were the agents': ``master_tokens``, ``worker_tokens`` are those roles'."""
        if not isinstance(data, dict) or not any(key in data for key in FORMER_ROLES):
            return data
        kept = {key: value for key, value in data.items() if key not in FORMER_ROLES}
        return {"tokens_by_role": former_roles(data), **kept}

    @property
    def tokens(self) -> int:
        """Prompt plus completion tokens."""
        return self.prompt_tokens + self.completion_tokens

    @property
    def text_tokens(self) -> int:
        """Prompt tokens that are not the images' (text and the chat template's own)."""
        return max(0, self.prompt_tokens - self.image_tokens)

    @property
    def uncached_tokens(self) -> int:
        """Prompt tokens the server had to prefill: the prompt less what its prefix cache served."""
        return max(0, self.prompt_tokens - self.cached_tokens)

    @property
    def frames_viewed(self) -> int:
        """Distinct frames the model was shown (the "#frames" the long-video papers report)."""
        return len(self.frames_seen)

    def __add__(self, other: Cost) -> Cost:
        summed = {k: getattr(self, k) + getattr(other, k) for k in Cost.model_fields if k not in _NOT_SUMMED}
        seen = tuple(sorted({*self.frames_seen, *other.frames_seen})) if other.frames_seen else self.frames_seen
        return Cost(**summed, frames_seen=seen, tokens_by_role=add_roles(self.tokens_by_role, other.tokens_by_role))

    def summary(self) -> dict[str, Any]:
        """Plain figures for reports (the ledger's moments are left out, its count kept)."""
        return {
            **{k: getattr(self, k) for k in Cost.model_fields if k not in _NOT_SUMMED},
            "tokens_by_role": dict(self.tokens_by_role),
            "tokens": self.tokens,
            "text_tokens": self.text_tokens,
            "uncached_tokens": self.uncached_tokens,
            "frames_viewed": self.frames_viewed,
        }


_NOT_SUMMED = ("frames_seen", "tokens_by_role")

FORMER_ROLES = {"master_tokens": "master", "worker_tokens": "worker"}
"""Keys of the two roles costs, run rows and eval result rows had before roles were the agents' (Video-RLM's)."""


def former_roles(data: Mapping[str, Any]) -> dict[str, int]:
    """Tokens by role from a record written before roles were the agents' (the roles that spent none left out)."""
    return {role: int(data[key]) for key, role in FORMER_ROLES.items() if data.get(key)}


def add_roles(a: Mapping[str, int], b: Mapping[str, int]) -> dict[str, int]:
    """Tokens by role, summed role by role (ordered by role)."""
    return {role: a.get(role, 0) + b.get(role, 0) for role in sorted({*a, *b})}


def prefill_text(cost: Mapping[str, Any]) -> str:
    """What a GPU spent on a run's prompts, from a cost summary (:meth:`Cost.summary`), as people read it.

    ``62,841 prompt tokens (41,280 image, 21,561 text); 9,184 from the prefix cache (15%), 53,657
    prefilled; 1,811 completion (0 reasoning); 12 images``. A summary from before image tokens were counted
    shows no split.
    """
    prompt = int(cost.get("prompt_tokens") or 0)
    cached = int(cost.get("cached_tokens") or 0)
    image = cost.get("image_tokens")
    split = f" ({int(image):,} image, {max(0, prompt - int(image)):,} text)" if image else ""
    share = f" ({cached / prompt:.0%})" if prompt else ""
    return (
        f"{prompt:,} prompt tokens{split}; {cached:,} from the prefix cache{share}, {max(0, prompt - cached):,} "
        f"prefilled; {int(cost.get('completion_tokens') or 0):,} completion "
        f"({int(cost.get('reasoning_tokens') or 0):,} reasoning); {int(cost.get('images') or 0):,} images"
    )


def roles_text(tokens_by_role: Mapping[str, float]) -> str:
    """Tokens by role as people read them: ``master 30,643, worker 20,110`` (empty when no role spent any)."""
    return ", ".join(f"{role} {tokens:,.0f}" for role, tokens in tokens_by_role.items())


class Repair(Frozen):
    """A model reply the run could not use as given, and what it did instead (shown by ``trace``).

    ``dropped``: some entries were unusable (an explored or unknown cell, a repeated id, a backwards
    range) and the rest was kept; ``fallback``: the reply was unusable even after a re-ask, and the
    node went on without it (the rule it followed is in ``detail``).
    """

    node: str
    round: int
    worker: str | None = None
    kind: Literal["dropped", "fallback"]
    detail: str


# -- reducers ----------------------------------------------------------------------------------------
# Parallel workers write in no particular order; every reducer sorts, so the result does not
# depend on which worker finished first.


def merge_evidence(current: Sequence[Evidence] | None, update: Sequence[Evidence] | None) -> list[Evidence]:
    """Union by id (a later copy wins), drop erased items, order by time then id."""
    by_id = {e.id: e for e in current or []}
    for item in update or []:
        by_id[item.id] = item
    return sorted((e for e in by_id.values() if not e.erased), key=lambda e: (e.time, e.id))


Zone = tuple[float, float]


def merge_zones(current: Sequence[Zone] | None, update: Sequence[Zone] | None) -> list[Zone]:
    """Union of explored intervals, merged and sorted."""
    intervals = [Interval(a, b) for a, b in [*(current or []), *(update or [])] if b > a]
    return [(iv.start, iv.end) for iv in merge_intervals(intervals)]


def add_cost(current: Cost | None, update: Cost | None) -> Cost:
    """Sum of costs."""
    return (current or Cost()) + (update or Cost())


def add_repairs(current: Sequence[Repair] | None, update: Sequence[Repair] | None) -> list[Repair]:
    """Every repair, ordered by round, node and worker (parallel workers write in any order)."""
    return sorted([*(current or []), *(update or [])], key=lambda r: (r.round, r.node, r.worker or "", r.detail))


def zones_as_intervals(zones: Sequence[Zone]) -> list[Interval]:
    """Dead zones as :class:`Interval` objects."""
    return [Interval(a, b) for a, b in zones]


class IndexInfo(Frozen):
    """The frame embedding index a run used (see :mod:`videoatlas.runtime.frame_index`)."""

    model: str
    fps: float
    frames: int
    build_s: float
    """Seconds this run spent embedding frames (0 when the index was reused whole)."""
    embedded: int
    """Frames this run embedded (0 when it was reused)."""
    reused: bool
    note: str = ""
