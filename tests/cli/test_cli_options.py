"""Each command-line option is declared once (``cli/options.py`` holds the shared ones), and still taken."""

from __future__ import annotations

import argparse
import ast
import collections
from pathlib import Path

import pytest

import videoatlas.cli
from videoatlas.cli.main import build_parser, subcommand_parsers

CLI = Path(videoatlas.cli.__file__).parent

ONE_NAME_TWO_OPTIONS = {
    "--question": "ask: the question's text (-q); demo: which of the demo video's questions",
    "--no-subtitles": "synth: write no .srt file; eval run: ignore the benchmark's subtitles",
    "--max-model-len": "standin: the context length it enforces; serve: vLLM's, which may be auto",
    "--max-images": "serve: the image limit vLLM is started with; ask, eval run: the limit of the endpoint named",
    "--root": "eval: where a benchmark's files are; mcp: a folder the MCP tools may open files under (repeatable)",
}
"""Flags that name different options in different commands: each is declared once per meaning."""

DB_COMMANDS = {
    "ask": ["ask", "video.mp4", "-q", "why?"],
    "runs": ["runs"],
    "trace": ["trace", "RUN"],
    "resume": ["resume", "RUN"],
    "report": ["report", "RUN", "-o", "run.html"],
    "ui": ["ui"],
    "eval run": ["eval", "run", "--dataset", "synthetic", "--root", "videos", "--out", "results"],
    "mcp": ["mcp", "--root", "videos"],
}
"""Every command that reads or writes the run store, with the least command line it takes."""


def _flag_declarations() -> dict[str, list[str]]:
    """Each flag literal passed to ``add_argument`` anywhere in ``cli/``, and where (file:line)."""
    found: dict[str, list[str]] = collections.defaultdict(list)
    for path in sorted(CLI.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument":
                for arg in node.args:
                    if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and arg.value.startswith("-"):
                        found[arg.value].append(f"{path.name}:{node.lineno}")
    return found


def test_each_option_is_declared_in_one_place() -> None:
    declared = _flag_declarations()
    assert {"--db", "--json", "--k", "--cell-px", "--base-url", "--standin", "--agent"} <= set(declared)
    twice = {flag: where for flag, where in declared.items() if len(where) > 1 and flag not in ONE_NAME_TWO_OPTIONS}
    assert not twice, f"declare these once, in cli/options.py: {twice}"
    for flag in ONE_NAME_TWO_OPTIONS:
        assert len(declared[flag]) == 2, (flag, declared[flag])


def test_the_shared_options_are_declared_by_the_options_module() -> None:
    declared = _flag_declarations()
    for flag in ("--db", "--json", "--quiet", "--k", "--cell-px", "--subtitles", "--agent", "--model", "--port"):
        [where] = declared[flag]
        assert where.startswith("options.py:"), (flag, where)


def _commands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser(agent_settings=False)
    return {command.prog.removeprefix("videoatlas "): command for command in subcommand_parsers(parser)}


def test_the_commands_that_use_the_run_store_and_no_others_take_db() -> None:
    with_db = {name for name, p in _commands().items() if any("--db" in a.option_strings for a in p._actions)}
    assert with_db == set(DB_COMMANDS)


@pytest.mark.parametrize("command", sorted(DB_COMMANDS))
def test_db_is_accepted_and_defaults_to_none(command: str) -> None:
    words = DB_COMMANDS[command]
    parser = build_parser(agent_settings=False)
    assert parser.parse_args(words).db is None  # None: the persistence layer picks (VIDEOATLAS_DB, then the default)
    assert parser.parse_args([*words, "--db", "sqlite:///runs.db"]).db == "sqlite:///runs.db"


def test_a_shared_option_takes_the_same_values_in_every_command() -> None:
    for flag in ("--db", "--json", "--quiet", "--k", "--cell-px", "--subtitle-offset"):
        kinds = {
            (type(a).__name__, a.type, a.default, a.dest)
            for p in _commands().values()
            for a in p._actions
            if flag in a.option_strings
        }
        assert len(kinds) == 1, (flag, kinds)


def test_a_switch_setting_takes_a_bare_flag_and_one_on_by_default_a_no_flag() -> None:
    parser = build_parser()
    ask = ["ask", "video.mp4", "-q", "why?"]
    assert vars(parser.parse_args([*ask, "--agent", "videoarm", "--no-audio"]))["setting__no_audio"] == "true"
    assert vars(parser.parse_args([*ask, "--agent", "eea", "--no-uarf"]))["setting__uarf"] == "false"
    assert vars(parser.parse_args([*ask, "--agent", "eea", "--uarf", "false"]))["setting__uarf"] == "false"
    assert vars(parser.parse_args([*ask, "--agent", "eea", "--query-update"]))["setting__query_update"] == "true"
    assert vars(parser.parse_args([*ask, "--agent", "eea", "--no-query-update"]))["setting__query_update"] == "false"
    assert vars(parser.parse_args(ask))["setting__uarf"] is None  # not given: the agent's default


def test_a_flag_two_agents_share_says_what_it_means_for_each(monkeypatch: pytest.MonkeyPatch) -> None:
    from typing import Literal

    from pydantic import Field

    from videoatlas.agents import registry
    from videoatlas.cli import options
    from videoatlas.runtime.config import AgentSettings

    class One(AgentSettings):
        anchors: int = Field(default=3, description="Anchors per expansion.")
        depth: int = Field(default=1, description="How deep.")

    class Two(AgentSettings):
        anchors: Literal["off", "marks"] = Field(default="off", description="Marks on the grid.")
        depth: int = Field(default=1, description="How deep.")

    monkeypatch.setattr(options, "registered_agents", lambda: ["one", "two"])
    monkeypatch.setattr(registry, "settings_model", {"one": One, "two": Two}.__getitem__)
    parser = argparse.ArgumentParser()
    options.add_agent_options(parser)
    [anchors] = [a for a in parser._actions if "--anchors" in a.option_strings]
    assert anchors.help == "one: Anchors per expansion (default 3); two: Marks on the grid (default off)"
    assert anchors.metavar == "N|off|marks"
    [depth] = [a for a in parser._actions if "--depth" in a.option_strings]
    assert depth.help == "How deep (default 1) [also with --agent two]"  # one meaning: said once, with who has it
    assert parser.parse_args(["--anchors", "marks"]).setting__anchors == "marks"


@pytest.mark.unit
def test_the_reasoning_option_offers_the_stand_ins_modes() -> None:
    from videoatlas.cli.options import REASONING_MODES
    from videoatlas_standin.thinking import MODES

    assert REASONING_MODES == MODES
