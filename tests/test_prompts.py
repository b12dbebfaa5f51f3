"""Prompt sets: loaded by name or directory, checked at load time, hashed on every call."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from prompt_helpers import copy_default
from videoatlas.errors import BadInputError
from videoatlas.prompts import builtin_sets, load_prompt_set

pytestmark = pytest.mark.unit


def test_default_set_loads_and_is_listed() -> None:
    ps = load_prompt_set("default")
    assert "default" in builtin_sets()
    assert ps["probe.user"].variables >= {"question", "n"}
    assert len(ps.sha256) == 16


def test_an_edited_copy_loads_by_path_with_a_new_hash(tmp_path: Path) -> None:
    folder = copy_default(tmp_path / "my-prompts")
    same = load_prompt_set(str(folder))
    assert same.sha256 == load_prompt_set("default").sha256
    (folder / "decide.user.txt").write_text("Q: ${question}\nEvidence: ${evidence}\nAnswer well. ${format}\n")
    edited = load_prompt_set(str(folder))
    assert edited.sha256 != same.sha256 and edited.name == "my-prompts"


def test_unknown_variable_is_a_load_time_error(tmp_path: Path) -> None:
    folder = copy_default(tmp_path / "my-prompts")
    (folder / "probe.user.txt").write_text("Pick ${n} cells for ${question} in ${colour}.")
    with pytest.raises(BadInputError, match=r"probe.user.txt uses unknown variable\(s\) colour"):
        load_prompt_set(str(folder))


def test_missing_required_variable_and_missing_file(tmp_path: Path) -> None:
    folder = copy_default(tmp_path / "my-prompts")
    (folder / "worker.user.txt").write_text("Do something with ${question}.")
    (folder / "reask.txt").unlink()
    with pytest.raises(BadInputError) as err:
        load_prompt_set(str(folder))
    assert "worker.user.txt lacks required variable(s) actions" in str(err.value)
    assert "reask.txt is missing" in str(err.value)


def test_unknown_set_name() -> None:
    with pytest.raises(BadInputError, match="neither a built-in set nor a directory"):
        load_prompt_set("no-such-set")


def test_render_is_strict_about_values() -> None:
    template = load_prompt_set("default")["reask"]
    with pytest.raises(BadInputError, match="missing"):
        template.render()
    assert "bad json" in template.render(error="bad json")


def test_rendering_ignores_values_a_template_does_not_use(tmp_path: Path) -> None:
    folder = copy_default(tmp_path / "my-prompts")
    (folder / "search_task.user.txt").write_text("Only the question: ${question}")
    ps = load_prompt_set(str(folder))
    assert ps.render("search_task.user", question="Q?", choices="A. x") == "Only the question: Q?"
    shutil.rmtree(folder)
