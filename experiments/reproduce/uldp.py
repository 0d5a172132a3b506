"""ULDP-FL (Kato et al., PVLDB 2024), declared (:data:`PAPER`): figure ``privacy`` (exact
tables: the ULDP epsilon curve, user-level sub-sampling, Fig. 2's group conversions, the
ULDP-GROUP table with the authors' allocation; each beside the spec's value) ->
``uldp_privacy_tables.json``; one figure per panel of Figs. 6-7 (``fig6_heart_50_zipf`` ...):
nine methods x seeds as one sweep -> ``uldp_<panel>_seeds.csv`` (:func:`export`). Scales:
``smoke`` (2 rounds), ``cpu`` (seed 0), ``full`` (the paper's setting, seeds 0, 1, 3, 6, 10).
Claims per panel: :func:`seed_claims` (Holm-corrected paired tests). Wording:
``templates/uldp.md``.
"""

from __future__ import annotations

import functools
import json
import math
from pathlib import Path

import numpy as np

from experiments import builders
from experiments import config as config_lib
from experiments.configs.uldp._common import METHODS
from experiments.configs.uldp._common import PAPER_SEEDS as SEEDS
from experiments.reproduce import _common as _runs
from experiments.reproduce import declare, stats
from experiments.reproduce.claims import Cmp, Paired, decide
from jaxfl import metrics
from jaxfl.accounting import uldp as acc
from jaxfl.tasks import silos
from jaxfl.validate import JaxflValueError

MOG_KS = {"smoke": (1, 2), "cpu": (1, 2, 4, 8, 16, 32), "full": (1, 2, 4, 8, 16, 32, 64)}
# Sec. 5.2 puts GROUP at eps "of order 1e2 to 1e6" (no printed range): every GROUP eps's nearest
# power of ten (log10 rounded) in 2..6, covering the reference table (87 to 1.37e6), and at
# least GROUP_FAR_ABOVE x AVG's largest.
GROUP_EPS_ORDERS, GROUP_FAR_ABOVE = (2, 6), 10.0
LETTERS = {(50, "uniform"): "a", (50, "zipf"): "b", (200, "uniform"): "c", (200, "zipf"): "d"}
PANELS = {f"{fig}_{u}_{d}": (fig, u, d) for fig in ("fig6_heart", "fig7_tcga") for u, d in LETTERS}
SCALES = {"smoke": ("smoke", (0,)), "cpu": ("cpu", (0,)), "full": ("full", SEEDS)}
PRIVACY, BENCH = "uldp_privacy_tables.json", "uldp_bench.json"
# Fig. 5 (a) at the paper's scale on a GPU (experiments/gpu_session.sh part C): per-round rows
GPU5 = "uldp_fig5_mnist_100_uniform_gpu_partial.csv"
GPU5_ROUNDS = (1, 10, 25, 50)  # and the last round every seed reached
GPU5_FIELDS = dict(seed=int, round=int, rounds_planned=int, test_accuracy=float, epsilon=float,
                   delta=float)
# eps_paper_recipe: the paper's recipe on the run's own bounded silo sizes (GROUP: per-user
# flags, not the authors' round-robin ones, whose numbers are in uldp_privacy_tables.json).
_fmt = functools.partial(_runs.num, nd=4, big_nd=3)
SEED_FIELDS = dict(figure=str, dataset=str, num_users=int, distribution=str, method=str, seed=int,
                   rounds=int, local_epochs=int, metric=str, final=float, mean_over_rounds=float,
                   eps_paper_recipe=float, eps_sound=float, status=str)


def data_file(figure: str) -> str:
    return PRIVACY if figure == "privacy" else f"uldp_{figure}_seeds.csv"


