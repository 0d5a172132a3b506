"""Federated tasks: a dataset, its partition into the run's units, the model and its
evaluation, by name (in the spirit of fedjax's ``tasks.get_task``).

  >>> from jaxfl import tasks
  >>> tasks.names()
  ('classification', 'label_shards', 'node_shards', 'subject_users', 'users_silos', 'worker_splits')
  >>> t = tasks.get("classification", dataset="digits", num_clients=20, partition="iid")
  >>> t.train.x.shape[0], t.test[0].shape, t.evaluate is not None
  (20, (360, 8, 8, 1), True)
  >>> tasks.get("classification", partitions="iid")  # doctest: +ELLIPSIS
  Traceback (most recent call last):
  ...
  jaxfl._validate.JaxflValueError: Unknown option(s) ['partitions'] of task ...

Each task is registered under a name (:func:`register`); :func:`get` builds it from keyword
options (:func:`options` lists them with their defaults, :func:`describe` prints the task's
docstring: its source, partition, model and evaluation). An unknown name or option is a
:class:`jaxfl.validate.JaxflValueError` listing the valid ones, raised before any data loads.

The datasets themselves are declared once, in :mod:`jaxfl.data.catalog`. Tasks:

* ``classification`` (:mod:`~jaxfl.tasks.images`): clients of an image / tabular set
  (Dirichlet, IID or label shards): FedAvg, DP-FedAvg, DP-FTRL.
* ``label_shards``: equal label-sorted shards of standardized images: LightDP-FL.
* ``node_shards``: IID shards of flattened MNIST over graph nodes, validation hold-out: gossip DP.
* ``worker_splits``: Dirichlet workers with per-worker train / test splits: DP-OGL.
* ``subject_users`` (:mod:`~jaxfl.tasks.subjects`): subjects spread over users: subject-level DP.
* ``users_silos`` (:mod:`~jaxfl.tasks.silos`): users x silos: ULDP-FL.

A new task is a function with keyword-only options and a docstring, decorated with
``@register("name")`` in a module imported here.
"""

from jaxfl.tasks import images, silos, subjects  # noqa: F401  (registers the tasks)
from jaxfl.tasks.base import Task, builder, describe, get, names, options, register

__all__ = ["Task", "builder", "describe", "get", "names", "options", "register"]
