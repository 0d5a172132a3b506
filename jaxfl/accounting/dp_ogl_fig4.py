"""The numbers DP-OGL's Fig. 4 claims (Kiani et al. 2024, Sec. VI-B) are decided on, read from
:class:`jaxfl.accounting.dp_ogl.PwPAccountant` reports: per-panel tables and the reductions and
ratios the paper's text states. Plain float64 arithmetic on finished reports (no accounting of
its own); :mod:`jaxfl.accounting.dp_ogl` re-exports these names."""

from __future__ import annotations

import numpy as np


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


__all__ = ["mean_worst_count", "fig4_tables", "fig4_numbers"]
