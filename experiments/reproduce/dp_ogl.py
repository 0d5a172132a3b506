"""DP-OGL / DP-OGL+ (Kiani et al. 2024, Sec. VI-B, Figs. 3-5, App. H) declared as data.

  python -m experiments.reproduce dp_ogl --figure fig4 --workdir runs/dp_ogl   # exact, minutes
  python -m experiments.reproduce dp_ogl --figure fig3 --scale cpu --workdir runs/dp_ogl
  python -m experiments.reproduce dp_ogl --from-data      # the pages from the committed data

Figures: ``fig4`` (accounting-only runs of every Fig. 4 curve, both recipes, exported to
``dp_ogl_fig4.json``: :func:`fig4_numbers`, decided exactly by the declared table
:data:`FIG4_CLAIMS`), ``fig3`` (every Fig. 3 curve over seeds on MNIST) and ``fig5`` (Fig. 5
as run here: the panel-(a,b) curves :data:`FIG5_CURVES` on Fashion-MNIST over five seeds), per-seed
CSVs decided by the paired test (:data:`FIG3_CLAIMS`, :data:`FIG5_CLAIMS`: one Holm family,
:func:`paired_claims`) on the mean over the last quarter of the logged epochs. Pages:
``docs/reproduction/dp_ogl.md``'s generated blocks (``templates/pages_dp_ogl.md``) and
``docs/reproduction/dp_ogl_seeds.md`` (``templates/dp_ogl_seeds.md``).
"""

from __future__ import annotations

import dataclasses
import functools
import json
from pathlib import Path

import numpy as np

from experiments.configs.dp_ogl import _common
from experiments.reproduce import _common as _runs
from experiments.reproduce import declare, stats
from experiments.reproduce.claims import NOT_RUN, Cmp, Exact, Paired, decide, decide_exact
from jaxfl import metrics
from jaxfl.accounting import dp_ogl as acct

PAGE = "pages_dp_ogl"  # templates/pages_dp_ogl.md: the blocks spliced into dp_ogl.md
FIG4_JSON, SEEDS_CSV = "dp_ogl_fig4.json", "dp_ogl_fig3_seeds.csv"
FIG5_CSV = "dp_ogl_fig5_seeds.csv"
FIG3_CONFIG = Path(__file__).resolve().parents[1] / "configs" / "dp_ogl" / "fig3.py"
SEEDS = "0:1:2"  # the seeds of the Fig. 3 runs (smoke: the config's own two)
# Fig. 5 (Fashion-MNIST) as run here: the curves of panels (a,b) (the five structures, which
# carry the panel-(a,b) claims of Fig. 3) over five seeds; the other panels are not run.
FIG5_SEEDS = "0:1:2:3:4"
FIG5_CURVES = tuple(_common.FIG3["ab"])
FIG4_T = 200  # the epoch of Fig. 4's heatmaps and of the numbers its claims are decided on


def _label(structure, num_groups, period, algorithm="dp_ogl", num_workers=None,
           noise_multiplier=None) -> str:
    """A curve's legend from its config fields: "DP-OGL+ RI N=40 M=4 S=2 σ=1.3"."""
    kind = {"gl": "GL", "cl": "CL", "label_based": "LB", "ring": "RI"}[structure]
    return " ".join([*(["DP-OGL+"] if algorithm == "dp_ogl_plus" else []), kind,
                     *([f"N={num_workers}"] if num_workers else []),
                     *([f"M={num_groups}", f"S={period}"] if structure != "gl" else []),
                     *([f"σ={noise_multiplier:g}"] if noise_multiplier else [])])


LABELS = {name: _label(**fields) for name, fields in _common.CURVES.items()}


# ----------------------------------------------------------------------------- Fig. 4


