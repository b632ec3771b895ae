"""Deterministic, accurate Gaussian orthant probabilities ``P[Z <= 0]`` for ``Z ~ N(mean, cov)``.

Why this module exists
----------------------
The test error of a linear classifier on a Gaussian mixture is an orthant probability
(docs/design.md pitfall 6).  For cluster ``c`` the pre-activations are
``omega = M_c + b + Q_c^{1/2} xi`` with ``xi ~ N(0, I_K)``, and the point is classified
correctly iff
``omega_k - omega_c < 0`` for every ``k != c``.  With the ``(K-1) x K`` difference matrix ``D``
(rows ``e_k - e_c``) this is ``P[Z <= 0]`` for ``Z ~ N(D (M_c + b), D Q_c D^T)``, a
``(K-1)``-dimensional Gaussian orthant probability::

    >>> import numpy as np
    >>> from gaussmix.theory.numerics.orthant import orthant_probability
    >>> p, err = orthant_probability(np.zeros(2), np.array([[1.0, 0.5], [0.5, 1.0]]))
    >>> round(p, 12)  # 1/4 + asin(1/2) / (2 pi) = 1/3
    0.333333333333

It must be computed deterministically and accurately, never by sampling ``xi``: Monte Carlo
noise would leak into learning curves and into derivative-based fixed-point solvers.

Algorithms
----------
* ``m == 1``: exact, ``ndtr(-mean / sd)``.
* ``m == 2``: the bivariate normal CDF by Genz's ``bvnu`` algorithm (Drezner & Wesolowsky
  1989 with Genz's double-precision modifications for ``|r|`` close to one), with Genz's
  Gauss-Legendre rules (6, 12 or 20 points as ``|r|`` grows: the 20-point rule's numbers
  within a few ``1e-16``).  Absolute accuracy is at the level of a few ``1e-16`` for every
  correlation in ``[-1, 1]`` (the limits ``r = +-1`` use the degenerate closed forms).
* ``m >= 3``: components with zero variance are deterministic and removed (the probability
  is 0 if such a component has a positive mean); exactly (anti-)correlated pairs are merged
  into one variable with a (two-sided) interval.  If at most two variables remain, the exact
  paths are used.  Otherwise the variables are ordered by Genz & Bretz's rule (a pivoted
  Cholesky factor ``X = L y``, most restrictive variable first).
* ``3 <= m <= MAX_TENSOR_DIM + 2`` (up to five variables: the test error of up to six
  classes) with a full-rank factor: deterministic.  The first ``m - 2`` variables are
  integrated against their normal densities by nested Gauss-Legendre rules on their
  conditional intervals (cut at ``|y| <= 8.3``, each rule normalised to its interval's exact
  probability), the last two exactly by the bivariate normal CDF; the nodes per variable
  grow by half until two rules agree to ``abs_tol`` (or ``2**18`` points), and the difference
  is the reported error estimate.  The integrand is analytic in each variable, so the rules
  converge geometrically: about ``1e-15`` against closed forms and the equicorrelated path, in
  milliseconds for ``m = 3, 4`` and a tenth of a second for ``m = 5``.
  :func:`orthant_probability_batch` does this for a stack of problems at once (one pivoted
  factorisation vectorised over the stack, one evaluation of each rule for every problem that
  still needs it, the refinement decided per problem, and problems equal after the pivoting
  to ``1e-13`` - the relabelled orthants of exchangeable clusters - integrated once, the bound
  on their difference added to the error estimate); :func:`orthant_probability` is the stack
  of one.
* ``m == 4`` (five classes), before the pivoted factor and the nested rules: Plackett's
  reduction (:func:`~gaussmix.theory.numerics.plackett.plackett_orthant4`, a 1-d Gauss-Kronrod
  integral of bivariate CDFs: about 84 of them against 976) where the smallest eigenvalue of
  the correlation is at least :data:`~gaussmix.theory.numerics.plackett.PLACKETT_MIN_EIG`.
* Otherwise (more variables, or a singular factor): Genz's separation-of-variables
  transformation on the pivoted factor (robust to singular covariances: a variable with zero
  conditional variance becomes a linear constraint that narrows the integration interval of an
  earlier variable), integrated by randomised quasi-Monte Carlo: ``8`` independently scrambled
  Sobol' point sets, doubled in size until the standard error across the randomisations is
  below ``abs_tol`` or a work cap is reached (``2**15`` points per set for three or four
  variables, ``2**14`` for five to eight, halved again for every further doubling of the
  dimension; about 0.02-0.05 s per call, the integrand compiled), seeded: a deterministic
  function of the input and ``rng_seed``.  Its error estimate is the *standard error* (one
  sigma) of the mean of the randomisations (a conservative bound: three to four times it);
  the deterministic paths return a bound-like estimate (the difference of two rules).
* Equicorrelated covariances ``sigma^2 ((1 - r) I + r 1 1^T)``, ``r >= 0``, with a common
  mean (exchangeable clusters):
  :func:`~gaussmix.theory.numerics.equicorrelated.equicorrelated_orthant`, a 1-d integral
  over the common factor, error about ``1e-14`` (callers that know the structure ask it).
"""

from __future__ import annotations

import functools
import inspect
import math
from typing import Any

import numpy as np
from scipy.special import log_ndtr, ndtr

from gaussmix.core.validation import check_array, check_int, check_real

from .bivariate import HMAX, bvn_cdf, bvn_cdf_rows, interval_prob
from .linalg import sym_eigvals
from .plackett import plackett_orthant4
from .sov_kernels import pack_columns, sov_integrand

__all__ = ["orthant_probability", "orthant_probability_batch"]

