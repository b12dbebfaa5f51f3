"""The Slurm recipes' own logic, run by bash without a Slurm: settings, the endpoint hand-over, when they requeue.

``make cluster-check`` runs them on a real Slurm; here the commands they call are stand-ins that
record what they were given: ``videoatlas`` (a bash script in a fake virtual environment that
behaves as told: exits with a code, or waits for SIGTERM and exits 143 as videoatlas does) and
``scontrol`` (on PATH, recording its arguments). What a user relies on is checked: which shard and
flags reach ``eval run``, that a time-limit warning (SIGUSR1) requeues and a plain SIGTERM (scancel,
preemption) does not, that an outage (exit 75) requeues until VA_MAX_RESTARTS, and that docs/slurm.md
shows each recipe as it is.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EVAL = ROOT / "deploy" / "slurm" / "eval-array.sbatch"
SERVER = ROOT / "deploy" / "slurm" / "vllm-server.sbatch"

FAKE_VIDEOATLAS = """#!/bin/bash
{ echo "args: $*"; echo "base_url: ${VIDEOATLAS_BASE_URL:-}"; } >> "$FAKE_LOG"
if [ -n "${FAKE_WAIT:-}" ]; then
  sleep 30 &
  trap 'kill $!; echo "got TERM" >> "$FAKE_LOG"; exit 143' TERM
  echo started >> "$FAKE_LOG"
  wait $!
fi
exit "${FAKE_EXIT:-0}"
"""


@pytest.fixture
def world(tmp_path: Path) -> dict[str, str]:
    """A fake venv with ``videoatlas`` and ``python``, ``scontrol`` on PATH, and a task's Slurm variables."""
    venv = tmp_path / "venv" / "bin"
    venv.mkdir(parents=True)
    (venv / "videoatlas").write_text(FAKE_VIDEOATLAS)
    (venv / "python").symlink_to(sys.executable)
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "scontrol").write_text('#!/bin/bash\necho "$*" >> "$SCONTROL_LOG"\n')
    for exe in (venv / "videoatlas", tools / "scontrol"):
        exe.chmod(0o755)
    return {
        "PATH": f"{tools}:{os.environ['PATH']}",
        "HOME": str(tmp_path),
        "FAKE_LOG": str(tmp_path / "videoatlas.log"),
        "SCONTROL_LOG": str(tmp_path / "scontrol.log"),
        "VA_VENV": str(tmp_path / "venv"),
        "SLURM_SUBMIT_DIR": str(tmp_path),
        "SLURM_JOB_ID": "4242",
        "SLURM_ARRAY_TASK_ID": "2",
        "SLURM_ARRAY_TASK_COUNT": "8",
        "VA_DATASET": "lvbench",
        "VA_ROOT": "/data/LVBench",
        "VA_OUT": "/shared/ev",
        "VIDEOATLAS_DB": "postgresql://eval@dbhost/videoatlas",
        "VIDEOATLAS_BASE_URL": "http://gpu17:8000/v1",
    }


def _run(recipe: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(recipe)], env=env, capture_output=True, text=True, timeout=30)


def _read(env: dict[str, str], name: str) -> str:
    path = Path(env[name])
    return path.read_text() if path.exists() else ""


@pytest.mark.unit
def test_the_task_runs_its_shard_of_the_array_with_the_settings_from_the_environment(world: dict[str, str]) -> None:
    world["VA_EVAL_ARGS"] = "--agent uniform --concurrency 2"
    done = _run(EVAL, world)
    assert done.returncode == 0, done.stderr
    args = _read(world, "FAKE_LOG").splitlines()[0]
    assert args == (
        "args: eval run --dataset lvbench --root /data/LVBench --out /shared/ev --shard 2/8 "
        "--agent uniform --concurrency 2"
    )
    assert "shard 2/8, job 4242, attempt 1" in done.stdout and "shard done" in done.stdout
    assert _read(world, "SCONTROL_LOG") == ""  # a finished shard is not requeued
    world["VA_SHARDS"] = "16"
    assert _run(EVAL, world).returncode == 0
    assert "--shard 2/16" in _read(world, "FAKE_LOG").splitlines()[-2]


