"""The memory planner: every compiled program the engine runs is fitted to the device first.

The layouts of :mod:`jaxfl.layout` size each unit axis (clients, pairs, nodes) from an
*estimate*: the per-unit memory of the unit's step compiled for 2 and 4 units. A whole
program (a training round, a sweep's vmapped block of rounds, an evaluation) holds more than
its unit axes, and XLA's GPU autotuner allocates scratch while compiling that no estimate sees.
The planner closes that gap for every program the engine compiles:

1. **Measure.** The program is lowered and compiled ahead of time; its peak is read from the
   compiled program's ``memory_analysis()`` (:func:`peak_bytes`: the larger of
   ``peak_memory_in_bytes`` and arguments + outputs + temporaries - aliased bytes) and
   compared to the budget (:func:`jaxfl.layout.current_budget`: the enclosing
   :func:`jaxfl.layout.sharing`'s, else ``JAXFL_DEVICE_MEMORY_BUDGET`` bytes, else 75% of
   the device's free memory from ``memory_stats()``; none on CPU, where nothing is checked).
2. **Narrow, points first.** A program that does not fit, or whose compilation fails with
   ``RESOURCE_EXHAUSTED`` (:func:`is_out_of_memory`), is narrowed: a program of several sweep
   points raises :class:`NarrowPoints` and its caller halves the chunk of points
   (:func:`jaxfl.sweep.run_sweep`, ``experiments.bench.bench_sweep``); a program of one point
   is traced again with its unit axes in chunks of half the widest chunk it had
   (:func:`jaxfl.layout.narrowed`), until it fits.
3. **Retry at run.** A ``RESOURCE_EXHAUSTED`` raised by a call is treated the same way and the
   call repeated with the narrower program, provided its inputs survived (XLA fails before it
   writes into donated buffers); a sweep batch first checkpoints every point at the round it
   reached, so no finished round is lost.
4. **Refuse early.** When even one unit per chunk (one point) does not fit,
   :class:`jaxfl.layout.MemoryBudgetError` names the program, the unit, the bytes and the
   budget, at compile time, before the program does any work.

Each compiled program's :class:`Plan` (its layout, predicted peak, budget and the reasons it
was narrowed) goes into the run's metadata, ``layout.json`` (:func:`write_plans`), never into
released outputs: Poisson cohorts make a program's shapes, and so its plan, depend on the
sampled data. docs/scale.md, "The memory planner".

Example Usage:
  >>> import jax, jax.numpy as jnp
  >>> f = PlannedJit(lambda: jax.jit(lambda x: x * 2), program="double")
  >>> float(f(jnp.ones(3))[0]), f.plans[0].program
  (2.0, 'double')
"""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
from collections.abc import Callable
from pathlib import Path

import jax

from jaxfl import layout, sharding

log = logging.getLogger(__name__)

# How XLA says it ran out of device memory (compile-time autotuning or a run's allocation).
OOM_MARKERS = ("RESOURCE_EXHAUSTED", "Out of memory", "out of memory")
PLANS_FILE = "layout.json"


def is_out_of_memory(error: BaseException) -> bool:
    """True for XLA's out-of-memory errors (``jax.errors.JaxRuntimeError``, jaxlib's
    ``XlaRuntimeError``, whose message holds ``RESOURCE_EXHAUSTED`` or ``Out of memory``)."""
    runtime = isinstance(error, jax.errors.JaxRuntimeError) or \
        type(error).__name__ == "XlaRuntimeError"
    return runtime and any(m in str(error) for m in OOM_MARKERS)


def peak_bytes(compiled) -> int | None:
    """The device bytes a compiled program holds at its peak, from ``memory_analysis()``: the
    larger of XLA's ``peak_memory_in_bytes`` (buffer live ranges) and arguments + outputs +
    temporaries - aliased (donated) bytes. None when the backend gives no analysis."""
    try:
        m = compiled.memory_analysis()
    except Exception:  # noqa: BLE001 (backends without a memory analysis)
        return None
    if m is None:
        return None
    total = (m.argument_size_in_bytes + m.output_size_in_bytes + m.temp_size_in_bytes
             - m.alias_size_in_bytes)
    return int(max(total, getattr(m, "peak_memory_in_bytes", 0) or 0))


