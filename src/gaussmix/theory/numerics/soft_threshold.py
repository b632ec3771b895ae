"""The Gaussian moments of the soft threshold ``S(x) = sign(x) (|x| - t)_+`` (Appendix C.2):
the one home of these closed forms, for the scalar lasso's prior
(:mod:`gaussmix.theory.prior.prior`) and the multi-output lasso's decoupled outputs
(:func:`gaussmix.theory.prior.lasso.gaussian_l1_moments`, a diagonal metric).

* :func:`soft_threshold_moments`: ``P(S != 0)``, ``E|S|``, ``E[S^2]`` and ``E[S]`` of one
  normal, from the partial moments of each tail (:func:`_tail_moments`), cancellation-free
  deep in the tail by the Mills ratio's continued fraction (:func:`_mills_tail`);
  :func:`centred_soft_threshold_moments` the first three of a centred normal, from one tail.
* :func:`soft_threshold_products`: ``E[S(X) S(Y)]`` of a bivariate normal pair, in closed
  form from the orthant's partial moments (:func:`_tail_product`), or by a one-dimensional
  rule with panels at the kinks (:func:`soft_threshold_cross`) where the pair is degenerate.

Numpy, vectorised over its arguments; only the continued fraction's recursion is compiled.
"""

from __future__ import annotations

import numpy as np
from numba import njit
from scipy.special import ndtr

from .bivariate import bvn_cdf
from .quadrature import graded_edges
from .tolerances import SOFT_PAIR_DEGENERATE, XI_MAX

__all__ = [
    "soft_threshold_moments",
    "centred_soft_threshold_moments",
    "soft_threshold_cross",
    "soft_threshold_products",
    "TAIL_CF_FROM",
    "CROSS_PANELS",
    "CROSS_ORDER",
]

_INV_SQRT_2PI = 0.3989422804014327

#: below ``u = -TAIL_CF_FROM`` the soft threshold's partial moments come from the continued
#: fraction of the Mills ratio (:func:`_mills_tail`); above, the direct forms lose at most
#: ``~u^4 eps ~ 1e-13`` to cancellation
TAIL_CF_FROM = 5.0
#: depth of that continued fraction: at ``c >= 5`` its truncation error is below 1e-17
#: relative (against a quadrature of ``int_0^inf s^k exp(-c s - s^2 / 2) ds``, tests)
_CF_DEPTH = 80
#: panels and Gauss-Legendre nodes per panel of the one-dimensional rule of
#: :func:`soft_threshold_cross`: on each panel, whose ends include the kinks, the integrand
#: is smooth; measured against 400 panels of 16 nodes on the K = 3 square-loss lasso's
#: fixed points of ``bench_lasso_k3.py``: within 1e-15 of the largest cross moment
CROSS_PANELS = 24
CROSS_ORDER = 10


