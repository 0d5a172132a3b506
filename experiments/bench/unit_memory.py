"""Per-unit device memory of the engine's unit steps, as the memory-aware layout measures it
(:func:`jaxfl.layout.unit_memory`: XLA's memory analysis of the step compiled for 2 and 4
units), and the chunk a device budget gives (:func:`jaxfl.layout.fit`).

  python -m experiments.bench.unit_memory [--budget BYTES]

Rows: a DP-FedAvg / FedAvg client (5 local SGD steps of batch 16 on 64 MNIST examples) of the
MLP and the FedAvg CNN, and a ULDP-AVG (silo, user) pair of the ULDP CNN (Q = 2, B = 64) of
8 and 64 records. The numbers are those of the backend this runs on (the CPU's patches
convolutions differ from an accelerator's direct ones).
"""

from __future__ import annotations

import argparse

import jax
import jax.numpy as jnp
import numpy as np

from jaxfl import layout, models
from jaxfl.algorithms import fedavg, uldp, uldp_local

MNIST = (28, 28, 1)


def _unit(n, input_shape):
    return (jax.ShapeDtypeStruct((n, *input_shape), jnp.float32),
            jax.ShapeDtypeStruct((n,), jnp.int32), jax.ShapeDtypeStruct((n,), jnp.bool_),
            jax.ShapeDtypeStruct((), jax.random.key(0).dtype))


def rows(budget: int) -> list[dict]:
    out = []
    for name, shape in (("mlp", (784,)), ("fedavg_cnn", MNIST)):
        model = models.get_model(name, input_shape=shape)
        make_update, _ = fedavg.round_parts(model, num_clients=10_000, sampling_rate=1.0,
                                            local_steps=5, batch_size=16, client_lr=0.1,
                                            sampling="shuffle")
        out.append(_row(f"{name} client, 64 records", make_update, make_update(0.1), model,
                        _unit(64, shape), 10_000, budget))
    model = models.get_model("uldp_cnn")
    for length in (8, 64):
        train = uldp_local.epoch_trainer(uldp._batch_loss(model), learning_rate=0.1, epochs=2,
                                         batch_size=64, length=length)
        out.append(_row(f"uldp_cnn pair, {length} records", train, train, model,
                        _unit(length, MNIST), 10_000, budget))
    return out


def _row(label, key, fn, model, unit, units, budget) -> dict:
    params = model.init(jax.random.key(0))
    fixed, per = layout.unit_memory(key, fn, (params,), unit)
    nbytes = sum(np.asarray(a).nbytes for a in jax.tree.leaves(params))
    with layout.sharing(1, budget=budget):
        try:
            chunk = layout.fit(None, "cohort", units, lambda: (fixed, per))
        except layout.MemoryBudgetError as e:
            chunk = f"error: {e}"
    return {"unit": label, "param_bytes": nbytes, "fixed_bytes": fixed, "bytes_per_unit": per,
            f"{units}_units_bytes": fixed + units * per,
            f"chunk_at_{budget}_bytes": "full vmap" if chunk is None else chunk}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=int, default=8 << 30, help="device budget in bytes")
    args = ap.parse_args(argv)
    print(f"backend: {jax.default_backend()}, jax {jax.__version__}")
    for r in rows(args.budget):
        print(r)


if __name__ == "__main__":
    main()
