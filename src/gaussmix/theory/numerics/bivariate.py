"""The bivariate normal distribution function, to double precision, and the interval
probabilities of one standard normal: the exact closing step of every deterministic orthant
path (:mod:`gaussmix.theory.numerics.orthant`'s nested rules,
:mod:`gaussmix.theory.numerics.plackett`'s reduction)."""

from __future__ import annotations

import numpy as np
from scipy.special import ndtr

from .kernels import bvnu, bvnu_rows

__all__ = ["HMAX", "bvn_cdf", "bvn_cdf_rows", "interval_prob"]

#: standardised limits are clipped to ``[-HMAX, HMAX]``: ``Phi(-40) < 1e-348`` is zero in
#: double precision, so the clipping is exact and avoids overflow for huge ``|mean| / sd``
HMAX = 40.0

#: Genz's 20-point Gauss-Legendre rule of ``bvnu`` (``|r| >= 0.75``)
_GL_NODES, _GL_WEIGHTS = np.polynomial.legendre.leggauss(20)
#: the shorter rules of Genz's ``bvnu`` for smaller correlations (6 points for ``|r| < 0.3``,
#: 12 for ``|r| < 0.75``)
_GL_RULES_SMALL_R = (*np.polynomial.legendre.leggauss(6), *np.polynomial.legendre.leggauss(12))


def interval_prob(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """``P[lo < X <= hi]`` for a standard normal ``X``, accurate in both tails (0 if empty)."""
    lo, hi = np.broadcast_arrays(np.asarray(lo, dtype=float), np.asarray(hi, dtype=float))
    upper = lo > 0
    p = np.where(upper, ndtr(-lo) - ndtr(-hi), ndtr(hi) - ndtr(lo))
    return np.where(hi > lo, np.maximum(p, 0.0), 0.0)


def _bvnu(dh: np.ndarray, dk: np.ndarray, r: np.ndarray) -> np.ndarray:
    """``P[X > dh, Y > dk]`` for standard bivariate normals with correlation ``r`` (finite dh, dk).

    A. Genz's ``bvnu`` (Drezner & Wesolowsky 1989, with Genz's modifications for double
    precision and ``|r|`` near one), Genz's Gauss-Legendre rules (6 points for
    ``|r| < 0.3``, 12 for ``|r| < 0.75``, 20 beyond);
    compiled (:func:`gaussmix._kernels.bvnu`) and applied elementwise after broadcasting.
    """
    h, k, r = np.broadcast_arrays(
        np.asarray(dh, dtype=float), np.asarray(dk, dtype=float), np.asarray(r, dtype=float)
    )
    shape = h.shape
    out = bvnu(
        np.ascontiguousarray(h).reshape(-1),
        np.ascontiguousarray(k).reshape(-1),
        np.ascontiguousarray(r).reshape(-1),
        _GL_NODES,
        _GL_WEIGHTS,
        *_GL_RULES_SMALL_R,
    )
    return out.reshape(shape)


def bvn_cdf(h: np.ndarray, k: np.ndarray, r: np.ndarray) -> np.ndarray:
    """``P[X <= h, Y <= k]`` for standard bivariate normals with correlation ``r``.

    ``h`` and ``k`` may be infinite; ``r`` is clipped to ``[-1, 1]``.
    """
    h, k, r = np.broadcast_arrays(
        np.asarray(h, dtype=float), np.asarray(k, dtype=float), np.asarray(r, dtype=float)
    )
    fin = np.isfinite(h) & np.isfinite(k)
    if fin.all():  # (the nested rules' case: no masks needed)
        return _bvnu(-np.clip(h, -HMAX, HMAX), -np.clip(k, -HMAX, HMAX), r)
    hf = np.clip(np.where(fin, h, 0.0), -HMAX, HMAX)
    kf = np.clip(np.where(fin, k, 0.0), -HMAX, HMAX)
    core = _bvnu(-hf, -kf, r)
    out = np.where(fin, core, 0.0)
    # infinite limits: a -inf limit gives 0, a +inf limit leaves the other marginal
    out = np.where(np.isposinf(h), ndtr(k), out)
    out = np.where(np.isposinf(k), ndtr(np.where(np.isposinf(h), np.inf, h)), out)
    out = np.where(np.isneginf(h) | np.isneginf(k), 0.0, out)
    return out


def bvn_cdf_rows(h: np.ndarray, k: np.ndarray, r: np.ndarray) -> np.ndarray:
    """:func:`bvn_cdf` of finite ``h, k`` (B, P) with one correlation ``r`` (B,) per row,
    the same numbers (:func:`gaussmix.theory.numerics.kernels.bvnu_rows`: the rule's terms that
    depend on ``r`` alone made once per row)."""
    return bvnu_rows(
        np.ascontiguousarray(-np.clip(h, -HMAX, HMAX)),
        np.ascontiguousarray(-np.clip(k, -HMAX, HMAX)),
        np.ascontiguousarray(r, dtype=float),
        _GL_NODES,
        _GL_WEIGHTS,
        *_GL_RULES_SMALL_R,
    )
