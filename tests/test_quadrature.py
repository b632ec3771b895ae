"""Quadrature rules (issue 10, items 2-3): graded composite Gauss-Legendre panels, seeded
randomised QMC with replicate standard errors, the automatic choice by dimension and regime,
and the solver's accuracy at small lambda."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.special import ndtr

import gaussmix as gm
from gaussmix.theory.numerics.quadrature import (
    GaussHermite,
    GradedPanels,
    SobolRQMC,
    auto_rule,
    composite_legendre,
    graded_edges,
    kinked_composite_legendre,
)

#: the acceptance target of issue 10: integration error of the test error at small lambda
SMALL_LAM_TARGET = 1e-7


def _relu_mean(a: float, s: float = 1.0) -> float:
    """``E[max(s xi - a, 0)]`` for ``xi ~ N(0, 1)`` (closed form)."""
    z = a / s
    return float(s * np.exp(-0.5 * z * z) / np.sqrt(2 * np.pi) - a * ndtr(-z))


# ----------------------------------------------------------------------------- rules
@pytest.mark.parametrize("dim", [1, 2])
def test_graded_panels_integrate_gaussian_moments(dim):
    # the default rule's outer panels (wide, in the far tails) carry ~1e-10 of the second
    # moment at 16 panels in two dimensions; its refinement is exact to rounding
    coarse = auto_rule(dim, smooth=False)
    np.testing.assert_allclose(coarse.weights @ coarse.nodes**2, 1.0, rtol=1e-9)
    rule = coarse.refined()
    x, w = rule.nodes, rule.weights
    assert w.sum() == pytest.approx(1.0, abs=1e-15)
    assert np.all(w > 0)
    np.testing.assert_allclose(w @ x, 0.0, atol=1e-14)
    np.testing.assert_allclose(w @ x**2, 1.0, rtol=1e-13)
    np.testing.assert_allclose(w @ x**4, 3.0, rtol=1e-12)
    np.testing.assert_allclose(w @ x**8, 105.0, rtol=1e-11)


def _near_kink(x: np.ndarray, a: float = 0.37, width: float = 0.05) -> np.ndarray:
    """``width log(1 + exp((x - a) / width))``: a kink at ``a`` rounded over ``width`` (the
    shape of the logistic proximal map at small lambda, in units of ``xi``)."""
    return width * np.logaddexp(0.0, (x - a) / width)


def test_graded_panels_converge_on_a_near_kink_where_gauss_hermite_stalls():
    """The composite rule's error falls with each refinement (an independent reference:
    adaptive quadrature split at the kink) and beats the largest Gauss-Hermite rule."""
    from scipy.integrate import quad

    def f(x):
        return _near_kink(np.asarray(x)) * np.exp(-0.5 * x * x) / np.sqrt(2 * np.pi)

    kw = dict(epsabs=1e-15, epsrel=1e-13, limit=200)
    exact = quad(f, -np.inf, 0.37, **kw)[0] + quad(f, 0.37, np.inf, **kw)[0]
    rule = GradedPanels(16)
    errs = []
    for _ in range(4):
        errs.append(abs(rule.weights @ _near_kink(rule.nodes[:, 0]) - exact))
        rule = rule.refined()
    assert all(b < a / 4 or b < 1e-14 for a, b in zip(errs, errs[1:])), errs
    gh = GaussHermite(360)
    gh_err = abs(gh.weights @ _near_kink(gh.nodes[:, 0]) - exact)
    assert errs[-1] < 1e-12 and gh_err > 1e3 * errs[-1], (errs, gh_err)


def _kinked_edges(edges: np.ndarray, kinks: np.ndarray, merge: float) -> list[float]:
    """One rule's edges the plain way: each kink strictly inside, in increasing order, kept
    unless within ``merge`` of an edge or of the last kink kept."""
    kept: list[float] = []
    for k in sorted(set(kinks.tolist())):
        inside = edges[0] + merge < k < edges[-1] - merge
        if inside and np.min(np.abs(k - edges)) > merge and (not kept or k - kept[-1] > merge):
            kept.append(k)
    return sorted(edges.tolist() + kept)


def test_kinked_composite_legendre_is_each_rule_made_alone():
    """The composite rules split at kinks, made at once (the multi-output lasso's outer
    rules, one per atom), are each rule made alone with :func:`composite_legendre`, to the
    bit: kinks outside, repeated, on an edge or within the merge distance of one dropped;
    and a rule integrates a function with kinks at its kinks exactly (``|x - k|``, linear
    between them)."""
    rng = np.random.default_rng(3)
    merge = 1e-9
    for _ in range(60):
        edges = graded_edges(int(rng.choice([4, 16, 64])), 2.0, 9.0)
        kinks = []
        for _ in range(int(rng.integers(0, 5))):
            k = rng.uniform(-11.0, 11.0, int(rng.integers(0, 9)))
            near = edges[rng.integers(0, edges.size, 2)] + rng.choice([0.0, 3e-10, -2e-8], 2)
            kinks.append(np.concatenate([k, k[:2], near, k[:1] + 0.5 * merge]))
        x, w, sizes = kinked_composite_legendre(edges, kinks, 3, merge)
        assert sizes.sum() == x.size == w.size
        ends = np.cumsum(sizes)
        for j, kj in enumerate(kinks):
            xr, wr = composite_legendre(np.array(_kinked_edges(edges, kj, merge)), 3)
            part = slice(ends[j] - sizes[j], ends[j])
            assert np.array_equal(x[part], xr) and np.array_equal(w[part], wr)
    k = np.array([0.123456789, -4.0 + 1e-3])
    x, w, _ = kinked_composite_legendre(graded_edges(4, 2.0, 9.0), [k], 2, merge)
    exact = [(9.0 - c) ** 2 / 2 + (9.0 + c) ** 2 / 2 for c in k]
    assert np.allclose([w @ np.abs(x - c) for c in k], exact, rtol=1e-14)


def test_rules_validate_their_arguments():
    with pytest.raises(ValueError, match="quadrature panels"):
        GradedPanels(1)
    with pytest.raises(ValueError, match="quadrature dim"):
        GradedPanels(8, dim=4)
    with pytest.raises(ValueError, match="quadrature grade"):
        GradedPanels(8, grade=0.0)
    with pytest.raises(ValueError, match="quadrature n_log2"):
        SobolRQMC(3, n_log2=0)
    with pytest.raises(ValueError, match="quadrature seed"):
        SobolRQMC(3, seed=-1)
    with pytest.raises(TypeError, match="quadrature must be a GaussHermite, GradedPanels"):
        gm.solve(gm.Mixture.isotropic(0.5, "antipodal", labels="binary"), lam=1.0, alpha=1.0,
                 quadrature=64)  # fmt: skip
    assert (
        GradedPanels(MAX := 1024).refined() is None and "1024 panels" in GradedPanels(MAX).limit()
    )


def test_sobol_rqmc_is_seeded_nested_and_the_union_of_its_replicates():
    rule = SobolRQMC(3, n_log2=8, n_rep=4, seed=5)
    again = SobolRQMC(3, n_log2=8, n_rep=4, seed=5)
    np.testing.assert_array_equal(rule.nodes, again.nodes)
    assert not np.allclose(rule.nodes, SobolRQMC(3, n_log2=8, n_rep=4, seed=6).nodes)
    reps = rule.replicates()
    np.testing.assert_array_equal(np.concatenate([r.nodes for r in reps]), rule.nodes)
    finer = rule.refined().replicates()
    for r, f in zip(reps, finer):  # doubling extends each set
        np.testing.assert_array_equal(f.nodes[: 2**8], r.nodes)
    assert rule.weights.sum() == pytest.approx(1.0, abs=1e-14)


def test_sobol_rqmc_standard_error_covers_a_closed_form():
    """``E[max(xi_1 + xi_2 + xi_3 - 0.5, 0)]`` (a kink): the replicate mean is within four
    standard errors of the closed form, for several seeds, and the standard error is honest
    in size (not orders of magnitude above the actual error on average)."""
    exact = _relu_mean(0.5, np.sqrt(3.0))
    z = []
    for seed in range(6):
        rule = SobolRQMC(3, n_log2=10, n_rep=8, seed=seed)
        vals = [r.weights @ np.maximum(r.nodes.sum(axis=1) - 0.5, 0.0) for r in rule.replicates()]
        mean, se = np.mean(vals), np.std(vals, ddof=1) / np.sqrt(len(vals))
        assert mean == pytest.approx(
            rule.weights @ np.maximum(rule.nodes.sum(1) - 0.5, 0), abs=1e-15
        )
        z.append((mean - exact) / se)
    assert np.all(np.abs(z) < 4.0), z
    assert np.mean(np.square(z)) > 0.05, z  # the estimate is not wildly conservative


def test_automatic_rule_by_dimension():
    assert isinstance(auto_rule(1), GradedPanels) and isinstance(auto_rule(2), GradedPanels)
    assert isinstance(auto_rule(1, smooth=True), GaussHermite)
    assert isinstance(auto_rule(2, smooth=True), GradedPanels)
    assert isinstance(auto_rule(3, smooth=True), GaussHermite)
    assert isinstance(auto_rule(5, smooth=True), GaussHermite)
    # three to five dimensions in the sharp regime: randomised QMC (tests/test_quadrature_ce.py)
    assert isinstance(auto_rule(3), SobolRQMC) and isinstance(auto_rule(5), SobolRQMC)
    assert isinstance(auto_rule(6), SobolRQMC)
    assert isinstance(auto_rule(9), SobolRQMC) and auto_rule(9, seed=3).seed == 3


# ----------------------------------------------------------------------------- solver
def _solve_quiet(*args, **kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = gm.solve(*args, **kwargs)
    return res, [str(w.message) for w in caught if issubclass(w.category, gm.IntegrationWarning)]


BINARY = gm.Mixture.isotropic(0.5, "antipodal", labels="binary")
UNBALANCED_BINARY = gm.Mixture.isotropic(0.5, "antipodal", labels="binary", rho=[0.3, 0.7])


@pytest.mark.parametrize(
    "mix,loss,lam,alpha,rule",
    [
        (BINARY, "logistic", 1e-4, 2.0, "graded-panels"),
        (BINARY, "logistic", 1e-6, 2.0, "graded-panels"),
        (UNBALANCED_BINARY, "logistic", 1e-4, 2.0, "graded-panels"),
        (
            gm.Mixture.isotropic(0.5, "gaussian", n_clusters=2),
            "cross-entropy",
            1e-4,
            2.0,
            "graded-panels",
        ),
        (
            gm.Mixture.isotropic(0.5, "gaussian", n_clusters=2),
            "cross-entropy",
            1e-6,
            2.0,
            "graded-panels",
        ),
        # exchangeable clusters: cluster 0's rule (tests/test_exchangeable_rule.py)
        (
            gm.Mixture.isotropic(0.5, "gaussian", n_clusters=3),
            "cross-entropy",
            1e-4,
            3.0,
            "exchangeable-panels(K=3, panels=32",
        ),
    ],
    ids=[
        "logistic-1e-4",
        "logistic-1e-6",
        "logistic-unbalanced",
        "ce2-1e-4",
        "ce2-1e-6",
        "ce3-1e-4",
    ],  # fmt: skip
)
def test_small_lambda_is_as_accurate_as_large_lambda(mix, loss, lam, alpha, rule):
    res, texts = _solve_quiet(mix, loss, lam=lam, alpha=alpha)
    assert res.success and texts == []
    assert res.integration_errors["test_error"] <= SMALL_LAM_TARGET
    assert res.integration_errors["train_loss"] <= SMALL_LAM_TARGET
    assert res.params["quadrature"].startswith(rule)


def test_small_lambda_unbalanced_three_clusters():
    mix = gm.Mixture.isotropic(0.5, "gaussian", n_clusters=3, rho=[0.2, 0.3, 0.5])
    res, texts = _solve_quiet(mix, "cross-entropy", lam=1e-4, alpha=3.0)
    assert res.success and texts == []
    assert res.integration_errors["test_error"] <= SMALL_LAM_TARGET


@pytest.mark.parametrize("lam", [1.0, 0.1])
def test_graded_panels_agree_with_the_tensor_rule_where_it_is_accurate(lam):
    mix = gm.Mixture.isotropic(0.5, "simplex", n_clusters=3)
    new = gm.solve(mix, "cross-entropy", lam=lam, alpha=2.0, tol=1e-10)
    old = gm.solve(mix, "cross-entropy", lam=lam, alpha=2.0, tol=1e-10,
                   quadrature=GaussHermite(40, 2))  # fmt: skip
    for key in ("test_error", "train_loss"):
        bound = new.integration_errors[key] + old.integration_errors[key] + 1e-8
        assert abs(getattr(new, key) - getattr(old, key)) <= bound, key
    bin_new = gm.solve(BINARY, "logistic", lam=lam, alpha=1.5, tol=1e-10)
    bin_old = gm.solve(BINARY, "logistic", lam=lam, alpha=1.5, tol=1e-10,
                       quadrature=GaussHermite(128))  # fmt: skip
    assert bin_new.test_error == pytest.approx(bin_old.test_error, abs=1e-9)
    assert bin_new.train_loss == pytest.approx(bin_old.train_loss, abs=1e-9)


# ----------------------------------------------------------------------------- K >= 4
#: agreement of two estimates with standard error ``se`` each (a 4-sigma band)
N_SIGMA = 4.0


@pytest.mark.slow
@pytest.mark.parametrize("K", [4, 5])
def test_rqmc_agrees_with_the_tensor_rule_within_their_error_estimates(K):
    """Cross-entropy at lam = 1 (the tensor rule is accurate there): the randomised rule's
    answer is within four of its standard errors (plus the tensor rule's estimate)."""
    mix = gm.Mixture.isotropic(0.5, "gaussian", n_clusters=K)
    kw = dict(lam=1.0, alpha=2.0, throw=True)
    tensor, _ = _solve_quiet(mix, "cross-entropy", **kw)
    assert tensor.params["quadrature"].startswith("gauss-hermite")
    rqmc, texts = _solve_quiet(mix, "cross-entropy", quadrature=SobolRQMC(K - 1, 9), **kw)
    assert rqmc.success and rqmc.params["quadrature"].startswith("sobol-rqmc")
    for key in ("test_error", "train_error", "train_loss"):
        se = rqmc.integration_errors[key]
        assert 0 < se < 1e-3, (key, se)
        bound = N_SIGMA * se + tensor.integration_errors[key]
        assert abs(getattr(rqmc, key) - getattr(tensor, key)) <= bound, key
    # the training error's own estimate meets issue 10's target at K >= 4
    assert tensor.integration_errors["train_error"] <= 1e-4


@pytest.mark.slow  # ~5 s with the exchangeable-cluster reduction (a minute without it)
def test_ten_class_cross_entropy_converges_with_error_estimates():
    mix = gm.Mixture.isotropic(0.5, "gaussian", n_clusters=10)
    res, texts = _solve_quiet(mix, "cross-entropy", lam=1.0, alpha=10.0)
    assert res.success and res.params["quadrature"].startswith("sobol-rqmc")
    errs = res.integration_errors
    assert all(0 < errs[k] < 1e-3 for k in ("test_error", "train_error", "train_loss")), errs
    # the estimate is above quad_tol: the warning says so and names the remedy
    assert len(texts) == 1 and "independent randomisations" in texts[0]
    assert "SobolRQMC(dim, n_log2, n_rep)" in texts[0]


def test_a_randomised_rule_makes_a_deterministic_map():
    """Common random numbers: a solve with a seeded RQMC rule is a deterministic function of
    the seed (the same fixed point to the bit again; another seed moves it)."""
    mix = gm.Mixture.isotropic(0.5, "simplex", n_clusters=4)
    kw = dict(lam=1.0, alpha=2.0, estimate_error=False)
    runs = [
        gm.solve(mix, "cross-entropy", quadrature=SobolRQMC(3, 6, 4, seed=s), **kw)
        for s in (1, 1, 2)
    ]
    assert all(r.success for r in runs)
    np.testing.assert_array_equal(runs[0].Q, runs[1].Q)
    assert runs[0].train_loss == runs[1].train_loss
    assert runs[0].train_loss != runs[2].train_loss