def soft_threshold_moments(
    m: np.ndarray | float, s: np.ndarray | float, t: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Gaussian moments of the soft threshold ``soft(B, t) = sign(B) (|B| - t)_+``.

    For ``B ~ N(m, s^2)`` (elementwise, broadcast) and ``t >= 0`` return

    * ``P(|B| > t)``,
    * ``E[(|B| - t)_+]`` (= ``E|soft(B, t)|``),
    * ``E[(|B| - t)_+^2]`` (= ``E[soft(B, t)^2]``),
    * ``E[soft(B, t)]``,

    from the partial moments of each tail (Appendix C.2): with ``u = (+-m - t) / s``,
    ``E[(+-B - t)_+^0] = Phi(u)``, ``E[(+-B - t)_+] = s (u Phi(u) + phi(u))`` and
    ``E[(+-B - t)_+^2] = s^2 ((u^2 + 1) Phi(u) + u phi(u))`` (:func:`_tail_moments`, exact
    to rounding deep in a tail; both tails in one call: its continued fraction, where some
    entry is deep, is some 160 array operations).  ``s = 0`` is the point mass.
    """
    m = np.asarray(m, dtype=float)
    s = np.asarray(s, dtype=float)
    m, s = np.broadcast_arrays(m, s)
    pos = s > 0
    ss = np.where(pos, s, 1.0)
    (r0, l0), (r1, l1), (r2, l2) = _tail_moments(np.stack([m - t, -1.0 * m - t]), ss, pos)
    return r0 + l0, r1 + l1, r2 + l2, r1 - l1


def centred_soft_threshold_moments(
    s: np.ndarray, t: np.ndarray | float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The first three of :func:`soft_threshold_moments` at ``m = 0``, from one tail: the
    two tails of a centred ``B`` are the same (``x = +-0 - t``, equal but for the sign of
    a zero, which neither moment keeps), so the sums are each tail's doubled, the same
    numbers as :func:`soft_threshold_moments` (to the bit)."""
    s = np.asarray(s, dtype=float)
    pos = s > 0
    ss = np.where(pos, s, 1.0)
    r0, r1, r2 = _tail_moments(np.broadcast_to(0.0 - t, s.shape), ss, pos)
    return r0 + r0, r1 + r1, r2 + r2


def _tail_moments(
    x: np.ndarray, ss: np.ndarray, pos: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The partial moments ``E[(+-B - t)_+^k]``, ``k = 0, 1, 2``, of one tail of
    :func:`soft_threshold_moments` (``x = +-m - t``, ``ss`` the standard deviation where
    ``pos``, else 1: the point mass).

    With ``u = x / ss``: ``Phi(u)``, ``ss (u Phi(u) + phi(u))`` and
    ``ss^2 ((u^2 + 1) Phi(u) + u phi(u))``.  Deep in the tail (``u < -TAIL_CF_FROM``) the
    last two cancel (to ``phi / u^2`` and ``2 phi / |u|^3``: a relative error growing like
    ``u^4 eps``) and are taken cancellation-free from the Laplace continued fraction of the
    Mills ratio (:func:`_mills_tail`); they then go smoothly to zero with ``phi(u)``,
    underflowing with it (below ``u ~ -38.5``) to exactly 0, never to a negative or NaN.
    """
    u = np.asarray(x / ss)
    Phi = ndtr(u)
    phi = _INV_SQRT_2PI * np.exp(-0.5 * u * u)
    g1 = np.asarray(u * Phi + phi)
    g2 = np.asarray((u * u + 1.0) * Phi + u * phi)
    # (one NaN-ignoring minimum: the test of ``(u < -TAIL_CF_FROM).any()``, a few
    # microseconds cheaper on a curve's stacked points; the decision is the same)
    if np.fmin.reduce(u, axis=None, initial=np.inf) < -TAIL_CF_FROM:
        deep = u < -TAIL_CF_FROM
        r1, r2 = _mills_tail(np.ascontiguousarray(-u[deep], dtype=np.float64))
        c = r1 / (-u[deep] + r1)  # 1 - c Phi(-c) / phi(c), c = -u
        g1[deep] = phi[deep] * c
        g2[deep] = phi[deep] * c * r2
    p0 = np.where(pos, Phi, (x > 0).astype(float))
    p1 = np.where(pos, ss * g1, np.maximum(x, 0.0))
    p2 = np.where(pos, ss * ss * g2, np.maximum(x, 0.0) ** 2)
    return p0, np.maximum(p1, 0.0), np.maximum(p2, 0.0)


@njit(cache=True, error_model="numpy", nogil=True)
def _mills_tail(c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:  # pragma: no cover - compiled
    """The first two tails ``r_1, r_2`` of Laplace's continued fraction of the Mills ratio
    ``R(c) = Phi(-c) / phi(c) = 1 / (c + r_1)``, ``r_k = k / (c + r_{k+1})`` (``c > 0``, a
    1-d array), to depth :data:`_CF_DEPTH`.

    Then ``1 - c R = r_1 / (c + r_1)`` and ``(c^2 + 1) R - c = r_1 r_2 / (c + r_1)`` without
    cancellation: ``E[(Z - c)_+] = phi(c) r_1 / (c + r_1)`` and
    ``E[(Z - c)_+^2] = phi(c) r_1 r_2 / (c + r_1)`` for ``Z ~ N(0, 1)``.  Compiled (numba):
    the recursion's ``2 _CF_DEPTH`` operations as numpy calls took ~100 us however few the
    entries, 1.5 us compiled for one; the same IEEE operations, so the same bits.
    """
    r1 = np.empty_like(c)
    r2 = np.empty_like(c)
    for i in range(c.size):
        ci = c[i]
        r = 0.0
        for k in range(_CF_DEPTH, 1, -1):
            r = k / (ci + r)
        r2[i] = r
        r1[i] = 1.0 / (ci + r)
    return r1, r2


def soft_threshold_cross(
    mu: np.ndarray, cov: np.ndarray, lam: float, half_width: float
) -> np.ndarray:
    """``E[S(X) S(Y)]`` of the soft threshold (:func:`soft_threshold_moments`) for ``(X, Y)``
    bivariate normal, means ``mu`` (N, 2) and covariances ``cov`` (N, 2, 2).

    ``X = mu_x + s_x t`` with ``t`` standard normal (``X`` the one of larger variance), and
    ``E[S(Y) | t]`` in closed form (``Y`` given ``X`` is normal); the integral over ``t``
    on ``[-half_width, half_width]`` by a composite Gauss-Legendre rule (sinh-graded panels,
    :data:`CROSS_PANELS` of :data:`CROSS_ORDER` nodes) whose panels also end where ``S(X)``
    has its kinks (``X = +-lam``) and where the conditional mean of ``Y`` crosses ``+-lam``
    (the kinks of ``E[S(Y) | t]`` as its variance vanishes): the integrand is smooth on
    every panel."""
    swap = cov[:, 1, 1] > cov[:, 0, 0]
    ix, iy = np.where(swap, 1, 0), np.where(swap, 0, 1)
    n = np.arange(mu.shape[0])
    mx, my = mu[n, ix], mu[n, iy]
    vx, vy, cxy = cov[n, ix, ix], cov[n, iy, iy], cov[n, 0, 1]
    sx = np.sqrt(np.maximum(vx, 0.0))
    pos = sx > 0.0
    sxs = np.where(pos, sx, 1.0)
    slope = np.where(pos, cxy / sxs, 0.0)  # E[Y | t] = my + slope t
    sc = np.sqrt(np.maximum(vy - slope * slope, 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        kinks = [(b - mx) / sxs for b in (lam, -lam)]
        kinks += [
            np.where(slope != 0.0, (b - my) / np.where(slope != 0.0, slope, 1.0), 0.0)
            for b in (lam, -lam)
        ]
    base = np.broadcast_to(
        graded_edges(CROSS_PANELS, 2.0, half_width), (mx.size, CROSS_PANELS + 1)
    )
    k = np.clip(np.nan_to_num(np.stack(kinks, 1), nan=0.0), -half_width, half_width)
    edges = np.sort(np.concatenate([base, k], 1), axis=1)
    x, w = np.polynomial.legendre.leggauss(CROSS_ORDER)
    a, e = edges[:, :-1, None], edges[:, 1:, None]
    t = (0.5 * (a + e) + 0.5 * (e - a) * x).reshape(mx.size, -1)
    wt = (0.5 * (e - a) * w).reshape(mx.size, -1) * _INV_SQRT_2PI * np.exp(-0.5 * t * t)
    xv = mx[:, None] + np.where(pos, sx, 0.0)[:, None] * t
    sxv = np.sign(xv) * np.maximum(np.abs(xv) - lam, 0.0)
    ey = soft_threshold_moments(my[:, None] + slope[:, None] * t, sc[:, None], lam)[3]
    return np.einsum("nq,nq->n", wt, sxv * ey)


def _tail_product(al: np.ndarray, be: np.ndarray, r: np.ndarray) -> np.ndarray:
    """``E[(U - al)_+ (V - be)_+]`` for standard bivariate normals ``U, V`` of correlation
    ``r`` (``|r| < 1``): with ``s = sqrt(1 - r^2)``, ``p = P[U > al, V > be]``,
    ``q_u = phi(al) Phi((r al - be) / s)`` and ``q_v = phi(be) Phi((r be - al) / s)``,

        E[U V 1] = r p + r al q_u + r be q_v + s^2 phi_2(al, be; r),
        E[U 1] = q_u + r q_v,   E[V 1] = q_v + r q_u,

    and the product is ``E[U V 1] - be E[U 1] - al E[V 1] + al be p`` (Gaussian partial
    moments of the orthant; tested against the rule of :func:`soft_threshold_cross`)."""
    s = np.sqrt(1.0 - r * r)
    p = bvn_cdf(-al, -be, r)
    qu = _INV_SQRT_2PI * np.exp(-0.5 * al * al) * ndtr((r * al - be) / s)
    qv = _INV_SQRT_2PI * np.exp(-0.5 * be * be) * ndtr((r * be - al) / s)
    dens = s * _INV_SQRT_2PI**2 * np.exp(-0.5 * (al * al - 2.0 * r * al * be + be * be) / (s * s))
    euv = r * p + r * al * qu + r * be * qv + dens
    return euv - be * (qu + r * qv) - al * (qv + r * qu) + al * be * p


def soft_threshold_products(mu: np.ndarray, cov: np.ndarray, lam: float) -> np.ndarray:
    """``E[S(X) S(Y)]`` (:func:`soft_threshold_moments`'s soft threshold) for ``(X, Y)``
    bivariate normal, means ``mu`` (N, 2), covariances ``cov`` (N, 2, 2), in closed form:
    ``S(x) = (x - lam)_+ - (-x - lam)_+``, so the product is four products of tails, each
    :func:`_tail_product` of the standardised pair (bivariate normal orthant moments).  A
    pair whose correlation is within rounding of +-1 (``1 - r^2`` at most
    :data:`~gaussmix.theory.numerics.tolerances.SOFT_PAIR_DEGENERATE`), or with a constant
    member, by the rule of :func:`soft_threshold_cross` (exact panels at the kinks there)."""
    vx, vy, c = cov[:, 0, 0], cov[:, 1, 1], cov[:, 0, 1]
    sx, sy = np.sqrt(np.maximum(vx, 0.0)), np.sqrt(np.maximum(vy, 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.clip(c / (sx * sy), -1.0, 1.0)
    good = (sx > 0.0) & (sy > 0.0) & (1.0 - r * r > SOFT_PAIR_DEGENERATE)
    out = np.empty(mu.shape[0])
    if np.any(~good):
        out[~good] = soft_threshold_cross(mu[~good], cov[~good], lam, XI_MAX)
    if np.any(good):
        mx, my, sx, sy, r = mu[good, 0], mu[good, 1], sx[good], sy[good], r[good]
        # S = (x - lam)_+ - (-x - lam)_+: the tails x > lam, -x > lam of each, in one call
        a, b = np.array([1.0, 1.0, -1.0, -1.0])[:, None], np.array([1.0, -1.0, 1.0, -1.0])[:, None]
        al, be = (lam - a * mx) / sx, (lam - b * my) / sy
        parts = _tail_product(al.ravel(), be.ravel(), (a * b * r).ravel()).reshape(4, -1)
        out[good] = sx * sy * ((a * b) * parts).sum(axis=0)
    return out
