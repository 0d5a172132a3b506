"""Builders of DP-FTRL runs (:class:`experiments.configs.fl.FtrlConfig`) and of the DP-FedAvg vs
DP-FTRL comparison (:class:`experiments.configs.fl.CompareConfig`): wiring only."""

from __future__ import annotations

import dataclasses
import functools

from experiments.configs import fl
from experiments.papers import fedavg as fedavg_paper
from jaxfl import sweep
from jaxfl.algorithms import dp_ftrl


@functools.lru_cache(maxsize=32)
def _strategy(name: str, rounds: int, min_sep: int, bands: int, optimizer_steps: int):
    return dp_ftrl.make_strategy(name, rounds, min_sep=min_sep, bands=bands,
                                 optimizer_steps=optimizer_steps)


def run_spec(cfg: fl.FtrlConfig) -> sweep.RunSpec:
    data, model, eval_fn = fedavg_paper.task(cfg)
    num_groups = cfg.num_clients // cfg.clients_per_round
    bands = cfg.bands if cfg.bands is not None else min(num_groups, cfg.rounds)
    strategy = _strategy(cfg.strategy, cfg.rounds, num_groups,
                         bands if cfg.strategy == "bandmf" else 1, cfg.optimizer_steps)
    adaptive = fedavg_paper.adaptive_clip(cfg)

    def make(sigma):
        return dp_ftrl.dp_ftrl(model, num_clients=cfg.num_clients,
                               clients_per_round=cfg.clients_per_round, rounds=cfg.rounds,
                               local_steps=cfg.local_steps, batch_size=cfg.batch_size,
                               client_lr=cfg.client_lr, server_lr=cfg.server_lr,
                               clip_norm=cfg.clip_norm, noise_multiplier=sigma,
                               strategy=strategy, client_batch=cfg.client_batch,
                               adaptive_clip=adaptive)

    key = ("dp_ftrl", cfg.strategy, num_groups, bands, cfg.optimizer_steps, adaptive)
    alg = make(fedavg_paper.noise_multiplier(cfg, make, key))
    return fedavg_paper.spec_of(cfg, alg, data, model, eval_fn, cfg.delta)


def compare_run_spec(cfg: fl.CompareConfig) -> sweep.RunSpec:
    """DP-FedAvg with Poisson rate ``clients_per_round / num_clients`` (``method="dpfedavg"``)
    or DP-FTRL with strategy ``method``, everything else shared."""
    shared = {f.name: getattr(cfg, f.name) for f in dataclasses.fields(fl.FLConfig)}
    if cfg.method == "dpfedavg":
        sub = fl.FLConfig(**{**shared, "algorithm": "dp_fedavg",
                             "sampling_rate": cfg.clients_per_round / cfg.num_clients})
        spec = fedavg_paper.run_spec(sub)
    else:
        sub = fl.FtrlConfig(**{**shared, "algorithm": "dp_ftrl", "strategy": cfg.method,
                               "clients_per_round": cfg.clients_per_round, "bands": cfg.bands,
                               "optimizer_steps": cfg.optimizer_steps})
        spec = run_spec(sub)
    return dataclasses.replace(spec, config=cfg)
