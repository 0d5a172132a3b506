"""ULDP-FL (Kato et al., PVLDB 2024), declared (:data:`PAPER`): figure ``privacy`` (the exact
tables beside the spec's values) and one figure per panel of Figs. 6-7 (nine methods x seeds,
one sweep, a per-seed CSV: :func:`export`). Scales: ``smoke`` (2 rounds), ``cpu`` (seed 0),
``full`` (the paper's setting, seeds 0, 1, 3, 6, 10). The page and the summary rows are filled
from one :func:`context` (wording and formats: ``templates/uldp.md``).
"""

from __future__ import annotations

import functools
import json

import numpy as np

from experiments import config as config_lib
from experiments.configs.uldp._common import METHODS, PAPER_SEEDS
from experiments.plotting import figures as _figures
from jaxfl.accounting import uldp as acc
from jaxfl.repro import claims as _claims
from jaxfl.repro import declare, stats
from jaxfl.repro import runs as _runs
from jaxfl.repro import text as _text
from jaxfl.repro.claims import Cmp, Paired
from jaxfl.tasks import silos

MOG_KS = {"smoke": (1, 2), "cpu": (1, 2, 4, 8, 16, 32), "full": (1, 2, 4, 8, 16, 32, 64)}
LETTERS = {(50, "uniform"): "a", (50, "zipf"): "b", (200, "uniform"): "c", (200, "zipf"): "d"}
PANELS = {f"{fig}_{u}_{d}": (fig, u, d) for fig in ("fig6_heart", "fig7_tcga") for u, d in LETTERS}
LABELS = {k: f"{'Heart' if fig == 'fig6_heart' else 'TCGA'} ({fig[3]}{LETTERS[u, d]})"
          for k, (fig, u, d) in PANELS.items()}  # fig6_heart_50_zipf -> Heart (6b)
PRIVACY, BENCH, SEEDS_CSV = "uldp_privacy_tables.json", "uldp_bench.json", "uldp_{}_seeds.csv"
# Fig. 5 (a) at the paper's scale on a GPU (experiments/gpu_session.sh part C): per-round rows
GPU5 = "uldp_fig5_mnist_100_uniform_gpu_partial.csv"
GPU5_ROUNDS = (1, 10, 25, 50)  # and the last round every seed reached
GPU5_FIELDS = dict(seed=int, round=int, rounds_planned=int, test_accuracy=float, epsilon=float,
                   delta=float)
# eps_paper_recipe: the paper's recipe on the run's own bounded silo sizes (GROUP: per-user
# flags, not the authors' round-robin ones, whose numbers are in uldp_privacy_tables.json).
SEED_FIELDS = dict(figure=str, dataset=str, num_users=int, distribution=str, method=str, seed=int,
                   rounds=int, local_epochs=int, metric=str, final=float, mean_over_rounds=float,
                   eps_paper_recipe=float, eps_sound=float, status=str)
CELL = dict(final="final", mean="mean_over_rounds", eps_paper="eps_paper_recipe",
            eps_sound="eps_sound")  # a method's per-seed values in a panel (_runs.seed_cell)
# Sec. 5.2's orderings: (claim, claimed-larger, other, key); "best AVG": the higher-final AVG.
ORDERINGS = (
    ("AVG-w converges faster than AVG (mean metric over rounds)", "ULDP-AVG-w", "ULDP-AVG", "mean"),
    ("SGD is slower than AVG (mean metric over rounds)", "ULDP-AVG", "ULDP-SGD", "mean"),
    ("NAIVE has much lower utility than AVG (final)", "ULDP-AVG", "ULDP-NAIVE", "final"),
    ("a gap to DEFAULT remains (final, vs the better AVG)", "DEFAULT", "best AVG", "final"))
# The claims: (name, text, rule[, figure[, the context's list of rows]]).
CLAIMS = (
    ("curve", "ULDP epsilon curve and user-level sub-sampling (paper mode)", declare.EXACT,
     "privacy"),
    ("group_table", "Fig. 2 group conversions and the ULDP-GROUP table", declare.EXACT, "privacy"),
    ("naive", "NAIVE / GROUP epsilons as published", declare.EXACT, "privacy"),
    ("group_flags", "GROUP-k with the authors' flags is user-level DP", declare.EXACT),
    ("figs_6_7", "the orderings of Figs. 6-7 and GROUP's epsilon range", declare.PAIRED, None,
     "figs_6_7"),
    ("fig5", "Fig. 5 (MNIST): AVG-w fastest, SGD slowest", declare.NOT_TESTED),
    ("protocol", "the private weighting protocol scales linearly in users", declare.NOT_TESTED))
