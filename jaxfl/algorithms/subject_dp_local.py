"""The local rule of subject-level DP (Marathe & Kanani, arXiv 2206.03617 v1): one user's steps,
to be vmapped over users by :func:`jaxfl.algorithms.subject_dp.subject_dp`.

* :func:`subject_batch_stats`: the subject counts of a padded batch (HiGradAvgDP's weights
  ``1 / c_j``, LocalGroupDP's ``Z``);
* :func:`clipped_weighted_sum`: ``sum_j w_j clip(g_j, C)`` (two passes or ghost norms,
  optionally in micro-batches);
* :func:`private_gradient`: one local step's noisy gradient of each of the five methods (the
  table of :mod:`jaxfl.algorithms.subject_dp`);
* :func:`local_rule`: one user's round, a ``lax.scan`` over its steps.

All are jit / vmap friendly; :mod:`jaxfl.algorithms.subject_dp` re-exports them.
"""

# pylint: disable=invalid-name
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import optax

from jaxfl import clipping, ghost, precision, validate
from jaxfl import privatizer as jpriv
from jaxfl import tree as jtree


class BatchStats(NamedTuple):
    weights: jax.Array  # shape=[B], 1 / c_j for sampled items, 0 elsewhere
    counts: jax.Array  # shape=[B], c_j: items of j's subject in the batch (0 on padding)
    num_subjects: jax.Array  # shape=(): K, distinct subjects in the batch
    max_group: jax.Array  # shape=(): Z, largest subject group in the batch


def subject_batch_stats(subject_ids: jax.Array, mask: jax.Array) -> BatchStats:
    """Subject counts of a padded batch via ``jnp.unique`` + ``segment_sum``.

    Args:
      subject_ids: ``[B]`` int subject id per row (any value on padding rows).
      mask: ``[B]`` bool, real (sampled) rows.
    """
    B = subject_ids.shape[0]
    m = mask.astype(jnp.float32)
    sid = jnp.where(mask, subject_ids, -1)  # padding shares one id, weighted 0 below
    _, inv = jnp.unique(sid, return_inverse=True, size=B, fill_value=-2)
    inv = inv.reshape(-1)
    cnt = jax.ops.segment_sum(m, inv, num_segments=B)
    c = jnp.where(mask, cnt[inv], 0.0)
    w = jnp.where(mask, 1.0 / jnp.maximum(c, 1.0), 0.0)
    return BatchStats(weights=w, counts=c, num_subjects=jnp.sum(cnt > 0),
                      max_group=jnp.max(cnt))


def clipped_weighted_sum(example_loss, params, xb, yb, weights, *, clip_norm,
                         microbatch_size: int | None = None, model=None):
    """``sum_j weights_j * clip(grad loss_j, C)``: :func:`jaxfl.clipping.clipped_grad_sum`
    (two passes; the non-negative ``weights`` enter as its float mask, multiplying each
    example's clip factor), optionally in chunks of ``microbatch_size`` under ``lax.scan``
    (exact: the weights depend on ids only). With ``model`` (whose ``example_loss`` is
    ``example_loss``) it is :func:`jaxfl.ghost.model_clipped_grad_sum` (ghost norms where the
    model's layers allow). Returns ``(sum, norms [B], losses [B])``; the per-example losses
    (diagnostics) are one extra forward pass.
    """
    batched_loss = jax.vmap(example_loss, in_axes=(None, 0, 0))

    def chunk(xc, yc, wc):
        if model is not None:
            total, norms = ghost.model_clipped_grad_sum(model, params, xc, yc, wc,
                                                           clip_norm=clip_norm)
        else:
            total, norms = clipping.clipped_grad_sum(example_loss, params, xc, yc, wc,
                                                     clip_norm=clip_norm)
        return total, norms, batched_loss(params, xc, yc)

    B = weights.shape[0]
    if microbatch_size is None or microbatch_size >= B:
        return chunk(xb, yb, weights)
    if B % microbatch_size:
        raise validate.ShapeError(f"Batch capacity {B} is not a multiple of {microbatch_size}.")
    nb = B // microbatch_size
    split = lambda a: a.reshape((nb, microbatch_size) + a.shape[1:])

    def body(acc, c):
        s, n, l = chunk(*c)
        with precision.sensitive():
            acc = jtree.add(acc, s)
        return acc, (n, l)

    total, (norms, losses) = jax.lax.scan(body, jtree.zeros_like(params),
                                          (split(xb), split(yb), split(weights)))
    return total, norms.reshape(-1), losses.reshape(-1)


