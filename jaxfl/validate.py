"""The public face of jaxfl's argument checks: typed errors and the validators that raise them.

Code outside the library (experiment configs, scripts, user algorithms) checks its arguments
with these, so a bad config fails before any work with the same errors and messages as the
library's own entry points. The implementation is :mod:`jaxfl._validate`; this module only
names what is public. The library's modules import this one too; only those that need a private
helper (``x64_enabled``, ``_is_real``) import :mod:`jaxfl._validate`.

Example Usage:
  >>> from jaxfl import validate
  >>> validate.positive_int("rounds", 3)
  3
  >>> try:
  ...     validate.one_of("mode", "fast", ("strict", "paper"))
  ... except validate.JaxflValueError as e:
  ...     print(type(e).__name__)
  JaxflValueError
"""

from jaxfl._validate import (
    ChecksumError,
    DataNotFoundError,
    JaxflValueError,
    PrivacyParameterError,
    ShapeError,
    TopologyError,
    delta,
    generator,
    non_negative,
    one_of,
    positive,
    positive_int,
    probability,
    shape,
)

__all__ = ["JaxflValueError", "PrivacyParameterError", "ShapeError", "TopologyError",
           "DataNotFoundError", "ChecksumError", "positive", "non_negative", "delta",
           "probability", "positive_int", "one_of", "shape", "generator"]