@dataclasses.dataclass
class Plan:
    """How one compiled program was laid out.

    ``points``: sweep points in the program (1 outside sweeps); ``unit_chunk``: the forced
    chunk of its unit axes (None: the layouts :func:`jaxfl.layout.fit` chose); ``axes``: each
    unit axis as traced, ``(kind, units, chunk)`` (chunk None: the full vmap);
    ``peak_bytes``: the compiled program's predicted peak; ``narrowed``: why it was narrowed,
    in order."""

    program: str
    budget_bytes: int | None
    points: int = 1
    unit_chunk: int | None = None
    axes: list = dataclasses.field(default_factory=list)
    peak_bytes: int | None = None
    narrowed: list = dataclasses.field(default_factory=list)

    def record(self) -> dict:
        return {"program": self.program, "points": self.points, "unit_chunk": self.unit_chunk,
                "axes": [{"kind": k, "units": u, "chunk": c} for k, u, c in self.axes],
                "peak_bytes": self.peak_bytes, "budget_bytes": self.budget_bytes,
                "narrowed": list(self.narrowed)}


class NarrowPoints(Exception):  # noqa: N818 (a signal to the caller, not a failure)
    """A program of several sweep points does not fit: its caller halves the points.

    ``plan`` is the program's plan (its ``narrowed`` says why); ``intact`` is False when a call
    failed after its donated inputs were consumed (the caller resumes from checkpoints)."""

    def __init__(self, plan: Plan, intact: bool = True):
        super().__init__(plan.narrowed[-1] if plan.narrowed else plan.program)
        self.plan = plan
        self.intact = intact


def _first_line(error: BaseException) -> str:
    return str(error).strip().splitlines()[0][:200] if str(error).strip() else repr(error)


def _narrower(axes: list, unit_chunk: int | None) -> int | None:
    """Half the widest unit chunk of a traced program (None: it has no axis left to narrow)."""
    widest = max((u if c is None else c for _, u, c in axes), default=0)
    if unit_chunk is not None:
        widest = min(widest, unit_chunk)
    return widest // 2 if widest > 1 else None


def _refuse(plan: Plan) -> layout.MemoryBudgetError:
    axes = ", ".join(f"{c or u} of {u} {layout.UNIT_NAMES.get(k, k)} per chunk"
                     for k, u, c in plan.axes) or "no unit axis to narrow"
    where = f"{plan.points} sweep points" if plan.points > 1 else "one run"
    peak = f"{plan.peak_bytes} bytes" if plan.peak_bytes is not None else "more memory"
    budget = f"the device memory budget of {plan.budget_bytes} bytes" \
        if plan.budget_bytes is not None else "the device holds"
    return layout.MemoryBudgetError(
        f"The {plan.program} ({where}; {axes}) needs {peak} at its narrowest layout, more "
        f"than {budget} ({plan.narrowed[-1]}). Set {layout.BUDGET_ENV} or free device "
        f"memory, or use a smaller model or fewer records per unit.")