def privacy_tables(scale: str) -> dict:
    """The privacy figure's tables: :func:`jaxfl.accounting.uldp.paper_tables` (the timed
    mixture-of-Gaussians PLD at the scale's k) and :func:`~jaxfl.accounting.uldp.group_table`
    on the authors' allocation (:func:`jaxfl.tasks.silos.bounded_silo_sizes`)."""
    def allocate(ds, users, dist, seed, method):
        return silos.bounded_silo_sizes("heart_disease" if ds == "heart" else "tcga_brca",
                                        num_users=users, distribution=dist, seed=seed,
                                        group=method)

    return {**acc.paper_tables(mog_group_sizes=MOG_KS[scale]),
            "group": acc.group_table(allocate, SEEDS if scale != "smoke" else (10,))}


def panel_configs(panel: str, scale: str) -> list:
    """The panel's points: every method x seed of the scale, as configs."""
    fig, users, dist = PANELS[panel]
    variant, seeds = SCALES[scale]
    return [config_lib.load_config(f"experiments/configs/uldp/{fig}.py:variant={variant},"
                                   f"num_users={users},distribution={dist},method={m},seed={s}")
            for m in METHODS for s in seeds]


def _refused(cfg) -> str | None:
    """The builder's refusal of ``cfg`` (GROUP flags that leave a silo empty), else None."""
    try:
        builders.run_spec(cfg)
    except JaxflValueError as err:
        return str(err)
    return None


def export(configs, sweep_dirs, out: Path) -> list[dict]:
    """One CSV row per config with its final metrics, read from the first of ``sweep_dirs``
    where it finished; else ``aborted: ...`` (the builder refuses it) or ``missing``."""
    rows = []
    for c in configs:
        metric = {"tcga_brca": "test_c_index", "creditcard": "test_auc_hard"}.get(
            c.dataset, "test_accuracy")
        row = {"figure": c.name.removeprefix("uldp_"), "dataset": c.dataset,
               "num_users": c.num_users, "distribution": c.distribution, "method": c.method,
               "seed": c.seed, "rounds": c.rounds, "local_epochs": c.local_epochs,
               "metric": metric}
        run_dir = _runs.finished_run(sweep_dirs, metrics.config_hash(c))
        if run_dir is None:
            refused = _refused(c)
            rows.append({**row, "status": f"aborted: {refused}" if refused else "missing"})
            continue
        summary, recs = _runs.read_run(run_dir)
        curve = [r[metric] for r in recs if metric in r]
        rows.append({**row, "final": curve[-1], "mean_over_rounds": float(np.mean(curve)),
                     "eps_paper_recipe": float(summary.get("privacy_paper",
                                                           summary["privacy"])["epsilon"]),
                     "eps_sound": float(summary["privacy"]["epsilon"]), "status": "ok"})
    return _runs.write_rows(out, rows, SEED_FIELDS)


def _export(run: declare.Run) -> None:
    run.data.mkdir(parents=True, exist_ok=True)
    if run.figure.name == "privacy":
        (run.data / PRIVACY).write_text(json.dumps(privacy_tables(run.scale), indent=2))
    else:  # every method x seed of the scale, the refused ones as aborted
        export(panel_configs(run.figure.name, run.scale), [run.workdir],
               run.data / data_file(run.figure.name))


def seed_cells(rows: list[dict]) -> dict:
    """method -> {final, mean: intervals; final_s, mean_s: seed -> value; eps lists; aborted
    and missing seeds}."""
    cells = {}
    for m, rs in _runs.group(rows, "method").items():
        ok, bad = ([r for r in rs if (r["status"] == "ok") == want] for want in (True, False))
        cells[m] = c = {k: [r[k] for r in ok] for k in ("eps_paper_recipe", "eps_sound")} | {
            "aborted": [r["seed"] for r in bad if r["status"].startswith("aborted")],
            "missing": [r["seed"] for r in bad if not r["status"].startswith("aborted")],
            "final_s": {r["seed"]: r["final"] for r in ok},
            "mean_s": {r["seed"]: r["mean_over_rounds"] for r in ok}}
        c["final"], c["mean"] = (stats.interval(c[f"{k}_s"].values()) for k in ("final", "mean"))
    return cells


