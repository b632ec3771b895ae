"""Tests of the deterministic Gaussian orthant probabilities (gaussmix.theory.numerics.orthant)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.integrate import quad
from scipy.special import ndtr
from scipy.stats import multivariate_normal, norm

from gaussmix.theory.numerics.orthant import orthant_probability, orthant_probability_batch


def _scipy_cdf(mean: np.ndarray, cov: np.ndarray) -> float:
    """scipy's P[Z <= 0] with tight tolerances."""
    return float(
        multivariate_normal.cdf(
            np.zeros(len(mean)), mean=mean, cov=cov, abseps=1e-12, releps=1e-12, rng=0
        )
    )


def _bvn_quad(h: float, k: float, r: float) -> float:
    """Reference P[X <= h, Y <= k] for a standard bivariate normal, by adaptive quadrature."""
    s = math.sqrt(1.0 - r * r)

    def f(x: float) -> float:
        return norm.pdf(x) * ndtr((k - r * x) / s)

    edges = [-np.inf] + [x for x in (-8.0, -4.0, 0.0, 4.0, 8.0) if x < h] + [h]
    return sum(
        quad(f, lo, hi, epsabs=1e-17, epsrel=1e-13, limit=200)[0]
        for lo, hi in zip(edges[:-1], edges[1:], strict=True)
    )


def _cov2(s1: float, s2: float, r: float) -> np.ndarray:
    return np.array([[s1 * s1, r * s1 * s2], [r * s1 * s2, s2 * s2]])


def _equicorrelated(m: int, rho: float) -> np.ndarray:
    cov = np.full((m, m), rho)
    np.fill_diagonal(cov, 1.0)
    return cov


# ----------------------------------------------------------------------------- m == 1


@pytest.mark.parametrize("mu", [-40.0, -6.0, -1.3, -1e-8, 0.0, 0.4, 2.0, 9.0])
@pytest.mark.parametrize("var", [1e-6, 0.25, 1.0, 7.0])
def test_one_dimensional_matches_ndtr(mu: float, var: float) -> None:
    p, err = orthant_probability(np.array([mu]), np.array([[var]]))
    assert p == ndtr(-mu / math.sqrt(var))
    assert 0.0 <= err <= 1e-15


@pytest.mark.parametrize(("mu", "expected"), [(-1.0, 1.0), (0.0, 1.0), (1e-300, 0.0), (2.0, 0.0)])
def test_one_dimensional_zero_variance_is_deterministic(mu: float, expected: float) -> None:
    assert orthant_probability(np.array([mu]), np.zeros((1, 1)))[0] == expected


# ----------------------------------------------------------------------------- m == 2


def test_two_dimensional_matches_scipy() -> None:
    rng = np.random.default_rng(0)
    for _ in range(25):
        a = rng.normal(size=(2, 2))
        cov = a @ a.T
        mean = rng.normal(size=2) * 1.5
        p, err = orthant_probability(mean, cov)
        assert abs(p - _scipy_cdf(mean, cov)) < 1e-12
        assert err <= 1e-14


@pytest.mark.parametrize("h", [-3.0, -0.7, 0.0, 1.1, 4.0])
@pytest.mark.parametrize("k", [-2.0, 0.0, 0.3, 5.0])
def test_independent_components_factorise(h: float, k: float) -> None:
    mean = np.array([-2.0 * h, -0.5 * k])
    p, _ = orthant_probability(mean, np.diag([4.0, 0.25]))
    assert abs(p - ndtr(h) * ndtr(k)) < 1e-15


def test_zero_mean_uncorrelated_is_one_quarter() -> None:
    assert abs(orthant_probability(np.zeros(2), np.diag([3.0, 0.1]))[0] - 0.25) < 1e-16


