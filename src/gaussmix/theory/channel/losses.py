"""Losses: value, gradient, Hessian and the batched proximal map under an L x L metric.

Every loss acts on outputs ``h`` of shape ``(..., L)`` and a label ``y`` of shape ``(L,)``
(broadcast as ``(..., L)``).  The proximal map solved here is the one of Theorem 1,

    h = argmin_h 1/2 (h - omega)^T V^{-1} (h - omega) + loss(y, h),

batched over clusters and quadrature nodes: ``omega`` has shape ``(K, N, L)``, ``V``
``(K, L, L)`` and ``y`` ``(K, L)``.  Smooth losses use a damped Newton method; square and
hinge losses have closed forms.  Nothing here keeps solver state.

A :class:`ReducedLoss` composes a loss with an orthonormal map ``u -> P^T u`` (and a fixed
offset); it removes the shift-invariant direction of the cross-entropy (docs/design.md
pitfall 2), and the direction of ``(1, ..., 1)`` of the square loss with the ridge on labels
of one sum (one-hot), which the minimiser never uses (:func:`gaussmix.theory.problem.problem.
effective_loss`).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from gaussmix.core.exceptions import ArgumentError
from gaussmix.core.registry import Registry, by_class

from ..model.penalties import Penalty, Ridge
from ..numerics.tolerances import PROX_TOL

__all__ = [
    "Loss",
    "SquareLoss",
    "LogisticLoss",
    "CrossEntropyLoss",
    "HingeLoss",
    "ReducedLoss",
    "closed_form_of",
    "get_loss",
    "LOSSES",
    "BINARY_LOSSES",
    "losses_accepting",
]


def solve_batch(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Solve ``a x = b`` for stacks of small systems, ``a`` (..., L, L), ``b`` (..., L) or
    (..., L, M).  Explicit formulas for L <= 2 (much faster than batched LAPACK calls)."""
    L = a.shape[-1]
    vec = b.ndim == a.ndim - 1
    if L == 1:
        return b / a[..., 0] if vec else b / a
    if L == 2:
        a00, a01, a10, a11 = a[..., 0, 0], a[..., 0, 1], a[..., 1, 0], a[..., 1, 1]
        det = a00 * a11 - a01 * a10
        if vec:  # written in place: the same operations as stacking the two components
            out = np.empty(np.broadcast_shapes(a.shape[:-1], b.shape))
            np.subtract(a11 * b[..., 0], a01 * b[..., 1], out=out[..., 0])
            np.subtract(a00 * b[..., 1], a10 * b[..., 0], out=out[..., 1])
            out /= det[..., None]
            return out
        x0 = (a11[..., None] * b[..., 0, :] - a01[..., None] * b[..., 1, :]) / det[..., None]
        x1 = (a00[..., None] * b[..., 1, :] - a10[..., None] * b[..., 0, :]) / det[..., None]
        return np.stack([x0, x1], axis=-2)
    if vec:
        return np.linalg.solve(a, b[..., None])[..., 0]
    return np.linalg.solve(a, b)


def prox_threshold(
    tol: float, omega: np.ndarray, h: np.ndarray, curvature: np.ndarray
) -> np.ndarray:
    """The stationarity threshold of the proximal solve of each node,
    ``tol (1 + max_i |omega_i| + max_i |h_i|) (1 + curvature)`` over the last axis.

    ``curvature`` is ``||V H(h)||`` or a bound of it (the compiled kernels use
    ``||V|| ||H||``): one ulp of ``h`` moves the residual ``h - omega + V grad(h)`` by
    ``(I + V H)`` ulps, so its rounding floor is a few ulps of ``|h|`` and ``|omega|`` times
    ``1 + ||V H||``, which this threshold stays above by ``tol / eps``.  The error of the
    proximal point is then ``(I + V H)^{-1}`` times the residual, a relative ``tol`` of
    ``|h|``, and that of ``f = -grad(h)`` is ``H`` times it.  The threshold must not grow
    with ``V`` alone: the prior turns an error ``|residual| / |V|`` of ``f`` into an error
    ``~ |residual|`` of the order parameters, so a threshold ``~ |V|`` grows without bound
    as ``lam -> 0`` (issue 17: at lam = 1e-14 it accepted proximal points hundreds of units
    off, the weights collapsed and the result was a converged test error of 0.5).

    Parameters
    ----------
    tol : float
        Relative tolerance (:data:`~gaussmix.theory.numerics.tolerances.PROX_TOL`).
    omega, h : ndarray (..., L)
        Nodes and current proximal points.
    curvature : ndarray (...)
        ``||V H(h)||`` at each node.

    Returns
    -------
    ndarray (...)
    """
    size = 1.0 + np.abs(omega).max(axis=-1) + np.abs(h).max(axis=-1)
    return tol * size * (1.0 + curvature)


