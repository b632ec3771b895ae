"""The "loss" half of the fixed point: Gaussian expectations of prox-derived quantities.

For every cluster ``c`` with ``omega_c = M_c + b + Q_c^{1/2} xi``, ``xi ~ N(0, I)``, the
proximal map ``h_c = prox(omega_c)`` (metric ``V_c``) and ``f_c = V_c^{-1}(h_c - omega_c)
= -grad loss(y_c, h_c)``, this module returns

* ``Ef  = E[f_c]``                                  (Theorem 1, eq. (8): Mhat),
* ``Eff = E[f_c f_c^T]``                            (Qhat),
* ``Edf = E[(I + H V_c)^{-1} H] = -E[d f_c / d omega]`` (Vhat, Stein form of eq. (179),
  item 2 of Appendix B.5; ``H`` is the Hessian of the loss at ``h_c``),
* ``Eloss = E[loss(y_c, h_c)]``                     (Theorem 2, training loss),
* ``Eenv = E[min_h 1/2 (h-omega)^T V^{-1} (h-omega) + loss]`` (the Moreau envelope, whose
  average is the channel part of the free energy, eq. (168)).

The hat parameters are ``alpha rho_c`` times these.  Losses with ``exact_channel`` (square,
hinge) have closed forms (no quadrature; of one output compiled,
:mod:`gaussmix.theory.numerics.exact_kernels`); smooth losses use the quadrature rule given by
the caller, with a compiled kernel where :data:`COMPILED_KERNELS` has one for the loss.
"""

from __future__ import annotations

import contextvars
import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, fields
from typing import TypeVar

import numpy as np
from numba.core import config as numba_config

from gaussmix.core.registry import by_class

from ..numerics import ce_small_metric as _small
from ..numerics import kernels as _kernels
from ..numerics.ce_risk import ce3_risk, ce_risk
from ..numerics.channel_arrays import inverse_metrics, metric_coordinates, shifted_nodes
from ..numerics.exact_kernels import HINGE_MIDDLE_RULE, hinge_moments, square_moments_scalar
from ..numerics.linalg import inv, process_cores
from ..numerics.quadrature import QuadratureRule
from ..numerics.tolerances import PROX_MAX_ITER, PROX_TOL, SQRTM_2X2_DET_RTOL
from .losses import (
    CrossEntropyLoss,
    HingeLoss,
    LogisticLoss,
    Loss,
    ReducedLoss,
    SquareLoss,
    closed_form_of,
    solve_batch,
)

__all__ = [
    "ChannelMoments",
    "ProxWarmStart",
    "CompiledKernel",
    "COMPILED_KERNELS",
    "LOGISTIC_KERNEL",
    "CROSS_ENTROPY_KERNEL",
    "channel_moments",
    "channel_evaluation",
    "compiled_kernel",
    "compiled_moments",
    "in_parts",
    "kernel_threads",
    "sqrtm_psd",
    "flat_metrics",
    "identity_prox_moments",
]

T = TypeVar("T")


@dataclass
class ChannelMoments:
    """Per-cluster Gaussian expectations (see module docstring); shapes (K, ...)."""

    Ef: np.ndarray
    Eff: np.ndarray
    Edf: np.ndarray
    Eloss: np.ndarray
    Eenv: np.ndarray


@dataclass(frozen=True)
class ProxWarmStart:
    """The proximal points of one channel evaluation by quadrature, kept to start the next.

    Lifetime: made by one evaluation (:func:`channel_evaluation`) and handed to the next
    evaluation of the same iteration, which returns its successor; the fixed-point map that
    holds it (one problem, one rule) drops it with itself.  It is used only when ``key``
    matches the next evaluation (same rule and shapes), so a stale one is harmless.

    Attributes
    ----------
    key : tuple
        ``(rule, omega.shape)`` of the evaluation (rules are frozen, hashable values).
    h : ndarray (K, N, L)
        Proximal points at the nodes.
    omega : ndarray (K, N, L)
        The nodes ``M_c + b + Q_c^{1/2} xi_n``.
    V : ndarray (K, L, L)
        The metrics of the evaluation (with ``omega`` and ``h``: ``f = V^{-1}(h - omega)``,
        from which the compiled path predicts the next proximal points).
    """

    key: tuple
    h: np.ndarray
    omega: np.ndarray
    V: np.ndarray


