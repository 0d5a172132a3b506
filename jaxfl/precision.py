"""The precision contract of the arithmetic that a privacy claim rests on.

An accountant assumes that each protected unit moves the noised aggregate by at most its
sensitivity (the clip norm C, or a weighted multiple of it). That holds for the program only if
the per-unit norms, the clip factors, the clipped (weighted) sums and the noise addition are
computed accurately. On GPUs and TPUs the default float32 matrix product is not accurate: it
runs at TF32 (10 mantissa bits) on NVIDIA Ampere/Hopper and bfloat16 passes on TPUs, so a norm
and the sum it is meant to bound can disagree by about 1e-3 relative, and a unit's contribution
can exceed C by as much.

The contract: every ``dot_general`` from the per-unit quantity that is clipped to the noised
release runs at ``Precision.HIGHEST`` (full float32), on every backend. Code that computes such
a quantity wraps it in :func:`sensitive`, which

* opens the named scope :data:`SENSITIVITY_SCOPE` (visible in the jaxpr's name stack), and
* sets ``jax.default_matmul_precision("highest")`` while tracing, so every matmul / einsum /
  dot traced inside (including the transposes that autodiff derives from them) carries
  ``precision=HIGHEST`` in the jaxpr.

Privacy noise is drawn inside :func:`noise_scope` (:data:`NOISE_SCOPE`), so a jaxpr walk can
find where the noise enters. Model forward/backward passes outside these scopes (local training
before a model delta is clipped) keep the backend's fast default: clipping a materialised
vector bounds it whatever precision produced it.

Example Usage:
  >>> import jax, jax.numpy as jnp
  >>> def f(a, b):
  ...     with sensitive():
  ...         return a @ b
  >>> eqn = jax.make_jaxpr(f)(jnp.ones((2, 2)), jnp.ones((2, 2))).eqns[0]
  >>> eqn.params["precision"][0] == jax.lax.Precision.HIGHEST
  True
  >>> SENSITIVITY_SCOPE in str(eqn.source_info.name_stack)
  True

  The check: a clipped sum formed after the scope closed, at the default precision, is
  reported (``check`` raises with the same list).

  >>> def release(a):
  ...     with sensitive():
  ...         clipped = a / jnp.maximum(1.0, jnp.linalg.norm(a, axis=1, keepdims=True))
  ...     total = jnp.ones((1, 2)) @ clipped          # the sum over units, outside the scope
  ...     with noise_scope():
  ...         z = jax.random.normal(jax.random.key(0), total.shape)
  ...     return total + z
  >>> [v.split(" ")[0] for v in violations(jax.make_jaxpr(release)(jnp.ones((2, 2))))]
  ['dot_general(float32[1,2]']
"""

from __future__ import annotations

import contextlib
import functools
import re

import jax
import jax.extend
import jax.numpy as jnp

#: Name scope of the computations a sensitivity bound is about (norms, clip factors, sums).
SENSITIVITY_SCOPE = "dp_sensitivity"
#: Name scope of privacy noise draws.
NOISE_SCOPE = "dp_noise"


@contextlib.contextmanager
def sensitive():
    """Traces the enclosed code at the highest matmul precision, in :data:`SENSITIVITY_SCOPE`."""
    with jax.named_scope(SENSITIVITY_SCOPE), jax.default_matmul_precision("highest"):
        yield


def sensitive_function(fn):
    """Decorator: every call of ``fn`` is traced inside :func:`sensitive`.

    The scope is looked up when ``fn`` is called, not when it is decorated, so code that swaps
    :func:`sensitive` for a measurement (``experiments/bench/clip_precision.py`` turns the
    contract off that way) reaches decorated functions too.
    """
    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        with sensitive():
            return fn(*args, **kwargs)
    return wrapped


@contextlib.contextmanager
def noise_scope():
    """Traces the enclosed privacy-noise draw in :data:`NOISE_SCOPE` (highest precision too:
    a correlated-noise matrix product is part of the noise the accountant assumes)."""
    with jax.named_scope(NOISE_SCOPE), jax.default_matmul_precision("highest"):
        yield


# --- The contract's checker: a walk over a jaxpr's dataflow ----------------------------------

#: Primitives whose ``precision`` parameter sets how accurately float32 products are summed.
CHECKED_PRIMITIVES = ("dot_general", "conv_general_dilated")
_FULL_ALGORITHMS = ("F32_F32_F32", "F64_F64_F64")