def _special():
    """``scipy.special``, imported on first use: the loss declarations (names, constraints)
    are read by the command line's ``--help``, which should not pay for scipy."""
    import scipy.special

    return scipy.special


#: every loss, by the name users type (``loss='logistic'``, ``--loss logistic``)
LOSSES: Registry[type[Loss]] = Registry("loss")


class Loss:
    """Base class of a convex loss ``loss(y, h)``: the one declaration of everything the
    package needs to know about it.

    Subclasses implement :meth:`value`, :meth:`grad`, :meth:`hess` (smooth losses inherit the
    Newton proximal map, others override :meth:`prox`), declare their constraints in the
    class attributes below and their finite-size solver in :meth:`fit_erm`, and are registered
    in :data:`LOSSES` (``@LOSSES.register``).  The channel's compiled kernels and closed forms
    are selected from the class (:mod:`gaussmix.theory.channel.channel`).
    """

    name: str = "loss"
    #: the labels it accepts: ``'any'``, ``'binary'`` (scalars +-1) or ``'onehot'``
    labels: ClassVar[str] = "any"
    #: invariant under ``h -> h + t 1``: solved on the complement of ``1`` (docs/design.md
    #: pitfall 2) through :class:`ReducedLoss`
    shift_invariant: ClassVar[bool] = False
    #: ``lam = 0`` (without an l1 part) has a unique minimiser for ``alpha`` above this value;
    #: None: never
    zero_lam_min_alpha: ClassVar[float | None] = None
    #: ``lam = 0`` (ridge) has a minimiser exactly when the training data are not linearly
    #: separable, i.e. above the mixture's separability threshold ``alpha*``
    #: (:mod:`gaussmix.theory.limits.margin`; paper, Appendix C.1.1, eq. (198)): checked by
    #: :func:`gaussmix.theory.api.api.make_problem`, which knows the mixture
    zero_lam_above_separability: ClassVar[bool] = False
    #: penalties its exact finite-size solver handles (None: every registered penalty)
    simulation_penalties: ClassVar[tuple[type[Penalty], ...] | None] = None
    #: whether the loss is twice differentiable (Newton prox, Stein-free Vhat)
    smooth: bool = True
    #: whether ``h -> prox`` is affine in omega (closed-form Gaussian expectations)
    affine_prox: bool = False
    #: whether the channel's Gaussian expectations are exact closed forms (no quadrature
    #: rule is needed: square and hinge losses)
    exact_channel: bool = False
    #: invariant under a common permutation of the label components and the outputs,
    #: ``loss(Pi y, Pi h) = loss(y, h)`` (one-hot labels): exchangeable clusters then have
    #: equivalent channels (:mod:`gaussmix.theory.problem.symmetry`)
    label_equivariant: ClassVar[bool] = False
    #: a function of ``||y - h||`` alone: with labels of one sum and a penalty invariant
    #: under rotations of the outputs (ridge), the minimiser has ``W 1 = 0`` and ``1^T b``
    #: that sum, so it is solved on the complement of ``1``, where it is the same loss of
    #: the projected labels ``P y`` (:class:`ReducedLoss` with an offset)
    distance_loss: ClassVar[bool] = False
    #: the class attributes above: what a :class:`ReducedLoss` shares with its base loss
    DECLARATIONS: ClassVar[tuple[str, ...]] = (
        "name",
        "labels",
        "shift_invariant",
        "zero_lam_min_alpha",
        "zero_lam_above_separability",
        "simulation_penalties",
        "smooth",
        "affine_prox",
        "exact_channel",
        "label_equivariant",
        "distance_loss",
    )

    def value(self, y: np.ndarray, h: np.ndarray) -> np.ndarray:
        """Loss value, shape ``h.shape[:-1]``."""
        raise NotImplementedError

    def grad(self, y: np.ndarray, h: np.ndarray) -> np.ndarray:
        """Gradient with respect to ``h``, shape ``h.shape``."""
        raise NotImplementedError

    def hess(self, y: np.ndarray, h: np.ndarray) -> np.ndarray:
        """Hessian with respect to ``h``, shape ``h.shape + (L,)``."""
        raise NotImplementedError

    # ------------------------------------------------------------------ constraints
    def check_labels(self, labels: Any) -> None:
        """Raise a ValueError unless ``labels`` (a LabelMap) are of the kind this loss needs."""
        if self.labels == "binary" and not labels.is_binary:
            raise ArgumentError(
                "loss",
                f"{self.name!r} needs binary labels (+1/-1, labels='binary', 2 clusters or "
                f"a custom +-1 map); got {labels.kind} labels of dimension {labels.dim} — use "
                "loss='cross-entropy' for one-hot multi-class labels",
            )
        if self.labels == "onehot" and not labels.is_onehot:
            raise ArgumentError(
                "loss",
                f"{self.name!r} needs one-hot labels; got {labels.kind} labels of "
                f"dimension {labels.dim} — use loss='logistic' for binary +-1 labels",
            )

    def check_simulation_penalty(self, penalty: Penalty) -> None:
        """Raise a ValueError if the exact finite-size solver does not handle ``penalty``."""
        allowed = self.simulation_penalties
        if allowed is not None and not isinstance(penalty, allowed):
            names = ", ".join(repr(p.name) for p in allowed)
            raise ArgumentError(
                "penalty",
                f"{penalty.name!r} with loss={self.name!r} has no exact solver here; "
                f"use penalty={names}",
            )

    def fit_erm(
        self,
        Xs: np.ndarray,
        Y: np.ndarray,
        lam: float,
        penalty: Penalty,
        *,
        tol: float | None = None,
        max_iter: int | None = None,
        random_state: int | None = None,
    ) -> tuple[np.ndarray, np.ndarray, dict]:
        """Minimise eq. (2) exactly on features ``Xs = X / sqrt(d)`` and labels ``Y``
        (n, L); returns ``(W, b, info)`` (:mod:`gaussmix.theory.channel.erm`)."""
        raise NotImplementedError(f"loss={self.name!r} has no finite-size solver")

    def sweep_erm_tol(self, penalty: Penalty) -> float | None:
        """The tolerance of :meth:`fit_erm` in sweeps and figures (None: its default)."""
        return None

    # ------------------------------------------------------------------ proximal map
    def prox(
        self,
        y: np.ndarray,
        omega: np.ndarray,
        V: np.ndarray,
        h0: np.ndarray | None = None,
        *,
        tol: float = PROX_TOL,
        max_iter: int = 100,
    ) -> np.ndarray:
        """Proximal map ``argmin_h 1/2 (h-omega)^T V^{-1} (h-omega) + loss(y, h)``.

        Parameters
        ----------
        y : ndarray (K, L)
            Label of each cluster.
        omega : ndarray (K, N, L)
            Points at which the prox is evaluated.
        V : ndarray (K, L, L)
            Symmetric positive-definite metric of each cluster.
        h0 : ndarray (K, N, L), optional
            Warm start.

        Returns
        -------
        ndarray (K, N, L)

        Notes
        -----
        Damped Newton on the scaled stationarity condition ``g(h) = h - omega + V grad(h)``
        with Jacobian ``I + V H(h)``; a step is halved where it does not decrease the
        objective.  Converged when ``max |g| <= tol (1 + max |omega| + max |h|)
        (1 + ||V H||)`` at every node (:func:`prox_threshold`).
        """
        yb = y[:, None, :]
        Vb = V[:, None, :, :]
        h = omega.copy() if h0 is None else h0.copy()
        L = omega.shape[-1]
        eye = np.eye(L)

        def residual(hh: np.ndarray) -> np.ndarray:
            return hh - omega + np.einsum("...ij,...j->...i", Vb, self.grad(yb, hh))

        g = residual(h)
        for _ in range(max_iter):
            ng = np.abs(g).max(axis=-1)
            VH = Vb @ self.hess(yb, h)
            scale = prox_threshold(tol, omega, h, np.abs(VH).sum(axis=-1).max(axis=-1))
            if np.all(ng <= scale):
                return h
            step = -solve_batch(eye + VH, g)
            # Newton with backtracking on the residual norm: for a strictly convex smooth
            # objective the Newton direction decreases |g| for small enough steps.
            t = 1.0
            h_new = h + step
            g_new = residual(h_new)
            bad = np.abs(g_new).max(axis=-1) > (1.0 - 1e-4 * t) * ng
            while np.any(bad) and t > 1e-6:
                t *= 0.5
                h_new = np.where(bad[..., None], h + t * step, h_new)
                g_new = np.where(bad[..., None], residual(h_new), g_new)
                bad = bad & (np.abs(g_new).max(axis=-1) > (1.0 - 1e-4 * t) * ng)
            h, g = h_new, g_new
        if not np.all(np.isfinite(g)) or np.any(np.abs(g).max(axis=-1) > 1e3 * scale):
            raise FloatingPointError(
                f"{self.name} proximal map did not converge (max residual {np.abs(g).max():.3g})"
            )
        return h

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


