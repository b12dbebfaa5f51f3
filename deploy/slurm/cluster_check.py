"""``make cluster-check``: the recipes of deploy/slurm/ run on a real one-node Slurm, preemption included.

It brings up Slurm in a temporary folder (:mod:`local_slurm`), starts the stand-in VLM and hands its
address to the jobs the way vllm-server.sbatch does (a file eval-array.sbatch reads), and submits the
recipes unchanged, every setting in the environment:

* vllm-server.sbatch with VA_DRY_RUN=1 (no GPU here; ``--gres=none``): its printed ``vllm serve``
  command must be the one ``videoatlas serve --dry-run`` prints;
* eval-array.sbatch as a 4-task array over a fresh PostgreSQL database. One task is requeued with
  ``scontrol requeue`` in the middle of a question (what preemption does); another gets SIGUSR1 on
  its batch shell alone with ``scancel --batch`` (what ``--signal=B:USR1@120`` sends before the time
  limit) and requeues itself;
* eval-array.sbatch again as a 1-task array whose database does not take connections at first: it
  waits, exits 75, is requeued by the recipe, and answers once the database is back.

Then it checks (:mod:`verdicts`) that every question was answered exactly once, in the results files
and the run store; that each requeued task resumed its run from the checkpoint (fewer model calls
after the stop than the same question takes from scratch, measured by running the shard again on a
fresh database); that no run is left running; and that each task's log holds all its attempts. Slurm
is torn down by pid, its own processes only, whatever happened. The last line says what passed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
from local_slurm import LocalSlurm, SlurmError, free_port, missing_commands
from verdicts import CheckFailed, Interruption, check_eval, check_outage_job, check_server_dry_run, fresh_calls

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
TASKS = 4
SERVE_MODEL = "Qwen/Qwen2.5-VL-7B-Instruct"
# Small grids keep a question short on two cores and give it several calls to be stopped among.
EVAL_ARGS = "--durations 1m --limit 8 --concurrency 1 --k 4 --cell-px 160"
OUTAGE_ARGS = "--durations 1m --styles chapters --limit 2 --concurrency 1 --k 4 --cell-px 160"
PG_ADMIN = os.environ.get("VIDEOATLAS_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")


def say(line: str) -> None:
    """One line of the check's output."""
    sys.stdout.write(f"cluster check: {line}\n")
    sys.stdout.flush()


def wait_for(what: str, ready: Callable[[], bool], timeout_s: float, every_s: float = 1.0) -> None:
    """Poll ``ready`` until it holds; :class:`CheckFailed` naming ``what`` after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not ready():
        if time.monotonic() > deadline:
            raise CheckFailed(f"timed out after {timeout_s:g} s waiting for {what}")
        time.sleep(every_s)


@contextmanager
def database(allow: bool = True) -> Iterator[str]:
    """A fresh PostgreSQL database (taking connections or not), dropped afterwards."""
    name = f"va_cluster_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
        if not allow:
            admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
    try:
        yield f"{PG_ADMIN.rpartition('/')[0]}/{name}"
    finally:
        with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def allow_connections(url: str) -> None:
    """Let the database at ``url`` take connections again."""
    with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
        admin.execute(f'ALTER DATABASE "{url.rpartition("/")[2]}" ALLOW_CONNECTIONS true')


@contextmanager
def standin(folder: Path, host: str, latency: float) -> Iterator[str]:
    """The stand-in VLM listening where ``host`` resolves; yields its URL as the server recipe writes it."""
    port = free_port()
    log = (folder / f"standin-{port}.log").open("w")
    proc = subprocess.Popen(
        [str(Path(sys.executable).parent / "videoatlas"), "standin", "--host", socket.gethostbyname(host),
         "--port", str(port), "--latency", str(latency)],
        stdout=log, stderr=subprocess.STDOUT, env=_plain_env(),
    )  # fmt: skip
    url = f"http://{host}:{port}/v1"
    try:
        wait_for("the stand-in to answer", lambda: _answers(url + "/models") or proc.poll() is not None, 60, 0.2)
        if proc.poll() is not None:
            raise CheckFailed(f"the stand-in exited {proc.returncode}; see {log.name}")
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def _answers(url: str) -> bool:
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=2):
            return True
    except OSError:
        return False


def _plain_env() -> dict[str, str]:
    """The environment of this process without settings of videoatlas or Slurm that would leak into the jobs."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("VIDEOATLAS_", "VA_", "SLURM_", "SBATCH_"))}


