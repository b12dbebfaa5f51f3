"""Walk a question's path from ``cmd_ask`` to its first chat request, and count the climbs back up a layer.

Usage (a stand-in or any OpenAI-compatible server must be listening at ``--base-url``)::

    python benchmarks/question_path.py --base-url http://127.0.0.1:8000/v1 [--src PATH] [--walk]

The *path* is the chain of ``videoatlas`` functions that is running when the first
``POST .../chat/completions`` is handed to httpx, from ``cmd_ask`` down (across asyncio tasks: a task's
first function hangs under the function that created it). The *walk* visits, in order, each function
of the path and, between one step of the path and the next, every call it made itself into another
file and that returned before the path went on (a check, a helper, a store write; not what a library
it awaits calls back, such as LangGraph's checkpointer). Consecutive visits to one
file are one visit. A *climb* is a visit to a file of a higher layer than the one visited just before
it (the layers of ``tests/test_layering.py``: ``cli`` at the top, ``errors`` at the bottom): the walk
went down into a helper and came back up to carry on. ``--src`` measures another checkout's ``src``
(a ``git worktree`` of an older commit) with this one's environment. Prints one JSON line: files
visited, distinct files, climbs; ``--walk`` adds the visits.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import tempfile
import threading
from pathlib import Path
from types import FrameType
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from test_layering import LAYERS  # the layers the test holds the code to, read from one place


def layer(module: str) -> int:
    """The layer of a ``videoatlas`` module (0 at the top)."""
    parts = module.split(".")
    unit = parts[1] if len(parts) > 1 else "__init__"
    for i, units in enumerate(LAYERS):
        if unit in units:
            return i
    raise KeyError(module)


def ours(frame: FrameType | None) -> bool:
    return frame is not None and str(frame.f_globals.get("__name__", "")).startswith("videoatlas")


def looping(frame: FrameType) -> bool:
    """A frame of the event loop or a thread pool: what runs a task's step, not what asked for it."""
    name = str(frame.f_globals.get("__name__", ""))
    return name.startswith(("asyncio", "concurrent.futures", "threading", "contextvars"))


class Walk:
    """Every ``videoatlas`` call under its caller, until the first chat request; then the path at that moment."""

    def __init__(self) -> None:
        self.children: dict[int, list[FrameType]] = {}
        """id(caller frame) -> the frames it called, in order (kept alive: ids stay unique)."""
        self.parent_of: dict[int, FrameType | None] = {}
        """id(a videoatlas frame) -> the videoatlas frame it ran under when it was called."""
        self.created_by: dict[int, tuple[FrameType, FrameType | None, bool]] = {}
        """id(a task's first frame) -> (that frame, the videoatlas frame that asked for the task, whether it
        asked for it itself)."""
        self.path: list[FrameType] = []
        self.lock = threading.Lock()

    def resolve(self, frame: FrameType) -> tuple[FrameType | None, bool]:
        """The nearest ``videoatlas`` frame above ``frame`` now, through the tasks that run it, and whether
        it called ``frame`` itself (no other library's frame between them).

        Read while ``frame`` runs: a suspended coroutine's frame has no link to its caller.
        """
        below, up, direct = frame, frame.f_back, True
        while up is not None and not looping(up):
            if ours(up):
                return up, direct
            below, up, direct = up, up.f_back, False
        made = self.created_by.get(id(below))
        return (made[1], direct and made[2]) if made is not None else (None, False)

    def profile(self, frame: FrameType, event: str, arg: Any) -> None:
        if event != "call" or self.path:
            return
        if frame.f_code.co_name == "create_task" and "coro" in frame.f_locals:
            made = getattr(frame.f_locals["coro"], "cr_frame", None)
            asker = frame
            while asker.f_back is not None and looping(asker.f_back):
                asker = asker.f_back  # ensure_future, gather: up to the frame that asked for the task
            if made is not None and asker.f_back is not None:
                if ours(asker.f_back):
                    self.created_by[id(made)] = (made, asker.f_back, True)
                else:
                    self.created_by[id(made)] = (made, self.resolve(asker.f_back)[0], False)
            return
        if not ours(frame):
            return
        parent, direct = self.resolve(frame)
        with self.lock:
            self.parent_of[id(frame)] = parent
            if parent is not None and direct:
                self.children.setdefault(id(parent), []).append(frame)

    def stop_at(self, frame: FrameType) -> None:
        """Take the path that is running now (``frame``: the one sending the request)."""
        here = frame if ours(frame) else self.resolve(frame)[0]
        chain: list[FrameType] = []
        while here is not None:
            chain.append(here)
            here = self.parent_of.get(id(here))
        self.path = chain[::-1]

    def visits(self) -> list[str]:
        """The files the walk visits, from ``cmd_ask`` down."""
        start = next((i for i, f in enumerate(self.path) if f.f_code.co_name == "cmd_ask"), None)
        if start is None:
            names = " > ".join(f"{f.f_globals['__name__']}.{f.f_code.co_name}" for f in self.path)
            raise SystemExit(f"the path does not reach cmd_ask: {names}")
        path = self.path[start:]
        out: list[str] = []

        def visit(module: str) -> None:
            if not out or out[-1] != module:
                out.append(module)

        for step, nxt in zip(path, [*path[1:], None], strict=True):
            here = step.f_globals["__name__"]
            visit(here)
            for child in self.children.get(id(step), []):
                if child is nxt:
                    break
                module = child.f_globals["__name__"]
                if module != here:
                    visit(module)
                    visit(here)
        return out


def climbs(visits: list[str]) -> int:
    return sum(1 for a, b in itertools.pairwise(visits) if layer(b) < layer(a))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--src", help="the src folder of the checkout to measure (default: this one's)")
    parser.add_argument("--walk", action="store_true", help="print the visits too")
    args = parser.parse_args()
    if args.src:
        sys.path.insert(0, str(Path(args.src).resolve()))
    import importlib

    from videoatlas.synth.counter import write_counter_video

    walk = Walk()

    def watch(client: Any) -> None:
        send = client.send

        async def watched(self: Any, request: Any, **kwargs: Any) -> Any:
            if request.method == "POST" and request.url.path.endswith("/chat/completions") and not walk.path:
                walk.stop_at(sys._getframe())
                sys.setprofile(None)
                threading.setprofile(None)
            return await send(self, request, **kwargs)

        client.send = watched

    for name in ("httpx", "httpx2"):  # openai's client may bring its own copy of httpx
        try:
            watch(importlib.import_module(name).AsyncClient)
        except ImportError:
            continue
    with tempfile.TemporaryDirectory() as tmp:
        video = Path(tmp) / "counter.mp4"
        write_counter_video(video, 100, fps=10.0, width=160, height=120, gop=20)
        from videoatlas.cli.main import main as cli

        argv = ["ask", str(video), "-q", "What number is shown first?", "-c", "zero", "-c", "one"]
        argv += ["--base-url", args.base_url, "--db", f"sqlite:///{tmp}/runs.db", "--quiet", "--json"]
        argv += ["--k", "4", "--cell-px", "64", "--rounds", "1", "--workers", "1"]
        threading.setprofile(walk.profile)
        sys.setprofile(walk.profile)
        try:
            code = cli(argv)
        finally:
            sys.setprofile(None)
            threading.setprofile(None)
    visits = walk.visits()
    out: dict[str, Any] = {
        "exit": code,
        "path": len(walk.path),
        "files_visited": len(visits),
        "distinct_files": len(set(visits)),
        "climbs": climbs(visits),
    }
    if args.walk:
        out["walk"] = visits
    sys.stdout.write(json.dumps(out) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
