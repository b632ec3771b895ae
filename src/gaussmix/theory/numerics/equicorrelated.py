"""The orthant probability of an equicorrelated Gaussian with a common mean, by a
deterministic one-dimensional integral: the test error of exchangeable clusters
(:func:`equicorrelated_orthant`; the general orthants are
:mod:`gaussmix.theory.numerics.orthant`'s)."""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from scipy.integrate import quad
from scipy.special import log_ndtr, ndtr

from gaussmix.core.validation import check_array

from .bivariate import HMAX
from .orthant import EXACT_ERR_1D, MERGE_TOL, YMAX

__all__ = ["equicorrelated_orthant"]

#: relative tolerance of the equicorrelation check of :func:`equicorrelated_orthant`
_EQUI_RTOL = 1e-12
#: absolute tolerance asked of the one-dimensional quadrature of :func:`equicorrelated_orthant`
_EQUI_EPSABS = 1e-14
#: half-width of the range of the panel rule (:func:`_panel_integral`): the integrand is at
#: most ``phi(u)``, so the mass left out is below ``2 Phi(-9) = 2.3e-19``
_PANEL_UMAX = 9.0
#: Gauss-Legendre orders of the panel rule and of the coarser rule its error is taken from
_PANEL_ORDERS = (10, 20)
#: most panels of the panel rule (a correlation near 1 makes ``Phi``'s step steep in ``u``:
#: adaptive quadrature then)
_MAX_EQUI_PANELS = 200


def equicorrelated_orthant(mean: np.ndarray, cov: np.ndarray) -> tuple[float, float] | None:
    """``P[Z <= 0]`` for ``Z ~ N(mu 1, sigma^2 ((1 - r) I + r 1 1^T))`` with ``r >= 0``, by a
    deterministic one-dimensional integral; ``None`` if ``(mean, cov)`` is not of that form.

    Derivation (conditioning on the common factor): with ``r >= 0`` write
    ``Z_i = mu + sigma (sqrt(r) U + sqrt(1 - r) E_i)`` for independent standard normals
    ``U, E_1, ..., E_m``; given ``U = u`` the components are independent, so::

        P[Z <= 0] = int phi(u) Phi((-mu - sigma sqrt(r) u) / (sigma sqrt(1 - r)))^m du,

    a smooth integral over the real line (``phi``, ``Phi`` the standard normal density and
    distribution function).  It is the test accuracy of exchangeable clusters (Theorem 2 of
    Loureiro et al. 2021, eq. (9), with the symmetric state of
    :mod:`gaussmix.theory.problem.symmetry`): cluster 0's orthant of the differences
    ``omega_j - omega_0`` has exactly this structure.  ``Phi^m`` is evaluated as
    ``exp(m log Phi)`` (accurate in the lower tail) and the integral, split at the point
    ``u = -mu / (sigma sqrt(r))`` where the argument of ``Phi`` changes sign, by composite
    Gauss-Legendre panels (:func:`_panel_integral`, vectorised, with its error from a
    coarser rule), or where those are not accurate to the tolerance below by adaptive
    Gauss-Kronrod quadrature (``scipy.integrate.quad``, absolute tolerance ``1e-14``) over
    ``|u| <= 37`` (the omitted mass ``2 Phi(-37)`` is below ``1e-298``).  The limits are
    exact: ``sigma = 0`` (deterministic, ``1`` iff ``mu <= 0``), ``m = 1`` or ``r = 1``
    (within ``8 eps``: every component is one variable, ``Phi(-mu / sigma)``) and ``r = 0``
    (independent components, ``Phi(-mu / sigma)^m``).

    Parameters
    ----------
    mean : ndarray, shape (m,)
        Mean of ``Z``, ``m >= 1``, finite.
    cov : ndarray, shape (m, m)
        Covariance of ``Z``, finite.

    Returns
    -------
    tuple (probability, error_estimate) or None
        ``None`` when the entries of ``mean`` differ, or the diagonal or the off-diagonal
        entries of ``cov`` differ, by more than ``1e-12`` relative to their largest absolute
        value, or when the common correlation is negative (beyond rounding): the caller then
        uses :func:`orthant_probability`.  Otherwise the probability and an error estimate:
        the quadrature's own estimate plus the first-order effect of the (rounding-level)
        departure of the input from the exact structure, ``m (dmu / sigma + dcov / sigma^2)``.

    Raises
    ------
    ValueError
        If ``mean`` or ``cov`` has the wrong shape or non-finite entries.
    """
    mean = check_array("mean", mean, shape=(None,))
    m = mean.shape[0]
    if m < 1:
        raise ValueError("mean must have at least one component, got shape (0,)")
    cov = check_array("cov", cov, shape=(m, m))
    mu = float(mean.mean())
    dmu = float(np.abs(mean - mu).max())
    if dmu > _EQUI_RTOL * float(np.abs(mean).max()):
        return None
    diag = np.diag(cov)
    off = cov[~np.eye(m, dtype=bool)]
    scale = float(np.abs(cov).max())
    var = float(diag.mean())
    c = float(off.mean()) if m > 1 else 0.0
    dcov = max(float(np.abs(diag - var).max()), float(np.abs(off - c).max()) if m > 1 else 0.0)
    if dcov > _EQUI_RTOL * scale:
        return None
    if var <= 0.0:
        if var < 0.0 or scale > 0.0:
            return None  # a zero diagonal with non-zero off-diagonal entries is not a covariance
        return (1.0 if mu <= 0.0 else 0.0), 0.0
    sigma = np.sqrt(var)
    r = c / var
    if r < -MERGE_TOL or r > 1.0 + MERGE_TOL:
        return None
    r = float(np.clip(r, 0.0, 1.0))
    slack = m * (dmu / sigma + dcov / var)
    h = float(np.clip(-mu / sigma, -HMAX, HMAX))
    if m == 1 or r >= 1.0 - MERGE_TOL:
        return float(ndtr(h)), EXACT_ERR_1D + slack
    if r == 0.0:
        return float(np.exp(m * log_ndtr(h))), EXACT_ERR_1D * m + slack
    a, s = np.sqrt(r), np.sqrt(1.0 - r)
    fast = _panel_integral(h, a, s, m)
    if fast is not None:
        return float(np.clip(fast[0], 0.0, 1.0)), fast[1] + EXACT_ERR_1D + slack

    def integrand(u: float) -> float:
        return float(np.exp(-0.5 * u * u + m * log_ndtr((h - a * u) / s))) / np.sqrt(2 * np.pi)

    cut = float(np.clip(h / a, -YMAX, YMAX))
    p, err = 0.0, 0.0
    for lo, hi in ((-YMAX, cut), (cut, YMAX)):
        if hi > lo:
            val, e, info, *msg = quad(
                integrand, lo, hi, epsabs=_EQUI_EPSABS, epsrel=0.0, limit=200, full_output=1
            )
            if msg:  # tolerance not reached (rounding): the estimate may be optimistic
                if not np.isfinite(val + e):
                    return None  # quadrature failed (never seen): the caller's QMC decides
                e = max(e, 10 * _EQUI_EPSABS)
            p, err = p + val, err + e
    return float(np.clip(p, 0.0, 1.0)), float(err) + EXACT_ERR_1D + slack