@pytest.mark.unit
@pytest.mark.parametrize(
    ("unset", "change", "says"),
    [
        ("VA_DATASET", {}, "set VA_DATASET"),
        ("VA_OUT", {}, "set VA_OUT"),
        ("SLURM_ARRAY_TASK_ID", {}, "not an array task"),
        ("", {"VIDEOATLAS_DB": "sqlite:////tmp/runs.db"}, "postgresql:// URL"),
        ("", {"VA_VENV": "/nowhere"}, "no videoatlas in /nowhere"),
    ],
)
def test_a_missing_or_wrong_setting_is_one_line_and_exit_2(
    world: dict[str, str], unset: str, change: dict[str, str], says: str
) -> None:
    world.pop(unset, None)
    done = _run(EVAL, {**world, **change})
    assert done.returncode == 2 and says in done.stderr and len(done.stderr.splitlines()) == 1
    assert _read(world, "FAKE_LOG") == "" and _read(world, "SCONTROL_LOG") == ""


@pytest.mark.unit
def test_the_endpoint_comes_from_the_server_jobs_file_when_no_url_is_set(world: dict[str, str], tmp_path: Path) -> None:
    del world["VIDEOATLAS_BASE_URL"]
    (tmp_path / "vllm-endpoint.url").write_text("http://gpu-node-3:8000/v1\n")  # the default VA_ENDPOINT_FILE
    done = _run(EVAL, world)
    assert done.returncode == 0, done.stderr
    assert "base_url: http://gpu-node-3:8000/v1" in _read(world, "FAKE_LOG")


@pytest.mark.unit
def test_no_endpoint_within_the_patience_is_an_outage_and_requeues(world: dict[str, str]) -> None:
    del world["VIDEOATLAS_BASE_URL"]
    world["VIDEOATLAS_ENDPOINT_PATIENCE"] = "0"
    done = _run(EVAL, world)
    assert done.returncode == 75 and "did not appear" in done.stdout
    assert _read(world, "FAKE_LOG") == "" and _read(world, "SCONTROL_LOG") == "requeue 4242\n"


@pytest.mark.unit
def test_an_outage_requeues_until_the_restart_limit(world: dict[str, str]) -> None:
    world["FAKE_EXIT"] = "75"
    done = _run(EVAL, world)
    assert done.returncode == 75 and "stopped by an outage (exit 75); requeued" in done.stdout
    assert _read(world, "SCONTROL_LOG") == "requeue 4242\n"
    done = _run(EVAL, {**world, "SLURM_RESTART_COUNT": "3", "VA_MAX_RESTARTS": "3"})
    assert done.returncode == 75 and "not requeued: restarted 3 times already" in done.stdout
    assert "attempt 4" in done.stdout and _read(world, "SCONTROL_LOG") == "requeue 4242\n"


@pytest.mark.unit
def test_another_failure_is_not_requeued(world: dict[str, str]) -> None:
    done = _run(EVAL, {**world, "FAKE_EXIT": "2"})
    assert done.returncode == 2 and "videoatlas exited 2: not requeued" in done.stdout
    assert _read(world, "SCONTROL_LOG") == ""


def _stopped_by(world: dict[str, str], signum: int, whole_group: bool) -> subprocess.CompletedProcess[str]:
    """Start the recipe, wait for videoatlas to run, send ``signum`` as Slurm would; the finished process."""
    proc = subprocess.Popen(
        ["bash", str(EVAL)], env={**world, "FAKE_WAIT": "1"}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, start_new_session=True,
    )  # fmt: skip
    deadline = time.monotonic() + 10
    while "started" not in _read(world, "FAKE_LOG") and time.monotonic() < deadline:
        time.sleep(0.01)
    if whole_group:
        os.killpg(proc.pid, signum)  # preemption, scontrol requeue, scancel: every process of the task
    else:
        os.kill(proc.pid, signum)  # --signal=B:USR1@120: the batch shell alone
    out, err = proc.communicate(timeout=10)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