AUTHORS = ("key_exchange", "blinded_hist", "train_per_silo", "aggregation")  # Protocol 1's steps
PAGE = "uldp"  # templates/uldp.md
_fmt = functools.partial(_text.num, nd=4, big_nd=3)


# --- the runs and their data


def export_privacy(run: declare.Run) -> None:
    """The privacy tables (:func:`jaxfl.accounting.uldp.paper_tables`, the mixture at the
    scale's k; ``group_table`` on the authors' allocation, ``silos.bounded_silo_sizes``)."""
    seeds = PAPER_SEEDS if run.scale != "smoke" else (10,)
    tables = {**acc.paper_tables(mog_group_sizes=MOG_KS[run.scale]),
              "group": acc.group_table(silos.bounded_silo_sizes, seeds)}
    run.data.mkdir(parents=True, exist_ok=True)
    (run.data / PRIVACY).write_text(json.dumps(tables, indent=2))


def panel_configs(panel: str, scale: str) -> list:
    """The panel's points: every method x seed of the scale (seed 0 below ``full``)."""
    fig, users, dist = PANELS[panel]
    return [config_lib.load_config(f"experiments/configs/uldp/{fig}.py:variant={scale},"
                                   f"num_users={users},distribution={dist},method={m},seed={s}")
            for m in METHODS for s in (PAPER_SEEDS if scale == "full" else (0,))]


def _sweep(panel: str, scale: str) -> list:
    """The panel's sweep: its points that the builder accepts (:func:`_runs.refusal`)."""
    return [c for c in panel_configs(panel, scale) if _runs.refusal(c) is None]


def export(run: declare.Run) -> list[dict]:
    """A panel's per-seed CSV: one row per method x seed of the scale with its final metrics, a
    refused or _runs.unfinished point with its status (:func:`_runs.unfinished`)."""
    return _runs.export_configs(run, panel_configs(run.figure.name, run.scale), _seed_row,
                          run.data / SEEDS_CSV.format(run.figure.name), SEED_FIELDS)


def _seed_row(c, summary: dict | None, records: list[dict] | None) -> dict:
    metric = "test_c_index" if c.dataset == "tcga_brca" else "test_accuracy"  # Heart's accuracy
    row = {"figure": c.name.removeprefix("uldp_"), "metric": metric, **{
        k: getattr(c, k) for k in ("dataset", "num_users", "distribution", "method", "seed",
                                   "rounds", "local_epochs")}}
    if summary is None:
        return {**row, "status": _runs.unfinished(c)}
    curve = [r[metric] for r in records if metric in r]
    return {**row, "final": curve[-1], "mean_over_rounds": float(np.mean(curve)), "status": "ok",
            "eps_paper_recipe": float(summary.get("privacy_paper", summary["privacy"])["epsilon"]),
            "eps_sound": float(summary["privacy"]["epsilon"])}


def seed_results(data_dir) -> tuple[dict, list[dict]]:
    """``(panels, claims)`` of the per-seed CSVs in ``data_dir``: panel -> (rows, method -> its
    :data:`CELL`); per panel the :data:`ORDERINGS` that ran (one Holm family; one seed: "not
    tested") and Sec. 5.2's GROUP epsilon rule (exact, ``acc.group_epsilon_orders``)."""
    panels, claims = {}, []
    group_claim = _text.prose(PAGE, "group_claim", far=acc.GROUP_FAR_ABOVE,
                              lo=acc.GROUP_EPS_ORDERS[0], hi=acc.GROUP_EPS_ORDERS[1])
    for name in PANELS:
        if not (rows := _runs.read_if(data_dir, SEEDS_CSV.format(name), SEED_FIELDS)):
            continue
        cells = {m: _runs.seed_cell(rs, CELL) for m, rs in _runs.group(rows, "method").items()}
        panels[name], ran = (rows, cells), [m for m in cells if cells[m]["final"]["n"]]
        best = max((m for m in ("ULDP-AVG", "ULDP-AVG-w") if m in ran), default=None,
                   key=lambda m: cells[m]["final"]["mean"])
        claims += [Paired(text, (Cmp((name, a, key), (name, b, key)),), {"figure": name})
                   for text, a, b, key in ORDERINGS for b in [best if b == "best AVG" else b]
                   if a in ran and b in ran]
        group = [e for m, c in cells.items() if m.startswith("ULDP-GROUP")
                 for e in c["eps_paper_s"].values()]
        if group and "ULDP-AVG" in ran:
            holds, g = acc.group_epsilon_orders(group, cells["ULDP-AVG"]["eps_paper_s"].values())
            claims.append(dict(figure=name, claim=group_claim, verdict=stats.exact(holds),
                               paired="-", interval="-",
                               detail=_text.prose(PAGE, "group_detail", **g)))
    return panels, _claims.decided_among(claims, lambda k: panels[k[0]][1][k[1]][f"{k[2]}_s"],
                                 name=lambda k: k[1], one_seed=stats.ONE_SEED)


