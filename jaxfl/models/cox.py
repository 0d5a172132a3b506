"""Linear Cox proportional-hazards model for TCGA-BRCA survival, with its loss and C-index.

The FLamby Fed-TCGA-BRCA baseline used by ULDP-FL (Kato et al. 2023, Sec. 5.1): one dense
layer ``39 -> 1`` (40 parameters) gives a risk score ``s_i`` (log hazard ratio). Targets are
``y = [event, time]`` per example (``[B, 2]``, FLamby's column order ``E, T``).

Loss. The negative log partial likelihood with Breslow's handling of ties,

    -log PL = sum_{i: event_i = 1} ( log sum_{j in R_i} exp(s_j) - s_i ),
    R_i = {j in batch : time_j >= time_i},

is not a sum of independent per-example terms: the risk set ``R_i`` is formed from the *other*
examples of the batch. ``loss(outputs, y, mask=None)`` returns the per-example contributions
``l_i = event_i * (logsumexp_{j in R_i} s_j - s_i)`` (0 for censored and padded examples), so
the (masked) batch mean ``sum_i l_i / n`` that :meth:`Model.batch_loss` computes is FLamby's
loss: the partial likelihood of the batch divided by the batch size. Padded examples (``mask``
False) are removed from every risk set, which is why the model is ``coupled`` and
``batch_loss`` forwards its mask. Consequences worth knowing:

* a batch of one has loss 0 (as in FLamby), so ``example_loss`` is 0 and per-example gradients
  are zero; per-example DP-SGD on this loss is meaningless (ULDP-FL clips per-user model deltas,
  which is well defined);
* the gradient of ``l_i`` involves every member of ``R_i``.

``ties='flamby'`` reproduces FLamby's implementation instead: a stable sort by descending time
and a cumulative log-sum-exp, so tied examples placed later in the batch are left out of an
earlier one's risk set. It equals Breslow when times are distinct.

Metric. Harrell's concordance index with lifelines' conventions (``concordance_index(T, -s, E)``,
as FLamby and ULDP-FL call it): a pair ``(i, j)`` is comparable when ``event_i = 1`` and either
``time_i < time_j``, or ``time_i == time_j`` and ``event_j = 0``; it is concordant when
``s_i > s_j`` and counts 1/2 when ``s_i == s_j``. :func:`concordance_index` computes it in jnp
(O(B^2) memory; ~1,100 TCGA records are fine). ``metrics`` returns per example ``concordant`` and
``comparable`` pair counts (ratio of sums = C-index, exact when the whole evaluation set is one
batch) and ``c_index``, the batch C-index repeated on every example so a masked mean returns it.
It is NaN when the batch has no comparable pair.

Example Usage:
  >>> import jax.numpy as jnp
  >>> s = jnp.array([2.0, 1.0, 0.0]); y = jnp.array([[1, 1.0], [1, 2.0], [0, 3.0]])
  >>> float(concordance_index(s, y))
  1.0
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxfl import validate
from jaxfl.models import Model, register
from jaxfl.models._flax import from_flax
from jaxfl.models.linear import Affine

TIES = ("breslow", "flamby")


def _unpack(outputs: jax.Array, y: jax.Array, mask):
    outputs, y = jnp.asarray(outputs), jnp.asarray(y)
    scores = outputs.reshape(outputs.shape[0], -1)[:, 0]
    event = y[:, 0] > 0
    time = y[:, 1].astype(scores.dtype)
    mask = jnp.ones(scores.shape, bool) if mask is None else jnp.asarray(mask, bool)
    return scores, event, time, mask


def _risk_set_logsumexp(scores, time, mask, ties):
    """``log sum_{j in R_i} exp(s_j)`` for every i (masked examples excluded)."""
    neg = jnp.asarray(jnp.finfo(scores.dtype).min / 4, scores.dtype)
    s = jnp.where(mask, scores, neg)
    if ties == "breslow":
        order = jnp.argsort(time, stable=True)
        t_sorted = time[order]
        tail = jax.lax.cumlogsumexp(s[order], reverse=True)  # lse over sorted[k:]
        first = jnp.searchsorted(t_sorted, t_sorted, side="left")  # start of each tie group
        lse_sorted = tail[first]
    else:  # flamby: stable descending sort, running log-sum-exp
        order = jnp.argsort(-time, stable=True)
        lse_sorted = jax.lax.cumlogsumexp(s[order])
    return jnp.zeros_like(lse_sorted).at[order].set(lse_sorted)


def cox_loss(outputs: jax.Array, y: jax.Array, mask: jax.Array | None = None, *,
             ties: str = "breslow") -> jax.Array:
    """Per-example contributions to the negative Cox partial log-likelihood.

    Args:
      outputs: risk scores ``[B, 1]`` or ``[B]``.
      y: ``[B, 2]`` with columns ``(event, time)``.
      mask: ``[B]`` bool; False marks padding (no contribution, not in any risk set).
      ties: ``'breslow'`` or ``'flamby'`` (see module docstring).

    Returns:
      ``[B]`` contributions ``event_i * (logsumexp_{R_i} s - s_i)``; their mean over the real
      examples is FLamby's batch loss.
    """
    validate.one_of("ties", ties, TIES)
    scores, event, time, mask = _unpack(outputs, y, mask)
    lse = _risk_set_logsumexp(scores, time, mask, ties)
    return jnp.where(event & mask, lse - scores, jnp.zeros_like(scores))


def concordance_pairs(outputs: jax.Array, y: jax.Array, mask: jax.Array | None = None):
    """Per-example concordant and comparable pair counts (``i`` = the earlier event).

    Args:
      outputs: risk scores ``[B, 1]`` or ``[B]`` (higher = earlier event expected).
      y: ``[B, 2]`` with columns ``(event, time)``.
      mask: ``[B]`` bool; padded examples form no pair.

    Returns:
      ``(concordant [B], comparable [B])``; ``concordant`` counts ties in score as 1/2.
    """
    scores, event, time, mask = _unpack(outputs, y, mask)
    t_i, t_j = time[:, None], time[None, :]
    both = mask[:, None] & mask[None, :]
    comparable = both & event[:, None] & ((t_i < t_j) | ((t_i == t_j) & ~event[None, :]))
    s_i, s_j = scores[:, None], scores[None, :]
    credit = jnp.where(s_i > s_j, 1.0, jnp.where(s_i == s_j, 0.5, 0.0)).astype(scores.dtype)
    comparable = comparable.astype(scores.dtype)
    return (credit * comparable).sum(axis=1), comparable.sum(axis=1)


def concordance_index(outputs: jax.Array, y: jax.Array,
                      mask: jax.Array | None = None) -> jax.Array:
    """Harrell's C-index with lifelines' tie conventions (NaN without comparable pairs)."""
    concordant, comparable = concordance_pairs(outputs, y, mask)
    total = comparable.sum()
    return jnp.where(total > 0, concordant.sum() / jnp.maximum(total, 1.0), jnp.nan)


def cox_metrics(outputs: jax.Array, y: jax.Array, mask: jax.Array | None = None, *,
                ties: str = "breslow") -> dict:
    """Per-example ``loss``, ``concordant``, ``comparable`` and the broadcast batch ``c_index``."""
    concordant, comparable = concordance_pairs(outputs, y, mask)
    total = comparable.sum()
    c = jnp.where(total > 0, concordant.sum() / jnp.maximum(total, 1.0), jnp.nan)
    return {"loss": cox_loss(outputs, y, mask, ties=ties), "concordant": concordant,
            "comparable": comparable, "c_index": jnp.full(concordant.shape, c)}


@register("cox")
def cox(*, input_shape: tuple = (39,), ties: str = "breslow", init_scheme: str = "flax") -> Model:
    """Linear Cox proportional-hazards model (FLamby TCGA-BRCA baseline, 40 parameters).

    Args:
      input_shape: shape of one example (39 clinical features for TCGA-BRCA).
      ties: ``'breslow'`` (default; order-independent) or ``'flamby'`` (paper mode: FLamby's
        sort-based loss, which ULDP-FL's published numbers used).
      init_scheme: ``'flax'`` or ``'torch'`` (PyTorch's default, as the ULDP-FL code).

    Returns:
      A ``coupled`` model: ``loss(outputs, y, mask=None)`` and ``metrics(outputs, y, mask=None)``.
    """
    validate.one_of("ties", ties, TIES)
    input_shape = tuple(validate.positive_int(f"input_shape[{i}]", d)
                        for i, d in enumerate(input_shape))

    def loss(outputs, y, mask=None):
        return cox_loss(outputs, y, mask, ties=ties)

    def metrics(outputs, y, mask=None):
        return cox_metrics(outputs, y, mask, ties=ties)

    return from_flax(Affine(1), name="cox", loss=loss, metrics=metrics, input_shape=input_shape,
                     init_scheme=init_scheme, coupled=True)
