"""Reproduction of Koskela & Kulkarni 2025, "Differential Privacy Analysis of Decentralized
Gossip Averaging under Varying Threat Models" (arXiv 2505.19969 v1), Fig. 1-3 and the spec's
anchor tables (sections 5.1, 5.3, 5.5).

  python -m experiments.reproduce.gossip --scale cpu --workdir runs/gossip
  python -m experiments.reproduce.gossip --scale smoke --workdir /tmp/gossip \
      --figures /tmp/gossip/fig --report /tmp/gossip/gossip.md
  python -m experiments.reproduce.gossip --from-data [--export runs/g3val]

``--export`` writes the per-seed CSV (docs/reproduction/data/gossip_fig3_seeds.csv) of a
``fig3_mnist.py:variant=cpu_val`` sweep; ``--exact-data JSON`` writes a run's exact accounting
(anchors, Fig. 1 left, Fig. 2; committed as docs/reproduction/data/gossip_exact.json);
``--from-data`` writes the whole report from those two files (:func:`page_from_data`; every
verdict of Figs. 1-2 is decided there on the committed curves) and Fig. 3 from the CSV: per
method and ε the learning rate with the best mean validation accuracy over seeds,
then the test accuracy at that rate (mean, 95% t-interval), with interval verdicts.

Scales: ``smoke`` (tiny graphs, seconds to a minute; anchors 5.1 and 5.5 only), ``cpu`` (all
anchors, Fig. 1 left, Fig. 2 to T = 60, Fig. 3 with 30 rounds / 2 ε / 3 learning rates),
``full`` (Fig. 2 to T = 100, Fig. 3 with 50 rounds / 5 ε / 4 learning rates). Every figure's
config runs through the one engine (:func:`experiments.builders.run_spec`, :func:`jaxfl.sweep`):
Fig. 1 and 2 are accounting-only privacy studies, Fig. 3 a vmapped training sweep. Figures
(paper mode and certified mode side by side) and the Markdown section are drawn from the runs'
logs only (``summary.json`` privacy reports, ``metrics.jsonl``). Fig. 1 right needs SNAP's
facebook_combined.txt, which is not shipped: the step is attempted and reported as skipped
when the file is missing. The page's fixed wording is ``templates/gossip.md``; this module
computes its numbers, tables and verdicts.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # small eighs: threads only contend

import numpy as np  # noqa: E402

from experiments import builders  # noqa: E402
from experiments import config as config_lib  # noqa: E402
from experiments.reproduce import _common as _runs  # noqa: E402
from experiments.reproduce import stats  # noqa: E402
from experiments.reproduce._common import table  # noqa: E402
from jaxfl import validate  # noqa: E402
from jaxfl.accounting import gossip as gacc  # noqa: E402
from jaxfl.sensitivity import (  # noqa: E402
    all_pairs_curves,
    asymptotic,
    gossip_sensitivity,
    sensitivity_curve,
    views,
)
from jaxfl.topology import graphs, mixing  # noqa: E402

CONFIGS = Path(__file__).resolve().parents[1] / "configs" / "gossip"

SPEC_5_1 = {"T": (1, 2, 5, 10, 20, 40, 80),
            "neighbour (i=1)": (0.04077, 0.03465, 0.02605, 0.01922, 0.01475, 0.01243, 0.01126),
            "non-nbr (i=0)": (0, 0.00273, 0.00697, 0.00879, 0.00948, 0.00979, 0.00995)}
SPEC_5_3 = {1: (0.4148, 1.0000, 0.4384, 0.7255, 0.7255),
            2: (0.3603, 0.9653, 0.5807, 1.0404, 1.0608),
            5: (0.3143, 0.8787, 0.8618, 1.6379, 1.7601),
            10: (0.2972, 0.7294, 1.2013, 2.1715, 2.5944),
            20: (0.2885, 0.4952, 1.7165, 2.5737, 3.8486),
            40: (0.2842, 0.2817, 2.4993, 2.7635, 5.7595)}
SPEC_5_5 = {("maxdeg", 50): (0.01647, 0.02585, 0.29090, 0.22653, 0.02041),
            ("maxdeg", 200): (0.01942, 0.02177, 0.29024, 0.07214, 0.02041),
            ("maxdeg", 1000): (0.02021, 0.02068, 0.29007, 0.03075, 0.02041),
            ("closed", 50): (0.01417, 0.02180, 0.24348, 0.19930, 0.01673),
            ("closed", 200): (0.01609, 0.01829, 0.24096, 0.06244, 0.01673),
            ("closed", 1000): (0.01661, 0.01735, 0.24029, 0.02587, 0.01673)}


def _sig4(x) -> str:
    return "0" if x == 0 else f"{x:.4g}"


def _pair(spec: float, ours: float) -> str:
    """``spec / ours`` with ours printed to the spec's number of decimals (at least 4)."""
    text = repr(float(spec))
    dec = max(len(text.split(".")[1]) if "." in text else 0, 4)
    return f"{spec:.{dec}f} / {ours:.{dec}f}"


