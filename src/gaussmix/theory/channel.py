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

from . import _kernels
from .losses import (
    CrossEntropyLoss,
    HingeLoss,
    LogisticLoss,
    Loss,
    ReducedLoss,
    SquareLoss,
    _solve_batch,
)
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
    """Symmetric square root of a stack of PSD matrices (negative eigenvalues clipped).

    Closed forms for 1 x 1 and positive-definite 2 x 2 blocks (``sqrt(A) = (A + s I) / t``
    with ``s = sqrt(det A)``, ``t = sqrt(tr A + 2 s)``); an eigendecomposition otherwise.
    """
    L = Q.shape[-1]
    if L == 1:
        return np.sqrt(np.clip(Q, 0.0, None))
    Qs = 0.5 * (Q + np.swapaxes(Q, -1, -2))
    if L == 2:
        det = Qs[..., 0, 0] * Qs[..., 1, 1] - Qs[..., 0, 1] ** 2
        tr = Qs[..., 0, 0] + Qs[..., 1, 1]
        if np.all(det > 1e-12 * tr * tr):
            sd = np.sqrt(det)
            t = np.sqrt(tr + 2.0 * sd)
            return (Qs + sd[..., None, None] * np.eye(2)) / t[..., None, None]
    w, U = np.linalg.eigh(Qs)
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


def _compiled_kernel(loss: Loss) -> str | None:
    """Which compiled kernel of :mod:`gaussmix._kernels` serves ``loss``, if any."""
    if isinstance(loss, LogisticLoss):
        return "logistic"
    if isinstance(loss, ReducedLoss) and isinstance(loss.base, CrossEntropyLoss):
        return "cross-entropy"
    return None


def _compiled_moments(kind, loss, y, omega, V, w, h0) -> tuple[ChannelMoments, np.ndarray]:
    """Channel moments from a compiled kernel (same contract as the numpy path) and the
    proximal points; ``h0`` (a warm start, or None: start at ``omega``) is not modified.
    The proximal solves converge to ``max |h - omega + V grad| <= 1e-13 (1 + max |omega|)``,
    the threshold of :meth:`gaussmix.theory.losses.Loss.prox`."""
    K, N, L = omega.shape
    tol = 1e-13 * (1.0 + float(np.abs(omega).max()))
    h = np.array(omega if h0 is None else h0, dtype=float, order="C")  # a copy
    w = np.ascontiguousarray(w, dtype=float)
    if kind == "logistic":
        h2 = h.reshape(K, N)
        Ef, Eff, Edf, Eloss, Eenv, failed = _kernels.logistic_channel(
            np.ascontiguousarray(y[:, 0], dtype=float),
            np.ascontiguousarray(omega.reshape(K, N)),
            np.ascontiguousarray(V[:, 0, 0]),
            h2,
            w,
            float(tol),
            100,
        )
        mom = ChannelMoments(Ef[:, None], Eff[:, None, None], Edf[:, None, None], Eloss, Eenv)
    else:
        Vc = np.ascontiguousarray(0.5 * (V + np.swapaxes(V, -1, -2)))
        Vinv = _solve_batch(Vc, np.broadcast_to(np.eye(L), Vc.shape))
        # three classes (two reduced outputs): the scalar fast path of the same kernel
        kernel = _kernels.ce3_channel if loss.P.shape == (2, 3) else _kernels.ce_channel
        Ef, Eff, Edf, Eloss, Eenv, failed = kernel(
            np.argmax(y, axis=-1).astype(np.int64),
            loss.P if loss.P.flags.c_contiguous else np.ascontiguousarray(loss.P),
            np.ascontiguousarray(omega),
            Vc,
            np.ascontiguousarray(Vinv),
            h,
            w,
            float(tol),
            100,
        )
        mom = ChannelMoments(Ef, 0.5 * (Eff + np.swapaxes(Eff, -1, -2)), Edf, Eloss, Eenv)
    if failed:
        raise FloatingPointError(
            f"{loss.name} proximal map did not converge at {failed} quadrature node(s)"
        )
    return mom, h


def _quadrature_moments(loss, y, m, Q, V, rule, cache, compiled: bool = True) -> ChannelMoments:
    """Channel moments by quadrature (Theorem 1, eq. spgeneral, hat updates).

    ``compiled=True`` uses a kernel of :mod:`gaussmix._kernels` where the loss has one
    (logistic, cross-entropy); ``compiled=False`` is the numpy reference path (batched
    Newton prox, then the moments), which the kernels are tested against.
    """
    xi = rule.nodes
    w = rule.weights
    S = sqrtm_psd(Q)
    omega = m[:, None, :] + xi @ S  # S symmetric: omega_kn = m_k + S_k xi_n
    key = (rule.n, rule.dim, omega.shape)
    h0 = None
    if cache is not None and cache.get("key") == key:
        h0 = cache["h"]
    kind = _compiled_kernel(loss) if compiled else None
    if kind is not None:
        if h0 is not None:
            # predictor: keep f = V^{-1}(h - omega) of the previous evaluation, which varies
            # slowly along the iteration, and map it through the new omega and V
            f_old = _solve_batch(cache["V"][:, None], h0 - cache["omega"])
            h0 = omega + f_old @ V  # V symmetric
        mom, h = _compiled_moments(kind, loss, y, omega, V, w, h0)
        if cache is not None:
            cache.update(key=key, h=h, omega=omega, V=V)
        return mom
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