@pytest.mark.parametrize(
    "r",
    [-1.0, -0.999999, -0.99, -0.93, -0.925, -0.9, -0.5, -0.1, 0.0, 0.2, 0.6]
    + [0.92, 0.925, 0.95, 0.999, 0.999999, 1.0 - 1e-12, 1.0],
)
@pytest.mark.parametrize("scales", [(1.0, 1.0), (1.7, 0.3)])
def test_zero_mean_arcsine_law(r: float, scales: tuple[float, float]) -> None:
    cov = _cov2(*scales, r)
    p, _ = orthant_probability(np.zeros(2), cov)
    # the correlation the covariance encodes after standardisation in floating point
    # (asin is ill-conditioned near +-1: one ulp of r moves the answer by ~1e-11 at 1 - 1e-12)
    r_eff = min(1.0, max(-1.0, cov[0, 1] / math.sqrt(cov[0, 0]) / math.sqrt(cov[1, 1])))
    assert abs(p - (0.25 + math.asin(r_eff) / (2.0 * math.pi))) < 1e-14


@pytest.mark.parametrize("h", [-4.0, -1.0, 0.0, 0.5, 3.0])
@pytest.mark.parametrize("k", [-3.5, -0.5, 0.0, 0.5, 2.5])
def test_perfect_correlation_and_anticorrelation(h: float, k: float) -> None:
    mean = np.array([-h, -2.0 * k])
    p_pos, _ = orthant_probability(mean, _cov2(1.0, 2.0, 1.0))
    assert abs(p_pos - ndtr(min(h, k))) < 1e-15
    p_neg, _ = orthant_probability(mean, _cov2(1.0, 2.0, -1.0))
    assert abs(p_neg - max(0.0, ndtr(h) + ndtr(k) - 1.0)) < 1e-15


@pytest.mark.parametrize("v", [(0.7, 1.3), (0.7, -1.3), (3.1, 1e-3), (-0.37, 2.9)])
def test_rank_one_covariance_with_rounding_noise_is_exact(v: tuple[float, float]) -> None:
    # outer(v, v) is singular, but its standardised correlation is +-1 only up to rounding
    cov = np.outer(v, v)
    expected = 0.5 if v[0] * v[1] > 0 else 0.0  # mean 0: P[X <= 0, +-X <= 0]
    assert orthant_probability(np.zeros(2), cov)[0] == expected
    assert orthant_probability(np.zeros(2), cov[::-1, ::-1])[0] == expected
    cov3 = np.outer([v[0], v[1], v[0] + v[1]], [v[0], v[1], v[0] + v[1]])
    p3, _ = orthant_probability(np.array([-0.1, -0.1, -0.2]), cov3)
    # Z = mean + c x with x ~ N(0, 1): an interval of x
    c = np.array([v[0], v[1], v[0] + v[1]])
    t = np.array([0.1, 0.1, 0.2]) / c
    lo, hi = max(t[c < 0], default=-np.inf), min(t[c > 0], default=np.inf)
    assert abs(p3 - max(0.0, ndtr(hi) - ndtr(lo))) < 1e-15


@pytest.mark.parametrize("r", [-0.95, -0.3, 0.4, 0.97])
@pytest.mark.parametrize("h", [-1.0, 0.0, 2.0])
@pytest.mark.parametrize("k", [-3.0, 0.0, 0.8])
def test_against_quadrature_reference(r: float, h: float, k: float) -> None:
    p, _ = orthant_probability(np.array([-h, -k]), _cov2(1.0, 1.0, r))
    assert abs(p - _bvn_quad(h, k, r)) < 1e-14


def test_zero_variance_components_reduce_dimension() -> None:
    cov = np.diag([0.0, 2.0])
    for mu1, factor in [(-0.5, 1.0), (0.0, 1.0), (0.5, 0.0)]:
        p, _ = orthant_probability(np.array([mu1, 0.7]), cov)
        assert p == factor * ndtr(-0.7 / math.sqrt(2.0))
    assert orthant_probability(np.array([-1.0, 0.0]), np.zeros((2, 2)))[0] == 1.0
    assert orthant_probability(np.array([-1.0, 1.0]), np.zeros((2, 2)))[0] == 0.0


