"""The jaxfl-vs-PyTorch benchmark driver (experiments/bench/bench_torch.py): its table logic on
fake side outputs, the run order, and that the PyTorch side never imports jaxfl. No torch
needed, except for the slow end-to-end test (skipped when the torch venv is absent)."""

import ast
import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest

from experiments import host_devices
from experiments.bench import bench_torch, torch_env

ROW = bench_torch.Row("r", "uldp_avg", "A row", "round", {"num_users": 3}, 1, "pairs", ("loop",))


def _side(seconds, loss=2.0, se=0.01, **kw):
    return {"seconds": seconds, "loss": loss, "loss_se": se, "compile_s": 5.0, "size": 10,
            "jax": "0.x", "jaxlib": "0.x", "torch": "2.13.0", "opacus": "1.6.0", "threads": 2,
            "interop_threads": 1, **kw}


def test_alternation_is_a_b_a_b():
    assert bench_torch.alternation(3) == [(0, "jaxfl"), (0, "torch"), (1, "jaxfl"),
                                          (1, "torch"), (2, "jaxfl"), (2, "torch")]


def test_summarize_medians_and_pair_ratios():
    outs = [("jaxfl", _side(2.0)), ("torch", _side(8.0)),   # ratio 4
            ("jaxfl", _side(4.0)), ("torch", _side(4.0)),   # ratio 1
            ("jaxfl", _side(1.0)), ("torch", _side(3.0))]   # ratio 3
    r = bench_torch.summarize(ROW, outs)
    assert r["jaxfl_s"] == 2.0 and r["torch_s"] == 4.0
    assert r["ratios"] == [4.0, 1.0, 3.0]
    assert r["ratio"] == 3.0 and (r["ratio_min"], r["ratio_max"]) == (1.0, 4.0)
    # The median of pair ratios, not the ratio of medians (4 / 2 = 2 here).
    assert r["ratio"] != r["torch_s"] / r["jaxfl_s"]
    assert r["pairs"] == 3 and r["errors"] == []
    assert r["torch"] == "2.13.0" and r["opacus"] == "1.6.0" and r["size"] == 10


def test_summarize_drops_failed_pairs_and_keeps_the_error():
    outs = [("jaxfl", _side(2.0)), ("torch", {"error": "boom"}),
            ("jaxfl", _side(3.0)), ("torch", _side(6.0))]
    r = bench_torch.summarize(ROW, outs)
    assert r["ratios"] == [2.0] and r["errors"] == ["torch: boom"]
    assert r["jaxfl_s"] == 2.5
    only_errors = bench_torch.summarize(ROW, [("jaxfl", {"error": "x"}), ("torch", {"error": "y"})])
    assert "ratio" not in only_errors and len(only_errors["errors"]) == 2


def test_loss_check_uses_the_standard_error():
    near = bench_torch.loss_check(_side(1, loss=2.30, se=None), _side(1, loss=2.33, se=0.01))
    assert near["agree"] and np.isclose(near["tolerance"], 4 * np.sqrt(2) * 0.01)
    far = bench_torch.loss_check(_side(1, loss=2.0, se=None), _side(1, loss=2.3, se=0.01))
    assert not far["agree"]
    # Deterministic losses (se 0): only float rounding (0.5%) is tolerated.
    exact = bench_torch.loss_check(_side(1, loss=2.3026, se=None), _side(1, loss=2.3020, se=0.0))
    assert exact["agree"] and exact["tolerance"] == pytest.approx(0.005 * 2.3020)


def test_markdown_table_has_one_line_per_row():
    r = bench_torch.summarize(ROW, [("jaxfl", _side(2.0)), ("torch", _side(8.0))])
    r.update(load_before=1.0, load_after=1.5)
    info = {"machine": "m", "processor": "p", "cpus": 2, "python": "3.11", "threads": 2,
            "xla_flags": "f", "pairs": 1, "quick": True, "date": "today"}
    md = bench_torch.to_markdown([r, dict(r, title="Other row")], info)
    lines = [line for line in md.splitlines() if line.startswith("| A row")]
    assert len(lines) == 1 and "**4.00x**" in lines[0] and "1.00 -> 1.50" in lines[0]
    assert "5 / 1.25 pairs/s" in lines[0] and "ok" in lines[0]
    assert "| Other row" in md


