"""Cryptographic building blocks (key agreement, homomorphic encryption) for secure aggregation."""
