"""EgoSchema: ``questions.json`` and ``subset_answers.json`` (the 500 questions with public answers).

Videos are ``videos/{q_uid}.mp4`` (or ``good_clips_git/{q_uid}.mp4``, the original folder name).
The other 4,500 answers are only known to the benchmark's online grader, so they are not loaded.
"""

from __future__ import annotations

from pathlib import Path

from videoatlas.errors import BadInputError
from videoatlas.evals.datasets._common import Loaded, annotation, field, first_existing, read_json, record_id
from videoatlas.evals.datasets.adapter import Adapter, reads
from videoatlas.evals.items import EvalItem

NAME = "egoschema"


def load(root: Path) -> Loaded:
    """The subset questions, in the order of ``questions.json``; the others are skipped, and counted."""
    qfile, afile = annotation(root, "questions.json", NAME), annotation(root, "subset_answers.json", NAME)
    questions, answers = read_json(qfile), read_json(afile)
    if not isinstance(questions, list) or not isinstance(answers, dict):
        raise BadInputError(f"{NAME}: questions.json must be a list and subset_answers.json an object")
    folder = first_existing(root / "videos", root / "good_clips_git")
    loaded = Loaded()
    for n, rec in enumerate(questions):
        rid = record_id(rec, "q_uid", n)
        where = f"questions.json record {rid}"
        try:
            uid = str(field(rec, "q_uid", where))
            if uid not in answers:
                loaded.skip(qfile, uid, "no public answer (not in subset_answers.json)", malformed=False)
                continue
            options = [str(field(rec, f"option {i}", where)) for i in range(5)]
            answer = answers[uid]
            if isinstance(answer, bool) or not isinstance(answer, int) or not 0 <= answer < 5:
                loaded.skip(afile, uid, f"subset_answers.json: answer for {uid} must be 0..4, got {answer!r}")
                continue
            loaded.items.append(
                EvalItem(
                    dataset=NAME,
                    id=uid,
                    video_id=uid,
                    video=str(folder / f"{uid}.mp4"),
                    question=str(field(rec, "question", where)),
                    choices=options,
                    answer_index=answer,
                    categories=[],  # EgoSchema has no question kinds
                    duration=180.0,
                )
            )
        except BadInputError as exc:
            loaded.skip(qfile, rid, str(exc))
    return loaded


ADAPTER = Adapter(NAME, reads(load))
"""No published splits: ``--subset`` is refused."""
