"""``videoatlas serve`` presets: which family a model id selects, what each preset asks of vLLM, and that vLLM's
own argument parser (0.33.0) accepts every preset with the meaning we intend (run by ``make conformance``)."""

from __future__ import annotations

import argparse
import importlib.util
import json
from collections.abc import Iterator
from typing import Any

import pytest

from videoatlas.errors import BadInputError
from videoatlas.llm.serve import MIN_IMAGE_PIXELS, PRESETS, Preset, ServeOptions, detect_preset, vllm_command

# One model id per family (and the variants that change a preset's flags).
MODELS: dict[str, Preset] = {
    "Qwen/Qwen2.5-VL-7B-Instruct": "qwen2.5-vl",
    "Qwen/Qwen2.5-VL-72B-Instruct-AWQ": "qwen2.5-vl",
    "Qwen/Qwen3-VL-8B-Instruct": "qwen3-vl",
    "Qwen/Qwen3-VL-30B-A3B-Thinking-FP8": "qwen3-vl",
    "Qwen/Qwen3.5-35B-A3B": "qwen3.5",
    "Qwen/Qwen3.6-27B": "qwen3.5",
    "/models/qwen3_5-9b/": "qwen3.5",
    "/scratch/qwen2_5_vl_7b": "qwen2.5-vl",
    "openai/whisper-large-v3-turbo": "whisper",
    "/models/whisper-small.en": "whisper",
}


def _value(cmd: list[str], flag: str) -> str:
    assert cmd.count(flag) == 1, f"{flag} appears {cmd.count(flag)} times in {cmd}"
    return cmd[cmd.index(flag) + 1]


@pytest.mark.unit
@pytest.mark.parametrize(("model", "family"), sorted(MODELS.items()))
def test_the_family_is_told_from_the_model_id(model: str, family: Preset) -> None:
    assert detect_preset(model) == family


@pytest.mark.unit
def test_an_unknown_family_is_refused_naming_the_presets() -> None:
    for model in ("meta-llama/Llama-3.2-11B-Vision", "Qwen/Qwen3-8B", "Qwen/Qwen3.55-X", ""):
        with pytest.raises(BadInputError, match=r"--preset qwen2\.5-vl\|qwen3-vl\|qwen3\.5|--model is required"):
            vllm_command(ServeOptions(model=model))


@pytest.mark.unit
def test_an_explicit_preset_wins_over_the_model_id() -> None:
    cmd = vllm_command(ServeOptions(model="/models/my-finetune", preset="qwen3.5"))
    assert _value(cmd, "--reasoning-parser") == "qwen3"
    cmd = vllm_command(ServeOptions(model="Qwen/Qwen3.5-9B", preset="qwen2.5-vl"))
    assert "--reasoning-parser" not in cmd


@pytest.mark.unit
def test_qwen25_vl_limits_pixels_with_max_pixels_and_parses_hermes_tool_calls() -> None:
    cmd = vllm_command(ServeOptions(model="Qwen/Qwen2.5-VL-7B-Instruct", max_pixels=1_000_000))
    assert json.loads(_value(cmd, "--mm-processor-kwargs")) == {"max_pixels": 1_000_000}
    assert _value(cmd, "--tool-call-parser") == "hermes"
    assert _value(cmd, "--max-model-len") == "65536"
    assert "--mm-encoder-tp-mode" not in cmd and "--reasoning-parser" not in cmd


@pytest.mark.unit
def test_qwen3_vl_limits_pixels_through_size_with_a_data_parallel_encoder() -> None:
    cmd = vllm_command(ServeOptions(model="Qwen/Qwen3-VL-8B-Instruct", gpus=4, max_pixels=2_000_000))
    kwargs = json.loads(_value(cmd, "--mm-processor-kwargs"))
    assert kwargs == {"size": {"longest_edge": 2_000_000, "shortest_edge": MIN_IMAGE_PIXELS}}
    assert "max_pixels" not in json.dumps(kwargs)  # the Qwen3-VL processor ignores it
    assert json.loads(_value(cmd, "--limit-mm-per-prompt")) == {"image": 16, "video": 0}
    assert _value(cmd, "--mm-encoder-tp-mode") == "data"
    assert "--async-scheduling" in cmd
    assert "--reasoning-parser" not in cmd
    thinking = vllm_command(ServeOptions(model="Qwen/Qwen3-VL-8B-Thinking"))
    assert _value(thinking, "--reasoning-parser") == "qwen3"


@pytest.mark.unit
def test_qwen35_thinks_calls_tools_in_xml_and_fits_its_context_to_the_gpu() -> None:
    cmd = vllm_command(ServeOptions(model="Qwen/Qwen3.6-35B-A3B"))
    assert _value(cmd, "--reasoning-parser") == "qwen3"
    assert _value(cmd, "--tool-call-parser") == "qwen3_coder"
    assert _value(cmd, "--max-model-len") == "auto"
    assert "--enable-prefix-caching" in cmd
    assert "--mamba-cache-mode" not in cmd  # deprecated and without effect in vLLM 0.33.0
    assert "size" in json.loads(_value(cmd, "--mm-processor-kwargs"))
    assert (
        _value(vllm_command(ServeOptions(model="Qwen/Qwen3.5-9B", max_model_len=32768)), "--max-model-len") == "32768"
    )


