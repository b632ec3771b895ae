"""The per-call shortcuts of the hot paths give the general path's numbers to the bit.

Each shortcut skips work that cannot change the answer where a cheap test says so (no zero
entry: no zero metric, no point mass); these tests put the shortcut's case and the general
case side by side on the same numbers.
"""

from __future__ import annotations

import numpy as np
import pytest

from gaussmix.theory.channel.channel import channel_evaluation, identity_prox_moments
from gaussmix.theory.channel.losses import CrossEntropyLoss, ReducedLoss, get_loss
from gaussmix.theory.numerics.quadrature import GaussHermite
from gaussmix.theory.problem.problem import _complement_of_ones
from gaussmix.theory.solve.observables import (
    _all_point_masses,
    _gaussian_interval,
    _point_masses,
)

MOMENTS = ("Ef", "Eff", "Edf", "Eloss", "Eenv")


def test_gaussian_interval_without_point_masses_is_the_general_path():
    """Where every ``s > 0`` (the shortcut) each probability is the one the general path
    (some ``s = 0`` in the same call) gives that entry, to the bit; the point mass's entry
    is its limit (1/2 at an end)."""
    rng = np.random.default_rng(3)
    m = rng.standard_normal(6)
    s = rng.uniform(0.1, 2.0, 6)
    lo = np.array([-np.inf, -1.0, 0.0, -0.5, -np.inf, 0.2])
    hi = np.array([0.0, np.inf, 1.0, 0.5, np.inf, 3.0])
    fast = _gaussian_interval(m, s, lo, hi)
    s_mixed = s.copy()
    s_mixed[2] = 0.0
    m_mixed = m.copy()
    m_mixed[2] = lo[2]  # a point mass at an end
    general = _gaussian_interval(m_mixed, s_mixed, lo, hi)
    keep = np.arange(6) != 2
    assert np.array_equal(fast[keep], general[keep])
    assert general[2] == 0.5


@pytest.mark.parametrize(
    "Q, expected",
    [
        (np.zeros((3, 2, 2)), True),
        (np.array([[[0.0, 0.0], [0.0, 0.0]], [[1.0, 0.0], [0.0, 1.0]]]), False),
        (np.array([[[1.0, 0.0], [0.0, 2.0]], [[1.0, 0.0], [0.0, 1.0]]]), False),  # zeros off
        (np.full((2, 1, 1), 0.3), False),
    ],
)
def test_all_point_masses_is_every_cluster_a_point_mass(Q, expected):
    assert _all_point_masses(Q) is expected
    assert bool(_point_masses(Q).all()) is expected


@pytest.mark.parametrize("loss", ["logistic", "cross-entropy"])
def test_channel_with_one_zero_metric_is_each_clusters_own(loss):
    """A zero metric among others (the test on ``V``'s entries fails, the clusters' check
    runs) gives the identity prox's moments there and, for the other cluster, its own
    evaluation alone (every entry of its ``V`` nonzero: the shortcut), to the bit."""
    rng = np.random.default_rng(5)
    if loss == "logistic":
        L, y = 1, np.array([[1.0], [-1.0]])
        V = np.array([[[0.0]], [[0.7]]])
    else:
        L, y = 2, np.eye(3)[:2]
        V = np.array([np.zeros((2, 2)), [[0.8, 0.1], [0.1, 0.6]]])
    if loss == "cross-entropy":  # three classes on the complement of (1, 1, 1)
        lo = ReducedLoss(CrossEntropyLoss(), _complement_of_ones(3))
    else:
        lo = get_loss(loss)
    M = rng.standard_normal((2, L))
    b = rng.standard_normal(L)
    Q = np.array([np.eye(L) * 0.5, np.eye(L) * 0.9])
    rule = GaussHermite(20, L)
    both, _ = channel_evaluation(lo, y, M, b, Q, V, rule)
    zero = identity_prox_moments(lo, y[:1], M[:1] + b, Q[:1], rule)
    other, _ = channel_evaluation(lo, y[1:], M[1:], b, Q[1:], V[1:], rule)
    for name in MOMENTS:
        assert np.array_equal(getattr(both, name)[:1], getattr(zero, name)), name
        assert np.array_equal(getattr(both, name)[1:], getattr(other, name)), name