def privacy(dirs, workdir: Path, figures: Path) -> dict:
    """Fig. 4(a) PwP curves and (b)-(h) heatmaps (at t = :data:`FIG4_T`) for both recipes, read
    from the finished accounting-only runs ``dirs`` of :func:`fig4_configs` (``summary.json``:
    the strict report ``privacy``, the paper recipe's ``privacy_paper``); writes
    ``privacy_<mode>.json`` into ``workdir`` and the two figures into ``figures``."""
    summaries = [json.loads((Path(d) / "summary.json").read_text()) for d in dirs]
    out = {}
    for mode, key in (("strict", "privacy"), ("paper", "privacy_paper")):
        rep = {n: s[key] for n, s in zip(_common.FIG4_CURVES, summaries, strict=True)}
        out[mode] = acct.fig4_tables(rep, _common.FIG4_HEATMAPS, _common.FIG4A)
        curves, heat = out[mode]["curves"], out[mode]["heatmaps"]
        (workdir / f"privacy_{mode}.json").write_text(metrics.to_json(
            {"curves": curves, "heatmaps": heat}))
    _runs.plot(figures / "fig4a_pwp.png", [dict(
        lines=[dict(x=c["t"], y=c["mean"], label=LABELS[n], lw=1.3, band=(
            np.subtract(c["mean"], c["std"]), np.add(c["mean"], c["std"])))
            for n, c in out[mode]["curves"].items()], grid=True, xlabel="epoch t",
        title=f"Fig. 4(a) average PwP ({mode} recipe, δ=1e-5)", legend=7 * (mode == "strict"),
        ylabel="ε (mean ± std over workers)" if mode == "paper" else "")
        for mode in ("paper", "strict")], cell=(5.5, 3.8), sharey=True)
    _plot_heatmaps(out["paper"]["heatmaps"], figures / "fig4_heatmaps.png")
    return out


def _plot_heatmaps(heat, path):
    """Fig. 4(b)-(h): each panel's per-pair epsilon (white: excluded, black: exactly 0)."""
    plt = _runs.pyplot()
    fig, axes = plt.subplots(2, 4, figsize=(14, 7))
    cmap = plt.get_cmap("viridis").copy()
    cmap.set_bad("white")
    vmax = max(np.nanmax(h["epsilon"]) for h in heat.values())
    for ax, (panel, h) in zip(axes.ravel(), heat.items(), strict=False):
        eps = np.asarray(h["epsilon"], dtype=float)
        im = ax.imshow(np.ma.masked_invalid(eps), cmap=cmap, vmin=0, vmax=vmax,
                       interpolation="nearest")
        ax.imshow(np.where(eps == 0, 1.0, np.nan), interpolation="nearest",
                  cmap=__import__("matplotlib.colors").colors.ListedColormap(["black"]))
        ax.set_title(f"({panel}) {LABELS[h['curve']]}", fontsize=9)
        ax.set(xlabel="HbC i", ylabel="target n")
    axes.ravel()[-1].axis("off")
    fig.colorbar(im, ax=axes.ravel().tolist(), shrink=0.7, label=f"ε_{{n,i}} at t={FIG4_T}")
    fig.suptitle("Fig. 4(b)-(h): per-pair ε (paper recipe; white = excluded, black = 0)")
    _runs.save(fig, path, dpi=80, tight=False)


def fig4_numbers(priv: dict) -> dict:
    """The Fig. 4 numbers the claims are decided on (paper recipe, t = :data:`FIG4_T`):
    :func:`jaxfl.accounting.dp_ogl.fig4_numbers` of :func:`privacy`'s paper-recipe reports
    (committed: ``docs/reproduction/data/dp_ogl_fig4.json``)."""
    p = priv["paper"]
    return acct.fig4_numbers(p["curves"], p["counts"], p["heatmaps"], t=FIG4_T)


HEATMAP_TOLERANCE = 0.25  # "≈ 1/S": the (ε, δ) cell ratio within 25% of 1/S
SLIGHTLY = 0.10  # "slightly exceeds": by at most 10%
ABOUT_40 = (0.35, 0.45)  # "≈ 40%": read as 35-45%


def heatmap_ratio_holds(ratio_eps: float, s: int) -> bool:
    """Fig. 4(h) "DP-OGL+ cells ≈ 1/S of DP-OGL's", decided on the (ε, δ) cells the figure
    plots: within ``HEATMAP_TOLERANCE`` of 1/S. The mechanism-count (RDP) ratio is not a test:
    the accountant counts DP-OGL+ windows as C_OGL / S by construction (Eq. 18), so it is
    exactly 1/S for any data and any correct or incorrect reading of the figure."""
    return abs(ratio_eps * s - 1.0) <= HEATMAP_TOLERANCE