def draw(run: declare.Run) -> None:
    """One PNG per panel (final and mean-over-rounds metric per method, 95% t-interval bars),
    the GPU Fig. 5 (a) curves and Fig. 2 (group conversions), where their data is."""
    for name, (rows, cells) in seed_results(run.data)[0].items():
        r0, low = rows[0], min(c["final"]["mean"] for c in cells.values() if c["final"]["n"])
        _figures.plot(run.figures / f"{name}_seeds.png", [_figures.interval_bars(
            cells, {"final": "final", "mean": "mean over rounds"}, rotation=30, size=8, legend=7,
            ylabel=r0["metric"], ylim=(max(0.0, low - 0.15), None), title=f"{name}: |U|="
            f"{r0['num_users']} {r0['distribution']}, T={r0['rounds']}, Q={r0['local_epochs']}, "
            "95% t-intervals over seeds")], cell=(7.5, 3.6))
    if rows := _runs.read_if(run.data, GPU5, GPU5_FIELDS, provenance=True):
        _figures.plot(run.figures / "fig5_mnist_gpu_partial.png", [dict(
            lines=_figures.seed_lines(rows, "round", "test_accuracy", lw=1), xlabel="round",
            ylabel="test accuracy", xlim=(0, rows[0]["rounds_planned"]), legend=7, grid=True,
            size=8, title=f"Fig. 5 (a) ULDP-SGD, MNIST |U|=100 uniform, "
            f"{rows[0]['prov_device']} (stopped before T={rows[0]['rounds_planned']})")])
    if (run.data / PRIVACY).exists():
        f2 = json.loads((run.data / PRIVACY).read_text())["fig2"]
        _figures.plot(run.figures / "fig2_group_conversion.png", [dict(lines=[
            dict(x=[r["k"] for r in f2[key]], y=[r[col] for r in f2[key]], fmt=fmt, label=label)
            for key, col, fmt, label in (
                ("rdp", "paper", "o-", "RDP conversion (paper)"),
                ("rdp", "sound", "o--", "RDP conversion (sound)"),
                ("normal", "paper", "s-", "(eps, delta) conversion (paper)"),
                ("mog", "pld_mog", "^-", "mixture-of-Gaussians PLD")) if f2[key]],
            hline=f2["record"], xscale="log", yscale="log", xlabel="group size k", legend=7,
            ylabel="epsilon", title="Fig. 2: group privacy (sigma 5, q 0.01, 1e5 steps)")])


# --- the page and the summary rows


def _page_row(method: str, c: dict) -> dict:
    """A method's line of its panel's table on the page (``c``: its :func:`_runs.seed_cell`)."""
    note = "; ".join(f"seeds {c[k]} {what}" for k, what in (
        ("aborted", "aborted (GROUP flags leave a silo empty)"), ("missing", "not yet run"))
        if c[k])
    return dict(method=method, n=c["final"]["n"], final=stats.fmt(c["final"]),
                mean=stats.fmt(c["mean"]), note=note or "-",
                eps_paper=_text.span(list(c["eps_paper_s"].values()), _fmt),
                eps_sound=_text.span(list(c["eps_sound_s"].values()), _fmt))