def test_rows_quick_and_full_have_the_same_workloads():
    quick, full = bench_torch.rows(True), bench_torch.rows(False)
    assert [r.name for r in quick] == [r.name for r in full]
    assert {r.kind for r in full} == {"uldp_avg", "dp_sgd", "dp_fedavg", "gossip"}
    uldp = {r.params["num_users"] for r in full if r.kind == "uldp_avg"}
    assert uldp == {100, 1000}
    assert all(r.params["max_records"] is None for r in full if r.kind == "uldp_avg")


def test_unknown_row_is_rejected_before_work(tmp_path):
    with pytest.raises(SystemExit, match="Unknown rows"):
        bench_torch.main(["--quick", "--only", "nope", "--out", str(tmp_path)])


def test_thread_env_sets_both_sides():
    env = bench_torch.thread_env(2)
    assert env["XLA_FLAGS"] == "--xla_cpu_multi_thread_eigen=true"
    assert env["JAXFL_HOST_DEVICES"] == "2"  # the jaxfl side's host devices (one per thread)
    assert env["OMP_NUM_THREADS"] == "2"
    cmd = bench_torch.side_command("torch", "gossip", "f.npz", 1, 2, "py")
    assert cmd[:2] == ["py", str(bench_torch.TORCH_SIDE)] and "--threads" in cmd


def test_torch_side_imports_only_torch_opacus_numpy_and_stdlib():
    tree = ast.parse(bench_torch.TORCH_SIDE.read_text())
    roots = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, "relative import in torch_side.py"
            roots.add(node.module.split(".")[0])
    third_party = roots - set(sys.stdlib_module_names)
    assert third_party == {"torch", "opacus", "numpy"}, third_party
    assert "jaxfl" not in roots and "experiments" not in roots


def test_torch_python_override(monkeypatch, tmp_path):
    monkeypatch.setenv(torch_env.ENV_VAR, str(tmp_path / "missing"))
    assert torch_env.torch_python() == tmp_path / "missing"
    assert not torch_env.available()
    with pytest.raises(FileNotFoundError, match=torch_env.ENV_VAR):
        torch_env.ensure()
    assert all("==" in r for r in torch_env.REQUIREMENTS)  # exact pins


@pytest.mark.slow
@pytest.mark.skipif(not torch_env.available(), reason="no torch venv (make bench-torch)")
@pytest.mark.skipif(not os.environ.get("JAXFL_DATA_DIR"), reason="needs real MNIST")
def test_tiny_uldp_row_runs_on_both_sides_and_losses_agree(tmp_path):
    # 20 users, 300 records: 100 pairs in one length bucket (one compilation).
    row = bench_torch.Row("tiny", "uldp_avg", "tiny", "round",
                          {"num_users": 20, "max_records": 300}, 1, "pairs")
    npz = str(Path(tmp_path) / "tiny.npz")
    meta = bench_torch.prepare(row, Path(npz))
    assert meta["records"] == 300 and meta["num_params"] == 21840
    env = bench_torch.thread_env(1)
    outs = [(side, bench_torch.run_side(
        bench_torch.side_command(side, "uldp_avg", npz, 1, 1, torch_env.torch_python()),
        env, 600)) for _, side in bench_torch.alternation(1)]
    r = bench_torch.summarize(row, outs)
    assert r["errors"] == [], r["errors"]
    assert r["loss"]["agree"], r["loss"]
    assert r["ratio"] > 0


# ----------------------------------------------------------------------------- on a GPU

