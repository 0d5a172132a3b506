"""Marathe & Kanani, "Subject Granular Differential Privacy in Federated Learning" (arXiv
2206.03617 v1), declared (:data:`PAPER`); both figures update their sections of
``subject_dp.json``, which the page is rendered from: ``tables`` (sections 1-2, one
``default_rng(0)``): accounting of the paper's FEMNIST setting (n_i = 35,725, B = 512, 16
users, eps = 4, delta = 1e-5) and the distinct subjects K and largest group Z per batch on
simulated layouts; ``training`` (section 3): MNIST with synthetic writers, every method in
paper mode and the subject-level ones in strict mode, one resumable sweep; ``seeds`` (section
3b, its own ``subject_dp_seeds.csv``): the same runs over five seeds, the paper's ordering
tested paired (Holm over the paper's paired comparisons). Every table states
the privacy mode of each number; the wording is ``templates/subject_dp.md``.
"""

from __future__ import annotations

import functools
import json
import textwrap
import time
from pathlib import Path

import numpy as np

from experiments import config as config_lib
from experiments.papers import subject_dp as papers_sdp
from experiments.reproduce import _common as _runs
from experiments.reproduce import declare, stats
from experiments.reproduce.claims import NOT_RUN, chain, decide
from jaxfl import random as jrandom
from jaxfl import tree as jtree
from jaxfl.accounting import subject_dp as acct
from jaxfl.accounting.report import jsonable
from jaxfl.algorithms import subject_dp as sdp
from jaxfl.data import subjects, text
from jaxfl.data.subjects import femnist_like_layout, lognormal_layout

CONFIGS = Path(__file__).resolve().parent.parent / "configs" / "subject_dp"
DATA = "subject_dp.json"
FEMNIST_B, USERS = acct.PAPER_FEMNIST["batch_size"], acct.PAPER_FEMNIST["num_users"]
FEMNIST_MODEL_DIM, PAPER_K = acct.PAPER_FEMNIST["model_dim"], acct.PAPER_K
NAMES = {"fedavg": "FedAvg", "local_item_dp": "LocalItemDP", "user_ldp": "UserLDP",
         "local_group_dp": "LocalGroupDP", "higradavg_dp": "HiGradAvgDP"}
fmt = _runs.num
prose = functools.partial(_runs.prose, "subject_dp")  # a block of templates/subject_dp.md


def rows(cells) -> str:
    """Markdown table lines (the header is the template's), numbers as :func:`fmt` writes
    them."""
    return "\n".join(_runs.row([fmt(c) for c in r]) for r in cells)


def _cells(items, keys=None) -> list[dict]:
    """Each dict with its values as :func:`fmt` writes them (``keys``: renamed, in order), for
    a table section of the template."""
    return [{(keys[i] if keys else k): fmt(v) for i, (k, v) in enumerate(r.items())}
            for r in items]


def batch_stats_row(name, d, batch_size, steps, rng, paper=""):
    """One row of Section 2 (:data:`BATCH_HEAD`): the layout ``d``'s sampled batches
    (:func:`jaxfl.algorithms.subject_dp.batch_statistics`) summarised by
    :func:`jaxfl.accounting.subject_dp.batch_summary`."""
    st = sdp.batch_statistics(d.train, batch_size=batch_size, steps=steps, rng=rng)
    b = acct.batch_summary(st["K"], st["Z"])
    n_i = float(np.mean(np.asarray(d.train.num_examples)))
    return [name, d.num_subjects, int(n_i), batch_size, b["K"], b["Z"], b["mode"], b["freq"],
            paper]


def accounting_data(scale: str, rng) -> dict:
    """Section 1: :func:`jaxfl.accounting.subject_dp.paper_accounting` on a simulated LEAF-like
    layout (``rng``; smoke: smaller, one T, fewer group sizes, no tight LocalItemDP route)."""
    smoke = scale == "smoke"
    d = femnist_like_layout(rng, num_subjects=350 if smoke else 3500)
    fed = sdp.federation_of(d.train, batch_size=FEMNIST_B, local_steps=1)
    return acct.paper_accounting(fed, num_subjects=d.num_subjects,
                                 local_steps=(1,) if smoke else (1, 70),
                                 group_sizes=range(1, 4 if smoke else 7), tight_item=not smoke)


