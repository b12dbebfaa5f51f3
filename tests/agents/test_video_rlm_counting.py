"""Video-RLM counting: occurrences merged across zoom levels, workers and rounds; coverage kept and used."""

from __future__ import annotations

import itertools
import re
from pathlib import Path
from typing import Any

import pytest

from agent_helpers import actions_of, default_reply, listed_cells, run_graph, step
from videoatlas.agents.video_rlm.coverage import (
    coverage_line,
    coverage_targets,
    covered_at,
    covered_share,
    merge_coverage,
    uncovered,
    view_step,
)
from videoatlas.agents.video_rlm.nodes.analyze_uncertainty import _uncovered_hints
from videoatlas.agents.video_rlm.occurrences import occurrences, occurrences_block, same_reading
from videoatlas.agents.video_rlm.state.models import Hint, found_at, found_in_round
from videoatlas.agents.video_rlm.trace import detail, lines
from videoatlas.runtime.context import RunConfig
from videoatlas.state.models import Evidence, FrameRef


def ev(
    id_: str, start: float, end: float, time: float, description: str, worker: str = "r1w1", round_: int = 1
) -> Evidence:
    return Evidence(
        id=id_,
        time=time,
        start=start,
        end=end,
        description=description,
        confidence=0.8,
        frame=FrameRef(video="v", time=time, px=64),
        **found_at(round_, worker, None, None),
    )


# -- occurrences -------------------------------------------------------------------------------------


@pytest.mark.unit
def test_one_appearance_seen_at_three_zoom_levels_is_one_occurrence() -> None:
    """A root cell, a cell of its grid and a close-up frame of the same STAR: one occurrence, not three."""
    records = [
        ev("a", 0.0, 112.5, 40.0, "cell 5 (0.0-112.5 s) shows: red STAR badge"),
        ev("b", 35.2, 36.9, 36.0, "cell 21 shows: red STAR badge", worker="r2w1", round_=2),
        ev("c", 35.9, 36.1, 36.0, "zoomed frame at 36.0 s shows: STAR badge, red", worker="r2w1", round_=2),
    ]
    found = occurrences(records)
    assert len(found) == 1
    assert sorted(found[0].ids) == ["a", "b", "c"] and found[0].levels == 3
    assert found[0].start >= 35.2 and found[0].end <= 40.0  # the fine records set the span, not the root cell


@pytest.mark.unit
def test_workers_on_touching_cells_see_one_appearance_and_separate_ones_stay_apart() -> None:
    """Two workers whose cells touch record one appearance running across the border; a later one is another."""
    records = [
        ev("a", 100.0, 116.0, 110.0, "STAR badge", worker="r1w1"),
        ev("b", 116.0, 132.0, 120.0, "star badge", worker="r1w2"),
        ev("c", 132.0, 148.0, 140.0, "star badge on the right", worker="r1w3"),
        ev("d", 900.0, 916.0, 905.0, "STAR badge", worker="r1w4"),
        ev("e", 900.0, 916.0, 905.0, "STAR badge", worker="r3w1", round_=3),  # read again in a later round
    ]
    found = occurrences(records)
    assert [sorted(o.ids) for o in found] == [["a", "b", "c"], ["d", "e"]]
    assert found[0].workers == ["r1w1", "r1w2", "r1w3"]
    assert (found[0].start, found[0].end) == (100.0, 148.0)


@pytest.mark.unit
def test_a_coarse_cell_over_two_appearances_seen_apart_does_not_fuse_them() -> None:
    records = [
        ev("fine1", 10.0, 12.0, 11.0, "STAR"),
        ev("fine2", 80.0, 82.0, 81.0, "STAR"),
        ev("coarse", 0.0, 112.0, 81.5, "STAR"),
    ]
    found = occurrences(records)
    assert [sorted(o.ids) for o in found] == [["fine1"], ["coarse", "fine2"]]


@pytest.mark.unit
def test_different_readings_at_the_same_time_are_different_occurrences() -> None:
    records = [ev("a", 10.0, 20.0, 15.0, "code QU-8424 on the banner"), ev("b", 10.0, 20.0, 16.0, "decoy ZQ-5717")]
    assert len(occurrences(records)) == 2
    assert same_reading("cell 3 (10.0-12.0 s) shows: STAR", "zoomed frame at 11.0 s shows: STAR")
    assert not same_reading("QU-8424", "ZQ-5717")


@pytest.mark.unit
def test_the_occurrence_block_names_each_occurrence_once_with_its_labels() -> None:
    records = [ev("x", 10.0, 12.0, 11.0, "STAR"), ev("y", 10.0, 12.0, 11.5, "STAR"), ev("z", 50.0, 52.0, 51.0, "STAR")]
    block = occurrences_block(records).splitlines()
    assert len(block) == 2 and "[A][B]" in block[0] and "[C]" in block[1]
    assert occurrences_block([]) == "(none yet)"


# -- coverage ----------------------------------------------------------------------------------------