def _scope_re(name):
    return re.compile(r"(^|[/(])" + re.escape(name) + r"($|[/)])")


_SENS_RE = _scope_re(SENSITIVITY_SCOPE)
_NOISE_RE = _scope_re(NOISE_SCOPE)


def is_highest(eqn) -> bool:
    """Whether a dot / convolution eqn runs at full float32 precision on every backend.

    Integer and float64 operands are computed exactly / in float64 whatever the precision
    parameter says (TF32 and bfloat16 passes apply to float32 and narrower inputs only).
    """
    dtypes = [v.aval.dtype for v in eqn.invars if hasattr(v.aval, "dtype")]
    if not all(jnp.issubdtype(d, jnp.inexact) for d in dtypes) or all(
            d == jnp.float64 for d in dtypes):
        return True
    p = eqn.params.get("precision")
    if p is None:
        return False
    if isinstance(p, jax.lax.DotAlgorithmPreset):
        return p.name in _FULL_ALGORITHMS
    if isinstance(p, jax.lax.Precision):
        return p == jax.lax.Precision.HIGHEST
    return all(q == jax.lax.Precision.HIGHEST for q in p)


def _inner(eqn):
    """Every (open) jaxpr among ``eqn``'s params."""
    out = []
    for v in eqn.params.values():
        for w in (v if isinstance(v, (tuple, list)) else (v,)):
            if isinstance(w, jax.extend.core.ClosedJaxpr):
                out.append(w.jaxpr)
            elif isinstance(w, jax.extend.core.Jaxpr):
                out.append(w)
    return out


def _scan_counts(params) -> tuple[int, int]:
    """``(consts, carry)`` operand counts of a ``scan`` equation: jax <= 0.10 names them in
    ``num_consts`` / ``num_carry``; jax 0.11 packs the operand groups in the flat tree
    ``ft_in`` = (consts, carry, xs)."""
    if "num_consts" in params:
        return params["num_consts"], params["num_carry"]
    consts, carry, _ = params["ft_in"].unpack()
    return len(list(consts.vals)), len(list(carry.vals))


def _open(j):
    return j.jaxpr if isinstance(j, jax.extend.core.ClosedJaxpr) else j