# Fig. 4's claims (Sec. VI-B) as :class:`~experiments.reproduce.claims.Exact` records: claim,
# measured (formats of the values of :func:`fig4_claims`: dp_ogl_fig4.json's numbers, its
# ``pwp`` curves and the derived ones), rule (None: descriptive), panel and target (None: the
# figure's ordering).
FIG4_CLAIMS = tuple(Exact(claim, measured, rule, dict(panel=panel, target=target))
                    for claim, panel, target, measured, rule in (
    ("CL and GL have the lowest average PwP (TM1 curves) and are about equal", "(a)", None,
     "GL {gl:.3f}, CL {cl4_s2:.3f}; min of other TM1 curves {tm1_others:.3f}",
     lambda v: abs(v.gl - v.cl4_s2) < 1e-6 and v.tm1_min >= v.gl - 1e-9),
    ("RI (M=4, S in {{2,10}}) is a close second", "(a)", None,
     "RI S=2 {ri4_s2:.3f}, S=10 {ri4_s10:.3f} vs GL {gl:.3f}",
     lambda v: v.gl <= v.ri <= 1.1 * v.gl),
    ("LB is weaker (higher PwP) even with sigma=3", "(a)", None,
     "LB S=2 {lb5_s2_sig3:.3f}, S=10 {lb5_s10_sig3:.3f} vs RI {ri:.3f}",
     lambda v: min(v.lb5_s2_sig3, v.lb5_s10_sig3) > v.ri),
    ("DP-OGL+ (RI, S=2) lowers average PwP by at least 40% vs DP-OGL", "(a)", "at least 40%",
     "reduction {plus_s2_reduction_eps:.1%} in (ε,δ); {plus_s2_reduction_rdp:.1%} in mechanism "
     "count / RDP", lambda v: v.plus_s2_reduction_eps >= 0.40),
    ("DP-OGL+ S=2 -> S=4 gives a further ≈40% reduction (read as {lo:.0f}-{hi:.0f}%)", "(a)",
     "about 40%", "reduction {plus_s4_reduction_eps:.1%} in (ε,δ); {plus_s4_reduction_rdp:.1%} "
     "in mechanism count / RDP",
     lambda v: ABOUT_40[0] <= v.plus_s4_reduction_eps <= ABOUT_40[1]),
    ("CL heatmap: GL's worst case plus exact-zero cross-cluster blocks", "(c)", None,
     "CL max {cl_max:.3f} (GL {gl_max:.3f}); zero cells {cl_zero_cells}",
     lambda v: abs(v.cl_max - v.gl_max) < 1e-9 and v.cl_zero_cells == 100 * 75),
    ("RI S=25 has lower (darker) regions than S=10", "(e),(f)", None,
     "min cell S=10 {ri_s10_min:.2f}, S=25 {ri_s25_min:.2f}; mean {ri_s10_mean:.2f} vs "
     "{ri_s25_mean:.2f}", lambda v: v.ri_s25_min < v.ri_s10_min and v.ri_s25_below_s10_everywhere),
    ("RI M=10 worst case slightly (at most {slightly:.0%}) exceeds the GL baseline", "(g)", None,
     "max {ri_m10_max:.2f} vs GL {gl_max:.2f} (exceeds by {over:.0%})",
     lambda v: 0 < v.over <= SLIGHTLY),
    ("DP-OGL+ heatmap cells ≈ 1/S = {inv_s:g} of DP-OGL's (h vs e; (ε,δ) ratio within "
     "{tolerance:.0%})", "(e),(h)", None, "(ε,δ) ratio {heatmap_ratio_eps:.3f}; the "
     "mechanism-count (RDP) ratio {heatmap_ratio_count:.3f} is the accountant's identity "
     "C_OGL = S C_OGL+, not a test", lambda v: heatmap_ratio_holds(v.heatmap_ratio_eps, v.plus_s)),
    ("LB: many pairs above the GL baseline, some distant pairs below", "(d)", None,
     "{lb_above_gl} cells above, {lb_below_gl} below (σ=3 vs GL σ=2)", None)))


def fig4_claims(n: dict) -> list[dict]:
    """:data:`FIG4_CLAIMS` decided on the Fig. 4 numbers ``n`` (:func:`fig4_numbers`): per claim
    ``claim``, ``source`` (Fig. 4(a) with its recipe and t), ``panel``, ``target``,
    ``measured`` and ``holds`` (None: descriptive)."""
    p = n["pwp"]
    tm1 = {k: x for k, x in p.items() if not k.startswith("plus_")}
    v = dict(**n, **p, tm1_min=min(tm1.values()), ri=max(p["ri4_s2"], p["ri4_s10"]),
             tm1_others=min(x for k, x in tm1.items() if k not in ("gl", "cl4_s2")),
             over=n["ri_m10_max"] / n["gl_max"] - 1, inv_s=1 / n["plus_s"],
             lo=100 * ABOUT_40[0], hi=100 * ABOUT_40[1], slightly=SLIGHTLY,
             tolerance=HEATMAP_TOLERANCE)
    tag = f", {n['recipe']} recipe, t={n['t']}"
    return [dict(r, panel=f"Fig. 4{r['panel']}", source=f"Fig. 4{r['panel']}" + tag * (
        r["panel"] == "(a)")) for r in decide_exact(FIG4_CLAIMS, v)]


