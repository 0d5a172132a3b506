"""DP-FedAvg with user-level DP (McMahan et al., ICLR 2018, "Learning differentially private
recurrent language models", Alg. 1 with the fixed-denominator estimator).

Each round: Poisson client sampling with rate q; every sampled client trains locally and clips
its model delta to L2 norm C; the server sums the clipped deltas, adds N(0, (sigma C)^2 I) and
divides by the *fixed* denominator q N (not the realised cohort size, which would make the
sensitivity data dependent); the result goes through the server optimizer.

Privacy: one round is a Poisson-subsampled Gaussian mechanism with noise multiplier sigma under
add/remove of one client (all of that client's data), so T rounds satisfy
``dp_sgd(noise_multiplier=sigma, sampling_rate=q, steps=T)``.
"""

from __future__ import annotations

import jax.numpy as jnp
import optax

from jaxfl import _validate, clipping, layout, noise
from jaxfl import tree as jtree
from jaxfl.accounting import events, report
from jaxfl.algorithms import base, fedavg
from jaxfl.algorithms import cohort as cohorts


def dp_fedavg(model, *, num_clients: int, local_steps: int, batch_size: int | None,
              client_lr: float, clip_norm: float, noise_multiplier: float,
              sampling_rate: float, server_opt: optax.GradientTransformation | None = None,
              sampling: str = "shuffle", server_lr: float = 1.0,
              client_batch: int | str | None = "auto") -> base.Algorithm:
    """User-level DP-FedAvg. See module docstring; arguments as in :func:`fedavg.fedavg` plus
    ``clip_norm`` (C), ``noise_multiplier`` (sigma) and ``sampling_rate`` (q). ``client_batch``
    is the cohort axis' layout (:func:`jaxfl.layout.resolve`; ``"auto"`` by default): chunks
    are trained and clipped that many clients at a time
    (:func:`jaxfl.algorithms.cohort.train_and_sum`).

    Traceable hyperparameters (``Algorithm.hparams``): ``client_lr``, ``clip_norm``,
    ``noise_multiplier``, ``sampling_rate`` (the Poisson rate of ``prepare`` and the fixed
    denominator q N of ``apply``) and, with the default server optimizer, ``server_lr``. The
    accounting (``dp_event``) always uses the builder's values, so a sweep point built with
    its own values reports its own epsilon.
    """
    num_clients = _validate.positive_int("num_clients", num_clients)
    q = _validate.probability("sampling_rate", sampling_rate)
    C = _validate.positive("clip_norm", clip_norm)
    sigma = _validate.positive("noise_multiplier", noise_multiplier)
    _validate.positive("client_lr", client_lr, _validate.JaxflValueError)
    base.check_model(model)
    if server_opt is not None:
        base.check_optimizer("server_opt", server_opt)
    server_defaults, make_server_opt = fedavg.server_optimizer(server_opt, server_lr)
    defaults = {"client_lr": float(client_lr), "clip_norm": C, "noise_multiplier": sigma,
                "sampling_rate": q, **server_defaults}

    make_update, prepare = fedavg.round_parts(model, num_clients=num_clients, sampling_rate=q,
                                              local_steps=local_steps, batch_size=batch_size,
                                              client_lr=client_lr, sampling=sampling)
    client_batch = layout.resolve(client_batch, "cohort")
    capacity = base.poisson_capacity(num_clients, q)
    denominator = q * num_clients
    round_event = events.poisson_gaussian(sampling_rate=q, noise_multiplier=sigma)

    def init(params):
        opt = make_server_opt(defaults)
        return fedavg.ServerState(params, opt.init(params), jnp.zeros((), jnp.int32))

    def apply(state, data, cohort, key, hparams=None):
        base.check_data(data, num_clients)
        hp = base.resolve_hparams(defaults, hparams)
        clip = hp["clip_norm"]
        update = make_update(hp["client_lr"])
        if client_batch is None:
            deltas, aux, counts = cohorts.deltas(update, state.params, data, cohort, key)
            valid = jnp.asarray(cohort.mask) & (counts > 0)
            total, norms = clipping.clip_and_sum(deltas, clip, mask=valid)
        else:
            valid = jnp.asarray(cohort.mask) & (cohorts.counts(data, cohort) > 0)

            def contribution(delta, v):
                clipped, norm = clipping.clip_pytree(delta, clip)
                return jtree.scale(clipped, v.astype(jnp.float32)), {"norm": norm}

            total, aux, extras = cohorts.train_and_sum(update, state.params, data, cohort, key,
                                                   contribution, valid,
                                                   client_batch=client_batch)
            norms = extras["norm"]
        noisy = noise.add_gaussian(total, base.substream(key, "noise"),
                                   hp["noise_multiplier"] * clip)
        mean_delta = jtree.scale(noisy, 1.0 / (hp["sampling_rate"] * num_clients))
        new_state = fedavg.server_step(make_server_opt(hp), state, mean_delta)
        m = valid.astype(jnp.float32)
        diag = {"train_loss": jnp.sum(aux["loss"] * m) / jnp.maximum(m.sum(), 1.0),
                "cohort_size": m.sum(),
                "clipped_fraction": jnp.sum((norms > clip) * m) / jnp.maximum(m.sum(), 1.0)}
        return new_state, diag

    return base.Algorithm(
        name="dp_fedavg", init=init, prepare=prepare, apply=apply,
        params_of=lambda s: s.params,
        dp_event=lambda rounds: events.repeated(round_event, rounds),
        round_event=round_event,
        accountant=report.EventAccountant.repeating(round_event, unit="client"),
        info={"sampling_rate": q, "clip_norm": C, "noise_multiplier": sigma,
              "denominator": denominator, "capacity": capacity,
              "neighbouring_relation": "add/remove one client"},
        hparams=defaults)


__all__ = ["dp_fedavg"]
