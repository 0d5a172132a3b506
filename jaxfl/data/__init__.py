"""Data: loaders for standard formats, host-side partitioners, padded federated containers."""

from jaxfl.data import federated  # noqa: F401
from jaxfl.data.federated import FederatedData, from_client_arrays, from_partition  # noqa: F401
