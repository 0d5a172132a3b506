"""jaxfl: vectorized JAX research library for differentially private collaborative learning.

Federated tasks (a dataset, its partition, the model and its evaluation, by name) are
:mod:`jaxfl.tasks` (``jaxfl.tasks.get("classification", dataset="mnist")``), imported on first
use; the datasets they read are declared in :mod:`jaxfl.data.catalog`.
"""

__version__ = "0.1.0"

from jaxfl import accounting, random, tree, validate  # noqa: E402,F401


def __getattr__(name):
    if name == "tasks":  # imported on first use: it pulls in the models and algorithms
        import importlib

        return importlib.import_module("jaxfl.tasks")
    raise AttributeError(f"module 'jaxfl' has no attribute {name!r}")