@pytest.mark.parametrize("r", [-0.999999, -0.8, -0.2, 0.0, 0.5, 0.9, 0.999999])
@pytest.mark.parametrize("t", [6.0, 9.0, 20.0, 40.0])
def test_extreme_means_absolute_accuracy(r: float, t: float) -> None:
    cov = _cov2(1.0, 1.0, r)
    # far in the lower tail: probability near 0
    p_low, _ = orthant_probability(np.array([t, t - 1.0]), cov)
    assert 0.0 <= p_low <= ndtr(-t + 1.0) + 1e-16
    assert abs(p_low - _bvn_quad(-t, 1.0 - t, r)) < 1e-14
    # far in the upper tail: probability near 1
    p_high, _ = orthant_probability(np.array([-t, -t - 1.0]), cov)
    assert abs(p_high - _bvn_quad(t, t + 1.0, r)) < 1e-14
    assert abs(p_high - 1.0) <= ndtr(-t) + ndtr(-t - 1.0) + 1e-15


def test_tiny_variances_and_huge_standardised_means() -> None:
    # |mean| / sd overflows the bivariate formulas unless the limits are clipped
    a = np.array([[4.4e-80, 0.0], [1.0, 0.25]])
    assert orthant_probability(np.array([1.0, 0.0]), a @ a.T)[0] == 0.0
    p, _ = orthant_probability(np.array([-1.0, 0.0]), a @ a.T)
    assert abs(p - 0.5) < 1e-15
    cov = np.diag([1e-300, 1e-300, 1.0])
    cov[0, 1] = cov[1, 0] = 0.5e-300
    p3, _ = orthant_probability(np.array([-1e300, -1.0, 0.5]), cov)
    assert abs(p3 - ndtr(-0.5)) < 1e-15
    assert orthant_probability(np.array([-1e300, 1e-100, 0.5]), cov)[0] < 1e-300


def test_batch_matches_scalar_calls() -> None:
    rng = np.random.default_rng(5)
    means = rng.normal(size=(40, 2)) * 2.0
    a = rng.normal(size=(40, 2, 2))
    covs = a @ np.swapaxes(a, 1, 2)
    covs[3] = _cov2(1.0, 1.0, 1.0)
    covs[4] = _cov2(2.0, 1.0, -1.0)
    covs[5] = np.diag([0.0, 1.0])
    covs[6] = np.zeros((2, 2))
    out = orthant_probability_batch(means, covs)
    assert out.shape == (40,)
    expected = [orthant_probability(m, c)[0] for m, c in zip(means, covs, strict=True)]
    np.testing.assert_allclose(out, expected, rtol=1e-13, atol=1e-16)
    out1 = orthant_probability_batch(means[:, :1], covs[:, :1, :1])
    var = covs[:, 0, 0]
    sd = np.sqrt(np.where(var > 0, var, 1.0))
    expected1 = np.where(var > 0, ndtr(-means[:, 0] / sd), (means[:, 0] <= 0).astype(float))
    np.testing.assert_array_equal(out1, expected1)


# ----------------------------------------------------------------------------- m >= 3


def _random_correlation(rng: np.random.Generator, m: int) -> np.ndarray:
    a = rng.normal(size=(m, m + 1))
    cov = a @ a.T
    s = np.sqrt(np.diag(cov))
    return cov / np.outer(s, s)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_three_dimensional_zero_mean_closed_form(seed: int) -> None:
    rng = np.random.default_rng(seed)
    corr = _random_correlation(rng, 3)
    scale = np.diag(rng.uniform(0.5, 3.0, size=3))
    p, err = orthant_probability(np.zeros(3), scale @ corr @ scale)
    exact = 0.125 + (math.asin(corr[0, 1]) + math.asin(corr[0, 2]) + math.asin(corr[1, 2])) / (
        4.0 * math.pi
    )
    assert err < 1e-6
    assert abs(p - exact) <= 5.0 * err + 1e-12


