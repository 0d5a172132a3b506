"""Koskela & Kulkarni 2025, "Differential Privacy Analysis of Decentralized Gossip Averaging
under Varying Threat Models" (arXiv 2505.19969 v1), declared (:data:`PAPER`): figure ``exact``
-> ``gossip_exact.json`` (the spec's anchor tables 5.1, 5.3, 5.5 and the accounting-only studies
``configs/gossip/fig1_er.py``, ``fig2_adaptive.py``; Fig. 1 right where SNAP's file is present);
each setting of :data:`FIG3S` -> its per-seed CSV (``fig3``: the ``fig3_mnist.py`` cpu sweep with
a validation split, seeds varying the noise; ``fig3full``: ``fig3_mnist_full_seeds.py``, the
paper's 50 rounds and 5 x 4 grid, seeds varying the noise and the data split, learning rate
chosen on seed 0: per method and ε the learning rate with the best mean validation accuracy,
then its test accuracy; the paired tests of every setting Holm-corrected as one family, the
paper's: :func:`fig3_settings`). Wording:
``templates/gossip.md``.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from pathlib import Path

import numpy as np

from experiments import builders
from experiments import config as config_lib
from experiments.reproduce import _common as _runs
from experiments.reproduce import declare, stats
from experiments.reproduce.claims import NOT_RUN, Cmp, Paired, decide
from jaxfl import sweep, validate
from jaxfl.sensitivity.anchors import anchor_tables

CONFIGS = Path(__file__).resolve().parents[1] / "configs" / "gossip"
EXACT = "gossip_exact.json"
# A study's config variant per scale.
VARIANTS = {"fig1_er": {"smoke": "smoke", "cpu": "full", "full": "full"},
            "fig1_facebook": {"smoke": "smoke", "cpu": "full", "full": "full"},
            "fig2_adaptive": {"smoke": "smoke", "cpu": "cpu", "full": "full"}}
# The Fig. 3 settings, a figure each (a new one: an entry here and its block): name -> (data
# file, block of templates/gossip.md, PNG, config file under configs/gossip/, its variant per
# scale; the last one's config is the one the page describes) and its block of the summary's
# "scale, seeds" cell (SCALE_BLOCK).
FIG3S = {"fig3": ("gossip_fig3_seeds.csv", "fig3_seeds", "fig3_mnist_seeds.png", "fig3_mnist",
                  {"smoke": "smoke", "cpu": "cpu_val"}),
         "fig3full": ("gossip_fig3_full_seeds.csv", "fig3_full_seeds",
                      "fig3_mnist_full_seeds.png", "fig3_mnist_full_seeds",
                      {"smoke": "smoke", "cpu": "reduced"})}
SCALE_BLOCK = {"fig3": "gossip_scale", "fig3full": "gossip_scale_full"}
FIG3_OVERRIDES = {"smoke": {"val_size": 100}}  # the smoke grid has no validation split
SEED_FIELDS = dict(method=str, target_epsilon=float, learning_rate=float, seed=int, rounds=int,
                   val_size=int, noise_multiplier=float, val_accuracy=float, test_accuracy=float,
                   status=str)  # the per-seed CSVs' columns and types
_prose = functools.partial(_runs.prose, "gossip")  # a block of templates/gossip.md
COMPARABLE_MARGIN = 0.01  # "comparable": at most 1 point of test accuracy below DP-FedAvg

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


def anchors(scale: str) -> dict:
    """Our values for the spec's anchor tables (5.3 skipped at smoke scale):
    :func:`jaxfl.sensitivity.anchors.anchor_tables`."""
    return anchor_tables(SPEC_5_1["T"], None if scale == "smoke" else tuple(SPEC_5_3))


def fig1_result(cfg, summary: dict) -> dict:
    """Fig. 1 curves (Δ²/T per observer, both modes) from one study's privacy reports."""
    cur = {m: summary[key]["details"]["curve"] for m, key in
           (("paper", "privacy_paper"), ("certified", "privacy"))}
    det, k = summary["privacy"]["details"], cfg.observers_per_kind or 0
    curves = []
    for a, i in enumerate(det["observers"]):
        out = {"observer": i, "kind": "neighbour" if a < k else "non-neighbour",
               "T": cur["paper"]["T"]}
        for m in ("paper", "certified"):
            vals = np.asarray(cur[m]["delta_sq"], float)[:, a, 0] / np.asarray(cur[m]["T"], float)
            out[f"{m}_over_T"] = [None if not np.isfinite(v) else float(v) for v in vals]
            out[f"{m}_T"] = cur[m]["T"]
        curves.append(out)
    return {"config": dataclasses.asdict(cfg), "target": det["targets"][0], "curves": curves,
            "limit": 1.0 / (cfg.n - 1) if cfg.graph == "er" else None,
            "modes": ["paper", "certified"], "T_max": int(cur["paper"]["T"][-1])}