def sqrtm_psd(Q: np.ndarray) -> np.ndarray:
    """Symmetric square root of a stack of PSD matrices (negative eigenvalues clipped).

    Closed forms for 1 x 1 and positive-definite 2 x 2 blocks (``sqrt(A) = (A + s I) / t``
    with ``s = sqrt(det A)``, ``t = sqrt(tr A + 2 s)``); an eigendecomposition otherwise.
    """
    L = Q.shape[-1]
    if L == 1:  # (np.maximum: np.clip's result, at a fifth of its call's cost)
        return np.sqrt(np.maximum(Q, 0.0))
    Qs = 0.5 * (Q + np.swapaxes(Q, -1, -2))
    if L == 2:
        det = Qs[..., 0, 0] * Qs[..., 1, 1] - Qs[..., 0, 1] ** 2
        tr = Qs[..., 0, 0] + Qs[..., 1, 1]
        if np.all(det > SQRTM_2X2_DET_RTOL * tr * tr):
            sd = np.sqrt(det)
            t = np.sqrt(tr + 2.0 * sd)
            return (Qs + sd[..., None, None] * np.eye(2)) / t[..., None, None]
    w, U = np.linalg.eigh(Qs)
    return (U * np.sqrt(np.maximum(w, 0.0))[..., None, :]) @ np.swapaxes(U, -1, -2)


def channel_moments(
    loss: Loss,
    y: np.ndarray,
    M: np.ndarray,
    b: np.ndarray,
    Q: np.ndarray,
    V: np.ndarray,
    rule: QuadratureRule | None = None,
) -> ChannelMoments:
    """Channel expectations for all clusters at once (Theorem 1, eq. (8), hat updates).

    Parameters
    ----------
    loss : Loss
        The loss on effective outputs.
    y : ndarray (K, L_full)
        Labels.
    M : ndarray (K, L); b : ndarray (L); Q, V : ndarray (K, L, L)
        Order parameters in the effective output space.
    rule : QuadratureRule, optional
        Quadrature rule of dimension L (any family of :mod:`gaussmix.theory.numerics.quadrature`);
        ignored by the closed-form losses (``loss.exact_channel``).

    Returns
    -------
    ChannelMoments

    Raises
    ------
    ValueError
        For a rule that integrates only cluster 0's competitor-symmetric expectations
        (``needs_symmetry``, :class:`~gaussmix.theory.problem.symmetry.ExchangeablePanels`): the
        solver uses it with the relabelling symmetry; here it would be silently wrong.
    """
    if rule is not None and rule.needs_symmetry:
        raise ValueError(
            f"quadrature {type(rule).__name__} integrates only cluster 0 of exchangeable "
            "clusters (the solver's symmetry=True); pass a general rule"
        )
    return channel_evaluation(loss, y, M, b, Q, V, rule)[0]


def channel_evaluation(
    loss: Loss,
    y: np.ndarray,
    M: np.ndarray,
    b: np.ndarray,
    Q: np.ndarray,
    V: np.ndarray,
    rule: QuadratureRule | None = None,
    warm: ProxWarmStart | None = None,
) -> tuple[ChannelMoments, ProxWarmStart | None]:
    """:func:`channel_moments` with an explicit warm start of the proximal solves.

    Parameters
    ----------
    loss, y, M, b, Q, V, rule
        As in :func:`channel_moments`.
    warm : ProxWarmStart, optional
        The proximal points returned by the previous evaluation of the same iteration
        (ignored unless it was made with the same rule and shapes).

    Returns
    -------
    moments : ChannelMoments
    warm : ProxWarmStart or None
        The proximal points of this evaluation, to pass to the next one (None for the
        closed-form channels, which solve no proximal problem numerically).
    """
    if loss.exact_channel:
        return _exact_moments(loss)(y, M + b, Q, V), None
    if not V.all():  # (no zero entry of V: no zero metric, without flat_metrics' cost)
        flat = flat_metrics(V)
        if flat.any():  # the lasso's zero estimator: the identity prox, no proximal solve
            return _with_identity_prox(loss, y, M + b, Q, V, rule, flat, warm)
    if rule is None:
        raise ValueError("a quadrature rule is needed for this loss")
    return _quadrature_moments(loss, y, M + b, Q, V, rule, warm)


