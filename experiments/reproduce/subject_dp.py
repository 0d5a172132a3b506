"""Reproduction of Marathe & Kanani, "Subject Granular Differential Privacy in Federated
Learning" (arXiv 2206.03617 v1): accounting, batch statistics and a reduced accuracy comparison.

  python -m experiments.reproduce.subject_dp --scale cpu --workdir runs/repro_subject_dp
  python -m experiments.reproduce.subject_dp --from-data   # the page from the committed data

Scales: ``smoke`` (seconds to a minute; CI), ``cpu`` (the reduced CPU comparison, ~15-25 min on
2 shared cores), ``full`` (cpu plus the T = 70 accounting tables, the skewed sweep and the
Shakespeare runs; long). A run computes every section's numbers, writes them to
``docs/reproduction/data/subject_dp.json`` (``--data``; smoke: the workdir) and renders
``docs/reproduction/subject_dp.md`` (``--out``) from that file alone (:func:`from_data`, which
:mod:`experiments.reproduce.pages` also calls), with the page's wording from
``templates/subject_dp.md``; ``<workdir>/results.json`` keeps the full privacy reports. Every
table states the privacy mode of each number.

Sections:
1. Accounting of the paper's FEMNIST setting (n_i = 35,725, B = 512, 16 users, eps = 4,
   delta = 1e-5): paper-mode sigma, the epsilon each method really spends (strict), the rounds a
   strict budget allows. Per-subject counts come from a simulated LEAF-like layout (3500
   writers, ~163 train items each, uniform spread).
2. Batch statistics (data only): distinct subjects K and largest group Z per batch.
3. Training (MNIST with synthetic writers, 16 users): all five methods in paper mode and the
   subject-level methods in strict mode.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import textwrap
import time
from pathlib import Path

import numpy as np

from experiments import config as config_lib
from experiments.papers import subject_dp as papers_sdp
from experiments.reproduce import _common as _runs
from jaxfl import random as jrandom
from jaxfl import tree as jtree
from jaxfl.accounting import subject_dp as acct
from jaxfl.accounting.report import jsonable
from jaxfl.algorithms import subject_dp as sdp
from jaxfl.data import subjects

CONFIGS = Path(__file__).resolve().parent.parent / "configs" / "subject_dp"
FEMNIST_N, FEMNIST_B, USERS = 35725, 512, 16
EPS, DELTA = 4.0, 1e-5
FEMNIST_MODEL_DIM = 6_603_710  # d of the paper's FEMNIST CNN (LEAF's): strict LocalGroupDP
NAMES = {"fedavg": "FedAvg", "local_item_dp": "LocalItemDP", "user_ldp": "UserLDP",
         "local_group_dp": "LocalGroupDP", "higradavg_dp": "HiGradAvgDP"}


fmt = _runs.num


def _eps(report_json) -> float:
    return float(report_json["epsilon"])


def table(header, rows) -> str:
    """A Markdown table (no trailing newline) of ``rows``, numbers as :func:`fmt` writes them."""
    return "\n".join(_runs.table(header, [[fmt(c) for c in r] for r in rows]))


def prose(block: str, **fields) -> str:
    """The ``block`` of this page's template (``templates/subject_dp.md``), filled."""
    return _runs.prose("subject_dp", block, **fields)


# --------------------------------------------------------------------------------------------
# Layouts (data only)
# --------------------------------------------------------------------------------------------
def _layout(sizes, rng, alpha=1.0):
    """A data-only SubjectData (x and y are placeholders): ``sizes[j]`` items of subject j,
    spread over the 16 users (``alpha``: :func:`jaxfl.data.subjects.spread`)."""
    s = np.repeat(np.arange(len(sizes)), sizes)
    return subjects.spread(np.zeros((len(s), 1), np.float32), np.zeros(len(s), np.int32), s,
                           num_users=USERS, rng=rng, alpha=alpha)


def femnist_like_layout(rng, *, num_subjects=3500, mean=163.0, sd=64.0, alpha=1.0):
    """Subject ids spread over 16 users like the paper's FEMNIST (Sec. 4.1): writer sizes
    N(163, 64^2) clipped at 5."""
    return _layout(np.maximum(5, np.round(rng.normal(mean, sd, num_subjects))).astype(int), rng,
                   alpha)