# Sec. 5.2's orderings: (claim, claimed-larger, other, key); "best AVG": the higher-final AVG.
ORDERINGS = (("AVG-w converges faster than AVG (mean metric over rounds)", "ULDP-AVG-w",
              "ULDP-AVG", "mean"),
             ("SGD is slower than AVG (mean metric over rounds)", "ULDP-AVG", "ULDP-SGD", "mean"),
             ("NAIVE has much lower utility than AVG (final)", "ULDP-AVG", "ULDP-NAIVE", "final"),
             ("a gap to DEFAULT remains (final, vs the better AVG)", "DEFAULT", "best AVG",
              "final"))


def seed_claims(figure: str, cells: dict) -> list[Paired | dict]:
    """One panel's claims: the :data:`ORDERINGS` whose cells ran, declared for
    :func:`experiments.reproduce.claims.decide` (cell keys ``(figure, method, key)``), and the
    GROUP epsilon rule decided (exact)."""
    def have(m):
        return m in cells and cells[m]["final"]["n"]

    avgs = [m for m in ("ULDP-AVG", "ULDP-AVG-w") if have(m)]
    best = max(avgs, key=lambda m: cells[m]["final"]["mean"]) if avgs else None
    out = [Paired(text, (Cmp((figure, a, key), (figure, b, key)),), {"figure": figure})
           for text, a, b, key in ORDERINGS for b in [best if b == "best AVG" else b]
           if b and have(a) and have(b)]
    groups = [m for m in cells if m.startswith("ULDP-GROUP") and cells[m]["eps_paper_recipe"]]
    if groups and have("ULDP-AVG"):
        lo = min(min(cells[m]["eps_paper_recipe"]) for m in groups)
        hi = max(max(cells[m]["eps_paper_recipe"]) for m in groups)
        avg = max(cells["ULDP-AVG"]["eps_paper_recipe"])
        o_lo, o_hi = GROUP_EPS_ORDERS
        holds = (o_lo <= round(math.log10(lo)) and round(math.log10(hi)) <= o_hi
                 and lo >= GROUP_FAR_ABOVE * avg)
        out.append({"figure": figure, "claim": _runs.prose(
            "uldp", "group_claim", lo=o_lo, hi=o_hi, far=f"{GROUP_FAR_ABOVE:g}"),
            "verdict": stats.exact(holds), "paired": None, "ratio": lo / avg,
            "detail": _runs.prose("uldp", "group_detail", lo=f"{lo:.4g}", hi=f"{hi:.4g}",
                                  avg=f"{avg:.4g}", ratio=f"{lo / avg:.0f}")})
    return out


def seed_results(data_dir: Path) -> tuple[dict, list[dict]]:
    """``(panels, claims)`` of the per-seed CSVs in ``data_dir``: panel -> (rows,
    :func:`seed_cells`) in the paper's order, and every panel's claims (:func:`seed_claims`),
    the paired ones decided as one Holm family (one seed: "not tested"; the interval rule
    kept as ``interval_verdict``)."""
    panels = {}
    for name in PANELS:
        if (path := Path(data_dir) / data_file(name)).exists() and (rows := _runs.read_rows(
                path, types=SEED_FIELDS)):
            panels[name] = (rows, seed_cells(rows))
    claims = [c for name, (_, cells) in panels.items() for c in seed_claims(name, cells)]
    tested = iter(decide([c for c in claims if isinstance(c, Paired)],
                         lambda k: panels[k[0]][1][k[1]][f"{k[2]}_s"], one_seed=stats.ONE_SEED))
    return panels, [c if isinstance(c, dict) else {**(r := next(tested)), "paired": (
        p := r["parts"][0])["d"], "detail": f"{p['cmp'].a[1]} {stats.fmt(p['a'])} vs "
        f"{p['cmp'].b[1]} {stats.fmt(p['b'])}"} for c in claims]