# ----------------------------------------------------------------------------- Fig. 3

# Utility is compared on the mean over the last quarter of the logged epochs (:func:`_tail`).
ACC, LOSS = "tail_test_accuracy", "tail_train_loss"
SHORT = {ACC: "acc", LOSS: "loss"}  # a comparison's key in claims' measured values
FIELDS = dict(curve=str, dataset=str, variant=str, mode=str, seed=int, epochs=int, logged=int,
              **{ACC: float, LOSS: float}, final_test_accuracy=float)  # the CSV's columns
_OTHERS = ["cl4_s2", "lb5_s10_sig3", "ri4_s10", "plus_ri4_s2"]
_SMALL = ["ri10_s10", "ri4_s10_n40", "plus_ri10_s2", "plus_ri4_s2_n40_sig1.3"]
_SIGMA = [("ri10_s10_sig1.3", "ri10_s10"), ("ri4_s10_n40_sig1.3", "ri4_s10_n40"),
          ("plus_ri10_s2_sig1.3", "plus_ri10_s2"), ("plus_ri4_s2_n40_sig1.3", "plus_ri4_s2_n40")]
# (claim, panel, [(a, b, key): "a better than b"]): the utility claims of Sec. VI-B (Fig. 3),
# decided over seeds by :func:`paired_claims`.
FIG3_CLAIMS = [
    ("All multi-group structures beat GL (loss and accuracy)", "ab",
     [(n, "gl", k) for n in _OTHERS for k in (ACC, LOSS)]),
    ("RI DP-OGL is best (lowest loss, highest accuracy)", "ab",
     [("ri4_s10", n, k) for n in _common.FIG3["ab"] if n != "ri4_s10" for k in (ACC, LOSS)]),
    ("DP-OGL+ worse than DP-OGL (RI)", "ab", [("ri4_s10", "plus_ri4_s2", ACC)]),
    ("DP-OGL+ better than GL", "ab", [("plus_ri4_s2", "gl", ACC)]),
    ("DP-OGL: S=10 converges better than S=2 (RI and LB)", "ef",
     [("ri4_s10", "ri4_s2", ACC), ("lb5_s10_sig3", "lb5_s2_sig3", ACC)]),
    ("DP-OGL+: S=2 beats S=4", "ef", [("plus_ri4_s2", "plus_ri4_s4", ACC)]),
    ("N/M=10 runs end worse than RI N/M=25 and GL", "cd",
     [(ref, n, ACC) for n in _SMALL for ref in ("ri4_s10", "gl")]),
    ("DP-OGL with N/M=25 is best in the last epochs", "cd",
     [("ri4_s10", n, ACC) for n in _common.FIG3["cd"] if n != "ri4_s10"]),
    ("sigma 2 -> 1.3 fixes the N/M=10 convergence", "gh", [(b, a, ACC) for b, a in _SIGMA]),
    # The paper: "slightly better ... in some epochs". A rule "better in at least one logged
    # epoch" holds for any two noisy curves that cross once; decided here on the last
    # quarter, like every other claim.
    ("GL N=40 slightly better than GL N=100", "cd", [("gl_n40", "gl", ACC)]),
]


# Fig. 5's claims: the Fig. 3 claims whose every curve is one of :data:`FIG5_CURVES`.
FIG5_CLAIMS = [(claim, panel, comps) for claim, panel, comps in FIG3_CLAIMS
               if all(a in FIG5_CURVES and b in FIG5_CURVES for a, b, _ in comps)]


def panel_label(panel: str, fig: int = 3) -> str:
    """A Fig. 3 (or Fig. 5) panel pair's name: "ab" -> "Fig. 3(a,b)"."""
    return f"Fig. {fig}({panel[0]},{panel[1]})"


