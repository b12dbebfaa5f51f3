"""A one-node Slurm in a temporary folder: munged, slurmctld and slurmd of Debian's slurm-wlm, run as root.

Everything the daemons write (keys, state, spool, pid and log files, munge's socket) stays in the
folder; the daemons listen on free ports and authenticate through a munged of their own, so a
system Slurm or munge on the machine is neither used nor disturbed. :meth:`LocalSlurm.stop` ends
only what this instance started: its jobs, then each daemon by its pid file, then any job process
left behind (found by this cluster's SLURM_CONF in its environment).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

DAEMONS = ("munged", "slurmctld", "slurmd")
COMMANDS = ("sbatch", "scontrol", "squeue", "scancel", "sinfo", *DAEMONS)
CRED_EXPIRE_S = 10
"""Slurm holds a requeued job back for cred_expire seconds (120 by default); short here, to keep the check short."""


class SlurmError(Exception):
    """Slurm is missing, did not start, or did not answer: the check stops with this one line."""


def missing_commands() -> list[str]:
    """The Slurm and munge commands not on PATH."""
    return [name for name in COMMANDS if shutil.which(name) is None]


def free_port() -> int:
    """A TCP port nothing listens on now."""
    with socket.socket() as s:
        s.bind(("", 0))
        return int(s.getsockname()[1])


def machine_memory_mb() -> int:
    """Total memory in MB, as slurmd counts it (MemTotal of /proc/meminfo)."""
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) // 1024
    raise SlurmError("cannot read MemTotal from /proc/meminfo")


def slurm_conf(folder: Path, node: str, cpus: int, memory_mb: int, ports: tuple[int, int]) -> str:
    """The slurm.conf of a one-node cluster whose files all live in ``folder``."""
    ctld_port, slurmd_port = ports
    lines = [
        "ClusterName=videoatlas-check",
        f"SlurmctldHost={node}",
        "SlurmUser=root",
        "SlurmdUser=root",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        f"AuthInfo=socket={folder}/munge.socket,cred_expire={CRED_EXPIRE_S}",
        f"SlurmctldPort={ctld_port}",
        f"SlurmdPort={slurmd_port}",
        f"StateSaveLocation={folder}/state",
        f"SlurmdSpoolDir={folder}/spool",
        f"SlurmctldPidFile={folder}/slurmctld.pid",
        f"SlurmdPidFile={folder}/slurmd.pid",
        f"SlurmctldLogFile={folder}/slurmctld.log",
        f"SlurmdLogFile={folder}/slurmd.log",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core",
        "MpiDefault=none",
        "JobCompType=jobcomp/none",
        "AccountingStorageType=accounting_storage/none",
        "JobAcctGatherType=jobacct_gather/none",
        "ReturnToService=2",
        "MinJobAge=3600",  # finished jobs stay visible to `scontrol show job` for the checks
        "SchedulerParameters=sched_interval=2",
        f"NodeName={node} CPUs={cpus} RealMemory={memory_mb} State=UNKNOWN",
        f"PartitionName=check Nodes={node} Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:8",
    ]
    return "\n".join(lines) + "\n"


class LocalSlurm:
    """munged, slurmctld and slurmd over one generated configuration; ``env`` is what its clients need."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.conf = folder / "slurm.conf"
        self.node = socket.gethostname().split(".")[0]
        self.env = {**os.environ, "SLURM_CONF": str(self.conf)}
        self.jobs: list[str] = []

    def start(self, timeout_s: float = 60.0) -> None:
        """Start the daemons and wait until the node takes jobs; :class:`SlurmError` if it does not."""
        for sub in ("state", "spool"):
            (self.folder / sub).mkdir(mode=0o700)
        key = self.folder / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        memory = machine_memory_mb() * 9 // 10  # slurmd drains a node that reports less than it was told
        ports = (free_port(), free_port())
        self.conf.write_text(slurm_conf(self.folder, self.node, os.cpu_count() or 1, memory, ports))
        f = self.folder
        self._daemon(
            "munged", "--force", f"--key-file={key}", f"--socket={f}/munge.socket", f"--pid-file={f}/munged.pid",
            f"--log-file={f}/munged.log", f"--seed-file={f}/munged.seed",
        )  # fmt: skip
        self._daemon("slurmctld", "-f", str(self.conf))
        self._daemon("slurmd", "-f", str(self.conf))
        deadline = time.monotonic() + timeout_s
        state = ""
        while time.monotonic() < deadline:
            probe = subprocess.run(
                ["sinfo", "-h", "-n", self.node, "-o", "%T"], env=self.env, capture_output=True, text=True
            )
            state = probe.stdout.strip() if probe.returncode == 0 else probe.stderr.strip()
            if state in ("idle", "mixed", "allocated"):
                return
            time.sleep(0.5)
        raise SlurmError(f"Slurm did not answer within {timeout_s:g} s (last: {state or 'nothing'}; logs in {f})")

    def _daemon(self, name: str, *args: str) -> None:
        done = subprocess.run([name, *args], env=self.env, capture_output=True, text=True)
        if done.returncode != 0:
            reason = (done.stderr.strip() or done.stdout.strip() or f"exit {done.returncode}").splitlines()[-1]
            raise SlurmError(f"{name} did not start: {reason}")

    def run(self, *args: str, env: Mapping[str, str] | None = None) -> str:
        """A Slurm command's output; :class:`SlurmError` naming it when it fails."""
        done = subprocess.run(list(args), env={**self.env, **(env or {})}, capture_output=True, text=True)
        if done.returncode != 0:
            reason = (done.stderr.strip() or f"exit {done.returncode}").splitlines()[-1]
            raise SlurmError(f"{' '.join(args[:2])} failed: {reason}")
        return done.stdout

    def sbatch(self, script: Path, options: Sequence[str], env: Mapping[str, str], cwd: Path) -> str:
        """Submit ``script`` unchanged with ``options`` and ``env`` from ``cwd``; returns the job id."""
        done = subprocess.run(
            ["sbatch", "--parsable", *options, str(script)],
            env={**self.env, **env},
            cwd=cwd,
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            raise SlurmError(f"sbatch {script.name} failed: {(done.stderr.strip() or 'no reason given')}")
        job = done.stdout.strip().split(";")[0]
        self.jobs.append(job)
        return job

    def job(self, job_id: str) -> dict[str, str]:
        """``scontrol show job`` of one job (or array task) as a dict of its fields."""
        text = self.run("scontrol", "show", "job", "-o", job_id).strip().splitlines()[0]
        fields: dict[str, str] = {}
        for part in text.split():
            key, sep, value = part.partition("=")
            if sep:
                fields[key] = value
        return fields

    def tasks(self, array_id: str) -> dict[int, dict[str, str]]:
        """An array's tasks by task id, each as :meth:`job` shows it."""
        out = self.run("scontrol", "show", "job", "-o", array_id)
        found: dict[int, dict[str, str]] = {}
        for line in out.splitlines():
            fields = dict(p.partition("=")[::2] for p in line.split() if "=" in p)
            if fields.get("ArrayTaskId", "").isdigit():
                found[int(fields["ArrayTaskId"])] = fields
        return found

    def version(self) -> str:
        """The Slurm version its commands report, e.g. ``22.05.8``."""
        return self.run("scontrol", "--version").split()[-1]

    def cancel(self) -> None:
        """Cancel this cluster's jobs and wait (up to KillWait and a margin) until none is left."""
        if self.jobs and (self.folder / "slurmctld.pid").exists():
            subprocess.run(["scancel", *self.jobs], env=self.env, capture_output=True)
            deadline = time.monotonic() + 40
            while time.monotonic() < deadline and self._queued():
                time.sleep(1)
            self.jobs.clear()

    def stop(self) -> list[str]:
        """Cancel this cluster's jobs, stop its daemons by pid, end job processes left over; returns problems."""
        problems: list[str] = []
        self.cancel()
        for name in reversed(DAEMONS):
            pid = _read_pid(self.folder / f"{name}.pid")
            if pid is not None and not _end(pid):
                problems.append(f"{name} (pid {pid}) did not stop")
        for pid in _processes_with_env("SLURM_CONF", str(self.conf)):
            if not _end(pid):
                problems.append(f"job process {pid} did not stop")
        return problems

    def _queued(self) -> bool:
        probe = subprocess.run(["squeue", "-h", "-o", "%i"], env=self.env, capture_output=True, text=True)
        return probe.returncode == 0 and bool(probe.stdout.strip())


def _read_pid(path: Path) -> int | None:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return not Path(f"/proc/{pid}/stat").read_text().split(") ")[-1].startswith("Z")


def _end(pid: int, wait_s: float = 10.0) -> bool:
    """SIGTERM, then SIGKILL after ``wait_s``; whether the process is gone."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return True
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        try:
            if not _alive(pid):
                return True
        except OSError:
            return True
        time.sleep(0.2)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return True
    time.sleep(0.5)
    try:
        return not _alive(pid)
    except OSError:
        return True


def _processes_with_env(name: str, value: str) -> list[int]:
    """Pids of the processes whose environment sets ``name`` to ``value`` (this cluster's jobs and steps)."""
    wanted = f"{name}={value}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if wanted in environ.split(b"\0"):
            found.append(int(entry.name))
    return found
