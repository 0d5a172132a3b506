"""LightDP-FL (arXiv 2412.06120) declared as data: Tables II and III, Fig. 3 and Fig. 4.

  python -m experiments.reproduce lightdp --scale cpu --workdir runs/lightdp [--figure fig3]

Runs per scale, the tables' and Fig. 3's cells and claimed pairs: ``configs/lightdp/_common.py``;
Fig. 4's costs and claims: :mod:`jaxfl.algorithms.lightdp_cost`; the privacy analysis:
:mod:`jaxfl.accounting.lightdp`. The tables' sweep writes :data:`TABLES_CSV`, Figs. 3/4's
:data:`SEEDS_CSV` (the committed one also holds the first run's one-seed table cells) and
:data:`COSTS_JSON`. Page and summary rows: one :func:`context` filling ``templates/lightdp.md``."""

from __future__ import annotations

import functools
import json
import math
import operator
from pathlib import Path

import numpy as np

from experiments.configs.lightdp import _common
from experiments.papers import lightdp as wiring
from experiments.plotting import figures as _figures
from jaxfl.accounting import lightdp as acct
from jaxfl.algorithms import lightdp_cost as cost
from jaxfl.repro import declare, stats
from jaxfl.repro import runs as _runs
from jaxfl.repro import text as _text
from jaxfl.repro.claims import Cmp, Paired, decide_family

EPS, CHECK_ROUNDS, CHECK_DELTAS = acct.PAPER_EPSILONS, acct.CHECK_ROUNDS, acct.CHECK_DELTAS
TABLES, table_names = _common.TABLES, _common.table_names  # Tables II/III: cells, paper values
SEEDS_CSV, COSTS_JSON = "lightdp_seeds.csv", "lightdp_fig4.json"
TABLES_CSV = "lightdp_tables_seeds.csv"  # Tables II/III over their seeds (issue 39)
FIELDS = dict(name=str, scheme=str, epsilon=float, max_colluders=int, max_stragglers=int,
              stragglers=str, seed=int, final_test_accuracy=float, reported_epsilon=float,
              privacy_mode=str, train_seconds=float)  # the per-seed CSVs' columns and types
PAGE = "lightdp"  # templates/lightdp.md: the fixed wording of the page's generated blocks
BY_RUN = operator.itemgetter("name", "seed")  # the order of the per-seed rows


# --- the data files


# The CSV row (:data:`FIELDS`) of one finished run: its config's fields (the straggler model
# "design" written "uniform"), then its last metrics record's values.
seed_row = _runs.last_record_row(
    ("name", "scheme", "epsilon", "max_colluders", "max_stragglers", "seed", "stragglers"),
    dict(final_test_accuracy=("test_accuracy", None), reported_epsilon=("epsilon", math.nan),
         privacy_mode=("privacy_mode", ""), train_seconds=("elapsed_s", math.nan)),
    convert={"stragglers": lambda v: {"design": "uniform"}.get(v, v)})
base_config, configs = _common.scale_config, _common.figure_configs  # a scale's runs


def read_data(folder: Path, csv: str = SEEDS_CSV) -> tuple[list[dict], dict]:
    """``(rows, meta)``: the CSV rows (sorted by name and seed) and the JSON of the costs."""
    rows = _runs.read_rows(Path(folder) / csv, types=FIELDS)
    return sorted(rows, key=BY_RUN), json.loads((Path(folder) / COSTS_JSON).read_text())


def accuracies(rows: list[dict]) -> dict[str, dict[int, float]]:
    """run name -> seed -> final test accuracy (%), seeds in order."""
    return {name: {r["seed"]: r["final_test_accuracy"] * 100 for r in rs}
            for name, rs in _runs.group(sorted(rows, key=BY_RUN), "name").items()}


# Read at call time (tests patch them): the design table at the runs' (T, Δ, δ), the calibration.
design_rows, delta_rows = wiring.paper_designs, acct.paper_calibration


# --- the claims


