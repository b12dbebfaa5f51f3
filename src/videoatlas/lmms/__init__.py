"""Our agents inside lmms-eval: the ``videoatlas`` model and the ``videoatlas_*`` tasks (extra ``[lmms]``).

lmms-eval finds the model through the ``lmms_eval.models`` entry point (:mod:`.manifest`) and the tasks
in the folder :data:`TASKS` (``--include_path "$(python -m videoatlas.lmms)"``). Each question is a
run in our run store under an id that follows from its result key (:mod:`.session`), so an lmms-eval
command run again asks nothing it answered before. Nothing in videoatlas imports this package; the
modules that import lmms-eval itself (:mod:`.model`, :mod:`.manifest`, :mod:`.tasks`) load only in
lmms-eval's process. See ``docs/lmms-eval.md``.
"""

from __future__ import annotations

from pathlib import Path

TASKS = Path(__file__).parent / "task_yaml"
"""The folder to give lmms-eval's ``--include_path``."""
