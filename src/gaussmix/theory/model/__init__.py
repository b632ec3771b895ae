"""What a problem is made of, independent of the solver: the mixture (label map, covariance
structures, finite-d realisations), the penalties, the mapping to scikit-learn's conventions
and the names of the outputs.

Rank 1 inside :mod:`gaussmix.theory` (tests/test_layers.py).
"""
