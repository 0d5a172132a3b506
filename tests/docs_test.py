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
    clip_norms = np.where(np.arange(40) < 10, 2.0, 1.0)  # ten clients with a larger clip norm
    alg = dp_fedsgd(model, clip_norms=clip_norms, sampling_rate=0.5, lr=1.0,
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
    # Independent check with dp-accounting: client k's 30 rounds are a Poisson(0.5)-subsampled
    # Gaussian with noise multiplier 2 / C_k (sigma * max C / C_k).
    report = res.summary["privacy"]
    expect = {c: accountants.epsilon(events.dp_sgd(noise_multiplier=2.0 / c, sampling_rate=0.5,
                                                   steps=30), 1e-5, accountant="rdp")
              for c in (1.0, 2.0)}
    np.testing.assert_allclose(report["per_unit"], [expect[c] for c in clip_norms], rtol=1e-9)
    np.testing.assert_allclose(report["epsilon"], expect[2.0], rtol=1e-9)
    assert expect[1.0] < expect[2.0]  # the worst client is the headline
    assert report["unit"] == "client" and report["mode"] == "strict" and report["sound"]
    # Every logged round carries the headline of its round count.
    for rec in res.history:
        np.testing.assert_allclose(rec["epsilon"], accountants.epsilon(events.dp_sgd(
            noise_multiplier=1.0, sampling_rate=0.5, steps=rec["round"]), 1e-5,
            accountant="rdp"), rtol=1e-9)
    # Resuming the finished run does no work and returns the same state.
    again = training.run(alg, data, params=params, rounds=30, seed=0, workdir=tmp_path,
                         eval_fn=eval_fn, delta=1e-5, checkpoint_every=10)
    for a, b in zip(jax.tree.leaves(again.state), jax.tree.leaves(res.state)):
        np.testing.assert_array_equal(a, b)


def test_design_example_learning_rate_is_a_traced_hparam():
    dp_fedsgd = _example()
    alg = dp_fedsgd(_toy.logreg(5, 3), clip_norms=np.ones(4), sampling_rate=1.0, lr=0.5,
                    noise_multiplier=1.0)
    assert alg.hparams == {"lr": 0.5}
