"""The validating entry points: make_problem and solve (gm.make_problem, gm.solve).

Rank 6 inside :mod:`gaussmix.theory` (tests/test_layers.py).
"""
