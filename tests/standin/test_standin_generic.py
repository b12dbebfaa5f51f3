"""The stand-in's policy is generic: it knows no agent, and its thresholds are calibrated on plain strings.

The guard is generated from the registered agents: every word of their prompt templates and every
field name, enum member and constant (tool and action names) of every reply schema they register. No
word list and no regular expression of the policy (``policy.py`` and its schema walker) may hold any
of them, JSON Schema's own type names aside; its one e5 anchor phrase is named as such (``*_ANCHOR``)
and stays short. No module of the
stand-in package names an agent or imports the agents.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import videoatlas
import videoatlas_standin
from videoatlas_standin import policy
from videoatlas_standin.meaning import phrase, similarity

PACKAGE = Path(videoatlas_standin.__file__).parent
POLICY_MODULES = (PACKAGE / "policy.py", PACKAGE / "schema.py")
"""The policy and its one helper (schema walking): the modules whose word lists and patterns are guarded."""
AGENT_NAMES = re.compile(r"\b(video[_-]?rlm|videoseek|videoarm|eea|uniform)\b", re.IGNORECASE)
_LETTERS = re.compile(r"[A-Za-z]+")
JSON_SCHEMA_TYPES = {"string", "number", "integer", "boolean", "object", "array", "null"}
"""JSON Schema's own type names: the protocol's words, which a schema walker must spell (an agent's prompt may too)."""


def _words(text: str) -> set[str]:
    """Case-folded runs of three letters or more."""
    return {w.casefold() for w in _LETTERS.findall(text) if len(w) >= 3}


def _schema_names(node: Any) -> Iterator[str]:
    """Every property name, enum member and const of a JSON schema."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "properties" and isinstance(value, dict):
                yield from map(str, value)
            elif key == "enum" and isinstance(value, list):
                yield from (str(v) for v in value)
            elif key == "const":
                yield str(value)
            yield from _schema_names(value)
    elif isinstance(node, list):
        for value in node:
            yield from _schema_names(value)


@pytest.fixture(scope="module")
def agent_words() -> set[str]:
    """The words of every registered agent's prompt templates and reply schemas."""
    from videoatlas.agents import registry
    from videoatlas.state.schemas import registered_schemas

    root = Path(videoatlas.__file__).parent
    agents = registry.all_agents()  # imports each agent: its schemas register themselves
    folders = [root / "prompts", *(root / "agents" / p.split(".")[-1] / "prompts" for p in registry.PACKAGES.values())]
    words: set[str] = set()
    for folder in folders:
        for path in folder.rglob("*"):
            if path.is_file() and path.suffix not in (".py", ".pyc"):
                words |= _words(path.read_text(encoding="utf-8"))
    for _, model in registered_schemas():
        for name in _schema_names(model.model_json_schema()):
            words |= _words(name)
    assert len(agents) == len(registry.PACKAGES) and {"question", "answer"} <= words  # the collection saw them
    return words


def _guarded_literals(path: Path) -> tuple[set[str], list[str]]:
    """The words of the module's word lists and patterns, and its anchor phrases.

    Word lists: sets, lists and tuples of string literals, and a string literal split into words.
    Patterns: the literal first argument of any ``re`` function (its runs of letters).
    """
    tree = ast.parse(path.read_text(encoding="utf-8"))
    words: set[str] = set()
    anchors: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Set | ast.List | ast.Tuple):
            texts = [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
            if texts and len(texts) == len(node.elts):
                words |= {w for t in texts for w in _words(t)}
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            target = node.func.value
            if node.func.attr == "split" and isinstance(target, ast.Constant) and isinstance(target.value, str):
                words |= _words(target.value)
            if isinstance(target, ast.Name) and target.id == "re" and node.args:
                first = node.args[0]
                if isinstance(first, ast.Constant) and isinstance(first.value, str):
                    words |= _words(re.sub(r"\\.", " ", first.value))  # escapes (\b, \d) are no letters
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            names = [t.id for t in node.targets if isinstance(t, ast.Name)]
            if any(n.endswith("_ANCHOR") for n in names):
                anchors.append(str(node.value.value))
    return words, anchors


@pytest.mark.unit
@pytest.mark.parametrize("path", POLICY_MODULES, ids=lambda p: p.name)
def test_the_policys_word_lists_and_patterns_hold_no_word_of_any_agent(path: Path, agent_words: set[str]) -> None:
    words, anchors = _guarded_literals(path)
    assert (words - JSON_SCHEMA_TYPES) & agent_words == set()
    assert len(anchors) <= 1 and all(len(a.split()) <= 3 for a in anchors)  # one short anchor phrase, named


@pytest.mark.unit
def test_the_guard_sees_a_word_list_a_split_string_and_a_pattern(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        'import re\nA = ("scratchpad", "x")\nB = "expand zoom".split()\nC = re.compile(r"\\bfinished\\b")\n'
        'ANSWER_ANCHOR = "the answer"\n',
        encoding="utf-8",
    )
    assert _guarded_literals(module) == ({"scratchpad", "expand", "zoom", "finished"}, ["the answer"])


@pytest.mark.unit
def test_no_module_of_the_stand_in_names_or_imports_an_agent() -> None:
    for path in sorted(PACKAGE.glob("*.py")):
        text = path.read_text(encoding="utf-8")
        assert AGENT_NAMES.search(text) is None, path.name
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ImportFrom):
                assert not (node.module or "").startswith("videoatlas.agents"), path.name
            elif isinstance(node, ast.Import):
                assert not any(a.name.startswith("videoatlas.agents") for a in node.names), path.name


# The thresholds, calibrated on literal strings: each holds where the doc says, and fails where it should.


@pytest.mark.unit
@pytest.mark.parametrize(
    ("question", "near", "far"),
    [
        ("Which price is posted at the HARBOUR kiosk?", "HARBOUR KIOSK 4.50", "MOUNTAIN CAFE 3.20"),
        ("Which track does the night train to York leave from?", "NIGHT TRAIN YORK PLATFORM 4", "BUS STOP 12"),
        ("Is the word MANGO visible?", "MANGO", "PAPAYA"),
    ],
)
def test_close_to_the_question(question: str, near: str, far: str) -> None:
    fit = similarity([question], [near, far])[0]
    assert fit[0] >= policy.CLOSE > fit[1]


@pytest.mark.unit
@pytest.mark.parametrize(
    ("field", "label", "other"),
    [
        ("room_number", "ROOM", "GATE"),
        ("plate", "PLATE", "ROOM"),
        ("departure_time", "DEPARTS", "GATE"),
        ("What is the plate number of the car in this photo?", "PLATE", "GATE"),
    ],
)
def test_a_label_fits_what_asks_for_it(field: str, label: str, other: str) -> None:
    fit = similarity([phrase(field)], [label, other])[0]
    assert fit[0] >= policy.FITS > fit[1]


@pytest.mark.unit
def test_a_destination_is_not_a_departure() -> None:
    assert similarity([phrase("destination")], ["DEPARTS"])[0][0] < policy.FITS


@pytest.mark.unit
def test_the_answer_anchor_finds_the_answer_field_and_no_other() -> None:
    names = ["answer", "final_answer", "reply", "explanation", "reason", "question", "summary", "description"]
    fit = similarity([policy.ANSWER_ANCHOR], [phrase(n) for n in names])[0]
    assert [n for n, f in zip(names, fit, strict=True) if f >= policy.ANSWER_FITS] == [
        "answer",
        "final_answer",
        "reply",
    ]