def fig2_result(runs) -> dict:
    """Fig. 2's mean pairwise ε per view and mode from the study sweep's privacy reports
    (``runs``: (config, run directory) pairs; the exact plain-message view at the certified
    horizons only)."""
    series = {}
    for _, run_dir in runs:
        s, _ = _runs.read_run(run_dir)
        view = s["privacy"]["details"]["view"]
        for key, mode in (("privacy_paper", "paper"), ("privacy", "certified")):
            if key in s:
                c = s[key]["details"]["curve"]
                series["ldp" if view == "ldp" else f"{view}_{mode}"] = {
                    "T": c["T"], "mean_eps": c["mean_epsilon"], "mode": mode,
                    "mean_delta_sq_over_T": [d / t for d, t in zip(c["mean_delta_sq"], c["T"],
                                                                   strict=True)]}
    if "tm4_exact_paper" in series:
        d, hs = series["tm4_exact_paper"], series["tm3_certified"]["T"]
        d["mean_eps"], d["T"] = [d["mean_eps"][d["T"].index(h)] for h in hs], hs
    return {"config": dataclasses.asdict(runs[0][0]), "series": series}


def _sweep(name: str, scale: str, **overrides) -> list:
    """The configs of the study (or Fig. 3 setting) ``name``'s sweep at ``scale``."""
    file, variant = (FIG3S[name][3], FIG3S[name][4][scale]) if name in FIG3S else (
        name, VARIANTS[name][scale])
    module = config_lib.load_module(f"{CONFIGS / file}.py")
    base = dataclasses.replace(module.get_config(f"variant={variant}"), **overrides)
    return [p.config for p in sweep.expand(base, module.get_sweep(f"variant={variant}"))]


def _available(cfg) -> bool:
    """Whether a study's data is there (Fig. 1 right: SNAP's file is not shipped)."""
    try:
        builders.run_spec(cfg)
    except validate.DataNotFoundError as err:
        print(f"[gossip] {cfg.name} skipped: {err}", flush=True)
        return False
    return True


def exact_configs(scale: str) -> list:
    """Fig. 1 left (and right, where its data is), then Fig. 2's sweep: one study each."""
    fig1 = [c for n in ("fig1_er", "fig1_facebook") for c in (config_lib.load_config(
        f"{CONFIGS / n}.py:variant={VARIANTS[n][scale]}"),) if _available(c)]
    return fig1 + _sweep("fig2_adaptive", scale)


def export_exact(run: declare.Run) -> None:
    """``gossip_exact.json``: the anchors and the Fig. 1 / Fig. 2 results of the studies' logs."""
    out = {"_provenance": f"Written by `python -m experiments.reproduce gossip --figure exact "
           f"--scale {run.scale}` (exact accounting, no training): the spec's anchor tables "
           "(ours), Fig. 1 left's curves and Fig. 2's series.", "provenance": _runs.provenance(),
           "scale": run.scale, "anchors": anchors(run.scale)}
    fig2 = []
    for cfg, run_dir in zip(run.configs, run.dirs, strict=True):
        if cfg.name.startswith("fig1"):
            out[cfg.name.removesuffix("_smoke")] = fig1_result(cfg, _runs.read_run(run_dir)[0])
        else:
            fig2.append((cfg, run_dir))
    out["fig2_adaptive"] = fig2_result(fig2)
    run.data.mkdir(parents=True, exist_ok=True)
    (run.data / EXACT).write_text(json.dumps(out, indent=1) + "\n")


def export_fig3(run: declare.Run) -> list[dict]:
    """The setting's CSV: final validation / test accuracy per point of the sweep."""
    return _runs.export_runs(run, lambda c, _, recs: {
        "method": c.method, "target_epsilon": c.target_epsilon, "learning_rate": c.learning_rate,
        "seed": c.seed, "rounds": c.rounds, "val_size": c.val_size, "status": "ok", **{
            k: recs[-1][k] for k in ("noise_multiplier", "val_accuracy", "test_accuracy")}},
        run.data / FIG3S[run.figure.name][0], SEED_FIELDS)