class _Graph:
    """The dataflow of a jaxpr and all its nested jaxprs as one directed graph.

    Nodes are variables (one per jaxpr instance) and equations; an equation of a known
    higher-order primitive is replaced by edges from its operands to the inner jaxpr's inputs
    and from the inner outputs to its results (loops add carry-out -> carry-in edges, so graph
    reachability is the loop's fixpoint). Unknown higher-order primitives stay one node: all
    outputs depend on all inputs, and all their inner dots are checked if the node is on a path.
    """

    def __init__(self):
        self.succ: dict = {}
        self.pred: dict = {}
        self.eqns: dict = {}         # eqn node -> (eqn, scope path, in_sens, in_noise, inner)
        self.var_edges: set = set()  # identity edges (var -> var)
        self.noise_vars: set = set()
        self._instances = 0

    def edge(self, a, b):
        self.succ.setdefault(a, set()).add(b)
        self.pred.setdefault(b, set()).add(a)

    def var(self, inst, v):
        if isinstance(v, jax.extend.core.Literal):
            return None
        return ("v", inst, v)

    def link(self, a, b):
        if a is not None and b is not None:
            self.edge(a, b)
            self.var_edges.add((a, b))

    def add(self, jaxpr, path="", sens=False, noise=False):
        """Adds ``jaxpr``; returns its instance id (its vars are ``("v", id, var)``)."""
        inst = self._instances
        self._instances += 1
        for i, eqn in enumerate(jaxpr.eqns):
            stack = str(eqn.source_info.name_stack)
            where = "/".join(x for x in (path, stack) if x)
            e_sens = sens or bool(_SENS_RE.search(stack))
            e_noise = noise or bool(_NOISE_RE.search(stack))
            ins = [self.var(inst, v) for v in eqn.invars]
            outs = [self.var(inst, v) for v in eqn.outvars]
            if e_noise and not noise:
                self.noise_vars.update(o for o in outs if o is not None)
            if self._nested(eqn, ins, outs, where, e_sens, e_noise):
                continue
            node = ("e", inst, i)
            self.eqns[node] = (eqn, where, e_sens, e_noise, _inner(eqn))
            for v in ins:
                if v is not None:
                    self.edge(v, node)
            for v in outs:
                self.edge(node, v)
        return inst

    def _sub(self, jaxpr, ins, outs, where, sens, noise, in_slice=None):
        """Adds a nested jaxpr fed by ``ins`` and feeding ``outs``; returns its var nodes."""
        j = _open(jaxpr)
        inst = self.add(j, where, sens, noise)
        jin = [self.var(inst, v) for v in j.invars]
        jout = [self.var(inst, v) for v in j.outvars]
        for a, b in zip(ins if in_slice is None else ins[in_slice], jin):
            self.link(a, b)
        for a, b in zip(jout, outs):
            self.link(a, b)
        return jin, jout

    def _nested(self, eqn, ins, outs, where, sens, noise) -> bool:
        name, p = eqn.primitive.name, eqn.params
        where = f"{where}/{name}" if where else name
        if name in ("jit", "pjit", "closed_call", "eval_jaxpr", "core_call", "remat", "remat2",
                    "checkpoint",
                    "custom_jvp_call", "custom_vjp_call", "custom_vjp_call_jaxpr",
                    "shard_map", "custom_lin"):
            key = next((k for k in ("jaxpr", "call_jaxpr", "fun_jaxpr") if k in p), None)
            if key is None:
                return False
            self._sub(p[key], ins, outs, where, sens, noise)
            return True
        if name == "scan":
            nc, nk = _scan_counts(p)
            jin, jout = self._sub(p["jaxpr"], ins, outs, where, sens, noise)
            for a, b in zip(jout[:nk], jin[nc:nc + nk]):  # the carry: iterate to a fixpoint
                self.link(a, b)
            for a, b in zip(ins[nc:nc + nk], outs[:nk]):  # zero iterations
                self.link(a, b)
            return True
        if name == "while":
            cn, bn = p["cond_nconsts"], p["body_nconsts"]
            carry_in = ins[cn + bn:]
            bin_, bout = self._sub(p["body_jaxpr"], ins[cn:], outs, where, sens, noise)
            for a, b in zip(bout, bin_[bn:]):
                self.link(a, b)
            cin, cout = self._sub(p["cond_jaxpr"], ins[:cn] + carry_in, [], where, sens, noise)
            for a, b in zip(bout, cin[cn:]):
                self.link(a, b)
            for a, b in zip(carry_in, outs):
                self.link(a, b)
            for c in cout:     # the predicate decides every result
                for o in outs:
                    self.link(c, o)
            return True
        if name == "cond":
            for br in p["branches"]:
                self._sub(br, ins[1:], outs, where, sens, noise)
            for o in outs:
                self.link(ins[0], o)
            return True
        return False

    def noise_consumers(self, tainted: set) -> set:
        """The eqns where privacy noise meets a ``tainted`` value (the noise addition).

        Noise is followed from the draws' results through computation on noise alone (sums or
        scalings of noise, identity edges into nested jaxprs) until an eqn that also reads a
        tainted value; values that are already both are not followed (a loop's carry after a
        noisy step).
        """
        found, seen, todo = set(), set(self.noise_vars), list(self.noise_vars)
        while todo:
            for m in self.succ.get(todo.pop(), ()):
                if m in seen:
                    continue
                seen.add(m)
                if m[0] == "e":
                    if self.eqns[m][3]:      # still inside the noise scope
                        continue
                    if m in tainted:
                        found.add(m)
                        continue
                elif m in tainted:
                    continue
                todo.append(m)
        return found

    def reach(self, starts, forward: bool, stop=frozenset()) -> set:
        """Nodes reachable from ``starts``; nodes in ``stop`` are reached but not crossed."""
        nbrs = self.succ if forward else self.pred
        seen, todo = set(starts), list(starts)
        while todo:
            n = todo.pop()
            if n in stop and n not in starts:
                continue
            for m in nbrs.get(n, ()):
                if m not in seen:
                    seen.add(m)
                    todo.append(m)
        return seen


def _dots(jaxpr):
    """Every checked eqn in ``jaxpr`` and its nested jaxprs."""
    for eqn in jaxpr.eqns:
        if eqn.primitive.name in CHECKED_PRIMITIVES:
            yield eqn
        for j in _inner(eqn):
            yield from _dots(j)


def _describe(eqn, where, why):
    shapes = " x ".join(str(v.aval.str_short()) for v in eqn.invars)
    return (f"{eqn.primitive.name}({shapes}) precision={eqn.params.get('precision')} {why} "
            f"at [{where}] {_frame(eqn)}")


def _frame(eqn):
    try:
        from jax._src import source_info_util

        return source_info_util.summarize(eqn.source_info)
    except Exception:  # pragma: no cover - private API moved
        return ""


