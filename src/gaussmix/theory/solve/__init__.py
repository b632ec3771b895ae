"""The fixed-point solver: options, state, the map, the iteration, refinement and error
estimate, observables (Theorem 2) and results.

Rank 4 inside :mod:`gaussmix.theory` (tests/test_layers.py).
"""
