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
* ``data_spec``: a :class:`DataSpec`, what ``apply`` expects of its data (the layout, the
  number of clients / nodes / users / silos the builder and its accountant were built for,
  the model), checked by :func:`check_run_data` before any work. Every builder of
  :mod:`jaxfl.algorithms` sets it.
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
    data_spec: Any = None  # DataSpec: what apply expects of its data (check_run_data)


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


class DataSpec(NamedTuple):
    """What an algorithm's ``apply`` expects of its data, declared by its builder
    (``Algorithm.data_spec``) and checked by :func:`check_run_data` before any work.

    Attributes:
      layout: ``"clients"`` (a :class:`~jaxfl.data.FederatedData`, one row per client, node
        or worker), ``"pairs"`` (:class:`~jaxfl.algorithms.uldp_data.PairData`) or
        ``"silos"`` (:class:`~jaxfl.algorithms.uldp_data.SiloData`).
      sizes: ``((what, expected), ...)`` the builder and its accountant were built for;
        ``what`` is one of ``"clients"``, ``"nodes"``, ``"workers"`` (the rows of a
        FederatedData), ``"users"``, ``"silos"``.
      model: the :class:`jaxfl.models.Model` that ``apply`` trains, or None (e.g. a
        closed-form gradient): the examples must fit its input, and under a classification
        loss (softmax or sigmoid cross-entropy) the labels must lie in its classes.
      padded_clients: trailing empty clients of :func:`jaxfl.sharding.pad_clients` are
        accepted (never sampled).
      num_examples: per-client example counts the builder sized its sampling (and its
        accountant) from, or None.
      silo_sizes: per-silo record counts the accountant was built from, or None.
    """

    layout: str
    sizes: tuple = ()
    model: Any = None
    padded_clients: bool = False
    num_examples: tuple | None = None
    silo_sizes: tuple | None = None


LAYOUTS = {"clients": "a jaxfl.data.FederatedData",
           "pairs": "a jaxfl.algorithms.uldp_data.PairData (uldp_data.pair_data(records))",
           "silos": "a jaxfl.algorithms.uldp_data.SiloData (uldp_data.silo_data(records))"}


def _layout_of(data) -> str | None:
    from jaxfl.algorithms import uldp_data
    from jaxfl.data import federated

    for kind, cls in (("clients", federated.FederatedData), ("pairs", uldp_data.PairData),
                      ("silos", uldp_data.SiloData)):
        if isinstance(data, cls):
            return kind
    return None


def _sizes_of(kind: str, data) -> dict:
    if kind == "clients":
        rows = int(np.shape(data.mask)[0])
        return {"clients": rows, "nodes": rows, "workers": rows}
    if kind == "pairs":
        return {"users": int(data.num_users), "silos": int(data.num_silos)}
    return {"silos": int(np.shape(data.index)[0])}


def _feature_shape(kind: str, data) -> tuple:
    """One example's shape: after ``[clients, max_n]`` or the records' ``[N + 1]``."""
    return tuple(np.shape(data.x))[2:] if kind == "clients" else tuple(np.shape(data.x))[1:]


_PROBED: dict = {}


def model_classes(model, feature_shape: tuple, dtype) -> int | None:
    """Abstractly evaluates ``model`` (``jax.eval_shape``: no FLOPs) on examples of
    ``feature_shape`` and returns its number of classes under a classification loss (the last
    output axis under softmax cross-entropy, 2 under sigmoid cross-entropy), else None.

    Raises:
      ShapeError: the examples do not fit the model (e.g. 5 features for a 784-input model),
        instead of a flax shape error in the first round.
    """
    from jaxfl.models import losses

    try:
        key = (model, tuple(feature_shape), np.dtype(dtype).str)
        hash(key)
    except TypeError:
        key = None
    if key is not None and key in _PROBED:
        return _PROBED[key]
    try:
        params = jax.eval_shape(model.init, jax.random.key(0))
        out = jax.eval_shape(lambda p, x: model.apply(p, x), params,
                             jax.ShapeDtypeStruct((2, *feature_shape), dtype))
    except Exception as e:  # noqa: BLE001 - any failure to trace is a shape mismatch here
        first = (str(e).strip().splitlines() or [""])[0][:300]
        raise validate.ShapeError(
            f"Expected examples of shape {tuple(getattr(model, 'input_shape', ()))} for model "
            f"{getattr(model, 'name', type(model).__name__)!r}, got data whose examples have "
            f"shape {tuple(feature_shape)} ({np.dtype(dtype).name}); the model does not apply "
            f"to them ({type(e).__name__}: {first}).") from e
    loss = getattr(model, "loss", None)
    classes = None
    if loss is losses.softmax_cross_entropy and getattr(out, "ndim", 0) >= 2:
        classes = int(out.shape[-1])
    elif loss is losses.sigmoid_binary_cross_entropy:
        classes = 2
    if key is not None:
        _PROBED[key] = classes
    return classes


