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
First the 21-point Gauss-Kronrod rule (Piessens et al., QUADPACK's ``qk21``: the 10-point
Gauss rule's nodes and 11 more), whose integrand values give both the Kronrod value (exact
for polynomials of degree 31) and the Gauss value (degree 19) from one evaluation: where
they agree to ``abs_tol`` the Kronrod value is returned with their difference as its error
estimate (the Gauss rule's error, far above the Kronrod rule's).  The problems they do not
settle go on with Gauss-Legendre rules from :data:`PLACKETT_SECOND` nodes, half more at each
step, each compared with the last, until two agree to ``abs_tol``; the finer value is
returned and the difference of the two is its error estimate.  The estimate is honest only
away from singular correlations: there
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
    "plackett_orthant4",
]

#: the 21-point Gauss-Kronrod rule on ``[-1, 1]`` (QUADPACK's ``qk21``, Piessens, de
#: Doncker-Kapenga, Ueberhuber & Kahaner 1983): its non-negative nodes, largest first (the
#: odd positions, counted from 0, are the 10-point Gauss rule's), and their Kronrod weights
_KRONROD_NODES = (
    0.995657163025808080735527280689003,
    0.973906528517171720077964012084452,
    0.930157491355708226001207180059508,
    0.865063366688984510732096688423493,
    0.780817726586416897063717578345042,
    0.679409568299024406234327365114874,
    0.562757134668604683339000099272694,
    0.433395394129247190799265943165784,
    0.294392862701460198131126603103866,
    0.148874338981631210884826001129720,
    0.0,
)
_KRONROD_WEIGHTS = (
    0.011694638867371874278064396062192,
    0.032558162307964727478818972459390,
    0.054755896574351996031381300244580,
    0.075039674810919952767043140916190,
    0.093125454583697605535065465083366,
    0.109387158802297641899210590325805,
    0.123491976262065851077958109831074,
    0.134709217311473325928054001771707,
    0.142775938577060080797094273138717,
    0.147739104901338491374841515972068,
    0.149445554002916905664936468389821,
)
#: nodes of the first Gauss-Legendre rule after the Kronrod pair (then half more at each
#: step).  Measured on the 2,800 orthants of the K = 5 square curves of
#: ``benchmarks/bench_square_k.py`` (both means, lam = 1e-3, 0.1, 10; smallest eigenvalue of
#: the correlation 0.27 or more) the Kronrod pair agrees to 6.2e-13 and its 21-point value is
#: within 5.6e-16 of the rule of 400 nodes (the rules of 12 and 18 nodes, the pair before,
#: 30 evaluations: 5.6e-16).  On 3,218 Wishart problems of the gate (below) the pair settles
#: 3,030 at 1e-10, within 9.7e-15 of the rule of 400 nodes (12 and 18: 3,168, within 2.4e-13)
PLACKETT_SECOND = 27
#: smallest eigenvalue of a correlation matrix taken by the reduction.  On 6,400 problems (the
#: 1,600 orthants of the K = 5 curves at 1c6e293 and 4,800 random ones: normalised Wishart
#: matrices of 2 to 5 degrees of freedom plus 1e-3 I, limits of scale 0.3 to 3) against the
#: rule of 400 nodes: where the smallest eigenvalue is at least 0.01 the difference of the
#: rules of 12 and 18 nodes exceeds the finer rule's error in every problem where it is above
#: 1e-14 (by a factor of 20 at least), and wherever it is at most 1e-10 the rule of 18 is
#: within 5.4e-13; below 3e-3 two rules that agree to 1e-10 can both be 8.8e-9 off
#: (eigenvalue 3.5e-4).  The Kronrod pair (above) is the sharper: no accepted problem off by
#: more than 1e-14
PLACKETT_MIN_EIG = 0.01
#: largest number of nodes of a rule: a problem not settled by then goes to the nested rule
#: (the Kronrod pair and the rules of 27 to 90 nodes, about 1,000 bivariate evaluations: as
#: many as the nested rules' first two)
PLACKETT_MAX_NODES = 96

