"""DP-OGL (Alg. 1) and DP-OGL+ (Eqs. 11-13): differentially private overlapping grouped learning
(Kiani, Boenisch, Draper, IEEE JSAIT 2024, Sec. III).

Workers belong to possibly overlapping groups (membership ``B [N, M]``, see
:mod:`jaxfl.topology.groups`); each group has a trusted master holding a group model
``theta_m``. Every (worker, group) membership is a *pair* p with its own local copy, so local
training of an epoch is one ``vmap`` over all ``P = nnz(B)`` pairs.

Epoch t (1-based; ``inter = (t - 1) mod S == 0``):

* start point of pair (n, m): the mean of n's group models at inter-group epochs (Eq. 3; a
  no-op for single-group workers), ``theta_m`` otherwise;
* L local SGD steps (:func:`jaxfl.algorithms.local.client_update_fn`), delta ``Delta phi``;
* **DP-OGL**: Poisson sampling per group (rate pi_m, independent across groups and epochs),
  clip each delta to ``c_m`` (Eq. 7), sum, add ``N(0, c_m^2 sigma_m^2 I)`` (Eqs. 8-9) and apply
  with the *fixed* denominator ``pi_m |N_m|`` (Eq. 10);
* **DP-OGL+**: the participants are sampled once per window of S epochs (at the inter-group
  epoch); each pair accumulates its S deltas; when the window closes the master clips every
  window sum to ``sqrt(S) c_m``, adds ``N(0, S c_m^2 sigma_m^2 I)`` and sets
  ``theta = anchor + (sum + noise) / (pi_m |N_m|)`` where ``anchor`` is the last noised model
  (Eqs. 12-13).

DP-OGL+ window updates (``window_updates``):
* ``"local"`` (default, sound): inside a window each sampled pair continues its own local
  trajectory from the window start; group models only change when the window closes. Each
  window sum then depends on the worker's own data only, so the sensitivity is ``sqrt(S) c_m``
  and the Theorem 1 / Eq. 18 bound holds.
* ``"shared"`` (the paper's Eq. 11): un-noised intermediate group updates
  ``theta += sum_W Delta phi / (pi |N|)`` and other members train on them, so their window sums
  depend on the target's data and the sensitivity ``sqrt(S) c_m`` claimed by the paper does not
  hold (for S >= 2). Kept to reproduce the paper's utility curves; outputs say ``mode=paper``.

Keys. The round key ``k`` gives group keys ``group_round_key(k, m)``; the pair (n, m) trains with
``fold_in(substream(k_m, "clients"), j)`` (j = n's position in ``N_m``) and the master of m draws
noise from ``substream(k_m, "noise")``. Group m therefore behaves exactly like
:func:`jaxfl.algorithms.dp_fedavg.dp_fedavg` on its members with round key ``k_m``: GL equals
DP-FedAvg and CL equals M independent DP-FedAvg runs (tests). Keys never depend on data, so
changing one worker's data changes no other pair's randomness.

Personalized model of worker n (Eq. 1): ``phi_n = mean_{m in M_n} theta_m``
(:func:`personalized_params`, :func:`make_personalized_eval`).

Privacy: ``Algorithm.accountant`` is a :class:`jaxfl.accounting.dp_ogl.PwPAccountant` (per-pair
Theorem 1; headline = the worst (target, observer) pair, ``per_unit`` = the ``[N, N]``
matrix); ``dp_event(rounds)`` is the event of that most exposed pair.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxfl import clipping, precision, privatizer, validate
from jaxfl import tree as jtree
from jaxfl.accounting import dp_ogl as accounting
from jaxfl.accounting import sampler as noise_sampler
from jaxfl.algorithms import base, local
from jaxfl.topology import groups

# pylint: disable=invalid-name

WINDOW_UPDATES = ("local", "shared")


class DpOglState(NamedTuple):
    params: Any  # group models theta, every leaf shape=[M, ...]
    anchor: Any  # DP-OGL+: last noised group models, shape=[M, ...]; None for DP-OGL
    acc: Any  # DP-OGL+: per-pair window sums, shape=[P, ...]; None for DP-OGL
    window_mask: jax.Array | None  # DP-OGL+: shape=[P], dtype=bool, window participants
    round: jax.Array  # shape=(), dtype=int32: epochs completed (t - 1)


class RoundInput(NamedTuple):
    mask: np.ndarray  # shape=[P], dtype=bool: Poisson draws of this epoch, one per pair


def group_round_key(key: jax.Array, group) -> jax.Array:
    """The key group m's master and members use in a round with key ``key``."""
    return jax.random.fold_in(base.substream(key, "groups"), group)


