#!/usr/bin/env bash
# The GPU measurements of issues 36, 37 and 39, one part per call of a lease (docs/scale.md, "On
# a GPU"), from the repository root of a CUDA machine with .whl/ and .gpu_data/ carried:
#
#   OUT=/some/dir bash experiments/gpu_session.sh A   # benchmarks alone on the machine (~7 min)
#   OUT=/some/dir bash experiments/gpu_session.sh D   # more benchmarks alone (~6 min)
#   OUT=/some/dir bash experiments/gpu_session.sh B   # the whole suite (gpu_check.sh step 3)
#   OUT=/some/dir bash experiments/gpu_session.sh C   # ULDP-FL Fig. 5 (a) ULDP-SGD, five seeds
#   OUT=/some/dir bash experiments/gpu_session.sh CB  # parts run in the order given, one call
#
# A: what the H200 runs of 2026-11-28 left: the DP-SGD rows against Opacus under the GPU's new
#    patches x kernel convolution and under XLA's (the default moved on one ULDP measurement),
#    then bench_sweep's DP-FedAvg rows after the scatter-free loss, deterministic ops on and off.
# D: both ULDP rows at full size with the compile from the cache, and the gossip row.
# B: all of tests/ but the notebooks, 14 workers.
# C: five ULDP-SGD runs of Fig. 5 (a) (MNIST, 100 users, 5 silos, T = 200, all records;
#    about 1 s a round with five side by side and 60-80 s of start-up on an H200).
# Carry .gpu_data/mnist and .gpu_data/heart_disease (bench_sweep's ULDP workload reads it).
# Every step has its own time limit and packs its results into one file under $OUT as soon as
# it ends (the device tool brings back at most 8 files), so a cut run keeps what finished.
set -uo pipefail
PART=${1:?A, B, C or D (or several, e.g. CB)}
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

for P in $(echo "$PART" | grep -o .); do
if [ "$P" = A ]; then  # what the H200 runs of 2026-11-28 left (docs/scale.md, session 16)
    say "bench_torch DP-SGD rows under the GPU's patches x kernel default, then XLA's convolution"
    for impl in auto xla; do
        JAXFL_CONV_IMPL=$impl timeout -s INT --kill-after=10 "${DPSGD_S:-90}" "$PY" \
            -m experiments.bench.bench_torch --only dp_sgd_fedavg_cnn,dp_sgd_uldp_cnn \
            --variants vmap,opacus_ghost --pairs 1 --torch-device cuda --torch-python "$PY" \
            --timeout 60 --out "$S/torch_dpsgd_$impl"
        say "bench_torch rc $?"; pack "torch_dpsgd_$impl"
    done
    say "bench_sweep DP-FedAvg rows after the scatter-free loss, deterministic ops on, then off"
    for det in 1 0; do
        JAXFL_DETERMINISTIC=$det timeout -s INT --kill-after=10 "${SWEEP_S:-120}" "$PY" \
            -m experiments.bench.bench_sweep --only dp_fedavg_logreg,dp_fedavg_mlp --ks 1,8,64 \
            --repeats 2 --min-time 0.3 --out "$S/sweep_det$det"
        say "bench_sweep rc $?"; pack "sweep_det$det"
    done
elif [ "$P" = D ]; then
    say "bench_torch ULDP-AVG 100 and 1000 users full size, two pairs (the second from the cache)"
    timeout -s INT --kill-after=10 "${ULDP_S:-240}" "$PY" -m experiments.bench.bench_torch \
        --only uldp_avg_1000,uldp_avg_100 --variants vmap --pairs 2 --torch-device cuda \
        --torch-python "$PY" --timeout 150 --out "$S/torch_uldp"
    say "bench_torch rc $?"; pack torch_uldp
    say "bench_torch gossip row, full size"
    timeout -s INT --kill-after=10 "${ROWS_S:-100}" "$PY" -m experiments.bench.bench_torch \
        --only gossip_logreg --variants vmap --pairs 1 --torch-device cuda \
        --torch-python "$PY" --timeout 90 --out "$S/torch_gossip"
    say "bench_torch rc $?"; pack torch_gossip
elif [ "$P" = B ]; then
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
        (XLA_PYTHON_CLIENT_PREALLOCATE=false timeout -s INT --kill-after=10 "${FIG5_S:-330}" \
            "$PY" -m experiments.sweep \
            --config "experiments/configs/uldp/fig5_mnist.py:method=ULDP-SGD,seeds=$s" \
            --where method=ULDP-SGD --where num_users=100 --where distribution=uniform \
            --workdir "$S/fig5_seed$s" > "$S/fig5_seed$s.log" 2>&1
         mv "$S/fig5_seed$s.log" "$S/fig5_seed$s/" 2>/dev/null; pack "fig5_seed$s") &
    done
    wait; say "fig5 done"
fi
done
say "end"
