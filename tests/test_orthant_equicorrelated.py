"""The equicorrelated orthant
(:func:`gaussmix.theory.numerics.equicorrelated.equicorrelated_orthant`): a
deterministic one-dimensional integral for ``Z ~ N(mu 1, sigma^2 ((1 - r) I + r 1 1^T))``,
``r >= 0`` (issue 19, item 1: exchangeable clusters' test error), checked against the
randomised QMC and the bivariate paths of :func:`orthant_probability`, closed forms and a
limit; and its use by the test accuracy of exchangeable clusters."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import log_ndtr, ndtr

import gaussmix as gm
from gaussmix.theory.api.api import make_problem
from gaussmix.theory.numerics.equicorrelated import equicorrelated_orthant
from gaussmix.theory.numerics.orthant import orthant_probability
from gaussmix.theory.solve.observables import test_accuracy as accuracy


def _problem(m: int, mu: float, r: float, sigma: float) -> tuple[np.ndarray, np.ndarray]:
    return np.full(m, mu), sigma**2 * ((1.0 - r) * np.eye(m) + r)


CASES = [(-1.0, 0.3, 1.0), (0.5, 0.9, 2.0), (-1.0, 0.7, 0.5), (0.0, 0.2, 1.5), (1.5, 0.5, 1.0)]


@pytest.mark.parametrize("m", [3, 4, 5, 6])
@pytest.mark.parametrize(("mu", "r", "sigma"), CASES)
def test_agrees_with_the_qmc_path_within_four_standard_errors(m, mu, r, sigma):
    mean, cov = _problem(m, mu, r, sigma)
    p, err = equicorrelated_orthant(mean, cov)
    q, se = orthant_probability(mean, cov)
    assert err < 1e-12
    assert 0 < se < 1e-5  # the comparison has teeth: QMC error bars are 3e-8..1e-6
    assert abs(p - q) <= 4 * se + err


def test_rare_failure_against_an_independent_complement_integral():
    """Deep in the orthant (h = 5, 1 - P ~ 1.4e-6) QMC's standard error is itself noisy
    (4e-8..2.4e-7 across seeds, measured, and its estimate off by 6 of them at seed 0):
    here the reference is ``1 - P = int phi(u) (1 - Phi(.)^m) du`` summed directly (the
    trapezoid rule on a fine grid is spectrally accurate for this smooth, decaying
    integrand), which does not lose the small complement to cancellation."""
    m, mu, r, sigma = 5, -2.5, 0.7, 0.5
    p, err = equicorrelated_orthant(*_problem(m, mu, r, sigma))
    u, du = np.linspace(-37.0, 37.0, 200001, retstep=True)
    z = (-mu / sigma - np.sqrt(r) * u) / np.sqrt(1.0 - r)
    tail = np.exp(-0.5 * u**2) / np.sqrt(2 * np.pi) * -np.expm1(m * log_ndtr(z))
    assert abs((1.0 - p) - tail.sum() * du) < 1e-13 and err < 1e-12


@pytest.mark.parametrize(("mu", "r", "sigma"), [*CASES, (-6.0, 0.99, 1.0), (4.0, 1e-4, 3.0)])
def test_two_dimensions_match_the_deterministic_bivariate_path(mu, r, sigma):
    mean, cov = _problem(2, mu, r, sigma)
    p, err = equicorrelated_orthant(mean, cov)
    q, _ = orthant_probability(mean, cov)  # Genz's bvnu, ~1e-16
    assert err < 1e-12
    assert abs(p - q) < 1e-13


@pytest.mark.parametrize("m", [3, 4, 5, 6, 9])
def test_zero_mean_correlation_one_half_is_one_over_m_plus_one(m):
    p, err = equicorrelated_orthant(*_problem(m, 0.0, 0.5, 1.7))
    assert abs(p - 1.0 / (m + 1)) < 1e-13 and err < 1e-12


@pytest.mark.parametrize(("mu", "sigma"), [(-1.0, 1.0), (0.7, 0.3), (0.0, 2.0)])
def test_one_dimension_and_the_exact_limits(mu, sigma):
    h = -mu / sigma
    assert equicorrelated_orthant(np.array([mu]), np.array([[sigma**2]]))[0] == ndtr(h)
    # r = 1: one variable, however many copies
    assert equicorrelated_orthant(*_problem(5, mu, 1.0, sigma))[0] == pytest.approx(ndtr(h))
    # sigma = 0: deterministic
    assert equicorrelated_orthant(np.full(4, mu), np.zeros((4, 4)))[0] == float(mu <= 0)


@pytest.mark.parametrize("m", [3, 6])
@pytest.mark.parametrize(("mu", "sigma"), [(-1.0, 1.0), (0.4, 2.0)])
def test_vanishing_correlation_factorises(m, mu, sigma):
    """r -> 0 through the quadrature (r = 0 itself is the closed form): the correction is
    of first order in r, at most m^2 r (the bivariate density at 0 times pairs)."""
    r = 1e-9
    p, err = equicorrelated_orthant(*_problem(m, mu, r, sigma))
    assert err < 1e-12
    assert abs(p - ndtr(-mu / sigma) ** m) <= m**2 * r
    assert p != ndtr(-mu / sigma) ** m or m * r < 1e-16  # the integral ran, not a shortcut


def test_declines_what_it_cannot_do():
    mean, cov = _problem(4, -1.0, 0.5, 1.0)
    assert equicorrelated_orthant(*_problem(4, -1.0, -0.2, 1.0)) is None  # r < 0: QMC
    assert equicorrelated_orthant(mean + [0, 0, 0, 1e-9], cov) is None
    bumped = cov.copy()
    bumped[0, 1] = bumped[1, 0] = 0.5 + 1e-9
    assert equicorrelated_orthant(mean, bumped) is None
    # rounding-level departures are accepted and counted in the error estimate
    p0, e0 = equicorrelated_orthant(mean, cov)
    p1, e1 = equicorrelated_orthant(mean * (1 + 1e-14 * np.arange(4)), cov)
    assert abs(p1 - p0) <= e1 and e1 > e0


def test_exchangeable_test_accuracy_is_deterministic_and_agrees_with_qmc():
    """Theorem 2's test accuracy at a K = 5 exchangeable state: the symmetric path's orthant
    is equicorrelated, so it is now a 1-d integral with a ~1e-14 error; the per-cluster QMC
    path (not told the clusters are exchangeable) agrees within its error bars."""
    mix = gm.Mixture.isotropic(0.5, "simplex", n_clusters=5)
    problem = make_problem(mix, "square", lam=0.1, alpha=2.0)
    K = 5
    Pi = np.eye(K) - 1.0 / K
    M, b = 1.3 * Pi, np.zeros(K)
    Q = np.broadcast_to(0.8 * Pi + 0.1 * np.eye(K), (K, K, K)).copy()
    # (in the square loss's K - 1 outputs orthogonal to the ones, where the solver works:
    # the test accuracy depends on the outputs' differences only)
    P = problem.P
    M, b, Q = M @ P.T, b @ P.T, P @ Q @ P.T
    p, e = accuracy(problem, M, b, Q, exchangeable=True)
    q, se = accuracy(problem, M, b, Q)
    assert e < 1e-12 and 0 < se < 1e-6
    assert np.all(p == p[0])
    assert abs(p[0] - mix.rho @ q) <= 4 * se + e
    assert accuracy(problem, M, b, Q, exchangeable=True, seed=7)[0][0] == p[0]


def _trapezoid_reference(m: int, mu: float, r: float, sigma: float) -> float:
    """The integral summed on a fine grid over ``|u| <= 37`` (spectrally accurate for this
    smooth, decaying integrand): a reference independent of both rules."""
    h, a, s = -mu / sigma, np.sqrt(r), np.sqrt(1.0 - r)
    u, du = np.linspace(-37.0, 37.0, 200_001, retstep=True)
    return float(
        np.exp(-0.5 * u * u + m * log_ndtr((h - a * u) / s)).sum() * du / np.sqrt(2 * np.pi)
    )


@pytest.mark.parametrize(
    ("m", "mu", "r", "sigma"),
    [(9, -1.0, 0.5, 1.0), (9, 0.7, 0.5, 0.6), (20, 4.0, 0.99, 1.0), (5, -30.0, 0.5, 1.0),
     (3, 2.0, 0.05, 3.0), (9, 0.0, 0.9, 1.0)],
)  # fmt: skip
def test_panel_rule_against_adaptive_quadrature_and_a_fine_sum(m, mu, r, sigma, monkeypatch):
    """The composite Gauss-Legendre rule (the fast path) within its error of a reference
    summed independently, and of the adaptive quadrature it replaces within both errors;
    at ``m = 20``, ``r = 0.99`` the adaptive rule was 7e-13 off with an estimate of 1e-14,
    the panel rule within 1e-15 of the reference."""
    from gaussmix.theory.numerics import equicorrelated as eq

    h, a, s = -mu / sigma, np.sqrt(r), np.sqrt(1.0 - r)
    fast = eq._panel_integral(h, a, s, m)
    assert fast is not None and fast[1] < 1e-14
    ref = _trapezoid_reference(m, mu, r, sigma)
    assert abs(fast[0] - ref) <= fast[1] + 1e-15
    p, err = equicorrelated_orthant(*_problem(m, mu, r, sigma))
    # (the path taken; r and sigma as read off the covariance, to rounding)
    assert p == pytest.approx(fast[0], abs=1e-15) and err < 1e-12
    monkeypatch.setattr(eq, "_panel_integral", lambda *args: None)
    q, qerr = equicorrelated_orthant(*_problem(m, mu, r, sigma))  # adaptive quadrature
    assert abs(q - ref) <= max(qerr, 1e-12)


def test_steep_step_falls_back_to_adaptive_quadrature():
    """A correlation near 1 makes the step of ``Phi`` in ``u`` steeper than the panels'
    budget allows: no panel rule, and the adaptive quadrature's answer."""
    from gaussmix.theory.numerics import equicorrelated as eq

    m, mu, r, sigma = 6, -0.3, 0.999, 1.0
    assert eq._panel_integral(-mu / sigma, np.sqrt(r), np.sqrt(1.0 - r), m) is None
    p, err = equicorrelated_orthant(*_problem(m, mu, r, sigma))
    assert err < 1e-12 and abs(p - _trapezoid_reference(m, mu, r, sigma)) < 1e-12
