"""The Gaussian moments of the soft threshold ``S(x) = sign(x) (|x| - t)_+``
(:mod:`gaussmix.theory.numerics.soft_threshold`, Appendix C.2): the scalar moments against
an adaptive quadrature, the tail moments against a quadrature of the Mills ratio's integral
on both sides of the switch to its continued fraction (and their underflow to exactly 0),
the bivariate products' closed form against the one-dimensional rule with panels at the
kinks and a Monte Carlo, and the multi-output lasso's decoupled outputs (a diagonal metric)
deep in the tail, where they take the same moments."""

from __future__ import annotations

import numpy as np
import pytest
from _helpers import gauss_expect, soft
from scipy.integrate import quad

from gaussmix.theory.numerics import soft_threshold as st
from gaussmix.theory.numerics.soft_threshold import (
    _tail_moments,
    centred_soft_threshold_moments,
    soft_threshold_moments,
)
from gaussmix.theory.numerics.tolerances import XI_MAX
from gaussmix.theory.prior.lasso import gaussian_l1_moments

MOMENT_CASES = [
    (0.0, 1.0, 0.0),
    (0.0, 1.0, 0.7),
    (0.3, 0.5, 0.2),
    (-1.2, 0.8, 0.5),
    (2.0, 0.3, 0.1),
    (0.1, 0.05, 1.0),  # far in the tail: almost surely thresholded
    (-0.4, 2.0, 3.0),
    (0.5, 0.0, 0.2),  # point mass
]


@pytest.mark.parametrize("m,s,t", MOMENT_CASES)
def test_soft_threshold_moments_match_quadrature(m, s, t):
    p0, p1, p2, e = soft_threshold_moments(m, s, t)
    ref = [
        gauss_expect(lambda b: (np.abs(b) > t).astype(float), m, s, t),
        gauss_expect(lambda b: np.abs(soft(b, t)), m, s, t),
        gauss_expect(lambda b: soft(b, t) ** 2, m, s, t),
        gauss_expect(lambda b: soft(b, t), m, s, t),
    ]
    np.testing.assert_allclose([p0, p1, p2, e], ref, rtol=1e-9, atol=1e-12)


def test_centred_soft_threshold_moments_are_the_general_ones_to_the_bit():
    # the points' form of the lasso prior takes a centred field's moments from one tail
    # (both tails are the same numbers); it must return soft_threshold_moments' bits,
    # point masses and a zero threshold included
    rng = np.random.default_rng(7)
    s = np.abs(rng.normal(size=(6, 4))) * rng.choice([0.0, 1e-3, 1.0, 30.0], size=(6, 4))
    for t in (0.0, 0.3, rng.uniform(0.0, 2.0, size=(6, 1))):
        got = centred_soft_threshold_moments(s, t)
        want = soft_threshold_moments(0.0, s, t)[:3]
        for g, w in zip(got, want):
            assert g.shape == w.shape and np.array_equal(g.view(np.int64), w.view(np.int64))


@pytest.mark.parametrize("u", [-3.0, -4.9, -5.1, -8.0, -20.0, -37.0])
def test_tail_moments_against_quadrature(u):
    """``E[(Z - c)_+^k] = phi(c) int_0^inf s^k exp(-c s - s^2/2) ds``, ``c = -u``, to 1e-13
    relative on both sides of the switch to the continued fraction (``u = -5``)."""
    p0, p1, p2 = _tail_moments(np.array([u]), np.array([1.0]), np.array([True]))
    c = -u
    phi = np.exp(-0.5 * c * c) / np.sqrt(2.0 * np.pi)
    for k, p in ((1, p1), (2, p2)):
        ref = quad(lambda s, k=k: s**k * np.exp(-c * s - s * s / 2), 0, np.inf, epsrel=1e-13)
        assert p[0] == pytest.approx(phi * ref[0], rel=2e-13)


def test_tail_moments_deep_beside_nan():
    """The continued fraction is taken wherever ``u < -5``, also beside a NaN (the test
    that decides it ignores NaN) and in one entry of many."""
    u = np.array([np.nan, -8.0, 1.0, -20.0])
    got = _tail_moments(u, np.ones(4), np.ones(4, bool))
    for i in (1, 2, 3):
        one = _tail_moments(u[i : i + 1], np.ones(1), np.ones(1, bool))
        assert all(g[i] == o[0] for g, o in zip(got, one))
    assert all(np.isnan(g[0]) for g in got)


def test_tail_moments_underflow_to_zero():
    """Beyond ~38.5 standard deviations the moments are exactly 0, never negative or NaN."""
    p0, p1, p2 = _tail_moments(-np.array([39.0, 50.0, 1e3]), np.ones(3), np.ones(3, bool))
    assert np.all(p0 == 0.0) and np.all(p1 == 0.0) and np.all(p2 == 0.0)


