"""Our lmms-eval tasks' documents from local files: an items file, and each benchmark in its official layout."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from lmms_helpers import synthetic_items, write_items_file, write_longvideobench, write_lvbench, write_videomme
from videoatlas.errors import BadInputError
from videoatlas.evals.items import EvalItem
from videoatlas.lmms.docs import ITEM_FIELD
from videoatlas.lmms.task_docs import benchmark_docs, data_path, items_docs

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def items(tmp_path_factory: pytest.TempPathFactory) -> list[EvalItem]:
    return synthetic_items(tmp_path_factory.mktemp("suite"), 3)


def _item(doc: dict[str, object]) -> EvalItem:
    return EvalItem.from_dict(json.loads(str(doc[ITEM_FIELD])))


def test_items_file_documents_resolve_relative_videos_and_show_the_truth(tmp_path: Path, items: list[EvalItem]) -> None:
    (tmp_path / "v.mp4").write_bytes(Path(items[0].video).read_bytes())
    relative = EvalItem(**{**items[0].as_dict(), "video": "v.mp4", "subtitles": None})
    docs = items_docs(write_items_file(tmp_path / "set" / "items.jsonl", [relative, items[1]]))
    assert [d["id"] for d in docs] == [items[0].id, items[1].id]
    assert _item(docs[0]).video == str(tmp_path / "set" / "v.mp4")  # against the file's folder, as `eval run` reads it
    assert docs[1]["answer"] == "ABCD"[items[1].answer_index or 0]
    assert _item(docs[1]) == items[1]


def test_video_mme_documents_are_the_official_rows(tmp_path: Path, items: list[EvalItem]) -> None:
    root = write_videomme(tmp_path / "Video-MME", items)
    rows = pq.read_table(root / "videomme" / "test-00000-of-00001.parquet").to_pylist()
    docs = benchmark_docs("videomme", root)
    assert [{k: v for k, v in d.items() if k != ITEM_FIELD} for d in docs] == rows  # what lmms-eval's videomme reads
    item = _item(docs[0])
    assert item.video == str(root / "data" / f"{rows[0]['videoID']}.mp4")
    assert item.subtitles == str(root / "subtitle" / f"{rows[0]['videoID']}.srt")
    assert item.choices == items[0].choices and item.answer_index == items[0].answer_index


def test_longvideobench_documents_take_lmms_eval_s_option_fields(tmp_path: Path, items: list[EvalItem]) -> None:
    root = write_longvideobench(tmp_path / "LongVideoBench", items)
    docs = benchmark_docs("longvideobench", root)
    first = docs[0]
    assert [first[f"option{i}"] for i in range(5)] == [*items[0].choices, "N/A"]
    assert (first["correct_choice"], first["duration_group"], first["question_category"]) == (
        items[0].answer_index,
        60,
        "T2O",
    )
    assert first["id"] == "lvb-0" and _item(first).video == str(root / "videos" / f"{items[0].video_id}.mp4")


def test_lvbench_documents_and_a_subset(tmp_path: Path, items: list[EvalItem]) -> None:
    root = write_lvbench(tmp_path / "LVBench", items)
    docs = benchmark_docs("lvbench", root)
    assert [d["options"] for d in docs] == [i.choices for i in items]
    assert [d["question"] for d in docs] == [i.question for i in items]
    assert [d["answer"] for d in docs] == ["ABCD"[i.answer_index or 0] for i in items]
    assert len(benchmark_docs("lvbench", root, "KIR")) == 3
    with pytest.raises(BadInputError, match="no questions found in subset TG"):
        benchmark_docs("lvbench", root, "TG")


def test_where_the_files_are_from_the_task_yaml_or_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("VIDEOATLAS_LMMS_ITEMS", raising=False)
    with pytest.raises(BadInputError, match=r"task videoatlas_jsonl: set VIDEOATLAS_LMMS_ITEMS to an items \.jsonl"):
        data_path("jsonl", "videoatlas_jsonl", None)
    monkeypatch.setenv("VIDEOATLAS_LMMS_ITEMS", str(tmp_path / "gone.jsonl"))
    with pytest.raises(BadInputError, match=r"gone.jsonl does not exist"):
        data_path("jsonl", "videoatlas_jsonl", {})
    assert data_path("videomme", "t", {"root": str(tmp_path)}) == tmp_path
