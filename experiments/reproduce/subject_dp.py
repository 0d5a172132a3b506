"""Marathe & Kanani, "Subject Granular Differential Privacy in Federated Learning" (arXiv
2206.03617 v1), declared (:data:`PAPER`). Figures ``tables`` (sections 1-2: the accounting of
the paper's FEMNIST setting and the subjects per batch of simulated layouts,
:func:`experiments.papers.subject_dp.tables`) and ``training`` (section 3: MNIST writers, each
method once) write ``subject_dp.json``; ``seeds`` (section 3b: those runs over five seeds, the
paper's ordering tested paired) writes ``subject_dp_seeds.csv``. The page (block ``page`` of
``templates/subject_dp.md``) and the summary rows are filled from one :func:`context`; every
number on the page states its privacy mode.
"""

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
AUDITS = ("HiGradAvgDP paper mode: item rate q_i + sqrt(s) round cut (10 items x 4 users)",
          "LocalGroupDP batch sigma_Z (subject: 4 of 8 items, q=0.5, d=128)",
          "user_ldp_counterexample", "user_ldp_femnist_counterexample",
          "higradavg_sqrt_s_cut_counterexample")  # the subject-level row's a1-a5
# The spec author's values of the sigma table (the summary's "sigma for the paper's budget" row).
SUBJECT_SPEC = {"sigma_T1": 0.6881, "sigma_T70": 1.5684, "eps_16x25_T1": 5.648,
                "eps_16x6_T1": 3.968}
fmt = _text.num


# --- generic (for the engine)


# --- the runs and their data


def training_configs(scale: str) -> list:
    """Section 3's runs: smoke, three on synthetic blobs; else every method in paper mode and
    the subject-level ones in strict mode (``full``: plus two on the skewed layout)."""
    if scale == "smoke":
        runs = [("femnist_like.py:variant=smoke", m, mode) for m, mode in (
            ("fedavg", "paper"), ("higradavg_dp", "paper"), ("higradavg_dp", "strict"))]
    else:
        runs = [("femnist_like.py", m, "paper") for m in NAMES]
        runs += [("femnist_like.py", m, "strict") for m in acct.SUBJECT_METHODS[::-1]]
        runs += [("skewed.py:alpha=16", m, "paper") for m in ("local_group_dp", "higradavg_dp")
                 if scale == "full"]
    fast = [] if scale == "smoke" else ["tight_accounting=False"]
    return [config_lib.load_config(str(CONFIGS / spec), [f"method={m}", f"mode={mode}", *fast])
            for spec, m, mode in runs]


def seeds_configs(scale: str) -> list:
    """The points of ``python -m experiments.sweep --config "experiments/configs/subject_dp/
    femnist_like.py:seeds=5" --set tight_accounting=False`` (same ids); smoke: the smoke
    variant's sweep."""
    smoke = scale == "smoke"
    return [p.config for p in config_lib.sweep_points(
        f"{CONFIGS / 'femnist_like.py'}:{'variant=smoke' if smoke else f'seeds={SEEDS}'}",
        [] if smoke else ["tight_accounting=False"])]


def export(run: declare.Run) -> None:
    """Writes the figure's section into ``run.data``'s data file (the others kept): ``tables``
    or ``training`` (the setup line's config fields, per run its :func:`_runs.run_numbers`, the
    mean K and Z of its last round, its sigma range and model size); ``seconds``: the whole
    computation's, summed over the sections last computed."""
    t0, base = time.time(), config_lib.load_config(str(CONFIGS / "femnist_like.py"))
    if run.figure.name == "tables":
        sections = papers_sdp.tables(base, smoke=run.scale == "smoke")
        seconds = time.time() - t0
    else:
        rows = []
        for cfg, run_dir in zip(run.configs, run.dirs, strict=True):
            s, recs = _runs.read_run(run_dir)
            last, sig = s.get("final", {}), s["info"].get("noise_multipliers")  # None: no noise
            name = NAMES[cfg.method] + (" (alpha 16)" if "skewed" in cfg.name else "")
            rows.append({"method": name, "mode": cfg.mode, **_runs.run_numbers(s),
                         "mean_K": float(last.get("num_subjects", float("nan"))),
                         "mean_Z": float(last.get("max_group", float("nan"))),
                         "seconds": recs[-1].get("elapsed_s"),
                         "sigma": [float(min(sig)), float(max(sig))] if sig and max(sig) else None,
                         "model_dim": papers_sdp.model_dim(cfg), "point_id": Path(run_dir).name})
        sections = {"training": {"scale": run.scale, "rows": rows,
                                 "setup": {k: getattr(base, k) for k in SETUP_KEYS}}}
        seconds = sum(r["seconds"] or 0.0 for r in rows)
    _runs.write_sections(run.data / DATA, sections, run.scale, seconds)


