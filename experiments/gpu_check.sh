#!/usr/bin/env bash
# The GPU check of jaxfl, from the repository root on a CUDA machine (docs/scale.md, "On a GPU"):
#
#   bash experiments/gpu_check.sh            # or: make gpu-check
#
# 1. installs carried wheels (.whl/*.whl -> /tmp/site, no index, no dependencies) when .whl/
#    exists, and puts /tmp/site and the repository on PYTHONPATH;
# 2. prints the versions and `nvidia-smi -L`;
# 3. runs all of tests/ but the notebooks (pytest-xdist, XLA_PYTHON_CLIENT_PREALLOCATE=false, a
#    per-test timeout; optional extras that are missing skip with their reason), the log
#    tee'd to $OUT/gpu_check_pytest.log when OUT is set;
# 4. runs the side-by-side table (experiments.bench.bench_torch --quick, PyTorch on cuda with
#    the machine's python3) into $OUT (else bench_results/gpu), also after test failures;
# 5. runs the sweep-throughput table (experiments.bench.bench_sweep) when GPU_CHECK_SWEEP_S > 0,
#    with GPU_CHECK_SWEEP_ARGS (default --quick);
# 6. ends with the pytest summary line and the tables.
# Budget: about 10 minutes in all on 16 cores (GPU_CHECK_TEST_S for the tests, about 6
# minutes with GPU_CHECK_WORKERS=14; GPU_CHECK_BENCH_S for the table). Real MNIST comes from $PWD/.gpu_data (when that folder exists) or $JAXFL_DATA_DIR.
# Exit status: 0 when every step passed; else the number of the first failed step.
set -uo pipefail

PY=${PYTHON:-python3}
TEST_S=${GPU_CHECK_TEST_S:-480}      # all tests together
PER_TEST_S=${GPU_CHECK_PER_TEST_S:-240}
BENCH_S=${GPU_CHECK_BENCH_S:-200}    # the whole table
SIDE_S=${GPU_CHECK_SIDE_S:-100}      # one side run of one row
SWEEP_S=${GPU_CHECK_SWEEP_S:-0}      # the sweep-throughput table (0: not run)
WORKERS=${GPU_CHECK_WORKERS:-12}
TORCH_DEVICE=${GPU_CHECK_TORCH_DEVICE:-cuda}   # cpu: a dry run of the script without a GPU
RESULTS=${OUT:-bench_results/gpu}
mkdir -p "$RESULTS"
LOG="$RESULTS/gpu_check_pytest.log"
BENCH_LOG="$RESULTS/gpu_check_bench.log"
SWEEP_LOG="$RESULTS/gpu_check_sweep.log"
JUNIT="$RESULTS/gpu_check_junit.xml"  # every test's outcome and message, also of a cut run
failed=0
fail() {  # fail STEP MESSAGE: remember the first failed step, say so loudly
    echo "gpu_check: STEP $1 FAILED: $2" >&2
    [ "$failed" -eq 0 ] && failed=$1
}
step() { echo; echo "=== gpu_check step $1: $2 ($(date -u +%H:%M:%S))"; }
check_rc() {  # check_rc STEP RC WHAT LIMIT_VAR LIMIT_S LOG: a timed-out or failed step
    if [ "$2" -eq 124 ] || [ "$2" -eq 137 ]; then
        fail "$1" "$3 ran past $5 s ($4)"
    elif [ "$2" -ne 0 ]; then
        fail "$1" "$3 exit status $2 (log: $6)"
    fi
}

if [ ! -f experiments/gpu_check.sh ]; then
    echo "gpu_check: run from the repository root (bash experiments/gpu_check.sh)" >&2
    exit 1
fi

