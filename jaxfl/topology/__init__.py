"""Topologies: group structures (overlapping grouped learning) and communication graphs with
mixing matrices (gossip). Host-side NumPy / networkx; converted to jnp once at the boundary.
Import the submodules directly, e.g. ``from jaxfl.topology import groups``."""