def export_seeds(run: declare.Run) -> list[dict]:
    """Writes :data:`SEEDS_CSV` (one :func:`_runs.point_row` per declared point, provenance
    columns) and ``training_seeds.png`` (95% t-interval bars of the finished seeds)."""
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
    """The seeds figure's CSV and plot from an existing sweep folder (an unfinished point is
    written as ``missing``)."""
    return declare.export_from_sweep(PAPER.figure("seeds"), sweep_dir, scale, data, figures)


def read_data(path=declare.DATA / DATA) -> dict:
    """``subject_dp.json`` (default: the committed one), its infinities as floats."""
    return _runs.from_json(json.loads(Path(path).read_text()))


# --- the page and the summary rows


def training_fields(res: dict) -> dict:
    """Section 3: the setup, the runs and their paper-mode ordering; per strict-mode run the
    sigma it needed for the target (the paper mode's beside it); the strict epsilon the
    paper-mode runs spend; the comparison with an earlier page, if any."""
    runs, setup = res["rows"], res["setup"]
    by = {(r["method"], r["mode"]): r for r in runs}

    def sigma(sig, digits):  # "18.1", or "0.98-1.05 by user" when the users' values differ
        lo, hi = (f"{v:.{digits}g}" for v in sig)
        return lo if lo == hi else f"{sig[0]:.3g}-{sig[1]:.3g} by user"

    def strict_run(r):
        note = ["no 1/B"] if r["method"] == "UserLDP" else []
        if paper := by.get((r["method"], "paper"), {}).get("sigma"):
            note.append(f"paper: {sigma(paper, 2)}")
        return dict(r, sigma=sigma(r["sigma"], 3), note="; ".join(note),
                    group=r["method"] == "LocalGroupDP", percent=100 * r["test_accuracy"])

    strict = [strict_run(r) for r in runs if r["mode"] == "strict" and r["sigma"] is not None]
    spent = [dict(r, eps=fmt(r["epsilon_strict"], 3, 2).replace("e+0", "e").replace("e+", "e"),
                  group=m == "LocalGroupDP")  # 3 digits, from 1e5 on 2 (2.7e9)
             for m in ("HiGradAvgDP", "UserLDP", "LocalGroupDP") if (r := by.get((m, "paper")))]
    ran = sorted((r for r in runs if r["mode"] == "paper" and r["test_accuracy"] is not None),
                 key=lambda r: -r["test_accuracy"])
    return dict(setup=res["scale"] != "smoke" and dict(setup, hidden=tuple(setup["hidden"])),
                rows=runs, order=" > ".join(r["method"] for r in ran), strict=bool(strict) and dict(
                    target=setup["target_epsilon"], runs=strict, spent=spent, spends=bool(spent),
                    rounds=sorted({r["rounds"] for r in strict})),
                previous=res.get("previous") and previous_fields(res))


def previous_fields(res: dict) -> dict:
    """Section 3 against an earlier page (``res["previous"]``: its source, its rows and
    optionally a ``check``, one run repeated on the earlier code): accuracy and loss side by
    side, and whether every privacy number is equal at the printed precision."""
    prev, now = res["previous"], {(r["method"], r["mode"]): r for r in res["rows"]}
    old, pairs = {(r["method"], r["mode"]): r for r in prev["rows"]}, []
    for key in (k for k in now if k in old):
        a, b = (" / ".join(fmt(float(x[k])) for k in ("epsilon", "epsilon_strict"))
                for x in (old[key], now[key]))
        pairs.append(dict(old={k: fmt(v) for k, v in old[key].items()}, eps=a, eps_now=b,
                          now={k: fmt(v) for k, v in now[key].items()}, equal=a == b))
    if check := prev.get("check"):
        key = (check["method"], check["mode"])
        accuracy, earlier = fmt(check["test_accuracy"]), fmt(old[key]["test_accuracy"])
        check = dict(check, accuracy=accuracy, earlier=earlier, reproduces=accuracy == earlier,
                     now=fmt(now[key]["test_accuracy"]), note=check.get("note"), steps="; ".join(
                         f"{fmt(h['test_accuracy'])} from {h['commit']} ({h['change']})"
                         for h in check.get("history") or []))
    count = sum(p["equal"] for p in pairs)
    return dict(code=res.get("code", "the current code"), source=prev["source"], pairs=pairs,
                moved=sum(p["old"]["test_accuracy"] != p["now"]["test_accuracy"] for p in pairs),
                count=count, runs=len(pairs), all_equal=count == len(pairs), check=check)