def read_fig3(path) -> list[dict]:
    return [r for r in _runs.read_rows(path, SEED_FIELDS) if r["status"] == "ok"]


def select_fig3(rows: list[dict]) -> dict:
    """{(method, ε): cell}: the learning rate with the best mean *validation* accuracy over the
    seeds every learning rate of the cell ran (all seeds of a full grid; seed 0 of the
    two-stage ``reduced`` grid, whose other seeds ran the chosen rate only), then the test
    accuracy (mean, 95% t-interval) of that learning rate's seeds (``select_seeds``: the seeds
    the choice read)."""
    cells = {}
    for key, rs in _runs.group(rows, lambda r: (r["method"], r["target_epsilon"])).items():
        by_lr = _runs.group(rs, "learning_rate")
        common = set.intersection(*({r["seed"] for r in rs} for rs in by_lr.values()))
        lr = max(by_lr, key=lambda v: np.mean([r["val_accuracy"] for r in by_lr[v]
                                               if r["seed"] in common]))
        rs = by_lr[lr]
        cells[key] = {"lr": lr, "test_s": {r["seed"]: r["test_accuracy"] for r in rs},
                      "test": stats.interval([r["test_accuracy"] for r in rs]),
                      "sigma": rs[0]["noise_multiplier"], "lrs": sorted(by_lr, reverse=True),
                      "select_seeds": sorted(common)}
    return cells


# Sec. 4, Fig. 3's claims, per ε and Thm-3 gossip variant (:data:`GOSSIP`): (kind, the other
# method, margin, claim): utility "comparable to" DP-FedAvg at comparable ε (non-inferiority of
# DP-FedAvg - gossip against COMPARABLE_MARGIN) and the summary's reading that Thm-3 gossip
# beats LDP (gossip - LDP against 0); decided by :func:`experiments.reproduce.claims.decide`.
GOSSIP = ("gossip_ss_thm3_certified", "gossip_ss_thm3_paper")
FIG3_CLAIMS = (("ldp", "gossip_ldp", None, "{g} above LDP"),
               ("fedavg", "fedavg", COMPARABLE_MARGIN, "{g} comparable to DP-FedAvg (not below "
                f"it by more than {COMPARABLE_MARGIN * 100:g} point)"))


def fig3_family(settings: dict) -> dict:
    """{setting: its claims}: :data:`FIG3_CLAIMS` of every Fig. 3 setting in ``settings``
    ({setting: cells of :func:`select_fig3`}), those whose cells ran, Holm-corrected as ONE
    family (the declared rule: Holm per paper; the paper's other claims are exact)."""
    decl = [Paired(f"ε={eps:g}: " + text.format(g=g), (Cmp(
        (name, g, eps), (name, other, eps), margin),), dict(setting=name, method=g, eps=eps,
                                                           kind=kind))
            for name, cells in settings.items() for eps in sorted({e for _, e in cells})
            for g in GOSSIP for kind, other, margin, text in FIG3_CLAIMS]
    out = {name: [] for name in settings}
    for r in decide(decl, lambda k: (settings[k[0]].get(k[1:]) or {}).get("test_s")):
        if r["verdict"] != NOT_RUN:
            p = r["parts"][0]
            out[r["setting"]].append(dict(r, paired=p["d"], detail=f"{stats.fmt(p['a'], 4)} vs "
                                          f"{'LDP' if r['kind'] == 'ldp' else 'FedAvg'} "
                                          f"{stats.fmt(p['b'], 4)}"))
    return out


def fig3_settings(data_dir) -> dict:
    """{setting: (rows, cells, claims)} for every Fig. 3 setting of :data:`FIG3S` whose CSV is
    in ``data_dir``, its claims those of the paper's one family (:func:`fig3_family`)."""
    rows = {name: read_fig3(Path(data_dir) / d) for name, (d, *_) in FIG3S.items()
            if (Path(data_dir) / d).exists()}
    cells = {name: select_fig3(r) for name, r in rows.items()}
    claims = fig3_family(cells)
    return {name: (rows[name], cells[name], claims[name]) for name in rows}


