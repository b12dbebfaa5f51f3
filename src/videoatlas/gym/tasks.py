"""Where episodes come from: a question about a video, its answer, and the moment it refers to.

A task source is a list of :class:`Task`; an episode draws one with the environment's seeded
generator. Sources are built from the synthetic generators (:class:`SyntheticTasks`) or from an eval
dataset through its adapter (:class:`DatasetTasks`); an environment made without tasks uses
:func:`default_tasks`, one small synthetic video in the data directory. A task whose video cannot be opened is left
out when the source is built, with a warning naming the file and why, never found in the middle of
a vectorised rollout.
"""

from __future__ import annotations

import fcntl
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import structlog

from videoatlas.environment.concat import open_source
from videoatlas.errors import BadInputError, VideoAtlasError
from videoatlas.paths import home_dir

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class Task:
    """One episode's question: a video, the question and choices, the answer, the referred moment."""

    id: str
    video: str
    question: str
    choices: tuple[str, ...]
    answer_index: int | None
    """The correct choice (None when the source has no answer: such a task has no QA reward)."""
    target: tuple[float, float] | None
    """The annotated moment ``(start, end)`` in seconds (None when the source gives none: no grounding reward)."""


def usable(tasks: Iterable[Task]) -> list[Task]:
    """The tasks whose video opens and decodes; each other one is left out with a warning."""
    kept: list[Task] = []
    checked: dict[str, str | None] = {}
    for task in tasks:
        if task.video not in checked:
            try:
                source = open_source(task.video)  # a file or a concatenation manifest
                checked[task.video] = None if source.duration > 0 else "the video has no duration"
                source.close()
            except VideoAtlasError as exc:
                checked[task.video] = str(exc)
        problem = checked[task.video]
        if problem is None:
            kept.append(task)
            continue
        log.warning("gym_task_skipped", task=task.id, video=task.video, reason=problem)
        warnings.warn(f"task {task.id} skipped: {problem}", RuntimeWarning, stacklevel=2)
    if not kept:
        raise BadInputError("no task of this source has a video that can be decoded")
    return kept


class SyntheticTasks(list[Task]):
    """The questions of one synthetic video (made once under ``root``, reused after), with their moments.

    ``folder`` is where the video is; ``made`` says whether this call drew it (False: it was there).
    """

    def __init__(
        self,
        root: str | Path,
        duration: float = 120.0,
        seed: int = 1,
        style: str = "chapters",
        size: tuple[int, int] = (320, 180),
    ) -> None:
        from videoatlas.synth import SynthSpec, load_current, synthesize
        from videoatlas.synth.spec import default_fps

        spec = SynthSpec(
            duration=duration,
            seed=seed,
            width=size[0],
            height=size[1],
            fps=default_fps(duration),
            style=style,  # type: ignore[arg-type]
            subtitles=False,
        )
        out = Path(root) / f"synth-{int(duration)}s-seed{seed}-{style}-{size[0]}x{size[1]}"
        truth = load_current(out, style=spec.style)
        self.folder, self.made = out, truth is None
        if truth is None:
            truth = synthesize(spec, out)
        video = str(out / truth["video"])
        super().__init__(
            usable(
                Task(
                    id=str(q["id"]),
                    video=video,
                    question=str(q["question"]),
                    choices=tuple(q["choices"]),
                    answer_index=None if q["answer_index"] is None else int(q["answer_index"]),  # open: None
                    target=_first_range(q.get("evidence") or []),
                )
                for q in truth["questions"]
            )
        )


DEFAULT_DURATION_S = 60.0
"""The default source's video: one minute, small enough to make in seconds on first use."""


def default_tasks() -> SyntheticTasks:
    """The tasks of ``gymnasium.make("videoatlas/Grid-v0")`` made without any: one synthetic video's questions.

    The video is drawn once into the data directory (``$VIDEOATLAS_HOME/gym``) and reused after;
    a log line says which, and where. Environments made side by side (a vector of them in
    subprocesses) take turns: one draws the video, the others find it drawn.
    """
    root = home_dir() / "gym"
    root.mkdir(parents=True, exist_ok=True)
    with (root / ".default.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        tasks = SyntheticTasks(root, duration=DEFAULT_DURATION_S, seed=1)
    if tasks.made:
        log.warning(
            "gym_default_tasks_made",
            folder=str(tasks.folder),
            tasks=len(tasks),
            note="no tasks given: made a 1-minute synthetic video (once); pass tasks=... for your own",
        )
    else:
        log.info("gym_default_tasks", folder=str(tasks.folder), tasks=len(tasks))
    return tasks


class DatasetTasks(list[Task]):
    """The items of an eval dataset (any adapter of ``videoatlas eval run``), as tasks."""

    def __init__(self, name: str, root: str | Path, limit: int | None = None) -> None:
        from videoatlas.evals.datasets import load_items

        items = load_items(name, root)[:limit] if limit else load_items(name, root)
        super().__init__(
            usable(
                Task(
                    id=item.id,
                    video=item.video,
                    question=item.question,
                    choices=tuple(item.choices),
                    answer_index=item.answer_index,
                    target=_first_range(item.evidence),
                )
                for item in items
            )
        )


def _first_range(evidence: Sequence[Sequence[float]]) -> tuple[float, float] | None:
    ranges = [(float(r[0]), float(r[1])) for r in evidence if len(r) == 2 and float(r[1]) > float(r[0])]
    return ranges[0] if ranges else None
