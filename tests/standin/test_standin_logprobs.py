"""``logprobs`` on chat completions, over real HTTP: vLLM 0.33's shape and refusals, the policy's shares at the answer.

A client asks for ``"logprobs": true, "top_logprobs": 20`` with a reply schema and reads
``choices[0].logprobs.content``: one entry per generated token, the tokens concatenating to what was generated,
and at the token where the answer is written, the alternatives the stand-in weighed. The refusals are vLLM's,
word for word (its messages read from its 0.33.0 code and answers).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from picture_helpers import picture, user
from videoatlas_standin.perception import Reader
from videoatlas_standin.server import RunningServer, StandinConfig, StandinServer

pytestmark = pytest.mark.e2e

GATES = "Which gate is on the departure board?\nA. GATE A7\nB. GATE C3\nC. GATE B12\nD. GATE D4"
BOARD = picture([(60, 130, "GATE B12", 72)])
BLANK = picture([])
PLATE = picture([(60, 60, "PLATE", 34), (60, 130, "KX-4471", 72)])
CHOICE = {
    "type": "object",
    "properties": {"answer": {"type": "integer", "minimum": 0, "maximum": 3}, "reason": {"type": "string"}},
    "required": ["answer", "reason"],
    "additionalProperties": False,
}
OPEN = {
    "type": "object",
    "properties": {"answer": {"type": "string"}, "evidence": {"type": "string"}},
    "required": ["answer", "evidence"],
    "additionalProperties": False,
}


@pytest.fixture(scope="module")
def reader() -> Reader:
    return Reader()


@pytest.fixture(scope="module")
def servers(reader: Reader, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, RunningServer]]:
    """A plain stand-in (recording what it receives), and one for each thinking mode."""
    record = tmp_path_factory.mktemp("record") / "requests.jsonl"
    with (
        RunningServer(StandinServer(StandinConfig(record=record), reader=reader)) as off,
        RunningServer(StandinServer(StandinConfig(reasoning="field"), reader=reader)) as field,
        RunningServer(StandinServer(StandinConfig(reasoning="tags"), reader=reader)) as tags,
    ):
        yield {"off": off, "field": field, "tags": tags}


def post(server: RunningServer, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(f"{server.base_url}/chat/completions", json=body, timeout=300)


def asked(server: RunningServer, text: str, image: str, schema: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """The whole reply to one decision call as the product makes it: a reply schema, logprobs, 20 alternatives."""
    body = {
        "model": server.standin.config.model,
        "messages": [user(text, image)],
        "response_format": {"type": "json_schema", "json_schema": {"name": "decision", "schema": schema}},
        "logprobs": True,
        "top_logprobs": 20,
        **extra,
    }
    reply = post(server, body)
    assert reply.status_code == 200, reply.text
    data: dict[str, Any] = reply.json()
    return data


def entries(reply: dict[str, Any]) -> list[dict[str, Any]]:
    listed: list[dict[str, Any]] = reply["choices"][0]["logprobs"]["content"]
    return listed


def answer_entry(reply: dict[str, Any], key: str = "answer") -> dict[str, Any]:
    """The entry of the token where the value of ``key`` starts, found as a client finds it: by the tokens' text."""
    listed = entries(reply)
    text = "".join(e["token"] for e in listed)
    start = text.rindex(f'"{key}": ') + len(f'"{key}": ')
    start += 1 if text[start] == '"' else 0  # a string: its first character
    position = 0
    for entry in listed:
        if position + len(entry["token"]) > start:
            return entry
        position += len(entry["token"])
    raise AssertionError("no token at the answer")


def shares(entry: dict[str, Any]) -> dict[str, float]:
    return {alt["token"]: math.exp(alt["logprob"]) for alt in entry["top_logprobs"]}


