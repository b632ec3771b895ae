"""Theorem 2's observables exist once, with a leading axis of points
(:func:`gaussmix.theory.solve.refinement.light_observables`): a single point's are a batch of one,
and the points of a stacked map (a curve's) are each their single point's."""

from __future__ import annotations

import numpy as np
import pytest

import gaussmix as gm
from gaussmix.experiments import curves
from gaussmix.theory.solve import batch_solve
from gaussmix.theory.solve.fixed_point import FixedPointMap
from gaussmix.theory.solve.policy import channel_rule
from gaussmix.theory.solve.refinement import evaluate_observables

BINARY = gm.Mixture.isotropic(0.5, "antipodal", labels="binary")
SPARSE = gm.Mixture.sparse(0.1, 0.1, 1.0)
MIX3 = gm.Mixture.isotropic(0.5, "simplex", n_clusters=3)
MIX4 = gm.Mixture.isotropic(0.5, "simplex", n_clusters=4)
_A5 = np.random.default_rng(5).standard_normal((5, 5))
#: five clusters that are not exchangeable (each orthant distinct)
MIX5 = gm.Mixture.isotropic(1.0, _A5 @ _A5.T / 2, rho=np.array([0.1, 0.15, 0.2, 0.25, 0.3]))
KEYS = ("test_error", "train_error", "train_loss", "test_loss")
#: the points' observables are sums of ``K`` terms of order one, summed in another order
#: over a leading axis of points (a matrix-vector product instead of a dot product): a few
#: rounding errors apart; their hats are the same channel evaluations, to rounding
RTOL = 1e-13


@pytest.mark.parametrize(
    ("mixture", "loss", "penalty", "symmetric"),
    [
        (BINARY, "logistic", "l2", False),
        (SPARSE, "hinge", "l1", False),
        (MIX3, "cross-entropy", "l2", False),
        # exchangeable clusters: cluster 0's channel and risk stand for each point's
        (MIX3, "cross-entropy", "l2", True),
        (MIX3, "square", "l2", False),
        # orthants of dimension 3 and 4: every point's clusters in one batched call, each
        # orthant its own (exchangeable clusters: each point's orthants are one problem)
        (MIX4, "square", "l2", False),
        (MIX5, "square", "l2", False),
    ],
    ids=[
        "binary logistic",
        "lasso hinge",
        "K=3 ce",
        "K=3 ce symmetric",
        "K=3 sq",
        "K=4 sq",
        "K=5 sq unequal",
    ],
)
def test_each_stacked_point_has_its_single_points_observables(
    mixture, loss, penalty, symmetric
) -> None:
    points = [(lam, alpha) for lam, alpha in [(0.1, 0.5), (1.0, 2.0), (0.03, 3.0)]]
    problems = curves._problems(mixture, loss, points, penalty, None)
    sym = problems[0].symmetry if symmetric else None
    assert (sym is not None) == symmetric
    rule = channel_rule(problems[0], None, symmetry=symmetric)
    T = FixedPointMap(problems, rule, symmetry=sym)
    x = T(T(T.start()))  # (a state away from the start's, different at each point)
    stacked = batch_solve.stacked_observables(T, x)
    assert len(stacked) == len(problems)
    for problem, xi, got in zip(problems, T.split(x), stacked):
        want = evaluate_observables(
            problem, FixedPointMap(problem, rule, symmetry=sym), xi, light=True
        )
        for k in KEYS:
            assert np.isfinite(got.value(k))
            np.testing.assert_allclose(
                got.value(k), want.value(k), rtol=RTOL, atol=1e-15, err_msg=k
            )
            np.testing.assert_allclose(got.errors[k], want.errors[k], rtol=RTOL, atol=0, err_msg=k)
        for a, b in zip(got.state + got.hats, want.state + want.hats):
            np.testing.assert_allclose(a, b, rtol=RTOL, atol=1e-15)
