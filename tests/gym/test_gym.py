"""VideoAtlas as a Gymnasium environment: the API checks, vector rollouts, and hand-made episodes with known rewards."""

from __future__ import annotations

import functools
import warnings
from pathlib import Path

import gymnasium
import numpy as np
import pytest
import structlog
from gymnasium.utils.env_checker import check_env
from gymnasium.wrappers import RecordEpisodeStatistics

import videoatlas.gym as vg
from videoatlas.environment.geometry import cell_interval
from videoatlas.environment.video import probe
from videoatlas.errors import BadInputError
from videoatlas.gym.env import SHARED, GridEnv

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def tasks(tmp_path_factory: pytest.TempPathFactory) -> list[vg.Task]:
    return vg.SyntheticTasks(tmp_path_factory.mktemp("gym"), duration=120, seed=1)


def _masked(obs: dict[str, np.ndarray], rng: np.random.Generator) -> int:
    return int(rng.choice(np.flatnonzero(obs["action_mask"])))


@pytest.mark.unit
def test_iou_of_intervals() -> None:
    assert vg.iou((10.0, 20.0), (10.0, 20.0)) == 1.0
    assert vg.iou((0.0, 5.0), (6.0, 9.0)) == 0.0
    assert vg.iou((0.0, 10.0), (5.0, 15.0)) == pytest.approx(5 / 15)


@pytest.mark.unit
def test_action_ids_round_trip() -> None:
    layout = vg.ActionLayout(4, 5)
    assert layout.size == 6 * 16 + 3 + 5
    for i in range(layout.size):
        action = layout.decode(i)
        assert layout.encode(action.name, action.arg) == i
    assert str(layout.decode(layout.encode("INVESTIGATE_AFTER", 7))) == "INVESTIGATE_AFTER(7)"
    with pytest.raises(ValueError, match="outside the action space"):
        layout.decode(layout.size)


def test_check_env_passes_for_both_tasks(tasks: list[vg.Task]) -> None:
    for kind in ("qa", "grounding"):
        env = gymnasium.make(vg.ENV_ID, tasks=tasks, task=kind)
        check_env(env.unwrapped, skip_render_check=True)
        env.close()


def test_a_bare_make_plays_on_a_small_synthetic_video_made_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VIDEOATLAS_HOME", str(tmp_path / "home"))
    with structlog.testing.capture_logs() as first_logs:
        env = gymnasium.make(vg.ENV_ID)
    obs, info = env.reset(seed=0)
    obs, _reward, _term, _trunc, info = env.step(_masked(obs, np.random.default_rng(0)))
    video = Path(info["video"])
    assert video.is_relative_to(tmp_path / "home" / "gym") and probe(video).duration == pytest.approx(60.0, abs=0.5)
    made = [e for e in first_logs if e["event"] == "gym_default_tasks_made"]
    assert len(made) == 1 and made[0]["folder"] == str(video.parent)  # said, with where
    env.close()

    drawn = video.stat().st_mtime_ns
    with structlog.testing.capture_logs() as second_logs:
        again = gymnasium.make(vg.ENV_ID)
    assert not [e for e in second_logs if e["event"] == "gym_default_tasks_made"]
    assert video.stat().st_mtime_ns == drawn  # reused, not drawn again
    assert len(again.unwrapped.tasks) >= 2  # type: ignore[attr-defined]
    check_env(again.unwrapped, skip_render_check=True)
    again.close()


def test_episodes_reproduce_from_their_seed(tasks: list[vg.Task]) -> None:
    env = GridEnv(tasks)
    first, info = env.reset(seed=5)
    again, info_again = env.reset(seed=5)
    assert info["task"] == info_again["task"]
    assert all(np.array_equal(first[key], again[key]) for key in first)
    env.close()


def test_a_correct_answer_after_finding_the_needle_is_worth_one_minus_the_steps(tasks: list[vg.Task]) -> None:
    index, task = next((i, t) for i, t in enumerate(tasks) if t.target is not None and t.answer_index is not None)
    assert task.target is not None and task.answer_index is not None
    env = GridEnv(tasks, task="qa", step_cost=0.05)
    obs, _ = env.reset(seed=0, options={"task": index})
    layout = env.layout
    # Open the root cell that holds the annotated moment, record it, answer right.
    cell = int(np.flatnonzero((obs["cells"][:, 0] <= task.target[0]) & (task.target[0] < obs["cells"][:, 1]))[0])
    obs, r1, term, _, _ = env.step(layout.encode("EXPAND", cell))
    assert not term and r1 == pytest.approx(-0.05) and obs["depth"] == 1
    assert obs["cells"][0, 0] == pytest.approx(cell_interval(120.0, (cell,), 4).start, abs=1e-3)
    obs, r2, term, _, _ = env.step(layout.encode("ADD", 0))
    assert obs["scratchpad"][0] > 0 and obs["scratchpad"][1] == -1
    obs, r3, term, truncated, _ = env.step(layout.encode("ANSWER", task.answer_index))
    assert term and not truncated
    assert r1 + r2 + r3 == pytest.approx(1.0 - 3 * 0.05)
    wrong = (task.answer_index + 1) % len(task.choices)
    env.reset(seed=0, options={"task": index})
    _, reward, term, _, _ = env.step(layout.encode("ANSWER", wrong))
    assert term and reward == pytest.approx(-0.05)
    env.close()


