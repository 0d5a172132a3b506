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

from jaxfl import layout, validate
from jaxfl import tree as jtree
from jaxfl.accounting import report
from jaxfl.algorithms import base, local
from jaxfl.algorithms import cohort as cohorts


class ServerState(NamedTuple):
    params: object  # model parameter pytree
    opt_state: object  # server optimizer state
    round: jax.Array  # shape=(), dtype=int32


def server_step(server_opt, state: ServerState, mean_delta) -> ServerState:
    """Applies ``-mean_delta`` as a pseudo-gradient through the server optimizer."""
    pseudo_grad = jtree.scale(mean_delta, -1.0)
    updates, opt_state = server_opt.update(pseudo_grad, state.opt_state, state.params)
    return ServerState(optax.apply_updates(state.params, updates), opt_state, state.round + 1)


def server_optimizer(server_opt: optax.GradientTransformation | None, server_lr: float):
    """``(defaults, make(hp) -> optimizer)``: the server optimizer, traceable in ``server_lr``.

    With ``server_opt=None`` the server runs ``optax.sgd(server_lr)`` and ``server_lr`` is a
    traceable hyperparameter (its state does not depend on the rate); a user-given
    ``server_opt`` is used as is and ``server_lr`` must stay 1.0.
    """
    if server_opt is not None:
        if server_lr != 1.0:
            raise validate.JaxflValueError(
                f"Expected server_lr=1.0 with an explicit server_opt, got server_lr={server_lr}.")
        return {}, lambda hp: server_opt
    server_lr = validate.positive("server_lr", server_lr, validate.JaxflValueError)
    return {"server_lr": float(server_lr)}, lambda hp: optax.sgd(hp["server_lr"])


def round_parts(model, *, num_clients: int, sampling_rate: float, local_steps: int,
                batch_size: int | None, client_lr: float, sampling: str):
    """The pieces FedAvg and DP-FedAvg share: ``make_update(lr)`` (local training of one
    client at learning rate ``lr``, possibly traced) and the host-side Poisson ``prepare``."""

    def make_update(lr):
        return local.client_update_fn(local.model_batch_loss(model), optimizer=optax.sgd(lr),
                                      steps=local_steps, batch_size=batch_size,
                                      sampling=sampling)

    make_update(client_lr)  # validates the local-training arguments now
    capacity = base.poisson_capacity(num_clients, sampling_rate)

    def prepare(round_index, rng):
        del round_index  # unused
        if sampling_rate == 1.0:
            return base.full_cohort(num_clients)
        return base.poisson_cohort(rng, num_clients, sampling_rate, capacity)

    return make_update, prepare


def fedavg(model, *, num_clients: int, local_steps: int, batch_size: int | None,
           client_lr: float, server_opt: optax.GradientTransformation | None = None,
           sampling_rate: float = 1.0, weighting: str = "examples",
           sampling: str = "shuffle", server_lr: float = 1.0,
           client_batch: int | str | None = "auto") -> base.Algorithm:
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
      server_lr: server learning rate of the default ``optax.sgd`` server optimizer.
      client_batch: the layout of the cohort axis (:func:`jaxfl.layout.resolve`): ``"auto"``
        (default: the engine's measured best for the backend: chunks of 1 on CPU, a full
        vmap on accelerators), an int (train that many clients at a time, see
        :func:`jaxfl.algorithms.cohort.train_and_sum`) or None (vmap the whole cohort).

    Traceable hyperparameters (``Algorithm.hparams``, overridable per call through
    ``apply(..., hparams=...)``): ``client_lr``, ``sampling_rate`` (host-side only: it sets
    the Poisson cohorts drawn by ``prepare``) and, with the default server optimizer,
    ``server_lr``.
    """
    num_clients = validate.positive_int("num_clients", num_clients)
    q = validate.probability("sampling_rate", sampling_rate)
    validate.positive("client_lr", client_lr, validate.JaxflValueError)
    validate.one_of("weighting", weighting, ("examples", "uniform"))
    base.check_model(model)
    if server_opt is not None:
        base.check_optimizer("server_opt", server_opt)
    server_defaults, make_server_opt = server_optimizer(server_opt, server_lr)
    defaults = {"client_lr": float(client_lr), "sampling_rate": q, **server_defaults}

    make_update, prepare = round_parts(model, num_clients=num_clients, sampling_rate=q,
                                       local_steps=local_steps, batch_size=batch_size,
                                       client_lr=client_lr, sampling=sampling)
    client_request, client_batch = client_batch, layout.resolve(client_batch, "cohort")
    capacity = base.poisson_capacity(num_clients, q)

    def init(params):
        opt = make_server_opt(defaults)
        return ServerState(params, opt.init(params), jnp.zeros((), jnp.int32))

    def apply(state, data, cohort, key, hparams=None):
        base.check_data(data, num_clients)
        hp = base.resolve_hparams(defaults, hparams)
        update = make_update(hp["client_lr"])
        chunk = cohorts.fit_layout(client_request, client_batch, update, state.params, data,
                                   cohort, key, memory_key=make_update)
        if chunk is None:
            deltas, aux, counts = cohorts.deltas(update, state.params, data, cohort, key)
        else:
            counts = cohorts.counts(data, cohort)
        w = counts.astype(jnp.float32) if weighting == "examples" else (counts > 0).astype(
            jnp.float32)
        total = jnp.maximum(jnp.sum(w), 1e-12)
        if chunk is None:
            mean_delta = jtree.weighted_sum(deltas, w / total)
        else:
            mean_delta, aux, _ = cohorts.train_and_sum(
                update, state.params, data, cohort, key,
                lambda d, wk: (jtree.scale(d, wk), {}), w / total, client_batch=chunk)
        new_state = server_step(make_server_opt(hp), state, mean_delta)
        m = jnp.asarray(cohort.mask).astype(jnp.float32)
        diag = {"train_loss": jnp.sum(aux["loss"] * m) / jnp.maximum(m.sum(), 1.0),
                "cohort_size": m.sum()}
        return new_state, diag

    return base.Algorithm(name="fedavg", init=init, prepare=prepare, apply=apply,
                          params_of=lambda s: s.params,
                          info={"sampling_rate": q, "capacity": capacity},
                          hparams=defaults, accountant=report.NonPrivateAccountant("client"),
                          data_spec=base.DataSpec("clients", (("clients", num_clients),), model,
                                                  padded_clients=True))


def _example(**hparams):
    from jaxfl.algorithms import registry

    model = registry.logreg()
    kw = dict(client_lr=0.3, server_lr=1.0, sampling_rate=0.5) | hparams
    alg = fedavg(model, num_clients=6, local_steps=2, batch_size=3, **kw)
    return registry.Example(model, alg, registry.blobs())


def _register():
    from jaxfl.algorithms import registry

    registry.register("fedavg", _example)  # non-private: no noise, no accountant claim


_register()