def draw(run: declare.Run) -> None:
    """The page's figures from the data files a run wrote (those that exist)."""
    exact = run.data / EXACT
    plot(json.loads(exact.read_text()) if exact.exists() else {}, {}, run.figures)
    for data, _, png, *_ in FIG3S.values():
        if (run.data / data).exists():
            plot({}, select_fig3(read_fig3(run.data / data)), run.figures, png)


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
            xticklabels=[f"{e:g}" for e in ticks], lines=[  # side by side (x shifted by 4%)
                dict(x=np.array(eps) * (1 + 0.04 * (j - 1)), y=[v["mean"] for v in iv],
                     yerr=_runs.yerr(iv), marker="o", capsize=3, label=name)
                for j, name in enumerate(names)
                for eps in [sorted(e for mm, e in cells if mm == name)] if eps
                for iv in [[cells[(name, e)]["test"] for e in eps]]])
            for m, names in zip(modes, (
                ("gossip_ss_thm3_paper", "gossip_p_thm4_paper", "fedavg"),
                ("gossip_ss_thm3_certified", "gossip_ldp", "fedavg")), strict=True)]))
    for name, size, ylabel, panels in figs:  # two panels sharing y
        _runs.plot(fig_dir / name, [dict(p, size=size, grid=True, legend=7, **(
            {"ylabel": ylabel} if k == 0 else {})) for k, p in enumerate(panels)],
            cell=(4.5, 3.4), sharey=True)


def _rows(rows) -> str:
    """Markdown table lines (the header is the template's)."""
    return "\n".join(_runs.row(r) for r in rows)


def _sig4(x) -> str:
    return "0" if x == 0 else f"{x:.4g}"


def _pair(spec: float, ours: float) -> str:
    """``spec / ours`` with ours printed to the spec's number of decimals (at least 4)."""
    text = repr(float(spec))
    dec = max(len(text.split(".")[1]) if "." in text else 0, 4)
    return f"{spec:.{dec}f} / {ours:.{dec}f}"


def _graph(cfg: dict) -> str:
    """A config's graph and mixing matrix: "ER(100, 0.2, seed 1), maxdeg W"."""
    return f"ER({cfg['n']}, {cfg['p']}, seed {cfg['graph_seed']}), {cfg['mixing']} W"


def _ranges(ts: list[int]) -> str:
    """[1, 2, 3, 7] -> "1-3, 7"."""
    out, start = [], None
    for k, t in enumerate(ts):
        start = t if start is None else start
        if k + 1 == len(ts) or ts[k + 1] != t + 1:
            out.append(f"{start}" if start == t else f"{start}-{t}")
            start = None
    return ", ".join(out) or "none"


def _spec_pairs(anch: dict):
    """(table, key, spec values, ours) of the anchor tables 5.3 (where computed) and 5.5."""
    return [(table, key, ref, anch[table][str(key) if table == "5.3" else f"{key[0]},{key[1]}"])
            for table, spec in (("5.3", SPEC_5_3), ("5.5", SPEC_5_5)) if table in anch
            for key, ref in spec.items()]


def _fig1(res: dict) -> str:
    """Fig. 1's section, its reading decided on the curves: per observer (paper mode) the side
    of the limit 1/(n-1) it stays on, whether it is monotone towards it, its last value; and
    the horizons where the certified bound lies above the paper's."""
    yes, checks, above, texts = {True: "yes", False: "no"}, [], [], []
    for c in res["curves"]:
        paper, sign = [v for v in c["paper_over_T"] if v is not None], (
            -1 if c["kind"] == "neighbour" else 1)
        cert = dict(zip(c.get("certified_T", c["T"]), c["certified_over_T"], strict=True))
        side = all(sign * (res["limit"] - v) >= 0 for v in paper)
        mono = all(sign * (b - a) >= -1e-12 for a, b in zip(paper, paper[1:]))
        checks.append(side and mono)
        above.append(f"{c['kind']} i={c['observer']}: T = " + _ranges(
            [T for T, v in zip(c.get("paper_T", c["T"]), c["paper_over_T"], strict=True)
             if v is not None and cert.get(T) is not None and cert[T] > v * (1 + 1e-9)]))
        texts.append(_prose("fig1_observer", kind=c["kind"], observer=c["observer"],
                           side="above" if sign < 0 else "below", on_side=yes[side],
                           monotone=yes[mono], last=f"{paper[-1]:.5f}",
                           T_last=c["T"][len(paper) - 1]))
    return _prose("fig1", graph=_graph(res["config"]), T=res["config"]["T"],
                  figure="../figures/gossip/fig1_er.png", limit=f"{res['limit']:.5f}",
                  matches="matches" if all(checks) else "does not match",
                  observers="; ".join(texts),
                  certified_above="; ".join(above))


