"""``POST /v1/decisions`` over real HTTP: vLLM 0.33's request model, refusals and answer shape, the policy's shares.

By default the stand-in answers as vLLM does for a model without the Decisions API (it validates, then 501);
started with ``decisions`` on, as vLLM serving Qwen3 or Qwen3.5 with ``--logprobs-mode raw_logprobs``. The
refusals are vLLM's, word for word (read from its 0.33.0 route, answering in-process).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from videoatlas_standin.server import RunningServer, StandinConfig, StandinServer
from videoatlas_standin.tokens import BLOCK

pytestmark = pytest.mark.e2e

NOTICE = "The departures board by the stairs reads GATE B12 for the night train.\nPlatform staff: two."
CHOICE = {
    "type": "choice",
    "name": "gate",
    "instructions": "Which gate does the night train leave from?",
    "choices": [{"value": "GATE A7"}, {"value": "GATE B12", "description": "by the stairs"}, {"value": "GATE C3"}],
}
PREDICATE = {"type": "predicate", "instructions": "Does the notice name a gate?"}
SCORE = {
    "type": "score",
    "instructions": "How crowded is the platform?",
    "levels": [{"label": "empty"}, {"label": "quiet"}, {"label": "packed"}],
}


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, RunningServer]]:
    """A stand-in serving decisions (recording what it receives), and one as a server without them."""
    record = tmp_path_factory.mktemp("record") / "requests.jsonl"
    with (
        RunningServer(StandinServer(StandinConfig(decisions=True, record=record))) as serving,
        RunningServer(StandinServer(StandinConfig())) as plain,
    ):
        yield {"serving": serving, "plain": plain}


def decide(server: RunningServer, **body: Any) -> httpx.Response:
    return httpx.post(f"{server.base_url}/decisions", json={"model": server.standin.config.model, **body}, timeout=300)


def error(reply: httpx.Response) -> tuple[int, str, str, str | None]:
    found = reply.json()["error"]
    assert found["code"] == reply.status_code
    return reply.status_code, found["message"], found["type"], found["param"]


def test_a_read_choice_gets_most_of_the_mass_and_the_answers_have_vllms_shape(
    servers: dict[str, RunningServer],
) -> None:
    reply = decide(servers["serving"], input=NOTICE, questions=[CHOICE, PREDICATE, SCORE])
    assert reply.status_code == 200, reply.text
    data = reply.json()
    assert set(data) == {"model", "answers", "usage"} and data["model"] == servers["serving"].standin.config.model
    choice, predicate, score = data["answers"]
    assert set(choice) == {"type", "name", "choice", "probabilities", "confidence"}
    assert (choice["type"], choice["name"], choice["choice"]) == ("choice", "gate", "GATE B12")
    assert [p["value"] for p in choice["probabilities"]] == ["GATE A7", "GATE B12", "GATE C3"]
    probs = [p["probability"] for p in choice["probabilities"]]
    assert math.isclose(sum(probs), 1.0) and probs[1] > 0.5 and probs[0] == pytest.approx(probs[2])
    assert choice["confidence"] == probs[1]
    assert set(predicate) == {"type", "name", "probability"} and predicate["type"] == "predicate"
    assert predicate["name"] is None and 0.5 < predicate["probability"] < 1  # a line bears on it
    assert set(score) == {"type", "name", "score", "probabilities", "confidence"}
    levels = score["probabilities"]
    assert [(p["value"], p["label"]) for p in levels] == [(0, "empty"), (1, "quiet"), (2, "packed")]
    assert all(p["probability"] == pytest.approx(1 / 3) for p in levels)  # nothing read names a level: flat
    assert score["score"] == pytest.approx(1.0) and score["confidence"] == pytest.approx(1 / 3)


def test_nothing_read_gives_every_option_the_same_share(servers: dict[str, RunningServer]) -> None:
    reply = decide(servers["serving"], input="Rain all afternoon.", questions=[CHOICE, PREDICATE])
    choice, predicate = reply.json()["answers"]
    assert choice["choice"] == "GATE A7"  # the first listed, as vLLM's argmax on a tie
    assert all(p["probability"] == pytest.approx(1 / 3) for p in choice["probabilities"])
    assert predicate["probability"] == pytest.approx(0.5)


def test_usage_counts_each_reads_prompt_and_its_cached_blocks(servers: dict[str, RunningServer]) -> None:
    server = servers["serving"]
    text = "A fresh notice, never sent before: " + "the lifts are out of order on every floor. " * 12
    first = decide(server, input=text, questions=[CHOICE, SCORE]).json()["usage"]
    again = decide(server, input=text, questions=[CHOICE, SCORE]).json()["usage"]
    parts = {"input_tokens", "input_tokens_details", "output_tokens", "output_tokens_details", "total_tokens"}
    assert set(first) == parts
    assert first["output_tokens"] == 2 and first["output_tokens_details"] == {"reasoning_tokens": 0}
    assert first["total_tokens"] == first["input_tokens"] + 2 == again["total_tokens"]
    # Both reads start with the text: the second finds the first's blocks; asked again, nearly all is cached.
    assert 0 < first["input_tokens_details"]["cached_tokens"] < first["input_tokens"] // 2
    details = again["input_tokens_details"]
    assert details["cached_tokens"] >= first["input_tokens"] - 2 * BLOCK and details["cache_write_tokens"] <= 2 * BLOCK


def test_decisions_are_recorded_and_counted(servers: dict[str, RunningServer]) -> None:
    server = servers["serving"]
    root = server.base_url.removesuffix("/v1")
    httpx.post(f"{root}/stats/reset")
    decide(server, input=[{"role": "user", "content": [{"type": "input_text", "text": NOTICE}]}], questions=[SCORE])
    stats = httpx.get(f"{root}/stats").json()
    assert (stats["requests"], stats["decision_requests"], stats["decision_questions"]) == (1, 1, 1)
    assert stats["prompt_tokens"] > 0 and stats["completion_tokens"] == 1
    record = server.standin.config.record
    assert isinstance(record, Path)
    last = json.loads(record.read_text(encoding="utf-8").splitlines()[-1])
    assert last["endpoint"] == "/v1/decisions" and last["body"]["questions"] == [SCORE]


def test_a_server_without_decisions_validates_then_answers_501(servers: dict[str, RunningServer]) -> None:
    plain = servers["plain"]
    assert error(decide(plain, input=NOTICE, questions=[CHOICE])) == (
        501,
        "The model does not support the Decisions API",
        "NotImplementedError",
        None,
    )
    assert decide(plain, input=NOTICE, questions=[]).status_code == 400  # the request model runs first
    assert decide(plain, model="another", input=NOTICE, questions=[CHOICE]).status_code == 501


IMAGE = [{"role": "user", "content": [{"type": "input_text", "text": "a"}, {"type": "input_image", "image_url": "u"}]}]


@pytest.mark.parametrize(
    ("body", "message", "param"),
    [
        (
            {"input": IMAGE},
            "2 validation errors:\n  {'type': 'string_type', 'loc': 'body.input.constrained-str', 'msg': 'Input should "
            "be a valid string', 'input': '<list of 1 items>'}\n  {'type': 'value_error', 'loc': "
            "'body.input.0', 'msg': "
            "'Value error, Decisions supports text input only; images are not supported', 'input': '<dict "
            "of 2 items>', "
            "'ctx': {'error': ValueError('Decisions supports text input only; images are not supported')}}",
            "body.input.constrained-str",
        ),
        (
            {"questions": []},
            "1 validation error:\n  {'type': 'too_short', 'loc': 'body.questions', 'msg': 'List should have at least 1 "
            "item after validation, not 0', 'input': '<list of 0 items>', 'ctx': {'field_type': 'List', "
            "'min_length': 1, "
            "'actual_length': 0}}",
            "body.questions",
        ),
        (
            {"questions": [{"type": "choice", "instructions": "x", "choices": [{"value": "a"}, {"value": "a"}]}]},
            "1 validation error:\n  {'type': 'value_error', 'loc': 'body.questions.0.choice', 'msg': 'Value error, "
            "choice values must be distinct', 'input': '<dict of 3 items>', 'ctx': {'error': ValueError('choice values "
            "must be distinct')}}",
            "body.questions.0.choice",
        ),
        (
            {"questions": [{"type": "bogus", "instructions": "x"}]},
            "1 validation error:\n  {'type': 'union_tag_invalid', 'loc': 'body.questions.0', 'msg': \"Input "
            "tag 'bogus' "
            "found using 'type' does not match any of the expected tags: 'predicate', 'choice', 'score'\", 'input': "
            "'<dict of 2 items>', 'ctx': {'discriminator': \"'type'\", 'tag': 'bogus', 'expected_tags': \"'predicate', "
            "'choice', 'score'\"}}",
            "body.questions.0",
        ),
        (
            {"extra": 1},
            "1 validation error:\n  {'type': 'extra_forbidden', 'loc': 'body.extra', 'msg': 'Extra inputs are not "
            "permitted', 'input': '1'}",
            "body.extra",
        ),
        (
            {"questions": [{"type": "predicate", "instructions": "x", "name": None}]},
            "1 validation error:\n  {'type': 'value_error', 'loc': 'body.questions.0.predicate', 'msg': 'Value error, "
            "name must be a string when provided', 'input': '<dict of 3 items>', 'ctx': {'error': "
            "ValueError('name must "
            "be a string when provided')}}",
            "body.questions.0.predicate",
        ),
        (
            {"joint": 1},
            "1 validation error:\n  {'type': 'bool_type', 'loc': 'body.joint', 'msg': 'Input should be a "
            "valid boolean', "
            "'input': '1'}",
            "body.joint",
        ),
    ],
)
def test_vllms_request_model_refuses_with_its_words(
    servers: dict[str, RunningServer], body: dict[str, Any], message: str, param: str
) -> None:
    given = {"input": NOTICE, "questions": [CHOICE], **body}
    for server in servers.values():  # the request model runs whether or not the server has the API
        assert error(decide(server, **given)) == (400, message, "Bad Request", param)


def test_a_cache_salt_vllm_refuses_is_refused(servers: dict[str, RunningServer]) -> None:
    reply = decide(servers["serving"], input=NOTICE, questions=[CHOICE], cache_salt="a/b")
    text = "Parameter 'cache_salt' must be at most 128 characters and must not contain '@', '/', '\\\\', or NUL."
    assert error(reply) == (400, f"{text} (parameter=cache_salt)", "BadRequestError", "cache_salt")
    assert decide(servers["serving"], input=NOTICE, questions=[CHOICE], cache_salt="salt").status_code == 200


def test_the_body_must_be_json_of_an_object(servers: dict[str, RunningServer]) -> None:
    url = f"{servers['serving'].base_url}/decisions"
    text = httpx.post(url, content=b"{}", headers={"content-type": "text/plain"}, timeout=30)
    assert error(text) == (
        400,
        "1 validation error:\n  Unsupported Media Type: Only 'application/json' is allowed",
        "Bad Request",
        None,
    )
    broken = httpx.post(url, content=b"{", headers={"content-type": "application/json"}, timeout=30)
    assert error(broken) == (
        400,
        "1 validation error:\n  {'type': 'json_invalid', 'loc': 'body.1', 'msg': 'JSON decode error', 'input': "
        "'<dict of 0 items>', 'ctx': {'error': 'Expecting property name enclosed in double quotes'}}",
        "Bad Request",
        "body.1",
    )
    listed = httpx.post(url, json=[1], timeout=30)
    assert error(listed) == (
        400,
        "1 validation error:\n  {'type': 'model_attributes_type', 'loc': 'body', 'msg': 'Input should be a valid "
        "dictionary or object to extract fields from', 'input': '<list of 1 items>'}",
        "Bad Request",
        "body",
    )


def test_what_vllms_serving_code_refuses(servers: dict[str, RunningServer]) -> None:
    server = servers["serving"]
    served = server.standin.config.model
    assert error(decide(server, model="another", input=NOTICE, questions=[CHOICE])) == (
        404,
        f"The model `another` does not exist. Valid aliases: {served}.",
        "NotFoundError",
        "model",
    )
    many = [PREDICATE] * 65
    assert error(decide(server, input=NOTICE, questions=many)) == (
        400,
        "questions: at most 64 for this model",
        "BadRequestError",
        None,
    )
    letters = {**CHOICE, "choices": [{"value": f"option {n}"} for n in range(27)]}
    assert error(decide(server, input=NOTICE, questions=[letters])) == (
        400,
        "This model supports at most 26 choices per question",
        "BadRequestError",
        None,
    )
    assert error(decide(server, input=NOTICE, questions=[CHOICE], joint=True)) == (
        400,
        "joint: this model reads each question on its own; joint reads need DiffusionGemma",
        "BadRequestError",
        None,
    )