def test_every_token_has_vllms_entry_and_together_they_are_the_content(servers: dict[str, RunningServer]) -> None:
    reply = asked(servers["off"], GATES, BOARD, CHOICE)
    choice = reply["choices"][0]
    listed = entries(reply)
    assert set(choice) == {"index", "message", "logprobs", "finish_reason"} and set(choice["logprobs"]) == {"content"}
    assert "".join(e["token"] for e in listed) == choice["message"]["content"]
    assert len(listed) == reply["usage"]["completion_tokens"]
    for entry in listed:
        assert set(entry) == {"token", "logprob", "bytes", "top_logprobs"}
        assert isinstance(entry["token"], str) and isinstance(entry["logprob"], float)
        assert entry["bytes"] == list(entry["token"].encode())
        assert 1 <= len(entry["top_logprobs"]) <= 20
        assert entry["top_logprobs"][0] == {k: entry[k] for k in ("token", "logprob", "bytes")}  # sampled first
        for alt in entry["top_logprobs"]:
            assert set(alt) == {"token", "logprob", "bytes"} and alt["bytes"] == list(alt["token"].encode())


def test_the_answer_read_in_the_picture_gets_most_of_the_mass(servers: dict[str, RunningServer]) -> None:
    reply = asked(servers["off"], GATES, BOARD, CHOICE)
    assert json.loads(reply["choices"][0]["message"]["content"])["answer"] == 2
    entry = answer_entry(reply)
    got = shares(entry)
    assert entry["token"] == "2" and set(got) == {"0", "1", "2", "3"}
    assert got["2"] > 0.5 and all(got["2"] > p for t, p in got.items() if t != "2")
    assert math.isclose(sum(got.values()), 1.0)
    others = [got[t] for t in "013"]
    assert max(others) == pytest.approx(min(others))  # nothing read holds the other gates
    certain = [e for e in entries(reply) if e is not entry]
    assert all(e["logprob"] == 0.0 and len(e["top_logprobs"]) == 1 for e in certain)


def test_a_blank_picture_gives_every_choice_the_same_share(servers: dict[str, RunningServer]) -> None:
    reply = asked(servers["off"], GATES, BLANK, CHOICE)
    entry = answer_entry(reply)
    assert entry["token"] == "0"  # nothing read: the first listed, as the policy answers
    assert [alt["token"] for alt in entry["top_logprobs"]] == ["0", "1", "2", "3"]
    assert all(alt["logprob"] == pytest.approx(math.log(0.25)) for alt in entry["top_logprobs"])


def test_an_open_answer_carries_how_sure_the_reading_is(servers: dict[str, RunningServer]) -> None:
    reply = asked(servers["off"], "What is the plate number of the car in this photo?", PLATE, OPEN)
    assert json.loads(reply["choices"][0]["message"]["content"])["answer"] == "KX-4471"
    entry = answer_entry(reply)
    assert entry["token"] == "KX" and entry["top_logprobs"][0]["token"] == "KX"
    assert -math.log(2) < entry["logprob"] < 0  # the likeliest, and not certain
    assert any(alt["token"].startswith('"') for alt in entry["top_logprobs"])  # declining closes the string there
    declined = asked(servers["off"], "What colour is the car?", PLATE, OPEN)
    assert json.loads(declined["choices"][0]["message"]["content"])["answer"] == ""


def test_fewer_alternatives_are_listed_when_fewer_are_asked_for(servers: dict[str, RunningServer]) -> None:
    two = asked(servers["off"], GATES, BOARD, CHOICE, top_logprobs=2)
    assert [alt["token"] for alt in answer_entry(two)["top_logprobs"]] == ["2", "0"]  # sampled, then the likeliest
    none = asked(servers["off"], GATES, BOARD, CHOICE, top_logprobs=None)
    assert all(e["top_logprobs"] == [] for e in entries(none)) and answer_entry(none)["logprob"] < 0
    plain = post(servers["off"], {"model": servers["off"].standin.config.model, "messages": [user(GATES, BOARD)]})
    assert plain.json()["choices"][0]["logprobs"] is None


@pytest.mark.parametrize("mode", ["field", "tags"])
def test_the_reasonings_tokens_are_listed_before_the_answers(servers: dict[str, RunningServer], mode: str) -> None:
    reply = asked(servers[mode], GATES, BOARD, CHOICE)
    message, listed = reply["choices"][0]["message"], entries(reply)
    text = "".join(e["token"] for e in listed)
    if mode == "field":  # vLLM's reasoning parser moves text out of the content, never tokens out of logprobs
        assert text == f"{message['reasoning']}\n</think>\n\n{message['content']}"
    else:  # the think block is content
        assert text == message["content"] and text.startswith("<think>\n")
    assert len(listed) == reply["usage"]["completion_tokens"]
    entry = answer_entry(reply)
    assert entry["token"] == "2" and set(shares(entry)) == {"0", "1", "2", "3"}


