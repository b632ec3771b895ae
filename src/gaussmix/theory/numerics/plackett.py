"""Gaussian orthant probabilities of four variables by Plackett's reduction: a
one-dimensional Gauss-Legendre integral of bivariate normal distribution functions (the test
and training errors of five classes; :mod:`gaussmix.theory.numerics.orthant` calls it first
and keeps its nested two-dimensional rules for the problems it does not settle).

The reduction
-------------
``P(R) = P[X <= b]`` for ``X ~ N(0, R)``, ``R`` a full-rank ``4 x 4`` correlation matrix.
Pair the variables as ``{i, j}, {k, l}`` so that ``|R_ij| + |R_kl|`` is largest (of the three
pairings) and let ``R0`` keep only those two correlations: then
``P(R0) = Phi2(b_i, b_j; R_ij) Phi2(b_k, b_l; R_kl)`` exactly.  Along the segment
``R(t) = R0 + t (R - R0)``, ``t in [0, 1]`` (positive definite throughout: a convex
combination of two correlation matrices of full rank), Plackett's identity (Plackett 1954)::

    dP / dR_uv = phi2(b_u, b_v; R_uv) P[X_w <= b_w, X_z <= b_z | X_u = b_u, X_v = b_v]

gives::

    P(R) = P(R0) + sum_(u, v) R_uv int_0^1 phi2(b_u, b_v; t R_uv) Phi2(h_w(t), h_z(t); r(t)) dt

over the four cross pairs ``(u, v)`` (one variable of each block; ``{w, z}`` the other two),
with the conditional limits ``h`` and correlation ``r`` of the 2 x 2 conditioning at ``R(t)``:
a bivariate normal distribution function, exact to about ``1e-16``
(:func:`~gaussmix.theory.numerics.bivariate.bvn_cdf`).  The integrand is analytic in ``t`` on
a neighbourhood of ``[0, 1]``; its nearest singularities are where ``R(t)`` (or a pair's
``1 - t^2 R_uv^2``) becomes singular, beyond ``t = 1`` at a distance that shrinks with the
smallest eigenvalue of ``R``.  The substitution ``t = 1 - (1 - s)^2`` moves such a point at
distance ``e`` from ``t = 1`` to a distance of about ``sqrt(e)`` from ``s = 1``, and
``q``-point Gauss-Legendre rules in ``s`` converge geometrically in ``q``.

The rule
--------
The nodes grow from :data:`PLACKETT_START` to :data:`PLACKETT_SECOND`, then by half, until two
successive rules agree to ``abs_tol``; the finer value is returned and the difference of the
two is its error estimate.  The estimate is honest only away from singular correlations: there
the integrand's singularity near ``t = 1`` lets two coarse rules agree while both are off
(measured below, :data:`PLACKETT_MIN_EIG`).  So only problems whose correlation matrix has
its smallest eigenvalue at least :data:`PLACKETT_MIN_EIG` are taken; they and any problem whose
rules do not agree within :data:`PLACKETT_MAX_NODES` nodes, or whose integrand is not finite,
are left to the caller's nested rule (:mod:`gaussmix.theory.numerics.orthant`).
"""

from __future__ import annotations

import functools

import numpy as np

from .bivariate import HMAX, bvn_cdf
from .linalg import sym_eigvals

__all__ = [
    "PLACKETT_MAX_NODES",
    "PLACKETT_MIN_EIG",
    "PLACKETT_SECOND",
    "PLACKETT_START",
    "plackett_orthant4",
]