def _er_w(n, p, seed, kind):
    A = graphs.erdos_renyi(n, p, seed=seed)
    return A, (mixing.max_degree(A) if kind == "maxdeg" else mixing.closed_neighbourhood(A))


def anchors(scale: str) -> dict:
    """Our values for the spec's anchor tables (5.3 skipped at smoke scale)."""
    out = {}
    _, W = _er_w(100, 0.2, 1, "maxdeg")
    curves = {k: sensitivity_curve(W, 37, i, 80, certified=False).paper
              for k, i in (("neighbour (i=1)", 1), ("non-nbr (i=0)", 0))}
    out["5.1"] = {k: [float(c[T - 1] / T) for T in SPEC_5_1["T"]] for k, c in curves.items()}
    r6 = gossip_sensitivity(W, 37, 1, 6, mode="sign_exact")
    r12 = gossip_sensitivity(W, 37, 1, 12, mode="sign_exact")
    out["5.1_rigorous"] = {"T": [6, 12], "paper": [r6.paper, r12.paper],
                           "sign_exact": [r6.sign_exact, r12.sign_exact],
                           "abs_sum": [r6.abs_sum, r12.abs_sum],
                           "T_lambda_max": [6 * r6.lambda_max, 12 * r12.lambda_max],
                           "certified": [r6.certified, r12.certified]}
    rows = {}
    for kind in ("maxdeg", "closed"):
        A, W = _er_w(50, 0.2, 2, kind)
        nbr = int(np.flatnonzero(A[0])[0])
        far = next(k for k in range(1, 50) if A[0, k] == 0)
        cols = [sensitivity_curve(W, 0, far, 1000, certified=False).paper,
                sensitivity_curve(W, 0, nbr, 1000, certified=False).paper,
                sensitivity_curve(W, 0, far, 1000, view="tm3", certified=False).paper,
                sensitivity_curve(W, 0, far, 1000, view="tm4", certified=False).paper]
        lim = asymptotic.paper_rate_limit(W, views.make_view(W, "tm1", target=0, observer=far))
        for T in (50, 200, 1000):
            rows[f"{kind},{T}"] = [float(c[T - 1] / T) for c in cols] + [lim]
    out["5.5"] = rows
    if scale != "smoke":
        _, W = _er_w(50, 0.2, 2, "maxdeg")
        hs = tuple(SPEC_5_3)
        c3 = all_pairs_curves(W, hs, view="tm3", certified=False).paper
        c4 = all_pairs_curves(W, hs, view="tm4", certified=False).paper
        tab = {}
        for k, T in enumerate(hs):
            d3, d4 = c3[k][~np.isnan(c3[k])], c4[k][~np.isnan(c4[k])]
            e = lambda d: float(gacc.pair_epsilons(d, noise_multiplier=5.0, delta=1e-5).mean())
            tab[str(T)] = [float(d3.mean() / T), float(d4.mean() / T), e(d3), e(d4),
                           gacc.pair_epsilon(T, noise_multiplier=5.0, delta=1e-5)]
        out["5.3"] = tab
    return out


# --------------------------------------------------------------------------------- figures

def plot_fig1(res: dict, path: Path) -> None:
    plt = _runs.pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4), sharey=True)
    for ax, key, title in ((axes[0], "paper_over_T", "paper mode (1ᵀM1)"),
                           (axes[1], "certified_over_T", "certified mode")):
        for c in res["curves"]:
            y = np.array([np.nan if v is None else v for v in c[key]])
            ax.plot(c.get(key.replace("_over_T", "_T"), c["T"]), y,
                    label=f"{c['kind']} i={c['observer']}")
        if res["limit"] is not None:
            ax.axhline(res["limit"], ls="--", c="k", lw=0.8, label="1/(n-1)")
        ax.set_xlabel("T")
        ax.set_title(title, fontsize=9)
        ax.set_yscale("log")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel(f"Δ²/T  (TM-1, j = {res['target']})")
    axes[1].legend(fontsize=7)
    _runs.save(fig, path)


def plot_fig2(res: dict, path: Path) -> None:
    plt = _runs.pyplot()
    s = res["series"]
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4), sharey=True)
    for ax, mode in ((axes[0], "paper"), (axes[1], "certified")):
        for key, label in (("tm3", "Thm 3 (secure summation)"), ("tm4", "Thm 4 (plain)")):
            d = s[f"{key}_{mode}"]
            ax.plot(d["T"], d["mean_eps"], marker="." if mode == "certified" else None,
                    label=label)
        if mode == "paper" and "tm4_exact_paper" in s:
            d = s["tm4_exact_paper"]
            ax.plot(d["T"], d["mean_eps"], ls=":", marker="x",
                    label="plain, exact view (non-adapt.)")
        if "ldp" in s:
            ax.plot(s["ldp"]["T"], s["ldp"]["mean_eps"], "k--", label="LDP")
        ax.set_title(f"{mode} mode", fontsize=9)
        ax.set_xlabel("T")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel(f"mean pairwise ε (σ = {res['config']['noise_multiplier']:g})")
    axes[0].legend(fontsize=7)
    _runs.save(fig, path)