def test_three_dimensional_is_deterministic_given_seed() -> None:
    rng = np.random.default_rng(11)
    mean = rng.normal(size=3) * 0.3
    cov = _random_correlation(rng, 3)
    first = orthant_probability(mean, cov, rng_seed=7)
    second = orthant_probability(mean, cov, rng_seed=7)
    assert first == second
    other = orthant_probability(mean, cov, rng_seed=8)
    assert abs(other[0] - first[0]) <= 5.0 * (first[1] + other[1])


def test_diagonal_covariance_is_product_of_marginals() -> None:
    mean = np.array([0.3, -1.2, 0.0, 2.0])
    var = np.array([1.0, 0.5, 3.0, 2.0])
    p, err = orthant_probability(mean, np.diag(var))
    expected = float(np.prod(ndtr(-mean / np.sqrt(var))))
    assert abs(p - expected) < 1e-14
    assert err < 1e-14


def test_exact_copy_equals_lower_dimensional_answer() -> None:
    cov2 = np.array([[1.0, 0.3], [0.3, 2.0]])
    mean2 = np.array([-0.2, 0.4])
    expected, _ = orthant_probability(mean2, cov2)
    # Z_3 is an exact copy of Z_1 (same mean): the constraint is redundant
    cov3 = np.array([[1.0, 0.3, 1.0], [0.3, 2.0, 0.3], [1.0, 0.3, 1.0]])
    p, err = orthant_probability(np.array([-0.2, 0.4, -0.2]), cov3)
    assert abs(p - expected) < 1e-15
    assert err <= 1e-14
    # a copy with a larger mean tightens the constraint on Z_1
    p_shift, _ = orthant_probability(np.array([-0.5, 0.4, -0.2]), cov3)
    assert abs(p_shift - expected) < 1e-15


def test_anticorrelated_copy_gives_an_interval() -> None:
    # Z_3 = -Z_1 + (mu_3 + mu_1): with X = Z_1 + 0.5, the event is 0.2 <= X <= 0.5
    cov3 = np.array([[1.0, 0.3, -1.0], [0.3, 2.0, -0.3], [-1.0, -0.3, 1.0]])
    p, _ = orthant_probability(np.array([-0.5, 0.4, 0.2]), cov3)
    c2 = cov3[:2, :2]
    expected = _scipy_cdf(np.array([-0.5, 0.4]), c2) - _scipy_cdf(np.array([-0.2, 0.4]), c2)
    assert abs(p - expected) < 1e-12


def test_rank_deficient_dependent_component() -> None:
    # X_4 = (X_1 + X_2) / sqrt(2) is a linear combination, X_3 is independent
    corr = np.eye(4)
    corr[3, 0] = corr[0, 3] = corr[3, 1] = corr[1, 3] = 1.0 / math.sqrt(2.0)
    b = np.array([0.3, 0.8, 0.5, -0.1])
    c = math.sqrt(2.0) * b[3]

    def inner(x: float) -> float:
        return norm.pdf(x) * ndtr(min(b[1], c - x))

    kink = c - b[1]
    ref = ndtr(b[2]) * (
        quad(inner, -np.inf, kink, epsabs=1e-15, epsrel=1e-13)[0]
        + quad(inner, kink, b[0], epsabs=1e-15, epsrel=1e-13)[0]
    )
    for perm in ([0, 1, 2, 3], [3, 2, 1, 0]):
        p, err = orthant_probability(-b[perm], corr[np.ix_(perm, perm)])
        assert abs(p - ref) <= 5.0 * err + 1e-12
        assert err < 1e-6


def test_zero_variance_components_are_dropped_in_higher_dimensions() -> None:
    corr = _equicorrelated(2, 0.5)
    cov = np.zeros((4, 4))
    cov[np.ix_([1, 3], [1, 3])] = corr
    expected, _ = orthant_probability(np.zeros(2), corr)
    p, _ = orthant_probability(np.array([-1.0, 0.0, 0.0, 0.0]), cov)
    assert abs(p - expected) < 1e-15
    assert orthant_probability(np.array([0.0, 0.0, 1e-9, 0.0]), cov) == (0.0, 0.0)
    assert orthant_probability(np.zeros(3), np.zeros((3, 3)))[0] == 1.0


