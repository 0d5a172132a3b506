"""The code in docs/library_design.md runs: the DP-FedSGD example trains and accounts."""

import re
from pathlib import Path

import jax
import numpy as np

from jaxfl import training
from jaxfl.accounting import accountants, events
from tests import _toy

DOC = Path(__file__).resolve().parents[1] / "docs" / "library_design.md"


def _example():
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    assert len(blocks) == 1, "library_design.md should hold exactly one python example"
    namespace = {}
    exec(compile(blocks[0], str(DOC), "exec"), namespace)  # noqa: S102 (our own doc)
    return namespace["dp_fedsgd"]


def test_design_example_trains_and_accounts(tmp_path):
    dp_fedsgd = _example()
    data = _toy.blobs(num_clients=40, dim=5, classes=3, seed=1)
    model = _toy.logreg(5, 3)
    alg = dp_fedsgd(model, num_clients=40, sampling_rate=0.5, lr=1.0, clip_norm=1.0,
                    noise_multiplier=1.0)
    params = model.init(jax.random.key(0))
    x = np.asarray(data.x).reshape(-1, 5)[np.asarray(data.mask).reshape(-1)]
    y = np.asarray(data.y).reshape(-1)[np.asarray(data.mask).reshape(-1)]
    eval_fn = training.make_classifier_eval(model, x, y)
    before = eval_fn(params)["test_accuracy"]
    res = training.run(alg, data, params=params, rounds=30, seed=0, workdir=tmp_path,
                       eval_fn=eval_fn, delta=1e-5, checkpoint_every=10)
    after = res.history[-1]["test_accuracy"]
    assert after > max(0.6, before + 0.2), (before, after)
    event = events.dp_sgd(noise_multiplier=1.0, sampling_rate=0.5, steps=30)
    # training.run's final PLD (bounded grid) is dp-accounting's PLD up to its grid slack, and
    # never below the default-grid value.
    np.testing.assert_allclose(res.summary["epsilon_pld"],
                               accountants.bounded_pld_epsilon(event, 1e-5), rtol=1e-12)
    default_grid = accountants.epsilon(event, 1e-5, accountant="pld")
    assert default_grid - 1e-9 <= res.summary["epsilon_pld"] <= default_grid * (1 + 1e-3)
    # Resuming the finished run does no work and returns the same state.
    again = training.run(alg, data, params=params, rounds=30, seed=0, workdir=tmp_path,
                         eval_fn=eval_fn, delta=1e-5, checkpoint_every=10)
    for a, b in zip(jax.tree.leaves(again.state), jax.tree.leaves(res.state)):
        np.testing.assert_array_equal(a, b)