def best_accuracy(res: dict) -> dict:
    """{method: {eps: best final accuracy over learning rates}}."""
    best = {}
    for r in res["results"]:
        acc = r["test_accuracy"][-1]
        cur = best.setdefault(r["method"], {}).get(r["epsilon"], (-1.0, None))
        if acc > cur[0]:
            best[r["method"]][r["epsilon"]] = (acc, r["learning_rate"])
    return best


FIG3_PANELS = (("paper accounting", ("gossip_ss_thm3_paper", "gossip_p_thm4_paper", "fedavg")),
               ("certified accounting", ("gossip_ss_thm3_certified", "gossip_ldp", "fedavg")))


def _plot_fig3_panels(series, path: Path, note: str = "", fontsize: int = 9) -> None:
    """Fig. 3's two panels: ``series(method, k)`` gives the k-th method's ``(ε, accuracy,
    error bars or None)``, or None for a method that did not run (the smoke grid runs one)."""
    fig, axes = _runs.pyplot().subplots(1, 2, figsize=(9, 3.4), sharey=True)
    for ax, (title, names) in zip(axes, FIG3_PANELS, strict=True):
        for k, name in enumerate(names):
            if (s := series(name, k)) is None:
                continue
            x, y, err = s
            if err is None:
                ax.plot(x, y, marker="o", label=name)
            else:
                ax.errorbar(x, y, yerr=err, marker="o", capsize=3, label=name)
        ax.set_xscale("log")
        ax.set_xlabel("mean pairwise ε (δ = 1e-5)")
        ax.set_title(title + note, fontsize=fontsize)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("test accuracy (one node)")
    for ax in axes:
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
    _runs.save(fig, path)


def plot_fig3(res: dict, path: Path) -> None:
    best = best_accuracy(res)
    _plot_fig3_panels(lambda name, _: (sorted(best[name]), [best[name][e][0] for e in sorted(
        best[name])], None) if name in best else None, path)


# ---------------------------------------------------------------------------------- report

FIG2_HEAD = ("T", "Thm 3 paper (view tm3, all-ones; not sound)",
             "Thm 3 certified (view tm3; sound)",
             "Thm 4 paper (view tm4 reduction, all-ones; not sound)",
             "Thm 4 certified (view tm4 reduction; not sound: below the exact view tm4_exact)",
             "LDP (sound)")
EXACT = Path("docs/reproduction/data/gossip_exact.json")
PAGE = "docs/reproduction/gossip.md"


def _prose(block: str, **fields) -> str:
    """A block of ``templates/gossip.md`` (the page's fixed wording)."""
    return _runs.prose("gossip", block, **fields)


def _lines(lines) -> str:
    return "\n".join(lines)


def _page(blocks: list[str]) -> str:
    """The page's text: its blocks (no trailing newlines) separated by blank lines."""
    return "\n\n".join(blocks) + "\n"


def _graph(cfg: dict) -> str:
    """A config's graph and mixing matrix: "ER(100, 0.2, seed 1), maxdeg W"."""
    return f"ER({cfg['n']}, {cfg['p']}, seed {cfg['graph_seed']}), {cfg['mixing']} W"


def header(scale: str, from_data: bool = False) -> str:
    how = (_prose("how_from_data", scale=scale, exact=EXACT, data=DATA) if from_data
           else _prose("how_run", scale=scale))
    return _prose("header", how=how)


def note_items(scale: str, skipped=(), facebook: bool = False) -> list[str]:
    """The notes of a page: the scale, the steps ``skipped`` (``(step, error)`` pairs), the
    missing Facebook data unless ``facebook`` ran, and the spec's K={2} value."""
    return [_prose("note_scale", scale=scale),
            *(_prose("note_skipped", step=step, error=err) for step, err in skipped),
            *(() if facebook else (_prose("note_facebook"),)), _prose("note_k2")]


def _notes(items: list[str]) -> str:
    return _prose("notes", notes=_lines(f"- {n}" for n in items))


def _monotone(v, sign: int, tol: float = 1e-12) -> bool:
    return all(sign * (b - a) >= -tol for a, b in zip(v, v[1:]))


def fig1_checks(res: dict) -> list[dict]:
    """Per observer of Fig. 1 (paper mode): the side of the limit 1/(n-1) it stays on, whether
    it is monotone towards it, its value at the last T; and the horizons where the certified
    bound lies above the paper's (alternating data differences)."""
    lim = res["limit"]
    out = []
    for c in res["curves"]:
        paper = [v for v in c["paper_over_T"] if v is not None]
        nbr = c["kind"] == "neighbour"
        side = all(v >= lim for v in paper) if nbr else all(v <= lim for v in paper)
        mono = _monotone(paper, -1 if nbr else 1)
        cert = dict(zip(c.get("certified_T", c["T"]), c["certified_over_T"], strict=True))
        above = [T for T, v in zip(c.get("paper_T", c["T"]), c["paper_over_T"], strict=True)
                 if v is not None and cert.get(T) is not None and cert[T] > v * (1 + 1e-9)]
        out.append({"observer": c["observer"], "kind": c["kind"], "side": side,
                    "monotone": mono, "last": paper[-1], "T_last": c["T"][len(paper) - 1],
                    "certified_above": above})
    return out