def gpu5_rows(data_dir: Path) -> list[dict]:
    """The GPU Fig. 5 rows (``GPU5``) with their provenance, typed; [] where not committed."""
    path = Path(data_dir) / GPU5
    return _runs.read_rows(path, GPU5_FIELDS, provenance=True) if path.exists() else []


def gpu5_table(rows: list[dict]) -> list[dict]:
    """Test accuracy over seeds (95% t-interval) and the epsilon at :data:`GPU5_ROUNDS` and
    the last round every seed reached; the epsilon is one number per round (the same
    mechanism in every seed), which this checks."""
    seeds = sorted({r["seed"] for r in rows})
    last = min(max(r["round"] for r in rows if r["seed"] == s) for s in seeds)
    out = []
    for t in sorted({*(t for t in GPU5_ROUNDS if t <= last), last}):
        at = [r for r in rows if r["round"] == t]
        eps = {round(r["epsilon"], 9) for r in at}
        if len(eps) != 1:
            raise JaxflValueError(f"{GPU5}: seeds disagree on epsilon at round {t}: {eps}")
        out.append(dict(round=t, n=len(at), eps=eps.pop(),
                        acc=stats.fmt(stats.interval([r["test_accuracy"] for r in at]))))
    return out


def draw(run: declare.Run) -> None:
    """Fig. 2 (group conversions, where its data is) and one PNG per panel (final and
    mean-over-rounds metric per method, 95% t-interval bars)."""
    for name, (rows, cells) in seed_results(run.data)[0].items():
        ms, r0 = [m for m in cells if cells[m]["final"]["n"]], rows[0]
        _runs.plot(run.figures / f"{name}_seeds.png", [dict(
            bars={label: [cells[m][key] for m in ms] for key, label in (
                ("final", "final"), ("mean", "mean over rounds"))}, rotation=30,
            ticks=[f"{m}\n(n={cells[m]['final']['n']})" for m in ms], ylabel=r0["metric"],
            ylim=(max(0.0, min(cells[m]["final"]["mean"] for m in ms) - 0.15), None), size=8,
            legend=7, title=f"{name}: |U|={r0['num_users']} {r0['distribution']}, "
            f"T={r0['rounds']}, Q={r0['local_epochs']}, 95% t-intervals over seeds")],
            cell=(7.5, 3.6))
    if rows := gpu5_rows(run.data):
        seeds = sorted({r["seed"] for r in rows})
        _runs.plot(run.figures / "fig5_mnist_gpu_partial.png", [dict(lines=[dict(
            x=[r["round"] for r in rows if r["seed"] == s],
            y=[r["test_accuracy"] for r in rows if r["seed"] == s], lw=1,
            label=f"seed {s}") for s in seeds], xlabel="round", ylabel="test accuracy",
            xlim=(0, rows[0]["rounds_planned"]), legend=7, grid=True, size=8,
            title=f"Fig. 5 (a) ULDP-SGD, MNIST |U|=100 uniform, {rows[0]['prov_device']} "
            f"(stopped before T={rows[0]['rounds_planned']})")])
    if (run.data / PRIVACY).exists():
        f2 = json.loads((run.data / PRIVACY).read_text())["fig2"]
        _runs.plot(run.figures / "fig2_group_conversion.png", [dict(lines=[
            dict(x=[r["k"] for r in f2[key]], y=[r[col] for r in f2[key]], fmt=fmt, label=label)
            for key, col, fmt, label in (("rdp", "paper", "o-", "RDP conversion (paper)"),
                                         ("rdp", "sound", "o--", "RDP conversion (sound)"),
                                         ("normal", "paper", "s-", "(eps, delta) conversion "
                                          "(paper)"), ("mog", "pld_mog", "^-",
                                                       "mixture-of-Gaussians PLD")) if f2[key]],
            hline=f2["record"], xscale="log", yscale="log", xlabel="group size k", legend=7,
            ylabel="epsilon", title="Fig. 2: group privacy (sigma 5, q 0.01, 1e5 steps)")])


