"""The one figure function of the reproduction pages (:func:`plot`) and its pieces.

Matplotlib (Agg backend) is an experiments dependency, not a library one.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from jaxfl.repro import runs as _runs


def pyplot():
    """``matplotlib.pyplot`` on the Agg backend (no display)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save(fig, path, *, dpi: int = 90, tight: bool = True) -> None:
    """Saves ``fig`` as ``path`` (creating the folder) and closes it."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    if tight:
        fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    pyplot().close(fig)


def yerr(intervals: Sequence[dict]) -> np.ndarray:
    """``[2, n]`` error bars (below, above the mean) of :func:`~jaxfl.repro.stats.
    interval` results; zero without an interval (fewer than two values)."""
    return np.array([[v["mean"] - v["lo"], v["hi"] - v["mean"]] if v["n"] > 1 else [0, 0]
                     for v in intervals]).T


def plot(path, panels: Sequence[dict], *, rows: int = 1, cell=(5.2, 3.6), title=None,
         dpi: int = 90, **subplots) -> None:
    """The one figure function of the papers: ``panels`` (row-major on ``rows`` rows of
    ``cell``-sized axes) drawn and saved by :func:`save`. A panel is a dict: ``lines`` (dicts of
    ``x``, ``y``, optional ``fmt``, ``band`` (lo, hi) shaded, and ``Axes.plot`` keywords; with
    ``yerr``: ``Axes.errorbar``'s),
    ``bars`` ({legend: :func:`~jaxfl.repro.stats.interval` results}, grouped with 95%
    bars, :func:`yerr`) over the tick labels ``ticks``, ``hline`` (a dotted reference, or a
    dict of ``Axes.axhline`` keywords), ``legend`` (its font size; none without a label),
    ``grid``, ``size`` (the title's font size), ``minor`` (False: no minor ticks); any other
    key is an ``Axes.set`` keyword (title, xlabel, ylabel, xscale, ylim ...)."""
    cols = -(-len(panels) // rows)
    fig, axes = pyplot().subplots(rows, cols, figsize=(cell[0] * cols, cell[1] * rows),
                                  squeeze=False, **subplots)
    for ax, p in zip(axes.ravel(), panels, strict=False):
        p = dict(p)
        for line in map(dict, p.pop("lines", ())):
            x, y, band = line.pop("x"), line.pop("y"), line.pop("band", None)
            if "yerr" in line:
                ax.errorbar(x, y, fmt=line.pop("fmt", ""), **line)
            else:
                ax.plot(x, y, *filter(None, [line.pop("fmt", None)]), **line)
            if band is not None:
                ax.fill_between(x, *band, alpha=0.15)
        bars, ticks = p.pop("bars", {}), p.pop("ticks", None)
        for i, (label, iv) in enumerate(bars.items()):
            w = 0.72 / len(bars)
            ax.bar(np.arange(len(iv)) + (i - (len(bars) - 1) / 2) * w,
                   [v["mean"] for v in iv], w, yerr=yerr(iv), capsize=3, label=label)
        if ticks is not None:
            ax.set_xticks(np.arange(len(ticks)), ticks, fontsize=6, rotation=p.pop("rotation", 0))
        if (h := p.pop("hline", None)) is not None:
            ax.axhline(**h) if isinstance(h, dict) else ax.axhline(h, color="gray", lw=0.8, ls=":")
        if p.pop("grid", False):
            ax.grid(alpha=0.3)
        size, legend, minor = p.pop("size", None), p.pop("legend", None), p.pop("minor", True)
        ax.set(**p)
        if size:
            ax.title.set_fontsize(size)
        if legend and ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=legend)
        if not minor:
            ax.minorticks_off()
    if title:
        fig.suptitle(title, fontsize=10)
    save(fig, path, dpi=dpi)


def image_grid(path, images, *, rows: int, cols: int, label: str, title: str) -> None:
    """Matrices (``z``, with ``Axes.set`` keywords) as images on one color scale, row-major on
    ``rows`` x ``cols`` axes (the rest hidden), with one color bar (``label``); NaN cells are
    white, exact zeros black."""
    from matplotlib.colors import ListedColormap

    plt = pyplot()
    fig, axes = plt.subplots(rows, cols, figsize=(3.5 * cols, 3.5 * rows))
    vmax = max(np.nanmax(np.asarray(im["z"], float)) for im in images)
    for ax in axes.ravel()[len(images):]:
        ax.axis("off")
    for ax, im in zip(axes.ravel(), map(dict, images), strict=False):
        z, name = np.asarray(im.pop("z"), float), im.pop("title")
        shown = ax.imshow(np.ma.masked_invalid(z), interpolation="nearest", vmin=0, vmax=vmax,
                          cmap=plt.get_cmap("viridis").with_extremes(bad="white"))
        ax.imshow(np.where(z == 0, 1.0, np.nan), interpolation="nearest",
                  cmap=ListedColormap(["black"]))
        ax.set_title(name, fontsize=9)
        ax.set(**im)
    fig.colorbar(shown, ax=axes.ravel().tolist(), shrink=0.7, label=label)
    fig.suptitle(title)
    save(fig, path, dpi=80, tight=False)


def interval_bars(cells: dict, keys: dict[str, str], name=str, **panel) -> dict:
    """A :func:`plot` panel of grouped bars with 95% t-intervals: per cell of ``cells``
    (key -> its :func:`~stats.interval` results) whose first of ``keys`` has values, one bar per
    ``key: legend`` of ``keys``, ticked "name(key) (n=...)"; ``panel``: its other keywords."""
    first = next(iter(keys))
    shown = [c for c in cells if cells[c][first]["n"]]
    return dict(bars={legend: [cells[c][k] for c in shown] for k, legend in keys.items()},
                ticks=[f"{name(c)}\n(n={cells[c][first]['n']})" for c in shown], **panel)


def interval_lines(cells: dict, names, key: str, shift: float = 0.04) -> list[dict]:
    """Lines with 95% t-interval error bars of ``cells`` keyed ``(name, x)`` (each cell's
    ``key``: a :func:`~jaxfl.repro.stats.interval`), one per name of ``names`` with cells,
    side by side on a log x axis (the ``j``-th at x times ``1 + shift * (j - 1)``)."""
    out = []
    for j, name in enumerate(names):
        if xs := sorted(x for n, x in cells if n == name):
            iv = [cells[(name, x)][key] for x in xs]
            out.append(dict(x=np.array(xs) * (1 + shift * (j - 1)), y=[v["mean"] for v in iv],
                            yerr=yerr(iv), marker="o", capsize=3, label=name))
    return out


def curve_panels(runs: dict, panels: dict, **axes) -> list[dict]:
    """Panels of :func:`experiments.plotting.figures.plot`: per ``title: {run name: legend}``
    of ``panels`` each run's :func:`~jaxfl.repro.runs.mean_curve` (the runs that ran), the
    legend on the first panel; ``axes``: every panel's other keywords."""
    return [dict(lines=[dict(x=c[0], y=c[1], label=label) for name, label in lines.items()
                        if (c := _runs.mean_curve(runs.get(name))) is not None],
                 title=title, legend="medium" if i == 0 else None, **axes)
            for i, (title, lines) in enumerate(panels.items())]


def seed_lines(rows: list[dict], x: str, y: str, **kw) -> list[dict]:
    """One :func:`plot` line per seed of per-round ``rows``, labelled "seed s"."""
    return [dict(x=[r[x] for r in rs], y=[r[y] for r in rs], label=f"seed {s}", **kw)
            for s, rs in sorted(_runs.group(rows, "seed").items())]


__all__ = ["plot", "pyplot", "save", "yerr"]
