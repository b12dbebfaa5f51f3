"""What ``make cluster-check`` reads back after the jobs ran: results files, the run store, Slurm, the logs.

Every check raises :class:`CheckFailed` with one line saying what did not hold.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
from local_slurm import LocalSlurm

VIDEOATLAS = str(Path(sys.executable).parent / "videoatlas")


class CheckFailed(Exception):
    """Something the check expected did not hold."""


def shard_runs(out: Path, shard: int, tasks: int) -> dict[str, str]:
    """The run id of each question of one shard (from the eval-shard file its task wrote), by item id."""
    meta = out / f"eval-shard{shard}of{tasks}.json"
    if not meta.is_file():
        return {}
    keys: dict[str, str] = json.loads(meta.read_text())["keys"]
    return {item: f"ev-{key[:24]}" for item, key in keys.items()}


def calls_by_run(db: str, run_ids: Sequence[str]) -> dict[str, int]:
    """Model calls recorded per run in the PostgreSQL run store (runs without calls left out)."""
    with psycopg.connect(db) as conn:
        found = conn.execute(
            "SELECT run_id, count(*) FROM va_model_calls WHERE run_id = ANY(%s) GROUP BY run_id", (list(run_ids),)
        )
        return {run: int(n) for run, n in found}


def statuses(db: str) -> dict[str, str]:
    """Every run of the run store with its stored status."""
    with psycopg.connect(db) as conn:
        return {run: status for run, status in conn.execute("SELECT id, status FROM va_runs")}


@dataclass
class Interruption:
    """One task stopped in the middle of a question, and what its run had done by then."""

    shard: int
    job: str
    run_id: str
    item: str
    way: str = ""
    calls_before: int = 0

    @classmethod
    def pick(
        cls, slurm: LocalSlurm, array: str, out: Path, db: str, tasks: int, exclude: set[int]
    ) -> Interruption | None:
        """A running task whose current run has made at least three calls, if there is one now."""
        for shard, fields in sorted(slurm.tasks(array).items()):
            if shard in exclude or fields.get("JobState") != "RUNNING":
                continue
            runs = shard_runs(out, shard, tasks)
            if not runs:
                continue
            try:
                running = [r for r, s in statuses(db).items() if s == "running" and r in runs.values()]
                calls = calls_by_run(db, running)
            except psycopg.errors.UndefinedTable:  # no task has made the store's tables yet
                return None
            for run_id in running:
                if calls.get(run_id, 0) >= 3:
                    item = next(i for i, r in runs.items() if r == run_id)
                    return cls(shard, fields["JobId"], run_id, item)
        return None

    def await_stopped(self, slurm: LocalSlurm, db: str, timeout_s: float = 90) -> None:
        """Wait until the stopped attempt has exited and its run is no longer running; count its calls."""
        deadline = time.monotonic() + timeout_s
        while True:
            state = slurm.job(self.job).get("JobState")
            status = statuses(db).get(self.run_id)
            if state not in ("RUNNING", "COMPLETING") and status != "running":
                break
            if time.monotonic() > deadline:
                raise CheckFailed(f"task {self.shard} did not stop within {timeout_s:g} s ({state}, run {status})")
            time.sleep(0.5)
        if status != "interrupted":
            raise CheckFailed(f"run {self.run_id} of task {self.shard} is {status} after {self.way}, not interrupted")
        self.calls_before = calls_by_run(db, [self.run_id]).get(self.run_id, 0)


def fresh_calls(
    folder: Path, url: str, shards: Sequence[int], tasks: int, eval_args: str, env: Mapping[str, str]
) -> dict[str, int]:
    """Model calls per run when these shards run from scratch (same settings, a fresh SQLite store each)."""
    procs = []
    for shard in shards:
        cmd = [
            VIDEOATLAS, "eval", "run", "--dataset", "synthetic", "--root", str(folder / "data"),
            "--out", str(folder / f"scratch-{shard}"), "--shard", f"{shard}/{tasks}", "--base-url", url,
            "--db", f"sqlite:///{folder}/scratch-{shard}.db", "--quiet", *eval_args.split(),
        ]  # fmt: skip
        procs.append(subprocess.Popen(cmd, env=dict(env), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True))
    for shard, proc in zip(shards, procs, strict=True):
        _, err = proc.communicate(timeout=300)
        if proc.returncode != 0:
            raise CheckFailed(f"shard {shard} from scratch exited {proc.returncode}: {err.strip()[-300:]}")
    calls: dict[str, int] = {}
    for shard in shards:
        with sqlite3.connect(folder / f"scratch-{shard}.db") as conn:
            for run_id, n in conn.execute("SELECT run_id, count(*) FROM va_model_calls GROUP BY run_id"):
                calls[str(run_id)] = int(n)
    return calls


def _ended_ok(slurm: LocalSlurm, array: str, what: str) -> dict[int, dict[str, str]]:
    tasks = slurm.tasks(array)
    for shard, fields in sorted(tasks.items()):
        if fields.get("JobState") != "COMPLETED" or fields.get("ExitCode") != "0:0":
            raise CheckFailed(f"{what} task {shard} ended {fields.get('JobState')} (exit {fields.get('ExitCode')})")
    return tasks


def check_server_dry_run(
    slurm: LocalSlurm, job: str, logs: Path, port: int, host: str, endpoint_file: Path, model: str
) -> None:
    """The server recipe printed the command ``videoatlas serve --dry-run`` prints, and the address it hands over."""
    fields = slurm.job(job)
    if fields.get("JobState") != "COMPLETED" or fields.get("ExitCode") != "0:0":
        raise CheckFailed(f"vllm-server.sbatch dry run ended {fields.get('JobState')} (exit {fields.get('ExitCode')})")
    serve = [VIDEOATLAS, "serve", "--model", model, "--port", str(port), "--gpus", "1", "--dry-run"]
    expected = subprocess.run(serve, capture_output=True, text=True, check=True).stdout.strip()
    lines = (logs / f"va-vllm-{job}.log").read_text().splitlines()
    if not expected.startswith("vllm serve ") or expected not in lines:
        raise CheckFailed(f"vllm-server.sbatch did not print {expected!r}; its log: {lines[-5:]}")
    handed = f"vllm-server.sbatch: would hand http://{host}:{port}/v1 to the eval jobs in {endpoint_file}"
    if handed not in lines:
        raise CheckFailed(f"vllm-server.sbatch did not print {handed!r}; its log: {lines[-5:]}")


def _attempts(log: Path) -> list[int]:
    """The attempt numbers eval-array.sbatch wrote to one task's log, in order."""
    found = []
    for line in log.read_text(errors="replace").splitlines():
        if line.startswith("eval-array.sbatch: shard ") and ", attempt " in line:
            found.append(int(line.split(", attempt ")[1].split(",")[0]))
    return found