def lognormal_layout(rng, *, num_subjects, total, sigma_log):
    """``num_subjects`` subjects with lognormal(0, ``sigma_log``) shares of ``total`` items (at
    least one each), spread uniformly over 16 users."""
    share = rng.lognormal(0, sigma_log, num_subjects)
    return _layout(np.maximum(1, np.round(share / share.sum() * total)).astype(int), rng)


def batch_stats_row(name, d, batch_size, steps, rng, paper=""):
    st = sdp.batch_statistics(d.train, batch_size=batch_size, steps=steps, rng=rng)
    K, Z = st["K"].ravel(), st["Z"].ravel()
    hist = np.bincount(Z)
    top = ", ".join(f"{z}: {hist[z] / len(Z):.2f}" for z in np.argsort(-hist)[:4] if hist[z])
    n_i = float(np.mean(np.asarray(d.train.num_examples)))
    return [name, d.num_subjects, int(n_i), batch_size, float(K.mean()), float(Z.mean()),
            int(hist.argmax()), top, paper]


# --------------------------------------------------------------------------------------------
# 1. Accounting
# --------------------------------------------------------------------------------------------
def accounting_data(scale: str, rng) -> dict:
    """Section 1's numbers, from the accountant code: per T the paper-mode sigma, the
    TF-Privacy recipe's sigma, LocalGroupDP's sigma_Z table and the strict epsilon of 16 users
    x 25 and x 6 rounds; then, on a simulated LEAF-like layout, each method's paper-mode and
    strict epsilon and the rounds a strict budget of 4 allows."""
    res = {"T": []}
    for T in (1,) if scale == "smoke" else (1, 70):
        fed1 = acct.Federation.uniform(num_users=USERS, examples_per_user=FEMNIST_N,
                                       batch_size=FEMNIST_B, local_steps=T,
                                       items_per_subject_per_user=1)
        sig = acct.paper_noise_multiplier(fed1, target_epsilon=EPS, delta=DELTA,
                                          nominal_rounds=100)
        tf = acct.calibrate_noise_multiplier(target_epsilon=EPS, delta=DELTA,
                                             sampling_rate=FEMNIST_B / FEMNIST_N, steps=100 * T,
                                             orders=acct.TF_PRIVACY_ORDERS, conversion="basic")
        table_z = acct.paper_group_table(fed1, target_epsilon=EPS, delta=DELTA,
                                         nominal_rounds=100)
        zs = [float(table_z(0, z)) for z in range(1, 7 if scale != "smoke" else 4)]
        acc = acct.SubjectDPAccountant("higradavg_dp", fed1, noise_multipliers=sig)
        e = lambda r, a=acc: float(a.epsilons([r], DELTA)[0])
        res["T"].append({"T": T, "sigma": float(sig[0]), "sigma_tf": float(tf), "sigma_z": zs,
                         "eps_16x25": e(25), "eps_16x6": e(6)})
    # Per-method epsilon on a LEAF-like layout.
    d = femnist_like_layout(rng, num_subjects=3500 if scale != "smoke" else 350)
    T = 1
    fed = sdp.federation_of(d.train, batch_size=FEMNIST_B, local_steps=T)
    fed = dataclasses.replace(fed, sampling_rates=np.full(USERS, FEMNIST_B / FEMNIST_N))
    sig = acct.paper_noise_multiplier(fed, target_epsilon=EPS, delta=DELTA, nominal_rounds=100)
    table_z = acct.paper_group_table(fed, target_epsilon=EPS, delta=DELTA, nominal_rounds=100)
    k = fed.subject_counts
    res["layout"] = {"T": T, "subjects": int(d.num_subjects), "items": int(k.sum()),
                     "k_mean": float(k.mean()), "k_max": int(k.max())}
    res["methods"] = []
    for m in ("local_item_dp", "user_ldp", "local_group_dp", "higradavg_dp"):
        r = acct.run_rounds(m, 100, USERS)
        noise = (dict(group_noise_multiplier=table_z, group_sizes=range(1, 6),
                      model_dim=FEMNIST_MODEL_DIM)
                 if m == "local_group_dp" else dict(noise_multipliers=sig))
        strict_acc = acct.SubjectDPAccountant(
            m, fed, tight=(m == "local_item_dp" and scale != "smoke"), **noise)
        paper = strict_acc.other_modes()["paper"].report(r, DELTA)
        strict = strict_acc.report(r, DELTA)
        budget = (acct.rounds_for_target(m, fed, mode="strict", target_epsilon=EPS, delta=DELTA,
                                         noise_multipliers=sig, max_rounds=100)
                  if m in ("higradavg_dp", "user_ldp") else None)
        res["methods"].append({
            "method": m, "rounds": int(r),
            "paper": {"epsilon": float(paper.epsilon), "unit": paper.unit},
            "strict": {"epsilon": float(strict.epsilon), "unit": strict.unit,
                       "accountant": strict.accountant, "route": strict.details["route"]},
            "strict_rounds_for_eps4": None if budget is None else int(budget)})
    return res


