"""Devices and hosts: a named ``Mesh`` over which the stacked client axis and the sweep axis
are sharded, and multi-host start-up through ``jax.distributed.initialize``.

The mesh has two named axes:

* ``"clients"`` splits the client axis of :class:`~jaxfl.data.FederatedData` (and, inside a
  round, the cohort axis of per-client work: data, per-client keys, deltas, see
  :func:`constrain_clients`), so no device holds all clients;
* ``"sweep"`` splits the points of a vmapped sweep (:mod:`jaxfl.sweep`): stacked server
  states, round inputs and keys.

Parameters of one point (the server model) are replicated over ``"clients"``. Arrays are built
with ``jax.make_array_from_callback`` from host NumPy, so the same code works on one host and
on many: each process only transfers the shards its own devices hold. Sharding changes where
work happens, not what is computed; sums over clients may be reassociated across devices, so
results agree with a single device up to float rounding.

Multi-host (SLURM, Cloud TPU pods or an explicit coordinator) is started with
:func:`initialize` before any other JAX call; see ``docs/multihost.md``.

Example Usage:
  >>> import jax
  >>> mesh = make_mesh(sweep=1)
  >>> dict(mesh.shape)["clients"] == jax.device_count()
  True
"""

from __future__ import annotations

import dataclasses
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from jaxfl import validate

CLIENTS = "clients"
SWEEP = "sweep"


def make_mesh(*, sweep: int = 1, clients: int | None = None, devices=None) -> Mesh:
    """A ``(sweep, clients)`` mesh over ``devices`` (default: all devices of all processes).

    Args:
      sweep: devices along the sweep axis.
      clients: devices along the client axis (default: the rest, ``len(devices) // sweep``).
      devices: the devices to use (default ``jax.devices()``).

    Raises:
      JaxflValueError: when ``sweep * clients`` is not the number of devices.
    """
    devices = list(jax.devices() if devices is None else devices)
    sweep = validate.positive_int("sweep", sweep)
    if clients is None:
        clients = len(devices) // sweep
    clients = validate.positive_int("clients", clients)
    if sweep * clients != len(devices):
        raise validate.JaxflValueError(
            f"Expected sweep * clients == {len(devices)} devices, got sweep={sweep}, "
            f"clients={clients}.")
    return Mesh(np.asarray(devices, dtype=object).reshape(sweep, clients), (SWEEP, CLIENTS))


def axis_size(mesh: Mesh | None, name: str) -> int:
    """Size of axis ``name`` of ``mesh`` (1 when there is no mesh or no such axis)."""
    if mesh is None or name not in mesh.axis_names:
        return 1
    return int(dict(mesh.shape)[name])


def _pad_rows(a, rows: int, fill=0):
    a = np.asarray(a)
    extra = rows - a.shape[0]
    if extra <= 0:
        return a
    return np.concatenate([a, np.full((extra, *a.shape[1:]), fill, a.dtype)])


PADDED = "padded_clients"  # extras key marking appended empty clients ([clients, max_n] bool)


