"""Per-example losses and metrics shared by the models.

Every function maps a batch of outputs ``[B, ...]`` and targets ``[B, ...]`` to per-example
values ``[B]``; reductions over a (padded, masked) batch are done by
:meth:`jaxfl.models.Model.batch_loss` / ``batch_metrics``. Sequence outputs (``[B, T, V]`` logits
with ``[B, T]`` labels) are averaged over the non-batch axes, so one example is one sequence.

Example Usage:
  >>> import jax.numpy as jnp
  >>> logits = jnp.array([[2.0, 0.0], [0.0, 2.0]]); y = jnp.array([0, 0])
  >>> classification_metrics(logits, y)["accuracy"].tolist()
  [1.0, 0.0]
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import optax


def _mean_rest(v: jax.Array) -> jax.Array:
    """Mean over every axis but the first (identity for ``[B]``)."""
    return v.reshape(v.shape[0], -1).mean(axis=1)


def label_logits(logits: jax.Array, y: jax.Array) -> jax.Array:
    """``logits[..., y]``: each row's entry at its integer label, ``[..., K]`` and ``[...]`` ->
    ``[...]``, as ``jnp.take_along_axis`` gives it (a negative label counts from the end, one
    outside ``[-K, K)`` gives NaN) but without a gather.

    The entry is picked by a masked sum (``where(iota == y, logits, 0)`` summed over the K
    classes: one value and exact zeros, so the same float). Its gradient is a select, where a
    gather's is a scatter-add, which XLA:GPU serializes (a sort and a prefix scan) under
    deterministic ops (``--xla_gpu_deterministic_ops``, jaxfl's default): in a DP-FedAvg logreg
    round on an H200 that scatter made the round 1.8x slower (docs/scale.md, "Scatter-free
    rounds").
    """
    k = logits.shape[-1]
    y = y.astype(jnp.int32)
    y = jnp.where(y < 0, y + k, y)
    hit = jax.lax.broadcasted_iota(jnp.int32, logits.shape, logits.ndim - 1) == y[..., None]
    picked = jnp.sum(jnp.where(hit, logits, jnp.zeros((), logits.dtype)), axis=-1)
    return jnp.where((y >= 0) & (y < k), picked, jnp.asarray(jnp.nan, logits.dtype))


def softmax_cross_entropy(logits: jax.Array, y: jax.Array) -> jax.Array:
    """Cross-entropy with integer labels. ``logits [B, ..., K]``, ``y [B, ...]`` -> ``[B]``.

    ``logsumexp(logits) - logits[y]``, the float values of
    ``optax.softmax_cross_entropy_with_integer_labels`` (tested bitwise, with its gradient),
    with the label's logit from :func:`label_logits` (no gather, so no scatter-add in the
    gradient)."""
    per = jax.nn.logsumexp(logits, axis=-1) - label_logits(logits, y)
    return _mean_rest(per)


def accuracy(logits: jax.Array, y: jax.Array) -> jax.Array:
    """1.0 where ``argmax(logits) == y`` (averaged over sequence positions) -> ``[B]``."""
    hit = (jnp.argmax(logits, axis=-1) == y.astype(jnp.int32)).astype(logits.dtype)
    return _mean_rest(hit)


def classification_metrics(logits: jax.Array, y: jax.Array) -> dict:
    """``{'loss', 'accuracy'}`` per example for a softmax classifier."""
    return {"loss": softmax_cross_entropy(logits, y), "accuracy": accuracy(logits, y)}


def _binary_logit(logits: jax.Array, y: jax.Array) -> jax.Array:
    """Brings ``[B, 1]`` logits to the shape of ``y`` (``[B]``)."""
    if logits.ndim == y.ndim + 1 and logits.shape[-1] == 1:
        logits = logits[..., 0]
    return logits


def sigmoid_binary_cross_entropy(logits: jax.Array, y: jax.Array) -> jax.Array:
    """Binary cross-entropy on logits with 0/1 labels. ``[B, 1]`` or ``[B]`` -> ``[B]``."""
    z = _binary_logit(logits, y)
    per = optax.sigmoid_binary_cross_entropy(z, y.astype(z.dtype))
    return _mean_rest(per)


def binary_accuracy(logits: jax.Array, y: jax.Array) -> jax.Array:
    """1.0 where ``(sigmoid(logit) > 0.5) == y`` -> ``[B]``."""
    z = _binary_logit(logits, y)
    hit = ((z > 0).astype(jnp.int32) == y.astype(jnp.int32)).astype(z.dtype)
    return _mean_rest(hit)


def binary_metrics(logits: jax.Array, y: jax.Array) -> dict:
    """``{'loss', 'accuracy'}`` per example for a sigmoid classifier."""
    return {"loss": sigmoid_binary_cross_entropy(logits, y),
            "accuracy": binary_accuracy(logits, y)}


def squared_error(outputs: jax.Array, y: jax.Array) -> jax.Array:
    """Mean over output dimensions of ``(outputs - y)**2``; ``y`` may drop a trailing 1."""
    y = y.astype(outputs.dtype).reshape(outputs.shape)
    return _mean_rest(jnp.square(outputs - y))


def regression_metrics(outputs: jax.Array, y: jax.Array) -> dict:
    """``{'loss', 'mse', 'mae'}`` per example (loss is the squared error)."""
    se = squared_error(outputs, y)
    mae = _mean_rest(jnp.abs(outputs - y.astype(outputs.dtype).reshape(outputs.shape)))
    return {"loss": se, "mse": se, "mae": mae}
