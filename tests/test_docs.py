"""The README and the manual in docs/ hold true: their links resolve, the commands and flags they show exist, and
the Python examples marked runnable run as written.

A Python block is marked runnable by the line ``<!-- runs -->`` (or ``<!-- runs expect="TEXT" -->``: TEXT must
then be in what it prints) just before its opening fence. It runs as a script in a fresh folder with a data
directory of its own; the examples make their own test videos and answer with the stand-in (``standin=True``).
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

from videoatlas.agents.registry import agent_names, settings_model
from videoatlas.cli.main import build_parser

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
PAGES = (README, *sorted((ROOT / "docs").glob("*.md")))
SHELL = {"bash", "sh", "shell", "console", ""}
"""Code blocks whose lines are read as command lines (a block without a language is read only where it names
the command)."""
RUNS = re.compile(r'^<!-- runs(?: expect="([^"]*)")? -->$')
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
SEPARATORS = {"|", "||", "&&", ";", "&", ">", ">>", "2>", "2>&1"}


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    language: str
    text: str
    runs: bool
    expect: str | None


def rel(page: Path) -> str:
    return str(page.relative_to(ROOT))


@cache
def blocks(page: Path) -> tuple[Block, ...]:
    """The fenced code blocks of a page, with the runnable marker on the line before each."""
    found: list[Block] = []
    lines = page.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        if not lines[i].startswith("```"):
            i += 1
            continue
        start, language = i, lines[i][3:].strip()
        i += 1
        while i < len(lines) and not lines[i].startswith("```"):
            i += 1
        assert i < len(lines), f"{rel(page)}:{start + 1}: a code block is never closed"
        marker = RUNS.match(lines[start - 1].strip()) if start else None
        text = "\n".join(lines[start + 1 : i])
        found.append(Block(page, start + 1, language, text, marker is not None, marker and marker.group(1)))
        i += 1
    return tuple(found)


@cache
def prose(page: Path) -> str:
    """A page without its code blocks."""
    return re.sub(r"^```.*?^```", "", page.read_text(encoding="utf-8"), flags=re.M | re.S)


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading."""
    text = heading.strip().lower().replace("`", "")
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


@cache
def anchors(page: Path) -> frozenset[str]:
    """The anchors of a page's headings (a repeated heading gets ``-1``, ``-2``... as on GitHub)."""
    counts: dict[str, int] = {}
    found: set[str] = set()
    for line in prose(page).splitlines():
        if match := re.match(r"#{1,6} (.+)", line):
            base = slug(match.group(1))
            n = counts.get(base, 0)
            found.add(base if n == 0 else f"{base}-{n}")
            counts[base] = n + 1
    return frozenset(found)


def links(page: Path) -> Iterator[tuple[str, Path | None, str]]:
    """Every relative link of a page: as written, the file it names (None: this page), and its anchor."""
    text = re.sub(r"`[^`\n]*`", "", prose(page))
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):
            continue  # http(s):, mailto:
        path, _, anchor = target.partition("#")
        yield target, (page.parent / path).resolve() if path else None, anchor


def test_every_docs_page_is_linked_from_the_readme_and_every_link_there_exists() -> None:
    linked = {path for _, path, _ in links(README) if path is not None}
    for page in PAGES[1:]:
        assert page.resolve() in linked, f"README.md links no {rel(page)}"
    for target, path, _ in links(README):
        if path is not None and target.startswith("docs/"):
            assert path.is_file(), f"README.md links {target}, which does not exist"


@pytest.mark.parametrize("page", PAGES, ids=rel)
def test_every_relative_link_resolves(page: Path) -> None:
    for target, path, anchor in links(page):
        file = path or page
        assert file.exists(), f"{rel(page)}: the link {target} names no file"
        if anchor and file.suffix == ".md":
            assert anchor in anchors(file), f"{rel(page)}: the link {target}: {rel(file)} has no heading #{anchor}"


SOURCE_ROOTS = ("src", "tests", "benchmarks", "conformance")


