"""The ``Algorithm`` interface every federated algorithm implements (fedjax style, R3).

An algorithm is a record of pure functions:

* ``init(params) -> state``: the server state (a pytree of arrays only).
* ``prepare(round_index, rng) -> round_input``: host-side work of a round (participation
  sampling with an explicit ``np.random.Generator``); returns small arrays of static shape.
* ``apply(state, data, round_input, key) -> (state, diagnostics)``: one round, jit-compiled by
  the training loop; ``data`` is the device-resident :class:`~jaxfl.data.FederatedData` (an
  argument, never a closed-over constant) and ``key`` the round's key.
* ``params_of(state) -> params``: the model to evaluate.
* ``accountant``: the privacy half of the contract and the algorithm's only privacy field, a
  :class:`jaxfl.accounting.report.Accountant` built by the same builder from the same values as
  ``apply`` (its :class:`jaxfl.privatizer.Privatizer`, sampling rate, groups, mixing matrix,
  user histogram): ``accountant.epsilons(rounds, delta)``, ``accountant.report(rounds,
  delta)``, ``accountant.dp_event(rounds)`` (the run's DpEvent where the mechanism has one)
  and ``accountant.round_event`` (one round's, when every round is the same mechanism).
  Audits, drivers and sweeps read only it.
* ``hparams``: the scalar hyperparameters (name -> Python float) that ``apply`` also accepts as
  traced arrays through its keyword ``hparams=`` (see :func:`resolve_hparams`). They change no
  shape, so :mod:`jaxfl.sweep` can ``vmap`` one ``apply`` over points that differ only in them
  (and in the seed). Host-side uses (accounting, sampling) read the builder's Python values.
  Those the accountant was built from (``accountant.hparams``: noise multiplier, clip norm,
  sampling rate) reach ``apply`` only with the accounted value, or traced from
  :func:`bind_hparams` (one algorithm, hence one accountant, per sweep point).
* ``paddable``: True when ``apply`` reads the data only at the examples its round input
  selects (never the example axis's length) and ``prepare`` reads only the real examples, so
  that points whose data differ in that length (e.g. a seed-dependent partition) can share one
  computation: :mod:`jaxfl.vmapped_runs` pads their data's example axis to a common length
  (:func:`jaxfl.data.federated.pad_examples`) and their round inputs through the round input
  type's ``pad_common`` (see :func:`jaxfl.vmapped_runs.stack_round_inputs`).

Keys: clients draw from ``fold_in(substream(key, "clients"), client_id)`` with the client's
*global* index, so a client's randomness does not depend on which other clients participate.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxfl import random as jrandom
from jaxfl import validate
from jaxfl.accounting import report
from jaxfl.data import sampling


class Algorithm(NamedTuple):
    name: str
    init: Callable[[Any], Any]
    prepare: Callable[[int, np.random.Generator], Any]
    apply: Callable[[Any, Any, Any, jax.Array], tuple[Any, dict]]
    params_of: Callable[[Any], Any]
    info: dict = {}
    hparams: dict = {}
    accountant: Any = None  # jaxfl.accounting.report.Accountant: the only privacy field
    paddable: bool = False  # a sweep may pad the data's example axis (see the module doc)


def call_apply(algorithm: Algorithm, state, data, round_input, key, hparams=None):
    """``algorithm.apply`` with traced ``hparams`` when the algorithm declares any.

    Algorithms with an empty ``hparams`` declare that none of their scalars is traceable, and
    their ``apply`` is called without the keyword.
    """
    if algorithm.hparams:
        return algorithm.apply(state, data, round_input, key, hparams=hparams)
    if hparams:
        raise validate.JaxflValueError(
            f"Algorithm {algorithm.name!r} declares no traceable hparams, got "
            f"{sorted(hparams)}.")
    return algorithm.apply(state, data, round_input, key)


class Cohort(NamedTuple):
    """Participants of a round gathered into a padded axis of static size ``capacity``."""

    indices: np.ndarray  # shape=[capacity], dtype=int32: global client index (0 for padding)
    mask: np.ndarray  # shape=[capacity], dtype=bool: real participant


# The key discipline lives in jaxfl.random; the algorithms name it through base.
substream = jrandom.substream
client_keys = jrandom.client_keys


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


PRIVACY_HPARAMS = ("clip_norm", "noise_multiplier", "sampling_rate")
"""Hyperparameter names an accountant may depend on. A private algorithm's accountant records
the values it was built from (:attr:`jaxfl.accounting.report.Accountant.hparams`); ``apply``
refuses any other value for them (:func:`resolve_hparams`)."""

_BOUND = object()


@jax.tree_util.register_pytree_node_class
class BoundHparams(Mapping):
    """Hyperparameter values that the accountants of the algorithms they came from were built
    from: the only way a *traced* privacy hyperparameter reaches ``apply``.

    Built by :func:`bind_hparams` (never directly): it checks, on the host and before any
    tracing, that each algorithm's hparams equal its accountant's. A pytree (the values are
    its leaves), so :mod:`jaxfl.vmapped_runs` stacks, pads, shards and ``vmap``s it like the
    dict it replaces, and ``apply`` still sees a ``BoundHparams`` inside the trace.
    """

    def __init__(self, values: Mapping, *, _token=None):
        if _token is not _BOUND:
            raise validate.JaxflValueError(
                "BoundHparams are made by jaxfl.algorithms.base.bind_hparams(algorithms).")
        self._values = dict(values)

    def __getitem__(self, name):
        return self._values[name]

    def __iter__(self):
        return iter(self._values)

    def __len__(self):
        return len(self._values)

    def __repr__(self):
        return f"BoundHparams({self._values!r})"

    def tree_flatten(self):
        names = tuple(sorted(self._values))
        return [self._values[k] for k in names], names

    @classmethod
    def tree_unflatten(cls, names, values):
        return cls(dict(zip(names, values, strict=True)), _token=_BOUND)


def _accounted(algorithm: Algorithm) -> dict:
    """The privacy hyperparameters ``algorithm``'s accountant was built from (name -> value)."""
    acc = algorithm.accountant
    return dict(getattr(acc, "hparams", None) or {})


