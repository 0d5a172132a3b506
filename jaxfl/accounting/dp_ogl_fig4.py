"""DP-OGL's Fig. 4 claims (Kiani et al. 2024, Sec. VI-B) and the numbers they are decided on,
read from :class:`jaxfl.accounting.dp_ogl.PwPAccountant` reports: per-panel tables, the
reductions and ratios the paper's text states, and its statements with how each is decided
(:data:`CLAIMS` on :func:`claim_values`, with the readings of its words). Plain float64
arithmetic on finished reports (no accounting of its own); :mod:`jaxfl.accounting.dp_ogl`
re-exports :func:`mean_worst_count`, :func:`fig4_tables` and :func:`fig4_numbers`."""

from __future__ import annotations

import numpy as np

RECIPE_REPORTS = {"strict": "privacy", "paper": "privacy_paper"}  # a run summary's report keys
# How Fig. 4's claims (Sec. VI-B) read the paper's words.
ABOUT_40 = (0.35, 0.45)  # "≈ 40%": a reduction of 35-45%
SLIGHTLY = 0.10  # "slightly exceeds": by at most 10%
HEATMAP_TOLERANCE = 0.25  # "≈ 1/S": the (ε, δ) cell ratio within 25% of 1/S


def mean_worst_count(counts) -> float:
    """Mean over workers of the worst-attacker mechanism count K (a quantity linear in RDP),
    from a report's ``[target, observer]`` counts (NaN = pair outside the threat model; a
    worker without any attacker is left out)."""
    counts = np.asarray(counts, dtype=np.float64)
    worst = np.max(np.where(np.isnan(counts), -1.0, counts), axis=1)
    return float(worst[worst >= 0].mean())


def fig4_tables(reports: dict, heatmaps: dict, curves) -> dict:
    """One recipe's Fig. 4 tables from its accounting reports (a run summary's ``privacy`` or
    ``privacy_paper``: ``per_unit`` and ``details``, as the accountant's report writes
    them). ``reports``: curve name -> report; ``heatmaps``: panel letter -> curve name (Fig.
    4(b)-(h)); ``curves``: the curve names of Fig. 4(a). Returns ``{"curves": name -> the
    report's PwP curve record, "heatmaps": panel -> {"curve", "epsilon" (per-pair epsilon,
    float64), "counts" (float64), "stats": {mean, std, max, workers}, "settings": {mode,
    sound, accountant, algorithm, threat_model, recipe, t, period}}, "counts": name ->
    mechanism counts (float64)}``, the inputs of :func:`fig4_numbers`."""
    counts = {n: np.array(r["details"]["counts"], np.float64) for n, r in reports.items()}
    heat = {}
    for panel, n in heatmaps.items():
        r, d = reports[n], reports[n]["details"]
        heat[panel] = {
            "curve": n, "epsilon": np.array(r["per_unit"], np.float64), "counts": counts[n],
            "stats": {k: d[k] for k in ("mean", "std", "max", "workers")},
            "settings": {"mode": r["mode"], "sound": r["sound"], "accountant": r["accountant"],
                         **{k: d[k] for k in ("algorithm", "threat_model", "recipe", "t",
                                              "period")}}}
    return {"curves": {n: reports[n]["details"]["curve"] for n in curves}, "heatmaps": heat,
            "counts": counts}


def fig4_recipes(summaries: dict, heatmaps: dict, curves) -> dict:
    """:func:`fig4_tables` of each recipe of :data:`RECIPE_REPORTS` (``strict``: a run summary's
    ``privacy`` report, ``paper``: its ``privacy_paper``), from ``summaries`` (curve name -> run
    summary)."""
    return {mode: fig4_tables({n: s[key] for n, s in summaries.items()}, heatmaps, curves)
            for mode, key in RECIPE_REPORTS.items()}


