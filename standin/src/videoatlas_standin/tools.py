"""Tool calling as vLLM 0.33's chat route does it: ``tools`` and ``tool_choice`` read, checked and answered.

vLLM validates the request model first (an empty ``tools``, a ``tool_choice`` without tools, an unknown choice, a
named function not offered: 400), then refuses any ``tool_choice`` but ``none`` on a server without a tool parser.
``required`` and a named function are decoded under structured outputs (:func:`forced_schema`); ``auto`` leaves
the model free. Which function and what arguments is the policy's (rule 7); this module is the protocol around it.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any, Literal

from videoatlas_standin.contract import Refusal

PARSERS = (  # noqa: SIM905 - a list of names reads best as text
    "apertus beam cohere_command3 cohere_command4 deepseek_v3 deepseek_v31 deepseek_v32 deepseek_v4 deepseek_v41 "
    "dots ernie45 functiongemma gemma4 gigachat3 glm45 glm47 granite granite-20b-fc granite4 hermes hf hunyuan_a13b "
    "hy_v3 hy_v4 inkling internlm jamba k2_horizon kimi_k2 kimi_k3 lfm2 ling3 llama3_json llama4_json "
    "llama4_pythonic longcat mimo minicpm5 minimax_m2 minimax_m3 mistral muse muse_glimmer musespark1x olmo3 openai "
    "phi4_mini_json plamo3 poolside_v1 pythonic qwen3_coder qwen3_json qwen3_xml seed_oss step3 step3p5 step5 xlam"
).split()
"""The ``--tool-call-parser`` names vLLM 0.33.0 registers (``vllm/tool_parsers/__init__.py``)."""
_USAGE = 'Correct usage: `{"type": "function", "function": {"name": "my_function"}}`'

Mode = Literal["auto", "required", "named"]


@dataclass(frozen=True, slots=True)
class Tool:
    """One function a request offers."""

    name: str
    description: str
    parameters: dict[str, Any]
    """The JSON schema of its arguments (an empty object schema when the request gives none, as vLLM does)."""


@dataclass(frozen=True, slots=True)
class ToolRequest:
    """The functions a request offers and how it asks for them to be called."""

    tools: tuple[Tool, ...]
    mode: Mode
    named: str | None
    """The function ``tool_choice`` names (``mode`` "named")."""
    single: bool
    """``parallel_tool_calls`` false: at most one call."""

    def tool(self, name: str) -> Tool:
        """The offered function called ``name``."""
        return next(t for t in self.tools if t.name == name)


def _invalid(body: dict[str, Any], text: str, param: str) -> Refusal:
    """The body vLLM's validation handler answers a ``VLLMValidationError`` raised by its request model with."""
    detail = (
        f"{{'type': 'value_error', 'loc': ('body',), 'msg': {f'Value error, {text} (parameter={param})'!r}, "
        f"'input': '<dict of {len(body)} items>', 'ctx': {{'error': VLLMValidationError({text!r})}}}}"
    )
    return Refusal(400, f"1 validation error:\n  {detail}", "Bad Request", param)


def read(body: dict[str, Any]) -> ToolRequest | Refusal | None:
    """The request's tool call, checked as vLLM's request model checks it; None when it asks for none."""
    tools, choice = body.get("tools"), body.get("tool_choice", "auto" if body.get("tools") else "none")
    if tools == []:
        text = "`tools` must not be an empty array. Either provide at least one tool or omit the field entirely."
        return _invalid(body, text, "tools")
    if choice == "none" or choice is None:
        return None
    if tools is None:
        return _invalid(body, "When using `tool_choice`, `tools` must be set.", "tool_choice")
    if choice not in ("auto", "required") and not isinstance(choice, dict):
        supported = 'Only named tools, "none", "auto" or "required" are supported.'
        return _invalid(body, f"Invalid value for `tool_choice`: {choice}! {supported}", "tool_choice")
    offered = _tools(tools)
    if isinstance(offered, Refusal):
        return offered
    named = None
    if isinstance(choice, dict):
        function = choice.get("function")
        if not isinstance(function, dict):
            text = f"Invalid value for `function`: `{function}` in `tool_choice`! {_USAGE}"
            return _invalid(body, text, "tool_choice.function")
        if "name" not in function:
            text = f"Expected field `name` in `function` in `tool_choice`! {_USAGE}"
            return _invalid(body, text, "tool_choice.function.name")
        named = function["name"]
        if not isinstance(named, str) or not named:
            text = f"Invalid `name` in `function`: `{named}` in `tool_choice`! {_USAGE}"
            return _invalid(body, text, "tool_choice.function.name")
        if all(t.name != named for t in offered):
            text = "The tool specified in `tool_choice` does not match any of the specified `tools`"
            return _invalid(body, text, "tool_choice")
    mode: Mode = "named" if named is not None else "required" if choice == "required" else "auto"
    return ToolRequest(tuple(offered), mode, named, body.get("parallel_tool_calls") is False)