@pytest.mark.parametrize("m", [4, 5, 6])
def test_equicorrelated_one_half_is_one_over_m_plus_one(m: int) -> None:
    p, err = orthant_probability(np.zeros(m), 2.0 * _equicorrelated(m, 0.5))
    assert err < 1e-6
    assert abs(p - 1.0 / (m + 1)) <= 5.0 * err
    assert abs(p - 1.0 / (m + 1)) < 1e-5


def test_nine_dimensional_call_runs() -> None:
    rng = np.random.default_rng(3)
    a = rng.normal(size=(9, 9))
    p, err = orthant_probability(-np.abs(rng.normal(size=9)), a @ a.T / 9)
    assert 0.0 < p < 1.0
    assert 0.0 < err < 1e-4


# ------------------------------------------------------------------------------ property


@settings(max_examples=40, deadline=None)
@given(
    s1=st.floats(0.05, 20.0),
    s2=st.floats(0.05, 20.0),
    r=st.floats(-0.995, 0.995),
    mu1=st.floats(-6.0, 6.0),
    mu2=st.floats(-6.0, 6.0),
)
def test_property_two_dimensional(s1: float, s2: float, r: float, mu1: float, mu2: float) -> None:
    cov = _cov2(s1, s2, r)
    mean = np.array([mu1, mu2])
    p, _ = orthant_probability(mean, cov)
    assert 0.0 <= p <= 1.0
    assert abs(p - _scipy_cdf(mean, cov)) < 1e-7
    swapped, _ = orthant_probability(mean[::-1], cov[::-1, ::-1])
    assert abs(swapped - p) < 1e-15


@settings(max_examples=40, deadline=None)
@given(
    entries=st.lists(st.floats(-3.0, 3.0), min_size=4, max_size=4),
    rank_one=st.booleans(),
    mu1=st.floats(-4.0, 4.0),
    mu2=st.floats(-4.0, 4.0),
)
def test_property_two_dimensional_semidefinite(
    entries: list[float], rank_one: bool, mu1: float, mu2: float
) -> None:
    a = np.array(entries).reshape(2, 2)
    if rank_one:
        a[:, 1] = 0.0
    cov = a @ a.T
    mean = np.array([mu1, mu2])
    p, _ = orthant_probability(mean, cov)
    assert 0.0 <= p <= 1.0
    swapped, _ = orthant_probability(mean[::-1], cov[::-1, ::-1])
    assert abs(swapped - p) < 1e-15
    assert orthant_probability_batch(mean[None], cov[None])[0] == pytest.approx(p, abs=1e-16)
    # Z <= 0 implies Z_1 <= 0: the orthant probability is at most each marginal
    assert p <= orthant_probability(mean[:1], cov[:1, :1])[0] + 1e-15


# ------------------------------------------------------------------------------ validation


@pytest.mark.parametrize(
    ("mean", "cov", "name"),
    [
        (np.zeros((2, 1)), np.eye(2), "mean"),
        (np.zeros(0), np.zeros((0, 0)), "mean"),
        (np.array([0.0, np.nan]), np.eye(2), "mean"),
        (np.zeros(2), np.eye(3), "cov"),
        (np.zeros(2), np.array([[1.0, np.inf], [np.inf, 1.0]]), "cov"),
        (np.zeros(2), np.array([[1.0, 0.5], [0.2, 1.0]]), "cov"),
        (np.zeros(2), np.array([[1.0, 2.0], [2.0, 1.0]]), "cov"),
        (np.zeros(3), -np.eye(3), "cov"),
    ],
)
def test_bad_input_raises(mean: np.ndarray, cov: np.ndarray, name: str) -> None:
    with pytest.raises(ValueError, match=name):
        orthant_probability(mean, cov)


def test_psd_tolerance_accepts_rounding_noise() -> None:
    cov = _cov2(1.0, 1.0, 1.0) + np.array([[0.0, 1e-14], [1e-14, 0.0]])
    p, _ = orthant_probability(np.zeros(2), cov)
    assert abs(p - 0.5) < 1e-12