BATCH_HEAD = ["layout", "subjects", "mean n_i", "B", "mean K", "mean Z", "mode Z",
              "Z frequencies", "paper"]
_BATCH_KEYS = ("layout", "subjects", "n_i", "B", "K", "Z", "mode", "freq", "paper")


def batch_data(scale: str, rng) -> dict:
    """Section 2's rows (:func:`batch_stats_row`, keyed by :data:`BATCH_HEAD`) and the number
    of roles in the tiny-Shakespeare file (None without it)."""
    steps = 20 if scale == "smoke" else 100
    rows = [batch_stats_row("FEMNIST-like (simulated ids), uniform",
                            femnist_like_layout(rng, num_subjects=3500), 512, steps, rng,
                            "K 475, Z mostly 3"),
            batch_stats_row("Shakespeare-like (660, lognormal 1.0)",
                            lognormal_layout(rng, num_subjects=660, total=16 * 8910,
                                             sigma_log=1.0), 100, steps, rng, "K 86, Z mostly 3")]
    roles = None
    try:
        role = subjects.shakespeare_by_role(num_users=USERS, rng=rng, stride=10)
        rows.append(batch_stats_row(f"tiny-Shakespeare by role ({role.num_subjects} roles)",
                                    role, 100, steps, rng, "(different data)"))
        roles = text.role_count()
    except FileNotFoundError:
        pass
    cpu = papers_sdp.task(config_lib.load_config(str(CONFIGS / "femnist_like.py"))).info[
        "subjects"]
    rows.append(batch_stats_row(f"MNIST writers, {cpu.num_subjects} (CPU runs)", cpu, 64, steps,
                                rng, "-"))
    for al in (16.0,) if scale == "smoke" else (2.0, 4.0, 8.0, 16.0):
        rows.append(batch_stats_row(f"FEMNIST-like, skewed alpha = {al:g}",
                                    femnist_like_layout(rng, num_subjects=3500, alpha=al), 512,
                                    steps, rng, {2.0: "Z 3", 16.0: "K 310, Z 6"}.get(al, "")))
    return {"steps": steps, "shakespeare_roles": roles,
            "rows": [dict(zip(BATCH_HEAD, r, strict=True)) for r in rows]}


TRAIN_KEYS = ("method", "mode", "rounds", "test_accuracy", "train_loss", "epsilon",
              "epsilon_strict", "mean_K", "mean_Z", "seconds")
SETUP_KEYS = ("dataset", "num_subjects", "num_users", "model", "hidden", "batch_size",
              "local_steps", "clip_norm", "learning_rate", "nonprivate_learning_rate",
              "target_epsilon", "delta", "nominal_rounds")


def training_configs(scale: str) -> list:
    """Section 3's runs: smoke, three on synthetic blobs; else every method in paper mode and
    the subject-level ones in strict mode (``full``: plus the skewed layout)."""
    if scale == "smoke":
        runs = [("femnist_like.py:variant=smoke", m, mode, []) for m, mode in (
            ("fedavg", "paper"), ("higradavg_dp", "paper"), ("higradavg_dp", "strict"))]
    else:
        fast = ["tight_accounting=False"]
        runs = [("femnist_like.py", m, "paper", fast) for m in NAMES]
        runs += [("femnist_like.py", m, "strict", fast)
                 for m in ("higradavg_dp", "local_group_dp", "user_ldp")]
        runs += [("skewed.py:alpha=16", m, "paper", fast)
                 for m in ("local_group_dp", "higradavg_dp") if scale == "full"]
    return [config_lib.load_config(str(CONFIGS / spec), [f"method={m}", f"mode={mode}", *extra])
            for spec, m, mode, extra in runs]


