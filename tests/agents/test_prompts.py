"""Prompt sets: loaded by name or directory, checked at load time, hashed on every call."""

from __future__ import annotations

import shutil
from importlib import resources
from pathlib import Path

import pytest

from prompt_helpers import copy_default
from videoatlas.agents.relation import Anchor, Relation, relation_text
from videoatlas.agents.uniform.agent import AGENT as UNIFORM
from videoatlas.agents.video_rlm.agent import AGENT
from videoatlas.agents.video_rlm.relation import task_sentence
from videoatlas.errors import BadInputError
from videoatlas.prompts import SHARED_SPEC, builtin_sets

pytestmark = pytest.mark.unit


def test_default_set_loads_and_is_listed() -> None:
    ps = AGENT.load_prompts("default")
    assert "default" in builtin_sets(resources.files("videoatlas.agents.video_rlm").joinpath("prompts"))
    assert ps["probe.user"].variables >= {"question", "n"}
    assert len(ps.sha256) == 16


def test_an_edited_copy_loads_by_path_with_a_new_hash(tmp_path: Path) -> None:
    folder = copy_default(tmp_path / "my-prompts")
    same = AGENT.load_prompts(str(folder))
    assert same.sha256 == AGENT.load_prompts("default").sha256
    (folder / "decide.user.txt").write_text("Q: ${question}\nEvidence: ${evidence}\nAnswer well. ${format}\n")
    edited = AGENT.load_prompts(str(folder))
    assert edited.sha256 != same.sha256 and edited.name == "my-prompts"


def test_unknown_variable_is_a_load_time_error(tmp_path: Path) -> None:
    folder = copy_default(tmp_path / "my-prompts")
    (folder / "probe.user.txt").write_text("Pick ${n} cells for ${question} in ${colour}.")
    with pytest.raises(BadInputError, match=r"probe.user.txt uses unknown variable\(s\) colour"):
        AGENT.load_prompts(str(folder))


def test_missing_required_variable_and_missing_file(tmp_path: Path) -> None:
    folder = copy_default(tmp_path / "my-prompts")
    (folder / "worker.user.txt").write_text("Do something with ${question}.")
    (folder / "decide.user.txt").unlink()
    with pytest.raises(BadInputError) as err:
        AGENT.load_prompts(str(folder))
    assert "worker.user.txt lacks required variable(s) actions" in str(err.value)
    assert "decide.user.txt is missing" in str(err.value)


def test_each_agent_has_its_own_set_and_the_reask_is_shared_unless_a_set_has_its_own(tmp_path: Path) -> None:
    rlm, uniform = AGENT.load_prompts(), UNIFORM.load_prompts()
    assert "probe.user" in rlm.templates and "probe.user" not in uniform.templates
    assert set(uniform.templates) == {"system", "answer.user", *SHARED_SPEC}
    assert rlm["reask"].text == uniform["reask"].text
    folder = copy_default(tmp_path / "own-reask")
    (folder / "reask.txt").write_text("That did not parse (${error}). Try again, JSON only.")
    own = AGENT.load_prompts(str(folder))
    assert own["reask"].text.startswith("That did not parse") and own.sha256 != rlm.sha256
    with pytest.raises(BadInputError, match="unexpected template"):
        UNIFORM.load_prompts(str(folder))  # one agent's set is not another's


def test_unknown_set_name() -> None:
    with pytest.raises(BadInputError, match="neither a built-in set nor a directory"):
        AGENT.load_prompts("no-such-set")


def test_render_is_strict_about_values() -> None:
    template = AGENT.load_prompts("default")["reask"]
    with pytest.raises(BadInputError, match="missing"):
        template.render()
    assert "bad json" in template.render(error="bad json")


def test_rendering_ignores_values_a_template_does_not_use(tmp_path: Path) -> None:
    folder = copy_default(tmp_path / "my-prompts")
    (folder / "search_task.user.txt").write_text("Only the question: ${question}")
    ps = AGENT.load_prompts(str(folder))
    assert ps.render("search_task.user", question="Q?", choices="A. x") == "Only the question: Q?"
    shutil.rmtree(folder)


def test_the_relation_sentences_are_the_prompt_sets_notes(tmp_path: Path) -> None:
    """What the search task and the final decision say of a time relation comes from template files a set may edit."""
    after = Relation(kind="right after", anchor="the bell")
    seen = Anchor.at(75.0)
    default = AGENT.load_prompts()
    assert task_sentence(default, after).startswith("Relation: the answer lies right after the bell: find that")
    assert relation_text(default, after, seen, "C").startswith("Relation: the answer lies right after the bell. ")
    assert "The anchor is [C] at 01:15.0 (75.0 s)." in relation_text(default, after, seen, "C")

    folder = copy_default(tmp_path / "edited")
    (folder / "task_side.note.txt").write_text("Look ${side} ${anchor} (${kind}) first.\n")
    (folder / "relation_side.note.txt").write_text("Time: ${kind} ${anchor}.\n")
    (folder / "anchor_seen.note.txt").write_text("Anchor at ${time}.\n")
    edited = AGENT.load_prompts(str(folder))
    assert task_sentence(edited, after) == "Look after the bell (right after) first."
    assert relation_text(edited, after, seen, None) == "Time: right after the bell. Anchor at 01:15.0."
    assert edited.sha256 != default.sha256

    older = copy_default(tmp_path / "older")  # a set copied before the search task's notes were templates
    for name in ("task_side", "task_between", "task_between_open"):
        (older / f"{name}.note.txt").unlink()
    assert task_sentence(AGENT.load_prompts(str(older)), after) == task_sentence(default, after)
    (older / "relation_side.note.txt").write_text("Time: ${anchor}.\n")
    with pytest.raises(BadInputError, match=r"relation_side\.note\.txt lacks required variable"):
        AGENT.load_prompts(str(older))