def test_batch_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="abs_tol"):
        orthant_probability_batch(np.zeros((2, 3)), np.tile(np.eye(3), (2, 1, 1)), abs_tol=0.0)
    with pytest.raises(ValueError, match="rng_seed"):
        orthant_probability_batch(np.zeros((2, 3)), np.tile(np.eye(3), (2, 1, 1)), rng_seed=-1)
    with pytest.raises(ValueError, match="positive semi-definite"):
        orthant_probability_batch(np.zeros((1, 3)), -np.eye(3)[None])
    with pytest.raises(ValueError, match="cov"):
        orthant_probability_batch(np.zeros((2, 2)), np.eye(2))
    with pytest.raises(ValueError, match="cov"):
        orthant_probability_batch(np.zeros((1, 2)), np.array([[[1.0, 2.0], [2.0, 1.0]]]))
    with pytest.raises(ValueError, match="mean"):
        orthant_probability_batch(np.zeros(2), np.eye(2))


def test_genz_short_rules_for_small_correlations_are_the_twenty_point_rule() -> None:
    """Genz's ``bvnu`` takes 6 Gauss-Legendre points for ``|r| < 0.3`` and 12 for
    ``|r| < 0.75`` (20 beyond): on 200 000 random limits in ``[-9, 9]`` and correlations
    across the three ranges it gives the 20-point rule's numbers within 4 ulps of 1 (the
    absolute accuracy of the bivariate path)."""
    from gaussmix.theory.numerics import bivariate
    from gaussmix.theory.numerics.kernels import bvnu

    rng = np.random.default_rng(11)
    n = 200_000
    h, k = rng.uniform(-9.0, 9.0, (2, n))
    r = rng.uniform(-0.93, 0.93, n)
    x, w = bivariate._GL_NODES, bivariate._GL_WEIGHTS
    short = bvnu(h, k, r, x, w, *bivariate._GL_RULES_SMALL_R)
    twenty = bvnu(h, k, r, x, w, x, w, x, w)
    assert np.max(np.abs(short - twenty)) <= 4 * np.finfo(float).eps
    assert np.array_equal(bivariate._bvnu(h, k, r), short)  # the path the orthants take


@pytest.mark.parametrize("m", [7, 9])
def test_a_randomised_batch_is_each_problem_alone_to_the_bit(m: int) -> None:
    """Orthants of six or more variables in one batch (their ordered factors made for the
    stack at once): each result and error estimate is the one of the problem alone, to the
    bit, with regular, rank-deficient and zero-variance problems mixed."""
    rng = np.random.default_rng(60 + m)
    A = rng.standard_normal((5, m, m))
    cov = A @ np.swapaxes(A, 1, 2) + 0.3 * np.eye(m)
    mean = rng.standard_normal((5, m)) - 1.0
    F = rng.standard_normal((m, m - 3))
    cov[1] = F @ F.T  # rank m - 3
    cov[2, 0, :] = cov[2, :, 0] = 0.0  # one variable of zero variance
    mean[2, 0] = -0.5
    p, err = orthant_probability_batch(mean, cov, rng_seed=4, abs_tol=5e-5, return_error=True)
    for i in range(mean.shape[0]):
        q, e = orthant_probability(mean[i], cov[i], rng_seed=4, abs_tol=5e-5)
        assert (p[i], err[i]) == (q, e)


def _sov_reference(factor, wt: np.ndarray, ymax: float) -> np.ndarray:
    """The separation-of-variables integrand of an ordered factor, point by point with scalar
    normal functions (every column's limits evaluated at every point)."""
    from scipy.special import ndtri

    out = np.empty(wt.shape[1])
    for p in range(wt.shape[1]):
        y, prod = [], 1.0
        for c, (U, LO, HI, _) in enumerate(factor.columns):
            s = U @ np.array(y) if c else np.zeros(len(HI))
            hi, lo = float(np.min(HI - s)), float(np.max(LO - s))
            if lo > 0:  # (the integrand's branch for an interval above the mean)
                p_lo, p_hi = ndtr(-lo), ndtr(-max(hi, lo))
            else:
                p_lo, p_hi = ndtr(lo), ndtr(max(hi, lo))
            e = abs(p_hi - p_lo)
            prod *= e
            if c < factor.rank - 1:
                w = wt[c, p]
                yc = -ndtri(p_lo - w * e) if lo > 0 else ndtri(p_lo + w * e)
                y.append(float(np.clip(yc, -ymax, ymax)))
        out[p] = prod
    return out