def _ranges(ts: list[int]) -> str:
    """[1, 2, 3, 7] -> "1-3, 7"."""
    out, start = [], None
    for k, t in enumerate(ts):
        if start is None:
            start = t
        if k + 1 == len(ts) or ts[k + 1] != t + 1:
            out.append(f"{start}" if start == t else f"{start}-{t}")
            start = None
    return ", ".join(out) or "none"


def _yes(b: bool) -> str:
    return "yes" if b else "no"


def fig1_section(res: dict, figure: str) -> str:
    """Fig. 1's section; its reading decided on the curves: neighbours approach 1/(n-1) from
    above, non-neighbours from below (monotone), and where certified mode lies above paper
    mode."""
    checks = fig1_checks(res)
    c1 = res["config"]
    observers = [_prose("fig1_observer", kind=c["kind"], observer=c["observer"],
                        side="above" if c["kind"] == "neighbour" else "below",
                        on_side=_yes(c["side"]), monotone=_yes(c["monotone"]),
                        last=f"{c['last']:.5f}", T_last=c["T_last"]) for c in checks]
    return _prose("fig1", graph=_graph(c1), T=c1["T"], figure=figure,
                  matches="matches" if all(c["side"] and c["monotone"] for c in checks)
                  else "does not match", limit=f"{res['limit']:.5f}",
                  observers="; ".join(observers),
                  certified_above="; ".join(f"{c['kind']} i={c['observer']}: T = "
                                            f"{_ranges(c['certified_above'])}" for c in checks))


def fig2_rows(s: dict) -> list[list[str]]:
    rows = []
    for k, T in enumerate(s["tm3_certified"]["T"]):
        i = s["tm3_paper"]["T"].index(T)
        rows.append([T, _sig4(s["tm3_paper"]["mean_eps"][i]),
                     _sig4(s["tm3_certified"]["mean_eps"][k]),
                     _sig4(s["tm4_paper"]["mean_eps"][i]),
                     _sig4(s["tm4_certified"]["mean_eps"][k]),
                     _sig4(s["ldp"]["mean_eps"][i]) if "ldp" in s else "-"])
    return rows


def fig2_text(s: dict) -> str:
    """Fig. 2's Thm-4 note, decided on the series: the mean ε of the exact plain-message view
    against the paper's reduction at the horizons both were computed."""
    if "tm4_exact_paper" not in s:
        return _prose("fig2_reduction_only")
    ex = dict(zip(s["tm4_exact_paper"]["T"], s["tm4_exact_paper"]["mean_eps"], strict=True))
    red = dict(zip(s["tm4_paper"]["T"], s["tm4_paper"]["mean_eps"], strict=True))
    common = [T for T in ex if T in red]
    more = [T for T in common if ex[T] > red[T]]
    last = ", ".join(f"T = {T}: {_sig4(ex[T])} vs {_sig4(red[T])}" for T in common[-2:])
    if more:
        return _prose("fig2_exact_larger", larger_at=_ranges(more), horizons=len(common),
                      last=last)
    return _prose("fig2_exact_smaller", horizons=len(common), last=last)


def anchor_sections(anch: dict) -> list[str]:
    """The spec's anchor tables beside ours (5.3 only where it was computed), as blocks."""
    rg = anch["5.1_rigorous"]
    out = [_prose("anchors", table=_lines(table(
        ("T", *SPEC_5_1["T"]),
        [(f"{key}, {who}", *(f"{v:.5f}" for v in vals))
         for key in ("neighbour (i=1)", "non-nbr (i=0)")
         for who, vals in (("spec", SPEC_5_1[key]), ("ours", anch["5.1"][key]))])),
        rigorous=_lines(table(
            ("T", "paper", "sign_exact", "Σ|M|", "T λ_max", "certified"),
            [(T, *(_sig4(rg[c][k]) for c in ("paper", "sign_exact", "abs_sum",
                                             "T_lambda_max", "certified")))
             for k, T in enumerate(rg["T"])])))]
    if "5.3" in anch:
        out.append(_prose("anchors_5_3", table=_lines(table(
            ("T", "mean Δ²/T Thm 3", "mean Δ²/T Thm 4", "mean ε Thm 3", "mean ε Thm 4",
             "ε LDP"),
            [(T, *(_pair(a, b) for a, b in zip(ref, anch["5.3"][str(T)], strict=True)))
             for T, ref in SPEC_5_3.items()]))))
    out.append(_prose("anchors_5_5", table=_lines(table(
        ("W", "T", "TM-1 non-nbr", "TM-1 nbr", "TM-3", "TM-4", "Perron limit"),
        [(kind, T, *(_pair(a, b) for a, b in zip(ref, anch["5.5"][f"{kind},{T}"], strict=True)))
         for (kind, T), ref in SPEC_5_5.items()]))))
    return out