def accounting_text(res: dict) -> str:
    rows = [[t["T"], t["sigma"], t["sigma_tf"], " / ".join(f"{v:.4g}" for v in t["sigma_z"]),
             t["eps_16x25"], t["eps_16x6"]] for t in res["T"]]
    sigmas = table(["T", "sigma (paper)", "sigma (TF-Privacy recipe)",
                    "LocalGroupDP sigma_Z, Z = 1, 2, ...",
                    "strict eps, 16 users x 25 rounds (paper's R/sqrt(s))",
                    "strict eps, 16 users x 6 rounds (~R/s)"], rows)
    rows = [[NAMES[m["method"]], m["rounds"],
             f"{m['paper']['epsilon']:.3g} ({m['paper']['unit']})",
             f"{m['strict']['epsilon']:.4g} ({m['strict']['unit']}, "
             f"{m['strict']['accountant']})", m["strict"]["route"],
             m["strict_rounds_for_eps4"]] for m in res["methods"]]
    methods = table(["method", "rounds", "paper-mode eps", "strict eps", "strict route",
                     "rounds within strict eps=4 at this sigma"], rows)
    lay = res["layout"]
    return prose("accounting", sigma_table=sigmas, T=lay["T"],
                 subjects=lay["subjects"], items=lay["items"], k_mean=f"{lay['k_mean']:.1f}",
                 k_max=lay["k_max"], method_table=methods,
                 model_dim=f"{FEMNIST_MODEL_DIM:,}") + "\n"


# --------------------------------------------------------------------------------------------
# 2. Batch statistics
# --------------------------------------------------------------------------------------------
BATCH_HEAD = ["layout", "subjects", "mean n_i", "B", "mean K", "mean Z", "mode Z",
              "Z frequencies", "paper"]
# Marathe & Kanani (2022), Sec. 4.1: distinct subjects per batch and the batch size.
PAPER_K = {"femnist": (475, 512), "shakespeare": (86, 100)}


def batch_data(scale: str, rng) -> dict:
    """Section 2's rows (:func:`batch_stats_row`, keyed by :data:`BATCH_HEAD`) and the number
    of roles in the tiny-Shakespeare file (None without it)."""
    steps = 20 if scale == "smoke" else 100
    rows = []
    femnist = femnist_like_layout(rng, num_subjects=3500)
    rows.append(batch_stats_row("FEMNIST-like (simulated ids), uniform", femnist, 512, steps, rng,
                                "K 475, Z mostly 3"))
    shk = lognormal_layout(rng, num_subjects=660, total=16 * 8910, sigma_log=1.0)
    rows.append(batch_stats_row("Shakespeare-like (660, lognormal 1.0)", shk, 100, steps, rng,
                                "K 86, Z mostly 3"))
    roles = None
    try:
        role = subjects.shakespeare_by_role(num_users=USERS, rng=rng, stride=10)
        rows.append(batch_stats_row(f"tiny-Shakespeare by role ({role.num_subjects} roles)",
                                    role, 100, steps, rng, "(different data)"))
        from jaxfl.data import text as text_data
        roles = len(text_data.speeches_by_role(text_data.parse_speeches(
            text_data.load_tiny_shakespeare())))
    except FileNotFoundError:
        pass
    cpu = papers_sdp.data_of(config_lib.load_config(str(CONFIGS / "femnist_like.py")))
    rows.append(batch_stats_row(f"MNIST writers, {cpu.num_subjects} (CPU runs)", cpu, 64, steps,
                                rng, "-"))
    alphas = (1.0, 16.0) if scale == "smoke" else (1.0, 2.0, 4.0, 8.0, 16.0)
    for al in alphas[1:]:
        d = femnist_like_layout(rng, num_subjects=3500, alpha=al)
        rows.append(batch_stats_row(f"FEMNIST-like, skewed alpha = {al:g}", d, 512, steps, rng,
                                    {2.0: "Z 3", 16.0: "K 310, Z 6"}.get(al, "")))
    return {"steps": steps, "shakespeare_roles": roles,
            "rows": [dict(zip(BATCH_HEAD, r, strict=True)) for r in rows]}