def _paired(runs: str, kind: str, items, **fields) -> list[Paired]:
    """The claims ``(claim, pairs, fields)`` of ``items`` (``_common.fig3_pairs`` /
    ``trend_pairs``) on the runs ``runs`` ("f": Fig. 3's, "t": the tables'), each pair (run
    claimed higher, by the claim's ``margin``; run claimed lower; label) one comparison."""
    return [Paired(claim, tuple(Cmp((runs, hi), (runs, lo), by=f.get("margin", 0.0))
                                for hi, lo, _ in pairs),
                   dict(f, kind=kind, short=f.get("short", claim), at=[x for *_, x in pairs],
                        **fields)) for claim, pairs, f in items]


def claims(acc: dict, tab: dict) -> list[dict]:
    """The Fig. 3 claims (on the runs' :func:`accuracies` ``acc``) and the trends of the seeded
    tables ``tab`` as the paper's one Holm family (:func:`~jaxfl.repro.claims.decide_family`), with
    their ``evidence`` and ``paired`` cells (template blocks ``<kind>_evidence`` / ``_paired``)."""
    trends = [p for w in TABLES if all(n in tab for n in table_names(w)) for p in _paired(
        "t", "table", _common.trend_pairs(w), k=_runs.shared_seeds(tab, table_names(w)))]
    out = decide_family(_paired("f", "fig3", _common.fig3_pairs(acc)) + trends,
                        lambda c: (acc if c[0] == "f" else tab).get(c[1], {}), unit=" pt")
    for r in out:
        r.update(evidence=_text.fill_block(PAGE, f"{r['kind']}_evidence", r),
                 paired=_text.fill_block(PAGE, f"{r['kind']}_paired", r))
    return out


# --- the page and the summary rows


@declare.per_inputs
def context(inputs: declare.Inputs) -> dict:
    """Every name the page's blocks and the summary rows print, from the data files (refused
    when written for another setting than their scale's config) and the accounting. SecAgg's
    claim is decided with its dropout recovery (the every-link reading cannot refute it)."""
    rows, meta = read_data(inputs.data)
    base = base_config(meta["scale"])
    _runs.check_setting(inputs.data / COSTS_JSON, meta["setting"], base, _common.SETTING)
    tab_rows = read_data(inputs.data, TABLES_CSV)[0]
    acc, tab, c = accuracies(rows), accuracies(tab_rows), meta.get("costs") or {}
    checks = [{**r, "d": _text.delta_text(r["delta"])} for r in delta_rows()]
    design, found = design_rows(base), claims(acc, tab)
    f = acct.calibration_findings(checks, design)
    k = _runs.shared_seeds(tab, table_names("table2"))
    seeds, trends = {1: "one seed"}.get(k, f"{k} seeds"), [x for x in found if x["kind"] == "table"]
    ctx = dict(  # shared by the blocks
        base=base, meta=meta, costs=c, params=meta.get("model_params"), check_rounds=CHECK_ROUNDS,
        dataset=_common.DATASET_NAMES[base.dataset], runs=len(rows), tab_runs=len(tab_rows),
        fig3_seeds=_runs.shared_seeds(acc, [n for n in acc if n.startswith("fig3")]), tab_seeds=k,
        seeds=seeds, threshold=cost.SECAGG_THRESHOLD_FRACTION, mbit=f"{cost.BANDWIDTH / 1e6:g}",
        delta=_text.delta_text(base.delta), **_common.model_facts(base))
    ctx |= dict(  # the results: Figs. 3 and 4, the accounting tables, the claims
        sensitivity=wiring.sensitivity(base), design=design, calibration=checks,
        minutes=sum(r["train_seconds"] or 0 for r in rows) / 60,
        run_seeds="/".join(str(n) for n in sorted({len(v) for v in acc.values()})) or "0",
        fig3=any(n.startswith("fig3") for n in acc) and {
            "rows": _common.fig3_layout(functools.partial(_text.interval_text, acc))},
        fig4=bool(c) and cost.fig4_table(c, num_clients=base.num_clients),
        claims=found, fig3_claims=[x for x in found if x["kind"] == "fig3"],
        he=cost.fig4_he_claim(meta.get("fig4")),
        secagg=bool(c) and dict(recovers=c["secagg_recovery_success_rate"] > 0.5))
    ctx |= dict(  # the seeded tables and their trend tests
        tab_minutes=sum(r["train_seconds"] or 0 for r in tab_rows) / 60, n_cells=len(tab),
        cell_seeds=_runs.shared_seeds(tab, tab), trends=trends,
        family=trends[0]["family"] if trends else 0, per_seed=[
            dict(seed=s, mean=np.mean([v[s] for v in tab.values() if s in v]))
            for s in sorted({r["seed"] for r in tab_rows})],
        tables=[_common.table_layout(w, functools.partial(_text.interval_text, tab))
                for w in TABLES])
    ctx |= dict(  # the summary and the privacy findings
        seeds_cap=seeds.capitalize(), one_seed=k < 2, findings=f, holds=stats.exact(f["holds"]),
        fail=bool(f["fail"]) and {"rows": f["fail"]}, low_delta=_text.delta_text(min(CHECK_DELTAS)),
        deltas=[_text.delta_text(d) for d in CHECK_DELTAS])
    mean = float(np.mean([r["final_test_accuracy"] for r in rows + tab_rows]))
    bits = c.get("paillier", {}).get("key_bits", 2048)
    ctx |= dict(  # the setting
        mean_acc=mean, se=100 * math.sqrt(mean * (1 - mean) / base.test_examples),
        q=1 - base.failure_prob, all_fail=c.get("secagg_round_success_rate") == 0,
        same=base.mode == "strict" and all(r["scale"] == 1.0 for r in design),
        usable=c.get("client_usable_prob"), percent=c.get("secagg_round_success_rate", math.nan),
        bits=bits, cipher_bits=2 * bits, resnet_train=cost.RESNET18_T_TRAIN)
    x = acct.calibration_claim(inputs.exact["lightdp"])  # the committed (rounded) numbers
    a = inputs.audit_check("lightdp_delta_1e-2_counterexample")
    e1, s50 = acct.example1_check(design), cost.secagg_claim()  # SecAgg at N = 50, S̄ = 10
    ctx |= dict(  # the summary rows
        scale=_text.fill_block(PAGE, "lightdp_scale", ctx),
        example1=dict(e1, verdict=stats.exact(e1["match"] == e1["cells"])),
        cal=dict(x, lb=a["lb"], paper=a["p"], verdict_5=stats.exact(x["holds_5"]),
                 verdict_2=stats.exact(x["holds_2"])),
        secagg50=dict(s50, verdict=stats.exact(s50["holds"])))
    return ctx


