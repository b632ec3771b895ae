"""The fixed-point map of Theorem 1 and its fixed point.

One application of the map sends the order parameters ``x = (Q_c, M_c, V_c, b)`` to new
ones:

1. channel (loss half, eq. (8), right):  ``Qhat_c = alpha rho_c E[f f^T]``,
   ``Mhat_c = alpha rho_c E[f]``, ``Vhat_c = alpha rho_c E[(I + H V_c)^{-1} H]``;
2. bias: one Newton step on the stationarity condition of the unpenalised bias,
   ``sum_c rho_c E[f_c] = 0`` (gradient form, docs/design.md pitfall 1), i.e.
   ``b <- b + (sum_c Vhat_c)^{-1} sum_c Mhat_c``;
3. prior (eq. (8), left / Corollary 3): ``(Q_c, M_c, V_c)`` from the hats.

State is explicit: the map of one problem and one rule is a :class:`FixedPointMap`, a
frozen value; what one evaluation hands to the next (the last channel evaluation, the
prior's, the warm start of the proximal solves) is a :class:`MapMemory` that the iteration
carries in its state; the fixed point of a result is its :class:`FixedPointState`.  This module
also holds the starting point of an iteration (:func:`start_state`) and the test of a
degenerate bias condition (:func:`bias_condition_step`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, NamedTuple

import numpy as np

from gaussmix.core.results import Result

from ..channel.channel import (
    ChannelMoments,
    ProxWarmStart,
    channel_evaluation,
    flat_metrics,
    identity_prox_moments,
)
from ..channel.losses import solve_batch
from ..numerics.quadrature import QuadratureRule
from ..numerics.tolerances import BIAS_RIDGE, LOG_CHART_MAX_LAM, MEAN_STEP_MAX
from ..prior.prior import PriorResult, prior_update, single_precision_phase
from ..problem.problem import Problem
from ..problem.symmetry import ClusterSymmetry
from .options import SolverOptions
from .state import is_valid_state, pack_state, unpack_state

__all__ = [
    "HatEvaluation",
    "MapMemory",
    "FixedPointMap",
    "FixedPointState",
    "needs_quadrature",
    "uses_log_chart",
    "map_features",
    "new_map",
    "start_state",
    "bias_condition_step",
    "bias_step",
    "flat_bias",
    "mean_bias_step",
    "initial_hats",
    "initial_hats_points",
]

#: penalty strength of the starting point when ``lam = 0`` (the prior needs ``lam > 0``)
_START_LAM = 1e-3


@dataclass(frozen=True)
class HatEvaluation:
    """One channel evaluation at a state: the channel moments and the hat parameters
    ``Qhat_c = alpha rho_c E[f f^T]``, ``Mhat_c = alpha rho_c E[f]``,
    ``Vhat_c = alpha rho_c E[(I + H V_c)^{-1} H]`` (Theorem 1, eq. (8))."""

    x: np.ndarray
    moments: ChannelMoments
    Qhat: np.ndarray
    Mhat: np.ndarray
    Vhat: np.ndarray

    @classmethod
    def of(cls, x: np.ndarray, moments: ChannelMoments, ar: np.ndarray) -> HatEvaluation:
        """The evaluation at ``x`` (copied) with the channel ``moments`` of clusters of
        weights ``ar = alpha rho_c``."""
        return cls(
            x.copy(),
            moments,
            ar[:, None, None] * moments.Eff,
            ar[:, None] * moments.Ef,
            ar[:, None, None] * moments.Edf,
        )


class MapMemory(NamedTuple):
    """What one evaluation of a :class:`FixedPointMap` hands to the next: the iteration
    state's ``aux`` (:class:`~gaussmix.theory.solve.iteration.IterationState`), returned with
    the image by :meth:`FixedPointMap.evaluate` and given back to it.  A map keeps nothing
    across calls; a caller that wants an evaluation reused passes its memory.

    Attributes
    ----------
    ev : HatEvaluation or None
        The last channel evaluation (at ``ev.x``): :meth:`FixedPointMap.hats` at that state
        returns it (the observables at a converged state then cost no second channel
        evaluation; a map that differs from another only in its prior, or a point's share
        of a stacked evaluation, starts from it).
    prior : PriorResult or None
        The prior evaluation made at ``ev``'s hats, returned again by
        :meth:`FixedPointMap.prior_at` where it holds the details.
    warm : ProxWarmStart or None
        The proximal points of the last evaluation, the warm start of the next.
    """

    ev: HatEvaluation | None = None
    prior: PriorResult | None = None
    warm: ProxWarmStart | None = None


class FixedPointMap:
    """The fixed-point map ``x -> T(x)`` of Theorem 1 for one problem and one quadrature rule.

    Parameters
    ----------
    problem : Problem
    rule : QuadratureRule
        The channel's quadrature rule (unused by closed-form channels).
    symmetry : ClusterSymmetry, optional
        The relabelling symmetry of exchangeable clusters (one cluster's channel for all).
    log_chart : bool
        Mix in :class:`~gaussmix.theory.solve.state.LogChart` coordinates.
    prior_panels : int, optional
        Panels per outer dimension of the prior's own rule where it has one (the lasso with
        two or more effective outputs, :func:`~gaussmix.theory.prior.prior.prior_quadrature_dim`);
        default :func:`~gaussmix.theory.prior.lasso.outer_panels`.
    single : bool
        Evaluate the prior in single precision (the first phase of a large dense fixed
        point, :func:`~gaussmix.theory.solve.refinement.run_fixed_point`; never a returned state).

    Notes
    -----
    A map is a frozen value set by its constructor: no attribute can be written afterwards
    (``AttributeError``); a map with other settings is a new map (:func:`new_map`).  What
    one evaluation reuses from the last (the channel evaluation, the prior's, the warm
    start of the proximal solves) is a :class:`MapMemory` that :meth:`evaluate` takes and
    returns: the iteration carries it in its state, as it carries the Anderson history.
    """

    __slots__ = (
        "problem",
        "rule",
        "K",
        "L",
        "ar",
        "symmetry",
        "log_chart",
        "prior_panels",
        "single",
    )

    def __init__(
        self,
        problem: Problem,
        rule: QuadratureRule,
        *,
        symmetry: ClusterSymmetry | None = None,
        log_chart: bool = False,
        prior_panels: int | None = None,
        single: bool = False,
    ) -> None:
        settings = dict(
            problem=problem,
            rule=rule,
            K=problem.n_clusters,
            L=problem.dim,
            ar=problem.alpha * problem.mixture.rho,
            symmetry=symmetry,
            log_chart=log_chart,
            prior_panels=prior_panels,
            single=single,
        )
        for name, value in settings.items():
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(
            f"{type(self).__name__}.{name} is set by the constructor; make a new map "
            "(new_map) for other settings"
        )

    def unpack(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(Q, M, V, b)`` of a state of this problem
        (:func:`~gaussmix.theory.solve.state.unpack_state`)."""
        return unpack_state(x, self.K, self.L)

    def is_valid(self, x: np.ndarray) -> bool:
        """:func:`~gaussmix.theory.solve.state.is_valid_state` for this problem."""
        return is_valid_state(x, self.K, self.L)

    def hats(self, x: np.ndarray, memory: MapMemory | None = None) -> HatEvaluation:
        """Channel moments and hat parameters at ``x``: ``memory``'s evaluation where it was
        made at ``x``, else a new one (from ``memory``'s warm start)."""
        return self.hats_memory(x, memory)[0]

    def hats_memory(
        self, x: np.ndarray, memory: MapMemory | None = None
    ) -> tuple[HatEvaluation, MapMemory]:
        """:meth:`hats` and the memory after it (its evaluation and proximal points)."""
        memory = _NO_MEMORY if memory is None else memory
        last = memory.ev
        if last is not None and np.array_equal(last.x, x):
            return last, memory
        ev, warm = self.channel(x, memory.warm)
        return ev, MapMemory(ev, None, warm)

    def channel(
        self, x: np.ndarray, warm: ProxWarmStart | None
    ) -> tuple[HatEvaluation, ProxWarmStart | None]:
        """The channel evaluation at ``x`` (the proximal solves started from ``warm``) and
        its proximal points."""
        Q, M, V, b = unpack_state(x, self.K, self.L)
        p = self.problem
        sym = self.symmetry
        if sym is None:
            mom, warm = channel_evaluation(p.loss, p.y, M, b, Q, V, self.rule, warm)
        else:  # exchangeable clusters: cluster 0's integrals stand for all
            Q, M, V, b = sym.symmetric_state(Q, M, V, b)
            if flat_metrics(V[:1])[0] and not np.any(Q[0]):  # the zero estimator's point
                mom0 = identity_prox_moments(p.loss, p.y[:1], M[:1] + b, Q[:1], None)
            elif self.rule.computes_moments:  # its own integrals
                mom0 = self.rule.cluster0_moments(sym.P, M[0] + b, Q[0], V[0])
            else:
                mom0, warm = channel_evaluation(
                    p.loss, p.y[:1], M[:1], b, Q[:1], V[:1], self.rule, warm
                )
            mom = sym.expand_moments(mom0)
        return HatEvaluation.of(x, mom, self.ar), warm

    def __call__(self, x: np.ndarray, memory: MapMemory | None = None) -> np.ndarray:
        """``T(x)`` (:meth:`evaluate`'s image)."""
        return self.evaluate(x, memory)[0]

    def evaluate(
        self, x: np.ndarray, memory: MapMemory | None = None
    ) -> tuple[np.ndarray, MapMemory]:
        """``T(x)``: channel, Newton step of the bias condition, prior; and the memory of
        this evaluation for the next (:class:`MapMemory`).

        Where the prior provides its image as a function of ``Mhat`` (ridge on dense
        covariances, :class:`~gaussmix.theory.prior.dense.MeanResponse`) the bias step is the joint
        Newton step of the means and the bias (:func:`mean_bias_step`) and the image is the
        prior's at the corrected ``Mhat``: the same fixed points, reached in fewer iterations
        where the prior's gain ``G`` is large (real data, ``|mu_c|^2 ~ d``).
        """
        ev, memory = self.hats_memory(x, memory)
        return self.image(x, ev, memory)

    def image(
        self, x: np.ndarray, ev: HatEvaluation, memory: MapMemory
    ) -> tuple[np.ndarray, MapMemory]:
        """The second half of :meth:`evaluate`: the image at ``x`` from its channel
        evaluation ``ev`` (:meth:`hats_memory`'s, with its ``memory``).  The iteration calls
        the two halves apart, so that a failing prior leaves it the memory of the channel
        evaluation that was made (its proximal points start the next evaluation)."""
        _, M, _, b = self.unpack(x)
        if self.symmetry is not None:  # the equivariant bias (see channel)
            b = np.zeros_like(b)
        pr = prior_update(
            self.problem, ev.Qhat, ev.Mhat, ev.Vhat, panels=self.prior_panels, single=self.single
        )
        memory = MapMemory(ev, pr, memory.warm)
        response = pr.mean_response if self.symmetry is None else None
        if response is not None:
            step = mean_bias_step(response.gain, ev.Vhat, ev.Mhat, pr.M - M)
            if step is not None:
                dMhat, db = step
                dQ, dM = response.change(dMhat)
                return pack_state(pr.Q + dQ, pr.M + dM, pr.V, b + db), memory
        Sv, Sm = ev.Vhat.sum(axis=0), ev.Mhat.sum(axis=0)
        if not Sv.any() and Sm.any():  # no curvature, the bias condition unmet
            bf = flat_bias(self.problem, x)
            if bf is not None:
                return pack_state(pr.Q, pr.M, pr.V, bf), memory
        db = bias_step(Sv, Sm)
        return pack_state(pr.Q, pr.M, pr.V, b + db), memory

    def prior_at(self, ev: HatEvaluation, memory: MapMemory | None = None) -> PriorResult:
        """The prior with its free-energy terms (``details``) at the hats of ``ev``.

        The prior evaluation of ``memory`` (an :meth:`evaluate`'s) is returned again where
        it was made at ``ev`` and already holds them: a converged state is the last one the
        iteration evaluated (``return_image=False``), and a prior whose details cost
        nothing beside its overlaps (the dense ridge prior, one ``O((L r)^3)`` evaluation)
        then costs no second evaluation for the observables.  Same function, same inputs:
        the same numbers either way.
        """
        if memory is not None:
            last = memory.prior
            if memory.ev is ev and last is not None and not self.single and _has_details(last):
                return last
        return prior_update(
            self.problem, ev.Qhat, ev.Mhat, ev.Vhat, details=True, panels=self.prior_panels
        )


