"""Shared config and runner for the subject-level DP experiments (Marathe & Kanani v1, section 4).

One :class:`SubjectDPConfig` describes one run: a dataset with subjects spread over federation
users, one method of :mod:`jaxfl.algorithms.subject_dp` and a privacy ``mode``. ``build`` turns
the privacy target into noise multipliers and a round count:

* ``mode="paper"``: per-user moments-accountant sigma at the item sampling rate over the nominal
  ``T * R`` steps (LocalGroupDP: the lazy sigma_Z table); FedAvg / LocalItemDP run ``R`` rounds,
  the subject-level methods ``R / sqrt(s)`` (Thm. 3.10). Fixed-size batches.
* ``mode="strict"`` (default): Poisson batches; sigma calibrated so the *strict* epsilon meets the
  target after the same round counts (LocalItemDP at item level, its own claim; the subject-level
  methods at subject level; LocalGroupDP with data-independent noise).

``run`` trains with :func:`jaxfl.training.run` (metrics record ``mode``) and adds a ``privacy``
block to the summary: the epsilon in the run's mode and the strict subject-level epsilon.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import optax

from jaxfl import models, training
from jaxfl import random as jrandom
from jaxfl.accounting import subject_dp as acct
from jaxfl.algorithms import subject_dp as sdp
from jaxfl.data import leaf, subjects

DATASETS = ("mnist_writers", "shakespeare", "parkinsons", "femnist_leaf", "synthetic")


@dataclasses.dataclass(frozen=True, kw_only=True)
class SubjectDPConfig:
    """One subject-level DP run. Every field can be overridden with ``--set``."""

    name: str = "subject_dp"
    variant: str = "cpu"
    method: str = "higradavg_dp"
    mode: str = "strict"
    dataset: str = "mnist_writers"
    data_dir: str | None = None
    num_users: int = 16
    users_per_round: int | None = None
    num_subjects: int = 150
    num_train: int | None = 20000
    num_test: int | None = 2000
    alpha: float = 1.0
    model: str = "mlp"
    hidden: tuple = (64,)
    batch_size: int = 64
    local_steps: int = 1
    nominal_rounds: int = 100
    rounds: int | None = None
    clip_norm: float = 1.0
    learning_rate: float = 0.5
    nonprivate_learning_rate: float = 0.1
    optimizer: str = "sgd"
    target_epsilon: float = 4.0
    delta: float = 1e-5
    microbatch_size: int | None = None
    tight_accounting: bool = True  # strict LocalItemDP: also the PLD mixture bound (slower)
    orders: tuple | None = None  # RDP orders (None: dp-accounting's default grid)
    seed: int = 0
    eval_every: int = 5
    checkpoint_every: int = 25

    # ------------------------------------------------------------------ data and model
    def data(self) -> subjects.SubjectData:
        rng = jrandom.host_rng(self.seed, "partition")
        if self.dataset == "mnist_writers":
            return subjects.mnist_writers(num_users=self.num_users, num_subjects=self.num_subjects,
                                          rng=rng, num_train=self.num_train,
                                          num_test=self.num_test, alpha=self.alpha,
                                          path=self.data_dir)
        if self.dataset == "shakespeare":
            return subjects.shakespeare_by_role(num_users=self.num_users, rng=rng,
                                                max_subjects=self.num_subjects,
                                                max_items=self.num_train, alpha=self.alpha,
                                                stride=80, path=self.data_dir)
        if self.dataset == "parkinsons":
            return subjects.parkinsons_subjects(num_users=self.num_users, rng=rng,
                                                alpha=self.alpha, path=self.data_dir)
        if self.dataset == "femnist_leaf":  # real LEAF FEMNIST when it is available (GPU scale)
            tr, te = (leaf.load_femnist(s, path=self.data_dir) for s in ("train", "test"))
            return subjects.leaf_subjects(tr, test_split=te, num_users=self.num_users, rng=rng,
                                          max_subjects=self.num_subjects, alpha=self.alpha,
                                          x_transform=leaf.femnist_images)
        if self.dataset == "synthetic":  # tiny blobs for smoke tests (no files)
            n = self.num_train or 2000
            y = rng.integers(0, 4, n).astype(np.int32)
            x = (rng.normal(size=(4, 8))[y] + rng.normal(size=(n, 8))).astype(np.float32)
            s = rng.integers(0, self.num_subjects, n)
            return subjects.spread(x[: n * 4 // 5], y[: n * 4 // 5], s[: n * 4 // 5],
                                   num_users=self.num_users, rng=rng, alpha=self.alpha,
                                   test_x=x[n * 4 // 5:], test_y=y[n * 4 // 5:])
        raise ValueError(f"Unknown dataset {self.dataset!r}; choose from {DATASETS}.")

    def make_model(self, d: subjects.SubjectData):
        x = np.asarray(d.train.x)
        if self.model == "linear":
            return models.get_model("linear", input_shape=x.shape[2:])
        if self.model == "char_lstm":
            return models.get_model("char_lstm", hidden=tuple(self.hidden),
                                    seq_len=x.shape[2])
        num_classes = int(max(np.asarray(d.train.y).max(), d.test_y.max(initial=0)) + 1)
        if self.model == "mlp":
            return models.get_model("mlp", hidden=tuple(self.hidden), num_classes=num_classes,
                                    input_shape=(int(np.prod(x.shape[2:])),))
        return models.get_model(self.model, num_classes=num_classes, input_shape=x.shape[2:])

    # ------------------------------------------------------------------ privacy plan
    def federation(self, d) -> acct.Federation:
        return sdp.federation_of(d.train, batch_size=self.batch_size,
                                 local_steps=self.local_steps,
                                 users_per_round=self.users_per_round)

    def run_rounds(self, fed) -> int:
        if self.rounds is not None:
            return self.rounds
        if self.method in ("fedavg", "local_item_dp"):
            return self.nominal_rounds
        return acct.paper_rounds(self.nominal_rounds, fed.users_per_round)

    def _orders(self) -> dict:
        return {} if self.orders is None else {"orders": tuple(float(o) for o in self.orders)}

    def plan(self, fed) -> dict:
        """Noise parameters for :func:`jaxfl.algorithms.subject_dp.subject_dp`."""
        eps, delta, R = self.target_epsilon, self.delta, self.nominal_rounds
        o = self._orders()
        m = self.method
        if m == "fedavg":
            return {}
        if self.mode == "paper":
            if m == "local_group_dp":
                return {"group_noise": "batch", "group_noise_multiplier": acct.paper_group_table(
                    fed, target_epsilon=eps, delta=delta, nominal_rounds=R, **o)}
            return {"noise_multipliers": acct.paper_noise_multiplier(
                fed, target_epsilon=eps, delta=delta, nominal_rounds=R, **o)}
        sigma = acct.strict_noise_multiplier(m, fed, target_epsilon=eps, delta=delta,
                                             rounds=self.run_rounds(fed), **o)
        out = {"noise_multipliers": sigma}
        if m == "local_group_dp":
            out["group_noise"] = "fixed"
        return out

    def build(self):
        """Returns ``(algorithm, subject_data, params, eval_fn, rounds, federation, plan)``."""
        d = self.data()
        model = self.make_model(d)
        fed = self.federation(d)
        plan = self.plan(fed)
        lr = self.nonprivate_learning_rate if self.method == "fedavg" else self.learning_rate
        opt = optax.adam(lr) if self.optimizer == "adam" else optax.sgd(lr)
        alg = sdp.subject_dp(model, d.train, method=self.method, mode=self.mode,
                             batch_size=self.batch_size, local_steps=self.local_steps,
                             learning_rate=lr, clip_norm=self.clip_norm,
                             users_per_round=self.users_per_round, optimizer=opt,
                             microbatch_size=self.microbatch_size, **plan)
        params = model.init(jrandom.key_streams(self.seed, ("init",))["init"])
        eval_fn = training.make_classifier_eval(model, d.test_x, d.test_y)
        return alg, d, params, eval_fn, self.run_rounds(fed), fed, plan

    def privacy(self, fed, plan, rounds: int, group_sizes=None) -> dict:
        """The run's epsilon in its own mode and in strict mode (``Report.as_dict``)."""
        kw = dict(rounds=rounds, delta=self.delta,
                  noise_multipliers=plan.get("noise_multipliers"),
                  group_noise=plan.get("group_noise", "batch"),
                  group_noise_multiplier=plan.get("group_noise_multiplier"),
                  group_sizes=group_sizes, **self._orders())
        own = acct.epsilon(self.method, fed, mode=self.mode, **kw)
        tight = self.tight_accounting and self.method == "local_item_dp"
        strict = acct.epsilon(self.method, fed, mode="strict", tight=tight,
                              value_discretization_interval=1e-2, **kw)
        return {"mode": self.mode, "reported": own.as_dict(), "strict": strict.as_dict()}

    def run(self, workdir, **kwargs) -> dict:
        alg, d, params, eval_fn, rounds, fed, plan = self.build()
        res = training.run(alg, d.train, params=params, rounds=rounds, seed=self.seed,
                           workdir=workdir, eval_fn=eval_fn, eval_every=self.eval_every,
                           checkpoint_every=self.checkpoint_every, delta=None,
                           final_accountant=None, config=self,
                           extra_record={"mode": self.mode, "method": self.method}, **kwargs)
        summary = dict(res.summary)
        used = list(alg.info.get("group_sizes_used") or [1])
        summary["privacy"] = self.privacy(fed, plan, rounds, group_sizes=used)
        summary["rounds_run"] = rounds
        return summary


def variant(cfg: SubjectDPConfig, name: str, **overrides) -> SubjectDPConfig:
    """Applies a named variant's overrides (``smoke`` shrinks everything to seconds)."""
    from experiments import config as config_lib
    cfg = dataclasses.replace(cfg, variant=name)
    return config_lib.apply_overrides(cfg, overrides) if overrides else cfg


SMOKE = {"dataset": "synthetic", "model": "mlp", "hidden": (8,), "num_users": 4,
         "num_subjects": 12, "num_train": 600, "batch_size": 8, "local_steps": 1,
         "nominal_rounds": 8, "eval_every": 1, "checkpoint_every": 2,
         "orders": (1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0, 32.0, 64.0)}
METHODS = sdp.METHODS
__all__ = ["SubjectDPConfig", "SMOKE", "METHODS", "variant"]
