"""The cohort axis: the sampled clients of a round, trained as one padded, masked axis.

A round's participants are a :class:`~jaxfl.algorithms.base.Cohort` (global indices and a mask
of static size). :func:`deltas` trains every slot at once (one ``vmap``); :func:`train_and_sum`
trains ``client_batch`` slots at a time (a ``lax.scan`` over chunks) and sums their
contributions, so memory holds a chunk instead of the cohort; :func:`counts` gives the real
examples per slot before training. Keys are ``fold_in(substream(key, "clients"), client_id)``
with the client's global index in both forms, so they give equal results up to the order of
float additions. Used by FedAvg, DP-FedAvg and LightDP-FL.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxfl import clipping, layout, precision, sharding
from jaxfl import tree as jtree
from jaxfl.algorithms import base, local


def fit_layout(request, client_batch, update, params, data, cohort: base.Cohort, key, *,
               memory_key):
    """The cohort axis' layout for a round: ``client_batch`` (:func:`jaxfl.layout.resolve` of
    ``request``), narrowed to the device's memory budget when ``request`` is ``"auto"``
    (:func:`jaxfl.layout.fit`; the per-client memory is that of ``update`` compiled for one
    client of ``data``'s shapes, measured once per ``memory_key`` and shapes). Called while the
    round is traced; an explicit request is kept as it is."""
    if isinstance(request, str) and request == layout.AUTO:
        unit = (data.x.shape[1:], data.y.shape[1:], data.mask.shape[1:])
        unit = tuple(jax.ShapeDtypeStruct(s, a.dtype)
                     for s, a in zip(unit, (data.x, data.y, data.mask), strict=True))
        unit += (jax.ShapeDtypeStruct((), key.dtype),)
        return layout.fit(client_batch, "cohort", int(jnp.shape(cohort.indices)[0]),
                          lambda: layout.unit_memory(memory_key, update, (params,), unit))
    return client_batch


def deltas(update, params, data, cohort: base.Cohort, key):
    """Runs ``update`` for every cohort slot (vmapped); returns (deltas [K, ...], aux, counts)."""
    idx = jnp.asarray(cohort.indices)
    x = jnp.take(data.x, idx, axis=0)
    y = jnp.take(data.y, idx, axis=0)
    mask = jnp.take(data.mask, idx, axis=0) & jnp.asarray(cohort.mask)[:, None]
    keys = base.client_keys(key, idx)
    # Under a mesh with a "clients" axis the cohort's work is split over devices.
    x, y, mask, keys = sharding.constrain_clients((x, y, mask, keys))
    deltas, aux = local.vmapped_update(update)(params, x, y, mask, keys)
    counts = jnp.sum(mask, axis=1)
    return deltas, aux, counts


def counts(data, cohort: base.Cohort):
    """Real examples of every cohort slot ``[K]`` (zero for padding slots), before training."""
    idx = jnp.asarray(cohort.indices)
    mask = jnp.take(data.mask, idx, axis=0) & jnp.asarray(cohort.mask)[:, None]
    return jnp.sum(mask, axis=1)


def train_and_sum(update, params, data, cohort: base.Cohort, key, contribution, slot_args, *,
               client_batch: int):
    """Trains the cohort ``client_batch`` slots at a time and sums their contributions.

    A ``lax.scan`` over chunks of ``client_batch`` vmapped slots accumulates
    ``sum_k contribution(delta_k, slot_args[k])[0]``, so memory holds ``client_batch`` deltas
    instead of ``K`` (a 10,000-client cohort of a 1.6M-parameter CNN would need 66 GB), and on
    CPU small chunks avoid the slow batched per-client matmuls/convolutions of a full vmap.
    Keys and data are those of :func:`deltas`, so the result equals the fully vmapped
    sum up to the order of float additions.

    Args:
      contribution: ``(delta, slot_arg) -> (tree, extras)`` for one slot; ``extras`` a dict of
        scalars returned per slot.
      slot_args: a pytree of per-slot arrays ``[K, ...]`` (padded slots receive zeros).

    Returns:
      ``(summed tree, aux [K] of the local update, extras [K])``.
    """
    idx = jnp.asarray(cohort.indices)
    k = idx.shape[0]
    b = min(client_batch, k)
    nb = -(-k // b)

    def pad(a):
        a = jnp.asarray(a)
        return jnp.concatenate([a, jnp.zeros((nb * b - k, *a.shape[1:]), a.dtype)]).reshape(
            nb, b, *a.shape[1:])

    slot_mask = jnp.asarray(cohort.mask)
    xs = (pad(idx), pad(slot_mask), jax.tree.map(pad, base.client_keys(key, idx)),
          jax.tree.map(pad, slot_args))
    contribute = jax.vmap(contribution)

    def body(acc, chunk):
        i, m, keys, args = chunk
        x = jnp.take(data.x, i, axis=0)
        y = jnp.take(data.y, i, axis=0)
        mask = jnp.take(data.mask, i, axis=0) & m[:, None]
        x, y, mask, keys = sharding.constrain_clients((x, y, mask, keys))
        deltas, aux = local.vmapped_update(update)(params, x, y, mask, keys)
        tree, extras = contribute(deltas, args)
        with precision.sensitive():  # the sum over clients (of clipped contributions in DP)
            acc = jtree.add(acc, jax.tree.map(lambda a: jnp.sum(a, axis=0), tree))
        return acc, (aux, extras)

    total, (aux, extras) = jax.lax.scan(body, jtree.zeros_like(params), xs)
    unpad = lambda a: a.reshape(nb * b, *a.shape[2:])[:k]
    return total, jax.tree.map(unpad, aux), jax.tree.map(unpad, extras)



def clipped_sum(update, params, data, cohort: base.Cohort, key, clip_norm, *,
                client_batch: int | None):
    """Trains the cohort and sums its deltas, each clipped to ``clip_norm`` (DP-FedAvg style).

    With ``client_batch=None`` every slot is trained at once (:func:`deltas`), else
    ``client_batch`` slots at a time (:func:`train_and_sum`); both give the same sum up to the
    order of float additions. Slots that are padding or hold no example contribute nothing.

    Returns:
      ``(clipped sum, aux [K] of the local update, norms [K] before clipping, valid [K])``.
    """
    if client_batch is None:
        d, aux, n = deltas(update, params, data, cohort, key)
        valid = jnp.asarray(cohort.mask) & (n > 0)
        total, norms = clipping.clip_and_sum(d, clip_norm, mask=valid)
        return total, aux, norms, valid
    valid = jnp.asarray(cohort.mask) & (counts(data, cohort) > 0)

    @precision.sensitive_function
    def contribution(delta, v):
        clipped, norm = clipping.clip_pytree(delta, clip_norm)
        return jtree.scale(clipped, v.astype(jnp.float32)), {"norm": norm}

    total, aux, extras = train_and_sum(update, params, data, cohort, key, contribution, valid,
                                       client_batch=client_batch)
    return total, aux, extras["norm"], valid


__all__ = ["fit_layout", "deltas", "counts", "train_and_sum", "clipped_sum"]