def flat_metrics(V: np.ndarray) -> np.ndarray:
    """Which clusters' metric ``V_c`` (K, L, L) is exactly zero: the lasso's zero estimator
    (``W* = 0``, every weight's ``P(|B| > t)`` underflowed), where the prox is the identity."""
    return ~np.any(V.reshape(V.shape[0], -1) != 0.0, axis=1)


def identity_prox_moments(
    loss: Loss, y: np.ndarray, m: np.ndarray, Q: np.ndarray, rule: QuadratureRule | None
) -> ChannelMoments:
    """The channel moments at ``V_c = 0`` (the lasso's zero estimator).

    The limit ``V -> 0`` of the prox is the identity, ``h_c = omega_c``, so
    ``f_c = -grad loss(y_c, omega_c)``, ``E[(I + H V)^{-1} H] = E[H(omega_c)]`` and the
    Moreau envelope is the loss itself.  With ``Q_c = 0`` as well (the zero estimator's own
    state, ``omega_c = m_c`` the bias) these are evaluations at one point, the expectations
    of the bias-only fit; otherwise over the nodes of ``rule``.

    Parameters
    ----------
    loss : Loss
        A loss with ``grad``, ``hess`` and ``value`` (any of the quadrature losses).
    y : ndarray (K, L_full); m : ndarray (K, L); Q : ndarray (K, L, L)
    rule : QuadratureRule or None
        Needed only where some ``Q_c`` is not zero.

    Returns
    -------
    ChannelMoments
    """
    K, L = m.shape
    if not np.any(Q != 0.0):
        omega, w = m[:, None, :], np.ones(1)
    else:
        if rule is None or rule.needs_symmetry:
            raise ValueError("a general quadrature rule is needed for this loss")
        omega, w = m[:, None, :] + rule.nodes @ sqrtm_psd(Q), np.asarray(rule.weights)
    yb = y[:, None, :]
    f = -loss.grad(yb, omega)
    H = loss.hess(yb, omega)
    if L == 1:
        H = H.reshape(K, -1, 1, 1)
    lval = loss.value(yb, omega)
    Eloss = lval @ w
    return ChannelMoments(
        np.einsum("n,kni->ki", w, f),
        np.einsum("n,kni,knj->kij", w, f, f),
        np.einsum("n,knij->kij", w, 0.5 * (H + np.swapaxes(H, -1, -2))),
        Eloss,
        Eloss.copy(),
    )


def _with_identity_prox(loss, y, m, Q, V, rule, flat, warm):
    """:func:`channel_evaluation` where the clusters ``flat`` have ``V_c = 0``
    (:func:`identity_prox_moments`) and the others the usual proximal solves."""
    mom = identity_prox_moments(loss, y[flat], m[flat], Q[flat], rule)
    if flat.all():
        return mom, None
    rest = ~flat
    if rule is None:
        raise ValueError("a quadrature rule is needed for this loss")
    other, _ = _quadrature_moments(loss, y[rest], m[rest], Q[rest], V[rest], rule, None)
    out = []
    for fl in fields(ChannelMoments):
        a, b = getattr(mom, fl.name), getattr(other, fl.name)
        full = np.empty((flat.size,) + a.shape[1:])
        full[flat], full[rest] = a, b
        out.append(full)
    return ChannelMoments(*out), None


def _exact_moments(loss: Loss):
    """The closed-form moment function of :data:`_EXACT_MOMENTS` for ``loss``."""
    fn = closed_form_of(_EXACT_MOMENTS, loss)
    if fn is not None:
        return fn
    raise TypeError(
        f"loss {type(loss).__name__} declares exact_channel=True but has no closed-form "
        "channel moments"
    )


