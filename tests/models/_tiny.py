"""Tiny configurations of every registered model and matching synthetic batches."""

import functools
import types

import jax
import numpy as np

from jaxfl.models import get_model

# name -> kwargs giving a model small enough to compile and train in well under a second.
TINY = {
    "logreg": dict(num_classes=3, input_shape=(6,)),
    "binary_logreg": dict(input_shape=(5,)),
    "linear": dict(output_dim=2, input_shape=(4,)),
    "mlp": dict(hidden=(8, 8), num_classes=3, input_shape=(6,), group_norm=2, dropout=0.2),
    "fraud_net": dict(input_dim=6, width=8, num_blocks=2),
    "fedavg_cnn": dict(num_classes=3, input_shape=(8, 8, 1), features=(2, 3), hidden=(8,)),
    "femnist_cnn": dict(num_classes=4, input_shape=(8, 8, 1), features=(2, 3), hidden=(8,)),
    "uldp_cnn": dict(num_classes=3, input_shape=(16, 16, 1), features=(2, 3), hidden=(8,)),
    "cifar_cnn": dict(num_classes=3, input_shape=(8, 8, 3), features=(2, 3), hidden=(8, 6)),
    "resnet18_gn": dict(num_classes=3, input_shape=(8, 8, 3), width=2, blocks=(1, 1)),
    "char_lstm": dict(vocab_size=7, seq_len=5, embed_dim=3, hidden=(6,), head_hidden=(4,)),
    "cox": dict(input_shape=(4,)),
}

# Models whose output has a class axis of this size, for shape checks.
OUTPUT_SHAPE = {
    "logreg": (3,), "binary_logreg": (1,), "linear": (2,), "mlp": (3,), "fraud_net": (2,),
    "fedavg_cnn": (3,), "femnist_cnn": (4,), "uldp_cnn": (3,), "cifar_cnn": (3,),
    "resnet18_gn": (3,), "char_lstm": (7,), "cox": (1,),
}

HAS_DROPOUT = ("mlp", "fraud_net", "uldp_cnn")


def batch(name, model, n=8, seed=0):
    """A synthetic batch ``(x, y)`` of ``n`` examples for ``model``."""
    rng = np.random.default_rng(seed)
    if name == "char_lstm":
        x = rng.integers(0, 7, size=(n, *model.input_shape)).astype(np.int32)
    else:
        x = rng.normal(size=(n, *model.input_shape)).astype(np.float32)
    k = OUTPUT_SHAPE[name][0]
    if name == "linear":
        y = rng.normal(size=(n, k)).astype(np.float32)
    elif name == "binary_logreg":
        y = np.arange(n) % 2
    elif name == "cox":
        y = np.stack([np.arange(n) % 2, rng.integers(1, 5, size=n)], axis=1).astype(np.float32)
        y[0, 0] = 1.0
    elif name == "char_lstm":
        y = x[:, -1].copy()  # learnable: the next character repeats the last one
    else:
        y = (np.arange(n) % k).astype(np.int32)
    return x, y


LEARNING_RATE = {"char_lstm": 1.0}


@functools.cache
def tiny_model(name):
    """One model instance per name, so its jitted functions compile once per test process."""
    return get_model(name, **TINY[name])


@functools.cache
def compiled(name):
    """Jitted functions of the tiny model shared by the tests (each compiles once)."""
    model = tiny_model(name)

    def forward(params, x, y):
        out = model.apply(params, x)
        return out, model.loss(out, y), model.metrics(out, y)

    return types.SimpleNamespace(
        model=model,
        forward=jax.jit(forward),
        value_and_grad=jax.jit(jax.value_and_grad(model.batch_loss)),
        stacked_init=jax.jit(jax.vmap(model.init)),
        stacked_apply=jax.jit(jax.vmap(model.apply)),
    )
