"""Concatenation manifests: several real files decoded as one timeline; long variants built on them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from videoatlas.cli.main import main
from videoatlas.environment.atlas import VideoAtlas
from videoatlas.environment.concat import ConcatSource, media_duration, open_source, write_manifest
from videoatlas.environment.geometry import Interval
from videoatlas.environment.subtitles import load_subtitles
from videoatlas.environment.video import probe
from videoatlas.errors import BadInputError, VideoError
from videoatlas.evals.datasets import load_items
from videoatlas.evals.items import EvalItem
from videoatlas.evals.variants import build_long_variants
from videoatlas.synth.counter import read_counter, write_counter_video

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def short_counter(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """30 s at 10 fps and another size than the session's counter video."""
    return write_counter_video(tmp_path_factory.mktemp("short") / "short.mp4", 300, fps=10.0, width=256, height=144)


def test_frames_come_from_the_segment_playing_at_that_time(
    counter_video: Path, short_counter: Path, tmp_path: Path
) -> None:
    manifest = write_manifest(tmp_path / "joined.concat.json", [short_counter, counter_video])
    first = probe(short_counter).duration
    with ConcatSource(manifest) as source:
        assert source.duration == pytest.approx(first + probe(counter_video).duration)
        assert media_duration(manifest) == pytest.approx(source.duration)
        # 5 s into the first file, and 20 s into the second one.
        a, b = source.frames_at([5.0, first + 20.0], 256)
        assert a.image is not None and b.image is not None
        assert read_counter(a.image) == 50  # 10 fps
        assert read_counter(b.image) == 500  # 25 fps
        assert b.time == pytest.approx(first + 20.0, abs=0.05)
        # A cell straddling the boundary is served by the segment holding its middle.
        cell = source.fetch_cells([Interval(first - 4.0, first + 6.0)], 128)[0]
        assert cell.available and first <= cell.time <= first + 6.0


def test_grid_renders_across_segments_and_identity_follows_the_content(
    counter_video: Path, short_counter: Path, tmp_path: Path
) -> None:
    m1 = write_manifest(tmp_path / "a.concat.json", [short_counter, counter_video])
    m2 = write_manifest(tmp_path / "b.concat.json", [counter_video, short_counter])
    with open_source(m1) as s1, open_source(m2) as s2:
        assert s1.identity != s2.identity
        view = VideoAtlas(s1, k=4, cell_px=64).grid(())
        assert len(view.grid.cells) == 16 and view.image.width == 256


def test_probe_describes_a_manifest(
    counter_video: Path, short_counter: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = write_manifest(tmp_path / "j.concat.json", [short_counter, counter_video])
    assert main(["probe", str(manifest), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert [Path(s["path"]).name for s in info["segments"]] == ["short.mp4", "counter.mp4"]
    assert info["duration"] == pytest.approx(info["segments"][1]["offset"] + info["segments"][1]["duration"])
    assert info["width"] == 320


def test_bad_manifests_are_one_line_errors(tmp_path: Path, counter_video: Path) -> None:
    bad = tmp_path / "bad.concat.json"
    bad.write_text("{not json")
    with pytest.raises(VideoError, match="not a readable concatenation manifest"):
        ConcatSource(bad)
    bad.write_text(json.dumps({"format": "videoatlas-concat", "segments": []}))
    with pytest.raises(VideoError, match="non-empty"):
        ConcatSource(bad)
    bad.write_text(json.dumps({"format": "videoatlas-concat", "segments": [{"path": "missing.mp4"}]}))
    with pytest.raises(VideoError, match="no such file"):
        ConcatSource(bad)
    with pytest.raises(BadInputError, match="must end in"):
        write_manifest(tmp_path / "x.json", [counter_video])


def test_long_variant_places_the_target_and_shifts_subtitles_and_ranges(
    counter_video: Path, short_counter: Path, tmp_path: Path
) -> None:
    # Four "benchmark videos": copies of the two counters under their own ids, one with subtitles.
    videos = {}
    for n, src in enumerate([counter_video, short_counter, counter_video, short_counter]):
        dst = tmp_path / "bench" / f"v{n}.mp4"
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_bytes(src.read_bytes())
        videos[f"v{n}"] = dst
    srt = tmp_path / "bench" / "v1.srt"
    srt.write_text("1\n00:00:02,000 --> 00:00:04,000\nhello from the target\n", encoding="utf-8")
    item = EvalItem(
        dataset="demo",
        id="q1",
        video_id="v1",
        video=str(videos["v1"]),
        question="What is said?",
        choices=["hello", "bye"],
        answer_index=0,
        subtitles=str(srt),
        evidence=[[2.0, 4.0]],
    )
    others = [EvalItem("demo", f"q{n}", f"v{n}", str(videos[f"v{n}"]), "?", ["a", "b"], 1) for n in (0, 2, 3)]
    hours = 150 / 3600  # 150 s: the target plus at least two distractors
    path, built = build_long_variants([item, *others], tmp_path / "long", hours=hours, seed=3)
    variant = next(i for i in built if i.id == "q1")
    loaded = {i.id: i for i in load_items("jsonl", path.parent)}
    assert set(loaded) == {"q1", "q0", "q2", "q3"}
    q1 = loaded["q1"]
    assert q1.video.endswith("v1.concat.json") and Path(q1.video).is_file()
    offset = variant.evidence[0][0] - 2.0
    assert q1.duration is not None and q1.duration >= 150
    with ConcatSource(q1.video) as source:
        assert source.duration == pytest.approx(q1.duration)
        # The target's first frame sits at the offset: the short counter shows frame 0 there.
        frame = source.frames_at([offset + 0.05], 256)[0]
        assert frame.image is not None and read_counter(frame.image) == 0
        assert source.segments[source.segment_at(offset + 1)].path.name == "v1.mp4"
    assert q1.subtitles is not None
    cues = load_subtitles(q1.subtitles).lines
    assert [c.text for c in cues] == ["hello from the target"]
    assert cues[0].start == pytest.approx(offset + 2.0, abs=1e-3)
    # Deterministic: the same seed gives the same layout.
    _, again = build_long_variants([item, *others], tmp_path / "long2", hours=hours, seed=3)
    assert next(i for i in again if i.id == "q1").evidence == variant.evidence


def test_make_long_needs_enough_distractors(
    tmp_path: Path, counter_video: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "ego"
    (root / "videos").mkdir(parents=True)
    (root / "videos" / "u1.mp4").write_bytes(counter_video.read_bytes())
    (root / "questions.json").write_text(
        json.dumps([{"q_uid": "u1", "question": "?", **{f"option {i}": str(i) for i in range(5)}}])
    )
    (root / "subset_answers.json").write_text(json.dumps({"u1": 2}))
    code = main(["eval", "make-long", "--dataset", "egoschema", "--root", str(root), "--out", str(tmp_path / "o")])
    assert code == 2
    assert "less than the 10 h asked for" in capsys.readouterr().err
