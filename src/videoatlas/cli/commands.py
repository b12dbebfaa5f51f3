"""The subcommands. Each returns an exit code; user errors are raised as :class:`VideoAtlasError`.

Only light modules are imported here: each command imports what it needs (video decoding, the
agents, LangGraph, the model client) when it runs, so ``--help``, ``probe`` and ``grid`` start fast.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from videoatlas import limits
from videoatlas.cli.outputs import command_name, image_output, output_folder, undo_on_failure, write_image
from videoatlas.cli.progress import Progress
from videoatlas.cli.signals import Interrupted, run_stoppable
from videoatlas.environment.geometry import Interval, format_path, parse_path
from videoatlas.environment.timefmt import format_ts, parse_range, parse_time
from videoatlas.errors import BadInputError, EndpointUnreachableError
from videoatlas.llm.settings import DEFAULT_BASE_URL, EndpointSettings
from videoatlas.paths import home_dir, render_cache_dir
from videoatlas.textsafe import escape

if TYPE_CHECKING:
    from videoatlas.environment.atlas import VideoAtlas
    from videoatlas.runs import RunResult
    from videoatlas.runtime.config import RunConfig

__all__ = ["Progress"]


def _out(text: str) -> None:
    """One line on stdout, control characters escaped (questions and model text reach the terminal here)."""
    sys.stdout.write(escape(text) + "\n")


def _json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=True) + "\n")


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


def _atlas(video: str, k: int, cell_px: int, backend: str | None, cache: bool) -> VideoAtlas:
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

        subtitles = load_subtitles(args.subtitles, _offset(args.subtitle_offset))
    began = time.perf_counter()
    atlas = _atlas(args.video, args.k, args.cell_px, args.backend, not args.no_cache)
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
    from videoatlas.environment.render import visual_tokens

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


def run_config_from(args: argparse.Namespace) -> RunConfig:
    """The run's configuration from command-line flags: shared knobs, and the chosen agent's settings.

    A flag of another agent's settings is refused (it would be silently ignored otherwise).
    """
    from pydantic import ValidationError

    from videoatlas.agents.registry import check_thinking, settings_model
    from videoatlas.runtime.config import RunConfig, parse_thinking

    limits.check_grid(args.k, args.cell_px)
    spec = getattr(args, "thinking", None) or os.environ.get("VIDEOATLAS_THINKING", "").strip()
    thinking = parse_thinking(spec) if spec else {}
    model = settings_model(args.agent)
    given = {
        key.removeprefix("setting__"): value
        for key, value in vars(args).items()
        if key.startswith("setting__") and value is not None
    }
    foreign = sorted(set(given) - set(model.model_fields))
    if foreign:
        flags = ", ".join("--" + f.replace("_", "-") for f in foreign)
        raise BadInputError(f"{flags}: not a setting of the {args.agent} agent (see --help)")
    try:
        config = RunConfig(
            agent=args.agent,
            k=args.k,
            cell_px=args.cell_px,
            token_budget=args.token_budget,
            call_budget=args.call_budget,
            prompts=args.prompts,
            max_concurrency=args.max_concurrency,
            settings=given,
            thinking=thinking,
        )
        model.model_validate(given)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = str(first["loc"][0]) if first["loc"] else "settings"
        raise BadInputError(f"--{where.replace('_', '-')}: {first['msg']}") from None
    check_thinking(config)
    return config


def _unreachable_hint(base_url: str) -> str:
    if base_url == DEFAULT_BASE_URL:
        return (
            "no endpoint was given, so the default was tried: point --base-url or VIDEOATLAS_BASE_URL at an "
            "OpenAI-compatible VLM server (`videoatlas serve` starts one on a GPU), or add --standin to answer "
            "with the stand-in (a test backend)"
        )
    return "is the server up? Check --base-url or VIDEOATLAS_BASE_URL, or add --standin to answer with the stand-in"


@contextlib.contextmanager
def standin_endpoint(
    pixels: int | None,
    timeout_s: float | None,
    config: RunConfig | None = None,
    model: str = "",
    reasoning: str = "off",
) -> Iterator[EndpointSettings]:
    """The STAND-IN VLM started in this process for the duration, and the settings that reach it.

    ``pixels``: its image limit (default its own); with ``config``, the grid picture is checked
    against that limit before the server starts.
    """
    from videoatlas.standin.server import RunningServer, StandinConfig, StandinServer

    sim = StandinConfig(reasoning=reasoning)
    if pixels is not None:
        sim.max_image_pixels = pixels
    if config is not None:
        limits.check_image_fits(config.k, config.cell_px, sim.max_image_pixels)
    sys.stderr.write("starting the STAND-IN VLM (OCR-based test backend, not a real VLM) in-process\n")
    with RunningServer(StandinServer(sim)) as server:
        yield EndpointSettings.from_env(
            {},
            base_url=server.base_url,
            model=model,
            timeout_s=timeout_s,
            max_image_pixels=sim.max_image_pixels,
            standin=True,
        )


@contextlib.contextmanager
def endpoint_from(args: argparse.Namespace, config: RunConfig | None = None) -> Iterator[EndpointSettings]:
    """Endpoint settings from the environment and flags; with ``--standin``, a stand-in server for the duration.

    With ``config``, its grid picture is checked against the endpoint's image limit before anything
    starts (the stand-in's limit is its own configuration's). An endpoint that does not answer is
    reported with the ways to name one (``--base-url``, ``VIDEOATLAS_BASE_URL``) or to use the stand-in.
    """
    pixels = getattr(args, "max_image_pixels", None)
    if getattr(args, "standin", False):
        with standin_endpoint(
            pixels, args.timeout, config, reasoning=getattr(args, "standin_reasoning", "off")
        ) as endpoint:
            yield endpoint
        return
    settings = EndpointSettings.from_env(
        None,
        base_url=args.base_url,
        model=args.model,
        api_key=args.api_key,
        timeout_s=args.timeout,
        strict_schema=False if getattr(args, "no_strict_schema", False) else None,
        max_image_pixels=pixels,
    )
    if config is not None:
        limits.check_image_fits(config.k, config.cell_px, settings.max_image_pixels)
    try:
        yield settings
    except EndpointUnreachableError as exc:
        raise EndpointUnreachableError(f"{exc}; {_unreachable_hint(settings.base_url)}") from None


def describe_event(event: dict[str, Any]) -> str | None:
    """One progress line for a streamed event (None: not worth a line); the agent that sent it words its own."""
    if event.get("event") == "run_started":
        return f"run id: {event['run_id']}" + (" (resumed)" if event.get("resumed") else "")
    from videoatlas.agents.registry import describe_event as agent_line

    return agent_line(event)


class RunProgress:
    """Progress lines on stderr (escaped: they carry model text); remembers the run's id for an interruption.

    ``db``: the ``--db`` the command was given, repeated in the resume command it prints.
    """

    def __init__(self, quiet: bool, db: str | None = None, stream: bool = False) -> None:
        self.quiet = quiet
        self.db = db
        self.stream = stream
        """Also print every event as a JSON line on stdout (``ask --stream-json``)."""
        self.run_id: str | None = None

    def __call__(self, event: dict[str, Any]) -> None:
        """Show ``event`` (when it is worth a line)."""
        if event.get("event") == "run_started":
            self.run_id = str(event["run_id"])
        if self.stream:
            sys.stdout.write(json.dumps(event, default=str) + "\n")
            sys.stdout.flush()
        line = describe_event(event)
        if line and not self.quiet:
            sys.stderr.write(escape(line) + "\n")
            sys.stderr.flush()

    def stopped(self, exc: Interrupted) -> Interrupted:
        """``exc`` with the way back: the run is interrupted and resumable."""
        if self.run_id is not None:
            import shlex

            where = f" --db {shlex.quote(self.db)}" if self.db else ""
            command = f"{command_name()} resume {self.run_id}{where}"
            exc.hint = f"run {self.run_id} is interrupted; resume it with: {command}"
        return exc


def _progress(quiet: bool, db: str | None = None) -> RunProgress:
    return RunProgress(quiet, db)


def print_result(result: RunResult) -> None:
    """The answer, the evidence with timestamps, and the cost, for people."""
    from videoatlas.environment.render import evidence_label

    unsupported = "" if result.grounded or not result.answer else " (answered without evidence: no evidence cited)"
    if result.answer_index is not None:
        _out(f"answer: {chr(ord('A') + result.answer_index)}. {result.answer}{unsupported}")
    else:
        _out(f"answer: {result.answer or '(none)'}{unsupported}")
    if result.reasoning:
        _out(f"reasoning: {result.reasoning}")
    _out(f"evidence ({len(result.evidence)}):")
    for i, e in enumerate(result.evidence):
        cited = " *" if e.id in result.cited else ""
        where = f"cell {e.cell}" if e.cell else f"{format_ts(e.start)}-{format_ts(e.end)}"
        _out(
            f"  [{evidence_label(i)}] {format_ts(e.time, 1)} ({where}, conf {e.confidence:.2f}){cited}: {e.description}"
        )
    c = result.cost
    _out(
        f"cost: {c.calls} calls, {c.tokens:,} tokens ({c.prompt_tokens:,} prompt, {c.cached_tokens:,} cached = "
        f"{result.cache_hit_rate:.0%}; master {c.master_tokens:,}, workers {c.worker_tokens:,}), "
        f"{c.frames_viewed:,} distinct frames viewed ({c.frames_sent:,} sent), "
        f"{result.rounds} round(s), {result.wall_s:.1f} s"
    )
    repairs = result.state.get("repairs", [])
    fallbacks = [r for r in repairs if r.kind == "fallback"]
    if repairs:
        _out(
            f"repairs: {len(repairs)} reply(ies) used in part or not at all ({len(fallbacks)} fallback(s)); "
            f"see `{command_name()} trace {result.run_id}`"
        )
    _out(f"stopped: {result.stop_reason}; run id {result.run_id}")


def check_run_inputs(args: argparse.Namespace, config: RunConfig) -> None:
    """What takes milliseconds to check, checked before anything heavy is imported or any server starts.

    The video and subtitle files exist, the prompt set is the agent's, the endpoint URL has a form a
    server could have: a typo costs no stand-in start-up and no import of LangGraph.
    """
    from videoatlas.agents.registry import check_prompts
    from videoatlas.environment.files import check_file, check_subtitle_file

    check_file(args.video)
    if args.subtitles:
        check_subtitle_file(args.subtitles)
    check_prompts(config.agent, config.prompts)
    if not args.standin:
        EndpointSettings.from_env(None, base_url=args.base_url)


def cmd_ask(args: argparse.Namespace) -> int:
    """``videoatlas ask VIDEO -q ... [-c ...]``."""
    limits.check_question(args.question, args.choice)
    config = run_config_from(args)
    offset = _offset(args.subtitle_offset)
    check_run_inputs(args, config)
    progress = RunProgress(args.quiet or args.json or args.stream_json, args.db, stream=args.stream_json)
    with endpoint_from(args, config) as endpoint:
        from videoatlas.runs import run_question

        try:
            result = run_stoppable(
                run_question(
                    args.video,
                    args.question,
                    args.choice,
                    config,
                    endpoint,
                    subtitles=args.subtitles,
                    subtitle_offset=offset,
                    on_progress=progress,
                    db_url=args.db,
                    persist=not args.no_persist,
                )
            )
        except Interrupted as exc:
            if args.no_persist:
                raise
            raise progress.stopped(exc) from None
    if args.stream_json:
        sys.stdout.write(json.dumps({"event": "result", **result.as_dict()}) + "\n")
    elif args.json:
        _json(result.as_dict())
    else:
        print_result(result)
    return 0


def activate_hint() -> str | None:
    """How to put ``videoatlas`` on PATH when it is not (``source .venv/bin/activate``), or None."""
    if command_name() == "videoatlas":
        return None
    activate = Path(sys.executable).parent / "activate"
    if not activate.is_file():
        return None
    try:
        shown = activate.relative_to(Path.cwd())
    except ValueError:
        shown = activate
    return f"source {shown}"


def cmd_demo(args: argparse.Namespace) -> int:
    """Synthesise (once) a 10-minute video, start the stand-in VLM in-process, and answer a question."""
    import shlex

    from videoatlas.environment.render import ScratchTile
    from videoatlas.runs import run_question
    from videoatlas.runtime.config import RunConfig
    from videoatlas.standin.server import RunningServer, StandinConfig, StandinServer
    from videoatlas.synth import SynthSpec, load_current, synthesize
    from videoatlas.synth.chapters import plan_timeline

    out = output_folder(args.out) if args.out else home_dir() / "demo"
    spec = SynthSpec(duration=600, seed=7)
    planned = len(plan_timeline(spec).questions)  # cheap: no pixels, so a bad --question costs nothing
    if not 0 <= args.question < planned:
        raise BadInputError(f"--question must be between 0 and {planned - 1}")
    truth = load_current(out)
    if truth is not None and (truth["spec"].get("seed") != spec.seed or truth["duration"] != spec.duration):
        truth = None
    if truth is None:
        sys.stderr.write(f"synthesising a 10-minute demo video into {out} ...\n")
        with undo_on_failure(out), Progress("synth", quiet=args.json) as progress:
            truth = synthesize(spec, out, progress=progress)
    question = truth["questions"][args.question]
    video = out / "video.mp4"
    sys.stderr.write(
        "starting the STAND-IN VLM (OCR-based test backend, not a real VLM) in-process; "
        "point --base-url at a vLLM server to use a real model\n"
    )
    with RunningServer(StandinServer(StandinConfig())) as server:
        endpoint = EndpointSettings.from_env({}, base_url=server.base_url, model="", standin=True)
        result = run_stoppable(
            run_question(
                video,
                question["question"],
                question["choices"],
                RunConfig(),
                endpoint,
                on_progress=_progress(args.json),
            )
        )
    atlas = _atlas(str(video), 8, 320, None, cache=True)
    try:
        zones = [Interval(a, b) for a, b in result.state.get("dead_zones", [])]
        root = atlas.grid((), zones)
        pages = atlas.scratchpad([ScratchTile(i, e.time, e.subtitle) for i, e in enumerate(result.evidence)])
    finally:
        atlas.source.close()
    files = {"root_grid": str(root.image.save(out / "root_grid_explored.jpg"))}
    for n, page in enumerate(pages):
        files[f"scratchpad_{n + 1}"] = str(page.save(out / f"scratchpad_{n + 1}.jpg"))
    correct = result.answer_index == question["answer_index"]
    if args.json:
        _json(
            {
                **result.as_dict(),
                "video": str(video),
                "truth": question["answer"],
                "correct": correct,
                **files,
            }
        )
        return 0
    _out(f"video:    {video} (10 minutes, synthetic; ground truth in {out / 'video.json'})")
    _out(f"question: {question['question']}")
    for i, choice in enumerate(question["choices"]):
        _out(f"          {chr(ord('A') + i)}. {choice}")
    print_result(result)
    _out(f"ground truth: {question['answer']} ({'correct' if correct else 'wrong'})")
    _out("inspect:")
    _out(f"  root grid with explored regions blacked out: {files['root_grid']}")
    for key, path in files.items():
        if key.startswith("scratchpad"):
            _out(f"  evidence scratchpad: {path}")
    exe, quoted_video, quoted_out = command_name(), shlex.quote(str(video)), shlex.quote(str(out))
    if result.evidence:
        cell = result.evidence[0].cell or ""
        parent = f" --cell {cell.rsplit('/', 1)[0]}" if "/" in cell else ""
        _out(f"  the grid a worker saw: {exe} grid {quoted_video}{parent} -o grid.jpg")
    _out(f"  the same run as JSON:  {exe} demo --json --out {quoted_out}")
    hint = activate_hint()
    if hint is not None:
        _out(f"  (or run `{hint}` first, and type `videoatlas` instead)")
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


def cmd_standin(args: argparse.Namespace) -> int:
    """``videoatlas standin``: the stand-in VLM in the foreground."""
    from videoatlas.standin.server import FAULTS, StandinConfig, StandinServer, serve_forever
    from videoatlas.standin.version import STANDIN_MODEL

    faults = _faults(args.fault)
    unknown = set(faults) - set(FAULTS)
    if unknown:
        raise BadInputError(f"unknown fault(s) {', '.join(sorted(unknown))}; known: {', '.join(FAULTS)}")
    if args.record and not Path(args.record).parent.is_dir():
        raise BadInputError(f"--record: folder {Path(args.record).parent} does not exist")
    config = StandinConfig(
        model=args.model or STANDIN_MODEL,
        seed=args.seed,
        latency_s=args.latency,
        per_token_s=args.per_token,
        patch=args.patch,
        cache_blocks=args.cache_blocks,
        min_text_px=args.min_text_px,
        faults=faults,
        record=Path(args.record) if args.record else None,
        reasoning=args.reasoning,
        max_model_len=args.max_model_len,
        max_images=args.limit_mm_per_prompt,
        structured_outputs_backend=args.structured_outputs_backend,
    )
    _check_port_free(args.host, args.port)
    sys.stderr.write(
        f"STAND-IN VLM (OCR-based test backend, not a real model) serving '{config.model}' "
        f"at http://{args.host}:{args.port}/v1; stats at /stats\n"
    )
    try:
        serve_forever(StandinServer(config), args.host, args.port)
    except OSError as exc:  # taken between the check and the server's own bind
        raise BadInputError(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}") from None
    return 0


def _check_port_free(host: str, port: int) -> None:
    """Refuse, before saying it serves, an address the server could not listen on."""
    import errno
    import socket

    try:
        with socket.create_server((host, port)):
            pass
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise BadInputError(f"port {port} on {host} is already in use; choose another with --port") from None
        raise BadInputError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None


def cmd_serve(args: argparse.Namespace) -> int:
    """``videoatlas serve``: build the vLLM command, and run it unless ``--dry-run``."""
    import os
    import shlex

    from videoatlas.llm.serve import ServeOptions, vllm_command, vllm_executable

    opts = ServeOptions(
        model=args.model,
        preset=args.preset,
        gpus=args.gpus,
        host=args.host,
        port=args.port,
        max_images=args.max_images,
        max_model_len=args.max_model_len,
        max_pixels=args.max_pixels,
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
        raise BadInputError("vllm is not installed here: pip install 'videoatlas[serve]' on a machine with a GPU")
    sys.stdout.flush()
    os.execv(exe, cmd)
    return 0  # not reached


def cmd_runs(args: argparse.Namespace) -> int:
    """``videoatlas runs``: status (``stale`` when the owner is gone), cost so far, error."""
    from videoatlas.cli.runs_table import list_runs, runs_lines
    from videoatlas.persistence.db import resolve_db_url
    from videoatlas.persistence.lease import LeaseTiming
    from videoatlas.persistence.store import TraceStore

    timing = LeaseTiming.from_env()
    store = TraceStore(resolve_db_url(args.db))
    try:
        data = list_runs(store, args.status, args.limit, timing)
    finally:
        store.close()
    if args.json:
        _json(data)
        return 0
    if not data:
        _out("no runs")
        return 0
    width = shutil.get_terminal_size().columns if sys.stdout.isatty() else None
    for line in runs_lines(data, width):
        sys.stdout.write(line + "\n")  # already escaped cell by cell (the table's own spacing is kept)
    return 0


def cmd_trace(args: argparse.Namespace) -> int:
    """``videoatlas trace RUN``: the run's header, then the agent's own view of it (or its node timeline)."""
    from videoatlas.inspect import load_trace, trace_lines

    trace = asyncio.run(load_trace(args.run, args.db))
    if args.json:
        _json(trace)
        return 0
    for line in trace_lines(trace):
        _out(line)
    return 0


def _stored_endpoint(run_id: str, db: str | None) -> dict[str, Any] | None:
    """The endpoint a run recorded (None: no such run; ``resume`` itself then says so)."""
    from videoatlas.persistence.db import resolve_db_url
    from videoatlas.persistence.store import TraceStore

    store = TraceStore.shared(resolve_db_url(db))
    try:
        row = store.run(run_id)
        return dict(row.endpoint) if row is not None else None
    finally:
        store.release()


@contextlib.contextmanager
def resume_endpoint(args: argparse.Namespace) -> Iterator[EndpointSettings | None]:
    """The endpoint to resume with: the flags', a new in-process stand-in, or None (the stored one).

    A run answered by the in-process stand-in (``ask --standin``) stored that, not the stand-in's
    port, which died with it: the stand-in is started again (``--standin`` forces it for any run).
    """
    if args.standin and args.base_url:
        raise BadInputError("--standin and --base-url name two endpoints: give one")
    stored = {} if args.base_url or args.standin else _stored_endpoint(args.run, args.db) or {}
    if args.standin or stored.get("standin"):
        pixels = stored.get("max_image_pixels")
        with standin_endpoint(pixels if isinstance(pixels, int) else None, None, model=args.model or "") as endpoint:
            yield endpoint
        return
    if args.base_url or args.model:
        yield EndpointSettings.from_env(None, base_url=args.base_url, model=args.model)
        return
    yield None


def cmd_resume(args: argparse.Namespace) -> int:
    """``videoatlas resume RUN``."""
    from videoatlas.runs import resume_run

    progress = _progress(args.quiet or args.json, args.db)
    with resume_endpoint(args) as endpoint:
        try:
            result = run_stoppable(resume_run(args.run, args.db, progress, endpoint=endpoint, force=args.force))
        except Interrupted as exc:
            raise progress.stopped(exc) from None
    if args.json:
        _json(result.as_dict())
    else:
        print_result(result)
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    """``videoatlas report RUN -o run.html``: the UI's run page as one self-contained file."""
    from videoatlas.ui.report import write_report

    out = Path(args.output)
    asyncio.run(write_report(args.run, args.db, out))
    _out(f"wrote {out} ({out.stat().st_size // 1024} KB)")
    return 0


def cmd_ui(args: argparse.Namespace) -> int:
    """``videoatlas ui``: the web UI over runs and evals, until interrupted."""
    from videoatlas.persistence.db import resolve_db_url
    from videoatlas.ui.app import is_safe_host, serve
    from videoatlas.ui.evals import EvalFolders

    if not 0 < args.port < 65536:
        raise BadInputError(f"--port must be between 1 and 65535, got {args.port}")
    url = resolve_db_url(args.db)
    folders = EvalFolders.check(args.evals)
    if not is_safe_host(args.host):
        sys.stderr.write(f"warning: --host {args.host} serves every run to anyone who can reach it (no login)\n")
    sys.stderr.write(f"videoatlas ui: http://{args.host}:{args.port}/ (Ctrl-C stops it)\n")
    sys.stderr.flush()
    serve(url, folders, args.host, args.port)
    return 0