def fit_program(program: str, compile_at: Callable[[int | None], object], *,
                unit_chunk: int | None = None, points: int | None = None,
                budget: int | None = None):
    """Compiles a program narrowed until it fits the budget; returns ``(compiled, Plan)``.

    ``compile_at(unit_chunk)`` lowers and compiles the program with its unit axes traced in
    :func:`jaxfl.layout.narrowed` ``(unit_chunk)`` (a fresh trace: ``jax.jit`` caches traces,
    and the layout is chosen when tracing). ``points`` (default: the enclosing
    :func:`jaxfl.layout.sharing`'s) and ``budget`` (default
    :func:`jaxfl.layout.current_budget`) are the program's sweep points and device budget.

    Raises:
      NarrowPoints: a program of several points does not fit (its caller halves them).
      MemoryBudgetError: one point at one unit per chunk does not fit.
    """
    points = layout.points_sharing() if points is None else points
    budget = layout.current_budget() if budget is None else budget
    plan = Plan(program, budget, points=points, unit_chunk=unit_chunk)
    while True:
        with layout.recording() as axes:
            try:
                with layout.narrowed(plan.unit_chunk):
                    exe = compile_at(plan.unit_chunk)
            except Exception as e:
                if not is_out_of_memory(e):
                    raise
                exe, peak, reason = None, None, f"RESOURCE_EXHAUSTED at compile: {_first_line(e)}"
            else:
                peak = peak_bytes(exe) if budget is not None else None
                reason = None if peak is None or peak <= budget else \
                    f"predicted peak {peak} bytes > budget {budget} bytes"
        if axes:
            plan.axes = list(axes)
        plan.peak_bytes = peak
        if reason is None:
            if plan.narrowed:
                log.warning("%s fitted to the device: %s", program, plan.record())
            return exe, plan
        plan.narrowed.append(f"{_layout_text(plan)}: {reason}")
        if plan.points > 1:
            raise NarrowPoints(plan)
        nxt = _narrower(plan.axes, plan.unit_chunk)
        if nxt is None:
            raise _refuse(plan)
        plan.unit_chunk = nxt


def _layout_text(plan: Plan) -> str:
    units = "fitted unit chunks" if plan.unit_chunk is None else \
        f"unit chunks of {plan.unit_chunk}"
    return f"{plan.points} point(s), {units}"


def _signature(args) -> tuple:
    leaves, treedef = jax.tree.flatten(args)
    return treedef, tuple((a.shape, a.dtype, getattr(a, "weak_type", False))
                          for a in (jax.typeof(x) for x in leaves))


def _intact(args, donate_argnums) -> bool:
    """Whether the donated arguments of a failed call still hold their buffers."""
    for i in donate_argnums:
        for leaf in jax.tree.leaves(args[i]):
            if isinstance(leaf, jax.Array) and leaf.is_deleted():
                return False
    return True


class PlannedJit:
    """A jitted function compiled per argument signature through :func:`fit_program`.

    ``make_jit()`` returns a fresh ``jax.jit`` of the program (a new trace cache: the planner
    retraces it with narrower unit axes). ``program`` names it in plans and errors. A call
    compiles (or reuses) the executable for its arguments' signature and runs it; on an
    out-of-memory error at run it narrows (:class:`NarrowPoints` for several points) and
    repeats the call when the donated arguments (``donate_argnums``) survived. The unit chunk
    a narrowing chose stays for later signatures. ``plans`` lists every compiled program's
    :class:`Plan`."""

    def __init__(self, make_jit: Callable[[], object], *, program: str,
                 donate_argnums: tuple = ()):
        self.make_jit = make_jit
        self.program = program
        self.donate_argnums = tuple(donate_argnums) if not isinstance(donate_argnums, int) \
            else (donate_argnums,)
        self.unit_chunk = None
        self.plans: list[Plan] = []
        self._jits: dict = {}
        self._exes: dict = {}
        self._pending: list = []  # why the next program is narrower (a run's out-of-memory)

    def _jit(self, unit_chunk):
        if unit_chunk not in self._jits:
            self._jits[unit_chunk] = self.make_jit()
        return self._jits[unit_chunk]

    def compiled(self, *args):
        """The executable for ``args``' signature (planned and compiled on first use)."""
        sig = (_signature(args), layout.points_sharing())
        if sig not in self._exes:
            exe, plan = fit_program(
                self.program, lambda c: self._jit(c).lower(*args).compile(),
                unit_chunk=self.unit_chunk)
            self.unit_chunk = plan.unit_chunk
            plan.narrowed[:0] = self._pending
            self._pending = []
            self.plans.append(plan)
            self._exes[sig] = (exe, plan)
        self._current = self._exes[sig][1]
        return self._exes[sig][0]

    @property
    def current_plan(self) -> Plan | None:
        """The plan of the program the last call ran."""
        return getattr(self, "_current", None)

    def narrow(self, error: BaseException, args) -> None:
        """After an out-of-memory call: a narrower program for the next call, or raises
        (:class:`NarrowPoints`, ``MemoryBudgetError``)."""
        current = getattr(self, "_current", None) or Plan(
            self.program, layout.current_budget(), points=layout.points_sharing())
        plan = dataclasses.replace(current, narrowed=list(current.narrowed),
                                   axes=list(current.axes))
        plan.narrowed.append(f"{_layout_text(plan)}: RESOURCE_EXHAUSTED at run: "
                             f"{_first_line(error)}")
        intact = _intact(args, self.donate_argnums)
        if plan.points > 1:
            raise NarrowPoints(plan, intact=intact) from error
        nxt = _narrower(plan.axes, self.unit_chunk)
        if nxt is None:
            raise _refuse(plan) from error
        log.warning("%s ran out of memory; retrying in unit chunks of %d", self.program, nxt)
        self.unit_chunk = nxt
        self._exes.clear()
        self._pending = plan.narrowed
        if not intact:  # the call consumed its donated inputs: the caller restarts the step
            raise NarrowPoints(plan, intact=False) from error

    def __call__(self, *args):
        while True:
            exe = self.compiled(*args)
            try:
                return exe(*args)
            except Exception as e:
                if not is_out_of_memory(e):
                    raise
                self.narrow(e, args)


