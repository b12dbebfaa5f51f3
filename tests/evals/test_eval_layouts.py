"""The benchmarks as their own download tools leave them on disk, read by the adapters and ``eval check``.

Each fixture copies an official file shape (a few records) and puts small generated videos in the
official directory layout: LVBench's video2dataset shards with sidecars, Video-MME's ``data/`` with
``.mp4``, ``.MP4`` and ``.mkv``, LongVideoBench's json and Hugging Face parquet, EgoSchema's subset.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from agent_helpers import ScriptedChat, default_reply
from videoatlas.cli.main import main
from videoatlas.environment.subtitles import load_subtitles
from videoatlas.errors import BadInputError
from videoatlas.evals.datasets import load_dataset, load_items, parse_subset
from videoatlas.llm.settings import EndpointSettings
from videoatlas.runs import prepare
from videoatlas.runtime.context import RunConfig

pytestmark = pytest.mark.unit

_LVB_QUESTION = "What is shown?\n(A) a cat\n(B) a dog\n(C) a car\n(D) a tree"


def _qa(uid: str, answer: str = "B", types: list[str] | None = None, ref: str = "00:10-00:20") -> dict[str, object]:
    return {
        "uid": uid,
        "question": _LVB_QUESTION,
        "answer": answer,
        "question_type": types or ["key information retrieval"],
        "time_reference": ref,
    }


@pytest.fixture
def lvbench_root(tmp_path: Path, counter_video: Path, not_a_video: Path) -> Path:
    """video2dataset ``--output_format files``: ``videos/<shard>/<n>.mp4`` beside ``<n>.json`` naming the source."""
    root = tmp_path / "LVBench"
    shard = root / "videos" / "00000"
    shard.mkdir(parents=True)
    shutil.copy(counter_video, shard / "000000000.mp4")
    (shard / "000000000.json").write_text(
        json.dumps({"url": "https://www.youtube.com/watch?v=yt_one", "key": "000000000", "status": "success"})
    )
    shutil.copy(counter_video, shard / "yt_two.mp4")  # a shard file named by the source id, no sidecar
    shutil.copy(not_a_video, shard / "000000001.mp4")
    (shard / "000000001.json").write_text(json.dumps({"url": "https://youtu.be/yt_bad", "key": "000000001"}))
    lines = [
        {"key": "yt_one", "type": "sport", "video_info": {"duration_minutes": 0.2}, "qa": [_qa("1"), _qa("2", "F")]},
        {
            "key": "yt_two",
            "type": "cartoon",
            "video_info": {"duration_minutes": 0.2},
            "qa": [_qa("3", types=["temporal grounding", "reasoning"]), _qa("4", ref="00:10-01:99")],
        },
        {"key": "yt_bad", "type": "sport", "video_info": {"duration_minutes": 0.2}, "qa": [_qa("5")]},
        {"key": "yt_gone", "type": "sport", "video_info": {"duration_minutes": 0.2}, "qa": [_qa("6")]},
    ]
    (root / "video_info.meta.jsonl").write_text("\n".join(json.dumps(line) for line in lines) + "\n{not json\n")
    return root


def test_lvbench_finds_videos_in_video2dataset_shards_by_sidecar_and_by_name(lvbench_root: Path) -> None:
    loaded = load_dataset("lvbench", lvbench_root)
    by_id = {i.id: i for i in loaded.items}
    assert sorted(by_id) == ["1", "3", "5", "6"]
    shard = lvbench_root / "videos" / "00000"
    assert by_id["1"].video == str(shard / "000000000.mp4")  # found through the sidecar's url
    assert by_id["3"].video == str(shard / "yt_two.mp4")  # found by its own name
    assert by_id["6"].video == str(lvbench_root / "videos" / "yt_gone.mp4")  # missing: the flat place is named
    assert by_id["1"].evidence == [[10.0, 20.0]]


def test_lvbench_shard_table_and_the_repository_data_folder(tmp_path: Path, counter_video: Path) -> None:
    # No sidecars this time: video2dataset's videos/00000.parquet maps each file's key to its url.
    (tmp_path / "videos" / "00000").mkdir(parents=True)
    shutil.copy(counter_video, tmp_path / "videos" / "00000" / "00000007.mp4")
    table = {"key": ["00000007", "00000008"], "url": ["https://www.youtube.com/watch?v=yt_x", "https://youtu.be/z"]}
    pq.write_table(pa.table(table), tmp_path / "videos" / "00000.parquet")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "video_info.meta.jsonl").write_text(json.dumps({"key": "yt_x", "qa": [_qa("1")]}) + "\n")
    [item] = load_items("lvbench", tmp_path)
    assert item.video == str(tmp_path / "videos" / "00000" / "00000007.mp4")


def test_lvbench_flat_layout_still_read(tmp_path: Path, counter_video: Path) -> None:
    (tmp_path / "videos").mkdir()
    shutil.copy(counter_video, tmp_path / "videos" / "k.mp4")
    (tmp_path / "video_info.meta.jsonl").write_text(json.dumps({"key": "k", "qa": [_qa("1")]}) + "\n")
    [item] = load_items("lvbench", tmp_path)
    assert item.video == str(tmp_path / "videos" / "k.mp4")


def test_lvbench_malformed_records_are_skipped_with_file_and_id(lvbench_root: Path) -> None:
    skipped = {s.record: s for s in load_dataset("lvbench", lvbench_root).skipped}
    assert sorted(skipped) == ["line 5", "yt_one/2", "yt_two/4"]
    assert "answer 'F' is not one of ABCD" in skipped["yt_one/2"].reason
    assert "01:99" in skipped["yt_two/4"].reason
    assert "invalid JSON" in skipped["line 5"].reason
    assert all(s.file.endswith("video_info.meta.jsonl") and s.malformed for s in skipped.values())


def test_lvbench_subset_by_question_type_short_or_full_name(lvbench_root: Path) -> None:
    assert [i.id for i in load_items("lvbench", lvbench_root, subset=["TG"])] == ["3"]
    assert parse_subset("lvbench", "temporal grounding,kir") == ["KIR", "TG"]
    assert sorted(i.id for i in load_items("lvbench", lvbench_root, subset=["KIR"])) == ["1", "5", "6"]


def test_bad_subset_names_the_valid_ones() -> None:
    with pytest.raises(BadInputError, match="choose from short, medium, long"):
        parse_subset("videomme", "longest")
    with pytest.raises(BadInputError, match="choose from 15, 60, 600, 3600"):
        parse_subset("longvideobench", "long")
    with pytest.raises(BadInputError, match="egoschema has no published subsets"):
        parse_subset("egoschema", "all")
    assert parse_subset("videomme", None) is None


def _videomme_table(rows: list[tuple[str, str, str, str]]) -> pa.Table:
    return pa.table(
        {
            "video_id": [r[0] for r in rows],
            "duration": [r[1] for r in rows],
            "domain": ["Knowledge"] * len(rows),
            "sub_category": ["Astronomy"] * len(rows),
            "url": ["https://www.youtube.com/watch?v=" + r[2] for r in rows],
            "videoID": [r[2] for r in rows],
            "question_id": [r[0] + "-1" for r in rows],
            "task_type": ["Counting Problem"] * len(rows),
            "question": ["How many?"] * len(rows),
            "options": [["A. 1.", "B. 2.", "C. 3.", "D. 4."]] * len(rows),
            "answer": [r[3] for r in rows],
        }
    )


@pytest.fixture
def videomme_root(tmp_path: Path, counter_video: Path, cut_mkv: Path) -> Path:
    """The Hugging Face download: ``videomme/test-*.parquet``, ``data/`` with all three suffixes, ``subtitle/``."""
    root = tmp_path / "Video-MME"
    (root / "videomme").mkdir(parents=True)
    (root / "data").mkdir()
    rows = [("001", "short", "vidShort", "A"), ("301", "long", "vidLong", "C"), ("302", "long", "vidMkv", "Q")]
    rows.append(("303", "long", "vidMkv", "B"))
    pq.write_table(_videomme_table(rows), root / "videomme" / "test-00000-of-00001.parquet")
    shutil.copy(counter_video, root / "data" / "vidShort.mp4")
    shutil.copy(counter_video, root / "data" / "vidLong.MP4")
    shutil.copy(cut_mkv, root / "data" / "vidMkv.mkv")
    (root / "subtitle").mkdir()
    (root / "subtitle" / "vidLong.srt").write_text("1\n00:00:01,000 --> 00:00:02,000\nhello\n")
    return root


def test_videomme_finds_mp4_upper_case_mp4_and_mkv(videomme_root: Path) -> None:
    by_id = {i.id: i for i in load_items("videomme", videomme_root)}
    assert by_id["001-1"].video == str(videomme_root / "data" / "vidShort.mp4")
    assert by_id["301-1"].video == str(videomme_root / "data" / "vidLong.MP4")
    assert by_id["303-1"].video == str(videomme_root / "data" / "vidMkv.mkv")


def test_videomme_subset_long_takes_only_the_long_videos(videomme_root: Path) -> None:
    items = load_items("videomme", videomme_root, subset=parse_subset("videomme", "LONG"))
    assert sorted(i.id for i in items) == ["301-1", "303-1"]
    assert {i.groups["duration"] for i in items} == {"long"}


def test_videomme_bad_answer_skips_one_record_and_unreadable_parquet_is_reported(videomme_root: Path) -> None:
    loaded = load_dataset("videomme", videomme_root)
    [bad] = [s for s in loaded.skipped if s.malformed]
    assert bad.record == "302-1" and "answer 'Q'" in bad.reason and bad.file.endswith(".parquet")
    (videomme_root / "extra.parquet").write_text("not parquet")
    loaded = load_dataset("videomme", videomme_root)
    assert len(loaded.items) == 3
    assert any(s.file.endswith("extra.parquet") and "not a readable parquet" in s.reason for s in loaded.skipped)


def _lvb_record(n: int, group: int, **extra: object) -> dict[str, object]:
    return {
        "video_id": f"v{n}",
        "question": f"Question {n}?",
        "correct_choice": 1,
        "position": [1, 2],
        "topic_category": "NP-News-Programs",
        "question_category": "TOS",
        "level": "L2-Relation",
        "id": f"v{n}_0",
        "video_path": f"v{n}.mp4",
        "subtitle_path": f"v{n}_en.json",
        "duration_group": group,
        "starting_timestamp_for_subtitles": 0,
        "duration": 10.0,
        **extra,
    }


def test_longvideobench_parquet_form_with_na_padding_and_test_split(tmp_path: Path) -> None:
    recs = [
        _lvb_record(0, 15, option0="red", option1="blue", option2="N/A", option3="N/A", option4="N/A"),
        _lvb_record(1, 3600, option0="a", option1="b", option2="c", option3="d", option4="e"),
        _lvb_record(
            2, 3600, option0="a", option1="b", option2="N/A", option3="N/A", option4="N/A", correct_choice=None
        ),
        _lvb_record(3, 600, option0="a", option1="N/A", option2="N/A", option3="N/A", option4="N/A"),
    ]
    (tmp_path / "data").mkdir()
    pq.write_table(pa.Table.from_pylist(recs), tmp_path / "data" / "validation-00000-of-00001.parquet")
    test_split = [{k: v for k, v in _lvb_record(9, 60, option0="a", option1="b").items() if k != "correct_choice"}]
    pq.write_table(pa.Table.from_pylist(test_split), tmp_path / "data" / "test-00000-of-00001.parquet")
    loaded = load_dataset("longvideobench", tmp_path)
    by_id = {i.id: i for i in loaded.items}
    assert by_id["v0_0"].choices == ["red", "blue"] and by_id["v0_0"].answer_index == 1
    assert len(by_id["v1_0"].choices) == 5 and by_id["v1_0"].groups["duration_group"] == "3600"
    assert {s.record: s.malformed for s in loaded.skipped} == {"v2_0": False, "v3_0": True, "v9_0": False}
    assert [i.id for i in load_items("longvideobench", tmp_path, subset=["3600"])] == ["v1_0"]


def test_longvideobench_subtitles_as_the_official_loader_reads_them(tmp_path: Path) -> None:
    path = tmp_path / "v_en.json"
    cues = [
        {"timestamp": [30.123456, 31.5], "text": "precise"},
        {"start": "00:00:32.123456", "end": "00:00:33.5", "line": "clock"},
        {"timestamp": [40.0, None], "text": "to the end"},
    ]
    path.write_text(json.dumps(cues))
    lines = load_subtitles(path, offset=-30.0, duration=75.0).lines
    assert lines[0].start == pytest.approx(0.123456)
    assert lines[1].start == pytest.approx(2.123456)
    assert lines[2].text == "to the end" and lines[2].end == pytest.approx(45.0)


def _lvb_json_root(tmp_path: Path, counter_video: Path) -> Path:
    root = tmp_path / "LongVideoBench"
    (root / "videos").mkdir(parents=True)
    (root / "subtitles").mkdir()
    recs: list[object] = [_lvb_record(0, 15, candidates=["x", "y"]), _lvb_record(1, 15, candidates=["x", "y"])]
    recs += [{"id": "broken", "candidates": ["x"], "correct_choice": 3}, "not a record"]
    (root / "lvb_val.json").write_text(json.dumps(recs))
    shutil.copy(counter_video, root / "videos" / "v0.mp4")
    (root / "subtitles" / "v0_en.json").write_text(json.dumps([{"timestamp": [1.5, None], "text": "hi"}]))
    (root / "subtitles" / "v1_en.json").write_text("[{")
    return root


def test_eval_check_counts_and_lists_every_problem(
    tmp_path: Path, counter_video: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _lvb_json_root(tmp_path, counter_video)
    assert main(["eval", "check", "--dataset", "longvideobench", "--root", str(root), "--json"]) == 1
    rep = json.loads(capsys.readouterr().out)
    assert rep["questions"] == 2 and rep["videos"] == 2 and not rep["ok"]
    assert rep["missing_videos"] == [str(root / "videos" / "v1.mp4")]
    assert [u["path"] for u in rep["unreadable_subtitles"]] == [str(root / "subtitles" / "v1_en.json")]
    bad, stray = rep["malformed"]
    assert bad["record"] == "broken" and bad["file"] == str(root / "lvb_val.json")
    assert stray["record"] == "#3" and "not a JSON object" in stray["reason"]
    assert main(["eval", "check", "--dataset", "longvideobench", "--root", str(root)]) == 1
    text = capsys.readouterr().out
    assert "missing videos" in text and "v1.mp4" in text and "problems found" in text


def test_eval_check_passes_a_complete_layout_and_flags_an_unreadable_video(
    lvbench_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    meta = lvbench_root / "video_info.meta.jsonl"
    good = [{"key": "yt_one", "qa": [_qa("1")]}, {"key": "yt_two", "qa": [_qa("3", types=["temporal grounding"])]}]
    meta.write_text("".join(json.dumps(line) + "\n" for line in good))
    args = ["eval", "check", "--dataset", "lvbench", "--root", str(lvbench_root), "--subset", "TG", "--json"]
    assert main(args) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["ok"] and rep["questions"] == 1 and rep["subset"] == ["TG"]
    assert main(args[:-3]) == 0
    assert "ready to run" in capsys.readouterr().out
    meta.write_text(json.dumps({"key": "yt_bad", "qa": [_qa("5")]}) + "\n")
    assert main(["eval", "check", "--dataset", "lvbench", "--root", str(lvbench_root), "--json"]) == 1
    [unreadable] = json.loads(capsys.readouterr().out)["unreadable_videos"]
    assert unreadable["path"].endswith("000000001.mp4")


def test_eval_check_bad_subset_is_one_line(lvbench_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "check", "--dataset", "lvbench", "--root", str(lvbench_root), "--subset", "XX"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "choose from ER, EU, KIR, TG, Rea, Sum" in err


def test_egoschema_questions_without_public_answers_are_counted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    questions = [{"q_uid": u, "question": "?", **{f"option {i}": str(i) for i in range(5)}} for u in "abc"]
    (tmp_path / "questions.json").write_text(json.dumps(questions))
    (tmp_path / "subset_answers.json").write_text(json.dumps({"b": 2}))
    assert main(["eval", "check", "--dataset", "egoschema", "--root", str(tmp_path), "--json"]) == 1
    rep = json.loads(capsys.readouterr().out)
    assert rep["questions"] == 1 and rep["skipped"] == 2 and rep["malformed"] == []
    assert rep["skipped_by_reason"] == {"no public answer (not in subset_answers.json)": 2}
    (tmp_path / "subset_answers.json").write_text(json.dumps({"b": 2, "c": 7}))
    assert main(["eval", "check", "--dataset", "egoschema", "--root", str(tmp_path), "--json"]) == 1
    [bad] = json.loads(capsys.readouterr().out)["malformed"]
    assert bad["record"] == "c" and "must be 0..4, got 7" in bad["reason"]
    assert bad["file"].endswith("subset_answers.json")


def test_eval_run_prints_the_check_before_it_starts(lvbench_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = lvbench_root.parent / "ev"
    args = ["eval", "run", "--dataset", "lvbench", "--root", str(lvbench_root), "--out", str(out)]
    code = main([*args, "--subset", "TG", "--base-url", "http://127.0.0.1:9/v1", "--agent", "uniform"])
    err = capsys.readouterr().err
    assert code != 0  # nothing answers at that address; the pre-flight came first
    assert err.index("lvbench subset TG under") < err.index("error")
    assert "malformed records (skipped)" in err and "yt_one/2" in err
    assert main([*args, "--subset", "long"]) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert "choose from ER, EU, KIR, TG, Rea, Sum" in line


def test_eval_check_on_the_video_mme_download(videomme_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["eval", "check", "--dataset", "videomme", "--root", str(videomme_root), "--json"]
    assert main([*args, "--subset", "short"]) == 1  # the malformed record is reported whatever the subset
    rep = json.loads(capsys.readouterr().out)
    assert rep["questions"] == 1 and rep["videos"] == 1 and rep["missing_videos"] == []
    assert [m["record"] for m in rep["malformed"]] == ["302-1"]
    (videomme_root / "data" / "vidShort.mp4").unlink()
    assert main([*args, "--subset", "long,short"]) == 1
    rep = json.loads(capsys.readouterr().out)
    assert rep["questions"] == 3 and rep["missing_videos"] == [str(videomme_root / "data" / "vidShort.mp4")]


async def test_a_run_ends_an_open_longvideobench_cue_at_the_clip_end(counter_video: Path, tmp_path: Path) -> None:
    subs = tmp_path / "v_en.json"
    subs.write_text(json.dumps([{"timestamp": [1.0, None], "text": "open cue"}]))
    endpoint = EndpointSettings(base_url="http://127.0.0.1:9/v1", model="scripted")
    prepared = await prepare(
        counter_video, RunConfig.of(agent="uniform"), endpoint, str(subs), 0.0, ScriptedChat(script=default_reply), None
    )
    try:
        assert prepared.context.subtitles is not None
        [cue] = prepared.context.subtitles.lines
        assert cue.end == pytest.approx(prepared.source.info.duration) and cue.end > 1.0
    finally:
        await prepared.aclose()
