"""The optimal penalty at the boundaries: lambda -> infinity detected like lambda -> 0+, with
test errors compared within their accuracy, consistently along a curve."""

from __future__ import annotations

import numpy as np
import pytest

import gaussmix as gm
from gaussmix.experiments import curves
from gaussmix.experiments.lambda_star import (
    OptimalLambdaResult,
    _LambdaSearch,
    optimal_lambda,
    optimal_lambda_curve,
)

BALANCED = gm.Mixture.isotropic(0.5, "simplex", n_clusters=2, labels="binary")


def test_logistic_balanced_optimum_is_lambda_to_infinity() -> None:
    """Issue 9 item 5: ``optimal-lambda --loss logistic --alpha 1`` reported lam_star ~ 539
    while lam = 1e4 has a lower test error (the mean-difference classifier is optimal)."""
    opt = optimal_lambda(BALANCED, "logistic", alpha=1.0)
    assert opt.at_upper_bound and not opt.at_boundary
    assert opt.lam_star == np.inf
    assert opt.lam_max >= 1e4
    assert "infinity" in opt.message
    at_1e4 = gm.solve(BALANCED, "logistic", lam=1e4, alpha=1.0)
    assert opt.test_error <= at_1e4.test_error
    assert opt.result.success and opt.result.params["lam"] == opt.lam_max


def test_search_errors_at_large_lambda_are_accurate() -> None:
    """The search resolves tiny overlaps (Q ~ lambda^-2): its test errors at large lambda
    agree with a tight solve (an absolute tolerance left them wrong by up to 6e-5)."""
    search = _LambdaSearch(
        BALANCED, "logistic", 1.0, "l2", None, {"tol": 1e-10, "estimate_error": False}, None
    )
    search.resolution = 1e-9
    for lam in (1e2, 1e3, 1722.138, 1e4, 1e5):
        res = search.solve(lam, "grid")
        ref = gm.solve(BALANCED, "logistic", lam=lam, alpha=1.0, tol=1e-14, estimate_error=False)
        assert res.test_error == pytest.approx(ref.test_error, abs=1e-11), lam
    _, errs = search.table()
    assert np.all(np.diff(errs) <= 1e-12)  # decreasing towards the lambda -> infinity limit


def test_accuracy_is_the_integration_error() -> None:
    """Two test errors count as equal within flat_tol plus their integration errors: ~0 for
    a closed-form channel, the change under a refined rule with quadrature."""
    kw = {"tol": 1e-10, "estimate_error": False}
    sq = _LambdaSearch(BALANCED, "square", 1.0, "l2", None, kw, None)
    sq.solve(1.0, "grid")
    assert sq.accuracy(1.0) <= 1e-14
    coarse = {**kw, "quadrature": gm.GaussHermite(6)}
    lg = _LambdaSearch(BALANCED, "logistic", 1.0, "l2", None, coarse, None)
    res = lg.solve(0.01, "grid")
    fine = gm.solve(BALANCED, "logistic", lam=0.01, alpha=1.0, tol=1e-12)
    err = abs(res.test_error - fine.test_error)
    assert err > 1e-8  # a 6-node rule is visibly off ...
    assert lg.accuracy(0.01) >= 0.1 * err  # ... and its accuracy says so
    assert lg.equal(0.01, 0.01, res.test_error + 0.5 * err, res.test_error, 0.0)
    assert not lg.equal(0.01, 0.01, res.test_error + 10 * lg.accuracy(0.01), res.test_error, 0.0)


@pytest.mark.parametrize(
    "delta2, alphas",
    [(0.01, [0.1, 0.1196, 0.2927, 0.35]), (0.1, [0.1, 0.1196, 0.143, 0.171])],
)
def test_ridge_upper_boundary_is_consistent_along_alpha(delta2, alphas) -> None:
    """``figure sparse-curves`` flipped between a finite lambda* and inf at neighbouring
    alpha (ridge, Delta1 = 0.1): the test error decreases to the lambda -> infinity limit
    at every alpha, and every point says so."""
    mix = gm.Mixture.sparse(0.1, 0.1, delta2)
    df = optimal_lambda_curve(mix, "square", alphas, penalty="l2")
    res = df.points
    assert df["at_upper_bound"].all(), df[["alpha", "lam_star", "lam_max"]]
    assert np.isinf(df["lam_star"]).all()
    for r, a in zip(res, alphas):
        limit = gm.solve(mix, "square", lam=1e8, alpha=a, tol=1e-30, max_iter=50)
        assert r.test_error == pytest.approx(limit.test_error, abs=1e-7)


def test_interior_optimum_still_interior_and_matches_a_dense_grid() -> None:
    mix = gm.Mixture.sparse(0.1, 0.1, 10.0)
    opt = optimal_lambda(mix, "square", alpha=0.5, penalty="l2")
    assert not opt.at_upper_bound and not opt.at_boundary
    assert 0 < opt.lam_star < 1.0
    lams = np.geomspace(1e-3, 1e2, 121)
    df = gm.lambda_sweep(mix, "square", lams, alpha=0.5, tol=1e-12)
    k = int(np.argmin(df.test_error))
    assert 0 < k < lams.size - 1  # the grid agrees that it is interior
    assert abs(np.log(opt.lam_star / lams[k])) <= np.log(lams[1] / lams[0])
    assert opt.test_error <= df.test_error.min() + 1e-9


def test_lambda_to_zero_still_detected() -> None:
    opt = optimal_lambda(gm.Mixture.sparse(0.1, 0.1, 1.0), "square", alpha=0.2, penalty="l1")
    assert opt.at_boundary and not opt.at_upper_bound and opt.lam_star == 0.0
    assert opt.lam_min < 1e-5


def test_lasso_large_lambda_is_not_resolved_as_a_scale() -> None:
    """The lasso has W* = 0 beyond a finite lambda: no relative tolerance there (it would
    resolve noise into a test error of 0)."""
    mix = gm.Mixture.sparse(0.1, 0.1, 10.0)
    opt = optimal_lambda(mix, "square", alpha=0.5, penalty="l1")
    ev = opt.evaluations[opt.evaluations.converged]
    assert (ev.test_error > 0.4).all()


def test_moved_names_still_importable_from_curves() -> None:
    assert curves.optimal_lambda is optimal_lambda
    assert curves.optimal_lambda_curve is optimal_lambda_curve
    assert curves.OptimalLambdaResult is OptimalLambdaResult
    assert gm.optimal_lambda is optimal_lambda
    with pytest.raises(AttributeError):
        curves.no_such_name  # noqa: B018