def fig2_section(res: dict, figure: str) -> str:
    """Fig. 2's section: the mean pairwise ε per view and mode, and :func:`fig2_text`."""
    s, c2 = res["series"], res["config"]
    return _prose("fig2", graph=_graph(c2), sigma=f"{c2['noise_multiplier']:g}", figure=figure,
                  table=_lines(table(FIG2_HEAD, fig2_rows(s))), reading=fig2_text(s))


def exact_sections(anch: dict, results: dict, figdir: Path, rel) -> list[str]:
    """The anchor tables and the Fig. 1 / Fig. 2 sections (exact accounting), as blocks."""
    out = anchor_sections(anch)
    if "fig1_er" in results:
        out.append(fig1_section(results["fig1_er"], rel(figdir / "fig1_er.png")))
    if "fig2_adaptive" in results:
        out.append(fig2_section(results["fig2_adaptive"], rel(figdir / "fig2_adaptive.png")))
    return out


def fig3_run_section(res: dict, figure: str) -> str:
    """Fig. 3's section of a fresh single-seed run: per method and ε the best final accuracy
    over the learning rates."""
    cfg = res["config"]
    return _prose(
        "fig3_run", n=cfg["n"], per_node=cfg["per_node"], graph=_graph(cfg), figure=figure,
        rounds=cfg["rounds"],
        clip_norm=cfg["clip_norm"], normalizer=cfg["normalizer"],
        learning_rates=list(cfg["learning_rates"]), seed=cfg["seed"],
        table=_lines(table(("method", *(f"ε={e:g}" for e in cfg["epsilons"])),
                           [(name, *(f"{by_eps[e][0]:.4f} (σ={res['sigmas'][str(e)][name]:.3g})"
                                     for e in cfg["epsilons"]))
                            for name, by_eps in best_accuracy(res).items()])))


def report(anch: dict, results: dict, scale: str, figdir: Path, notes: list[str]) -> str:
    """The page of a fresh run (``notes``: :func:`note_items`)."""
    def rel(p):
        return os.path.relpath(p, "docs/reproduction") if str(figdir).startswith("docs") \
            else str(p)

    blocks = [header(scale), *exact_sections(anch, results, figdir, rel)]
    if "fig3_mnist" in results:
        blocks.append(fig3_run_section(results["fig3_mnist"], rel(figdir / "fig3_mnist.png")))
    return _page(blocks + [_notes(notes)])


def write_exact(path: Path, scale: str, anch: dict, results: dict) -> None:
    """The exact-accounting results of a run (anchors, Fig. 1 left, Fig. 2) as one JSON file,
    the input of :func:`page_from_data`."""
    data = {"_provenance": "Written by `python -m experiments.reproduce.gossip --scale "
            f"{scale} --exact-data {path}` (exact accounting, no training): the spec's anchor "
            "tables (ours), Fig. 1 left's curves and Fig. 2's series.",
            "provenance": _runs.provenance(), "scale": scale, "anchors": anch,
            **{k: results[k] for k in ("fig1_er", "fig2_adaptive") if k in results}}
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(data, indent=1) + "\n")


def page_from_data(exact: Path = EXACT, data: Path | None = None,
                   figdir: Path = Path("docs/figures/gossip"),
                   report_path: Path = Path("docs/reproduction/gossip.md"),
                   plot: bool = False) -> str:
    """The whole page from the committed exact-accounting JSON and the Fig. 3 per-seed CSV
    (``data``; default :data:`DATA`)."""
    ex = json.loads(Path(exact).read_text())
    data = DATA if data is None else data

    def rel(p):
        return os.path.relpath(p, Path(report_path).parent)

    results = {k: ex[k] for k in ("fig1_er", "fig2_adaptive") if k in ex}
    return _page([header(ex["scale"], from_data=True),
                 *exact_sections(ex["anchors"], results, Path(figdir), rel),
                 fig3_seeds_section(read_fig3(data), Path(figdir), rel, plot),
                 _notes(note_items(ex["scale"]))])


# ------------------------------------------------------------- Fig. 3, seeds and validation

DATA = Path("docs/reproduction/data/gossip_fig3_seeds.csv")
SEED_FIELDS = ("method", "target_epsilon", "learning_rate", "seed", "rounds", "val_size",
               "noise_multiplier", "val_accuracy", "test_accuracy", "status")


