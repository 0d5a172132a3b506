"""FedAvg (McMahan et al., AISTATS 2017, Alg. 1): sampled clients run L local steps from the
server model; the server applies the example-weighted mean of their deltas through a server
optimizer (FedOpt form, Reddi et al. 2021; ``optax.sgd(1.0)`` recovers plain FedAvg).

Per-client training is one ``vmap`` over the padded cohort axis.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import optax

from jaxfl import _validate
from jaxfl import tree as jtree
from jaxfl.algorithms import base, local


class ServerState(NamedTuple):
    params: object  # model parameter pytree
    opt_state: object  # server optimizer state
    round: jax.Array  # shape=(), dtype=int32


def cohort_deltas(update, params, data, cohort: base.Cohort, key):
    """Runs ``update`` for every cohort slot (vmapped); returns (deltas [K, ...], aux, counts)."""
    idx = jnp.asarray(cohort.indices)
    x = jnp.take(data.x, idx, axis=0)
    y = jnp.take(data.y, idx, axis=0)
    mask = jnp.take(data.mask, idx, axis=0) & jnp.asarray(cohort.mask)[:, None]
    keys = base.client_keys(key, idx)
    deltas, aux = local.vmapped_update(update)(params, x, y, mask, keys)
    counts = jnp.sum(mask, axis=1)
    return deltas, aux, counts


def server_step(server_opt, state: ServerState, mean_delta) -> ServerState:
    """Applies ``-mean_delta`` as a pseudo-gradient through the server optimizer."""
    pseudo_grad = jtree.scale(mean_delta, -1.0)
    updates, opt_state = server_opt.update(pseudo_grad, state.opt_state, state.params)
    return ServerState(optax.apply_updates(state.params, updates), opt_state, state.round + 1)


def fedavg(model, *, num_clients: int, local_steps: int, batch_size: int | None,
           client_lr: float, server_opt: optax.GradientTransformation | None = None,
           sampling_rate: float = 1.0, weighting: str = "examples",
           sampling: str = "shuffle") -> base.Algorithm:
    """Non-private FedAvg with Poisson client sampling at ``sampling_rate``.

    Args:
      model: a :class:`jaxfl.models.Model`.
      num_clients: number of clients N in the data.
      local_steps: local SGD steps L per round.
      batch_size: local minibatch size (None = full batch).
      client_lr: client SGD learning rate.
      server_opt: server optimizer over the pseudo-gradient (default ``optax.sgd(1.0)``).
      sampling_rate: Poisson participation probability q (1.0 = all clients).
      weighting: ``"examples"`` (weights n_k) or ``"uniform"``.
      sampling: local minibatch sampling, see :mod:`jaxfl.algorithms.local`.
    """
    num_clients = _validate.positive_int("num_clients", num_clients)
    q = _validate.probability("sampling_rate", sampling_rate)
    _validate.positive("client_lr", client_lr, _validate.JaxflValueError)
    _validate.one_of("weighting", weighting, ("examples", "uniform"))
    base.check_model(model)
    server_opt = server_opt or optax.sgd(1.0)
    base.check_optimizer("server_opt", server_opt)
    update = local.client_update_fn(local.model_batch_loss(model), optimizer=optax.sgd(client_lr),
                                    steps=local_steps, batch_size=batch_size, sampling=sampling)
    capacity = base.poisson_capacity(num_clients, q)

    def init(params):
        return ServerState(params, server_opt.init(params), jnp.zeros((), jnp.int32))

    def prepare(round_index, rng):
        del round_index  # unused
        if q == 1.0:
            return base.full_cohort(num_clients)
        return base.poisson_cohort(rng, num_clients, q, capacity)

    def apply(state, data, cohort, key):
        base.check_data(data, num_clients)
        deltas, aux, counts = cohort_deltas(update, state.params, data, cohort, key)
        w = counts.astype(jnp.float32) if weighting == "examples" else (counts > 0).astype(
            jnp.float32)
        total = jnp.maximum(jnp.sum(w), 1e-12)
        mean_delta = jtree.weighted_sum(deltas, w / total)
        new_state = server_step(server_opt, state, mean_delta)
        m = jnp.asarray(cohort.mask).astype(jnp.float32)
        diag = {"train_loss": jnp.sum(aux["loss"] * m) / jnp.maximum(m.sum(), 1.0),
                "cohort_size": m.sum()}
        return new_state, diag

    return base.Algorithm(name="fedavg", init=init, prepare=prepare, apply=apply,
                          params_of=lambda s: s.params, dp_event=base.non_private_event,
                          round_event=None, info={"sampling_rate": q, "capacity": capacity})
