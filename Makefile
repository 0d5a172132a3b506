# jaxfl developer entry points. Every target creates the virtual environment on first use.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
JAXFL_DATA_DIR ?= $(abspath ../shared/data)
export JAXFL_DATA_DIR
WORKERS ?= 2
# Numerical modules whose tests run a second time in float64 (tolerances follow the dtype).
# Not tests/accounting: accounting is float64 NumPy and never imports JAX (tests/layering_test.py),
# so JAX_ENABLE_X64 cannot change it.
X64_TESTS := tests/sensitivity tests/clipping_test.py tests/noise_test.py \
             tests/algorithms/fedavg_test.py

.PHONY: install test test-x64 test-fast lint fmt demo docs bench bench-torch notebooks \
        notebooks-render audit \
        clean gpu-check \
        reproduce-dp-ogl reproduce-gossip reproduce-uldp reproduce-subject-dp reproduce-lightdp \
        reproduction-pages

# Exact pins (jax, flax, optax, dp-accounting, sphinx) come from constraints/ci.txt; setup.cfg
# only states the supported ranges.
$(STAMP): setup.cfg pyproject.toml constraints/ci.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c constraints/ci.txt -e ".[test,crypto,notebooks,lint,docs,ftrl]"
	touch $(STAMP)

install: $(STAMP)

# The suite's time is mostly XLA compiling small programs (tests/clipping_test.py: 38 of 51 s
# are backend_compile at XLA's default level 3, 30 of 42 s at level 1), so `make test` compiles
# with LLVM at level 1. Not level 0 (23 of 35 s): there LightDP's pair terms drawn in a loop
# (client_mask) and in a vmap (pair_masks) stop being bit-identical, which notebook 06 checks.
# HLO passes, fusion and float semantics (no fast math) are a default run's; TEST_XLA_FLAGS=
# runs the suite at the default level.
TEST_XLA_FLAGS ?= --xla_backend_optimization_level=1
# Each test process (and each executed notebook's kernel) also keeps a persistent compilation
# cache in a fresh temporary directory, removed at exit (tests/conftest.py): a program compiled
# again under a new function object is loaded. JAXFL_TEST_COMPILATION_CACHE=0 turns it off.

test: $(STAMP)
	XLA_FLAGS="$(XLA_FLAGS) $(TEST_XLA_FLAGS)" $(PY) -m pytest -n $(WORKERS) --dist loadfile -q --durations=30 --doctest-modules tests jaxfl
	XLA_FLAGS="$(XLA_FLAGS) $(TEST_XLA_FLAGS)" JAX_ENABLE_X64=1 $(PY) -m pytest -n $(WORKERS) --dist loadfile -q -m "not slow" $(X64_TESTS)
	$(MAKE) --no-print-directory docs

test-x64: $(STAMP)
	XLA_FLAGS="$(XLA_FLAGS) $(TEST_XLA_FLAGS)" JAX_ENABLE_X64=1 $(PY) -m pytest -n $(WORKERS) --dist loadfile -q -m "not slow" $(X64_TESTS)

test-fast: $(STAMP)
	XLA_FLAGS="$(XLA_FLAGS) $(TEST_XLA_FLAGS)" $(PY) -m pytest -n $(WORKERS) --dist loadfile -q -m "not slow" tests

lint: $(STAMP)
	$(VENV)/bin/ruff check jaxfl experiments tests notebooks

fmt: $(STAMP)
	$(VENV)/bin/ruff format jaxfl experiments tests

demo: $(STAMP)
	$(PY) -m experiments.demo --workdir runs/demo

# API reference (Sphinx: autodoc + napoleon + myst-nb, the notebooks shown from their committed
# outputs, never executed) into docs/_build/html; warnings (a broken link too) are errors.
docs: $(STAMP)
	$(PY) -m sphinx -W --keep-going -q -b html docs/api docs/_build/html
	@echo "open docs/_build/html/index.html"

bench: $(STAMP)
	$(PY) -m experiments.bench --out bench_results

# jaxfl vs PyTorch side by side (bench_results/bench_torch.md). Creates .venv-torch (torch==2.13.0
# and opacus, pinned in experiments/bench/torch_env.py; never a jaxfl dependency) on first use.
# BENCH_TORCH_ARGS=--quick for small sizes.
bench-torch: $(STAMP)
	$(PY) -m experiments.bench.bench_torch --out bench_results $(BENCH_TORCH_ARGS)

# On a CUDA machine, from the repository root, with no venv (docs/scale.md, "On a GPU"): all of
# tests/ but the notebooks (missing optional extras skip with their reason) and the side-by-side
# table (PyTorch on cuda), about 10 minutes on 16 cores (GPU_CHECK_WORKERS=14).
gpu-check:
	bash experiments/gpu_check.sh

# Executed copies with outputs into runs/notebooks/ (the repository is not touched).
notebooks: $(STAMP)
	$(PY) -m experiments.notebooks --scale $(or $(SCALE),small) --out runs/notebooks

# Executes each notebook in its small setting on the CPU and writes it back into notebooks/ with
# its outputs (figures, printed numbers), which the API site shows; NB="01 06" for a subset.
# tests/notebooks/rendered_test.py fails when a notebook's code changed after its outputs.
notebooks-render: $(STAMP)
	$(PY) -m experiments.notebooks --render $(NB)

audit: $(STAMP)
	$(PY) -m experiments.audit --out docs/audit.md

reproduce-dp-ogl: $(STAMP)
	$(PY) -m experiments.reproduce dp_ogl --figure fig4 --figure fig3 --scale cpu --workdir runs/reproduce/dp_ogl --figures docs/figures/dp_ogl

reproduce-gossip: $(STAMP)
	$(PY) -m experiments.reproduce gossip --scale cpu --workdir runs/reproduce/gossip --figures docs/figures/gossip

reproduce-uldp: $(STAMP)
	$(PY) -m experiments.reproduce uldp --figure privacy --scale cpu --workdir runs/reproduce/uldp --figures docs/figures/uldp

reproduce-subject-dp: $(STAMP)
	$(PY) -m experiments.reproduce subject_dp --scale cpu --workdir runs/reproduce/subject_dp

reproduce-lightdp: $(STAMP)
	$(PY) -m experiments.reproduce lightdp --scale cpu --workdir runs/reproduce/lightdp --figures docs/figures/lightdp

# docs/reproduction.md and the data-driven parts of the per-paper pages, from the committed data
reproduction-pages: $(STAMP)
	$(PY) -m experiments.reproduce.pages

clean:
	rm -rf runs bench_results .pytest_cache docs/_build