def export_fig3(sweep_dir: Path, out: Path = DATA) -> list[dict]:
    """Final validation / test accuracy per point of a Fig. 3 sweep with a validation split
    (``fig3_mnist.py:variant=cpu_val``) as a small CSV; unfinished points are ``missing``."""
    manifest = json.loads((Path(sweep_dir) / "sweep.json").read_text())["points"]
    rows = []
    for m in manifest:
        run = _runs.finished_run([sweep_dir], m["id"])
        cfg = None if run is None else _runs.run_config(run)
        o = m["overrides"]
        row = {"method": o["method"], "target_epsilon": o["target_epsilon"],
               "learning_rate": o["learning_rate"], "seed": o.get("seed", 0)}
        if cfg is None:
            rows.append({**row, "status": "missing"})
            continue
        _, recs = _runs.read_run(run)
        rows.append({**row, "rounds": cfg["rounds"], "val_size": cfg["val_size"],
                     "noise_multiplier": recs[-1]["noise_multiplier"],
                     "val_accuracy": recs[-1]["val_accuracy"],
                     "test_accuracy": recs[-1]["test_accuracy"], "status": "ok"})
    return _runs.write_rows(out, rows, SEED_FIELDS)


def read_fig3(path: Path = DATA) -> list[dict]:
    rows = _runs.read_rows(path, floats=("target_epsilon", "learning_rate", "noise_multiplier",
                                         "val_accuracy", "test_accuracy"), ints=("seed",))
    return [r for r in rows if r["status"] == "ok"]


def select_fig3(rows: list[dict]) -> dict:
    """{(method, ε): cell}: the learning rate with the best mean *validation* accuracy over
    seeds, then the test accuracy (mean, 95% t-interval) of that learning rate's seeds."""
    groups = {}
    for r in rows:
        groups.setdefault((r["method"], r["target_epsilon"]), {}).setdefault(
            r["learning_rate"], []).append(r)
    cells = {}
    for key, by_lr in groups.items():
        lr = max(by_lr, key=lambda v: np.mean([r["val_accuracy"] for r in by_lr[v]]))
        rs = by_lr[lr]
        cells[key] = {"lr": lr, "test_s": {r["seed"]: r["test_accuracy"] for r in rs},
                      "test": stats.interval([r["test_accuracy"] for r in rs]),
                      "sigma": rs[0]["noise_multiplier"], "lrs": sorted(by_lr, reverse=True)}
    return cells


COMPARABLE_MARGIN = 0.01  # "comparable": at most 1 point of test accuracy below DP-FedAvg


def fig3_claims(cells: dict) -> list[dict]:
    """Paper claim (Sec. 4, Fig. 3): utility "comparable to" DP-FedAvg at comparable ε; and the
    summary's reading that Thm-3 gossip beats LDP.

    Every claim's verdict is its primary test (:data:`experiments.reproduce.stats.PRIMARY_RULE`),
    Holm-corrected over all the Fig. 3 comparisons: "above LDP": the paired per-seed
    difference gossip - LDP against 0 (the interval rule, :func:`experiments.reproduce.stats
    .verdict`, is kept as ``interval_verdict``); "comparable": non-inferiority on the paired
    difference DP-FedAvg - gossip against the margin ``COMPARABLE_MARGIN`` (holds when
    significantly below it, does not hold when significantly above it).
    """
    out = []
    for eps in sorted({e for _, e in cells}):
        def c(m, eps=eps):
            return cells.get((m, eps))

        for g in ("gossip_ss_thm3_certified", "gossip_ss_thm3_paper"):
            if c(g) and c("gossip_ldp"):
                d = stats.compare(c(g)["test_s"], c("gossip_ldp")["test_s"])
                out.append({"claim": f"ε={eps:g}: {g} above LDP", "method": g, "eps": eps,
                            "kind": "ldp", "interval_verdict": d["verdict"],
                            "paired": d["paired"], "test": stats.test(d["paired"]),
                            "detail": f"{stats.fmt(c(g)['test'], 4)} vs LDP "
                            f"{stats.fmt(c('gossip_ldp')['test'], 4)}"})
            if c(g) and c("fedavg"):
                d = stats.paired(c("fedavg")["test_s"], c(g)["test_s"])
                out.append({"claim": f"ε={eps:g}: {g} comparable to DP-FedAvg (not below it "
                            f"by more than {COMPARABLE_MARGIN * 100:g} point)", "method": g,
                            "eps": eps, "kind": "fedavg", "paired": d,
                            "interval_verdict": stats.comparable(
                                c(g)["test_s"], c("fedavg")["test_s"], COMPARABLE_MARGIN),
                            "test": stats.test(d, COMPARABLE_MARGIN, -1.0),
                            "detail": f"{stats.fmt(c(g)['test'], 4)} vs FedAvg "
                            f"{stats.fmt(c('fedavg')['test'], 4)}"})
    stats.holm([x["test"] for x in out])
    for x in out:
        x["verdict"] = x["paired_verdict"] = x["test"]["verdict"]
    return out


def plot_fig3_seeds(cells: dict, path: Path) -> None:
    def series(name, k):  # the methods side by side (x shifted by 4%)
        eps = sorted(e for m, e in cells if m == name)
        iv = [cells[(name, e)]["test"] for e in eps]
        return np.array(eps) * (1 + 0.04 * (k - 1)), [v["mean"] for v in iv], _runs.yerr(iv)

    _plot_fig3_panels(series, path, " (lr chosen on validation; 95% t-intervals)", 8)


