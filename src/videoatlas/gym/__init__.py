"""VideoAtlas as a Gymnasium environment: ``gymnasium.make("videoatlas/Grid-v0", tasks=...)``.

Importing this package registers the environment id. Without ``tasks``, the environment uses
:func:`~videoatlas.gym.tasks.default_tasks` (a 1-minute synthetic video, made once in the data
directory). See :mod:`videoatlas.gym.env` for the state, observations, actions and rewards, and
:mod:`videoatlas.gym.tasks` for where episodes come from.
"""

from __future__ import annotations

from gymnasium.envs.registration import register, registry

from videoatlas.gym.actions import ActionLayout
from videoatlas.gym.env import GridEnv, InvalidActionError
from videoatlas.gym.rewards import GroundingReward, QAReward, iou
from videoatlas.gym.tasks import DatasetTasks, SyntheticTasks, Task, default_tasks, usable
from videoatlas.logging import library_defaults

library_defaults()  # an episode's logs go to stderr, never the training script's stdout

ENV_ID = "videoatlas/Grid-v0"

if ENV_ID not in registry:
    register(id=ENV_ID, entry_point="videoatlas.gym.env:GridEnv")

__all__ = [
    "ENV_ID",
    "ActionLayout",
    "DatasetTasks",
    "GridEnv",
    "GroundingReward",
    "InvalidActionError",
    "QAReward",
    "SyntheticTasks",
    "Task",
    "default_tasks",
    "iou",
    "usable",
]
