"""Builder of LightDP-FL runs (:class:`experiments.configs.lightdp._common.LightDPConfig`).

Wiring only: the data, its partition (label-sorted shards, equal client sizes), the model and
the evaluation are the ``label_shards`` task of :mod:`jaxfl.tasks` (arrays, models and compiled
evaluations cached per process); the noise is designed with
:func:`jaxfl.accounting.lightdp.design` (the accountant of the algorithm is built from that
design by :func:`jaxfl.algorithms.lightdp.lightdp_fl`).
"""

from __future__ import annotations

import jax

from experiments.configs.lightdp import _common
from jaxfl import models, sweep, tasks, tree
from jaxfl import random as jrandom
from jaxfl.accounting import lightdp as acct
from jaxfl.algorithms import lightdp


def task(cfg: _common.LightDPConfig) -> tasks.Task:
    """The config's ``label_shards`` task."""
    return tasks.get("label_shards", dataset=cfg.dataset, image_pool=cfg.image_pool,
                     num_clients=cfg.num_clients, examples_per_client=cfg.examples_per_client,
                     shards_per_client=cfg.shards_per_client, seed=cfg.seed,
                     test_examples=cfg.test_examples, model=cfg.model,
                     model_kwargs=cfg.model_kwargs)


def num_params(cfg: _common.LightDPConfig) -> int:
    """The number of parameters of the config's model (no data loaded)."""
    model = models.get_model(cfg.model, **dict(cfg.model_kwargs))
    return tree.num_params(model.init(jax.random.key(0)))


def local_steps(cfg: _common.LightDPConfig) -> int:
    """E epochs of full batches (remainder dropped): 31 for 1000 examples, batch 32."""
    return cfg.local_epochs * (cfg.examples_per_client // cfg.batch_size)


def sensitivity(cfg: _common.LightDPConfig) -> float:
    return acct.sensitivity(clip_norm=cfg.clip_norm, examples_per_client=cfg.examples_per_client,
                            mode=cfg.sensitivity_mode)


def design_scheme(cfg: _common.LightDPConfig) -> str:
    """HE + DP trains with SMPC + DP's maths (it differs in cost only)."""
    return "smpc_dp" if cfg.scheme == "he_dp" else cfg.scheme


def noise_design(cfg: _common.LightDPConfig) -> acct.NoiseDesign:
    """The noise design of ``cfg`` (Example 1 / the baselines; strict or paper calibration)."""
    pmf = None
    if cfg.stragglers == "bernoulli":
        pmf = acct.binomial_pmf(cfg.num_clients, cfg.failure_prob, cfg.max_stragglers)
    return acct.design(epsilon=cfg.epsilon, delta=cfg.delta, num_clients=cfg.num_clients,
                       max_colluders=cfg.max_colluders, max_stragglers=cfg.max_stragglers,
                       sensitivity=sensitivity(cfg), rounds=cfg.rounds, straggler_pmf=pmf,
                       scheme=design_scheme(cfg), mode=cfg.mode, composition=cfg.composition,
                       constant=cfg.constant)


def paper_designs(cfg: _common.LightDPConfig) -> list[dict]:
    """:func:`jaxfl.accounting.lightdp.paper_designs` (Tables II/III's noise designs and their
    exact accounting) at the config's rounds, sensitivity and delta."""
    return acct.paper_designs(delta=cfg.delta, rounds=cfg.rounds, sensitivity=sensitivity(cfg))


def run_spec(cfg: _common.LightDPConfig) -> sweep.RunSpec:
    t = task(cfg)
    model = t.model
    design = noise_design(cfg)
    keys = jrandom.key_streams(cfg.seed, ("init", "setup"))  # model init and pairwise masks
    algorithm = lightdp.lightdp_fl(
        model, design=design, num_clients=cfg.num_clients, local_steps=local_steps(cfg),
        batch_size=cfg.batch_size, client_lr=cfg.client_lr, clip_norm=cfg.clip_norm,
        setup_key=keys["setup"], stragglers=cfg.stragglers,
        failure_prob=cfg.failure_prob, path=cfg.path, client_map=cfg.client_map)
    params = model.init(keys["init"])
    return sweep.RunSpec(algorithm=algorithm, data=t.train, params=params, rounds=cfg.rounds,
                         seed=cfg.seed, eval_fn=t.evaluate,
                         eval_every=cfg.eval_every, checkpoint_every=cfg.checkpoint_every,
                         delta=cfg.delta, config=cfg, extra_record={"scheme": cfg.scheme})


__all__ = ["run_spec", "task", "num_params", "local_steps", "sensitivity", "design_scheme",
           "noise_design", "paper_designs"]