@declare.per_inputs
def context(i: declare.Inputs) -> dict:
    """Every name the page (block ``page``) and the summary rows print: the privacy tables, the
    panels and their claims (:func:`seed_results`), the GPU Fig. 5 (a) rows, the benchmark
    (none in a smoke run's data folder) and the audits."""
    privacy, (panels, claims) = i.json(PRIVACY), seed_results(i.data)
    f2, n = privacy["fig2"], acc.paper_match_counts(privacy)
    g5 = _runs.read_if(i.data, GPU5, GPU5_FIELDS, provenance=True)
    bench = _runs.group(i.json(BENCH) if (i.data / BENCH).exists() else [], "bench")
    prot3 = [r for r in bench.get("protocol", []) if r["silos"] == 3 and r["key_bits"] == 1024]
    per_user = [r["silo_s_mean"] / r["users"] for r in prot3]
    seed0 = {r["method"]: r for r in panels.get("fig6_heart_50_zipf", ([], {}))[0]
             if r["seed"] == 0 and r["status"] == "ok"}
    return dict(  # the privacy tables and the audits
        **f2, has_mog=bool(f2["mog"]), g=i.audit_check("uldp_group_coupled_counterexample"),
        cnt=dict(n, a=i.audit_check("ULDP-NAIVE (user in 3 silos; paper C|S| vs 2C|S|)"),
                 curve_verdict=stats.exact(n["curve_ok"]), fig2_verdict=stats.exact(n["fig2_ok"])),
        curve=[dict(r, rel=abs(r["paper"] - r["gold"]) / max(abs(r["gold"]), 1e-12))
               for r in privacy["curve"]], subsampled=privacy["subsampled"],
        group=[dict(r, eps=_fmt(r["eps_last"]), lo=_fmt(r["eps_min"]), hi=_fmt(r["eps_max"]))
               for r in privacy["group"]], group_seeds=privacy["group"][0]["seeds"],
        flags="; ".join(f"{m.removeprefix('ULDP-')} sound {_fmt(seed0[m]['eps_sound'])} vs "
                        f"paper recipe {_fmt(seed0[m]['eps_paper_recipe'])}"
                        for m in ("ULDP-GROUP-2", "ULDP-GROUP-8") if m in seed0),
        # Figs. 6-7: the panels, their claims (a summary row per claim) and what remains
        has_panels=bool(panels), claims=claims,
        panels=[dict(rows[0], name=name, label=LABELS[name],
                     n=max(c["final"]["n"] for c in cells.values()),
                     rows=[_page_row(m, c) for m, c in cells.items()])
                for name, (rows, cells) in panels.items()],
        figs_6_7=[dict(claim=claim, cs=cs, is_group=claim.startswith("GROUP"),
                       tested=[c for c in cs if c["paired"] != "-"])
                  for claim, cs in _runs.group([dict(c, label=LABELS[c["figure"]])
                                                for c in claims], "claim").items()],
        ordering=_text.prose("reproduction", "figure_ordering"),
        aborted_seeds="; ".join(f"{LABELS[k]} {m}: seeds {c['aborted']} aborted"
                                for k, (_, cells) in panels.items()
                                for m, c in cells.items() if c["aborted"]),
        uldp_left=", ".join(LABELS[k] for k in PANELS if k not in panels),
        uldp_ok=sum(r["status"] == "ok" for rows, _ in panels.values() for r in rows),
        uldp_points=sum(len(rows) for rows, _ in panels.values()),
        # the GPU rows, Fig. 5 and the benchmark
        gpu5=g5 and dict(g5[0], **_runs.round_table(g5, GPU5_ROUNDS, "test_accuracy", "epsilon")),
        one_seed=stats.ONE_SEED, bench=bool(bench) and dict(
            avg=bench.get("uldp_avg", []), prot3=prot3,
            within=max(per_user) <= 1.25 * min(per_user),
            protocol=[dict(r, authors=" / ".join(str(r[f"authors_{k}_s"]) for k in AUTHORS)
                           if "authors_key_exchange_s" in r else "-")
                      for r in bench.get("protocol", [])]))


render = declare.page_block(context, PAGE)  # the page: block ``page`` filled from context()


# --- the declarations


PAPER = declare.Paper(
    name="uldp", title="ULDP-FL (Kato et al., PVLDB 2024)", order=30, template=PAGE,
    link="link", scales=("smoke", "cpu", "full"), claims=declare.claims_from(context, PAGE, CLAIMS),
    figures=(declare.Figure("privacy", "exact privacy tables (curve, sub-sampling, Fig. 2, GROUP)",
                            lambda scale: [], (PRIVACY,), export=export_privacy, plot=draw,
                            committed="cpu"),
             *(declare.Figure(name, f"Fig. {name[3]} panel ({LETTERS[u, d]}), |U| = {u} {d}: the "
                              "nine methods x seeds", functools.partial(_sweep, name),
                              (SEEDS_CSV.format(name),), export, "final and mean test metric",
                              draw, committed="full") for name, (_, u, d) in PANELS.items())),
    pages=(declare.Page("docs/reproduction/uldp.md", (PRIVACY, *sorted(
        SEEDS_CSV.format(n) for n in PANELS if (declare.DATA / SEEDS_CSV.format(n)).exists()),
        BENCH, *((GPU5,) if (declare.DATA / GPU5).exists() else ())), render),),
    remaining=declare.remaining_from(context, PAGE, (("a", "panels"), ("c", "mnist"))))

if __name__ == "__main__":  # the command the page names
    __import__("jaxfl.repro.cli", fromlist=["alias"]).alias("uldp")
