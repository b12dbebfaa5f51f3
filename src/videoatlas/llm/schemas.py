"""Reply schemas as the endpoint takes them: a schema built at run time, and the ``response_format`` that carries it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, create_model

from videoatlas.state.portable import unportable


def choice_schema(name: str, field: str, allowed: Sequence[str], **fields: Any) -> type[BaseModel]:
    """A schema whose ``field`` is an enum of ``allowed`` values, built at run time.

    This is how a worker's available actions become part of its schema: an action it does not
    have is not in the enum, so constrained decoding cannot produce it and validation rejects it.
    """
    if not allowed:
        raise ValueError("a choice schema needs at least one allowed value")
    literal = Literal.__getitem__(tuple(allowed))
    definitions: dict[str, Any] = {field: (literal, ...), **fields}
    model: type[BaseModel] = create_model(name, **definitions)
    return model


def response_format(schema: type[BaseModel], strict: bool = True) -> dict[str, Any]:
    """The OpenAI ``response_format`` for a pydantic schema (see :func:`closed_schema`).

    ``strict`` asks the server to enforce the schema while decoding (vLLM does it either way; an
    OpenAI- or Gemini-style endpoint checks the schema's form first). It is a setting of the
    endpoint (:attr:`EndpointSettings.strict_schema`), off for servers that refuse it.
    """
    return {
        "type": "json_schema",
        "json_schema": {"name": schema.__name__, "schema": closed_schema(schema), "strict": strict},
    }


def closed_schema(schema: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema of ``schema`` in the form strict decoders accept.

    Every object lists all its properties as required and forbids others (``additionalProperties:
    false``); a union is ``anyOf`` (pydantic writes a discriminated union as ``oneOf`` with a
    ``discriminator`` keyword, which strict modes refuse). Only keywords every vLLM backend enforces
    may appear (:mod:`videoatlas.state.portable`); any other raises ``ValueError``.
    """

    def close(node: Any) -> Any:
        if isinstance(node, list):
            return [close(n) for n in node]
        if not isinstance(node, dict):
            return node
        out = {k: close(v) for k, v in node.items() if k != "discriminator"}
        if "oneOf" in out:
            out["anyOf"] = out.pop("oneOf")
        if out.get("type") == "object" or "properties" in out:
            out["additionalProperties"] = False
            out["required"] = list(out.get("properties", {}))
        return out

    closed: dict[str, Any] = close(schema.model_json_schema())
    bad = unportable(closed)
    if bad:
        # A programming error, not a user's: the schema would be refused or not enforced by vLLM.
        raise ValueError(f"reply schema {schema.__name__} uses keywords vLLM's backends refuse or ignore: {bad}")
    return closed
