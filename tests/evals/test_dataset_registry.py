"""The table of datasets: one record per adapter, declared in its own module, and the lookups read only it."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path

import pytest

from videoatlas.errors import BadInputError
from videoatlas.evals import datasets
from videoatlas.evals.datasets import ADAPTERS, DATASETS, SUBSETS, get_adapter, load_dataset, load_items, parse_subset
from videoatlas.evals.datasets.adapter import Adapter, MakingProgress, SuiteOptions, in_categories
from videoatlas.evals.items import EvalItem
from videoatlas.synth import Progress

pytestmark = pytest.mark.unit


def _adapter_modules() -> list[str]:
    """The package's modules that are adapters (not its shared helpers nor the record's own module)."""
    names = [m.name for m in pkgutil.iter_modules(datasets.__path__)]
    return [n for n in names if not n.startswith("_") and n != "adapter"]


def test_the_table_lists_every_adapter_module_by_its_own_record() -> None:
    modules = _adapter_modules()
    assert sorted(modules) == sorted(DATASETS)
    for name in modules:
        module = importlib.import_module(f"videoatlas.evals.datasets.{name}")
        assert module.ADAPTER is ADAPTERS[module.NAME] and module.ADAPTER.name == module.NAME == name
        assert get_adapter(name) is module.ADAPTER
    assert tuple(ADAPTERS) == DATASETS


def test_subsets_are_the_records() -> None:
    assert {name: a.subsets for name, a in ADAPTERS.items() if a.subsets} == SUBSETS
    assert set(SUBSETS) == {"videomme", "longvideobench", "lvbench", "synthetic"}
    for name, valid in SUBSETS.items():
        assert parse_subset(name, ",".join(reversed(valid))) == list(valid)  # canonical order back
    # An alias the record declares (LVBench's full question types) is taken, any case.
    assert parse_subset("lvbench", "Temporal Grounding") == ["TG"]


def test_unknown_dataset_is_named_before_its_root_is_looked_for(tmp_path: Path) -> None:
    with pytest.raises(BadInputError, match=r"unknown dataset 'nope'; choose one of longvideobench, videomme"):
        load_items("nope", tmp_path / "absent")
    with pytest.raises(BadInputError, match="--subset: nope has no published subsets"):
        parse_subset("nope", "x")


def _item(n: int) -> EvalItem:
    return EvalItem("parity", str(n), f"v{n}", f"v{n}.mp4", f"q{n}", ["a", "b"], 0, categories=[f"c{n}"])


def _is_parity(item: EvalItem, subset: Sequence[str]) -> bool:
    return ("even" if int(item.id) % 2 == 0 else "odd") in subset


@pytest.fixture
def parity(monkeypatch: pytest.MonkeyPatch) -> list[tuple[list[str], SuiteOptions, bool]]:
    """A dataset of six questions, whose subsets ``odd`` and ``even`` only its own rule knows, in the table."""
    made: list[tuple[list[str], SuiteOptions, bool]] = []

    def load(root: Path, options: SuiteOptions) -> datasets.Loaded:
        return datasets.Loaded([_item(n) for n in range(6)])

    def make_videos(
        root: Path, items: Sequence[EvalItem], options: SuiteOptions, making: MakingProgress | None
    ) -> None:
        made.append(([i.id for i in items], options, making is not None))

    adapter = Adapter(
        "parity",
        load,
        subsets=("odd", "even"),
        aliases={"uneven": "odd"},
        in_subset=_is_parity,
        generated=True,
        make_videos=make_videos,
    )
    monkeypatch.setitem(ADAPTERS, "parity", adapter)
    return made


def test_parse_and_load_follow_the_records_subsets_aliases_and_rule(
    parity: list[tuple[list[str], SuiteOptions, bool]], tmp_path: Path
) -> None:
    assert parse_subset("parity", "EVEN,uneven") == ["odd", "even"]
    with pytest.raises(BadInputError, match="choose from odd, even"):
        parse_subset("parity", "c1")  # a category is no subset of a dataset with its own rule
    items = load_items("parity", tmp_path / "not-yet", subset=["even"])  # generated: no root needed
    assert [i.id for i in items] == ["0", "2", "4"]


def test_a_generated_suite_makes_the_videos_of_the_kept_questions_only(
    parity: list[tuple[list[str], SuiteOptions, bool]], tmp_path: Path
) -> None:
    def making(label: str) -> AbstractContextManager[Progress]:
        return nullcontext(lambda done, total: None)

    loaded = load_dataset("parity", tmp_path, seed=7, subset=["odd"], select=lambda items: items[:2], making=making)
    assert [i.id for i in loaded.items] == ["1", "3"]
    assert parity == [(["1", "3"], SuiteOptions(None, 7, None), True)]


def test_a_read_dataset_needs_its_root(tmp_path: Path) -> None:
    with pytest.raises(BadInputError, match=r"videomme: dataset root .* does not exist"):
        load_items("videomme", tmp_path / "absent")
    assert not ADAPTERS["videomme"].generated and ADAPTERS["synthetic"].generated


def test_the_default_rule_is_the_items_categories_in_any_case() -> None:
    item = EvalItem("x", "1", "v", "v.mp4", "q", ["a", "b"], 0, categories=["Needle"])
    assert in_categories(item, ["needle"]) and not in_categories(item, ["count"])
    assert ADAPTERS["egoschema"].in_subset is in_categories and ADAPTERS["jsonl"].in_subset is in_categories
