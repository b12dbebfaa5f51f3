"""CLI start-up benchmark (issue 16): start-to-exit wall time of the console script, and its slowest imports.

Cases, each a fresh process of the installed ``videoatlas`` script (target: under 0.5 s each):
  help    videoatlas --help
  probe   videoatlas probe V
  grid    videoatlas grid V -o out.jpg, with the render cache warm (the same grid rendered once before)
V is a 30-second 320x180 synthetic video made by ``videoatlas synth`` into a temporary data directory.

Then ``python -X importtime`` of the same three command lines: the modules with the largest
cumulative import time, and whether LangGraph, LangChain, OpenAI or pydantic were imported at all.

``--src DIR`` runs the command from another source tree instead (the launcher the console script
uses, with ``PYTHONPATH=DIR``), e.g. the tree before issue 16 from ``git archive``, for a before/after.

Usage: python benchmarks/bench_cli.py [--repeat 9] [--top 8] [--src DIR] [--out results.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

EXE = str(Path(sys.executable).parent / "videoatlas")
HEAVY = ("langgraph", "langchain_core", "openai", "pydantic", "sqlalchemy", "matplotlib")
LAUNCH = "import sys\nfrom videoatlas.cli.main import main\nsys.exit(main())\n"
PROFILE = (
    "import sys\nfrom videoatlas.cli.main import main\ntry:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
)


def wall(args: list[str], env: dict[str, str], cwd: Path, launcher: list[str]) -> float:
    """Seconds from starting the process to its exit (it must succeed)."""
    began = time.perf_counter()
    proc = subprocess.run([*launcher, *args], env=env, cwd=cwd, capture_output=True, text=True)
    elapsed = time.perf_counter() - began
    if proc.returncode != 0:
        raise SystemExit(f"videoatlas {' '.join(args)} failed: {proc.stderr.strip()}")
    return elapsed


def import_profile(args: list[str], env: dict[str, str], cwd: Path, top: int) -> dict[str, Any]:
    """The slowest imports, the total import time, and which heavy packages were loaded at all.

    Listed: the ``top`` imports by cumulative time among those the command makes and their own
    first-level imports; the total counts only the command's own (so nothing twice).
    """
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", PROFILE, *args], env=env, cwd=cwd, capture_output=True, text=True
    )
    rows: list[tuple[str, int, int]] = []
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _, cumulative, named = line.removeprefix("import time:").split("|")
        depth = (len(named) - len(named.lstrip())) // 2
        rows.append((named.strip(), int(cumulative), depth))
    slowest = sorted((r for r in rows if r[2] <= 1), key=lambda r: -r[1])
    loaded = {name.split(".")[0] for name, _, _ in rows}
    return {
        "total_import_s": round(sum(r[1] for r in rows if r[2] == 0) / 1e6, 3),
        "top": [{"module": n, "cumulative_s": round(c / 1e6, 3)} for n, c, _ in slowest[:top]],
        "heavy_loaded": sorted(loaded & set(HEAVY)),
    }


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """Every case, ``args.repeat`` times, in a fresh data directory."""
    launcher = [EXE] if args.src is None else [sys.executable, "-c", LAUNCH]
    with tempfile.TemporaryDirectory(prefix="bench_cli_") as tmp:
        root = Path(tmp)
        env = {**os.environ, "VIDEOATLAS_HOME": str(root / "home")}
        if args.src is not None:
            env["PYTHONPATH"] = str(Path(args.src).resolve())
        video = root / "video" / "video.mp4"
        synth = ["synth", "--duration", "30", "--size", "320x180", "--out", str(video.parent), "--json"]
        subprocess.run([*launcher, *synth], env=env, check=True, capture_output=True)
        cases = {
            "help": ["--help"],
            "probe": ["probe", str(video)],
            "grid": ["grid", str(video), "-o", str(root / "out.jpg")],
        }
        wall(cases["grid"], env, root, launcher)  # fills the render cache: every timed grid is a warm-cache one
        results: dict[str, Any] = {"load_avg": os.getloadavg(), "cpus": os.cpu_count(), "src": args.src, "cases": {}}
        for name, case in cases.items():
            times = [wall(case, env, root, launcher) for _ in range(args.repeat)]
            results["cases"][name] = {
                "command": "videoatlas " + " ".join(case).replace(str(root), "$TMP"),
                "median_s": round(statistics.median(times), 3),
                "min_s": round(min(times), 3),
                "max_s": round(max(times), 3),
                "runs": [round(t, 3) for t in times],
                "imports": import_profile(case, env, root, args.top),
            }
        results["load_avg_after"] = os.getloadavg()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=9, help="runs per case; the median is reported")
    parser.add_argument("--top", type=int, default=8, help="slowest imports listed per case")
    parser.add_argument("--src", default=None, help="run videoatlas from this source tree (PYTHONPATH)")
    parser.add_argument("--out", default=None, help="write all raw results as JSON here")
    args = parser.parse_args()
    results = measure(args)
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=1))
    out = sys.stdout
    before = ", ".join(f"{x:.1f}" for x in results["load_avg"])
    after = ", ".join(f"{x:.1f}" for x in results["load_avg_after"])
    out.write(f"{results['cpus']} CPUs; load average {before} before the runs, {after} after\n\n")
    out.write("| command | median s | min s | max s | under 0.5 s | model stack imported |\n")
    out.write("|---|---|---|---|---|---|\n")
    for case in results["cases"].values():
        heavy = ", ".join(case["imports"]["heavy_loaded"]) or "none"
        ok = "yes" if case["median_s"] < 0.5 else "NO"
        out.write(
            f"| `{case['command']}` | {case['median_s']:.3f} | {case['min_s']:.3f} | {case['max_s']:.3f} | {ok} "
            f"| {heavy} |\n"
        )
    for name, case in results["cases"].items():
        imports = case["imports"]
        listed = ", ".join(f"{t['module']} {t['cumulative_s']:.3f}" for t in imports["top"])
        out.write(f"\nimports of `{name}` ({imports['total_import_s']:.3f} s in all): {listed}\n")


if __name__ == "__main__":
    main()