@pytest.mark.parametrize("mean0", [None, 0.1, -1.0])
def test_sov_integrand_first_column_once(mean0: float | None) -> None:
    """The integrand evaluates the first column's constant limits once: the same values as
    evaluating them at every point (a scalar reference), for an orthant and for a first
    column with two limits (a variable merged with its negative, ``-0.2 <= Z_0 <= 0``, with
    ``E Z_0 = mean0``: the interval below and above the mean, the integrand's two
    branches)."""
    from gaussmix.theory.numerics import orthant as o

    rng = np.random.default_rng(7)
    m = 7
    G = rng.standard_normal((m, m + 1))
    cov = G @ G.T / m
    mean = 0.5 * rng.standard_normal(m)
    two_sided = mean0 is not None
    if two_sided:  # Z_1 = -Z_0 - 0.2: Z_0 in [-0.2, 0], a narrow interval pivoted first
        T = np.eye(m)
        T[1] = -T[0]
        cov = T @ cov @ T.T
        mean[0] = mean0
        mean[1] = -mean0 - 0.2
    sd = np.sqrt(np.diag(cov))
    b, corr = -mean / sd, cov / np.outer(sd, sd)
    a = np.full(m, -np.inf)
    reduced = o._merge_degenerate(a, b, corr)
    factor = o._SOVFactor(*reduced)
    assert factor.columns[0][3] == two_sided
    if two_sided:  # (the branch: the interval's lower limit above the mean or not)
        assert (factor.columns[0][1].max() > 0) == (mean0 < -0.2)
    wt = rng.random((factor.rank - 1, 64))
    ref = _sov_reference(factor, wt, o.YMAX)
    np.testing.assert_allclose(factor.integrand(wt), ref, rtol=1e-13)


def test_one_variable_floats_are_the_stacks_numbers(rng):
    """A binary point's orthants (a few one-variable problems) on floats: the numbers of
    the stacked path to the bit, point masses, tiny and huge variances included; anything
    else (more problems, a negative or non-finite entry) takes the stacked path, which
    raises where it should."""
    from gaussmix.theory.numerics.orthant import _one_variable, _orthant_small

    for _ in range(400):
        B = int(rng.integers(1, 9))
        mean = rng.normal(size=(B, 1)) * rng.choice([0.0, -0.0, 1e-200, 1.0, 1e3], (B, 1))
        scales = rng.choice([0.0, 1e-310, 1e-30, 1.0, 1e250], (B, 1, 1))
        cov = rng.uniform(0, 2, (B, 1, 1)) * scales
        fast = _one_variable(mean, cov)
        slow = _orthant_small(mean, 0.5 * (cov + np.swapaxes(cov, -1, -2)))
        assert fast is not None and fast.view(np.int64).tolist() == slow.view(np.int64).tolist()
        assert (orthant_probability_batch(mean, cov) == slow).all()
    assert _one_variable(np.zeros((9, 1)), np.ones((9, 1, 1))) is None
    assert _one_variable(np.zeros((2, 2)), np.tile(np.eye(2), (2, 1, 1))) is None
    for bad in (-1e-12, np.nan, np.inf):
        assert _one_variable(np.zeros((1, 1)), np.full((1, 1, 1), bad)) is None
        with pytest.raises(ValueError):
            orthant_probability_batch(np.zeros((1, 1)), np.full((1, 1, 1), bad))
    with pytest.raises(ValueError):
        orthant_probability_batch(np.array([[np.nan]]), np.ones((1, 1, 1)))
