"""The subcommands. Each returns an exit code; user errors are raised as :class:`VideoAtlasError`."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from videoatlas.environment.atlas import VideoAtlas
from videoatlas.environment.cache import RenderCache
from videoatlas.environment.frames import FrameSource
from videoatlas.environment.geometry import Interval, format_path, parse_path, path_at
from videoatlas.environment.readers import DEFAULT_BACKEND
from videoatlas.environment.render import ScratchTile, visual_tokens
from videoatlas.environment.subtitles import load_subtitles
from videoatlas.environment.synth import SynthSpec, default_fps, synthesize
from videoatlas.environment.timefmt import format_ts, parse_range, parse_time
from videoatlas.environment.video import probe
from videoatlas.errors import BadInputError
from videoatlas.paths import home_dir, render_cache_dir


def _out(text: str) -> None:
    sys.stdout.write(text + "\n")


def _json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=True) + "\n")


class Progress:
    """Percent progress on stderr: rewritten in place on a terminal, a line per 10% otherwise."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.tty = sys.stderr.isatty()
        self.last_shown = -1
        self.last_time = 0.0

    def __call__(self, done: int, total: int) -> None:
        """Report ``done`` of ``total`` units."""
        pct = int(100 * done / total) if total else 100
        now = time.monotonic()
        if self.tty:
            if pct != self.last_shown and (now - self.last_time > 0.2 or pct == 100):
                sys.stderr.write(f"\r{self.label}: {pct:3d}%")
                if pct == 100:
                    sys.stderr.write("\n")
                sys.stderr.flush()
                self.last_shown, self.last_time = pct, now
        elif pct // 10 != self.last_shown // 10 or self.last_shown < 0:
            sys.stderr.write(f"{self.label}: {pct}%\n")
            self.last_shown = pct


def cmd_probe(args: argparse.Namespace) -> int:
    """``videoatlas probe VIDEO``."""
    info = probe(args.video)
    if args.json:
        _json(info.as_dict())
        return 0
    _out(f"file:      {info.path}")
    _out(f"duration:  {format_ts(info.duration, 2)} ({info.duration:.3f} s)")
    _out(f"fps:       {info.fps:.3f}")
    _out(f"frames:    {info.frame_count}")
    _out(f"size:      {info.width}x{info.height}")
    _out(f"codec:     {info.codec}")
    _out(f"audio:     {'yes' if info.has_audio else 'no'}")
    return 0


def _atlas(video: str, k: int, cell_px: int, backend: str | None, cache: bool) -> VideoAtlas:
    source = FrameSource(video, backend=backend or DEFAULT_BACKEND)
    return VideoAtlas(source, k=k, cell_px=cell_px, cache=RenderCache(render_cache_dir()) if cache else None)


def cmd_grid(args: argparse.Namespace) -> int:
    """``videoatlas grid VIDEO [--start S --end E | --cell PATH] -o OUT.jpg``."""
    if (args.start is None) != (args.end is None):
        raise BadInputError("--start and --end go together")
    dead = [Interval(*parse_range(d)) for d in args.dead]
    subtitles = load_subtitles(args.subtitles, _offset(args.subtitle_offset)) if args.subtitles else None
    began = time.perf_counter()
    atlas = _atlas(args.video, args.k, args.cell_px, args.backend, not args.no_cache)
    try:
        if args.start is not None:
            view = atlas.grid_over(Interval(parse_time(args.start), parse_time(args.end)), dead)
        else:
            view = atlas.grid(parse_path(args.cell or "root", args.k), dead)
    finally:
        atlas.source.close()
    elapsed = time.perf_counter() - began
    out = view.image.save(args.output)
    unavailable = sum(1 for f in view.image.frames if f["method"] == "unavailable")
    summary = {
        "output": str(out),
        "interval": [view.grid.interval.start, view.grid.interval.end],
        "cell": format_path(view.grid.path) if view.grid.path is not None else None,
        "k": args.k,
        "cell_span_s": view.grid.cell_span,
        "width": view.image.width,
        "height": view.image.height,
        "bytes": len(view.image.jpeg),
        "sha256": view.image.sha256,
        "cache_hit": view.image.cache_hit,
        "render_s": round(view.image.render_s, 4),
        "total_s": round(elapsed, 4),
        "unavailable_cells": unavailable,
        "visual_tokens_28px": visual_tokens(view.image.width, view.image.height, 28),
        "visual_tokens_32px": visual_tokens(view.image.width, view.image.height, 32),
        "subtitles": [
            {"start": ln.start, "end": ln.end, "text": ln.text}
            for ln in (subtitles.overlapping(view.grid.interval) if subtitles else [])
        ],
    }
    if args.json:
        _json(summary)
        return 0
    where = f"cell {summary['cell']}" if summary["cell"] else "time range"
    _out(
        f"wrote {out} ({view.image.width}x{view.image.height}, {len(view.image.jpeg) // 1024} KB): "
        f"{where} {format_ts(view.grid.interval.start)}-{format_ts(view.grid.interval.end)}, "
        f"{args.k}x{args.k} cells of {view.grid.cell_span:.3f} s"
    )
    source = "from cache" if view.image.cache_hit else "rendered"
    _out(f"render time: {view.image.render_s:.3f} s ({source}); total {elapsed:.3f} s including probe")
    if unavailable:
        _out(f"{unavailable} cell(s) have no decodable frame and are marked 'frame unavailable'")
    if subtitles is not None:
        lines = summary["subtitles"]
        _out(f"subtitles in view: {len(lines)} line(s)")
        for ln in lines[:20]:
            _out(f"  [{format_ts(ln['start'])}-{format_ts(ln['end'])}] {ln['text']}")
        if len(lines) > 20:
            _out(f"  ... {len(lines) - 20} more (use --json for all)")
    return 0


