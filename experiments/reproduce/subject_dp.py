"""Marathe & Kanani, "Subject Granular Differential Privacy in Federated Learning" (arXiv
2206.03617 v1), declared (:data:`PAPER`): figures ``tables`` (sections 1-2: accounting and batch
statistics) and ``training`` (section 3: MNIST writers, each method once) write ``subject_dp.json``,
``seeds`` (section 3b: five seeds, the paper's ordering tested paired) ``subject_dp_seeds.csv``.
The page and the summary rows are filled from one :func:`context` (``templates/subject_dp.md``)."""

from __future__ import annotations

import json
import time
from pathlib import Path

from experiments import config as config_lib
from experiments.papers import subject_dp as papers_sdp
from experiments.plotting import figures as _figures
from jaxfl.accounting import subject_dp as acct
from jaxfl.repro import claims as _claims
from jaxfl.repro import declare, stats
from jaxfl.repro import runs as _runs
from jaxfl.repro import text as _text

CONFIGS = Path(__file__).resolve().parent.parent / "configs" / "subject_dp"
DATA, SEEDS_CSV, SEEDS, PAGE = "subject_dp.json", "subject_dp_seeds.csv", 5, "subject_dp"
NAMES = acct.METHOD_NAMES
PAPER_ORDER = ("fedavg", "local_item_dp", "higradavg_dp", "local_group_dp", "user_ldp")
SEED_FIELDS = dict(method=str, mode=str, seed=int, rounds=int, test_accuracy=float,
                   train_loss=float, epsilon=float, epsilon_strict=float, status=str)
SETUP_KEYS = ("dataset", "num_subjects", "num_users", "model", "hidden", "batch_size",
              "local_steps", "clip_norm", "learning_rate", "nonprivate_learning_rate",
              "target_epsilon", "delta", "nominal_rounds")  # section 3's setup line
BATCH_KEYS = ("layout", "subjects", "n_i", "B", "K", "Z", "mode", "freq", "paper")  # template
AUDITS = ("subject_dp_paper_counterexample", "local_group_dp_counterexample",  # a1-a5 of the
          "user_ldp_counterexample", "user_ldp_femnist_counterexample",  # subject-level row
          "higradavg_sqrt_s_cut_counterexample")
# The spec author's values of the sigma table (the summary's "sigma for the paper's budget" row).
SUBJECT_SPEC = dict(sigma_T1=0.6881, sigma_T70=1.5684, eps_16x25_T1=5.648, eps_16x6_T1=3.968)
fmt = _text.num


# --- the runs and their data


def training_configs(scale: str) -> list:
    """Section 3's runs: smoke, three on synthetic blobs; else every method in paper mode and
    the subject-level ones in strict mode (``full``: plus two on the skewed layout)."""
    runs = [("femnist_like.py", m, "paper") for m in NAMES]
    runs += [("femnist_like.py", m, "strict") for m in acct.SUBJECT_METHODS[::-1]]
    runs += [("skewed.py:alpha=16", m, "paper") for m in ("local_group_dp", "higradavg_dp")
             if scale == "full"]
    if scale == "smoke":
        runs = [("femnist_like.py:variant=smoke", m, mode) for m, mode in (
            ("fedavg", "paper"), ("higradavg_dp", "paper"), ("higradavg_dp", "strict"))]
    fast = [] if scale == "smoke" else ["tight_accounting=False"]
    return [config_lib.load_config(str(CONFIGS / spec), [f"method={m}", f"mode={mode}", *fast])
            for spec, m, mode in runs]


def seeds_configs(scale: str) -> list:
    """The points (same ids) of ``python -m experiments.sweep --config "experiments/configs/
    subject_dp/femnist_like.py:seeds=5" --set tight_accounting=False``; smoke: its smoke sweep."""
    smoke = scale == "smoke"
    return [p.config for p in config_lib.sweep_points(
        f"{CONFIGS / 'femnist_like.py'}:{'variant=smoke' if smoke else f'seeds={SEEDS}'}",
        [] if smoke else ["tight_accounting=False"])]


def export(run: declare.Run) -> None:
    """Writes the figure's section into ``run.data / DATA`` (the others kept): ``tables``, or
    ``training``: the setup, per run its numbers, last round's mean K and Z, sigma range, size."""
    t0, base = time.time(), config_lib.load_config(str(CONFIGS / "femnist_like.py"))
    if run.figure.name == "tables":
        sections = papers_sdp.tables(base, smoke=run.scale == "smoke")
        return _runs.write_sections(run.data / DATA, sections, run.scale, time.time() - t0)
    rows = []
    for cfg, run_dir in zip(run.configs, run.dirs, strict=True):
        s, recs = _runs.read_run(run_dir)
        sig = s["info"].get("noise_multipliers")  # None: no noise
        rows.append({"method": NAMES[cfg.method] + (" (alpha 16)" if "skewed" in cfg.name else ""),
                     "mode": cfg.mode, **_runs.run_row(s, recs, {"mean_K": "num_subjects",
                                                           "mean_Z": "max_group"}),
                     "sigma": [float(min(sig)), float(max(sig))] if sig and max(sig) else None,
                     "model_dim": papers_sdp.model_dim(cfg), "point_id": Path(run_dir).name})
    training = dict(scale=run.scale, setup={k: getattr(base, k) for k in SETUP_KEYS}, rows=rows)
    _runs.write_sections(run.data / DATA, {"training": training}, run.scale,
                         sum(r["seconds"] or 0.0 for r in rows))