def _square_moments(y, m, Q, V) -> ChannelMoments:
    """Square loss: ``f = (I + V)^{-1} (y - omega)`` is affine, expectations are exact.

    One output (binary labels) by the compiled scalar form
    (:func:`~gaussmix.theory.numerics.exact_kernels.square_moments_scalar`: these operations
    on ``1 x 1`` blocks, the same bits, a seventh of the time)."""
    L = m.shape[-1]
    if L == 1:
        return ChannelMoments(*square_moments_scalar(y, m, Q, V))
    A = inv(np.eye(L) + V)  # (np.linalg.inv's routine without its checks)
    r = y - m
    Ef = np.einsum("kij,kj->ki", A, r)
    Eff = A @ (r[:, :, None] * r[:, None, :] + Q) @ A
    Edf = A
    Eloss = 0.5 * np.trace(Eff, axis1=1, axis2=2)  # y - h = f
    Eenv = 0.5 * np.einsum("kij,kji->k", np.eye(L) + V, Eff)
    return ChannelMoments(Ef, Eff, Edf, Eloss, Eenv)


def _hinge_moments(y, m, Q, V) -> ChannelMoments:
    """Hinge loss (L = 1): piecewise-linear prox, exact Gaussian partial moments, compiled
    (:func:`~gaussmix.theory.numerics.exact_kernels.hinge_moments`, where the forms are)."""
    return ChannelMoments(*hinge_moments(y, m, Q, V, *HINGE_MIDDLE_RULE))


#: Closed-form channel moments of the losses with ``exact_channel = True``, by loss class.
_EXACT_MOMENTS = {SquareLoss: _square_moments, HingeLoss: _hinge_moments}


class CompiledKernel:
    """A compiled channel kernel of :mod:`gaussmix.theory.numerics.kernels` and its calling
    convention.

    One instance per kernel; :data:`COMPILED_KERNELS` says which loss each serves.  The
    instances are stateless (the warm start travels in :class:`ProxWarmStart`).

    Attributes
    ----------
    reduced : bool
        Whether the kernel serves the loss composed with an orthonormal basis ``P``
        (:class:`~gaussmix.theory.channel.losses.ReducedLoss`) rather than the bare loss.
    compiled_risk : bool
        Whether :meth:`risk` is compiled (else it returns None).
    """

    __slots__ = ()
    reduced: bool = False
    compiled_risk: bool = False

    def run(
        self,
        loss: Loss,
        y: np.ndarray,
        omega: np.ndarray,
        V: np.ndarray,
        h: np.ndarray,
        w: np.ndarray,
        tol: float,
    ) -> tuple[ChannelMoments, int]:
        """Channel moments at the nodes ``omega`` (K, N, L) with weights ``w`` (N,).

        ``h`` (K, N, L), C-contiguous, holds the starting points of the proximal solves and
        is overwritten with the proximal points; ``tol`` is the relative stationarity
        threshold (a node has converged when
        ``max |h - omega + V grad| <= tol (1 + max |omega| + max |h|) (1 + ||V|| ||H||)``,
        :func:`gaussmix.theory.channel.losses.prox_threshold`).  Returns the moments and the
        number of nodes whose solve failed (at least 1 where any did: a kernel may stop at
        the first, the evaluation being lost).
        """
        raise NotImplementedError

    def risk(
        self, loss: Loss, y: np.ndarray, m: np.ndarray, S: np.ndarray, rule: QuadratureRule
    ) -> np.ndarray | None:
        """``sum_n w_n loss(y_c, m_c + S_c xi_n)`` for each cluster (the Gaussian risk of
        :func:`gaussmix.theory.solve.observables.gaussian_risk`, ``S_c`` a symmetric square root
        of the outputs' covariance), or None where the kernel has no compiled risk."""
        return None


class _LogisticKernel(CompiledKernel):
    """:func:`gaussmix.theory.numerics.kernels.logistic_channel`: binary logistic loss, L = 1."""

    __slots__ = ()

    def run(self, loss, y, omega, V, h, w, tol):  # noqa: D102 - see CompiledKernel.run
        K, N, _ = omega.shape
        Ef, Eff, Edf, Eloss, Eenv, failed = _kernels.logistic_channel(
            np.ascontiguousarray(y[:, 0], dtype=float),
            np.ascontiguousarray(omega.reshape(K, N)),
            np.ascontiguousarray(V[:, 0, 0]),
            h.reshape(K, N),
            w,
            float(tol),
            PROX_MAX_ITER,
        )
        mom = ChannelMoments(Ef[:, None], Eff[:, None, None], Edf[:, None, None], Eloss, Eenv)
        return mom, failed