def _final(s: dict) -> dict:
    """A finished run's rounds, final test accuracy and training loss, and the epsilons of its
    own privacy report and of the strict one (its own, in strict mode)."""
    final, own = s.get("final", {}), s["privacy"]
    strict = own if own["mode"] == "strict" else s.get("privacy_strict", own)
    return {"rounds": s["rounds"], "test_accuracy": final.get("test_accuracy"),
            "train_loss": final.get("train_loss"), "epsilon": float(own["epsilon"]),
            "epsilon_strict": float(strict["epsilon"])}


def training_data(configs, dirs, scale: str) -> dict:
    """Section 3's data: the config's setup and one row per run (its final metrics and both
    privacy reports)."""
    rows = []
    for cfg, run_dir in zip(configs, dirs, strict=True):
        s, recs = _runs.read_run(run_dir)
        final, model = s.get("final", {}), papers_sdp.task(cfg).model
        sig = s["info"].get("noise_multipliers")  # None: FedAvg, or LocalGroupDP's sigma_Z
        rows.append({"method": NAMES[cfg.method] + (" (alpha 16)" if "skewed" in cfg.name
                                                    else ""), "mode": cfg.mode, **_final(s),
                     "mean_K": float(final.get("num_subjects", float("nan"))),
                     "mean_Z": float(final.get("max_group", float("nan"))),
                     "seconds": recs[-1].get("elapsed_s"),
                     "sigma": None if not sig or not max(sig) else [float(min(sig)),
                                                                   float(max(sig))],
                     "model_dim": int(jtree.num_params(model.init(
                         jrandom.key_streams(cfg.seed, ("init",))["init"]))),
                     "point_id": Path(run_dir).name})
    base = config_lib.load_config(str(CONFIGS / "femnist_like.py"))
    return {"scale": scale, "setup": {k: getattr(base, k) for k in SETUP_KEYS}, "rows": rows}


def _range(sig: list[float], digits: int) -> str:
    """A per-user sigma range ("18.1", or "0.98-1.05 by user" when the users' values differ)."""
    lo, hi = (f"{v:.{digits}g}" for v in sig)
    return lo if lo == hi else f"{sig[0]:.3g}-{sig[1]:.3g} by user"


def _short(v: float) -> str:
    """3 significant digits; from 1e5 on 2, exponents written short (2.7e9)."""
    return f"{v:.3g}" if v < 1e5 else f"{v:.2g}".replace("e+0", "e").replace("e+", "e")