@LOSSES.register
class SquareLoss(Loss):
    """``loss(y, h) = ||y - h||^2 / 2`` (any label dimension)."""

    name = "square"
    affine_prox = True
    exact_channel = True
    zero_lam_min_alpha = 1.0
    distance_loss = True

    def fit_erm(self, Xs, Y, lam, penalty, **kw):
        from .erm import fit_square

        return fit_square(self, Xs, Y, lam, penalty, **kw)

    def value(self, y: np.ndarray, h: np.ndarray) -> np.ndarray:
        return 0.5 * np.sum((y - h) ** 2, axis=-1)

    def grad(self, y: np.ndarray, h: np.ndarray) -> np.ndarray:
        return h - y

    def hess(self, y: np.ndarray, h: np.ndarray) -> np.ndarray:
        L = h.shape[-1]
        return np.broadcast_to(np.eye(L), h.shape + (L,)).copy()

    def prox(self, y, omega, V, h0=None, **kw):  # noqa: D102 - closed form
        # h = (I + V)^{-1} (omega + V y)
        L = omega.shape[-1]
        A = np.eye(L) + V
        rhs = omega + np.einsum("kij,kj->ki", V, y)[:, None, :]
        return solve_batch(A[:, None], rhs)


@LOSSES.register
class LogisticLoss(Loss):
    """Binary logistic loss ``log(1 + exp(-y h))``, ``y = +-1``, ``L = 1``."""

    name = "logistic"
    labels = "binary"
    zero_lam_above_separability = True

    def fit_erm(self, Xs, Y, lam, penalty, **kw):
        from .erm import fit_logistic

        return fit_logistic(self, Xs, Y, lam, penalty, **kw)

    def sweep_erm_tol(self, penalty):
        from .erm import saga_sweep_tol

        return saga_sweep_tol(penalty)

    def value(self, y, h):
        return -_special().log_expit(y * h)[..., 0]

    def grad(self, y, h):
        return -y * _special().expit(-y * h)

    def hess(self, y, h):
        s = _special().expit(y * h)
        return (s * (1.0 - s))[..., None]

    def prox(self, y, omega, V, h0=None, *, tol=PROX_TOL, max_iter=100):
        # Scalar safeguarded Newton on g(h) = h - omega - V y sigmoid(-y h) = 0.  The root lies
        # between omega and omega + V y, where g changes sign; g' = 1 + V s (1-s) >= 1.
        v = V[:, None, :, 0]
        yb = y[:, None, :]
        lo = np.minimum(omega, omega + v * yb)
        hi = np.maximum(omega, omega + v * yb)
        expit = _special().expit
        h = np.clip(omega if h0 is None else h0, lo, hi)
        g_prev = np.full_like(h, np.inf)
        for _ in range(max_iter):
            s = expit(-yb * h)
            g = h - omega - v * yb * s
            ag = np.abs(g)
            scale = prox_threshold(tol, omega, h, (v * s * (1.0 - s))[..., 0])[..., None]
            if np.all(ag <= scale):
                return h
            lo = np.where(g < 0, h, lo)
            hi = np.where(g > 0, h, hi)
            h_new = h - g / (1.0 + v * s * (1.0 - s))
            # bisect where Newton leaves the bracket or stalls (|g| not halved); nodes that
            # have converged stay where they are
            done = ag <= scale
            bisect = ~done & ((h_new <= lo) | (h_new >= hi) | (ag > 0.5 * g_prev))
            h = np.where(done, h, np.where(bisect, 0.5 * (lo + hi), h_new))
            g_prev = np.where(bisect, np.inf, ag)
        raise FloatingPointError("logistic proximal map did not converge")