def _prose(block: str, **fields) -> str:
    return _runs.prose("uldp", block, **fields)  # looked up at call time (tests record it)


def _eps_range(values) -> str:
    """A column of epsilons over seeds: one value, "lo - hi", or "-" without any."""
    lo, hi = (min(values), max(values)) if values else (None, None)
    return _fmt(lo) if lo == hi else f"{_fmt(lo)} - {_fmt(hi)}"


def _seeds_note(c: dict) -> str:
    return "; ".join(([f"seeds {c['aborted']} aborted (GROUP flags leave a silo empty)"]
                      if c["aborted"] else []) +
                     ([f"seeds {c['missing']} not yet run"] if c["missing"] else [])) or "-"


def render(data_dir) -> str:
    """The page (block ``page``) from the data files of ``data_dir`` (privacy tables, per-seed
    CSVs, benchmark rows) and the audit."""
    i = declare.Inputs(data_dir)
    privacy, (panels, claims) = i.json(PRIVACY), seed_results(i.data)
    f2, g = privacy["fig2"], i.audit_row("uldp_group_coupled_counterexample")
    seed0 = {r["method"]: r for r in panels.get("fig6_heart_50_zipf", ([], {}))[0]
             if r["seed"] == 0 and r["status"] == "ok"}
    at8 = {key: next((f"{r[col]:.1f}" for r in f2.get(key) or [] if r["k"] == 8), "-")
           for key, col in (("mog", "pld_mog"), ("rdp", "paper"))}
    bench = i.json(BENCH) if (i.data / BENCH).exists() else []
    authors = ("authors_key_exchange_s", "authors_blinded_hist_s", "authors_train_per_silo_s",
               "authors_aggregation_s")
    g5 = gpu5_rows(i.data)
    return _prose(
        "page", has_gpu5=bool(g5), gpu5=gpu5_table(g5) if g5 else [], gpu5_info=[dict(
            g5[0], seeds=", ".join(str(s) for s in sorted({r["seed"] for r in g5})),
            reached="{} - {}".format(*(f([max(r["round"] for r in g5 if r["seed"] == s)
                                           for s in {r["seed"] for r in g5}])
                                         for f in (min, max))))] if g5 else [],
        mog8=at8["mog"], rdp8=at8["rdp"], attack=dict(
            g["info"], epsilon_lb=g["epsilon_lb"], claimed=g["claimed"]["paper"]),
        flags="; ".join(f"{m.removeprefix('ULDP-')} sound {_fmt(seed0[m]['eps_sound'])} vs "
                        f"paper recipe {_fmt(seed0[m]['eps_paper_recipe'])}"
                        for m in ("ULDP-GROUP-2", "ULDP-GROUP-8") if m in seed0),
        curve=[dict(r, rel=abs(r["paper"] - r["gold"]) / max(abs(r["gold"]), 1e-12))
               for r in privacy["curve"]], subsampled=privacy["subsampled"],
        record=f2["record"], rdp=f2["rdp"], normal=f2["normal"], has_mog=bool(f2["mog"]),
        mog=f2["mog"], group_seeds=privacy["group"][0]["seeds"], group=[dict(
            r, eps=_fmt(r["eps_last"]), lo=_fmt(r["eps_min"]), hi=_fmt(r["eps_max"]))
            for r in privacy["group"]], has_panels=bool(panels), panels=[dict(
                rows[0], name=name, rows=[dict(
                    method=m, n=c["final"]["n"], final=stats.fmt(c["final"]),
                    mean=stats.fmt(c["mean"]), eps_paper=_eps_range(c["eps_paper_recipe"]),
                    eps_sound=_eps_range(c["eps_sound"]), note=_seeds_note(c))
                    for m, c in cells.items()]) for name, (rows, cells) in panels.items()],
        claims=[dict(c, interval=c.get("interval_verdict", "-"), paired="-" if c["paired"] is
                     None else stats.fmt_paired(c["paired"])) for c in claims],
        figures=", ".join(f"`docs/figures/uldp/{n}_seeds.png`" for n in panels),
        has_bench=bool(bench), avg=[r for r in bench if r.get("bench") == "uldp_avg"],
        protocol=[dict(r, authors=" / ".join(str(r[k]) for k in authors)
                       if authors[0] in r else "-")
                  for r in bench if r.get("bench") == "protocol"]) + "\n"