def bind_hparams(algorithms) -> BoundHparams:
    """The ``hparams`` of one algorithm, or of several stacked on a leading axis (a sweep's
    points, in order), as :class:`BoundHparams` for ``apply``.

    Each algorithm's traceable values must equal those its accountant was built from (checked
    here, on concrete values, before anything is traced), so a point of a vmapped sweep draws
    the noise its own accountant reports.

    Raises:
      JaxflValueError: on algorithms with different hparam names, or one whose hparams and
        accountant disagree.
    """
    single = isinstance(algorithms, Algorithm)
    algs = [algorithms] if single else list(algorithms)
    if not algs:
        raise validate.JaxflValueError("Expected at least one algorithm to bind hparams of.")
    names = sorted(algs[0].hparams)
    dtype = jnp.asarray(0.0, float).dtype
    for alg in algs:
        if sorted(alg.hparams) != names:
            raise validate.JaxflValueError(
                f"Expected algorithms with the same hparams {names}, got {sorted(alg.hparams)} "
                f"({alg.name!r}).")
        _check_accounted(alg.name, _accounted(alg), alg.hparams, dtype)
    stack = (lambda k: np.asarray(algs[0].hparams[k], dtype)) if single else (
        lambda k: np.asarray([a.hparams[k] for a in algs], dtype))
    return BoundHparams({k: stack(k) for k in names}, _token=_BOUND)


