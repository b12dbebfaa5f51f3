"""Video-RLM's sweep after an empty DFS round (``sweep_on_miss``): what the next rounds are sent to."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent_helpers import default_reply, run_graph, step
from videoatlas.agents.video_rlm.coverage import covered_share, view_step
from videoatlas.runtime.context import RunConfig

pytestmark = pytest.mark.e2e

QUESTION = "What number is shown?"


def _targets(out: dict[str, Any], round_no: int) -> list[Any]:
    return sorted((r.target for r in out["reports"] if r.round == round_no), key=lambda t: t.start)


async def test_a_dfs_round_that_finds_nothing_is_followed_by_a_sweep_of_the_rest(
    counter_video: Path, tmp_path: Path
) -> None:
    """Round 1 opens two root cells (80 s video, 1.25 s cells) and finds nothing; round 2 sends both workers
    to the rest of the timeline as two ranges seen at 1 s or finer, without a probe call."""
    probes: list[int] = []

    def script(name: str, text: str, schema: dict[str, Any]) -> Any:
        if name == "GlobalProbe":
            probes.append(1)
        return default_reply(name, text, schema)  # every worker finishes at once: nothing found anywhere

    cfg = RunConfig.of(cell_px=64, workers=2, rounds=3, traversal="dfs", bfs_resolution_s=1.0)
    out, _, _ = await run_graph(counter_video, tmp_path, script, cfg, question=QUESTION)
    first, second, third = _targets(out, 1), _targets(out, 2), _targets(out, 3)
    assert [(t.path, t.source) for t in first] == [("0", "probe"), ("1", "probe")]
    assert [t.source for t in second] == ["coverage", "coverage"]
    assert [(t.start, t.end) for t in second] == [
        pytest.approx((2.5, 41.25)),
        pytest.approx((41.25, 80.0)),
    ]
    assert all(view_step(t.start, t.end, 64) <= 1.0 for t in second)
    assert covered_share(out["coverage"], 80.0, 1.0) == pytest.approx(1.0)
    # Each sweep worker finished its range: the whole timeline is explored, so there is no round 3.
    assert not third and out["stop_reason"] == "every region is explored"
    assert [(z[0], z[1]) for z in out["dead_zones"]] == [(0.0, 80.0)]
    assert len(probes) == 1  # round 1 only: the sweep ranks no cells


async def test_no_sweep_after_a_round_with_evidence_or_when_it_is_off(counter_video: Path, tmp_path: Path) -> None:
    """Evidence in round 1 keeps round 2 on the probe's cells; so does ``sweep_on_miss`` off after an empty round."""

    def finds(name: str, text: str, schema: dict[str, Any]) -> Any:
        if name == "WorkerStep" and "added 1 item" not in text:
            return step("ADD_TO_SCRATCHPAD", [5], [{"cell": 5, "description": "digit 7", "confidence": 0.9}])
        if name == "UncertaintyAnalysis":
            return {**default_reply(name, text, schema), "sufficient": False}
        return default_reply(name, text, schema)

    cfg = RunConfig.of(cell_px=64, workers=2, rounds=2, traversal="dfs", bfs_resolution_s=1.0)
    out, _, _ = await run_graph(counter_video, tmp_path / "found", finds, cfg, question=QUESTION)
    assert out["evidence"], "the scripted worker recorded evidence in round 1"
    second = _targets(out, 2)
    assert second and not any(t.source == "coverage" for t in second)

    off = RunConfig.of(cell_px=64, workers=2, rounds=2, traversal="dfs", bfs_resolution_s=1.0, sweep_on_miss=False)
    out, _, _ = await run_graph(counter_video, tmp_path / "off", default_reply, off, question=QUESTION)
    assert [t.source for t in _targets(out, 2)] == ["probe", "probe"]


async def test_no_sweep_while_the_rounds_left_can_open_every_root_cell(counter_video: Path, tmp_path: Path) -> None:
    """K=2 (four 20 s root cells), two workers, three rounds: after an empty round 1 the two cells left fit in the
    rounds left, so round 2 opens them (each seen finer than a sweep would see it) instead of sweeping."""
    cfg = RunConfig.of(k=2, cell_px=64, workers=2, rounds=3, traversal="dfs", bfs_resolution_s=1.0)
    out, _, _ = await run_graph(counter_video, tmp_path, default_reply, cfg, question=QUESTION)
    assert [(t.path, t.source) for t in _targets(out, 1)] == [("0", "probe"), ("1", "probe")]
    assert [(t.path, t.source) for t in _targets(out, 2)] == [("2", "probe"), ("3", "probe")]


async def test_no_sweep_where_the_root_grid_is_already_as_fine(counter_video: Path, tmp_path: Path) -> None:
    """With root frames 1.25 s apart and a 2 s resolution, the root grid has shown every 2 s stretch: no sweep."""
    cfg = RunConfig.of(cell_px=64, workers=2, rounds=2, traversal="dfs", bfs_resolution_s=2.0)
    out, _, _ = await run_graph(counter_video, tmp_path, default_reply, cfg, question=QUESTION)
    assert [t.source for t in _targets(out, 2)] == ["probe", "probe"]


async def test_a_sweep_is_paced_over_the_rounds_left(counter_video: Path, tmp_path: Path) -> None:
    """K=4 (root frames 5 s apart), a 4 s resolution, two workers, four rounds. Round 1 opens two root cells and
    finds nothing; the sweep then takes the rest at the finest step the rounds left afford (1 s with three left,
    1.25 s with two, 2.5 s with one), so the whole timeline is seen at 2.5 s or finer before the search stops.
    In one round at 4 s (two 35 s ranges, frames 2.2 s apart), something on screen for 2 s could fall between."""
    cfg = RunConfig.of(k=4, cell_px=64, workers=2, rounds=4, traversal="dfs", bfs_resolution_s=4.0)
    out, _, _ = await run_graph(counter_video, tmp_path, default_reply, cfg, question=QUESTION)
    assert [(t.path, t.source) for t in _targets(out, 1)] == [("0", "probe"), ("1", "probe")]
    spans = [[(t.start, t.end) for t in _targets(out, n)] for n in (2, 3, 4)]
    assert [t.source for n in (2, 3, 4) for t in _targets(out, n)] == ["coverage"] * 5
    assert spans[0] == [pytest.approx((10.0, 24.0)), pytest.approx((24.0, 38.0))]  # 70 s cut in five 14 s ranges
    assert spans[1] == [pytest.approx((38.0, 52.0)), pytest.approx((52.0, 66.0))]  # 42 s cut in three
    assert spans[2] == [pytest.approx((66.0, 80.0))]
    assert max(view_step(a, b, 16) for n in range(3) for a, b in spans[n]) == pytest.approx(14.0 / 16)
    assert covered_share(out["coverage"], 80.0, 1.0) == pytest.approx(1.0)
    assert out["stop_reason"] == "4 rounds done"
