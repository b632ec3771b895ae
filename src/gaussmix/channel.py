"""The "loss" half of the fixed point: Gaussian expectations of prox-derived quantities.

For every cluster ``c`` with ``omega_c = M_c + b + Q_c^{1/2} xi``, ``xi ~ N(0, I)``, the
proximal map ``h_c = prox(omega_c)`` (metric ``V_c``) and ``f_c = V_c^{-1}(h_c - omega_c)
= -grad loss(y_c, h_c)``, this module returns

* ``Ef  = E[f_c]``                                  (Theorem 1, eq. spgeneral: Mhat),
* ``Eff = E[f_c f_c^T]``                            (Qhat),
* ``Edf = E[(I + H V_c)^{-1} H] = -E[d f_c / d omega]`` (Vhat, Stein form of Appendix B,
  numerical note 2; ``H`` is the Hessian of the loss at ``h_c``),
* ``Eloss = E[loss(y_c, h_c)]``                     (Theorem 2, training loss),
* ``Eenv = E[min_h 1/2 (h-omega)^T V^{-1} (h-omega) + loss]`` (the Moreau envelope, whose
  average is the channel part of the free energy, eq. app:rsfree).

The hat parameters are ``alpha rho_c`` times these.  Square and hinge losses have closed
forms (no quadrature); smooth losses use the quadrature rule given by the caller.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import ndtr

from .losses import HingeLoss, Loss, SquareLoss, _solve_batch
from .quadrature import GaussHermite

__all__ = ["ChannelMoments", "channel_moments", "sqrtm_psd"]

_SQRT2PI = np.sqrt(2.0 * np.pi)


@dataclass
class ChannelMoments:
    """Per-cluster Gaussian expectations (see module docstring); shapes (K, ...)."""

    Ef: np.ndarray
    Eff: np.ndarray
    Edf: np.ndarray
    Eloss: np.ndarray
    Eenv: np.ndarray


def sqrtm_psd(Q: np.ndarray) -> np.ndarray:
    """Symmetric square root of a stack of PSD matrices (negative eigenvalues clipped)."""
    w, U = np.linalg.eigh(0.5 * (Q + np.swapaxes(Q, -1, -2)))
    return (U * np.sqrt(np.clip(w, 0.0, None))[..., None, :]) @ np.swapaxes(U, -1, -2)


def _phi(x: np.ndarray) -> np.ndarray:
    return np.exp(-0.5 * x * x) / _SQRT2PI


def channel_moments(
    loss: Loss,
    y: np.ndarray,
    M: np.ndarray,
    b: np.ndarray,
    Q: np.ndarray,
    V: np.ndarray,
    rule: GaussHermite | None = None,
    cache: dict | None = None,
) -> ChannelMoments:
    """Channel expectations for all clusters at once.

    Parameters
    ----------
    loss : Loss
        The loss on effective outputs.
    y : ndarray (K, L_full)
        Labels.
    M : ndarray (K, L); b : ndarray (L); Q, V : ndarray (K, L, L)
        Order parameters in the effective output space.
    rule : GaussHermite, optional
        Quadrature rule (dimension L); ignored by the closed-form losses.
    cache : dict, optional
        Holds the previous proximal solutions for warm starts.
    """
    if isinstance(loss, SquareLoss):
        return _square_moments(y, M + b, Q, V)
    if isinstance(loss, HingeLoss):
        return _hinge_moments(y, M + b, Q, V)
    if rule is None:
        raise ValueError("a quadrature rule is needed for this loss")
    return _quadrature_moments(loss, y, M + b, Q, V, rule, cache)


def _square_moments(y, m, Q, V) -> ChannelMoments:
    """Square loss: ``f = (I + V)^{-1} (y - omega)`` is affine, expectations are exact."""
    L = m.shape[-1]
    A = np.linalg.inv(np.eye(L) + V)
    r = y - m
    Ef = np.einsum("kij,kj->ki", A, r)
    Eff = A @ (r[:, :, None] * r[:, None, :] + Q) @ A
    Edf = A
    Eloss = 0.5 * np.trace(Eff, axis1=1, axis2=2)  # y - h = f
    Eenv = 0.5 * np.einsum("kij,kji->k", np.eye(L) + V, Eff)
    return ChannelMoments(Ef, Eff, Edf, Eloss, Eenv)


def _hinge_moments(y, m, Q, V) -> ChannelMoments:
    """Hinge loss (L = 1): piecewise-linear prox, exact Gaussian partial moments.

    With ``z = y omega`` and ``u = 1 - z ~ N(1 - y m, q)``: ``f = 0`` for ``u <= 0``,
    ``f = y u / v`` for ``0 < u < v`` and ``f = y`` for ``u >= v``.
    """
    yy = y[:, 0]
    v = V[:, 0, 0]
    s = np.sqrt(np.maximum(Q[:, 0, 0], 1e-300))
    mu = 1.0 - yy * m[:, 0]
    a0 = (0.0 - mu) / s
    a1 = (v - mu) / s
    P0, P1 = ndtr(a0), ndtr(a1)
    p0, p1 = _phi(a0), _phi(a1)
    pb = P1 - P0  # P(0 < u < v)
    pc = 1.0 - P1  # P(u >= v)
    eu = mu * pb + s * (p0 - p1)
    eu2 = (mu * mu + s * s) * pb + 2.0 * mu * s * (p0 - p1) + s * s * (a0 * p0 - a1 * p1)
    Ef = (yy * (eu / v + pc))[:, None]
    Eff = (eu2 / v**2 + pc)[:, None, None]
    Edf = (pb / v)[:, None, None]
    Eloss = (mu - v) * pc + s * p1  # E[(u - v)_+]
    Eenv = 0.5 * v * Eff[:, 0, 0] + Eloss
    return ChannelMoments(Ef, Eff, Edf, Eloss, Eenv)


def _quadrature_moments(loss, y, m, Q, V, rule, cache) -> ChannelMoments:
    xi = rule.nodes
    w = rule.weights
    S = sqrtm_psd(Q)
    omega = m[:, None, :] + np.einsum("kij,nj->kni", S, xi)
    key = (rule.n, rule.dim, omega.shape)
    h0 = None
    if cache is not None and cache.get("key") == key:
        h0 = cache["h"]
    h = loss.prox(y, omega, V, h0=h0)
    if cache is not None:
        cache["key"] = key
        cache["h"] = h
    yb = y[:, None, :]
    f = -loss.grad(yb, h)
    H = loss.hess(yb, h)
    L = m.shape[-1]
    if L == 1:
        v = V[:, None, 0, 0]
        hh = H[..., 0, 0]
        df = (hh / (1.0 + hh * v))[..., None, None]
    else:
        Vb = V[:, None]
        df = _solve_batch(np.eye(L) + H @ Vb, H)
        df = 0.5 * (df + np.swapaxes(df, -1, -2))
    Ef = np.einsum("n,kni->ki", w, f)
    Eff = np.einsum("n,kni,knj->kij", w, f, f)
    Edf = np.einsum("n,knij->kij", w, df)
    lval = loss.value(yb, h)
    Eloss = lval @ w
    quad = np.einsum("kni,kij,knj->kn", f, V, f)
    Eenv = (0.5 * quad + lval) @ w
    return ChannelMoments(Ef, Eff, Edf, Eloss, Eenv)
