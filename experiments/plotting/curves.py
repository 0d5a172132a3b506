"""Figures drawn from JSON-lines logs only (never from training code)."""

from __future__ import annotations

from pathlib import Path

from jaxfl import metrics


def plot_run(workdir, out=None, *, keys=("test_accuracy", "epsilon")) -> Path:
    """Plots the given metric keys against the round for one run directory."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    workdir = Path(workdir)
    recs = metrics.read_jsonl(workdir / "metrics.jsonl")
    keys = [k for k in keys if any(k in r for r in recs)]
    fig, axes = plt.subplots(1, max(len(keys), 1), figsize=(4.2 * max(len(keys), 1), 3.2))
    axes = [axes] if len(keys) <= 1 else list(axes)
    for ax, key in zip(axes, keys, strict=False):
        pts = [(r["round"], r[key]) for r in recs if key in r]
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=".")
        ax.set_xlabel("round")
        ax.set_ylabel(key)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    out = Path(out) if out else workdir / "curves.png"
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