def _check_accounted(name: str, accounted: Mapping, values: Mapping, dtype) -> None:
    for k in sorted(set(accounted) & set(values)):
        v = values[k]
        if isinstance(v, jax.core.Tracer):
            raise validate.JaxflValueError(
                f"{name}: hparam {k!r} is traced, but its accountant was built for "
                f"{k}={accounted[k]!r} and cannot see a traced value. Build one algorithm per "
                f"value (jaxfl.sweep does) and pass bind_hparams(algorithms).")
        if not np.all(np.asarray(v, dtype) == np.asarray(accounted[k], dtype)):
            raise validate.JaxflValueError(
                f"{name}: hparams {k}={_show(v)} differs from the {k}={accounted[k]!r} its "
                f"accountant was built from, so the noise drawn would not be the noise "
                f"accounted. Build the algorithm with {k}={_show(v)} instead.")


def _show(v):
    return v if isinstance(v, int | float) else np.asarray(v).tolist()


def without_noise(algorithm: Algorithm) -> Algorithm:
    """``algorithm`` with its noise multiplier forced to 0 and a non-private accountant (it
    claims nothing: epsilon is inf), e.g. an audit's sanity check of its attack.

    Raises:
      JaxflValueError: when ``algorithm`` has no traceable ``noise_multiplier``.
    """
    if "noise_multiplier" not in algorithm.hparams:
        raise validate.JaxflValueError(
            f"Expected an algorithm with a noise_multiplier hparam, got {algorithm.name!r} "
            f"with {sorted(algorithm.hparams)}.")

    def apply(state, data, round_input, key, hparams=None):
        values = {**dict(hparams or {}), "noise_multiplier": 0.0}  # nothing is claimed
        return algorithm.apply(state, data, round_input, key,
                               hparams=BoundHparams(values, _token=_BOUND))

    unit = getattr(algorithm.accountant, "unit", "client")
    return algorithm._replace(apply=apply, accountant=report.NonPrivateAccountant(unit))


def resolve_hparams(defaults: dict, overrides: Mapping | None = None,
                    accountant=None) -> dict:
    """The hyperparameters ``apply`` uses: ``defaults`` updated by ``overrides``, as arrays.

    Every value becomes an array of the default float dtype, both for the builder's Python
    floats and for traced per-point values of a vmapped sweep, so derived quantities (e.g.
    ``sigma * C``) are computed by the same arithmetic in a single run and in a sweep.

    ``accountant``: the algorithm's accountant. An override of a hyperparameter it was built
    from (``accountant.hparams``: noise multiplier, clip norm, sampling rate...) must be
    concrete and equal to the accounted value, or come from :func:`bind_hparams` (whose values
    their own accountants saw, checked before tracing).

    Raises:
      JaxflValueError: on a name that is not one of ``defaults``, or an override the
        accountant did not see.
    """
    bound = isinstance(overrides, BoundHparams)
    overrides = dict(overrides or {})
    unknown = sorted(set(overrides) - set(defaults))
    if unknown:
        raise validate.JaxflValueError(
            f"Expected hparams among {sorted(defaults)}, got unknown {unknown}.")
    accounted = dict(getattr(accountant, "hparams", None) or {})
    if accounted and not bound:
        _check_accounted("apply", accounted, overrides, jnp.asarray(0.0, float).dtype)
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
        raise validate.JaxflValueError("Expected at least one client.")
    padded = "padded_clients" in getattr(data, "extras", {})
    if num_clients is not None and data.num_clients != num_clients and not (
            padded and data.num_clients > num_clients):
        raise validate.ShapeError(
            f"Expected data with num_clients={num_clients} (the algorithm's), got "
            f"{data.num_clients}.")


def check_model(model) -> None:
    """Rejects anything that is not a model record (``init`` and ``apply`` callables)."""
    if not (callable(getattr(model, "init", None)) and callable(getattr(model, "apply", None))):
        raise validate.JaxflValueError(
            f"Expected a jaxfl.models.Model, got {type(model).__name__}.")


def check_optimizer(name: str, opt) -> None:
    """Rejects anything that is not an optax ``GradientTransformation``."""
    if not (callable(getattr(opt, "init", None)) and callable(getattr(opt, "update", None))):
        raise validate.JaxflValueError(
            f"Expected {name} to be an optax.GradientTransformation, got {opt!r}.")