def fig3_seeds_section(rows: list[dict], figdir: Path, rel, plot: bool = True) -> str:
    """The page's Fig. 3 block from the per-seed rows (``plot=False``: text only)."""
    cells = select_fig3(rows)
    p = figdir / "fig3_mnist_seeds.png"
    if plot:
        plot_fig3_seeds(cells, p)
    eps = sorted({e for _, e in cells})
    methods = list(dict.fromkeys(m for m, _ in cells))
    r0 = rows[0]
    cfg = config_lib.load_config(f"{CONFIGS / 'fig3_mnist'}.py:variant=cpu_val")
    val = int(float(r0["val_size"]))
    return _prose(
        "fig3_seeds", n=cfg.n, graph=_graph(dataclasses.asdict(cfg)), figure=rel(p),
        rounds=int(float(r0["rounds"])), clip_norm=f"{cfg.clip_norm:g}",
        normalizer=f"{cfg.normalizer:g}", val_size=val,
        per_node=(cfg.n * cfg.per_node - val) // cfg.n,
        seeds=sorted({r["seed"] for r in rows}), learning_rates=cells[next(iter(cells))]["lrs"],
        table=_lines(table(("method", *(f"ε={e:g}" for e in eps)),
                           [(m, *("-" if c is None else f"{stats.fmt(c['test'], 4)} "
                                  f"(n={c['test']['n']}, lr {c['lr']:g}, σ={c['sigma']:.3g})"
                                  for c in (cells.get((m, e)) for e in eps)))
                            for m in methods])),
        margin=f"{COMPARABLE_MARGIN * 100:g}",
        claims=_lines(table(("claim", "verdict (primary test)", "interval rule",
                             "test accuracy", "paired difference (points)"),
                            [(c["claim"], c["verdict"], c["interval_verdict"], c["detail"],
                              stats.fmt_paired(c["paired"], 100, 2))
                             for c in fig3_claims(cells)])))


def from_data(report, figdir: Path, data: Path = DATA, *, plot: bool = True) -> str:
    """The report ``report`` with its Fig. 3 section (up to ``## Notes``) regenerated from the
    per-seed CSV ``data``, figures under ``figdir`` linked relative to the report
    (``plot=False``: not drawn)."""
    section = fig3_seeds_section(read_fig3(data), Path(figdir),
                                 lambda p: os.path.relpath(p, Path(report).parent), plot)
    return _runs.replace_section(Path(report).read_text(), "## Fig. 3", "## Notes",
                                 [section, ""])


# ------------------------------------------------------------------------------ runs -> logs

def _summaries(workdir: Path) -> list[dict]:
    return [json.loads((p / "summary.json").read_text())
            for p in sorted((workdir / "points").iterdir()) if (p / "summary.json").exists()]


def fig1_result(cfg, summary: dict) -> dict:
    """Fig. 1 curves (Δ²/T per observer, both modes) from one study's privacy reports."""
    cur = {m: summary[key]["details"]["curve"] for m, key in
           (("paper", "privacy_paper"), ("certified", "privacy"))}
    det = summary["privacy"]["details"]
    T = np.asarray(cur["paper"]["T"], float)
    k = cfg.observers_per_kind or 0
    curves = []
    for a, i in enumerate(det["observers"]):
        out = {"observer": i, "kind": "neighbour" if a < k else "non-neighbour",
               "T": cur["paper"]["T"]}
        for m in ("paper", "certified"):
            d2 = np.asarray(cur[m]["delta_sq"], float)[:, a, 0]
            Tm = np.asarray(cur[m]["T"], float)
            vals = d2 / Tm
            out[f"{m}_over_T"] = [None if not np.isfinite(v) else float(v) for v in vals]
            out[f"{m}_T"] = cur[m]["T"]
        curves.append(out)
    n = cfg.n if cfg.graph == "er" else None
    return {"config": dataclasses.asdict(cfg), "target": det["targets"][0], "curves": curves,
            "limit": None if n is None else 1.0 / (n - 1), "modes": ["paper", "certified"],
            "T_max": int(T[-1])}


