"""Builder of DP-FTRL runs (:class:`experiments.fl.FtrlConfig`): wiring only."""

from __future__ import annotations

from experiments import fl
from experiments.papers import fedavg as fedavg_paper
from jaxfl import models, sweep, training
from jaxfl import random as jrandom
from jaxfl.algorithms import dp_ftrl


def run_spec(cfg: fl.FtrlConfig) -> sweep.RunSpec:
    data, xte, yte, num_classes, input_shape = fedavg_paper.federated_data(cfg)
    model = models.get_model(cfg.model, **fl._model_kwargs(cfg.model, input_shape, num_classes))
    alg = dp_ftrl.dp_ftrl(model, num_clients=cfg.num_clients,
                          clients_per_round=cfg.clients_per_round, rounds=cfg.rounds,
                          local_steps=cfg.local_steps, batch_size=cfg.batch_size,
                          client_lr=cfg.client_lr, server_lr=cfg.server_lr,
                          clip_norm=cfg.clip_norm, noise_multiplier=cfg.noise_multiplier,
                          strategy=cfg.strategy, bands=cfg.bands,
                          optimizer_steps=cfg.optimizer_steps, client_batch=cfg.client_batch)
    params = model.init(jrandom.key_streams(cfg.seed, ("init",))["init"])
    return sweep.RunSpec(algorithm=alg, data=data, params=params, rounds=cfg.rounds,
                         seed=cfg.seed, eval_fn=training.make_classifier_eval(model, xte, yte),
                         eval_every=cfg.eval_every, checkpoint_every=cfg.checkpoint_every,
                         delta=cfg.delta, config=cfg)