def batch_text(res: dict) -> str:
    rows = table(BATCH_HEAD, [[r[k] for k in BATCH_HEAD] for r in res["rows"]])
    return prose("batch_statistics", steps=res["steps"], table=rows) + "\n"


# --------------------------------------------------------------------------------------------
# 3. Training
# --------------------------------------------------------------------------------------------
def training_runs(scale: str):
    if scale == "smoke":
        spec = "femnist_like.py:variant=smoke"
        runs = [("fedavg", "paper"), ("higradavg_dp", "paper"), ("higradavg_dp", "strict")]
        return [(spec, m, mode, {}) for m, mode in runs]
    spec = "femnist_like.py"
    runs = [("fedavg", "paper")] + [(m, "paper") for m in NAMES if m != "fedavg"]
    runs += [(m, "strict") for m in ("higradavg_dp", "local_group_dp", "user_ldp")]
    out = [(spec, m, mode, {"tight_accounting": False}) for m, mode in runs]
    if scale == "full":
        out += [("skewed.py:alpha=16", m, "paper", {"tight_accounting": False})
                for m in ("local_group_dp", "higradavg_dp")]
    return out


TRAIN_KEYS = ("method", "mode", "rounds", "test_accuracy", "train_loss", "epsilon",
              "epsilon_strict", "mean_K", "mean_Z", "seconds")
TRAIN_HEAD = ["method", "mode", "rounds", "test acc", "train loss", "eps (own mode)",
              "eps strict (subject)", "mean K", "mean Z", "seconds"]
SETUP_KEYS = ("dataset", "num_subjects", "num_users", "model", "hidden", "batch_size",
              "local_steps", "clip_norm", "learning_rate", "nonprivate_learning_rate",
              "target_epsilon", "delta", "nominal_rounds")


def _sigma(info: dict) -> list[float] | None:
    """[smallest, largest] per-user noise multiplier of a run (None: FedAvg, or LocalGroupDP's
    batch-dependent sigma_Z)."""
    sig = info.get("noise_multipliers")
    return None if not sig or not max(sig) else [float(min(sig)), float(max(sig))]


def _range(sig: list[float], digits: int) -> str:
    """A per-user sigma range at ``digits`` significant digits ("18.1", or "0.98-1.05" when
    the users' values differ)."""
    lo, hi = (f"{v:.{digits}g}" for v in sig)
    return lo if lo == hi else f"{sig[0]:.3g}-{sig[1]:.3g} by user"