class _CrossEntropyKernel(CompiledKernel):
    """:func:`gaussmix.theory.numerics.kernels.ce_channel` (and its three-class fast path
    :func:`~gaussmix.theory.numerics.kernels.ce3_channel`): softmax cross-entropy on the complement
    of ``(1, ..., 1)``; the clusters of small metric by
    :func:`~gaussmix.theory.numerics.ce_small_metric.ce_channel_small_metric`."""

    __slots__ = ()
    reduced = True
    compiled_risk = True

    def run(self, loss, y, omega, V, h, w, tol):  # noqa: D102 - see CompiledKernel.run
        L = omega.shape[-1]
        Vc = np.ascontiguousarray(0.5 * (V + np.swapaxes(V, -1, -2)))
        ylab = np.argmax(y, axis=-1).astype(np.int64)
        P = loss.P if loss.P.flags.c_contiguous else np.ascontiguousarray(loss.P)
        omega = np.ascontiguousarray(omega)
        # clusters of small metric (which may be singular, or indefinite by rounding)
        # without V^{-1}; the others by the general kernels
        small = _small.small_metric(np.abs(Vc).sum(axis=-1).max(axis=-1), L)
        if not small.any():
            out = self._general(P, ylab, omega, Vc, h, w, tol)
        elif small.all():
            out = self._small(P, ylab, omega, Vc, h, w, tol)
        else:  # each run of consecutive clusters of one kind on views of its rows (the
            # proximal points written in place; a curve's points of small metric are
            # usually one run, those of its largest lambdas or smallest alphas)
            K = ylab.size
            parts = (np.zeros((K, L)), np.zeros((K, L, L)), np.zeros((K, L, L)))
            parts += (np.zeros(K), np.zeros(K))
            edges = [0, *(np.flatnonzero(small[1:] != small[:-1]) + 1).tolist(), K]
            failed = 0
            for lo, hi in zip(edges[:-1], edges[1:]):
                part = self._small if small[lo] else self._general
                got = part(P, ylab[lo:hi], omega[lo:hi], Vc[lo:hi], h[lo:hi], w, tol)
                for a, b in zip(parts, got[:5]):
                    a[lo:hi] = b
                failed += got[5]
                if failed:  # the evaluation is lost (its caller raises): stop here
                    break
            out = (*parts, failed)
        Ef, Eff, Edf, Eloss, Eenv, failed = out
        mom = ChannelMoments(Ef, 0.5 * (Eff + np.swapaxes(Eff, -1, -2)), Edf, Eloss, Eenv)
        return mom, failed

    @staticmethod
    def _small(P, ylab, omega, Vc, h, w, tol):
        """:func:`~gaussmix.theory.numerics.ce_small_metric.ce_channel_small_metric` (or
        ``ce3_channel_small_metric``, its three-class scalar form: the same bits)."""
        if P.shape == (2, 3):
            kernel = _small.ce3_channel_small_metric
        else:
            kernel = _small.ce_channel_small_metric
        return kernel(ylab, P, omega, Vc, h, w, float(tol), PROX_MAX_ITER)

    @staticmethod
    def _general(P, ylab, omega, Vc, h, w, tol):
        """:func:`~gaussmix.theory.numerics.kernels.ce_channel` (or ``ce3_channel``)."""
        Vinv = inverse_metrics(Vc)  # (compiled for L = 2: solve_batch's bits)
        if Vinv is None:
            L = omega.shape[-1]
            Vinv = solve_batch(Vc, np.broadcast_to(np.eye(L), Vc.shape))
        # three classes (two reduced outputs): the scalar fast path of the same kernel
        kernel = _kernels.ce3_channel if P.shape == (2, 3) else _kernels.ce_channel
        return kernel(
            ylab, P, omega, Vc, np.ascontiguousarray(Vinv), h, w, float(tol), PROX_MAX_ITER
        )

    def risk(self, loss, y, m, S, rule):  # noqa: D102 - see CompiledKernel.risk
        # three classes (two reduced outputs): the scalar form, the same bits
        kernel = ce3_risk if loss.P.shape == (2, 3) else ce_risk
        return kernel(
            np.argmax(y, axis=-1).astype(np.int64),
            np.ascontiguousarray(loss.P),
            np.ascontiguousarray(m, dtype=float),
            np.ascontiguousarray(S, dtype=float),
            np.ascontiguousarray(rule.nodes),
            np.ascontiguousarray(rule.weights),
        )


