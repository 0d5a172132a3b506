"""Federated algorithms: each module implements one paper's algorithm(s) behind the
``Algorithm(init, apply)`` interface of :mod:`jaxfl.algorithms.base`."""