def seeds_fields(rows: list[dict]) -> dict:
    """Section 3b: per method and mode its finished seeds of those declared, the 95%
    t-interval of their accuracy, their rounds and epsilons; the missing points."""
    def method(key, c):
        ok = c["ok"]
        return dict(name=NAMES[key[0]], mode=key[1], finished=len(c["values"]),
                    declared=len(c["seeds"]), accuracy=stats.fmt(c["interval"]),
                    n=c["interval"]["n"], epsilon=_text.span([r["epsilon"] for r in ok], fmt),
                    epsilon_strict=_text.span([r["epsilon_strict"] for r in ok], fmt),
                    rounds=", ".join(str(n) for n in sorted({r["rounds"] for r in ok})) or "-",
                    missing=f"seeds {c['missing']} not run" if c["missing"] else "-")

    cells = _runs.cells_of(rows)
    missing = [f"{NAMES[m]} {mode} (seeds {', '.join(map(str, c['missing']))})"
               for (m, mode), c in cells.items() if c["missing"]]
    return dict(seed_list=", ".join(map(str, sorted({r["seed"] for r in rows}))),
                n_seeds=len({r["seed"] for r in rows}), declared=len(rows),
                finished=sum(r["status"] == "ok" for r in rows), missing="; ".join(missing),
                methods=[method(k, c) for k, c in cells.items()])


@declare.per_inputs
def context(inputs: declare.Inputs) -> dict:
    """Every name the page and the summary rows print: sections 1-2 from the data file,
    section 3 from its ``training`` section and 3b (the paper's ordering, paired over seeds,
    :func:`_claims.ordering_claims`) from the per-seed CSV where they ran; the exact numbers
    (each against the spec author's at its printed precision) and the audits (``a1``-``a6``:
    lower bound ``lb``, claim ``p``, ``cmp``; LocalItemDP's ``a6`` is shown, not decided)."""
    data, rows = read_data(inputs.data / DATA), _runs.read_if(inputs.data, SEEDS_CSV, SEED_FIELDS)
    acc, batch, train = data["accounting"], data["batch_statistics"], data.get("training")
    k, s = acct.PAPER_K, inputs.exact["subject_dp"]
    cells = {m: c for (m, mode), c in _runs.cells_of(rows).items() if mode == "paper"}
    audits = {f"a{i}": inputs.audit_check(n) for i, n in enumerate(AUDITS, 1)}
    over = any(s[f"strict_{NAMES[m]}"] > 4 for m in acct.SUBJECT_METHODS)
    ctx = dict(
        scale=data["scale"], seconds=data["seconds"], layout=acc["layout"], sigma_rows=acc["T"],
        model_dim=acct.PAPER_FEMNIST["model_dim"], steps=batch["steps"],
        methods=[dict(m, name=NAMES[m["method"]]) for m in acc["methods"]],
        batch_rows=[dict(zip(BATCH_KEYS, map(fmt, r.values()), strict=True))
                    for r in batch["rows"]], roles=batch["shakespeare_roles"],
        paper_k={name: v[0] for name, v in k.items()}, signal_femnist=k["femnist"][0] / k[
            "femnist"][1], femnist=fmt(batch["rows"][0]["mean K"]),
        shakespeare=fmt(batch["rows"][1]["mean K"]), training=train and training_fields(train),
        writers=train and train["setup"]["num_subjects"], seeds=bool(rows) and seeds_fields(rows),
        claims=_claims.ordering_claims(cells, PAPER_ORDER, NAMES.get,
                                       lambda m: f"{NAMES[m]} (paper mode)"),
        rule=stats.PRIMARY_RULE, s=s, **audits,
        a6=inputs.audit_check("local_item_dp_femnist", "item_level_claim"),
        sigma_verdict=stats.exact(all(abs(s[key] - v) <= 0.6 * 10 ** -len(
            format(s[key], "g").split(".")[-1]) for key, v in s["_spec"].items())),
        level_verdict=stats.exact(not (over or any(x["exceeded"] for x in audits.values()))))
    if train:  # section 3's paper-mode HiGradAvgDP and LocalGroupDP (a smoke run: no LocalGroupDP)
        by = {(r["method"], r["mode"]): r for r in train["rows"]}
        hi, lg = by.get(("HiGradAvgDP", "paper")), by.get(("LocalGroupDP", "paper"))
        ctx |= dict(hi=hi, lg=lg, higrad_verdict=stats.ONE_SEED,
                    higrad_model=train["setup"]["model"].upper(),
                    above=hi and lg and lg["test_accuracy"] > hi["test_accuracy"],
                    signal=hi and hi["mean_K"] / train["setup"]["batch_size"])
    ordering = ctx.get("lg") and ctx["hi"] and _text.fill_block(PAGE, "ordering", ctx, True)
    return ctx | dict(ordering=ordering + "\n" if ordering else "")


