"""The compiled closed-form channels of one output (gaussmix.theory.numerics.exact_kernels)
against the numpy forms they replaced: the square loss to the bit, the hinge within rounding
(its density from the C library's exp, its middle piece's sums in node order)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import ndtr

from gaussmix.theory.channel.channel import channel_moments
from gaussmix.theory.channel.losses import HingeLoss, SquareLoss
from gaussmix.theory.numerics.exact_kernels import (
    HINGE_MIDDLE_RULE,
    hinge_moments,
    square_moments_scalar,
)

FIELDS = ("Ef", "Eff", "Edf", "Eloss", "Eenv")


def _square_numpy(y, m, Q, V):
    """The general ``L x L`` square-loss form (channel._square_moments) on 1 x 1 blocks."""
    L = m.shape[-1]
    A = np.linalg.inv(np.eye(L) + V)
    r = y - m
    Eff = A @ (r[:, :, None] * r[:, None, :] + Q) @ A
    return (
        np.einsum("kij,kj->ki", A, r),
        Eff,
        A,
        0.5 * np.trace(Eff, axis1=1, axis2=2),
        0.5 * np.einsum("kij,kji->k", np.eye(L) + V, Eff),
    )


def _phi(x):
    return np.exp(-0.5 * x * x) / np.sqrt(2.0 * np.pi)


def _hinge_numpy(y, m, Q, V):
    """The hinge's partial moments as numpy forms on the clusters' arrays (the forms the
    kernel replaced): closed forms where ``v > s``, Gauss-Legendre on the middle piece
    where ``v <= s``."""
    yy, v = y[:, 0], V[:, 0, 0]
    s = np.sqrt(np.maximum(Q[:, 0, 0], 1e-300))
    mu = 1.0 - yy * m[:, 0]
    a0, a1 = -mu / s, (v - mu) / s
    P0, P1, p0, p1 = ndtr(a0), ndtr(a1), _phi(a0), _phi(a1)
    pc = 1.0 - P1
    with np.errstate(divide="ignore", invalid="ignore"):
        pb = P1 - P0
        eu = mu * pb + s * (p0 - p1)
        eu2 = (mu * mu + s * s) * pb + 2.0 * mu * s * (p0 - p1) + s * s * (a0 * p0 - a1 * p1)
        mid = [pb / v, eu / v, eu2 / v**2]
    narrow = v <= s
    tau, wt = HINGE_MIDDLE_RULE
    dens = _phi((v[:, None] * tau - mu[:, None]) / s[:, None]) * wt / s[:, None]
    quad = [dens.sum(axis=1), v * (dens @ tau), v * (dens @ (tau * tau))]
    mid = [np.where(narrow, j, c) for j, c in zip(quad, mid)]
    Eff = mid[2] + pc
    Eloss = (mu - v) * pc + s * p1
    return (
        (yy * (mid[1] + pc))[:, None],
        Eff[:, None, None],
        mid[0][:, None, None],
        Eloss,
        0.5 * v * Eff + Eloss,
    )


def _random_blocks(rng, K, scale_v):
    y = rng.choice([-1.0, 1.0], (K, 1))
    m = rng.normal(size=(K, 1))
    Q = rng.uniform(0.05, 3.0, (K, 1, 1))
    V = scale_v * rng.uniform(0.01, 3.0, (K, 1, 1))
    return y, m, Q, V


def test_square_scalar_is_the_general_form_to_the_bit(rng):
    """Signed zeros, zero metrics and overlaps, large and small scales included."""
    for _ in range(300):
        K = int(rng.integers(1, 6))
        y = rng.choice([-1.0, 1.0, 0.0, -0.0, 0.5], (K, 1))
        m = rng.normal(size=(K, 1)) * rng.choice([0.0, 1e-3, 1.0, 1e3], (K, 1))
        Q = rng.uniform(0, 3, (K, 1, 1)) * rng.choice([0.0, 1e-8, 1.0, 1e8], (K, 1, 1))
        V = rng.uniform(0, 3, (K, 1, 1)) * rng.choice([0.0, 1e-8, 1.0, 1e8], (K, 1, 1))
        if rng.random() < 0.2:
            m = y.copy()  # (residual exactly zero, of either sign)
        got = square_moments_scalar(y, m, Q, V)
        for name, a, b in zip(FIELDS, _square_numpy(y, m, Q, V), got):
            assert a.shape == b.shape, name
            assert (a.view(np.int64) == b.view(np.int64)).all(), name
    # and the library's channel takes it for one output
    y, m, Q, V = _random_blocks(rng, 4, 1.0)
    mom = channel_moments(SquareLoss(), y, m, np.zeros(1), Q, V)
    for name, a in zip(FIELDS, _square_numpy(y, m, Q, V)):
        assert (getattr(mom, name) == a).all(), name


@pytest.mark.parametrize("scale_v", [1e-7, 0.05, 1.0, 5.0])
def test_hinge_kernel_against_the_numpy_forms(rng, scale_v):
    """Both pieces (v <= s by quadrature of the middle, v > s closed): within rounding."""
    y, m, Q, V = _random_blocks(rng, 64, scale_v)
    got = hinge_moments(y, m, Q, V, *HINGE_MIDDLE_RULE)
    for name, a, b in zip(FIELDS, _hinge_numpy(y, m, Q, V), got):
        assert a.shape == b.shape, name
        np.testing.assert_allclose(b, a, rtol=1e-13, atol=1e-300, err_msg=name)
    mom = channel_moments(HingeLoss(), y, m, np.zeros(1), Q, V)
    for name, b in zip(FIELDS, got):
        assert (getattr(mom, name) == b).all(), name


def test_hinge_kernel_limits():
    """``v = 0`` with ``q = 0`` (the zero estimator): the point mass's limits, finite; a NaN
    metric gives NaN moments."""
    y = np.array([[1.0], [-1.0]])
    m = np.array([[0.3], [0.2]])
    Q = np.zeros((2, 1, 1))
    V = np.zeros((2, 1, 1))
    Ef, Eff, Edf, Eloss, Eenv = hinge_moments(y, m, Q, V, *HINGE_MIDDLE_RULE)
    # u = 1 - y m > 0 surely: f = y (the loss's slope), E f^2 = 1, no curvature at u != 0
    np.testing.assert_array_equal(Ef[:, 0], y[:, 0])
    np.testing.assert_array_equal(Eff[:, 0, 0], [1.0, 1.0])
    np.testing.assert_array_equal(Edf[:, 0, 0], [0.0, 0.0])
    np.testing.assert_allclose(Eloss, 1.0 - y[:, 0] * m[:, 0], rtol=1e-15)
    V[1, 0, 0] = np.nan
    Q[:] = 0.5
    out = hinge_moments(y, m, Q, V, *HINGE_MIDDLE_RULE)
    assert all(np.isfinite(a[0]).all() for a in out)
    assert all(np.isnan(a[1]).all() for a in out)