#: a map's memory before its first evaluation
_NO_MEMORY = MapMemory()


def _has_details(pr: PriorResult) -> bool:
    """Whether a prior result holds what ``details=True`` adds (free-energy terms, l1 norm)."""
    return bool(np.isfinite(pr.psi_w) and np.isfinite(pr.penalty) and np.isfinite(pr.l1_norm))


def flat_bias(problem: Problem, x: np.ndarray) -> np.ndarray | None:
    """The bias of the lasso's zero estimator where the bias-only risk has no curvature.

    At the zero estimator (every ``V_c = Q_c = 0``: ``W* = 0``, each output the bias ``b``)
    the bias condition ``sum_c rho_c grad loss(y_c, b) = 0`` is the stationarity of the
    convex risk ``R(b) = sum_c rho_c loss(y_c, b)``.  Where ``sum_c Vhat_c = 0`` (the loss
    is linear around ``b``: the hinge away from its kinks) and the condition is not met,
    the Newton step of :func:`bias_step` is undefined (where it is met, ``b`` is a
    minimiser and stays); a convex piecewise-linear ``R`` has its minimum at a
    kink of the loss (``loss.kinks``), so ``b`` is the kink of least ``R`` (for the hinge
    with weights ``rho_+ > rho_-``, ``b = 1``; the next channel evaluation there has the
    kink's curvature and the bias condition holds in the subgradient sense).

    Returns
    -------
    ndarray (L,) or None
        None where ``x`` is not the zero estimator or the loss declares no kinks.
    """
    K, L = problem.n_clusters, problem.dim
    Q, _, V, _ = unpack_state(x, K, L)
    kinks = getattr(problem.loss, "kinks", None)
    if kinks is None or L != 1 or np.any(Q) or np.any(V):
        return None
    cand = np.unique(kinks(problem.y @ problem.P.T)[:, 0])
    risk = [problem.mixture.rho @ problem.loss.value(problem.y, np.full((K, 1), c)) for c in cand]
    return np.array([cand[int(np.argmin(risk))]])


