"""Per-unit privacy report plots from a run's ``summary.json``.

  python -m experiments.plot_privacy RUN_DIR_OR_SUMMARY_JSON --out FILE.png [--report privacy]

Reads the :class:`~jaxfl.accounting.report.PrivacyReport` stored under ``--report``
(``privacy``, the strict report, by default; ``privacy_paper`` for the paper mode) and draws its
``per_unit`` epsilons:

* 2-D (``per_unit_axes`` e.g. ``("observer", "target")``: DP-OGL workers, gossip node pairs): a
  heatmap; ``nan`` (a pair that is not accounted, e.g. a unit and itself) is grey, ``inf`` (no
  guarantee) is red;
* 1-D (per user of ULDP, per subject, per silo): a histogram of the finite epsilons and the
  sorted curve, with the headline (worst unit) as a line and the count of units without a
  guarantee (``inf``).

The title names the algorithm, the unit, delta, the accountant, the mode and whether the
report is sound. A report without ``per_unit`` (e.g. DP-FedAvg: every client has the same
epsilon) is an error, raised before anything is drawn.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np


class NoPerUnitError(ValueError):
    """The report has no per-unit epsilons to plot."""


def load_summary(path) -> dict:
    """The summary dict of a run directory or a ``summary.json`` path."""
    path = Path(path)
    if path.is_dir():
        path = path / "summary.json"
    if not path.exists():
        raise FileNotFoundError(f"No summary.json at {path}.")
    return json.loads(path.read_text())


def per_unit(report: dict) -> tuple[np.ndarray, tuple[str, ...]]:
    """``(epsilons, axes)`` of a report dict (``"inf"`` / ``"nan"`` strings decoded)."""
    if report.get("per_unit") is None:
        raise NoPerUnitError(
            f"The {report.get('unit', '?')}-level report ({report.get('accountant', '?')}) has "
            "no per_unit epsilons: its accountant gives one epsilon for every unit.")

    def num(v):
        return [num(x) for x in v] if isinstance(v, list) else float(v)

    arr = np.asarray(num(report["per_unit"]), dtype=np.float64)
    axes = tuple(report.get("per_unit_axes") or ())
    if arr.ndim not in (1, 2) or len(axes) != arr.ndim:
        raise NoPerUnitError(
            f"Expected a 1-D or 2-D per_unit array with named axes, got shape {arr.shape} and "
            f"axes {axes}.")
    return arr, axes


def title(summary: dict, report: dict) -> str:
    eps = float(report["epsilon"])
    sound = "sound" if report.get("sound", True) else "NOT sound"
    name = summary.get("algorithm") or "accounting study"
    return (f"{name}: per-{report['unit']} epsilon (worst {eps:.3g}) at delta = "
            f"{float(report['delta']):g}, {report['rounds']} rounds\n"
            f"accountant {report['accountant']}, mode {report['mode']}, {sound}")


def figure(summary: dict, report_key: str = "privacy"):
    """A matplotlib ``Figure`` of ``summary[report_key]``'s per-unit epsilons."""
    import matplotlib
    from matplotlib import colors
    from matplotlib.figure import Figure

    if report_key not in summary:
        raise NoPerUnitError(f"The summary has no {report_key!r} report (has "
                             f"{sorted(k for k in summary if k.startswith('privacy'))}).")
    report = summary[report_key]
    eps, axes = per_unit(report)
    finite = eps[np.isfinite(eps)]
    n_inf = int(np.sum(np.isinf(eps)))
    if eps.ndim == 2:
        fig = Figure(figsize=(6.4, 5.2))
        ax = fig.add_subplot()
        cmap = matplotlib.colormaps["viridis"].with_extremes(bad="lightgrey")
        top = float(finite.max()) if finite.size else 1.0
        im = ax.imshow(np.ma.masked_invalid(eps), cmap=cmap, vmin=0.0, vmax=max(top, 1e-12),
                       aspect="auto", interpolation="nearest")
        if n_inf:  # draw inf cells on top in red
            ax.imshow(np.ma.masked_where(~np.isinf(eps), np.ones_like(eps)),
                      cmap=colors.ListedColormap(["red"]), aspect="auto",
                      interpolation="nearest")
        fig.colorbar(im, ax=ax, label="epsilon")
        ax.set_ylabel(f"{axes[0]} (row)")
        ax.set_xlabel(f"{axes[1]} (column)")
        notes = [f"grey: not accounted ({int(np.sum(np.isnan(eps)))})"]
        if n_inf:
            notes.append(f"red: no guarantee ({n_inf})")
        ax.text(0.0, -0.14, "; ".join(notes), transform=ax.transAxes, fontsize=8, va="top")
    else:
        fig = Figure(figsize=(10.0, 4.0))
        ax1, ax2 = fig.subplots(1, 2)
        if finite.size:
            ax1.hist(finite, bins=min(40, max(5, finite.size // 3)), color="tab:blue")
        ax1.set_xlabel("epsilon")
        ax1.set_ylabel(f"{axes[0]}s")
        ax1.set_title(f"{finite.size} {axes[0]}s with finite epsilon, {n_inf} with inf",
                      fontsize=9)
        order = np.sort(np.where(np.isnan(eps), -np.inf, eps))[::-1]
        ranks = np.arange(1, eps.size + 1)
        ok = np.isfinite(order)
        ax2.plot(ranks[ok], order[ok], marker=".", ls="-")
        head = float(report["epsilon"])
        if math.isfinite(head):
            ax2.axhline(head, color="k", ls=":", lw=1, label=f"headline {head:.3g}")
        if n_inf:  # no guarantee: drawn above every finite value
            level = 1.1 * max([1e-12, *finite.tolist(), *([head] if math.isfinite(head) else [])])
            ax2.scatter(ranks[np.isposinf(order)], np.full(n_inf, level), marker="^",
                        color="red", label=f"inf: no guarantee ({n_inf})")
        ax2.legend(fontsize=8)
        ax2.set_xlabel(f"{axes[0]} rank (most exposed first)")
        ax2.set_ylabel("epsilon")
        for a in (ax1, ax2):
            a.grid(alpha=0.3)
    fig.suptitle(title(summary, report), fontsize=9)
    fig.tight_layout()
    return fig


def plot(source, out, *, report_key: str = "privacy") -> Path:
    """Writes the per-unit plot of ``source`` (a run directory, a ``summary.json`` path or a
    summary dict) to ``out`` (PNG) and returns its path."""
    summary = source if isinstance(source, dict) else load_summary(source)
    fig = figure(summary, report_key)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    return out


def main(argv=None) -> Path:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("source", help="run directory or summary.json")
    parser.add_argument("--out", required=True, help="PNG path")
    parser.add_argument("--report", default="privacy",
                        help="report key in summary.json (privacy, privacy_paper)")
    args = parser.parse_args(argv)
    try:
        summary = load_summary(args.source)
        out = plot(summary, args.out, report_key=args.report)
    except (NoPerUnitError, FileNotFoundError) as e:
        parser.exit(2, f"plot_privacy: error: {e}\n")
    print(out)
    return out


if __name__ == "__main__":
    main()
