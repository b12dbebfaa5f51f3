"""EEA's arithmetic: coverage frames against brute-force minimax, children tiling, fusion by hand, anchors,
query cleaning, the index's frame plan and cap, the shortest stretch offered, and the embeddings client's
errors."""

from __future__ import annotations

import itertools
import math
import random
from types import SimpleNamespace
from typing import Any

import httpx
import numpy as np
import pytest

from videoatlas.agents.eea.answer import seen_px
from videoatlas.agents.eea.evaluate import candidates
from videoatlas.agents.eea.retrieve import clean_queries, index_rate, merge_hits, search_hits
from videoatlas.agents.eea.search import (
    children,
    cluster_anchors,
    coverage_frames,
    expansion_frames,
    fuse,
    gallop_frames,
    grid,
    normalised_entropy,
    query_score,
    radius,
)
from videoatlas.agents.eea.settings import EEASettings
from videoatlas.agents.eea.state import Segment
from videoatlas.errors import EndpointError, ModelNotServedError
from videoatlas.llm.embeddings import EmbeddingsClient
from videoatlas.runtime.frame_index import FrameIndex, plan_index

pytestmark = pytest.mark.unit


def brute_force(points: list[float], fixed: list[float], n: int) -> float:
    """The smallest largest distance any ``n`` of the points reach together with ``fixed``."""
    free = [p for p in points if p not in fixed]
    return min(radius(points, [*fixed, *extra]) for extra in itertools.combinations(free, min(n, len(free))))


@pytest.mark.parametrize("seed", range(40))
def test_coverage_frames_reach_the_brute_force_minimax(seed: int) -> None:
    rng = random.Random(seed)
    points = sorted({round(rng.uniform(0, 100), 2) for _ in range(rng.randint(3, 11))})
    fixed = sorted(rng.sample(points, rng.randint(0, min(3, len(points) - 1))))
    if rng.random() < 0.3:
        fixed.append(round(rng.uniform(0, 100), 2))  # an anchor off the grid
    n = rng.randint(1, 4)
    chosen = coverage_frames(points, fixed, n)
    assert len(chosen) == min(n, len([p for p in points if p not in fixed]))
    assert len(set(chosen)) == len(chosen) and not set(chosen) & set(fixed)
    assert math.isclose(radius(points, [*fixed, *chosen]), brute_force(points, fixed, n), abs_tol=1e-9)


def test_coverage_of_an_empty_segment_leaves_no_point_far() -> None:
    points = grid(0.0, 70.0, 7)  # 5, 15, ..., 65 s
    frames = coverage_frames(points, [], 3)
    assert len(frames) == 3 and set(frames) <= set(points)
    assert radius(points, frames) == pytest.approx(10.0)  # every point within one step of a frame


@pytest.mark.parametrize("seed", range(25))
def test_the_children_always_tile_the_segment(seed: int) -> None:
    rng = random.Random(seed)
    start = rng.uniform(0, 500)
    end = start + rng.uniform(1, 500)
    anchors = [(rng.uniform(start - 50, end + 50), rng.uniform(0.5, 0.9)) for _ in range(rng.randint(0, 8))]
    b = rng.randint(1, 8)
    b_s = rng.randint(0, b)
    fixed, frames = expansion_frames(start, end, anchors, b, b_s)
    assert len(frames) == b and len(fixed) <= b_s
    assert all(start < f < end for f in frames) and frames == sorted(frames)
    kids = children(start, end, frames)
    assert len(kids) == b + 1
    assert kids[0][0] == start and kids[-1][1] == end
    assert all(a[1] == b_[0] for a, b_ in itertools.pairwise(kids)) and all(a < b_ for a, b_ in kids)


@pytest.mark.parametrize("from_end", [False, True])
def test_a_relation_window_is_seen_most_finely_next_to_its_anchor(from_end: bool) -> None:
    """Right after an anchor at 100 s (or just before one at 164 s): frames 1, 2, 4, ..., 32 s from it."""
    frames = gallop_frames(100.0, 164.0, 6, from_end)
    anchor = 164.0 if from_end else 100.0
    assert sorted(abs(f - anchor) for f in frames) == pytest.approx([1.0, 2.0, 4.0, 8.0, 16.0, 32.0])
    assert frames == sorted(frames) and all(100.0 < f < 164.0 for f in frames)
    lengths = [b - a for a, b in children(100.0, 164.0, frames)]
    nearest_first = lengths[::-1] if from_end else lengths
    assert nearest_first == pytest.approx([1.0, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0])  # each child twice the last
    assert gallop_frames(100.0, 100.0, 6, from_end) == [] and gallop_frames(100.0, 164.0, 0, from_end) == []


def test_the_best_anchors_inside_the_segment_come_first() -> None:
    anchors = [(5.0, 0.99), (20.0, 0.7), (30.0, 0.9), (40.0, 0.8), (80.0, 0.95)]
    fixed, frames = expansion_frames(10.0, 50.0, anchors, 4, 2)
    assert fixed == [30.0, 40.0]  # the two best inside 10-50 s; 5 s and 80 s lie outside
    assert set(fixed) <= set(frames) and len(frames) == 4