def _pair_tables(s: groups.GroupStructure):
    pw, pg = s.pairs()
    deg = s.worker_degrees
    P, M = s.num_pairs, s.num_groups
    local_index = np.zeros(P, np.int32)
    for m in range(M):  # host-side, once: position of each member within its group
        sel = np.flatnonzero(pg == m)
        local_index[sel] = np.arange(sel.size)
    w_inter = s.membership[pw].astype(np.float32) / deg[pw, None].astype(np.float32)
    w_intra = np.eye(M, dtype=np.float32)[pg]
    return pw, pg, local_index, w_inter, w_intra


def _segment_sum(tree, weights, segments, num_segments):
    def f(x):
        w = weights.reshape(weights.shape + (1,) * (x.ndim - 1)).astype(x.dtype)
        return jax.ops.segment_sum(x * w, segments, num_segments=num_segments)
    return jax.tree.map(f, tree)


def _noisy_group_update(priv, total, group_keys, clip, sigma, inv_den):
    """``(total_m + N(0, (sigma_m x sensitivity(c_m))^2 I)) * inv_den_m`` for every group: the
    privatizer's Gaussian noise at group m's clip norm and noise multiplier (vmapped over
    groups)."""
    def one(t, k, c, s, inv):
        return jtree.scale(priv.add_noise(t, base.substream(k, "noise"), clip=c,
                                          noise_multiplier=s), inv)
    return jax.vmap(one)(total, group_keys, clip, sigma, inv_den)


def _bcast(v, x):
    return v.reshape(v.shape + (1,) * (x.ndim - 1))


def dp_ogl(model, structure, *, period: int, local_steps: int, batch_size: int | None,
           client_lr: float, clip_norms, noise_multipliers, sampling_rates,
           plus: bool = False, window_updates: str = "local",
           sampling: str = "uniform", recipe: str = "default") -> base.Algorithm:
    """DP-OGL (``plus=False``) or DP-OGL+ (``plus=True``) on a group structure.

    Args:
      model: a :class:`jaxfl.models.Model`.
      structure: a :class:`~jaxfl.topology.groups.GroupStructure` (or membership matrix); the
        data's client axis must be the structure's workers.
      period: S, epochs between inter-group epochs (and the DP-OGL+ window length).
      local_steps: L local SGD steps per epoch and group.
      batch_size: local minibatch size (None = full batch).
      client_lr: local SGD learning rate eta.
      clip_norms: c_m (scalar or ``[M]``).
      noise_multipliers: sigma_m (scalar or ``[M]``).
      sampling_rates: pi_m (scalar or ``[M]``).
      plus: run DP-OGL+.
      window_updates: DP-OGL+ only, ``"local"`` (sound, default) or ``"shared"`` (paper Eq. 11).
      sampling: local minibatch sampling (``"uniform"`` with replacement, or ``"shuffle"``).
      recipe: the accountant's RDP recipe, ``"default"`` (strict) or ``"paper"`` (Opacus
        orders and conversion); the other one is the accountant's ``other_modes()``.

    Returns:
      The :class:`~jaxfl.algorithms.base.Algorithm`; its ``accountant`` is a
      :class:`jaxfl.accounting.dp_ogl.PwPAccountant` built from the same structure, S,
      sigma_m and pi_m (strict unless ``recipe="paper"`` or DP-OGL+ with shared window
      updates, which is labelled ``mode="paper"``, ``sound=False``). Traced hyperparameters
      (``hparams=``): ``client_lr`` always; ``clip_norm`` and ``noise_multiplier`` when they
      are the same for every group (per-group values stay constants).
    """
    s, S, c, sig, q = _checked(structure, period=period, client_lr=client_lr,
                               window_updates=window_updates, clip_norms=clip_norms,
                               noise_multipliers=noise_multipliers, sampling_rates=sampling_rates)
    update_kw = dict(steps=local_steps, batch_size=batch_size, sampling=sampling)
    local.client_update_fn(local.model_batch_loss(model), optimizer=optax.sgd(client_lr),
                           **update_kw)  # validate early
    den = np.asarray(q, np.float64) * np.asarray(s.group_sizes, np.float64)  # fixed pi_m |N_m|
    uniform = bool(np.all(c == c[0]) and np.all(sig == sig[0]))
    # per group m: sensitivity sqrt(S) c_m (DP-OGL+'s window) or c_m, noise sigma_m x that;
    # the builder's scalars where uniform (else the per-group vectors are passed explicitly)
    priv = privatizer.gaussian(clip_norm=float(c.max()), noise_multiplier=float(sig.max()),
                               sensitivity_factor=math.sqrt(S) if plus else 1.0)
    defaults = {"client_lr": float(client_lr)}
    if uniform:  # scalar knobs: traceable (a sweep vmaps over them)
        defaults.update(priv.hparams)
    algorithm = "dp_ogl_plus" if plus else "dp_ogl"
    accountant = _accountant(s, S, sig, q, algorithm=algorithm, recipe=recipe,
                             window_updates=window_updates, priv=priv if uniform else None)
    init, prepare, apply = _round_functions(
        model, s, S, plus=plus, shared=window_updates == "shared", c=c, sig=sig, q=q, den=den,
        uniform=uniform, priv=priv, defaults=defaults, accountant=accountant,
        update_kw=update_kw)
    info = {"structure": groups.summary(s), "algorithm": algorithm, "period": S,
            "threat_model": accounting.default_threat_model(algorithm),
            "clip_norms": c.tolist(), "noise_multipliers": sig.tolist(),
            "sampling_rates": q.tolist(), "denominators": den.tolist(), "num_pairs": s.num_pairs,
            "window_updates": window_updates if plus else None,
            "mode": accountant.mode, "sound": accountant.sound, "recipe": recipe,
            "neighbouring_relation": "add/remove one worker (all of its data)"}
    return base.Algorithm(name=algorithm, init=init, prepare=prepare, apply=apply,
                          params_of=lambda st: st.params, info=info, hparams=defaults,
                          accountant=accountant,
                          data_spec=base.DataSpec("clients", (("workers", s.num_workers),),
                                                  model))


