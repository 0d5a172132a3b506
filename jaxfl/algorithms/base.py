"""The ``Algorithm`` interface every federated algorithm implements (fedjax style, R3).

An algorithm is a record of pure functions:

* ``init(params) -> state``: the server state (a pytree of arrays only).
* ``prepare(round_index, rng) -> round_input``: host-side work of a round (participation
  sampling with an explicit ``np.random.Generator``); returns small arrays of static shape.
* ``apply(state, data, round_input, key) -> (state, diagnostics)``: one round, jit-compiled by
  the training loop; ``data`` is the device-resident :class:`~jaxfl.data.FederatedData` (an
  argument, never a closed-over constant) and ``key`` the round's key.
* ``params_of(state) -> params``: the model to evaluate.
* ``accountant``: the privacy half of the contract, a
  :class:`jaxfl.accounting.report.Accountant` built by the same builder from the same values as
  ``apply`` (noise multiplier, sampling rate, clip norm, groups, mixing matrix, user
  histogram): ``accountant.epsilons(rounds, delta)`` and ``accountant.report(rounds, delta)``.
  :func:`jaxfl.accounting.report.of` falls back to an event accountant over ``dp_event`` for
  records that set only that.
* ``dp_event(rounds) -> DpEvent``: the privacy event after ``rounds`` rounds where the mechanism
  has one (``NonPrivateDpEvent`` for non-private algorithms); None when it has none (the
  accountant is then the only privacy interface).
* ``round_event``: when every round is the same mechanism, its per-round event (lets the
  accountant compute curves over rounds with a single RDP evaluation); else ``None``.
* ``hparams``: the scalar hyperparameters (name -> Python float) that ``apply`` also accepts as
  traced arrays through its keyword ``hparams=`` (see :func:`resolve_hparams`). They change no
  shape, so :mod:`jaxfl.sweep` can ``vmap`` one ``apply`` over points that differ only in them
  (and in the seed). Host-side uses (accounting, sampling) read the builder's Python values.

Keys: clients draw from ``fold_in(substream(key, "clients"), client_id)`` with the client's
*global* index, so a client's randomness does not depend on which other clients participate.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any, NamedTuple

import dp_accounting
import jax
import numpy as np

from jaxfl import _validate
from jaxfl.data import sampling


class Algorithm(NamedTuple):
    name: str
    init: Callable[[Any], Any]
    prepare: Callable[[int, np.random.Generator], Any]
    apply: Callable[[Any, Any, Any, jax.Array], tuple[Any, dict]]
    params_of: Callable[[Any], Any]
    dp_event: Callable[[int], dp_accounting.DpEvent] | None = None
    round_event: dp_accounting.DpEvent | None = None
    info: dict = {}
    hparams: dict = {}
    accountant: Any = None  # jaxfl.accounting.report.Accountant


def call_apply(algorithm: Algorithm, state, data, round_input, key, hparams=None):
    """``algorithm.apply`` with traced ``hparams`` when the algorithm declares any.

    Algorithms with an empty ``hparams`` declare that none of their scalars is traceable, and
    their ``apply`` is called without the keyword.
    """
    if algorithm.hparams:
        return algorithm.apply(state, data, round_input, key, hparams=hparams)
    if hparams:
        raise _validate.JaxflValueError(
            f"Algorithm {algorithm.name!r} declares no traceable hparams, got "
            f"{sorted(hparams)}.")
    return algorithm.apply(state, data, round_input, key)


class Cohort(NamedTuple):
    """Participants of a round gathered into a padded axis of static size ``capacity``."""

    indices: np.ndarray  # shape=[capacity], dtype=int32: global client index (0 for padding)
    mask: np.ndarray  # shape=[capacity], dtype=bool: real participant


def substream(key: jax.Array, name: str) -> jax.Array:
    """A named sub-key of ``key`` (fold_in of a hash of the name)."""
    h = int.from_bytes(hashlib.sha256(name.encode()).digest()[:4], "little") & 0x7FFFFFFF
    return jax.random.fold_in(key, h)


def client_keys(key: jax.Array, client_ids) -> jax.Array:
    """Per-client keys ``fold_in(substream(key, 'clients'), client_id)``, vmapped."""
    base = substream(key, "clients")
    return jax.vmap(lambda c: jax.random.fold_in(base, c))(client_ids)


def poisson_capacity(num_clients: int, rate: float, tail: float = 1e-12) -> int:
    """Static cohort size exceeded by a Binomial(num_clients, rate) draw w.p. < ``tail``."""
    return sampling.Poisson(rate).capacity(num_clients, tail)


def cohort_from_mask(mask: np.ndarray, capacity: int) -> Cohort:
    """Gathers the participants of ``mask`` into a padded cohort of ``capacity`` slots.

    If more clients participate than ``capacity`` (probability < tail by construction), the
    cohort grows to ``len(mask)`` for that round: exact, never truncated (costs one recompile).
    """
    indices, valid = sampling.cohort_indices(mask, capacity)
    return Cohort(indices=indices.astype(np.int32), mask=valid)


def poisson_cohort(rng: np.random.Generator, num_clients: int, rate: float, capacity: int
                   ) -> Cohort:
    """Poisson participation: each client independently with probability ``rate``."""
    return cohort_from_mask(sampling.Poisson(rate).sample(rng, num_clients), capacity)


def full_cohort(num_clients: int) -> Cohort:
    return Cohort(indices=np.arange(num_clients, dtype=np.int32),
                  mask=np.ones(num_clients, bool))


def non_private_event(rounds: int) -> dp_accounting.DpEvent:
    del rounds  # unused
    return dp_accounting.NonPrivateDpEvent()


def resolve_hparams(defaults: dict, overrides: dict | None = None) -> dict:
    """The hyperparameters ``apply`` uses: ``defaults`` updated by ``overrides``, as arrays.

    Every value becomes an array of the default float dtype, both for the builder's Python
    floats and for traced per-point values of a vmapped sweep, so derived quantities (e.g.
    ``sigma * C``) are computed by the same arithmetic in a single run and in a sweep.

    Raises:
      JaxflValueError: on a name that is not one of ``defaults``.
    """
    import jax.numpy as jnp

    overrides = dict(overrides or {})
    unknown = sorted(set(overrides) - set(defaults))
    if unknown:
        raise _validate.JaxflValueError(
            f"Expected hparams among {sorted(defaults)}, got unknown {unknown}.")
    merged = {**defaults, **overrides}
    return {k: jnp.asarray(v, dtype=float) for k, v in merged.items()}


def check_data(data, num_clients: int | None = None) -> None:
    """Static checks of the federated data an algorithm is applied to (run at trace time).

    A mismatch between the data's client axis and the ``num_clients`` the algorithm (and its
    accountant) was built for would silently gather clamped indices (a client counted twice,
    i.e. a wrong sensitivity), so it is an error. The one exception: trailing empty clients
    appended by :func:`jaxfl.sharding.pad_clients` (marked by ``extras["padded_clients"]``) to
    make the client axis divisible by the devices; they are never sampled.
    """
    if data.num_clients < 1:
        raise _validate.JaxflValueError("Expected at least one client.")
    padded = "padded_clients" in getattr(data, "extras", {})
    if num_clients is not None and data.num_clients != num_clients and not (
            padded and data.num_clients > num_clients):
        raise _validate.ShapeError(
            f"Expected data with num_clients={num_clients} (the algorithm's), got "
            f"{data.num_clients}.")


def check_model(model) -> None:
    """Rejects anything that is not a model record (``init`` and ``apply`` callables)."""
    if not (callable(getattr(model, "init", None)) and callable(getattr(model, "apply", None))):
        raise _validate.JaxflValueError(
            f"Expected a jaxfl.models.Model, got {type(model).__name__}.")


def check_optimizer(name: str, opt) -> None:
    """Rejects anything that is not an optax ``GradientTransformation``."""
    if not (callable(getattr(opt, "init", None)) and callable(getattr(opt, "update", None))):
        raise _validate.JaxflValueError(
            f"Expected {name} to be an optax.GradientTransformation, got {opt!r}.")
