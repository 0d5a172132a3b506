"""How a per-unit axis runs: the engine's one execution-layout policy.

Every per-client / per-pair / per-group computation is written for one unit and mapped over a
padded, masked axis. How that axis is executed is not a paper's choice but the engine's, per
backend and axis kind:

* ``None``: a full ``vmap`` of the axis (one batched computation);
* an int ``b``: a ``lax.scan`` over chunks of ``b`` vmapped units (``b = 1`` is a scan over
  units), which bounds memory to ``b`` units and, on CPU, avoids XLA:CPU's slow batched
  (grouped) convolutions and per-unit matmuls of a full vmap.

:func:`resolve` turns a request into one of these: ``"auto"`` (the default everywhere) picks the
measured best for the backend; an explicit ``None`` / int is an override that always wins.
On GPU/TPU ``"auto"`` is the full vmap (the axis fills the accelerator; not measured here: no
accelerator was available, so this is the expectation, documented in docs/scale.md). On CPU
the defaults come from the engine benchmarks (``python -m experiments.bench``; docs/scale.md):

* ``"cohort"`` (FedAvg / DP-FedAvg / LightDP clients of a round): chunks of 1. One round of 100
  clients x 5 local steps, 2 cores: logreg 71.5 rounds/s with chunks of 1 vs 25.4 vmapped
  (45.0 with chunks of 10); MLP 5.60 vs 1.08; FedAvg CNN 0.0151 vs 0.00146
  (``experiments/bench/bench_engine.py``).
* ``"pairs"`` (ULDP-FL (silo, user) pairs): split over the host devices when the process has
  several (:func:`unit_shards`; the command-line entry points ask for one per core), one pair
  at a time per device for models of at least :data:`HEAVY_FLOPS` forward FLOPs per example
  (the CNNs, the MLP), chunks of 2 for them on a single device, more where a pair holds fewer
  than 8 records (:data:`CPU_HEAVY_ROWS` padded records a chunk); smaller models take chunks
  whose records fit :data:`CPU_CHUNK_BYTES` (:func:`chunk_rows`), which is the full vmap for
  the tabular tasks. A bucket one device would run in a single chunk is not split. One
  ULDP-AVG round of the ULDP CNN (MNIST, 100 users over 5 silos, Q=2, B=64, idle 2 cores):
  7.9-8.7 s over 2 host devices one pair each, 10.9 s over 2 devices in chunks of 2, 11.7-12.4 s
  on one device in chunks of 2, 13.7 s in chunks of 1, 16.5 s with the full vmap; 1000 users:
  6.4 s against 11.8 s. Logistic regression, 10,000 users: 0.64 s over 2 devices, 0.99 s on one
  in cache-sized chunks, 2.3 s fully vmapped (docs/scale.md, "Pairs over host devices").
  The pairs' length buckets are the engine's too (``uldp_data.bucket_lengths``, every backend):
  no floor on a pair's padded length, and small buckets merged into the next longer one while
  that adds at most :data:`BUCKET_WASTE` of the records as padding. At ``--quick`` sizes, 1000
  users (2,246 pairs of 1-3 records), padding every pair to 8 records made the round 6x slower
  (docs/scale.md, issue 25).
* ``"nodes"`` (the gossip node axis, :func:`jaxfl.algorithms.gossip.node_grads`): the full
  vmap; chunks only under a memory budget (:func:`fit`).

Memory (:func:`fit`): under a device memory budget (:func:`device_budget`: a share of an
accelerator's free memory, or ``JAXFL_DEVICE_MEMORY_BUDGET`` bytes on any backend; none on CPU
otherwise) the ``"auto"`` layouts of the client, pair and gossip node axes are narrowed to
the largest chunks whose units fit, from the per-unit memory of the compiled unit step
(:func:`unit_memory`), and the points of a vmapped sweep share the budget (:func:`sharing`).
When not even one unit fits, :class:`MemoryBudgetError` names the unit, its bytes and the
budget. docs/scale.md, "Memory-aware layouts".

Convolutions (:func:`conv_impl`): on CPUs and GPUs the models compute every convolution as
patches x kernel matrix (:mod:`jaxfl.models.conv`), elsewhere (TPUs, not measured) with the
direct XLA convolution. CPU: one SGD step of batch 64 on 2 cores under load, ULDP CNN 14-23 ms
as patches vs 60 ms direct, and 11 ms vs 75 ms per unit vmapped over 8 units; FedAvg CNN
0.8-1.0 s vs 3.9-4.5 s at load 12. GPU (one H200, 2026-11-28, ULDP-AVG 1000 users on all of
MNIST): 0.155 s per round as patches vs 0.451 s direct; vmapped over pairs, the direct form's
per-pair weight gradients became grouped cuDNN convolutions (``feature_group_count`` = pairs)
that took 58% of the round (docs/scale.md, "Measured on one H200").
``JAXFL_CONV_IMPL=xla|patches`` overrides the policy (benchmarks compare the two this way).

Example Usage:
  >>> resolve("auto", "cohort", backend="cpu"), resolve("auto", "cohort", backend="gpu")
  (1, None)
  >>> resolve(8, "pairs", backend="cpu"), resolve(None, "pairs", backend="cpu")
  (8, None)
  >>> [resolve("auto", "pairs", backend="cpu", unit_flops=1e6, length=n) for n in (1, 3, 8, 64)]
  [16, 5, 2, 2]
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import os

import jax
import numpy as np

from jaxfl import validate

log = logging.getLogger(__name__)

AUTO = "auto"
KINDS = ("cohort", "pairs", "nodes")
# The measured best chunk per axis kind on CPU (module docstring); accelerators: full vmap.
CPU_DEFAULTS = {"cohort": 1, "pairs": None, "nodes": None}
# Axes whose unit runs a model of at least HEAVY_FLOPS forward FLOPs per example (the CNNs; not
# the linear / Cox models of the tabular tasks) take these chunks on CPU instead ...
HEAVY_FLOPS = 1e5
CPU_HEAVY = {"pairs": 2}
# ... and chunks of 1 when the axis is split over several host devices (:func:`unit_shards`);
# short units take more of them, up to CPU_HEAVY_ROWS padded records a chunk (a chunk of 2
# pairs of 1-3 records leaves the vectorized step with a few rows of work).
CPU_HEAVY_SHARDED = {"pairs": 1}
CPU_HEAVY_ROWS = 16
# On CPU a chunk of light units gathers at most this many bytes of records (cache-sized).
CPU_CHUNK_BYTES = 1 << 20
# Length buckets of a padded unit axis (ULDP pairs, :func:`jaxfl.algorithms.uldp_data.
# bucket_lengths`) are merged into the next longer one while the merges add at most this share
# of the real records as padding (every bucket is one more compiled trainer and loop).
BUCKET_WASTE = 1 / 32
# ... or, where that is less, at most this many padded rows: every bucket is one more compile
# of the pair trainer (seconds for a CNN), which a few hundred rows of padding per step do not
# repay in a short run (the configs' smoke sweeps went from 10 to 21 trainer compiles without
# it). 1000 users at `--quick` sizes (buckets 1, 2, 3: merging 2 into 3 would pad 414 rows)
# keep their three buckets.
BUCKET_ROWS = 384


def resolve(request, kind: str, *, backend: str | None = None,
            unit_flops: float | None = None, shards: int = 1,
            length: int | None = None) -> int | None:
    """The chunk size for an axis of ``kind``: ``None`` (full vmap) or a positive int.

    Args:
      request: ``"auto"`` (the policy), ``None`` (full vmap) or a positive int (chunk size).
      kind: the axis kind, one of :data:`KINDS`.
      backend: the JAX backend (default: ``jax.default_backend()``).
      unit_flops: forward FLOPs per example of the model each unit trains
        (:func:`jaxfl.models.forward_flops`), when known: on CPU, models of at least
        :data:`HEAVY_FLOPS` take :data:`CPU_HEAVY` chunks (:data:`CPU_HEAVY_SHARDED` when the
        axis is split over ``shards > 1`` devices).
      shards: devices the axis is split over (:func:`unit_shards`).
      length: records each unit holds (padded), when known: heavy units on CPU then take
        ``max(CPU_HEAVY[kind], CPU_HEAVY_ROWS // length)`` per chunk, so short pairs are
        vectorized in chunks of about :data:`CPU_HEAVY_ROWS` records.

    Raises:
      JaxflValueError: for an unknown kind or a request that is not "auto", None or an int >= 1.
    """
    validate.one_of("kind", kind, KINDS)
    if request is None:
        return None
    if isinstance(request, str):
        if request != AUTO:
            raise validate.JaxflValueError(
                f"Expected a layout request of 'auto', None or a positive int, got {request!r}.")
        backend = backend or jax.default_backend()
        if backend != "cpu":
            return None
        if unit_flops is not None and unit_flops >= HEAVY_FLOPS and kind in CPU_HEAVY:
            chunk = (CPU_HEAVY_SHARDED if shards > 1 else CPU_HEAVY)[kind]
            return chunk if length is None else max(chunk, CPU_HEAVY_ROWS // int(length))
        return CPU_DEFAULTS[kind]
    return validate.positive_int("chunk size", request)


def chunk_rows(row_bytes: int, *, backend: str | None = None) -> int | None:
    """The most records a chunk of ``"auto"`` units gathers: on CPU
    ``CPU_CHUNK_BYTES // row_bytes`` (at least 1), so a chunk's records stay in cache; on
    accelerators no bound (None).

    >>> chunk_rows(784 * 4, backend="cpu"), chunk_rows(784 * 4, backend="gpu")
    (334, None)
    """
    backend = backend or jax.default_backend()
    if backend != "cpu":
        return None
    return max(1, CPU_CHUNK_BYTES // max(1, int(row_bytes)))


# ----------------------------------------------------------------------------- memory

BUDGET_ENV = "JAXFL_DEVICE_MEMORY_BUDGET"
# The share of a device's free memory the unit axes of one computation may fill (the rest is
# headroom for what the per-unit measurement does not see: the round's other buffers, XLA's
# fragmentation).
MEMORY_FRACTION = 0.75
# What one unit of an axis kind is called in a memory error.
UNIT_NAMES = {"cohort": "clients", "pairs": "pairs", "nodes": "nodes",
              "points": "sweep points", "eval": "evaluation examples"}


class MemoryBudgetError(validate.JaxflValueError):
    """Even one unit of an axis (one client, pair or sweep point) does not fit the device."""


def device_budget(device=None) -> int | None:
    """The bytes the unit axes of one computation may fill on ``device`` (default: the first
    local device), or None when unknown (no bound: the layouts of :func:`resolve` stand).

    ``JAXFL_DEVICE_MEMORY_BUDGET`` (bytes) overrides it, on any backend (a fake budget: tests run
    the accelerator policy on CPU with it). Otherwise :data:`MEMORY_FRACTION` of the device's
    free memory, ``bytes_limit - bytes_in_use`` of ``device.memory_stats()``; XLA:CPU reports
    no memory statistics, so on CPU it is None.

    >>> device_budget() is None or device_budget() > 0
    True
    """
    env = os.environ.get(BUDGET_ENV)
    if env:
        try:
            value = int(float(env))
        except (ValueError, OverflowError):
            value = 0
        if value < 1:
            raise validate.JaxflValueError(
                f"Expected {BUDGET_ENV} to be a positive number of bytes, got {env!r}.")
        return value
    device = device or jax.local_devices()[0]
    try:
        stats = device.memory_stats()
    except Exception:  # noqa: BLE001 (backends without memory statistics)
        stats = None
    if not stats or "bytes_limit" not in stats:
        return None
    free = int(stats["bytes_limit"]) - int(stats.get("bytes_in_use", 0))
    return max(1, int(MEMORY_FRACTION * free))


# How many vmapped copies of the unit axes share the device (the points of a vmapped sweep
# batch on one device), and an optional forced unit chunk (:func:`sharing`).
_POINTS = contextvars.ContextVar("jaxfl_layout_points", default=1)
_UNIT_CHUNK = contextvars.ContextVar("jaxfl_layout_unit_chunk", default=None)
_BUDGET = contextvars.ContextVar("jaxfl_layout_budget", default=None)
# The unit axes :func:`fit` laid out while a program was traced (:func:`recording`).
_RECORD = contextvars.ContextVar("jaxfl_layout_record", default=None)


@contextlib.contextmanager
def sharing(points: int, *, budget: int | None = None, unit_chunk: int | None = None):
    """Computations traced inside share the device between ``points`` vmapped copies of their
    unit axes (:mod:`jaxfl.vmapped_runs` traces a sweep batch in it): :func:`fit` gives each
    copy ``1 / points`` of ``budget`` (default: :func:`device_budget`). ``unit_chunk`` forces
    the memory-fitted layouts to that chunk (the sweep measures a point's memory at one unit
    per chunk)."""
    points = validate.positive_int("points", points)
    tokens = (_POINTS.set(points), _UNIT_CHUNK.set(unit_chunk), _BUDGET.set(budget))
    try:
        yield
    finally:
        for var, token in zip((_POINTS, _UNIT_CHUNK, _BUDGET), tokens, strict=True):
            var.reset(token)


def current_budget() -> int | None:
    """The budget :func:`fit` applies here: the one of the enclosing :func:`sharing`, else
    :func:`device_budget` (the whole device's, before it is split between sweep points)."""
    return _BUDGET.get() or device_budget()


def points_sharing() -> int:
    """How many vmapped copies of the unit axes share the device here (:func:`sharing`)."""
    return _POINTS.get()


@contextlib.contextmanager
def narrowed(unit_chunk: int | None):
    """Inside, every memory-fitted unit axis (:func:`fit`) takes chunks of at most
    ``unit_chunk`` units (None: as outside), keeping the enclosing :func:`sharing`'s points
    and budget. The planner (:mod:`jaxfl.planner`) retraces a program in it when the
    compiled program does not fit the device."""
    if unit_chunk is None:
        yield
        return
    unit_chunk = validate.positive_int("unit_chunk", unit_chunk)
    token = _UNIT_CHUNK.set(unit_chunk)
    try:
        yield
    finally:
        _UNIT_CHUNK.reset(token)


@contextlib.contextmanager
def recording():
    """Yields a list that receives ``(kind, units, chunk)`` for every unit axis :func:`fit`
    lays out while a program is traced inside (``chunk`` None: the full vmap)."""
    record: list = []
    token = _RECORD.set(record)
    try:
        yield record
    finally:
        _RECORD.reset(token)


def _recorded(kind: str, units: int, chunk: int | None) -> int | None:
    record = _RECORD.get()
    if record is not None:
        record.append((kind, int(units), None if chunk is None else int(chunk)))
    return chunk


_MEMORY: dict = {}


def _abstract(tree, lead=()):
    return jax.tree.map(lambda a: jax.ShapeDtypeStruct((*lead, *np.shape(a)), a.dtype), tree)


def _itemsize(dtype) -> int:
    try:
        return np.dtype(dtype).itemsize
    except TypeError:  # a PRNG key dtype: its key data (at most 4 uint32)
        return 16


def _nbytes(tree) -> int:
    return int(sum(int(np.prod(a.shape, dtype=np.int64)) * _itemsize(a.dtype)
                   for a in jax.tree.leaves(tree)))


def unit_memory(key, fn, shared, unit) -> tuple[int, int]:
    """``(fixed, per_unit)`` device bytes of ``fn`` vmapped over a unit axis.

    ``fn(*shared, *unit)`` computes one unit; ``shared`` are pytrees every unit reads (the
    model's parameters), ``unit`` the pytrees of one unit's arguments (arrays, tracers or
    ``ShapeDtypeStruct``; only shapes and dtypes are read). XLA compiles ``fn`` vmapped over 2
    and over 4 units (not 1: XLA simplifies a batch of one, whose temporaries differ); each
    compiled program's memory analysis gives its arguments + outputs + temporaries,
    ``per_unit`` is half the difference and ``fixed`` the rest. Values ``fn`` closes
    over (traced hyperparameters) become arguments (``jax.closure_convert``). Where XLA gives
    no memory analysis the estimate is the unit's argument and output bytes (no temporaries;
    logged). Cached per ``key`` (a stable object of the caller, e.g. its per-unit function
    factory) and shapes, so a run measures once.
    """
    shared, unit = tuple(shared), tuple(unit)
    cache_key = (key, str(jax.tree.structure((shared, unit))),
                 str(_abstract((shared, unit))))
    if cache_key in _MEMORY:
        return _MEMORY[cache_key]
    one = lambda s, u: fn(*s, *u)  # noqa: E731
    converted, consts = jax.closure_convert(one, _abstract(shared), _abstract(unit))
    vm = jax.vmap(converted, in_axes=(None, 0, *([None] * len(consts))))

    def total(b):
        args = (_abstract(shared), _abstract(unit, (b,)), *_abstract(list(consts)))
        m = jax.jit(vm).lower(*args).compile().memory_analysis()
        if m is None:
            return None
        return m.argument_size_in_bytes + m.output_size_in_bytes + m.temp_size_in_bytes

    t2, t4 = total(2), total(4)
    if t2 is None or t4 is None:
        out = jax.eval_shape(converted, _abstract(shared), _abstract(unit),
                             *_abstract(list(consts)))
        per = _nbytes(unit) + _nbytes(out)
        fixed = _nbytes(shared) + _nbytes(list(consts))
        log.warning("XLA gives no memory analysis on %s: a unit's memory is estimated from its "
                    "argument and output bytes (%d), without temporaries.",
                    jax.default_backend(), per)
    else:
        per = max(1, -(-(t4 - t2) // 2))
        fixed = max(0, t2 - 2 * per)
    _MEMORY[cache_key] = (int(fixed), int(per))
    return _MEMORY[cache_key]


def fit(chunk: int | None, kind: str, units: int, memory) -> int | None:
    """Narrows a unit axis' layout to the device's memory budget (:func:`device_budget`).

    ``chunk`` is the layout :func:`resolve` chose (None: full vmap); ``units`` the axis length;
    ``memory()`` returns ``(fixed, per_unit)`` bytes (:func:`unit_memory`; called only when
    there is a budget). Without a budget (CPU, unless ``JAXFL_DEVICE_MEMORY_BUDGET`` is set)
    ``chunk`` is returned unchanged. Otherwise the budget (split between the copies of
    :func:`sharing`) holds ``most = (budget - fixed) // per_unit`` units: the result is
    ``chunk`` when it fits (None when the full axis fits), else chunks of ``most``.

    Raises:
      MemoryBudgetError: not even one unit fits (naming the unit, its bytes and the budget).
    """
    validate.one_of("kind", kind, (*KINDS, "points"))
    forced = _UNIT_CHUNK.get()
    if forced is not None:
        return _recorded(kind, units, forced if forced < units else None)
    budget = _BUDGET.get() or device_budget()
    if budget is None:
        return _recorded(kind, units, chunk)
    fixed, per = memory()
    points = _POINTS.get()
    share = budget // points
    most = (share - fixed) // per
    if most < 1:
        copies = f" ({points} sweep points share it: {share} bytes each)" if points > 1 else ""
        raise MemoryBudgetError(
            f"One of the {units} {UNIT_NAMES[kind]} needs {per} bytes (plus {fixed} bytes shared "
            f"by all), more than the device memory budget of {budget} bytes{copies}. Set "
            f"{BUDGET_ENV} or free device memory, or use a smaller model or fewer records per "
            f"unit.")
    if chunk is not None and chunk <= most:
        return _recorded(kind, units, chunk)
    if chunk is None and most >= units:
        return _recorded(kind, units, None)
    log.info("%d %s of %d bytes each in chunks of %d (budget %d bytes)", units,
             UNIT_NAMES[kind], per, most, share)
    return _recorded(kind, units, int(most))


def unit_shards(request="auto") -> int:
    """The number of devices a unit axis is split over (each runs its share of the chunks).

    ``"auto"``: on CPU, every local device of a single-process run. A CPU process has several
    devices only when started with ``XLA_FLAGS=--xla_force_host_platform_device_count=D``;
    splitting ULDP's pairs over 2 host devices beats one device with 2 intra-op threads
    (docs/scale.md, "Pairs over host devices"). On accelerators and in multi-process runs
    ``"auto"`` is 1: there the unit axis is one vmap per device and :mod:`jaxfl.sharding`
    places data over devices and hosts. An int (at most the local devices) is an override.

    >>> unit_shards(1)
    1
    """
    if request == AUTO:
        cpu = jax.default_backend() == "cpu" and jax.process_count() == 1
        return jax.local_device_count() if cpu else 1
    n = validate.positive_int("unit shards", request)
    if n > jax.local_device_count():
        raise validate.JaxflValueError(
            f"Cannot split a unit axis over {n} devices: this process has "
            f"{jax.local_device_count()}.")
    return n


CONV_IMPLS = ("xla", "patches")
# Backends whose "auto" convolution is patches x kernel, each chosen by a benchmark (module
# docstring): on a TPU neither form has been timed, so XLA's own convolution stays.
PATCHES_BACKENDS = ("cpu", "gpu", "cuda", "rocm")


def conv_impl(request: str | None = None, *, backend: str | None = None) -> str:
    """How convolutions run: ``"patches"`` (CPU, GPU) or ``"xla"`` (other backends).

    ``request`` (default: the environment variable ``JAXFL_CONV_IMPL``, else ``"auto"``) is
    ``"auto"`` or one of :data:`CONV_IMPLS`. Read when a model is traced.
    """
    import os

    request = request or os.environ.get("JAXFL_CONV_IMPL", AUTO)
    if request == AUTO:
        backend = backend or jax.default_backend()
        return "patches" if backend in PATCHES_BACKENDS else "xla"
    return validate.one_of("conv impl", request, CONV_IMPLS)


# XLA flags that make GPU programs deterministic: no atomics-based scatters or reductions, and
# autotuning that picks the same kernels in every compilation (the flags are known to every
# jaxlib build, so they are harmless on CPU).
DETERMINISTIC_XLA_FLAGS = ("--xla_gpu_deterministic_ops=true",)


def request_determinism(environ=None) -> bool:
    """Asks XLA for deterministic GPU programs: appends :data:`DETERMINISTIC_XLA_FLAGS` to
    ``XLA_FLAGS``, unless ``JAXFL_DETERMINISTIC=0``. Call it before the first JAX computation
    (XLA reads its flags once, when the backend starts); the experiment entry points and the
    test suite do.

    On CPU jaxfl's programs are deterministic already. On GPUs, without it, scatter-adds and
    some reductions use atomics and autotuning may choose other kernels per compilation, so two
    runs of the same program can differ in the last bits: bit-identical resume, the DP-OGL
    information-flow oracles and "a vmapped sweep point equals its single run" then hold only
    to float tolerance. With it they are exact (scatter-heavy programs run somewhat slower).

    Returns whether the running process is (or will be) deterministic: ``False`` when opted out,
    or when a backend had started before the flag was added.

    >>> env = {"XLA_FLAGS": "--xla_force_host_platform_device_count=2"}
    >>> request_determinism(env), env["XLA_FLAGS"]  # doctest: +ELLIPSIS
    (..., '--xla_force_host_platform_device_count=2 --xla_gpu_deterministic_ops=true')
    >>> request_determinism({"JAXFL_DETERMINISTIC": "0"})
    False
    """
    import os

    from jax._src import xla_bridge

    environ = os.environ if environ is None else environ
    if environ.get("JAXFL_DETERMINISTIC", "1") == "0":
        return False
    flags = environ.get("XLA_FLAGS", "").split()
    missing = [f for f in DETERMINISTIC_XLA_FLAGS if f.split("=")[0] not in
               {g.split("=")[0] for g in flags}]
    if missing:
        environ["XLA_FLAGS"] = " ".join(flags + missing)
    if not xla_bridge.backends_are_initialized():
        return True
    return jax.default_backend() == "cpu" or (not missing and deterministic(environ))


def deterministic(environ=None) -> bool:
    """Whether this process's programs are deterministic: on CPU always; on an accelerator when
    ``XLA_FLAGS`` holds :data:`DETERMINISTIC_XLA_FLAGS` (recorded in each run's summary)."""
    import os

    environ = os.environ if environ is None else environ
    if jax.default_backend() == "cpu":
        return True
    flags = set(environ.get("XLA_FLAGS", "").split())
    return all(f in flags for f in DETERMINISTIC_XLA_FLAGS)


__all__ = ["AUTO", "KINDS", "CPU_DEFAULTS", "HEAVY_FLOPS", "CPU_HEAVY", "CPU_HEAVY_SHARDED",
           "CPU_HEAVY_ROWS",
           "CPU_CHUNK_BYTES", "BUCKET_WASTE", "BUCKET_ROWS", "CONV_IMPLS", "BUDGET_ENV",
           "MEMORY_FRACTION",
           "UNIT_NAMES", "MemoryBudgetError", "device_budget", "sharing", "unit_memory", "fit",
           "current_budget", "points_sharing", "narrowed", "recording",
           "DETERMINISTIC_XLA_FLAGS", "resolve", "chunk_rows", "unit_shards", "conv_impl",
           "request_determinism", "deterministic"]