def test_grounding_reward_is_the_iou_of_the_marked_span(tmp_path: Path) -> None:
    video = vg.SyntheticTasks(tmp_path, duration=120, seed=2)[0].video
    exact = cell_interval(120.0, (5,), 4)
    perfect = vg.Task("exact", video, "When?", ("a", "b"), None, (exact.start, exact.end))
    disjoint = vg.Task("away", video, "When?", ("a", "b"), None, (100.0, 110.0))
    env = GridEnv([perfect, disjoint], task=vg.GroundingReward(step_cost=0.0))
    layout = env.layout
    for index, expected in ((0, 1.0), (1, 0.0)):
        obs, _ = env.reset(options={"task": index})
        assert obs["action_mask"][layout.encode("COMMIT")] == 0  # nothing recorded yet
        env.step(layout.encode("ADD", 5))  # root cell 5 is exactly 37.5-45 s
        _, reward, term, _, _ = env.step(layout.encode("COMMIT"))
        assert term and reward == pytest.approx(expected)
    env.close()


def test_a_masked_action_changes_nothing_and_costs_its_penalty(tasks: list[vg.Task]) -> None:
    env = GridEnv(tasks, step_cost=0.01, invalid_penalty=0.25)
    obs, _ = env.reset(seed=1)
    backtrack = env.layout.encode("BACKTRACK")
    assert obs["action_mask"][backtrack] == 0
    after, reward, term, _, info = env.step(backtrack)
    assert reward == pytest.approx(-0.26) and not term
    assert info["invalid_action"] == "BACKTRACK is not valid now: at the root there is nowhere to go back to"
    assert after["budget"] == obs["budget"] - 1  # the step is spent
    assert all(np.array_equal(after[k], obs[k]) for k in obs if k != "budget")  # nothing else changed
    env.step(env.layout.encode("EXPAND", 3))
    env.step(env.layout.encode("FINISHED"))  # cell 3 is now a dead zone, blacked out
    obs, *_ = env.step(env.layout.encode("EXPAND", 2))
    obs, reward, *_, info = env.step(env.layout.encode("BACKTRACK"))
    assert "invalid_action" not in info and reward == pytest.approx(-0.01)
    assert obs["dead"][3] == 1 and obs["action_mask"][env.layout.encode("EXPAND", 3)] == 0
    _, reward, *_, info = env.step(env.layout.encode("EXPAND", 3))
    assert "dead zone" in info["invalid_action"] and reward == pytest.approx(-0.26)
    env.close()
    with pytest.raises(vg.InvalidActionError, match="reset"):
        GridEnv(tasks).step(0)


def test_a_task_whose_video_cannot_be_decoded_is_skipped_with_a_warning(tasks: list[vg.Task], tmp_path: Path) -> None:
    broken = tmp_path / "broken.mp4"
    broken.write_bytes(b"not a video at all" * 100)
    bad = vg.Task("bad", str(broken), "?", ("a", "b"), 0, None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        kept = vg.usable([bad, tasks[0]])
    assert kept == [tasks[0]]
    assert any("task bad skipped" in str(w.message) for w in caught)
    with pytest.raises(BadInputError, match="no task"):
        vg.usable([bad])


def test_vector_rollouts_share_one_decoder_and_record_episode_statistics(tasks: list[vg.Task]) -> None:
    def make() -> gymnasium.Env:
        return RecordEpisodeStatistics(GridEnv(tasks, max_steps=6))

    envs = gymnasium.vector.SyncVectorEnv([make for _ in range(4)])
    obs, _ = envs.reset(seed=0)
    rng = np.random.default_rng(0)
    finished = 0
    for _ in range(30):
        actions = np.array([int(rng.choice(np.flatnonzero(m))) for m in obs["action_mask"]])
        obs, rewards, terminated, truncated, infos = envs.step(actions)
        assert obs["grid"].shape == (4, 192, 192, 3) and rewards.shape == (4,)
        finished += int(np.sum(terminated | truncated))
        if "episode" in infos:
            assert np.all(infos["episode"]["l"][infos["_episode"]] <= 6)
    assert finished >= 4
    # Four environments on one video: one frame source in this process.
    videos = {key[0] for key in SHARED._entries}
    assert len(SHARED._entries) == len(videos)
    envs.close()
    assert not SHARED._entries


def test_async_vector_env_runs(tasks: list[vg.Task]) -> None:
    # Spawned, not forked: the test process runs server and decoder threads that a fork would copy mid-lock.
    make = functools.partial(GridEnv, tasks, max_steps=4)
    envs = gymnasium.vector.AsyncVectorEnv([make for _ in range(2)], context="spawn")
    obs, _ = envs.reset(seed=3)
    rng = np.random.default_rng(1)
    for _ in range(6):
        obs, *_ = envs.step(np.array([_masked({"action_mask": m}, rng) for m in obs["action_mask"]]))
    assert obs["grid"].shape == (2, 192, 192, 3)
    envs.close()
