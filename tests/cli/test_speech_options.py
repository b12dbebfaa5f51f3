"""``--speech``, ``--speech-url`` and ``--speech-model`` through the front door: parsed once, checked, stored with
the run, part of an eval result's key, and taken by the Python API, MCP and the Agent Server alike."""

from __future__ import annotations

import pytest

from videoatlas.agents.registry import knobs
from videoatlas.cli.main import build_parser
from videoatlas.cli.run_setup import run_config_from
from videoatlas.errors import BadInputError
from videoatlas.request import config_of
from videoatlas.runtime.config import RunConfig

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    "command", [["ask", "v.mp4", "-q", "?"], ["eval", "run", "--dataset", "jsonl", "--root", "r", "--out", "o"]]
)
def test_ask_and_eval_run_take_the_speech_options(command: list[str]) -> None:
    parser = build_parser()
    default = run_config_from(parser.parse_args(command))
    assert (default.speech, default.speech_url, default.speech_model) == ("auto", None, "")
    args = parser.parse_args(
        [*command, "--speech", "full", "--speech-url", "http://gpu:8001/v1", "--speech-model", "whisper-x"]
    )
    config = run_config_from(args)
    assert (config.speech, config.speech_url, config.speech_model) == ("full", "http://gpu:8001/v1", "whisper-x")
    with pytest.raises(SystemExit):
        parser.parse_args([*command, "--speech", "loud"])


def test_the_front_door_checks_the_mode_and_stores_it_with_the_run() -> None:
    config = config_of("videoseek", {"speech": "off"})
    assert config.speech == "off" and RunConfig.model_validate(config.model_dump()).speech == "off"
    with pytest.raises(BadInputError, match="speech"):
        config_of("uniform", {"speech": "loud"})


def test_the_mode_and_the_model_are_part_of_an_eval_result_key_the_server_address_is_not() -> None:
    base = knobs(RunConfig.of())
    assert base["speech"] == "auto" and base["speech_model"] == ""
    assert knobs(RunConfig.of(speech="off")) != base
    assert knobs(RunConfig.of(speech_model="whisper")) != base
    assert knobs(RunConfig.of(speech_url="http://elsewhere:8001/v1")) == base


def test_the_agent_server_context_offers_the_settings() -> None:
    from videoatlas.served.graphs import context_schema

    schema = context_schema("eea")
    assert {"speech", "speech_url", "speech_model"} <= set(schema["properties"])
    assert schema["properties"]["speech"]["enum"] == ["auto", "off", "full"]