def _series(recs, key) -> dict:
    pts = [(r["round"], r[key]) for r in recs if key in r]
    return {"x": np.array([p[0] for p in pts]), "y": np.array([p[1] for p in pts], float)}


def _tail(recs, key, frac=0.25) -> float:
    y = _series(recs, key)["y"]
    return float(np.mean(y[-max(1, int(np.ceil(frac * y.size))):])) if y.size else float("nan")


def seed_row(c, summary, recs) -> dict | None:
    """The per-seed CSV row of one finished Fig. 3 point (config ``c``); None if unfinished."""
    if recs is None:
        return None
    acc = [r["test_accuracy"] for r in recs if "test_accuracy" in r]
    return {"curve": c.curve, "dataset": c.dataset, "variant": c.variant, "mode": c.mode,
            "seed": c.seed, "epochs": c.epochs, "logged": len(acc),
            ACC: _tail(recs, "test_accuracy"), LOSS: _tail(recs, "train_loss"),
            "final_test_accuracy": acc[-1] if acc else float("nan")}


def read_seeds(path: Path) -> list[dict]:
    return _runs.read_rows(path, types=FIELDS)


def paired_claims(rows, fig5_rows=()) -> tuple[list[dict], list[dict]]:
    """The Fig. 3 claims (:data:`FIG3_CLAIMS`) on ``rows`` and the Fig. 5 claims
    (:data:`FIG5_CLAIMS`) on ``fig5_rows`` (none without rows) over seeds, decided as ONE Holm
    family by :func:`experiments.reproduce.claims.decide` ("curve a better than b": accuracy
    higher, loss lower, compared on the negated loss); the interval rule beside it. A claim
    with a curve missing from its rows is "not run" (outside the family)."""
    sets = [rows, *([fig5_rows] if fig5_rows else [])]
    have = [{r["curve"] for r in rs} for rs in sets]

    def values(cell):
        k, curve, key = cell
        return None if curve not in have[k] else {r["seed"]: (-1.0 if key == LOSS else 1.0) * r[
            key] for r in sets[k] if r["curve"] == curve}

    out = ([], [])
    for r in decide([Paired(claim, tuple(Cmp((k, a, key), (k, b, key)) for a, b, key in comps),
                            dict(panel=panel, set=k)) for k, decl in enumerate(
                     (FIG3_CLAIMS, FIG5_CLAIMS)[:len(sets)]) for claim, panel, comps in decl],
                    values):
        if r["missing"]:
            out[r["set"]].append({"claim": r["claim"], "panel": r["panel"], "verdict": NOT_RUN,
                                  "detail": "curves not run: " + ", ".join(
                                      sorted({c for _, c, _ in r["missing"]}))})
            continue
        parts = [(p["cmp"].a[1], p["cmp"].b[1], p["cmp"].a[2], p) for p in r["parts"]]
        vs, pvs = [p["interval"] for p in r["parts"]], [p["test"]["verdict"] for p in r["parts"]]
        failed = [f"{a} vs {b} ({SHORT[key]})" for a, b, key, p in parts
                  if p["interval"] == stats.FAILS]
        detail = (f"{vs.count(stats.HOLDS)}/{len(vs)} comparisons hold"
                  + (f"; fails: {', '.join(failed)}" if failed else "")
                  + (f"; {vs.count(stats.OVERLAP)} overlap" if stats.OVERLAP in vs else ""))
        pdetail = ("; ".join(f"{a} - {b} ({SHORT[key]}): {stats.fmt_paired(p['d'])}"
                             for a, b, key, p in parts) if len(parts) <= 2 else
                   f"{pvs.count(stats.HOLDS)}/{len(pvs)} hold paired (Holm)"
                   + (f"; {pvs.count(stats.FAILS)} fail" if stats.FAILS in pvs else ""))
        out[r["set"]].append({"claim": r["claim"], "panel": r["panel"], "verdict": r["verdict"],
                              "interval_verdict": r["interval_verdict"], "detail": detail,
                              "paired_detail": pdetail})
    return out


def _fig5_rows(inputs) -> list[dict]:
    """The committed Fig. 5 rows (none in a data folder without :data:`FIG5_CSV`)."""
    path = inputs.data / FIG5_CSV
    return read_seeds(path) if path.exists() else []


