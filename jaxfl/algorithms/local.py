"""Local training of one client: ``lax.scan`` over L optimizer steps with minibatches drawn
inside jit from the client's padded data. Written for one client and ``vmap``ped over clients.

Minibatching (``sampling``):
* ``"shuffle"`` (default): epochs over a random permutation of the client's real examples,
  steps take consecutive slices (wrapping around), i.e. sampling without replacement.
* ``"uniform"``: each step draws ``batch_size`` indices uniformly with replacement.
* ``batch_size=None``: full-batch gradient steps over all real examples (masked mean).

Clients with zero examples return a zero update.

Example Usage:
  >>> import jax, jax.numpy as jnp, optax
  >>> def loss(p, x, y, m, key=None): return jnp.sum(m * (x @ p - y) ** 2) / jnp.maximum(m.sum(), 1)
  >>> upd = client_update_fn(loss, optimizer=optax.sgd(0.1), steps=5, batch_size=2)
  >>> x = jnp.ones((4, 3)); y = jnp.ones(4); m = jnp.array([1, 1, 1, 0], bool)
  >>> delta, aux = upd(jnp.zeros(3), x, y, m, jax.random.key(0))
  >>> delta.shape
  (3,)
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import optax

from jaxfl import tree as jtree
from jaxfl import validate

SAMPLINGS = ("shuffle", "uniform")


def _batch_indices(key, step, count, max_n, batch_size, sampling, perm):
    if sampling == "uniform":
        return jax.random.randint(jax.random.fold_in(key, step), (batch_size,), 0,
                                  jnp.maximum(count, 1))
    pos = step * batch_size + jnp.arange(batch_size)
    return perm[pos % jnp.maximum(count, 1)]


def client_update_fn(batch_loss: Callable, *, optimizer: optax.GradientTransformation,
                     steps: int, batch_size: int | None, sampling: str = "shuffle"):
    """Builds ``update(params, x, y, mask, key) -> (delta, aux)`` for one client.

    Args:
      batch_loss: ``(params, xb, yb, mask_b, key) -> scalar`` masked mean loss of a minibatch.
      optimizer: the client optimizer (e.g. ``optax.sgd(lr)``).
      steps: number of local steps L.
      batch_size: minibatch size, or None for full-batch steps.
      sampling: ``"shuffle"`` or ``"uniform"`` (see module docstring).

    Returns:
      A function of one client returning the model delta (new - old params) and
      ``{"loss": mean training loss over steps}``.
    """
    steps = validate.positive_int("steps", steps, minimum=0)
    validate.one_of("sampling", sampling, SAMPLINGS)
    if batch_size is not None:
        batch_size = validate.positive_int("batch_size", batch_size)

    def update(params, x, y, mask, key):
        x, y, mask = jnp.asarray(x), jnp.asarray(y), jnp.asarray(mask)
        count = jnp.sum(mask).astype(jnp.int32)
        max_n = mask.shape[0]
        perm_key, step_key, loss_key = (jax.random.fold_in(key, i) for i in range(3))
        # Real examples first, in random order.
        perm = jnp.argsort(jnp.where(mask, jax.random.uniform(perm_key, (max_n,)), 2.0))
        opt_state = optimizer.init(params)

        def body(carry, step):
            p, s = carry
            k = jax.random.fold_in(loss_key, step)
            if batch_size is None:
                xb, yb, mb = x, y, mask
            else:
                idx = _batch_indices(step_key, step, count, max_n, batch_size, sampling, perm)
                xb, yb = x[idx], y[idx]
                mb = jnp.broadcast_to(count > 0, (batch_size,))
            loss, g = jax.value_and_grad(batch_loss)(p, xb, yb, mb, k)
            updates, s = optimizer.update(g, s, p)
            p = optax.apply_updates(p, updates)
            return (p, s), loss

        (new_params, _), losses = jax.lax.scan(body, (params, opt_state), jnp.arange(steps))
        delta = jtree.sub(new_params, params)
        delta = jtree.scale(delta, (count > 0).astype(jnp.float32))
        mean_loss = jnp.mean(losses) if steps > 0 else jnp.zeros(())
        return delta, {"loss": mean_loss}

    return update


def model_batch_loss(model) -> Callable:
    """Adapts a :class:`jaxfl.models.Model` to ``(params, xb, yb, mask_b, key) -> scalar``."""

    def loss(params, xb, yb, mb, key):
        return model.batch_loss(params, xb, yb, mb, key=key)

    return loss


def vmapped_update(update: Callable):
    """``update`` vmapped over a client axis of (x, y, mask, key) with shared params."""
    return jax.vmap(update, in_axes=(None, 0, 0, 0, 0))