@pytest.mark.unit
def test_the_time_limit_warning_stops_videoatlas_and_requeues_the_task(world: dict[str, str]) -> None:
    done = _stopped_by(world, signal.SIGUSR1, whole_group=False)
    assert "got TERM" in _read(world, "FAKE_LOG")  # passed on as SIGTERM, which videoatlas handles
    assert done.returncode == 143 and "stopped by the time limit (SIGUSR1); requeued" in done.stdout
    assert _read(world, "SCONTROL_LOG") == "requeue 4242\n"


@pytest.mark.unit
def test_a_plain_sigterm_is_left_to_slurm_so_scancel_ends_the_task(world: dict[str, str]) -> None:
    done = _stopped_by(world, signal.SIGTERM, whole_group=True)
    assert "got TERM" in _read(world, "FAKE_LOG")
    assert done.returncode == 143 and "stopped by SIGTERM" in done.stdout
    assert _read(world, "SCONTROL_LOG") == ""  # requeueing here would bring a cancelled task back


@pytest.mark.unit
def test_the_server_recipe_dry_run_prints_the_command_and_the_address_it_would_hand_over(
    world: dict[str, str], tmp_path: Path
) -> None:
    env = {**world, "VA_MODEL": "Qwen/Qwen2.5-VL-7B-Instruct", "VA_PORT": "8123", "VA_DRY_RUN": "1", "VA_HOST": "gpu9"}
    env["SLURM_GPUS_ON_NODE"] = "4"
    done = _run(SERVER, env)
    assert done.returncode == 0, done.stderr
    args = "args: serve --model Qwen/Qwen2.5-VL-7B-Instruct --port 8123 --gpus 4 --dry-run"
    assert _read(world, "FAKE_LOG").splitlines()[0] == args
    assert f"would hand http://gpu9:8123/v1 to the eval jobs in {tmp_path}/vllm-endpoint.url" in done.stdout
    assert not (tmp_path / "vllm-endpoint.url").exists()
    missing = _run(SERVER, {k: v for k, v in env.items() if k != "VA_MODEL"})
    assert missing.returncode == 2 and "set VA_MODEL" in missing.stderr


@pytest.mark.e2e
def test_the_server_recipe_hands_its_address_over_once_the_server_answers_and_takes_it_back(
    world: dict[str, str], tmp_path: Path
) -> None:
    # Here "videoatlas serve" is a plain HTTP server on the port it is given (404 on /v1/models: it answers).
    serve = '#!/bin/bash\nexec "$(dirname "$0")/python" -m http.server "$5" --bind 127.0.0.1\n'
    (tmp_path / "venv" / "bin" / "videoatlas").write_text(serve)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**world, "VA_MODEL": "m", "VA_PORT": str(port), "VA_HOST": "127.0.0.1"}
    proc = subprocess.Popen(["bash", str(SERVER)], env=env, stdout=subprocess.PIPE, text=True)
    handed = tmp_path / "vllm-endpoint.url"
    deadline = time.monotonic() + 30
    while not handed.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert handed.read_text() == f"http://127.0.0.1:{port}/v1\n"
    proc.send_signal(signal.SIGTERM)  # the job's end: the server stops and the address goes with it
    out, _ = proc.communicate(timeout=20)
    assert not handed.exists() and "serving at" in out


@pytest.mark.unit
def test_the_docs_show_each_recipe_as_it_is() -> None:
    page = (ROOT / "docs" / "slurm.md").read_text()
    for recipe in (EVAL, SERVER):
        assert recipe.read_text() in page, f"docs/slurm.md does not show {recipe.name} as it is"


@pytest.mark.unit
def test_make_cluster_check_installs_slurm_only_where_missing_and_make_test_never_runs_it(tmp_path: Path) -> None:
    def plan(target: str) -> str:
        done = subprocess.run(
            ["make", "-n", f"VENV={tmp_path}", target], cwd=ROOT, capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    (tmp_path / ".installed").touch()
    (tmp_path / ".setup").touch()
    check = plan("cluster-check")
    assert "command -v sbatch" in check and "--no-install-recommends slurm-wlm munge" in check
    assert check.index("apt-get install") < check.index("deploy/slurm/cluster_check.py")
    test = plan("test")
    assert "deploy/slurm/cluster_check.py" not in test and "slurm-wlm" not in test