#: the compiled kernel of the binary logistic loss
LOGISTIC_KERNEL: CompiledKernel = _LogisticKernel()
#: the compiled kernel of the (reduced) softmax cross-entropy
CROSS_ENTROPY_KERNEL: CompiledKernel = _CrossEntropyKernel()

#: The one table of compiled kernels, by loss class (subclasses inherit their parent's
#: kernel).  A kernel with ``reduced=True`` serves ``ReducedLoss(loss)``, not the bare loss.
#: Losses without an entry take the numpy reference path.
COMPILED_KERNELS: dict[type[Loss], CompiledKernel] = {
    LogisticLoss: LOGISTIC_KERNEL,
    CrossEntropyLoss: CROSS_ENTROPY_KERNEL,
}


def compiled_kernel(loss: Loss) -> CompiledKernel | None:
    """The compiled kernel of :data:`COMPILED_KERNELS` that serves ``loss``, if any.

    Parameters
    ----------
    loss : Loss
        The loss on effective outputs (possibly a
        :class:`~gaussmix.theory.channel.losses.ReducedLoss`).

    Returns
    -------
    CompiledKernel or None
    """
    reduced = isinstance(loss, ReducedLoss)
    target = loss.base if reduced else loss
    kernel = by_class(COMPILED_KERNELS, target)
    return kernel if kernel is not None and kernel.reduced == reduced else None


def compiled_moments(
    kernel: CompiledKernel,
    loss: Loss,
    y: np.ndarray,
    omega: np.ndarray,
    V: np.ndarray,
    w: np.ndarray,
    h0: np.ndarray | None,
) -> tuple[ChannelMoments, np.ndarray]:
    """Channel moments from a compiled kernel (same contract as the numpy path) and the
    proximal points.

    Parameters
    ----------
    kernel : CompiledKernel
        The kernel serving ``loss`` (:func:`compiled_kernel`).
    loss : Loss
    y : ndarray (K, L_full)
    omega : ndarray (K, N, L)
        Quadrature nodes of every cluster.
    V : ndarray (K, L, L)
    w : ndarray (N,)
        Quadrature weights.
    h0 : ndarray (K, N, L) or None
        Warm start (None: start at ``omega``); not modified.

    Returns
    -------
    ChannelMoments, ndarray (K, N, L)

    Notes
    -----
    The proximal solve of a node converges to
    ``max |h - omega + V grad| <= PROX_TOL (1 + max |omega| + max |h|) (1 + ||V|| ||H||)``
    (:data:`~gaussmix.theory.numerics.tolerances.PROX_TOL`,
    :func:`gaussmix.theory.channel.losses.prox_threshold`).
    """
    h = np.array(omega if h0 is None else h0, dtype=float, order="C")  # a copy
    return _compiled(kernel, loss, y, omega, V, w, h), h