class PlannedLoop(sharding.LoopJit):
    """:class:`jaxfl.sharding.LoopJit` (a loop's step compiled once per signature, arguments
    placed where it expects them) whose programs go through the planner
    (:class:`PlannedJit`): :func:`jaxfl.training.run` runs its rounds with it."""

    def __init__(self, fn, donate_argnums=(), *, program: str = "training round"):
        super().__init__(fn, donate_argnums=donate_argnums)
        self.planned = PlannedJit(fresh_jit(fn, donate_argnums=donate_argnums),
                                  program=program, donate_argnums=donate_argnums)

    @property
    def plans(self) -> list[Plan]:
        return self.planned.plans

    def compiled(self, *args):
        return self.planned.compiled(*args)

    def __call__(self, *args):
        while True:
            try:
                return super().__call__(*args)
            except Exception as e:
                if not is_out_of_memory(e):
                    raise
                self._last = None
                try:
                    self.planned.narrow(e, args)
                except NarrowPoints as lost:
                    raise RuntimeError(
                        f"The {self.planned.program} ran out of device memory after its "
                        f"donated state was consumed ({lost}); run it again to resume from "
                        f"its last checkpoint.") from e


def fresh_jit(fn, **jit_kwargs) -> Callable[[], object]:
    """A ``make_jit`` for :class:`PlannedJit`: each call jits a new closure over ``fn`` (its
    own trace cache, so the layout is chosen again when it is traced)."""

    def make():
        @functools.wraps(fn)  # the program keeps its name (jax_log_compiles, profiles)
        def traced(*args):
            return fn(*args)

        return jax.jit(traced, **jit_kwargs)

    return make


def plans_record(*sources) -> list[dict]:
    """The records of the plans of ``sources`` (:class:`PlannedJit`, :class:`Plan` or objects
    with a ``plans`` list), in order."""
    out = []
    for s in sources:
        if s is None:
            continue
        if isinstance(s, Plan):
            out.append(s.record())
        else:
            out.extend(p.record() for p in getattr(s, "plans", []))
    return out


def write_plans(workdir, records: list[dict]) -> Path | None:
    """Writes ``workdir/layout.json`` (run metadata, never a released output): the plans of
    the run's compiled programs. Nothing is written for an empty list."""
    if workdir is None or not records:
        return None
    from jaxfl import checkpoint, metrics

    path = Path(workdir) / PLANS_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    checkpoint.atomic_write_text(path, json.dumps(metrics.jsonable(
        {"budget_env": layout.BUDGET_ENV, "programs": records}), indent=2))
    return path


# ----------------------------------------------------------------------------- evaluation