def _analyse(closed_jaxpr):
    """The graph, its sensitivity-scope eqns, what they reach (forward), the noise additions
    and what reaches those (backward, up to the nearest sensitivity-scope eqn)."""
    g = _Graph()
    g.add(_open(closed_jaxpr))
    sens_nodes = [n for n, (_, _, s, _, _) in g.eqns.items() if s]
    fwd = g.reach(sens_nodes, True)
    consumers = g.noise_consumers(fwd)  # where the noise meets the sensitive values
    # Backwards from the noise addition to the nearest sensitivity-scope computation: a value
    # that passes through the scope again is bounded there (DP-SGD's next step runs its model
    # pass on the noised parameters of the previous one, then clips again).
    bwd = g.reach(consumers, False, stop=frozenset(sens_nodes))
    return g, sens_nodes, fwd, consumers, bwd


def summary(closed_jaxpr) -> dict:
    """Counts of what :func:`violations` walks: eqns in the sensitivity and noise scopes, noise
    additions (eqns where noise meets a sensitivity-scope value), dots on the path between
    them (outside the scopes) and dots in the scopes; a test can assert that a check was not
    vacuous."""
    g, sens_nodes, fwd, consumers, bwd = _analyse(closed_jaxpr)
    dots = [(n, v) for n, v in g.eqns.items() if v[0].primitive.name in CHECKED_PRIMITIVES]
    return {"sensitivity_eqns": len(sens_nodes),
            "noise_eqns": sum(1 for v in g.eqns.values() if v[3]),
            "noise_additions": len(consumers),
            "dots_in_scopes": sum(1 for _, v in dots if v[2] or v[3]),
            "dots_on_path": sum(1 for n, v in dots if n in fwd and n in bwd
                                and not (v[2] or v[3]))}


def violations(closed_jaxpr) -> list[str]:
    """Where ``closed_jaxpr`` breaks the precision contract (empty list: it keeps it).

    Reports, as one line each:

    * every ``dot_general`` / ``conv_general_dilated`` below ``Precision.HIGHEST`` inside the
      :data:`SENSITIVITY_SCOPE` or :data:`NOISE_SCOPE` scopes;
    * every such eqn outside the scopes on a dataflow path from a value computed in the
      sensitivity scope to an eqn that consumes privacy noise (the noise addition), e.g. a
      clipped sum formed after the scope closed;
    * a jaxpr with privacy noise that no value of the sensitivity scope reaches (the clipped
      computation is not marked, so nothing above could be checked).

    The walk follows nested jaxprs (jit, closed_call, remat, custom_jvp/vjp, shard_map, scan,
    while, cond); loops are iterated to a fixpoint through their carries. Unknown primitives
    with inner jaxprs count as one node whose outputs depend on all inputs. The path is traced
    back from the noise addition only to the nearest sensitivity-scope eqn, so a scope has to
    cover the whole computation from the clip to the sum; arithmetic other than dots and
    convolutions (reductions, scatters) is not checked.
    """
    g, _, fwd, consumers, bwd = _analyse(closed_jaxpr)
    out = []
    for n, (eqn, where, s, nz, inner) in sorted(g.eqns.items(), key=lambda t: t[0][1:]):
        on_path = n in fwd and n in bwd
        if eqn.primitive.name in CHECKED_PRIMITIVES and not is_highest(eqn):
            if s or nz:
                out.append(_describe(eqn, where, "in a privacy scope"))
            elif on_path:
                out.append(_describe(eqn, where, "between the sensitivity scope and the noise"))
        elif inner and (on_path or s or nz):
            for d in (x for j in inner for x in _dots(j)):
                if not is_highest(d):
                    out.append(_describe(d, f"{where}/{eqn.primitive.name}",
                                         "inside an opaque primitive on the privacy path"))
    if g.noise_vars and not consumers:
        out.append("the privacy noise is added to values that no computation in the "
                   f"{SENSITIVITY_SCOPE!r} scope feeds: mark the clipped computation with "
                   "precision.sensitive()")
    return out


def check(fn, *args, **kwargs) -> None:
    """Traces ``fn(*args, **kwargs)`` and raises ``AssertionError`` listing the
    :func:`violations` of the precision contract, if any."""
    found = violations(jax.make_jaxpr(fn)(*args, **kwargs))
    if found:
        raise AssertionError("precision contract violated:\n  " + "\n  ".join(found))
