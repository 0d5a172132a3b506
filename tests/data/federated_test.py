"""from_partition: padding, masks and clear errors for degenerate partitions."""

import numpy as np
import pytest

from jaxfl import validate
from jaxfl.data import federated


def test_from_partition_pads_and_masks():
    x = np.arange(12, dtype=np.float32).reshape(6, 2)
    fd = federated.from_partition(x, np.arange(6), [np.array([4, 1]), np.array([], int),
                                                    np.array([0, 2, 5])], allow_empty=True,
                                  extras={"w": np.arange(6) * 10})
    np.testing.assert_array_equal(fd.num_examples, [2, 0, 3])
    np.testing.assert_array_equal(fd.mask, [[1, 1, 0], [0, 0, 0], [1, 1, 1]])
    np.testing.assert_array_equal(fd.y, [[4, 1, 0], [0, 0, 0], [0, 2, 5]])
    np.testing.assert_array_equal(fd.extras["w"][2], [0, 20, 50])


@pytest.mark.parametrize("n", [0, 5])
@pytest.mark.parametrize("allow_empty", [False, True])
def test_all_clients_empty_is_a_clear_error(n, allow_empty):
    with pytest.raises(validate.JaxflValueError, match="All 3 clients have no examples"):
        federated.from_partition(np.zeros((n, 2)), np.zeros(n, int), [np.array([], int)] * 3,
                                 allow_empty=allow_empty)


def test_extras_with_the_wrong_length_are_rejected():
    with pytest.raises(validate.ShapeError, match="extras\\['w'\\]"):
        federated.from_partition(np.zeros((5, 2)), np.zeros(5, int), [np.array([0, 1])],
                                 extras={"w": np.zeros(1)})


def test_pad_examples_adds_masked_zero_slots_and_refuses_to_shrink():
    fd = federated.from_partition(np.arange(10, dtype=np.float32)[:, None], np.arange(10),
                                  [np.array([0, 1, 2]), np.array([3, 4])],
                                  extras={"subject_id": np.arange(10) + 1})
    padded = federated.pad_examples(fd, 5)
    assert padded.x.shape == (2, 5, 1) and padded.max_examples == 5
    np.testing.assert_array_equal(padded.mask, [[1, 1, 1, 0, 0], [1, 1, 0, 0, 0]])
    np.testing.assert_array_equal(padded.extras["subject_id"][:, :3], fd.extras["subject_id"])
    np.testing.assert_array_equal(padded.num_examples, fd.num_examples)
    assert not padded.extras["subject_id"][:, 3:].any() and not padded.y[:, 3:].any()
    padded.validate()
    with pytest.raises(validate.JaxflValueError, match="max_examples >= 3"):
        federated.pad_examples(fd, 2)