@pytest.mark.unit
def test_bad_options_are_refused() -> None:
    with pytest.raises(BadInputError, match="--gpus"):
        ServeOptions(model="Qwen/Qwen3.5-9B", gpus=0)
    with pytest.raises(BadInputError, match="--max-model-len"):
        ServeOptions(model="Qwen/Qwen3.5-9B", max_model_len=0)
    with pytest.raises(BadInputError, match="--max-pixels"):
        ServeOptions(model="Qwen/Qwen3.5-9B", max_pixels=100)
    with pytest.raises(BadInputError, match="--preset"):
        ServeOptions(model="Qwen/Qwen3.5-9B", preset="llama")  # type: ignore[arg-type]


@pytest.mark.unit
def test_whisper_serves_speech_with_only_the_flags_every_server_takes() -> None:
    cmd = vllm_command(ServeOptions(model="openai/whisper-large-v3-turbo", port=8001, gpu_memory_utilization=0.1))
    assert cmd[:3] == ["vllm", "serve", "openai/whisper-large-v3-turbo"] and _value(cmd, "--port") == "8001"
    assert _value(cmd, "--gpu-memory-utilization") == "0.10" and _value(cmd, "--tensor-parallel-size") == "1"
    for absent in ("--limit-mm-per-prompt", "--enable-prefix-caching", "--tool-call-parser", "--max-model-len"):
        assert absent not in cmd
    named = vllm_command(ServeOptions(model="/m/w", preset="whisper", served_name="whisper", max_model_len=448))
    assert _value(named, "--served-model-name") == "whisper" and _value(named, "--max-model-len") == "448"


# vLLM's own parser. vLLM is a large optional install (`make conformance` puts it in .venv-vllm); it is
# never part of `make test`'s environment.
needs_vllm = pytest.mark.skipif(
    importlib.util.find_spec("vllm") is None,
    reason="vllm is not installed here; `make conformance` runs these checks in .venv-vllm with vLLM 0.33.0",
)

CASES: list[tuple[str, dict[str, Any]]] = [
    ("Qwen/Qwen2.5-VL-7B-Instruct", {}),
    ("Qwen/Qwen3-VL-8B-Instruct", {"gpus": 2}),
    ("Qwen/Qwen3-VL-8B-Thinking", {}),
    ("Qwen/Qwen3.5-35B-A3B", {"gpus": 4, "served_name": "qwen35"}),
    ("Qwen/Qwen3.6-27B", {"max_model_len": 131072}),
]


def _vllm(module: str) -> Any:
    """A vLLM module, imported by name: vLLM is not installed where mypy runs."""
    return importlib.import_module(module)


@pytest.fixture
def vllm_parser(monkeypatch: pytest.MonkeyPatch) -> Iterator[argparse.ArgumentParser]:
    # Building the parser resolves a platform; on a machine without a GPU vLLM needs to be told it is a CPU
    # one. The parser's definitions do not depend on the platform.
    import os

    monkeypatch.setenv("VLLM_TARGET_DEVICE", os.environ.get("VLLM_TARGET_DEVICE", "cpu"))
    cli_args = _vllm("vllm.entrypoints.common.cli_args")
    argparse_utils = _vllm("vllm.utils.argparse_utils")
    yield cli_args.make_arg_parser(argparse_utils.FlexibleArgumentParser(prog="vllm serve"))


@pytest.mark.e2e
@needs_vllm
def test_vllm_is_the_version_the_presets_were_read_from() -> None:
    version = _vllm("vllm").__version__
    assert version == "0.33.0", f"presets were read from vLLM 0.33.0's source, found {version}"