def test_gpu_options_parse_and_default_to_the_cpu():
    a = bench_torch.parse_args([])
    assert a.torch_device == "cpu" and a.torch_python is None
    a = bench_torch.parse_args(["--torch-device", "cuda", "--torch-python", "python3",
                                "--quick"])
    assert a.torch_device == "cuda" and a.torch_python == "python3" and a.quick
    with pytest.raises(SystemExit):
        bench_torch.parse_args(["--torch-device", "tpu"])


def test_torch_command_carries_device_and_variant():
    cmd = bench_torch.side_command("torch:vmap", "gossip", "f.npz", 1, 2, "py", "cuda")
    assert cmd[:4] == ["py", str(bench_torch.TORCH_SIDE), "gossip", "f.npz"]
    assert cmd[cmd.index("--device") + 1] == "cuda"
    assert cmd[cmd.index("--variant") + 1] == "vmap"
    assert "--variant" not in bench_torch.side_command("torch", "gossip", "f.npz", 1, 2, "py")
    assert bench_torch.alternation(2, ("torch:a", "torch:b")) == [
        (0, "jaxfl"), (0, "torch:a"), (0, "torch:b"), (1, "jaxfl"), (1, "torch:a"),
        (1, "torch:b")]


def test_env_for_an_accelerator_backend_has_no_host_device_or_cpu_flags():
    inherited = {"XLA_FLAGS": "--xla_force_host_platform_device_count=2 "
                              "--xla_cpu_multi_thread_eigen=true --xla_dump_to=/tmp/d",
                 "JAXFL_HOST_DEVICES": "2", "PATH": "/bin"}
    env = bench_torch.thread_env(2, "cuda", environ=inherited)
    assert env["XLA_FLAGS"] == "--xla_dump_to=/tmp/d"  # the user's other flags stay
    assert "JAXFL_HOST_DEVICES" not in env and env["OMP_NUM_THREADS"] == "2"
    env = bench_torch.thread_env(1, "cuda", environ={"XLA_FLAGS": "--xla_cpu_use_thunk_runtime"})
    assert "XLA_FLAGS" not in env
    # The CPU backend keeps the CPU layout: threads flag and one host device per thread.
    env = bench_torch.thread_env(2, None, environ=inherited)
    assert env["XLA_FLAGS"] == "--xla_cpu_multi_thread_eigen=true"
    assert env["JAXFL_HOST_DEVICES"] == "2"


def test_jaxfl_side_process_on_an_accelerator_gets_no_host_device_flag():
    # What the side's __main__ does first: host_devices.configure() on the env built for it.
    env = bench_torch.thread_env(2, "cuda", environ={"JAX_PLATFORMS": "cuda"})
    assert host_devices.configure(env) is None
    assert host_devices.FLAG not in env.get("XLA_FLAGS", "")


def test_torch_python_option_resolves_a_name_on_path_or_exits():
    assert bench_torch.resolve_torch_python(Path(sys.executable).name).exists()
    assert bench_torch.resolve_torch_python(sys.executable) == Path(sys.executable)
    with pytest.raises(SystemExit, match="no such interpreter"):
        bench_torch.resolve_torch_python("/no/such/python")


def _fake_torch_python(tmp_path, probe: dict) -> str:
    """An 'interpreter' that answers torch_side's probe with ``probe`` (no torch needed)."""
    py = tmp_path / "fake-python"
    py.write_text(f"#!/bin/sh\necho '{json.dumps(probe)}'\n")
    py.chmod(0o755)
    return str(py)


PROBE = {"torch": "2.11.0+cu130", "cuda_available": True, "device": "cuda",
         "device_name": "NVIDIA H100 80GB HBM3", "cuda_version": "13.0", "opacus": None,
         "opacus_error": "ModuleNotFoundError: No module named 'opacus'", "python": "3.12.3"}