def test_anchors_in_neighbouring_clips_take_one_frame_and_leave_the_next_to_another_showing() -> None:
    """A badge shown at 1,085-1,106 s, 1,688-1,709 s and 2,396-2,416 s of an hour; its hits cluster at both ends
    of the second showing. The three best anchors by similarity hold that showing twice and miss the third."""
    anchors = [(1085.0, 0.851), (1697.0, 0.851), (1708.0, 0.851), (2396.0, 0.848), (3007.0, 0.848)]
    assert expansion_frames(0.0, 3600.0, anchors, 6, 3)[0] == [1085.0, 1697.0, 1708.0]  # the paper's rule
    fixed, frames = expansion_frames(0.0, 3600.0, anchors, 6, 3, apart=20.0)
    assert fixed == [1085.0, 1697.0, 2396.0]
    assert 1708.0 not in frames and len(frames) == 6


def test_anchors_minutes_apart_are_taken_by_similarity_alone() -> None:
    """A programme on air for five minutes (1,040-1,345 s): its three anchors are the best, however close in an hour."""
    anchors = [(1047.0, 0.86), (1243.0, 0.87), (1340.0, 0.86), (1795.0, 0.80), (2783.0, 0.79)]
    fixed, _ = expansion_frames(0.0, 3600.0, anchors, 6, 3, apart=20.0)
    assert fixed == [1047.0, 1243.0, 1340.0]


@pytest.mark.parametrize(
    ("width", "height", "frame_px", "expected"),
    [(1280, 720, 256, 455), (720, 1280, 256, 455), (640, 480, 256, 341), (1280, 720, 1024, 1024)],
)
def test_the_answer_reads_the_memory_as_large_as_the_rounds_showed_it(
    width: int, height: int, frame_px: int, expected: int
) -> None:
    """A round shows frames ``frame_px`` on their short side; the answer's tiles are that frame's long side (capped)."""
    ctx: Any = SimpleNamespace(
        atlas=SimpleNamespace(source=SimpleNamespace(info=SimpleNamespace(width=width, height=height)))
    )
    assert seen_px(ctx, EEASettings(frame_px=frame_px)) == expected


def test_equal_rewards_give_the_query_score() -> None:
    h, uncertainty = fuse([0.4, 0.4, 0.4, 0.4], [0.1, 0.8, 0.3, 0.5], 0.1)
    assert uncertainty == pytest.approx(1.0)
    assert h == pytest.approx([0.1, 0.8, 0.3, 0.5])


