"""ULDP-FL's silo-level baselines (Kato et al., PVLDB 2024, Sec. 3-4 and the authors' code).

* **DEFAULT** (non-private FedAvg with two-sided learning rates): each silo runs Q epochs of
  SGD on D_s; ``x + eta_g * mean_s Delta^s`` (unweighted mean, as in the code).
* **ULDP-NAIVE** (Algorithm 1): each silo clips its delta to C and adds N(0, sigma^2 C^2 |S|).
  The paper calibrates to a user-level sensitivity C|S| (a user can move every silo's delta).
  Under add/remove of a user a silo's clipped delta can move by up to 2C (it is replaced, not
  removed), so the sound sensitivity is 2C|S|: the strict accountant (default) uses multiplier
  sigma/2, the paper mode sigma (``sound=False``).
* **SILO-LEVEL-DP** (McMahan et al. 2018 with silos as clients): silos clip to C, the server
  averages and adds N(0, (sigma C / |S|)^2); the protected unit is a *silo*.
* **ULDP-GROUP-k** (Algorithm 2) and **RECORD-LEVEL-DP**: every silo runs Q epochs of
  Opacus-style DP-SGD on its (bounded) records; ``x + eta_g * mean_s Delta^s``. The user-level
  guarantee of GROUP follows from group privacy over k records (see
  :mod:`jaxfl.accounting.uldp`); RECORD protects single records only.

Silo training is one ``vmap`` over the padded silo axis of a
:class:`~jaxfl.algorithms.uldp_data.SiloData`. Every builder sets ``accountant`` from
:func:`jaxfl.accounting.uldp.method_accountant` with the mechanism's values, and its ``apply``
takes traced ``global_lr``, ``local_lr`` (and ``clip_norm``, ``noise_multiplier`` when
private).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxfl import privatizer, validate
from jaxfl import tree as jtree
from jaxfl.accounting import uldp as uldp_accounting
from jaxfl.algorithms import base, uldp, uldp_data, uldp_local


def _silo_inputs(data, key):
    xs, ys = data.x[data.index], data.y[data.index]
    keys = base.client_keys(key, jnp.arange(data.index.shape[0]))
    return xs, ys, keys


def _trained_deltas(model, data, params, key, trainers, epochs, batch_size, lr, traced_lr):
    L = data.index.shape[1]
    if L not in trainers:
        trainers[L] = uldp_local.epoch_trainer(uldp._batch_loss(model), learning_rate=lr,
                                               epochs=epochs, batch_size=batch_size, length=L)
    xs, ys, keys = _silo_inputs(data, key)
    train = lambda *a: trainers[L](*a, learning_rate=traced_lr)  # noqa: E731
    return jax.vmap(train, in_axes=(None, 0, 0, 0, 0))(params, xs, ys, data.mask, keys)


def _algorithm(name, apply, accountant, info, num_silos, hparams, model, silo_sizes=None):
    def prepare(round_index, rng):
        del round_index, rng  # unused: every silo takes part in every round
        return np.ones(num_silos, np.float32)

    return base.Algorithm(name=name, init=uldp.init_state, prepare=prepare, apply=apply,
                          params_of=lambda s: s.params,
                          info=info, hparams=hparams, accountant=accountant,
                          data_spec=base.DataSpec("silos", (("silos", num_silos),), model,
                                                  silo_sizes=silo_sizes))


def _check(num_silos, local_epochs, batch_size, local_lr, global_lr):
    S = validate.positive_int("num_silos", num_silos)
    validate.positive_int("local_epochs", local_epochs)
    validate.positive_int("batch_size", batch_size)
    validate.positive("local_lr", local_lr, validate.JaxflValueError)
    eta_g = validate.positive("global_lr", global_lr, validate.JaxflValueError)
    return S, eta_g


def default(model, *, num_silos: int, local_epochs: int, batch_size: int, local_lr: float,
            global_lr: float = 1.0, clip_norm: float | None = None,
            noise_multiplier: float = 0.0, mode: str = "default",
            accounting: str = "strict") -> base.Algorithm:
    """DEFAULT (``mode="default"``), ULDP-NAIVE (``"naive"``) or SILO-LEVEL-DP (``"silo"``).

    ``accounting`` selects the accountant's mode (``"strict"`` or ``"paper"``; only NAIVE's
    differ: sensitivity 2C|S| against the paper's C|S|).
    """
    S, eta_g = _check(num_silos, local_epochs, batch_size, local_lr, global_lr)
    validate.one_of("mode", mode, ("default", "naive", "silo"))
    private = mode != "default"
    trainers = {}
    hparams = {"global_lr": eta_g, "local_lr": float(local_lr)}
    priv = None
    if private:
        mechanism = {"clip_norm": validate.positive("clip_norm", clip_norm),
                     "noise_multiplier": validate.positive("noise_multiplier", noise_multiplier)}
        # NAIVE: every silo clips its delta to C and adds one of S shares of noise
        # sigma C |S| (a user may be in all |S| silos); SILO: the server noises the sum.
        priv = (privatizer.per_unit(**mechanism, parts=S, sensitivity_factor=S)
                if mode == "naive" else privatizer.gaussian(**mechanism))
        hparams.update(priv.hparams)

    def apply(state, data, round_input, key, hparams=None):
        del round_input  # unused
        base.check_sizes(base.DataSpec("silos", (("silos", S),)), data, name)
        hp = base.resolve_hparams(defaults, hparams, accountant)
        params = state.params
        deltas, losses, finite = _trained_deltas(model, data, params, base.substream(
            key, "silos"), trainers, local_epochs, batch_size, local_lr, hp["local_lr"])
        real = (data.count > 0) & finite
        diag = {"train_loss": jnp.sum(jnp.where(real, losses, 0.0)) / jnp.maximum(
            jnp.sum(real), 1)}
        if mode == "default":
            mean = jtree.weighted_sum(deltas, real.astype(jnp.float32) / S)
        else:
            total, norms = priv.clip_and_sum(deltas, hp, weights=real.astype(jnp.float32))
            diag["clipped_fraction"] = jnp.mean(norms > hp["clip_norm"])
            nkey = base.substream(key, "noise")
            if mode == "naive":
                noisy = jtree.add(total, jax.tree.map(lambda v: jnp.sum(v, 0),
                                                      priv.shares(params, nkey, hp)))
            else:
                noisy = priv.add_noise(total, nkey, hp)
            mean = jtree.scale(noisy, 1.0 / S)
        new = jax.tree.map(lambda p, d: p + hp["global_lr"] * d, params, mean)
        return uldp.ServerState(new, state.round + 1), diag

    defaults = hparams
    name = {"default": "DEFAULT", "naive": "ULDP-NAIVE", "silo": "SILO-LEVEL-DP"}[mode]
    accountant = uldp_accounting.method_accountant(
        name, noise_multiplier=priv.noise_multiplier if private else 0.0, mode=accounting)
    if private:
        accountant = accountant.for_mechanism(priv)
    if mode == "default":
        return _algorithm(name, apply, accountant,
                          {"mode": "paper", "num_silos": S, "global_lr": eta_g}, S, hparams,
                          model)
    info = {**priv.hparams, "num_silos": S, "global_lr": eta_g}
    if mode == "naive":
        info.update(mode=accounting, per_silo_noise_std=priv.part_std(),
                    accounted_noise_multiplier=accountant.accounted_sigma,
                    neighbouring_relation=uldp.RELATION,
                    user_sensitivity=(2 if accounting == "strict" else 1) * priv.clip_norm * S)
    else:
        info.update(mode="paper", neighbouring_relation="add/remove one silo",
                    server_noise_std=priv.std() / S)
    return _algorithm(name, apply, accountant, info, S, hparams, model)


def uldp_naive(model, **kwargs) -> base.Algorithm:
    return default(model, mode="naive", **kwargs)


def silo_level_dp(model, **kwargs) -> base.Algorithm:
    return default(model, mode="silo", **kwargs)


def dp_sgd_silos(model, *, silo_sizes, local_epochs: int, batch_size: int, local_lr: float,
                 global_lr: float, clip_norm: float, noise_multiplier: float,
                 group_size: int | None = None, user_records=None, accounting: str = "strict",
                 group_mog: bool = True, bounding: str = "per_user") -> base.Algorithm:
    """ULDP-GROUP-k (``group_size=k``, data already bounded) or RECORD-LEVEL-DP (``None``).

    Args:
      silo_sizes: |D'_s| of the (bounded) silos; fixes the static step and batch capacities
        and the accounting (q_s = 1/ceil(|D'_s|/B), T Q ceil(|D'_s|/B) steps).
      group_size: k of the user-level group privacy; None for record-level DP.
      user_records: N_u of every user before bounding (the accountant's per-user epsilons).
      bounding: the flags' silo pointer (``"per_user"`` or the authors' ``"global"``, see
        :func:`jaxfl.algorithms.uldp_data.bound_histogram`); the strict accountant of
        ``"global"`` flags reports inf (they couple users).
      accounting: the accountant's mode (``"strict"``: sound RDP group conversion / mixture of
        Gaussians; ``"paper"``: the authors' conversion).
      group_mog: let the strict report compute the mixture-of-Gaussians PLD (slow for large
        T Q).
      Other arguments as in :func:`default`.
    """
    sizes = np.asarray([validate.positive_int("silo_size", s) for s in silo_sizes])
    S, eta_g = _check(len(sizes), local_epochs, batch_size, local_lr, global_lr)
    priv = privatizer.gaussian(  # DP-SGD in each silo: C and sigma, stated once
        clip_norm=validate.positive("clip_norm", clip_norm),
        noise_multiplier=validate.positive("noise_multiplier", noise_multiplier))
    rate, steps, expected = uldp_local.dp_sgd_silo_constants(sizes, batch_size)
    capacity = uldp_local.max_capacity(sizes, batch_size)
    trainers = {}
    hparams = {"global_lr": eta_g, "local_lr": float(local_lr), **priv.hparams}

    def apply(state, data, round_input, key, hparams=None):
        del round_input  # unused
        base.check_sizes(base.DataSpec("silos", (("silos", S),)), data, name)
        hp = base.resolve_hparams(defaults, hparams, accountant)
        params = state.params
        L = data.index.shape[1]
        if L not in trainers:
            trainers[L] = uldp_local.dp_sgd_trainer(
                model, learning_rate=local_lr, epochs=local_epochs,
                max_steps_per_epoch=int(steps.max()), capacity=min(capacity, L), length=L,
                clip_norm=priv.clip_norm, noise_multiplier=priv.noise_multiplier)
        xs, ys, keys = _silo_inputs(data, base.substream(key, "silos"))
        train = lambda *a: trainers[L](  # noqa: E731
            *a, learning_rate=hp["local_lr"], clip_norm=hp["clip_norm"],
            noise_multiplier=hp["noise_multiplier"])
        deltas, losses, overflow = jax.vmap(train, in_axes=(None, 0, 0, 0, 0, 0, 0, 0))(
            params, xs, ys, data.mask, jnp.asarray(rate), jnp.asarray(steps),
            jnp.asarray(expected), keys)
        mean = jtree.weighted_sum(deltas, jnp.full((S,), 1.0 / S))
        new = jax.tree.map(lambda p, d: p + hp["global_lr"] * d, params, mean)
        return uldp.ServerState(new, state.round + 1), {"train_loss": jnp.mean(losses),
                                                        "batch_overflow": jnp.sum(overflow)}

    defaults = hparams
    name = "RECORD-LEVEL-DP" if group_size is None else f"ULDP-GROUP-{group_size}"
    accountant = uldp_accounting.method_accountant(
        name, noise_multiplier=priv.noise_multiplier, silo_sizes=sizes.tolist(),
        batch_size=batch_size, local_epochs=local_epochs, group_size=group_size,
        user_records=user_records, mode=accounting, mog=group_mog,
        bounding=bounding).for_mechanism(priv)
    info = {**priv.hparams, "silo_sizes": sizes.tolist(),
            "sampling_rates": rate.tolist(), "steps_per_epoch": steps.tolist(),
            "expected_batch": expected.tolist(), "capacity": capacity, "num_silos": S,
            "global_lr": eta_g, "mode": "paper"}
    if group_size is None:
        info["neighbouring_relation"] = "add/remove one record"
        info["dp_event_note"] = "composition over silos: an upper bound on the max over silos"
    else:
        info["neighbouring_relation"] = uldp.RELATION + f", users capped at {group_size} records"
        info["dp_event_note"] = "mixture of Gaussians per silo with a group of k in every silo"
        info["group_size"] = int(group_size)
    return _algorithm(name, apply, accountant, info, S, hparams, model,
                      silo_sizes=tuple(int(v) for v in sizes))



def _example(*, method: str = "naive", **hparams):
    from jaxfl.algorithms import registry

    model = registry.logreg(4, 3)
    records = uldp._records()
    silos = uldp_data.silo_data(records)
    kw = dict(clip_norm=1.0, noise_multiplier=2.0, local_lr=0.1, global_lr=1.0) | hparams
    common = dict(local_epochs=1, batch_size=4)
    if method == "naive":
        alg = uldp_naive(model, num_silos=3, **common, **kw)
    elif method == "silo":
        alg = silo_level_dp(model, num_silos=3, **common, **kw)
    else:
        alg = dp_sgd_silos(model, silo_sizes=np.bincount(records.silo, minlength=3),
                           group_size=2, user_records=np.full(5, 3), group_mog=False,
                           **common, **kw)
    return registry.Example(model, alg, silos)


def _register():
    import functools

    from jaxfl.algorithms import registry

    registry.register("uldp_naive", _example, noise=registry.GAUSSIAN)
    registry.register("silo_level_dp", functools.partial(_example, method="silo"),
                      noise=registry.GAUSSIAN)
    registry.register("uldp_group", functools.partial(_example, method="group"),
                      noise=registry.GAUSSIAN)


_register()


__all__ = ["default", "uldp_naive", "silo_level_dp", "dp_sgd_silos"]