def _and(items: list[str]) -> str:
    """"a", "a and b", "a, b and c"."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def training_text(res: dict) -> str:
    """Section 3: the runs, and for the strict-mode runs the sigma each needed for the target
    (paper-mode sigma beside it), their accuracy and the strict epsilon the paper-mode runs
    spend (one seed: no verdict); then the comparison with an earlier page, if any."""
    runs, c = res["rows"], res["setup"]
    by = {(r["method"], r["mode"]): r for r in runs}
    paper_rows = sorted((r for r in runs if r["mode"] == "paper" and r["test_accuracy"]
                         is not None), key=lambda r: -r["test_accuracy"])
    strict, needs = [r for r in runs if r["mode"] == "strict" and r["sigma"] is not None], []
    for r in strict:
        paper = by.get((r["method"], "paper"))
        note = ["no 1/B"] if r["method"] == "UserLDP" else []
        if paper is not None and paper["sigma"] is not None:
            note.append(f"paper: {_range(paper['sigma'], 2)}")
        what = "fixed-noise LocalGroupDP" if r["method"] == "LocalGroupDP" else r["method"]
        needs.append(f"{_range(r['sigma'], 3)} for {what}"
                     + (f" ({'; '.join(note)})" if note else ""))
    spent = [f"{_short(r['epsilon_strict'])} ({m}" + (" " + prose(
        "spent_local_group", model_dim=f"{r['model_dim']:,}") if m == "LocalGroupDP"
        else "") + ")" for m in ("HiGradAvgDP", "UserLDP", "LocalGroupDP")
        if (r := by.get((m, "paper"))) is not None]
    return prose("training", setup={} if res["scale"] == "smoke" else dict(
        c, hidden=tuple(c["hidden"])), order=" > ".join(r["method"] for r in paper_rows),
        rows=_cells({k: r[k] for k in TRAIN_KEYS} for r in runs), strict=strict and dict(
            target_epsilon=f"{c['target_epsilon']:g}", sigmas=_and(needs),
            rounds=_and([str(n) for n in sorted({r["rounds"] for r in strict})]),
            accuracies=_and([f"{r['method']} {100 * r['test_accuracy']:.3g}% (train loss "
                             f"{fmt(r['train_loss'])})" for r in strict]),
            spent=spent and _and(spent)),
        previous=previous_text(res) if res.get("previous") else "") + "\n"


PRIVACY_KEYS = ("epsilon", "epsilon_strict")


def previous_text(res: dict) -> str:
    """Section 3 against an earlier page's numbers (``res["previous"]``: its source, its rows,
    and optionally a ``check``, one run repeated on the earlier code): accuracy and loss side
    by side, and whether every privacy number is equal at the printed precision."""
    prev = res["previous"]
    old = {(r["method"], r["mode"]): r for r in prev["rows"]}
    pairs = [(old[k], r) for r in res["rows"] if (k := (r["method"], r["mode"])) in old]
    eps = [[" / ".join(fmt(float(x[k])) for k in PRIVACY_KEYS) for x in p] for p in pairs]
    text = prose("previous", code=res.get("code", "the current code"), source=prev["source"],
                 moved=sum(fmt(o["test_accuracy"]) != fmt(r["test_accuracy"]) for o, r in pairs),
                 runs=len(pairs), all_equal=all(a == b for a, b in eps),
                 count=sum(a == b for a, b in eps), rows=rows(
                     [r["method"], r["mode"], o["test_accuracy"], r["test_accuracy"],
                      o["train_loss"], r["train_loss"], a, "equal" if a == b else b]
                     for (o, r), (a, b) in zip(pairs, eps, strict=True)))
    if chk := prev.get("check"):
        key = (chk["method"], chk["mode"])
        now = next(r for r in res["rows"] if (r["method"], r["mode"]) == key)
        text += "\n\n" + prose(
            "check", method=chk["method"], mode=chk["mode"], commit=chk["commit"],
            accuracy=fmt(chk["test_accuracy"]), earlier=fmt(old[key]["test_accuracy"]),
            now=fmt(now["test_accuracy"]),
            reproduces=fmt(chk["test_accuracy"]) == fmt(old[key]["test_accuracy"]),
            steps="; ".join(f"{fmt(h['test_accuracy'])} from {h['commit']} ({h['change']})"
                            for h in chk.get("history") or []),
            note=f" {chk['note']}." if chk.get("note") else "")
    return text


def discrepancies_text(data: dict) -> str:
    """Section 4: what cannot match the paper, citing the other sections' data (a one-seed
    ordering is described, not tested). Paper numbers: Sec. 4.1 (distinct subjects per batch)
    and Sec. 4.2 (accuracies)."""
    train = data.get("training")
    k_sim = [r["mean K"] for r in data["batch_statistics"]["rows"][:2]]  # FEMNIST-, Shakesp.-like
    by = {(r["method"], r["mode"]): r for r in (train or {}).get("rows", [])}
    lg, hi = by.get(("LocalGroupDP", "paper")), by.get(("HiGradAvgDP", "paper"))
    ordering = ""
    if lg and hi:
        comparison = prose("local_group_above" if lg["test_accuracy"] > hi["test_accuracy"]
                           else "local_group_below", local_group=fmt(lg["test_accuracy"]),
                           higradavg=fmt(hi["test_accuracy"]))
        ordering = textwrap.fill(prose(
            "ordering", comparison=comparison,
            signal=f"{hi['mean_K'] / train['setup']['batch_size']:.2f}",
            signal_femnist=f"{PAPER_K['femnist'][0] / PAPER_K['femnist'][1]:.2f}"),
            width=95, subsequent_indent="  ") + "\n"
    return prose("discrepancies", roles=data["batch_statistics"]["shakespeare_roles"],
                 writers=f"{train['setup']['num_subjects']} " if train else "",
                 paper_femnist=PAPER_K["femnist"][0], paper_shakespeare=PAPER_K["shakespeare"][0],
                 femnist=fmt(k_sim[0]), shakespeare=fmt(k_sim[1]), ordering=ordering,
                 sigmas=", ".join(f"{t['sigma']:.2f} for T = {t['T']}"
                                  for t in data["accounting"]["T"])) + "\n"


def render(data: dict, seeds=None) -> str:
    """The page from the data (``subject_dp.json``, :func:`read_data`; ``seeds``: the path of
    :data:`SEEDS_CSV`, section 3b when it exists)."""
    acc, lay = data["accounting"], data["accounting"]["layout"]
    parts = [prose("accounting", sigma_rows=[dict(t, sigma_z=" / ".join(
        f"{v:.4g}" for v in t["sigma_z"])) for t in acc["T"]], methods=[dict(
            m, name=NAMES[m["method"]], eps4=fmt(m["strict_rounds_for_eps4"]))
            for m in acc["methods"]], model_dim=FEMNIST_MODEL_DIM, **lay) + "\n",
             prose("batch_statistics", steps=data["batch_statistics"]["steps"], rows=_cells(
                 data["batch_statistics"]["rows"], _BATCH_KEYS)) + "\n"]
    if data.get("training"):
        parts.append(training_text(data["training"]))
    if seeds is not None and Path(seeds).exists():
        parts.append(seeds_text(read_seeds(seeds)))
    parts.append(discrepancies_text(data))
    header = prose("header", scale=data["scale"], seconds=f"{data['seconds']:.0f}")
    return header + "\n\n" + "\n".join(parts)


def _from_json(v):
    """The inverse of :func:`jaxfl.accounting.report.jsonable` on the data file: "inf",
    "-inf" and "nan" strings as floats."""
    if isinstance(v, dict):
        return {k: _from_json(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_from_json(x) for x in v]
    return float(v) if v in ("inf", "-inf", "nan") else v


def read_data(path=declare.DATA / DATA) -> dict:
    return _from_json(json.loads(Path(path).read_text()))


def _export(run: declare.Run) -> None:
    """Writes the figure's sections into the data file of ``run.data`` (the other sections
    kept); ``seconds``: the whole computation's, summed over the sections last computed."""
    t0 = time.time()
    if run.figure.name == "tables":  # one default_rng(0), accounting first
        rng = np.random.default_rng(0)
        sections = {"accounting": accounting_data(run.scale, rng),
                    "batch_statistics": batch_data(run.scale, rng)}
        seconds = time.time() - t0
    else:
        sections = {"training": training_data(run.configs, run.dirs, run.scale)}
        seconds = sum(r["seconds"] or 0.0 for r in sections["training"]["rows"])
    path = run.data / DATA
    data = json.loads(path.read_text()) if path.exists() else {}
    spent = {**data.get("section_seconds", {}), **{k: seconds for k in sections}}
    data.update(sections, scale=run.scale, section_seconds=spent, seconds=sum(spent.values()),
                provenance=_runs.provenance())
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(jsonable(data), indent=1) + "\n")


