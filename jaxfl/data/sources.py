"""The dataset queries, re-exported from the one registry :mod:`jaxfl.data.catalog`.

Every dataset is declared once, in :data:`jaxfl.data.catalog.DATASETS`; this module only
re-exports its queries under their older home (``sources.load(name)`` etc.).

Example Usage:
  >>> "mnist" in names() and "facebook" in names()
  True
"""

from jaxfl.data.catalog import Dataset, available, info, load, names

DatasetInfo = Dataset  # the record's older name

__all__ = ["Dataset", "DatasetInfo", "available", "info", "load", "names"]
