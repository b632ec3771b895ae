"""Numerical building blocks that know no model: the named tolerances, linear algebra, the
compiled kernels, quadrature rules and Gaussian orthant probabilities.

Rank 0 inside :mod:`gaussmix.theory` (tests/test_layers.py).
"""
