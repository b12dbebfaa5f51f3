"""Every reply schema the agents send is one that each of vLLM's structured-output backends takes and enforces.

The schemas come from the code (the registry of :mod:`videoatlas.state.schemas`, filled by each
agent's schema module, and a scan of every ``ask(...)`` call for a schema that is not registered),
so a new agent's schemas are covered when it lands. Each is compiled with the real llguidance (vLLM's
``guidance`` backend) and the real xgrammar, after vLLM's own check of what xgrammar declines; and
each keyword they may use is shown, on a violating reply, to be enforced by both.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import xgrammar as xgr
from xgrammar.testing import _is_grammar_accept_string

import videoatlas
from videoatlas.agents.registry import all_agents
from videoatlas.llm.schemas import closed_schema
from videoatlas.state.portable import CONSTRAINTS, keywords_used, unportable, xgrammar_unsupported
from videoatlas.state.schemas import registered_factories, registered_schemas
from videoatlas_standin.contract import Grammar, Refusal, structured_outputs

pytestmark = pytest.mark.unit


def _all_schemas() -> Iterator[tuple[str, dict[str, Any]]]:
    all_agents()  # importing each agent registers its schemas
    for label, model in registered_schemas():
        yield label, closed_schema(model)


def _guidance(schema: dict[str, Any]) -> Grammar:
    compiled = structured_outputs(schema, "guidance")
    assert not isinstance(compiled, Refusal), compiled.message
    return compiled.grammar


def _xgrammar_accepts(schema: dict[str, Any], text: str) -> bool:
    accepted: bool = _is_grammar_accept_string(xgr.Grammar.from_json_schema(json.dumps(schema)), text)
    return accepted


def test_every_schema_sent_compiles_under_llguidance_and_xgrammar() -> None:
    seen: dict[str, int] = {}
    for label, schema in _all_schemas():
        name = label.split("(")[0]
        seen[name] = seen.get(name, 0) + 1
        assert unportable(schema) == [], label
        assert xgrammar_unsupported(schema) is None, label
        xgr.Grammar.from_json_schema(json.dumps(schema))  # raises on a schema xgrammar cannot compile
        _guidance(schema)
        for backend in ("auto", "xgrammar", "guidance"):
            assert not isinstance(structured_outputs(schema, backend), Refusal), (label, backend)
    # Every agent's schemas were there, each in many shapes.
    assert {n.rsplit(".", 1)[-1] for n in seen} >= {
        "SearchTask",
        "TraversalChoice",
        "probe_schema",
        "worker_step_schema",
        "uncertainty_schema",
        "decision_schema",
        "turn_schema",
        "describe_schema",
        "focus_schema",
    }
    assert sum(seen.values()) > 300


def test_unique_items_is_what_made_the_schemas_fail() -> None:
    # Why the rule exists: llguidance refuses the keyword, vLLM's xgrammar check declines it.
    schema = {"type": "array", "items": {"type": "integer", "enum": [1, 2]}, "uniqueItems": True}
    assert unportable(schema) == ["/: uniqueItems"]
    refused = structured_outputs(schema, "auto")
    assert isinstance(refused, Refusal) and refused.message == 'Grammar error: Unimplemented keys: ["uniqueItems"]'
    # xgrammar compiles it, and lets a repeat through: the keyword would be silently ignored.
    assert _xgrammar_accepts(schema, "[1, 1]")


def _obj(**props: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": list(props), "additionalProperties": False}


ENFORCED: list[tuple[str, dict[str, Any], str, str]] = [
    # (keyword, schema, a reply that fits, a reply that breaks only that keyword)
    ("type", _obj(a={"type": "integer"}), '{"a": 3}', '{"a": "3"}'),
    ("properties", _obj(a={"type": "boolean"}), '{"a": true}', '{"a": 1}'),
    ("required", _obj(a={"type": "integer"}, b={"type": "integer"}), '{"a": 1, "b": 2}', '{"a": 1}'),
    ("additionalProperties", _obj(a={"type": "integer"}), '{"a": 1}', '{"a": 1, "z": 2}'),
    ("items", _obj(a={"type": "array", "items": {"type": "integer"}}), '{"a": [1, 2]}', '{"a": [1, "x"]}'),
    ("minItems", _obj(a={"type": "array", "items": {"type": "integer"}, "minItems": 2}), '{"a": [1, 2]}', '{"a": [1]}'),
    ("maxItems", _obj(a={"type": "array", "items": {"type": "integer"}, "maxItems": 1}), '{"a": [1]}', '{"a": [1, 2]}'),
    ("enum", _obj(a={"type": "integer", "enum": [3, 11]}), '{"a": 11}', '{"a": 6}'),
    ("const", _obj(a={"type": "string", "const": "ZOOM"}), '{"a": "ZOOM"}', '{"a": "EXPAND"}'),
    (
        "anyOf",
        _obj(a={"anyOf": [_obj(t={"const": "x", "type": "string"}), _obj(u={"type": "integer"})]}),
        '{"a": {"u": 1}}',
        '{"a": {"t": "y"}}',
    ),
    ("minimum", _obj(a={"type": "number", "minimum": 0}), '{"a": 0.5}', '{"a": -0.5}'),
    ("maximum", _obj(a={"type": "number", "maximum": 10}), '{"a": 9.5}', '{"a": 10.5}'),
    ("minLength", _obj(a={"type": "string", "minLength": 2}), '{"a": "ab"}', '{"a": "a"}'),
    ("maxLength", _obj(a={"type": "string", "maxLength": 3}), '{"a": "abc"}', '{"a": "abcd"}'),
    (
        "$ref",
        {**_obj(a={"$ref": "#/$defs/N"}), "$defs": {"N": {"type": "integer", "maximum": 5}}},
        '{"a": 5}',
        '{"a": 6}',
    ),
    (
        "$defs",
        {**_obj(a={"$ref": "#/$defs/S"}), "$defs": {"S": {"type": "string", "enum": ["p", "q"]}}},
        '{"a": "q"}',
        '{"a": "r"}',
    ),
]


@pytest.mark.parametrize(("keyword", "schema", "good", "bad"), ENFORCED, ids=[c[0] for c in ENFORCED])
def test_each_keyword_a_schema_may_use_is_enforced_by_both_backends(
    keyword: str, schema: dict[str, Any], good: str, bad: str
) -> None:
    assert keyword in keywords_used(schema)
    grammar = _guidance(schema)
    assert grammar.accepts(good) == (True, "")
    assert grammar.accepts(bad)[0] is False
    assert _xgrammar_accepts(schema, good)
    assert not _xgrammar_accepts(schema, bad)


def test_every_constraint_keyword_has_an_enforcement_case() -> None:
    assert {c[0] for c in ENFORCED} == set(CONSTRAINTS)


Function = ast.FunctionDef | ast.AsyncFunctionDef


def _agent_trees() -> Iterator[tuple[str, ast.Module]]:
    root = Path(videoatlas.__file__).parent / "agents"
    for path in sorted(root.rglob("*.py")):
        yield str(path.relative_to(root)), ast.parse(path.read_text(), str(path))


def _calls(name: str) -> Iterator[tuple[str, ast.Call, Function | None]]:
    """Every call of ``name(...)`` in the agents, with its file and enclosing function."""
    for where, tree in _agent_trees():
        functions = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name:
                owner = next((f for f in functions if f.lineno <= node.lineno <= (f.end_lineno or 0)), None)
                yield where, node, owner


def _schema_arguments() -> Iterator[tuple[str, int, ast.expr, Function | None]]:
    """The schema argument of every ``ask(ctx, schema, ...)`` call in the agents, with its enclosing function."""
    for where, node, owner in _calls("ask"):
        if len(node.args) >= 2:
            yield where, node.lineno, node.args[1], owner


def _builders(arg: ast.expr, owner: Function | None) -> list[str | None]:
    """The registered factories or models that may build ``arg``.

    Both sides of a conditional; one local assignment; the schema an agent's step hands the shared thinker
    step (``Ask(schema, ...)``); and a parameter of the enclosing function (a
    helper that asks on its callers' behalf): what each call of that function in the agents passes.
    """
    if isinstance(arg, ast.IfExp):
        return _builders(arg.body, owner) + _builders(arg.orelse, owner)
    if isinstance(arg, ast.Call) and isinstance(arg.func, ast.Name):
        return [arg.func.id]
    if isinstance(arg, ast.Attribute) and arg.attr == "schema":
        # The shared thinker step asks with the schema each agent's step hands it in an ``Ask(schema, ...)``.
        handed: list[str | None] = []
        for _, call, caller in _calls("Ask"):
            handed += _builders(call.args[0], caller)
        return handed or [None]
    if isinstance(arg, ast.Name):
        if arg.id[:1].isupper():
            return [arg.id]
        for node in ast.walk(owner) if owner is not None else ():
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == arg.id for t in node.targets):
                return _builders(node.value, None)
        params = [a.arg for a in (*owner.args.posonlyargs, *owner.args.args)] if owner is not None else []
        if owner is not None and arg.id in params:
            index = params.index(arg.id)
            found: list[str | None] = []
            for _, call, caller in _calls(owner.name):
                named = [k.value for k in call.keywords if k.arg == arg.id]
                found += _builders(call.args[index] if index < len(call.args) else named[0], caller)
            return found or [None]
    return [None]


def test_every_schema_an_agent_asks_with_is_registered() -> None:
    all_agents()
    registered = {name.rsplit(".", 1)[-1] for name in registered_factories()}
    registered |= {label.rsplit(".", 1)[-1] for label, _ in registered_schemas() if "(" not in label}
    calls = list(_schema_arguments())
    assert len(calls) >= 8  # every call site in the agents (the three final decisions share one, in decision.py)
    for where, line, arg, owner in calls:
        for name in _builders(arg, owner):
            assert name in registered, f"{where}:{line}: the schema {ast.unparse(arg)} ({name}) is not registered"