def panel_label(key: str) -> str:
    """``fig6_heart_50_zipf`` -> ``Heart (6b)``: the dataset and the paper's panel letter."""
    fig, data, users, dist = key.split("_")
    letter = LETTERS.get((int(users), dist))
    name = {"heart": "Heart", "tcga": "TCGA"}.get(data, data)
    return f"{name} ({fig.removeprefix('fig')}{letter})" if letter else key


def _counts(i: declare.Inputs) -> dict:
    """``cnt``: how many of the spec's cells the paper mode reproduces at the printed precision
    (curve, sub-sampling: 4 significant digits; Fig. 2: 2 decimals; GROUP: 3 significant
    digits), the cells the summary quotes and the verdicts of the curve and Fig. 2 rows."""
    out = acc.paper_match_counts(i.json(PRIVACY))
    return {"cnt": dict(out, curve_verdict=stats.exact((out["curve"], out["sub"]) == (
        out["curve_n"], out["sub_n"])), fig2_verdict=stats.exact(out["fig2"] == out["fig2_n"]))}


def _naive_row(i: declare.Inputs) -> dict:
    rdp = {r["k"]: r for r in i.json(PRIVACY)["fig2"]["rdp"]}
    mog = {r["k"]: r["pld_mog"] for r in i.json(PRIVACY)["fig2"]["mog"]}
    return dict(a=i.audit_check("ULDP-NAIVE (user in 3 silos; paper C|S| vs 2C|S|)"),
                k64=rdp[64],  # the smoke scale computes the mixture at k = 1, 2 only
                mog=dict(k16=mog[16], k32=mog[32]) if {16, 32} <= mog.keys() else None,
                paper_k=dict(k16=rdp[16]["paper"], k32=rdp[32]["paper"]))


def _figs_6_7_rows(i: declare.Inputs) -> list[dict]:
    """One row per claim of Figs. 6-7, its verdict per panel."""
    panels, claims = seed_results(i.data)
    panel_list = ", ".join(panel_label(k) for k in panels)
    aborted = [f"{panel_label(k)} {m}: seeds {c['aborted']} aborted"
               for k, (_, cells) in panels.items() for m, c in cells.items() if c["aborted"]]
    scale = _prose("uldp_scale", panels=panel_list, seeds=", ".join(
        f"{panel_label(k)} {max(c['final']['n'] for c in cells.values())} seeds"
        for k, (_, cells) in panels.items()), aborted=f" ({'; '.join(aborted)})" if aborted
        else "")
    by_claim = _runs.group(claims, "claim")

    def per_panel(cs, f):
        return "; ".join(f"{panel_label(c['figure'])}: {f(c)}" for c in cs)

    return [dict(panels=panel_list, claim=claim, scale=scale,
                 target=_prose("uldp_group_target") if claim.startswith("GROUP")
                 else _runs.prose("reproduction", "figure_ordering"),
                 measured=per_panel(cs, lambda c: c["detail"]),
                 verdict=per_panel(cs, lambda c: c["verdict"]),
                 paired=per_panel([c for c in cs if c.get("paired")], lambda c: (
                     f"{stats.fmt_paired(c['paired'])}, interval rule: {c['interval_verdict']}"))
                 or "-") for claim, cs in by_claim.items()]


