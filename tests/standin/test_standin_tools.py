"""Tool calling against the stand-in over real HTTP, as clients written for OpenAI's API do it.

A plain ``openai`` client, LangChain's tool conversion and a ``ChatOpenAI`` model with bound tools
send ``tools`` with each ``tool_choice`` (none, auto, required, a named function) and a picture of a
sign; the calls validate against the tools' schemas and carry what the sign shows. Refusals are
vLLM 0.33's, word for word.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from picture_helpers import ask, calls_of, function, picture, user
from videoatlas_standin.perception import Reader
from videoatlas_standin.server import RunningServer, StandinConfig, StandinServer
from videoatlas_standin.version import STANDIN_MODEL

pytestmark = pytest.mark.e2e

SIGN = picture([(80, 120, "ROOM 512", 72)])
QUESTION = "Which room is this sign for?\nA. 208\nB. 512"
ANSWER = function("give_answer", "Give the answer: which room the sign is for.", {"answer": {"enum": ["208", "512"]}})
LIGHTS = function(
    "switch_lights", "Turn the lights of the whole building off for the night.", {"off": {"type": "boolean"}}
)
OPEN = function("open_room", "Open the door of one room.", {"room": {"type": "integer", "minimum": 1, "maximum": 999}})


@pytest.fixture(scope="module")
def reader() -> Reader:
    return Reader()


@pytest.fixture(scope="module")
def tooled(reader: Reader) -> Iterator[openai.OpenAI]:
    """A client of a stand-in started as ``--enable-auto-tool-choice --tool-call-parser hermes``."""
    config = StandinConfig(enable_auto_tool_choice=True, tool_call_parser="hermes")
    with RunningServer(StandinServer(config, reader=reader)) as server:
        yield openai.OpenAI(base_url=server.base_url, api_key="none", max_retries=0)


@pytest.fixture(scope="module")
def plain(reader: Reader) -> Iterator[openai.OpenAI]:
    """A client of a stand-in started without tool flags (vLLM's defaults)."""
    with RunningServer(StandinServer(StandinConfig(), reader=reader)) as server:
        yield openai.OpenAI(base_url=server.base_url, api_key="none", max_retries=0)


def test_required_calls_the_tool_whose_description_fits_with_what_the_sign_shows(tooled: openai.OpenAI) -> None:
    tools = [LIGHTS, ANSWER]
    reply = ask(tooled, messages=[user(QUESTION, SIGN)], tools=tools, tool_choice="required")
    assert calls_of(reply, tools) == [("give_answer", {"answer": "512"})]
    assert (reply.choices[0].finish_reason, reply.choices[0].message.content) == ("tool_calls", "")


def test_a_named_function_is_called_and_finishes_with_stop(tooled: openai.OpenAI) -> None:
    tools = [ANSWER, OPEN]
    named = {"type": "function", "function": {"name": "open_room"}}
    reply = ask(tooled, messages=[user(QUESTION, SIGN)], tools=tools, tool_choice=named)
    assert calls_of(reply, tools) == [("open_room", {"room": 512})]  # the value printed with "ROOM"
    assert reply.choices[0].finish_reason == "stop"  # as OpenAI (and vLLM 0.33) report a forced function


def test_auto_always_answers_a_request_with_tools_with_a_call(tooled: openai.OpenAI) -> None:
    tools = [LIGHTS, ANSWER]
    reply = ask(tooled, messages=[user(QUESTION, SIGN)], tools=tools)
    assert calls_of(reply, tools) == [("give_answer", {"answer": "512"})]
    assert reply.choices[0].finish_reason == "tool_calls" and reply.choices[0].message.content is None


def test_none_answers_in_text(tooled: openai.OpenAI) -> None:
    reply = ask(tooled, messages=[user(QUESTION, SIGN)], tools=[ANSWER], tool_choice="none")
    assert reply.choices[0].message.tool_calls is None
    assert reply.choices[0].message.content == "512"


def test_a_tools_result_is_read_in_the_next_turn(tooled: openai.OpenAI) -> None:
    """What a tool returned ("FLOOR: 3") fills the next call's argument whose name means it."""
    floor = function("report_floor", "Report the floor a room is on.", {"floor": {"type": "integer"}})
    tools = [OPEN, floor]
    messages: list[Any] = [user("Which floor is the room on this sign on?", SIGN)]
    first = ask(
        tooled, messages=messages, tools=tools, tool_choice={"type": "function", "function": {"name": "open_room"}}
    )
    [call] = first.choices[0].message.tool_calls or []
    messages.append(first.choices[0].message.model_dump(exclude_none=True))
    messages.append({"role": "tool", "tool_call_id": call.id, "content": "Opened. FLOOR: 3"})
    named = {"type": "function", "function": {"name": "report_floor"}}
    assert calls_of(ask(tooled, messages=messages, tools=tools, tool_choice=named), tools) == [
        ("report_floor", {"floor": 3})
    ]


def test_langchain_tools_are_called_with_arguments_their_models_accept(tooled: openai.OpenAI) -> None:
    """LangChain's own tool conversion and tool-call parser, with the plain ``openai`` client."""
    from langchain_core.output_parsers.openai_tools import parse_tool_call
    from langchain_core.utils.function_calling import convert_to_openai_tool
    from pydantic import BaseModel, Field

    class OpenRoom(BaseModel):
        """Open the door of one room."""

        room: int = Field(ge=1, le=999, description="the room number")

    reply = ask(
        tooled, messages=[user(QUESTION, SIGN)], tools=[convert_to_openai_tool(OpenRoom)], tool_choice="required"
    )
    [raw] = reply.choices[0].message.tool_calls or []
    parsed = parse_tool_call(raw.model_dump(), return_id=True)
    assert parsed is not None and parsed["name"] == "OpenRoom" and parsed["id"] == raw.id
    assert OpenRoom.model_validate(parsed["args"]).room == 512


def test_a_langchain_model_with_bound_tools_gets_calls_it_can_run(tooled: openai.OpenAI) -> None:
    """``ChatOpenAI(...).bind_tools``, as LangChain agents use an OpenAI-compatible server."""
    from langchain_openai import ChatOpenAI
    from pydantic import BaseModel, Field, SecretStr

    class OpenRoom(BaseModel):
        """Open the door of one room."""

        room: int = Field(ge=1, le=999, description="the room number")

    model = ChatOpenAI(base_url=str(tooled.base_url), api_key=SecretStr("none"), model=STANDIN_MODEL, max_retries=0)
    reply = model.bind_tools([OpenRoom], tool_choice="required").invoke([user(QUESTION, SIGN)])
    [call] = reply.tool_calls
    assert call["name"] == "OpenRoom" and call["id"]
    assert OpenRoom.model_validate(call["args"]).room == 512


@pytest.mark.parametrize(
    ("choice", "message"),
    [
        ("auto", '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set'),
        ("required", 'tool_choice="required" requires --tool-call-parser to be set'),
        (
            {"type": "function", "function": {"name": "give_answer"}},
            'tool_choice=function "give_answer" requires --tool-call-parser to be set',
        ),
    ],
)
def test_a_server_without_tool_flags_refuses_as_vllm(plain: openai.OpenAI, choice: Any, message: str) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        ask(plain, messages=[user(QUESTION, SIGN)], tools=[ANSWER, OPEN], tool_choice=choice)
    assert caught.value.status_code == 400
    assert caught.value.body == {"message": message, "type": "BadRequestError", "param": None, "code": 400}


@pytest.mark.parametrize(
    ("extra", "sentence", "param"),
    [
        ({"tools": []}, "`tools` must not be an empty array.", "tools"),
        ({"tool_choice": "required"}, "When using `tool_choice`, `tools` must be set.", "tool_choice"),
        ({"tools": "T", "tool_choice": "always"}, "Invalid value for `tool_choice`: always!", "tool_choice"),
        (
            {"tools": "T", "tool_choice": {"type": "function", "function": {"name": "zoom"}}},
            "The tool specified in `tool_choice` does not match any of the specified `tools`",
            "tool_choice",
        ),
    ],
)
def test_malformed_tool_requests_are_refused_by_vllms_request_validation(
    tooled: openai.OpenAI, extra: dict[str, Any], sentence: str, param: str
) -> None:
    body = {k: [ANSWER, OPEN] if v == "T" else v for k, v in extra.items()}
    with pytest.raises(openai.BadRequestError) as caught:
        ask(tooled, messages=[user(QUESTION, SIGN)], **body)
    error = caught.value.body
    assert isinstance(error, dict) and error["type"] == "Bad Request" and error["param"] == param
    assert error["message"].startswith("1 validation error:\n  {'type': 'value_error', 'loc': ('body',)")
    assert sentence in error["message"]


def test_json_asked_for_in_words_comes_back_in_the_content(plain: openai.OpenAI) -> None:
    example = 'Reply with a JSON object like {"answer": "A|B", "confidence": 0.5}.'
    reply = ask(plain, messages=[user(f"{QUESTION}\n{example}", SIGN)])
    assert json.loads(reply.choices[0].message.content or "") == {"answer": "B", "confidence": 0.0}
    keys = 'Answer in JSON with the keys "answer" and "explanation".'
    named = ask(plain, messages=[user(f"{QUESTION}\n{keys}", SIGN)])
    value = json.loads(named.choices[0].message.content or "")
    assert value["answer"] == "512" and "ROOM 512" in value["explanation"]  # what was read, said in words


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--enable-auto-tool-choice"], "--enable-auto-tool-choice requires --tool-call-parser"),
        (["--enable-auto-tool-choice", "--tool-call-parser", "nosuch"], "invalid tool call parser: nosuch"),
    ],
)
def test_the_command_refuses_tool_flags_vllm_would_refuse(flags: list[str], said: str) -> None:
    import subprocess

    from process_helpers import EXE

    done = subprocess.run([EXE, "standin", "--port", "1", *flags], capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and said in done.stderr and "Traceback" not in done.stderr
