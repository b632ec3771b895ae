"""Answers built on the solver: the separability threshold, the max-margin estimator and the
Bayes-optimal error.

Rank 5 inside :mod:`gaussmix.theory` (tests/test_layers.py).
"""