def training_data(scale: str, workdir: Path) -> tuple[dict, dict]:
    """The training runs as one sweep (:func:`experiments.reproduce._common.run_configs`,
    resumable; the planner batches the points that share a computation, and the runs here
    differ in method or mode, so each runs on its own).
    Returns (section 3's data: the config's scale, one row per run; the runs' final metrics
    and privacy reports by tag)."""
    runs, configs = [], []
    for spec, m, mode, extra in training_runs(scale):
        path, _, arg = spec.partition(":")
        configs.append(config_lib.load_config(str(CONFIGS / path) + (f":{arg}" if arg else ""),
                                              [f"method={m}", f"mode={mode}"] +
                                              [f"{k}={v}" for k, v in extra.items()]))
        runs.append((path, m, mode))
    dirs = _runs.run_configs(configs, workdir, progress=False)
    rows, res = [], {}
    for (path, m, mode), cfg, run_dir in zip(runs, configs, dirs, strict=True):
        tag = f"{Path(path).stem}_{m}_{mode}"
        s, recs = _runs.read_run(run_dir)
        final = s.get("final", {})
        own = s["privacy"]
        strict = own if own["mode"] == "strict" else s.get("privacy_strict", own)
        model = papers_sdp.make_model(cfg, papers_sdp.data_of(cfg))
        params = model.init(jrandom.key_streams(cfg.seed, ("init",))["init"])
        rows.append({"method": f"{NAMES[m]}{' (alpha 16)' if 'skewed' in path else ''}",
                     "mode": mode, "rounds": s["rounds"],
                     "test_accuracy": final.get("test_accuracy"),
                     "train_loss": final.get("train_loss"), "epsilon": _eps(own),
                     "epsilon_strict": _eps(strict),
                     "mean_K": float(final.get("num_subjects", float("nan"))),
                     "mean_Z": float(final.get("max_group", float("nan"))),
                     "seconds": recs[-1].get("elapsed_s"), "sigma": _sigma(s["info"]),
                     "model_dim": int(jtree.num_params(params)), "point_id": run_dir.name})
        res[tag] = {"summary_final": final, "rounds": s["rounds"],
                    "privacy": {"mode": mode, "reported": own, "strict": strict}}
    cfg = config_lib.load_config(str(CONFIGS / training_runs(scale)[0][0].split(":")[0]))
    setup = {k: getattr(cfg, k) for k in SETUP_KEYS}
    return {"scale": scale, "setup": setup, "rows": rows}, res


def _short(v: float) -> str:
    """3 significant digits; from 1e5 on 2, exponents written short (2.7e9)."""
    if v < 1e5:
        return f"{v:.3g}"
    text = f"{v:.2g}"
    return text.replace("e+0", "e").replace("e+", "e") if "e" in text else text


def training_text(res: dict) -> str:
    rows = res["rows"]
    c = res["setup"]
    if res["scale"] == "smoke":
        setup = prose("setup_smoke")
    else:
        setup = prose("setup", **{k: c[k] for k in SETUP_KEYS}
                      | {"hidden": tuple(c["hidden"])})
    paper_rows = sorted((r for r in rows if r["mode"] == "paper" and r["test_accuracy"]
                         is not None), key=lambda r: -r["test_accuracy"])
    text = prose("training", setup=setup, order=" > ".join(r["method"] for r in paper_rows),
                 table=table(TRAIN_HEAD, [[r[k] for k in TRAIN_KEYS] for r in rows])) + "\n"
    if any(r["mode"] == "strict" and r["sigma"] is not None for r in rows):
        text += "\n" + strict_paragraph(res) + "\n"
    if res.get("previous"):
        text += "\n" + previous_text(res) + "\n"
    return text


PRIVACY_KEYS = ("epsilon", "epsilon_strict")


def previous_text(res: dict) -> str:
    """Section 3 against an earlier page's numbers (``res["previous"]``: its source, its rows,
    and optionally a ``check``, one run repeated on the earlier code): accuracy and loss side
    by side, and whether every privacy number is equal at the printed precision."""
    prev = res["previous"]
    old = {(r["method"], r["mode"]): r for r in prev["rows"]}
    rows, same_priv, moved = [], [], []
    for r in res["rows"]:
        o = old.get((r["method"], r["mode"]))
        if o is None:
            continue
        eq = all(fmt(float(o[k])) == fmt(float(r[k])) for k in PRIVACY_KEYS)
        same_priv.append(eq)
        moved.append(fmt(o["test_accuracy"]) != fmt(r["test_accuracy"]))
        rows.append([r["method"], r["mode"], o["test_accuracy"], r["test_accuracy"],
                     o["train_loss"], r["train_loss"],
                     " / ".join(fmt(float(o[k])) for k in PRIVACY_KEYS),
                     "equal" if eq else " / ".join(fmt(float(r[k])) for k in PRIVACY_KEYS)])
    equal = (prose("privacy_all_equal") if all(same_priv) else
             prose("privacy_some_equal", count=sum(same_priv), runs=len(same_priv)))
    text = prose("previous", code=res.get("code", "the current code"), source=prev["source"],
                 moved=sum(moved), runs=len(rows), equal=equal,
                 table=table(["method", "mode", "test acc, earlier", "test acc, now",
                              "train loss, earlier", "train loss, now",
                              "eps own / strict, earlier", "eps own / strict, now"], rows))
    chk = prev.get("check")
    if chk:
        o = old[(chk["method"], chk["mode"])]
        now = next(r for r in res["rows"] if (r["method"], r["mode"]) ==
                   (chk["method"], chk["mode"]))
        conclusion = (prose("check_reproduces", commit=chk["commit"])
                      if fmt(chk["test_accuracy"]) == fmt(o["test_accuracy"])
                      else prose("check_differs"))
        text += "\n\n" + prose("check", method=chk["method"], mode=chk["mode"],
                               commit=chk["commit"], accuracy=fmt(chk["test_accuracy"]),
                               earlier=fmt(o["test_accuracy"]),
                               now=fmt(now["test_accuracy"]), conclusion=conclusion)
        if chk.get("history"):
            text += " " + prose("check_history", commit=chk["commit"], steps="; ".join(
                f"{fmt(h['test_accuracy'])} from {h['commit']} ({h['change']})"
                for h in chk["history"]))
        if chk.get("note"):
            text += f" {chk['note']}."
    return text


