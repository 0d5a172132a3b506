#!/usr/bin/env bash
# The GPU measurements of issues 36, 37 and 39, one part per call of a lease (docs/scale.md, "On
# a GPU"), from the repository root of a CUDA machine with .whl/ and .gpu_data/ carried:
#
#   OUT=/some/dir bash experiments/gpu_session.sh A   # benchmarks alone on the machine (~8 min)
#   OUT=/some/dir bash experiments/gpu_session.sh B   # the whole suite (gpu_check.sh step 3)
#   OUT=/some/dir bash experiments/gpu_session.sh C   # ULDP-FL Fig. 5 (a) ULDP-SGD, five seeds
#
# A: what the H200 run of 2026-11-28 left: bench_sweep's logreg and ULDP heart-disease rows at
#    full size (K = 1, 8, 64, 256), the sweep rows with JAXFL_DETERMINISTIC=0, ULDP-AVG 1000
#    users with JAXFL_CONV_IMPL=patches (traced: 58% of the xla round was one grouped cuDNN
#    weight-gradient convolution), and the DP-FedAvg MLP and gossip side-by-side rows.
# B: all of tests/ but the notebooks, 14 workers.
# C: five ULDP-SGD runs of Fig. 5 (a) (MNIST, 100 users, 5 silos, T = 200, all records).
# Carry .gpu_data/mnist and .gpu_data/heart_disease (bench_sweep's ULDP workload reads it).
# Every step has its own time limit and packs its results into one file under $OUT as soon as
# it ends (the device tool brings back at most 8 files), so a cut run keeps what finished.
set -uo pipefail
PART=${1:?A or B}
PY=${PYTHON:-python3}
R=${OUT:?set OUT}
S=/tmp/gpu_session
mkdir -p "$S" "$R"
exec > >(tee -a "$R/console_$PART.txt") 2>&1
t0=$(date +%s)
say() { echo "=== [$PART +$(( $(date +%s) - t0 ))s] $*"; }
pack() { tar czf "$R/$1.tgz" --exclude='*.xplane.pb' -C "$S" "$1" 2>/dev/null; say "packed $1"; }

if [ ! -d /tmp/site/jax_privacy ] && compgen -G ".whl/*.whl" >/dev/null; then
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site .whl/*.whl || say "pip install of .whl failed"
fi
export PYTHONPATH="/tmp/site:$PWD" JAXFL_DATA_DIR="$PWD/.gpu_data" PYTHONUNBUFFERED=1
say "versions"; nvidia-smi -L; "$PY" -c "import jax, jaxlib; print(jax.__version__, jax.devices())"

if [ "$PART" = A ]; then  # what the H200 run of 2026-11-28 left (docs/scale.md)
    say "bench_sweep full size: the two workloads not reached on 2026-11-28"
    timeout -s INT --kill-after=10 "${SWEEP_S:-150}" "$PY" -m experiments.bench.bench_sweep \
        --only dp_fedavg_logreg,uldp_avg_heart --ks 1,8,64,256 --repeats 2 --min-time 0.3 \
        --out "$S/sweep"
    say "bench_sweep rc $?"; pack sweep
    say "bench_sweep, deterministic ops off (the default is chosen from this against the above)"
    JAXFL_DETERMINISTIC=0 timeout -s INT --kill-after=10 "${NODET_S:-120}" "$PY" \
        -m experiments.bench.bench_sweep --only dp_fedavg_logreg,uldp_avg_heart,gossip,dp_fedavg_mlp \
        --ks 1,64 --repeats 2 --min-time 0.3 --out "$S/sweep_nodet"
    say "bench_sweep rc $?"; pack sweep_nodet
    say "bench_torch ULDP-AVG 1000 users full size with patches x kernel convolutions, traced"
    JAXFL_CONV_IMPL=patches JAXFL_BENCH_TRACE="$S/torch_patches/trace" timeout -s INT \
        --kill-after=10 "${ULDP_S:-150}" "$PY" -m experiments.bench.bench_torch \
        --only uldp_avg_1000 --variants vmap --pairs 1 --torch-device cuda --torch-python "$PY" \
        --timeout 120 --out "$S/torch_patches"
    say "bench_torch rc $?"
    "$PY" -m experiments.bench.trace_phases "$S/torch_patches/trace/uldp_avg" \
        --out "$S/torch_patches/trace_split.json"
    find "$S/torch_patches/trace" -name '*.trace.json.gz' -delete
    pack torch_patches
    say "bench_torch DP-FedAvg MLP and gossip rows, full size"
    timeout -s INT --kill-after=10 "${ROWS_S:-80}" "$PY" -m experiments.bench.bench_torch \
        --only dp_fedavg_mlp,gossip_logreg --variants vmap --pairs 1 --torch-device cuda \
        --torch-python "$PY" --timeout 60 --out "$S/torch_rows"
    say "bench_torch rc $?"; pack torch_rows
elif [ "$PART" = B ]; then
    say "the whole suite (gpu_check.sh step 3), alone on the machine"
    mkdir -p "$S/suite"
    XLA_PYTHON_CLIENT_PREALLOCATE=false timeout -s INT --kill-after=20 "${TEST_S:-400}" \
        "$PY" -m pytest -p no:benchmark -p no:cacheprovider -q --tb=short -rfEs \
        --durations=15 --junitxml "$S/suite/junit.xml" -n "${WORKERS:-14}" --timeout 200 \
        tests --ignore=tests/notebooks > "$S/suite/pytest.log" 2>&1
    say "pytest rc $?"; tail -n 30 "$S/suite/pytest.log"; pack suite
else
    say "ULDP-FL Fig. 5 (a) ULDP-SGD, five seeds, one process each"
    for s in 0 1 2 3 4; do  # each seed packs itself when it ends (or is stopped)
        (XLA_PYTHON_CLIENT_PREALLOCATE=false timeout -s INT --kill-after=10 "${FIG5_S:-230}" \
            "$PY" -m experiments.sweep \
            --config "experiments/configs/uldp/fig5_mnist.py:method=ULDP-SGD,seeds=$s" \
            --where method=ULDP-SGD --where num_users=100 --where distribution=uniform \
            --workdir "$S/fig5_seed$s" > "$S/fig5_seed$s.log" 2>&1
         mv "$S/fig5_seed$s.log" "$S/fig5_seed$s/" 2>/dev/null; pack "fig5_seed$s") &
    done
    wait; say "fig5 done"
fi
say "end"