def bias_step(Sv: np.ndarray, Sm: np.ndarray) -> np.ndarray:
    """The map's step of the bias, one Newton step on the stationarity condition of the
    unpenalised bias ``sum_c rho_c E[f_c] = 0`` (docs/design.md pitfall 1):
    ``(sum_c Vhat_c + r I)^{-1} sum_c Mhat_c`` with the relative ridge ``r = BIAS_RIDGE
    max |sum_c Vhat_c|`` (:data:`~gaussmix.theory.numerics.tolerances.BIAS_RIDGE`).

    Parameters
    ----------
    Sv : ndarray (L, L) or (P, L, L)
        ``sum_c Vhat_c`` of one point, or of ``P`` points of a curve.
    Sm : ndarray (L,) or (P, L)
        ``sum_c Mhat_c``.

    Returns
    -------
    ndarray (L,) or (P, L)
    """
    L = Sm.shape[-1]
    if Sm.ndim == 1:
        size = float(np.abs(Sv).max())
        reg = BIAS_RIDGE * (size if size > 0.0 else 1.0)
        return solve_batch(Sv + reg * np.eye(L), Sm)
    size = np.abs(Sv).max(axis=(-2, -1))
    reg = BIAS_RIDGE * np.where(size > 0.0, size, 1.0)
    return solve_batch(Sv + reg[..., None, None] * np.eye(L), Sm)