def _sigma_row(i: declare.Inputs) -> dict:
    s = i.exact["subject_dp"]
    match = all(abs(s[k] - v) <= 0.6 * 10 ** -(len(format(s[k], "g").split(".")[-1]))
                for k, v in s["_spec"].items())
    return dict(s=s, verdict=stats.exact(match))


def _level_row(i: declare.Inputs) -> dict:
    """The subject-level row: the strict epsilons, and per audit (``a1``-``a6``) its lower bound
    ``lb``, the claim ``p`` and ``cmp``; LocalItemDP (``a6``, claimed at item level) is shown,
    not in the verdict."""
    s = i.exact["subject_dp"]
    a = [i.audit_check(n) for n in (
        "HiGradAvgDP paper mode: item rate q_i + sqrt(s) round cut (10 items x 4 users)",
        "LocalGroupDP batch sigma_Z (subject: 4 of 8 items, q=0.5, d=128)",
        "user_ldp_counterexample", "user_ldp_femnist_counterexample",
        "higradavg_sqrt_s_cut_counterexample")]
    over = any(s[k] > 4 for k in ("strict_UserLDP", "strict_LocalGroupDP", "strict_HiGradAvgDP"))
    return dict(s=s, **{f"a{k}": x for k, x in enumerate(a, 1)},
                a6=i.audit_check("local_item_dp_femnist", "item_level_claim"),
                verdict=stats.exact(not (over or any(x["exceeded"] for x in a))))


