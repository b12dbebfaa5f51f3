"""The video tools: ``probe``, ``grid`` and ``synth``, and their options.

They need no model, no database and no LangGraph: each imports its video code when it runs, so
they start quickly.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from videoatlas import limits
from videoatlas.cli.options import (
    Lazy,
    Subparsers,
    add_grid_options,
    add_json_option,
    add_out_option,
    add_output_option,
    add_seed_option,
    add_subtitle_options,
    add_video_argument,
    subtitle_offset,
)
from videoatlas.cli.outputs import image_output, output_folder, undo_on_failure, write_image
from videoatlas.cli.outputs import write_json as _json
from videoatlas.cli.outputs import write_line as _out
from videoatlas.cli.progress import Progress
from videoatlas.environment.geometry import Interval, format_path, parse_path
from videoatlas.environment.timefmt import format_ts, parse_range, parse_time
from videoatlas.errors import BadInputError
from videoatlas.paths import render_cache_dir

if TYPE_CHECKING:
    from videoatlas.environment.atlas import VideoAtlas


def add_probe_parser(sub: Subparsers) -> None:
    """``videoatlas probe VIDEO``."""
    p = sub.add_parser("probe", help="show a video's duration, frame rate, frame count, size and audio")
    add_video_argument(p)
    add_json_option(p)
    p.set_defaults(func=cmd_probe)


def add_grid_parser(sub: Subparsers) -> None:
    """``videoatlas grid VIDEO [--cell PATH | --start S --end E] -o OUT.jpg``."""
    p = sub.add_parser("grid", help="render a K x K contact sheet of the video or of one cell or time range")
    add_video_argument(p)
    where = p.add_mutually_exclusive_group()
    where.add_argument(
        "--cell", metavar="PATH", help="expand this cell, e.g. 12/5 (default: the root grid); no finer than a frame"
    )
    where.add_argument("--start", metavar="S", help="start of an explicit time range (90, 1:30, 1h2m)")
    p.add_argument("--end", metavar="E", help="end of the explicit time range")
    add_grid_options(p)
    p.add_argument(
        "--dead", action="append", default=[], metavar="S-E", help="explored interval to black out (repeat for more)"
    )
    add_subtitle_options(p, "SRT, WebVTT or LongVideoBench JSON; prints the lines in view")
    p.add_argument("--backend", choices=["pyav", "decord"], default=None, help="decoder (default pyav)")
    p.add_argument("--no-cache", action="store_true", help="render afresh, ignoring the render cache")
    add_output_option(p, "OUT.jpg", "image to write: .jpg or .jpeg (JPEG), .png (PNG)")
    add_json_option(p)
    p.set_defaults(func=cmd_grid)


def _styles() -> Iterable[str]:
    from videoatlas.synth import STYLES

    return STYLES


def add_synth_parser(sub: Subparsers) -> None:
    """``videoatlas synth --duration D --out DIR``."""
    p = sub.add_parser("synth", help="write a synthetic long video with ground-truth questions")
    p.add_argument("--duration", required=True, help="length, e.g. 10m, 1h, 10h or seconds (30 s to 24 h)")
    add_seed_option(p, 1, "the same seed gives the same video (default 1)")
    add_out_option(p, "folder to write into (created if missing)")
    p.add_argument("--name", default="video", help="file stem (default 'video')")
    p.add_argument("--size", default="640x360", help="WIDTHxHEIGHT, even, up to 3840x2160 (default 640x360)")
    p.add_argument("--fps", type=float, default=None, help="frame rate (default 5, or 2 beyond 3 hours)")
    p.add_argument("--gop", type=float, default=10.0, help="seconds between keyframes (default 10)")
    p.add_argument("--no-scenecut", action="store_true", help="keyframes only at the fixed interval")
    p.add_argument("--no-subtitles", action="store_true", help="do not write an .srt file")
    p.add_argument(
        "--style",
        choices=Lazy(_styles),
        default="chapters",
        metavar="STYLE",
        help="look and questions: %(choices)s (default chapters)",
    )
    add_json_option(p)
    p.set_defaults(func=cmd_synth)


def cmd_probe(args: argparse.Namespace) -> int:
    """``videoatlas probe VIDEO`` (a video file or a concatenation manifest)."""
    from videoatlas.environment.concat import ConcatSource, is_manifest
    from videoatlas.environment.video import probe

    segments: list[dict[str, Any]] = []
    if is_manifest(args.video):
        with ConcatSource(args.video) as joined:
            info, segments = joined.info, joined.describe()["segments"]
    else:
        info = probe(args.video)
    if args.json:
        _json({**info.as_dict(), **({"segments": segments} if segments else {})})
        return 0
    _out(f"file:      {info.path}")
    _out(f"duration:  {format_ts(info.duration, 2)} ({info.duration:.3f} s)")
    if info.decodable_end is not None:
        end = info.decodable_end
        _out(f"decodable: {format_ts(end, 2)} ({end:.3f} s); the file is cut short, later cells show no frame")
    _out(f"fps:       {info.fps:.3f}")
    _out(f"frames:    {info.frame_count}")
    turned = f" (display rotation of {info.rotation} degrees applied)" if info.rotation else ""
    _out(f"size:      {info.width}x{info.height}{turned}")
    _out(f"codec:     {info.codec}")
    _out(f"audio:     {'yes' if info.has_audio else 'no'}")
    for seg in segments:
        _out(f"segment:   {format_ts(seg['offset'], 2)} +{format_ts(seg['duration'], 2)}  {seg['path']}")
    return 0


def open_atlas(video: str, k: int, cell_px: int, backend: str | None, cache: bool) -> VideoAtlas:
    """The atlas of ``video`` (a file or a manifest), with the render cache unless ``cache`` is false."""
    from videoatlas.environment.atlas import VideoAtlas
    from videoatlas.environment.cache import RenderCache
    from videoatlas.environment.concat import open_source
    from videoatlas.environment.readers import DEFAULT_BACKEND

    source = open_source(video, backend=backend or DEFAULT_BACKEND)
    return VideoAtlas(source, k=k, cell_px=cell_px, cache=RenderCache(render_cache_dir()) if cache else None)


def cmd_grid(args: argparse.Namespace) -> int:
    """``videoatlas grid VIDEO [--start S --end E | --cell PATH] -o OUT.jpg``."""
    if (args.start is None) != (args.end is None):
        raise BadInputError("--start and --end go together")
    if args.cell is not None and not args.cell.strip():
        raise BadInputError("--cell needs a cell path such as 12/5 (leave --cell out for the root grid)")
    limits.check_grid(args.k, args.cell_px)
    output = image_output(args.output)
    dead = [Interval(*parse_range(d)) for d in args.dead]
    path = parse_path(args.cell, args.k) if args.cell is not None else ()
    window = Interval(parse_time(args.start), parse_time(args.end)) if args.start is not None else None
    subtitles = None
    if args.subtitles:
        from videoatlas.environment.subtitles import load_subtitles

        subtitles = load_subtitles(args.subtitles, subtitle_offset(args.subtitle_offset))
    began = time.perf_counter()
    atlas = open_atlas(args.video, args.k, args.cell_px, args.backend, not args.no_cache)
    try:
        info = atlas.source.info
        if window is not None:
            if window.span * info.fps < 1:
                raise BadInputError(
                    f"the range {format_ts(window.start, 3)}-{format_ts(window.end, 3)} is shorter than one frame "
                    f"({1 / info.fps:.3f} s at {info.fps:g} fps)"
                )
            view = atlas.grid_over(window, dead)
        else:
            problem = limits.depth_problem(path, atlas.duration, info.fps, args.k)
            if problem is not None:
                raise BadInputError(problem)
            view = atlas.grid(path, dead)
    finally:
        atlas.source.close()
    elapsed = time.perf_counter() - began
    out = write_image(view.image.jpeg, output)
    from videoatlas.llm.images import image_tokens

    unavailable = sum(1 for f in view.image.frames if f["method"] == "unavailable")
    summary = {
        "output": str(out),
        "interval": [view.grid.interval.start, view.grid.interval.end],
        "cell": format_path(view.grid.path) if view.grid.path is not None else None,
        "k": args.k,
        "cell_span_s": view.grid.cell_span,
        "width": view.image.width,
        "height": view.image.height,
        "bytes": out.stat().st_size,
        "sha256": view.image.sha256,
        "cache_hit": view.image.cache_hit,
        "render_s": round(view.image.render_s, 4),
        "total_s": round(elapsed, 4),
        "unavailable_cells": unavailable,
        "visual_tokens_28px": image_tokens(view.image.width, view.image.height, 28),
        "visual_tokens_32px": image_tokens(view.image.width, view.image.height, 32),
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
        f"wrote {out} ({view.image.width}x{view.image.height}, {summary['bytes'] // 1024} KB): "
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


def _size(text: str) -> tuple[int, int]:
    try:
        w, h = (int(x) for x in text.lower().split("x"))
    except ValueError:
        raise BadInputError(f"size {text!r} must look like 640x360") from None
    return w, h


def _file_stem(name: str) -> str:
    if not name or name != Path(name).name or name.startswith(".") or Path(name).suffix:
        raise BadInputError(f"--name {name!r} must be a plain file stem such as 'video' (no folder, dot or suffix)")
    return name


def cmd_synth(args: argparse.Namespace) -> int:
    """``videoatlas synth --duration 1h --seed 1 --out DIR``."""
    duration = parse_time(args.duration)
    width, height = _size(args.size)
    out = output_folder(args.out)
    name = _file_stem(args.name)
    from videoatlas.synth import SynthSpec, default_fps, synthesize

    spec = SynthSpec(
        duration=duration,
        seed=args.seed,
        width=width,
        height=height,
        fps=args.fps if args.fps is not None else default_fps(duration),
        gop_s=args.gop,
        scenecut=not args.no_scenecut,
        subtitles=not args.no_subtitles,
        style=args.style,
    )
    began = time.perf_counter()
    with undo_on_failure(out), Progress(f"synth {format_ts(duration, 0)}", quiet=args.json) as progress:
        truth = synthesize(spec, out, name, progress)
    elapsed = time.perf_counter() - began
    result = {
        "video": str(out / truth["video"]),
        "style": spec.style,
        "ground_truth": str(out / f"{name}.json"),
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
    _out(
        f"wrote {result['video']} ({spec.style} style, {format_ts(duration, 0)}, {truth['frames']} frames)"
        f" in {elapsed:.1f} s"
    )
    counts = f"{result['questions']} questions, {result['chapters']} chapters"
    _out(f"ground truth: {result['ground_truth']} ({counts})")
    if result["subtitles"]:
        _out(f"subtitles:    {result['subtitles']}")
    return 0