def _protocol_row(i: declare.Inputs) -> dict:
    prot = [r for r in i.json(BENCH) if r.get("bench") == "protocol" and r["silos"] == 3
            and r["key_bits"] == 1024]
    per_user = [r["silo_s_mean"] / r["users"] for r in prot]
    within = max(per_user) <= 1.25 * min(per_user)
    return dict(times=" / ".join(f"{r['silo_s_mean']:.1f}" for r in prot),
                users="/".join(str(r["users"]) for r in prot),
                verdict=f"not tested (one run, {'within' if within else 'beyond'} 25%)")


def _remaining_panels(i: declare.Inputs) -> dict:
    panels, _ = seed_results(i.data)
    left = [panel_label(k) for k in PANELS if k not in panels]
    return dict(uldp_panels=", ".join(panel_label(k) for k in panels),
                uldp_ok=sum(r["status"] == "ok" for rows, _ in panels.values() for r in rows),
                uldp_points=sum(len(rows) for rows, _ in panels.values()),
                uldp_left=_prose("uldp_left", panels=", ".join(left)) if left else "none | - ")


def _panel(name: str, users: int, dist: str) -> declare.Figure:
    return declare.Figure(
        name, f"Fig. {name[3]} panel ({LETTERS[(users, dist)]}), |U| = {users} {dist}: the nine "
        "methods x seeds", lambda scale: [c for c in panel_configs(name, scale)
                                          if _refused(c) is None],
        (data_file(name),), export=_export, plot=draw, metric="final and mean test metric",
        committed="full")


C = declare.Claim
PAPER = declare.Paper(
    name="uldp", title="ULDP-FL (Kato et al., PVLDB 2024)", order=30, template="uldp",
    link="link", scales=("smoke", "cpu", "full"),
    figures=(declare.Figure("privacy", "exact privacy tables (curve, sub-sampling, Fig. 2, GROUP)",
                            lambda scale: [], (PRIVACY,), export=_export, plot=draw,
                            committed="cpu"),
             *(_panel(name, u, d) for name, (_, u, d) in PANELS.items())),
    claims=(C("curve", "ULDP epsilon curve and user-level sub-sampling (paper mode)",
              declare.EXACT, "row_uldp_curve", _counts, "privacy"),
            C("group_table", "Fig. 2 group conversions and the ULDP-GROUP table", declare.EXACT,
              "row_uldp_group_table", _counts, "privacy"),
            C("naive", "NAIVE / GROUP epsilons as published", declare.EXACT, "row_uldp_naive",
              _naive_row, "privacy"),
            C("group_flags", "GROUP-k with the authors' flags is user-level DP", declare.EXACT,
              "row_uldp_group_flags", lambda i: {
                  "g": i.audit_check("uldp_group_coupled_counterexample")}),
            C("figs_6_7", "the orderings of Figs. 6-7 and GROUP's epsilon range", declare.PAIRED,
              "row_uldp_figs_6_7", _figs_6_7_rows),
            C("fig5", "Fig. 5 (MNIST): AVG-w fastest, SGD slowest", declare.NOT_TESTED,
              "row_uldp_fig5", lambda i: dict(verdict=stats.ONE_SEED)),
            C("protocol", "the private weighting protocol scales linearly in users",
              declare.NOT_TESTED, "row_uldp_protocol", _protocol_row)),
    pages=(declare.Page("docs/reproduction/uldp.md", (PRIVACY, *sorted(
        data_file(n) for n in PANELS if (declare.DATA / data_file(n)).exists()), BENCH,
        *((GPU5,) if (declare.DATA / GPU5).exists() else ())),
        lambda inputs, text: render(inputs.data)),),
    remaining=(declare.Remaining("a", "remaining_uldp_panels", _remaining_panels),
               declare.Remaining("c", "remaining_uldp_mnist", lambda i: {})))

if __name__ == "__main__":  # the command the page names
    __import__("experiments.reproduce.__main__", fromlist=["alias"]).alias("uldp")