# Section 3b: the femnist_like runs over seeds (seeds vary the partition of the subjects over
# the users and the noise), one resumable sweep; the paper's ordering tested paired.
SEEDS_CSV = "subject_dp_seeds.csv"
SEEDS = 5
SEED_FIELDS = dict(method=str, mode=str, seed=int, rounds=int, test_accuracy=float,
                   train_loss=float, epsilon=float, epsilon_strict=float, status=str)
PAPER_ORDER = ("fedavg", "local_item_dp", "higradavg_dp", "local_group_dp", "user_ldp")


def seeds_configs(scale: str) -> list:
    """The seeds figure's runs: ``femnist_like.py:seeds=5`` (every method in paper mode and
    the subject-level ones and LocalItemDP in strict mode, FedAvg once, seeds 0-4) with
    ``tight_accounting=False``, as ``python -m experiments.sweep --config
    "experiments/configs/subject_dp/femnist_like.py:seeds=5" --set tight_accounting=False``
    runs them (same point ids); smoke: the smoke variant's sweep."""
    arg = "variant=smoke" if scale == "smoke" else f"seeds={SEEDS}"
    return [p.config for p in _runs.sweep_points(f"{CONFIGS / 'femnist_like.py'}:{arg}", [
        "tight_accounting=False"] if scale != "smoke" else [])]


def seed_row(cfg, summary, records) -> dict:
    """One CSV row: the final metrics and both privacy reports of a finished point, else the
    point with ``status`` ``missing`` (declared, not run)."""
    row = {"method": cfg.method, "mode": cfg.mode, "seed": cfg.seed}
    return {**row, "status": "missing"} if summary is None else {
        **row, **_final(summary), "status": "ok"}


def export_seeds(run: declare.Run) -> list[dict]:
    """Writes :data:`SEEDS_CSV` (one row per declared point, :func:`seed_row`, provenance
    columns) and ``training_seeds.png`` in ``run.figures`` (the committed one:
    ``docs/figures/subject_dp/``); returns the rows."""
    rows = _runs.export_runs(run, seed_row, run.data / SEEDS_CSV, SEED_FIELDS)
    plot_seeds(read_seeds(run.data / SEEDS_CSV), run.figures / "training_seeds.png")
    return rows


def export_sweep(sweep_dir, scale: str = "cpu", data=declare.DATA,
                 figures=declare.ROOT / "docs" / "figures" / "subject_dp") -> list[dict]:
    """:func:`export_seeds` of the points of :func:`seeds_configs` in an existing sweep folder
    (``sweep_dir/points/<config hash>``, e.g. one run by ``python -m experiments.sweep``),
    running nothing: an unfinished point is written as ``missing``."""
    from jaxfl import metrics

    configs = seeds_configs(scale)
    dirs = [Path(sweep_dir) / "points" / metrics.config_hash(c) for c in configs]
    return export_seeds(declare.Run(PAPER.figure("seeds"), scale, configs, dirs,
                                    Path(sweep_dir), Path(data), Path(figures), ("seeds",)))


def read_seeds(path) -> list[dict]:
    """The rows of :data:`SEEDS_CSV` (numbers parsed; a missing point's cells None)."""
    return _runs.read_rows(path, types=SEED_FIELDS)


