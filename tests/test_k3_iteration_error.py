"""The integration-error estimate contains the fixed-point iteration's own error (K = 3
cross-entropy at ``lam = 1e-3``, BENCHMARKS "K = 3 at lam = 1e-3: curve against single
point").

The point-by-point curve and :func:`gaussmix.solve` integrate every point of
``linspace(2.5, 5, 20)`` with the same symmetric rule, but stop the iteration at different
states within ``tol = 1e-8`` of the fixed point; with the estimate of the integration alone
(before the estimate, :func:`~gaussmix.theory.solve.batch_solve.estimate_points`, iterated its
refined rule to :func:`~gaussmix.theory.numerics.tolerances.refined_tol`) their observables
differed by up to 4e-9 where the estimates were 1e-12 to 1e-10.  The truth is a solve to
``tol = 1e-13`` on a much finer rule of the same family (40 panels of 14 nodes instead of 32
of 10, 2.4 times the nodes).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import gaussmix as gm
from gaussmix.experiments import continuation
from gaussmix.theory.problem.symmetry import ExchangeablePanels

MIX3 = gm.Mixture.isotropic(0.5, "simplex", n_clusters=3)
LAM = 1e-3
GRID = np.linspace(2.5, 5.0, 20)
#: the point of the grid where the two sides differ most (alpha = 4.737, past alpha*_3)
WORST = 17
KEYS = ("test_error", "train_error", "train_loss")


def _truth(alpha: float) -> gm.FixedPointResult:
    """The fixed point to ``tol = 1e-13`` on a finer symmetric rule, centred as the automatic
    rule of the point."""
    tight = gm.solve(MIX3, "cross-entropy", lam=LAM, alpha=alpha, tol=1e-13)
    rule = tight.state.rule
    fine = ExchangeablePanels(3, 40, 14, centre=rule.centre, scale=rule.scale)
    return gm.solve(
        MIX3,
        "cross-entropy",
        lam=LAM,
        alpha=alpha,
        tol=1e-13,
        quadrature=fine,
        init=tight,
        estimate_error=False,
    )


def _assert_within_estimate(alpha: float) -> None:
    """A single point at ``alpha`` within its estimate of :func:`_truth` (the test error,
    training error and training loss)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        point = gm.solve(MIX3, "cross-entropy", lam=LAM, alpha=alpha)
        truth = _truth(alpha)
    assert point.success and truth.success
    for key in KEYS:
        assert abs(getattr(point, key) - getattr(truth, key)) <= point.integration_errors[key]


@pytest.mark.slow
def test_a_sharp_three_class_point_is_within_its_estimate_of_a_finer_rule() -> None:
    _assert_within_estimate(float(GRID[WORST]))


@pytest.mark.slow
def test_the_point_by_point_curve_agrees_with_single_points_within_their_estimates(
    monkeypatch,
) -> None:
    """Every point of the curve within the sum of the two estimates of the single point, and
    the curve's worst point within its own estimate of the truth."""
    monkeypatch.setattr(continuation, "STACKED_MIN_POINTS", 10**9)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        df = gm.learning_curve(MIX3, "cross-entropy", GRID, lam=LAM)
        points = [gm.solve(MIX3, "cross-entropy", lam=LAM, alpha=float(a)) for a in GRID]
        truth = _truth(float(GRID[WORST]))
    assert df.converged.all() and all(p.success for p in points)
    for curve, point in zip(df.points, points):
        for key in KEYS:
            bound = curve.integration_errors[key] + point.integration_errors[key]
            assert abs(getattr(curve, key) - getattr(point, key)) <= bound
    worst = df.points[WORST]
    for key in KEYS:
        assert abs(getattr(worst, key) - getattr(truth, key)) <= worst.integration_errors[key]


@pytest.mark.slow
@pytest.mark.xfail(
    strict=True,
    reason="the change under refinement cancels: at alpha = 5.43 the training loss on 32 x 10 "
    "symmetric panels is 1.8e-10 off (the 8-node rule 1.5e-9), its estimate 7.6e-12",
)
def test_the_training_loss_past_the_cusp_is_within_its_estimate_of_a_finer_rule() -> None:
    """At alpha = 5.43 (``geomspace(0.2, 8, 20)[17]``) the solve refines 8 to 10 nodes per
    panel; the values at 12, 14, 16 nodes and on 64 x 6 graded panels in ``xi`` (without the
    symmetry) agree to 2e-12, the 10-node value is off by 1.8e-10 in the training loss: the
    refinement's change (the 8-node state stopped at ``tol``, the 10-node one at
    ``refined_tol``) nearly cancels there."""
    _assert_within_estimate(float(np.geomspace(0.2, 8.0, 20)[17]))