def _and(items: list[str]) -> str:
    """"a", "a and b", "a, b and c"."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def strict_paragraph(res: dict) -> str:
    """Section 3's strict-mode summary: the sigma each strict run needed for the target, with
    the paper-mode sigma beside it, the strict runs' accuracy, and the strict epsilon the
    paper-mode runs spend (all from the rows; no verdict: one seed)."""
    rows, c = res["rows"], res["setup"]
    by = {(r["method"], r["mode"]): r for r in rows}
    what = {"LocalGroupDP": "fixed-noise LocalGroupDP"}
    notes = {"UserLDP": ["no 1/B"]}
    strict = [r for r in rows if r["mode"] == "strict" and r["sigma"] is not None]
    needs = []
    for r in strict:
        paper = by.get((r["method"], "paper"))
        note = list(notes.get(r["method"], []))
        if paper is not None and paper["sigma"] is not None:
            note.append(f"paper: {_range(paper['sigma'], 2)}")
        needs.append(f"{_range(r['sigma'], 3)} for {what.get(r['method'], r['method'])}"
                     + (f" ({'; '.join(note)})" if note else ""))
    text = prose("strict_runs", target_epsilon=f"{c['target_epsilon']:g}",
                 rounds=_and([str(n) for n in sorted({r["rounds"] for r in strict})]),
                 sigmas=_and(needs),
                 accuracies=_and([f"{r['method']} {100 * r['test_accuracy']:.3g}% (train "
                                  f"loss {fmt(r['train_loss'])})" for r in strict]))
    spent = []
    for m in ("HiGradAvgDP", "UserLDP", "LocalGroupDP"):
        r = by.get((m, "paper"))
        if r is None:
            continue
        note = (" " + prose("spent_local_group", model_dim=f"{r['model_dim']:,}")
                if m == "LocalGroupDP" else "")
        spent.append(f"{_short(r['epsilon_strict'])} ({m}{note})")
    if spent:
        text += " " + prose("strict_spent", spent=_and(spent))
    return text


def training_section(scale: str, workdir: Path) -> tuple[str, dict]:
    """Section 3 run (or resumed) and written: (its text, the runs' results by tag)."""
    data, res = training_data(scale, workdir)
    return training_text(data), res


def discrepancies_text(data: dict) -> str:
    """Section 4: what cannot match the paper, with the numbers it cites taken from the other
    sections' data (a one-seed ordering is described, not tested). Paper numbers: Marathe &
    Kanani (2022), Sec. 4.1 (distinct subjects per batch) and Sec. 4.2 (accuracies)."""
    roles = data["batch_statistics"]["shakespeare_roles"]
    train = data.get("training")
    writers = f"{train['setup']['num_subjects']} " if train else ""  # "with 64 synthetic writers"
    k_sim = [r["mean K"] for r in data["batch_statistics"]["rows"][:2]]  # FEMNIST-, Shakesp.-like
    bullets = [
        prose("data_with_roles", writers=writers, roles=roles) if roles else
        prose("data_without_roles", writers=writers),
        prose("simulated_batches", paper_femnist=PAPER_K["femnist"][0],
              paper_shakespeare=PAPER_K["shakespeare"][0], femnist=fmt(k_sim[0]),
              shakespeare=fmt(k_sim[1])),
        prose("unstated", sigmas=", ".join(f"{t['sigma']:.2f} for T = {t['T']}"
                                           for t in data["accounting"]["T"]))]
    by = {(r["method"], r["mode"]): r for r in (train or {}).get("rows", [])}
    lg, hi = by.get(("LocalGroupDP", "paper")), by.get(("HiGradAvgDP", "paper"))
    if lg and hi:
        above = lg["test_accuracy"] > hi["test_accuracy"]
        k_f, b_f = PAPER_K["femnist"]
        comparison = prose("local_group_above" if above else "local_group_below",
                           local_group=fmt(lg["test_accuracy"]),
                           higradavg=fmt(hi["test_accuracy"]))
        bullets.append(textwrap.fill(
            prose("ordering", comparison=comparison,
                  signal=f"{hi['mean_K'] / train['setup']['batch_size']:.2f}",
                  signal_femnist=f"{k_f / b_f:.2f}"), width=95, subsequent_indent="  "))
    bullets.append(prose("upper_bounds"))
    return "\n".join([prose("discrepancies_heading"), "", *bullets, ""])


DATA = Path(__file__).resolve().parents[2] / "docs" / "reproduction" / "data" / "subject_dp.json"
PAGE = Path(__file__).resolve().parents[2] / "docs" / "reproduction" / "subject_dp.md"


def render(data: dict) -> str:
    """The page from the run's data (:func:`main` writes it as ``subject_dp.json``)."""
    parts = [accounting_text(data["accounting"]), batch_text(data["batch_statistics"])]
    if data.get("training"):
        parts.append(training_text(data["training"]))
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


def write_data(path, data: dict) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {**data, "provenance": _runs.provenance()}
    path.write_text(json.dumps(jsonable(data), indent=1) + "\n")


def read_data(path=DATA) -> dict:
    return _from_json(json.loads(Path(path).read_text()))


def from_data(path=DATA) -> str:
    """The page rendered from a data file written by :func:`main` (no computation)."""
    return render(read_data(path))


def main(argv=None) -> dict:
    """Computes the sections, writes their numbers (``--data``) and the page rendered from
    them (:func:`render`); ``--from-data`` only renders. Returns the data."""
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", choices=("smoke", "cpu", "full"), default="cpu")
    parser.add_argument("--workdir")
    parser.add_argument("--out", default=None,
                        help="report path (default: docs/reproduction/subject_dp.md; "
                             "<workdir>/subject_dp.md for --scale smoke)")
    parser.add_argument("--data", default=None,
                        help="data file (default: docs/reproduction/data/subject_dp.json; "
                             "<workdir>/subject_dp.json for --scale smoke)")
    parser.add_argument("--from-data", action="store_true",
                        help="render the page from --data only (no computation, no workdir)")
    parser.add_argument("--skip-training", action="store_true")
    args = parser.parse_args(argv)
    smoke = args.scale == "smoke" and not args.from_data
    if not args.from_data and args.workdir is None:
        parser.error("--workdir is required without --from-data")
    workdir = Path(args.workdir) if args.workdir else None
    data_path = Path(args.data or (workdir / "subject_dp.json" if smoke else DATA))
    out = Path(args.out or (workdir / "subject_dp.md" if smoke else PAGE))
    if args.from_data:
        data = read_data(data_path)
    else:
        workdir.mkdir(parents=True, exist_ok=True)
        rng = np.random.default_rng(0)
        t0 = time.time()
        data, results = {"scale": args.scale}, {"scale": args.scale}
        for name, fn in (("accounting", lambda: accounting_data(args.scale, rng)),
                         ("batch_statistics", lambda: batch_data(args.scale, rng))):
            data[name] = results[name] = fn()
            print(f"[subject_dp] {name} done after {time.time() - t0:.0f} s", flush=True)
        if not args.skip_training:
            data["training"], results["training"] = training_data(args.scale, workdir)
        data["seconds"] = time.time() - t0
        write_data(data_path, data)
        (workdir / "results.json").write_text(json.dumps(results, indent=2, default=str))
        data = read_data(data_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render(data))
    print(f"[subject_dp] wrote {out} from {data_path}", flush=True)
    return data


if __name__ == "__main__":
    main()