@pytest.mark.e2e
@needs_vllm
@pytest.mark.parametrize(("model", "options"), CASES, ids=[m for m, _ in CASES])
def test_vllms_parser_accepts_every_preset_with_our_meaning(
    vllm_parser: argparse.ArgumentParser, model: str, options: dict[str, Any]
) -> None:
    cli_args = _vllm("vllm.entrypoints.common.cli_args")
    engine_args = _vllm("vllm.engine.arg_utils")
    opts = ServeOptions(model=model, **options)
    cmd = vllm_command(opts)
    assert cmd[:2] == ["vllm", "serve"]
    args = vllm_parser.parse_args(cmd[2:])  # an unknown flag or a bad value exits here with vLLM's message
    args.model = args.model_tag  # what `vllm serve` does with its positional model
    cli_args.validate_parsed_serve_args(args)
    engine = engine_args.AsyncEngineArgs.from_cli_args(args)
    args.structured_outputs_config = engine.create_structured_outputs_config()
    cli_args.validate_api_server_args(args)  # the tool and reasoning parsers are registered names

    # No flag we pass is one vLLM says it ignores.
    actions = vllm_parser._option_string_actions
    for flag in (a for a in cmd if a.startswith("--")):
        action = actions[flag]
        assert "deprecated" not in (action.help or "").lower(), f"{flag}: {action.help}"
        assert not getattr(action, "deprecated", False), f"{flag} is deprecated in vLLM"

    # Each value arrives where we meant it, in the type vLLM uses.
    assert engine.model == model
    assert engine.tensor_parallel_size == opts.gpus
    assert engine.limit_mm_per_prompt == {"image": opts.max_images, "video": 0}
    assert engine.enable_prefix_caching is True
    assert args.enable_prompt_tokens_details is True
    assert engine.mm_processor_cache_gb > 0  # images seen before are not processed again (vLLM's default cache kept)
    assert engine.gpu_memory_utilization == pytest.approx(opts.gpu_memory_utilization)
    assert engine.served_model_name == ([opts.served_name] if opts.served_name else None)
    preset = detect_preset(model)
    expected_len = {"qwen2.5-vl": 65536, "qwen3-vl": 65536, "qwen3.5": -1}[preset]  # -1: vLLM's "auto"
    assert engine.max_model_len == (opts.max_model_len or expected_len)
    assert args.enable_auto_tool_choice is True
    if preset == "qwen2.5-vl":
        assert engine.mm_processor_kwargs == {"max_pixels": opts.max_pixels}
        assert args.tool_call_parser == "hermes"
        assert not engine.reasoning_parser
    else:
        assert engine.mm_processor_kwargs == {
            "size": {"longest_edge": opts.max_pixels, "shortest_edge": MIN_IMAGE_PIXELS}
        }
        assert engine.mm_encoder_tp_mode == "data"
    if preset == "qwen3-vl":
        assert engine.async_scheduling is True
        assert args.tool_call_parser == "hermes"
        assert engine.reasoning_parser == ("qwen3" if "Thinking" in model else "")
    if preset == "qwen3.5":
        assert args.tool_call_parser == "qwen3_coder"
        assert engine.reasoning_parser == "qwen3"
        assert args.structured_outputs_config.reasoning_parser == "qwen3"


@pytest.mark.e2e
@needs_vllm
def test_vllms_parser_accepts_the_whisper_preset(vllm_parser: argparse.ArgumentParser) -> None:
    cli_args = _vllm("vllm.entrypoints.common.cli_args")
    engine_args = _vllm("vllm.engine.arg_utils")
    opts = ServeOptions(model="openai/whisper-large-v3-turbo", port=8001, gpu_memory_utilization=0.1, served_name="w")
    cmd = vllm_command(opts)
    args = vllm_parser.parse_args(cmd[2:])
    args.model = args.model_tag
    cli_args.validate_parsed_serve_args(args)
    engine = engine_args.AsyncEngineArgs.from_cli_args(args)
    cli_args.validate_api_server_args(args)
    actions = vllm_parser._option_string_actions
    for flag in (a for a in cmd if a.startswith("--")):
        assert not getattr(actions[flag], "deprecated", False), f"{flag} is deprecated in vLLM"
    assert engine.model == opts.model and engine.tensor_parallel_size == 1 and args.port == 8001
    assert engine.gpu_memory_utilization == pytest.approx(0.1) and engine.served_model_name == ["w"]


@pytest.mark.e2e
@needs_vllm
def test_vllms_multimodal_config_takes_the_preset_values(vllm_parser: argparse.ArgumentParser) -> None:
    multimodal = _vllm("vllm.config.multimodal")
    for model, options in CASES:
        args = vllm_parser.parse_args(vllm_command(ServeOptions(model=model, **options))[2:])
        config = multimodal.MultiModalConfig(
            limit_per_prompt=args.limit_mm_per_prompt,
            mm_processor_kwargs=args.mm_processor_kwargs,
            mm_encoder_tp_mode=args.mm_encoder_tp_mode,
        )
        assert config.get_limit_per_prompt("video") == 0
        assert config.get_limit_per_prompt("image") == 16


@pytest.mark.e2e
@needs_vllm
def test_vllms_parser_refuses_a_bad_value(vllm_parser: argparse.ArgumentParser) -> None:
    # The check above can fail: vLLM's parser does refuse a value outside a flag's choices.
    with pytest.raises(SystemExit):
        vllm_parser.parse_args(["Qwen/Qwen3-VL-8B-Instruct", "--mm-encoder-tp-mode", "pipeline"])


@pytest.mark.unit
def test_every_preset_has_a_documented_builder() -> None:
    from videoatlas.llm.serve import PRESET_BUILDERS

    assert set(PRESET_BUILDERS) == set(PRESETS)
    for builder in PRESET_BUILDERS.values():
        doc = builder.__doc__ or ""
        assert doc.count("``--") >= 2, f"{builder.__name__} does not give the reasons for its flags"
