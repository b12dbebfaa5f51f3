"""Each benchmark adapter on small fixture files written in the benchmark's official format."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from suite_helpers import recorder
from videoatlas.agents.registry import knobs as agent_knobs
from videoatlas.environment.subtitles import load_subtitles
from videoatlas.errors import BadInputError
from videoatlas.evals.datasets import load_items, parse_subset
from videoatlas.evals.datasets.lvbench import split_options
from videoatlas.evals.datasets.synthetic import KINDS
from videoatlas.evals.datasets.synthetic import load as plan_suite
from videoatlas.evals.items import EvalItem, interleave, write_items
from videoatlas.evals.runner import EvalSpec, Shard, load_selected, result_key, select_items
from videoatlas.runtime.context import RunConfig

pytestmark = pytest.mark.unit


def test_longvideobench_val_json(tmp_path: Path) -> None:
    records = [
        {
            "video_id": "vidA",
            "question": "What does the chef add after the onions?",
            "candidates": ["salt", "garlic", "water", "oil"],
            "correct_choice": 1,
            "position": [10, 20],
            "topic_category": "cooking",
            "question_category": "S2E",
            "level": "L2",
            "id": "vidA_0",
            "video_path": "vidA.mp4",
            "subtitle_path": "vidA_en.json",
            "duration_group": 600,
            "starting_timestamp_for_subtitles": 30.0,
            "duration": 512.3,
        }
    ]
    (tmp_path / "lvb_val.json").write_text(json.dumps(records))
    (tmp_path / "subtitles").mkdir()
    (tmp_path / "subtitles" / "vidA_en.json").write_text(json.dumps([{"timestamp": [35.0, 37.0], "text": "hi"}]))
    [item] = load_items("longvideobench", tmp_path)
    assert item.answer_index == 1 and item.choices[1] == "garlic"
    assert item.categories == ["S2E"] and item.groups["duration_group"] == "600"
    assert item.video == str(tmp_path / "videos" / "vidA.mp4")
    assert item.duration == pytest.approx(512.3)
    assert item.subtitles is not None
    # Subtitle times are on the original upload's clock; the clip starts 30 s in.
    [cue] = load_subtitles(item.subtitles, item.subtitle_offset).lines
    assert cue.start == pytest.approx(5.0)


def test_videomme_parquet(tmp_path: Path) -> None:
    table = pa.table(
        {
            "video_id": ["001", "001"],
            "duration": ["short", "short"],
            "domain": ["Knowledge", "Knowledge"],
            "sub_category": ["Humanity & History", "Humanity & History"],
            "url": ["https://example.invalid/x", "https://example.invalid/x"],
            "videoID": ["fFjv93ACGo8", "fFjv93ACGo8"],
            "question_id": ["001-1", "001-2"],
            "task_type": ["Counting Problem", "Object Recognition"],
            "question": ["How many towers?", "What is on the table?"],
            "options": [["A. 1.", "B. 2.", "C. 3.", "D. 4."], ["A) A cup", "B) A pen", "C) A book", "D) A key"]],
            "answer": ["C", "a"],
        }
    )
    (tmp_path / "videomme").mkdir()
    pq.write_table(table, tmp_path / "videomme" / "test-00000-of-00001.parquet")
    (tmp_path / "subtitle").mkdir()
    (tmp_path / "subtitle" / "fFjv93ACGo8.srt").write_text(
        '1\n00:00:01,000 --> 00:00:02,000\n<font color="#ffffff">hello</font>\n'
    )
    first, second = load_items("videomme", tmp_path)
    assert first.choices == ["1.", "2.", "3.", "4."] and first.answer_index == 2
    assert second.choices[0] == "A cup" and second.answer_index == 0
    assert first.categories == ["Counting Problem"] and first.groups == {"duration": "short", "domain": "Knowledge"}
    assert first.video == str(tmp_path / "data" / "fFjv93ACGo8.mp4")
    assert first.subtitles is not None
    assert load_subtitles(first.subtitles).lines[0].text == "hello"


def test_videomme_without_subtitles_and_with_a_bad_letter(tmp_path: Path) -> None:
    table = pa.table(
        {
            "videoID": ["x"],
            "question_id": ["q"],
            "question": ["?"],
            "options": [["A. a", "B. b"]],
            "answer": ["E"],
        }
    )
    pq.write_table(table, tmp_path / "test.parquet")
    with pytest.raises(BadInputError, match="answer 'E' is not one of AB"):
        load_items("videomme", tmp_path)


def test_lvbench_counts_every_category_and_reads_time_references(tmp_path: Path) -> None:
    line = {
        "key": "abc123",
        "type": "sport",
        "video_info": {"duration_minutes": 75.5, "fps": 30},
        "qa": [
            {
                "uid": "7",
                "question": "What happens after the goal?\n(A) a fight\n(B) a replay\n(C) a song\n(D) a crowd wave",
                "answer": "B",
                "question_type": ["event understanding", "temporal grounding"],
                "time_reference": "01:02-01:30",
            }
        ],
    }
    (tmp_path / "video_info.meta.jsonl").write_text(json.dumps(line) + "\n")
    [item] = load_items("lvbench", tmp_path)
    assert item.question == "What happens after the goal?"
    assert item.choices == ["a fight", "a replay", "a song", "a crowd wave"] and item.answer_index == 1
    assert item.categories == ["event understanding", "temporal grounding"]
    assert item.evidence == [[62.0, 90.0]]
    assert item.duration == pytest.approx(75.5 * 60)
    assert item.video == str(tmp_path / "videos" / "abc123.mp4")


def test_lvbench_option_parsing_refuses_a_question_without_options() -> None:
    assert split_options("Q? (A) x (B) y", "w") == ("Q?", ["x", "y"])
    with pytest.raises(BadInputError, match="cannot find options"):
        split_options("Just a question?", "here")


def test_egoschema_subset_only(tmp_path: Path) -> None:
    questions = [
        {"q_uid": uid, "question": f"What is c doing ({uid})?", **{f"option {i}": f"opt{i}" for i in range(5)}}
        for uid in ("u1", "u2", "u3")
    ]
    (tmp_path / "questions.json").write_text(json.dumps(questions))
    (tmp_path / "subset_answers.json").write_text(json.dumps({"u1": 4, "u3": 0}))
    items = load_items("egoschema", tmp_path)
    assert [i.id for i in items] == ["u1", "u3"]
    assert items[0].answer_index == 4 and len(items[0].choices) == 5
    assert items[0].video == str(tmp_path / "videos" / "u1.mp4")


def test_missing_annotations_and_fields_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(BadInputError, match=r"lvb_val\.json not found"):
        load_items("longvideobench", tmp_path)
    (tmp_path / "lvb_val.json").write_text(json.dumps([{"video_id": "v", "candidates": ["a"], "correct_choice": 0}]))
    with pytest.raises(BadInputError, match="missing field 'id'"):
        load_items("longvideobench", tmp_path)
    (tmp_path / "questions.json").write_text("[")
    (tmp_path / "subset_answers.json").write_text("{}")
    with pytest.raises(BadInputError, match="invalid JSON"):
        load_items("egoschema", tmp_path)
    with pytest.raises(BadInputError, match="unknown dataset"):
        load_items("nope", tmp_path)
    with pytest.raises(BadInputError, match="does not exist"):
        load_items("lvbench", tmp_path / "absent")


def test_jsonl_round_trip_resolves_paths_against_the_file(tmp_path: Path) -> None:
    item = EvalItem("mine", "1", "v", "clips/v.mp4", "?", ["a", "b"], 1, ["x"], subtitles="subs/v.srt")
    path = write_items(tmp_path / "set" / "items.jsonl", [item])
    [back] = load_items("jsonl", path)
    assert back.video == str(tmp_path / "set" / "clips" / "v.mp4")
    assert back.subtitles == str(tmp_path / "set" / "subs" / "v.srt")
    assert back.categories == ["x"] and back.answer_index == 1


def _item(vid: str, n: int, cat: str) -> EvalItem:
    return EvalItem("d", f"{vid}-{n}", vid, f"{vid}.mp4", "?", ["a", "b"], 0, [cat])


def test_interleave_spreads_a_limit_over_videos_and_kinds() -> None:
    items = [_item("a", 0, "x"), _item("a", 1, "x"), _item("a", 2, "y"), _item("b", 0, "x"), _item("b", 1, "y")]
    order = [i.id for i in interleave(items)]
    assert order == ["a-0", "b-0", "a-2", "b-1", "a-1"]
    assert sorted(order) == sorted(i.id for i in items)


def test_no_subtitles_setting_changes_the_items_and_so_their_keys(tmp_path: Path) -> None:
    folder = tmp_path / "set"
    item = EvalItem("mine", "1", "v", "v.mp4", "?", ["a", "b"], 1, subtitles="v.srt", subtitle_offset=3.0)
    write_items(folder / "items.jsonl", [item])
    (folder / "v.mp4").write_bytes(b"not decoded here")
    spec = EvalSpec("jsonl", str(folder), str(tmp_path / "out"), RunConfig.of())
    [with_subs] = select_items(spec)
    [without] = select_items(replace(spec, subtitles=False))
    assert with_subs.subtitles and without.subtitles is None and without.subtitle_offset == 0.0
    knobs = agent_knobs(RunConfig.of())
    keys = [result_key(i, "video-rlm", "p", "m", knobs, agent_code="c") for i in (with_subs, without)]
    assert keys[0] != keys[1]


def test_shard_parsing() -> None:
    assert Shard.parse("2/8") == Shard(2, 8) and Shard.parse("2/8").suffix == "-shard2of8"
    assert Shard.parse("0/1").suffix == ""
    for bad in ("8/8", "x/2", "1", "-1/2"):
        with pytest.raises(BadInputError):
            Shard.parse(bad)


def test_making_the_synthetic_suite_video_is_news_not_a_warning(tmp_path: Path) -> None:
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from videoatlas.logging import configure_logging\n"
        "from videoatlas.evals.datasets.synthetic import ensure_video\n"
        "configure_logging(sys.argv[1], False)\n"
        "ensure_video(Path(sys.argv[2]), 30.0, 1)\n"
    )
    for level, shown in (("warning", False), ("info", True)):
        done = subprocess.run(
            [sys.executable, "-c", script, level, str(tmp_path / level)],
            capture_output=True,
            text=True,
            timeout=300,
            check=True,
        )
        assert ("making synthetic video (once)" in done.stderr) is shown, done.stderr


@pytest.mark.e2e
def test_a_limited_synthetic_eval_makes_only_the_videos_it_asks_about(tmp_path: Path) -> None:
    made: list[str] = []
    making = recorder(made)
    # One question of a suite holding a 10-hour video: only the 1-minute video it is about is drawn.
    spec = EvalSpec("synthetic", str(tmp_path), str(tmp_path / "out"), RunConfig(), limit=1, durations=[60.0, 36000.0])
    loaded = load_selected(spec, making)
    assert [i.video_id for i in loaded.items] == ["synth-60s-seed1"] and Path(loaded.items[0].video).is_file()
    assert made == ["synthetic 1min chapters"]
    assert sorted(p.name for p in tmp_path.glob("synth-*")) == ["synth-60s-seed1"]
    made.clear()
    assert load_selected(spec, making).items == loaded.items and made == []  # drawn once


def test_the_synthetic_kinds_are_the_ones_its_styles_ask(tmp_path: Path) -> None:
    planned = plan_suite(tmp_path, [600.0], styles=["chapters", "broadcast", "signage"])  # planned, not drawn
    assert sorted({c for i in planned for c in i.categories}) == sorted(KINDS)
    assert parse_subset("synthetic", "Right_After,count") == ["count", "right_after"]
    with pytest.raises(BadInputError, match="choose from needle, needle_in_chapter, count"):
        parse_subset("synthetic", "relations")


@pytest.mark.e2e
def test_a_synthetic_eval_of_some_kinds_makes_only_their_videos(tmp_path: Path) -> None:
    made: list[str] = []
    making = recorder(made)
    # The relation questions of a 1-minute suite in two styles: one question each, both videos drawn.
    out = str(tmp_path / "out")
    spec = EvalSpec("synthetic", str(tmp_path), out, RunConfig(), durations=[60.0], subset=["after_anchor"])
    items = load_selected(spec, making).items
    assert sorted(i.id for i in items) == ["synth-60s-seed1-broadcast/replay-after", "synth-60s-seed1/after-bell"]
    assert sorted(made) == ["synthetic 1min broadcast", "synthetic 1min chapters"]
    assert {i.categories[0] for i in load_selected(replace(spec, subset=None), making).items} > {"after_anchor"}
