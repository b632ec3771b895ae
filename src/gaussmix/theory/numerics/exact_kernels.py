"""Compiled closed-form channel moments of one output (numba): the hinge and the square loss.

The losses whose proximal map is closed form (``exact_channel``) need no quadrature: their
channel expectations (Theorem 1, eq. (8); :mod:`gaussmix.theory.channel.channel`) are
Gaussian partial moments of a piecewise-affine (hinge) or affine (square) map of
``omega_c ~ N(m_c, q_c)``.  With one output (binary labels) they are a few dozen operations
on the scalars of each cluster; as numpy calls on the clusters' arrays each of those
operations cost about a microsecond of Python work, the whole of a binary point's channel
(42 us a hinge evaluation, 33 us a square one, against 4-6 us here).

* :func:`hinge_moments` -- the hinge's partial moments, its middle piece by Gauss-Legendre
  where the closed forms cancel (:data:`HINGE_MIDDLE_RULE`).  Its ``Phi`` is the engine's
  compiled one (:func:`~gaussmix.theory.numerics.normal_kernels.ndtr_scalar`, scipy's bits);
  its density the C library's ``exp``, within an ulp of numpy's (which on AVX-512 machines
  is numpy's own vectorised ``exp``, on others the same C library's), and its middle
  piece's sums in the order of the nodes: within ~1e-14 relative of the numpy forms it
  replaced.
* :func:`square_moments_scalar` -- the square loss's moments of one output, each the
  operation the general ``L x L`` form (:func:`gaussmix.theory.channel.channel._square_moments`)
  makes on a ``1 x 1`` block, in its order (the inverse ``1 / (1 + v)``, the sums of
  ``einsum`` from zero): the same bits (``tests/test_exact_kernels.py``).

Each takes ``y`` (K, 1), ``m`` (K, 1) (the means with the bias), ``Q`` and ``V`` (K, 1, 1)
and returns ``(Ef, Eff, Edf, Eloss, Eenv)`` shaped (K, 1), (K, 1, 1), (K, 1, 1), (K,), (K,).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .normal_kernels import ndtr_scalar

__all__ = ["HINGE_MIDDLE_NODES", "HINGE_MIDDLE_RULE", "hinge_moments", "square_moments_scalar"]

_SQRT2PI = math.sqrt(2.0 * math.pi)
#: the floor of ``q`` under the hinge's standard deviation ``s = sqrt(max(q, floor))``: a
#: degenerate ``Q_c = 0`` (the zero estimator) gives a finite ``s`` and the point mass's
#: limits (not a tolerance: the smallest normal double's order)
_Q_FLOOR = 1e-300

#: Gauss-Legendre nodes of the hinge channel's middle piece on ``(0, 1)``
#: (:func:`hinge_moments`)
HINGE_MIDDLE_NODES = 12
_LEG = np.polynomial.legendre.leggauss(HINGE_MIDDLE_NODES)
#: the middle piece's nodes ``tau`` and weights on ``(0, 1)``
HINGE_MIDDLE_RULE = (
    np.ascontiguousarray(0.5 * (_LEG[0] + 1.0)),
    np.ascontiguousarray(0.5 * _LEG[1]),
)


@njit(cache=True, error_model="numpy", nogil=True)
def hinge_moments(y, m, Q, V, tau, wt):  # pragma: no cover - compiled
    """Hinge loss (one output): piecewise-linear prox, exact Gaussian partial moments.

    With ``z = y omega`` and ``u = 1 - z ~ N(1 - y m, q)``: ``f = 0`` for ``u <= 0``,
    ``f = y u / v`` for ``0 < u < v`` and ``f = y`` for ``u >= v``.  The middle piece enters
    as ``P(0 < u < v) / v``, ``E[u; 0 < u < v] / v`` and ``E[u^2; 0 < u < v] / v^2``: where
    ``v <= s`` these are ``J_0``, ``v J_1`` and ``v J_2`` with
    ``J_k = int_0^1 tau^k p_u(v tau) dtau`` (``p_u`` the density of ``u``), by
    Gauss-Legendre (``tau``, ``wt``: :data:`HINGE_MIDDLE_RULE`; the density varies on the
    scale ``s >= v``, error below 10^-16), since the closed forms cancel there (relative
    error ``~ eps s^2 / v^2``: 3e-3 in ``E[f^2]`` at ``v = 10^-7``, ``s = 0.6``); at
    ``v = 0`` (the lasso's zero estimator) they are the limit: the density of ``u`` at 0,
    and 0, 0.  A NaN ``v`` or ``q`` gives NaN moments.
    """
    K = m.shape[0]
    Ef = np.empty((K, 1))
    Eff = np.empty((K, 1, 1))
    Edf = np.empty((K, 1, 1))
    Eloss = np.empty(K)
    Eenv = np.empty(K)
    for k in range(K):
        yy = y[k, 0]
        v = V[k, 0, 0]
        s = math.sqrt(max(Q[k, 0, 0], _Q_FLOOR))
        mu = 1.0 - yy * m[k, 0]
        a0 = (0.0 - mu) / s
        a1 = (v - mu) / s
        P1 = ndtr_scalar(a1)
        p1 = math.exp(-0.5 * a1 * a1) / _SQRT2PI
        pc = 1.0 - P1  # P(u >= v)
        if v <= s:  # the middle piece by its Gauss-Legendre rule
            j0 = 0.0
            j1 = 0.0
            j2 = 0.0
            for n in range(tau.shape[0]):
                t = (v * tau[n] - mu) / s
                dens = math.exp(-0.5 * t * t) / _SQRT2PI * wt[n] / s
                j0 += dens
                j1 += dens * tau[n]
                j2 += dens * (tau[n] * tau[n])
            mid0, mid1, mid2 = j0, v * j1, v * j2
        else:  # its closed forms (NaN where v is)
            P0 = ndtr_scalar(a0)
            p0 = math.exp(-0.5 * a0 * a0) / _SQRT2PI
            pb = P1 - P0  # P(0 < u < v)
            dp, ss = p0 - p1, s * s
            eu = mu * pb + s * dp
            eu2 = (mu * mu + ss) * pb + 2.0 * mu * s * dp + ss * (a0 * p0 - a1 * p1)
            mid0, mid1, mid2 = pb / v, eu / v, eu2 / (v * v)
        e2 = mid2 + pc
        Ef[k, 0] = yy * (mid1 + pc)
        Eff[k, 0, 0] = e2
        Edf[k, 0, 0] = mid0
        el = (mu - v) * pc + s * p1  # E[(u - v)_+]
        Eloss[k] = el
        Eenv[k] = 0.5 * v * e2 + el
    return Ef, Eff, Edf, Eloss, Eenv


@njit(cache=True, error_model="numpy", nogil=True)
def square_moments_scalar(y, m, Q, V):  # pragma: no cover - compiled
    """Square loss (one output): ``f = (y - omega) / (1 + v)`` is affine, its expectations
    exact: ``E f = a r``, ``E f^2 = a (r^2 + q) a``, ``E[df] = a``, the loss
    ``E f^2 / 2`` and the envelope ``(1 + v) E f^2 / 2``, with ``a = 1 / (1 + v)`` and
    ``r = y - m``: the general form's operations on ``1 x 1`` blocks (its ``einsum`` sums
    start from zero), the same bits."""
    K = m.shape[0]
    Ef = np.empty((K, 1))
    Eff = np.empty((K, 1, 1))
    Edf = np.empty((K, 1, 1))
    Eloss = np.empty(K)
    Eenv = np.empty(K)
    for k in range(K):
        g = 1.0 + V[k, 0, 0]
        a = 1.0 / g
        r = y[k, 0] - m[k, 0]
        e2 = (a * (r * r + Q[k, 0, 0])) * a
        Ef[k, 0] = 0.0 + a * r
        Eff[k, 0, 0] = e2
        Edf[k, 0, 0] = a
        Eloss[k] = 0.5 * e2
        Eenv[k] = 0.5 * (0.0 + g * e2)
    return Ef, Eff, Edf, Eloss, Eenv
