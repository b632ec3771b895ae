"""Lasso and elastic net for any number of outputs: the l1 proximal step in an L x L metric
and its Gaussian expectations (the prior of Theorem 1 for one-hot labels).

On an atom of the spectral law (a direction with variances ``sigma^k``) the weight row
``w`` (L) of ``W*`` minimises

    1/2 w^T A w - g^T w + lam1 ||w||_1,    A = P^T (sum_k sigma^k Vhat_k) P + lam2 I_L,

with ``lam1 = lam l1_ratio``, ``lam2 = lam (1 - l1_ratio)`` and ``g = P^T B``, ``B`` the
Gaussian field of the prior in the effective output space (``P`` (L', L) the problem's
output space: the identity, or the complement of ``1`` for the shift-invariant
cross-entropy, whose lasso then picks among the gauges ``w + t 1`` the ones of least
``||w||_1``; see :func:`l1_prox`).  Unlike ``L = 1`` (Appendix C.2, the soft threshold) this
is an L-dimensional lasso with no closed form: :func:`l1_prox` solves it for many ``g`` at
once by vectorised coordinate descent, then exactly on the active set ``S``
(``w_S = A_SS^{-1} (g_S - lam1 s_S)``, ``s`` the signs), and checks the KKT conditions
(:func:`l1_kkt_residual`).  The prox is continuous and piecewise affine in ``g``, with
Jacobian ``dw/dg = P_S A_SS^{-1} P_S^T`` on each piece (:func:`l1_prox_jacobian`).

Its Gaussian expectations (:func:`gaussian_l1_moments`) are computed along lines: the
field is ``B = m + R (x, z)`` with ``R R^T`` its covariance, ``x`` (L' - 1 dimensions) on a
tensor rule and ``z`` along a line.  The prox's pieces are the polyhedral regions of its
sign patterns ``s`` (the KKT conditions of the pattern, affine in ``g``: ``s_i w_i > 0`` on
the support, ``|g_i - (A w)_i| <= lam1`` off it), so on a line each pattern's piece is an
interval whose ends are closed forms (:func:`_region_pieces`; the intervals are checked to
tile the line), ``w`` is affine on it and its Jacobian constant, and the integral over
``z`` of every moment the prior needs — ``E[w]``, ``E[w w^T]``, ``E[dw/dg]``, the expected
number of non-zero entries, ``E||w||_1`` — is a sum of Gaussian partial moments of
polynomials of degree <= 2 in closed form.  (Before issue 19 the pieces were found by
evaluating the prox on a grid along each line and bisecting where the pattern changed:
the same pieces, measured equal to 1e-13, at 3 to 20 times the cost.)  For ``L' = 1``
(binary labels, two-class cross-entropy) there is no outer rule and the result is exact
to rounding; for ``L' >= 2`` the outer rule (composite Gauss-Legendre panels) integrates
a function that is smooth except where a line meets a face of dimension ``L' - 2`` of the
pieces (their vertices for ``L' = 2``, their edges for ``L' = 3``).  For ``L' = 2`` those
kinks are found (:func:`_kinks_across_lines`: each region's constraints are affine in the
outer coordinate too) and the panels end there, so the rule converges like a smooth one
(at the K = 3 cross-entropy lasso fixed point: 6.7e-6 relative with 16 panels, 1.4e-9 with
64, against 2.6e-4 with 64 graded panels that ignore the kinks); for ``L' >= 3`` the kinks
lie along lines and the panels ignore them (at K = 3 square-loss fixed points the largest
error of a moment is 2e-3 with 8 x 8 panels, 2e-6 with 16 x 16, 2e-8 with 32 x 32: the
kinks of the line integrals are mild, and panels ending at them, with higher orders, took
as many lines for 2e-8 and more time a line, issue 32).  The solver estimates the outer
rule's error by refinement
(:func:`gaussmix.theory.solve.refinement.refine_prior`).  An atom whose metric is diagonal
(the square loss with one-hot labels: its metrics stay diagonal from the start) has a prox
that decouples into soft thresholds, and exact moments without lines
(:func:`_decoupled_moments`), the same whatever the panels: its refinement changes nothing.
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtr

from ..numerics.lasso_kernels import l1_kinks_2d, l1_line_moments
from ..numerics.quadrature import GradedPanels, graded_edges, kinked_composite_legendre
from ..numerics.soft_threshold import soft_threshold_moments, soft_threshold_products
from ..numerics.tolerances import XI_MAX

__all__ = [
    "l1_prox",
    "l1_prox_jacobian",
    "l1_kkt_residual",
    "L1Moments",
    "gaussian_l1_moments",
    "OUTER_PANELS",
    "outer_panels",
    "START_LAM_TR_V",
    "START_MAX_LAM",
    "COARSE_OUTER_PANELS",
    "weak_penalty_start",
]

#: panels per outer dimension of the composite Gauss-Legendre rule of
#: :func:`gaussian_l1_moments`, by outer dimension ``L' - 1`` (the cost grows as its power).
#: Measured on the K = 3 cross-entropy metric (isotropic, shift-free) at generic hats: with
#: 32 panels of 3 nodes (grade 2) ``E[u u^T]`` is within 4e-9 and the non-zero count within
#: 1.1e-6 of a 2001-node trapezoid reference on ``[-10, 10]``, where a Gauss-Hermite rule of
#: 192 nodes is off by 1.5e-4 (the integrand has kinks where the prox's pieces appear).  At
#: the K = 3 cross-entropy lasso fixed point (Delta = 0.5, lam = 0.1, alpha = 2) the test
#: error moves by 2.5e-5 from 32 to 128 panels, by 7.6e-6 from 64 to 128; three effective
#: outputs: 8 x 8 panels are within ~5e-4 (relative) of 24 x 24 at generic hats.  (Since
#: issue 19 the one-dimensional rule has panels ending at the kinks: 64 panels within
#: ~1e-9 at that fixed point, 1e-6 to 1e-8 at generic hats.)  These are
#: the rules a solve starts with; its error estimate refines them
#: (:func:`gaussmix.theory.solve.refinement.refine_prior`)
OUTER_PANELS = {1: 64, 2: 8}
#: for more outer dimensions
OUTER_PANELS_HIGH = 4
#: Gauss-Legendre nodes per panel and grading of the outer rule
#: (:class:`~gaussmix.theory.numerics.quadrature.GradedPanels`)
OUTER_PANEL_ORDER = 3
OUTER_GRADE = 2.0
#: coordinate-descent sweeps between two exact solves on the guessed active set
_SWEEPS = 8
#: rounds of ``_SWEEPS`` sweeps before a node is reported as failed (NaN)
_MAX_ROUNDS = 400
#: a KKT violation below this many ulps of the problem's scale counts as zero
_KKT_ULPS = 64.0
#: a region's constraint whose slope along a line is below this many ulps of its terms is
#: constant along it (and decided by its value, with the same margin)
_FLAT_ULPS = 1024.0
#: smallest ``cond(A_SS)^{-1}`` of a support ``S`` whose region is used (below, ``A_SS`` is
#: singular to rounding: the full support of the shift-free metric, excluded by its gauge)
_PD_RCOND = 1e-12
#: largest deviation from 1 of the Gaussian mass of the pieces of a line
_TILE_TOL = 1e-9
#: the compiled pass walks along each line from piece to piece and redoes the line with
#: every sign pattern where the masses of the pieces it found miss 1 by more than this many
#: ulps (:func:`gaussmix.theory.numerics.lasso_kernels.l1_line_moments`)
_WALK_MASS_ULPS = 256.0
#: relative tolerance of the kinks of the integrand across lines (a vertex's constraints)
_KINK_RTOL = 1e-10
#: a kink closer than this fraction of the half-width to a panel edge or another kink is
#: merged with it (no panel narrower than ~1e-9)
_KINK_MERGE = 1e-10
#: the ridge ``eps`` of :func:`_blended_jacobian`, relative to the largest eigenvalue of the
#: field's covariance: below it, ``E[dw/dg]`` in an eigen-direction of ``cov`` comes mostly
#: from the direct form, above it mostly from Stein's lemma
_STEIN_BLEND = 1e-3
#: the scale of ``lam tr V_c`` (averaged over the clusters) that the cold start of the K = 3
#: cross-entropy lasso at small ``lam`` is raised to, and the power of that factor its
#: overlaps ``Q_c`` are raised by (:func:`weak_penalty_start`).  At the fixed points of the
#: 24 cross-entropy problems of ``lam < 0.2`` of ``bench_lasso_k3.py`` (seeds 0, 1) ``lam tr
#: V`` is 0.03 to 5.6, and 1 to 5.6 at the 16 whose ``V`` is over 20 times the default
#: start's.  Counted (evaluations without the error estimate) on the 36 cross-entropy
#: problems of ``lam < 0.1`` of ``bench_lasso_k3.py``'s seeds 0 to 3 and the 32 K = 3
#: cross-entropy lasso and elastic-net problems of ``lam < 0.1`` among the first 1,000 of
#: ``tests/_random_problems.py``: the default start 3543 (the largest 286); targets 1, 2,
#: 0.5 with the power 1/4: 2160 (100), 2185 (138), 2577 (237); the target 1 with the powers
#: 1/2 and 0: 2388 (116; one problem 36 -> 116 evaluations), 2192 (115)
START_LAM_TR_V = 1.0
START_Q_POWER = 0.25
#: the multi-output lasso's cold start is raised (:func:`weak_penalty_start`) below this
#: ``lam`` only: at larger ``lam`` the weights are small and the default start near the
#: fixed point (at the nine K = 3 cross-entropy problems of ``lam`` 1.1 to 9.6 of
#: ``bench_lasso_k3.py``'s seeds 0 and 1 a start raised to the target took 11 to 31
#: evaluations, the default start 2 to 18; 0.1 to 0.7: not measured).  The square loss
#: (K = 3, ``bench_lasso_k3.py``'s 16 problems below it, seeds 0 and 1): 1801 -> 906
#: evaluations without the estimate (seed 1 #5 455 -> 118, #13 573 -> 302, one 29 -> 37);
#: the 11 K = 3 and K = 4 square-loss and the first 7 K = 4 cross-entropy multi-output lasso
#: problems below it among the first 1,000 of ``tests/_random_problems.py``: 266 -> 259 and
#: 290 -> 279 (each within 8 evaluations of the default start's, the same answers)
START_MAX_LAM = 0.1
#: the outer rule's panels (two effective outputs) of a single point's coarse phase below
#: :data:`START_MAX_LAM` (:func:`gaussmix.theory.solve.policy.coarse_prior_panels`): that
#: phase only starts the solve's own rule, from a channel rule 1e-3 to 5e-2 off (the two
#: rules' difference in the map at its end), and a prior evaluation of 16 atoms costs
#: half as much at 16 panels as at 64 (2.3 against 4.5 ms at one load: the lines' kernel
#: 0.75 against 2.7, and a fixed part).  Counted on the 27 K = 3 cross-entropy problems of
#: ``lam < 0.1`` of ``bench_lasso_k3.py``'s seeds 0 to 2 (evaluations without the
#: estimate, coarse + fine): 579 + 231 at 64 panels, 586 + 231 at 32, 590 + 227 at 16,
#: 580 + 236 at 8; CPU 4.13, 4.21, 3.72, 3.68 s (one run each, load 3-4).  Not at
#: larger ``lam``, near the zero estimator, where the kinks decide the rule's accuracy:
#: there 16 panels sent three problems (``lam`` 2.3 to 9.6) from 11-14 evaluations to
#: the fallback (over 300), and 32 one (``lam`` 1.16, 5 -> 25)
COARSE_OUTER_PANELS = 16
_INV_SQRT_2PI = 0.3989422804014327
_EPS = np.finfo(float).eps
_TINY = np.finfo(float).tiny


def outer_panels(n_outer: int) -> int:
    """The default panels per dimension of the outer rule of :func:`gaussian_l1_moments`
    with ``n_outer = L' - 1`` outer dimensions (:data:`OUTER_PANELS`)."""
    return OUTER_PANELS.get(n_outer, OUTER_PANELS_HIGH)


