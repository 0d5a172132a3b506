"""Builder of DP-OGL / DP-OGL+ runs and privacy studies (Kiani, Boenisch, Draper, JSAIT 2024).

:func:`run_spec` turns a config of :mod:`experiments.configs.dp_ogl._common` into a
:class:`jaxfl.sweep.RunSpec`:

* :class:`~experiments.configs.dp_ogl._common.DpOglConfig`: the ``worker_splits`` task of
  :mod:`jaxfl.tasks` (the Dirichlet partition, per-worker train / test splits, the model), the
  group structure, :func:`jaxfl.algorithms.dp_ogl.dp_ogl` with its PwP accountant, and the
  personalized-model evaluation.
* :class:`~experiments.configs.dp_ogl._common.DpOglPrivacyConfig`: an accounting-only spec
  (``algorithm=None``, ``privacy`` = the same :class:`jaxfl.accounting.dp_ogl.PwPAccountant`
  the algorithm would carry), ``rounds = t - 1``.

Mode mapping: ``mode="paper"`` = DP-OGL+ with shared window updates (Eq. 11) and the Opacus
recipe; ``strict`` = local window updates and the dp-accounting recipe.
"""

from __future__ import annotations

from experiments.configs.dp_ogl import _common
from jaxfl import random as jrandom
from jaxfl import sweep, tasks
from jaxfl.accounting import dp_ogl as accounting
from jaxfl.algorithms import dp_ogl
from jaxfl.tasks import images
from jaxfl.topology import groups


def window_updates(cfg: _common.DpOglSetting) -> str:
    return "shared" if cfg.mode == "paper" else "local"


def recipe(cfg: _common.DpOglSetting) -> str:
    return "paper" if cfg.mode == "paper" else "default"


def _split_options(cfg: _common.DpOglSetting) -> dict:
    return dict(dataset=cfg.dataset, num_workers=cfg.num_workers,
                partition_workers=cfg.partition_workers, dirichlet_alpha=cfg.dirichlet_alpha,
                min_examples=cfg.min_examples, test_fraction=cfg.test_fraction,
                data_seed=cfg.data_seed, max_train_examples=cfg.max_train_examples,
                data_dir=cfg.data_dir)


def task(cfg: _common.DpOglConfig) -> tasks.Task:
    """The config's ``worker_splits`` task (with its model)."""
    return tasks.get("worker_splits", **_split_options(cfg), model=cfg.model,
                     model_hidden=tuple(cfg.model_hidden),
                     model_features=tuple(cfg.model_features))


def group_structure(cfg: _common.DpOglSetting, counts=None) -> groups.GroupStructure:
    """The config's structure; LB reads the partition's labels unless ``counts`` is given."""
    if cfg.structure == "label_based" and counts is None:  # without building the data
        _, y, train, _ = images.worker_split(**_split_options(cfg))
        counts = images.label_counts(y, train)
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
    t = task(cfg)
    train, test, model = t.train, t.test, t.model
    s = group_structure(cfg, t.info["label_counts"])
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


__all__ = ["run_spec", "task", "group_structure", "accountant", "window_updates", "recipe"]
