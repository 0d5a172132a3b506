"""Data: loaders for standard formats, host-side partitioners, padded federated containers.

Modules: :mod:`~jaxfl.data.catalog` (the one dataset registry: every dataset's loader,
directories, URLs and digests; ``load(name)``, ``available(name)``), loaders
:mod:`~jaxfl.data.idx` (MNIST, Fashion-MNIST), :mod:`~jaxfl.data.cifar`,
:mod:`~jaxfl.data.leaf` (FEMNIST, Shakespeare JSON), :mod:`~jaxfl.data.text` (tiny
Shakespeare, speeches, char vocabularies), :mod:`~jaxfl.data.flamby` (heart disease,
TCGA-BRCA), :mod:`~jaxfl.data.tabular` (Parkinsons, credit card, scikit-learn sets);
:mod:`~jaxfl.data.partition` and :mod:`~jaxfl.data.allocation` (who holds what),
:mod:`~jaxfl.data.sampling` (who participates), :mod:`~jaxfl.data.federated` (padded arrays).
:mod:`~jaxfl.data.catalog` sits under both the loaders and :mod:`~jaxfl.data.download`
(fetching), above :mod:`~jaxfl.data._files`; it is the one dataset registry.
Federated tasks (data + partition + model + evaluation) built on these are :mod:`jaxfl.tasks`.
"""

from jaxfl.data import (  # noqa: F401
    allocation,
    catalog,
    cifar,
    federated,
    flamby,
    idx,
    leaf,
    partition,
    sampling,
    tabular,
    text,
)
from jaxfl.data.catalog import load  # noqa: F401
from jaxfl.data.federated import FederatedData, from_client_arrays, from_partition  # noqa: F401
