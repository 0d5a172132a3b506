"""Builder of the subject-level DP runs (:class:`experiments.configs.subject_dp._common.
SubjectDPConfig`): the ``subject_users`` task of :mod:`jaxfl.tasks` (data with subjects spread
over users, the model, the test evaluation), the method of
:func:`jaxfl.algorithms.subject_dp.subject_dp` (noise calibrated from the config's budget, with
its subject-level accountant). Wiring only; besides, the paper's numbers that need no training
(:func:`tables`: the accounting and the batch statistics of the reproduction's sections 1-2,
:mod:`experiments.reproduce.subject_dp`)."""

from __future__ import annotations

import numpy as np

from jaxfl import random as jrandom
from jaxfl import sweep, tasks
from jaxfl import tree as jtree
from jaxfl.accounting import subject_dp as acct
from jaxfl.algorithms import subject_dp as sdp
from jaxfl.data import subjects, text

# Section 2's table header, the keys of its rows in subject_dp.json.
BATCH_HEAD = ("layout", "subjects", "mean n_i", "B", "mean K", "mean Z", "mode Z",
              "Z frequencies", "paper")


def task(cfg) -> tasks.Task:
    """The config's ``subject_users`` task."""
    return tasks.get("subject_users", dataset=cfg.dataset, num_users=cfg.num_users,
                     num_subjects=cfg.num_subjects, num_train=cfg.num_train,
                     num_test=cfg.num_test, alpha=cfg.alpha, seed=cfg.seed, model=cfg.model,
                     hidden=tuple(cfg.hidden), data_dir=cfg.data_dir)


def init(cfg, model):
    """The config's initial parameters of ``model``."""
    return model.init(jrandom.key_streams(cfg.seed, ("init",))["init"])


def model_dim(cfg) -> int:
    """The number of parameters of the config's model."""
    return jtree.num_params(init(cfg, task(cfg).model))


def rounds_of(cfg) -> int:
    """Rounds run: ``cfg.rounds``, else R (FedAvg, LocalItemDP) or R / sqrt(s)."""
    if cfg.rounds is not None:
        return cfg.rounds
    return acct.run_rounds(cfg.method, cfg.nominal_rounds, cfg.users_per_round or cfg.num_users)


def run_spec(cfg) -> sweep.RunSpec:
    t = task(cfg)
    model = t.model
    rounds = rounds_of(cfg)
    private = cfg.method != "fedavg"
    params = init(cfg, model)
    alg = sdp.subject_dp(
        model, t.train, method=cfg.method, mode=cfg.mode, batch_size=cfg.batch_size,
        local_steps=cfg.local_steps,
        learning_rate=cfg.learning_rate if private else cfg.nonprivate_learning_rate,
        clip_norm=cfg.clip_norm, target_epsilon=cfg.target_epsilon, delta=cfg.delta,
        nominal_rounds=cfg.nominal_rounds, rounds=rounds, orders=cfg.orders,
        tight_accounting=cfg.tight_accounting and cfg.method == "local_item_dp",
        users_per_round=cfg.users_per_round, optimizer=cfg.optimizer,
        microbatch_size=cfg.microbatch_size, model_dim=jtree.num_params(params))
    return sweep.RunSpec(
        algorithm=alg, data=t.train, params=params, rounds=rounds, seed=cfg.seed,
        eval_fn=t.evaluate,
        eval_every=cfg.eval_every, checkpoint_every=cfg.checkpoint_every, delta=cfg.delta,
        final_accountant=None, config=cfg,
        extra_record={"mode": cfg.mode, "method": cfg.method})


def batch_row(name: str, d, batch_size: int, steps: int, rng, paper: str = "") -> dict:
    """One row of section 2 (keys :data:`BATCH_HEAD`): the subject layout ``d``'s ``steps``
    sampled batches per user (:func:`jaxfl.algorithms.subject_dp.batch_statistics`)
    summarised by :func:`jaxfl.accounting.subject_dp.batch_summary` (mean K and Z, the most
    frequent Z, the Z frequencies), beside the paper's numbers ``paper``."""
    st = sdp.batch_statistics(d.train, batch_size=batch_size, steps=steps, rng=rng)
    b = acct.batch_summary(st["K"], st["Z"])
    return dict(zip(BATCH_HEAD, [name, d.num_subjects, int(np.mean(d.train.num_examples)),
                                 batch_size, b["K"], b["Z"], b["mode"], b["freq"], paper],
                    strict=True))


def tables(cpu_cfg, *, smoke: bool = False) -> dict:
    """The reproduction's sections 1-2, from one ``default_rng(0)``: ``accounting``,
    :func:`jaxfl.accounting.subject_dp.paper_accounting` on a simulated LEAF-like layout
    (``smoke``: smaller, one T, fewer group sizes, no tight LocalItemDP route); then
    ``batch_statistics``: :func:`batch_row` of each layout (the paper's sizes simulated, the
    tiny-Shakespeare roles, the MNIST writers of the CPU runs' config ``cpu_cfg``, skewed
    layouts), its ``steps`` and the roles of the tiny-Shakespeare file (None without it: no
    row)."""
    rng, steps, roles = np.random.default_rng(0), 20 if smoke else 100, None
    d = subjects.femnist_like_layout(rng, num_subjects=350 if smoke else 3500)
    accounting = acct.paper_accounting(
        sdp.federation_of(d.train, batch_size=acct.PAPER_FEMNIST["batch_size"], local_steps=1),
        num_subjects=d.num_subjects, local_steps=(1,) if smoke else (1, 70),
        group_sizes=range(1, 4 if smoke else 7), tight_item=not smoke)
    rows = [batch_row("FEMNIST-like (simulated ids), uniform", subjects.femnist_like_layout(
        rng, num_subjects=3500), 512, steps, rng, "K 475, Z mostly 3")]
    rows.append(batch_row("Shakespeare-like (660, lognormal 1.0)", subjects.lognormal_layout(
        rng, num_subjects=660, total=16 * 8910, sigma_log=1.0), 100, steps, rng,
        "K 86, Z mostly 3"))
    try:
        d = subjects.shakespeare_by_role(num_users=acct.PAPER_FEMNIST["num_users"], rng=rng,
                                         stride=10)
        rows.append(batch_row(f"tiny-Shakespeare by role ({d.num_subjects} roles)", d, 100,
                              steps, rng, "(different data)"))
        roles = text.role_count()
    except FileNotFoundError:
        pass
    d = task(cpu_cfg).info["subjects"]
    rows.append(batch_row(f"MNIST writers, {d.num_subjects} (CPU runs)", d, 64, steps, rng, "-"))
    for al in (16.0,) if smoke else (2.0, 4.0, 8.0, 16.0):
        rows.append(batch_row(f"FEMNIST-like, skewed alpha = {al:g}", subjects.femnist_like_layout(
            rng, num_subjects=3500, alpha=al), 512, steps, rng,
            {2.0: "Z 3", 16.0: "K 310, Z 6"}.get(al, "")))
    return {"accounting": accounting,
            "batch_statistics": {"steps": steps, "shakespeare_roles": roles, "rows": rows}}