def _compiled(
    kernel: CompiledKernel,
    loss: Loss,
    y: np.ndarray,
    omega: np.ndarray,
    V: np.ndarray,
    w: np.ndarray,
    h: np.ndarray,
    fill: Callable[[slice], None] | None = None,
) -> ChannelMoments:
    """:func:`compiled_moments` with the proximal points' array ``h`` (K, N, L),
    C-contiguous, written in place: ``kernel.run`` on the clusters in parts
    (:func:`in_parts`), each part's ``omega[rows]`` and ``h[rows]`` first written by
    ``fill(rows)`` in its thread, if given."""
    w = np.ascontiguousarray(w, dtype=float)

    def run(rows: slice) -> tuple[ChannelMoments, int]:
        if fill is not None:
            fill(rows)
        return kernel.run(loss, y[rows], omega[rows], V[rows], h[rows], w, PROX_TOL)

    done = in_parts(h.shape[0], h.shape[1], run)
    if len(done) == 1:  # one part: its moments as they are (a concatenation copies them)
        mom = done[0][0]
    else:
        parts = [m for m, _ in done]
        mom = ChannelMoments(
            *(np.concatenate([getattr(m, f.name) for m in parts]) for f in fields(ChannelMoments))
        )
    failed = sum(n for _, n in done)
    if failed:
        raise FloatingPointError(
            f"{loss.name} proximal map did not converge at {failed} quadrature node(s) or more"
        )
    return mom


#: Clusters times nodes from which a compiled kernel's clusters are split between threads
#: (:func:`in_parts`; below it a thread costs more than it saves: a kernel takes about
#: 0.1 to 0.3 microseconds a node, a thread about 0.1 ms to start).  Measured on the stacked
#: K = 3 cross-entropy curve of 40 points (40 rows of 2052 or 8536 nodes): BENCHMARKS.md
#: "The explorer's redraw".
KERNEL_THREADS_MIN_WORK = 50_000