def _scale(rows) -> dict:
    """The runs' scale fields of the Fig. 3 blocks (curves, points, seeds, scale)."""
    return dict(curves=len({r["curve"] for r in rows}), points=len(rows),
                seeds=sorted({r["seed"] for r in rows}), scale="; ".join(", ".join(map(str, s))
                for s in sorted({(r["variant"], r["dataset"], r["mode"], r["epochs"])
                                 for r in rows})))


def _curve_rows(rows, curves) -> list[dict]:
    """Per curve of ``curves``: its label, seeds and the intervals of the last-quarter test
    accuracy and training loss."""
    return [{"label": LABELS.get(cv, cv), "n": acc["n"], "acc": stats.fmt(acc),
             "loss": stats.fmt(loss)}
            for cv in curves for acc, loss in [[stats.interval(
                [r[k] for r in rows if r["curve"] == cv]) for k in (ACC, LOSS)]]]


def report(rows, fig5_rows=()) -> str:
    """docs/reproduction/dp_ogl_seeds.md (``templates/dp_ogl_seeds.md``): the claims, then each
    panel's curves (the seeds' last-quarter test accuracy and training loss, intervals);
    ``fig5_rows`` join the Holm family (:func:`paired_claims`)."""
    panels = [{"panel": panel_label(panel), "rows": _curve_rows(rows, curves)}
              for panel, curves in _common.FIG3.items()]
    s = _scale(rows)
    return _runs.prose("dp_ogl_seeds", "page", panels=panels, scale=s["scale"], seeds=s["seeds"],
                       claims=_claims_table(paired_claims(rows, fig5_rows)[0])) + "\n"


def _claims_table(claims, fig: int = 3) -> str:
    return _runs.prose(PAGE, "claims_table", rows=[
        dict(c, panel=panel_label(c["panel"], fig), interval=c.get("interval_verdict", "-"),
             paired=c.get("paired_detail", "-")) for c in claims])


def _fig5_block(rows, fig5_rows) -> str:
    """The Fig. 5 section of dp_ogl.md: what ran, the claims (Holm with Fig. 3's), the curves."""
    s, ran = _scale(fig5_rows), {r["curve"] for r in fig5_rows}
    return _runs.prose(PAGE, "fig5", **s, ran=", ".join(c for c in FIG5_CURVES if c in ran),
                       not_run=", ".join(c for c in FIG5_CURVES if c not in ran) or "none",
                       claims=_claims_table(paired_claims(rows, fig5_rows)[1], fig=5),
                       curve_rows=_curve_rows(fig5_rows, [c for c in FIG5_CURVES if c in ran]))


# ----------------------------------------------------------------------------- pages


def page(inputs, text: str) -> str:
    """docs/reproduction/dp_ogl.md: its generated blocks (Fig. 4 claims and notes, Fig. 3
    utility, what was run) spliced into the hand-written page ``text``."""
    from experiments import config as config_lib

    n, rows = inputs.json(FIG4_JSON), read_seeds(inputs.data / SEEDS_CSV)
    fig5_rows = _fig5_rows(inputs)
    claims, r0, s = fig4_claims(n), rows[0], _scale(rows)
    c = config_lib.load_config(f"{FIG3_CONFIG}:variant={r0['variant']}")
    m10 = next(r for r in claims if r["claim"].startswith("RI M=10 worst case"))
    return _runs.splice_blocks(text, {
        "dp_ogl_fig4": _runs.prose(PAGE, "fig4_table", rows=[dict(r, verdict={
            True: "yes", False: "**no**"}.get(r["holds"], "n/a (descriptive)")) for r in claims]),
        "dp_ogl_fig4_notes": _runs.prose_wrapped(
            PAGE, "fig4_notes", n=n, excess=f"{n['ri_m10_max'] / n['gl_max'] - 1:.0%}",
            verdict=stats.exact(m10["holds"])),
        "dp_ogl_run": _runs.prose_wrapped(
            PAGE, "run", n=n, curves=s["curves"], seeds=s["seeds"], variant=r0["variant"],
            mode=r0["mode"], c=dataclasses.asdict(c), epochs=r0["epochs"],
            dataset=c.dataset.upper(), fig5=bool(fig5_rows),
            data=f"{c.max_train_examples:,}" if c.max_train_examples else "all",
            model=f"MLP 784-{'-'.join(map(str, c.model_hidden))}-10" if c.model == "mlp"
            else c.model),
        "dp_ogl_fig3": "\n".join([_runs.prose(PAGE, "fig3_heading", **s), "",
                                  _claims_table(paired_claims(rows, fig5_rows)[0])]),
        **({"dp_ogl_fig5": _fig5_block(rows, fig5_rows)} if fig5_rows else {})}, "DP-OGL")


