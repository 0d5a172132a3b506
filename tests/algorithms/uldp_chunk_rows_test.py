"""The pair layout's record cap per chunk: none for the "auto" layout on an accelerator (one
vmap per bucket, narrowed only by the memory budget), 16,384 records on CPU and for explicit
layouts (unchanged)."""

import numpy as np
import pytest

from jaxfl import validate
from jaxfl.algorithms import uldp_data


def _records(pairs=200, per_pair=100):
    n = pairs * per_pair
    pair = np.repeat(np.arange(pairs), per_pair)
    return uldp_data.UldpData(x=np.zeros((n, 1), np.float32), y=np.zeros(n, np.int32),
                              silo=(pair % 2).astype(np.int32),
                              user=(pair // 2).astype(np.int32), num_silos=2,
                              num_users=pairs // 2)


def _layout(data, **kw):
    return [(int(b.index.shape[0]), int(b.index.shape[1]), int(b.chunk))
            for b in uldp_data.pair_data(data, shards=1, **kw).buckets]


def test_accelerator_auto_layout_runs_a_bucket_as_one_vmap():
    data = _records()  # 200 pairs of 100 records: one bucket of length 128, 25,600 rows
    assert _layout(data, backend="gpu") == [(200, 128, 200)]
    # an explicit pair layout keeps the record cap on any backend: 16384 // 128 = 128 pairs a
    # chunk, evened out over the 2 chunks 200 pairs need
    assert _layout(data, backend="gpu", max_pairs_per_chunk=None) == [(200, 128, 100)]
    assert _layout(data, backend="gpu", max_rows_per_chunk=16384) == [(200, 128, 100)]


def test_cpu_layout_is_unchanged():
    data = _records()
    auto = uldp_data.pair_data(data, shards=1, backend="cpu")
    capped = uldp_data.pair_data(data, shards=1, backend="cpu",
                                 max_rows_per_chunk=uldp_data.MAX_ROWS_PER_CHUNK)
    assert [b.chunk for b in auto.buckets] == [b.chunk for b in capped.buckets]
    for a, c in zip(auto.buckets, capped.buckets, strict=True):
        np.testing.assert_array_equal(a.index, c.index)
    with pytest.raises(validate.JaxflValueError, match="max_rows_per_chunk"):
        uldp_data.pair_data(data, max_rows_per_chunk=0)
