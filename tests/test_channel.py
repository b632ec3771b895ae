"""Channel expectations: closed forms against adaptive quadrature of the prox-defined
integrands, and the Hessian (Stein) form of Vhat against ``-Q^{-1/2} E[f xi^T]``."""

from __future__ import annotations

import numpy as np
import pytest
from _helpers import random_spd
from scipy import integrate
from scipy.stats import norm

from gaussmix.theory.channel import _quadrature_moments, channel_moments, sqrtm_psd
from gaussmix.theory.losses import (
    CrossEntropyLoss,
    HingeLoss,
    LogisticLoss,
    ReducedLoss,
    SquareLoss,
)
from gaussmix.theory.problem import _complement_of_ones
from gaussmix.theory.quadrature import GaussHermite


def _scalar_expectations(loss, y, m, q, v):
    """E over omega ~ N(m, q) of f, f^2, loss, envelope and f*xi by adaptive quadrature."""
    s = np.sqrt(q)
    yy = np.array([[y]])
    V = np.array([[[v]]])

    def parts(w):
        om = np.array([[[w]]])
        h = loss.prox(yy, om, V)[0, 0, 0]
        f = (h - w) / v
        lv = loss.value(yy[:, None, :], np.array([[[h]]]))[0, 0]
        return f, lv

    def E(fun):
        # integrate over xi, splitting at the kinks of the hinge prox
        pts = [((1 - v) * y - m) / s, (y - m) / s] if isinstance(loss, HingeLoss) else []
        lo, hi = -12.0, 12.0
        edges = sorted([lo, *[p for p in pts if lo < p < hi], hi])
        tot = 0.0
        for a, b in zip(edges[:-1], edges[1:]):
            tot += integrate.quad(
                lambda xi: fun(m + s * xi, xi) * norm.pdf(xi), a, b, epsabs=1e-13, epsrel=1e-12
            )[0]
        return tot

    Ef = E(lambda w, xi: parts(w)[0])
    Eff = E(lambda w, xi: parts(w)[0] ** 2)
    Eloss = E(lambda w, xi: parts(w)[1])
    Eenv = E(lambda w, xi: 0.5 * v * parts(w)[0] ** 2 + parts(w)[1])
    Efxi = E(lambda w, xi: parts(w)[0] * xi)
    return Ef, Eff, Eloss, Eenv, -Efxi / s  # last: Stein form of Edf


@pytest.mark.parametrize("loss", [SquareLoss(), HingeLoss(), LogisticLoss()])
@pytest.mark.parametrize(
    "y,m,q,v", [(1.0, 0.7, 0.8, 0.5), (-1.0, 0.3, 2.5, 3.0), (1.0, -0.4, 0.05, 0.02)]
)
def test_scalar_channel_against_adaptive_quadrature(loss, y, m, q, v):
    ref = _scalar_expectations(loss, y, m, q, v)
    Y = np.array([[y]])
    rule = GaussHermite(200)
    mom = channel_moments(
        loss, Y, np.array([[m]]), np.zeros(1), np.array([[[q]]]), np.array([[[v]]]), rule
    )
    got = (mom.Ef[0, 0], mom.Eff[0, 0, 0], mom.Eloss[0], mom.Eenv[0], mom.Edf[0, 0, 0])
    # Gauss-Hermite on a smooth integrand (logistic) is as accurate as adaptive quadrature
    np.testing.assert_allclose(got, ref, rtol=1e-8, atol=1e-10)


def test_square_closed_form_equals_quadrature_path(rng):
    L, K = 3, 2
    y = rng.standard_normal((K, L))
    M = rng.standard_normal((K, L))
    b = rng.standard_normal(L)
    Q = np.stack([random_spd(rng, L) for _ in range(K)])
    V = np.stack([random_spd(rng, L) for _ in range(K)])
    exact = channel_moments(SquareLoss(), y, M, b, Q, V)
    quad = _quadrature_moments(SquareLoss(), y, M + b, Q, V, GaussHermite(4, L), None)[0]
    for name in ("Ef", "Eff", "Edf", "Eloss", "Eenv"):
        np.testing.assert_allclose(getattr(quad, name), getattr(exact, name), atol=1e-12)


def test_cross_entropy_stein_identity(rng):
    """Hessian form E[(I + H V)^{-1} H] equals the Stein form -E[f xi^T] Q^{-1/2}."""
    K = 3
    loss = ReducedLoss(CrossEntropyLoss(), _complement_of_ones(K))
    y = np.eye(K)
    M = rng.standard_normal((K, K - 1))
    Q = np.stack([random_spd(rng, K - 1, 0.2, 2.0) for _ in range(K)])
    V = np.stack([random_spd(rng, K - 1, 0.2, 3.0) for _ in range(K)])
    rule = GaussHermite(60, K - 1)
    mom = channel_moments(loss, y, M, np.zeros(K - 1), Q, V, rule)
    S = sqrtm_psd(Q)
    omega = M[:, None, :] + np.einsum("kij,nj->kni", S, rule.nodes)
    h = loss.prox(y, omega, V)
    f = -loss.grad(y[:, None, :], h)
    Efxi = np.einsum("n,kni,nj->kij", rule.weights, f, rule.nodes)
    stein = -Efxi @ np.linalg.inv(S)
    np.testing.assert_allclose(mom.Edf, stein, atol=1e-9)