def _fig4_rows(inputs) -> list[dict]:
    return [dict(source=r["panel"], claim=r["claim"], measured=r["measured"],
                 verdict=stats.exact(r["holds"], "n/a (descriptive)"),
                 target=f"paper's text: {r['target']}" if r["target"] else _runs.prose(
                     "reproduction", "figure_ordering"))
            for r in fig4_claims(inputs.json(FIG4_JSON))]


def _seed_rows(inputs, fig: int = 3) -> list[dict]:
    """The summary's lines of the Fig. 3 (``fig=5``: Fig. 5) claims, Holm over both."""
    fig3 = inputs.data / SEEDS_CSV  # a folder of a Fig. 5 run alone has none
    rows, fig5_rows = read_seeds(fig3) if fig3.exists() else [], _fig5_rows(inputs)
    claims = paired_claims(rows, fig5_rows)[fig == 5]
    rs = fig5_rows if fig == 5 else rows
    if not rs:  # a data folder without Fig. 5's CSV
        return []
    scale = _runs.prose(PAGE, "dp_ogl_scale", epochs=rs[0]["epochs"], fig5=fig == 5,
                        mode=rs[0]["mode"], seeds=sorted({r["seed"] for r in rs}))
    return [dict(panel_a=c["panel"][0], panel_b=c["panel"][1], claim=c["claim"],
                 measured=c["detail"], scale=scale, verdict=c["verdict"],
                 paired=c.get("paired_detail", "-")) for c in claims]


def _remaining_fig5(inputs) -> dict:
    """The summary's "what remains" line of Fig. 5: the curves and seeds run, those not run."""
    rows = _fig5_rows(inputs)
    ran = [c for c in FIG5_CURVES if any(r["curve"] == c for r in rows)]
    return dict(ran=len(ran), points=len(rows), seeds=len({r["seed"] for r in rows}),
                more=len(_common.FIG3_CURVES) - len(FIG5_CURVES),
                not_run=", ".join(c for c in FIG5_CURVES if c not in ran))


# ----------------------------------------------------------------------------- declarations


def fig4_configs(scale: str) -> list:
    """The accounting-only runs of Fig. 4 (one per curve; no training, so no scale)."""
    return [_common.make_privacy_config(name, dataset="mnist", t=FIG4_T)
            for name in _common.FIG4_CURVES]


def export_fig4(run) -> dict:
    """Writes ``dp_ogl_fig4.json`` (:func:`fig4_numbers`, with provenance) and the Fig. 4
    figures; returns the numbers."""
    numbers = fig4_numbers(privacy(run.dirs, run.workdir, run.figures))
    run.data.mkdir(parents=True, exist_ok=True)
    (run.data / FIG4_JSON).write_text(json.dumps(
        {**numbers, "provenance": _runs.provenance()}, indent=1) + "\n")
    return numbers


def fig3_configs(scale: str, dataset: str = "mnist", seeds: str = SEEDS,
                 curves=None) -> list:
    """Every Fig. 3 curve (or those of ``curves``) crossed with ``seeds`` (the ``fig3.py``
    config's sweep; the same point ids as ``python -m experiments.sweep --config
    "fig3.py:variant=...,dataset=...,seeds=..." --where curve=...``)."""
    arg = f"variant={scale},dataset={dataset}" + ("" if scale == "smoke" else f",seeds={seeds}")
    return [p.config for p in _runs.sweep_points(f"{FIG3_CONFIG}:{arg}")
            if curves is None or p.config.curve in curves]


def fig5_configs(scale: str) -> list:
    """Fig. 5 as run here: :data:`FIG5_CURVES` on Fashion-MNIST crossed with
    :data:`FIG5_SEEDS`."""
    return fig3_configs(scale, "fashion_mnist", FIG5_SEEDS, FIG5_CURVES)


