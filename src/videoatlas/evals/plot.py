"""The eval plot: tokens per question against video duration."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from videoatlas.evals.report import EvalData, mean_of


def plot_tokens_vs_duration(evals: Sequence[EvalData], path: str | Path) -> Path:
    """A PNG: tokens per question against video duration (log-log), one series per eval."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

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
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(out)
    plt.close(fig)
    return out