def _offset(text: str) -> float:
    negative = text.strip().startswith("-")
    value = parse_time(text.strip().lstrip("-"))
    return -value if negative else value


def _size(text: str) -> tuple[int, int]:
    try:
        w, h = (int(x) for x in text.lower().split("x"))
    except ValueError:
        raise BadInputError(f"size {text!r} must look like 640x360") from None
    return w, h


def cmd_synth(args: argparse.Namespace) -> int:
    """``videoatlas synth --duration 1h --seed 1 --out DIR``."""
    duration = parse_time(args.duration)
    width, height = _size(args.size)
    spec = SynthSpec(
        duration=duration,
        seed=args.seed,
        width=width,
        height=height,
        fps=args.fps if args.fps is not None else default_fps(duration),
        gop_s=args.gop,
        scenecut=not args.no_scenecut,
        subtitles=not args.no_subtitles,
    )
    began = time.perf_counter()
    truth = synthesize(spec, args.out, args.name, Progress(f"synth {format_ts(duration, 0)}"))
    elapsed = time.perf_counter() - began
    out = Path(args.out)
    result = {
        "video": str(out / truth["video"]),
        "ground_truth": str(out / f"{args.name}.json"),
        "subtitles": str(out / truth["subtitles"]) if truth["subtitles"] else None,
        "duration": duration,
        "frames": truth["frames"],
        "chapters": len(truth["chapters"]),
        "questions": len(truth["questions"]),
        "seconds": round(elapsed, 2),
    }
    if args.json:
        _json(result)
        return 0
    _out(f"wrote {result['video']} ({format_ts(duration, 0)}, {truth['frames']} frames) in {elapsed:.1f} s")
    counts = f"{result['questions']} questions, {result['chapters']} chapters"
    _out(f"ground truth: {result['ground_truth']} ({counts})")
    if result["subtitles"]:
        _out(f"subtitles:    {result['subtitles']}")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    """Synthesise (once) a 10-minute video and render what an agent would see on it."""
    out = Path(args.out) if args.out else home_dir() / "demo"
    spec = SynthSpec(duration=600, seed=7)
    truth_path = out / "video.json"
    truth: dict[str, Any] | None = None
    if truth_path.is_file() and (out / "video.mp4").is_file():
        cached = json.loads(truth_path.read_text())
        if cached.get("spec", {}).get("seed") == spec.seed and cached.get("duration") == spec.duration:
            truth = cached
    if truth is None:
        sys.stderr.write(f"synthesising a 10-minute demo video into {out} ...\n")
        truth = synthesize(spec, out, progress=Progress("synth"))
    question = truth["questions"][0]
    needle_time = (question["evidence"][0][0] + question["evidence"][0][1]) / 2
    atlas = _atlas(str(out / "video.mp4"), 8, 320, None, cache=True)
    try:
        root = atlas.grid(())
        # The demo expands the root cell that holds the first question's evidence (known from the
        # ground truth). The agent that chooses cells by itself is the subject of a later release.
        cell = path_at(atlas.duration, needle_time, 0)
        child = atlas.grid(cell, dead_zones=[root.grid.cells[0].interval])
        zoom = atlas.zoom(needle_time)
        pad = atlas.scratchpad(
            [ScratchTile(0, needle_time, None), ScratchTile(1, child.grid.interval.start, None)]
        )
    finally:
        atlas.source.close()
    files = {
        "root_grid": str(root.image.save(out / "root_grid.jpg")),
        "expanded_grid": str(child.image.save(out / f"grid_{format_path(cell).replace('/', '_')}.jpg")),
        "zoom": str(zoom.save(out / "zoom.jpg")),
        "scratchpad": str(pad[0].save(out / "scratchpad.jpg")),
    }
    if args.json:
        _json(
            {
                "video": str(out / "video.mp4"),
                "question": question,
                "expanded_cell": format_path(cell),
                **files,
            }
        )
        return 0
    _out("VideoAtlas environment demo (the question-answering agent arrives in a later release)")
    _out(f"video:          {out / 'video.mp4'} (10 minutes, synthetic)")
    _out(f"question:       {question['question']}")
    _out(f"root grid:      {files['root_grid']} ({root.image.render_s:.2f} s)")
    _out(
        f"expanded cell {format_path(cell)} ({format_ts(child.grid.interval.start)}-"
        f"{format_ts(child.grid.interval.end)}): {files['expanded_grid']} ({child.image.render_s:.2f} s)"
    )
    _out(f"zoom at {format_ts(needle_time)}:  {files['zoom']}")
    _out(f"scratchpad:     {files['scratchpad']}")
    _out(f"answer (ground truth): {question['answer']}")
    return 0