def test_probe_rejects_cuda_when_torch_sees_no_gpu(tmp_path):
    py = _fake_torch_python(tmp_path, dict(PROBE, cuda_available=False))
    with pytest.raises(SystemExit, match="no CUDA device"):
        bench_torch.probe_torch(py, "cuda", dict(os.environ))
    assert bench_torch.probe_torch(py, "cpu", dict(os.environ))["torch"] == "2.11.0+cu130"
    broken = tmp_path / "broken"
    broken.write_text("#!/bin/sh\necho 'ModuleNotFoundError: torch' >&2\nexit 1\n")
    broken.chmod(0o755)
    with pytest.raises(SystemExit, match="failed its probe"):
        bench_torch.probe_torch(str(broken), "cpu", dict(os.environ))


def test_opacus_variants_are_skipped_with_the_reason_when_opacus_is_absent():
    dps = next(r for r in bench_torch.rows(True) if r.kind == "dp_sgd")
    skipped = bench_torch.skipped_variants(dps, PROBE)
    opacus_variants = [v for v in dps.variants if v.startswith("opacus")]
    assert opacus_variants and sorted(skipped) == sorted(opacus_variants)
    assert all("opacus not importable" in why and "No module named" in why
               for why in skipped.values())
    assert bench_torch.skipped_variants(dps, dict(PROBE, opacus="1.6.0")) == {}
    loops = [r for r in bench_torch.rows(True) if r.kind != "dp_sgd"]
    assert all(bench_torch.skipped_variants(r, PROBE) == {} for r in loops)


def test_skipped_variant_is_a_table_line_not_a_crash():
    row = bench_torch.Row("d", "dp_sgd", "DP-SGD", "2 steps", {}, 1, "examples",
                          ("vmap", "opacus"))
    outs = [("jaxfl", _side(1.0)), ("torch:vmap", _side(3.0, variant="vmap"))]
    r = bench_torch.summarize(row, outs, {"opacus": "opacus not importable (x)"})
    assert [v["variant"] for v in r["variants"]] == ["vmap", "opacus"]
    assert r["ratio"] == 3.0 and r["torch_variant"] == "vmap"
    assert r["variants"][1] == {"variant": "opacus", "skipped": "opacus not importable (x)"}
    r.update(load_before=0.5, load_after=0.5)
    info = {"machine": "m", "processor": "p", "cpus": 16, "python": "3.12", "threads": 2,
            "xla_flags": "", "pairs": 1, "quick": True, "date": "today", "accelerator": "cuda",
            "torch_device": "cuda", "torch_probe": PROBE, "torch_python": "python3"}
    md = bench_torch.to_markdown([r], info)
    assert "| DP-SGD | 2 steps | opacus |" in md and "skipped: opacus not importable" in md
    assert "**3.00x**" in md and "NVIDIA H100 80GB HBM3" in md and "torch 2.11.0+cu130" in md
    assert "no XLA:CPU flags" in md


def test_a_row_without_any_runnable_variant_is_reported_skipped(tmp_path, monkeypatch):
    # The whole driver with a torch python that has no opacus: the Opacus-only row is skipped
    # (neither side runs, no data are prepared) and the table and JSON are still written.
    monkeypatch.setenv("JAXFL_DATA_DIR", str(tmp_path))
    py = _fake_torch_python(tmp_path, dict(PROBE, device="cpu"))
    monkeypatch.setattr(bench_torch, "TORCH_VARIANTS",
                        dict(bench_torch.TORCH_VARIANTS, dp_sgd=("opacus",)))
    monkeypatch.setattr(bench_torch, "prepare", lambda *a: pytest.fail("prepared data"))
    out = tmp_path / "out"
    res = bench_torch.main(["--quick", "--only", "dp_sgd_uldp_cnn", "--torch-python", py,
                            "--out", str(out)])
    assert len(res) == 1 and res[0]["sides"] == [] and "opacus" in res[0]["skipped"]
    saved = json.loads((out / "bench_torch.json").read_text())
    assert saved["info"]["torch_probe"]["device_name"] == "NVIDIA H100 80GB HBM3"
    assert "skipped: opacus not importable" in (out / "bench_torch.md").read_text()


# ----------------------------------------------------------------------------- variants