def _checked(structure, *, period, client_lr, window_updates, clip_norms, noise_multipliers,
             sampling_rates):
    """Validation of :func:`dp_ogl`'s inputs: ``(structure, S, c_m, sigma_m, pi_m)``."""
    s = groups.as_structure(structure)
    S = validate.positive_int("period", period)
    validate.positive("client_lr", client_lr, validate.JaxflValueError)
    validate.one_of("window_updates", window_updates, WINDOW_UPDATES)
    M = s.num_groups
    per_group = accounting._per_group  # pylint: disable=protected-access
    c = per_group("clip_norms", clip_norms, M)
    sig = per_group("noise_multipliers", noise_multipliers, M)
    q = per_group("sampling_rates", sampling_rates, M)
    for name, arr in (("clip_norms", c), ("noise_multipliers", sig)):
        if np.any(arr <= 0):
            raise validate.PrivacyParameterError(f"Expected {name} > 0, got {arr.tolist()}.")
    if np.any(q <= 0) or np.any(q > 1):
        raise validate.PrivacyParameterError(
            f"Expected sampling_rates in (0, 1], got {q.tolist()}.")
    return s, S, c, sig, q


def _accountant(s, S, sig, q, *, algorithm, recipe, window_updates, priv):
    """The per-pair accountant (with the privatizer's hparams when the groups share C and
    sigma: ``priv`` given)."""
    accountant = accounting.PwPAccountant(s, period=S, noise_multipliers=sig,
                                          sampling_rates=q, algorithm=algorithm,
                                          recipe=recipe, window_updates=window_updates)
    if priv is not None:
        accountant = accountant.for_mechanism(priv)
    if np.all(sig > 0):  # group m releases N(0, c_m^2 sigma_m^2) on sensitivity c_m per epoch
        # (DP-OGL+: sqrt(S) c_m on sqrt(S) c_m sigma_m once a window, counted every epoch)
        accountant = accountant.derive(noise_spec=noise_sampler.NoiseSpec(
            ratio=float(1.0 / sig.min()),
            releases_per_round=int(s.membership.sum(axis=1).max()),
            note="one release per epoch in each group of the worker (r = 1 / min sigma_m)"))
    return accountant


