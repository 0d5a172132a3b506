"""Builder of DP-OGL / DP-OGL+ runs and privacy studies (Kiani, Boenisch, Draper, JSAIT 2024).

:func:`run_spec` turns a config of :mod:`experiments.configs.dp_ogl._common` into a
:class:`jaxfl.sweep.RunSpec`:

* :class:`~experiments.configs.dp_ogl._common.DpOglConfig`: the Dirichlet partition (per-worker
  train / test splits), the group structure, the model, :func:`jaxfl.algorithms.dp_ogl.dp_ogl`
  with its PwP accountant, and the personalized-model evaluation.
* :class:`~experiments.configs.dp_ogl._common.DpOglPrivacyConfig`: an accounting-only spec
  (``algorithm=None``, ``privacy`` = the same :class:`jaxfl.accounting.dp_ogl.PwPAccountant`
  the algorithm would carry), ``rounds = t - 1``.

Mode mapping: ``mode="paper"`` = DP-OGL+ with shared window updates (Eq. 11) and the Opacus
recipe; ``strict`` = local window updates and the dp-accounting recipe.
"""

from __future__ import annotations

import numpy as np

from experiments.configs.dp_ogl import _common
from jaxfl import models, sweep
from jaxfl import random as jrandom
from jaxfl.accounting import dp_ogl as accounting
from jaxfl.algorithms import dp_ogl
from jaxfl.data import federated, idx, partition
from jaxfl.topology import groups


def window_updates(cfg: _common.DpOglSetting) -> str:
    return "shared" if cfg.mode == "paper" else "local"


def recipe(cfg: _common.DpOglSetting) -> str:
    return "paper" if cfg.mode == "paper" else "default"


def split(cfg: _common.DpOglSetting):
    """``(x, y, train_idx, test_idx)``: the first ``num_workers`` of the Dirichlet partition
    (seeded by ``data_seed``), each worker's share split ``1 - test_fraction`` /
    ``test_fraction``."""
    x, y = idx.load(cfg.dataset, "train", path=cfg.data_dir)
    if cfg.max_train_examples is not None and cfg.max_train_examples < len(x):
        keep = np.sort(jrandom.host_rng(cfg.data_seed, "subsample").permutation(len(x))[
            : cfg.max_train_examples])
        x, y = x[keep], y[keep]
    parts = partition.dirichlet(jrandom.host_rng(cfg.data_seed, "partition"), y,
                                cfg.partition_workers, alpha=cfg.dirichlet_alpha,
                                min_examples=cfg.min_examples)[: cfg.num_workers]
    rng = jrandom.host_rng(cfg.data_seed, "test_split")
    train, test = [], []
    for ix in parts:  # host-side split of each worker's share (same label distribution)
        ix = rng.permutation(ix)
        cut = min(max(1, int(round(len(ix) * cfg.test_fraction))), len(ix) - 1)
        test.append(np.sort(ix[:cut]))
        train.append(np.sort(ix[cut:]))
    return x, y, train, test


def _label_counts(y, train) -> np.ndarray:
    return np.stack([np.bincount(y[ix], minlength=10) for ix in train])


def load_partition(cfg: _common.DpOglSetting):
    """``(train FederatedData, test FederatedData, label_counts [N, 10])``."""
    x, y, train, test = split(cfg)
    x = idx.normalize_images(x)
    return (federated.from_partition(x, y, train), federated.from_partition(x, y, test),
            _label_counts(y, train))


def label_counts(cfg: _common.DpOglSetting) -> np.ndarray:
    """Per-worker train label histograms (LB membership), without building the data."""
    _, y, train, _ = split(cfg)
    return _label_counts(y, train)


def group_structure(cfg: _common.DpOglSetting, counts=None) -> groups.GroupStructure:
    """The config's structure; LB reads the partition's labels unless ``counts`` is given."""
    if cfg.structure == "label_based" and counts is None:
        counts = label_counts(cfg)
    return groups.make(cfg.structure, cfg.num_workers, cfg.num_groups, label_counts=counts)


def accountant(cfg: _common.DpOglSetting, structure) -> accounting.PwPAccountant:
    """The PwP accountant of the config's mechanism (what its algorithm carries)."""
    return accounting.PwPAccountant(structure, period=cfg.period,
                                    noise_multipliers=cfg.noise_multiplier,
                                    sampling_rates=cfg.sampling_rate, algorithm=cfg.algorithm,
                                    recipe=recipe(cfg), window_updates=window_updates(cfg))


def _extra(cfg) -> dict:
    return {"mode": cfg.mode, "curve": cfg.curve}


def run_spec(cfg) -> sweep.RunSpec:
    if isinstance(cfg, _common.DpOglPrivacyConfig):
        return sweep.RunSpec(algorithm=None, data=None, params=None, rounds=cfg.t - 1,
                             seed=cfg.seed, eval_every=cfg.eval_every, delta=cfg.delta,
                             config=cfg, extra_record=_extra(cfg),
                             privacy=accountant(cfg, group_structure(cfg)))
    if not isinstance(cfg, _common.DpOglConfig):
        raise TypeError(f"Expected a DpOglConfig or DpOglPrivacyConfig, got {type(cfg)}.")
    train, test, counts = load_partition(cfg)
    s = group_structure(cfg, counts)
    kw = {"hidden": tuple(cfg.model_hidden)}
    if cfg.model == "fedavg_cnn":
        kw["features"] = tuple(cfg.model_features)
    model = models.get_model(cfg.model, num_classes=10, input_shape=(28, 28, 1), **kw)
    alg = dp_ogl.dp_ogl(model, s, period=cfg.period, local_steps=cfg.local_steps,
                        batch_size=cfg.batch_size, client_lr=cfg.client_lr,
                        clip_norms=cfg.clip_norm, noise_multipliers=cfg.noise_multiplier,
                        sampling_rates=cfg.sampling_rate,
                        plus=cfg.algorithm == "dp_ogl_plus",
                        window_updates=window_updates(cfg), recipe=recipe(cfg))
    params = model.init(jrandom.key_streams(cfg.seed, ("init",))["init"])
    test_eval = dp_ogl.make_personalized_eval(model, s, test.x, test.y, test.mask,
                                              prefix="test")
    train_eval = dp_ogl.make_personalized_eval(model, s, train.x, train.y, train.mask,
                                               prefix="train")

    def eval_fn(group_params):
        return {**test_eval(group_params), **train_eval(group_params)}

    return sweep.RunSpec(algorithm=alg, data=train, params=params, rounds=cfg.epochs,
                         seed=cfg.seed, eval_fn=eval_fn, eval_every=cfg.eval_every,
                         checkpoint_every=cfg.checkpoint_every, delta=cfg.delta, config=cfg,
                         extra_record=_extra(cfg))


__all__ = ["run_spec", "split", "load_partition", "label_counts", "group_structure",
           "accountant", "window_updates", "recipe"]
