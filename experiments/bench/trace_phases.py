"""Where a compiled round's device time goes: a profiler trace split by the round's name scopes.

  JAXFL_BENCH_TRACE=DIR python -m experiments.bench.bench_torch ...   # the jaxfl sides trace
  python -m experiments.bench.trace_phases DIR/uldp_avg [--out FILE.json]   # the split

:func:`record` (called by ``bench_torch``'s jaxfl side after its timed rounds when
``JAXFL_BENCH_TRACE`` is set) traces a few more rounds with :func:`jax.profiler.trace` (a Perfetto
trace) and writes the compiled program's HLO text beside it. :func:`analyze` reads both: each
device event (a kernel, a copy, a cuDNN or cuBLAS call) names the HLO instruction it ran
(``hlo_op``); the instruction's metadata names the JAX name scopes it was traced in. A phase is the
first scope of :data:`PHASES` found in that name, so the split needs no knowledge of the
kernels. Events on the host (launches, waits) are not device time and are left out; when the trace
has no device process (a CPU run), the XLA:CPU thunk events are used instead.
"""

from __future__ import annotations

import argparse
import collections
import gzip
import json
import re
import time
from pathlib import Path

#: (phase, scope substring), the first match wins; the scopes are set in the algorithms
#: (``jaxfl.algorithms.uldp.LOCAL_SCOPE``, ``UPDATE_SCOPE``; ``jaxfl.precision`` scopes).
PHASES = (("noise", "dp_noise"), ("clip, weight, silo sums", "dp_sensitivity"),
          ("local training", "uldp_local_training"), ("server update", "uldp_server_update"))
OTHER = "other (gathers, loop state, copies)"
#: Host events of control-flow instructions span their bodies' events (XLA:CPU): left out.
CONTROL_FLOW = ("while", "conditional", "call")


def record(out_dir: str, kind: str, compiled, run_round, rounds: int = 2) -> dict:
    """Traces ``rounds`` calls of ``run_round()`` into ``out_dir/kind`` and writes the HLO
    text of ``compiled``; returns where (and the traced wall seconds)."""
    import jax

    d = Path(out_dir) / kind
    d.mkdir(parents=True, exist_ok=True)
    (d / "program.hlo.txt.gz").write_bytes(gzip.compress(compiled.as_text().encode()))
    t0 = time.perf_counter()
    with jax.profiler.trace(str(d / "trace"), create_perfetto_trace=True):
        for _ in range(rounds):
            run_round()
    got = {"dir": str(d), "rounds": rounds, "wall_s": time.perf_counter() - t0}
    (d / "record.json").write_text(json.dumps(got) + "\n")
    return got


_INSTR = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=.*?metadata=\{[^}]*op_name=\"([^\"]*)\"",
                    re.M)


def op_names(hlo_text: str) -> dict[str, str]:
    """``{instruction: op_name}`` of every instruction with metadata in an HLO module's text
    (a fusion's name carries the scopes of its root). Instructions without metadata inherit
    nothing: they count as :data:`OTHER`."""
    return {m.group(1): m.group(2) for m in _INSTR.finditer(hlo_text)}


def phase_of(op_name: str | None) -> str:
    for phase, scope in PHASES:
        if op_name and scope in op_name:
            return phase
    return OTHER


def _events(trace: dict) -> tuple[list[dict], str]:
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    names = {e["pid"]: e.get("args", {}).get("name", "") for e in events
             if e.get("ph") == "M" and e.get("name") == "process_name"}
    device = {p for p, n in names.items() if "/device:" in n and "CPU" not in n.upper()}
    timed = [e for e in events if e.get("ph") == "X" and "dur" in e
             and "hlo_op" in e.get("args", {})
             and not e["args"]["hlo_op"].startswith(CONTROL_FLOW)]
    on_device = [e for e in timed if e["pid"] in device]
    return (on_device, "device") if on_device else (timed, "host (no device process)")


def analyze(trace_dir: str | Path) -> dict:
    """The split of one traced program (:func:`record`'s folder): seconds, share and event
    count per phase, per round, with the largest instructions of each phase."""
    d = Path(trace_dir)
    ops = op_names(gzip.decompress((d / "program.hlo.txt.gz").read_bytes()).decode())
    path = sorted(d.glob("trace/**/perfetto_trace.json.gz"))[-1]
    events, where = _events(json.loads(gzip.decompress(path.read_bytes())))
    meta = json.loads((d / "record.json").read_text()) if (d / "record.json").exists() else {}
    rounds = int(meta.get("rounds", 2))
    per = collections.defaultdict(lambda: [0.0, 0])
    top = collections.defaultdict(collections.Counter)
    for e in events:
        op = e["args"]["hlo_op"]
        phase = phase_of(ops.get(op))
        per[phase][0] += e["dur"] * 1e-6 / rounds
        per[phase][1] += 1
        top[phase][op] += e["dur"] * 1e-6 / rounds
    total = sum(v[0] for v in per.values())
    rows = [{"phase": p, "seconds_per_round": s, "share": s / total if total else 0.0,
             "events_per_round": n / rounds,
             "largest": [[op, s_] for op, s_ in top[p].most_common(3)]}
            for p, (s, n) in sorted(per.items(), key=lambda kv: -kv[1][0])]
    return {"trace": str(path), "events_from": where, "rounds": rounds,
            "device_seconds_per_round": total, "instructions_with_scope": len(ops),
            "phases": rows}


def to_markdown(result: dict) -> str:
    lines = [f"Device time per round {result['device_seconds_per_round'] * 1e3:.1f} ms "
             f"({result['events_from']} events, {result['rounds']} traced rounds)", "",
             "| phase | ms per round | share | events per round | largest instructions (ms) |",
             "|---|---|---|---|---|"]
    for r in result["phases"]:
        big = ", ".join(f"`{op}` {s * 1e3:.2f}" for op, s in r["largest"])
        lines.append(f"| {r['phase']} | {r['seconds_per_round'] * 1e3:.2f} | "
                     f"{100 * r['share']:.1f}% | {r['events_per_round']:.0f} | {big} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace_dir", help="a folder record() wrote (DIR/<kind>)")
    ap.add_argument("--out", help="write the split as JSON here")
    a = ap.parse_args(argv)
    result = analyze(a.trace_dir)
    if a.out:
        Path(a.out).write_text(json.dumps(result, indent=1) + "\n")
    print(to_markdown(result), end="")
    return result


if __name__ == "__main__":
    main()