@LOSSES.register
class CrossEntropyLoss(Loss):
    """Softmax cross-entropy ``-y.h + logsumexp(h)`` with one-hot ``y`` (L >= 2).

    Shift-invariant along ``(1, ..., 1)``: use it through :class:`ReducedLoss`.
    """

    name = "cross-entropy"
    labels = "onehot"
    shift_invariant = True
    zero_lam_above_separability = True
    label_equivariant = True

    def fit_erm(self, Xs, Y, lam, penalty, **kw):
        from .erm import fit_cross_entropy

        return fit_cross_entropy(self, Xs, Y, lam, penalty, **kw)

    def two_class_binary(self) -> Loss:
        """The binary loss that two-class cross-entropy is equivalent to: logistic on
        ``w = W_1 - W_2`` (with the penalty of
        :meth:`~gaussmix.theory.model.penalties.Penalty.two_class_binary`)."""
        return LogisticLoss()

    def sweep_erm_tol(self, penalty):
        from .erm import saga_sweep_tol

        return saga_sweep_tol(penalty)

    def value(self, y, h):
        return _special().logsumexp(h, axis=-1) - np.sum(y * h, axis=-1)

    def grad(self, y, h):
        # p - y with the true class's component -(1 - p_y) written as minus the sum of the
        # other probabilities: accurate relative to its size where p_y -> 1 (not to 1)
        other = _special().softmax(h, axis=-1) * (1.0 - y)
        return other - y * other.sum(axis=-1, keepdims=True)

    def hess(self, y, h):
        p = _special().softmax(h, axis=-1)
        return p[..., :, None] * (np.eye(h.shape[-1]) - p[..., None, :])