@pytest.mark.unit
def test_coverage_keeps_the_finest_step_per_stretch_in_any_order() -> None:
    coarse = [(0.0, 100.0, 10.0)]
    fine = [(20.0, 40.0, 1.0), (40.0, 60.0, 1.0)]
    merged = merge_coverage(coarse, fine)
    assert merged == [(0.0, 20.0, 10.0), (20.0, 60.0, 1.0), (60.0, 100.0, 10.0)]
    assert merge_coverage(fine, coarse) == merged  # parallel workers write in any order
    assert merge_coverage(merged, coarse) == merged  # a coarser look again changes nothing
    assert merge_coverage(None, [(5.0, 5.0, 1.0), (9.0, 3.0, 1.0)]) == []  # empty and backwards dropped


@pytest.mark.unit
def test_coverage_at_a_resolution_and_what_is_left() -> None:
    seen = merge_coverage([(0.0, 100.0, 10.0)], [(20.0, 60.0, 1.0)])
    assert covered_at(seen, 1.0) == [(20.0, 60.0)]
    assert covered_at(seen, 10.0) == [(0.0, 100.0)]
    assert uncovered(seen, 120.0, 1.0) == [(0.0, 20.0), (60.0, 120.0)]
    assert covered_share(seen, 120.0, 1.0) == pytest.approx(40 / 120)
    assert "33% of the timeline seen with frames at most 1 s apart" in coverage_line(seen, 120.0, 1.0)
    assert "00:00.0-00:20.0" in coverage_line(seen, 120.0, 1.0)


@pytest.mark.unit
def test_coverage_targets_are_uncovered_ranges_one_grid_each_at_the_resolution() -> None:
    seen = [(0.0, 1000.0, 4.0)]  # 0-1000 s seen every 4 s
    targets = coverage_targets(seen, 3600.0, 16.0, 64)
    # 2600 s left, one 8x8 grid shows at most 16 * 64 = 1024 s at 16 s: three equal ranges.
    assert len(targets) == 3 and targets[0][0] == 1000.0 and targets[-1][1] == 3600.0
    assert all(view_step(a, b, 64) <= 16.0 for a, b in targets)
    assert all(abs((b - a) - 2600 / 3) < 1e-6 for a, b in targets)
    assert coverage_targets([(0.0, 3600.0, 16.0)], 3600.0, 16.0, 64) == []
    assert coverage_targets([(0.0, 99.8, 1.0)], 100.0, 1.0, 64, min_span=0.5) == []  # a sliver is not sent


@pytest.mark.unit
def test_the_uncertainty_step_drops_places_already_covered() -> None:
    seen = [(0.0, 40.0, 0.5)]
    hints = [Hint(start=5.0, end=20.0), Hint(start=30.0, end=60.0), Hint(path="0")]
    kept, dropped = _uncovered_hints(hints, seen, 1.0, 8, 80.0)
    # root cell 0 of an 80 s video is 0-1.25 s: covered, like 5-20 s; 30-60 s reaches past 40 s.
    assert kept == [Hint(start=30.0, end=60.0)]
    assert dropped == "5-20 s, cell 0"


# -- the graph ---------------------------------------------------------------------------------------


@pytest.mark.e2e
async def test_a_bfs_question_first_covers_the_timeline_then_reports_coverage(
    counter_video: Path, tmp_path: Path
) -> None:
    """Round 1 of a count sends workers only to uncovered ranges, one grid each at the resolution, no probe call;
    coverage lands in the state through its reducer and in the trace."""
    probes: list[int] = []

    def script(name: str, text: str, schema: dict[str, Any]) -> Any:
        if name == "GlobalProbe":
            probes.append(1)
        if name == "WorkerStep":
            assert "ADD_TO_SCRATCHPAD" in actions_of(schema)
            return step("ADD_TO_SCRATCHPAD", [3], [{"cell": 3, "description": "digit 7", "confidence": 0.9}])
        if name == "UncertaintyAnalysis":
            assert "100% of the timeline seen with frames at most 0.1 s apart" in text
            assert "Distinct occurrences" in text
        return default_reply(name, text, schema)

    cfg = RunConfig.of(cell_px=64, workers=2, rounds=2, traversal="bfs", bfs_resolution_s=0.1)
    out, chat, _ = await run_graph(counter_video, tmp_path, script, cfg, question="How many times is 7 shown?")
    round1 = [r.target for r in out["reports"] if r.round == 1]
    assert round1 and all(t.source == "coverage" and t.path is None for t in round1)
    spans = sorted((t.start, t.end) for t in round1)
    assert spans[0][0] == 0.0 and spans[-1][1] == pytest.approx(80.0)
    assert all(a[1] == pytest.approx(b[0]) for a, b in itertools.pairwise(spans))  # contiguous
    assert all(view_step(a, b, 64) <= 0.1 for a, b in spans)
    assert not probes  # the coverage round needs no ranking of root cells
    assert covered_share(out["coverage"], 80.0, 0.1) == pytest.approx(1.0)
    found = detail({**out, "evidence": out.get("evidence", [])}, [])
    text = "\n".join(lines(found, {}))
    assert "coverage (stretch, seconds between frames seen)" in text
    decide_text = next(t for n, t in chat.seen if n == "FinalDecision")
    assert "Distinct occurrences" in decide_text and "100% of the timeline seen" in decide_text