def _round_functions(model, s, S, *, plus, shared, c, sig, q, den, uniform, priv, defaults,
                     accountant, update_kw):
    """``(init, prepare, apply)`` of :func:`dp_ogl`."""
    M, P = s.num_groups, s.num_pairs
    pw, pg, local_index, w_inter, w_intra = _pair_tables(s)
    inv_den = jnp.asarray(1.0 / den, jnp.float32)
    root = math.sqrt(S) if plus else 1.0
    c_j, sig_j = jnp.asarray(c, jnp.float32), jnp.asarray(sig, jnp.float32)
    pg_np = pg
    q_pair = q[pg]
    pw_j, pg_j, li_j = jnp.asarray(pw), jnp.asarray(pg), jnp.asarray(local_index)
    w_inter_j, w_intra_j = jnp.asarray(w_inter), jnp.asarray(w_intra)

    def init(params):
        theta = jtree.broadcast(params, M)
        theta = jax.tree.map(jnp.array, theta)
        if not plus:
            return DpOglState(theta, None, None, None, jnp.zeros((), jnp.int32))
        acc = jax.tree.map(lambda x: jnp.zeros((P, *x.shape[1:]), x.dtype), theta)
        return DpOglState(theta, theta, acc, jnp.zeros((P,), bool), jnp.zeros((), jnp.int32))

    def prepare(round_index, rng):
        del round_index  # unused: draws depend only on the round's generator
        return RoundInput(mask=rng.random(P) < q_pair)

    def apply(state, data, round_input, key, hparams=None):
        hp = base.resolve_hparams(defaults, hparams, accountant)
        c_m = jnp.broadcast_to(hp["clip_norm"], (M,)) if uniform else c_j
        sig_m = jnp.broadcast_to(hp["noise_multiplier"], (M,)) if uniform else sig_j
        clip_pair = root * c_m[pg_np]
        if data.num_clients != s.num_workers:
            raise validate.ShapeError(
                f"Expected data for {s.num_workers} workers of {s.name}, got {data.num_clients}.")
        inter = state.round % S == 0
        close = (state.round + 1) % S == 0
        gkeys = jax.vmap(lambda m: group_round_key(key, m))(jnp.arange(M))
        pkeys = jax.vmap(lambda k, j: jax.random.fold_in(base.substream(k, "clients"), j))(
            gkeys[pg_j], li_j)
        theta = state.params
        if plus and not shared:  # own trajectory inside the window, theta == anchor
            start = jax.tree.map(lambda a, b: jnp.where(inter, a, a + b),
                                 jtree.mix(w_inter_j, theta), state.acc)
        else:
            start = jtree.mix(jnp.where(inter, w_inter_j, w_intra_j), theta)
        # Pairs see their worker's examples as *indices* into the flattened data, and the loss
        # gathers each minibatch: memory [P, batch] instead of a [P, max_n, ...] data copy.
        max_n = data.mask.shape[1]
        flat_x = data.x.reshape((-1, *data.x.shape[2:]))

        def batch_loss(p, idx_b, yb, mb, k):
            return model.batch_loss(p, jnp.take(flat_x, idx_b, axis=0), yb, mb, key=k)

        update = local.client_update_fn(batch_loss, optimizer=optax.sgd(hp["client_lr"]),
                                        **update_kw)
        x_idx = pw_j[:, None] * max_n + jnp.arange(max_n, dtype=jnp.int32)[None, :]
        y = jnp.take(data.y, pw_j, axis=0)
        mask_x = jnp.take(data.mask, pw_j, axis=0)
        deltas, aux = jax.vmap(update)(start, x_idx, y, mask_x, pkeys)
        has_data = jnp.take(jnp.asarray(data.num_examples), pw_j) > 0
        drawn = jnp.asarray(round_input.mask)
        if plus:
            drawn = jnp.where(inter, drawn, state.window_mask)
        valid = drawn & has_data
        w = valid.astype(jnp.float32)
        diag = {"train_loss": jnp.sum(aux["loss"] * w) / jnp.maximum(w.sum(), 1.0),
                "cohort_size": w.sum()}
        if not plus:
            with precision.sensitive():
                clipped, norms = jax.vmap(clipping.clip_pytree)(deltas, clip_pair)
                total = _segment_sum(clipped, w, pg_j, M)
            step = _noisy_group_update(priv, total, gkeys, c_m, sig_m, inv_den)
            new_theta = jax.tree.map(jnp.add, theta, step)
            diag["clipped_fraction"] = jnp.sum((norms > clip_pair) * w) / jnp.maximum(w.sum(), 1)
            return DpOglState(new_theta, None, None, None, state.round + 1), diag
        acc = jax.tree.map(lambda a, d: jnp.where(inter, jnp.zeros_like(a), a) + d * _bcast(w, d),
                           state.acc, deltas)
        with precision.sensitive():
            clipped, norms = jax.vmap(clipping.clip_pytree)(acc, clip_pair)
            total = _segment_sum(clipped, w, pg_j, M)
        closed = jax.tree.map(jnp.add, state.anchor,
                              _noisy_group_update(priv, total, gkeys, c_m, sig_m, inv_den))
        if shared:  # Eq. 11: un-noised working update inside the window
            working = jax.tree.map(lambda t, u: t + u * _bcast(inv_den, u), theta,
                                   _segment_sum(deltas, w, pg_j, M))
        else:
            working = theta
        new_theta = jax.tree.map(lambda a, b: jnp.where(close, a, b), closed, working)
        anchor = jax.tree.map(lambda a, b: jnp.where(close, a, b), closed, state.anchor)
        diag["clipped_fraction"] = jnp.where(
            close, jnp.sum((norms > clip_pair) * w) / jnp.maximum(w.sum(), 1), 0.0)
        return DpOglState(new_theta, anchor, acc, drawn, state.round + 1), diag

    return init, prepare, apply