def seed_cells(rows: list[dict]) -> dict:
    """``(method, mode)`` -> per-seed accuracy (seed -> value, finished points only), its
    :func:`~experiments.reproduce.stats.interval`, the declared and missing seeds and the
    finished rows, in the CSV's order."""
    cells = {}
    for key, rs in _runs.group(rows, lambda r: (r["method"], r["mode"])).items():
        ok = [r for r in rs if r["status"] == "ok" and r["test_accuracy"] is not None]
        acc = {r["seed"]: r["test_accuracy"] for r in ok}
        cells[key] = {"acc": acc, "seeds": [r["seed"] for r in rs], "ok": ok,
                      "missing": [r["seed"] for r in rs if r not in ok],
                      "interval": stats.interval(acc.values())}
    return cells


def seed_claims(rows: list[dict]) -> list[dict]:
    """The paper's ordering (:data:`PAPER_ORDER`, paper mode, final test accuracy) over seeds,
    restricted to the methods with two or more finished seeds: each adjacent pair a paired
    comparison, all one Holm family (:func:`experiments.reproduce.claims.decide`); a method of
    the chain without seeds gives one row, verdict ``not run``, with its missing points."""
    cells = seed_cells(rows)
    ran = [m for m in PAPER_ORDER if cells.get((m, "paper"), {"interval": {"n": 0}})[
        "interval"]["n"] >= 2]
    out = [dict(claim=r["claim"], verdict=r["verdict"], interval_verdict=r["interval_verdict"],
                paired=stats.fmt_paired(p["d"]), measured=f"{NAMES[p['cmp'].a]} "
                f"{stats.fmt(p['a'])} vs {NAMES[p['cmp'].b]} {stats.fmt(p['b'])}")
           for r in decide(chain(ran, claim=lambda a, b: f"{NAMES[a]} > {NAMES[b]}"),
                           lambda m: cells[(m, "paper")]["acc"]) for p in r["parts"]]
    for m in (m for m in PAPER_ORDER if m not in ran):
        c = cells.get((m, "paper"), {"missing": [], "seeds": []})
        out.append({"claim": f"{NAMES[m]} in the ordering", "verdict": NOT_RUN,
                    "interval_verdict": "-", "paired": "-",
                    "measured": f"seeds {c['missing']} of {NAMES[m]} (paper mode) not run"
                    if c["seeds"] else f"{NAMES[m]} (paper mode) not declared"})
    return out


def _seed_method(cells, key) -> dict:
    c = cells[key]
    eps = [r["epsilon"] for r in c["ok"]]
    strict = [r["epsilon_strict"] for r in c["ok"]]
    rounds = sorted({r["rounds"] for r in c["ok"]})

    def span(v):
        return "-" if not v else fmt(min(v)) if fmt(min(v)) == fmt(max(v)) else (
            f"{fmt(min(v))} - {fmt(max(v))}")

    return {"method": NAMES[key[0]], "mode": key[1],
            "finished": f"{len(c['acc'])} of {len(c['seeds'])}",
            "accuracy": stats.fmt(c["interval"]) + (f" (n={c['interval']['n']})"
                                                    if c["interval"]["n"] else ""),
            "rounds": ", ".join(map(str, rounds)) or "-", "epsilon": span(eps),
            "epsilon_strict": span(strict),
            "missing": f"seeds {c['missing']} not run" if c["missing"] else "-"}


def seeds_text(rows: list[dict]) -> str:
    """Section 3b: the per-method table (95% t-intervals over the finished seeds), the points
    finished of those declared (each missing one listed) and the claims table."""
    cells = seed_cells(rows)
    missing = [f"{NAMES[m]} {mode} (seeds {', '.join(map(str, c['missing']))})"
               for (m, mode), c in cells.items() if c["missing"]]
    seeds = sorted({r["seed"] for r in rows})
    return prose("seeds", seed_list=", ".join(map(str, seeds)), declared=len(rows),
                 finished=sum(r["status"] == "ok" for r in rows), missing="; ".join(missing),
                 methods=[_seed_method(cells, k) for k in cells],
                 claims=seed_claims(rows), rule=stats.PRIMARY_RULE) + "\n"


