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

from jaxfl import _validate, clipping, noise
from jaxfl import tree as jtree
from jaxfl.accounting import events
from jaxfl.algorithms import base, fedavg, local


def dp_fedavg(model, *, num_clients: int, local_steps: int, batch_size: int | None,
              client_lr: float, clip_norm: float, noise_multiplier: float,
              sampling_rate: float, server_opt: optax.GradientTransformation | None = None,
              sampling: str = "shuffle") -> base.Algorithm:
    """User-level DP-FedAvg. See module docstring; arguments as in :func:`fedavg.fedavg` plus
    ``clip_norm`` (C), ``noise_multiplier`` (sigma) and ``sampling_rate`` (q)."""
    num_clients = _validate.positive_int("num_clients", num_clients)
    q = _validate.probability("sampling_rate", sampling_rate)
    C = _validate.positive("clip_norm", clip_norm)
    sigma = _validate.positive("noise_multiplier", noise_multiplier)
    _validate.positive("client_lr", client_lr, _validate.JaxflValueError)
    base.check_model(model)
    server_opt = server_opt or optax.sgd(1.0)
    base.check_optimizer("server_opt", server_opt)
    update = local.client_update_fn(local.model_batch_loss(model), optimizer=optax.sgd(client_lr),
                                    steps=local_steps, batch_size=batch_size, sampling=sampling)
    capacity = base.poisson_capacity(num_clients, q)
    denominator = q * num_clients
    round_event = events.poisson_gaussian(sampling_rate=q, noise_multiplier=sigma)

    def init(params):
        return fedavg.ServerState(params, server_opt.init(params), jnp.zeros((), jnp.int32))

    def prepare(round_index, rng):
        del round_index  # unused
        if q == 1.0:
            return base.full_cohort(num_clients)
        return base.poisson_cohort(rng, num_clients, q, capacity)

    def apply(state, data, cohort, key):
        base.check_data(data, num_clients)
        deltas, aux, counts = fedavg.cohort_deltas(update, state.params, data, cohort, key)
        valid = jnp.asarray(cohort.mask) & (counts > 0)
        total, norms = clipping.clip_and_sum(deltas, C, mask=valid)
        noisy = noise.add_gaussian(total, base.substream(key, "noise"), sigma * C)
        mean_delta = jtree.scale(noisy, 1.0 / denominator)
        new_state = fedavg.server_step(server_opt, state, mean_delta)
        m = valid.astype(jnp.float32)
        diag = {"train_loss": jnp.sum(aux["loss"] * m) / jnp.maximum(m.sum(), 1.0),
                "cohort_size": m.sum(),
                "clipped_fraction": jnp.sum((norms > C) * m) / jnp.maximum(m.sum(), 1.0)}
        return new_state, diag

    return base.Algorithm(
        name="dp_fedavg", init=init, prepare=prepare, apply=apply,
        params_of=lambda s: s.params,
        dp_event=lambda rounds: events.repeated(round_event, rounds),
        round_event=round_event,
        info={"sampling_rate": q, "clip_norm": C, "noise_multiplier": sigma,
              "denominator": denominator, "capacity": capacity,
              "neighbouring_relation": "add/remove one client"})


__all__ = ["dp_fedavg"]