def weak_penalty_start(
    Q: np.ndarray, M: np.ndarray, V: np.ndarray, lam: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A cold start of the multi-output lasso at small ``lam`` (below :data:`START_MAX_LAM`):
    the prior's image of the default hats (``Q``, ``M``, ``V``: (K, L, L), (K, L), (K, L, L))
    raised towards the scale of the fixed points (measured on the K = 3 cross-entropy lasso,
    and the K = 3 square loss's: :data:`START_MAX_LAM`).

    There the weights grow as the penalty weakens and their response ``V_c`` with them, to
    ``lam tr V_c`` of order one (:data:`START_LAM_TR_V`), while the default start has
    ``tr V_c`` of order one whatever ``lam``: at ``lam`` of 1e-3 to 2e-2 the fixed points'
    ``V`` is 20 to 1700 times the start's, and the iteration spends 40 to 100 evaluations
    growing ``V`` by a factor of about 2.5 an evaluation, then circling at residuals of order
    one before it converges.  The start is scaled by ``s = max(1, START_LAM_TR_V / (lam tr
    V))``: ``V`` by ``s``, ``Q`` by ``s^p`` and ``M`` by ``s^(p/2)`` (the weights by
    ``s^(p/2)``, ``p`` = :data:`START_Q_POWER`), a smaller growth than ``V``'s: ``Q`` moves
    from the start by factors of 0.1 to 230 at those fixed points (it shrinks at small
    ``alpha``), ``M`` by 0.2 to 15.  A start whose ``lam tr V`` is already above the target
    is returned unchanged.  Only a starting point: the fixed point is the map's."""
    s = max(1.0, START_LAM_TR_V / (lam * float(np.trace(V, axis1=-2, axis2=-1).mean())))
    if s == 1.0:
        return Q, M, V
    return Q * s**START_Q_POWER, M * s ** (START_Q_POWER / 2), V * s


def l1_prox_jacobian(A: np.ndarray, support: np.ndarray) -> np.ndarray:
    """``dw/dg = P_S A_SS^{-1} P_S^T`` of the l1 prox on its active set ``S``.

    Parameters
    ----------
    A : ndarray (N, L, L)
        Metrics (symmetric; ``A_SS`` positive definite).
    support : ndarray of bool (N, L)

    Returns
    -------
    ndarray (N, L, L)
        Zero outside ``S x S``.
    """
    L = A.shape[-1]
    both = support[:, :, None] & support[:, None, :]
    Am = np.where(both, A, 0.0)
    Am = Am + (~support)[:, :, None] * np.eye(L)
    J = np.linalg.inv(Am)
    J = np.where(both, J, 0.0)
    return 0.5 * (J + np.swapaxes(J, 1, 2))


def l1_kkt_residual(A: np.ndarray, g: np.ndarray, lam: float, w: np.ndarray) -> np.ndarray:
    """Violation of the optimality conditions of ``min 1/2 w^T A w - g^T w + lam ||w||_1``.

    The minimum-norm subgradient: ``|g - A w - lam sign(w)|`` on the support and
    ``(|g - A w| - lam)_+`` off it, largest over the L components of each problem.
    """
    r = g - np.einsum("nab,nb->na", A, w)
    on = w != 0.0
    v = np.where(on, np.abs(r - lam * np.sign(w)), np.maximum(np.abs(r) - lam, 0.0))
    return v.max(axis=-1)


def _scale(A: np.ndarray, g: np.ndarray, lam: float, w: np.ndarray) -> np.ndarray:
    """The size of the terms of the KKT residual (for its rounding floor)."""
    Aw = np.einsum("nab,nb->na", np.abs(A), np.abs(w))
    return np.maximum(np.abs(g), Aw).max(axis=-1) + lam


def _lower_median_gauge(w: np.ndarray) -> np.ndarray:
    """``w - t 1`` with ``t`` the lower median of each row: a gauge of least ``||w||_1``
    (unique for odd L) with a zero at the median entry."""
    L = w.shape[-1]
    t = np.sort(w, axis=-1)[:, (L - 1) // 2]
    out = w - t[:, None]
    out[np.arange(w.shape[0]), np.argmin(np.abs(out), axis=-1)] = 0.0
    return out


def l1_prox(
    A: np.ndarray,
    g: np.ndarray,
    lam: float,
    *,
    shift_free: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Batched ``w = argmin_w 1/2 w^T A w - g^T w + lam ||w||_1``.

    Coordinate descent (soft threshold of one coordinate at a time, vectorised over the
    problems) guesses the active set ``S`` and signs ``s``; the exact solution on it,
    ``w_S = A_SS^{-1} (g_S - lam s_S)``, is accepted when it satisfies the KKT conditions to
    rounding (:func:`l1_kkt_residual` below ``64 eps`` of the problem's scale), otherwise
    descent continues.

    Parameters
    ----------
    A : ndarray (N, L, L)
        Symmetric positive semi-definite metrics with a positive diagonal (a broadcast view
        is fine).  Positive definite unless ``shift_free``.
    g : ndarray (N, L)
    lam : float
        ``>= 0``.
    shift_free : bool
        ``A 1 = 0`` (the metric of a shift-invariant loss with no l2 part): the minimisers
        are ``w + t 1`` for ``t`` minimising ``||w + t 1||_1``; the one returned has its lower
        median entry at zero (the unique minimiser for odd L, one of least support for even L),
        so that ``A_SS`` is positive definite.

    Returns
    -------
    w : ndarray (N, L)
    kkt : ndarray (N,)
        KKT residual of each returned solution; NaN rows of ``w`` (with ``kkt = inf``) if the
        descent did not identify the active set in ``_MAX_ROUNDS * _SWEEPS`` sweeps.
    """
    A = np.asarray(A, dtype=float)
    g = np.asarray(g, dtype=float)
    N, L = g.shape
    w = np.zeros((N, L))
    kkt = np.full(N, np.inf)
    todo = np.arange(N)
    diag = np.diagonal(A, axis1=1, axis2=2)
    for _ in range(_MAX_ROUNDS):
        Ai, gi, di, wi = A[todo], g[todo], diag[todo], w[todo]
        for _ in range(_SWEEPS):
            for i in range(L):
                r = gi[:, i] - np.einsum("nb,nb->n", Ai[:, i, :], wi) + di[:, i] * wi[:, i]
                wi[:, i] = np.sign(r) * np.maximum(np.abs(r) - lam, 0.0) / di[:, i]
        if shift_free:
            wi = _lower_median_gauge(wi)
        w[todo] = wi
        # exact solve on the guessed active set
        S = wi != 0.0
        J = l1_prox_jacobian(Ai, S)
        we = np.einsum("nab,nb->na", J, gi - lam * np.sign(wi))
        # at a breakpoint of the prox an entry of the support is zero up to rounding, and
        # may come out with either sign: it is a zero
        flip = S & (np.sign(we) != np.sign(wi))
        tiny = _KKT_ULPS * _EPS * _scale(Ai, gi, lam, we)[:, None] / di
        we = np.where(flip & (np.abs(we) <= tiny), 0.0, we)
        ok_sign = ~np.any(flip & (we != 0.0), axis=-1)
        we = np.where(S, we, 0.0)
        res = l1_kkt_residual(Ai, gi, lam, we)
        ok = ok_sign & (res <= _KKT_ULPS * _EPS * _scale(Ai, gi, lam, we))
        w[todo[ok]] = we[ok]
        kkt[todo[ok]] = res[ok]
        todo = todo[~ok]
        if todo.size == 0:
            return w, kkt
    w[todo] = np.nan
    return w, kkt


@dataclass
class L1Moments:
    """Gaussian moments of the l1 prox per atom (see :func:`gaussian_l1_moments`).

    Attributes
    ----------
    mean : ndarray (J, L)
        ``E[w]``.
    second : ndarray (J, L, L)
        ``E[w w^T]``.
    jacobian : ndarray (J, L, L)
        ``E[dw/dg]``.
    nonzero : ndarray (J,)
        Expected number of non-zero entries of ``w``.
    l1 : ndarray (J,)
        ``E ||w||_1``.
    """

    mean: np.ndarray
    second: np.ndarray
    jacobian: np.ndarray
    nonzero: np.ndarray
    l1: np.ndarray


def _partial_moments(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, ...]:
    """``int_a^b z^k phi(z) dz`` for ``k = 0, 1, 2`` (``a, b`` may be infinite)."""

    def dens(x):
        with np.errstate(invalid="ignore", over="ignore"):
            return np.where(np.isfinite(x), _INV_SQRT_2PI * np.exp(-0.5 * x * x), 0.0)

    pa, pb = dens(a), dens(b)
    I0 = ndtr(b) - ndtr(a)
    I1 = pa - pb
    xa = np.where(np.isfinite(a), a, 0.0) * pa
    xb = np.where(np.isfinite(b), b, 0.0) * pb
    I2 = I0 + xa - xb
    return I0, I1, I2


def gaussian_l1_moments(
    A: np.ndarray,
    P: np.ndarray,
    mean: np.ndarray,
    cov: np.ndarray,
    lam: float,
    *,
    shift_free: bool = False,
    panels: int | None = None,
    compiled: bool = True,
) -> L1Moments:
    """Moments of ``w = l1_prox(A_j, P^T B)`` for ``B ~ N(mean_j, cov_j)`` on each atom ``j``.

    Parameters
    ----------
    A : ndarray (J, L, L)
        Full-space metrics.
    P : ndarray (L', L)
        Effective-to-full output map (orthonormal rows).
    mean : ndarray (J, L'); cov : ndarray (J, L', L')
        Law of the effective field ``B`` on each atom.
    lam : float
        l1 strength ``lam1``.
    shift_free : bool
        See :func:`l1_prox`.
    panels : int, optional
        Panels per outer dimension (``L' - 1`` of them) of the composite Gauss-Legendre
        rule; default :data:`OUTER_PANELS`.
    compiled : bool
        Integrate the pieces along the lines in one compiled pass
        (:func:`gaussmix.theory.numerics.lasso_kernels.l1_line_moments`, the default); False: the
        numpy
        reference (:func:`_region_pieces`, :func:`_integrate_pieces`), the same numbers to
        rounding.

    Returns
    -------
    L1Moments
    """
    J = A.shape[0]
    Lp = P.shape[0]
    diagonal = _decoupled_atoms(A, shift_free)
    if diagonal.any():
        mom = _decoupled_moments(A[diagonal], P, mean[diagonal], cov[diagonal], lam)
        if Lp >= 2:  # (the zero estimator's convention, as the rule of lines: see there)
            _zero_unresolved(mom, A.shape[-1], Lp - 1)
        if diagonal.all():
            return mom
        rest = ~diagonal
        kw = dict(shift_free=shift_free, panels=panels, compiled=compiled)
        other = gaussian_l1_moments(A[rest], P, mean[rest], cov[rest], lam, **kw)
        for key, part in vars(mom).items():
            whole = np.empty((J,) + part.shape[1:])
            whole[diagonal], whole[rest] = part, getattr(other, key)
            setattr(mom, key, whole)
        return mom
    ev, vec = np.linalg.eigh(0.5 * (cov + np.swapaxes(cov, 1, 2)))
    # the symmetric square root (R R^T = cov): continuous in cov, so that the rule's frame
    # does not jump between fixed-point iterations when eigenvalues are degenerate
    R = (vec * np.sqrt(np.clip(ev, 0.0, None))[:, None, :]) @ np.swapaxes(vec, 1, 2)
    n = outer_panels(Lp - 1) if panels is None else panels
    pattern_data = _pattern_jacobians(A, shift_free) if compiled else None
    if Lp == 2:  # panels that end at the kinks of the integrand across lines
        edges = graded_edges(n, OUTER_GRADE, XI_MAX)
        kinks = (
            _compiled_kinks(A, P, mean, R, lam, pattern_data)
            if compiled
            else _kinks_across_lines(A, P, mean, R, lam, shift_free)
        )
        # (every atom's rule at once: a pass of numpy calls per atom was 1.2 ms of a 4.4 ms
        # evaluation of the spectral model's 16 atoms)
        x, w, sizes = kinked_composite_legendre(
            edges, kinks, OUTER_PANEL_ORDER, _KINK_MERGE * XI_MAX
        )
        x = x[:, None]
        lw = w * np.exp(-0.5 * x[:, 0] * x[:, 0]) * _INV_SQRT_2PI
    else:
        if Lp > 2:
            rule = GradedPanels(n, Lp - 1, OUTER_PANEL_ORDER, OUTER_GRADE)
            xo, wo = np.asarray(rule.nodes), np.asarray(rule.weights)
        else:
            xo, wo = np.zeros((1, 0)), np.ones(1)
        x, lw, sizes = np.tile(xo, (J, 1)), np.tile(wo, J), np.full(J, wo.size)
    # lines: (atom, outer node); g = mean + R[:, :, :-1] x + R[:, :, -1] z
    atom = np.repeat(np.arange(J), sizes)
    if compiled:  # (the kernel forms each line from its atom's frame)
        mom = _line_moments(A, P, x, atom, lw, mean, R, cov, lam, pattern_data)
    else:
        xs = np.split(x, np.cumsum(sizes)[:-1])
        base = np.concatenate([mean[j] + xs[j] @ R[j, :, :-1].T for j in range(J)])
        dirn = np.repeat(R[:, :, -1], sizes, axis=0)
        off = base - np.repeat(mean, sizes, axis=0)
        pieces = _region_pieces(A, P, base, dirn, atom, lam, shift_free)
        mom = _integrate_pieces(pieces, lw, atom, off, dirn, cov, P, A)
    if Lp >= 2:
        _zero_unresolved(mom, A.shape[-1], Lp - 1)
    return mom


def _decoupled_atoms(A: np.ndarray, shift_free: bool) -> np.ndarray:
    """The atoms (bool (J,)) whose metric ``A_j`` is diagonal, exactly, with a positive
    diagonal (never the shift-free metric, ``A 1 = 0``): there the prox decouples into a
    soft threshold per output, ``w_i = S(g_i) / A_ii`` (:func:`_decoupled_moments`).  The
    K = 3 square loss with one-hot labels keeps its metrics diagonal from its (diagonal)
    start: ``V_c`` is ``E[dw/dg]``, diagonal where ``A`` is, and its channel maps a
    diagonal ``V`` to a diagonal ``Vhat``; the rule of lines broke that symmetry at the
    level of its error (off-diagonal ``A`` up to 0.18 of the diagonal in the iterations of
    ``bench_lasso_k3.py`` seed 1 #13, 1e-10 at seed 2 #17's fixed point)."""
    L = A.shape[-1]
    if shift_free:
        return np.zeros(A.shape[0], dtype=bool)
    d = np.diagonal(A, axis1=1, axis2=2)
    off = (A * (1.0 - np.eye(L))) != 0.0
    return ~off.any(axis=(1, 2)) & np.all(d > 0.0, axis=1)


def _decoupled_moments(A, P, mean, cov, lam) -> L1Moments:
    """:class:`L1Moments` of atoms with a diagonal metric (:func:`_decoupled_atoms`), exact:
    ``w_i = S(g_i) / a_i`` with ``g = P^T B ~ N(P^T m, P^T cov P)``, ``S`` the soft
    threshold at ``lam`` (Appendix C.2, one output per coordinate).  ``E[w]``, the diagonal
    of ``E[w w^T]``, ``E||w||_1`` and the Jacobian ``E[dw/dg] = diag(P(|g_i| > lam) / a_i)``
    in closed form (:func:`~gaussmix.theory.numerics.soft_threshold.soft_threshold_moments`);
    the off-diagonal ``E[w_i w_k]`` from the bivariate normal's orthant moments
    (:func:`~gaussmix.theory.numerics.soft_threshold.soft_threshold_products`, to rounding).
    No outer rule: the moments do not depend on the prior's panels, whose refinement then
    changes nothing.  The field's law is the rule of lines' (``cov`` with its negative
    eigenvalues clipped: an iterate's ``cov`` may be indefinite, a fixed point's is not)."""
    J, L = A.shape[0], A.shape[-1]
    a = np.diagonal(A, axis1=1, axis2=2)
    mu = mean @ P
    ev, vec = np.linalg.eigh(0.5 * (cov + np.swapaxes(cov, 1, 2)))
    cov = (vec * np.clip(ev, 0.0, None)[:, None, :]) @ np.swapaxes(vec, 1, 2)
    sig = np.swapaxes(P, 0, 1) @ cov @ P
    s = np.sqrt(np.clip(np.diagonal(sig, axis1=1, axis2=2), 0.0, None))
    active, m_abs, m2, m1 = soft_threshold_moments(mu, s, lam)
    second = np.zeros((J, L, L))
    second[:, np.arange(L), np.arange(L)] = m2 / (a * a)
    i, k = np.triu_indices(L, 1)
    if i.size:
        mu2 = np.stack([mu[:, i], mu[:, k]], axis=-1).reshape(-1, 2)
        sig2 = np.stack(
            [
                np.stack([sig[:, i, i], sig[:, i, k]], -1),
                np.stack([sig[:, k, i], sig[:, k, k]], -1),
            ],
            axis=-2,
        ).reshape(-1, 2, 2)
        cross = soft_threshold_products(mu2, sig2, lam).reshape(J, i.size)
        cross = cross / (a[:, i] * a[:, k])
        second[:, i, k] = cross
        second[:, k, i] = cross
    jac = np.zeros((J, L, L))
    jac[:, np.arange(L), np.arange(L)] = active / a
    return L1Moments(
        mean=m1 / a, second=second, jacobian=jac, nonzero=active.sum(axis=1),
        l1=(m_abs / a).sum(axis=1),
    )  # fmt: skip


#: the Gaussian mass the outer rule of :func:`gaussian_l1_moments` leaves out per outer
#: dimension (its lines lie in ``|x| <= XI_MAX``): ``2 Phi(-XI_MAX)``, 2.3e-19.  An atom
#: whose expected fraction of non-zero entries is below it has moments the rule does not
#: resolve (they are rounding and truncation: measured, entries of ``E[dw/dg]`` of 1e-127
#: beside exact zeros, an indefinite ``V``)
UNRESOLVED_NONZERO = 2.0 * float(ndtr(-XI_MAX))


def _zero_unresolved(mom: L1Moments, L: int, n_outer: int) -> None:
    """Set to zero, in place, the moments of the atoms whose expected fraction of non-zero
    entries of ``w`` is below :data:`UNRESOLVED_NONZERO` (times the outer dimensions): there
    ``w = 0`` to the rule's resolution (the lasso's zero estimator at large ``lam``), and
    the rounding left in the moments (of either sign) would make an indefinite metric.  The
    exact moments of a diagonal metric (:func:`_decoupled_moments`) keep the same convention:
    weights of activity 1e-31 (``bench_lasso_k3.py`` seed 2 #29) would otherwise decide
    the test error of an estimator that is zero to every practical resolution (0.652
    against the zero estimator's 2/3 there), by the direction of its ``1e-16`` entries."""
    tiny = ~(mom.nonzero / L > UNRESOLVED_NONZERO * n_outer)
    if np.any(tiny):
        for a in (mom.mean, mom.second, mom.jacobian, mom.nonzero, mom.l1):
            a[tiny] = 0.0


def _merge_edges(edges: np.ndarray, kinks: np.ndarray) -> np.ndarray:
    """The panel ``edges`` with the ``kinks`` between them added, except those within
    ``_KINK_MERGE * XI_MAX`` of an edge or of the previous kink kept."""
    tol = _KINK_MERGE * XI_MAX
    inside = np.unique(kinks[(kinks > edges[0] + tol) & (kinks < edges[-1] - tol)])
    if inside.size == 0:
        return edges
    inside = inside[np.min(np.abs(inside[:, None] - edges[None, :]), axis=1) > tol]
    inside = inside[np.concatenate([[True], np.diff(inside) > tol])] if inside.size else inside
    return np.sort(np.concatenate([edges, inside]))


def _kinks_across_lines(A, P, mean, R, lam, shift_free) -> list[np.ndarray]:
    """With two effective outputs, the abscissae ``x`` (one array per atom) where the
    integrand across lines is not smooth: where the line ``B = mean + R (x, z)`` passes
    through a vertex of the prox's pieces (two constraints of a pattern's region vanish
    together and the others hold, :func:`_pattern_constraints`), or lies along an edge of
    them (a constraint that does not vary along the line vanishes).  Each constraint is
    affine in ``(x, z)``; it is read off at ``x = 0`` and ``x = 1``."""
    J = A.shape[0]
    base = np.concatenate([mean, mean + R[:, :, 0]])  # x = 0 (atoms 0..J-1), then x = 1
    dirn = np.concatenate([R[:, :, 1], R[:, :, 1]])
    atom = np.concatenate([np.arange(J), np.arange(J)])
    kinks: list[list[np.ndarray]] = [[] for _ in range(J)]
    for li, alpha, beta, *_ in _pattern_constraints(A, P, base, dirn, atom, lam, shift_free):
        half = li.size // 2  # both lines of an atom or neither, x = 0 first
        a0, ax = alpha[:half], alpha[half:] - alpha[:half]
        az = beta[:half]
        j = atom[li[:half]]
        size = np.abs(a0) + np.abs(ax) + np.abs(az) + lam
        # a constraint constant along the lines: its zero is a line x = const
        along = np.abs(az) <= _KINK_RTOL * size
        with np.errstate(divide="ignore", invalid="ignore"):
            xe = np.where(along & (np.abs(ax) > _KINK_RTOL * size), -a0 / ax, np.nan)
        # vertices: pairs of constraints
        det = ax[:, :, None] * az[:, None, :] - az[:, :, None] * ax[:, None, :]
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            xv = (az[:, :, None] * a0[:, None, :] - a0[:, :, None] * az[:, None, :]) / det
            zv = (ax[:, None, :] * a0[:, :, None] - ax[:, :, None] * a0[:, None, :]) / det
            val = a0[:, None, None, :] + ax[:, None, None, :] * xv[..., None]
            val = val + az[:, None, None, :] * zv[..., None]
            scale = 1.0 + np.abs(xv[..., None]) + np.abs(zv[..., None])
            feasible = np.all(val >= -_KINK_RTOL * size[:, None, None, :] * scale, axis=-1)
        ok = feasible & np.isfinite(xv) & (np.abs(det) > _KINK_RTOL * size[:, :, None] ** 2)
        for row in range(half):
            found = np.concatenate([xv[row][ok[row]], xe[row][np.isfinite(xe[row])]])
            if found.size:
                kinks[j[row]].append(found)
    return [np.unique(np.concatenate(k)) if k else np.zeros(0) for k in kinks]


@functools.cache
def _sign_patterns(L: int, shift_free: bool) -> list[np.ndarray]:
    """The sign patterns ``s`` in ``{-1, 0, 1}^L`` of the prox's pieces; ``shift_free``: only
    those of the gauge :func:`l1_prox` returns (lower median entry zero: at most
    ``(L - 1) // 2`` negative entries, and fewer negative entries than that plus zeros)."""
    m = (L - 1) // 2
    out = []
    for s in itertools.product((-1.0, 0.0, 1.0), repeat=L):
        sv = np.array(s)
        neg, zero = int(np.sum(sv < 0)), int(np.sum(sv == 0))
        if not shift_free or neg <= m < neg + zero:
            out.append(sv)
    return out


def _atom_apply(M: np.ndarray, aj: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``M[aj[n]] @ x[n]`` for every row ``n`` (``M`` (J, p, q), ``x`` (N, q)): one matrix
    product per atom on its run of rows where ``aj`` is sorted (the lines of
    :func:`gaussian_l1_moments` are, atom by atom), else the gathered product."""
    if M.shape[0] == 1:
        return x @ M[0].T
    if aj.size and np.all(aj[1:] >= aj[:-1]):
        out = np.empty((x.shape[0], M.shape[1]))
        bounds = np.searchsorted(aj, np.arange(M.shape[0] + 1))
        for j in range(M.shape[0]):
            lo, hi = bounds[j], bounds[j + 1]
            if hi > lo:
                out[lo:hi] = x[lo:hi] @ M[j].T
        return out
    return np.einsum("nab,nb->na", M[aj], x)


def _pattern_constraints(A, P, base, dirn, atom, lam, shift_free):
    """For each sign pattern ``s`` of the prox (support ``S``), its region's constraints
    along every line ``g(z) = P^T (base + z dirn)`` whose ``A_SS`` is positive definite:

        w_S = A_SS^{-1} (g_S - lam s_S),   s_i w_i > 0 (i in S),
        |g_i - (A w)_i| <= lam (i not in S),

    (the KKT conditions of the pattern), each affine in ``z``: ``alpha + beta z >= 0``.
    Yields ``(lines, alpha, beta, flat, fails, c, d, J)``: the lines, the constraints
    (lines x constraints), which are constant along the line within rounding (``flat``)
    and which of those fail there (with a rounding margin: for the shift-free metric of an
    even ``L`` the gauge entry's constraint is tight on the whole region), ``w = c + d z``
    and the Jacobians of the atoms (J, L, L) (:func:`l1_prox_jacobian`; the lines' atoms
    are ``atom[lines]``).  The per-line products are one matrix product per atom
    (:func:`_atom_apply`).
    """
    n_atoms, L = A.shape[0], A.shape[-1]
    g0 = base @ P
    e = dirn @ P
    lines = np.arange(g0.shape[0])
    gsize = np.abs(g0).max(-1) + lam
    esize = np.abs(e).max(-1)
    for s in _sign_patterns(L, shift_free):
        S = s != 0.0
        if S.any():
            ev = np.linalg.eigvalsh(A[:, S][:, :, S])
            pd = ev[:, 0] > _PD_RCOND * np.maximum(ev[:, -1], np.finfo(float).tiny)
        else:
            pd = np.ones(n_atoms, dtype=bool)
        li = lines[pd[atom]]
        if li.size == 0:
            continue
        Jp = l1_prox_jacobian(A, np.ascontiguousarray(np.broadcast_to(S, (n_atoms, L))))
        aj = atom[li]
        gl = g0[li]
        el = e[li]
        c = _atom_apply(Jp, aj, gl - lam * s)  # w at z = 0
        d = _atom_apply(Jp, aj, el)  # dw/dz
        absA = np.abs(A)
        cs = _atom_apply(absA, aj, np.abs(c))
        ds = _atom_apply(absA, aj, np.abs(d))
        # alpha + beta z >= 0, with the size of each term (for the rounding margin)
        on, offs = np.flatnonzero(S), np.flatnonzero(~S)
        Aoff = np.ascontiguousarray(A[:, offs, :])
        r0 = gl[:, offs] - _atom_apply(Aoff, aj, c)
        r1 = el[:, offs] - _atom_apply(Aoff, aj, d)
        alpha = np.concatenate([s[on] * c[:, on], lam - r0, lam + r0], axis=1)
        beta = np.concatenate([s[on] * d[:, on], -r1, r1], axis=1)
        asize = (
            np.concatenate([np.abs(c[:, on]), cs[:, offs], cs[:, offs]], axis=1) + gsize[li, None]
        )
        bsize = (
            np.concatenate([np.abs(d[:, on]), ds[:, offs], ds[:, offs]], axis=1) + esize[li, None]
        )
        flat = np.abs(beta) <= _FLAT_ULPS * _EPS * bsize
        fails = flat & (alpha < -_FLAT_ULPS * _EPS * asize)
        yield li, alpha, beta, flat, fails, c, d, Jp


def _region_pieces(A, P, base, dirn, atom, lam, shift_free) -> list[tuple[np.ndarray, ...]]:
    """The affine pieces of the prox along every line ``g(z) = P^T (base + z dirn)``, from
    the polyhedral region of each sign pattern (:func:`_pattern_constraints`): on a line,
    each pattern's interval is the intersection of half-lines, in closed form.  The
    intervals of a line tile it (checked: their Gaussian masses add up to 1); a gap or an
    overlap raises FloatingPointError.

    Returns
    -------
    list of (line, a, b, z_ref, w_ref, slope, J)
        ``w = w_ref + slope (z - z_ref)`` on ``[a, b]`` with ``z_ref`` inside, Jacobian
        ``J`` (:func:`l1_prox_jacobian`).
    """
    pieces = []
    for li, alpha, beta, flat, fails, c, d, Jp in _pattern_constraints(
        A, P, base, dirn, atom, lam, shift_free
    ):
        with np.errstate(divide="ignore", invalid="ignore"):
            t = -alpha / beta
        lo = np.where(~flat & (beta > 0), t, -np.inf).max(axis=1)
        hi = np.where(~flat & (beta < 0), t, np.inf).min(axis=1)
        k = np.flatnonzero((lo < hi) & ~np.any(fails, axis=1))
        if k.size == 0:
            continue
        lo, hi = lo[k], hi[k]
        # the reference point: inside the piece (where its signs hold) and as near 0 as
        # that allows, so that ``w = w_ref + slope (z - z_ref)`` does not cancel
        margin = np.minimum(0.5, 0.25 * (hi - lo))
        zr = np.clip(0.0, lo + margin, hi - margin)
        pieces.append((li[k], lo, hi, zr, c[k] + zr[:, None] * d[k], d[k], Jp[atom[li[k]]]))
    if not pieces:  # (no sign pattern holds on any line: a state the map cannot take)
        raise FloatingPointError(
            "the regions of the l1 proximal map do not tile a line (Gaussian mass 0 instead of 1)"
        )
    line = np.concatenate([p[0] for p in pieces])
    mass = _partial_moments(
        np.concatenate([p[1] for p in pieces]), np.concatenate([p[2] for p in pieces])
    )[0]
    _check_tiling(np.bincount(line, mass, minlength=base.shape[0]))
    return pieces


def _check_tiling(total: np.ndarray) -> None:
    """Raise FloatingPointError unless the Gaussian masses ``total`` of the pieces of every
    line add up to 1 (within ``_TILE_TOL``)."""
    if not np.all(np.abs(total - 1.0) <= _TILE_TOL):
        raise FloatingPointError(
            "the regions of the l1 proximal map do not tile a line (Gaussian mass "
            f"{total[np.argmax(np.abs(total - 1.0))]:.12g} instead of 1)"
        )


def _pattern_jacobians(A: np.ndarray, shift_free: bool) -> tuple[np.ndarray, ...]:
    """The sign patterns of the prox (:func:`_sign_patterns`), whether each one's ``A_SS`` is
    positive definite on each atom and its Jacobian there (:func:`l1_prox_jacobian`), as
    :func:`_pattern_constraints` computes them: once per support, for the compiled kernels.

    Returns
    -------
    pats : ndarray (n_pat, L); usable : ndarray of bool (n_pat, J); Jps : ndarray (n_pat, J, L, L)
    """
    J, L = A.shape[0], A.shape[-1]
    pats, supports, which = _pattern_supports(L, shift_free)
    usable_s = np.ones((supports.shape[0], J), dtype=np.bool_)
    for k, S in enumerate(supports):
        if S.any():
            ev = np.linalg.eigvalsh(A[:, S][:, :, S])
            usable_s[k] = ev[:, 0] > _PD_RCOND * np.maximum(ev[:, -1], _TINY)
    Ss = np.repeat(supports, J, axis=0)  # (supports x atoms, L)
    # (an unusable A_SS, singular to rounding, is never read: the identity stands for it)
    As = np.where(
        usable_s.reshape(-1)[:, None, None], np.tile(A, (supports.shape[0], 1, 1)), np.eye(L)
    )
    Js = l1_prox_jacobian(As, Ss)
    Js = Js.reshape(supports.shape[0], J, L, L)
    return pats, usable_s[which], np.ascontiguousarray(Js[which])


@functools.cache
def _pattern_supports(L: int, shift_free: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The sign patterns of :func:`_sign_patterns` as one array (n_pat, L), their distinct
    supports (bool (n_sup, L)) and the support of each pattern (int (n_pat,)): the Jacobian
    and the test of ``A_SS`` depend on the support only, made once per support
    (:func:`_pattern_jacobians`; made once per ``L``: not to be written)."""
    pats = np.ascontiguousarray(np.array(_sign_patterns(L, shift_free)))
    supports, which = np.unique(pats != 0.0, axis=0, return_inverse=True)
    which = which.reshape(-1)
    for a in (supports, which):  # (the patterns stay writeable: the compiled kernels'
        a.flags.writeable = False  # signature is that of a writeable array)
    return pats, supports, which


def _compiled_kinks(A, P, mean, R, lam, pattern_data) -> list[np.ndarray]:
    """:func:`_kinks_across_lines` by the compiled kernel
    (:func:`gaussmix.theory.numerics.lasso_kernels.l1_kinks_2d`), the same abscissae to
    rounding (tested)."""
    pats, usable, Jps = pattern_data
    J, L = A.shape[0], A.shape[-1]
    c64 = np.ascontiguousarray
    out = np.empty((J, pats.shape[0] * (4 * L * L + 2 * L)))
    count = np.zeros(J, dtype=np.int64)
    l1_kinks_2d(
        c64(mean @ P),
        c64((mean + R[:, :, 0]) @ P),
        c64(R[:, :, 1] @ P),
        pats,
        usable,
        Jps,
        c64(A, dtype=float),
        float(lam),
        _KINK_RTOL,
        out,
        count,
    )
    return [np.unique(out[j, : count[j]]) for j in range(J)]


def _line_moments(A, P, x, atom, lw, mean, R, cov, lam, pattern_data) -> L1Moments:
    """:func:`_region_pieces` and :func:`_integrate_pieces` in one compiled pass over the
    lines (:func:`gaussmix.theory.numerics.lasso_kernels.l1_line_moments`: no pieces are stored;
    per line and sign pattern the same constraints, interval, reference point and closed-form
    integrals), then :func:`_finish_moments`.  Line ``n`` is ``B = mean[j] + R[j] (x[n], z)``
    on atom ``j = atom[n]``, with outer weight ``lw[n]``.  ``pattern_data``: the sign
    patterns, whether their ``A_SS`` is positive definite and their Jacobians on each atom
    (:func:`_pattern_jacobians`)."""
    J, L = A.shape[0], A.shape[-1]
    pats, usable, Jps = pattern_data
    Lp = P.shape[0]
    ew = np.zeros((J, L))
    eww = np.zeros((J, L, L))
    ewb = np.zeros((J, L, Lp))
    ejd = np.zeros((J, L, L))
    l1 = np.zeros(J)
    mass = np.zeros(x.shape[0])
    c64 = np.ascontiguousarray
    l1_line_moments(
        c64(x, dtype=float),
        c64(atom, dtype=np.int64),
        c64(lw, dtype=float),
        c64(mean, dtype=float),
        c64(R, dtype=float),
        c64(P, dtype=float),
        c64(pats),
        usable,
        Jps,
        c64(A, dtype=float),
        float(lam),
        _FLAT_ULPS * _EPS,
        _WALK_MASS_ULPS * _EPS,
        ew,
        eww,
        ewb,
        ejd,
        l1,
        mass,
    )
    _check_tiling(mass)
    return _finish_moments(ew, eww, ewb, ejd, l1, cov, P, A)


def _integrate_pieces(pieces, lw, atom, off, dirn, cov, P, A) -> L1Moments:
    """Sum the closed-form integrals of the affine pieces, by line then by atom.

    ``E[dw/dg]`` comes from Stein's lemma, ``E[dw/dB] = E[w (B - m)^T] cov^{-1}`` with
    ``dw/dB = (dw/dg) P^T``: along a line ``w (B - m)^T`` is continuous, so the outer rule
    integrates a function with kinks of the second order only (the direct form, piecewise
    constant along the line, leaves kinks of the first order where pieces appear).  It is
    blended with the direct form where ``cov`` is nearly singular (:func:`_blended_jacobian`).
    The number of non-zero entries likewise:
    ``|S| = tr(A_SS^{-1} A_SS) = tr((dw/dg) A)``, whose part on ``range(P^T)`` is
    ``tr(P (dw/dg) P^T P A P^T)`` and whose remainder (the direction ``n`` of ``1`` when
    ``L' < L``) is ``(n^T A n) (n^T (dw/dg) n)``, zero for the shift-free metric.
    """
    line, a, b, zr, wr, sl, Jp = (np.concatenate(x) for x in zip(*pieces))
    J = cov.shape[0]
    I0, I1, I2 = _partial_moments(a, b)
    c = wr - zr[:, None] * sl  # w = c + sl z
    ew = c * I0[:, None] + sl * I1[:, None]
    eww = (
        np.einsum("na,nb->nab", c, c) * I0[:, None, None]
        + (np.einsum("na,nb->nab", c, sl) + np.einsum("na,nb->nab", sl, c)) * I1[:, None, None]
        + np.einsum("na,nb->nab", sl, sl) * I2[:, None, None]
    )
    o, e = off[line], dirn[line]  # B - m = o + e z
    ewb = (
        np.einsum("na,nb->nab", c, o) * I0[:, None, None]
        + (np.einsum("na,nb->nab", c, e) + np.einsum("na,nb->nab", sl, o)) * I1[:, None, None]
        + np.einsum("na,nb->nab", sl, e) * I2[:, None, None]
    )
    ej = Jp * I0[:, None, None]
    l1 = np.einsum("na,na->n", np.sign(wr), ew)  # the signs are constant on a piece
    wt = lw[line]  # outer weight of each piece's line
    aj = atom[line]

    # the sums over the pieces of each atom, weighted by their lines' outer weights: one
    # matrix product (rows: atoms; columns: pieces)
    if J == 1:
        wmat = wt[None, :]
    else:
        wmat = np.zeros((J, wt.size))
        wmat[aj, np.arange(wt.size)] = wt

    def total(x):
        return (wmat @ x.reshape(x.shape[0], -1)).reshape((J,) + x.shape[1:])

    return _finish_moments(total(ew), total(eww), total(ewb), total(ej), total(l1), cov, P, A)


def _blended_jacobian(
    ewb: np.ndarray, ej_direct: np.ndarray, cov: np.ndarray, P: np.ndarray
) -> np.ndarray:
    """``E[dw/dg]`` (J, L, L) from Stein's lemma and the direct form, blended smoothly.

    Stein's lemma, ``E[w (B - m)^T] = E[dw/dB] cov`` with ``dw/dB = (dw/dg) P^T``, gives the
    Jacobian from a function with kinks of the second order only (see
    :func:`_integrate_pieces`), but dividing by ``cov`` amplifies the outer rule's error in
    the directions where ``cov`` is small (``E[w (B - m)^T] v`` is ``O(sqrt(ev))`` there, its
    error too, divided by ``ev``): at a fixed point where the field has a degenerate direction
    (the square loss with one-hot labels, whose residuals sum to zero) the map became noisy at
    the 1e-3 level and the iteration stalled.  Both forms are exact, so for any ``eps > 0``

        E[dw/dB] = (E[w (B - m)^T] + eps E[dw/dg] P^T) (cov + eps I)^{-1},

    an identity that weights each eigen-direction ``ev`` of ``cov`` by ``ev / (ev + eps)``
    towards Stein's lemma and ``eps / (ev + eps)`` towards the direct form: smooth in ``cov``
    (no switch between the two), with Stein's error amplified at most ``1 / (2 sqrt(eps))``
    times.  ``eps`` is :data:`_STEIN_BLEND` times the largest eigenvalue of ``cov`` (the
    direct form alone where ``cov = 0``).  On ``range(P^T)``, ``E[dw/dg] = E[dw/dB] P``.
    """
    Lp = cov.shape[-1]
    ev_max = np.linalg.eigvalsh(cov)[:, -1]
    eps = np.maximum(_STEIN_BLEND * ev_max, np.finfo(float).tiny)
    reg = cov + eps[:, None, None] * np.eye(Lp)
    rhs = ewb + eps[:, None, None] * (ej_direct @ P.T)  # (J, L, L')
    dwdb = np.swapaxes(np.linalg.solve(reg, np.swapaxes(rhs, 1, 2)), 1, 2)
    return dwdb @ P


def _symmetrised(ej: np.ndarray, ej_direct: np.ndarray) -> np.ndarray:
    """The symmetric ``E[dw/dg]`` (J, L, L) from its estimate ``ej`` (:func:`_blended_jacobian`),
    each pair of transposed entries weighted by the activity of its row's coordinate.

    ``E[dw/dg]`` is symmetric, its estimate not: row ``i`` of Stein's lemma (and of the blend)
    is ``E[w_i (B - m)^T]`` times a matrix, so its error is proportional to the size of
    ``w_i``, while column ``i`` carries the errors of the other rows.  Where a coordinate is
    rarely active (an output whose weights the lasso almost always zeroes) its true row and
    column are of the order of its activity ``P(i in S)`` and the plain average
    ``(ej + ej^T) / 2`` gave it the other rows' errors: measured, ``E[dw_0/dg_1] = 3.9e-7`` at 8
    panels (exactly 0: ``w_0 = 0`` on every piece, ``E[dw_0/dg_0] = 8e-39``), an indefinite
    ``V`` at which the iteration stalled (issue 32's K = 3 lasso sample, #27).  The estimate
    of entry ``(i, j)`` is ``(d_j ej_ij + d_i ej_ji) / (d_i + d_j)``, ``d_i`` the direct
    diagonal ``E[(dw/dg)_ii] = E[(A_SS^{-1})_ii 1{i in S}]`` (exact, non-negative,
    proportional to the activity): the row of the less active coordinate counts more, the
    plain average where both are equally active; the diagonal unchanged.  For an output
    space ``P`` (L', L) with ``L' = L`` only: where ``L' < L`` (the complement of ``1`` of the
    cross-entropy) only ``P E[dw/dg] P^T`` is defined by Stein's lemma and the rows of the
    full space are not its coordinates (the plain average there).
    """
    d = np.clip(np.diagonal(ej_direct, axis1=1, axis2=2), 0.0, None)
    di, dj = d[:, :, None], d[:, None, :]
    both = di + dj
    ejt = np.swapaxes(ej, 1, 2)
    with np.errstate(invalid="ignore", divide="ignore"):
        weighted = (dj * ej + di * ejt) / both
    return np.where(both > 0.0, weighted, 0.5 * (ej + ejt))


def _finish_moments(ew, eww, ewb, ej_direct, l1, cov, P, A) -> L1Moments:
    """:class:`L1Moments` from the sums by atom of the pieces' integrals (``E[w]``,
    ``E[w w^T]``, ``E[w (B - m)^T]``, the direct ``E[dw/dg]``, ``E||w||_1``): the Jacobian
    from Stein's lemma blended with the direct one (:func:`_blended_jacobian`) and the number
    of non-zero entries (see :func:`_integrate_pieces`)."""
    ej = _blended_jacobian(ewb, ej_direct, cov, P)
    if P.shape[0] == P.shape[1]:
        ej = _symmetrised(ej, ej_direct)
    else:  # (rows of the gauge: see _symmetrised)
        ej = 0.5 * (ej + np.swapaxes(ej, 1, 2))
    nnz = np.einsum("jab,jba->j", P @ ej @ P.T, P @ A @ P.T)
    L, Lp = P.shape[1], P.shape[0]
    if L > Lp:
        n = np.ones(L) / np.sqrt(L)
        nnz = nnz + (n @ A @ n) * (n @ ej_direct @ n)
    return L1Moments(
        mean=ew,
        second=0.5 * (eww + np.swapaxes(eww, 1, 2)),
        jacobian=ej,
        nonzero=nnz,
        l1=l1,
    )