def plot_seeds(rows: list[dict], path) -> None:
    """Final test accuracy per method and mode (finished seeds), 95% t-interval bars."""
    cells = seed_cells(rows)
    if keys := [k for k in cells if cells[k]["interval"]["n"]]:
        _runs.plot(path, [dict(
            bars={None: [cells[k]["interval"] for k in keys]}, size=8, ylabel="final test "
            "accuracy", ticks=[f"{NAMES[m]}\n{mode} (n={cells[(m, mode)]['interval']['n']})"
                                for m, mode in keys], title="Subject-level DP, MNIST writers: "
            "final test accuracy over seeds (95% t-intervals)")], cell=(7, 3.4))


def _seeds_rows(i: declare.Inputs) -> list[dict]:
    rows = read_seeds(i.data / SEEDS_CSV)
    scale = prose("seeds_scale", seeds=len({r["seed"] for r in rows}),
                  finished=sum(r["status"] == "ok" for r in rows), declared=len(rows))
    return [dict(claim=c["claim"], measured=c["measured"], verdict=c["verdict"],
                 paired=c["paired"], scale=scale) for c in seed_claims(rows)]


def _higrad_row(i: declare.Inputs) -> dict:
    train = read_data(i.data / DATA)["training"]
    by = {(r["method"], r["mode"]): r for r in train["rows"]}
    acc = {m: f"{r['test_accuracy']:.4g}" if (r := by.get((m, "paper"))) else "not run"
           for m in ("HiGradAvgDP", "LocalGroupDP")}  # a smoke run has no LocalGroupDP
    return dict(higrad=acc["HiGradAvgDP"], group=acc["LocalGroupDP"],
                subjects=train["setup"]["num_subjects"],
                model=train["setup"]["model"].upper(), verdict=stats.ONE_SEED)


PAPER = declare.Paper(
    name="subject_dp", title="Subject-level DP in FL (Marathe & Kanani)", order=40,
    template="subject_dp", link="link", scales=("smoke", "cpu", "full"),
    figures=(declare.Figure("tables", "sections 1-2: accounting and batch statistics",
                            lambda scale: [], (DATA,), export=_export, committed="cpu"),
             declare.Figure("training", "section 3: accuracy per method and mode, one seed",
                            training_configs, (DATA,), export=_export,
                            metric="test accuracy", committed="cpu"),
             declare.Figure("seeds", "section 3b: final accuracy per method and mode over "
                            f"{SEEDS} seeds", seeds_configs, (SEEDS_CSV,), export=export_seeds,
                            metric="final test accuracy", committed="cpu")),
    claims=(declare.Claim("sigma", "sigma for the paper's budget and horizontal composition",
                          declare.EXACT, "row_subject_sigma", _sigma_row, "tables"),
            declare.Claim("subject_level", "UserLDP, LocalGroupDP and HiGradAvgDP are "
                          "subject-level at the paper's sigma", declare.EXACT,
                          "row_subject_level", _level_row, "tables"),
            declare.Claim("higrad", "HiGradAvgDP beats LocalGroupDP", declare.NOT_TESTED,
                          "row_subject_higrad", _higrad_row, "training"),
            declare.Claim("seeds_ordering", "the paper's ordering FedAvg > LocalItemDP > "
                          "HiGradAvgDP > LocalGroupDP > UserLDP (paper mode, over seeds)",
                          declare.PAIRED, "row_subject_seeds", _seeds_rows, "seeds")),
    pages=(declare.Page("docs/reproduction/subject_dp.md", (DATA, SEEDS_CSV),
                        lambda inputs, text: render(read_data(inputs.data / DATA),
                                                    inputs.data / SEEDS_CSV)),))

if __name__ == "__main__":  # the command the page names
    __import__("experiments.reproduce.__main__", fromlist=["alias"]).alias("subject_dp")
