"""Tool calling against the stand-in over real HTTP, as clients written for OpenAI's API do it.

A plain ``openai`` client, LangChain's tool conversion and a ``ChatOpenAI`` model with bound tools
send ``tools`` with each ``tool_choice`` (none, auto, required, a named function) and grids of a
generated video; the calls validate against the tools' schemas and follow what the grids show.
Refusals are vLLM 0.33's, word for word.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

from picture_helpers import ask, calls_of, function
from videoatlas.environment.atlas import VideoAtlas
from videoatlas.environment.frames import FrameSource
from videoatlas.environment.geometry import Interval, path_at
from videoatlas.llm.images import ImagePart
from videoatlas_standin.perception import Reader
from videoatlas_standin.server import RunningServer, StandinConfig, StandinServer
from videoatlas_standin.version import STANDIN_MODEL

pytestmark = pytest.mark.e2e


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


@pytest.fixture(scope="module")
def video(synth_video: tuple[Path, dict[str, Any]]) -> dict[str, Any]:
    """The root grid of a generated video, two of its questions, and what it shows."""
    path, truth = synth_video
    needle = next(e for e in truth["events"] if e["kind"] == "needle")
    with FrameSource(path) as src:
        atlas = VideoAtlas(src)
        root, child = atlas.grid(), atlas.grid(path_at(src.duration, (needle["start"] + needle["end"]) / 2, 0))
    return {
        "root": root,
        "child": child,
        "needle": needle,
        "code": next(q for q in truth["questions"] if q["id"] == f"needle-{needle['chapter']}"),
        "count": next(q for q in truth["questions"] if q["kind"] == "counting"),
    }


def asking(question: dict[str, Any], extra: str = "") -> str:
    lines = [f"Question: {question['question']}", *(f"{'ABCD'[i]}. {c}" for i, c in enumerate(question["choices"]))]
    return "\n".join([*lines, extra] if extra else lines)


def user(video: dict[str, Any], grid: str, text: str) -> dict[str, Any]:
    url = ImagePart.from_jpeg(video[grid].image.jpeg).data_url()
    return {
        "role": "user",
        "content": [{"type": "image_url", "image_url": {"url": url}}, {"type": "text", "text": text}],
    }


def tools_for(video: dict[str, Any], question: dict[str, Any]) -> list[dict[str, Any]]:
    cells = len(video["root"].grid.cells)
    return [
        function(
            "expand_cell",
            "Open one cell of the grid to see its stretch of video in more detail.",
            {"cell": {"type": "integer", "minimum": 0, "maximum": cells - 1}, "reason": {"type": "string"}},
        ),
        function(
            "submit_answer",
            "Answer the question once what was seen settles it.",
            {"answer": {"type": "string", "enum": question["choices"]}},
        ),
    ]


def shows_a_badge(video: dict[str, Any], cell: int) -> bool:
    """Whether the root grid's ``cell`` covers one of the counted badges' appearances."""
    span: Interval = video["root"].grid.cells[cell].interval
    return any(span.start < end and span.end > start for start, end in video["count"]["evidence"])


def test_required_answers_with_the_answering_function_once_the_grid_settles_it(
    tooled: openai.OpenAI, video: dict[str, Any]
) -> None:
    tools = tools_for(video, video["code"])
    reply = ask(tooled, messages=[user(video, "root", asking(video["code"]))], tools=tools, tool_choice="required")
    assert calls_of(reply, tools) == [("submit_answer", {"answer": video["code"]["answer"]})]
    assert (reply.choices[0].finish_reason, reply.choices[0].message.content) == ("tool_calls", "")


def test_required_looks_closer_where_the_counted_thing_is_while_the_count_is_open(
    tooled: openai.OpenAI, video: dict[str, Any]
) -> None:
    tools = tools_for(video, video["count"])
    reply = ask(tooled, messages=[user(video, "root", asking(video["count"]))], tools=tools, tool_choice="required")
    [(name, args)] = calls_of(reply, tools)
    assert name == "expand_cell" and shows_a_badge(video, args["cell"]), args


def test_a_named_function_is_called_and_finishes_with_stop(tooled: openai.OpenAI, video: dict[str, Any]) -> None:
    tools = tools_for(video, video["code"])
    reply = ask(
        tooled,
        messages=[user(video, "root", asking(video["count"]))],
        tools=tools,
        tool_choice={"type": "function", "function": {"name": "expand_cell"}},
    )
    [(name, args)] = calls_of(reply, tools)
    assert name == "expand_cell" and shows_a_badge(video, args["cell"]), args
    assert reply.choices[0].finish_reason == "stop"  # as OpenAI (and vLLM 0.33) report a forced function


def test_auto_calls_while_the_question_is_open_and_writes_the_answer_once_settled(
    tooled: openai.OpenAI, video: dict[str, Any]
) -> None:
    tools = tools_for(video, video["code"])[:1]  # no function to answer with: the answer is written
    looking = ask(tooled, messages=[user(video, "root", asking(video["count"]))], tools=tools)
    [(name, args)] = calls_of(looking, tools)
    assert name == "expand_cell" and shows_a_badge(video, args["cell"]), args
    assert looking.choices[0].finish_reason == "tool_calls" and looking.choices[0].message.content is None
    settled = ask(tooled, messages=[user(video, "root", asking(video["code"]))], tools=tools, tool_choice="auto")
    assert settled.choices[0].message.tool_calls is None
    assert (settled.choices[0].message.content, settled.choices[0].finish_reason) == (video["code"]["answer"], "stop")


def test_none_answers_in_text(tooled: openai.OpenAI, video: dict[str, Any]) -> None:
    reply = ask(
        tooled,
        messages=[user(video, "root", asking(video["code"]))],
        tools=tools_for(video, video["code"]),
        tool_choice="none",
    )
    assert reply.choices[0].message.tool_calls is None
    assert reply.choices[0].message.content == video["code"]["answer"]


def test_a_multi_turn_tool_conversation_reads_the_calls_and_their_results(
    tooled: openai.OpenAI, video: dict[str, Any]
) -> None:
    """A count stays open until a tool result says the whole video was searched; then the count is answered."""
    tools = tools_for(video, video["count"])
    messages: list[Any] = [
        {"role": "system", "content": "Use the functions to search the video."},
        user(video, "root", asking(video["count"])),
    ]
    first = ask(tooled, messages=messages, tools=tools, tool_choice="auto")
    [call] = first.choices[0].message.tool_calls or []
    messages.append(first.choices[0].message.model_dump(exclude_none=True))
    # The same request again, the call's result not yet in: the call is not repeated, the stand-in writes.
    again = ask(tooled, messages=messages, tools=tools[:1], tool_choice="auto")
    assert again.choices[0].message.tool_calls is None and again.choices[0].message.content
    messages.append({"role": "tool", "tool_call_id": call.id, "content": "Done: 100% of the video searched."})
    second = ask(tooled, messages=messages, tools=tools, tool_choice="auto")
    assert calls_of(second, tools) == [("submit_answer", {"answer": video["count"]["answer"]})]


def test_langchain_tools_are_called_with_arguments_their_models_accept(
    tooled: openai.OpenAI, video: dict[str, Any]
) -> None:
    """LangChain's own tool conversion and tool-call parser, with the plain ``openai`` client."""
    from langchain_core.output_parsers.openai_tools import parse_tool_call
    from langchain_core.utils.function_calling import convert_to_openai_tool
    from pydantic import BaseModel, Field

    class ExpandCell(BaseModel):
        """Open one cell of the grid to see its stretch of video in more detail."""

        cell: int = Field(ge=0, le=len(video["root"].grid.cells) - 1, description="the cell to open")
        reason: str

    tools = [convert_to_openai_tool(ExpandCell)]
    reply = ask(
        tooled,
        messages=[user(video, "root", asking(video["count"]))],
        tools=tools,
        tool_choice="required",
    )
    [raw] = reply.choices[0].message.tool_calls or []
    parsed = parse_tool_call(raw.model_dump(), return_id=True)
    assert parsed is not None and parsed["name"] == "ExpandCell" and parsed["id"] == raw.id
    assert shows_a_badge(video, ExpandCell.model_validate(parsed["args"]).cell)


