"""ULDP-FL Fig. 5 (a) at the paper's scale on a GPU (committed, partial): the page's table is
the CSV's, and every logged epsilon is what dp-accounting's PLD gives for that many rounds of
the Gaussian mechanism at the run's noise multiplier (full participation, sensitivity 1)."""

import dp_accounting
import numpy as np
import pytest
from scipy import stats as sps

from experiments.reproduce import uldp
from jaxfl.repro import declare
from jaxfl.repro import runs as _runs
from jaxfl.validate import JaxflValueError

SIGMA = 5.0  # experiments/configs/uldp/_common.py: the paper's sigma for Fig. 5


@pytest.fixture(scope="module")
def rows():
    return _runs.read_if(declare.DATA, uldp.GPU5, uldp.GPU5_FIELDS, provenance=True)


def test_every_logged_epsilon_is_the_pld_of_its_rounds(rows):
    by_round = {r["round"]: r["epsilon"] for r in rows}
    assert {r["privacy_mode"] for r in rows} == {"strict"}
    for t in (1, 7, 25, 50, max(by_round)):
        acc = dp_accounting.pld.PLDAccountant()
        acc.compose(dp_accounting.GaussianDpEvent(SIGMA), t)
        assert by_round[t] == pytest.approx(acc.get_epsilon(1e-5), rel=1e-6)


def test_page_table_is_the_csv_recomputed(rows):
    section = _runs.round_table(rows, uldp.GPU5_ROUNDS, "test_accuracy", "epsilon")
    table, seeds = section["table"], {r["seed"] for r in rows}
    stops = [max(r["round"] for r in rows if r["seed"] == s) for s in seeds]
    last = min(stops)
    assert [t["round"] for t in table] == [*uldp.GPU5_ROUNDS, last]
    assert section["reached"] == f"{last} - {max(stops)}" and section["seeds"] == "0, 1, 2, 3, 4"
    for t in table:
        acc = np.array([r["test_accuracy"] for r in rows if r["round"] == t["round"]])
        half = sps.t.ppf(0.975, len(acc) - 1) * acc.std(ddof=1) / np.sqrt(len(acc))
        assert t["n"] == len(seeds) == 5
        assert t["value"] == f"{acc.mean():.3f} [{acc.mean() - half:.3f}, {acc.mean() + half:.3f}]"


def test_seeds_that_disagree_on_epsilon_are_an_error(rows):
    bad = [dict(r, epsilon=r["epsilon"] * 1.01) if (r["seed"], r["round"]) == (2, 25) else r
           for r in rows]
    with pytest.raises(JaxflValueError, match="round 25"):
        _runs.round_table(bad, uldp.GPU5_ROUNDS, "test_accuracy", "epsilon")
