"""``videoatlas/Grid-v0``: VideoAtlas as a Gymnasium environment (the paper's MDP, section 3).

State: the view (a grid over an interval; the root covers the whole video), its depth, the stack of
views above it, the scratchpad of recorded frames (positive memory), the dead zones of regions
declared explored (negative memory, blacked out in the picture), and the queue of cells marked
promising. The observation is the rendered grid of the view (or, after ZOOM, the close-up of one
cell's frame), the cells' intervals, the depth, which cells are dead, the scratchpad's times, the
question and choices as UTF-8 byte ids, the steps left, and the mask of the actions valid now.

Actions are the paper's, over cells (:mod:`videoatlas.gym.actions`). An action the mask forbids is
a no-op with a penalty: nothing changes, the step is spent, it costs ``invalid_penalty`` on top of
the step cost, and ``info["invalid_action"]`` says why. (Raising instead would break Gymnasium's own
``check_env``, which steps with unmasked samples; a policy that samples from ``obs["action_mask"]``
never pays it.)

Frames are decoded through the same environment as the agents' (:class:`VideoAtlas` over a
:class:`FrameSource`): environments in one process share one source per video, and renders are
cached on disk by content, so a vector of environments on one video decodes each frame once.
"""

from __future__ import annotations

import io
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import gymnasium
import numpy as np
from gymnasium import spaces
from PIL import Image

from videoatlas.environment.atlas import VideoAtlas
from videoatlas.environment.cache import RenderCache
from videoatlas.environment.concat import open_source
from videoatlas.environment.frames import FrameSource
from videoatlas.environment.geometry import (
    Cell,
    Grid,
    Interval,
    covered_fraction,
    grid_for_path,
    grid_over,
    investigate_interval,
)
from videoatlas.errors import BadInputError
from videoatlas.gym.actions import CELL_ACTIONS, Action, ActionLayout
from videoatlas.gym.rewards import GroundingReward, QAReward, Reward
from videoatlas.gym.tasks import Task, default_tasks
from videoatlas.paths import render_cache_dir

PAD = 256
"""Text is given as UTF-8 bytes (ids 0-255); this id pads the rest of the array."""
MAX_DEPTH = 32
MAX_SECONDS = 1e6
"""Upper bound of every time in an observation (about 277 hours: longer than any video the limits allow)."""


class InvalidActionError(ValueError):
    """A step the environment cannot take at all (before ``reset``)."""


@dataclass(frozen=True, slots=True)
class View:
    """One grid the agent can stand on: a hierarchy cell's expansion (``path``) or an explicit window."""

    interval: Interval
    path: tuple[int, ...] | None
    depth: int


@dataclass(slots=True)
class _Episode:
    task: Task
    atlas: VideoAtlas
    stack: list[View]
    dead: list[Interval] = field(default_factory=list)
    evidence: list[tuple[float, Interval]] = field(default_factory=list)
    frontier: list[View] = field(default_factory=list)
    zoom_t: float | None = None
    steps: int = 0