def mean_bias_step(
    G: np.ndarray, Vhat: np.ndarray, Mhat: np.ndarray, rM: np.ndarray
) -> tuple[np.ndarray, np.ndarray] | None:
    """The joint Newton step of the means and the bias: the change ``dMhat`` of the hats
    at which the map evaluates the prior, and the bias step ``db``; None if its system is
    singular.

    The channel depends on ``M_c`` and ``b`` through ``omega_c = M_c + b + Q_c^{1/2} xi``,
    so ``dMhat_c / dM_c = dMhat_c / db = -Vhat_c`` (the Stein form,
    ``Vhat_c = -alpha rho_c E[df_c / domega]``), and a ridge prior is linear in ``Mhat``:
    ``M = G Mhat`` at fixed ``Vhat``.  The step linearises both, with ``Q`` and ``V`` held,
    and solves the ``K L + L`` equations

        M + dM = G (Mhat + dMhat),   sum_c (Mhat_c + dMhat_c) = 0,
        dMhat_c = -Vhat_c (dM_c + db),

    the second being the bias condition (docs/design.md pitfall 1, the unregularised
    :func:`bias_step` is its case ``G = 0``).  A step that moves a logit's mean by more
    than :data:`~gaussmix.theory.numerics.tolerances.MEAN_STEP_MAX` is shortened to it
    (``t dMhat``,
    ``t db``, ``0 < t < 1``: the linearisation holds on that scale).  At a fixed point of
    the plain map (``M = G Mhat``, ``sum_c Mhat_c = 0``) the step is zero; conversely the
    image ``(G (Mhat + t dMhat), b + t db)`` is the state only if ``db = 0`` and
    ``(I + (1 - t) G D) dM = 0``, ``D = diag(Vhat_c)``, where ``G D`` (a product of
    positive semi-definite matrices) has no negative eigenvalue: ``dM = 0``, so the state
    is a fixed point of the plain map.  The fixed points are the same.  The plain map
    iterates ``M <- G Mhat(M)``, whose Jacobian ``-G Vhat`` grows with the size of the
    means (``|mu_c|^2 ~ d`` for images): a period-two oscillation that Anderson mixing
    damps in a number of iterations growing with ``d``.

    Parameters
    ----------
    G : ndarray (K, L, K, L)
        ``dM_k[a] / dMhat_j[b]`` (:class:`~gaussmix.theory.prior.dense.MeanResponse`).
    Vhat : ndarray (K, L, L); Mhat : ndarray (K, L)
        Hats at the state.
    rM : ndarray (K, L)
        The prior's ``M`` minus the state's.

    Returns
    -------
    (dMhat, db) : ndarray (K, L), ndarray (L,), or None
    """
    K, L = Mhat.shape
    n = K * L
    GD = np.einsum("kajc,jcb->kajb", G, Vhat).reshape(n, n)
    Sv = Vhat.sum(axis=0)
    size = float(np.abs(Sv).max())
    A = np.empty((n + L, n + L))
    A[:n, :n] = GD + np.eye(n)
    A[:n, n:] = GD.reshape(n, K, L).sum(axis=1)
    A[n:, :n] = Vhat.transpose(1, 0, 2).reshape(L, n)
    A[n:, n:] = Sv + BIAS_RIDGE * (size if size > 0.0 else 1.0) * np.eye(L)
    rhs = np.concatenate([rM.ravel(), Mhat.sum(axis=0)])
    try:
        sol = np.linalg.solve(A, rhs)
    except np.linalg.LinAlgError:
        return None
    if not np.all(np.isfinite(sol)):
        return None
    dM, db = sol[:n].reshape(K, L), sol[n:]
    shift = dM + db
    t = min(1.0, MEAN_STEP_MAX / max(float(np.abs(shift).max()), 1e-300))
    return -t * np.einsum("cab,cb->ca", Vhat, shift), t * db


