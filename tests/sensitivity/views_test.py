"""View construction and validation."""

import numpy as np
import pytest

from jaxfl import validate
from jaxfl.sensitivity import gossip_sensitivity, views
from tests.sensitivity import _graphs


def test_views_rows_and_known():
    A, W = _graphs.er(8, 0.4, seed=1)
    j, i = 2, 5
    v1 = views.make_view(W, "tm1", target=j, observer=i)
    assert (v1.model, list(v1.rows), list(v1.known)) == ("ss", [i], [i])
    v3 = views.make_view(W, "tm3", target=j, observer=i)
    assert list(v3.rows) == sorted({j, *np.flatnonzero(A[j])})
    v4 = views.make_view(W, "tm4", target=j, observer=i)
    assert (v4.model, list(v4.rows)) == ("p", [j])
    v4e = views.make_view(W, "tm4_exact", target=j, observer=i)
    assert list(v4e.rows) == sorted({i, *np.flatnonzero(A[i])})
    v2 = views.make_view(W, "tm2", target=j, colluders=[6, 1, 6])
    assert list(v2.rows) == [1, 6] and list(v2.known) == [1, 6]
    assert views.make_view(W, "tm1", target=j, observer=i, known_noise="none").known.size == 0


@pytest.mark.parametrize("kwargs,error", [
    (dict(view="tm1", target=0, observer=0), validate.TopologyError),
    (dict(view="tm1", target=9, observer=0), validate.TopologyError),
    (dict(view="tm1", target=0), validate.JaxflValueError),
    (dict(view="tm2", target=1, colluders=[1, 2]), validate.TopologyError),
    (dict(view="tm9", target=1, observer=2), validate.JaxflValueError),
    (dict(view="tm1", target=1, observer=2, known_noise="all"), validate.JaxflValueError),
])
def test_bad_views_rejected(kwargs, error):
    W = _graphs.path_maxdeg(5)
    with pytest.raises(error):
        views.make_view(W, **kwargs)


def test_public_api_validation():
    W = _graphs.path_maxdeg(5)
    with pytest.raises(validate.JaxflValueError):
        gossip_sensitivity(W, 0, 1, 0)
    with pytest.raises(validate.JaxflValueError):
        gossip_sensitivity(W, 0, 1, 3, mode="exact")
    with pytest.raises(validate.ShapeError):
        gossip_sensitivity(np.ones(4), 0, 1, 3)
    r = gossip_sensitivity(W, 0, 1, 3, mode="paper")
    rec = r.as_dict()
    assert rec["mode"] == "paper" and rec["view"] == "tm1" and "M" not in rec
