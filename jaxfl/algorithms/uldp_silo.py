"""ULDP-FL's silo-level baselines (Kato et al., PVLDB 2024, Sec. 3-4 and the authors' code).

* **DEFAULT** (non-private FedAvg with two-sided learning rates): each silo runs Q epochs of
  SGD on D_s; ``x + eta_g * mean_s Delta^s`` (unweighted mean, as in the code).
* **ULDP-NAIVE** (Algorithm 1): each silo clips its delta to C and adds N(0, sigma^2 C^2 |S|).
  The paper calibrates to a user-level sensitivity C|S| (a user can move every silo's delta).
  Under add/remove of a user a silo's clipped delta can move by up to 2C (it is replaced, not
  removed), so the sound sensitivity is 2C|S|: ``naive_sensitivity="strict"`` (default)
  accounts with multiplier sigma/2, ``"paper"`` with sigma.
* **SILO-LEVEL-DP** (McMahan et al. 2018 with silos as clients): silos clip to C, the server
  averages and adds N(0, (sigma C / |S|)^2); the protected unit is a *silo*.
* **ULDP-GROUP-k** (Algorithm 2) and **RECORD-LEVEL-DP**: every silo runs Q epochs of
  Opacus-style DP-SGD on its (bounded) records; ``x + eta_g * mean_s Delta^s``. The user-level
  guarantee of GROUP follows from group privacy over k records (see
  :mod:`jaxfl.accounting.uldp`); RECORD protects single records only.

Silo training is one ``vmap`` over the padded silo axis of a
:class:`~jaxfl.algorithms.uldp_data.SiloData`.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxfl import _validate, clipping, noise
from jaxfl import tree as jtree
from jaxfl.accounting import events
from jaxfl.accounting import uldp as uldp_accounting
from jaxfl.algorithms import base, uldp, uldp_local

NAIVE_SENSITIVITIES = ("strict", "paper")


def _silo_inputs(data, key):
    xs, ys = data.x[data.index], data.y[data.index]
    keys = base.client_keys(key, jnp.arange(data.index.shape[0]))
    return xs, ys, keys


def _trained_deltas(model, data, params, key, trainers, epochs, batch_size, lr):
    L = data.index.shape[1]
    if L not in trainers:
        trainers[L] = uldp_local.epoch_trainer(uldp._batch_loss(model), learning_rate=lr,
                                               epochs=epochs, batch_size=batch_size, length=L)
    xs, ys, keys = _silo_inputs(data, key)
    return jax.vmap(trainers[L], in_axes=(None, 0, 0, 0, 0))(params, xs, ys, data.mask, keys)


def _algorithm(name, apply, dp_event, round_event, info, num_silos):
    def prepare(round_index, rng):
        del round_index, rng  # unused: every silo takes part in every round
        return np.ones(num_silos, np.float32)

    return base.Algorithm(name=name, init=uldp.init_state, prepare=prepare, apply=apply,
                          params_of=lambda s: s.params, dp_event=dp_event,
                          round_event=round_event, info=info)


def _check(num_silos, local_epochs, batch_size, local_lr, global_lr):
    S = _validate.positive_int("num_silos", num_silos)
    _validate.positive_int("local_epochs", local_epochs)
    _validate.positive_int("batch_size", batch_size)
    _validate.positive("local_lr", local_lr, _validate.JaxflValueError)
    eta_g = _validate.positive("global_lr", global_lr, _validate.JaxflValueError)
    return S, eta_g


def default(model, *, num_silos: int, local_epochs: int, batch_size: int, local_lr: float,
            global_lr: float = 1.0, clip_norm: float | None = None,
            noise_multiplier: float = 0.0, mode: str = "default",
            naive_sensitivity: str = "strict") -> base.Algorithm:
    """DEFAULT (``mode="default"``), ULDP-NAIVE (``"naive"``) or SILO-LEVEL-DP (``"silo"``)."""
    S, eta_g = _check(num_silos, local_epochs, batch_size, local_lr, global_lr)
    _validate.one_of("mode", mode, ("default", "naive", "silo"))
    _validate.one_of("naive_sensitivity", naive_sensitivity, NAIVE_SENSITIVITIES)
    private = mode != "default"
    C = _validate.positive("clip_norm", clip_norm) if private else None
    sigma = _validate.positive("noise_multiplier", noise_multiplier) if private else 0.0
    trainers = {}

    def apply(state, data, round_input, key):
        del round_input  # unused
        params = state.params
        deltas, losses, finite = _trained_deltas(model, data, params, base.substream(
            key, "silos"), trainers, local_epochs, batch_size, local_lr)
        real = (data.count > 0) & finite
        diag = {"train_loss": jnp.sum(jnp.where(real, losses, 0.0)) / jnp.maximum(
            jnp.sum(real), 1)}
        if mode == "default":
            mean = jtree.weighted_sum(deltas, real.astype(jnp.float32) / S)
        else:
            clipped, norms = jax.vmap(clipping.clip_pytree, in_axes=(0, None))(deltas, C)
            diag["clipped_fraction"] = jnp.mean(norms > C)
            total = jtree.weighted_sum(clipped, real.astype(jnp.float32))
            nkey = base.substream(key, "noise")
            if mode == "naive":
                noisy = jtree.add(total, jax.tree.map(lambda v: jnp.sum(v, 0), uldp.silo_noise(
                    params, nkey, S, sigma * C * np.sqrt(S))))
            else:
                noisy = noise.add_gaussian(total, nkey, sigma * C)
            mean = jtree.scale(noisy, 1.0 / S)
        new = jax.tree.map(lambda p, d: p + eta_g * d, params, mean)
        return uldp.ServerState(new, state.round + 1), diag

    if mode == "default":
        return _algorithm("DEFAULT", apply, base.non_private_event, None,
                          {"mode": "paper", "num_silos": S, "global_lr": eta_g}, S)
    effective = sigma / 2 if (mode == "naive" and naive_sensitivity == "strict") else sigma
    round_event = events.gaussian(effective)
    info = {"clip_norm": C, "noise_multiplier": sigma, "accounted_noise_multiplier": effective,
            "num_silos": S, "global_lr": eta_g}
    if mode == "naive":
        info.update(mode=naive_sensitivity, per_silo_noise_std=sigma * C * np.sqrt(S),
                    neighbouring_relation=uldp.RELATION,
                    user_sensitivity=(2 if naive_sensitivity == "strict" else 1) * C * S)
        name = "ULDP-NAIVE"
    else:
        info.update(mode="paper", neighbouring_relation="add/remove one silo",
                    server_noise_std=sigma * C / S)
        name = "SILO-LEVEL-DP"
    return _algorithm(name, apply, lambda r: events.repeated(round_event, r), round_event,
                      info, S)


def uldp_naive(model, **kwargs) -> base.Algorithm:
    return default(model, mode="naive", **kwargs)


def silo_level_dp(model, **kwargs) -> base.Algorithm:
    return default(model, mode="silo", **kwargs)


def dp_sgd_silos(model, *, silo_sizes, local_epochs: int, batch_size: int, local_lr: float,
                 global_lr: float, clip_norm: float, noise_multiplier: float,
                 group_size: int | None = None) -> base.Algorithm:
    """ULDP-GROUP-k (``group_size=k``, data already bounded) or RECORD-LEVEL-DP (``None``).

    Args:
      silo_sizes: |D'_s| of the (bounded) silos; fixes the static step and batch capacities
        and the accounting (q_s = 1/ceil(|D'_s|/B), T Q ceil(|D'_s|/B) steps).
      group_size: k of the user-level group privacy; None for record-level DP.
      Other arguments as in :func:`default`.
    """
    sizes = np.asarray([_validate.positive_int("silo_size", s) for s in silo_sizes])
    S, eta_g = _check(len(sizes), local_epochs, batch_size, local_lr, global_lr)
    C = _validate.positive("clip_norm", clip_norm)
    sigma = _validate.positive("noise_multiplier", noise_multiplier)
    rate, steps, expected = uldp_local.dp_sgd_silo_constants(sizes, batch_size)
    capacity = uldp_local.max_capacity(sizes, batch_size)
    trainers = {}

    def apply(state, data, round_input, key):
        del round_input  # unused
        params = state.params
        L = data.index.shape[1]
        if L not in trainers:
            trainers[L] = uldp_local.dp_sgd_trainer(
                model, learning_rate=local_lr, epochs=local_epochs,
                max_steps_per_epoch=int(steps.max()), capacity=min(capacity, L), length=L,
                clip_norm=C, noise_multiplier=sigma)
        xs, ys, keys = _silo_inputs(data, base.substream(key, "silos"))
        deltas, losses, overflow = jax.vmap(trainers[L], in_axes=(None, 0, 0, 0, 0, 0, 0, 0))(
            params, xs, ys, data.mask, jnp.asarray(rate), jnp.asarray(steps),
            jnp.asarray(expected), keys)
        mean = jtree.weighted_sum(deltas, jnp.full((S,), 1.0 / S))
        new = jax.tree.map(lambda p, d: p + eta_g * d, params, mean)
        return uldp.ServerState(new, state.round + 1), {"train_loss": jnp.mean(losses),
                                                        "batch_overflow": jnp.sum(overflow)}

    per_round_steps = [local_epochs * int(b) for b in steps]

    def dp_event(rounds):
        if group_size is None:
            evs = [events.dp_sgd(noise_multiplier=sigma, sampling_rate=float(q),
                                 steps=rounds * st) for q, st in zip(rate, per_round_steps,
                                                                     strict=True)]
        else:
            evs = [uldp_accounting.group_mog_event(sampling_rate=float(q),
                                                   noise_multiplier=sigma, steps=rounds * st,
                                                   group_size=group_size)
                   for q, st in zip(rate, per_round_steps, strict=True)]
        return events.composed(evs)

    info = {"clip_norm": C, "noise_multiplier": sigma, "silo_sizes": sizes.tolist(),
            "sampling_rates": rate.tolist(), "steps_per_epoch": steps.tolist(),
            "expected_batch": expected.tolist(), "capacity": capacity, "num_silos": S,
            "global_lr": eta_g, "mode": "paper"}
    if group_size is None:
        name = "RECORD-LEVEL-DP"
        info["neighbouring_relation"] = "add/remove one record"
        info["dp_event_note"] = "composition over silos: an upper bound on the max over silos"
    else:
        name = f"ULDP-GROUP-{group_size}"
        info["neighbouring_relation"] = uldp.RELATION + f", users capped at {group_size} records"
        info["dp_event_note"] = "mixture of Gaussians per silo with a group of k in every silo"
        info["group_size"] = int(group_size)
    return _algorithm(name, apply, dp_event, None, info, S)


__all__ = ["default", "uldp_naive", "silo_level_dp", "dp_sgd_silos"]