def _refusal(server: RunningServer, **fields: Any) -> tuple[int, dict[str, Any]]:
    body = {"model": server.standin.config.model, "messages": [{"role": "user", "content": "Which one?"}], **fields}
    reply = post(server, body)
    return reply.status_code, reply.json()["error"]


@pytest.mark.parametrize(
    ("fields", "message", "kind", "param"),
    [
        (
            {"top_logprobs": 5},
            "when using `top_logprobs`, `logprobs` must be set to true. (parameter=top_logprobs)",
            "BadRequestError",
            "top_logprobs",
        ),
        (
            {"logprobs": False, "top_logprobs": -1},
            "when using `top_logprobs`, `logprobs` must be set to true. (parameter=top_logprobs)",
            "BadRequestError",
            "top_logprobs",
        ),
        (
            {"logprobs": True, "top_logprobs": -2},
            "`top_logprobs` must be a positive value or -1. (parameter=top_logprobs, value=-2)",
            "BadRequestError",
            "top_logprobs",
        ),
        (
            {"logprobs": True, "top_logprobs": "x"},
            "`top_logprobs` must be an integer. (parameter=top_logprobs, value=x)",
            "BadRequestError",
            "top_logprobs",
        ),
        (
            {"logprobs": True, "top_logprobs": 2.5},
            "1 validation error:\n  {'type': 'int_from_float', 'loc': 'body.top_logprobs', 'msg': 'Input should be a "
            "valid integer, got a number with a fractional part', 'input': '2.5'}",
            "Bad Request",
            "body.top_logprobs",
        ),
        (
            {"logprobs": 2},
            "1 validation error:\n  {'type': 'bool_parsing', 'loc': 'body.logprobs', 'msg': 'Input should be a valid "
            "boolean, unable to interpret input', 'input': '2'}",
            "Bad Request",
            "body.logprobs",
        ),
        (
            {"logprobs": True, "top_logprobs": 21},
            "Requested sample logprobs of 21, which is greater than max allowed: 20 (parameter=logprobs, value=21)",
            "BadRequestError",
            "logprobs",
        ),
        (
            {"logprobs": True, "top_logprobs": -1},
            "Requested sample logprobs of 152064, which is greater than max allowed: 20 "
            "(parameter=logprobs, value=152064)",
            "BadRequestError",
            "logprobs",
        ),
    ],
)
def test_what_vllm_refuses_is_refused_with_its_words(
    servers: dict[str, RunningServer], fields: dict[str, Any], message: str, kind: str, param: str
) -> None:
    status, error = _refusal(servers["off"], **fields)
    assert (status, error) == (400, {"message": message, "type": kind, "param": param, "code": 400})


def test_what_vllm_takes_is_taken(servers: dict[str, RunningServer]) -> None:
    for fields in ({"logprobs": "yes", "top_logprobs": 1}, {"logprobs": True, "top_logprobs": 2.0}, {"logprobs": 0}):
        body = {"model": servers["off"].standin.config.model, "messages": [{"role": "user", "content": "Hi?"}]}
        assert post(servers["off"], {**body, **fields}).status_code == 200, fields


def test_logprobs_requests_are_recorded_and_counted(servers: dict[str, RunningServer]) -> None:
    server = servers["off"]
    before = httpx.get(server.base_url.removesuffix("/v1") + "/stats").json()["logprobs_requests"]
    asked(server, GATES, BLANK, CHOICE)
    stats = httpx.get(server.base_url.removesuffix("/v1") + "/stats").json()
    assert stats["logprobs_requests"] == before + 1
    record = server.standin.config.record
    assert isinstance(record, Path)
    last = json.loads(record.read_text(encoding="utf-8").splitlines()[-1])
    assert last["endpoint"] == "/v1/chat/completions" and last["body"]["top_logprobs"] == 20