def fig4_numbers(curves: dict, counts: dict, heatmaps: dict, *, t: int) -> dict:
    """The numbers Fig. 4's claims (Sec. VI-B) are decided on, as plain floats, from one
    recipe's reports at epoch ``t``. ``curves``: curve name ->
    :func:`jaxfl.accounting.dp_ogl.pwp_curve`-style record with its per-epoch ``"mean"``
    (Fig. 4(a); names ``ri4_s2``, ``plus_ri4_s2``, ``plus_ri4_s4``); ``counts``: curve name ->
    ``[target, observer]`` mechanism counts;
    ``heatmaps``: panel letter ``b``..``h`` -> ``{"epsilon": per-pair epsilon, "counts",
    "stats": {"max", ...}}`` (b: GL, c: CL, d: LB, e / f: RI S = 10 / 25, g: RI M = 10,
    h: DP-OGL+ RI S = 10). Reductions are ``1 - new / old`` of the last epoch's mean PwP
    (``_eps``) and of :func:`mean_worst_count` (``_rdp``); the (h) / (e) ratios are means over
    the cells both panels cover."""
    def arr(x):
        return np.array(x, dtype=np.float64)

    end = {k: float(v["mean"][-1]) for k, v in curves.items()}
    k = {n: mean_worst_count(counts[n]) for n in ("ri4_s2", "plus_ri4_s2", "plus_ri4_s4")}
    gl_val = float(heatmaps["b"]["stats"]["max"])
    ce, d, e, f, h = (arr(heatmaps[panel]["epsilon"]) for panel in "cdefh")
    kh, ke = arr(heatmaps["h"]["counts"]), arr(heatmaps["e"]["counts"])
    both = ~np.isnan(h) & (ke > 0)
    return {
        "t": t, "recipe": "paper",
        "pwp": end,
        "plus_s2_reduction_eps": 1 - end["plus_ri4_s2"] / end["ri4_s2"],
        "plus_s2_reduction_rdp": 1 - k["plus_ri4_s2"] / k["ri4_s2"],
        "plus_s4_reduction_eps": 1 - end["plus_ri4_s4"] / end["plus_ri4_s2"],
        "plus_s4_reduction_rdp": 1 - k["plus_ri4_s4"] / k["plus_ri4_s2"],
        "gl_max": gl_val, "cl_max": float(heatmaps["c"]["stats"]["max"]),
        "cl_zero_cells": int(np.sum(ce == 0)),
        "ri_s10_min": float(np.nanmin(e)), "ri_s25_min": float(np.nanmin(f)),
        "ri_s10_mean": float(np.nanmean(e)), "ri_s25_mean": float(np.nanmean(f)),
        "ri_s25_below_s10_everywhere": bool(np.all(f[~np.isnan(f)] <= e[~np.isnan(e)] + 1e-9)),
        "ri_m10_max": float(heatmaps["g"]["stats"]["max"]),
        "plus_s": 10,
        "heatmap_ratio_count": float(np.mean(kh[both] / ke[both])),
        "heatmap_ratio_eps": float(np.mean(h[both] / e[both])),
        "lb_above_gl": int(np.nansum(d > gl_val + 1e-9)),
        "lb_below_gl": int(np.nansum(d < gl_val - 1e-9)),
    }


def heatmap_ratio_holds(ratio_eps: float, s: int) -> bool:
    """Fig. 4(h) "DP-OGL+ cells ≈ 1/S of DP-OGL's", decided on the (ε, δ) cells the figure
    plots: within :data:`HEATMAP_TOLERANCE` of 1/S. The mechanism-count (RDP) ratio is not a
    test: the accountant counts DP-OGL+ windows as C_OGL / S by construction (Eq. 18), so it is
    exactly 1/S for any data and any correct or incorrect reading of the figure."""
    return abs(ratio_eps * s - 1.0) <= HEATMAP_TOLERANCE


def claim_values(numbers: dict) -> dict:
    """The values :data:`CLAIMS` read, from :func:`fig4_numbers`' ``numbers`` (as exported:
    ``dp_ogl_fig4.json``): those numbers, each curve's PwP (``numbers["pwp"]``) by name, and
    ``tm1_min`` (the lowest TM1 curve: not DP-OGL+), ``tm1_others`` (the lowest but GL's and
    CL's), ``ri`` (the higher of RI M=4 S=2 and S=10), ``over`` (RI M=10's worst cell above
    GL's, relative), ``inv_s`` (1/S of panel (h)) and the readings ``lo`` / ``hi``
    (:data:`ABOUT_40` in percent), ``slightly`` and ``tolerance``."""
    p = numbers["pwp"]
    tm1 = {k: x for k, x in p.items() if not k.startswith("plus_")}
    return dict(**numbers, **p, tm1_min=min(tm1.values()), ri=max(p["ri4_s2"], p["ri4_s10"]),
                tm1_others=min(x for k, x in tm1.items() if k not in ("gl", "cl4_s2")),
                over=numbers["ri_m10_max"] / numbers["gl_max"] - 1, inv_s=1 / numbers["plus_s"],
                lo=100 * ABOUT_40[0], hi=100 * ABOUT_40[1], slightly=SLIGHTLY,
                tolerance=HEATMAP_TOLERANCE)


# The paper's Fig. 4 statements (Sec. VI-B), decided on :func:`claim_values` ``v`` (attributes):
# (claim, panel, target (None: the figure's ordering), measured, rule (None: descriptive));
# claim and measured are ``str.format`` formats of the values.
CLAIMS = (
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
     "{lb_above_gl} cells above, {lb_below_gl} below (σ=3 vs GL σ=2)", None))


__all__ = ["ABOUT_40", "CLAIMS", "HEATMAP_TOLERANCE", "RECIPE_REPORTS", "SLIGHTLY",
           "claim_values", "fig4_numbers", "fig4_recipes", "fig4_tables", "heatmap_ratio_holds",
           "mean_worst_count"]