def _fig2(res: dict) -> str:
    """Fig. 2's section: the mean pairwise ε per view and mode; the Thm-4 note decided on the
    series (the exact plain-message view against the paper's reduction where both ran)."""
    s, cfg = res["series"], res["config"]
    rows = []
    for k, T in enumerate(s["tm3_certified"]["T"]):
        i = s["tm3_paper"]["T"].index(T)
        rows.append([T, *(_sig4(s[key]["mean_eps"][j]) for key, j in (
            ("tm3_paper", i), ("tm3_certified", k), ("tm4_paper", i), ("tm4_certified", k))),
            _sig4(s["ldp"]["mean_eps"][i]) if "ldp" in s else "-"])
    exact = {}
    if "tm4_exact_paper" in s:
        ex, red = ({T: e for T, e in zip(s[k]["T"], s[k]["mean_eps"], strict=True)}
                   for k in ("tm4_exact_paper", "tm4_paper"))
        common = [T for T in ex if T in red]
        more = [T for T in common if ex[T] > red[T]]
        exact = dict(larger_at=_ranges(more) if more else "", horizons=len(common), last=", ".join(
            f"T = {T}: {_sig4(ex[T])} vs {_sig4(red[T])}" for T in common[-2:]))
    return _prose("fig2", graph=_graph(cfg), sigma=f"{cfg['noise_multiplier']:g}",
                  figure="../figures/gossip/fig2_adaptive.png", exact=exact, rows=_rows(rows))


def _fig3(name: str, rows: list[dict], cells: dict, claims: list[dict], scale: str,
          family: int) -> str:
    """The page's block of the Fig. 3 setting ``name`` from its per-seed rows, cells and
    claims (of :func:`fig3_settings`; ``family``: the paper's Holm family's size; its config:
    the variant of the page's ``scale``, else the setting's last)."""
    data, block, png, file, variants = FIG3S[name]
    r0 = rows[0]
    eps = sorted({e for _, e in cells})
    variant = variants.get(scale, list(variants.values())[-1])
    cfg = config_lib.load_config(f"{CONFIGS / file}.py:variant={variant}")
    val = r0["val_size"]
    extra = dict(family=family, settings=len(claims)) if name == "fig3" else dict(
        data=f"docs/reproduction/data/{data}", points=len(rows), comparisons=len(claims),
        family=family,
        select_seeds=", ".join(str(s) for s in sorted({s for c in cells.values()
                                                           for s in c["select_seeds"]})),
        methods=", ".join(dict.fromkeys(m for m, _ in cells)),
        verdicts=", ".join(f"{sum(c['verdict'] == v for c in claims)} {v}" for v in (
            stats.HOLDS, stats.FAILS) if any(c["verdict"] == v for c in claims)) or "none",
        inconclusive=sum(c["verdict"] not in (stats.HOLDS, stats.FAILS) for c in claims))
    return _prose(
        block, **extra, n=cfg.n, graph=_graph(dataclasses.asdict(cfg)), variant=variant,
        figure=f"../figures/gossip/{png}", rounds=r0["rounds"],
        clip_norm=f"{cfg.clip_norm:g}", normalizer=f"{cfg.normalizer:g}", val_size=val,
        per_node=(cfg.n * cfg.per_node - val) // cfg.n, seeds=sorted({r["seed"] for r in rows}),
        learning_rates=cells[next(iter(cells))]["lrs"], margin=f"{COMPARABLE_MARGIN * 100:g}",
        table="\n".join(_runs.table(("method", *(f"ε={e:g}" for e in eps)), [
            (m, *("-" if c is None else f"{stats.fmt(c['test'], 4)} (n={c['test']['n']}, lr "
                  f"{c['lr']:g}, σ={c['sigma']:.3g})" for c in (cells.get((m, e)) for e in eps)))
            for m in dict.fromkeys(m for m, _ in cells)])),
        claim_rows=_rows((c["claim"], c["verdict"], c["interval_verdict"], c["detail"],
                          stats.fmt_paired(c["paired"], 100, 2)) for c in claims))


