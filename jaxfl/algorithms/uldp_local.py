"""Local computations of ULDP-FL for one unit (a silo or a (silo, user) pair), to be vmapped.

* :func:`epoch_trainer`: Q epochs of plain minibatch SGD (learning rate eta_l), records
  reshuffled every epoch, the last partial batch kept, the loss a mean over the batch's real
  rows (PyTorch ``DataLoader(shuffle=True)`` semantics, as in the authors' code). The number of
  steps per epoch is ``ceil(count / B)`` for each unit; the scan runs the static maximum and the
  extra steps are no-ops. A step whose loss is not finite is skipped (the authors' ULDP-AVG rule).
  :mod:`jaxfl.algorithms.local` has fixed step counts with wrap-around batches, hence this
  epoch-based variant.
* :func:`pair_gradient`: ULDP-SGD's gradient of f_{s,u} at x_t (mean over the pair's records),
  or with ``repo_compat`` the authors' sum over minibatches of (batch-mean gradient / |b|).
* :func:`dp_sgd_trainer`: Opacus-style DP-SGD inside a silo (ULDP-GROUP, RECORD-LEVEL-DP):
  Poisson sampling at q_s = 1/ceil(n_s/B), ceil(n_s/B) steps per epoch, per-example clipping to
  C, N(0, sigma^2 C^2) noise on the sum, division by Opacus' expected batch size
  E_s = int(n_s q_s).

All take unit arrays ``x [L, ...], y [L, ...], mask [L]`` whose padding rows are zeros.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from jaxfl import privatizer, validate
from jaxfl import tree as jtree
from jaxfl.data import sampling


def _append_zero_row(a):
    return jnp.concatenate([a, jnp.zeros((1, *a.shape[1:]), a.dtype)])


def _all_finite(tree) -> jax.Array:
    return jnp.all(jnp.stack([jnp.all(jnp.isfinite(x)) for x in jax.tree.leaves(tree)]))


def _sgd_step(params, grads, lr, ok):
    return jax.tree.map(lambda p, g: jnp.where(ok, p - lr * g, p), params, grads)


def epoch_trainer(batch_loss: Callable, *, learning_rate: float, epochs: int, batch_size: int,
                  length: int, skip_nonfinite: bool = True) -> Callable:
    """Builds ``train(params, x, y, mask, key) -> (delta, mean_loss, finite)`` for one unit.

    Args:
      batch_loss: ``(params, xb, yb, mask_b, key) -> scalar`` masked mean loss.
      learning_rate: eta_l.
      epochs: Q.
      batch_size: B.
      length: L, the padded number of rows of a unit (static).
      skip_nonfinite: skip a step whose loss is NaN/inf.

    Returns:
      A function of one unit; ``delta = x_local - x_global`` (zero for an empty unit),
      ``finite`` is false when the trained model has a NaN or inf entry. Its keyword
      ``learning_rate`` (a traced scalar; default the builder's) overrides eta_l.
    """
    epochs = validate.positive_int("epochs", epochs)
    batch_size = validate.positive_int("batch_size", batch_size)
    length = validate.positive_int("length", length)
    lr = validate.positive("learning_rate", learning_rate, validate.JaxflValueError)
    steps = -(-length // batch_size)
    pad = steps * batch_size - length
    width = min(batch_size, length)  # rows a step can hold: a unit never fills more than L

    def train(params, x, y, mask, key, learning_rate=None):
        step_lr = lr if learning_rate is None else learning_rate
        count = jnp.sum(mask).astype(jnp.int32)
        xe, ye = _append_zero_row(x), _append_zero_row(y)

        def epoch(p, e):
            ek = jax.random.fold_in(key, e)
            u = jax.random.uniform(jax.random.fold_in(ek, 0), (length,))
            perm = jnp.argsort(jnp.where(mask, u, 2.0)).astype(jnp.int32)
            perm = jnp.concatenate([perm, jnp.full((pad,), length, jnp.int32)])

            def step(p, b):
                pos = b * batch_size + jnp.arange(width)
                valid = pos < count
                idx = jnp.where(valid, jax.lax.dynamic_slice(perm, (b * batch_size,),
                                                             (width,)), length)
                loss, g = jax.value_and_grad(batch_loss)(p, xe[idx], ye[idx], valid,
                                                         jax.random.fold_in(ek, b + 1))
                ok = jnp.any(valid)
                if skip_nonfinite:
                    ok = ok & jnp.isfinite(loss)
                return _sgd_step(p, g, step_lr, ok), (jnp.where(ok, loss, 0.0), ok)

            if steps == 1:  # a unit of at most B rows: one step, no loop to trace
                p, (loss, ok) = step(p, jnp.zeros((), jnp.int32))
                return p, (loss, ok.astype(jnp.int32))
            p, (losses, oks) = jax.lax.scan(step, p, jnp.arange(steps))
            return p, (jnp.sum(losses), jnp.sum(oks))

        new, (ls, ns) = jax.lax.scan(epoch, params, jnp.arange(epochs))
        delta = jtree.sub(new, params)
        return delta, jnp.sum(ls) / jnp.maximum(jnp.sum(ns), 1), _all_finite(delta)

    return train


def pair_gradient(batch_loss: Callable, *, length: int, repo_compat: bool = False,
                  batch_size: int = 64) -> Callable:
    """Builds ``grad(params, x, y, mask, key) -> (g, loss, finite)`` of ULDP-SGD for one pair.

    Paper (default): the gradient of the mean loss over the pair's records.
    ``repo_compat``: the authors' code, sum over consecutive minibatches b of size
    ``batch_size`` of grad(mean loss on b) / |b| (a bug of the code; it rescales the step).
    """
    length = validate.positive_int("length", length)
    batch_size = validate.positive_int("batch_size", batch_size)

    def grad(params, x, y, mask, key):
        if not repo_compat:
            loss, g = jax.value_and_grad(batch_loss)(params, x, y, mask, key)
            return g, loss, _all_finite(g)
        steps = -(-length // batch_size)
        pad = steps * batch_size - length
        xe = jnp.concatenate([x, jnp.zeros((pad, *x.shape[1:]), x.dtype)])
        ye = jnp.concatenate([y, jnp.zeros((pad, *y.shape[1:]), y.dtype)])
        me = jnp.concatenate([mask, jnp.zeros((pad,), bool)])
        count = jnp.sum(mask)

        def step(acc, b):
            sl = lambda a: jax.lax.dynamic_slice_in_dim(a, b * batch_size, batch_size)
            mb = sl(me)
            nb = jnp.sum(mb)
            loss, g = jax.value_and_grad(batch_loss)(params, sl(xe), sl(ye), mb,
                                                     jax.random.fold_in(key, b))
            scale = jnp.where(nb > 0, 1.0 / jnp.maximum(nb, 1), 0.0)
            return jtree.add(acc, jtree.scale(g, scale)), jnp.where(nb > 0, loss * nb, 0.0)

        g, losses = jax.lax.scan(step, jtree.zeros_like(params), jnp.arange(steps))
        return g, jnp.sum(losses) / jnp.maximum(count, 1), _all_finite(g)

    return grad


def coupled_loss_grads(model, params, xb, yb, valid, keys):
    """Row i's share of the batch gradient, Opacus-style for losses that couple a batch (e.g.
    Cox): d(sum of masked losses)/d(output_i) pulled back through output_i's own forward pass
    (with its own dropout key). For a per-example loss this is grad loss_i, what
    :func:`jaxfl.clipping.per_example_grads` computes directly; DP-SGD here keeps this form for
    every model so that a coupled and a per-example loss share one code path."""

    def out_i(p, x, k):
        return model.apply(p, x[None], train=True, key=k)[0]

    outs = jax.vmap(out_i, in_axes=(None, 0, 0))(params, xb, keys)
    g_out = jax.grad(lambda o: jnp.sum(_losses(model, o, yb, valid) * valid.astype(o.dtype)))(
        outs)

    def pull(x, k, go):
        _, vjp = jax.vjp(lambda p: out_i(p, x, k), params)
        return vjp(go)[0]

    return jax.vmap(pull)(xb, keys, g_out)


def _losses(model, outputs, y, mask):
    """Per-example losses; a coupled loss (Cox) gets the mask so padding leaves risk sets."""
    return model.masked_loss(outputs, y, mask)


def dp_sgd_trainer(model, *, learning_rate: float, epochs: int, max_steps_per_epoch: int,
                   capacity: int, length: int, clip_norm: float, noise_multiplier: float
                   ) -> Callable:
    """Builds ``train(params, x, y, mask, rate, steps_per_epoch, expected_batch, key)`` for one
    silo: Q epochs of Opacus-style DP-SGD (module docstring).

    Returns ``(delta, mean_loss, overflow)``; ``overflow`` counts steps whose Poisson batch
    exceeded ``capacity`` (those draws are truncated; probability < 1e-12 per step by
    construction of ``capacity``). The keywords ``learning_rate``, ``clip_norm`` and
    ``noise_multiplier`` of ``train`` (traced scalars; default the builder's) override
    eta_l, C and sigma.
    """
    lr = validate.positive("learning_rate", learning_rate, validate.JaxflValueError)
    epochs = validate.positive_int("epochs", epochs)
    max_steps = validate.positive_int("max_steps_per_epoch", max_steps_per_epoch)
    capacity = validate.positive_int("capacity", capacity)
    priv = privatizer.gaussian(clip_norm=clip_norm, noise_multiplier=noise_multiplier)

    def train(params, x, y, mask, rate, steps_per_epoch, expected_batch, key, *,
              learning_rate=None, clip_norm=None, noise_multiplier=None):
        step_lr = lr if learning_rate is None else learning_rate
        hp = {k: v for k, v in (("clip_norm", clip_norm), ("noise_multiplier", noise_multiplier))
              if v is not None}
        xe, ye = _append_zero_row(x), _append_zero_row(y)

        def step(p, i):
            active = (i % max_steps) < steps_per_epoch
            sk = jax.random.fold_in(key, i)
            sel = (jax.random.uniform(jax.random.fold_in(sk, 0), (length,)) < rate) & mask
            n_sel = jnp.sum(sel)
            idx = jnp.argsort(~sel, stable=True)[:capacity]
            valid = jnp.arange(capacity) < n_sel
            idx = jnp.where(valid, idx, length)
            keys = jax.random.split(jax.random.fold_in(sk, 1), capacity)
            grads = coupled_loss_grads(model, p, xe[idx], ye[idx], valid, keys)
            noisy, _ = priv.privatize(grads, jax.random.fold_in(sk, 2), hp, mask=valid)
            g_bar = jtree.scale(noisy, 1.0 / expected_batch)
            loss = jnp.sum(_losses(model, model.apply(p, xe[idx]), ye[idx], valid) * valid
                           ) / jnp.maximum(n_sel, 1)
            return _sgd_step(p, g_bar, step_lr, active), (jnp.where(active, loss, 0.0),
                                                     active & (n_sel > capacity), active)

        new, (losses, over, act) = jax.lax.scan(step, params, jnp.arange(epochs * max_steps))
        delta = jtree.sub(new, params)
        return delta, jnp.sum(losses) / jnp.maximum(jnp.sum(act), 1), jnp.sum(over)

    return train


def dp_sgd_silo_constants(counts: np.ndarray, batch_size: int):
    """Host-side per-silo (q_s, steps per epoch, E_s) as float32/int32 arrays (Opacus)."""
    counts = np.asarray(counts, np.int64)
    steps = np.maximum(1, -(-counts // batch_size))
    rate = 1.0 / steps
    expected = np.maximum(1, np.floor(counts * rate)).astype(np.int64)
    return rate.astype(np.float32), steps.astype(np.int32), expected.astype(np.float32)


def max_capacity(counts, batch_size: int) -> int:
    rate, _, _ = dp_sgd_silo_constants(counts, batch_size)
    return max(max(1, sampling.binomial_capacity(int(n), float(q)))
               for n, q in zip(counts, rate, strict=True))


__all__ = ["epoch_trainer", "pair_gradient", "dp_sgd_trainer", "coupled_loss_grads",
           "dp_sgd_silo_constants", "max_capacity"]
