"""Tool calling as vLLM 0.33's chat route does it: ``tools`` and ``tool_choice`` read, checked and answered.

vLLM first validates the request model (an empty ``tools`` list, a ``tool_choice`` without tools, an
unknown choice or a named function that is not offered: HTTP 400 from its validation handler), then,
while rendering, refuses any ``tool_choice`` but ``none`` when the server has no tool parser (one
needs both ``--enable-auto-tool-choice`` and ``--tool-call-parser``). ``required`` and a named
function are decoded under structured outputs (the arguments, or a list of ``{name, parameters}``,
as a JSON schema: :func:`forced_schema`); ``auto`` leaves the model free to call or to write text.

Which function the stand-in calls is decided by :meth:`ToolFiller.choose`, by the same general rules
as its ``response_format`` answers, with a real text model (:mod:`.meaning`) for what words mean:
once what was seen settles the question, a function whose name or description means answering;
else first a function whose arguments the pictures label (it can be called with what was read);
then a function whose name or description means a kind of step (look closer, open, look around,
listen, record...) chosen as an action enum is (while nothing relevant was found: one of another
sense, else one that takes a stretch of video, sent to a stretch no call covered:
:meth:`ToolFiller.another_span`); then the others by how well their name and description fit what
the user asked last. Arguments are filled from what was read, typed by their
schema (:meth:`.filler.Filler.read_fields`); one nothing labels gets its type's empty value. Under
``auto`` it writes text when none fits, when the question is settled and no function answers or
can be filled, or when the call it would make was already made in the conversation (its result is
in the messages).
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any, Literal

from videoatlas_standin.contract import Refusal
from videoatlas_standin.filler import Filler
from videoatlas_standin.language import intent_of, steps_left, time_spans, words_of
from videoatlas_standin.meaning import TOOL_FITS, phrase, similarity
from videoatlas_standin.spans import looks_written, next_look, placed, span_field, stated_length

PARSERS = (  # noqa: SIM905 - a list of names reads best as text
    "apertus beam cohere_command3 cohere_command4 deepseek_v3 deepseek_v31 deepseek_v32 deepseek_v4 deepseek_v41 "
    "dots ernie45 functiongemma gemma4 gigachat3 glm45 glm47 granite granite-20b-fc granite4 hermes hf hunyuan_a13b "
    "hy_v3 hy_v4 inkling internlm jamba k2_horizon kimi_k2 kimi_k3 lfm2 ling3 llama3_json llama4_json "
    "llama4_pythonic longcat mimo minicpm5 minimax_m2 minimax_m3 mistral muse muse_glimmer musespark1x olmo3 openai "
    "phi4_mini_json plamo3 poolside_v1 pythonic qwen3_coder qwen3_json qwen3_xml seed_oss step3 step3p5 step5 xlam"
).split()
"""The ``--tool-call-parser`` names vLLM 0.33.0 registers (``vllm/tool_parsers/__init__.py``)."""
_ANSWERING = {"answer", "answers", "submit", "finish", "respond", "reply", "conclude", "conclusion"}
"""Words that say a function gives the reply itself rather than looking further."""
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
        return _invalid(
            body,
            "`tools` must not be an empty array. Either provide at least one tool or omit the field entirely.",
            "tools",
        )
    if choice == "none" or choice is None:
        return None
    if tools is None:
        return _invalid(body, "When using `tool_choice`, `tools` must be set.", "tool_choice")
    if choice not in ("auto", "required") and not isinstance(choice, dict):
        text = (
            f'Invalid value for `tool_choice`: {choice}! Only named tools, "none", "auto" or "required" are supported.'
        )
        return _invalid(body, text, "tool_choice")
    offered = _tools(tools)
    if isinstance(offered, Refusal):
        return offered
    named = None
    if isinstance(choice, dict):
        function = choice.get("function")
        if not isinstance(function, dict):
            return _invalid(
                body, f"Invalid value for `function`: `{function}` in `tool_choice`! {_USAGE}", "tool_choice.function"
            )
        if "name" not in function:
            return _invalid(
                body, f"Expected field `name` in `function` in `tool_choice`! {_USAGE}", "tool_choice.function.name"
            )
        named = function["name"]
        if not isinstance(named, str) or not named:
            text = f"Invalid `name` in `function`: `{named}` in `tool_choice`! {_USAGE}"
            return _invalid(body, text, "tool_choice.function.name")
        if all(t.name != named for t in offered):
            return _invalid(
                body, "The tool specified in `tool_choice` does not match any of the specified `tools`", "tool_choice"
            )
    mode: Mode = "named" if named is not None else "required" if choice == "required" else "auto"
    return ToolRequest(tuple(offered), mode, named, body.get("parallel_tool_calls") is False)


def _tools(tools: Any) -> list[Tool] | Refusal:
    if not isinstance(tools, list):
        return Refusal(400, "`tools` must be a list of function tools", "Bad Request", "tools")
    out = []
    for i, tool in enumerate(tools):
        function = tool.get("function") if isinstance(tool, dict) else None
        name = function.get("name") if isinstance(function, dict) else None
        params = function.get("parameters") if isinstance(function, dict) else None
        if not isinstance(name, str) or (params is not None and not isinstance(params, dict)):
            return Refusal(400, f"tools[{i}] must be a function tool with a name", "Bad Request", "tools")
        assert isinstance(function, dict)
        description = function.get("description")
        empty = {"type": "object", "properties": {}}
        out.append(Tool(name, description if isinstance(description, str) else "", params or empty))
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
    if request.mode == "named":
        assert request.named is not None
        named: dict[str, Any] = request.tool(request.named).parameters
        return named
    if request.mode == "auto":
        return None
    defs: dict[str, Any] = {}
    variants = []
    for tool in request.tools:
        params = dict(tool.parameters)
        for name, definition in (params.pop("$defs", None) or {}).items():
            if name in defs and defs[name] != definition:
                text = f"Tool definition '{name}' has multiple schemas, which is not supported."
                return Refusal(400, text, param="tools")
            defs[name] = definition
        variants.append(
            {
                "properties": {"name": {"type": "string", "enum": [tool.name]}, "parameters": params},
                "required": ["name", "parameters"],
            }
        )
    schema: dict[str, Any] = {"type": "array", "minItems": 1, "items": {"type": "object", "anyOf": variants}}
    if request.single:
        schema["maxItems"] = 1
    if defs:
        schema["$defs"] = defs
    return schema


class ToolFiller(Filler):
    """A :class:`.filler.Filler` that also picks the function to call and fills its arguments."""

    def __init__(
        self,
        request: Any,
        seed: int = 0,
        made: list[tuple[str, str]] | set[tuple[str, str]] | None = None,
        latest: str = "",
        results: list[tuple[str, str]] | None = None,
    ) -> None:
        super().__init__(request, {}, seed)
        self.order = list(made or [])
        """Calls already made in the conversation, in order: (function name, arguments as canonical JSON)."""
        self.made = set(self.order)
        self.called = {name for name, _ in self.made}
        self.latest = latest or request.question
        """What the user asked last (the question, or a later turn asking for a function's help)."""
        self.results = results or []
        """What the calls' results said: (function name, text), in order."""
        self.moved: tuple[str, tuple[float, float]] | None = None
        """A function sent to a stretch of video not looked at yet, and that stretch."""

    def filled(self, schema: dict[str, Any]) -> Any:
        """A value for a schema the request wrote itself (a JSON example in its text)."""
        self.root = schema
        return self.value(schema)

    def arguments(self, tool: Tool) -> dict[str, Any]:
        """Arguments for ``tool``, filled with the step it stands for in mind."""
        self.root = tool.parameters
        self.intent = intent_of(tool.name, tool.description)
        value = self.value(tool.parameters)
        if not isinstance(value, dict):
            return {}
        field = span_field(self.resolve(tool.parameters), self.resolve)
        if self.moved is not None and self.moved[0] == tool.name and field is not None:
            return placed(value, field, self.moved[1])
        return value

    def readable(self, tool: Tool) -> int:
        """How many of ``tool``'s arguments the pictures label (values it would fill from what it read)."""
        self.root = tool.parameters
        props = self.resolve(tool.parameters).get("properties") or {}
        return len(self.read_fields(props))

    def choose(self, request: ToolRequest) -> list[tuple[Tool, dict[str, Any]]]:
        """The calls to make (one at most), or none when the reply should be text (``auto`` only)."""
        if request.mode == "named":
            assert request.named is not None
            tool = request.tool(request.named)
            return [(tool, self.arguments(tool))]
        self.told.update({t.name: t.description for t in request.tools})
        for tool in self._ranked(request):
            args = self.arguments(tool)
            if (tool.name, json.dumps(args, sort_keys=True)) not in self.made:
                return [(tool, args)]
            if request.mode == "auto":
                return []  # the call it would make was made: its result is in the conversation
        if request.mode == "auto":
            return []
        # "required" with nothing better: the function that fits the request best, as a model would
        tool = self._by_meaning(list(request.tools))[0]
        return [(tool, self.arguments(tool))]

    def _ranked(self, request: ToolRequest) -> list[Tool]:
        """Functions worth calling now, best first (empty when text would do, for ``auto``).

        A function whose arguments the pictures label comes first (it can be called with what was
        read: a model does not give up on a value it can read); then, once what was seen settles the
        question, a function that answers; before that, a function that takes a step, chosen as an
        action is; then the others by how well their name and description fit what is asked, a
        function already called last (its result is in the conversation).
        """
        answering = [t for t in request.tools if _answers(t)]
        counts = {t.name: self.readable(t) for t in request.tools}
        readable = sorted((t for t in request.tools if counts[t.name]), key=lambda t: -counts[t.name])
        readable = [t for t in readable if t.name not in self.called] + [t for t in readable if t.name in self.called]
        settled = self.sufficient()
        if settled and (answering or (request.mode == "auto" and not readable)):
            return [*answering, *(t for t in readable if t not in answering)]
        ranked: list[Tool] = list(readable)
        sense = self.other_means([t.name for t in request.tools if t not in answering]) if not settled else None
        if sense is not None:
            ranked.append(request.tool(sense))  # another sense first: then another stretch of the same
        elif not settled and (moved := self.another_span(request)) is not None:
            ranked.append(moved)
        acting = [t for t in request.tools if t not in answering and t not in ranked and _acts(t)]
        if acting:
            best = self.choose_action([t.name for t in acting])
            ranked.append(request.tool(best))
        rest = [t for t in request.tools if t not in ranked]
        fits = dict(zip((t.name for t in rest), self._fits(rest), strict=True))
        ranked += [t for t in self._by_meaning(rest) if fits[t.name] >= TOOL_FITS]
        if request.mode == "auto":
            sent = self.moved[0] if self.moved is not None else None
            ranked = [t for t in ranked if t.name not in self.called or _acts(t) or t.name == sent]
        return ranked

    def another_span(self, request: ToolRequest) -> Tool | None:
        """A function that looks at a stretch of video, sent to one nobody has looked at yet.

        It takes the stretch as two times or an array of ranges (:func:`.spans.span_field`). When calls
        were made and what they returned bears on nothing the question asks (or does not settle a question
        that needs all of the video: :meth:`.actions.Actions.search_on`), steps remain
        (:func:`.language.budget_left`), and the request says how long the video is (the schema's
        bound on the stretch, or its text), the function takes the next stretch no call covered
        (:func:`.spans.next_look`: earlier calls' arguments and the stretches their results report),
        as wide as the last look or as the steps left need. Once every part was looked at, it answers.
        """
        if not self.order or not self.search_on():
            return None  # nothing tried yet, or something bearing on a narrow question found: look there
        spanning = [(t, f) for t in request.tools if (f := span_field(self.resolve(t.parameters), self.resolve))]
        spanning.sort(key=lambda pair: pair[0].name not in self.called)  # the look that was tried: another stretch
        for tool, field in spanning:
            length = field.length or stated_length(self.req.text)
            if length is None:
                continue  # without the video's length nobody can say what is left
            looks = [s for name, args in self.order if name == tool.name for s in looks_written(args, field, [])]
            reported = [s for name, text in self.results if name == tool.name for s in time_spans(text) if s[1] > s[0]]
            if (span := next_look(looks, reported, length, steps_left(self.req.text))) is not None:
                self.moved = (tool.name, span)
                return tool
        return None

    def _fits(self, offered: list[Tool]) -> list[float]:
        """How well each function's name and description fit what the user asked last."""
        if not offered or not self.latest.strip():
            return [0.0] * len(offered)
        fit = similarity([self.latest], [phrase(t.name, t.description) for t in offered])[0]
        return [float(f) for f in fit]

    def _by_meaning(self, offered: list[Tool]) -> list[Tool]:
        """``offered`` best fit first (a function already called after the others)."""
        fits = self._fits(offered)
        order = sorted(range(len(offered)), key=lambda i: (offered[i].name in self.called, -fits[i]))
        return [offered[i] for i in order]


def _answers(tool: Tool) -> bool:
    return bool(_ANSWERING & set(words_of(tool.name) + words_of(tool.description)[:4]))


def _acts(tool: Tool) -> bool:
    return intent_of(tool.name, tool.description) not in (None, "stop")


def made_calls(messages: list[Any]) -> list[tuple[str, str]]:
    """The calls the assistant made earlier in the conversation (its ``tool_calls``), in order."""
    made: list[tuple[str, str]] = []
    for message in messages:
        calls = message.get("tool_calls") if isinstance(message, dict) else None
        for call in calls if isinstance(calls, list) else []:
            function = call.get("function") if isinstance(call, dict) else None
            if not isinstance(function, dict):
                continue
            try:
                args = json.loads(function.get("arguments") or "{}")
            except (json.JSONDecodeError, TypeError):
                continue
            made.append((str(function.get("name")), json.dumps(args, sort_keys=True)))
    return made


def call_results(messages: list[Any]) -> list[tuple[str, str]]:
    """What each ``tool`` message returned, as (the function called, its text), in order.

    The function is the one the assistant's call with the message's ``tool_call_id`` named ("" if none did).
    """
    named: dict[str, str] = {}
    out: list[tuple[str, str]] = []
    for message in messages:
        if not isinstance(message, dict):
            continue
        for call in message.get("tool_calls") or []:
            function = call.get("function") if isinstance(call, dict) else None
            if isinstance(function, dict) and isinstance(call.get("id"), str):
                named[call["id"]] = str(function.get("name"))
        if message.get("role") == "tool":
            content = message.get("content")
            if isinstance(content, list):
                content = " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
            if isinstance(content, str):
                out.append((named.get(str(message.get("tool_call_id")), ""), content))
    return out


def latest_request(messages: list[Any]) -> str:
    """The text of the last user turn (what the user asked last)."""
    for message in reversed(messages):
        if not isinstance(message, dict) or message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content
        if isinstance(content, list):
            return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


def call_text(request: ToolRequest, calls: list[tuple[Tool, dict[str, Any]]]) -> str:
    """What the constrained decoder writes for ``calls``: the arguments (named) or the list of calls (required)."""
    if request.mode == "named":
        return json.dumps(calls[0][1], ensure_ascii=False)
    return json.dumps([{"name": t.name, "parameters": args} for t, args in calls], ensure_ascii=False)


def tool_calls(calls: list[tuple[Tool, dict[str, Any]]]) -> list[dict[str, Any]]:
    """The reply's ``tool_calls``, as vLLM writes them (``chatcmpl-tool-`` ids, arguments as a JSON string)."""
    return [
        {
            "id": f"chatcmpl-tool-{uuid.uuid4().hex}",
            "type": "function",
            "function": {"name": tool.name, "arguments": json.dumps(args, ensure_ascii=False)},
        }
        for tool, args in calls
    ]


def finish_reason(request: ToolRequest, cut: bool) -> str:
    """``tool_calls`` for calls the model chose, ``stop`` for a named function (as OpenAI), ``length`` if cut."""
    if cut:
        return "length"
    return "stop" if request.mode == "named" else "tool_calls"