def run_step(step: str, variant: str, workdir: Path) -> dict:
    """Runs (or resumes) one figure's config(s) and returns the plotted values from the logs."""
    path = f"{CONFIGS / step}.py:variant={variant}"
    if step.startswith("fig1"):
        cfg = config_lib.load_config(path)
        summary = builders.run(cfg, workdir)
        return fig1_result(cfg, summary)
    points = _runs.run_file(path, workdir, progress=False)
    if step == "fig2_adaptive":
        series, cfg = {}, points[0].config
        for s in _summaries(workdir):
            view = s["privacy"]["details"]["view"]
            for key, mode in (("privacy_paper", "paper"), ("privacy", "certified")):
                if key not in s:
                    continue
                c = s[key]["details"]["curve"]
                name = "ldp" if view == "ldp" else f"{view}_{mode}"
                series[name] = {"T": c["T"], "mean_eps": c["mean_epsilon"], "mode": mode,
                                "mean_delta_sq_over_T": [d / t for d, t in
                                                         zip(c["mean_delta_sq"], c["T"],
                                                             strict=True)]}
        if "tm4_exact_paper" in series:  # the exact view at the certified horizons only
            hs = series["tm3_certified"]["T"]
            d = series["tm4_exact_paper"]
            d["mean_eps"] = [d["mean_eps"][d["T"].index(h)] for h in hs]
            d["T"] = hs
        return {"config": dataclasses.asdict(cfg), "series": series}
    results, sigmas = [], {}
    cfg = points[0].config
    for p in points:
        _, recs = _runs.read_run(workdir / "points" / p.id)
        c = p.config
        sigmas.setdefault(str(c.target_epsilon), {})[c.method] = recs[-1]["noise_multiplier"]
        results.append({"method": c.method, "epsilon": c.target_epsilon,
                        "learning_rate": c.learning_rate, "rounds": [r["round"] for r in recs],
                        "test_accuracy": [r["test_accuracy"] for r in recs]})
    conf = dataclasses.asdict(cfg)
    conf["epsilons"] = sorted({p.config.target_epsilon for p in points})
    conf["learning_rates"] = sorted({p.config.learning_rate for p in points}, reverse=True)
    conf["seed"] = cfg.seed
    return {"config": conf, "sigmas": sigmas, "results": results}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", default="cpu", choices=("smoke", "cpu", "full"))
    parser.add_argument("--workdir", default=None)
    parser.add_argument("--figures", default="docs/figures/gossip")
    parser.add_argument("--report", default=PAGE)
    parser.add_argument("--only", default="anchors,fig1_er,fig1_facebook,fig2_adaptive,fig3_mnist")
    parser.add_argument("--export", default=None, metavar="SWEEP_DIR",
                        help="write the per-seed CSV of a cpu_val Fig. 3 sweep to --data")
    parser.add_argument("--data", default=str(DATA))
    parser.add_argument("--exact-data", default=None, metavar="JSON",
                        help=f"also write the exact-accounting results (anchors, Fig. 1 left, "
                        f"Fig. 2) to JSON (default at --scale cpu with the committed report: "
                        f"{EXACT}, and the report is then rendered from it and the Fig. 3 CSV)")
    parser.add_argument("--from-data", action="store_true",
                        help="rewrite only the report's Fig. 3 section from --data (no runs)")
    args = parser.parse_args(argv)
    if args.export:
        export_fig3(Path(args.export), Path(args.data))
    if args.from_data:
        exact = Path(args.exact_data or EXACT)
        text = (page_from_data(exact, Path(args.data), Path(args.figures), Path(args.report),
                               plot=True) if exact.exists() else
                from_data(args.report, Path(args.figures), Path(args.data)))
        Path(args.report).write_text(text)
        print(f"[gossip] wrote {args.report} from {exact if exact.exists() else args.data}")
        return {"report": str(args.report), "steps": ["fig3_mnist"]}
    if args.workdir is None:
        parser.error("--workdir is required unless --from-data")
    work, figdir = Path(args.workdir), Path(args.figures)
    work.mkdir(parents=True, exist_ok=True)
    figdir.mkdir(parents=True, exist_ok=True)
    steps = args.only.split(",")
    skipped = []
    results = {}
    anch_path = work / f"anchors_{args.scale}.json"
    if "anchors" in steps:
        anch_path.write_text(json.dumps(anchors(args.scale), indent=1))
    anch = json.loads(anch_path.read_text()) if anch_path.exists() else anchors("smoke")
    plotters = {"fig1_er": plot_fig1, "fig2_adaptive": plot_fig2, "fig3_mnist": plot_fig3,
                "fig1_facebook": plot_fig1}
    for step in ("fig1_er", "fig1_facebook", "fig2_adaptive", "fig3_mnist"):
        if step not in steps and not (work / step).exists():
            continue
        try:  # a finished run (or sweep point) is never rerun: plots read its logs
            res = run_step(step, args.scale, work / step)
        except validate.DataNotFoundError as err:
            skipped.append((step, err))
            continue
        results[step] = res
        plotters[step](res, figdir / f"{step}.png")
    committed = (args.scale == "cpu" and Path(args.report) == Path(PAGE)
                 and {"anchors", "fig1_er", "fig2_adaptive"} <= set(results) | set(steps))
    if args.exact_data is None and committed:
        args.exact_data = str(EXACT)  # the committed page is rendered from the data files
    if args.exact_data:
        write_exact(Path(args.exact_data), args.scale, anch, results)
        print(f"[gossip] wrote {args.exact_data}")
    text = report(anch, results, args.scale, figdir,
                  note_items(args.scale, skipped, "fig1_facebook" in results))
    if committed and Path(args.data).exists():
        text = page_from_data(Path(args.exact_data), Path(args.data), figdir, Path(args.report),
                              plot=True)
    Path(args.report).parent.mkdir(parents=True, exist_ok=True)
    Path(args.report).write_text(text)
    print(text)
    return {"report": str(args.report), "steps": list(results)}


if __name__ == "__main__":
    main()
