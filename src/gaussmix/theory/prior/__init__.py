"""The penalty half of the fixed point: the priors (ridge on spectral and dense covariances,
lasso and elastic net).

Rank 2 inside :mod:`gaussmix.theory` (tests/test_layers.py).
"""
