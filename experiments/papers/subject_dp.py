"""Builder of the subject-level DP runs (:class:`experiments.configs.subject_dp._common.
SubjectDPConfig`): data with subjects spread over users, the model, the method of
:func:`jaxfl.algorithms.subject_dp.subject_dp` (noise calibrated from the config's budget, with
its subject-level accountant) and the test evaluation. Wiring only."""

from __future__ import annotations

import functools

import numpy as np

from jaxfl import models, sweep, training
from jaxfl import random as jrandom
from jaxfl import tree as jtree
from jaxfl.accounting import subject_dp as acct
from jaxfl.algorithms import subject_dp as sdp
from jaxfl.data import leaf, subjects


@functools.lru_cache(maxsize=4)
def load_data(dataset: str, data_dir, num_users: int, num_subjects: int, num_train, num_test,
              alpha: float, seed: int) -> subjects.SubjectData:
    """The run's :class:`~jaxfl.data.subjects.SubjectData` (cached: sweep points share it)."""
    rng = jrandom.host_rng(seed, "partition")
    if dataset == "mnist_writers":
        return subjects.mnist_writers(num_users=num_users, num_subjects=num_subjects, rng=rng,
                                      num_train=num_train, num_test=num_test, alpha=alpha,
                                      path=data_dir)
    if dataset == "shakespeare":
        return subjects.shakespeare_by_role(num_users=num_users, rng=rng,
                                            max_subjects=num_subjects, max_items=num_train,
                                            alpha=alpha, stride=80, path=data_dir)
    if dataset == "parkinsons":
        return subjects.parkinsons_subjects(num_users=num_users, rng=rng, alpha=alpha,
                                            path=data_dir)
    if dataset == "femnist_leaf":  # real LEAF FEMNIST when it is available (GPU scale)
        tr, te = (leaf.load_femnist(s, path=data_dir) for s in ("train", "test"))
        return subjects.leaf_subjects(tr, test_split=te, num_users=num_users, rng=rng,
                                      max_subjects=num_subjects, alpha=alpha,
                                      x_transform=leaf.femnist_images)
    if dataset == "synthetic":  # tiny blobs for smoke tests (no files)
        n = num_train or 2000
        y = rng.integers(0, 4, n).astype(np.int32)
        x = (rng.normal(size=(4, 8))[y] + rng.normal(size=(n, 8))).astype(np.float32)
        s = rng.integers(0, num_subjects, n)
        return subjects.spread(x[: n * 4 // 5], y[: n * 4 // 5], s[: n * 4 // 5],
                               num_users=num_users, rng=rng, alpha=alpha,
                               test_x=x[n * 4 // 5:], test_y=y[n * 4 // 5:])
    raise ValueError(f"Unknown dataset {dataset!r}.")


def data_of(cfg) -> subjects.SubjectData:
    return load_data(cfg.dataset, cfg.data_dir, cfg.num_users, cfg.num_subjects, cfg.num_train,
                     cfg.num_test, cfg.alpha, cfg.seed)


def make_model(cfg, d: subjects.SubjectData):
    x = np.asarray(d.train.x)
    if cfg.model == "linear":
        return models.get_model("linear", input_shape=x.shape[2:])
    if cfg.model == "char_lstm":
        return models.get_model("char_lstm", hidden=tuple(cfg.hidden), seq_len=x.shape[2])
    num_classes = int(max(np.asarray(d.train.y).max(), d.test_y.max(initial=0)) + 1)
    if cfg.model == "mlp":
        return models.get_model("mlp", hidden=tuple(cfg.hidden), num_classes=num_classes,
                                input_shape=(int(np.prod(x.shape[2:])),))
    return models.get_model(cfg.model, num_classes=num_classes, input_shape=x.shape[2:])


def rounds_of(cfg) -> int:
    """Rounds run: ``cfg.rounds``, else R (FedAvg, LocalItemDP) or R / sqrt(s)."""
    if cfg.rounds is not None:
        return cfg.rounds
    return acct.run_rounds(cfg.method, cfg.nominal_rounds, cfg.users_per_round or cfg.num_users)


def run_spec(cfg) -> sweep.RunSpec:
    d = data_of(cfg)
    model = make_model(cfg, d)
    rounds = rounds_of(cfg)
    private = cfg.method != "fedavg"
    params = model.init(jrandom.key_streams(cfg.seed, ("init",))["init"])
    alg = sdp.subject_dp(
        model, d.train, method=cfg.method, mode=cfg.mode, batch_size=cfg.batch_size,
        local_steps=cfg.local_steps,
        learning_rate=cfg.learning_rate if private else cfg.nonprivate_learning_rate,
        clip_norm=cfg.clip_norm, target_epsilon=cfg.target_epsilon, delta=cfg.delta,
        nominal_rounds=cfg.nominal_rounds, rounds=rounds, orders=cfg.orders,
        tight_accounting=cfg.tight_accounting and cfg.method == "local_item_dp",
        users_per_round=cfg.users_per_round, optimizer=cfg.optimizer,
        microbatch_size=cfg.microbatch_size, model_dim=jtree.num_params(params))
    return sweep.RunSpec(
        algorithm=alg, data=d.train, params=params, rounds=rounds, seed=cfg.seed,
        eval_fn=training.make_classifier_eval(model, d.test_x, d.test_y),
        eval_every=cfg.eval_every, checkpoint_every=cfg.checkpoint_every, delta=cfg.delta,
        final_accountant=None, config=cfg,
        extra_record={"mode": cfg.mode, "method": cfg.method})
