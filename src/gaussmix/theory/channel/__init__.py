"""The loss half of the fixed point: the losses and their proximal maps, the channel's Gaussian
expectations and the normaliser.

Rank 2 inside :mod:`gaussmix.theory` (tests/test_layers.py).
"""
