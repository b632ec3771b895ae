"""One validated problem (mixture + loss + penalty + alpha, lambda) and its symmetry reduction.

Rank 3 inside :mod:`gaussmix.theory` (tests/test_layers.py).
"""