step 1 "carried wheels"
SITE=""
if [ -d .whl ] && compgen -G ".whl/*.whl" >/dev/null; then
    if "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
            --target /tmp/site .whl/*.whl; then
        SITE=/tmp/site
        echo "installed $(ls .whl/*.whl | wc -l) wheel(s) into /tmp/site"
    else
        fail 1 "pip install of .whl/*.whl into /tmp/site"
    fi
else
    echo "no .whl/ folder: nothing to install"
fi
export PYTHONPATH="${SITE:+$SITE:}$PWD${PYTHONPATH:+:$PYTHONPATH}"
if [ -d .gpu_data ]; then
    export JAXFL_DATA_DIR="$PWD/.gpu_data"
fi
echo "PYTHONPATH=$PYTHONPATH"
echo "JAXFL_DATA_DIR=${JAXFL_DATA_DIR:-<unset>}"

step 2 "versions and devices"
nvidia-smi -L || fail 2 "nvidia-smi -L"
"$PY" - <<'EOF' || fail 2 "the versions (jax / jaxfl did not import)"
import importlib, platform
print("python", platform.python_version())
for name in ("jax", "jaxlib", "flax", "optax", "numpy", "scipy", "dp_accounting", "torch",
             "opacus", "pytest"):
    try:
        print(f"{name:14s}", getattr(importlib.import_module(name), "__version__", "?"))
    except Exception as e:  # noqa: BLE001
        print(f"{name:14s} MISSING ({type(e).__name__}: {e})")
import jax
print("jax backend", jax.default_backend(), [d.device_kind for d in jax.devices()])
import jaxfl  # noqa: F401
try:
    import torch
    print("torch cuda", torch.cuda.is_available(),
          torch.cuda.get_device_name(0) if torch.cuda.is_available() else "")
except Exception:  # noqa: BLE001
    pass
EOF

step 3 "the whole test suite, notebooks aside (at most ${TEST_S} s)"
# All of tests/ (issue 36): optional extras that are not installed (phe of the crypto extra,
# jax-privacy, opacus) skip with the reason (pytest.importorskip), so the run ends with 0
# failures; -rs lists every skip and its reason. The notebooks stay out (minutes of kernels).
TESTS=(tests --ignore=tests/notebooks)
echo "tests: ${TESTS[*]}"
OPTS=()  # xdist and pytest-timeout when installed (both are on the reference GPU image)
"$PY" -c "import xdist" 2>/dev/null && OPTS+=(-n "$WORKERS") || echo "no pytest-xdist: one worker"
"$PY" -c "import pytest_timeout" 2>/dev/null && OPTS+=(--timeout "$PER_TEST_S") \
    || echo "no pytest-timeout: no per-test limit"
# SIGINT at the limit: pytest then still prints the failures so far and its summary line; -v
# names every test as it finishes, so a run cut short says which tests failed.
XLA_PYTHON_CLIENT_PREALLOCATE=false timeout -s INT --kill-after=30 "$TEST_S" \
    "$PY" -m pytest -p no:benchmark -p no:cacheprovider -v --tb=short -rfEs --durations=15 \
    --junitxml "$JUNIT" ${OPTS[@]+"${OPTS[@]}"} \
    "${TESTS[@]}" 2>&1 \
    | tee "$LOG"
check_rc 3 "${PIPESTATUS[0]}" "the tests (pytest)" GPU_CHECK_TEST_S "$TEST_S" "$LOG"

step 4 "side-by-side table (at most ${BENCH_S} s)"
timeout --kill-after=10 "$BENCH_S" "$PY" -m experiments.bench.bench_torch --quick \
    --torch-device "$TORCH_DEVICE" --torch-python "$PY" --timeout "$SIDE_S" --out "$RESULTS" \
    ${GPU_CHECK_BENCH_ARGS:-} 2>&1 | tee "$BENCH_LOG"
check_rc 4 "${PIPESTATUS[0]}" "the table (bench_torch; rows finished so far: \
$RESULTS/bench_torch.md)" GPU_CHECK_BENCH_S "$BENCH_S" "$BENCH_LOG"

if [ "$SWEEP_S" -gt 0 ]; then
    step 5 "sweep-throughput table (at most ${SWEEP_S} s)"
    timeout --kill-after=10 "$SWEEP_S" "$PY" -m experiments.bench.bench_sweep \
        ${GPU_CHECK_SWEEP_ARGS:---quick} --out "$RESULTS" 2>&1 | tee "$SWEEP_LOG"
    check_rc 5 "${PIPESTATUS[0]}" "the sweep table (bench_sweep; workloads finished so far: \
$RESULTS/sweep_throughput.md)" GPU_CHECK_SWEEP_S "$SWEEP_S" "$SWEEP_LOG"
fi

step 6 "summary"
summary=$(grep -E '(passed|failed|error|no tests ran)' "$LOG" | tail -n 1)
echo "pytest: ${summary:-no summary line (stopped early? see $LOG)}"
if [ -f "$RESULTS/bench_torch.md" ]; then
    cat "$RESULTS/bench_torch.md"
else
    echo "no table was written ($RESULTS/bench_torch.md)"
fi
[ -f "$RESULTS/sweep_throughput.md" ] && cat "$RESULTS/sweep_throughput.md"
if [ "$failed" -ne 0 ]; then
    echo "gpu_check: FAILED (first failed step: $failed)" >&2
else
    echo "gpu_check: all steps passed"
fi
exit "$failed"
