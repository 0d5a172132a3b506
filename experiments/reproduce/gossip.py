"""Koskela & Kulkarni 2025, "Differential Privacy Analysis of Decentralized Gossip Averaging
under Varying Threat Models" (arXiv 2505.19969 v1), declared as :data:`PAPER`. Figure ``exact``:
the spec's anchor tables and the accounting-only studies of Figs. 1 and 2 -> ``gossip_exact.json``;
each Fig. 3 setting of :data:`FIG3S` (MNIST) -> its per-seed CSV, the learning rate chosen on
validation, the claims of all settings one Holm family. The page's blocks and the summary rows
are filled from one :func:`context` (wording: ``templates/gossip.md``).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np

from experiments import config as config_lib
from experiments.plotting import figures as _figures
from jaxfl.accounting import gossip as gossip_accounting
from jaxfl.repro import claims as _claims
from jaxfl.repro import declare, stats
from jaxfl.repro import runs as _runs
from jaxfl.repro import text as _text
from jaxfl.repro.claims import Cmp, Paired, decide
from jaxfl.sensitivity import anchors, asymptotic

CONFIGS = Path(__file__).resolve().parents[1] / "configs" / "gossip"
EXACT = "gossip_exact.json"
FIG1 = {"smoke": "smoke", "cpu": "full", "full": "full"}  # a study's config variant per scale
VARIANTS = {"fig1_er": FIG1, "fig1_facebook": FIG1,
            "fig2_adaptive": {"smoke": "smoke", "cpu": "cpu", "full": "full"}}
# The Fig. 3 settings, a figure each (a new one: an entry here and its template blocks
# ``<name>`` and ``scale_<name>``): name -> (data file, PNG, config file under configs/gossip/,
# its variant per scale; the last one's config is the one the page describes).
FIG3S = {"fig3": ("gossip_fig3_seeds.csv", "fig3_mnist_seeds.png", "fig3_mnist",
                  {"smoke": "smoke", "cpu": "cpu_val"}),
         "fig3full": ("gossip_fig3_full_seeds.csv", "fig3_mnist_full_seeds.png",
                      "fig3_mnist_full_seeds", {"smoke": "smoke", "cpu": "reduced"})}
FIG3_OVERRIDES = {"smoke": {"val_size": 100}}  # the smoke _text.grid has no validation split
SEED_FIELDS = dict(method=str, target_epsilon=float, learning_rate=float, seed=int, rounds=int,
                   val_size=int, noise_multiplier=float, val_accuracy=float, test_accuracy=float,
                   status=str)  # the per-seed CSVs' columns and types
PAGE = "gossip"  # templates/gossip.md: the wording of the page and the summary rows
COMPARABLE_MARGIN = 0.01  # "comparable": at most 1 point of test accuracy below DP-FedAvg
# Sec. 4, Fig. 3's claims per ε and Thm-3 gossip variant: (kind, the other method, its label,
# margin, claim): "comparable to" DP-FedAvg (non-inferiority of DP-FedAvg - gossip against the
# margin) and the summary's reading that Thm-3 gossip beats LDP (gossip - LDP against 0).
GOSSIP = ("gossip_ss_thm3_certified", "gossip_ss_thm3_paper")
FIG3_CLAIMS = (("above_ldp", "gossip_ldp", "LDP", None, "{g} above LDP"),
               ("comparable", "fedavg", "FedAvg", COMPARABLE_MARGIN, "{g} comparable to "
                f"DP-FedAvg (not below it by more than {COMPARABLE_MARGIN * 100:g} point)"))


# --- the data files


def exact_configs(scale: str) -> list:
    """Fig. 1 left and right (where its data is: SNAP's file is not shipped), then Fig. 2's
    sweep: one study each."""
    fig1 = [config_lib.load_config(f"{CONFIGS / n}.py:variant={VARIANTS[n][scale]}")
            for n in ("fig1_er", "fig1_facebook")]
    return _runs.with_data(fig1, "gossip") + config_lib.sweep_configs(CONFIGS / "fig2_adaptive.py",
                                                     VARIANTS["fig2_adaptive"][scale])


def export_exact(run: declare.Run) -> None:
    """``gossip_exact.json``: the anchors (5.3 skipped at smoke scale) and the Fig. 1 / Fig. 2
    results read from the studies' privacy reports (``observer_curves``, ``view_series``)."""
    tables = anchors.anchor_tables(anchors.SPEC["5.1"]["T"],
                                   None if run.scale == "smoke" else anchors.HORIZONS_5_3)
    out = {"_provenance": f"Written by `python -m experiments.reproduce gossip --figure exact "
           f"--scale {run.scale}` (exact accounting, no training): the spec's anchor tables "
           "(ours), Fig. 1 left's curves and Fig. 2's series.", "scale": run.scale,
           "anchors": tables}
    studies = list(zip(run.configs, run.dirs, strict=True))
    fig1 = [(c, d) for c, d in studies if c.name.startswith("fig1")]
    for c, d in fig1:  # Fig. 1's curves per observer (its first observers_per_kind neighbours)
        s = _runs.read_run(d)[0]
        curves = gossip_accounting.observer_curves(s, c.observers_per_kind or 0)
        out[c.name.removesuffix("_smoke")] = {
            "config": dataclasses.asdict(c), "target": s["privacy"]["details"]["targets"][0],
            "curves": curves, "limit": 1.0 / (c.n - 1) if c.graph == "er" else None,
            "modes": list(gossip_accounting.REPORT_KEYS), "T_max": int(curves[0]["T"][-1])}
    fig2 = [(c, d) for c, d in studies if (c, d) not in fig1]  # Fig. 2's series per view
    out["fig2_adaptive"] = {"config": dataclasses.asdict(fig2[0][0]), "series": gossip_accounting
                            .view_series(_runs.read_run(d)[0] for _, d in fig2)}
    _runs.write_json(run.data / EXACT, out)


def export_fig3(run: declare.Run) -> list[dict]:
    """The setting's CSV: final validation / test accuracy per point of the sweep (an
    unfinished point: status ``missing``)."""
    return _runs.export_runs(run, _runs.point_row(
        ("method", "target_epsilon", "learning_rate", "seed", "rounds", "val_size"), lambda s: {
            k: s["final"][k] for k in ("noise_multiplier", "val_accuracy", "test_accuracy")}),
        run.data / FIG3S[run.figure.name][0], SEED_FIELDS)


def select_fig3(rows: list[dict]) -> dict:
    """{(method, ε): cell}: the learning rate chosen on *validation* accuracy
    (:func:`_runs.select_on`), the cell its *test* accuracy (``fmt``: as printed) and its σ."""
    return {k: dict(lr=c["choice"], test_s=c["values"], test=c["interval"], lrs=c["choices"],
                    fmt=stats.fmt(c["interval"], 4), sigma=c["rows"][0]["noise_multiplier"],
                    select_seeds=c["select_seeds"])
            for k, c in _runs.select_on(rows, ("method", "target_epsilon"), "learning_rate",
                                  "val_accuracy", "test_accuracy").items()}


# --- the figures


def draw(run: declare.Run) -> None:
    """The page's figures from the data files a run wrote (those that exist)."""
    exact = run.data / EXACT
    plot(json.loads(exact.read_text()) if exact.exists() else {}, {}, run.figures)
    for name, f in fig3_settings(run.data).items():
        plot({}, f["s"]["cells"], run.figures, FIG3S[name][1])


def plot(ex: dict, cells: dict, fig_dir: Path, png: str = "fig3_mnist_seeds.png") -> None:
    """Figs. 1 and 2 (paper and certified mode side by side) and Fig. 3 (per method, test
    accuracy at the chosen learning rate with 95% t-intervals), each where its data is."""
    modes, figs = ("paper", "certified"), []
    for n, res in ((n, ex[n]) for n in ("fig1_er", "fig1_facebook") if n in ex):
        figs.append((f"{n}.png", 9, f"Δ²/T  (TM-1, j = {res['target']})", [dict(
            title=title, xlabel="T", yscale="log", lines=[dict(
                x=c.get(f"{m}_T", c["T"]), label=f"{c['kind']} i={c['observer']}",
                y=[np.nan if v is None else v for v in c[f"{m}_over_T"]]) for c in res["curves"]],
            hline=res["limit"] and dict(y=res["limit"], ls="--", c="k", lw=0.8, label="1/(n-1)"))
            for m, title in zip(modes, ("paper mode (1ᵀM1)", "certified mode"), strict=True)]))
    if "fig2_adaptive" in ex:
        s = ex["fig2_adaptive"]["series"]
        figs.append(("fig2_adaptive.png", 9, "mean pairwise ε (σ = "
                     f"{ex['fig2_adaptive']['config']['noise_multiplier']:g})", [dict(
                         title=f"{m} mode", xlabel="T", lines=[
                             dict(x=s[key]["T"], y=s[key]["mean_eps"], label=label,
                                  **(kw or ({"marker": "."} if k else {})))
                             for key, label, kw in (
                                 (f"tm3_{m}", "Thm 3 (secure summation)", {}),
                                 (f"tm4_{m}", "Thm 4 (plain)", {}),
                                 (f"tm4_exact_{m}" if k == 0 else "-",
                                  "plain, exact view (non-adapt.)", {"ls": ":", "marker": "x"}),
                                 ("ldp", "LDP", {"c": "k", "ls": "--"})) if key in s])
                         for k, m in enumerate(modes)]))
    if cells:
        ticks = sorted({e for _, e in cells})
        figs.append((png, 8, "test accuracy (one node)", [dict(
            title=f"{m} accounting (lr chosen on validation; 95% t-intervals)", xscale="log",
            xlabel="mean pairwise ε (δ = 1e-5)", xticks=ticks, minor=False,
            xticklabels=[f"{e:g}" for e in ticks],
            lines=_figures.interval_lines(cells, names, "test"))
            for m, names in zip(modes, (
                ("gossip_ss_thm3_paper", "gossip_p_thm4_paper", "fedavg"),
                ("gossip_ss_thm3_certified", "gossip_ldp", "fedavg")), strict=True)]))
    for name, size, ylabel, panels in figs:  # two panels sharing y
        _figures.plot(fig_dir / name, [dict(p, size=size, grid=True, legend=7, **(
            {"ylabel": ylabel} if k == 0 else {})) for k, p in enumerate(panels)],
            cell=(4.5, 3.4), sharey=True)


# --- the page and the summary rows


def fig3_family(settings: dict) -> dict:
    """{setting: its claims}: :data:`FIG3_CLAIMS` of every Fig. 3 setting in ``settings``
    ({setting: cells of :func:`select_fig3`}), those whose cells ran, Holm-corrected as ONE
    family (the declared rule: Holm per paper; the paper's other claims are exact), each with
    its paired difference and the two cells' test accuracies as printed."""
    decl = [Paired(f"ε={eps:g}: " + text.format(g=g), (Cmp((name, g, eps), (name, other, eps),
                                                           margin),),
                   dict(setting=name, method=g, eps=eps, kind=kind, vs=label,
                        margin=100 * (margin or 0)))
            for name, cells in settings.items() for eps in sorted({e for _, e in cells})
            for g in GOSSIP for kind, other, label, margin, text in FIG3_CLAIMS]
    out = {name: [] for name in settings}
    for r in _claims.single_rows(decide(decl, lambda k: (settings[k[0]].get(k[1:]) or {}).get(
            "test_s")), scale=100, nd=2):
        out[r["setting"]].append(r)
    return out


def fig3_settings(data_dir, scale: str | None = None) -> dict:
    """{setting: its page block's fields} for every Fig. 3 setting of :data:`FIG3S` whose CSV
    is in ``data_dir``: ``s`` (its ``cells`` (:func:`select_fig3`), ``claims`` (those of the
    paper's one family: :func:`fig3_family`) and what the page and the summary print of its
    rows), its config ``cfg`` (the variant of ``scale``, else the setting's last) and table."""
    rows = {name: [r for r in _runs.read_rows(Path(data_dir) / d, SEED_FIELDS)
                   if r["status"] == "ok"]
            for name, (d, *_) in FIG3S.items() if (Path(data_dir) / d).exists()}
    cells = {name: select_fig3(r) for name, r in rows.items()}
    claims = fig3_family(cells)
    out = {}
    for name, rs in rows.items():
        cs = cells[name]
        seeds, methods = sorted({r["seed"] for r in rs}), list(dict.fromkeys(m for m, _ in cs))
        s = dict(
            cells=cs, claims=claims[name], rounds=rs[0]["rounds"], val_size=rs[0]["val_size"],
            points=len(rs), seeds=seeds, n_seeds=len(seeds), methods=", ".join(methods),
            n_methods=len(methods), comparisons=len(claims[name]), lrs=[*cs.values()][0]["lrs"],
            family=sum(map(len, claims.values())), select_seeds=", ".join(
                map(str, sorted({x for c in cs.values() for x in c["select_seeds"]}))),
            **_claims.verdict_counts(claims[name]))
        variant = FIG3S[name][3].get(scale, list(FIG3S[name][3].values())[-1])
        cfg = config_lib.load_config(f"{CONFIGS / FIG3S[name][2]}.py:variant={variant}")
        eps, table = _text.grid(cs)
        out[name] = dict(s=s, cfg=cfg, variant=variant, margin=COMPARABLE_MARGIN * 100,
                         per_node=(cfg.n * cfg.per_node - s["val_size"]) // cfg.n,
                         claims=s["claims"], eps=eps, table=table)
    return out


@declare.per_inputs
def context(inputs: declare.Inputs) -> dict:
    """The page's blocks (``blocks``: block -> its fields, in the page's order) and the summary
    rows (a dict per row block, a list per Fig. 3 setting), from ``gossip_exact.json``, the
    Fig. 3 CSVs, ``exact_numbers.json`` and the audit."""
    ex, g, x4 = inputs.json(EXACT), inputs.exact["gossip"], inputs.exact["gossip_thm4"]
    spec = {t: [dict(key=key.replace(",", " | "), cells=[dict(spec=a, ours=b) for a, b in cs])
                for key, cs in rows.items()]  # 5.5's key "<rule>,<T>": two cells
            for t, rows in anchors.spec_comparison(ex["anchors"]).items()}
    rg, scale = ex["anchors"]["5.1_rigorous"], ex["scale"]
    settings = fig3_settings(inputs.data, scale)
    observers = [dict(o, above=_text.ranges(o["above"]) or "none") for o in asymptotic
                 .observer_readings(ex["fig1_er"]["curves"], ex["fig1_er"]["limit"])]
    fig2 = asymptotic.view_comparison(ex["fig2_adaptive"]["series"])
    blocks = {"header": dict(scale=scale), "anchors": dict(rows=spec["5.1"], rigorous=[
        dict(zip(rg, v)) for v in zip(*rg.values())])}
    blocks |= {"anchors_" + t.replace(".", "_"): dict(rows=spec[t]) for t in ("5.3", "5.5")
               if t in spec}
    blocks |= dict(fig1=dict(cfg=ex["fig1_er"]["config"], limit=ex["fig1_er"]["limit"],
                             observers=observers, matches=all(o["on_side"] and o["monotone"]
                                                              for o in observers)),
                   fig2=dict(cfg=ex["fig2_adaptive"]["config"], rows=fig2["rows"],
                             exact=fig2["exact"] and dict(fig2["exact"], larger_at=_text.ranges(
                                 fig2["exact"]["larger_at"]))))
    blocks |= settings
    blocks["notes"] = dict(scale=scale, facebook="fig1_facebook" in ex)
    match, total = anchors.anchor_counts(ex["anchors"])
    a, ta = inputs.audit_check("DP gossip pair (worst pattern)"), inputs.audit_row(
        "gossip_thm4_counterexample")  # the comparisons printed, not assumed
    above = ta["epsilon_lb"] > ta["claimed"]["paper"]  # Thm. 4 fails: the exact view exceeds
    unsound = x4["exact_T3"] > x4["reduction_T3"] and x4["exact_T6"] > x4["reduction_T6"] and above
    return dict(
        blocks=blocks, anchors=dict(match=match, total=total, verdict=stats.exact(match == total)),
        thm3=dict(g=g, a=a, verdict=a["verdict"]),
        thm4=dict(t4=x4, t4c=inputs.exact["gossip_thm4_certified"], ta=ta,
                  cmp=">" if above else "<=", verdict=stats.exact(not unsound)),
        secure_sum=dict(g=g, verdict=stats.exact(g["fig2_T60_thm3_certified"] < g["fig2_T60_ldp"])),
        **{f"{name}_rows": [dict(c=c, above=c["kind"] == "above_ldp", scale=_text.prose(
            PAGE, f"scale_{name}", s=settings[name]["s"])) for c in settings[name]["claims"]]
           if name in settings else [] for name in FIG3S},
        **{name: settings[name]["s"] if name in settings else dict(points=0, n_seeds=0,
                                                                   n_methods=0) for name in FIG3S})


def exact_numbers() -> dict:
    """The exact-accounting numbers of the gossip pages (``exact_numbers.json``): the TM-1
    (:func:`anchors.oracle_numbers`) and Fig. 2 values of gossip.md, the Thm. 4 oracles of the
    sensitivity tests."""
    fig2 = json.loads((declare.DATA / EXACT).read_text())["fig2_adaptive"]["series"]
    values = anchors.oracle_numbers()
    values["tm1"] |= {"fig2_T60_" + k.replace("tm3", "thm3"): (
        fig2[k]["mean_eps"][fig2[k]["T"].index(60)], ".3f") for k in ("tm3_paper", "tm3_certified",
                                                                     "ldp")}
    out = {"gossip": dict(page="docs/reproduction/gossip.md",
                          command="python -m experiments.reproduce.gossip --scale cpu",
                          values=values["tm1"])}
    for group, key, test in (("gossip_thm4", "thm4", "oracles"),
                             ("gossip_thm4_certified", "thm4_certified", "soundness")):
        path = f"tests/sensitivity/{test}_test.py"  # the Thm. 4 oracles of the sensitivity tests
        out[group] = dict(page=path, command=f"pytest {path}", values=values[key])
    return out


def _claim(name: str, text: str, rule: declare.Rule, block: str, rows: str | None = None,
           figure: str | None = None) -> declare.Claim:
    """A claim whose summary row (block ``row_gossip_<block>``: Fig. 3's two settings share
    one) is filled from :func:`context`."""
    return declare.context_claim(context, PAGE, name, text, rule, f"row_gossip_{block}", rows,
                                 figure)


PAPER = declare.Paper(
    exact=exact_numbers,
    name="gossip", title="Gossip averaging DP (Koskela & Kulkarni 2025)", order=20,
    template=PAGE, link="link", scales=("smoke", "cpu"),
    figures=(declare.Figure("exact", "anchor tables, Fig. 1 left and Fig. 2 (exact accounting)",
                            exact_configs, (EXACT,), export=export_exact, plot=draw,
                            committed="cpu"),
             *(declare.Figure(name, f"Fig. 3 ({', '.join(variants.values())}): test accuracy "
                              "per method and ε, lr chosen on validation, over seeds",
                              lambda scale, file=file, variants=variants: config_lib.sweep_configs(
                                  CONFIGS / f"{file}.py", variants[scale],
                                  **FIG3_OVERRIDES.get(scale, {})),
                              (data,), export=export_fig3, plot=draw, metric="test accuracy",
                              committed=list(variants)[-1])
               for name, (data, _, file, variants) in FIG3S.items())),
    claims=(_claim("anchors", "Figs. 1-2 and long-horizon sensitivities (paper mode)",
                   declare.EXACT, "anchors", figure="exact"),
            _claim("thm3", "Thm. 3: the all-ones data difference is the worst case",
                   declare.EXACT, "thm3"),
            _claim("thm4", "Thm. 4: the plain-message view reduces to j's stream", declare.EXACT,
                   "thm4"),
            _claim("secure_sum", "secure summation (Thm. 3) lowers epsilon vs LDP", declare.EXACT,
                   "secure_sum", figure="exact"),
            _claim("fig3", "Fig. 3: gossip comparable to DP-FedAvg (and, our reading, Thm-3 "
                   "gossip above LDP), per ε", declare.PAIRED, "fig3", "fig3_rows", "fig3"),
            _claim("fig3full", "Fig. 3 at the paper's setting (50 rounds, 5 epsilons, 4 learning "
                   "rates), seeds varying data split and noise: gossip comparable to DP-FedAvg "
                   "and Thm-3 gossip above LDP, per ε", declare.PAIRED, "fig3", "fig3full_rows",
                   "fig3full")),
    pages=(declare.Page("docs/reproduction/gossip.md", (EXACT, *(
        d for d, *_ in FIG3S.values() if (declare.DATA / d).exists())),
        lambda inputs, text: "\n\n".join(  # the blocks filled from the context
            _text.prose(PAGE, b, **f) for b, f in context(inputs)["blocks"].items()) + "\n"),),
    remaining=tuple(declare.Remaining(item, block, declare.from_context(context, PAGE, block))
                    for item, block in (("b", "remaining_gossip"),
                                        ("b2", "remaining_gossip_full"))))

if __name__ == "__main__":  # the command the page names
    __import__("jaxfl.repro.cli", fromlist=["alias"]).alias("gossip")