class _SharedAtlases:
    """One frame source and atlas per video and grid setting in this process, shared by its environments."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[tuple[str, int, int, str], tuple[VideoAtlas, FrameSource, int]] = {}

    def acquire(self, video: str, k: int, cell_px: int, backend: str) -> VideoAtlas:
        key = (video, k, cell_px, backend)
        with self._lock:
            if key in self._entries:
                atlas, source, users = self._entries[key]
                self._entries[key] = (atlas, source, users + 1)
                return atlas
            source = open_source(video, backend)
            atlas = VideoAtlas(source, k=k, cell_px=cell_px, cache=RenderCache(render_cache_dir()))
            self._entries[key] = (atlas, source, 1)
            return atlas

    def release(self, atlas: VideoAtlas) -> None:
        with self._lock:
            for key, (held, source, users) in list(self._entries.items()):
                if held is atlas:
                    if users > 1:
                        self._entries[key] = (held, source, users - 1)
                    else:
                        del self._entries[key]
                        source.close()
                    return


SHARED = _SharedAtlases()


class GridEnv(gymnasium.Env[dict[str, Any], int]):
    """Navigate one video's hierarchical grid to answer a question or ground a moment."""

    metadata = {"render_modes": ["rgb_array"]}  # noqa: RUF012 - Gymnasium's class attribute

    def __init__(
        self,
        tasks: Sequence[Task] | None = None,
        task: Literal["qa", "grounding"] | Reward = "qa",
        k: int = 4,
        cell_px: int = 48,
        max_steps: int = 32,
        step_cost: float = 0.01,
        min_span_s: float = 1.0,
        max_choices: int = 5,
        max_text: int = 256,
        max_choice_text: int = 64,
        max_evidence: int = 16,
        invalid_penalty: float = 0.1,
        backend: str = "pyav",
        render_mode: str | None = None,
    ) -> None:
        if tasks is None:
            tasks = default_tasks()
        if not tasks:
            raise BadInputError("the environment needs at least one task")
        if max_steps < 1 or max_evidence < 1 or max_choices < 2:
            raise BadInputError("max_steps and max_evidence must be positive and max_choices at least 2")
        self.tasks = list(tasks)
        self.reward_def: Reward = (
            task
            if not isinstance(task, str)
            else (QAReward(step_cost=step_cost) if task == "qa" else GroundingReward(step_cost=step_cost))
        )
        self.k, self.cell_px, self.max_steps = k, cell_px, max_steps
        self.min_span_s, self.max_evidence, self.backend = min_span_s, max_evidence, backend
        self.invalid_penalty = invalid_penalty
        self.max_text, self.max_choice_text = max_text, max_choice_text
        self.layout = ActionLayout(k, max_choices)
        self.render_mode = render_mode
        side = k * cell_px
        cells = k * k
        self.action_space = spaces.Discrete(self.layout.size)  # type: ignore[assignment]  # numpy ints, as Gymnasium samples them
        self.observation_space = spaces.Dict(
            {
                "grid": spaces.Box(0, 255, (side, side, 3), np.uint8),
                "cells": spaces.Box(0.0, MAX_SECONDS, (cells, 2), np.float32),
                "depth": spaces.Discrete(MAX_DEPTH + 2, start=-1),
                "dead": spaces.MultiBinary(cells),
                "scratchpad": spaces.Box(-1.0, MAX_SECONDS, (max_evidence,), np.float32),
                "question": spaces.Box(0, PAD, (max_text,), np.int32),
                "choices": spaces.Box(0, PAD, (max_choices, max_choice_text), np.int32),
                "budget": spaces.Discrete(max_steps + 1),
                "action_mask": spaces.MultiBinary(self.layout.size),
            }
        )
        self._episode: _Episode | None = None

    # -- gymnasium API ---------------------------------------------------------------------------

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Start an episode on a task drawn with the seeded generator (``options={"task": i}`` picks one)."""
        super().reset(seed=seed)
        index = int(options["task"]) if options and "task" in options else int(self.np_random.integers(len(self.tasks)))
        task = self.tasks[index]
        if len(task.choices) > self.layout.max_choices:
            raise BadInputError(
                f"task {task.id} has {len(task.choices)} choices; the environment takes {self.layout.max_choices}"
            )
        self._close_episode()
        atlas = SHARED.acquire(task.video, self.k, self.cell_px, self.backend)
        root = View(Interval(0.0, atlas.duration), (), 0)
        self._episode = _Episode(task, atlas, [root])
        obs = self._observe()
        return obs, self._info(obs["action_mask"])

    def step(self, action: int) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        """Carry out one action; one the mask forbids changes nothing and costs ``invalid_penalty``."""
        ep = self._current()
        chosen = self.layout.decode(int(action))
        why = self._why_invalid(ep, chosen)
        ep.steps += 1
        reward = -self.reward_def.step_cost
        terminated = False
        if why is None:
            terminated = self._apply(ep, chosen)
            if terminated:
                reward += self._terminal_reward(ep, chosen)
        else:
            reward -= self.invalid_penalty
        truncated = not terminated and ep.steps >= self.max_steps
        obs = self._observe()
        info = self._info(obs["action_mask"])
        info["action"] = str(chosen)
        if why is not None:
            info["invalid_action"] = f"{chosen} is not valid now: {why}"
        return obs, float(reward), terminated, truncated, info

    def render(self) -> np.ndarray | None:
        """The current picture (``render_mode="rgb_array"``)."""
        if self.render_mode != "rgb_array" or self._episode is None:
            return None
        grid: np.ndarray = self._picture(self._episode)
        return grid

    def close(self) -> None:
        """Release this environment's share of the video's frame source."""
        self._close_episode()

    # -- the MDP ---------------------------------------------------------------------------------

    def _current(self) -> _Episode:
        if self._episode is None:
            raise InvalidActionError("call reset() before step()")
        return self._episode

    def _grid(self, ep: _Episode) -> Grid:
        """The geometry of the current view (no rendering)."""
        view = ep.stack[-1]
        if view.path is not None:
            return grid_for_path(ep.atlas.duration, view.path, self.k)
        return grid_over(view.interval, self.k)

    def _dead(self, ep: _Episode, interval: Interval) -> bool:
        return covered_fraction(interval, ep.dead) >= 0.999

    def _child(self, ep: _Episode, index: int) -> View:
        view = ep.stack[-1]
        cell = self._grid(ep).cells[index]
        path = (*view.path, index) if view.path is not None else None
        return View(cell.interval, path, view.depth + 1 if view.depth >= 0 else -1)

    def _why_invalid(self, ep: _Episode, action: Action, cells: Sequence[Cell] | None = None) -> str | None:
        cells = cells if cells is not None else self._grid(ep).cells
        if action.name in CELL_ACTIONS:
            assert action.arg is not None
            cell = cells[action.arg]
            if self._dead(ep, cell.interval):
                return "the cell is explored (a dead zone)"
            if action.name in ("EXPAND", "MARK"):
                if cell.interval.span < self.min_span_s or ep.stack[-1].depth >= MAX_DEPTH:
                    return f"the cell spans less than {self.min_span_s:g} s: nothing finer to open"
                if action.name == "MARK" and any(v.interval == cell.interval for v in ep.frontier):
                    return "the cell is marked already"
            if action.name == "INVESTIGATE_BEFORE" and cell.interval.start <= 0:
                return "nothing lies before the video's start"
            if action.name == "INVESTIGATE_AFTER" and cell.interval.end >= ep.atlas.duration:
                return "nothing lies after the video's end"
            if action.name == "ADD":
                if len(ep.evidence) >= self.max_evidence:
                    return "the scratchpad is full"
                if any(iv == cell.interval for _, iv in ep.evidence):
                    return "the cell's frame is recorded already"
            return None
        if action.name == "BACKTRACK":
            return None if len(ep.stack) > 1 else "at the root there is nowhere to go back to"
        if action.name == "FINISHED":
            return None if len(ep.stack) > 1 or ep.frontier else "the root cannot be declared explored"
        if action.name == "COMMIT":
            if not isinstance(self.reward_def, GroundingReward):
                return "COMMIT ends grounding episodes; answer the question instead"
            return None if ep.evidence else "record at least one cell before committing"
        if action.name == "ANSWER":
            if not isinstance(self.reward_def, QAReward):
                return "ANSWER ends question-answering episodes; commit instead"
            assert action.arg is not None
            return None if action.arg < len(ep.task.choices) else f"the question has {len(ep.task.choices)} choices"
        return f"unknown action {action}"

    def _apply(self, ep: _Episode, action: Action) -> bool:
        """Change the state; True when the episode ends."""
        ep.zoom_t = None
        if action.name in ("ANSWER", "COMMIT"):
            return True
        if action.name == "BACKTRACK":
            ep.stack.pop()
            return False
        if action.name == "FINISHED":
            ep.dead.append(ep.stack[-1].interval)
            if len(ep.stack) > 1:
                ep.stack.pop()
            if ep.frontier:
                ep.stack.append(ep.frontier.pop(0))  # the next cell marked promising, first in first out
            return False
        assert action.arg is not None
        cell = self._grid(ep).cells[action.arg]
        if action.name == "EXPAND":
            ep.stack.append(self._child(ep, action.arg))
        elif action.name == "MARK":
            ep.frontier.append(self._child(ep, action.arg))
        elif action.name == "ZOOM":
            ep.zoom_t = cell.interval.mid
        elif action.name == "ADD":
            ep.evidence.append((cell.interval.mid, cell.interval))
        else:
            direction: Literal["before", "after"] = "before" if action.name == "INVESTIGATE_BEFORE" else "after"
            window = investigate_interval(ep.atlas.duration, cell.interval, direction, None, self.k)
            ep.stack.append(View(window, None, -1))
        return False

    def _terminal_reward(self, ep: _Episode, action: Action) -> float:
        if isinstance(self.reward_def, QAReward):
            assert action.arg is not None
            return self.reward_def.answered(action.arg, ep.task.answer_index)
        marked = (min(iv.start for _, iv in ep.evidence), max(iv.end for _, iv in ep.evidence))
        return self.reward_def.committed(marked, ep.task.target)

    # -- observations ----------------------------------------------------------------------------

    def action_mask(self) -> np.ndarray:
        """1 for each action valid now, 0 for the rest."""
        ep = self._current()
        cells = self._grid(ep).cells
        mask = np.zeros(self.layout.size, dtype=np.int8)
        for i in range(self.layout.size):
            mask[i] = self._why_invalid(ep, self.layout.decode(i), cells) is None
        return mask

    def _picture(self, ep: _Episode) -> np.ndarray:
        side = self.k * self.cell_px
        if ep.zoom_t is not None:
            image = Image.open(io.BytesIO(ep.atlas.zoom(ep.zoom_t).jpeg)).convert("RGB")
            image.thumbnail((side, side))
            canvas = Image.new("RGB", (side, side))
            canvas.paste(image, ((side - image.width) // 2, (side - image.height) // 2))
            image = canvas
        else:
            view = ep.stack[-1]
            shown = (
                ep.atlas.grid(view.path, ep.dead)
                if view.path is not None
                else ep.atlas.grid_over(view.interval, ep.dead)
            )
            image = Image.open(io.BytesIO(shown.image.jpeg)).convert("RGB")
            if image.size != (side, side):
                image = image.resize((side, side))
        return np.asarray(image, dtype=np.uint8)

    def _observe(self) -> dict[str, Any]:
        ep = self._current()
        grid = self._grid(ep)
        pad = np.full(self.max_evidence, -1.0, dtype=np.float32)
        pad[: len(ep.evidence)] = [t for t, _ in ep.evidence]
        choices = np.full((self.layout.max_choices, self.max_choice_text), PAD, dtype=np.int32)
        for i, choice in enumerate(ep.task.choices):
            choices[i] = _bytes(choice, self.max_choice_text)
        return {
            "grid": self._picture(ep),
            "cells": np.array([[c.interval.start, c.interval.end] for c in grid.cells], dtype=np.float32),
            "depth": ep.stack[-1].depth,
            "dead": np.array([self._dead(ep, c.interval) for c in grid.cells], dtype=np.int8),
            "scratchpad": pad,
            "question": _bytes(ep.task.question, self.max_text),
            "choices": choices,
            "budget": self.max_steps - ep.steps,
            "action_mask": self.action_mask(),
        }

    def _info(self, mask: np.ndarray) -> dict[str, Any]:
        """The step's info; ``mask`` is the observation's (computed once: it checks every action)."""
        ep = self._current()
        return {
            "task": ep.task.id,
            "video": ep.task.video,
            "steps": ep.steps,
            "action_mask": mask.copy(),
            "view": (ep.stack[-1].interval.start, ep.stack[-1].interval.end),
        }

    def _close_episode(self) -> None:
        if self._episode is not None:
            SHARED.release(self._episode.atlas)
            self._episode = None


def _bytes(text: str, length: int) -> np.ndarray:
    """``text`` as UTF-8 byte ids, cut to ``length`` and padded with :data:`PAD`."""
    data = text.encode("utf-8")[:length]
    out = np.full(length, PAD, dtype=np.int32)
    out[: len(data)] = np.frombuffer(data, dtype=np.uint8)
    return out
