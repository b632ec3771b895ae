"""Compiled Gaussian risk of the reduced cross-entropy (numba): the test loss of Theorem 2's
output, ``sum_n w_n loss(y_k, m_k + S_k xi_n)`` for each cluster ``k``
(:func:`gaussmix.theory.solve.observables.gaussian_risk`).

The loss is that of the channel kernels' node evaluation
(:func:`gaussmix.theory.numerics.kernels.ce_channel`): ``logsumexp(z) - z_y`` with the
logits ``z = P^T u``, their maximum and the sum of the exponentials in the order of the
classes, by :func:`_ce_value` (those operations alone, without the softmax's divisions,
``P p`` and the gradient that the proximal solve needs: the same bits).  Three classes
(two reduced outputs) take :func:`ce3_risk`, the same operations on scalars (as
:func:`~gaussmix.theory.numerics.kernels.ce3_channel` is the general kernel's): the same
bits (``tests/test_kernels.py``) at about half the time (a K = 3 curve's three risks of 20
clusters of 2052 and 8536 nodes: 4.4 ms against 8.1 ms, CPU).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .kernels import logits

__all__ = ["ce_risk", "ce3_risk"]


@njit(cache=True, error_model="numpy", nogil=True)
def _ce_value(u, P, yc, z):  # pragma: no cover - compiled
    """The loss of :func:`~gaussmix.theory.numerics.kernels.ce_channel`'s node evaluation
    alone, ``logsumexp(z) - z_y`` by its operations (the logits, their maximum, the sum of
    the exponentials in the order of ``k``; ``z`` (Kf) scratch)."""
    Kf = P.shape[1]
    zmax = logits(u, P, z)
    S = 0.0
    for k in range(Kf):
        S += math.exp(z[k] - zmax)
    return zmax + math.log(S) - z[yc]


@njit(cache=True, error_model="numpy", nogil=True)
def ce_risk(ylab, P, m, S, xi, w):  # pragma: no cover - compiled
    """Gaussian risk of the reduced cross-entropy for each cluster ``k``:
    ``sum_n w_n loss(y_k, m_k + S_k xi_n)`` (``ylab`` (K,) classes, ``P`` (L, Kf), ``m``
    (K, L), ``S`` (K, L, L) symmetric square roots of the outputs' covariances, ``xi`` (N, L)
    and ``w`` (N,) the rule's nodes and weights)."""
    K, L = m.shape
    Kf = P.shape[1]
    out = np.zeros(K)
    u = np.empty(L)
    z = np.empty(Kf)
    for k in range(K):
        acc = 0.0
        for n in range(xi.shape[0]):
            for i in range(L):
                t = m[k, i]
                for j in range(L):
                    t += S[k, i, j] * xi[n, j]
                u[i] = t
            acc += w[n] * _ce_value(u, P, ylab[k], z)
        out[k] = acc
    return out


@njit(cache=True, error_model="numpy", nogil=True)
def ce3_risk(ylab, P, m, S, xi, w):  # pragma: no cover - compiled
    """:func:`ce_risk` for three classes (``P`` (2, 3)), in scalars: the same operations in
    the same order (each sum from ``0.0`` as the loops' accumulators start), the same bits."""
    K = m.shape[0]
    out = np.zeros(K)
    p00, p01, p02 = P[0, 0], P[0, 1], P[0, 2]
    p10, p11, p12 = P[1, 0], P[1, 1], P[1, 2]
    for k in range(K):
        yc = ylab[k]
        m0, m1 = m[k, 0], m[k, 1]
        s00, s01, s10, s11 = S[k, 0, 0], S[k, 0, 1], S[k, 1, 0], S[k, 1, 1]
        acc = 0.0
        for n in range(xi.shape[0]):
            x0, x1 = xi[n, 0], xi[n, 1]
            u0 = (m0 + s00 * x0) + s01 * x1
            u1 = (m1 + s10 * x0) + s11 * x1
            z0 = (0.0 + u0 * p00) + u1 * p10
            z1 = (0.0 + u0 * p01) + u1 * p11
            z2 = (0.0 + u0 * p02) + u1 * p12
            zmax = -math.inf
            if z0 > zmax:
                zmax = z0
            if z1 > zmax:
                zmax = z1
            if z2 > zmax:
                zmax = z2
            s = ((0.0 + math.exp(z0 - zmax)) + math.exp(z1 - zmax)) + math.exp(z2 - zmax)
            zy = z0 if yc == 0 else (z1 if yc == 1 else z2)
            acc += w[n] * (zmax + math.log(s) - zy)
        out[k] = acc
    return out