#: error estimate reported by the exact one-dimensional path
EXACT_ERR_1D = 1e-16
#: error estimate reported by the deterministic two-dimensional path
EXACT_ERR_2D = 1e-15
#: relative tolerance of the symmetry and positive semi-definiteness checks
PSD_CHECK_RTOL = 1e-10
#: a conditional variance (correlation scale) at or below this is treated as zero
_VAR_TOL = 1e-14
#: a correlation with ``1 - |r| <= MERGE_TOL`` is rounding noise around ``+-1``: it is snapped
#: to ``+-1`` (two dimensions) or the two variables are merged (three or more)
MERGE_TOL = 8 * np.finfo(float).eps
#: Cholesky loadings of absolute value at or below this are treated as zero
_LOADING_TOL = 1e-12
#: normal deviates are clipped to ``[-YMAX, YMAX]`` (keeps everything finite)
YMAX = 37.0
#: number of independent randomisations of the quasi-Monte Carlo point set.  Eight, not
#: sixteen (before): a randomisation's error falls nearly as ``1 / n`` with its points and the
#: mean's as ``1 / sqrt(R)``, so at a given cost fewer, longer sequences are more accurate.
#: Measured on the 20 nine-variable orthants of the digits ten-class point (test error and
#: training control variate; six seeds each, against 16 x 2**16 points): at 65,536 points
#: in all the actual error is 1.15e-5 rms with 16 x 4096, 8.7e-6 with 8 x 8192; 16 x 8192
#: (the cap before, twice the work) 7.4e-6.  The standard error of eight randomisations is
#: still a fair one (8.8e-6 rms reported against 8.7e-6 actual; beyond three of them 4 %)
_N_RANDOMISATIONS = 8
#: log2 of the initial and of the maximal number of points per randomisation
_LOG2_N_START = 9
_LOG2_N_MAX = 16
#: cap on (points x randomisations x integration variables) of one call; it lowers the cap on
#: the points per randomisation to ``2**15`` for 3-4 variables, ``2**14`` for 5-8, ``2**13``
#: for 9-16 and so on (the reported standard error stays honest; only the run time is bounded;
#: the same caps per randomisation as with sixteen randomisations and ``2**21``: half the work)
_WORK_BUDGET = 2**20

#: largest number of outer variables integrated by tensor Gauss-Legendre rules (orthants of
#: up to ``MAX_TENSOR_DIM + 2`` variables, K <= 6 classes, are deterministic)
MAX_TENSOR_DIM = 3
#: nodes per dimension of the first and the second tensor rule (then :func:`_next_nodes`),
#: by the number of outer variables.  Two (K = 5; since Plackett's reduction only its
#: near-singular correlations): on 800 orthants of two 40-point square curves the rules of
#: 16 / 20 / 24 nodes are 7e-9 / 2e-11 / 2e-14 from that of 64 (976 points where 16, 24, 36
#: took 2128).  Three (K = 6): on 499 orthants of K = 6 square curves (lam 1e-3, 0.1, 10)
#: against 40 nodes, 18 nodes within 7.6e-10, 22 within 4.5e-12; the difference of 18 and
#: 22 is at least 6 times the finer rule's error above 2e-14, below 1e-10 for 94 %: 16,480
#: points where 12, 18, 27 (and 40 for 6 %) took about 27,000
_TENSOR_START = {1: 32, 2: 20, 3: 18}
_TENSOR_SECOND = {1: 48, 2: 24, 3: 22}
#: largest number of points of a tensor rule (then the last difference is the error)
_TENSOR_MAX_POINTS = 2**18
#: outer variables are integrated over ``[-_Y_TAIL, _Y_TAIL]``: ``2 Phi(-8.3) < 1e-16``
_Y_TAIL = 8.3


def _sobol_rng_kw(sobol: type) -> str:
    """Keyword of ``qmc.Sobol``'s generator (``rng`` in recent scipy, ``seed`` before)."""
    return "rng" if "rng" in inspect.signature(sobol).parameters else "seed"


# --------------------------------------------------------------------------- validation