def pad_clients(data, multiple: int):
    """``data`` with empty clients (mask false, zero examples) appended up to a multiple.

    Algorithms sample among their own ``num_clients`` real clients, so the padding clients are
    never selected; they only make the client axis divisible by the mesh's ``"clients"`` size.
    The result carries ``extras["padded_clients"]`` (true on padding rows), which
    :func:`jaxfl.algorithms.base.check_data` accepts in place of an exact client count.
    """
    c = data.num_clients
    rows = -(-c // multiple) * multiple
    if rows == c:
        return data
    padded = jax.tree.map(lambda a: _pad_rows(a, rows), data)
    marker = np.broadcast_to((np.arange(rows) >= c)[:, None], (rows, data.max_examples))
    return dataclasses.replace(padded, extras={**padded.extras, PADDED: marker.copy()})


def put(tree, sharding: NamedSharding):
    """Places every leaf of a host pytree as a global array with ``sharding``.

    Works across processes: each process provides (from its full host copy) only the shards
    of its addressable devices.
    """
    def one(a):
        a = np.asarray(a)
        return jax.make_array_from_callback(a.shape, sharding, lambda index: a[index])

    return jax.tree.map(one, tree)


def _spec(mesh: Mesh, leading: tuple, ndim: int) -> NamedSharding:
    leading = tuple(leading[:ndim])
    return NamedSharding(mesh, P(*leading, *([None] * (ndim - len(leading)))))


def shard_leading(tree, mesh: Mesh, axes: tuple):
    """Places leaves with their leading dimensions split over the mesh ``axes`` in order
    (``None`` for an unsplit dimension)."""
    return jax.tree.map(lambda a: put(a, _spec(mesh, axes, np.ndim(a))), tree)


def shard_data(data, mesh: Mesh, *, stacked: bool = False):
    """Places :class:`~jaxfl.data.FederatedData` with its client axis over ``"clients"``.

    Clients are padded with empty ones to a multiple of the axis size. With ``stacked=True``
    the data carries a leading per-point sweep axis, split over ``"sweep"``.
    """
    if stacked:
        padded = jax.tree.map(lambda a: np.swapaxes(a, 0, 1), data)
        padded = pad_clients(padded, axis_size(mesh, CLIENTS))
        padded = jax.tree.map(lambda a: np.swapaxes(a, 0, 1), padded)
        return shard_leading(padded, mesh, (SWEEP, CLIENTS))
    padded = pad_clients(jax.tree.map(np.asarray, data), axis_size(mesh, CLIENTS))
    return shard_leading(padded, mesh, (CLIENTS,))


def replicate(tree, mesh: Mesh):
    """Places every leaf fully replicated over ``mesh`` (e.g. the model parameters)."""
    return jax.tree.map(lambda a: put(a, NamedSharding(mesh, P())), tree)


def shard_sweep(tree, mesh: Mesh, *, axis: int = 0):
    """Places stacked per-point leaves with dimension ``axis`` split over ``"sweep"``."""
    leading = (None,) * axis + (SWEEP,)
    return shard_leading(tree, mesh, leading)


def constrain_clients(tree):
    """Inside jit: asks for the leading (client/cohort) axis of every leaf to be split over the
    ``"clients"`` axis of the mesh in context (``jax.set_mesh``); identity without one."""
    mesh = jax.sharding.get_abstract_mesh()
    if mesh.empty or CLIENTS not in mesh.axis_names or dict(mesh.shape)[CLIENTS] == 1:
        return tree

    def one(a):
        return jax.lax.with_sharding_constraint(a, P(CLIENTS, *([None] * (jnp.ndim(a) - 1))))

    return jax.tree.map(one, tree)


def _signature(args) -> tuple:
    leaves, treedef = jax.tree.flatten(args)
    avals = (jax.typeof(x) for x in leaves)  # not the aval's mesh: placement is not a signature
    return treedef, tuple((a.shape, a.dtype, a.weak_type) for a in avals)


class LoopJit:
    """``jax.jit(fn)`` for a loop that feeds its outputs back (a round's state), compiled once
    per argument signature (tree structure, shapes, dtypes) whatever the arguments' placement.

    ``jax.jit`` keys its cache on the shardings of committed arguments too. A round whose
    computation spans several devices (ULDP's pairs split over host devices with ``shard_map``)
    returns its state replicated over those devices, while round 1's state was an uncommitted
    single-device array: plain ``jit`` then compiles the whole round a second time in round 2.
    Here the round is compiled ahead of time from the first call's arguments, and every later
    call runs that executable: uncommitted arguments are moved where it expects them (as
    ``jit`` does), committed ones whose sharding is not equivalent to the expected one are
    moved with ``jax.device_put`` (values unchanged).

    A call first tries the last executable as it is (the executable checks the arguments'
    types and placement itself), so the steady state adds no Python work to ``jit``'s.
    :meth:`place` moves arguments reused across calls (the state, the data) once, so a call
    does not transfer them again. ``donate_argnums`` is ``jax.jit``'s.
    """

    def __init__(self, fn, donate_argnums=()):
        self._jit = jax.jit(fn, donate_argnums=donate_argnums)
        self._compiled = {}
        self._last = None

    def compiled(self, *args):
        """The executable for the signature of ``args`` (compiled on first use)."""
        sig = _signature(args)
        exe = self._compiled.get(sig)
        if exe is None:
            exe = self._compiled[sig] = self._jit.lower(*args).compile()
        return exe

    @staticmethod
    def _fit(exe, args, *, uncommitted: bool):
        expected = exe.input_shardings[0]

        def one(x, s):  # s is None for an argument the round does not use
            if s is None or not isinstance(x, jax.Array) or x.sharding == s:
                return x
            if x.committed:
                return x if x.sharding.is_equivalent_to(s, x.ndim) else jax.device_put(x, s)
            return jax.device_put(x, s) if uncommitted and s.is_fully_addressable else x

        return tuple(jax.tree.map(one, a, e) for a, e in zip(args, expected, strict=True))

    def place(self, *args):
        """``args`` placed where the executable for their signature expects them."""
        return self._fit(self.compiled(*args), args, uncommitted=True)

    def __call__(self, *args):
        if self._last is not None:
            try:
                return self._last(*args)
            except (TypeError, ValueError):  # other types or placement: the path below
                pass
        exe = self._last = self.compiled(*args)
        return exe(*self._fit(exe, args, uncommitted=False))


def to_host(tree):
    """Fetches a pytree of (possibly multi-host) arrays to host NumPy on every process."""
    def one(a):
        if isinstance(a, jax.Array) and not a.is_fully_addressable and \
                not a.is_fully_replicated:
            from jax.experimental import multihost_utils
            return np.asarray(multihost_utils.process_allgather(a, tiled=True))
        return np.asarray(a)

    return jax.tree.map(one, tree)


def is_main_process() -> bool:
    """True on the process that writes files (process 0)."""
    return jax.process_index() == 0


def detect_cluster(environ=None) -> str:
    """Which launcher started this process: ``"explicit"`` (``JAXFL_COORDINATOR_ADDRESS``),
    ``"slurm"`` (a multi-task SLURM step), ``"tpu"`` (a Cloud TPU VM) or ``"single"``."""
    env = os.environ if environ is None else environ
    if env.get("JAXFL_COORDINATOR_ADDRESS"):
        return "explicit"
    if env.get("SLURM_JOB_ID") and int(env.get("SLURM_NTASKS", "1")) > 1:
        return "slurm"
    if env.get("TPU_WORKER_HOSTNAMES") or env.get("CLOUD_TPU_TASK_ID") or env.get(
            "TPU_ACCELERATOR_TYPE"):
        return "tpu"
    return "single"


def initialize(*, coordinator_address: str | None = None, num_processes: int | None = None,
               process_id: int | None = None, local_device_ids=None,
               timeout_s: int = 300) -> dict:
    """Starts multi-host JAX (call first, before any other JAX computation).

    Resolution order: explicit arguments; the environment variables
    ``JAXFL_COORDINATOR_ADDRESS`` / ``JAXFL_NUM_PROCESSES`` / ``JAXFL_PROCESS_ID``; a SLURM step
    or a Cloud TPU pod (both auto-detected by ``jax.distributed.initialize``); else a single
    process (nothing to do).

    Returns:
      ``{"cluster", "process_index", "process_count", "local_devices", "devices"}``.

    Raises:
      JaxflValueError: when an explicit coordinator is given without the process count/id.
    """
    env = os.environ
    if coordinator_address is None and env.get("JAXFL_COORDINATOR_ADDRESS"):
        coordinator_address = env["JAXFL_COORDINATOR_ADDRESS"]
        num_processes = num_processes if num_processes is not None else int(
            env.get("JAXFL_NUM_PROCESSES", "0")) or None
        process_id = process_id if process_id is not None else (
            int(env["JAXFL_PROCESS_ID"]) if "JAXFL_PROCESS_ID" in env else None)
    if coordinator_address is not None:
        if num_processes is None or process_id is None:
            raise validate.JaxflValueError(
                "Expected num_processes and process_id with coordinator_address="
                f"{coordinator_address!r}, got num_processes={num_processes}, "
                f"process_id={process_id}.")
        num_processes = validate.positive_int("num_processes", num_processes)
        process_id = validate.positive_int("process_id", process_id, minimum=0)
        if process_id >= num_processes:
            raise validate.JaxflValueError(
                f"Expected process_id < num_processes={num_processes}, got {process_id}.")
        cluster = "explicit"
        jax.distributed.initialize(coordinator_address=coordinator_address,
                                   num_processes=num_processes, process_id=process_id,
                                   local_device_ids=local_device_ids,
                                   initialization_timeout=timeout_s)
    else:
        cluster = detect_cluster()
        if cluster in ("slurm", "tpu"):
            jax.distributed.initialize(local_device_ids=local_device_ids,
                                       initialization_timeout=timeout_s)
    return {"cluster": cluster, "process_index": jax.process_index(),
            "process_count": jax.process_count(), "local_devices": jax.local_device_count(),
            "devices": jax.device_count()}


def shutdown() -> None:
    """Stops the distributed runtime if it was started (safe to call on a single process)."""
    if jax.process_count() > 1:
        jax.distributed.shutdown()


__all__ = ["CLIENTS", "SWEEP", "PADDED", "make_mesh", "axis_size", "pad_clients", "put",
           "shard_leading", "shard_data", "replicate", "shard_sweep", "constrain_clients",
           "LoopJit", "to_host", "is_main_process", "detect_cluster", "initialize", "shutdown"]
