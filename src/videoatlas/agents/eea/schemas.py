"""EEA's reply schemas: search queries, a score per child segment, and the selection's next step."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, Field, JsonValue, create_model

from videoatlas.agents.relation import RELATION_FIELDS
from videoatlas.state.schemas import one_of, reply_schema, some_of, text

QUERY_CHARS = 160
"""A query of 6-12 words fits in this many characters."""


def _ids() -> Iterator[dict[str, Any]]:
    for n in (2, 5, 7, 17):
        yield {"ids": list(range(1, n + 1))}


def _scored_ids() -> Iterator[dict[str, Any]]:
    for example in _ids():
        yield example
        yield {**example, "queries": True}
        yield {**example, "frames": list(range(1, len(example["ids"]))), "queries": True}


UPDATE_QUERIES = (2, 5)
"""How many new queries a round's frames give (the paper: 2-5)."""


def query_list(lo: int, hi: int) -> Any:
    """The type of a ``search_queries`` field: ``lo`` to ``hi`` queries, each short."""
    bounds: dict[str, JsonValue] = {"minItems": lo, "maxItems": hi}
    return Annotated[list[text(QUERY_CHARS)], Field(json_schema_extra=bounds)]  # type: ignore[misc]


@reply_schema(lambda: ({"lo": lo, "hi": 5, "relation": lo == 1} for lo in (1, 2)))
def queries_schema(lo: int, hi: int, relation: bool = False) -> type[BaseModel]:
    """``lo`` to ``hi`` search queries (discovery asks for 1-5, an update for 2-5).

    ``relation``: the reply also says the question's time relation and its anchor (discovery).
    """
    fields: dict[str, Any] = {"search_queries": (query_list(lo, hi), ...), **(RELATION_FIELDS if relation else {})}
    model: type[BaseModel] = create_model("SearchQueries", **fields)
    return model


def child_key(segment: int) -> str:
    """The reply field that scores child segment ``segment`` (``segment_12``)."""
    return f"segment_{segment}"


@reply_schema(_scored_ids)
def rewards_schema(ids: Sequence[int], frames: Sequence[int] = (), queries: bool = False) -> type[BaseModel]:
    """One field per child segment (``segment_<id>``): an explanation, then a score 0-100 for the question.

    ``frames``: the ids of the frames shown, when the relation's anchor is sought: ``anchor`` names the
    one that shows it (0 or 1 id). ``queries``: the round's new search queries come with the scores
    (``search_queries``, :data:`UPDATE_QUERIES` of them), read from the same frames.
    """
    percent: dict[str, JsonValue] = {"minimum": 0, "maximum": 100}
    fields: dict[str, Any] = {
        "explanation": (text(400), ...),
        "score": (Annotated[int, Field(json_schema_extra=percent)], ...),
    }
    scored = create_model("SegmentScore", **fields)
    children: dict[str, Any] = {child_key(i): (scored, ...) for i in ids}
    if frames:
        children["anchor"] = (some_of(frames, 0, 1), ...)
    if queries:
        children["search_queries"] = (query_list(*UPDATE_QUERIES), ...)
    model: type[BaseModel] = create_model("SegmentRewards", **children)
    return model


@reply_schema(_ids)
def select_schema(ids: Sequence[int]) -> type[BaseModel]:
    """A thought, then either a candidate segment to explore (by id) or the decision to answer now."""
    go: dict[str, Any] = {"action": (Literal["explore"], ...), "segment": (one_of(ids), ...)}
    stop: dict[str, Any] = {"action": (Literal["answer"], ...)}
    explore = create_model("ExploreSegment", **go)
    answer = create_model("AnswerNow", **stop)
    union: Any = Annotated[Union[explore, answer], Field(discriminator="action")]  # noqa: UP007 - built at run time
    model: type[BaseModel] = create_model("Selection", thought=(text(800), ...), step=(union, ...))
    return model