def _tools(tools: Any) -> list[Tool] | Refusal:
    if not isinstance(tools, list):
        return Refusal(400, "`tools` must be a list of function tools", "Bad Request", "tools")
    out = []
    for i, tool in enumerate(tools):
        function = tool.get("function") if isinstance(tool, dict) else None
        function = function if isinstance(function, dict) else {}
        name, params, description = function.get("name"), function.get("parameters"), function.get("description")
        if not isinstance(name, str) or (params is not None and not isinstance(params, dict)):
            return Refusal(400, f"tools[{i}] must be a function tool with a name", "Bad Request", "tools")
        about = description if isinstance(description, str) else ""
        out.append(Tool(name, about, params or {"type": "object", "properties": {}}))
    return out


def unavailable(request: ToolRequest, auto_tools: bool) -> Refusal | None:
    """The refusal vLLM gives a tool call on a server without a tool parser (``auto_tools``: it has one)."""
    if auto_tools:
        return None
    if request.mode == "auto":
        return Refusal(400, '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set')
    wanted = f'function "{request.named}"' if request.mode == "named" else '"required"'
    return Refusal(400, f"tool_choice={wanted} requires --tool-call-parser to be set")


def forced_schema(request: ToolRequest) -> dict[str, Any] | Refusal | None:
    """The JSON schema vLLM decodes a ``required`` or named call under (None for ``auto``)."""
    if request.mode != "required":
        return request.tool(request.named).parameters if request.named is not None else None
    defs: dict[str, Any] = {}
    variants = []
    for tool in request.tools:
        params = dict(tool.parameters)
        for name, definition in (params.pop("$defs", None) or {}).items():
            if name in defs and defs[name] != definition:
                text = f"Tool definition '{name}' has multiple schemas, which is not supported."
                return Refusal(400, text, param="tools")
            defs[name] = definition
        tag = {"type": "string", "enum": [tool.name]}
        variants.append({"properties": {"name": tag, "parameters": params}, "required": ["name", "parameters"]})
    schema: dict[str, Any] = {"type": "array", "minItems": 1, "items": {"type": "object", "anyOf": variants}}
    if request.single:
        schema["maxItems"] = 1
    if defs:
        schema["$defs"] = defs
    return schema


def call_text(request: ToolRequest, calls: list[tuple[Tool, dict[str, Any]]]) -> str:
    """What the constrained decoder writes for ``calls``: the arguments (named) or the list of calls (required)."""
    if request.mode == "named":
        return json.dumps(calls[0][1], ensure_ascii=False)
    return json.dumps([{"name": t.name, "parameters": args} for t, args in calls], ensure_ascii=False)


def tool_calls(calls: list[tuple[Tool, dict[str, Any]]]) -> list[dict[str, Any]]:
    """The reply's ``tool_calls``, as vLLM writes them (``chatcmpl-tool-`` ids, arguments as a JSON string)."""
    out = []
    for tool, args in calls:
        function = {"name": tool.name, "arguments": json.dumps(args, ensure_ascii=False)}
        out.append({"id": f"chatcmpl-tool-{uuid.uuid4().hex}", "type": "function", "function": function})
    return out