# docs/reproduction/lightdp.md: its generated blocks (marker: template block)
page = declare.context_page(context, PAGE, {
    "lightdp": "results", "lightdp_tables_seeds": "tables_seeds", "lightdp_summary": "summary",
    "lightdp_privacy": "privacy", "lightdp_setting": "setting"},
    wrapped=("summary", "privacy", "setting"), title="LightDP-FL")


# --- running


def export(run: declare.Run) -> None:
    """The per-seed CSV of the sweep: :data:`TABLES_CSV` for the tables; for Figs. 3/4
    :data:`SEEDS_CSV` and :data:`COSTS_JSON` (Fig. 4's costs measured, its curves:
    :func:`jaxfl.algorithms.lightdp_cost.fig4_curves`)."""
    if run.figure.sweep == "tables":
        _runs.export_runs(run, seed_row, run.data / TABLES_CSV, FIELDS, sort=BY_RUN)
        return
    base, runs, (costs, fig4) = base_config(run.scale), _runs.histories(run), (None, None)
    dim = wiring.num_params(base)
    if "fig4" in run.selected:
        costs, fig4 = cost.fig4_measure(
            runs, {s: _runs.mean_curve(runs.get(f"fig4_{s}")) for s in _common.FIG4_LABELS},
            num_clients=base.num_clients, max_stragglers=base.max_stragglers, dim=dim,
            key_bits=512 if run.scale == "smoke" else 2048)
    _runs.export_runs(run, seed_row, run.data / SEEDS_CSV, FIELDS, sort=BY_RUN)
    _runs.write_json(run.data / COSTS_JSON, dict(scale=run.scale, setting=_common.setting_of(base),
                                                 model_params=dim, costs=costs, fig4=fig4))