def _validate(mean: np.ndarray, cov: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Check shapes, finiteness, symmetry and positive semi-definiteness; return float copies."""
    mean = check_array("mean", mean, shape=(None,))
    m = mean.shape[0]
    if m < 1:
        raise ValueError("mean must have at least one component, got shape (0,)")
    cov = check_array("cov", cov, shape=(m, m))
    _check_psd("cov", cov[None])
    return mean, 0.5 * (cov + cov.T)


def _check_psd(name: str, cov: np.ndarray) -> None:
    """Symmetry and PSD checks (relative tolerance ``PSD_CHECK_RTOL``) of a stack ``(B, m, m)``.

    One variable (``m = 1``, a binary problem's orthants) is symmetric (``|c - c|`` is 0, or
    NaN for an infinite entry, which fails no test) and its eigenvalue is its entry: the
    same test on the entries, without the symmetry's and the eigenvalues' arrays."""
    if cov.shape[-1] == 1:
        _check_eigenvalues(name, cov[:, 0])
        return
    scale = np.abs(cov).max(axis=(-2, -1))
    asym = np.abs(cov - np.swapaxes(cov, -1, -2)).max(axis=(-2, -1))
    bad = asym > PSD_CHECK_RTOL * scale
    if np.any(bad):
        i = int(np.argmax(bad))
        raise ValueError(
            f"{name} must be symmetric (relative tolerance {PSD_CHECK_RTOL:g}); "
            f"max |cov - cov^T| = {asym[i]:.3g} for max |cov| = {scale[i]:.3g}"
        )
    _check_eigenvalues(name, sym_eigvals(cov))


def _check_eigenvalues(name: str, eig: np.ndarray) -> None:
    """:func:`_check_psd`'s test of the eigenvalues ``eig`` (B, m) of a stack."""
    top = np.abs(eig).max(axis=-1)
    low = eig.min(axis=-1)
    bad = low < -PSD_CHECK_RTOL * top
    if np.any(bad):
        i = int(np.argmax(bad))
        raise ValueError(
            f"{name} must be positive semi-definite (relative tolerance {PSD_CHECK_RTOL:g}); "
            f"smallest eigenvalue {low[i]:.3g}, largest |eigenvalue| {top[i]:.3g}"
        )


# --------------------------------------------------------------- one and two dimensions


def _rectangle_prob_small(a: np.ndarray, b: np.ndarray, corr: np.ndarray) -> float:
    """``P[a < X <= b]`` for standardised ``X`` of dimension 0, 1 or 2 (correlation ``corr``)."""
    n = a.shape[0]
    if n == 0:
        return 1.0
    if np.any(b <= a):
        return 0.0
    if n == 1:
        return float(interval_prob(a[0], b[0]))
    r = float(np.clip(corr[0, 1], -1.0, 1.0))
    p = (
        bvn_cdf(b[0], b[1], r)
        - bvn_cdf(a[0], b[1], r)
        - bvn_cdf(b[0], a[1], r)
        + bvn_cdf(a[0], a[1], r)
    )
    return float(np.clip(p, 0.0, 1.0))


def _one_variable(mean: Any, cov: Any) -> np.ndarray | None:
    """:func:`orthant_probability_batch` of a few one-variable problems (float arrays
    (B, 1) and (B, 1, 1), ``B <= 8``: a binary point's clusters) whose entries pass its
    checks (finite, variances non-negative, none near overflow) on the entries as floats:
    ``Phi(-m / s)`` by the same operations as :func:`_orthant_small` (the point mass's 1 or
    0 where ``s = 0``), the same numbers without the checks' and the stack's two dozen numpy
    calls; None for any other input (the general path, which also raises)."""
    if not (isinstance(mean, np.ndarray) and isinstance(cov, np.ndarray)):
        return None
    if mean.dtype != np.float64 or cov.dtype != np.float64 or mean.ndim != 2:
        return None
    B = mean.shape[0]
    if not 0 < B <= 8 or mean.shape[1] != 1 or cov.shape != (B, 1, 1):
        return None
    ms, vs = mean.ravel().tolist(), cov.ravel().tolist()
    if not all(map(math.isfinite, ms)) or not all(0.0 <= v < _ONE_VARIABLE_MAX for v in vs):
        return None
    # (0.5 (c + c) is c below overflow: the symmetrised covariance; np.clip's min and max)
    h = [min(max(-mu / math.sqrt(v), -HMAX), HMAX) if v > 0 else 0.0 for mu, v in zip(ms, vs)]
    marg = ndtr(np.array(h))
    for i, (mu, v) in enumerate(zip(ms, vs)):
        if not v > 0:  # the point mass: P[mean <= 0]
            marg[i] = 1.0 if mu <= 0 else 0.0
    return marg


#: the largest variance :func:`_one_variable` takes (its doubling in the symmetrisation
#: stays finite)
_ONE_VARIABLE_MAX = 1e300


def _orthant_small(mean: np.ndarray, cov: np.ndarray) -> np.ndarray:
    """Orthant probabilities of a stack of validated problems of dimension 1 or 2."""
    var = np.diagonal(cov, axis1=-2, axis2=-1)
    pos = var > 0
    sd = np.sqrt(np.where(pos, var, 1.0))
    with np.errstate(over="ignore"):
        h = np.clip(-mean / sd, -HMAX, HMAX)
    # deterministic components: P[mean <= 0] is 1 or 0
    marg = np.where(pos, ndtr(h), (mean <= 0).astype(float))
    if mean.shape[-1] == 1:
        return marg[:, 0]
    both = pos[:, 0] & pos[:, 1]
    with np.errstate(all="ignore"):  # divide one sd at a time: the product may underflow
        # (larger sd first: the same rounding whichever component comes first)
        s_hi, s_lo = np.maximum(sd[:, 0], sd[:, 1]), np.minimum(sd[:, 0], sd[:, 1])
        r = np.nan_to_num(np.clip(cov[:, 0, 1] / s_hi / s_lo, -1.0, 1.0))
    # near +-1 the answer is infinitely sensitive to r (1/4 + asin(r)/(2 pi) at h = k = 0):
    # treat a rounding-level distance from +-1 as a singular covariance
    r = np.where(np.abs(r) >= 1.0 - MERGE_TOL, np.sign(r), r)
    hh = np.where(both, h[:, 0], 0.0)
    kk = np.where(both, h[:, 1], 0.0)
    rr = np.where(both, r, 0.0)
    return np.where(both, bvn_cdf(hh, kk, rr), marg[:, 0] * marg[:, 1])


# -------------------------------------------------------------- three or more dimensions


def _merge_degenerate(
    a: np.ndarray, b: np.ndarray, corr: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Merge standardised variables that are exact copies (``r = 1``) or negatives (``r = -1``).

    Returns the reduced ``(a, b, corr)`` or ``None`` when an interval becomes empty.
    """
    a, b = a.copy(), b.copy()
    keep = np.ones(a.shape[0], dtype=bool)
    for i in range(a.shape[0]):
        if not keep[i]:
            continue
        for j in range(i + 1, a.shape[0]):
            if not keep[j]:
                continue
            r = corr[i, j]
            if r >= 1.0 - MERGE_TOL:  # X_j = X_i
                a[i], b[i] = max(a[i], a[j]), min(b[i], b[j])
                keep[j] = False
            elif r <= -1.0 + MERGE_TOL:  # X_j = -X_i
                a[i], b[i] = max(a[i], -b[j]), min(b[i], -a[j])
                keep[j] = False
        if b[i] <= a[i]:
            return None
    return a[keep], b[keep], corr[np.ix_(keep, keep)]


def _trunc_mean(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Mean of a standard normal truncated to ``(lo, hi]`` (used for the variable ordering)."""
    one_sided = np.isneginf(lo)
    with np.errstate(all="ignore"):
        # -phi(hi)/Phi(hi), stable in the lower tail
        hi_f = np.where(np.isfinite(hi), hi, 0.0)
        m_one = np.where(
            np.isposinf(hi),
            0.0,
            -np.exp(-0.5 * hi_f**2 - 0.5 * np.log(2 * np.pi) - log_ndtr(hi_f)),
        )
        p = interval_prob(lo, hi)
        lo_f = np.where(np.isfinite(lo), lo, 0.0)
        pdf_lo = np.where(np.isfinite(lo), np.exp(-0.5 * lo_f**2), 0.0)
        pdf_hi = np.where(np.isfinite(hi), np.exp(-0.5 * hi_f**2), 0.0)
        m_two = (pdf_lo - pdf_hi) / np.sqrt(2 * np.pi) / p
        fallback = np.where(lo > 0, lo, np.where(hi < 0, hi, 0.0))
        m_two = np.where((p > 1e-280) & np.isfinite(m_two), m_two, fallback)
    return np.where(one_sided, m_one, m_two)


def _pivoted_factor(
    a: np.ndarray, b: np.ndarray, corr: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Genz & Bretz's ordered Cholesky factor ``X = L y`` of a stack of ``B`` standardised
    problems ``P[a < X <= b]``, ``X ~ N(0, corr)`` of dimension ``n``, vectorised over the
    stack (a Python loop over the ``n`` columns only).

    Column ``i`` takes the remaining variable of smallest conditional interval probability
    given the truncated means ``ybar`` of the variables already ordered (most restrictive
    first).  A variable whose conditional variance is at most ``_VAR_TOL`` is dependent: it
    is never a pivot and its row keeps the loadings it had; a problem whose remaining
    variables are all dependent stops there (its rank).

    Returns
    -------
    a, b : ndarray, shape (B, n)
        The limits in pivot order.
    L : ndarray, shape (B, n, n)
        The factor, rows in pivot order (a dependent row has zeros beyond its last column).
    rank : ndarray of int, shape (B,)
        The number of pivots of each problem (``n`` for a full-rank factor).
    """
    B, n = a.shape
    a, b, R = a.copy(), b.copy(), corr.copy()
    L = np.zeros((B, n, n))
    ybar = np.zeros((B, n))
    dep = np.zeros((B, n), dtype=bool)
    rank = np.zeros(B, dtype=int)
    active = np.ones(B, dtype=bool)
    at = np.arange(B)
    for i in range(n):
        rest = np.arange(i, n)
        s2 = R[:, rest, rest] - np.sum(L[:, i:, :i] ** 2, axis=2)
        dep[:, i:] |= s2 <= _VAR_TOL
        free = ~dep[:, i:]
        active &= free.any(axis=1)
        if not np.any(active):
            break
        s = np.sqrt(np.where(free, s2, 1.0))
        shift = np.einsum("bkj,bj->bk", L[:, i:, :i], ybar[:, :i])
        with np.errstate(invalid="ignore"):
            lo = (a[:, i:] - shift) / s
            hi = (b[:, i:] - shift) / s
        prob = np.where(free, interval_prob(lo, hi), np.inf)
        jr = np.where(active, np.argmin(prob, axis=1), 0)
        j = i + jr
        for arr in (a, b, dep, ybar, L, R):  # rows i <-> j (a no-op where j == i)
            arr[at, i], arr[at, j] = arr[at, j].copy(), arr[at, i].copy()
        R[at, :, i], R[at, :, j] = R[at, :, j].copy(), R[at, :, i].copy()
        piv = np.sqrt(np.where(active, s2[at, jr], 1.0))
        L[at, i, i] = np.where(active, piv, 0.0)
        col = (R[:, i + 1 :, i] - np.einsum("bkj,bj->bk", L[:, i + 1 :, :i], L[:, i, :i])) / piv[
            :, None
        ]
        L[:, i + 1 :, i] = np.where(~dep[:, i + 1 :] & active[:, None], col, 0.0)
        ybar[:, i] = np.where(active, _trunc_mean(lo[at, jr], hi[at, jr]), 0.0)
        rank += active
    return a, b, L, rank


class _SOVFactor:
    """Ordered, possibly rank-deficient Cholesky factor with the per-column constraints.

    ``y`` standard normal of dimension ``rank``; the variable ``y_c`` is restricted by every
    constraint ``lo <= y_c + u . y[:c] <= hi`` of column ``c`` (``u``, ``lo``, ``hi`` stored
    in ``columns[c]``).  ``infeasible`` marks a deterministic constraint that always fails.
    """

    def __init__(
        self,
        a: np.ndarray,
        b: np.ndarray,
        corr: np.ndarray,
        pivoted: tuple[np.ndarray, np.ndarray, np.ndarray, int] | None = None,
    ) -> None:
        """``pivoted``: this problem's row of :func:`_pivoted_factor` made for a stack of
        problems at once (the same numbers: the factorisation works on each problem of
        the stack alone), else it is made here."""
        n = a.shape[0]
        if pivoted is None:
            A, Bs, Ls, ranks = _pivoted_factor(a[None], b[None], corr[None])
            pivoted = (A[0], Bs[0], Ls[0], int(ranks[0]))
        a, b, L, rank = pivoted
        self.rank = rank
        #: the ordered limits and Cholesky factor (rows in pivot order)
        self.a, self.b, self.L = a, b, L
        self.infeasible = False
        cols: list[list[tuple[np.ndarray, float, float]]] = [[] for _ in range(rank)]
        for row in range(n):
            if row < rank:
                c = row
            else:
                sig = np.nonzero(np.abs(L[row, :rank]) > _LOADING_TOL)[0]
                if sig.size == 0:  # deterministic: 0 must lie in (a, b]
                    if not (a[row] < 0.0 <= b[row]):
                        self.infeasible = True
                    continue
                c = int(sig[-1])
            g = L[row, c]
            u = L[row, :c] / g
            lo_c, hi_c = a[row] / g, b[row] / g
            if g < 0:
                lo_c, hi_c = hi_c, lo_c
            cols[c].append((u, lo_c, hi_c))
        self.columns = []
        for c in range(rank):
            U = np.array([t[0] for t in cols[c]]).reshape(len(cols[c]), c)
            LO = np.array([t[1] for t in cols[c]])
            HI = np.array([t[2] for t in cols[c]])
            self.columns.append((U, LO, HI, bool(np.any(np.isfinite(LO)))))
        self.packed = pack_columns(self.columns)

    def integrand(self, wt: np.ndarray) -> np.ndarray:
        """Values of the separation-of-variables integrand at points ``wt`` given by
        coordinate, (rank - 1, N) (compiled: :func:`~.sov_kernels.sov_integrand`)."""
        return sov_integrand(self.packed, wt, YMAX)


@functools.cache
def _gl(n: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``n``-point Gauss-Legendre rule on ``[-1, 1]`` (made once per ``n``)."""
    return np.polynomial.legendre.leggauss(n)


def _nested_pair_rule(a: np.ndarray, b: np.ndarray, L: np.ndarray, q: int) -> np.ndarray:
    """``P[a < X <= b]`` of a stack of ``B`` full-rank ordered factors (``a``, ``b`` of shape
    ``(B, n)``, ``L`` of shape ``(B, n, n)``, :func:`_pivoted_factor`) by a nested product
    rule: the first ``n - 2`` variables integrated against their normal densities, the last
    two exactly; vectorised over the stack.

    With ``X = L y`` (``y`` standard normal), ``y_i`` given ``y_<i`` is restricted to
    ``((a_i - s_i) / L_ii, (b_i - s_i) / L_ii]``, ``s_i = L_i,<i . y_<i``, intersected with
    ``[-_Y_TAIL, _Y_TAIL]`` (the normal mass beyond is below ``1e-16``); on that interval
    ``q`` Gauss-Legendre nodes integrate ``phi(y_i)`` times the rest, an analytic function of
    ``y_i``, so the rule converges geometrically in ``q``.  The weights of each interval are
    normalised to its exact probability (:func:`interval_prob`), so that the rule is exact
    where the rest is constant.  Given ``y_1..y_{n-2}`` the last
    two variables are bivariate normal, ``X_{n-1} = c_1 + L_{n-1,n-1} y_{n-1}``,
    ``X_n = c_2 + L_{n,n-1} y_{n-1} + L_{n,n} y_n``, and their rectangle probability is
    exact (:func:`bvn_cdf`).
    """
    B, n = a.shape
    x, wq = _gl(q)
    y = np.zeros((B, 0, 1))  # (problems, outer variables so far, points)
    weight = np.ones((B, 1))
    for i in range(n - 2):
        s = np.einsum("bj,bjp->bp", L[:, i, :i], y)
        piv = L[:, i, i, None]
        lo_i, hi_i = (a[:, i, None] - s) / piv, (b[:, i, None] - s) / piv
        lo = np.maximum(lo_i, -_Y_TAIL)
        hi = np.minimum(hi_i, _Y_TAIL)
        half = np.maximum(hi - lo, 0.0) / 2
        nodes = ((lo + hi) / 2)[..., None] + half[..., None] * x  # (B, points, q)
        raw = half[..., None] * wq * np.exp(-0.5 * nodes**2)
        # normalised to the interval's exact probability: the rule is exact for a constant
        # and the tails' mass is kept (the quadrature error is that of the rest alone)
        total = raw.sum(axis=2)
        mass = interval_prob(lo_i, hi_i)
        scale = np.divide(mass, total, out=np.zeros_like(total), where=total > 0)
        weight = (weight[..., None] * raw * scale[..., None]).reshape(B, -1)
        y = np.concatenate([np.repeat(y, q, axis=2), nodes.reshape(B, 1, -1)], axis=1)
    j, k = n - 2, n - 1
    c1 = np.einsum("bj,bjp->bp", L[:, j, :j], y)
    c2 = np.einsum("bj,bjp->bp", L[:, k, :j], y)
    s1 = L[:, j, j, None]
    s2 = np.hypot(L[:, k, j], L[:, k, k])[:, None]
    r = np.clip(L[:, k, j] / s2[:, 0], -1.0, 1.0)  # one correlation per problem
    with np.errstate(over="ignore", invalid="ignore"):
        lo1, hi1 = (a[:, j, None] - c1) / s1, (b[:, j, None] - c1) / s1
        lo2, hi2 = (a[:, k, None] - c2) / s2, (b[:, k, None] - c2) / s2
    pair = bvn_cdf_rows(hi1, hi2, r)
    # a -inf lower limit contributes exactly 0: those terms are computed only where needed
    two_j, two_k = np.isfinite(a[:, j]), np.isfinite(a[:, k])
    if np.any(two_j):
        pair[two_j] -= bvn_cdf_rows(lo1[two_j], hi2[two_j], r[two_j])
    if np.any(two_k):
        pair[two_k] -= bvn_cdf_rows(hi1[two_k], lo2[two_k], r[two_k])
    both = two_j & two_k
    if np.any(both):
        pair[both] += bvn_cdf_rows(lo1[both], lo2[both], r[both])
    return np.einsum("bp,bp->b", weight, np.clip(pair, 0.0, 1.0))


def _next_nodes(q: int) -> int:
    """Nodes per outer variable of the next nested rule: ``1.5 q``.  The rules converge
    geometrically, so the finer of two is far more accurate than their difference says;
    growing by half rather than doubling spends less on that check (K = 5 square curve:
    16 nodes are ~1e-9 off, 24 and more within 2e-14 of 128)."""
    return q + q // 2


#: largest (problems x points) of one evaluation of the nested rule (bounds the memory of a
#: batch: about 100 bytes per point)
_TENSOR_BATCH_POINTS = 2**20


def _sov_tensor(
    a: np.ndarray, b: np.ndarray, L: np.ndarray, abs_tol: float
) -> tuple[np.ndarray, np.ndarray]:
    """Deterministic ``P[a < X <= b]`` of a stack of full-rank ordered factors of 3 to
    ``MAX_TENSOR_DIM + 2`` variables (:func:`_nested_pair_rule`).

    The nodes per outer variable grow from :data:`_TENSOR_START` (to
    :data:`_TENSOR_SECOND`, then by :func:`_next_nodes`) until
    two successive
    rules agree to ``abs_tol`` or the next rule would exceed :data:`_TENSOR_MAX_POINTS`
    points, decided per problem: each refinement evaluates the problems not yet converged, all
    at once (in chunks of at most :data:`_TENSOR_BATCH_POINTS` points), so each problem gets
    exactly the rules and the answer it would get alone.  Returns the finer values and the
    differences of the last two rules as their error estimates (at least ``EXACT_ERR_2D``;
    the rule converges geometrically: the finer one's error is far below that difference).
    """
    B, n = a.shape
    dim = n - 2
    q = _TENSOR_START[dim]

    def rule(rows: np.ndarray, q: int) -> np.ndarray:
        step = max(1, _TENSOR_BATCH_POINTS // q**dim)
        return np.concatenate(
            [
                _nested_pair_rule(
                    a[rows[s : s + step]], b[rows[s : s + step]], L[rows[s : s + step]], q
                )
                for s in range(0, rows.size, step)
            ]
        )

    todo = np.arange(B)
    coarse = rule(todo, q)
    p = np.empty(B)
    err = np.empty(B)
    while todo.size:
        q = _TENSOR_SECOND[dim] if q == _TENSOR_START[dim] else _next_nodes(q)
        fine = rule(todo, q)
        diff = np.abs(fine - coarse)
        done = (diff <= abs_tol) | (_next_nodes(q) ** dim > _TENSOR_MAX_POINTS)
        p[todo[done]] = np.clip(fine[done], 0.0, 1.0)
        err[todo[done]] = np.maximum(diff[done], EXACT_ERR_2D)
        todo, coarse = todo[~done], fine[~done]
    return p, err


#: two ordered problems (pivoted, or limits sorted) whose limits and correlations agree to
#: this are integrated once (:func:`_same_problems`): the orthants of exchangeable clusters
#: are permutations of one another, equal once ordered to rounding (a few ``1e-15``)
_SAME_TOL = 1e-13
#: stand-in of an infinite lower limit in :func:`_same_problems` (``-inf`` minus ``-inf`` is
#: not a number; a finite limit is clipped to ``+-HMAX``, so never matches it)
_NO_LIMIT = -4 * HMAX


def _same_problems(a: np.ndarray, b: np.ndarray, C: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Which problems of a stack of ordered problems (the pivoted factors' ``C = L L^T``,
    :func:`_pivoted_factor`, or the limits sorted, :func:`_orthant4_sorted`) are the same
    problem to :data:`_SAME_TOL`, and a bound on the difference of their probabilities.

    ``P[a < X <= b]``, ``X ~ N(0, C)``, depends on ``(a, b, C)`` alone.  Each
    problem is matched to the first earlier one whose limits and correlations all agree
    within :data:`_SAME_TOL` (its representative).  The difference of the two probabilities
    is bounded along the straight path between them by the derivatives' bounds
    ``|dP / da_i|, |dP / db_i| <= phi(0) = 1 / sqrt(2 pi)`` and, by Plackett's identity,
    ``|dP / dC_ij| <= phi_2(b_i, b_j; C_ij) <= 1 / (2 pi sqrt(1 - C_ij^2))`` (its largest
    ``|C_ij|`` on the path is at an end).

    Returns
    -------
    rep : ndarray of int, shape (B,)
        Each problem's representative (itself for a representative).
    slack : ndarray, shape (B,)
        The bound on ``|P - P_rep|`` (zero for a representative).
    """
    B, n = a.shape
    iu = np.triu_indices(n, 1)
    C = C[:, iu[0], iu[1]]
    F = np.concatenate([np.where(np.isneginf(a), _NO_LIMIT, a), b, C], axis=1)
    rep = np.arange(B)
    # problems that agree can only be in one run of the first upper limits sorted with gaps
    # of at most _SAME_TOL: a problem alone in its run is its own representative, and the
    # greedy matching below runs within each longer run (the same matches as over the stack)
    order = np.argsort(F[:, n], kind="stable")
    run = np.concatenate([[0], np.cumsum(np.diff(F[order, n]) > _SAME_TOL)])
    sizes = np.bincount(run)
    for r_id in np.nonzero(sizes > 1)[0]:
        todo = np.sort(order[run == r_id])
        while todo.size:
            same = np.all(np.abs(F[todo] - F[todo[0]]) <= _SAME_TOL, axis=1)
            rep[todo[same]] = todo[0]
            todo = todo[~same]
    d = np.abs(F - F[rep])
    r = np.maximum(np.abs(C), np.abs(C[rep]))
    with np.errstate(divide="ignore", invalid="ignore"):  # (full rank: |C_ij| < 1 bar rounding)
        dens = 1.0 / (2 * np.pi * np.sqrt(1.0 - np.minimum(r, 1.0) ** 2))
        corr_part = np.where(d[:, 2 * n :] > 0, d[:, 2 * n :] * dens, 0.0)
    slack = d[:, : 2 * n].sum(axis=1) / np.sqrt(2 * np.pi) + corr_part.sum(axis=1)
    return rep, slack


def _orthant4_sorted(
    b: np.ndarray, corr: np.ndarray, abs_tol: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Four-variable orthants ``P[X <= b]``, ``X ~ N(0, corr)``, of a stack by Plackett's
    reduction (:func:`plackett_orthant4`), without the pivoted factor: the variables
    sorted by their limits (the relabellings of one problem with distinct limits, or with
    an exchangeable correlation, are then one problem), each distinct problem integrated
    once (:func:`_same_problems`, the bound on the difference added to the error
    estimate).  Returns ``(p, err, ok)``, ``ok`` False (NaN) where the reduction did not
    settle the problem (its correlation near-singular: the nested rules decide)."""
    B = b.shape[0]
    perm = np.argsort(b, axis=1, kind="stable")
    bs = np.take_along_axis(b, perm, axis=1)
    Rs = corr[np.arange(B)[:, None, None], perm[:, :, None], perm[:, None, :]]
    rep, slack = _same_problems(np.full(bs.shape, -np.inf), bs, Rs)
    uniq, pos = np.unique(rep, return_inverse=True)
    pu, eu, oku = plackett_orthant4(bs[uniq], Rs[uniq], abs_tol)
    return pu[pos], np.maximum(eu, EXACT_ERR_2D)[pos] + slack, oku[pos]


def _orthant_nested(
    a: np.ndarray, b: np.ndarray, corr: np.ndarray, abs_tol: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The deterministic path of a stack of standardised problems ``P[a < X <= b]``,
    ``X ~ N(0, corr)``, of 3 to ``MAX_TENSOR_DIM + 2`` variables: four-variable orthants
    first by :func:`_orthant4_sorted`; the rest by the pivoted factor and the nested rules
    (:func:`_sov_tensor`), each distinct problem once (:func:`_same_problems`).  Returns
    ``(p, err, ok)``; ``ok`` False (NaN) where the factor is rank-deficient."""
    B, n = a.shape
    p = np.full(B, np.nan)
    err = np.full(B, np.nan)
    ok = np.zeros(B, dtype=bool)
    todo = np.arange(B)
    if n == 4:  # four variables: Plackett's reduction first
        cdf = np.nonzero(np.all(np.isneginf(a), axis=1))[0]
        if cdf.size:
            pc, ec, ok_c = _orthant4_sorted(b[cdf], corr[cdf], abs_tol)
            at = cdf[ok_c]
            p[at], err[at], ok[at] = pc[ok_c], ec[ok_c], True
            todo = np.nonzero(~ok)[0]
    if not todo.size:
        return p, err, ok
    a, b, L, rank = _pivoted_factor(a[todo], b[todo], corr[todo])
    full = rank == n
    if np.any(full):
        rows = np.nonzero(full)[0]
        C = np.einsum("bik,bjk->bij", L[rows], L[rows])
        rep, slack = _same_problems(a[rows], b[rows], C)
        uniq, pos = np.unique(rep, return_inverse=True)
        pu, eu = _sov_tensor(a[rows[uniq]], b[rows[uniq]], L[rows[uniq]], abs_tol)
        at = todo[rows]
        p[at], err[at], ok[at] = pu[pos], eu[pos] + slack, True
    return p, err, ok


def make_sobol(dim: int, seed: np.random.SeedSequence):
    from scipy.stats import qmc  # only K >= 4 needs it: kept out of the start-up

    kw = _sobol_rng_kw(qmc.Sobol)
    return qmc.Sobol(dim, scramble=True, **{kw: np.random.default_rng(seed)})


#: log2 of the points per randomisation remembered for each dimension and seed
#: (:func:`_sobol_prefix`): the cap of nine to sixteen variables (``_WORK_BUDGET``)
_LOG2_N_CACHED = 13


@functools.lru_cache(maxsize=4)
def _sobol_prefix(dim: int, rng_seed: int, log2_n: int) -> np.ndarray:
    """The first ``2**log2_n`` points of each of the ``_N_RANDOMISATIONS`` scrambled Sobol'
    sequences of :func:`_sov_rqmc` by coordinate (read-only, (dim, randomisations, points)),
    made once per dimension and seed (2.4 ms an engine, 8 per call)."""
    seeds = np.random.SeedSequence(rng_seed).spawn(_N_RANDOMISATIONS)
    pts = np.stack([make_sobol(dim, s).random_base2(log2_n) for s in seeds])
    out = np.ascontiguousarray(np.moveaxis(pts, -1, 0))
    out.flags.writeable = False
    return out


def _sov_rqmc(
    a: np.ndarray,
    b: np.ndarray,
    corr: np.ndarray,
    rng_seed: int,
    abs_tol: float,
    pivoted: tuple[np.ndarray, np.ndarray, np.ndarray, int] | None = None,
) -> tuple[float, float]:
    """Randomised QMC estimate of ``P[a < X <= b]`` for standardised ``X`` (dimension >= 3);
    ``pivoted``: its ordered factor, made beforehand (:class:`_SOVFactor`)."""
    factor = _SOVFactor(a, b, corr, pivoted)
    if factor.infeasible:
        return 0.0, 0.0
    dim = factor.rank - 1
    if dim == 0:  # one random variable: the integrand is a constant
        return float(factor.integrand(np.zeros((0, 1)))[0]), EXACT_ERR_1D
    log2_cap = int(np.floor(np.log2(_WORK_BUDGET / (_N_RANDOMISATIONS * factor.rank))))
    log2_cap = min(_LOG2_N_MAX, max(_LOG2_N_START, log2_cap))
    prefix = _sobol_prefix(dim, rng_seed, _LOG2_N_CACHED)
    engines = None
    sums = np.zeros(_N_RANDOMISATIONS)
    n_total = 0
    log2_new = _LOG2_N_START
    while True:
        end = n_total + 2**log2_new
        if end <= prefix.shape[2]:  # (the same points as the engines', remembered)
            pts = prefix[:, :, n_total:end].reshape(dim, -1)
        else:
            if engines is None:
                seeds = np.random.SeedSequence(rng_seed).spawn(_N_RANDOMISATIONS)
                engines = [make_sobol(dim, s) for s in seeds]
                for eng in engines if n_total else ():
                    eng.fast_forward(n_total)
            pts = np.concatenate([eng.random_base2(log2_new) for eng in engines]).T
        vals = factor.integrand(pts).reshape(_N_RANDOMISATIONS, -1)
        sums += vals.sum(axis=1)
        n_total += vals.shape[1]
        est = sums / n_total
        err = float(np.std(est, ddof=1) / np.sqrt(_N_RANDOMISATIONS))
        if err <= abs_tol or n_total >= 2**log2_cap:
            break
        # double the point set: the next block has as many points as all previous ones
        log2_new = int(np.log2(n_total))
    return float(np.clip(est.mean(), 0.0, 1.0)), err


# ---------------------------------------------------------------------------- public API


def orthant_probability(
    mean: np.ndarray, cov: np.ndarray, *, rng_seed: int = 0, abs_tol: float = 1e-10
) -> tuple[float, float]:
    """P[Z_i <= 0 for all i] for Z ~ N(mean, cov); returns (probability, error_estimate).

    Parameters
    ----------
    mean : ndarray, shape (m,)
        Mean of ``Z``, ``m >= 1``; finite.
    cov : ndarray, shape (m, m)
        Covariance of ``Z``: symmetric positive semi-definite (relative tolerance ``1e-10``);
        singular matrices (zero variances, perfectly correlated components) are allowed.
    rng_seed : int, optional
        Seed of the randomised quasi-Monte Carlo integration used beyond the deterministic
        paths (more than five variables, or a singular factor of three or more); the result
        is a deterministic function of the input and the seed, and of the input alone where
        a deterministic path applies.
    abs_tol : float, optional
        Target error for ``m >= 3``: the nested Gauss-Legendre rules (three to five
        variables) grow their nodes by half until two rules agree to ``abs_tol`` (at most
        ``2**18`` points), and so does Plackett's reduction (four variables); the
        randomised path doubles its quasi-Monte Carlo points until the estimated standard
        error falls below ``abs_tol`` or the work cap (about
        ``2**21 / m`` integrand evaluations, at most ``16 x 2**16``) is reached, which by
        default decides (a standard error of ``1e-9``-``1e-7`` for ``m = 6``).

    Returns
    -------
    probability : float
        ``P[Z <= 0]`` componentwise, in ``[0, 1]``.  A component with zero variance is
        deterministic: it satisfies ``Z_i <= 0`` iff ``mean_i <= 0``.
    error_estimate : float
        ``1e-16`` for ``m == 1``, ``1e-15`` for the deterministic bivariate path (``m == 2``,
        or a problem that reduces to at most two variables); for three to five variables
        the difference of the last two rules (nested, or Plackett's reduction; at least
        ``1e-15``); otherwise the
        standard error (one sigma) of the mean over 8 independent randomisations.

    Raises
    ------
    ValueError
        If ``mean`` or ``cov`` has the wrong shape, non-finite entries, or ``cov`` is not
        symmetric positive semi-definite.

    Notes
    -----
    Zero variance means ``cov_ii <= 0`` exactly; a tiny positive variance is kept and the
    component is standardised as usual.  A correlation within ``8 eps`` of ``+-1`` (rounding
    noise of a singular covariance) is treated as exactly ``+-1``: near the limits the
    probability changes like ``sqrt(1 - |r|)``, so one ulp of ``r`` would otherwise move it by
    about ``1e-9``.  One call takes a few milliseconds for ``m <= 2`` and
    well under a second for ``m <= 9``.
    """
    mean, cov = _validate(mean, cov)
    rng_seed = check_int("rng_seed", rng_seed, low=0)
    abs_tol = check_real("abs_tol", abs_tol, low=0.0, low_open=True)
    return _orthant_one(mean, cov, rng_seed, abs_tol)


def _standardise(
    mean: np.ndarray, cov: np.ndarray, keep: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Upper limits ``-mean / sd`` (clipped to ``+-HMAX``) and correlation matrix of a stack
    ``(B, m)``, ``(B, m, m)`` of problems with positive variances (or of the components
    ``keep`` of one problem, ``B = 1``)."""
    if keep is not None:
        mean, cov = mean[keep], cov[np.ix_(keep, keep)]
    sd = np.sqrt(np.diagonal(cov, axis1=-2, axis2=-1))
    with np.errstate(all="ignore"):
        b = np.clip(-mean / sd, -HMAX, HMAX)
        corr = cov / sd[..., :, None] / sd[..., None, :]
    corr = np.nan_to_num(np.clip(corr, -1.0, 1.0))
    m = corr.shape[-1]
    corr[..., np.arange(m), np.arange(m)] = 1.0
    return b, corr


def _orthant_one(
    mean: np.ndarray, cov: np.ndarray, rng_seed: int, abs_tol: float
) -> tuple[float, float]:
    """:func:`orthant_probability` of one validated problem (``cov`` symmetrised)."""
    m = mean.shape[0]
    if m <= 2:
        p = float(_orthant_small(mean[None], cov[None])[0])
        return p, EXACT_ERR_1D if m == 1 else EXACT_ERR_2D

    var = np.diag(cov)
    zero = var <= 0
    if np.any(mean[zero] > 0):
        return 0.0, 0.0
    keep = ~zero
    if not np.any(keep):
        return 1.0, 0.0
    b, corr = _standardise(mean, cov, keep)
    a = np.full(b.shape, -np.inf)
    reduced = _merge_degenerate(a, b, corr)
    if reduced is None:
        return 0.0, 0.0
    a, b, corr = reduced
    if a.shape[0] <= 2:
        err = EXACT_ERR_2D if a.shape[0] == 2 else EXACT_ERR_1D
        return _rectangle_prob_small(a, b, corr), err
    if a.shape[0] <= MAX_TENSOR_DIM + 2:
        p, err, ok = _orthant_nested(a[None], b[None], corr[None], abs_tol)
        if ok[0]:
            return float(p[0]), float(err[0])
    return _sov_rqmc(a, b, corr, rng_seed, abs_tol)


def _plain_problems(
    mean: np.ndarray, cov: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The rows of a stack ``(B, m)``, ``(B, m, m)`` that :func:`orthant_probability` neither
    reduces (a zero variance) nor merges (a correlation within ``MERGE_TOL`` of ``+-1``),
    with their standardised upper limits and correlations (:func:`_standardise`)."""
    m = mean.shape[1]
    var = np.diagonal(cov, axis1=1, axis2=2)
    rows = np.nonzero(np.all(var > 0, axis=1))[0]
    b, corr = _standardise(mean[rows], cov[rows])
    off = np.abs(corr[:, ~np.eye(m, dtype=bool)])
    keep = np.all(off < 1.0 - MERGE_TOL, axis=1)
    return rows[keep], b[keep], corr[keep]


def _sov_rqmc_stack(
    mean: np.ndarray,
    cov: np.ndarray,
    rng_seed: int,
    abs_tol: float,
    p: np.ndarray,
    err: np.ndarray,
    alone: np.ndarray,
) -> None:
    """The randomised path of :func:`orthant_probability_batch` (``m > MAX_TENSOR_DIM + 2``)
    for the problems that :func:`orthant_probability` neither reduces nor merges, their
    ordered factors made in one :func:`_pivoted_factor` call for the stack (its Python loop
    over the columns ran once per problem, about 5 ms of a nine-variable orthant's 45): the
    same numbers as each problem's own path.  Fills ``p`` and ``err`` of those problems and
    clears their ``alone``."""
    rows, b, corr = _plain_problems(mean, cov)
    if not rows.size:
        return
    a = np.full(b.shape, -np.inf)
    A, Bs, Ls, ranks = _pivoted_factor(a, b, corr)
    for j, i in enumerate(rows):
        pivoted = (A[j], Bs[j], Ls[j], int(ranks[j]))
        p[i], err[i] = _sov_rqmc(a[j], b[j], corr[j], rng_seed, abs_tol, pivoted)
        alone[i] = False


def orthant_probability_batch(
    mean: np.ndarray,
    cov: np.ndarray,
    *,
    rng_seed: int = 0,
    abs_tol: float = 1e-10,
    return_error: bool = False,
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """:func:`orthant_probability` of a stack of ``B`` problems of one dimension ``m``,
    vectorised where the path is deterministic.

    ``m <= 2``: exact, all problems at once.  ``3 <= m <= 5``: problems with positive
    variances, no correlation within ``8 eps`` of ``+-1`` and a full-rank factor are
    integrated together (four variables: Plackett's reduction first, on the limits sorted;
    then one pivoted Cholesky factorisation of the stack and one nested rule per refinement),
    each problem refined until its own two rules agree to ``abs_tol``: each result is
    :func:`orthant_probability`'s on the problem alone (to rounding, about ``1e-16``).
    Problems whose ordered limits and correlations agree to ``1e-13`` (a problem and its
    relabellings: the orthants of exchangeable clusters) are integrated once, the bound on
    the difference (about ``1e-14``, :func:`_same_problems`) added to the others' error
    estimates.  ``m > 5``: the randomised path, the ordered factors of the problems
    with positive variances and nothing merged made for the stack at once, each problem
    then integrated as alone (the same numbers).  Every other problem (a zero variance,
    merged variables, and for ``m <= 5`` a singular factor) takes
    :func:`orthant_probability`'s path alone, with the same ``rng_seed`` and ``abs_tol``.

    Parameters
    ----------
    mean : ndarray, shape (B, m)
        Means, ``m >= 1``; finite.
    cov : ndarray, shape (B, m, m)
        Symmetric positive semi-definite covariances (relative tolerance ``1e-10``).
    rng_seed : int, optional
        Seed of the randomised path (see :func:`orthant_probability`).
    abs_tol : float, optional
        Target error of each problem for ``m >= 3`` (see :func:`orthant_probability`).
    return_error : bool, optional
        Also return the error estimates.

    Returns
    -------
    probability : ndarray, shape (B,)
        ``P[Z_b <= 0]`` for ``Z_b ~ N(mean[b], cov[b])``.
    error_estimate : ndarray, shape (B,)
        Only with ``return_error``: each problem's estimate, as :func:`orthant_probability`'s.

    Raises
    ------
    ValueError
        For wrong shapes, non-finite entries, a covariance that is not symmetric PSD, or a
        non-positive ``abs_tol`` or negative ``rng_seed``.
    """
    rng_seed = check_int("rng_seed", rng_seed, low=0)
    abs_tol = check_real("abs_tol", abs_tol, low=0.0, low_open=True)
    p = _one_variable(mean, cov)  # (a binary point's orthants, on floats)
    if p is not None:
        return (p, np.full(p.size, EXACT_ERR_1D)) if return_error else p
    mean = check_array("mean", mean, shape=(None, None))
    B, m = mean.shape
    if m < 1:
        raise ValueError("mean must have shape (B, m) with m >= 1, got (B, 0)")
    cov = check_array("cov", cov, shape=(B, m, m))
    if B == 0:
        return (np.zeros(0), np.zeros(0)) if return_error else np.zeros(0)
    _check_psd("cov", cov)
    cov = 0.5 * (cov + np.swapaxes(cov, -1, -2))
    if m <= 2:
        p = _orthant_small(mean, cov)
        err = np.full(B, EXACT_ERR_1D if m == 1 else EXACT_ERR_2D)
        return (p, err) if return_error else p
    p = np.empty(B)
    err = np.empty(B)
    alone = np.ones(B, dtype=bool)
    if m <= MAX_TENSOR_DIM + 2:
        rows, b, corr = _plain_problems(mean, cov)
        if rows.size:
            pr, er, ok = _orthant_nested(np.full(b.shape, -np.inf), b, corr, abs_tol)
            p[rows[ok]], err[rows[ok]] = pr[ok], er[ok]
            alone[rows[ok]] = False
    else:
        _sov_rqmc_stack(mean, cov, rng_seed, abs_tol, p, err, alone)
    for i in np.nonzero(alone)[0]:
        p[i], err[i] = _orthant_one(mean[i], cov[i], rng_seed, abs_tol)
    return (p, err) if return_error else p