def run(folder: Path, slurm: LocalSlurm, latency: float) -> tuple[int, int, int]:
    """The whole scenario; returns (questions answered once, questions, requeued tasks resumed)."""
    host = socket.gethostname().split(".")[0]
    logs = folder / "logs"
    logs.mkdir()
    base = {
        **_plain_env(),
        "SLURM_CONF": str(slurm.conf),
        "VIDEOATLAS_HOME": str(folder / "home"),
        "VA_ENDPOINT_FILE": str(folder / "vllm-endpoint.url"),
    }
    port = free_port()
    say("vllm-server.sbatch, dry run (VA_DRY_RUN=1) through Slurm")
    server_job = slurm.sbatch(
        HERE / "vllm-server.sbatch",
        # This node has no GPU to give and two cores: the recipe's --gres and --cpus-per-task are overridden.
        ["--gres=none", "--cpus-per-task=1", f"--output={logs}/va-vllm-%j.log"],
        {**base, "VA_MODEL": SERVE_MODEL, "VA_PORT": str(port), "VA_DRY_RUN": "1"},
        cwd=REPO,  # VA_VENV is left to its default: $SLURM_SUBMIT_DIR/.venv
    )
    with standin(folder, host, latency) as url, database() as db, database(allow=False) as down_db:
        say(f"stand-in latency {latency:g} s per completion")
        try:
            return _evals(slurm, folder, base, url, db, down_db, server_job, port, host)
        finally:
            slurm.cancel()  # before the databases and the stand-in go away under running jobs


def _evals(
    slurm: LocalSlurm, folder: Path, base: dict[str, str], url: str, db: str, down_db: str,
    server_job: str, port: int, host: str,
) -> tuple[int, int, int]:  # fmt: skip
    logs = folder / "logs"
    endpoint_file = Path(base["VA_ENDPOINT_FILE"])
    endpoint_file.write_text(url + "\n")  # what vllm-server.sbatch writes once its server answers
    say(f"stand-in at {url}, handed over in {endpoint_file.name}")
    common = {**base, "VA_DATASET": "synthetic", "VA_ROOT": str(folder / "data")}
    array = slurm.sbatch(
        HERE / "eval-array.sbatch",
        [f"--array=0-{TASKS - 1}", f"--output={logs}/va-eval-%A_%a.log"],
        {**common, "VA_OUT": str(folder / "ev"), "VIDEOATLAS_DB": db, "VA_EVAL_ARGS": EVAL_ARGS},
        cwd=REPO,
    )
    outage = slurm.sbatch(
        HERE / "eval-array.sbatch",
        ["--array=0", f"--output={logs}/va-eval-%A_%a.log"],
        {
            **common, "VA_OUT": str(folder / "ev-outage"), "VIDEOATLAS_DB": down_db, "VA_EVAL_ARGS": OUTAGE_ARGS,
            "VIDEOATLAS_ENDPOINT_PATIENCE": "3", "VA_MAX_RESTARTS": "2",
        },
        cwd=REPO,
    )  # fmt: skip
    say(f"eval-array.sbatch: job {array}, {TASKS} tasks over PostgreSQL; job {outage}, its database not up yet")
    wait_for(f"job {server_job} to end", lambda: _all_ended(slurm, server_job), 60)
    check_server_dry_run(slurm, server_job, logs, port, host, endpoint_file, SERVE_MODEL)
    say("vllm-server.sbatch printed the vllm serve command of videoatlas serve --dry-run")

    reopened = threading.Thread(target=_reopen_when_requeued, args=(logs / f"va-eval-{outage}_0.log", down_db))
    reopened.start()
    try:
        stops = _interrupt(slurm, array, folder / "ev", db)
    finally:
        reopened.join()
    wait_for("every eval task to end", lambda: _all_ended(slurm, array) and _all_ended(slurm, outage), 480, 2)
    say("every task ended; running the stopped shards again from scratch, for their call counts")
    scratch = fresh_calls(folder, url, [s.shard for s in stops], TASKS, EVAL_ARGS, base)
    answered, total = check_eval(slurm, array, folder / "ev", db, logs, stops, scratch, TASKS, say)
    check_outage_job(slurm, outage, folder / "ev-outage", logs, say)
    return answered, total, len(stops)


