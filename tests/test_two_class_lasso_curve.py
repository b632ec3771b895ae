"""Curves of the two-class cross-entropy (one-hot labels, K = 2) with the lasso and the
elastic net: the cross-entropy's two outputs are one effective output (their difference,
``P = (1, -1) / sqrt(2)``), the prior a scalar one in closed form, so the curve is solved as
one stacked state; its points are the single points (the reference) within their estimates.
(They raised "too many values to unpack" in the stacked map's start, where the prior took
the L-dimensional lasso's path, which takes one point.)"""

from __future__ import annotations

import numpy as np
import pytest

import gaussmix as gm
from gaussmix.experiments import curves
from gaussmix.experiments.continuation import stacked_curve_options
from gaussmix.theory.prior.prior import takes_stacked_points
from gaussmix.theory.solve.options import solver_options

MIX2 = gm.Mixture.isotropic(1.0, "antipodal", n_clusters=2)
PENALTIES = [("l1", None), ("elastic-net", 0.5)]
KEYS = ("test_error", "train_error", "train_loss", "nonzero_fraction", "l1_norm")

#: the fixed points are solved to tol = 1e-10 (scaled residual of the state): two solves of
#: one point from different starts agree to a few times that in every observable
TOL = 1e-10
SAME = 10 * TOL


def _agree(r: gm.FixedPointResult, single: gm.FixedPointResult) -> None:
    bound = SAME + r.integration_error + single.integration_error
    for k in KEYS:
        assert abs(getattr(r, k) - getattr(single, k)) <= bound, k


@pytest.mark.parametrize(("penalty", "l1_ratio"), PENALTIES, ids=["l1", "elastic-net"])
def test_the_two_class_lasso_curve_is_stacked(penalty, l1_ratio) -> None:
    one = curves._problems(MIX2, "cross-entropy", [(0.1, 1.0)], penalty, l1_ratio)[0]
    assert one.P.shape == (1, 2)  # two outputs seen through one
    assert takes_stacked_points(one.penalty_spec, one.mixture, one.P)
    assert stacked_curve_options(one, solver_options(None, {}), 12) is not None
    # one output of three full ones: the L-dimensional lasso, one point per call
    other = np.ones((1, 3)) / np.sqrt(3.0)
    assert not takes_stacked_points(one.penalty_spec, one.mixture, other)


@pytest.mark.parametrize(("penalty", "l1_ratio"), PENALTIES, ids=["l1", "elastic-net"])
def test_a_two_class_lasso_curve_is_its_single_points(penalty, l1_ratio) -> None:
    alphas = np.linspace(0.5, 3.0, 12)
    kw = dict(penalty=penalty, l1_ratio=l1_ratio, tol=TOL)
    df = gm.learning_curve(MIX2, "cross-entropy", alphas, lam=0.1, **kw)
    assert df.converged.all()
    for alpha, r in zip(alphas, df.points):
        _agree(r, gm.solve(MIX2, "cross-entropy", lam=0.1, alpha=alpha, **kw))


@pytest.mark.parametrize(("penalty", "l1_ratio"), PENALTIES, ids=["l1", "elastic-net"])
def test_a_two_class_lasso_sweep_is_its_single_points(penalty, l1_ratio) -> None:
    # up to lam = 10, on the way to the zero estimator (test error 1/2, no weight left)
    lams = np.geomspace(1e-2, 10.0, 12)
    kw = dict(penalty=penalty, l1_ratio=l1_ratio, tol=TOL)
    df = gm.lambda_sweep(MIX2, "cross-entropy", lams, alpha=1.0, **kw)
    assert df.converged.all()
    for lam, r in zip(lams, df.points):
        _agree(r, gm.solve(MIX2, "cross-entropy", lam=lam, alpha=1.0, **kw))
    # from weights on a fifth of the entries or more to none (to 1e-12)
    assert df.nonzero_fraction.iloc[0] > 0.2 and df.nonzero_fraction.iloc[-1] < 1e-11
