"""``videoatlas eval ...``: run a benchmark, check it, report it, compare two runs, build long variants.

The evaluation code (datasets, the runner, reports and their plots) is imported by the command that
runs, not by ``videoatlas --help``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from videoatlas import limits
from videoatlas.cli.options import (
    Container,
    Lazy,
    Parser,
    Subparsers,
    add_agent_options,
    add_db_option,
    add_endpoint_options,
    add_json_option,
    add_limit_option,
    add_out_option,
    add_quiet_option,
    add_seed_option,
    positive_int,
)
from videoatlas.cli.outputs import command_name, output_folder
from videoatlas.cli.progress import EvalProgressBar, Progress
from videoatlas.cli.run_setup import endpoint_choice, flag, options_from
from videoatlas.cli.signals import Interrupted, run_stoppable
from videoatlas.environment.timefmt import parse_time
from videoatlas.errors import BadInputError
from videoatlas.textsafe import escape_lines

if TYPE_CHECKING:
    from videoatlas.evals.runner import EvalSpec
    from videoatlas.synth import Style

_SUBSET_HELP = (
    "only these published splits, comma-separated: videomme short,medium,long; longvideobench 15,60,600,3600 "
    "(duration groups, s); lvbench ER,EU,KIR,TG,Rea,Sum (question types); synthetic its question kinds "
    "(count,order,right_after,...)"
)


def _datasets() -> Iterable[str]:
    from videoatlas.evals.datasets import DATASETS

    return DATASETS


def _add_dataset_options(p: Container, root_help: str, with_synthetic: bool = True) -> None:
    """``--dataset NAME --root DIR``: a benchmark and where its official files are."""
    names = Lazy(_datasets if with_synthetic else lambda: [d for d in _datasets() if d != "synthetic"])
    p.add_argument("--dataset", required=True, choices=names, metavar="NAME", help="benchmark: %(choices)s")
    p.add_argument("--root", required=True, metavar="DIR", help=root_help)


def _add_subset_option(p: Container) -> None:
    p.add_argument("--subset", default=None, metavar="NAMES", help=_SUBSET_HELP)


def _add_synthetic_options(p: Container) -> None:
    """``--durations``, ``--seed``, ``--styles``: which videos of the synthetic suite (only those are made)."""
    p.add_argument("--durations", default=None, help="synthetic only: e.g. 1m,10m,1h (default 1m,10m,1h,3h,10h)")
    add_seed_option(p, 1, "synthetic only: video seed (default 1)")
    p.add_argument(
        "--styles", default=None, help="synthetic only: comma-separated, e.g. signage (default chapters,broadcast)"
    )


def _making(label: str) -> Progress:
    """The progress a synthetic video is drawn under: a bar on a terminal, else a line at least every 30 s."""
    return Progress(f"{label} (made once)")


def _add_plot_option(p: Container, help: str) -> None:
    p.add_argument("--plot", default=None, metavar="PNG", help=help)


def _add_reliability_option(p: Container, help: str) -> None:
    p.add_argument("--reliability-plot", default=None, metavar="PNG", help=help)


def add_eval_parser(sub: Subparsers, agent_settings: bool = True) -> None:
    """``videoatlas eval run|check|report|compare|make-long`` (``agent_settings``: with the agents' own options)."""
    ev = sub.add_parser("eval", help="run benchmarks, report and compare results (see: videoatlas eval --help)")
    evsub = ev.add_subparsers(dest="eval_command", required=True, metavar="EVAL_COMMAND", parser_class=Parser)

    p = evsub.add_parser("run", help="answer a dataset's questions concurrently; re-run the command to resume")
    _add_dataset_options(p, "the dataset's folder (synthetic: where videos go)")
    add_out_option(p, "results folder (re-using it resumes)")
    add_limit_option(p, "first N questions, spread over videos")
    p.add_argument("--shard", default="0/1", metavar="i/n", help="run only shard i of n (e.g. a Slurm array task)")
    p.add_argument("--concurrency", type=positive_int, default=4, help="questions running at once (default 4)")
    _add_synthetic_options(p)
    p.add_argument("--no-subtitles", action="store_true", help="run without the benchmark's subtitles")
    _add_subset_option(p)
    add_agent_options(p, agent_settings)
    add_endpoint_options(p)
    add_db_option(p, "database for checkpoints, traces and the result cache (VIDEOATLAS_DB)")
    add_json_option(p, "print a JSON summary at the end")
    add_quiet_option(p, "no progress bar or lines")
    p.set_defaults(func=cmd_eval_run)

    p = evsub.add_parser("check", help="pre-flight: count questions, list missing or unreadable videos and subtitles")
    _add_dataset_options(p, "the dataset's folder (synthetic: where videos go)")
    _add_subset_option(p)
    _add_synthetic_options(p)
    add_json_option(p)
    p.set_defaults(func=cmd_eval_check)

    p = evsub.add_parser(
        "report",
        help="accuracy per question kind, costs, grounding; writes report.md and a plot; several DIRs: per agent",
    )
    p.add_argument(
        "folder",
        metavar="DIR",
        nargs="+",
        help="an eval's results folder (eval run --out); several: kind x agent table",
    )
    _add_plot_option(p, "tokens-vs-duration plot (default DIR/tokens.png; several DIRs: one plot of all, if given)")
    _add_reliability_option(
        p, "reliability plot of the confidence (default DIR/reliability.png; several DIRs: one of all, if given)"
    )
    p.add_argument(
        "--by", metavar="AXIS", help="print the kind x agent table, each kind split by this item group (e.g. duration)"
    )
    add_json_option(p)
    p.set_defaults(func=cmd_eval_report)

    p = evsub.add_parser("compare", help="two evals side by side, with paired bootstrap CIs clustered by video")
    p.add_argument("folder_a", metavar="DIR_A", help="the first eval's results folder")
    p.add_argument("folder_b", metavar="DIR_B", help="the second eval's results folder (same questions)")
    _add_plot_option(p, "also write a tokens-vs-duration plot of both")
    _add_reliability_option(p, "also write a reliability plot of both sides' confidence on the paired questions")
    p.add_argument("--resamples", type=int, default=2000, help="bootstrap resamples (default 2000)")
    add_json_option(p)
    p.set_defaults(func=cmd_eval_compare)

    p = evsub.add_parser("make-long", help="long variants: each target among distractor videos of its benchmark")
    _add_dataset_options(p, "the dataset's folder", with_synthetic=False)
    add_out_option(p, "where manifests, subtitles and items.jsonl go")
    p.add_argument("--hours", type=float, default=10.0, help="length of each variant (default 10)")
    add_seed_option(p, 0, "seed choosing the distractor videos (default 0)")
    add_limit_option(p, "first N questions, spread over videos")
    add_json_option(p)
    p.set_defaults(func=cmd_eval_make_long)


def _durations(text: str | None) -> list[float] | None:
    if text is None:
        return None
    values = [parse_time(part) for part in text.split(",") if part.strip()]
    if not values:
        raise BadInputError("--durations needs at least one length, e.g. 1m,10m,1h")
    from videoatlas.synth import default_fps

    for value in values:  # the synthetic suite's videos are made at the default size and rate
        problem = limits.synth_problem(value, default_fps(value), 640, 360)
        if problem is not None:
            raise BadInputError(f"--durations: {problem}")
    return values


def _styles(text: str | None) -> list[Style] | None:
    if text is None:
        return None
    from videoatlas.synth import STYLES

    names = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [n for n in names if n not in STYLES]
    if unknown or not names:
        raise BadInputError(f"--styles takes a comma-separated subset of {','.join(STYLES)}, got {text!r}")
    return [s for s in STYLES if s in names]


def cmd_eval_run(args: argparse.Namespace) -> int:
    """``videoatlas eval run``: exit 0 when every question has a result, 1 when some failed to run."""
    from videoatlas.agents.registry import check_images, check_prompts
    from videoatlas.evals.datasets import parse_subset
    from videoatlas.request import config_of, open_endpoint

    out = output_folder(args.out)
    config = config_of(args.agent, options_from(args), spell=flag)
    check_prompts(config.agent, config.prompts)  # before the runner and its LangGraph are imported
    choice = endpoint_choice(args)
    # The eval's pre-flight, before anything starts: the endpoint's form, and the agent's pictures against
    # its image limit (once for the whole eval: a picture too large is one error, not one per question).
    check_images(config, choice.image_limit())
    from videoatlas.evals.runner import EvalSpec, Shard, run_eval

    spec = EvalSpec(
        dataset=args.dataset,
        root=args.root,
        out=args.out,
        config=config,
        limit=args.limit,
        shard=Shard.parse(args.shard),
        concurrency=args.concurrency,
        durations=_durations(args.durations),
        seed=args.seed,
        styles=_styles(args.styles),
        db_url=args.db,
        subtitles=not args.no_subtitles,
        subset=parse_subset(args.dataset, args.subset),
    )
    created = not out.exists()
    try:
        with open_endpoint(choice) as endpoint:  # the eval checks the pictures against its limit first thing
            if not (args.quiet or args.json):
                _preflight(spec)  # may make the synthetic suite's videos: after the cheap refusals
            with EvalProgressBar(quiet=args.quiet or args.json) as bar:
                outcome = run_stoppable(run_eval(spec, endpoint, bar))
    except BaseException as exc:
        if created and out.is_dir() and not any(out.iterdir()):
            out.rmdir()  # refused or failed before writing anything: no empty folder left behind
        if isinstance(exc, Interrupted):
            exc.hint = "finished questions are written; run the same command again to resume"
        raise
    p = outcome.progress
    summary = {
        "out": str(outcome.out),
        "results": str(outcome.results_file),
        "model": outcome.model,
        "questions": p.total,
        "cached": p.cached,
        "scored": p.scored,
        "correct": p.correct,
        "accuracy": p.accuracy,
        "error_rate": p.error_rate,
        "parse_failures": p.parse_failures,
        "declined": p.declined,
        "errors": p.errors,
        "tokens": p.tokens,
    }
    if args.json:
        sys.stdout.write(json.dumps(summary, indent=2) + "\n")
    else:
        acc = "-" if p.accuracy is None else f"{p.accuracy:.1%}"
        err = "-" if p.error_rate is None else f"{p.error_rate:.1%}"
        sys.stdout.write(
            f"{p.total} question(s): accuracy {acc} ({p.correct}/{p.scored}, a failed run counts as wrong), "
            f"error rate {err} ({p.errors} failed to run), {p.parse_failures} parse failure(s), "
            f"{p.declined} unanswered (the model declined), "
            f"{p.cached} from cache; results in {outcome.results_file}\n"
            f"report: {command_name()} eval report {outcome.out}\n"
        )
    if p.errors:
        sys.stderr.write(f"videoatlas eval run: {p.errors} question(s) failed to run; re-run the command to retry\n")
        return 1
    return 0


def _preflight(spec: EvalSpec) -> None:
    """The ``eval check`` summary of the questions this run will take, on stderr before it starts.

    It names the synthetic suite's videos those questions need that are not made yet; they are made
    next, each under its own progress.
    """
    from videoatlas.evals.check import check_loaded, render_check
    from videoatlas.evals.runner import load_selected

    rep = check_loaded(spec.dataset, spec.root, spec.subset, load_selected(spec, make=False))
    sys.stderr.write(escape_lines(render_check(rep)))
    if rep.to_make:
        load_selected(spec, _making)


def cmd_eval_check(args: argparse.Namespace) -> int:
    """``videoatlas eval check``: exit 0 when every question would run, 1 when something would fail."""
    from videoatlas.evals.check import check_loaded, render_check
    from videoatlas.evals.datasets import load_dataset, parse_subset

    subset = parse_subset(args.dataset, args.subset)
    loaded = load_dataset(
        args.dataset,
        args.root,
        _durations(args.durations),
        args.seed,
        _styles(args.styles),
        subset,
        make=False,  # a pre-flight: the synthetic suite's videos are named, not made
    )
    rep = check_loaded(args.dataset, args.root, subset, loaded)
    if args.json:
        sys.stdout.write(json.dumps(rep.as_dict(), indent=2) + "\n")
    else:
        sys.stdout.write(escape_lines(render_check(rep)))
    return 0 if rep.ok else 1


def cmd_eval_report(args: argparse.Namespace) -> int:
    """``videoatlas eval report DIR [DIR ...]``: each report printed and written (report.md, report.json, plots).

    With several folders (one per agent), or with ``--by``, the kind x agent table and the calibration per
    agent follow (split by ``--by`` when given) in place of the single report's text. The reliability plot
    is drawn only where some answer carried a probability (``reliability_plot`` is None otherwise).
    """
    from videoatlas.evals.kinds import kinds_by_agent, render_kinds
    from videoatlas.evals.plot import plot_tokens_vs_duration
    from videoatlas.evals.report import calibrations_lines, load_eval, render_markdown, report

    folders: list[str] = args.folder
    evals = [load_eval(f) for f in folders]
    reports, texts = [], []
    for data in evals:
        rep = report(data)
        text = render_markdown(rep)
        (data.folder / "report.md").write_text(text, encoding="utf-8")
        (data.folder / "report.json").write_text(json.dumps(rep, indent=1) + "\n", encoding="utf-8")
        if len(evals) == 1:
            rep["plot"] = str(plot_tokens_vs_duration([data], args.plot or data.folder / "tokens.png"))
            rep["reliability_plot"] = _reliability_plot(
                {data.label: rep["calibration"]}, args.reliability_plot or data.folder / "reliability.png"
            )
        reports.append(rep)
        texts.append(text)
    if len(evals) == 1 and not args.by:
        if args.json:
            sys.stdout.write(json.dumps(reports[0], indent=2) + "\n")
        else:
            tail = _reliability_tail(reports[0]["reliability_plot"])
            sys.stdout.write(escape_lines(texts[0]) + f"\nplot: {reports[0]['plot']}\n{tail}")
        return 0
    entries = kinds_by_agent(evals, args.by)
    by_agent = {d.label: rep["calibration"] for d, rep in zip(evals, reports, strict=True)}
    plot = reports[0].get("plot") if len(evals) == 1 else None
    if plot is None and args.plot:
        plot = str(plot_tokens_vs_duration(evals, args.plot))
    reliability = reports[0].get("reliability_plot") if len(evals) == 1 else None
    if reliability is None and args.reliability_plot:
        reliability = _reliability_plot(by_agent, args.reliability_plot)
    if args.json:
        out = {"reports": reports, "kinds": entries, "plot": plot, "reliability_plot": reliability}
        sys.stdout.write(json.dumps(out, indent=2) + "\n")
    else:
        calibration = "\n".join(calibrations_lines("agent", by_agent)) + "\n"
        written = "".join(f"report: {d.folder / 'report.md'}\n" for d in evals)
        tail = (f"plot: {plot}\n" if plot else "") + (f"reliability plot: {reliability}\n" if reliability else "")
        sys.stdout.write(escape_lines(render_kinds(entries, args.by) + "\n" + calibration) + "\n" + written + tail)
    return 0


def _reliability_plot(calibrations: dict[str, dict[str, Any]], path: str | Path) -> str | None:
    """The reliability plot written to ``path``, or None (nothing written) when no answer carried a probability."""
    from videoatlas.evals.plot import plot_reliability

    if not any(c["recorded"] for c in calibrations.values()):
        return None
    return str(plot_reliability(calibrations, path))


def _reliability_tail(path: str | None) -> str:
    return f"reliability plot: {path}\n" if path else "reliability plot: none (no probabilities were recorded)\n"


def cmd_eval_compare(args: argparse.Namespace) -> int:
    """``videoatlas eval compare DIR_A DIR_B``."""
    from videoatlas.evals.compare import compare, render_comparison
    from videoatlas.evals.plot import plot_tokens_vs_duration
    from videoatlas.evals.report import load_eval

    if args.resamples < 100:
        raise BadInputError("--resamples must be at least 100")
    a, b = load_eval(args.folder_a), load_eval(args.folder_b)
    cmp = compare(a, b, resamples=args.resamples)
    tail = ""
    if args.plot:
        cmp["plot"] = str(plot_tokens_vs_duration([a, b], args.plot))
        tail += f"\nplot: {cmp['plot']}\n"
    if args.reliability_plot:
        sides = {f"A = {a.label}": cmp["calibration"]["a"], f"B = {b.label}": cmp["calibration"]["b"]}
        cmp["reliability_plot"] = _reliability_plot(sides, args.reliability_plot)
        tail += ("" if tail else "\n") + _reliability_tail(cmp["reliability_plot"])
    if args.json:
        sys.stdout.write(json.dumps(cmp, indent=2) + "\n")
    else:
        sys.stdout.write(escape_lines(render_comparison(cmp)) + tail)
    return 0


def cmd_eval_make_long(args: argparse.Namespace) -> int:
    """``videoatlas eval make-long``: write long variants and their items file."""
    from videoatlas.evals.datasets import load_items
    from videoatlas.evals.items import interleave
    from videoatlas.evals.variants import build_long_variants

    items = interleave(load_items(args.dataset, args.root))
    if args.limit is not None:
        items = items[: args.limit]
    path, new_items = build_long_variants(items, args.out, hours=args.hours, seed=args.seed)
    videos = len({i.video_id for i in new_items})
    if args.json:
        sys.stdout.write(json.dumps({"items": str(path), "questions": len(new_items), "videos": videos}) + "\n")
    else:
        sys.stdout.write(
            f"{len(new_items)} question(s) over {videos} {args.hours:g}-hour variant(s): {path}\n"
            f"run them with: {command_name()} eval run --dataset jsonl --root {Path(path).parent} --out DIR\n"
        )
    return 0
