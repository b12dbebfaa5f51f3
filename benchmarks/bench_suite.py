"""Where the test suite's time goes: wall time and CPU time per test and per test package.

Runs pytest the way ``make test`` does (``-n 3 --dist loadfile`` unless told otherwise), with the stand-in's
OCR cache empty as on a fresh clone, and with a small plugin
loaded from this file that records, for every test, its wall time, the CPU time of the worker process that
ran it (in-process stand-ins and graphs) and of the child processes it waited for (``videoatlas`` commands,
stand-in servers as processes), then prints Markdown tables: the whole run, each package, the slowest tests.

    python benchmarks/bench_suite.py                   # the whole suite, as make test runs it
    python benchmarks/bench_suite.py -- tests/agents   # arguments after -- go to pytest
    python benchmarks/bench_suite.py --table out.jsonl # print the tables of a saved run again

The numbers are a snapshot of one machine at one load: run it on a quiet machine, and say the load.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Generator, Iterable
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
OUT_ENV = "BENCH_SUITE_OUT"


def _cpu() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, None, None]:
    """Record one test's wall and CPU time (its fixtures' set-up and tear-down included)."""
    out = os.environ.get(OUT_ENV)
    began, (own0, children0) = time.perf_counter(), _cpu()
    yield
    if out is None:
        return
    own1, children1 = _cpu()
    row = {
        "test": item.nodeid,
        "wall": round(time.perf_counter() - began, 3),
        "cpu_self": round(own1 - own0, 3),
        "cpu_children": round(children1 - children0, 3),
    }
    with open(f"{out}.{os.environ.get('PYTEST_XDIST_WORKER', 'main')}", "a", encoding="utf-8") as handle:
        handle.write(json.dumps(row) + "\n")


def _package(test: str) -> str:
    parts = test.split("::")[0].split("/")
    return "/".join(parts[:2]) if len(parts) > 2 else parts[0]


def tables(rows: list[dict[str, Any]], wall_s: float | None, slowest: int) -> Iterable[str]:
    """The Markdown tables of a run's rows."""
    cpu = [r["cpu_self"] + r["cpu_children"] for r in rows]
    yield f"{len(rows)} tests; CPU {sum(cpu) / 60:.1f} min" + (f"; wall {wall_s / 60:.1f} min" if wall_s else "")
    yield ""
    yield "| package | tests | wall (s, summed) | CPU (s) |"
    yield "| --- | ---: | ---: | ---: |"
    per: dict[str, list[float]] = collections.defaultdict(lambda: [0, 0.0, 0.0])
    for row, used in zip(rows, cpu, strict=True):
        entry = per[_package(row["test"])]
        entry[0] += 1
        entry[1] += row["wall"]
        entry[2] += used
    for name, (count, wall, used) in sorted(per.items(), key=lambda kv: -kv[1][1]):
        yield f"| `{name}` | {count:.0f} | {wall:.0f} | {used:.0f} |"
    yield ""
    yield "| test | wall (s) | CPU in the worker (s) | CPU in child processes (s) |"
    yield "| --- | ---: | ---: | ---: |"
    for row in sorted(rows, key=lambda r: -r["wall"])[:slowest]:
        yield f"| `{row['test']}` | {row['wall']:.1f} | {row['cpu_self']:.1f} | {row['cpu_children']:.1f} |"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", default="3", help="pytest-xdist workers (0: one process), as make test")
    parser.add_argument("--slowest", type=int, default=20, help="how many of the slowest tests to list")
    parser.add_argument("--save", type=Path, help="keep the rows in this JSON-lines file")
    parser.add_argument("--table", type=Path, help="print the tables of a saved run and stop")
    parser.add_argument("pytest_args", nargs="*", help="arguments for pytest (after --)")
    args = parser.parse_args()
    if args.table is not None:
        rows = [json.loads(line) for line in args.table.read_text(encoding="utf-8").splitlines() if line]
        sys.stdout.write("\n".join(tables(rows, None, args.slowest)) + "\n")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "rows"
        command = [sys.executable, "-m", "pytest", "-q", "-p", "bench_suite", "-p", "no:cacheprovider"]
        if args.workers != "0":
            command += ["-n", args.workers, "--dist", "loadfile"]
        env = {
            **os.environ,
            OUT_ENV: str(out),
            # A cold OCR cache, as on a fresh clone (the suite's own default is .pytest_cache/, kept between runs).
            "VIDEOATLAS_OCR_CACHE": str(Path(tmp) / "ocr"),
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "benchmarks"), os.environ.get("PYTHONPATH")])),
        }
        before = " ".join(f"{value:.2f}" for value in os.getloadavg())
        began = time.perf_counter()
        done = subprocess.run([*command, *args.pytest_args], cwd=ROOT, env=env, check=False)
        wall = time.perf_counter() - began
        rows = [json.loads(line) for part in Path(tmp).glob("rows.*") for line in part.read_text().splitlines()]
    if args.save is not None:
        args.save.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    after = " ".join(f"{value:.2f}" for value in os.getloadavg())
    sys.stdout.write(f"pytest exit {done.returncode}; load average before the run {before}, at its end {after}\n")
    sys.stdout.write("\n".join(tables(rows, wall, args.slowest)) + "\n")
    return done.returncode


if __name__ == "__main__":
    raise SystemExit(main())