@lru_cache(maxsize=4)
def _legendre(order: int) -> tuple[np.ndarray, np.ndarray]:
    """Gauss-Legendre nodes and weights on ``[-1, 1]``."""
    return np.polynomial.legendre.leggauss(order)


def _panel_integral(h: float, a: float, s: float, m: int) -> tuple[float, float] | None:
    """``int phi(u) Phi((h - a u) / s)^m du`` (:func:`equicorrelated_orthant`'s integral) by
    composite Gauss-Legendre over ``|u| <= 9`` and its error, or None where the rule is not
    within :data:`_EQUI_EPSABS` (the caller's adaptive quadrature then).

    The panels split the range at ``u = h / a`` (the argument of ``Phi`` changes sign) and
    are at most ``min(1, s / a)`` wide, so the argument of ``Phi`` changes by at most 1 over
    a panel (``log Phi`` is analytic within about 2 of the real axis, ``phi`` entire): the
    rule of order 20 is then accurate far below ``1e-14``, and its difference from the rule
    of order 10 on the same panels, a bound on the coarser one's error, is the error
    returned (plus the mass beyond ``|u| = 9``, below ``2.3e-19``).  Vectorised: about 600
    evaluations of the integrand in a few array operations instead of adaptive quadrature's
    ~260 scalar ones (measured at K = 10, ``m = 9``: the 36 orthants of a solve with its
    error estimate 4.2 ms for 22 ms, medians of interleaved rounds)."""
    width = min(1.0, s / a)
    n = int(np.ceil(2 * _PANEL_UMAX / width))
    if n > _MAX_EQUI_PANELS:
        return None
    cut = h / a
    edges = np.linspace(-_PANEL_UMAX, _PANEL_UMAX, n + 1)
    if -_PANEL_UMAX < cut < _PANEL_UMAX:
        edges = np.sort(np.append(edges, cut))
    lo, half = edges[:-1], 0.5 * np.diff(edges)
    values = []
    for order in _PANEL_ORDERS:
        x, w = _legendre(order)
        u = (lo + half)[:, None] + half[:, None] * x
        f = np.exp(-0.5 * u * u + m * log_ndtr((h - a * u) / s))
        values.append(float(((f @ w) * half).sum()) / np.sqrt(2 * np.pi))
    err = abs(values[1] - values[0]) + 2 * float(ndtr(-_PANEL_UMAX))
    if not (np.isfinite(values[1]) and err <= _EQUI_EPSABS):
        return None
    return values[1], err