@dataclass(frozen=True)
class FixedPointState:
    """The fixed point behind a :class:`~gaussmix.theory.solve.results.FixedPointResult`, in the
    problem's effective output space (see :mod:`gaussmix.theory.problem.problem`).

    Attributes
    ----------
    problem : Problem
    rule : QuadratureRule
        The channel rule of the returned state (a placeholder for closed-form channels).
    x : ndarray
        The state vector (:func:`~gaussmix.theory.solve.state.pack_state`).
    symmetry : ClusterSymmetry or None
        The relabelling symmetry the solve used (exchangeable clusters, see
        :mod:`gaussmix.theory.problem.symmetry`), kept by :meth:`map`.
    prior_panels : int or None
        The panels of the prior's own rule of the returned state (None: the default, or a
        prior in closed form), kept by :meth:`map`.
    """

    problem: Problem
    rule: QuadratureRule
    x: np.ndarray
    symmetry: ClusterSymmetry | None = None
    prior_panels: int | None = None

    def unpack(
        self, x: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(Q, M, V, b)`` of the fixed point, or of another state ``x`` of the same problem
        (e.g. a perturbed one)."""
        return unpack_state(self.x if x is None else x, self.problem.n_clusters, self.problem.dim)

    def map(self, problem: Problem | None = None) -> FixedPointMap:
        """A fresh map ``T`` with this state's rule, for this problem or another one with the
        same clusters and outputs (e.g. another ``lam``); ``T(x) = x`` at the fixed point."""
        return FixedPointMap(
            self.problem if problem is None else problem,
            self.rule,
            symmetry=self.symmetry,
            prior_panels=self.prior_panels,
        )


def needs_quadrature(problem: Problem) -> bool:
    return not problem.loss.exact_channel


def map_features(problem: Problem, opts: SolverOptions) -> tuple[ClusterSymmetry | None, bool]:
    """The symmetry and chart of every map of one solve:
    :class:`~gaussmix.theory.problem.symmetry.ClusterSymmetry` where ``opts.symmetry`` and the
    clusters are exchangeable (the problem's own, ``Problem.symmetry``, made once with it),
    :class:`~gaussmix.theory.solve.state.LogChart` mixing where :func:`uses_log_chart`."""
    sym = problem.symmetry if opts.symmetry else None
    return sym, uses_log_chart(problem)


def new_map(
    problem: Problem,
    rule: QuadratureRule,
    like: FixedPointMap | tuple[ClusterSymmetry | None, bool],
    *,
    prior_panels: int | None | Literal["like"] = "like",
    single: bool = False,
) -> FixedPointMap:
    """A map of ``problem`` with ``rule`` and the symmetry, chart and prior panels of the map
    ``like`` (or the symmetry and chart of the pair of :func:`map_features`, and the default
    panels); ``prior_panels`` and ``single`` as :class:`FixedPointMap`'s (the
    panels ``like``'s unless given)."""
    if isinstance(like, FixedPointMap):
        sym, log_chart, panels = like.symmetry, like.log_chart, like.prior_panels
    else:
        (sym, log_chart), panels = like, None
    if prior_panels != "like":
        panels = prior_panels
    return FixedPointMap(
        problem,
        rule,
        symmetry=sym,
        log_chart=log_chart,
        prior_panels=panels,
        single=single,
    )


def uses_log_chart(problem: Problem) -> bool:
    """Whether the iteration mixes in :class:`~gaussmix.theory.solve.state.LogChart` coordinates:
    channels by quadrature with two or more effective outputs (cross-entropy with three or
    more classes), whose overlaps are positive definite in the effective space
    (docs/design.md pitfall 2), below
    :data:`~gaussmix.theory.numerics.tolerances.LOG_CHART_MAX_LAM` (large overlaps, the regime it
    is
    for).  One effective output keeps the state itself (its iteration is already fast)."""
    return needs_quadrature(problem) and problem.dim >= 2 and problem.lam < LOG_CHART_MAX_LAM


def initial_hats(
    problem: Problem,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float, np.ndarray]:
    """The hats of the default starting point (``Qhat_c = Vhat_c = alpha rho_c I / 2``,
    ``Mhat_c = alpha rho_c (y_c - ybar) / 2``), the penalty of its prior update (``lam``,
    or a small one at ``lam = 0``) and its bias ``ybar = sum_c rho_c y_c`` (effective
    labels); the starting state is the prior's image of the hats with that bias
    (:func:`start_state`)."""
    Qhat, Mhat, Vhat, ybar = _start_hats(problem, problem.alpha * problem.mixture.rho)
    lam = problem.lam if problem.lam > 0 else _START_LAM
    return Qhat, Mhat, Vhat, lam, ybar


def initial_hats_points(
    problems: list[Problem],
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[float], np.ndarray]:
    """:func:`initial_hats` of several problems of one mixture and label map (the points of
    a curve, which differ in ``lam`` and ``alpha``) at once: the hats with a leading axis
    of points, each point's penalty and the (common) bias."""
    p0 = problems[0]
    ar = np.array([p.alpha for p in problems])[:, None] * p0.mixture.rho  # (alpha rho_c)
    Qhat, Mhat, Vhat, ybar = _start_hats(p0, ar)
    lams = [p.lam if p.lam > 0 else _START_LAM for p in problems]
    return Qhat, Mhat, Vhat, lams, ybar


def _start_hats(
    problem: Problem, ar: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The starting hats of :func:`initial_hats` at ``alpha rho_c`` (``ar``: (..., K), any
    leading axes) and the bias ``ybar``."""
    L = problem.dim
    rho = problem.mixture.rho
    yr = problem.y @ problem.P.T  # effective labels
    ybar = rho @ yr
    Mhat = 0.5 * ar[..., None] * (yr - ybar)
    Qhat = 0.5 * ar[..., None, None] * np.eye(L)
    Vhat = 0.5 * ar[..., None, None] * np.eye(L)
    return Qhat, Mhat, Vhat, ybar


def _initial_state(problem: Problem) -> np.ndarray:
    """The prior's image of :func:`initial_hats`, in single precision where a fixed point
    of ``problem`` starts in it (:func:`~gaussmix.theory.prior.prior.single_precision_phase`):
    only a starting point."""
    Qhat, Mhat, Vhat, lam, ybar = initial_hats(problem)
    single = single_precision_phase(problem)
    pr = prior_update(problem, Qhat, Mhat, Vhat, lam=lam, single=single)
    return pack_state(pr.Q, pr.M, pr.V, ybar)


def _state_from_result(problem: Problem, res: Result | dict) -> np.ndarray | None:
    """Effective-space state vector from a result (or a dict with full-space Q, M, V, b)."""
    P = problem.P
    get = res.get if isinstance(res, dict) else lambda k: getattr(res, k)
    try:
        Q = P @ np.asarray(get("Q")) @ P.T
        V = P @ np.asarray(get("V")) @ P.T
        M = np.asarray(get("M")) @ P.T
        b = np.asarray(get("b")) @ P.T
    except (ValueError, TypeError, KeyError, AttributeError):
        return None
    if Q.shape != (problem.n_clusters, problem.dim, problem.dim) or M.shape != (
        problem.n_clusters,
        problem.dim,
    ):
        return None
    return pack_state(Q, M, V, b)


def start_state(problem: Problem, init: Result | dict | None) -> np.ndarray:
    """The starting state: ``init`` if it is a valid state of this problem, else the default."""
    x0 = _state_from_result(problem, init) if init is not None else None
    if x0 is None or not is_valid_state(x0, problem.n_clusters, problem.dim):
        x0 = _initial_state(problem)
    return x0


def bias_condition_step(Mhat: np.ndarray, Vhat: np.ndarray, b: np.ndarray) -> float:
    """The relative size of the unregularised Newton step of the bias condition,
    ``|sum_c Mhat_c| / (||sum_c Vhat_c|| max(1, |b|))`` (max-norms; ``inf`` where the
    curvature vanishes and the condition is not met, 0 where it is met exactly).

    The map's bias update is this step (with a relative ridge), so at a fixed point of an
    accurate channel it is below ``tol``.  A large value at a state that passed the
    convergence test is the mark of a degenerate point (the condition ``sum_c rho_c E[f_c] =
    0``, docs/design.md pitfall 1, holds only because its terms have underflowed).

    Parameters
    ----------
    Mhat, Vhat : ndarray (K, L), (K, L, L)
        Hat parameters in the effective output space.
    b : ndarray (L,)
        The bias.

    Returns
    -------
    float
    """
    Sm = float(np.abs(Mhat.sum(axis=0)).max())
    if Sm == 0.0:
        return 0.0
    Sv = float(np.abs(Vhat.sum(axis=0)).sum(axis=-1).max())  # the inf-norm of the matrix
    if not Sv > 0.0:
        return np.inf
    return Sm / (Sv * max(1.0, float(np.abs(b).max())))