def test_a_langchain_model_with_bound_tools_gets_calls_it_can_run(tooled: openai.OpenAI, video: dict[str, Any]) -> None:
    """``ChatOpenAI(...).bind_tools``, as LangChain agents use an OpenAI-compatible server."""
    from langchain_openai import ChatOpenAI
    from pydantic import BaseModel, Field, SecretStr

    class ExpandCell(BaseModel):
        """Open one cell of the grid to see its stretch of video in more detail."""

        cell: int = Field(ge=0, le=len(video["root"].grid.cells) - 1, description="the cell to open")
        reason: str

    model = ChatOpenAI(base_url=str(tooled.base_url), api_key=SecretStr("none"), model=STANDIN_MODEL, max_retries=0)
    reply = model.bind_tools([ExpandCell], tool_choice="required").invoke([user(video, "root", asking(video["count"]))])
    [call] = reply.tool_calls
    assert call["name"] == "ExpandCell" and call["id"]
    assert shows_a_badge(video, ExpandCell.model_validate(call["args"]).cell)


@pytest.mark.parametrize(
    ("choice", "message"),
    [
        ("auto", '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set'),
        ("required", 'tool_choice="required" requires --tool-call-parser to be set'),
        (
            {"type": "function", "function": {"name": "expand_cell"}},
            'tool_choice=function "expand_cell" requires --tool-call-parser to be set',
        ),
    ],
)
def test_a_server_without_tool_flags_refuses_as_vllm(
    plain: openai.OpenAI, video: dict[str, Any], choice: Any, message: str
) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        ask(
            plain,
            messages=[user(video, "root", asking(video["code"]))],
            tools=tools_for(video, video["code"]),
            tool_choice=choice,
        )
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
    tooled: openai.OpenAI, video: dict[str, Any], extra: dict[str, Any], sentence: str, param: str
) -> None:
    body = {k: tools_for(video, video["code"]) if v == "T" else v for k, v in extra.items()}
    with pytest.raises(openai.BadRequestError) as caught:
        ask(tooled, messages=[user(video, "root", asking(video["code"]))], **body)
    error = caught.value.body
    assert isinstance(error, dict) and error["type"] == "Bad Request" and error["param"] == param
    assert error["message"].startswith("1 validation error:\n  {'type': 'value_error', 'loc': ('body',)")
    assert sentence in error["message"]


def test_json_asked_for_in_words_comes_back_in_the_content(plain: openai.OpenAI, video: dict[str, Any]) -> None:
    code = video["code"]
    example = 'Reply with a JSON object like {"answer": "A|B|C|D", "cell": 0, "confidence": 0.5}.'
    reply = ask(plain, messages=[user(video, "child", asking(code, example))])
    value = json.loads(reply.choices[0].message.content or "")
    assert (
        set(value) == {"answer", "cell", "confidence"}
        and value["answer"] == "ABCD"[code["choices"].index(code["answer"])]
    )
    span = video["child"].grid.cells[value["cell"]].interval
    assert span.start < video["needle"]["end"] and span.end > video["needle"]["start"]
    keys = 'Answer in JSON with the keys "choice" and "explanation".'
    named = ask(plain, messages=[user(video, "child", asking(code, keys))])
    value = json.loads(named.choices[0].message.content or "")
    assert set(value) == {"choice", "explanation"} and value["choice"] == code["answer"]
    assert code["answer"] in value["explanation"]  # what was read, said in words


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
