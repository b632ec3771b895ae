"""The deterministic separability threshold of exchangeable clusters (issue 10, Performance).

``waterfill_cdf`` (Gil-Pelaez inversion of a power of one hinge's characteristic function) is
checked against adaptive quadrature of its definition; ``waterfill_moments`` against the
two-cluster closed forms and against the sort-based projection (itself checked against a
brute-force projection in test_transition.py) averaged over scrambled Sobol points; the
threshold against Gardner's closed form (K = 2), the quasi-Monte Carlo values recorded in
BENCHMARKS.md, its own error estimate against a finer rule, and the root of the max-margin
margin (K = 5).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.special import ndtr

import gaussmix as gm
from gaussmix.experiments.transition import separability_threshold
from gaussmix.theory.limits import margin as mg
from gaussmix.theory.limits import separability as sep


def _phi(x: float) -> float:
    return np.exp(-0.5 * x * x) / np.sqrt(2.0 * np.pi)


def _cdf_one_hinge(t: float, c: float) -> float:
    """P(Z + (y - t)_+ <= c): the atom y <= t plus the integral over y > t."""
    tail, _ = quad(lambda y: _phi(y) * ndtr(c - (y - t)), t, np.inf, epsabs=1e-14, epsrel=1e-13)
    return float(ndtr(t) * ndtr(c) + tail)


def _cdf_two_hinges(t: float, c: float) -> float:
    """P(Z + (y1 - t)_+ + (y2 - t)_+ <= c) by conditioning on y2 (nested quadrature)."""
    tail, _ = quad(
        lambda y: _phi(y) * _cdf_one_hinge(t, c - (y - t)), t, np.inf, epsabs=1e-13, epsrel=1e-12
    )
    return float(ndtr(t) * _cdf_one_hinge(t, c) + tail)


@pytest.mark.parametrize("t", [-2.5, -0.3, 0.0, 1.7])
@pytest.mark.parametrize("c", [-1.5, 0.4, 3.0])
def test_waterfill_cdf_matches_quadrature(t, c):
    tt, cc = np.array([t]), np.array([c])
    assert sep.waterfill_cdf(tt, cc, 0)[0] == pytest.approx(ndtr(c), abs=1e-13)
    assert sep.waterfill_cdf(tt, cc, 1)[0] == pytest.approx(_cdf_one_hinge(t, c), abs=1e-12)
    assert sep.waterfill_cdf(tt, cc, 2)[0] == pytest.approx(_cdf_two_hinges(t, c), abs=1e-11)


@pytest.mark.parametrize("r", [0.0, 0.6, 1.8])
def test_two_cluster_moments_closed_form(r):
    # K = 2: active iff g1 - g0 > r; tau - a = (g1 - g0 - r)_+ / 2
    e1, e2 = sep.waterfill_moments(r, 2)
    u = r / np.sqrt(2.0)
    assert e1 == pytest.approx(ndtr(-u), abs=1e-13)
    partial = u * ndtr(u) + _phi(u) - u  # E[(xi - u)_+]
    assert e2 == pytest.approx(np.sqrt(2.0) * partial / 2.0, abs=1e-12)


@pytest.mark.parametrize("K", [3, 6])
@pytest.mark.parametrize("r", [0.0, 1.1])
def test_moments_match_sorted_projection_on_sobol_points(K, r):
    g = sep.QMCNodes.make(K, 14, 8, seed=1).xi
    k, d0, dg, _ = sep.exchangeable_stats(r, g)
    e1, e2 = sep.waterfill_moments(r, K)
    for values, exact in ((k, e1), (-dg, e1), (d0, e2)):
        per = values.mean(axis=-1)  # one estimate per scrambling
        se = per.std(ddof=1) / np.sqrt(per.size)
        assert abs(per.mean() - exact) < 5 * se + 1e-12


@pytest.mark.parametrize("delta", [0.25, 1.0])
def test_two_clusters_match_gardner_closed_form(delta):
    mix = gm.Mixture.isotropic(delta, "gaussian", n_clusters=2)
    est = sep.separability_threshold_estimate(mix, method="exchangeable")
    closed = sep.gardner_threshold(0.5, delta)
    assert est.success and est.std_error < 1e-9 * closed
    assert est.alpha_star == pytest.approx(closed, rel=1e-9)


# randomised quasi-Monte Carlo values of the previous engine (BENCHMARKS.md, 2026-11-26,
# 8 x 2^15 .. 2^17 Sobol points): alpha* and its relative standard error
_RQMC = {
    (3, 0.5): (4.22126, 3.0e-05),
    (5, 0.25): (8.57491, 6.3e-05),
    (10, 0.25): (11.07685, 3.5e-05),
    (10, 1.0): (5.60033, 8.7e-05),
}


@pytest.mark.parametrize(("K", "delta"), list(_RQMC))
def test_agrees_with_recorded_quasi_monte_carlo(K, delta):
    value, rel = _RQMC[K, delta]
    res = separability_threshold(
        gm.Mixture.isotropic(delta, "gaussian", n_clusters=K), evidence=False
    )
    assert res.success and res.method == "exchangeable" and res.log2_n == 0
    assert res.rel_accuracy <= 1e-10
    # 4 sigma of the recorded value plus its 5-digit rounding
    assert abs(res.alpha_star - value) < 4 * rel * value + 5e-6


def test_error_estimate_bounds_a_finer_rule():
    # the estimate (difference of the last two rules) against the root with a rule two
    # levels finer than the one that met rel_tol
    K, delta = 7, 0.5
    mix = gm.Mixture.isotropic(delta, "gaussian", n_clusters=K)
    est = sep.separability_threshold_estimate(mix, rel_tol=1e-6)
    level = sep.WATERFILL_RULES.index(tuple(est.shape["rule"]))
    finer = sep.WATERFILL_RULES[level + 2]

    def fn(r: float) -> float:
        e1, e2 = sep.waterfill_moments(r, K, finer)
        return r * delta * e1 - e2  # a_theta = 1 for Gaussian means

    r = sep._root_near(fn, est.shape["r"])
    ref = (K - 1) / sep.waterfill_moments(r, K, finer)[0]
    assert 0 < est.std_error <= 1e-6 * est.alpha_star
    assert abs(est.alpha_star - ref) <= est.std_error


@pytest.mark.slow
def test_max_margin_vanishes_at_the_deterministic_alpha_star():
    # the exchangeable max-margin map (quasi-Monte Carlo, continuation in alpha) near the
    # threshold: its margin vanishes linearly at alpha*, so the secant through 0.95 and
    # 0.975 alpha* hits it up to O(gap^2) (measured 5e-4, as for K = 2 in test_transition)
    mix = gm.Mixture.isotropic(0.5, "gaussian", n_clusters=5)
    astar = sep.separability_threshold_estimate(mix).alpha_star
    a1, a2 = 0.95 * astar, 0.975 * astar
    k1, k2 = (
        mg.max_margin(mix, a, alpha_star=astar, log2_n=12, tol=1e-9).margin for a in (a1, a2)
    )
    assert 0 < k2 < k1
    assert a2 - k2 * (a2 - a1) / (k2 - k1) == pytest.approx(astar, rel=2e-3)


def test_bad_rel_tol():
    mix = gm.Mixture.isotropic(0.5, "gaussian", n_clusters=3)
    with pytest.raises(ValueError, match="rel_tol"):
        sep.separability_threshold_estimate(mix, rel_tol=0.0)
