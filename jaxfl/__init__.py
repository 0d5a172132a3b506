"""jaxfl: vectorized JAX research library for differentially private collaborative learning."""

__version__ = "0.1.0"

from jaxfl import accounting, random, tree, validate  # noqa: E402,F401
