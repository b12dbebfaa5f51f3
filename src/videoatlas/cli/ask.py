"""Answering a question: ``ask``, ``resume`` (an interrupted run, from its last checkpoint) and ``demo``.

Parsing and printing only: the request is built and checked by the front door
(:func:`videoatlas.request.make_request`) before LangGraph, the agents or the model client are
imported, so a typo costs no stand-in start-up, and run by :func:`videoatlas.request.answer`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from videoatlas import limits
from videoatlas.cli.options import (
    Subparsers,
    add_agent_options,
    add_base_url_option,
    add_db_option,
    add_endpoint_options,
    add_json_option,
    add_model_option,
    add_out_option,
    add_quiet_option,
    add_run_argument,
    add_standin_option,
    add_subtitle_options,
    add_video_argument,
    subtitle_offset,
)
from videoatlas.cli.outputs import command_name, output_folder, undo_on_failure
from videoatlas.cli.outputs import write_json as _json
from videoatlas.cli.outputs import write_line as _out
from videoatlas.cli.progress import Progress
from videoatlas.cli.run_setup import endpoint_choice, flag, options_from
from videoatlas.cli.run_view import RunProgress, print_result
from videoatlas.cli.signals import Interrupted, run_stoppable
from videoatlas.cli.video import open_atlas
from videoatlas.errors import BadInputError, OutageError
from videoatlas.paths import home_dir
from videoatlas.request import EndpointChoice, answer, make_request, resume_request


def add_ask_parser(sub: Subparsers, agent_settings: bool) -> None:
    """``videoatlas ask VIDEO -q ... [-c ...]`` (``agent_settings``: with each agent's own options)."""
    p = sub.add_parser("ask", help="answer a question about a video with one of the agents (--agent)")
    add_video_argument(p)
    p.add_argument("-q", "--question", required=True, help=f"the question (at most {limits.QUESTION_MAX_CHARS} chars)")
    p.add_argument(
        "-c",
        "--choice",
        action="append",
        default=[],
        help="an answer choice (repeat for each: at least 2, all different); none: an open-ended question",
    )
    add_subtitle_options(p, "SRT, WebVTT or LongVideoBench JSON")
    add_agent_options(p, agent_settings)
    add_endpoint_options(p)
    add_db_option(p, "database URL for checkpoints and traces (env VIDEOATLAS_DB)")
    p.add_argument("--no-persist", action="store_true", help="keep checkpoints in memory, write no traces")
    shown = p.add_mutually_exclusive_group()
    add_json_option(shown)
    shown.add_argument(
        "--stream-json",
        action="store_true",
        help="print each event of the run (node progress) as a JSON line on stdout as it happens, "
        'then the result as a last line with "event": "result"',
    )
    add_quiet_option(p)
    p.set_defaults(func=cmd_ask)


def add_resume_parser(sub: Subparsers) -> None:
    """``videoatlas resume RUN``."""
    p = sub.add_parser("resume", help="continue an interrupted run from its last checkpoint")
    add_run_argument(p)
    add_db_option(p)
    add_base_url_option(p, "endpoint to use instead of the stored one")
    add_model_option(p, "model to use instead of the stored one")
    add_standin_option(
        p, "answer with the STAND-IN VLM started in-process (the default for a run started with ask --standin)"
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="take the run over even from a live process (which then stops); default: only from a stale one",
    )
    add_json_option(p)
    add_quiet_option(p)
    p.set_defaults(func=cmd_resume)


def add_demo_parser(sub: Subparsers) -> None:
    """``videoatlas demo``."""
    p = sub.add_parser("demo", help="synthesise a video, start the stand-in VLM, answer a question about it")
    add_out_option(p, "where to write (default: the data directory)", required=False)
    p.add_argument(
        "--question",
        type=int,
        default=0,
        metavar="0-6",
        help="index of the demo video's question to ask, 0 to 6 (default 0)",
    )
    add_json_option(p)
    p.set_defaults(func=cmd_demo)


def cmd_ask(args: argparse.Namespace) -> int:
    """``videoatlas ask VIDEO -q ... [-c ...]``."""
    request = make_request(
        args.video,
        args.question,
        args.choice,
        agent=args.agent,
        options=options_from(args),
        endpoint=endpoint_choice(args),
        subtitles=args.subtitles,
        subtitle_offset=subtitle_offset(args.subtitle_offset),
        db=args.db,
        persist=not args.no_persist,
        spell=flag,
    )
    quiet = args.quiet or args.json or args.stream_json
    progress = RunProgress(quiet, args.db, stream=args.stream_json, standin=request.endpoint.standin)
    try:
        with progress:
            result = run_stoppable(answer(request, progress))
    except Interrupted as exc:
        if args.no_persist:
            raise
        raise progress.stopped(exc) from None
    except OutageError as exc:
        if args.no_persist:
            raise
        raise progress.outage(exc) from None
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

    from videoatlas import standin
    from videoatlas.agents.registry import get_agent
    from videoatlas.synth import SynthSpec, load_current, synthesize
    from videoatlas.synth.chapters import plan_timeline

    out = output_folder(args.out) if args.out else home_dir() / "demo"
    spec = SynthSpec(duration=600, seed=7)
    planned = len(plan_timeline(spec).questions)  # cheap: no pixels, so a bad --question costs nothing
    if not 0 <= args.question < planned:
        raise BadInputError(f"--question must be between 0 and {planned - 1}")
    standin.require()
    truth = load_current(out)
    if truth is not None and (truth["spec"].get("seed") != spec.seed or truth["duration"] != spec.duration):
        truth = None
    if truth is None:
        sys.stderr.write(f"synthesising a 10-minute demo video into {out} ...\n")
        with undo_on_failure(out), Progress("synth", quiet=args.json) as progress:
            truth = synthesize(spec, out, progress=progress)
    question = truth["questions"][args.question]
    video = out / "video.mp4"
    request = make_request(video, question["question"], question["choices"], endpoint=EndpointChoice(standin=True))
    with RunProgress(args.json, standin=True) as progress:
        result = run_stoppable(answer(request, progress))
    atlas = open_atlas(str(video), request.config.k, request.config.cell_px, None, cache=True)
    try:  # the run as its agent shows it, in pictures of its own (by default: the evidence scratchpad)
        pictures = get_agent(request.config.agent).views.run_pictures(result.state, atlas)
    finally:
        atlas.source.close()
    pictured = out / "runs" / result.run_id  # each run's own: a later demo run overwrites none of them
    pictured.mkdir(parents=True, exist_ok=True)
    files = {p.name: str(p.image.save(pictured / f"{p.name}.jpg")) for p in pictures}
    captions = {p.name: p.caption for p in pictures}
    correct = result.answer_index == question["answer_index"]
    if args.json:
        _json({**result.as_dict(), "video": str(video), "truth": question["answer"], "correct": correct, **files})
        return 0
    _out(f"video:    {video} (10 minutes, synthetic; ground truth in {out / 'video.json'})")
    _out(f"question: {question['question']}")
    for i, choice in enumerate(question["choices"]):
        _out(f"          {chr(ord('A') + i)}. {choice}")
    print_result(result)
    _out(f"ground truth: {question['answer']} ({'correct' if correct else 'wrong'})")
    _out("the answers come from the STAND-IN VLM; point --base-url at a vLLM server to use a real model")
    _out("inspect:")
    for name, path in files.items():
        _out(f"  {captions[name]}: {path}")
    exe = command_name()
    _out(f"  the video as a grid: {exe} grid {shlex.quote(str(video))} -o grid.jpg")
    _out(f"  the run, step by step: {exe} trace {result.run_id}")
    _out(f"  the same run as JSON:  {exe} trace {result.run_id} --json")
    hint = activate_hint()
    if hint is not None:
        _out(f"  (or run `{hint}` first, and type `videoatlas` instead)")
    return 0


def cmd_resume(args: argparse.Namespace) -> int:
    """``videoatlas resume RUN``."""
    request = resume_request(args.run, args.db, endpoint_choice(args), args.force)
    progress = RunProgress(args.quiet or args.json, args.db, standin=request.endpoint.standin)
    try:
        with progress:
            result = run_stoppable(answer(request, progress))
    except Interrupted as exc:
        raise progress.stopped(exc) from None
    except OutageError as exc:
        raise progress.outage(exc) from None
    if args.json:
        _json(result.as_dict())
    else:
        print_result(result)
    return 0