def kernel_threads(n_rows: int, n_nodes: int, min_work: int | None = None) -> int:
    """The threads a compiled kernel runs ``n_rows`` clusters of ``n_nodes`` nodes on: one
    for each core the process may use, at most numba's thread count (``NUMBA_NUM_THREADS``,
    which joblib's workers set to their share of the cores, so that a sweep's processes do
    not oversubscribe them), one per cluster and one per ``min_work`` (by default
    :data:`KERNEL_THREADS_MIN_WORK`) nodes of work."""
    if min_work is None:
        min_work = KERNEL_THREADS_MIN_WORK
    if n_rows * n_nodes < 2 * min_work:  # one thread's work (the common case: no system call)
        return 1
    cap = min(process_cores(), numba_config.NUMBA_NUM_THREADS)
    return max(1, min(cap, n_rows, n_rows * n_nodes // min_work))


class _Parts:
    """The process's pool of threads for :func:`in_parts`, made once (a pool a call cost
    0.1 ms, and the normaliser rule splits each of the thousands of evaluations of a curve),
    grown to the most threads asked for, forgotten in a forked child (whose copy has no
    threads); a part that splits again runs its parts on its own thread (a worker waiting
    for the pool's other workers could wait for itself)."""

    lock = threading.Lock()
    pool: ThreadPoolExecutor | None = None
    size = 0
    local = threading.local()

    @classmethod
    def submit(cls, n: int, run: Callable[[slice], T], parts: list[slice]) -> list[Future[T]]:
        """``run`` on each of ``parts`` on the pool, grown to ``n`` threads if smaller (under
        the lock: a pool being replaced takes no new work)."""
        with cls.lock:
            if cls.pool is None or cls.size < n:
                if cls.pool is not None:
                    cls.pool.shutdown(wait=False)  # (its queued parts still run)
                cls.pool = ThreadPoolExecutor(
                    max_workers=n, thread_name_prefix="gaussmix-parts", initializer=cls.mark
                )
                cls.size = n
            # each part in a copy of the caller's context: numpy's error state (the
            # iteration's np.errstate) holds in the workers as in the calling thread
            return [cls.pool.submit(contextvars.copy_context().run, run, s) for s in parts]

    @classmethod
    def mark(cls) -> None:
        cls.local.worker = True

    @classmethod
    def in_worker(cls) -> bool:
        return getattr(cls.local, "worker", False)

    @classmethod
    def forget(cls) -> None:
        cls.lock = threading.Lock()
        cls.pool, cls.size = None, 0


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_Parts.forget)


def in_parts(
    n_rows: int, n_nodes: int, run: Callable[[slice], T], min_work: int | None = None
) -> list[T]:
    """``run(rows)`` on consecutive parts of ``n_rows`` clusters (of ``n_nodes`` quadrature
    nodes each) that together cover them, in order: the parts on
    :func:`kernel_threads` threads (``min_work`` its work per thread; for compiled kernels,
    which release the GIL: the first part on this thread, the others on the process's
    persistent pool), or ``[run(slice(0, n_rows))]`` on this one.  A kernel that sums each
    cluster over its own nodes gives the same bits in parts as in one call."""
    n = 1 if _Parts.in_worker() else kernel_threads(n_rows, n_nodes, min_work)
    if n == 1:
        return [run(slice(0, n_rows))]
    edges = np.linspace(0, n_rows, n + 1).round().astype(int)
    parts = [slice(lo, hi) for lo, hi in zip(edges[:-1], edges[1:])]
    others = _Parts.submit(n - 1, run, parts[1:])
    try:
        first = run(parts[0])
    finally:  # (no part still running once this returns or raises)
        wait(others)
    return [first] + [f.result() for f in others]


def _quadrature_moments(
    loss: Loss,
    y: np.ndarray,
    m: np.ndarray,
    Q: np.ndarray,
    V: np.ndarray,
    rule: QuadratureRule,
    warm: ProxWarmStart | None = None,
    compiled: bool = True,
) -> tuple[ChannelMoments, ProxWarmStart]:
    """Channel moments by quadrature (Theorem 1, eq. (8), hat updates).

    ``compiled=True`` uses the kernel of :data:`COMPILED_KERNELS` where the loss has one
    (logistic, cross-entropy); ``compiled=False`` is the numpy reference path (batched
    Newton prox, then the moments), which the kernels are tested against.  ``warm`` (the
    proximal points of the previous evaluation with the same rule) starts the proximal
    solves; the proximal points of this evaluation are returned for the next one.
    """
    xi = rule.nodes
    w = rule.weights
    S = sqrtm_psd(Q)
    key = (rule, (m.shape[0], xi.shape[0], m.shape[-1]))
    h0 = None
    if warm is not None and warm.key == key:
        h0 = warm.h
    kernel = compiled_kernel(loss) if compiled else None
    if kernel is not None:  # the nodes and the starts of each part made in its thread
        omega, h = np.empty(key[1]), np.empty(key[1])

        def fill(rows: slice) -> None:
            # S symmetric: omega_kn = m_k + S_k xi_n (the sum compiled: np.add's bits)
            shifted_nodes(m[rows], xi @ S[rows], omega[rows])
            if h0 is None:
                h[rows] = omega[rows]
                return
            # predictor: keep f = V^{-1}(h - omega) of the previous evaluation, which varies
            # slowly along the iteration, and map it through the new omega and V (compiled
            # for L <= 2: solve_batch's bits in one pass)
            f_old = metric_coordinates(warm.V[rows], h0[rows], warm.omega[rows])
            if f_old is not None:
                np.add(omega[rows], f_old @ V[rows], out=h[rows])  # V symmetric
                return
            # one factorisation a cluster, not one a node: f V = d (V_old^{-1} V), V_old
            # symmetric (a third of an L = 9 evaluation's time at 2**11 nodes otherwise)
            d = h0[rows] - warm.omega[rows]
            np.add(omega[rows], d @ np.linalg.solve(warm.V[rows], V[rows]), out=h[rows])

        mom = _compiled(kernel, loss, y, omega, V, w, h, fill)
        return mom, ProxWarmStart(key, h, omega, V)
    omega = m[:, None, :] + xi @ S  # S symmetric: omega_kn = m_k + S_k xi_n
    h = loss.prox(y, omega, V, h0=h0)
    nxt = ProxWarmStart(key, h, omega, V)
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
        df = solve_batch(np.eye(L) + H @ Vb, H)
        df = 0.5 * (df + np.swapaxes(df, -1, -2))
    Ef = np.einsum("n,kni->ki", w, f)
    Eff = np.einsum("n,kni,knj->kij", w, f, f)
    Edf = np.einsum("n,knij->kij", w, df)
    lval = loss.value(yb, h)
    Eloss = lval @ w
    quad = np.einsum("kni,kij,knj->kn", f, V, f)
    Eenv = (0.5 * quad + lval) @ w
    return ChannelMoments(Ef, Eff, Edf, Eloss, Eenv), nxt
