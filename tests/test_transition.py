"""Separability threshold alpha*, the max-margin estimator and lam = 0 (issue 10, items 1, 4).

Every value is checked against something independent: the Gordon / Gardner closed form for
two clusters (against the fixed point at the threshold), Cover's 2, a brute-force projection,
the general active-set path against the exchangeable closed form, the hinge loss at small
lam (exactly the max-margin classifier once lam is small enough), cross-entropy at
decreasing lam (direction converging at rate 1 / log(1/lam)), and the margin of the
max-margin fixed point vanishing linearly at alpha*.
"""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest

import gaussmix as gm
from gaussmix.core.exceptions import IntegrationWarning
from gaussmix.experiments.transition import TransitionResult, separability_threshold
from gaussmix.theory.api.api import check_lam_alpha
from gaussmix.theory.limits import margin as mg
from gaussmix.theory.limits import separability as sep


def _binary(delta=0.5, rho=None):
    return gm.Mixture.isotropic(delta, "antipodal", n_clusters=2, labels="binary", rho=rho)


# --------------------------------------------------------------------------- K = 2: exact
@pytest.mark.parametrize("delta", [0.25, 0.5, 1.0])
@pytest.mark.parametrize("rho", [None, [0.3, 0.7]])
def test_two_clusters_fixed_point_matches_gardner_closed_form(delta, rho):
    # one-hot labels, Gaussian means: |mu_bar|^2 = 1/2; binary labels with the Gram matrix
    # of the same mean difference: the same separability problem
    onehot = gm.Mixture.isotropic(delta, "gaussian", n_clusters=2, rho=rho)
    gram = np.array([[0.5, -0.5], [-0.5, 0.5]])
    binary = gm.Mixture.isotropic(delta, gram, labels="binary", rho=rho)
    closed = sep.gardner_threshold(0.5, delta, 0.5 if rho is None else rho[0])
    for mix in (onehot, binary):
        est = sep.separability_threshold_estimate(mix)
        assert est.success and est.method == "homogeneous"
        assert est.alpha_star == pytest.approx(closed, rel=1e-8)
        assert est.growth == pytest.approx(1.0, abs=1e-9)  # the identity s^2 = 1
        res = separability_threshold(mix, evidence=False)
        assert res.success and abs(res.alpha_star / closed - 1) < 1e-4
        assert res.evidence["closed_form"] == pytest.approx(closed, rel=1e-12)


def test_exchangeable_equation_matches_closed_form_for_two_clusters():
    mix = gm.Mixture.isotropic(0.5, "gaussian", n_clusters=2)
    est = sep.separability_threshold_estimate(mix, method="exchangeable", log2_n=13)
    assert abs(est.alpha_star - sep.gardner_threshold(0.5, 0.5)) < 4 * est.std_error
    assert est.std_error < 2e-3


def test_cover_limit_without_means():
    mix = gm.Mixture.isotropic(0.7, np.zeros((2, 2)), labels="binary")
    assert sep.binary_separability_threshold(mix) == pytest.approx(2.0, rel=1e-9)
    assert sep.separability_threshold_estimate(mix).alpha_star == pytest.approx(2.0, rel=1e-9)


def test_relabelling_two_non_exchangeable_clusters():
    # unequal priors and variances, block covariance: only the homogeneous map applies
    mix = gm.Mixture.block(
        [0.3, 0.7], [[0.4, 0.9], [1.2, 0.6]], means="gaussian", labels="onehot", rho=[0.35, 0.65]
    )
    a = sep.separability_threshold_estimate(mix)
    b = sep.separability_threshold_estimate(mix.permute([1, 0]))
    assert a.success and b.success
    assert a.alpha_star == pytest.approx(b.alpha_star, rel=1e-10)
    assert a.alpha_star > 2.0  # informative means make separation easier than Cover's 2


# --------------------------------------------------------------------------- K >= 3
def test_sort_projection_matches_brute_force():
    from scipy.optimize import minimize

    rng = np.random.default_rng(3)
    g = rng.standard_normal((12, 5))
    k, d0, dg, dd = sep.exchangeable_stats(0.7, g, 0.4)
    for i in range(g.shape[0]):
        om = g[i].copy()
        om[0] += 0.7
        cons = [{"type": "ineq", "fun": lambda h, j=j: h[0] - h[j] - 0.4} for j in range(1, 5)]
        sol = minimize(
            lambda h, om=om: 0.5 * np.sum((h - om) ** 2),
            om,
            constraints=cons,
            method="SLSQP",
            options={"ftol": 1e-15, "maxiter": 500},
        )
        d = sol.x - om
        assert dd[i] == pytest.approx(d @ d, abs=1e-7)
        assert d0[i] == pytest.approx(d[0], abs=1e-6)
        assert k[i] == np.sum(np.abs(d[1:]) > 1e-6)


