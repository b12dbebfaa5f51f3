"""Baselines on ``videoatlas/Grid-v0``: a random policy and a simple heuristic one, on one core.

Reports, per task kind and policy, the mean episode return, the success rate (QA: the right answer;
grounding: IoU >= 0.5 with the annotated moment) and environment steps per second.

* ``random``: a uniformly random valid action each step (from the observation's action mask).
* ``heuristic``: uses the pixels only. At each grid it opens the cell that stands out most from the
  grid's median cell (where a card or a banner sits on a plain background), down to cells under
  ``--min-span`` seconds, records that cell, then answers (QA: a random choice, since it reads no
  text) or commits (grounding).

    OMP_NUM_THREADS=1 taskset -c 0 python benchmarks/bench_gym.py --episodes 40
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from typing import Any

import numpy as np

import videoatlas.gym as vg
from videoatlas.gym.env import GridEnv


def random_policy(obs: dict[str, Any], env: GridEnv, rng: np.random.Generator) -> int:
    return int(rng.choice(np.flatnonzero(obs["action_mask"])))


def heuristic_policy(obs: dict[str, Any], env: GridEnv, rng: np.random.Generator) -> int:
    layout, mask = env.layout, obs["action_mask"]
    if obs["scratchpad"][0] >= 0:  # something is recorded: finish
        if mask[layout.encode("COMMIT")]:
            return layout.encode("COMMIT")
        answers = [layout.encode("ANSWER", i) for i in range(layout.max_choices) if mask[layout.encode("ANSWER", i)]]
        return int(rng.choice(answers))
    k, px = env.k, env.cell_px
    tiles = obs["grid"].reshape(k, px, k, px, 3).transpose(0, 2, 1, 3, 4).reshape(k * k, px, px, 3).astype(np.float32)
    median = np.median(tiles, axis=0)
    odd = [float(np.abs(tile - median).mean()) if not obs["dead"][i] else -1.0 for i, tile in enumerate(tiles)]
    cell = int(np.argmax(odd))
    if mask[layout.encode("EXPAND", cell)]:
        return layout.encode("EXPAND", cell)
    if mask[layout.encode("ADD", cell)]:
        return layout.encode("ADD", cell)
    return random_policy(obs, env, rng)


POLICIES = {"random": random_policy, "heuristic": heuristic_policy}


def run(env: GridEnv, policy: str, episodes: int, seed: int) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    returns, successes, steps = [], 0, 0
    began = time.perf_counter()
    for episode in range(episodes):
        obs, _ = env.reset(seed=seed + episode)
        total, done, reward, terminated = 0.0, False, 0.0, False
        while not done:
            obs, reward, terminated, truncated, _ = env.step(POLICIES[policy](obs, env, rng))
            total += reward
            steps += 1
            done = terminated or truncated
        returns.append(total)
        last = reward + env.reward_def.step_cost  # the terminal step's task reward, without its cost
        successes += int(terminated and last >= (0.5 if env.reward_def.kind == "grounding" else 1.0))
    elapsed = time.perf_counter() - began
    return {
        "mean_return": round(float(np.mean(returns)), 4),
        "success_rate": round(successes / episodes, 4),
        "steps": steps,
        "steps_per_s": round(steps / elapsed, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--episodes", type=int, default=40)
    parser.add_argument("--duration", type=float, default=600.0, help="synthetic video length in seconds")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--root", default=None, help="folder for the synthetic video (default: a temporary one)")
    args = parser.parse_args()
    root = args.root or tempfile.mkdtemp(prefix="bench-gym-")
    tasks = vg.SyntheticTasks(root, duration=args.duration, seed=1)
    results: dict[str, Any] = {"tasks": len(tasks), "duration_s": args.duration, "episodes": args.episodes}
    for kind in ("qa", "grounding"):
        env = GridEnv(tasks, task=kind, max_steps=24, min_span_s=2.0)
        for policy in POLICIES:
            results[f"{kind}/{policy}"] = run(env, policy, args.episodes, args.seed)
        env.close()
    print(json.dumps(results, indent=1))  # noqa: T201 - the benchmark's report


if __name__ == "__main__":
    main()