@pytest.mark.unit
def test_the_bfs_step_is_the_finest_one_round_of_workers_affords_within_its_bounds() -> None:
    from videoatlas.agents.video_rlm.settings import VideoRLMSettings

    default = VideoRLMSettings()  # 4 workers, bfs_resolution_s 16
    assert default.bfs_step(600.0, 8) == pytest.approx(600.0 / 256)  # 10 minutes: four grids at 2.3 s
    assert default.bfs_step(3600.0, 8) == pytest.approx(3600.0 / 256)  # 1 hour: 14 s
    assert default.bfs_step(3 * 3600.0, 8) == 16.0  # 3 hours: no finer than the cap allows
    assert default.bfs_step(60.0, 8) == 1.0  # 1 minute: not finer than 1 s by itself
    assert VideoRLMSettings(workers=8).bfs_step(600.0, 8) == pytest.approx(600.0 / 512)
    assert VideoRLMSettings(bfs_resolution_s=0.1).bfs_step(600.0, 8) == 0.1  # a finer cap is kept
    assert VideoRLMSettings(bfs_resolution_s=0).bfs_step(600.0, 8) == 0.0  # coverage off
    # A DFS sweep is paced over the rounds left (three, two, one): 4.7 s, 7.0 s, 14 s at an hour; capped at 3 hours.
    assert [default.coverage_step("dfs", 3600.0, 8, left) for left in (3, 2, 1)] == pytest.approx(
        [4.6875, 7.03125, 14.0625]
    )
    assert [default.coverage_step("dfs", 3 * 3600.0, 8, left) for left in (3, 1)] == pytest.approx([14.0625, 16.0])
    assert default.coverage_step("dfs", 600.0, 8, 3) == 1.0  # not finer than 1 s by itself
    assert default.coverage_step("bfs", 600.0, 8) == default.bfs_step(600.0, 8)


@pytest.mark.e2e
@pytest.mark.parametrize("kind", ["counting", "order"])
async def test_each_appearance_shorter_than_a_root_cell_is_seen_and_filed_in_round_one(
    synth_video: tuple[Path, dict[str, Any]], tmp_path: Path, kind: str
) -> None:
    """The badges and words stay 4 s on screen; a 4x4 root grid of the 180-s video has frames 11.25 s apart.

    At the default settings the BFS scan takes the finest step one round of workers affords (180 s over
    four grids of 16 frames: 2.8 s), so every appearance is on some cell of round 1, and a worker that
    files the cells showing it puts evidence at each one in round 1. Before, it covered the timeline at
    the 16 s cap with one look at the root grid's frames, marked everything explored, and answered without
    evidence. (Replaces the stand-in run of ``test_agent_e2e.py``: which cells a model files is its own.)
    """
    video, truth = synth_video
    question = next(q for q in truth["questions"] if q["kind"] == kind)
    shown = [(float(a), float(b)) for a, b in question["evidence"]]

    def script(name: str, text: str, schema: dict[str, Any]) -> Any:
        if name == "TraversalChoice":
            return {"traversal": "bfs", "reason": "a count or an order of things"}
        if name == "WorkerStep" and "(nothing yet)" in text:
            spans = {i: (a, b) for i, a, b, _ in listed_cells(text)}
            showing = [c for c, (a, b) in spans.items() if any(s <= (a + b) / 2 <= e for s, e in shown)]
            if showing:
                items = [{"cell": c, "description": "the thing asked about", "confidence": 0.9} for c in showing]
                return step("ADD_TO_SCRATCHPAD", showing, items)
        if name == "FinalDecision":
            labels = re.findall(r"^\[([A-Z]+)\]", text, re.M)
            answer = question["choices"].index(question["answer"])
            return {**default_reply(name, text, schema), "answer": answer, "evidence": labels}
        return default_reply(name, text, schema)

    out, chat, _ = await run_graph(
        video, tmp_path, script, RunConfig.of(k=4, cell_px=64), question["question"], question["choices"]
    )
    round1 = [r.target for r in out["reports"] if r.round == 1]
    assert len(round1) == 4 and all(t.source == "coverage" for t in round1)  # four grids of 16 frames
    assert all(view_step(t.start or 0.0, t.end or 0.0, 16) <= 180.0 / 64 + 1e-6 for t in round1)
    first = [e for e in out["evidence"] if found_in_round(e) == 1]
    for start, end in shown:  # each appearance asked about is in round 1's evidence
        assert any(start - 0.5 <= e.time <= end + 0.5 for e in first), (start, end, [e.time for e in first])
    assert out["answer"] == question["answer"] and set(out["cited"]) == {e.id for e in out["evidence"]}
    assert "Distinct occurrences" in next(t for n, t in chat.seen if n == "FinalDecision")
