"""DP-OGL / DP-OGL+ (Kiani et al. 2024, Sec. VI-B, Figs. 3-5, App. H) declared as data.

  python -m experiments.reproduce dp_ogl --figure fig4 --workdir runs/dp_ogl   # exact, minutes
  python -m experiments.reproduce dp_ogl --figure fig3 --scale cpu --workdir runs/dp_ogl
  python -m experiments.reproduce dp_ogl --from-data      # the pages from the committed data

``fig4``: accounting-only runs, claims decided exactly (:mod:`jaxfl.accounting.dp_ogl_fig4`);
``fig3`` / ``fig5``: the Fig. 3 curves on MNIST, panels (a,b) on Fashion-MNIST, over seeds
(:func:`paired_claims`). Page blocks and summary rows: :func:`context` and the templates.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

from experiments import config as _config
from experiments.configs.dp_ogl import _common
from experiments.plotting import figures as _figures
from jaxfl import metrics
from jaxfl.accounting import dp_ogl_fig4 as fig4
from jaxfl.repro import claims as _claims
from jaxfl.repro import declare, stats
from jaxfl.repro import runs as _runs
from jaxfl.repro import text as _text
from jaxfl.repro.claims import Exact, decide_exact

PAGE, LABELS = "pages_dp_ogl", _common.LABELS  # templates/pages_dp_ogl.md; the curves' legends
FIG4_JSON, SEEDS_CSV = "dp_ogl_fig4.json", "dp_ogl_fig3_seeds.csv"
FIG5_CSV = "dp_ogl_fig5_seeds.csv"
FIG3_CONFIG = Path(__file__).resolve().parents[1] / "configs" / "dp_ogl" / "fig3.py"
SEEDS, FIG5_SEEDS = "0:1:2", "0:1:2:3:4"  # of Figs. 3 (smoke: the config's own two) and 5
FIG5_CURVES = tuple(_common.FIG3["ab"])  # Fig. 5 as run here: panels (a,b) only
FIG4_T = 200  # the epoch of Fig. 4's heatmaps and of the numbers its claims are decided on
FIG4_CLAIMS = tuple(Exact(claim, measured, rule, dict(  # at_t: the page names the recipe and t
    panel=f"Fig. 4{panel}", target=target, at_t=panel == "(a)", decided=rule is not None))
    for claim, panel, target, measured, rule in fig4.CLAIMS)
PANEL = "Fig. {}({},{})".format  # PANEL(3, *"ab"): "Fig. 3(a,b)"


def export_fig4(run) -> dict:
    """Both recipes' tables (``privacy_<mode>.json``) and Fig. 4(a), the paper recipe's (b)-(h);
    returns and writes its numbers at t = :data:`FIG4_T` (``dp_ogl_fig4.json``)."""
    tables = fig4.fig4_recipes({n: _runs.read_run(d)[0] for n, d in zip(
        _common.FIG4_CURVES, run.dirs, strict=True)}, _common.FIG4_HEATMAPS, _common.FIG4A)
    for mode, t in tables.items():
        (run.workdir / f"privacy_{mode}.json").write_text(metrics.to_json(
            {"curves": t["curves"], "heatmaps": t["heatmaps"]}))
    _figures.plot(run.figures / "fig4a_pwp.png", [dict(
        lines=[dict(x=c["t"], y=c["mean"], label=LABELS[n], lw=1.3, band=(
            np.subtract(c["mean"], c["std"]), np.add(c["mean"], c["std"])))
            for n, c in tables[mode]["curves"].items()], grid=True, xlabel="epoch t",
        title=f"Fig. 4(a) average PwP ({mode} recipe, δ=1e-5)", legend=7 * (mode == "strict"),
        ylabel="ε (mean ± std over workers)" if mode == "paper" else "")
        for mode in ("paper", "strict")], cell=(5.5, 3.8), sharey=True)
    p = tables["paper"]
    _figures.image_grid(run.figures / "fig4_heatmaps.png", [
        dict(z=h["epsilon"], title=f"({panel}) {LABELS[h['curve']]}", xlabel="HbC i",
             ylabel="target n") for panel, h in p["heatmaps"].items()], rows=2, cols=4,
        label=f"ε_{{n,i}} at t={FIG4_T}",
        title="Fig. 4(b)-(h): per-pair ε (paper recipe; white = excluded, black = 0)")
    return _runs.write_json(run.data / FIG4_JSON, fig4.fig4_numbers(p["curves"], p["counts"],
                                                              p["heatmaps"], t=FIG4_T))


ACC, LOSS = "tail_test_accuracy", "tail_train_loss"  # the means over the last quarter
FIELDS = dict(curve=str, dataset=str, variant=str, mode=str, seed=int, epochs=int, logged=int,
              **{ACC: float, LOSS: float}, final_test_accuracy=float)  # the CSV's columns
COLUMNS = {"acc": ACC, "loss": LOSS}  # the CSV column of each metric of the claims
FIG3_CLAIMS = _common.FIG3_CLAIMS  # (claim, panel, [(a, b, metric)]): Sec. VI-B on Fig. 3
FIG5_CLAIMS = [(claim, panel, comps) for claim, panel, comps in FIG3_CLAIMS  # of its curves
               if all(a in FIG5_CURVES and b in FIG5_CURVES for a, b, _ in comps)]


def fig3_configs(scale: str, dataset: str = "mnist", seeds: str = SEEDS, curves=None) -> list:
    """Every Fig. 3 curve (or those of ``curves``) crossed with ``seeds``: the points (same ids)
    of ``python -m experiments.sweep --config "fig3.py:variant=...,dataset=...,seeds=..."``."""
    arg = f"variant={scale},dataset={dataset}" + ("" if scale == "smoke" else f",seeds={seeds}")
    return [p.config for p in _config.sweep_points(f"{FIG3_CONFIG}:{arg}")
            if curves is None or p.config.curve in curves]


fig5_configs = functools.partial(fig3_configs, dataset="fashion_mnist", seeds=FIG5_SEEDS,
                                 curves=FIG5_CURVES)  # Fig. 5 as run here


def seed_row(c, summary, recs) -> dict | None:
    """The CSV row of a finished Fig. 3 / 5 point (config ``c``; None if unfinished)."""
    if recs is None:
        return None
    acc = _runs.series(recs, "test_accuracy")[1]
    return {**{k: getattr(c, k) for k in ("curve", "dataset", "variant", "mode", "seed")},
            "epochs": c.epochs, "logged": acc.size, ACC: _runs.tail_mean(acc),
            LOSS: _runs.tail_mean(_runs.series(recs, "train_loss")[1]),
            "final_test_accuracy": float(acc[-1]) if acc.size else float("nan")}


def export_fig3(run) -> list[dict]:
    """The figure's per-seed CSV (``run.figure.data``) and the figure of the first seed's
    curves (``<figure>_<dataset>_<scale>.png``; finished runs only)."""
    rows = _runs.export_runs(run, seed_row, run.data / run.figure.data[0], FIELDS,
                             sort=lambda r: (r["curve"], r["seed"]))
    first, fig = min(c.seed for c in run.configs), run.figure.name[3:]
    dataset = run.configs[0].dataset
    logs = {c.curve: _runs.read_run(d)[1] for c, d in zip(run.configs, run.dirs, strict=True)
            if c.seed == first and (Path(d) / "summary.json").exists()}
    panels = [p for p, cs in _common.FIG3.items()  # Fig. 5: the panels of its curves only
              if (fig == "3" or set(cs) <= set(FIG5_CURVES)) and set(cs) & set(logs)]
    _figures.plot(run.figures / f"fig{fig}_{dataset}_{run.scale}.png", [dict(
        lines=[dict(zip("xy", _runs.series(logs[n], key)), label=LABELS[n], lw=1.2,
                    fmt="--" if p == "ef" and "_s2" in n else "-")
               for n in _common.FIG3[p] if n in logs], grid=True,
        **(dict(title=PANEL(fig, *p), ylabel="avg training loss") if key == "train_loss"
           else dict(ylabel="avg test accuracy", xlabel="epoch", legend=6)))
        for key in ("train_loss", "test_accuracy") for p in panels], rows=2,
        cell=(4.3 if len(panels) > 1 else 6.4, 3.2), dpi=80,
        title=f"DP-OGL Fig. {fig} ({dataset}, {run.scale} scale, seed {first} of the seeded runs)")
    return rows


def paired_claims(rows, fig5_rows=()) -> list[list[dict]]:
    """:data:`FIG3_CLAIMS` on ``rows`` and :data:`FIG5_CLAIMS` on ``fig5_rows`` decided as ONE
    Holm family by :func:`~jaxfl.repro.claims.decide_sets` ("a better than b": accuracy higher,
    loss lower), each
    with its ``panel`` ("Fig. 3(a,b)"). A claim with a curve not in its rows is "not run"."""
    return _claims.decide_sets(
        (rows, fig5_rows), [[(claim, dict(panel=PANEL(fig, *panel)), comps)
                             for claim, panel, comps in decl]
                            for fig, decl in ((3, FIG3_CLAIMS), (5, FIG5_CLAIMS))],
        "curve", COLUMNS, lower=("loss",), page=PAGE)


@declare.per_inputs
def context(inputs: declare.Inputs) -> dict:
    """Every name the page blocks and the summary rows print: Fig. 4's numbers ``n``, values
    ``v`` and decided :data:`FIG4_CLAIMS` ``fig4_rows`` (none without its JSON); Figs. 3 and 5
    over seeds ``s``, ``s5`` (their rows' scale, claims, declared curves that ran or not, curve
    cells; summary rows ``rows3``, ``rows5``: none without a CSV); the Fig. 3 runs' config ``c``."""
    n = inputs.json(FIG4_JSON) if (inputs.data / FIG4_JSON).exists() else None
    rows = [_runs.read_if(inputs.data, f, FIELDS) for f in (SEEDS_CSV, FIG5_CSV)]
    found = [dict(r, verdict=stats.exact(r["holds"], "n/a (descriptive)"))  # holds None: no rule
             for r in decide_exact(FIG4_CLAIMS, fig4.claim_values(n))] if n else []
    ctx = dict(n=n, v=n and fig4.claim_values(n), fig4_rows=found, fig5=bool(rows[1]),
               m10=next((r for r in found if r["claim"].startswith("RI M=10 worst case")), None),
               a=inputs.audit_check("DP-OGL+ shared window updates (Eq. 11), S=2, via relay"),
               more=len(_common.FIG3_CURVES) - len(FIG5_CURVES))
    for name, summary, rs, claims, declared in zip(
            ("s", "s5"), ("rows3", "rows5"), rows, paired_claims(*rows),
            (_common.FIG3_CURVES, FIG5_CURVES), strict=True):
        cells = {cv: dict(cell, label=LABELS[cv]) for cv, cell in _text.interval_cells(
            rs, "curve", _common.FIG3_CURVES, COLUMNS).items()}
        ran = [c for c in declared if c in {r["curve"] for r in rs}]
        ctx[name] = dict(
            _runs.seed_scale(rs, ("variant", "dataset", "mode", "epochs")), claims=claims,
            table=_text.prose(PAGE, "claims_table", rows=claims),
            curves=len({r["curve"] for r in rs}), ran=", ".join(ran), n_ran=len(ran),
            curve_rows=[cells[c] for c in ran],
            not_run=", ".join(c for c in declared if c not in ran),
            panels=[dict(panel=PANEL(3, *p), rows=[cells[c] for c in cs])
                    for p, cs in _common.FIG3.items()])
        ctx[summary] = claims if rs else []
    if rows[0]:
        c = _config.load_config(f"{FIG3_CONFIG}:variant={rows[0][0]['variant']}")
        ctx |= dict(c=c, model=f"MLP 784-{'-'.join(map(str, c.model_hidden))}-10"
                    if c.model == "mlp" else c.model)
    return ctx


