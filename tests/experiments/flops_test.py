"""experiments/bench/flops.py counts what XLA runs: a dense layer is 2 * in * out FLOPs per example."""

import jax.numpy as jnp

from experiments.bench import flops


def test_dense_layer_flops():
    n_in, n_out, batch = 37, 11, 5
    x, w = jnp.ones((batch, n_in)), jnp.ones((n_in, n_out))
    assert flops.flops(lambda a, b: a @ b, x, w) == 2 * n_in * n_out * batch


def test_logreg_training_flops_and_time():
    from jaxfl import models

    per = flops.train_flops_per_example(models.get_model("logreg", input_shape=(784,)), (784,))
    assert 3 * 2 * 784 * 10 <= per <= 3 * (2 * 784 * 10 + 200)  # matmul + bias, log-softmax
    assert flops.gpu_seconds(3.9e12) == 1.0