@pytest.mark.unit
@pytest.mark.parametrize("page", PAGES, ids=rel)
def test_every_source_path_named_exists(page: Path) -> None:
    """A path in code quotes that starts in the source tree (``runs/execute.py``, ``tests/conftest.py``) exists:
    from the repository's root, from ``src/videoatlas/``, or (a file every agent has) from an agent's package."""
    package = ROOT / "src" / "videoatlas"
    units = {p.name for p in package.iterdir() if p.is_dir()}
    bases = (ROOT, package, *(p for p in (package / "agents").iterdir() if p.is_dir()))
    for span in re.findall(r"`([^`\n]+)`", prose(page)):
        if not re.fullmatch(r"[\w.-]+(/[\w.*-]+)+/?", span) or span.split("/")[0] not in {*SOURCE_ROOTS, *units}:
            continue
        found = [base / span for base in bases]
        assert any(p.exists() or list(p.parent.glob(p.name)) for p in found), f"{rel(page)}: `{span}` does not exist"


# -- commands and flags --------------------------------------------------------------------------------------


@cache
def parser() -> argparse.ArgumentParser:
    return build_parser(agent_settings=True)


def subcommands(p: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def command_lines(page: Path) -> Iterator[tuple[str, list[str]]]:
    """Where each command line is (page:line) and its words: code-block lines (joined over a trailing
    backslash) and inline code spans of the prose that name ``videoatlas``."""
    for block in blocks(page):
        if block.language not in SHELL:
            continue
        logical: list[tuple[int, str]] = []
        for n, line in enumerate(block.text.splitlines(), start=block.line + 1):
            if logical and logical[-1][1].endswith("\\"):
                logical[-1] = (logical[-1][0], logical[-1][1][:-1] + " " + line)
            else:
                logical.append((n, line))
        for n, line in logical:
            if not re.search(r"(^|[\s/])videoatlas\s", line):
                continue
            where = f"{rel(page)}:{n}"
            try:
                words = shlex.split(line, comments=True)
            except ValueError as exc:
                if block.language:
                    raise AssertionError(f"{where}: not a shell line ({exc})") from None
                words = line.split()  # a diagram, not a shell line
            yield where, words
    for span in re.findall(r"`([^`]+)`", prose(page)):
        if re.search(r"(^|\s)videoatlas\s", span):
            try:
                words = shlex.split(span)
            except ValueError:
                words = span.split()
            yield f"{rel(page)}: `{span}`", words


def invocations(words: list[str]) -> Iterator[tuple[list[str], list[str]]]:
    """Each ``videoatlas ...`` in a command line: its command words and the words after them, to the end of
    the shell command (a ``|`` inside a synopsis's brackets is an alternative, not a pipe)."""
    for i, word in enumerate(words):
        if word != "videoatlas" and not word.endswith("bin/videoatlas"):
            continue
        if i > 0 and words[i - 1].startswith("-"):
            continue  # another program's option value (``python -m lmms_eval --model videoatlas``), not a command
        rest, depth, args = words[i + 1 :], 0, []
        for token in rest:
            if depth <= 0 and token in SEPARATORS:
                break
            depth += token.count("[") - token.count("]")
            args.append(token)
        if args and args[0] in ("...", "COMMAND"):
            continue  # "videoatlas ...": the command in general
        command: list[str] = []
        if args and not args[0].startswith("-"):
            command.append(args.pop(0))
            if command[0] == "eval" and args and not args[0].startswith("-"):
                command.append(args.pop(0))
        yield command, args


def flags(args: list[str]) -> Iterator[str]:
    for token in args:
        word = token.strip("[](),").split("=", 1)[0]
        if re.fullmatch(r"--?[A-Za-z][\w-]*", word):
            yield word


def agent_of(args: list[str]) -> str | None:
    """The one agent a command line names (the default when it names none), or None for a list or a placeholder."""
    words = [a.strip("[]") for a in args]
    if "--agent" not in words:
        return "video-rlm"
    i = words.index("--agent")
    name = words[i + 1] if i + 1 < len(words) else ""
    return name if name in agent_names() else None


def check_invocation(where: str, command: list[str], args: list[str]) -> None:
    top = parser()
    targets: list[argparse.ArgumentParser] = []
    if not command:
        targets = [top]
    else:
        for first in command[0].split("|"):
            assert first in subcommands(top), f"{where}: videoatlas {first} is not a command"
            sub = subcommands(top)[first]
            if len(command) == 1:
                targets.append(sub)
                continue
            for second in command[1].split("|"):
                assert second in subcommands(sub), f"{where}: videoatlas {first} {second} is not a command"
                targets.append(subcommands(sub)[second])
    agent = agent_of(args)
    for target in targets:
        for flag in flags(args):
            action = target._option_string_actions.get(flag)
            assert action is not None, f"{where}: {target.prog} takes no {flag}"
            if action.dest.startswith("setting__") and agent is not None:
                field = action.dest.removeprefix("setting__")
                assert field in settings_model(agent).model_fields, f"{where}: {flag} is not an option of {agent}"


@pytest.mark.unit
@pytest.mark.parametrize("page", PAGES, ids=rel)
def test_every_command_and_flag_shown_is_one_the_parser_takes(page: Path) -> None:
    for where, words in command_lines(page):
        for command, args in invocations(words):
            check_invocation(where, command, args)


@pytest.mark.unit
def test_the_checker_refuses_what_the_parser_refuses() -> None:
    """The command check itself: a made-up command, flag or another agent's option is caught."""
    cases = {
        "videoatlas summon VIDEO": "is not a command",
        "videoatlas eval judge --dataset x": "is not a command",
        "videoatlas ask VIDEO -q Q --colour red": "takes no --colour",
        "videoatlas ask VIDEO -q Q --agent uniform --workers 2": "not an option of uniform",
        "videoatlas ask VIDEO -q Q --alpha 2": "not an option of video-rlm",
        "videoatlas probe VIDEO [--json] [--fast]": "takes no --fast",
        "python -m lmms_eval --model videoatlas --tasks t && videoatlas probe V --fast": "takes no --fast",
    }
    for line, message in cases.items():
        with pytest.raises(AssertionError, match=message):
            for command, args in invocations(shlex.split(line)):
                check_invocation("case", command, args)
    for line in (
        "videoatlas ask V -q Q --agent videoseek [--alpha 2] | tee out",
        "videoatlas eval run|report --json",
        "python -m lmms_eval --model videoatlas --model_args agent=eea --tasks videoatlas_jsonl",
    ):
        for command, args in invocations(shlex.split(line)):
            check_invocation("case", command, args)


@pytest.mark.unit
def test_every_agent_and_command_is_documented() -> None:
    """Each command of the parser appears in the synopsis, and each agent has its own section."""
    synopsis = (ROOT / "docs" / "commands.md").read_text(encoding="utf-8")
    for name, sub in subcommands(parser()).items():
        if name == "sim-server":
            continue  # the alias, named in prose
        children = subcommands(sub)
        for full in [f"{name} {child}" for child in children] or [name]:
            assert f"videoatlas {full}" in synopsis, f"docs/commands.md has no synopsis of videoatlas {full}"
    agents_page = (ROOT / "docs" / "agents.md").read_text(encoding="utf-8")
    for agent in agent_names():
        assert f"--agent {agent}" in agents_page or f"`--agent {agent}`" in synopsis, agent


# -- runnable examples ---------------------------------------------------------------------------------------


def runnable() -> list[Block]:
    return [b for page in PAGES for b in blocks(page) if b.runs]


@pytest.mark.unit
def test_runs_markers_mark_python_blocks_and_the_readme_examples_run() -> None:
    for page in PAGES:
        text = page.read_text(encoding="utf-8").splitlines()
        marked = {b.line - 1 for b in blocks(page) if b.runs}
        for n, line in enumerate(text, start=1):
            if line.strip().startswith("<!-- runs"):
                assert n in marked, f"{rel(page)}:{n}: a runs marker not just before a code block: {line!r}"
    for block in runnable():
        assert block.language == "python", f"{rel(block.page)}:{block.line}: only Python blocks run"
    readme = [b for b in blocks(README) if b.language == "python"]
    assert readme and all(b.runs for b in readme), "every Python example in the README is marked runnable"


@pytest.mark.e2e
@pytest.mark.slow
@pytest.mark.parametrize("block", runnable(), ids=lambda b: f"{rel(b.page)}:{b.line}")
def test_runnable_example_runs_as_written(block: Block, tmp_path: Path) -> None:
    script = tmp_path / "example.py"
    script.write_text(block.text + "\n", encoding="utf-8")
    env = {**os.environ, "VIDEOATLAS_HOME": str(tmp_path / "home")}
    for name in ("VIDEOATLAS_BASE_URL", "VIDEOATLAS_MODEL", "VIDEOATLAS_API_KEY", "VIDEOATLAS_DB"):
        env.pop(name, None)
    done = subprocess.run(
        [sys.executable, script.name], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    where = f"{rel(block.page)}:{block.line}"
    assert done.returncode == 0, f"{where} failed:\n{done.stderr[-3000:]}"
    if block.expect is not None:
        assert block.expect in done.stdout, f"{where} printed no {block.expect!r}:\n{done.stdout[-3000:]}"