def dp_ogl_plus(model, structure, **kwargs) -> base.Algorithm:
    """DP-OGL+ (:func:`dp_ogl` with ``plus=True``)."""
    return dp_ogl(model, structure, plus=True, **kwargs)


def personalization_weights(structure) -> np.ndarray:
    """``[N, M]`` float32: row n is ``B[n] / |M_n|`` (uniform average of n's groups, Eq. 1)."""
    s = groups.as_structure(structure)
    return (s.membership / s.worker_degrees[:, None]).astype(np.float32)


def personalized_params(structure, group_params):
    """Personalized models ``phi_n = mean_{m in M_n} theta_m`` of all workers (``[N, ...]``)."""
    return jtree.mix(jnp.asarray(personalization_weights(structure)), group_params)


def make_personalized_eval(model, structure, x, y, mask, *, prefix: str = "test"):
    """Evaluates every worker's personalized model on its own examples.

    Args:
      model: the :class:`jaxfl.models.Model`.
      structure: the group structure.
      x, y, mask: per-worker padded arrays ``[N, n_max, ...]`` (e.g. a per-worker test split).
      prefix: metric name prefix.

    Returns:
      ``group_params -> {f"{prefix}_{metric}": mean over workers (with >= 1 example) of the
      worker's mean metric}``; workers are processed with ``lax.map`` (memory of one model).
    """
    W = jnp.asarray(personalization_weights(structure))
    x, y, mask = jnp.asarray(x), jnp.asarray(y), jnp.asarray(mask)
    counts = mask.sum(1)
    has = (counts > 0).astype(jnp.float32)

    @jax.jit
    def evaluate_on(group_params, W, x, y, mask, has):  # data as arguments, not constants
        def one(args):
            w, xb, yb, mb = args
            phi = jax.tree.map(lambda t: t[0], jtree.mix(w[None, :], group_params))
            per = model.metrics(model.apply(phi, xb), yb)
            m = mb.astype(jnp.float32)
            return {k: jnp.sum(v * m) / jnp.maximum(m.sum(), 1.0) for k, v in per.items()}

        per_worker = jax.lax.map(one, (W, x, y, mask))
        return {f"{prefix}_{k}": jnp.sum(v * has) / jnp.maximum(has.sum(), 1.0)
                for k, v in per_worker.items()}

    def evaluate(group_params):
        return evaluate_on(group_params, W, x, y, mask, has)

    return evaluate



def _example(*, plus: bool = False, **hparams):
    from jaxfl.algorithms import registry

    model = registry.logreg()
    alg = dp_ogl(model, groups.ring(6, 3), period=2 if plus else 1, local_steps=2, batch_size=3,
                 client_lr=hparams.get("client_lr", 0.3),
                 clip_norms=hparams.get("clip_norm", 0.5),
                 noise_multipliers=hparams.get("noise_multiplier", 1.0), sampling_rates=0.7,
                 plus=plus)
    return registry.Example(model, alg, registry.blobs())


def _register():
    import functools

    from jaxfl.algorithms import registry

    registry.register("dp_ogl", _example, noise=registry.GAUSSIAN)
    registry.register("dp_ogl_plus", functools.partial(_example, plus=True),
                      noise=registry.GAUSSIAN)


_register()


__all__ = ["DpOglState", "RoundInput", "WINDOW_UPDATES", "group_round_key", "dp_ogl",
           "dp_ogl_plus", "personalization_weights", "personalized_params",
           "make_personalized_eval"]
