"""The tests that run lmms-eval's own CLI need its environment (``make lmms-check`` builds ``.venv-lmms``).

lmms-eval pins av<16 and its requirements pull torch, transformers and more, so it never goes into the
suite's environment; ``make lmms-check`` runs this folder with ``VIDEOATLAS_LMMS_PYTHON`` naming the
interpreter of ``.venv-lmms``. Without it ``test_lmms_cli.py`` is not collected (``make test`` runs the
rest of the folder: the model's arguments, documents, tasks' documents and resumable answering).
"""

from __future__ import annotations

import os

collect_ignore = [] if os.environ.get("VIDEOATLAS_LMMS_PYTHON") else ["test_lmms_cli.py"]
