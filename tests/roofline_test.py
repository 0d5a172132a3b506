"""jaxfl.roofline: loop-aware counts of a compiled program's work, the peaks table and the bound.

The counts are checked against formulas for programs whose work is known (a scan of matmuls,
a convolution, a sliced loop) and against XLA's own cost analysis where that is right (no
loops); the bound against hand-computed floors.
"""

import math

import jax
import jax.numpy as jnp
import pytest

from jaxfl import roofline


def _scan_of_matmuls(n, d=32):
    def f(x):
        return jax.lax.scan(lambda c, _: (jnp.tanh(c @ c), None), x, None, length=n)[0]

    return jax.jit(f).lower(jnp.ones((d, d))).compile()


def test_a_loop_counts_its_trip_count_times():
    d = 32
    one, seven = (roofline.program_cost(_scan_of_matmuls(n, d)) for n in (1, 7))
    assert seven.dot_flops == 7 * 2 * d ** 3
    assert seven.unknown_trip_counts == 0
    assert seven.kernels > one.kernels and seven.bytes > 5 * one.bytes
    # XLA's own analysis counts the body once: the reason the module reads the HLO itself.
    assert seven.xla_flops < 2 * 2 * d ** 3 + 10 * d * d


def test_loop_free_program_agrees_with_xla_cost_analysis():
    def loss(w1, w2, x):
        return jnp.sum(jnp.tanh(x @ w1) @ w2)

    args = (jnp.ones((64, 128)), jnp.ones((128, 16)), jnp.ones((256, 64)))
    c = roofline.program_cost(jax.jit(jax.grad(loss, argnums=(0, 1))).lower(*args).compile())
    # forward: 2*256*64*128 + 2*256*128*16; backward: two products per dot, minus the one
    # product of the input's gradient that is not asked for
    fwd = 2 * 256 * 64 * 128 + 2 * 256 * 128 * 16
    assert c.dot_flops == pytest.approx(fwd + 2 * 256 * 128 * 16 + 2 * 256 * 64 * 128, rel=0)
    assert c.flops == pytest.approx(c.xla_flops, rel=0.02)
    assert c.bytes == pytest.approx(c.xla_bytes, rel=0.25)


def test_convolution_flops_are_two_per_multiply_add():
    x = jnp.ones((2, 12, 12, 3))
    k = jnp.ones((5, 5, 3, 8))
    conv = jax.jit(lambda x, k: jax.lax.conv_general_dilated(
        x, k, (1, 1), "VALID", dimension_numbers=("NHWC", "HWIO", "NHWC")))
    c = roofline.program_cost(conv.lower(x, k).compile())
    assert c.dot_flops == 2 * (2 * 8 * 8 * 8) * (5 * 5 * 3)
    # SAME padding, one of the per-pair (grouped) convolutions a vmap over models makes: taps
    # on padding are not work, as in XLA's own count of a loop-free convolution
    same = jax.jit(jax.vmap(lambda x, k: jax.lax.conv_general_dilated(
        x, k, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))))
    xs, ks = jnp.ones((3, 2, 12, 12, 3)), jnp.ones((3, 5, 5, 3, 8))
    c = roofline.program_cost(same.lower(xs, ks).compile())
    # per output row/column: 12 positions x 5 taps minus the 2 + 1 + 1 + 2 taps on padding
    assert c.dot_flops == 2 * (3 * 2 * 8) * 3 * (12 * 5 - 6) ** 2 == c.xla_flops


def test_a_sliced_operand_counts_its_slices_not_the_whole_array():
    x = jnp.ones((1000, 256))

    def f(x):
        def body(c, i):
            return c + jnp.sum(jax.lax.dynamic_slice_in_dim(x, i * 10, 10) ** 2), None

        return jax.lax.scan(body, 0.0, jnp.arange(100))[0]

    c = roofline.program_cost(jax.jit(f).lower(x).compile())
    whole = 100 * x.size * 4  # what reading all of x in every iteration would be
    assert 100 * 10 * 256 * 4 <= c.bytes < whole / 5


def test_bound_is_the_largest_floor():
    peak = dict(name="toy", fp32_flops=1e12, tf32_flops=4e12, mem_bytes_s=1e11, launch_s=1e-5)
    compute = roofline.Cost(flops=5e12, dot_flops=4e12, bytes=1e9, kernels=10)
    r = roofline.roofline(compute, 2.0, peak)
    # floors: 4e12 / 4e12 + 1e12 / 1e12 = 2 s; 1e9 / 1e11 = 0.01 s; 10 * 1e-5 s
    assert r["bound"] == "compute" and r["of_limit"] == pytest.approx(1.0)
    assert r["flop_s"] == 2.5e12 and r["of_fp32_peak"] == pytest.approx(2.5)
    memory = roofline.Cost(flops=1e9, dot_flops=0.0, bytes=1e11, kernels=10)
    r = roofline.roofline(memory, 10.0, peak)
    assert r["bound"] == "bandwidth" and r["of_limit"] == pytest.approx(0.1)
    launch = roofline.Cost(flops=1e6, dot_flops=0.0, bytes=1e6, kernels=1000)
    r = roofline.roofline(launch, 0.1, {**peak, "dispatch_s": 0.01})
    assert r["bound"] == "launch" and r["of_limit"] == pytest.approx(0.2)
    assert roofline.summary(r) == "launch-bound, 20% of limit"


@pytest.mark.parametrize("kind,name,bandwidth", [
    ("NVIDIA H200", "H200", 4.8e12), ("NVIDIA H100 80GB HBM3", "H100 SXM", 3.35e12),
    ("NVIDIA A100-SXM4-80GB", "A100 80GB", 2.039e12)])
def test_peaks_by_device_kind(kind, name, bandwidth):
    p = roofline.peaks(kind, "gpu")
    assert p["name"] == name and p["mem_bytes_s"] == bandwidth
    assert p["tf32_flops"] > p["fp32_flops"] > 1e13


def test_unknown_accelerator_has_no_peaks_and_a_cpu_is_measured():
    with pytest.raises(KeyError, match="H200"):
        roofline.peaks("Some TPU v9", "tpu")
    p = roofline.peaks("cpu", "cpu")
    assert p["name"].startswith("CPU") and p["tf32_flops"] is None
    assert all(math.isfinite(p[k]) and p[k] > 0 for k in ("fp32_flops", "mem_bytes_s",
                                                          "launch_s", "dispatch_s"))
    assert roofline.measured_cpu_peaks() is roofline.measured_cpu_peaks()


def test_a_partitioned_module_counts_every_device():
    hlo = """HloModule jit_f, is_scheduled=true, num_partitions=2

ENTRY %main (p: f32[4,64], q: f32[64,64]) -> f32[4,64] {
  %p = f32[4,64]{1,0} parameter(0)
  %q = f32[64,64]{1,0} parameter(1)
  ROOT %d = f32[4,64]{1,0} dot(%p, %q), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""
    c = roofline.hlo_cost(hlo)
    assert c.partitions == 2 and c.kernels == 1
    assert c.dot_flops == 2 * (2 * 4 * 64 * 64)
    assert c.bytes == 2 * 4 * (4 * 64 + 64 * 64 + 4 * 64)