#: nodes of the first and of the second rule (then half more at each step).  Measured on the
#: 1,600 orthants of the K = 5 square curves of ``benchmarks/bench_square_k.py`` (both means,
#: lam = 1e-3, 0.1, 10; smallest eigenvalue of the correlation 0.27 or more) the rule of 8
#: nodes is within 1e-10 of a nested rule of 64 x 64 nodes, of 12 within 1e-14
PLACKETT_START = 12
PLACKETT_SECOND = 18
#: smallest eigenvalue of a correlation matrix taken by the reduction.  On 6,400 problems (the
#: 1,600 above and 4,800 random ones: normalised Wishart matrices of 2 to 5 degrees of freedom
#: plus 1e-3 I, limits of scale 0.3 to 3) against the rule of 400 nodes: where the smallest
#: eigenvalue is at least 0.01 the difference of the rules of 12 and 18 nodes exceeds the finer
#: rule's error in every problem where it is above 1e-14 (by a factor of 20 at least), and
#: wherever it is at most 1e-10 the rule of 18 is within 5.4e-13; below 3e-3 two rules that
#: agree to 1e-10 can both be 8.8e-9 off (eigenvalue 3.5e-4)
PLACKETT_MIN_EIG = 0.01
#: largest number of nodes of a rule: a problem not settled by then goes to the nested rule
#: (the rules of 12 to 90 nodes, about 1,000 bivariate evaluations: as many as the nested
#: rules' first two)
PLACKETT_MAX_NODES = 96

#: the three ways to pair four variables, as permutations putting the pairs at (0, 1), (2, 3)
_PAIRINGS = np.array([[0, 1, 2, 3], [0, 2, 1, 3], [0, 3, 1, 2]])
#: the four cross pairs (u, v) of the arranged problem and the other two variables (w, z)
_CROSS = ((0, 2, 1, 3), (0, 3, 1, 2), (1, 2, 0, 3), (1, 3, 0, 2))
#: the entries of ``R0``: the diagonal and the two kept pairs
_KEPT = np.eye(4, dtype=bool) | np.kron(np.eye(2, dtype=bool), np.ones((2, 2), dtype=bool))


