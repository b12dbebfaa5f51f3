"""The structured-call client with langchain-core's fake chat models (no network)."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, Field, ValidationError

from videoatlas.errors import BadInputError, ImageLimitError, ModelReplyError
from videoatlas.llm.client import VLMClient
from videoatlas.llm.images import ImagePart
from videoatlas.llm.repair import repair_json
from videoatlas.llm.schemas import choice_schema, response_format
from videoatlas.llm.settings import EndpointSettings

pytestmark = pytest.mark.unit


class Pick(BaseModel):
    cells: list[int] = Field(min_length=1, max_length=3)
    reason: str


class Recording(GenericFakeChatModel):
    """A fake chat model that also keeps every prompt it was sent."""

    seen: list[list[BaseMessage]] = Field(default_factory=list)

    async def _agenerate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        self.seen.append(list(messages))
        return await super()._agenerate(messages, *args, **kwargs)


def client_with(replies: list[str]) -> tuple[VLMClient, Recording]:
    model = Recording(messages=iter(AIMessage(content=r) for r in replies), seen=[])
    return VLMClient(model, EndpointSettings()), model


def tiny_image(label: str = "") -> ImagePart:
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (56, 28), (10, 20, 30)).save(buf, format="JPEG")
    return ImagePart.from_jpeg(buf.getvalue(), label)


async def test_valid_reply_and_message_order() -> None:
    client, model = client_with(['{"cells": [3, 4], "reason": "titles match"}'])
    reply = await client.ask(
        Pick, system="SYS", text="CHANGING", images=[tiny_image("a"), tiny_image("b")], node="probe"
    )
    assert reply.value == Pick(cells=[3, 4], reason="titles match")
    assert reply.record.outcome == "ok" and reply.record.attempts == 1 and reply.record.images == 2
    (sent,) = model.seen
    assert isinstance(sent[0], SystemMessage) and sent[0].content == "SYS"
    assert isinstance(sent[1], HumanMessage)
    parts = sent[1].content
    assert [p["type"] for p in parts] == ["image_url", "image_url", "text"]  # type: ignore[index]
    assert parts[-1]["text"] == "CHANGING"  # type: ignore[index]
    assert parts[0]["image_url"]["url"].startswith("data:image/jpeg;base64,")  # type: ignore[index]
    assert client.totals.calls == 1 and client.totals.outcomes["ok"] == 1


@pytest.mark.parametrize(
    "reply",
    [
        '```json\n{"cells": [1], "reason": "x"}\n```',
        'Sure! Here it is: {"cells": [1], "reason": "x"} Hope that helps.',
        '{"cells": [1,], "reason": "x",}',
    ],
)
async def test_malformed_replies_are_repaired_locally(reply: str) -> None:
    client, model = client_with([reply])
    result = await client.ask(Pick, system="s", text="t")
    assert result.value.cells == [1] and result.record.outcome == "repaired"
    assert len(model.seen) == 1  # no second request


async def test_invalid_reply_is_reasked_once_with_the_error() -> None:
    client, model = client_with(['{"cells": [], "reason": "none"}', '{"cells": [2], "reason": "ok"}'])
    result = await client.ask(Pick, system="s", text="t")
    assert result.value.cells == [2] and result.record.outcome == "reasked" and result.record.attempts == 2
    followup = model.seen[1]
    assert isinstance(followup[-2], AIMessage) and isinstance(followup[-1], HumanMessage)
    assert "cells" in str(followup[-1].content)  # the validation error is quoted back
    assert result.record.parse_errors and "cells" in result.record.parse_errors[0]


async def test_twice_invalid_is_an_error_never_a_guess() -> None:
    client, _ = client_with(["no json at all", '{"cells": "three"}'])
    with pytest.raises(ModelReplyError, match="not valid after a re-ask"):
        await client.ask(Pick, system="s", text="t")
    assert client.totals.outcomes["failed"] == 1 and client.totals.calls == 1


async def test_action_enum_follows_the_state() -> None:
    step = choice_schema("WorkerStep", "action", ["EXPAND", "FINISHED"], cell=(int | None, None))
    schema = response_format(step)["json_schema"]["schema"]
    assert schema["properties"]["action"]["enum"] == ["EXPAND", "FINISHED"]
    with pytest.raises(ValidationError):
        step.model_validate_json('{"action": "BACKTRACK"}')
    client, model = client_with(['{"action": "BACKTRACK"}', '{"action": "FINISHED"}'])
    result = await client.ask(step, system="s", text="t")
    assert result.value.action == "FINISHED" and result.record.outcome == "reasked"  # type: ignore[attr-defined]
    assert "BACKTRACK" in str(model.seen[1][-1].content) or "action" in str(model.seen[1][-1].content)


async def test_images_over_the_limits_are_refused_before_sending() -> None:
    model = Recording(messages=iter([AIMessage(content="{}")]), seen=[])
    client = VLMClient(model, EndpointSettings(max_images=1, max_image_pixels=1000))
    with pytest.raises(ImageLimitError, match="exceed the server's limit of 1"):
        await client.ask(Pick, system="s", text="t", images=[tiny_image(), tiny_image()])
    with pytest.raises(ImageLimitError, match="px per image"):
        await client.ask(Pick, system="s", text="t", images=[tiny_image("big")])
    assert model.seen == []


def test_repair_json() -> None:
    assert repair_json('```\n{"a": 1,}\n```') == '{"a": 1}'
    assert repair_json('text {"a": "} tricky {", "b": [1, 2,],} tail') == '{"a": "} tricky {", "b": [1, 2]}'
    assert repair_json("nothing here") is None


def test_settings_from_env_and_redaction() -> None:
    env = {
        "VIDEOATLAS_BASE_URL": "http://gpu-node:8000/v1",
        "VIDEOATLAS_MODEL": "Qwen/Qwen2.5-VL-7B-Instruct",
        "VIDEOATLAS_API_KEY": "sk-secret",
    }
    settings = EndpointSettings.from_env(env, model="override", timeout_s=None)
    assert settings.base_url == "http://gpu-node:8000/v1" and settings.model == "override"
    assert settings.timeout_s == 120.0
    assert "sk-secret" not in str(settings.redacted())


def test_the_image_limits_come_from_the_environment_and_flags_win() -> None:
    assert (EndpointSettings.from_env({}).max_images, EndpointSettings.from_env({}).max_image_pixels) == (
        16,
        12_845_056,
    )
    env = {"VIDEOATLAS_MAX_IMAGES": "25", "VIDEOATLAS_MAX_IMAGE_PIXELS": "1_000_000"}
    settings = EndpointSettings.from_env(env)
    assert (settings.max_images, settings.max_image_pixels) == (25, 1_000_000)
    assert EndpointSettings.from_env(env, max_images=8).max_images == 8
    for bad in ("many", "0", "-3", "2.5"):
        with pytest.raises(BadInputError, match=f"VIDEOATLAS_MAX_IMAGES must be a positive whole number, got '{bad}'"):
            EndpointSettings.from_env({"VIDEOATLAS_MAX_IMAGES": bad})


def _every_object(node: Any) -> list[dict[str, Any]]:
    if isinstance(node, list):
        return [o for n in node for o in _every_object(n)]
    if not isinstance(node, dict):
        return []
    found = [node] if node.get("type") == "object" or "properties" in node else []
    return found + [o for v in node.values() for o in _every_object(v)]


def test_every_reply_schema_is_closed_and_valid_json_schema() -> None:
    """What a strict decoder needs: objects closed and fully required, unions as anyOf, valid JSON Schema."""
    import jsonschema

    from videoatlas.agents.video_rlm import schemas as rlm_schemas
    from videoatlas.state import schemas

    built: list[type[BaseModel]] = [
        rlm_schemas.SearchTask,
        rlm_schemas.TraversalChoice,
        rlm_schemas.probe_schema(4, [0, 3, 9, 40, 41]),
        rlm_schemas.worker_step_schema(list(rlm_schemas.ACTIONS), [1, 2, 5], [2, 5], [5]),
        rlm_schemas.worker_step_schema(["FINISHED"], []),
        rlm_schemas.uncertainty_schema(3, [1, 2], 4, 600.0, ["A", "B"]),
        rlm_schemas.uncertainty_schema(0, [1], 4, 600.0),
        schemas.decision_schema(4, ["A", "B"]),
        schemas.decision_schema(0),
    ]
    for model in built:
        schema = response_format(model)["json_schema"]["schema"]
        jsonschema.Draft202012Validator.check_schema(schema)
        objects = _every_object(schema)
        assert objects, model.__name__
        for obj in objects:
            assert obj["additionalProperties"] is False, (model.__name__, obj)
            assert sorted(obj["required"]) == sorted(obj["properties"]), (model.__name__, obj)
        assert "oneOf" not in str(schema) and "discriminator" not in str(schema)
    probe = response_format(built[2])["json_schema"]["schema"]["properties"]["cells"]
    # No uniqueItems: llguidance refuses it and xgrammar ignores it; the node drops repeats instead.
    assert probe["items"]["enum"] == [0, 3, 9, 40, 41] and "uniqueItems" not in probe
    assert probe["minItems"] == probe["maxItems"] == 4
    # A worker's EXPAND fills one field: a discriminated union, checked by jsonschema on a real reply.
    step_schema = response_format(built[3])["json_schema"]["schema"]
    jsonschema.validate({"step": {"action": "EXPAND", "cell": 2, "summary": "open it"}}, step_schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"step": {"action": "EXPAND", "cell": 1, "summary": "explored cell"}}, step_schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"step": {"action": "EXPAND", "cell": 2, "items": [], "summary": "x"}}, step_schema)


async def test_strict_mode_is_a_setting_of_the_endpoint() -> None:
    sent: list[dict[str, Any]] = []

    class Keeping(Recording):
        async def _agenerate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
            sent.append(kwargs["response_format"])
            return await super()._agenerate(messages, *args, **kwargs)

    for strict in (True, False):
        model = Keeping(messages=iter([AIMessage(content='{"cells": [1], "reason": "r"}')]), seen=[])
        await VLMClient(model, EndpointSettings(strict_schema=strict)).ask(Pick, system="s", text="t")
    assert [f["json_schema"]["strict"] for f in sent] == [True, False]
    assert EndpointSettings.from_env({"VIDEOATLAS_STRICT_SCHEMA": "0"}).strict_schema is False
    assert EndpointSettings.from_env({}).strict_schema is True
    with pytest.raises(BadInputError, match="VIDEOATLAS_STRICT_SCHEMA"):
        EndpointSettings.from_env({"VIDEOATLAS_STRICT_SCHEMA": "maybe"})
