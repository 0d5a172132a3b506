"""How far a compiled program is from the device's physical limits (a roofline).

For a compiled jaxfl program (``jax.jit(f).lower(...).compile()``) this module counts the work
one call does (:func:`program_cost`), combines it with a measured time into achieved FLOP/s
and bytes/s, and compares them with the device's peaks (:data:`PEAKS`, one table for every
benchmark) to say what bounds the program (:func:`roofline`).

Counting. XLA's own ``compiled.cost_analysis()`` counts the body of a ``while`` loop once,
whatever its trip count (checked on this jax: a ``lax.scan`` of 10 matmuls reports the FLOPs
of one), and jaxfl's rounds are loops (local epochs, batches, chunks of units). So
:func:`program_cost` reads the optimized HLO text instead and multiplies every computation by
how often it runs (a while loop's ``known_trip_count``; a loop without one counts once and is
reported in ``unknown_trip_counts``):

* ``flops``: dots ``2 x output elements x contracted size``, convolutions 2 per
  multiply-add that touches an input element (window taps on padding not counted), every
  elementwise op and reduction one FLOP per element (XLA's conventions); ``dot_flops`` is the
  dot and convolution part.
* ``bytes``: every kernel reads its operands and writes its result once: for each instruction
  of a computation that runs on the device's stream (the entry, loop bodies and conditions,
  conditional branches, called computations: not the insides of fusions), operand bytes +
  result bytes, except that an operand which is only sliced (dynamic-slice, slice, gather,
  also inside a fusion) counts the slices' bytes, and a dynamic-update-slice (also as a
  fusion's root) reads and writes only its update (it runs in place). Control ops, parameters,
  constants, tuples and bitcasts move nothing.
* ``kernels``: the instructions counted for ``bytes`` that launch work (fusions, custom calls,
  dots, convolutions, copies, reductions, ...), times how often they run: kernel launches per
  call on an accelerator, thunks on XLA:CPU.
* A module partitioned over several devices (``num_partitions``, e.g. ULDP's pairs split over
  host devices) is one device's program: FLOPs and bytes are multiplied by the devices (the
  program's total work), kernels are one device's (the devices launch theirs side by side).

The HLO of a CPU compilation is not the GPU's (other fusion decisions), so on a CPU these are
proxies for the accelerator: the same order of work, not the same kernels.

Peaks (:data:`PEAKS`): vendor datasheet numbers (dense, no sparsity) per device kind, and for
a CPU the numbers measured on this machine once per process (:func:`measured_cpu_peaks`: a
float32 matmul and a streaming read).

Bound (:func:`roofline`): three floors on the time of one call, each what the program would
take if that resource were the only limit:

* ``compute = dot_flops / dot peak + other flops / float32 peak`` (dots at the TF32 tensor peak
  where the device has one: XLA's default precision for float32 dots on such GPUs; jaxfl's
  highest-precision clip-path dots run slower, so this is the optimistic floor);
* ``bandwidth = bytes / memory bandwidth``;
* ``launch = dispatch + kernels x per-kernel overhead`` (the dispatch of one call from Python
  is measured on a CPU; on the GPUs of :data:`PEAKS` it is left out: kernels only).

The row is **compute-, bandwidth- or launch-bound** by the largest floor, and
``of_limit = largest floor / measured seconds`` says how close to that limit it runs (1.0: at
the limit; 0.01: 100x away). The bytes are kernel-level traffic: caches (a CPU's L2/L3, a GPU's
L2) serve part of it, so the bandwidth floor can overstate the memory time, most on CPUs whose
small per-unit kernels stay in cache; ``of_limit`` above 1 says exactly that.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
import time

# ----------------------------------------------------------------------------- peaks

# Vendor datasheet peaks (dense math; TF32 / BF16 are tensor-core rates without sparsity), bytes
# per second of device memory, and an assumed per-kernel overhead (launch plus the gap between
# dependent kernels, a typical CUDA figure, not a datasheet number). Matched against
# ``jax.Device.device_kind`` by the substrings in ``match`` (all must occur, case-insensitive).
PEAKS = {
    "H200": dict(match=("h200",), fp32_flops=67e12, tf32_flops=494.7e12, bf16_flops=989.4e12,
                 mem_bytes_s=4.8e12, launch_s=4e-6,
                 source="NVIDIA H200 datasheet (SXM): FP32 67 TFLOPS, TF32 989 / BF16 1,979 "
                        "TFLOPS with sparsity (half dense), HBM3e 4.8 TB/s"),
    "H100 SXM": dict(match=("h100",), fp32_flops=67e12, tf32_flops=494.7e12,
                     bf16_flops=989.4e12, mem_bytes_s=3.35e12, launch_s=4e-6,
                     source="NVIDIA H100 datasheet (SXM5): FP32 67 TFLOPS, TF32 989 / BF16 "
                            "1,979 TFLOPS with sparsity (half dense), HBM3 3.35 TB/s"),
    "A100 80GB": dict(match=("a100",), fp32_flops=19.5e12, tf32_flops=156e12,
                      bf16_flops=312e12, mem_bytes_s=2.039e12, launch_s=4e-6,
                      source="NVIDIA A100 datasheet (80GB SXM): FP32 19.5 TFLOPS, TF32 156 / "
                             "BF16 312 TFLOPS dense, HBM2e 2,039 GB/s"),
}
# H100 PCIe and A100 PCIe have lower clocks and bandwidth; "h100" / "a100" fall back to the
# SXM rows above (the reference machines of docs/scale.md are SXM parts).


def _best_of(fn, repeats: int = 5) -> float:
    import jax

    jax.block_until_ready(fn())  # compile and warm up
    best = math.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(fn())
        best = min(best, time.perf_counter() - t0)
    return best


@functools.cache
def measured_cpu_peaks() -> dict:
    """This machine's CPU peaks as XLA:CPU reaches them, measured once per process (about a
    second): float32 FLOP/s of a 1024 x 1024 matmul (``fp32_flops``, also used for dots),
    bytes/s of a fused read of two 16 M float arrays (``sum(a + s * b)``, 2 x 64 MB: a
    triad's fresh output would time page faults), the
    per-kernel overhead from a ``lax.scan`` of 2,000 small vector steps (its kernels counted by
    :func:`program_cost`) and the per-call dispatch of a trivial jitted function."""
    import jax
    import jax.numpy as jnp

    cpu = jax.devices("cpu")[0]
    n = 1024
    a = jax.device_put(jnp.full((n, n), 0.5, jnp.float32), cpu)
    mm = jax.jit(lambda a: a @ a)
    flops = 2.0 * n ** 3 / _best_of(lambda: mm(a))
    m = 1 << 24
    x = jax.device_put(jnp.ones(m, jnp.float32), cpu)
    y = jax.device_put(jnp.ones(m, jnp.float32), cpu)
    # a fused read of two arrays (a triad's new 64 MB output measures page faults, not DRAM)
    read = jax.jit(lambda x, y: jnp.sum(x + 1.5 * y))
    bw = 2.0 * 4 * m / _best_of(lambda: read(x, y))
    steps = 2000

    def loop(s):
        step = lambda c, _: (jnp.sin(c) * 1.0001 + c[::-1], None)  # noqa: E731
        return jax.lax.scan(step, s, None, length=steps)[0]

    s = jax.device_put(jnp.zeros(16, jnp.float32), cpu)
    compiled = jax.jit(loop).lower(s).compile()
    kernels = max(1.0, program_cost(compiled).kernels)
    launch = _best_of(lambda: compiled(s)) / kernels
    trivial = jax.jit(lambda s: s + 1.0)
    dispatch = _best_of(lambda: trivial(s), repeats=50)
    return dict(fp32_flops=flops, tf32_flops=None, bf16_flops=None, mem_bytes_s=bw,
                launch_s=launch, dispatch_s=dispatch,
                source="measured on this machine (jaxfl.roofline.measured_cpu_peaks: 1024^2 "
                       "float32 matmul, 2 x 64 MB fused read, small-vector scan, trivial call)")


def peaks(device_kind: str | None = None, platform: str | None = None) -> dict:
    """The peak row of a device: ``device_kind`` as ``jax.Device.device_kind`` names it (default:
    JAX's first device); a CPU (``platform == "cpu"`` or an unknown kind on the CPU backend)
    gets :func:`measured_cpu_peaks`. Returns a dict with ``name`` added; an accelerator kind
    not in :data:`PEAKS` raises ``KeyError`` naming the known kinds."""
    if device_kind is None or platform is None:
        import jax

        dev = jax.devices()[0]
        device_kind = dev.device_kind if device_kind is None else device_kind
        platform = dev.platform if platform is None else platform
    low = device_kind.lower()
    for name, row in PEAKS.items():
        if all(s in low for s in row["match"]):
            return {"name": name, **{k: v for k, v in row.items() if k != "match"}}
    if platform == "cpu":
        return {"name": f"CPU ({device_kind}, measured)", **measured_cpu_peaks()}
    raise KeyError(f"No peaks for device kind {device_kind!r} ({platform}); jaxfl.roofline."
                   f"PEAKS knows {sorted(PEAKS)}.")


# ----------------------------------------------------------------------------- counting

_ITEMSIZE = {"pred": 1, "s4": 1, "u4": 1, "s8": 1, "u8": 1, "f8e4m3fn": 1, "f8e5m2": 1,
             "s16": 2, "u16": 2, "f16": 2, "bf16": 2, "s32": 4, "u32": 4, "f32": 4,
             "s64": 8, "u64": 8, "f64": 8, "c64": 8, "c128": 16}
_ARRAY = re.compile(r"\b([a-z]+[0-9]*[a-z0-9]*)\[([0-9,]*)\]")
_COMP = re.compile(r"^(ENTRY\s+)?%?([\w.\-]+)\s+\(.*\)\s+->\s+.*\{\s*$")
_INSTR = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s+=\s+(.+?)\s+([a-z][a-z0-9\-]*)\((.*)$")
_TRIP = re.compile(r'"known_trip_count"\s*:\s*\{\s*"n"\s*:\s*"?(\d+)')
# Elementwise and reduction opcodes: one FLOP per element (XLA's HloCostAnalysis convention).
_ELEMENTWISE = frozenset(
    "abs add and atan2 cbrt ceil clamp compare cosine divide erf exponential exponential-minus-one "
    "floor imag is-finite log log-plus-one logistic maximum minimum multiply negate not or "
    "power real remainder round-nearest-afz round-nearest-even rsqrt select shift-left "
    "shift-right-arithmetic shift-right-logical sign sine sqrt subtract tan tanh xor".split())
# Instructions that launch no work of their own (or only route values between kernels).
_FREE = frozenset("parameter constant tuple get-tuple-element bitcast while call conditional "
                  "after-all partition-id replica-id opt-barrier domain".split())


def _arrays(shape: str) -> list[tuple[str, tuple[int, ...]]]:
    return [(t, tuple(int(d) for d in dims.split(",") if d))
            for t, dims in _ARRAY.findall(shape) if t in _ITEMSIZE]


def _bytes(shape: str) -> int:
    return sum(_ITEMSIZE[t] * math.prod(d) for t, d in _arrays(shape))


def _elems(shape: str) -> int:
    arr = _arrays(shape)
    return math.prod(arr[0][1]) if arr else 0


@dataclasses.dataclass
class _Instr:
    name: str
    shape: str
    op: str
    rest: str  # operands and attributes

    def operands(self) -> list[str]:
        depth, out, cur = 0, [], ""
        for ch in self.rest:  # the operand list: up to the ')' closing the opcode's '('
            if ch == "(":
                depth += 1
            elif ch == ")":
                if depth == 0:
                    break
                depth -= 1
            cur += ch
        for part in cur.split(","):
            m = re.search(r"%([\w.\-]+)\s*$", part.strip())
            if m:
                out.append(m.group(1))
        return out

    def attr(self, key: str) -> str | None:
        m = re.search(rf"\b{key}=(%?[\w.\-]+|\{{[^}}]*\}})", self.rest)
        return m.group(1).lstrip("%") if m else None


def _parse(hlo: str) -> tuple[dict[str, list[_Instr]], str]:
    comps, entry, cur = {}, None, None
    for line in hlo.splitlines():
        m = _COMP.match(line)
        if m:
            cur = m.group(2)
            comps[cur] = []
            if m.group(1):
                entry = cur
            continue
        if cur is None:
            continue
        if line.strip() == "}":
            cur = None
            continue
        m = _INSTR.match(line)
        if m:
            comps[cur].append(_Instr(*m.groups()))
    if entry is None:
        raise ValueError("No ENTRY computation in the HLO text.")
    return comps, entry


@dataclasses.dataclass(frozen=True)
class Cost:
    """The work of one call of a compiled program (module docstring, "Counting")."""

    flops: float
    dot_flops: float
    bytes: float
    kernels: float
    unknown_trip_counts: int = 0
    partitions: int = 1  # devices of an SPMD program: FLOPs and bytes are their sum
    xla_flops: float | None = None  # compiled.cost_analysis(), loop bodies counted once
    xla_bytes: float | None = None

    def asdict(self) -> dict:
        return dataclasses.asdict(self)


def _dot_flops(ins: _Instr, shapes: dict) -> float:
    ops = ins.operands()
    lhs = _arrays(shapes.get(ops[0], "")) if ops else []
    dims = ins.attr("lhs_contracting_dims") or "{}"
    contract = [int(d) for d in dims.strip("{}").split(",") if d.strip()]
    k = math.prod(lhs[0][1][d] for d in contract) if lhs else 1
    return 2.0 * _elems(ins.shape) * k


def _window(text: str) -> dict[str, list]:
    """``window={size=5x5 pad=2_2x2_2 stride=2x2 lhs_dilate=.. rhs_dilate=..}`` as lists."""
    m = re.search(r"window=\{([^}]*)\}", text)
    out: dict[str, list] = {}
    for part in (m.group(1).split() if m else []):
        key, _, val = part.partition("=")
        out[key] = [tuple(int(v) for v in d.split("_")) if "_" in d else int(d)
                    for d in val.split("x")]
    return out


def _valid_taps(out: int, size: int, inp: int, stride: int, pad: tuple, ldil: int,
                rdil: int) -> int:
    """(output position, window tap) pairs of one spatial dimension that land on an input
    element (not on padding or between dilated inputs)."""
    span = (inp - 1) * ldil + 1
    count = 0
    for o in range(out):
        for w in range(size):
            pos = o * stride - pad[0] + w * rdil
            count += 0 <= pos < span and pos % ldil == 0
    return count


def _conv_flops(ins: _Instr, shapes: dict) -> float:
    """2 x multiply-adds that touch an input element (XLA's convention: taps on padding are
    not counted), from the dims labels and the window."""
    ops = ins.operands()
    lhs = _arrays(shapes.get(ops[0], "")) if ops else []
    kernel = _arrays(shapes.get(ops[1], "")) if len(ops) > 1 else []
    out = _arrays(ins.shape)
    m = re.search(r"dim_labels=(\w+_\w+->\w+)", ins.rest)
    labels = m.group(1) if m else ""
    if not (lhs and kernel and out) or not labels:
        return 0.0
    lhs_l, rest = labels.split("_", 1)
    ker_l, out_l = rest.split("->")
    lhs_s, ker_s, out_s = lhs[0][1], kernel[0][1], out[0][1]
    win = _window(ins.rest)
    spatial = [c for c in out_l if c.isdigit()]
    taps = 1
    for j, c in enumerate(spatial):
        def get(key, default, j=j):
            v = win.get(key)
            return v[j] if v and j < len(v) else default

        taps *= _valid_taps(out_s[out_l.index(c)], ker_s[ker_l.index(c)],
                            lhs_s[lhs_l.index(c)], get("stride", 1), get("pad", (0, 0)),
                            get("lhs_dilate", 1), get("rhs_dilate", 1))
    per_tap = out_s[out_l.index("b")] * out_s[out_l.index("f")] * ker_s[ker_l.index("i")]
    return 2.0 * per_tap * taps


_SLICING = frozenset(("dynamic-slice", "slice", "gather"))


def _param_reads(comp: list[_Instr]) -> dict[int, float | None]:
    """Per parameter of a fused computation: the bytes its users read when every user only
    slices it (dynamic-slice, slice, gather: the slices' bytes), 0 when it is only the
    in-place target of a dynamic-update-slice, else None (the whole operand is read)."""
    index = {}
    for ins in comp:
        if ins.op == "parameter":
            m = re.match(r"\s*(\d+)", ins.rest)
            if m:
                index[ins.name] = int(m.group(1))
    reads: dict[int, float | None] = {}
    for pname, i in index.items():
        total, whole = 0.0, False
        for ins in comp:
            ops = ins.operands()
            if pname not in ops:
                continue
            if ins.op in _SLICING and ops[0] == pname:
                total += _bytes(ins.shape)
            elif ins.op == "dynamic-update-slice" and ops[0] == pname and ops.count(pname) == 1:
                pass  # updated in place: not read
            else:
                whole = True
        reads[i] = None if whole else total
    return reads


def _written(ins: _Instr, shapes: dict, comps: dict) -> float:
    """Bytes an instruction writes: its result, or only the update of an in-place
    dynamic-update-slice (also as a fusion's root)."""
    if ins.op == "dynamic-update-slice":
        ops = ins.operands()
        return float(_bytes(shapes.get(ops[1], ""))) if len(ops) > 1 else 0.0
    if ins.op == "fusion" and ins.attr("calls") in comps:
        body = comps[ins.attr("calls")]
        root = next((i for i in body if i.name == _root_name(body)), None)
        if root is not None and root.op == "dynamic-update-slice":
            return _written(root, {i.name: i.shape for i in body}, comps)
    return float(_bytes(ins.shape))


def _root_name(body: list[_Instr]) -> str | None:
    return body[-1].name if body else None  # the ROOT is printed last


def _moved(ins: _Instr, shapes: dict, comps: dict) -> float:
    """Bytes one kernel reads and writes (module docstring; slices read only their part)."""
    ops = ins.operands()
    if ins.op in _SLICING:
        return 2.0 * _bytes(ins.shape) + sum(_bytes(shapes.get(o, "")) for o in ops[1:])
    if ins.op == "dynamic-update-slice":
        return 2.0 * _written(ins, shapes, comps) + sum(_bytes(shapes.get(o, ""))
                                                        for o in ops[2:])
    reads = (_param_reads(comps[ins.attr("calls")])
             if ins.op == "fusion" and ins.attr("calls") in comps else {})
    read = 0.0
    for i, o in enumerate(ops):
        part = reads.get(i)
        read += _bytes(shapes.get(o, "")) if part is None else part
    return read + _written(ins, shapes, comps)


def _walk(hlo: str):
    """Yields ``(instruction, times run, flops, dot flops, bytes moved, is a kernel)`` for every
    instruction that does work; returns the number of loops without a known trip count."""
    comps, entry = _parse(hlo)
    mult: dict[str, float] = {}
    sequential: set[str] = set()
    unknown = 0
    order = [(entry, 1.0, True)]
    while order:  # the call graph from the entry, multiplicities multiplied down
        name, times, seq = order.pop()
        if name not in comps:
            continue
        mult[name] = mult.get(name, 0.0) + times
        if seq:
            sequential.add(name)
        for ins in comps[name]:
            if ins.op == "while":
                m = _TRIP.search(ins.rest)
                trip = int(m.group(1)) if m else 1
                unknown += m is None
                for key, extra in (("body", trip), ("condition", trip + 1)):
                    callee = ins.attr(key)
                    if callee:
                        order.append((callee, times * extra, seq))
            elif ins.op == "conditional":
                for callee in re.findall(r"%([\w.\-]+)", (ins.attr("branch_computations")
                                                          or "")):
                    order.append((callee, times, seq))
                for key in ("true_computation", "false_computation"):
                    if ins.attr(key):
                        order.append((ins.attr(key), times, seq))
            elif ins.op == "call":
                callee = ins.attr("to_apply")
                if callee:
                    order.append((callee, times, seq))
            elif ins.op == "fusion":
                callee = ins.attr("calls")
                if callee:
                    order.append((callee, times, False))
    for name, times in mult.items():
        shapes = {ins.name: ins.shape for ins in comps[name]}
        for ins in comps[name]:
            f = d = 0.0
            if ins.op == "dot":
                f = d = _dot_flops(ins, shapes)
            elif ins.op == "convolution":
                f = d = _conv_flops(ins, shapes)
            elif ins.op in _ELEMENTWISE:
                f = float(_elems(ins.shape))
            elif ins.op in ("reduce", "reduce-window"):
                ops = ins.operands()
                f = float(_elems(shapes.get(ops[0], "")) if ops else 0)
            kernel = name in sequential and ins.op not in _FREE
            moved = _moved(ins, shapes, comps) if kernel else 0.0
            if f or moved or kernel:
                yield ins, times, f, d, moved, kernel
    return unknown


def hlo_cost(hlo: str) -> Cost:
    """:class:`Cost` of an optimized HLO module's text (``compiled.as_text()``)."""
    flops = dot = nbytes = kernels = 0.0
    parts = _partitions(hlo)
    walk = _walk(hlo)
    while True:
        try:
            _, times, f, d, moved, kernel = next(walk)
        except StopIteration as stop:
            unknown = stop.value
            break
        flops += times * f
        dot += times * d
        nbytes += times * moved
        kernels += times * kernel
    return Cost(flops=flops * parts, dot_flops=dot * parts, bytes=nbytes * parts,
                kernels=kernels, unknown_trip_counts=unknown, partitions=parts)


def _partitions(hlo: str) -> int:
    """Devices an SPMD-partitioned module runs on (its text is one device's program)."""
    head = hlo.split("\n", 1)[0]
    n = 1
    for key in ("num_partitions", "replica_count"):
        m = re.search(rf"\b{key}=(\d+)", head)
        n *= int(m.group(1)) if m else 1
    return n


def breakdown(hlo: str, top: int = 10) -> list[dict]:
    """Where a program's work goes: FLOPs, bytes and kernel launches per source operation (the
    ``op_name`` XLA keeps in each instruction's metadata, e.g. ``jit(apply)/while/body/dot``),
    the ``top`` largest by bytes and by FLOPs (a CPU stand-in for a device profile)."""
    acc: dict[str, list[float]] = {}
    walk = _walk(hlo)
    for ins, times, f, _, moved, kernel in walk:
        m = re.search(r'op_name="([^"]*)"', ins.rest)
        key = m.group(1) if m else f"<{ins.op}>"
        a = acc.setdefault(key, [0.0, 0.0, 0.0])
        a[0] += times * f
        a[1] += times * moved
        a[2] += times * kernel
    rows = [{"op": k, "flops": v[0], "bytes": v[1], "kernels": v[2]} for k, v in acc.items()]
    by_bytes = sorted(rows, key=lambda r: -r["bytes"])[:top]
    by_flops = sorted(rows, key=lambda r: -r["flops"])[:top]
    return by_bytes + [r for r in by_flops if r not in by_bytes]


def program_cost(compiled) -> Cost:
    """:class:`Cost` of a compiled program (``jax.stages.Compiled``), with XLA's own
    ``cost_analysis()`` FLOPs and bytes alongside (loop bodies counted once there)."""
    cost = hlo_cost(compiled.as_text())
    try:
        xla = compiled.cost_analysis()
        xla = xla[0] if isinstance(xla, (list, tuple)) else xla
        xf, xb = xla.get("flops"), xla.get("bytes accessed")
    except Exception:  # noqa: BLE001 - backends without a cost analysis
        xf = xb = None
    return dataclasses.replace(cost, xla_flops=None if xf is None else float(xf),
                               xla_bytes=None if xb is None else float(xb))


def count(fn, args, compiled) -> dict:
    """The work of one call of ``compiled`` (``fn.lower(*args).compile()``, ``fn`` jitted) as a
    dict (:class:`Cost` fields and ``counted_on``), on any backend.

    On the CPU: :func:`program_cost` of ``compiled``. On an accelerator, FLOPs and bytes come
    from a CPU lowering of the same function (the device's HLO calls library kernels, cuBLAS
    and cuDNN, whose work its text does not show; layouts and the convolution form were fixed
    when the program was built, so the CPU lowering computes the same thing) and the kernel
    count from the device's own HLO. Errors are returned as ``{"error": ...}``: a count is
    extra information next to a measured time, never a reason to lose it.
    """
    import jax

    try:
        here = program_cost(compiled)
        if jax.default_backend() == "cpu":
            return {**here.asdict(), "counted_on": "cpu"}
        cpu = jax.devices("cpu")[0]
        on_cpu = jax.tree.map(lambda a: jax.device_put(a, cpu) if isinstance(a, jax.Array)
                              else a, args)
        with jax.default_device(cpu):
            lowered = fn.lower(*on_cpu).compile()
        counted = dataclasses.replace(program_cost(lowered), kernels=here.kernels)
        return {**counted.asdict(), "counted_on": "cpu lowering (kernels: device HLO)"}
    except Exception as e:  # noqa: BLE001
        return {"error": f"{type(e).__name__}: {e}"[:300]}


def fusion_count(compiled) -> int:
    """Fusion computations in a compiled program's HLO (static: not multiplied by loops)."""
    return sum(1 for ins in _parse(compiled.as_text())[0].values() for i in ins
               if i.op == "fusion")


# ----------------------------------------------------------------------------- the roofline

BOUNDS = ("compute", "bandwidth", "launch")


def roofline(cost: Cost | dict, seconds: float, peak: dict) -> dict:
    """Achieved rates, fractions of ``peak`` and the bound of a program whose call takes
    ``seconds`` (module docstring, "Bound")."""
    c = cost.asdict() if isinstance(cost, Cost) else dict(cost)
    fp32 = float(peak["fp32_flops"])
    dot_peak = float(peak.get("tf32_flops") or fp32)
    floors = {
        "compute": c["dot_flops"] / dot_peak + (c["flops"] - c["dot_flops"]) / fp32,
        "bandwidth": c["bytes"] / float(peak["mem_bytes_s"]),
        "launch": (float(peak.get("dispatch_s") or 0.0)
                   + c["kernels"] * float(peak["launch_s"])),
    }
    bound = max(BOUNDS, key=lambda b: floors[b])
    return {"flops": c["flops"], "bytes": c["bytes"], "kernels": c["kernels"],
            "flop_s": c["flops"] / seconds, "bytes_s": c["bytes"] / seconds,
            "of_fp32_peak": c["flops"] / seconds / fp32,
            "of_mem_peak": c["bytes"] / seconds / float(peak["mem_bytes_s"]),
            "floors_s": floors, "bound": bound, "of_limit": floors[bound] / seconds,
            "peak": peak.get("name")}


def summary(r: dict) -> str:
    """A table cell: ``bandwidth-bound, 3.1% of limit``."""
    return f"{r['bound']}-bound, {100 * r['of_limit']:.3g}% of limit"


__all__ = ["PEAKS", "BOUNDS", "Cost", "measured_cpu_peaks", "peaks", "hlo_cost", "breakdown",
           "program_cost", "count", "fusion_count", "roofline", "summary"]