def check_eval(
    slurm: LocalSlurm,
    array: str,
    out: Path,
    db: str,
    logs: Path,
    stops: Sequence[Interruption],
    scratch: Mapping[str, int],
    tasks: int,
    say: Callable[[str], None],
) -> tuple[int, int]:
    """Every question answered once; the stopped runs resumed; nothing doubled or left running; logs appended."""
    ended = _ended_ok(slurm, array, "eval")
    runs: dict[str, str] = {}
    for shard in range(tasks):
        runs.update(shard_runs(out, shard, tasks))
    keys = {r["key"]: r for f in sorted(out.glob("results-shard*.jsonl")) for r in _rows(f)}
    lines = Counter(r["key"] for f in sorted(out.glob("results-shard*.jsonl")) for r in _rows(f))
    items = {r["item"]: r for r in keys.values()}
    if set(items) != set(runs):
        raise CheckFailed(f"results for {len(items)} questions, the shards hold {len(runs)}")
    twice = [items_key for items_key, n in lines.items() if n != 1]
    not_ok = [r["item"] for r in keys.values() if r["status"] != "ok"]
    if twice or not_ok:
        raise CheckFailed(f"questions with more than one result line: {twice}; not answered: {not_ok}")
    stored = statuses(db)
    unfinished = {r: stored.get(r) for r in runs.values() if stored.get(r) != "finished"}
    if unfinished or len(stored) != len(runs):
        raise CheckFailed(f"{len(stored)} runs stored for {len(runs)} questions; not finished: {unfinished}")
    with psycopg.connect(db) as conn:
        leases = conn.execute("SELECT count(*) FROM va_leases").fetchone()
    if leases is None or leases[0] != 0:
        raise CheckFailed(f"{leases and leases[0]} run lease(s) left held")
    say(f"{len(runs)} questions, one result line each, all ok; {len(stored)} runs stored, all finished, no lease held")
    total = calls_by_run(db, list(runs.values()))
    for stop in stops:
        row = items[stop.item]
        after = total[stop.run_id] - stop.calls_before
        fresh = scratch.get(stop.run_id)
        if row.get("source") != "resumed":
            raise CheckFailed(f"task {stop.shard}'s run {stop.run_id} was not resumed (source {row.get('source')})")
        if fresh is None or not after < fresh:
            raise CheckFailed(f"run {stop.run_id} made {after} calls after the stop; from scratch it takes {fresh}")
        restarts = ended[stop.shard].get("Restarts")
        if _attempts(logs / f"va-eval-{array}_{stop.shard}.log") != [1, 2] or restarts != "1":
            raise CheckFailed(f"task {stop.shard}'s log does not hold its two attempts (Slurm restarts: {restarts})")
        repeated = stop.calls_before + after - fresh
        again = f" ({repeated} made again: the step in flight at the stop)" if repeated > 0 else ""
        say(
            f"task {stop.shard} ({stop.way}): run {stop.run_id} resumed from its checkpoint: {stop.calls_before} "
            f"calls before the stop, {after} after it, {fresh} from scratch{again}; both attempts in one log"
        )
    same = [r for r in scratch if r in total and r not in {s.run_id for s in stops} and scratch[r] == total[r]]
    others = [r for r in scratch if r in total and r not in {s.run_id for s in stops}]
    say(f"questions of those shards not stopped: {len(same)} of {len(others)} made as many calls as from scratch")
    for shard in sorted(set(range(tasks)) - {s.shard for s in stops}):
        if _attempts(logs / f"va-eval-{array}_{shard}.log") != [1]:
            raise CheckFailed(f"task {shard} ran more than once though it was never stopped")
    return len(keys), len(runs)


def check_outage_job(slurm: LocalSlurm, job: str, out: Path, logs: Path, say: Callable[[str], None]) -> None:
    """The task whose database was down at first: waited, exited 75, requeued itself, then answered."""
    task = _ended_ok(slurm, job, "outage")[0]
    text = (logs / f"va-eval-{job}_0.log").read_text(errors="replace")
    needed = ["could not be reached within 3 s", "stopped by an outage (exit 75); requeued", "shard done"]
    missing = [n for n in needed if n not in text]
    if missing or _attempts(logs / f"va-eval-{job}_0.log") != [1, 2] or task.get("Restarts") != "1":
        raise CheckFailed(f"the outage task's log lacks {missing} or its two attempts")
    rows = _rows(out / "results.jsonl")
    if len(rows) != 2 or {r["status"] for r in rows} != {"ok"} or len({r["key"] for r in rows}) != 2:
        raise CheckFailed(f"the outage task wrote {len(rows)} result lines, not its 2 questions once each")
    say("the task whose database was down waited 3 s, exited 75, was requeued and answered its 2 questions once")


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.is_file() else []
