"""Channel expectations: closed forms against adaptive quadrature of the prox-defined
integrands, and the Hessian (Stein) form of Vhat against ``-Q^{-1/2} E[f xi^T]``."""

from __future__ import annotations

import numpy as np
import pytest
from _helpers import random_spd
from scipy import integrate
from scipy.stats import norm

from gaussmix.theory.channel.channel import _quadrature_moments, channel_moments, sqrtm_psd
from gaussmix.theory.channel.losses import (
    CrossEntropyLoss,
    HingeLoss,
    LogisticLoss,
    ReducedLoss,
    SquareLoss,
)
from gaussmix.theory.numerics.quadrature import GaussHermite
from gaussmix.theory.problem.problem import _complement_of_ones


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


# ----------------------------------------------------------------------------- kernel table
def test_compiled_kernels_are_chosen_from_one_table_by_loss_type():
    from gaussmix.theory.channel.channel import (
        COMPILED_KERNELS,
        CROSS_ENTROPY_KERNEL,
        LOGISTIC_KERNEL,
        CompiledKernel,
        compiled_kernel,
    )

    class MyLogistic(LogisticLoss):
        pass

    reduced_ce = ReducedLoss(CrossEntropyLoss(), _complement_of_ones(3))
    assert compiled_kernel(LogisticLoss()) is LOGISTIC_KERNEL
    assert compiled_kernel(MyLogistic()) is LOGISTIC_KERNEL  # subclasses inherit
    assert compiled_kernel(reduced_ce) is CROSS_ENTROPY_KERNEL
    assert compiled_kernel(CrossEntropyLoss()) is None  # the kernel needs the reduced loss
    assert compiled_kernel(ReducedLoss(LogisticLoss(), np.eye(1))) is None
    for loss in (SquareLoss(), HingeLoss()):
        assert compiled_kernel(loss) is None
    assert all(isinstance(k, CompiledKernel) for k in COMPILED_KERNELS.values())
    assert set(COMPILED_KERNELS) == {LogisticLoss, CrossEntropyLoss}


def test_a_loss_without_a_table_entry_takes_the_numpy_path(rng, monkeypatch):
    import gaussmix.theory.channel.channel as channel

    K = 3
    loss = ReducedLoss(CrossEntropyLoss(), _complement_of_ones(K))
    y = np.eye(K)
    M = rng.standard_normal((K, K - 1))
    Q = np.stack([random_spd(rng, K - 1, 0.2, 2.0) for _ in range(K)])
    V = np.stack([random_spd(rng, K - 1, 0.2, 3.0) for _ in range(K)])
    rule = GaussHermite(12, K - 1)
    fast = channel_moments(loss, y, M, np.zeros(K - 1), Q, V, rule)
    calls: list = []
    real_prox = ReducedLoss.prox
    with monkeypatch.context() as m:
        m.delitem(channel.COMPILED_KERNELS, CrossEntropyLoss)
        m.setattr(ReducedLoss, "prox", lambda *a, **k: calls.append(1) or real_prox(*a, **k))
        ref = channel_moments(loss, y, M, np.zeros(K - 1), Q, V, rule)
    assert calls  # the numpy proximal map ran
    for name in ("Ef", "Eff", "Edf", "Eloss", "Eenv"):
        np.testing.assert_allclose(getattr(fast, name), getattr(ref, name), rtol=1e-10, atol=1e-12)


def test_exact_channel_losses_need_no_rule_and_declare_their_closed_form(rng):
    from gaussmix.theory.channel.channel import channel_evaluation

    y = np.array([[1.0], [-1.0]])
    M = rng.standard_normal((2, 1))
    Q = np.array([[[0.7]], [[1.3]]])
    V = np.array([[[0.4]], [[2.0]]])
    for loss in (SquareLoss(), HingeLoss()):
        assert loss.exact_channel
        mom, warm = channel_evaluation(loss, y, M, np.zeros(1), Q, V, None)
        assert warm is None and np.all(np.isfinite(mom.Eff))

    class Declared(LogisticLoss):
        exact_channel = True  # claims a closed form that the channel does not have

    with pytest.raises(TypeError, match="Declared declares exact_channel=True"):
        channel_moments(Declared(), y, M, np.zeros(1), Q, V, GaussHermite(8))
    with pytest.raises(ValueError, match="a quadrature rule is needed"):
        channel_moments(LogisticLoss(), y, M, np.zeros(1), Q, V, None)
