"""``python -m videoatlas.lmms``: the folder of our lmms-eval tasks, for ``--include_path``."""

from __future__ import annotations

import sys

from videoatlas.lmms import TASKS

if __name__ == "__main__":
    sys.stdout.write(f"{TASKS}\n")