def check_sizes(spec: DataSpec, data, name: str = "the algorithm") -> str:
    """The layout and sizes of ``spec`` against ``data`` (shapes only, so ``apply`` can run
    it at trace time too); returns the layout.

    Raises:
      JaxflValueError: the wrong data type.
      ShapeError: a size that disagrees with the one the algorithm was built for.
    """
    kind = _layout_of(data)
    if kind != spec.layout:
        raise validate.JaxflValueError(
            f"{name} applies to {LAYOUTS[spec.layout]}, got {type(data).__name__}.")
    found = _sizes_of(kind, data)
    padded = "padded_clients" in getattr(data, "extras", {}) if kind == "clients" else False
    for what, expected in spec.sizes:
        got = found[what]
        if got != expected and not (spec.padded_clients and padded and got > expected):
            raise validate.ShapeError(
                f"{name} was built for {expected} {what} (its sampling and its accountant "
                f"count them), got data of {got} {what}; build the algorithm for {got} "
                f"{what} or give it data of {expected}.")
    return kind


def check_run_data(algorithm: Algorithm, data):
    """The one check of a run's data against its algorithm, before any work (the training
    loop and the sweeps call it). Returns ``data``.

    1. The layout and sizes of ``algorithm.data_spec``: the data type ``apply`` reads, and
       as many clients / nodes / workers / users / silos as the builder and its accountant
       were built for (a mismatch would gather clamped indices: a unit sampled with another,
       which is not the sampling the accountant priced), the per-client example counts or
       per-silo record counts it was sized from.
    2. The model's input: the examples must fit ``data_spec.model``
       (:func:`model_classes`, an abstract evaluation).
    3. The data's own ``validate`` (shapes, mask against counts, finite values, and the
       labels in the model's classes under a classification loss).

    An algorithm record without a ``data_spec`` (one built by hand) gets step 3 only.

    Raises:
      JaxflValueError: the wrong data type, or content that fails ``validate``.
      ShapeError: a size or an example shape that disagrees with the algorithm's.
    """
    spec = getattr(algorithm, "data_spec", None)
    name = getattr(algorithm, "name", "the algorithm")
    if spec is None:
        if callable(getattr(data, "validate", None)):
            data.validate()
        return data
    kind = check_sizes(spec, data, name)
    if spec.num_examples is not None:
        counts = np.asarray(data.num_examples)[:len(spec.num_examples)]
        want = np.asarray(spec.num_examples)
        if counts.shape != want.shape or not np.array_equal(counts, want):
            i = int(np.flatnonzero(counts != want)[0]) if counts.shape == want.shape else 0
            raise validate.ShapeError(
                f"{name} was built from data with num_examples[{i}]={int(want[i])}, got "
                f"num_examples[{i}]={int(counts[i]) if i < counts.size else None}: it "
                f"samples (and accounts) from the sizes it was built with; build it from this "
                f"data.")
    if spec.silo_sizes is not None:
        counts = np.asarray(data.count)
        want = np.asarray(spec.silo_sizes)
        if counts.shape != want.shape or not np.array_equal(counts, want):
            raise validate.ShapeError(
                f"{name}'s accountant was built for silo sizes {want.tolist()}, got silos of "
                f"{counts.tolist()} records.")
    classes = None
    if spec.model is not None:
        dtype = data.x.dtype if hasattr(data.x, "dtype") else np.asarray(data.x).dtype
        classes = model_classes(spec.model, _feature_shape(kind, data), dtype)
    data.validate(num_classes=classes)
    return data


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
