"""The README's test command: it sets a fresh machine up, and on one already set up it installs nothing."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit
ROOT = Path(__file__).resolve().parent.parent


def planned(venv: Path, target: str) -> str:
    """What ``make TARGET`` would run (``make -n``), with the virtual environment at ``venv``."""
    make = shutil.which("make")
    assert make is not None
    done = subprocess.run(
        [make, "-n", "--no-print-directory", f"VENV={venv}", target],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout


def test_make_test_on_a_set_up_machine_runs_no_apt_get(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    venv.mkdir()
    for stamp in (".installed-demo", ".installed", ".setup"):  # what `make setup` leaves
        (venv / stamp).touch()
    plan = planned(venv, "test")
    assert "apt-get" not in plan and "chromium" not in plan
    assert "-m pytest" in plan


def test_make_test_on_a_fresh_machine_installs_the_browser_only_where_it_is_missing(tmp_path: Path) -> None:
    plan = planned(tmp_path / "fresh", "test")
    assert "pip install" in plan
    assert "test -x /usr/bin/chromium || " in plan  # apt-get only when the browser is missing
    assert plan.index("chromium") < plan.index("-m pytest")


def test_setup_installs_only_the_missing_packages_without_recommends_or_upgrades(tmp_path: Path) -> None:
    plan = planned(tmp_path / "fresh", "setup")
    assert "test -x /usr/bin/chromium || " in plan and "test -x /usr/bin/espeak-ng || " in plan
    installs = [line for line in plan.splitlines() if "apt-get install" in line]
    assert len(installs) == 1  # one apt-get for whatever is missing
    assert "--no-install-recommends" in installs[0] and "--no-upgrade" in installs[0]
    apt = [line for line in plan.splitlines() if "apt-get " in line]
    upgrades = {word for line in apt for word in line.split() if word.endswith("upgrade")}
    assert upgrades == {"--no-upgrade"}  # no `apt-get upgrade`, `dist-upgrade` or `full-upgrade`


def test_make_demo_installs_the_product_and_the_stand_in_only(tmp_path: Path) -> None:
    plan = planned(tmp_path / "fresh", "demo")
    installs = [line for line in plan.splitlines() if "pip install" in line and "--upgrade pip" not in line]
    assert installs and all("-e . -e ./standin" in line for line in installs), installs
    assert "torch" not in plan and "[dev]" not in plan
    assert plan.rstrip().endswith("videoatlas demo")