ENDED = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL", "BOOT_FAIL", "DEADLINE"}


def _all_ended(slurm: LocalSlurm, job: str) -> bool:
    """Whether every task of an array (or the one job) has ended; :class:`CheckFailed` if one cannot start."""
    tasks = slurm.tasks(job) or {0: slurm.job(job)}
    for fields in tasks.values():
        if fields.get("JobState") == "PENDING" and fields.get("Reason") in ("BadConstraints", "PartitionConfig"):
            raise CheckFailed(f"job {fields.get('JobId')} cannot start: {fields.get('Reason')}")
    return {t.get("JobState") for t in tasks.values()} <= ENDED


def _interrupt(slurm: LocalSlurm, array: str, out: Path, db: str) -> list[Interruption]:
    """Stop two tasks in the middle of a question, one way each."""
    ways: list[tuple[str, Callable[[str], str]]] = [
        ("scontrol requeue", lambda job: slurm.run("scontrol", "requeue", job)),  # what preemption does
        # What --signal=B:USR1@120 sends before the time limit: SIGUSR1 to the batch shell alone.
        ("SIGUSR1 to the batch shell", lambda job: slurm.run("scancel", "--batch", "--signal=USR1", job)),
    ]
    stops: list[Interruption] = []
    deadline = time.monotonic() + 300
    for way, act in ways:
        while (stop := Interruption.pick(slurm, array, out, db, TASKS, exclude={s.shard for s in stops})) is None:
            if time.monotonic() > deadline:
                raise CheckFailed("timed out waiting for a task in the middle of a question")
            time.sleep(0.5)
        act(stop.job)
        stop.way = way
        stop.await_stopped(slurm, db)
        say(
            f"task {stop.shard} stopped by {way} in the middle of a question: run {stop.run_id} "
            f"interrupted after {stop.calls_before} model calls"
        )
        stops.append(stop)
    return stops


def _reopen_when_requeued(log: Path, url: str, timeout_s: float = 300) -> None:
    """Once the outage task's first attempt has requeued itself, let its database take connections again."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if log.is_file() and "requeued" in log.read_text(errors="replace"):
            allow_connections(url)
            say("the outage task exited 75 and requeued itself; its database takes connections again")
            return
        time.sleep(0.2)


def main(argv: list[str] | None = None) -> int:
    """Run the check; 0 when everything held, 1 when something did not, 2 when it could not run here."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.5, help="stand-in seconds per completion (default 0.5)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder (kept anyway on failure)")
    args = parser.parse_args(argv)
    missing = missing_commands()
    if missing:
        say(f"{', '.join(missing)} not found: install Debian's slurm-wlm and munge (make cluster-check does)")
        return 2
    if os.geteuid() != 0:
        say("needs root: the one-node Slurm runs its daemons and jobs as root (run make cluster-check as root)")
        return 2
    try:
        psycopg.connect(PG_ADMIN, connect_timeout=5).close()
    except psycopg.OperationalError as exc:
        say(f"PostgreSQL not reachable at {PG_ADMIN} (set VIDEOATLAS_TEST_PG): {str(exc).strip().splitlines()[0]}")
        return 2
    folder = Path(tempfile.mkdtemp(prefix="va-cluster-"))
    slurm = LocalSlurm(folder)
    began = time.monotonic()
    failed = True
    try:
        slurm.start()
        say(f"Slurm {slurm.version()} up in {folder} (node {slurm.node})")
        answered, total, resumed = run(folder, slurm, args.latency)
        failed = False
    except (CheckFailed, SlurmError, psycopg.Error) as exc:
        say(f"FAILED: {exc}")
    finally:
        for problem in slurm.stop():
            say(f"teardown: {problem}")
            failed = True
        if failed or args.keep:
            say(f"logs and state kept in {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)
    if failed:
        return 1
    say(f"passed in {time.monotonic() - began:.0f} s")
    say(f"{answered}/{total} questions answered once, {resumed} requeued task(s) resumed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