def export_seeds(run: declare.Run) -> list[dict]:
    """Writes :data:`SEEDS_CSV` (a row per declared point) and ``training_seeds.png`` (bars)."""
    rows = _runs.export_runs(run, _runs.point_row(), run.data / SEEDS_CSV, SEED_FIELDS)
    cells = _runs.cells_of(_runs.read_rows(run.data / SEEDS_CSV, SEED_FIELDS))
    if any(c["interval"]["n"] for c in cells.values()):
        _figures.plot(run.figures / "training_seeds.png", [_figures.interval_bars(
            cells, {"interval": None}, lambda k: f"{NAMES[k[0]]}\n{k[1]}", size=8,
            ylabel="final test accuracy", title="Subject-level DP, MNIST writers: final test "
            "accuracy over seeds (95% t-intervals)")], cell=(7, 3.4))
    return rows


def export_sweep(sweep_dir, scale: str = "cpu", data=declare.DATA,
                 figures=declare.ROOT / "docs" / "figures" / "subject_dp") -> list[dict]:
    """The seeds figure's CSV and plot from a sweep folder (an unfinished point: ``missing``)."""
    return declare.export_from_sweep(PAPER.figure("seeds"), sweep_dir, scale, data, figures)


# --- the page, the summary rows and the declarations


def training_fields(res: dict) -> dict:
    """Section 3: the setup, the runs, their paper-mode ordering (HiGradAvgDP ``hi``, LocalGroupDP
    ``lg``), the strict-mode runs, the paper-mode ones' strict epsilon, an earlier page's runs."""
    runs, setup = res["rows"], res["setup"]
    by = {(r["method"], r["mode"]): r for r in runs}

    def sigma(sig, digits):  # "18.1", or "0.98-1.05 by user" when the users' values differ
        lo, hi = (f"{v:.{digits}g}" for v in sig)
        return lo if lo == hi else f"{sig[0]:.3g}-{sig[1]:.3g} by user"

    def strict_run(r):  # its sigma (the paper mode's beside it) and accuracy
        note = ["no 1/B"] if r["method"] == "UserLDP" else []
        if paper := by.get((r["method"], "paper"), {}).get("sigma"):
            note.append(f"paper: {sigma(paper, 2)}")
        return dict(r, sigma=sigma(r["sigma"], 3), note="; ".join(note),
                    group=r["method"] == "LocalGroupDP", percent=100 * r["test_accuracy"])

    strict = [strict_run(r) for r in runs if r["mode"] == "strict" and r["sigma"] is not None]
    spent = [dict(r, eps=_text.short_exp(r["epsilon_strict"]), group=m == "LocalGroupDP")
             for m in ("HiGradAvgDP", "UserLDP", "LocalGroupDP") if (r := by.get((m, "paper")))]
    ran = sorted((r for r in runs if r["mode"] == "paper" and r["test_accuracy"] is not None),
                 key=lambda r: -r["test_accuracy"])
    hi, lg = by.get(("HiGradAvgDP", "paper")), by.get(("LocalGroupDP", "paper"))
    previous = (prev := res.get("previous")) and _text.beside_earlier(  # a rerun on old code too
        prev, runs, ("method", "mode"), ("epsilon", "epsilon_strict"), "test_accuracy", fmt)
    return dict(setup=res["scale"] != "smoke" and dict(setup, hidden=tuple(setup["hidden"])),
                hi=hi, lg=lg, above=hi and lg and lg["test_accuracy"] > hi["test_accuracy"],
                signal=hi and hi["mean_K"] / setup["batch_size"], model_name=setup["model"].upper(),
                rows=runs, order=" > ".join(r["method"] for r in ran), strict=bool(strict) and dict(
                    target=setup["target_epsilon"], runs=strict, spent=spent, spends=bool(spent),
                    rounds=sorted({r["rounds"] for r in strict})),
                previous=previous, code=res.get("code", "the current code"))