def test_exchangeable_equation_matches_general_homogeneous_map():
    mix = gm.Mixture.isotropic(0.5, "gaussian", n_clusters=3)
    ex = sep.separability_threshold_estimate(mix, method="exchangeable", log2_n=13)
    ho = sep.separability_threshold_estimate(mix, method="homogeneous", log2_n=12)
    assert ex.success and ho.success
    se = math.hypot(ex.std_error, ho.std_error)
    assert abs(ex.alpha_star - ho.alpha_star) < 4 * se
    assert ho.growth == pytest.approx(1.0, abs=1e-3)
    # at the threshold: alpha* E|A| = K - 1 support vectors per input dimension
    assert ho.active == pytest.approx(2.0, rel=1e-3)


def test_threshold_increases_with_k_and_decreases_with_delta():
    by_k = [
        sep.separability_threshold_estimate(
            gm.Mixture.isotropic(0.5, "gaussian", n_clusters=k), log2_n=12
        )
        for k in (2, 3, 4, 5)
    ]
    a = [e.alpha_star for e in by_k]
    assert all(e.success for e in by_k)
    assert all(x + 4 * e.std_error < y for x, y, e in zip(a, a[1:], by_k[1:], strict=False))
    by_delta = [
        sep.separability_threshold_estimate(
            gm.Mixture.isotropic(d, "gaussian", n_clusters=3), log2_n=12
        ).alpha_star
        for d in (0.25, 0.5, 1.0)
    ]
    assert by_delta[0] > by_delta[1] > by_delta[2] > 2.0


def _check_contract(res: TransitionResult) -> None:
    assert isinstance(res, TransitionResult)
    assert res.success and res.rel_accuracy <= 1e-4 and res.message == "converged"
    lo, hi = res.bracket
    assert lo <= res.alpha_star <= hi and (hi - lo) / res.alpha_star < 1e-3
    below, above = res.evidence["below"], res.evidence["above"]
    assert below["alpha"] < lo and below["train_error"] == 0.0 and below["margin"] > 0
    assert above["alpha"] > hi and above["train_error"] > 0.01
    d = json.loads(json.dumps(res.to_dict(), allow_nan=False))
    assert d["converged"] is True and d["alpha_star"] == pytest.approx(res.alpha_star)
    assert res.n_evaluations > 0 and res.elapsed > 0


def test_separability_threshold_contract_two_clusters():
    res = separability_threshold(_binary())
    _check_contract(res)
    assert res.rel_accuracy < 1e-12 and res.log2_n == 0
    assert res.evidence["above"]["loss"] == "logistic"


@pytest.mark.slow
def test_separability_threshold_contract_three_clusters():
    res = separability_threshold(gm.Mixture.isotropic(0.5, "gaussian", n_clusters=3))
    _check_contract(res)
    assert res.evidence["above"]["loss"] == "cross-entropy"


# --------------------------------------------------------------------------- max-margin
def test_max_margin_equals_hinge_at_small_lambda():
    # for separable data the soft-margin SVM is the hard-margin one once C = 1/lam is large
    mix = _binary()
    astar = sep.binary_separability_threshold(mix)
    mm = mg.max_margin(mix, 3.0, alpha_star=astar)
    hinge = gm.solve(mix, "hinge", lam=1e-3, alpha=3.0)
    assert mm.success and mm.train_error == 0.0 and hinge.train_error == 0.0
    assert mm.test_error == pytest.approx(hinge.test_error, abs=1e-8)


@pytest.mark.slow
def test_margin_vanishes_linearly_at_alpha_star():
    mix = _binary()
    astar = sep.binary_separability_threshold(mix)
    a1, a2 = 0.95 * astar, 0.975 * astar
    k1 = mg.max_margin(mix, a1, alpha_star=astar).margin
    k2 = mg.max_margin(mix, a2, alpha_star=astar).margin
    assert 0 < k2 < k1
    root = a2 - k2 * (a2 - a1) / (k2 - k1)  # linear extrapolation: error O(gap^2)
    assert root == pytest.approx(astar, rel=2e-3)


@pytest.mark.slow
def test_cross_entropy_approaches_max_margin_as_lambda_vanishes():
    mix = gm.Mixture.isotropic(0.5, "gaussian", n_clusters=3)
    astar = 4.2210  # separability_threshold of this mixture (tested above)
    mm = mg.max_margin(mix, 2.5, alpha_star=astar)
    general = mg.max_margin(mix, 2.5, alpha_star=astar, method="general", log2_n=11)
    assert general.test_error == pytest.approx(mm.test_error, abs=2e-4)
    assert general.margin == pytest.approx(mm.margin, rel=1e-3)
    lams = [1e-2, 1e-3, 1e-4]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IntegrationWarning)
        errs = [gm.solve(mix, "cross-entropy", lam=lam, alpha=2.5).test_error for lam in lams]
    gaps = [mm.test_error - e for e in errs]
    # the cross-entropy direction converges to the max-margin one at rate 1/log(1/lam)
    # (Rosset et al. 2003; Soudry et al. 2018): gaps positive, shrinking, and
    # gap * log(1/lam) non-increasing
    assert all(g > 0 for g in gaps)
    scaled = [g * math.log(1 / lam) for g, lam in zip(gaps, lams, strict=True)]
    assert scaled[0] > scaled[1] > scaled[2]
    assert gaps[-1] < 0.01


