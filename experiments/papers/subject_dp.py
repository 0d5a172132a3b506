"""Builder of the subject-level DP runs (:class:`experiments.configs.subject_dp._common.
SubjectDPConfig`): the ``subject_users`` task of :mod:`jaxfl.tasks` (data with subjects spread
over users, the model, the test evaluation), the method of
:func:`jaxfl.algorithms.subject_dp.subject_dp` (noise calibrated from the config's budget, with
its subject-level accountant). Wiring only."""

from __future__ import annotations

from jaxfl import random as jrandom
from jaxfl import sweep, tasks
from jaxfl import tree as jtree
from jaxfl.accounting import subject_dp as acct
from jaxfl.algorithms import subject_dp as sdp


def task(cfg) -> tasks.Task:
    """The config's ``subject_users`` task."""
    return tasks.get("subject_users", dataset=cfg.dataset, num_users=cfg.num_users,
                     num_subjects=cfg.num_subjects, num_train=cfg.num_train,
                     num_test=cfg.num_test, alpha=cfg.alpha, seed=cfg.seed, model=cfg.model,
                     hidden=tuple(cfg.hidden), data_dir=cfg.data_dir)


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
    params = model.init(jrandom.key_streams(cfg.seed, ("init",))["init"])
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