@pytest.mark.parametrize("lam", [1e-3, 0.3, 3.0])
def test_soft_threshold_products_closed_form_is_the_rule_at_the_kinks(lam, monkeypatch):
    """``E[S(X) S(Y)]`` of two soft thresholds of bivariate normals: the closed form
    (orthant moments) against the one-dimensional rule with panels at the kinks, at
    correlations up to 0.999 and within ``1e-4`` of +-1 (where ``E[S(Y) | X]`` bends
    sharply; the rule with 400 panels of 16 nodes), to 1e-13 of the pair's scale; a
    constant member and a correlation of +-1 go to the rule, whose panels are exact there
    (the product of two soft thresholds of one normal: checked against its Monte Carlo)."""
    rng = np.random.default_rng(7)
    n = 120
    sx, sy = rng.uniform(0.05, 2.0, n), rng.uniform(0.05, 2.0, n)
    r = rng.uniform(-0.999, 0.999, n)
    r[:40] = rng.choice([-1.0, 1.0], 40) * np.sqrt(1.0 - 1e-4)
    cov = np.stack([np.stack([sx**2, r * sx * sy], -1), np.stack([r * sx * sy, sy**2], -1)], -2)
    mu = rng.normal(size=(n, 2)) * rng.choice([0.1, 1.0, 5.0], (n, 1))
    scale = sx * sy + np.abs(mu).prod(axis=1)
    closed = st.soft_threshold_products(mu, cov, lam)
    with monkeypatch.context() as mp:  # (a fine rule: within 1e-4 of +-1 the bend is sharp)
        mp.setattr(st, "CROSS_PANELS", 400)
        mp.setattr(st, "CROSS_ORDER", 16)
        rule = st.soft_threshold_cross(mu, cov, lam, XI_MAX)
    assert np.max(np.abs(closed - rule) / scale) < 1e-13
    # degenerate pairs: Y = 2 X exactly, and a constant X
    one = np.array([[[1.0, 2.0], [2.0, 4.0]], [[0.0, 0.0], [0.0, 1.0]]])
    m = np.array([[0.2, -0.1], [0.7, 0.3]])
    got = st.soft_threshold_products(m, one, lam)
    x = rng.normal(size=400_000)
    mc = [
        soft(0.2 + x, lam) * soft(-0.1 + 2 * x, lam),
        soft(np.full_like(x, 0.7), lam) * soft(0.3 + x, lam),
    ]
    for g, v in zip(got, mc):
        assert abs(g - v.mean()) < 5 * v.std() / np.sqrt(x.size) + 1e-15


def _upper_tail(c: float, s: float) -> tuple[float, float, float]:
    """``E[(X - t)_+^k]``, ``k = 0, 1, 2`` (``P(X > t)`` first), for ``X ~ N(t - c s,
    s^2)``: ``s^k phi(c) int_0^inf x^k exp(-c x - x^2 / 2) dx`` by quadrature (no
    cancellation)."""
    phi = np.exp(-0.5 * c * c) / np.sqrt(2.0 * np.pi)
    return tuple(
        phi * s**k * quad(lambda x, k=k: x**k * np.exp(-c * x - x * x / 2), 0, np.inf,
                          epsrel=1e-14)[0]
        for k in (0, 1, 2)
    )  # fmt: skip


def test_decoupled_outputs_deep_in_the_tail_are_exact():
    """The multi-output lasso's decoupled outputs (a diagonal metric: ``w_i = S(g_i) /
    a_i``) take the scalar moments, cancellation-free deep in the tail.  One atom's outputs
    lie ``c = 6 .. 37`` standard deviations inside the threshold (exactly: ``s = 2^-6``):
    ``E[w_i]``, ``E[w_i^2]``, ``E||w||_1`` and ``P(|g_i| > lam) = Phi(-c)`` within 2e-13
    relative of the quadrature (a difference of the two tails' direct forms, clipped at 0,
    was off by up to 1e-7 at ``c = 37``, 2e-9 at ``c = 20``).  The other's lie far outside
    it with tiny variances (``|mu| >> lam``): ``S(g) = g - sign(mu) lam`` to a Gaussian mass
    below 1e-300, so ``E[w_i]``, ``E[w_i^2]`` and ``E|w_i|`` are those of a shifted normal
    (to rounding) and every output is active."""
    lam, s = 1.0, 2.0**-6
    cs = np.array([6.0, 10.0, 20.0, 30.0, 37.0])
    L = cs.size
    far = np.array([-5.0, 3.0, 40.0, -1e3, 2.0])
    far_sd = np.array([1e-3, 1e-6, 0.5, 1.0, 2e-2])
    mean = np.stack([1.0 - cs * s, far])  # (the offsets -c s are exact)
    cov = np.stack([np.diag(np.full(L, s * s)), np.diag(far_sd**2)])
    a = np.stack([np.arange(1.0, L + 1), np.arange(L, 0.0, -1.0)])
    A = np.einsum("ja,ab->jab", a, np.eye(L))
    mom = gaussian_l1_moments(A, np.eye(L), mean, cov, lam)
    ref = np.array([_upper_tail(c, s) for c in cs])
    np.testing.assert_allclose(mom.mean[0] * a[0], ref[:, 1], rtol=2e-13, atol=0)
    np.testing.assert_allclose(
        np.diagonal(mom.second[0]) * a[0] ** 2, ref[:, 2], rtol=2e-13, atol=0
    )
    np.testing.assert_allclose(mom.l1[0], (ref[:, 1] / a[0]).sum(), rtol=2e-13, atol=0)
    active = np.diagonal(mom.jacobian[0]) * a[0]
    np.testing.assert_allclose(active, ref[:, 0], rtol=2e-13, atol=0)
    shifted = far - np.sign(far) * lam
    np.testing.assert_allclose(mom.mean[1] * a[1], shifted, rtol=1e-15, atol=0)
    np.testing.assert_allclose(
        np.diagonal(mom.second[1]) * a[1] ** 2, shifted**2 + far_sd**2, rtol=1e-15, atol=0
    )
    np.testing.assert_allclose(mom.l1[1], (np.abs(shifted) / a[1]).sum(), rtol=1e-15, atol=0)
    assert np.all(np.diagonal(mom.jacobian[1]) * a[1] == 1.0) and mom.nonzero[1] == L