#: the three ways to pair four variables, as permutations putting the pairs at (0, 1), (2, 3)
_PAIRINGS = np.array([[0, 1, 2, 3], [0, 2, 1, 3], [0, 3, 1, 2]])
#: the four cross pairs (u, v) of the arranged problem and the other two variables (w, z)
_CROSS = ((0, 2, 1, 3), (0, 3, 1, 2), (1, 2, 0, 3), (1, 3, 0, 2))
#: the entries of ``R0``: the diagonal and the two kept pairs
_KEPT = np.eye(4, dtype=bool) | np.kron(np.eye(2, dtype=bool), np.ones((2, 2), dtype=bool))


def _substituted(x: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Nodes ``t`` and weights of a rule ``(x, w)`` on ``[-1, 1]`` moved to ``s`` on
    ``[0, 1]``, after the substitution ``t = 1 - (1 - s)^2`` (``dt = 2 (1 - s) ds``)."""
    s = (x + 1) / 2
    return 1 - (1 - s) ** 2, w * (1 - s)


@functools.cache
def _rule(q: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes ``t`` and weights of the ``q``-point Gauss-Legendre rule in ``s`` on ``[0, 1]``
    (:func:`_substituted`)."""
    return _substituted(*np.polynomial.legendre.leggauss(q))


@functools.cache
def _kronrod_rule() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The 21-point Gauss-Kronrod rule in ``s`` on ``[0, 1]`` (:func:`_substituted`): its
    nodes ``t`` (increasing), Kronrod weights, the positions of the 10-point Gauss rule's
    nodes among them, and the Gauss weights there."""
    xk, wk = np.array(_KRONROD_NODES), np.array(_KRONROD_WEIGHTS)
    x = np.concatenate([-xk[:-1], xk[::-1]])
    w = np.concatenate([wk[:-1], wk[::-1]])
    gauss = np.arange(1, x.size, 2)
    _, wg = np.polynomial.legendre.leggauss(gauss.size)
    t, wt = _substituted(x, w)
    return t, wt, gauss, _substituted(x[gauss], wg)[1]


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
    return base + _row_sums(_integrand(b, R, t), wt)


def _kronrod_pair(b: np.ndarray, R: np.ndarray, base: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The 21-point Kronrod and the 10-point Gauss values of :func:`_plackett_rule`, from
    one evaluation of the integrand at the Kronrod nodes (:func:`_kronrod_rule`)."""
    t, wt, gauss, wg = _kronrod_rule()
    f = _integrand(b, R, t)
    return base + _row_sums(f, wt), base + _row_sums(f[:, gauss], wg)


def _row_sums(f: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``f @ w`` row by row, the same numbers whatever the number of rows (a matrix-vector
    product's rounding depends on it: the Kronrod pair's difference, the error estimate,
    is a difference of nearly equal sums)."""
    return (f * w).sum(axis=1)


def _integrand(b: np.ndarray, R: np.ndarray, t: np.ndarray) -> np.ndarray:
    """The sum of the four cross pairs' integrands ``R_uv phi2 Phi2`` at the nodes ``t``, a
    stack of arranged problems (:func:`_arrange`): shape ``(B, t.size)``, NaN where not
    finite."""
    # R(t) (B, 4, 4, q): the kept correlations constant, the cross ones scaled by t
    Rt = np.where(_KEPT[..., None], R[..., None], R[..., None] * t)
    total = np.zeros((b.shape[0], t.size))
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
        total += R[:, u, v, None] * (phi2 * cond)
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
    fine, coarse = _kronrod_pair(b, R, base)
    q = 0
    while todo.size:
        if q:
            fine = _plackett_rule(b, R, base, q)
        diff = np.abs(fine - coarse)
        done = diff <= abs_tol  # (False where either rule is NaN)
        p[todo[done]] = np.clip(fine[done], 0.0, 1.0)
        err[todo[done]] = diff[done]
        ok[todo[done]] = True
        keep = ~done & np.isfinite(fine)
        todo, coarse, b, R, base = (x[keep] for x in (todo, fine, b, R, base))
        q = PLACKETT_SECOND if not q else q + q // 2
        if q > PLACKETT_MAX_NODES:
            break
    return p, err, ok