def _faults(specs: list[str]) -> dict[str, float]:
    faults: dict[str, float] = {}
    for spec in specs:
        name, _, rate = spec.partition("=")
        try:
            value = float(rate)
        except ValueError:
            raise BadInputError(f"--fault {spec!r} must look like NAME=RATE, e.g. http500=0.1") from None
        if not 0 <= value <= 1:
            raise BadInputError(f"--fault rate must be between 0 and 1, got {value}")
        faults[name] = value
    return faults


def cmd_sim_server(args: argparse.Namespace) -> int:
    """``videoatlas sim-server``: the stand-in VLM in the foreground."""
    from videoatlas.llm.sim.server import FAULTS, STANDIN_MODEL, SimConfig, SimServer, serve_forever

    faults = _faults(args.fault)
    unknown = set(faults) - set(FAULTS)
    if unknown:
        raise BadInputError(f"unknown fault(s) {', '.join(sorted(unknown))}; known: {', '.join(FAULTS)}")
    config = SimConfig(
        model=args.model or STANDIN_MODEL,
        seed=args.seed,
        latency_s=args.latency,
        per_token_s=args.per_token,
        patch=args.patch,
        cache_blocks=args.cache_blocks,
        min_text_px=args.min_text_px,
        faults=faults,
    )
    sys.stderr.write(
        f"STAND-IN VLM (OCR-based test backend, not a real model) serving '{config.model}' "
        f"at http://{args.host}:{args.port}/v1; stats at /stats\n"
    )
    serve_forever(SimServer(config), args.host, args.port)
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    """``videoatlas serve``: build the vLLM command, and run it unless ``--dry-run``."""
    import os
    import shlex

    from videoatlas.llm.serve import ServeOptions, vllm_command, vllm_executable

    opts = ServeOptions(
        model=args.model,
        gpus=args.gpus,
        host=args.host,
        port=args.port,
        max_images=args.max_images,
        max_model_len=args.max_model_len,
        gpu_memory_utilization=args.gpu_memory_utilization,
        served_name=args.served_name,
    )
    cmd = vllm_command(opts)
    if args.json:
        _json(cmd)
    else:
        _out(shlex.join(cmd))
    if args.dry_run:
        return 0
    exe = vllm_executable()
    if exe is None:
        raise BadInputError(
            "vllm is not installed here: pip install 'videoatlas[serve]' on a machine with a GPU"
        )
    sys.stdout.flush()
    os.execv(exe, cmd)
    return 0  # not reached