def plot(run: declare.Run) -> None:
    """Fig. 3 (one panel per ε, each scheme's mean accuracy curve) and Fig. 4 (accuracy
    against modelled time, from :data:`COSTS_JSON`), those selected."""
    eps_list, runs = (3,) if run.scale == "smoke" else EPS, _runs.histories(run)
    if "fig3" in run.selected:
        _figures.plot(run.figures / "fig3.png", _figures.curve_panels(runs, {
            f"ε = {e}": {n.format(e=e): label for n, label in _common.FIG3_LINES}
            for e in eps_list},
            xlabel="round", ylabel="test accuracy (%)", grid=True), cell=(4, 3.2))
    if "fig4" in run.selected:
        fig4 = json.loads((run.data / COSTS_JSON).read_text())["fig4"]
        _figures.plot(run.figures / "fig4.png", [dict(
            lines=[dict(x=np.asarray(c["rounds"]) * c["round_seconds"] / 3600, y=c["accuracy"],
                        label=label) for s, label in _common.FIG4_LABELS.items()
                   if (c := fig4.get(s))],
            xscale="log", xlabel="modelled wall-clock time (h, log)",
            ylabel="test accuracy (%)", legend="medium", grid=True)], cell=(5, 3.2))


# --- the declarations


def _figure(name: str, title: str) -> declare.Figure:
    """A table over seeds (sweep ``tables``) or a figure of the joint Fig. 3/4 sweep."""
    table = name in TABLES
    return declare.Figure(name, title, functools.partial(configs, name=name),
                          (TABLES_CSV,) if table else (SEEDS_CSV, COSTS_JSON), export,
                          "final test accuracy", None if table else plot,
                          committed="cpu" if table else None,
                          sweep="tables" if table else "figures")


def exact_numbers() -> dict:
    """The calibration check of lightdp.md (``exact_numbers.json``)."""
    values = {k: (v, ".4f") for k, v in acct.calibration_numbers(delta_rows()).items()}
    return {"lightdp": {
        "page": "docs/reproduction/lightdp.md", "values": values,
        "command": "python -m experiments.reproduce.lightdp --from-data --workdir runs/lightdp"}}


# The claims: (name (its summary row: block row_lightdp_<name>), text, rule, a context list of
# rows (one row each) or None, figure)
CLAIMS = (("design", "Example 1 noise design and Prop. 1", declare.EXACT),
          ("calibration", "calibration meets eps over T rounds", declare.EXACT),
          ("fig3", "Fig. 3 orderings", declare.PAIRED, "fig3", "fig3_claims"),
          ("tables", "Tables II/III trends over seeds", declare.PAIRED, "table2", "trends"),
          ("he", "Fig. 4: HE+DP >= 10x slower", declare.NOT_TESTED, "fig4", "he"),
          ("secagg", "Fig. 4: SecAgg cannot train with 5% link failures", declare.EXACT, "fig4"))


PAPER = declare.Paper(
    name="lightdp", title="LightDP-FL (arXiv 2412.06120)", order=50, template=PAGE, link="link",
    scales=("smoke", "cpu", "full"), exact=exact_numbers,
    figures=(_figure("table2", "Table II: accuracy by ε and colluders C̄ over seeds"),
             _figure("table3", "Table III: accuracy by ε and stragglers S̄ over seeds"),
             _figure("fig3", "Fig. 3: LightDP-FL vs LDP vs SMPC+DP over seeds"),
             _figure("fig4", "Fig. 4: accuracy against modelled wall-clock time")),
    claims=declare.claims_from(context, PAGE, CLAIMS),
    pages=(declare.Page("docs/reproduction/lightdp.md", (SEEDS_CSV, COSTS_JSON, TABLES_CSV),
                        page),),
    remaining=(declare.Remaining("e", "remaining_lightdp",
                                 declare.from_context(context, PAGE, "remaining_lightdp")),))


if __name__ == "__main__":  # the old command: python -m experiments.reproduce.lightdp ...
    __import__("jaxfl.repro.cli", fromlist=["alias"]).alias("lightdp")
