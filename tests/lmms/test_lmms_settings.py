"""``--model_args`` of the ``videoatlas`` lmms-eval model: what is taken, and one clear line for what is not."""

from __future__ import annotations

import pytest

from videoatlas.errors import BadInputError
from videoatlas.lmms.settings import parse_model_args

pytestmark = pytest.mark.unit


def test_agent_settings_endpoint_and_database_are_read_as_lmms_eval_hands_them_over() -> None:
    # lmms-eval turns "2" into 2 and "true" into True, and adds its own batch_size and device.
    args = parse_model_args(
        {
            "agent": "video-rlm",
            "base_url": "http://gpu:8000/v1",
            "model": 7,
            "db": "sqlite:///x.db",
            "workers": 2,
            "rounds": 1,
            "k": 6,
            "concurrency": 3,
            "batch_size": 1,
            "device": "cuda",
        }
    )
    assert args.config.agent == "video-rlm"
    assert args.config.k == 6
    assert args.config.settings == {"workers": 2, "rounds": 1}
    assert (args.base_url, args.model, args.db, args.concurrency) == ("http://gpu:8000/v1", "7", "sqlite:///x.db", 3)
    assert args.standin is False


def test_the_default_agent_and_a_json_valued_option() -> None:
    args = parse_model_args({"standin": True, "thinking": '{"all": false}'})
    assert args.config.agent == "video-rlm"
    assert args.config.thinking == {"all": False}
    assert args.standin is True


@pytest.mark.parametrize(
    ("model_args", "message"),
    [
        ({"agent": "nope"}, "unknown agent 'nope'; choose one of"),
        ({"agent": "uniform", "workers": 2}, "not an option of the uniform agent: workers"),
        ({"agent": "video-rlm", "rounds": 0}, "rounds"),
        ({"k": 99}, "grid size K must be"),
        ({"standin": True, "base_url": "http://x/v1"}, "standin=true and base_url name two endpoints"),
        ({"standin": "maybe"}, "standin must be true or false"),
        ({"concurrency": 0}, "concurrency must be a whole number of at least 1"),
        ({"thinking": "{not json"}, "is not valid JSON"),
        ({"prompts": "/no/such/prompt/set"}, "prompt"),
    ],
)
def test_a_bad_argument_is_one_line_naming_it(model_args: dict[str, object], message: str) -> None:
    with pytest.raises(BadInputError, match=message) as caught:
        parse_model_args(model_args)
    assert "\n" not in str(caught.value)
