"""The accountant protocol: event accountants equal dp-accounting, reports are labelled."""

import importlib
import json

import dp_accounting
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxfl import validate
from jaxfl.accounting import accountants, events, report
from jaxfl.algorithms import base


@settings(max_examples=6, deadline=None)
@given(q=st.floats(0.01, 1.0), sigma=st.floats(0.6, 5.0), rounds=st.integers(1, 60))
def test_event_accountant_equals_dp_accounting(q, sigma, rounds):
    step = events.poisson_gaussian(sampling_rate=q, noise_multiplier=sigma)
    acc = report.EventAccountant.repeating(step)
    acct = dp_accounting.rdp.RdpAccountant()
    acct.compose(step, rounds)
    ref = acct.get_epsilon(1e-5)
    got = acc.epsilons([rounds], 1e-5)[0]
    # Our RDP uses its own order grid; it must never be below dp-accounting's by more than the
    # grid's slack and never far above it.
    assert got == pytest.approx(accountants.epsilon(events.repeated(step, rounds), 1e-5,
                                                    accountant="rdp"), rel=1e-12)
    assert ref * (1 - 0.02) <= got <= ref * 1.2 + 1e-9
    r = acc.report(rounds, 1e-5)
    assert r.epsilon == pytest.approx(accountants.bounded_pld_epsilon(
        events.repeated(step, rounds), 1e-5), rel=1e-12)
    assert r.epsilon <= got + 1e-9  # PLD is tighter than RDP


def test_non_private_is_infinite_and_zero_rounds_is_zero():
    acc = report.NonPrivateAccountant("user")
    assert acc.epsilons([0, 3], 1e-5).tolist() == [0.0, float("inf")]
    r = acc.report(3, 1e-5)
    assert r.epsilon == float("inf") and r.unit == "user"
    assert json.loads(json.dumps(r.to_json()))["epsilon"] == "inf"


def test_curve_accountant_validates_and_reports_per_unit_and_modes():
    paper = report.CurveAccountant(lambda r, d: 0.5 * r, unit="user", name="paper-rdp",
                                   mode="paper", sound=False)
    acc = report.CurveAccountant(lambda r, d: 1.0 * r, unit="user", name="pld",
                                 per_unit=lambda r, d: (np.array([r, r / 2.0]), ("user",)),
                                 details=lambda r, d: {"group_size": 2},
                                 alternatives={"paper": paper})
    assert acc.epsilons([0, 2, 4], 1e-5).tolist() == [0.0, 2.0, 4.0]
    out = report.reports(acc, 4, 1e-5)
    assert out["privacy"]["per_unit"] == [4.0, 2.0] and out["privacy"]["mode"] == "strict"
    assert out["privacy_paper"]["epsilon"] == 2.0 and out["privacy_paper"]["sound"] is False
    bad = report.CurveAccountant(lambda r, d: np.ones(3), unit="user", name="x")
    with pytest.raises(validate.ShapeError):
        bad.epsilons([1], 1e-5)
    for rounds in ([], [-1], [1.5]):
        with pytest.raises(validate.JaxflValueError):
            acc.epsilons(rounds, 1e-5)
    for delta in (0.0, 1.0, -1e-5):
        with pytest.raises(validate.JaxflValueError):
            acc.report(3, delta)
    with pytest.raises(validate.JaxflValueError):
        report.PrivacyReport(epsilon=1.0, delta=1e-5, rounds=1, unit="u", accountant="a",
                             mode="loose")
    with pytest.raises(validate.ShapeError):
        report.PrivacyReport(epsilon=1.0, delta=1e-5, rounds=1, unit="u", accountant="a",
                             per_unit=np.ones((2, 2)), per_unit_axes=("user",))


def test_of_is_the_accountant_and_rejects_records_without_one():
    step = events.poisson_gaussian(sampling_rate=0.1, noise_multiplier=1.0)
    acc = report.EventAccountant.repeating(step)
    alg = base.Algorithm(name="a", init=None, prepare=None, apply=None, params_of=None,
                         accountant=acc)
    assert report.of(alg) is acc and acc.round_event == step
    assert acc.dp_event(5) == events.repeated(step, 5)
    assert report.NonPrivateAccountant().round_event is None
    with pytest.raises(validate.JaxflValueError):
        report.of(alg._replace(accountant="pld"))
    with pytest.raises(validate.JaxflValueError, match="NonPrivateAccountant"):
        report.of(alg._replace(accountant=None))
    assert "dp_event" not in base.Algorithm._fields and "round_event" not in \
        base.Algorithm._fields  # one privacy field


def test_jsonable_is_the_one_converter_of_records_and_reports():
    import dataclasses

    import jax.numpy as jnp

    from jaxfl import metrics

    @dataclasses.dataclass
    class Cfg:
        sizes: tuple = (1, 2)
        rate: float = float("inf")

    value = {1: np.float32(0.5), "a": np.arange(3), "b": (np.bool_(True), float("-inf")),
             "c": Cfg(), "d": jnp.float32(2.0), "e": float("nan"), "f": "text", "g": None}
    want = {"1": 0.5, "a": [0, 1, 2], "b": [True, "-inf"], "c": {"sizes": [1, 2], "rate": "inf"},
            "d": 2.0, "e": "nan", "f": "text", "g": None}
    assert report.jsonable(value) == want
    assert json.loads(metrics.to_json(value)) == want
    assert metrics.jsonable is report.jsonable


class _Priv:
    """A stand-in with the privatizer's hparams (accounting imports no JAX privatizer)."""

    clip_norm, noise_multiplier = 0.5, 1.1
    hparams = {"clip_norm": 0.5, "noise_multiplier": 1.1}


def test_an_accountant_is_frozen_and_derives_new_ones():
    acc = report.EventAccountant.repeating(
        events.poisson_gaussian(sampling_rate=0.01, noise_multiplier=1.1), unit="client")
    for mod in ("dp_ftrl", "dp_ogl", "gossip", "lightdp", "subject_dp", "uldp"):
        importlib.import_module(f"jaxfl.accounting.{mod}")
    classes, todo = [], [report.Accountant]
    while todo:  # every accountant class: none has a with_* method (setter or copy)
        classes.append(todo.pop())
        todo += classes[-1].__subclasses__()
    assert len(classes) >= 10
    assert [(c.__name__, n) for c in classes for n in dir(c) if n.startswith("with_")] == []
    for name, value in (("privatizer", _Priv()), ("hparams", {"clip_norm": 1.0}),
                        ("noise_spec", None)):
        with pytest.raises(AttributeError, match="frozen"):
            setattr(acc, name, value)
    built = acc.for_mechanism(_Priv(), sampling_rate=0.01)
    assert built is not acc and acc.privatizer is None and dict(acc.hparams) == {}
    assert dict(built.hparams) == {"clip_norm": 0.5, "noise_multiplier": 1.1,
                                   "sampling_rate": 0.01}
    assert isinstance(built.privatizer, _Priv)
    # a constructor change keeps the privacy fields; derive changes only those named
    rdp = built.replace(final="rdp")
    assert rdp.final == "rdp" and rdp.privatizer is built.privatizer
    assert dict(rdp.hparams) == dict(built.hparams)
    other = built.derive(hparams={"clip_norm": 2})
    assert dict(other.hparams) == {"clip_norm": 2.0} and other.privatizer is built.privatizer
    assert dict(built.hparams)["clip_norm"] == 0.5
    assert other.epsilons([10], 1e-5)[0] == acc.epsilons([10], 1e-5)[0]
    with pytest.raises(validate.JaxflValueError, match="Expected changes among"):
        acc.derive(final="rdp")
