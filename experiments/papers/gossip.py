"""Builder of the gossip-DP runs (Koskela & Kulkarni 2025): configs of
``experiments/configs/gossip/`` (:mod:`experiments.configs.gossip._common`) -> RunSpec.

* :class:`StudyConfig` (Fig. 1, Fig. 2): an accounting-only spec whose accountant is the
  view's :class:`jaxfl.accounting.gossip.PairwiseAccountant` (strict = certified, paper =
  all-ones pattern) or the LDP accountant.
* :class:`MnistConfig` (Fig. 3): DP-GossipAvg (with / without secure summation) or full-batch
  DP-FedAvg, σ calibrated by the library to the target mean pairwise ε.

Wiring only: the MNIST node shards, the model and the evaluation are the ``node_shards`` task of
:mod:`jaxfl.tasks`; graphs, sensitivity tables and the task's shards are cached per process so
that the points of a sweep share them.
"""

from __future__ import annotations

import functools

import jax
import numpy as np

from experiments.configs.gossip._common import MnistConfig, StudyConfig
from jaxfl import random as jrandom
from jaxfl import sweep, tasks
from jaxfl.accounting import gossip as gacc
from jaxfl.algorithms import gossip as galg
from jaxfl.sensitivity import PairTable
from jaxfl.topology import graphs, mixing

_MIXING = {"maxdeg": mixing.max_degree, "closed": mixing.closed_neighbourhood,
           "mh": mixing.metropolis_hastings}


@functools.lru_cache(maxsize=8)
def _graph(kind: str, n: int, p: float, seed: int, mix: str, data_dir):
    A = graphs.facebook(data_dir)[0] if kind == "facebook" else graphs.erdos_renyi(n, p, seed=seed)
    return A, _MIXING[mix](A)


def _observers(A, target: int, per_kind: int) -> list[int]:
    """The ``per_kind`` smallest-index neighbours, then non-neighbours, of ``target``."""
    row = np.asarray(A[target].toarray()).ravel() if hasattr(A, "toarray") else np.asarray(
        A[target])
    nbrs = [int(k) for k in np.flatnonzero(row)[:per_kind]]
    far = [int(k) for k in np.flatnonzero(row == 0) if k != target][:per_kind]
    return nbrs + far


@functools.lru_cache(maxsize=16)
def _table(kind, n, p, seed, mix, data_dir, view, observers, targets) -> PairTable:
    _, W = _graph(kind, n, p, seed, mix, data_dir)
    return PairTable(W, view, observers=observers, targets=targets)


def study_spec(cfg: StudyConfig) -> sweep.RunSpec:
    A, W = _graph(cfg.graph, cfg.n, cfg.p, cfg.graph_seed, cfg.mixing, cfg.data_dir)
    num = W.shape[0]
    targets = None if cfg.target is None else (int(cfg.target),)
    observers = None
    if cfg.target is not None and cfg.observers_per_kind is not None:
        observers = tuple(_observers(A, cfg.target, cfg.observers_per_kind))
    every_T = tuple(range(1, cfg.T + 1))
    certified = cfg.certified_horizons or every_T
    if cfg.view == "ldp":
        acc = gacc.ldp_accountant(noise_multiplier=cfg.noise_multiplier, num_nodes=num,
                                  observers=observers, targets=targets, curve_horizons=every_T)
    else:
        table = _table(cfg.graph, cfg.n, cfg.p, cfg.graph_seed, cfg.mixing, cfg.data_dir,
                       "tm1" if cfg.view == "tm1" else cfg.view, observers, targets)
        acc = galg.view_accountant(table, noise_multiplier=cfg.noise_multiplier,
                                   curve_horizons=certified, paper_curve_horizons=every_T)
    return sweep.RunSpec(algorithm=None, privacy=acc, data=None, params=None, rounds=cfg.T,
                         seed=cfg.seed, eval_every=cfg.eval_every, delta=cfg.delta, config=cfg)


@functools.lru_cache(maxsize=64)
def _sigma(n, p, graph_seed, mix, ss, mode, target_epsilon, rounds, delta) -> float:
    """The calibrated noise multiplier (cached: the seeds and learning rates of one (method,
    ε) share it, and a sweep builds every point twice)."""
    table = _table("er", n, p, graph_seed, mix, None, "tm3" if ss else "tm4", None, None)
    return galg.calibrated_noise_multiplier(table, secure_summation=ss, mode=mode,
                                            target_epsilon=target_epsilon, rounds=rounds,
                                            delta=delta)


def mnist_spec(cfg: MnistConfig) -> sweep.RunSpec:
    _, W = _graph("er", cfg.n, cfg.p, cfg.graph_seed, cfg.mixing, None)
    task = tasks.get("node_shards", num_nodes=cfg.n, per_node=cfg.per_node,
                     seed=cfg.partition_seed, val_size=cfg.val_size, data_dir=cfg.data_dir)
    # the model the closed-form gradient differentiates: the run's data check reads its input
    # and its 10 classes (labels out of range would silently one-hot to zero)
    common = dict(clip_norm=cfg.clip_norm, learning_rate=cfg.learning_rate,
                  normalizer=cfg.normalizer, model=task.model)
    if cfg.method == "fedavg":
        sigma = gacc.fedavg_noise_multiplier(cfg.target_epsilon, rounds=cfg.rounds,
                                             delta=cfg.delta)
        alg = galg.dp_fedavg_full_batch(num_nodes=cfg.n, noise_multiplier=sigma, **common)
    else:
        ss = "_ss_" in cfg.method
        table = _table("er", cfg.n, cfg.p, cfg.graph_seed, cfg.mixing, None,
                       "tm3" if ss else "tm4", None, None)
        mode = "paper" if cfg.method.endswith("_paper") else "strict"
        sigma = _sigma(cfg.n, cfg.p, cfg.graph_seed, cfg.mixing, ss, mode, cfg.target_epsilon,
                       cfg.rounds, cfg.delta)
        eval_node = int(jrandom.host_rng(cfg.partition_seed, "eval_node").integers(cfg.n))
        alg = galg.dp_gossip_avg(mixing_matrix=W, noise_multiplier=sigma, secure_summation=ss,
                                 sensitivities=table, eval_node=eval_node, **common)
    params = galg.logreg_init(784, 10)
    return sweep.RunSpec(algorithm=alg, data=task.train,
                         params=jax.tree.map(np.asarray, params), rounds=cfg.rounds,
                         seed=cfg.seed, eval_fn=task.evaluate,
                         eval_every=cfg.eval_every, checkpoint_every=cfg.checkpoint_every,
                         delta=cfg.delta, config=cfg,
                         extra_record={"noise_multiplier": sigma})


def run_spec(cfg) -> sweep.RunSpec:
    if isinstance(cfg, StudyConfig):
        return study_spec(cfg)
    if isinstance(cfg, MnistConfig):
        return mnist_spec(cfg)
    raise TypeError(f"Expected a gossip StudyConfig or MnistConfig, got {type(cfg).__name__}.")
