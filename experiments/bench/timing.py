"""The benchmarks' harness: one timer, one description of the machine they ran on, the
alternation of measurements, and the Markdown table and run files they write.

:func:`timed` calls ``call(i)`` once untimed-for-throughput (``i = 0``: compilation and
warm-up, reported as ``first_s``), then ``i = 1, 2, ...`` until at least ``repeats`` calls and
``min_time`` seconds are spent (or ``max_calls`` calls). Every call's output is waited for with
``jax.block_until_ready`` (NumPy and other outputs pass through), after each call, or with
``sync_each=False`` once at the end, so that JAX's asynchronous dispatch pipelines the calls
as a training loop does. :func:`timed_steps` times a step that carries state
(``state = step(state, i)``). :func:`alternate` takes measurements in turn, so that a shared
machine's load drift spreads over all of them.

Example Usage:
  >>> t = timed(lambda i: sum(range(1000)), repeats=3)
  >>> t.calls, t.out
  (3, 499500)
"""

from __future__ import annotations

import dataclasses
import json
import os
import platform
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


@dataclasses.dataclass(frozen=True)
class Timing:
    """``first_s`` and ``first_out``: the first call's seconds and output (``None`` without
    warm-up); ``total_s`` over ``calls`` timed calls; ``times_s``: each timed call (empty with
    ``sync_each=False``); ``out``: the last call's output."""

    first_s: float | None
    total_s: float
    calls: int
    times_s: tuple[float, ...]
    out: Any
    first_out: Any = None

    @property
    def per_call_s(self) -> float:
        return self.total_s / self.calls


def _wait(out):
    import jax

    return jax.block_until_ready(out)  # leaves that are not JAX arrays pass through


def timed(call: Callable[[int], Any], *, repeats: int = 1, min_time: float = 0.0,
          max_calls: int | None = None, warmup: bool = True, sync_each: bool = True) -> Timing:
    """Times ``call(i)`` (module docstring).

    Raises:
      ValueError: ``repeats < 1``, ``min_time < 0`` or ``max_calls < repeats``.
    """
    if repeats < 1 or min_time < 0 or (max_calls is not None and max_calls < repeats):
        raise ValueError(f"Expected repeats >= 1, min_time >= 0 and max_calls >= repeats, got "
                         f"repeats={repeats}, min_time={min_time}, max_calls={max_calls}.")
    first, first_out, start = None, None, 0
    if warmup:
        t0 = time.perf_counter()
        first_out = _wait(call(0))
        first, start = time.perf_counter() - t0, 1
    times: list[float] = []
    calls, t_start = 0, time.perf_counter()
    while True:
        t0 = time.perf_counter()
        out = call(start + calls)
        calls += 1
        if sync_each:
            out = _wait(out)
            times.append(time.perf_counter() - t0)
        enough = calls >= repeats and time.perf_counter() - t_start >= min_time
        capped = max_calls is not None and calls >= max_calls
        if enough or capped:
            if not sync_each:
                out = _wait(out)  # the calls' time includes the queue they left
                if not (capped or time.perf_counter() - t_start >= min_time):
                    continue
            return Timing(first, time.perf_counter() - t_start, calls, tuple(times), out,
                          first_out)


def timed_steps(step: Callable[[Any, int], Any], state, **kwargs) -> Timing:
    """:func:`timed` of ``state = step(state, i)``, the state fed from call to call (its
    final value is ``out``); ``kwargs`` are :func:`timed`'s."""
    cell = [state]

    def call(i):
        cell[0] = step(cell[0], i)
        return cell[0]

    return timed(call, **kwargs)


def alternate(measures: dict[str, Callable[[], Any]], repeats: int) -> dict[str, list]:
    """``repeats`` rounds of every measurement in turn (A B C A B C ...); each name's results
    in order."""
    out: dict[str, list] = {name: [] for name in measures}
    for _ in range(repeats):
        for name, measure in measures.items():
            out[name].append(measure())
    return out


def random_clients(num_clients: int, per_client: int, shape: tuple, *, classes: int = 10,
                   seed: int = 0):
    """A benchmark's federated data on the host: ``per_client`` standard-normal records of
    ``shape`` and uniform labels below ``classes`` per client (throughput does not depend on
    the values), drawn by ``np.random.default_rng(seed)``."""
    import numpy as np

    from jaxfl.data import federated

    rng = np.random.default_rng(seed)
    n = num_clients * per_client
    x = rng.normal(size=(n, *shape)).astype(np.float32)
    y = rng.integers(0, classes, n).astype(np.int32)
    return federated.from_partition(x, y, list(np.arange(n).reshape(num_clients, per_client)))


def machine() -> dict:
    """Where a benchmark ran: host, processor, cores (and those this process may use),
    versions of Python, JAX, jaxlib and NumPy, JAX's backend and devices, and the 1-minute
    load average when it started."""
    import jax
    import jaxlib
    import numpy as np

    try:
        affinity = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        affinity = os.cpu_count()
    return {"machine": platform.node(), "processor": platform.processor() or platform.machine(),
            "cpus": os.cpu_count(), "affinity": affinity, "python": platform.python_version(),
            "jax": jax.__version__, "jaxlib": jaxlib.__version__, "numpy": np.__version__,
            "backend": jax.default_backend(), "device": str(jax.devices()[0].device_kind),
            "device_count": jax.device_count(), "load_avg_1m": round(os.getloadavg()[0], 2)}


def describe(info: dict | None = None) -> str:
    """One line of :func:`machine` (computed when not given) for a report's header."""
    m = machine() if info is None else info
    return (f"{m['processor']}, {m['cpus']} cores, Python {m['python']}, jax {m['jax']} "
            f"({m['backend']}, {m['device_count']} device(s))")


def table(rows: list[dict]) -> str:
    """A Markdown table of ``rows``: a column per key (in first-seen order), floats to 4
    significant digits, missing cells empty."""
    if not rows:
        return "(no rows)\n"
    cols = list(dict.fromkeys(k for r in rows for k in r))
    fmt = lambda v: f"{v:.4g}" if isinstance(v, float) else str(v)  # noqa: E731
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(fmt(r.get(c, "")) for c in cols) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def write_run(out, stem: str, info: dict, rows: list[dict], markdown: str,
              indent: int = 1) -> None:
    """Writes ``out/<stem>.json`` (``{"info": info, "rows": rows}``, what ``--render`` reads
    back) and ``out/<stem>.md`` (``markdown``), creating ``out``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{stem}.json").write_text(json.dumps({"info": info, "rows": rows}, indent=indent))
    (out / f"{stem}.md").write_text(markdown)


def render_or_run(a, stem: str, to_markdown, params: dict, measure) -> None:
    """The command line of a benchmark with ``--render`` and ``--out`` (``a``, parsed): print
    a saved run's table; or run ``measure()`` (its rows) under :func:`machine`, ``params``, the
    date and the load after, print the table and write the run (:func:`write_run`) to
    ``a.out`` as ``<stem>.json`` / ``<stem>.md``."""
    if a.render:
        saved = json.loads(Path(a.render).read_text())
        print(to_markdown(saved["rows"], saved["info"]))
        return
    info = {**machine(), **params, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    rows = measure()
    info["load_after"] = round(os.getloadavg()[0], 2)
    md = to_markdown(rows, info)
    print(md)
    if a.out:
        write_run(a.out, stem, info, rows, md)


__all__ = ["Timing", "timed", "timed_steps", "alternate", "random_clients", "machine",
           "describe", "table", "write_run", "render_or_run"]