def render(data_dir) -> str:
    """The page from ``gossip_exact.json`` and the Fig. 3 CSVs in ``data_dir``."""
    data_dir = Path(data_dir)
    ex = json.loads((data_dir / EXACT).read_text())
    fig3 = fig3_settings(data_dir)
    family = sum(len(claims) for *_, claims in fig3.values())
    anch, rg = ex["anchors"], ex["anchors"]["5.1_rigorous"]
    pairs = {t: [(*((key,) if t == "5.3" else key), *(_pair(a, b) for a, b in zip(
        ref, ours, strict=True))) for tt, key, ref, ours in _spec_pairs(anch) if tt == t]
        for t in ("5.3", "5.5")}
    blocks = [_prose("header", scale=ex["scale"], exact=f"docs/reproduction/data/{EXACT}",
                     data=f"docs/reproduction/data/{FIG3S['fig3'][0]}"),
              _prose("anchors", rows=_rows(
                  (f"{key}, {who}", *(f"{v:.5f}" for v in vals))
                  for key in ("neighbour (i=1)", "non-nbr (i=0)")
                  for who, vals in (("spec", SPEC_5_1[key]), ("ours", anch["5.1"][key]))),
                  rigorous_rows=_rows((T, *(_sig4(rg[c][k]) for c in (
                      "paper", "sign_exact", "abs_sum", "T_lambda_max", "certified")))
                      for k, T in enumerate(rg["T"]))),
              *(_prose(block, rows=_rows(pairs[t])) for t, block in (
                  ("5.3", "anchors_5_3"), ("5.5", "anchors_5_5")) if pairs[t]),
              _fig1(ex["fig1_er"]), _fig2(ex["fig2_adaptive"]),
              *(_fig3(n, *setting, ex["scale"], family) for n, setting in fig3.items()),
              _prose("notes", scale=ex["scale"], facebook="fig1_facebook" in ex)]
    return "\n\n".join(blocks) + "\n"


def anchor_counts(anch: dict) -> tuple[int, int]:
    """(matching, total) spec-vs-ours anchor cells of tables 5.1, 5.3 and 5.5, compared at
    the digits the page prints."""
    pairs = [(f"{a:.5f}", f"{b:.5f}") for key in ("neighbour (i=1)", "non-nbr (i=0)")
             for a, b in zip(SPEC_5_1[key], anch["5.1"][key], strict=True)]
    pairs += [tuple(_pair(a, b).split(" / ")) for _, _, ref, ours in _spec_pairs(anch)
              for a, b in zip(ref, ours, strict=True)]
    return sum(float(a) == float(b) for a, b in pairs), len(pairs)


def _anchors_row(i: declare.Inputs) -> dict:
    match, total = anchor_counts(i.json(EXACT)["anchors"])
    return dict(match=match, total=total, verdict=stats.exact(match == total))


def _thm3_row(i: declare.Inputs) -> dict:
    a = i.audit_check("DP gossip pair (worst pattern)")  # the comparison printed, not assumed
    return dict(g=i.exact["gossip"], a=a, verdict=a["verdict"])


def _thm4_row(i: declare.Inputs) -> dict:
    t4, t4c = i.exact["gossip_thm4"], i.exact["gossip_thm4_certified"]
    ta = i.audit_row("gossip_thm4_counterexample")
    above = ta["epsilon_lb"] > ta["claimed"]["paper"]
    unsound = t4["exact_T3"] > t4["reduction_T3"] and t4["exact_T6"] > t4["reduction_T6"] and above
    return dict(t4=t4, t4c=t4c, attack_t=ta["info"]["T"], trials=ta["trials"],
                lb=ta["epsilon_lb"], paper=ta["claimed"]["paper"], cp=ta["info"]["cp_bound"],
                cmp=">" if above else "<=", verdict=stats.exact(not unsound))


def _secure_sum_row(i: declare.Inputs) -> dict:
    g = i.exact["gossip"]
    return dict(g=g, verdict=stats.exact(g["fig2_T60_thm3_certified"] < g["fig2_T60_ldp"]))