@LOSSES.register
class HingeLoss(Loss):
    """Hinge loss ``max(0, 1 - y h)``, ``y = +-1``, ``L = 1``.

    Non-smooth: the proximal map and the Gaussian expectations of the channel are
    piecewise closed forms; ``hess`` is zero almost everywhere.
    """

    name = "hinge"
    labels = "binary"
    smooth = False
    exact_channel = True
    simulation_penalties = (Ridge,)

    def fit_erm(self, Xs, Y, lam, penalty, **kw):
        from .erm import fit_hinge

        return fit_hinge(self, Xs, Y, lam, penalty, **kw)

    def value(self, y, h):
        return np.maximum(0.0, 1.0 - y * h)[..., 0]

    def grad(self, y, h):
        # a subgradient: -y where 1 - y h > 0 (the kink counts as active)
        return np.where(y * h < 1.0, -y, 0.0)

    def hess(self, y, h):
        return np.zeros(h.shape + (1,))

    def kinks(self, y: np.ndarray) -> np.ndarray:
        """The outputs where the loss of label ``y`` (K, 1) is not differentiable,
        ``y h = 1``, i.e. ``h = y`` (K, 1): where a piecewise-linear risk of a constant
        output has its minimum (the zero estimator's bias,
        :func:`~gaussmix.theory.solve.bias.flat_bias`)."""
        return np.asarray(y, dtype=float).copy()

    def prox(self, y, omega, V, h0=None, **kw):
        v = V[:, None, :, 0]
        yb = y[:, None, :]
        z = yb * omega
        # z >= 1: h = omega;  1 - v < z < 1: h = y;  z <= 1 - v: h = omega + v y
        return np.where(z >= 1.0, omega, np.where(z > 1.0 - v, yb, omega + v * yb))