def page(inputs, text: str) -> str:
    """docs/reproduction/dp_ogl.md: its generated blocks (Fig. 4 claims and notes, what was run,
    Figs. 3 and 5 over seeds; Fig. 5's where its data are) spliced into the page ``text``."""
    ctx = context(inputs)
    blocks = ("fig4", "fig4_notes", "run", "fig3", *["fig5"] * ctx["fig5"])
    return _text.splice_blocks(text, {f"dp_ogl_{b}": _text.fill_block(
        PAGE, b, ctx, wrapped=b in ("fig4_notes", "run")) for b in blocks}, "DP-OGL")


TRAINING = "last-quarter test accuracy and training loss"
PAPER = declare.Paper(
    name="dp_ogl", title="DP-OGL / DP-OGL+ (Kiani et al. 2024)", order=10, template=PAGE,
    link="link", scales=_common.VARIANTS,
    figures=(
        declare.Figure("fig4", "Fig. 4: average PwP and per-pair epsilon (exact accounting)",
                       lambda scale: [_common.make_privacy_config(n, dataset="mnist", t=FIG4_T)
                                      for n in _common.FIG4_CURVES],  # no training: no scale
                       (FIG4_JSON,), export_fig4, metric="epsilon at t=200"),
        declare.Figure("fig3", "Fig. 3 (MNIST): utility of every curve over seeds",
                       fig3_configs, (SEEDS_CSV,), export_fig3, metric=TRAINING),
        declare.Figure("fig5", "Fig. 5 (Fashion-MNIST): the panel-(a,b) curves over seeds",
                       fig5_configs, (FIG5_CSV,), export_fig3, metric=TRAINING)),
    claims=declare.claims_from(context, PAGE, (
        ("fig4", "the orderings of Fig. 4 (Sec. VI-B)", declare.EXACT, "fig4", "fig4_rows"),
        ("plus_sensitivity", "DP-OGL+ (S >= 2) satisfies the sqrt(S) c sensitivity (Eq. 18)",
         declare.EXACT),
        ("fig3", "the orderings of Fig. 3 (Sec. VI-B)", declare.PAIRED, "fig3", "rows3"),
        ("fig5", "the orderings of Fig. 3 on Fashion-MNIST (Fig. 5, panels a,b)",
         declare.PAIRED, "fig5", "rows5")), prefix="dp_ogl"),
    pages=(declare.Page("docs/reproduction/dp_ogl.md", (FIG4_JSON, SEEDS_CSV, FIG5_CSV), page),
           declare.Page("docs/reproduction/dp_ogl_seeds.md", (SEEDS_CSV, FIG5_CSV),
                        lambda i, text: _text.fill_block("dp_ogl_seeds", "page", context(i))
                        + "\n\n")),
    remaining=declare.remaining_from(context, PAGE, (("d", ""), ("d2", "fig5")), prefix="dp_ogl"))


if __name__ == "__main__":  # the old command: python -m experiments.reproduce.dp_ogl ...
    __import__("jaxfl.repro.cli", fromlist=["alias"]).alias("dp_ogl")