def page(inputs: declare.Inputs, text: str = "") -> str:
    """docs/reproduction/subject_dp.md: the block ``page`` filled from :func:`context`."""
    return _text.fill_block(PAGE, "page", context(inputs)) + "\n"


def exact_numbers() -> dict:
    """The sigma table and strict epsilons of subject_dp.md (``exact_numbers.json``)."""
    acc = json.loads((declare.DATA / DATA).read_text())["accounting"]
    by_t = {t["T"]: t for t in acc["T"]}
    strict = {m["method"]: m["strict"]["epsilon"] for m in acc["methods"]}
    values = {"sigma_T1": (by_t[1]["sigma"], ".4f"), "sigma_T70": (by_t[70]["sigma"], ".4g"),
              "eps_16x25_T1": (by_t[1]["eps_16x25"], ".3f"),
              "eps_16x6_T1": (by_t[1]["eps_16x6"], ".3f")}
    values |= {f"strict_{NAMES[m]}": (strict[m], ".4g")
               for m in ("local_item_dp", *acct.SUBJECT_METHODS)}
    return {"subject_dp": {"page": "docs/reproduction/subject_dp.md",
                           "command": "python -m experiments.reproduce.subject_dp --scale cpu",
                           "spec": SUBJECT_SPEC, "values": values}}


# --- the declarations


def _claim(name: str, text: str, rule: declare.Rule, figure: str, row: str,
           rows: str | None = None) -> declare.Claim:
    """A claim whose summary row (block ``row_subject_<row>``) is filled from :func:`context`."""
    block = f"row_subject_{row}"
    return declare.Claim(name, text, rule, block,
                         declare.from_context(context, PAGE, block, rows), figure)


PAPER = declare.Paper(
    exact=exact_numbers,
    name="subject_dp", title="Subject-level DP in FL (Marathe & Kanani)", order=40,
    template=PAGE, link="link", scales=("smoke", "cpu", "full"),
    figures=(declare.Figure("tables", "sections 1-2: accounting and batch statistics",
                            lambda scale: [], (DATA,), export=export, committed="cpu"),
             declare.Figure("training", "section 3: accuracy per method and mode, one seed",
                            training_configs, (DATA,), export=export,
                            metric="test accuracy", committed="cpu"),
             declare.Figure("seeds", "section 3b: final accuracy per method and mode over "
                            f"{SEEDS} seeds", seeds_configs, (SEEDS_CSV,), export=export_seeds,
                            metric="final test accuracy", committed="cpu")),
    claims=(_claim("sigma", "sigma for the paper's budget and horizontal composition",
                   declare.EXACT, "tables", "sigma"),
            _claim("subject_level", "UserLDP, LocalGroupDP and HiGradAvgDP are subject-level at "
                   "the paper's sigma", declare.EXACT, "tables", "level"),
            _claim("higrad", "HiGradAvgDP beats LocalGroupDP", declare.NOT_TESTED, "training",
                   "higrad"),
            _claim("seeds_ordering", "the paper's ordering FedAvg > LocalItemDP > HiGradAvgDP > "
                   "LocalGroupDP > UserLDP (paper mode, over seeds)", declare.PAIRED, "seeds",
                   "seeds", "claims")),
    pages=(declare.Page("docs/reproduction/subject_dp.md", (DATA, SEEDS_CSV), page),))

if __name__ == "__main__":  # the command the page names
    __import__("jaxfl.repro.cli", fromlist=["alias"]).alias("subject_dp")