def test_a_one_hot_reward_gives_about_the_reward() -> None:
    rewards = [0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    h, uncertainty = fuse(rewards, [0.9] * 7, 0.1)
    assert uncertainty < 0.01
    assert h == pytest.approx(rewards, abs=0.01)


def test_the_entropy_by_hand() -> None:
    # softmax([0, ln 3] / 1) = [1/4, 3/4]: H = -(1/4 ln 1/4 + 3/4 ln 3/4) / ln 2
    expected = -(0.25 * math.log(0.25) + 0.75 * math.log(0.75)) / math.log(2)
    assert normalised_entropy([0.0, math.log(3)], 1.0) == pytest.approx(expected)
    assert normalised_entropy([0.7], 0.1) == 0.0


def test_the_query_score_is_a_log_mean_exp() -> None:
    phis = [0.82, 0.75, 0.9]
    expected = 0.1 * math.log(sum(math.exp(p / 0.1) for p in phis) / 3)
    assert query_score(phis, 0.1, 0.0) == pytest.approx(expected)
    assert max(phis) >= query_score(phis, 0.1, 0.0) >= sum(phis) / 3  # between the mean and the best
    assert query_score([], 0.1, -0.5) == -0.5


def test_hits_cluster_in_time_and_each_cluster_keeps_its_best() -> None:
    hits = [(10.0, 0.5), (14.0, 0.8), (16.0, 0.6), (40.0, 0.7), (41.0, 0.9), (41.0, 0.95), (100.0, 0.4)]
    assert cluster_anchors(hits, 5.0) == [(14.0, 0.8), (41.0, 0.95), (100.0, 0.4)]
    assert merge_hits([(1.0, 0.2)], [(1.0, 0.5), (2.0, 0.1)]) == [(1.0, 0.5), (2.0, 0.1)]


def shown_three_times() -> FrameIndex:
    """One frame a second for 100 s: a sign on screen at 10-29 s (clearest at 20 s), 50-54 s and 80-84 s."""
    times = np.arange(100, dtype=float) + 0.5
    sims = np.full(100, 0.1)
    sims[10:30], sims[20] = 0.90, 0.95
    sims[50:55] = 0.80
    sims[80:85] = 0.85
    vectors = np.stack([sims, np.sqrt(1.0 - sims**2)], axis=1)  # unit vectors whose cosine with (1, 0) is sims
    return FrameIndex(times=times, vectors=vectors)


def test_a_query_retrieves_each_showing_once_not_the_neighbours_of_the_best_one() -> None:
    index, query = shown_three_times(), np.array([[1.0, 0.0]])
    # Frame by frame the best three are neighbours in the first showing: the other two are missed.
    assert [t for t, _ in index.search(query[0], 3)] == [20.5, 10.5, 11.5]
    hits = search_hits(index, query, EEASettings(top_k=3, cluster_gap_s=10.0))
    assert [t for t, _ in hits] == [20.5, 80.5, 50.5]  # each showing's best frame, the best showing first
    assert [phi for _, phi in hits] == pytest.approx([0.95, 0.85, 0.80])
    assert [t for t, _ in cluster_anchors(hits, 10.0)] == [20.5, 50.5, 80.5]
    # With no gap a query's hits are its best frames, as before.
    assert [t for t, _ in search_hits(index, query, EEASettings(top_k=3, cluster_gap_s=0.0))] == [20.5, 10.5, 11.5]


def test_a_query_every_frame_matches_alike_gives_one_hit_not_a_chain() -> None:
    times = np.arange(600, dtype=float) * 2.0 + 1.0  # 20 minutes at one frame every 2 s
    vectors = np.tile([0.9, np.sqrt(1 - 0.81)], (600, 1))  # a place name on screen throughout
    index = FrameIndex(times=times, vectors=vectors)
    assert index_rate(index) == pytest.approx(0.5)
    [(t, phi)] = search_hits(index, np.array([[1.0, 0.0]]), EEASettings(top_k=8, cluster_gap_s=10.0))
    assert t == 1.0 and phi == pytest.approx(0.9)  # the first frame of the one long showing, not eight in a row


def test_empty_and_repeated_queries_are_dropped() -> None:
    kept, dropped = clean_queries(["a red car on the bridge", "", "A red car, on the bridge!", "the  harbor sign"], [])
    assert kept == ["a red car on the bridge", "the harbor sign"]
    assert dropped == ["", "A red car, on the bridge!"]
    kept, dropped = clean_queries(["The harbor sign", "boats at the pier"], ["the harbor sign"])
    assert kept == ["boats at the pier"] and dropped == ["The harbor sign"]


def test_the_index_plan_and_its_cap() -> None:
    plan = plan_index(120.0, 1.0, 4000)
    assert len(plan.times) == 120 and plan.fps == 1.0 and plan.note == ""
    assert plan.times[0] == pytest.approx(0.5) and plan.times[-1] == pytest.approx(119.5)
    long = plan_index(4 * 3600.0, 1.0, 4000)  # four hours at 1 fps would be 14,400 frames
    assert len(long.times) == 4000 and long.fps == pytest.approx(4000 / 14400, rel=1e-4)
    assert "cap of 4000" in long.note


def test_anchors_cannot_exceed_the_frames() -> None:
    with pytest.raises(ValueError, match="anchors"):
        EEASettings(expand_frames=2, anchors=3)
    assert EEASettings(anchors=0).anchors == 0


def _client(handler: httpx.MockTransport) -> EmbeddingsClient:
    return EmbeddingsClient("http://embed.test/v1", "e5", transport=handler, max_retries=1, backoff_s=0.0)


async def test_an_endpoint_without_the_route_is_one_clear_error() -> None:
    client = _client(httpx.MockTransport(lambda r: httpx.Response(404, json={"detail": "Not Found"})))
    with pytest.raises(EndpointError, match="has no embeddings route") as err:
        await client.embed_texts(["query: a harbor"])
    assert "\n" not in str(err.value)
    missing = {"error": {"message": "The model `e5` does not exist.", "type": "NotFoundError", "code": 404}}
    client = _client(httpx.MockTransport(lambda r: httpx.Response(404, json=missing)))
    with pytest.raises(ModelNotServedError, match="not served"):
        await client.embed_image(b"\xff\xd8")


async def test_vectors_come_back_in_order_and_unit_length() -> None:
    def reply(request: httpx.Request) -> httpx.Response:
        data = [{"index": 1, "embedding": [0.0, 3.0]}, {"index": 0, "embedding": [4.0, 0.0]}]
        return httpx.Response(200, json={"data": data, "usage": {"prompt_tokens": 7}})

    client = _client(httpx.MockTransport(reply))
    vectors = await client.embed_texts(["a", "b"])
    assert np.allclose(vectors, [[1.0, 0.0], [0.0, 1.0]])
    assert client.totals.requests == 1 and client.totals.prompt_tokens == 7


def test_a_stretch_too_short_for_its_frames_is_never_offered() -> None:
    """At 5 fps, B = 6 frames need 1.4 s: a shorter child would be opened with repeats of the same frames."""
    settings = EEASettings()
    shortest = (settings.expand_frames + 1) / 5.0
    tree = [
        Segment(id=1, start=0.0, end=60.0, expanded=True),
        Segment(id=2, start=0.0, end=30.0, round=1),
        Segment(id=3, start=30.0, end=31.0, round=1),  # too short
        Segment(id=4, start=31.0, end=32.4, round=1),  # exactly long enough
        Segment(id=5, start=32.4, end=60.0, round=1, expanded=True),
    ]
    assert [s.id for s in candidates(tree, shortest)] == [2, 4]
    assert [s.id for s in candidates(tree)] == [2, 3, 4]