_GAUSSIAN = jpriv.gaussian(clip_norm=1.0, noise_multiplier=1.0)  # evaluated at explicit values


def private_gradient(method: str, model, params, xb, yb, sid_b, mask_b, sigma, key, *,
                     clip_norm, batch_size, microbatch_size=None,
                     privatizer: jpriv.Privatizer | None = None):
    """The noisy gradient ``g~`` of one local step of ``method`` and step diagnostics.

    ``privatizer``: the algorithm's (an i.i.d. Gaussian one on sensitivity C by default); the
    step's noise is its std at this step's ``sigma`` and ``clip_norm``."""
    C = clip_norm
    priv = _GAUSSIAN if privatizer is None else privatizer
    st = subject_batch_stats(sid_b, mask_b)
    m = mask_b.astype(jnp.float32)
    nkey = jax.random.fold_in(key, 0)
    if method in ("fedavg", "user_ldp"):
        loss, g = jax.value_and_grad(model.batch_loss)(params, xb, yb, mask_b)
        norm = jtree.l2_norm(g)
        clipped = jnp.zeros(())
        if method == "user_ldp":
            g, norm = clipping.clip_pytree(g, C)
            g = priv.add_noise(g, nkey, clip=C, noise_multiplier=sigma)
            clipped = (norm > C).astype(jnp.float32)
    else:
        w = st.weights if method == "higradavg_dp" else m
        example_loss = lambda p, x, y: model.example_loss(p, x, y)
        total, norms, losses = clipped_weighted_sum(example_loss, params, xb, yb, w,
                                                    clip_norm=C, microbatch_size=microbatch_size,
                                                    model=model)
        g = jtree.scale(priv.add_noise(total, nkey, clip=C, noise_multiplier=sigma),
                        1.0 / batch_size)
        loss = jnp.sum(losses * m) / jnp.maximum(jnp.sum(m), 1.0)
        clipped = jnp.sum((norms > C) * m) / jnp.maximum(jnp.sum(m), 1.0)
    diag = {"loss": loss, "num_subjects": st.num_subjects.astype(jnp.float32),
            "max_group": st.max_group, "batch_items": jnp.sum(m), "clipped_fraction": clipped}
    return g, diag


def local_rule(method: str, model, *, optimizer, clip_norm, batch_size,
               microbatch_size=None, privatizer: jpriv.Privatizer | None = None):
    """One user's round: ``lax.scan`` over its T steps. Returns ``update(params, x, y, sid, idx,
    mask, sigma, active, key) -> (new_params, diagnostics)``; vmap it over users."""

    def update(params, x, y, sid, idx, mask, sigma, active, key):
        opt_state = optimizer.init(params)  # reset every round (the paper is silent)

        def step(carry, inp):
            p, s = carry
            idx_t, m_t, sig_t, act_t, t = inp
            g, diag = private_gradient(method, model, p, x[idx_t], y[idx_t], sid[idx_t], m_t,
                                       sig_t, jax.random.fold_in(key, t), clip_norm=clip_norm,
                                       batch_size=batch_size, microbatch_size=microbatch_size,
                                       privatizer=privatizer)
            upd, s2 = optimizer.update(g, s, p)
            p2 = optax.apply_updates(p, upd)
            keep = lambda new, old: jax.tree.map(lambda a, b: jnp.where(act_t, a, b), new, old)
            a = act_t.astype(jnp.float32)
            return (keep(p2, p), keep(s2, s)), jax.tree.map(lambda v: v * a, diag) | {"a": a}

        T = idx.shape[0]
        (p, _), d = jax.lax.scan(step, (params, opt_state),
                                 (idx, mask, sigma, active, jnp.arange(T)))
        steps = jnp.maximum(jnp.sum(d["a"]), 1.0)
        diag = {k: jnp.sum(v) / steps for k, v in d.items() if k != "a"}
        return p, diag | {"max_group_max": jnp.max(d["max_group"])}

    return update


__all__ = ["BatchStats", "subject_batch_stats", "clipped_weighted_sum", "private_gradient",
           "local_rule"]