class ReducedLoss(Loss):
    """The loss ``u -> base(y, P^T u + offset)`` on a subspace with orthonormal basis ``P``
    (L', L).

    Used to remove exact invariances: the cross-entropy's shift along ``(1, ..., 1)`` (``P``
    spans the complement of ``1``, no offset), and the square loss's direction ``1`` with
    the ridge and labels of one sum ``s`` (``offset = s 1 / L``, the full outputs' component
    along ``1`` at the minimiser: :attr:`Loss.distance_loss`).  Labels stay in the full space.

    Parameters
    ----------
    base : Loss
    P : ndarray (L', L)
        Orthonormal rows.
    offset : ndarray (L,), optional
        The full outputs' fixed component off the span of ``P``'s rows (None: zero).  With a
        :attr:`Loss.distance_loss` base and labels ``y`` whose component off that span is
        ``offset``, ``base(y, P^T u + offset) = base_L'(P y, u)``: the base loss of the
        projected labels (:meth:`effective_labels`), which the closed forms use.
    """

    def __init__(self, base: Loss, P: np.ndarray, offset: np.ndarray | None = None) -> None:
        self.base = base
        self.P = np.asarray(P, dtype=float)
        self.offset = None if offset is None else np.asarray(offset, dtype=float)
        for attr in Loss.DECLARATIONS:
            setattr(self, attr, getattr(base, attr))

    def fit_erm(self, Xs, Y, lam, penalty, **kw):
        return self.base.fit_erm(Xs, Y, lam, penalty, **kw)

    def sweep_erm_tol(self, penalty):
        return self.base.sweep_erm_tol(penalty)

    def full(self, u: np.ndarray) -> np.ndarray:
        """The full outputs ``P^T u + offset`` of effective outputs ``u`` (..., L')."""
        h = u @ self.P
        return h if self.offset is None else h + self.offset

    def effective_labels(self, y: np.ndarray) -> np.ndarray:
        """``P y`` of labels ``y`` (..., L): the labels of the base loss on the effective
        outputs, where the loss is a :attr:`Loss.distance_loss` with an offset."""
        return y @ self.P.T

    def value(self, y, u):
        return self.base.value(y, self.full(u))

    def grad(self, y, u):
        return self.base.grad(y, self.full(u)) @ self.P.T

    def hess(self, y, u):
        H = self.base.hess(y, self.full(u))
        return self.P @ H @ self.P.T

    def __repr__(self) -> str:
        return f"ReducedLoss({self.base!r}, dim={self.P.shape[0]})"


def closed_form_of(table: dict, loss: Loss):
    """The closed form of ``table`` (keyed by loss class; called with the labels first) for
    ``loss``, or None.  A :class:`ReducedLoss` of a :attr:`Loss.distance_loss` base with an
    offset takes its base's closed form on the projected labels (the same loss there: see
    :class:`ReducedLoss`); another reduced loss has none."""
    if isinstance(loss, ReducedLoss):
        if not (loss.base.distance_loss and loss.offset is not None):
            return None
        fn = by_class(table, loss.base)
        if fn is None:
            return None

        def reduced(y, *args, _fn=fn, _loss=loss):
            return _fn(_loss.effective_labels(y), *args)

        return reduced
    return by_class(table, loss)


def get_loss(name: str | Loss) -> Loss:
    """A loss by its registered name (:data:`LOSSES`): square, logistic, cross-entropy or
    hinge; a :class:`Loss` instance is returned as is.

    Parameters
    ----------
    name : {'square', 'logistic', 'cross-entropy', 'hinge'} or Loss
        A name of :data:`LOSSES` (``ValueError`` naming the known ones otherwise) or a loss.
    """
    if isinstance(name, Loss):
        return name
    return LOSSES.get(name)()


def losses_accepting(labels: str) -> tuple[str, ...]:
    """The registered losses (:data:`LOSSES`) that train on ``labels``: ``'binary'``
    (scalars +-1) or ``'onehot'``, as each loss declares (``Loss.labels``)."""
    return tuple(c.name for c in LOSSES if c.labels in (labels, "any"))


#: The losses that need binary labels (+-1, two clusters), as the losses declare: the one
#: list, read by the command line (K = 2 by default) and the docs.
BINARY_LOSSES = tuple(c.name for c in LOSSES if c.labels == "binary")