@declare.per_inputs
def context(inputs: declare.Inputs) -> dict:
    """Every name the page and the summary rows print: sections 1-2, 3 and 3b (the paper's
    ordering paired over seeds) where they ran, the exact numbers and the audits (``a1``-``a6``;
    LocalItemDP's ``a6`` is shown, not decided)."""
    data, rows = _runs.from_json(inputs.json(DATA)), _runs.read_if(inputs.data, SEEDS_CSV,
                                                                    SEED_FIELDS)
    acc, batch, train = data["accounting"], data["batch_statistics"], data.get("training")
    k, s, cells = acct.PAPER_K, inputs.exact["subject_dp"], _runs.cells_of(rows)
    audits = {f"a{i}": inputs.audit_check(n) for i, n in enumerate(AUDITS, 1)}
    ctx = dict(
        scale=data["scale"], seconds=data["seconds"], layout=acc["layout"], sigma_rows=acc["T"],
        model_dim=acct.PAPER_FEMNIST["model_dim"], steps=batch["steps"],
        methods=[dict(m, name=NAMES[m["method"]]) for m in acc["methods"]],
        batch_rows=[dict(zip(BATCH_KEYS, map(fmt, r.values()), strict=True))
                    for r in batch["rows"]], roles=batch["shakespeare_roles"],
        femnist=fmt(batch["rows"][0]["mean K"]), shakespeare=fmt(batch["rows"][1]["mean K"]),
        paper_k={n: v[0] for n, v in k.items()}, signal_femnist=k["femnist"][0] / k["femnist"][1],
        training=train and training_fields(train), writers=train and train["setup"]["num_subjects"],
        seeds=bool(rows) and dict(
            _runs.seed_scale(rows, ()), finished=sum(r["status"] == "ok" for r in rows),
            missing=[dict(name=NAMES[m], mode=mode, seeds=c["missing"])
                     for (m, mode), c in cells.items() if c["missing"]],
            methods=[dict(_text.cell_line(c, ("epsilon", "epsilon_strict"), fmt), name=NAMES[m],
                          mode=mode) for (m, mode), c in cells.items()]),
        claims=_claims.ordering_claims(
            {m: c for (m, mode), c in cells.items() if mode == "paper"}, PAPER_ORDER, NAMES.get,
            lambda m: f"{NAMES[m]} (paper mode)"),
        rule=stats.PRIMARY_RULE, s=s, **audits, sigma_verdict=stats.exact(stats.matches_spec(s)),
        higrad_verdict=stats.ONE_SEED,
        a6=inputs.audit_check("local_item_dp_femnist", "item_level_claim"),
        level_verdict=stats.exact(not any([x["exceeded"] for x in audits.values()] + [
            s[f"strict_{NAMES[m]}"] > 4 for m in acct.SUBJECT_METHODS])))
    t = ctx["training"]  # section 4's bullet on its one-seed ordering (a smoke run: no lg)
    ordering = t and t["lg"] and t["hi"] and _text.fill_block(PAGE, "ordering", ctx | t, True)
    return ctx | dict(ordering=ordering + "\n" if ordering else "")


def page(inputs: declare.Inputs, text: str = "") -> str:
    """docs/reproduction/subject_dp.md: the block ``page`` filled from :func:`context`."""
    return _text.fill_block(PAGE, "page", context(inputs)) + "\n"


def exact_numbers() -> dict:
    """The sigma table and strict epsilons of subject_dp.md (``exact_numbers.json``)."""
    acc = json.loads((declare.DATA / DATA).read_text())["accounting"]
    t1, t70 = ({t["T"]: t for t in acc["T"]}[n] for n in (1, 70))
    values = dict(sigma_T1=(t1["sigma"], ".4f"), sigma_T70=(t70["sigma"], ".4g"),
                  eps_16x25_T1=(t1["eps_16x25"], ".3f"), eps_16x6_T1=(t1["eps_16x6"], ".3f"),
                  **{f"strict_{NAMES[m['method']]}": (m["strict"]["epsilon"], ".4g")
                     for m in acc["methods"]})
    return {"subject_dp": {"page": "docs/reproduction/subject_dp.md", "spec": SUBJECT_SPEC,
                           "command": "python -m experiments.reproduce.subject_dp --scale cpu",
                           "values": values}}


PAPER = declare.Paper(
    exact=exact_numbers,
    name="subject_dp", title="Subject-level DP in FL (Marathe & Kanani)", order=40,
    template=PAGE, link="link", scales=("smoke", "cpu", "full"),
    figures=(declare.Figure("tables", "sections 1-2: accounting and batch statistics",
                            lambda scale: [], (DATA,), export, committed="cpu"),
             declare.Figure("training", "section 3: accuracy per method and mode, one seed",
                            training_configs, (DATA,), export, "test accuracy", committed="cpu"),
             declare.Figure("seeds", f"section 3b: final accuracy per method and mode over {SEEDS}"
                            " seeds", seeds_configs, (SEEDS_CSV,), export_seeds,
                            "final test accuracy", committed="cpu")),
    claims=declare.claims_from(context, PAGE, (
        ("sigma", "sigma for the paper's budget and horizontal composition", declare.EXACT,
         "tables"),
        ("subject_level", "UserLDP, LocalGroupDP and HiGradAvgDP are subject-level at the "
         "paper's sigma", declare.EXACT, "tables"),
        ("higrad", "HiGradAvgDP beats LocalGroupDP", declare.NOT_TESTED, "training"),
        ("seeds_ordering", "the paper's ordering FedAvg > LocalItemDP > HiGradAvgDP > "
         "LocalGroupDP > UserLDP (paper mode, over seeds)", declare.PAIRED, "seeds", "claims")),
        prefix="subject_dp"),
    pages=(declare.Page("docs/reproduction/subject_dp.md", (DATA, SEEDS_CSV), page),))

if __name__ == "__main__":  # the command the page names
    __import__("jaxfl.repro.cli", fromlist=["alias"]).alias("subject_dp")
