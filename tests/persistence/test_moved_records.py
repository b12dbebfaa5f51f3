"""Checkpoints name state records by module: a record class that moved is still read back from old checkpoints."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

import videoatlas.agents.registry  # noqa: F401  (imports every agent, so all their records are known)
from videoatlas.agents.relation import Anchor, Relation
from videoatlas.persistence.checkpoint import serializer

pytestmark = pytest.mark.unit

OLD_HOME = "videoatlas.agents.video_rlm.state.models"
"""Where Relation and Anchor lived before agents/relation.py (checkpoints of that release name it)."""


def _as_written_then(name: str, **fields: object) -> tuple[str, bytes]:
    """A record serialised as the earlier release wrote it: the same fields, the class named in its old module."""
    legacy = type(
        name, (BaseModel,), {"__module__": OLD_HOME, "__annotations__": {k: type(v) for k, v in fields.items()}}
    )
    return serializer().dumps_typed(legacy(**fields))


def test_a_relation_and_an_anchor_from_an_earlier_checkpoint_come_back_as_records() -> None:
    relation = serializer().loads_typed(_as_written_then("Relation", kind="right after", anchor="the banner", other=""))
    assert relation == Relation(kind="right after", anchor="the banner")
    assert relation.anchored and relation.side == "after"
    anchor = serializer().loads_typed(_as_written_then("Anchor", evidence="r1w2-0", time=12.5, start=10.0, end=15.0))
    assert anchor == Anchor(evidence="r1w2-0", time=12.5, start=10.0, end=15.0)


def test_a_record_from_a_module_it_never_lived_in_stays_blocked() -> None:
    """Only declared former homes are allowed: any other module name is refused (the plain fields come back)."""
    legacy = type(
        "Relation", (BaseModel,), {"__module__": "videoatlas.agents.eea.state", "__annotations__": {"kind": str}}
    )
    back = serializer().loads_typed(serializer().dumps_typed(legacy(kind="right after")))
    assert back == {"kind": "right after"}