class FittedEval:
    """An evaluation ``params -> metrics`` whose program is fitted to the device: when it does
    not fit the budget, or runs out of memory, the evaluation batch is halved
    (``smaller(batch_size)`` builds the same evaluation with smaller batches; the sums over
    batches then add in another order, so metrics agree to float rounding). A ``coupled``
    model's batch statistic (Cox: a C-index over the whole batch) cannot be split: its
    evaluation is refused instead.

    ``evaluate(params, *args)`` is the jitted program, ``args`` its data, ``post`` maps its
    output to the metrics, ``examples`` is the set's size (named in errors)."""

    def __init__(self, evaluate, args, *, batch_size: int, examples: int, smaller,
                 coupled: bool = False, post=None):
        self.evaluate, self.args, self.batch_size = evaluate, tuple(args), int(batch_size)
        self.examples, self.smaller, self.coupled = int(examples), smaller, bool(coupled)
        self.post = post or (lambda out: out)
        self.exe, self.delegate, self._own = None, None, []

    @property
    def unit(self) -> int:
        return max(1, min(self.batch_size, self.examples))

    @property
    def plans(self) -> list[Plan]:
        return self._own + (self.delegate.plans if self.delegate is not None else [])

    def _can_halve(self) -> bool:
        return not self.coupled and self.unit > 1

    def _halve(self, reason: str) -> None:
        if not self._can_halve():
            coupled = " (a coupled model: its metric needs one batch)" if self.coupled else ""
            raise layout.MemoryBudgetError(
                f"Evaluating {self.examples} examples in batches of {self.unit}{coupled}: "
                f"{reason}")
        half = self.unit // 2
        log.warning("evaluation batches of %d: %s; retrying with %d", self.unit, reason, half)
        self._own.append(Plan("evaluation", layout.current_budget(),
                              axes=[("eval", self.examples, self.unit)],
                              narrowed=[f"batches of {self.unit}: {reason}"]))
        self.delegate = self.smaller(half)

    def prepare(self, params) -> None:
        """Plans (and compiles) the evaluation for ``params``' shapes."""
        if self.delegate is None and self.exe is None:
            try:
                exe, plan = fit_program(
                    "evaluation", lambda _: self.evaluate.lower(params, *self.args).compile(),
                    points=1)
            except layout.MemoryBudgetError as e:
                self._halve(str(e))
            else:
                plan.axes = [("eval", self.examples, self.unit)]
                self.exe = exe
                self._own.append(plan)
        if self.delegate is not None:
            self.delegate.prepare(params)

    def __call__(self, params):
        if self.delegate is None and self.exe is None:
            if layout.current_budget() is not None:
                self.prepare(params)
            else:  # no budget: the plain jit, as cheap as before; out-of-memory still caught
                try:
                    return self.post(self.evaluate(params, *self.args))
                except Exception as e:
                    if not is_out_of_memory(e):
                        raise
                    self._halve(f"RESOURCE_EXHAUSTED ({_first_line(e)})")
        if self.delegate is not None:
            return self.delegate(params)
        try:
            out = self.exe(params, *self.args)
        except (TypeError, ValueError):  # params of other types or placement than planned
            out = self.evaluate(params, *self.args)
        except Exception as e:
            if not is_out_of_memory(e):
                raise
            self._halve(f"RESOURCE_EXHAUSTED at run ({_first_line(e)})")
            return self.delegate(params)
        return self.post(out)


def prepare_eval(eval_fn, params) -> None:
    """Plans ``eval_fn`` (a :class:`FittedEval`) for ``params`` before any round runs, when
    there is a device budget (so a set that does not fit is refused before work starts)."""
    if isinstance(eval_fn, FittedEval) and layout.current_budget() is not None:
        eval_fn.prepare(params)


__all__ = ["OOM_MARKERS", "PLANS_FILE", "is_out_of_memory", "peak_bytes", "Plan",
           "NarrowPoints", "fit_program", "PlannedJit", "PlannedLoop", "fresh_jit", "plans_record",
           "write_plans", "FittedEval", "prepare_eval"]