def test_training_error_at_small_lambda_on_both_sides():
    mix3 = gm.Mixture.isotropic(0.5, "gaussian", n_clusters=3)
    mix2 = _binary()
    a2 = sep.binary_separability_threshold(mix2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IntegrationWarning)
        assert gm.solve(mix3, "cross-entropy", lam=1e-4, alpha=2.5).train_error == 0.0
        assert gm.solve(mix3, "cross-entropy", lam=1e-4, alpha=4.65).train_error > 0.05
        # (0.45 alpha*: closer, the existing solver does not converge at lam = 1e-4)
        assert gm.solve(mix2, "logistic", lam=1e-4, alpha=0.45 * a2).train_error == 0.0
        assert gm.solve(mix2, "logistic", lam=1e-4, alpha=1.2 * a2).train_error > 0.01


# --------------------------------------------------------------------------- lam = 0
def test_lam_zero_maximum_likelihood_exists_only_above_alpha_star():
    mix = _binary()
    astar = sep.binary_separability_threshold(mix)
    with pytest.raises(sep.SeparabilityError, match=r"does not exist.*alpha\* = 6\.663"):
        gm.solve(mix, "logistic", lam=0.0, alpha=0.5 * astar)
    with pytest.raises(ValueError, match="max_margin"):
        gm.make_problem(mix, "logistic", lam=0.0, alpha=astar)
    r0 = gm.solve(mix, "logistic", lam=0.0, alpha=1.5 * astar)
    r1 = gm.solve(mix, "logistic", lam=1e-6, alpha=1.5 * astar)
    assert r0.success and r0.train_error > 0
    assert r0.test_error == pytest.approx(r1.test_error, abs=1e-5)
    with pytest.raises(ValueError, match="pass mixture="):
        check_lam_alpha(0.0, 10.0, loss="cross-entropy")
    assert check_lam_alpha(0.0, 1.5 * astar, loss="logistic", mixture=mix) == (0.0, 1.5 * astar)
    with pytest.raises(ValueError, match=r"lam 0 is not valid for loss='hinge'.*lam must be > 0"):
        gm.solve(mix, "hinge", lam=0.0, alpha=10.0)


# --------------------------------------------------------------------------- bad input
def test_bad_input_messages():
    mix = _binary()
    with pytest.raises(TypeError, match="mixture"):
        separability_threshold("isotropic")
    with pytest.raises(ValueError, match="rel_tol"):
        separability_threshold(mix, rel_tol=0.0)
    with pytest.raises(ValueError, match="n_randomisations"):
        separability_threshold(mix, n_randomisations=1)
    custom = gm.Mixture.isotropic(0.5, "gaussian", n_clusters=3, labels=[[1.0], [-1.0], [1.0]])
    with pytest.raises(ValueError, match="one-hot labels .* or binary"):
        separability_threshold(custom)
    with pytest.raises(ValueError, match="alpha"):
        mg.max_margin(mix, -1.0, alpha_star=6.0)
    with pytest.raises(sep.SeparabilityError, match=r"does not exist at alpha=7.*alpha\* = 6\.66"):
        mg.max_margin(mix, 7.0)
    with pytest.raises(ValueError, match="method"):
        mg.max_margin(mix, 1.0, alpha_star=6.0, method="fast")
    with pytest.raises((TypeError, ValueError), match="rel_tol") as info:
        separability_threshold(mix, rel_tol="x")
    assert "\n" not in str(info.value)


@pytest.mark.slow
def test_ten_classes():
    res10 = separability_threshold(
        gm.Mixture.isotropic(0.5, "gaussian", n_clusters=10), evidence=False
    )
    res5 = sep.separability_threshold_estimate(
        gm.Mixture.isotropic(0.5, "gaussian", n_clusters=5), log2_n=13
    )
    assert res10.success and res10.rel_accuracy <= 1e-4
    assert res10.alpha_star > res5.alpha_star + 4 * res5.std_error


@pytest.mark.slow
def test_relabelling_three_non_exchangeable_clusters():
    gram = np.array([[1.0, 0.3, 0.0], [0.3, 0.8, 0.1], [0.0, 0.1, 1.2]])
    mix = gm.Mixture.isotropic([0.4, 0.6, 0.5], gram, rho=[0.25, 0.35, 0.4])
    a = sep.separability_threshold_estimate(mix, log2_n=12)
    b = sep.separability_threshold_estimate(mix.permute([2, 0, 1]), log2_n=12)
    assert a.success and b.success
    assert abs(a.alpha_star - b.alpha_star) < 4 * math.hypot(a.std_error, b.std_error)