@functools.cache
def _rule(q: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes ``t`` and weights of the ``q``-point Gauss-Legendre rule in ``s`` on ``[0, 1]``
    after the substitution ``t = 1 - (1 - s)^2`` (``dt = 2 (1 - s) ds``)."""
    x, w = np.polynomial.legendre.leggauss(q)
    s = (x + 1) / 2
    return 1 - (1 - s) ** 2, w * (1 - s)


def _arrange(b: np.ndarray, R: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The limits and correlations of each problem permuted so that its pairs of largest
    ``|R_ij| + |R_kl|`` are ``(0, 1)`` and ``(2, 3)``."""
    score = np.abs(R[:, _PAIRINGS[:, 0], _PAIRINGS[:, 1]]) + np.abs(
        R[:, _PAIRINGS[:, 2], _PAIRINGS[:, 3]]
    )
    perm = _PAIRINGS[np.argmax(score, axis=1)]
    rows = np.arange(b.shape[0])[:, None]
    return b[rows, perm], R[rows[:, :, None], perm[:, :, None], perm[:, None, :]]


def _plackett_rule(b: np.ndarray, R: np.ndarray, base: np.ndarray, q: int) -> np.ndarray:
    """``P(R0)`` (``base``) plus the ``q``-node rule of the four cross pairs' integrals, for a
    stack of arranged problems (:func:`_arrange`); NaN where the integrand is not finite."""
    t, wt = _rule(q)
    # R(t) (B, 4, 4, q): the kept correlations constant, the cross ones scaled by t
    Rt = np.where(_KEPT[..., None], R[..., None], R[..., None] * t)
    total = base.copy()
    for u, v, w, z in _CROSS:
        r = Rt[:, u, v]
        om = 1.0 - r * r
        bu, bv = b[:, u, None], b[:, v, None]
        phi2 = np.exp(-(bu * bu - 2 * r * bu * bv + bv * bv) / (2 * om)) / (
            2 * np.pi * np.sqrt(om)
        )
        # the regression of X_w, X_z on (X_u, X_v): g = A^{-1} c with A = [[1, r], [r, 1]]
        cw_u, cw_v, cz_u, cz_v = Rt[:, w, u], Rt[:, w, v], Rt[:, z, u], Rt[:, z, v]
        gw_u, gw_v = (cw_u - r * cw_v) / om, (cw_v - r * cw_u) / om
        gz_u, gz_v = (cz_u - r * cz_v) / om, (cz_v - r * cz_u) / om
        s_ww = 1.0 - gw_u * cw_u - gw_v * cw_v
        s_zz = 1.0 - gz_u * cz_u - gz_v * cz_v
        s_wz = Rt[:, w, z] - gw_u * cz_u - gw_v * cz_v
        with np.errstate(invalid="ignore", divide="ignore"):
            sd_w, sd_z = np.sqrt(s_ww), np.sqrt(s_zz)
            h_w = np.clip((b[:, w, None] - gw_u * bu - gw_v * bv) / sd_w, -HMAX, HMAX)
            h_z = np.clip((b[:, z, None] - gz_u * bu - gz_v * bv) / sd_z, -HMAX, HMAX)
            rc = np.clip(s_wz / sd_w / sd_z, -1.0, 1.0)
        bad = ~(np.isfinite(h_w) & np.isfinite(h_z) & np.isfinite(rc) & (s_ww > 0) & (s_zz > 0))
        cond = bvn_cdf(np.where(bad, 0.0, h_w), np.where(bad, 0.0, h_z), np.where(bad, 0.0, rc))
        cond[bad] = np.nan
        total += R[:, u, v] * ((phi2 * cond) @ wt)
    return total


def plackett_orthant4(
    b: np.ndarray, R: np.ndarray, abs_tol: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``P[X <= b]`` for ``X ~ N(0, R)`` of a stack of full-rank four-variable problems by
    Plackett's reduction (the module's docstring), each refined on its own until two rules
    agree to ``abs_tol``.

    Parameters
    ----------
    b : ndarray, shape (B, 4)
        Upper limits (finite; clipped to ``+-HMAX`` by the caller).
    R : ndarray, shape (B, 4, 4)
        Correlation matrices of full rank.
    abs_tol : float
        Target difference of two successive rules.

    Returns
    -------
    p : ndarray, shape (B,)
        The finer rule's value, in ``[0, 1]`` (NaN where not settled).
    err : ndarray, shape (B,)
        The difference of the last two rules (NaN where not settled).
    ok : ndarray of bool, shape (B,)
        Whether the problem was taken (smallest eigenvalue of ``R`` at least
        :data:`PLACKETT_MIN_EIG`) and settled within :data:`PLACKETT_MAX_NODES` nodes with a
        finite integrand.
    """
    B = b.shape[0]
    p = np.full(B, np.nan)
    err = np.full(B, np.nan)
    ok = np.zeros(B, dtype=bool)
    todo = np.nonzero(sym_eigvals(R)[:, 0] >= PLACKETT_MIN_EIG)[0] if B else np.arange(0)
    if not todo.size:
        return p, err, ok
    b, R = _arrange(b[todo], R[todo])
    base = bvn_cdf(b[:, 0], b[:, 1], R[:, 0, 1]) * bvn_cdf(b[:, 2], b[:, 3], R[:, 2, 3])
    q = PLACKETT_START
    coarse = _plackett_rule(b, R, base, q)
    fin = np.isfinite(coarse)
    todo, coarse, b, R, base = (x[fin] for x in (todo, coarse, b, R, base))
    while todo.size:
        q = PLACKETT_SECOND if q == PLACKETT_START else q + q // 2
        if q > PLACKETT_MAX_NODES:
            break
        fine = _plackett_rule(b, R, base, q)
        diff = np.abs(fine - coarse)
        done = diff <= abs_tol  # (False where either rule is NaN)
        p[todo[done]] = np.clip(fine[done], 0.0, 1.0)
        err[todo[done]] = diff[done]
        ok[todo[done]] = True
        keep = ~done & np.isfinite(fine)
        todo, coarse, b, R, base = (x[keep] for x in (todo, fine, b, R, base))
    return p, err, ok