def export_fig3(run, name: str = SEEDS_CSV) -> list[dict]:
    """The per-seed CSV of the Fig. 3 (or Fig. 5) runs, and the figure of the first seed's
    curves (``<figure>_<dataset>_<scale>.png``; finished runs only)."""
    rows = _runs.export_runs(run, seed_row, run.data / name, FIELDS,
                             sort=lambda r: (r["curve"], r["seed"]))
    first = min(c.seed for c in run.configs)
    logs = {c.curve: metrics.read_jsonl(Path(d) / "metrics.jsonl")
            for c, d in zip(run.configs, run.dirs, strict=True)
            if c.seed == first and (Path(d) / "summary.json").exists()}
    fig = run.figure.name if run.figure is not None else "fig3"
    declared = set(FIG5_CURVES if fig == "fig5" else _common.FIG3_CURVES)
    panels = [p for p, curves in _common.FIG3.items()
              if set(curves) <= declared and any(c in logs for c in curves)]
    dataset = run.configs[0].dataset
    _runs.plot(run.figures / f"{fig}_{dataset}_{run.scale}.png", [dict(
        lines=[dict(**_series(logs[n], key), fmt="--" if p == "ef" and "_s2" in n else "-",
                    label=LABELS[n], lw=1.2) for n in _common.FIG3[p] if n in logs], grid=True,
        **(dict(title=panel_label(p, int(fig[3:])), ylabel="avg training loss")
           if key == "train_loss" else dict(ylabel="avg test accuracy", xlabel="epoch", legend=6)))
        for key in ("train_loss", "test_accuracy") for p in panels], rows=2,
        cell=(4.3 if len(panels) > 1 else 6.4, 3.2),
        dpi=80, title=f"DP-OGL Fig. {fig[3:]} ({dataset}, {run.scale} scale, seed {first} of "
        "the seeded runs)")
    return rows


PAPER = declare.Paper(
    name="dp_ogl", title="DP-OGL / DP-OGL+ (Kiani et al. 2024)", order=10, template=PAGE,
    link="link",
    scales=_common.VARIANTS,
    figures=(
        declare.Figure("fig4", "Fig. 4: average PwP and per-pair epsilon (exact accounting)",
                       fig4_configs, (FIG4_JSON,), export_fig4, metric="epsilon at t=200"),
        declare.Figure("fig3", "Fig. 3 (MNIST): utility of every curve over seeds",
                       fig3_configs, (SEEDS_CSV,), export_fig3,
                       metric="last-quarter test accuracy and training loss"),
        declare.Figure("fig5", "Fig. 5 (Fashion-MNIST): the panel-(a,b) curves over seeds",
                       fig5_configs, (FIG5_CSV,), functools.partial(export_fig3, name=FIG5_CSV),
                       metric="last-quarter test accuracy and training loss")),
    claims=(
        declare.Claim("fig4", "the orderings of Fig. 4 (Sec. VI-B)", declare.EXACT,
                      "row_dp_ogl_fig4", _fig4_rows, figure="fig4"),
        declare.Claim("plus_sensitivity", "DP-OGL+ (S >= 2) satisfies the sqrt(S) c "
                      "sensitivity (Eq. 18)", declare.EXACT, "row_dp_ogl_plus_sensitivity",
                      lambda i: {"a": i.audit_check(
                          "DP-OGL+ shared window updates (Eq. 11), S=2, via relay")}),
        declare.Claim("fig3", "the orderings of Fig. 3 (Sec. VI-B)", declare.PAIRED,
                      "row_dp_ogl_fig3", _seed_rows, figure="fig3"),
        declare.Claim("fig5", "the orderings of Fig. 3 on Fashion-MNIST (Fig. 5, panels a,b)",
                      declare.PAIRED, "row_dp_ogl_fig5", functools.partial(_seed_rows, fig=5),
                      figure="fig5")),
    pages=(declare.Page("docs/reproduction/dp_ogl.md", (FIG4_JSON, SEEDS_CSV, FIG5_CSV), page),
           declare.Page("docs/reproduction/dp_ogl_seeds.md", (SEEDS_CSV, FIG5_CSV),
                        lambda inputs, text: report(read_seeds(inputs.data / SEEDS_CSV),
                                                    _fig5_rows(inputs)) + "\n")),
    remaining=(declare.Remaining("d", "remaining_dp_ogl", lambda i: {
        k: len(v) if k == "seeds" else v for k, v in _scale(read_seeds(
            i.data / SEEDS_CSV)).items() if k != "scale"}),
               declare.Remaining("d2", "remaining_dp_ogl_fig5", _remaining_fig5)))


if __name__ == "__main__":  # the old command: python -m experiments.reproduce.dp_ogl ...
    __import__("experiments.reproduce.__main__", fromlist=["alias"]).alias("dp_ogl")
