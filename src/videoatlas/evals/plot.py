"""The eval plots: tokens per question against video duration; the reliability diagram of the confidence."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from videoatlas.evals.report import EvalData, mean_of


def _pyplot() -> Any:
    """Pyplot, matplotlib's, on the file-only backend (imported when a plot is drawn, never at start-up)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(plt: Any, fig: Any, path: str | Path) -> Path:
    """Write ``fig`` to ``path`` (its folder made) and close it."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(out)
    plt.close(fig)
    return out


def plot_tokens_vs_duration(evals: Sequence[EvalData], path: str | Path) -> Path:
    """A PNG: tokens per question against video duration (log-log), one series per eval."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=120)
    for n, data in enumerate(evals):
        rows = [r for r in data.answered if r.get("duration")]
        if not rows:
            continue
        color = f"C{n}"
        ax.scatter([r["duration"] / 60 for r in rows], [r["tokens"] for r in rows], s=12, alpha=0.35, color=color)
        means: dict[float, list[int]] = {}
        for r in rows:
            means.setdefault(r["duration"], []).append(r["tokens"])
        xs = sorted(means)
        ax.plot([x / 60 for x in xs], [mean_of(means[x]) for x in xs], marker="o", color=color, label=data.label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("video duration (minutes)")
    ax.set_ylabel("tokens per question")
    ax.set_title("Tokens per question vs. video duration")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    return _save(plt, fig, path)


def plot_reliability(calibrations: Mapping[str, dict[str, Any]], path: str | Path) -> Path:
    """A PNG: accuracy against mean confidence per confidence bin, beside the diagonal, one series per label.

    ``calibrations`` maps a label to a calibration as the report holds it
    (:meth:`~videoatlas.evals.calibration.Calibration.as_dict`); each non-empty bin is a point, sized and
    labelled by its count. A point under the diagonal is overconfident, one above it underconfident.
    """
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(5.5, 6.2), dpi=120)
    ax.plot([0, 1], [0, 1], linestyle="--", color="0.5", label="perfectly calibrated")
    for n, (label, calibration) in enumerate(calibrations.items()):
        bins = [b for b in calibration["bins"] if b["count"]]
        if not bins:
            continue
        color = f"C{n}"
        xs, ys = [b["mean_confidence"] for b in bins], [b["accuracy"] for b in bins]
        ece = calibration["ece"]
        ax.plot(xs, ys, color=color, marker=".", label=f"{label}: ECE {ece:.3f}, {calibration['rows']} answers")
        ax.scatter(xs, ys, s=[25 + 25 * b["count"] for b in bins], color=color, alpha=0.3)
        for b in bins:
            ax.annotate(
                f"n={b['count']}", (b["mean_confidence"], b["accuracy"]), textcoords="offset points", xytext=(7, 4),
                fontsize=7, color=color,
            )  # fmt: skip
    ax.set_xlim(-0.02, 1.02)
    ax.set_ylim(-0.04, 1.06)
    ax.set_aspect("equal")
    ax.set_xlabel("confidence (mean in the bin)")
    ax.set_ylabel("accuracy in the bin")
    ax.set_title("Reliability: confidence vs. accuracy")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.12))  # below: never over a point
    return _save(plt, fig, path)