def _fig3_rows(i: declare.Inputs, name: str = "fig3") -> list[dict]:
    """One row per Fig. 3 claim of the setting ``name`` (none without its data), in its
    order, Holm-corrected over the paper's family (:func:`fig3_settings`): "above LDP"
    (``row_gossip_above_ldp``) and "comparable" (the claim's row)."""
    out = []
    fig3 = fig3_settings(i.data)
    if name in fig3:
        rows, cells, claims = fig3[name]
        scale = _prose(SCALE_BLOCK[name], rounds=rows[0]["rounds"],
                       val_size=rows[0]["val_size"],
                       seeds=sorted({r["seed"] for r in rows}), **({} if name == "fig3" else {
                           "select_seeds": ", ".join(str(s) for s in sorted({
                               s for c in cells.values() for s in c["select_seeds"]}))}))
        for c in claims:
            row = dict(eps=f"{c['eps']:g}", method=c["method"], scale=scale, verdict=c["verdict"],
                       ours=stats.fmt(cells[(c["method"], c["eps"])]["test"], 4),
                       paired=stats.fmt_paired(c["paired"], 100, 2))
            other = cells[("gossip_ldp" if c["kind"] == "ldp" else "fedavg", c["eps"])]
            out.append(dict(row, row="row_gossip_above_ldp", interval_verdict=c[
                "interval_verdict"], ldp=stats.fmt(other["test"], 4)) if c["kind"] == "ldp"
                else dict(row, margin=f"{COMPARABLE_MARGIN * 100:g}",
                          fedavg=stats.fmt(other["test"], 4)))
    return out


def _remaining(i: declare.Inputs) -> dict:
    rows = read_fig3(i.data / FIG3S["fig3"][0])
    return dict(gossip_points=len(rows), gossip_seeds=len({r["seed"] for r in rows}))


def _remaining_full(i: declare.Inputs) -> dict:
    """The full-setting row: the points that ran (of the 500 of the full grid), its seeds and
    the learning rates not run at seeds > 0."""
    path = i.data / FIG3S["fig3full"][0]
    rows = read_fig3(path) if path.exists() else []
    return dict(points=len(rows), seeds=len({r["seed"] for r in rows}),
                methods=len({r["method"] for r in rows}))


C = declare.Claim
PAPER = declare.Paper(
    name="gossip", title="Gossip averaging DP (Koskela & Kulkarni 2025)", order=20,
    template="gossip", link="link", scales=("smoke", "cpu"),
    figures=(declare.Figure("exact", "anchor tables, Fig. 1 left and Fig. 2 (exact accounting)",
                            exact_configs, (EXACT,), export=export_exact, plot=draw,
                            committed="cpu"),
             *(declare.Figure(name, f"Fig. 3 ({', '.join(variants.values())}): test accuracy "
                              "per method and ε, lr chosen on validation, over seeds",
                              lambda scale, name=name: _sweep(name, scale,
                                                              **FIG3_OVERRIDES.get(scale, {})),
                              (data,), export=export_fig3, plot=draw, metric="test accuracy",
                              committed=list(variants)[-1])
               for name, (data, *_, variants) in FIG3S.items())),
    claims=(C("anchors", "Figs. 1-2 and long-horizon sensitivities (paper mode)", declare.EXACT,
              "row_gossip_anchors", _anchors_row, "exact"),
            C("thm3", "Thm. 3: the all-ones data difference is the worst case", declare.EXACT,
              "row_gossip_thm3", _thm3_row),
            C("thm4", "Thm. 4: the plain-message view reduces to j's stream", declare.EXACT,
              "row_gossip_thm4", _thm4_row),
            C("secure_sum", "secure summation (Thm. 3) lowers epsilon vs LDP", declare.EXACT,
              "row_gossip_secure_sum", _secure_sum_row, "exact"),
            C("fig3", "Fig. 3: gossip comparable to DP-FedAvg (and, our reading, Thm-3 gossip "
              "above LDP), per ε", declare.PAIRED, "row_gossip_comparable", _fig3_rows, "fig3"),
            C("fig3full", "Fig. 3 at the paper's setting (50 rounds, 5 epsilons, 4 learning "
              "rates), seeds varying data split and noise: gossip comparable to DP-FedAvg and "
              "Thm-3 gossip above LDP, per ε", declare.PAIRED, "row_gossip_comparable",
              lambda i: _fig3_rows(i, "fig3full"), "fig3full")),
    pages=(declare.Page("docs/reproduction/gossip.md", (EXACT, *(
        d for d, *_ in FIG3S.values() if (declare.DATA / d).exists())),
        lambda inputs, text: render(inputs.data)),),
    remaining=(declare.Remaining("b", "remaining_gossip", _remaining),
               declare.Remaining("b2", "remaining_gossip_full", _remaining_full)))

if __name__ == "__main__":  # the command the page names
    __import__("experiments.reproduce.__main__", fromlist=["alias"]).alias("gossip")