def _torch_side_workloads() -> dict[str, list[str]]:
    """torch_side.WORKLOADS' workload -> variant names, read from its source (no torch)."""
    tree = ast.parse(bench_torch.TORCH_SIDE.read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "WORKLOADS"
                                                for t in node.targets):
            return {k.value: [kk.value for kk in v.keys]
                    for k, v in zip(node.value.keys, node.value.values, strict=True)}
    raise AssertionError("no WORKLOADS in torch_side.py")


def test_every_row_variant_exists_on_the_torch_side_with_the_same_default():
    workloads = _torch_side_workloads()
    assert set(workloads) == set(bench_torch.TORCH_VARIANTS)
    for kind, variants in bench_torch.TORCH_VARIANTS.items():
        assert list(variants) == workloads[kind], kind  # first = the torch side's default
    for r in bench_torch.rows(False):
        assert "vmap" in r.variants and r.variants[0] in ("loop", "opacus"), r.name
    dps = bench_torch.TORCH_VARIANTS["dp_sgd"]
    assert {"opacus", "opacus_ghost", "opacus_functorch", "vmap"} == set(dps)
    assert [bench_torch.variant_requires(v) for v in dps] == ["opacus"] * 3 + [None]


@pytest.mark.slow
@pytest.mark.skipif(not torch_env.available(), reason="no torch venv (make bench-torch)")
@pytest.mark.skipif(not os.environ.get("JAXFL_DATA_DIR"), reason="needs real MNIST")
@pytest.mark.parametrize("kind,params", [
    ("gossip", {"nodes": 8, "per_node": 20}),
    ("dp_fedavg", {"arch": "logreg", "num_clients": 12, "per_client": 20, "local_steps": 3,
                   "batch_size": 10, "sampling_rate": 1.0}),
    ("dp_sgd", {"arch": "uldp_cnn", "batch_size": 16, "steps": 2}),
    ("uldp_avg", {"num_users": 20, "max_records": 300}),
])
def test_every_torch_variant_runs_and_its_loss_agrees_with_jaxfl(tmp_path, kind, params):
    row = bench_torch.Row("tiny", kind, "tiny", "unit", params, 1)
    npz = str(Path(tmp_path) / "tiny.npz")
    bench_torch.prepare(row, Path(npz))
    env = bench_torch.thread_env(1)
    sides = [f"torch:{v}" for v in row.variants]
    outs = [(side, bench_torch.run_side(
        bench_torch.side_command(side, kind, npz, 1, 1, torch_env.torch_python()), env, 600))
        for _, side in bench_torch.alternation(1, sides)]
    r = bench_torch.summarize(row, outs)
    assert r["errors"] == [], r["errors"]
    for v in r["variants"]:
        assert v["loss"]["agree"], (v["variant"], v["loss"])


def test_doc_tables_are_renderings_of_the_committed_runs():
    root = Path(__file__).resolve().parents[1]
    doc = (root / "docs" / "scale.md").read_text()
    runs = sorted((root / "docs" / "scale").glob("bench_torch_*.json"))
    assert runs, "no committed bench_torch run under docs/scale/"
    for f in runs:
        saved = json.loads(f.read_text())
        table = [line for line in bench_torch.to_markdown(saved["rows"], saved["info"])
                 .splitlines() if line.startswith("|")]
        assert "\n".join(table) in doc, f"docs/scale.md lacks the table of {f.name}"


def test_variant_selection_keeps_the_named_variants_and_drops_empty_rows():
    sel = bench_torch.select_rows(True, None, "vmap,opacus_ghost")
    assert len(sel) == 7 and all(r.variants[-1] == "vmap" for r in sel)
    dps = [r for r in sel if r.kind == "dp_sgd"]
    assert all(r.variants == ("opacus_ghost", "vmap") for r in dps)
    assert [r.name for r in bench_torch.select_rows(True, None, "opacus")] == [
        "dp_sgd_fedavg_cnn", "dp_sgd_uldp_cnn"]
    with pytest.raises(SystemExit, match="Unknown variants"):
        bench_torch.select_rows(True, None, "compiled")
