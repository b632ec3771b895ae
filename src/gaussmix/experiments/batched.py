"""All the points of a curve solved at once: one map for the whole curve.

A point of a curve solved on its own pays fixed costs that no warm start removes: setting
up its maps, the refined re-solve of its error estimate, the observables at two rules, the
result.  Measured from the exact fixed point of the previous point (the perfect predictor,
``benchmarks/bench_curves.py --floor``) they are 0.2 to 0.5 of a cold point, so a 20-point
curve solved point by point costs at least 5 to 11 cold points.  Here the ``P`` points of a
curve (one output: binary labels, ridge or lasso / elastic net on a spectral mixture, any
loss; or K = 3 classes, ridge on a spectral mixture, square loss or cross-entropy) are the
clusters of one *stacked* state

    x = (Q (P K), M (P K), V (P K), b (P L)),

(:func:`~gaussmix.theory.state.pack_state`'s layout with one bias per point), and
:class:`StackedMap` is Theorem 1's map for all of them at once: one channel evaluation of
the ``P K`` clusters (the compiled kernels loop over clusters; with exchangeable clusters,
:class:`~gaussmix.theory.symmetry.ClusterSymmetry`, of cluster 0 of each point, as a single
point's map), the Newton step of each point's bias
(:func:`~gaussmix.theory.fixed_point.bias_step`), the priors of all points in one call
(:func:`~gaussmix.theory.prior.ridge_prior` and
:func:`~gaussmix.theory.prior.elastic_net_prior` take a leading axis of points).  The
iteration is the solver's own (:func:`~gaussmix.theory.iteration.iterate`, in the
logarithmic chart where a single point's is), with each point mixed with its own Anderson
coefficients (``AndersonState.blocks``) and frozen, no longer evaluated, once its own
residual passes the convergence test: a point's iterates are its single point's until
the restart.  A curve is a continuation inside the
stacked solve: once half its points are near their fixed points, its slow points (small
lambda, or the end of a curve over alpha, whose march from the cold start sets the solve's
length) are restarted from predictions through their nearest solved neighbours in ``log
lambda`` or ``log alpha`` (:func:`_seeded_iterate`, the continuation's predictor and
safeguard), so that their iterates are their own, not their single points', and their
answers their fixed points within the tolerance.  With one
output the points in the sharp regime of the channel are solved again, stacked, on its
rule; with two (K = 3 cross-entropy) the curve starts on the rule the point-by-point curve
carries (one step down the automatic rule's refinement chain, by continuation from a
coarser one), and a point in the sharp regime, which a single point solves on a rule of its
own state, sends the curve back to the points.  Each point then estimates its own
integration error as a single point does (:func:`~gaussmix.theory.refinement.estimate_errors`):
the stacked state re-solved with the refined rule from the last solve's secant pairs (with
one output each point's own, its last evaluations before it froze; for a sweep over lambda
or K = 3 classes in one iteration on to the tighter tolerance, :func:`_refined_solve`), the
change of each point's observables, refinement again for the points whose estimate exceeds
``quad_tol``; and its result is assembled by the solver's own code, with its free energy
and sparsity.

Where the stacked solve does not apply (four classes or more, the lasso with several
outputs, a rule given by the caller, a randomised rule, a dense covariance, fewer than
:data:`STACKED_MIN_POINTS` points) the curve is solved point by point
(:mod:`gaussmix.experiments.continuation`); where it does not succeed (no convergence, a
spurious or degenerate point, a sharp point of two outputs) :func:`solve_points` returns
None and so is the curve.
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import NamedTuple

import numpy as np
from scipy.spatial import cKDTree

from gaussmix.core.memo import IdentityMemo
from gaussmix.theory.channel import ChannelMoments, ProxWarmStart, channel_evaluation
from gaussmix.theory.fixed_point import (
    FixedPointMap,
    HatEvaluation,
    bias_step,
    initial_hats_points,
    map_features,
    needs_quadrature,
    new_map,
    uses_log_chart,
)
from gaussmix.theory.iteration import (
    AndersonState,
    IterationOutcome,
    IterationState,
    IterationStatus,
    iterate,
)
from gaussmix.theory.linalg import sym_eigvals
from gaussmix.theory.observables import (
    gaussian_risk,
    isotropic_softmax_metric,
    test_accuracy,
    train_accuracy,
)
from gaussmix.theory.options import SolverOptions
from gaussmix.theory.outputs import error_keys
from gaussmix.theory.prior import (
    PriorResult,
    prior_quadrature_dim,
    prior_update,
    takes_stacked_points,
)
from gaussmix.theory.problem import Problem
from gaussmix.theory.quadrature import QuadratureRule
from gaussmix.theory.refinement import (
    MAX_QUADRATURE_NODES,
    Estimate,
    Observables,
    channel_rule,
    sharp_rule,
    with_statistics_points,
)
from gaussmix.theory.results import FixedPointResult
from gaussmix.theory.solver import assemble_results
from gaussmix.theory.state import (
    LogChart,
    is_valid_state,
    pack_state,
    residual_scale,
    unpack_state,
)
from gaussmix.theory.symmetry import ClusterSymmetry
from gaussmix.theory.tolerances import REFINED_EXTRA_ITER, SMOOTH_Q_MAX, refined_tol

from .continuation import (
    PREDICTOR_ITER_FACTOR,
    PREDICTOR_MIN_ITER,
    chain_predecessor,
    predict,
    predictions_accepted,
)

__all__ = [
    "STACKED_MIN_POINTS",
    "StackedMap",
    "stackable",
    "stacked_curve_options",
    "solve_points",
]

#: Curves of fewer points are solved point by point.  Stacking pays from about 5 points
#: (measured, binary logistic over alpha in [0.2, 4]: 3 points 8.8 ms stacked against 7.4
#: point by point, 5 points 5.9 against 11.0, 8 points 7.4 against 16.0, 20 points 14
#: against 47); short curves keep the point-by-point continuation, the path of every curve
#: of four classes or more, whose predictor and safeguard are tested on short curves.
STACKED_MIN_POINTS = 10

#: the observables whose integration error is estimated (the observables registry's)
_ERROR_KEYS = error_keys()


def stackable(problem: Problem, opts: SolverOptions) -> bool:
    """Whether the points of a curve of ``problem`` (at other ``lam`` and ``alpha``) can be
    solved as one stacked state with the options ``opts``: a prior in closed form that
    takes the points on a leading axis (ridge on a spectral mixture, and for one effective
    output the lasso and elastic net), correct sets of at most two constraints (the test
    and training errors are orthants of at most two dimensions: one output, or K = 3
    classes), and the solver's automatic deterministic rule (a channel in closed form; one
    output; two outputs, K = 3 cross-entropy, on graded panels)."""
    if not takes_stacked_points(problem.penalty_spec, problem.mixture):
        return False
    if prior_quadrature_dim(problem) or max(D.shape[0] for D, _ in problem.constraints) > 2:
        return False
    if opts.quadrature is not None:  # the caller's rule: the points are its single points
        return False
    if not needs_quadrature(problem):
        return True
    if problem.dim > 2:
        return False
    rule = channel_rule(problem, None, opts.symmetry)
    return not rule.randomised and not getattr(rule, "computes_moments", False)


def stacked_curve_options(
    problem: Problem, opts: SolverOptions, n_points: int
) -> SolverOptions | None:
    """The solver options ``opts`` where a curve of ``n_points`` points of ``problem`` (at
    other ``lam`` and ``alpha``) is solved as one stacked state (:func:`solve_points`), or
    None where it is solved point by point: fewer than :data:`STACKED_MIN_POINTS` points, or
    a problem that does not stack with these options (:func:`stackable`).  The one decision
    of the curves (:mod:`gaussmix.experiments.curves`) and of the explorer's coarse pass;
    it reads the options object, never how the caller spelled them (keywords or
    ``options=``)."""
    if n_points < STACKED_MIN_POINTS:
        return None
    return opts if stackable(problem, opts) else None


@dataclass(frozen=True)
class _StackedOutputs:
    """The outputs of the ``P K`` stacked clusters as the observables and the regime test
    read them (labels, the loss, each cluster's correct set, the number of clusters and of
    effective outputs, the effective output basis): a problem's, repeated for each point."""

    loss: object
    y: np.ndarray
    constraints: tuple
    n_clusters: int
    dim: int = 1
    P: np.ndarray | None = None


class StackedMap:
    """Theorem 1's map for ``P`` problems at once (a stacked state, see the module's
    docstring): the interface of a :class:`~gaussmix.theory.fixed_point.FixedPointMap` for
    the iteration (``K = P K0`` clusters, ``L`` effective outputs, ``P L`` biases).

    Parameters
    ----------
    problems : list of Problem
        Problems that differ only in ``lam`` and ``alpha``.
    rule : QuadratureRule
        The channel's rule (a placeholder for closed-form channels).
    symmetry : ClusterSymmetry, optional
        The relabelling symmetry of exchangeable clusters: cluster 0's channel of each point
        stands for its ``K0`` clusters, as in a single point's map.
    log_chart : bool
        Mix in :class:`~gaussmix.theory.state.LogChart` coordinates (each point's overlaps;
        the chart is block by block).
    """

    def __init__(
        self,
        problems: list[Problem],
        rule: QuadratureRule,
        symmetry: ClusterSymmetry | None = None,
        log_chart: bool = False,
    ) -> None:
        p0 = problems[0]
        self.problems = problems
        self.rule = rule
        self.symmetry = symmetry
        self.log_chart = log_chart
        self.n_points = P = len(problems)
        self.K0 = K0 = p0.n_clusters
        self.K = P * K0
        self.L = L = p0.dim
        # each point's alpha rho_c (one mixture), all at once
        alphas = np.array([p.alpha for p in problems])
        self.ar = np.repeat(alphas, K0) * np.tile(p0.mixture.rho, P)
        self.lams = np.array([p.lam for p in problems])
        self.outputs = _StackedOutputs(
            p0.loss, np.tile(p0.y, (P, 1)), _repeated(p0.constraints, P), self.K, L, p0.P
        )
        layout = _layout(P, K0, L, symmetry is not None)
        #: the clusters whose channel is integrated (cluster 0 of each point with the
        #: symmetry, every cluster without), the point of each, the point of each cluster
        #: and the point of each component of the stacked state (Q, M, V: K0 blocks each;
        #: b: L)
        self.rows, self.row_point, self.row_of_cluster, self.blocks = layout[:4]
        # the components of each point in one run (a maximum over each point's components
        # by ``np.maximum.reduceat``, exact, instead of the slower ``np.maximum.at``)
        self._order, self._starts = layout[4:]
        self.last: HatEvaluation | None = None
        self.last_rows: ChannelMoments | None = None  # the integrated clusters' moments
        self.warm: ProxWarmStart | None = None
        # whether this map alone holds ``warm``'s arrays (a partial evaluation then writes
        # its clusters' proximal points into them instead of into copies; a map made by
        # :meth:`like` shares them with its source until either evaluates)
        self._owns_warm = False
        #: set (to the iteration's ``tol``) for a solve that returns the evaluated state:
        #: a point whose own residual is below it is converged and stops being evaluated
        self.freeze_tol: float | None = None
        #: called with the points that freeze (a mask) and the state, and with every image
        #: of the map (they may raise to stop the iteration)
        self.on_freeze: Callable[[np.ndarray, np.ndarray], None] | None = None
        self.on_image: Callable[[np.ndarray], None] | None = None
        self.frozen = np.zeros(P, dtype=bool)
        self.frozen_x = np.full(self.blocks.size, np.nan)  # the state each point froze at
        self.frozen_g = np.full(self.blocks.size, np.nan)  # and its image there
        self.residuals = np.full(P, np.nan)  # each frozen point's residual
        #: each point's own residual at an evaluation, by the freeze test, and which
        #: evaluation (:func:`_own_residuals` reads it instead of making it again)
        self.own_at: tuple[int, np.ndarray] | None = None
        self.evaluations = 0  # of the map
        self.frozen_after = np.zeros(P, dtype=int)  # each frozen point's
        #: evaluations ``(x, T(x))`` kept (0: none): the last ones of the iteration, and
        #: each point's own at its freeze, whose differences are its own secant pairs
        #: (:meth:`pairs`)
        self.trail_len = 0
        self.trail: list[tuple[np.ndarray, np.ndarray]] = []
        #: (trail_len, 2, components): each frozen point's last evaluations ``(x, T(x))``
        #: at its freeze, the newest last (the oldest repeated where it had fewer)
        self.point_trail: np.ndarray | None = None
        self.has_trail = np.zeros(P, dtype=bool)
        #: set (with ``freeze_tol`` below it) for a solve that freezes a point at
        #: ``freeze_tol`` where it gets there within ``settle_extra`` evaluations after its
        #: residual first passed ``settle_tol``, and else at its image there
        #: (:func:`_refined_solve`)
        self.settle_tol: float | None = None
        self.settle_extra = 0
        self.settled_g = np.full(self.blocks.size, np.nan)  # each point's image at settle_tol
        self.settled_res = np.full(P, np.nan)  # its residual there
        self.settled_after = np.zeros(P, dtype=int)  # and its evaluations
        self.settled = np.zeros(P, dtype=bool)  # the points frozen at their image there

    def like(self, problems: list[Problem], rule: QuadratureRule) -> StackedMap:
        """A stacked map of ``problems`` with ``rule`` and this map's symmetry and chart; for
        the same points and rule (an iteration continued, :func:`_tighter_stacked`) with this
        map's proximal points as the warm start of its first evaluation, as a single point's
        map keeps them from one iteration to the next."""
        T = StackedMap(problems, rule, self.symmetry, self.log_chart)
        if rule == self.rule and len(problems) == self.n_points:
            if all(p is q for p, q in zip(problems, self.problems)):
                T.warm = self.warm
                self._owns_warm = False  # (both hold them)
        return T

    def warm_from(self, other: StackedMap) -> None:
        """Start the first evaluation of this map (whose points are some of ``other``'s, in
        the same order, and whose rule is another) from the proximal points of ``other``'s
        last evaluation, at the state this map starts from: each node's from the nearest node
        of ``other``'s rule (:func:`_nearest_nodes`), whose ``f = V^{-1}(h - omega)`` the
        compiled channel maps through this evaluation's nodes and metrics, as from one
        evaluation to the next (:class:`~gaussmix.theory.channel.ProxWarmStart`).  The
        proximal solves converge to their own tolerance from any start; a good one saves
        Newton steps (a rule's first evaluation started from ``h = omega`` costs about 2.5
        times a warm one, BENCHMARKS.md).  Nothing without ``other``'s proximal points."""
        warm = other.warm
        if warm is None or warm.h.shape[0] != other.rows.size or self.rule == other.rule:
            return
        ids = {id(p): i for i, p in enumerate(other.problems)}
        points = [ids.get(id(p)) for p in self.problems]
        if None in points or points != sorted(points):
            return
        rows = _point_mask(other.n_points, points)[other.row_point]
        nodes = _nearest_nodes(other.rule, self.rule)
        # (np.take gathers the nodes about 8 times faster than fancy indexing)
        h, omega = (np.take(a[rows], nodes, axis=1) for a in (warm.h, warm.omega))
        self.warm = ProxWarmStart((self.rule, h.shape), h, omega, warm.V[rows])
        self._owns_warm = True

    def start(self) -> np.ndarray:
        """The solver's starting point of every point
        (:func:`~gaussmix.theory.fixed_point.start_state` without ``init``), its prior
        update made for all points at once."""
        Qh, Mh, Vh, lams, ybar = initial_hats_points(self.problems)
        pr = prior_update(self.problems[0], Qh, Mh, Vh, lam=np.array(lams))
        return self._pack(pr.Q, pr.M, pr.V, np.tile(ybar, self.n_points))

    def _pack(self, Q: np.ndarray, M: np.ndarray, V: np.ndarray, b: np.ndarray) -> np.ndarray:
        """The stacked state of the points' overlaps (any leading shape)."""
        L = self.L
        return pack_state(Q.reshape(-1, L, L), M.reshape(-1, L), V.reshape(-1, L, L), b)

    def anderson(self, memory: int, previous: AndersonState | None = None) -> AndersonState:
        """A secant history that mixes each point with its own coefficients (empty, or the
        newest pairs of ``previous``, an iteration of the same stacked state)."""
        return replace(AndersonState.init(memory, previous), blocks=self.blocks)

    def unpack(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(Q, M, V, b)`` of a stacked state with a leading axis of points: (P, K0, L, L),
        (P, K0, L), (P, K0, L, L), (P, L)."""
        Q, M, V, b = unpack_state(x, self.K, self.L)
        P, K0, L = self.n_points, self.K0, self.L
        return (
            Q.reshape(P, K0, L, L),
            M.reshape(P, K0, L),
            V.reshape(P, K0, L, L),
            b.reshape(P, L),
        )

    def stack(self, states: list[np.ndarray]) -> np.ndarray:
        """The stacked state of one state per point."""
        parts = [unpack_state(x, self.K0, self.L) for x in states]
        return pack_state(*(np.concatenate([pt[i] for pt in parts]) for i in range(4)))

    def points_of(self, x: np.ndarray, points: list[int]) -> np.ndarray:
        """The stacked state of ``points`` (increasing) of the stacked state ``x``, for a
        stacked map of these points alone (their components, in order: :meth:`stack` of
        their states, without splitting them)."""
        return x[_point_mask(self.n_points, points)[self.blocks]]

    def split(self, x: np.ndarray) -> list[np.ndarray]:
        """Each point's state of a stacked state (the rows of one array: each point's
        components in the order of its points are its state's layout,
        :func:`~gaussmix.theory.state.pack_state`)."""
        return list(x[self._order].reshape(self.n_points, -1))

    def means(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(M_c + b, Q_c, V_c)`` of every point and cluster (its point's bias added),
        with a leading axis of points, and the biases; of the equivariant state
        (:meth:`~gaussmix.theory.symmetry.ClusterSymmetry.symmetric_state`, ``b = 0``)
        with the symmetry, as a single point's map and observables read it."""
        Q, M, V, b = self.unpack(x)
        if self.symmetry is not None:
            Q, M, V, b = self.symmetry.symmetric_state(Q, M, V, b)
        return M + b[:, None, :], Q, V, b

    def is_valid(self, x: np.ndarray) -> bool:
        """:func:`~gaussmix.theory.state.is_valid_state` of every point."""
        return is_valid_state(x, self.K, self.L)

    def hats(self, x: np.ndarray) -> HatEvaluation:
        """The channel of every stacked cluster at ``x`` in one evaluation (of cluster 0 of
        each point with the symmetry), and the hats ``alpha rho_c E[...]`` of each point
        (the last evaluation is remembered)."""
        last = self.last
        if last is not None and last.x.shape == x.shape and (last.x == x).all():
            return last  # (np.array_equal's test, without its cost)
        m, Q, V, _ = self.means(x)
        L = self.L
        p = self.problems[0]
        rows = self.rows
        m, Q, V = m.reshape(-1, L)[rows], Q.reshape(-1, L, L)[rows], V.reshape(-1, L, L)[rows]
        y = self.outputs.y[rows]
        zero = np.zeros(L)
        active = ~self._frozen_at(x)[self.row_point]
        if self.last_rows is None or active.all():
            mom, self.warm = channel_evaluation(p.loss, y, m, zero, Q, V, self.rule, self.warm)
            self._owns_warm = True  # (the evaluation's own arrays)
        else:  # the frozen points' moments are those of their (unchanged) states
            active = np.flatnonzero(active)  # (the rows by index: cheaper to gather)
            full = (
                self.warm if self.warm is not None and self.warm.h.shape[0] == rows.size else None
            )
            sub, warm = channel_evaluation(
                p.loss,
                y[active],
                m[active],
                zero,
                Q[active],
                V[active],
                self.rule,
                None if full is None else _warm_rows(full, active),
            )
            if full is not None and warm is not None:  # the proximal points of every cluster
                if not self._owns_warm:  # (copies: another map holds these arrays)
                    full = ProxWarmStart(full.key, *(getattr(full, f).copy() for f in _WARM))
                    self._owns_warm = True
                for f in _WARM:  # (a cluster's rows of a stacked rule: about 1 MB each)
                    getattr(full, f)[active] = getattr(warm, f)
                self.warm = full
            mom = ChannelMoments(
                *(_merged(getattr(self.last_rows, f), getattr(sub, f), active) for f in _MOMENTS)
            )
        self.last_rows = mom
        if self.symmetry is not None:  # cluster 0's moments stand for its point's clusters
            mom = self.symmetry.expand_point_moments(mom)
        self.last = HatEvaluation.of(x, mom, self.ar)
        return self.last

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """``T(x)`` of every point: channel, Newton step of each bias, priors."""
        P, K0, L = self.n_points, self.K0, self.L
        b = self.unpack(x)[3]
        if self.symmetry is not None:  # the equivariant bias (as a single point's map)
            b = np.zeros_like(b)
        ev = self.hats(x)
        Vh = ev.Vhat.reshape(P, K0, L, L)
        Mh = ev.Mhat.reshape(P, K0, L)
        db = bias_step(Vh.sum(axis=1), Mh.sum(axis=1))
        Qh = ev.Qhat.reshape(P, K0, L, L)
        pr = prior_update(self.problems[0], Qh, Mh, Vh, lam=self.lams)
        g = self._pack(pr.Q, pr.M, pr.V, (b + db).ravel())
        if self.on_image is not None:
            self.on_image(g)
        self.evaluations += 1
        if self.trail_len:
            self.trail.append((x.copy(), g.copy()))
            del self.trail[: -self.trail_len]
        if self.freeze_tol is not None:
            self._freeze(x, g)
        return g

    def own_iterations(self, n_iter: int) -> np.ndarray:
        """Each point's evaluations in an iteration of ``n_iter`` evaluations: up to the one
        that froze it (its own convergence), or all."""
        return np.where(self.frozen, self.frozen_after, n_iter)

    def _frozen_at(self, x: np.ndarray) -> np.ndarray:
        """The points frozen at their state in ``x`` (a frozen point whose state moved, by a
        retreat of the iteration, is evaluated again)."""
        if not self.frozen.any():
            return self.frozen
        moved = np.bincount(self.blocks, weights=x != self.frozen_x, minlength=self.n_points)
        self.frozen &= moved == 0
        return self.frozen

    def own_residuals(self, x: np.ndarray, g: np.ndarray) -> np.ndarray:
        """Each point's own residual ``max |T(x) - x| / s`` at ``x`` with image ``g`` (the
        iteration's convergence test, :func:`~gaussmix.theory.state.residual_scale`),
        infinite where not finite."""
        r = np.abs(g - x) / residual_scale(x, self.K, self.L)
        # (a point with a non-finite residual has none: NaN propagates through the
        # maximum, and infinity stays)
        own = np.maximum.reduceat(r[self._order], self._starts)
        own[np.isnan(own)] = np.inf
        return own

    def _freeze(self, x: np.ndarray, g: np.ndarray) -> None:
        """Freeze the points whose own residual ``max |T(x) - x| / s`` (the iteration's
        convergence test, :func:`~gaussmix.theory.state.residual_scale`) is below
        ``freeze_tol`` at ``x``: their image is set to ``x`` (residual 0: the iteration
        leaves them where they are) and they are not evaluated again while they stay."""
        own = self.own_residuals(x, g)
        self.own_at = (self.evaluations, own)
        new = (own < self.freeze_tol) & ~self.frozen
        freezing = bool(new.any())
        if freezing:
            self.residuals[new] = own[new]
            self.frozen_after[new] = self.evaluations
        settled = self._settle(own, g, new) if self.settle_tol is not None else None
        if settled is not None:  # (``new`` now holds them)
            freezing = True
        if freezing:
            fresh = new[self.blocks]
            if self.trail_len:
                if self.point_trail is None:
                    self.point_trail = np.zeros((self.trail_len, 2, self.blocks.size))
                rows = np.array(self.trail)
                pad = self.trail_len - len(rows)
                rows = np.concatenate([np.repeat(rows[:1], pad, 0), rows])
                self.point_trail[:, :, fresh] = rows[:, :, fresh]
                self.has_trail |= new
            self.frozen |= new
            if self.on_freeze is not None:
                self.on_freeze(new, x)
            self.frozen_g[fresh] = g[fresh]
            if settled is not None:  # frozen at their image at settle_tol
                self.frozen_g[settled] = self.settled_g[settled]
        if freezing or self.frozen.any():
            comp = self.frozen[self.blocks]
            g[comp] = x[comp]
            self.frozen_x[comp] = x[comp]

    def _settle(self, own: np.ndarray, g: np.ndarray, new: np.ndarray) -> np.ndarray | None:
        """Record the image of each point whose own residual ``own`` first passes
        ``settle_tol``; once every point not frozen has passed it ``settle_extra``
        evaluations ago or more, add them to ``new`` (the points that freeze now) with their
        recorded residual and evaluations, and return their components (whose image is the
        recorded one); else None."""
        first = (own < self.settle_tol) & np.isnan(self.settled_res) & ~self.frozen
        self.settled_res[first] = own[first]
        self.settled_after[first] = self.evaluations
        comp = first[self.blocks]
        self.settled_g[comp] = g[comp]
        rest = ~self.frozen & ~new
        if not rest.any() or np.isnan(self.settled_res[rest]).any():
            return None
        if self.evaluations - self.settled_after[rest].max() < self.settle_extra:
            return None
        new |= rest
        self.settled |= rest
        self.residuals[rest] = self.settled_res[rest]
        self.frozen_after[rest] = self.settled_after[rest]
        return rest[self.blocks]

    def images(self, x: np.ndarray) -> np.ndarray:
        """The image ``T(x)`` that an iteration returning images (``return_image``) returns
        for each point: a frozen point's own image at its convergence, the others' ``x``
        (the iteration's image)."""
        comp = self.frozen[self.blocks]
        out = x.copy()
        out[comp] = self.frozen_g[comp]
        return out

    def pairs(
        self, history: AndersonState | None, points: list[int], memory: int, own: bool = True
    ):
        """The secant history of ``points`` (in increasing order) of this stacked state, for
        a stacked map of these points alone (:meth:`like`; all of them: this map's layout):
        with ``own``, each point's own last pairs before it froze where the iteration kept
        them (``trail_len``), as a single point's iteration ends with its own
        (``history``'s pairs are zero in a point frozen for ``memory`` evaluations), else
        the components of ``history``'s pairs that belong to them; None without pairs."""
        mask = _point_mask(self.n_points, points)[self.blocks]
        if own and self.point_trail is not None and self.has_trail[points].all():
            return self._own_pairs(len(points), mask, memory)
        if history is None or history.empty:
            return None
        return AndersonState(
            tuple(d[mask] for d in history.dxs),
            tuple(d[mask] for d in history.dgs),
            memory,
            history.log_chart,
        )

    def _own_pairs(self, n_points: int, mask: np.ndarray, memory: int) -> AndersonState | None:
        """The secant pairs of the ``n_points`` points of the components ``mask``, each
        point's own (at most ``memory``, the newest last): the differences of its last
        evaluations before it froze, in the iteration's coordinates (the logarithmic chart
        where this map mixes in it; a pair whose ends leave the chart is dropped), zero where
        a point has fewer; None without pairs."""
        rows = self.point_trail[:, :, mask]
        if self.log_chart:
            chart = LogChart(n_points * self.K0, self.L)
            ys = [[chart.forward(x), chart.forward(g)] for x, g in rows]
            ok = [y is not None and yg is not None for y, yg in ys]
            d = [np.subtract(b, a) for a, b, u, v in zip(ys, ys[1:], ok, ok[1:]) if u and v]
            diffs = np.array(d) if d else np.zeros((0, 2, rows.shape[2]))
        else:
            diffs = rows[1:] - rows[:-1]
        diffs = diffs[max(0, len(diffs) - memory) :] if memory > 0 else diffs[:0]
        nonzero = np.flatnonzero(np.any(diffs != 0.0, axis=(1, 2)))
        if nonzero.size == 0:
            return None
        diffs = diffs[nonzero[0] :]  # (pairs that are zero in every point: none)
        return AndersonState(tuple(diffs[:, 0]), tuple(diffs[:, 1]), memory, self.log_chart)

    def point_maps(
        self,
        x: np.ndarray,
        points: list[int] | None = None,
        states: list[np.ndarray] | None = None,
    ) -> tuple[list[np.ndarray], list[FixedPointMap]]:
        """Each point's state of the stacked state ``x`` and a single point's map there
        (of ``points`` alone, in their order, where given; ``states``: theirs, where the
        caller has split ``x`` already), remembering its share of the channel evaluation at
        ``x`` (its observables then need none)."""
        ev = self.hats(x)
        if points is None:
            points = list(range(self.n_points))
        if states is None:
            split = self.split(x)
            states = [split[i] for i in points]
        maps = []
        k = self.K0
        for i, xi in zip(points, states):
            p = self.problems[i]
            s = slice(i * k, (i + 1) * k)
            mom = ChannelMoments(*(getattr(ev.moments, f)[s] for f in _MOMENTS))
            T = new_map(p, self.rule, (self.symmetry, self.log_chart))
            T.last = HatEvaluation(xi.copy(), mom, ev.Qhat[s], ev.Mhat[s], ev.Vhat[s])
            maps.append(T)
        return states, maps


#: the constraints of a curve's stacked clusters, by the identity of its problems' (a tuple
#: shared by the problems of one label map) and the number of points: one tuple for all the
#: maps of a curve (and of the curves of a label map), whose arrays the observables then
#: make once (:func:`~gaussmix.theory.observables.test_accuracy`)
_REPEATED = IdentityMemo(16)


def _repeated(constraints: tuple, n_points: int) -> tuple:
    """``constraints * n_points``, one tuple for a tuple of constraints and a count."""
    if not isinstance(constraints, tuple):  # (only an immutable sequence is remembered)
        return tuple(constraints) * n_points
    return _REPEATED.get(constraints, n_points, lambda: constraints * n_points)


def _point_mask(n_points: int, points: list[int]) -> np.ndarray:
    """The mask of ``points`` among ``n_points`` points (a mask of components or clusters
    is its entries at their points: ``np.isin``'s answer, without its sort)."""
    mask = np.zeros(n_points, dtype=bool)
    mask[points] = True
    return mask


@functools.lru_cache(maxsize=32)
def _layout(P: int, K0: int, L: int, symmetric: bool) -> tuple[np.ndarray, ...]:
    """The index arrays of a :class:`StackedMap` of ``P`` points of ``K0`` clusters and
    ``L`` outputs (``symmetric``: cluster 0 of each point integrated), made once for the
    maps of a curve (read-only; one ``blocks`` array for all of them, whose block layout
    the mixing remembers, :meth:`~gaussmix.theory.iteration.AndersonState.extrapolate`):
    the integrated clusters, the point of each, the point of each cluster, the point of
    each component, and the components in the order of their points with the start of
    each point's run."""
    rows = K0 * np.arange(P) if symmetric else np.arange(P * K0)
    pts = np.arange(P)
    blocks = np.concatenate(
        [np.repeat(pts, K0 * L * L), np.repeat(pts, K0 * L), np.repeat(pts, K0 * L * L)]
        + [np.repeat(pts, L)]
    )
    order = np.argsort(blocks, kind="stable")
    starts = np.searchsorted(blocks[order], pts)
    out = (rows, rows // K0, np.repeat(pts, K0), blocks, order, starts)
    for a in out:
        a.flags.writeable = False
    return out


@functools.lru_cache(maxsize=16)
def _nearest_nodes(coarse: QuadratureRule, fine: QuadratureRule) -> np.ndarray:
    """The index of the node of the rule ``coarse`` nearest to each node of ``fine`` (the
    warm start of a rule's first evaluation from another's, :meth:`StackedMap.warm_from`)."""
    return cKDTree(coarse.nodes).query(fine.nodes)[1]


def _refined_solve(
    T: StackedMap,
    x0: np.ndarray,
    anderson: AndersonState,
    opts: SolverOptions,
    kw: dict,
    merge: bool,
) -> tuple[IterationOutcome, np.ndarray, np.ndarray, AndersonState] | None:
    """The refined stacked fixed point of ``T`` from ``x0`` in an error estimate, as a single
    point's (:func:`~gaussmix.theory.refinement.estimate_errors`: the refined rule iterated
    to ``opts.tol``, then on to :func:`~gaussmix.theory.tolerances.refined_tol` for at most
    :data:`~gaussmix.theory.tolerances.REFINED_EXTRA_ITER` more evaluations): each point's
    state where its own residual passes ``refined_tol`` (one output: its image there; two:
    its last iterate, see below), else its image at ``opts.tol``; its own evaluations and
    residuals; and the secant pairs of the iteration to ``opts.tol`` (for the next
    refinement).  None where a point does not reach ``opts.tol``.

    Without ``merge`` (one output, a curve over alpha): the two iterations one after the
    other, as a single point's (each point's iterates from there are its single point's,
    :func:`_tighter_stacked`).  With ``merge`` (two outputs, whose curve is on the curve's
    rule, not the single point's; one output, a sweep over lambda, whose first solve
    restarted its slow points, :func:`_first_solve`, so that its iterates are not its single
    points' from the start): in one iteration, each
    point going on towards ``refined_tol`` while others still converge to ``opts.tol``, and
    frozen at its image there where it does not get there within ``REFINED_EXTRA_ITER`` evaluations
    (:attr:`StackedMap.settle_tol`): on the explorer's K = 3 cross-entropy curves, 3 to 5
    evaluations of the refined rule where the two iterations took 5 to 7, in each of which
    the points already at ``opts.tol`` waited for the others (BENCHMARKS.md, "The
    explorer's redraw").  A point that passes ``refined_tol`` there keeps its last iterate
    ``x``, not its image: the map remembers the channel's moments at ``x`` (a frozen
    point's, of its frozen state), so the observables of the estimate
    (:func:`_light_observables`) need no evaluation of the refined rule of their own (one
    of three to four a point on the K = 3 curves of ``benchmarks/bench_curves.py``).  The
    estimate stays what it was: ``|T(x) - x| / s < refined_tol`` puts ``x`` within about
    ``refined_tol / (1 - r)`` of the refined fixed point (``r`` the map's contraction; its
    image within ``r`` times that), a hundred times below the error of stopping the coarser
    rule's iteration at ``opts.tol`` that the estimate is to hold
    (:data:`~gaussmix.theory.tolerances.REFINED_TOL_FACTOR`); the observables move by
    that order (measured on the K = 3 curves at ``tol = 1e-8``: at most 7e-11; on the lasso
    sweep of ``benchmarks/bench_curves.py``, where it saves 2 of the 8 evaluations of the
    refined rules and the 2 evaluations of the observables, see BENCHMARKS.md, "The lasso
    sweep's estimates merged"). A point
    frozen at ``opts.tol`` (:attr:`StackedMap.settle_tol`) keeps its image, whose moments
    the observables evaluate (for those points alone)."""
    tight = refined_tol(opts.tol)
    merged = merge and tight < opts.tol
    T.freeze_tol = tight if merged else opts.tol
    if merged:
        T.settle_tol, T.settle_extra = opts.tol, REFINED_EXTRA_ITER
    out = iterate(T, x0, anderson, return_image=not merged, **{**kw, "tol": T.freeze_tol})
    if not out.converged:
        return None
    history = out.anderson
    if merged:  # each point's last iterate, a settled point's image
        out = replace(out, x=np.where(T.settled[T.blocks], T.frozen_g, out.x))
    else:
        out = replace(out, x=T.images(out.x))
    own = T.own_iterations(out.n_iter)
    own_res = np.where(T.frozen, T.residuals, out.residual)
    if not merged:
        out, own, own_res = _tighter_stacked(T, out, own, own_res, opts, kw)
    return out, own, own_res, history


def _tighter_stacked(
    T: StackedMap,
    out: IterationOutcome,
    own: np.ndarray,
    own_res: np.ndarray,
    opts: SolverOptions,
    kw: dict,
) -> tuple[IterationOutcome, np.ndarray, np.ndarray]:
    """The refined stacked fixed point ``out`` of ``T`` (each point's images, evaluations
    ``own`` and residuals ``own_res``) iterated on to
    :func:`~gaussmix.theory.tolerances.refined_tol`, as a single point's
    (:func:`~gaussmix.theory.refinement.estimate_errors`): each point that converges to it
    within :data:`~gaussmix.theory.tolerances.REFINED_EXTRA_ITER` more evaluations takes its
    image there, the others keep theirs at ``opts.tol``."""
    tight = refined_tol(opts.tol)
    if tight >= opts.tol:
        return out, own, own_res
    T3 = T.like(T.problems, T.rule)
    T3.freeze_tol = tight
    more = iterate(
        T3,
        out.x,
        T3.anderson(opts.anderson, out.anderson),
        **{**kw, "tol": tight, "max_iter": REFINED_EXTRA_ITER},
    )
    done = T3.frozen
    if not done.any():
        return out, own, own_res
    x = np.where(done[T3.blocks], T3.images(more.x), out.x)
    own = np.where(done, own + T3.own_iterations(more.n_iter), own)
    own_res = np.where(done, T3.residuals, own_res)
    return replace(out, x=x), own, own_res


def _light_observables(T: StackedMap, x: np.ndarray) -> list[Observables]:
    """Each point's errors and losses at the stacked state ``x`` (those of
    :func:`~gaussmix.theory.refinement.evaluate_observables` with ``light=True``), each
    observable of all points in one call (the training error of two outputs with
    metrics that are not isotropic, a boundary integral per cluster, point by point)."""
    ev = T.hats(x)
    m, Q, V, b = T.means(x)
    P, K0, L = T.n_points, T.K0, T.L
    p0 = T.problems[0]
    rho, rho_test = p0.mixture.rho, p0.mixture.test_priors  # (training, test priors)
    zero = np.zeros(L)
    mf, Qf, Vf = m.reshape(-1, L), Q.reshape(-1, L, L), V.reshape(-1, L, L)
    test_acc, test_err = test_accuracy(T.outputs, mf, zero, Qf)
    test_error = np.clip(1.0 - test_acc.reshape(P, K0) @ rho_test, 0.0, 1.0)
    sym = T.symmetry is not None
    if L == 1 or p0.loss.affine_prox or isotropic_softmax_metric(T.outputs, Vf):
        train_acc, train_err = train_accuracy(T.outputs, mf, zero, Qf, Vf)
        train_error = np.clip(1.0 - train_acc.reshape(P, K0) @ rho, 0.0, 1.0)
        train_errs = np.full(P, train_err)
    else:  # the boundary integrals of each point's clusters
        train_error, train_errs = np.empty(P), np.empty(P)
        for i, p in enumerate(T.problems):
            acc, train_errs[i] = train_accuracy(p, m[i] - b[i], b[i], Q[i], V[i], exchangeable=sym)
            train_error[i] = np.clip(1.0 - rho @ acc, 0.0, 1.0)
    train_loss = ev.moments.Eloss.reshape(P, K0) @ rho
    if sym:  # cluster 0's risk stands for its point's clusters
        rows = T.rows
        test_loss = gaussian_risk(p0.loss, T.outputs.y[rows], mf[rows], Qf[rows], T.rule)
    else:
        test_loss = gaussian_risk(p0.loss, T.outputs.y, mf, Qf, T.rule).reshape(P, K0) @ rho_test
    Qh, Mh, Vh = (
        ev.Qhat.reshape(P, K0, L, L),
        ev.Mhat.reshape(P, K0, L),
        ev.Vhat.reshape(P, K0, L, L),
    )
    M = m - b[:, None, :]  # (each point's ``m[i] - b[i]``, all at once: the same numbers)
    # (the floats of each array at once: ``tolist`` gives each entry's ``float``)
    values = zip(
        test_error.tolist(),
        train_error.tolist(),
        train_loss.tolist(),
        test_loss.tolist(),
        train_errs.tolist(),
    )
    return [
        Observables(
            state=(Q[i], M[i], V[i], b[i]),
            hats=(Qh[i], Mh[i], Vh[i]),
            test_error=te,
            train_error=tre,
            train_loss=trl,
            test_loss=tl,
            errors={
                "test_error": test_err,
                "train_error": err,
                "train_loss": 0.0,
                "test_loss": 0.0,
            },
        )
        for i, (te, tre, trl, tl, err) in enumerate(values)
    ]


def _own_refined_pairs(T: StackedMap) -> bool:
    """Whether the refined re-solve of an error estimate (and the sharp regime's re-solve)
    of the points of ``T`` starts from each point's own secant pairs
    (:meth:`StackedMap.pairs`), by whether they have more than one effective output
    (``T.L``; the one key of both callers: K = 3 square, several outputs without
    quadrature, has neither re-solve).  One output: yes, as a single point's; the binary
    logistic curve then takes its single points' ``n_iter`` at every point, and the lasso
    sweep (20 lambdas in [1e-2, 1]) 50 stacked evaluations instead of 53.  Two outputs (K = 3
    cross-entropy, whose refined rule has four times the curve's nodes): no, the stacked
    history (pairs only for the points that froze within the memory); measured on 20 lambdas
    in [1e-3, 10] at alpha = 2: 1.00 million node-evaluations against 1.12 million from each
    point's own pairs and 1.30 million without pairs, and again once the estimate's
    observables came from the last refined evaluation (:func:`_refined_solve`): 0.64
    million against 0.81 million from each point's own pairs."""
    return T.L == 1


class _SharpPoint(Exception):
    """The first point of a stacked solve of two outputs is in the sharp regime."""


#: a stacked solve of two outputs gives up where an image of the map at the curve's first
#: point has an overlap ``Q_c`` with an eigenvalue above this many times
#: :data:`~gaussmix.theory.tolerances.SMOOTH_Q_MAX` (the sharp regime's threshold, tested
#: at the fixed point).  Measured at K = 3 cross-entropy, alphas in [0.2, 4], from the cold
#: start: the largest eigenvalue of the first image is within 30 % of the fixed point's
#: (96 against 73 at lam = 1e-3, 15.0 against 13.9 at 1e-2, 2.43 against 2.34 at 0.1)
SHARP_IMAGE_FACTOR = 2.0


def _stop_if_first_is_sharp(T: StackedMap, opts: SolverOptions, every: bool = False) -> None:
    """Make the stacked iteration of ``T`` stop (:class:`_SharpPoint`) as soon as the
    curve's first point (``every``: any point) converges in the sharp regime (the test
    :func:`_sharp` makes at the end, made as it freezes at its own fixed point), or its
    image is far into it (:data:`SHARP_IMAGE_FACTOR`): a curve that goes back to the
    point-by-point solve pays little of the stacked one."""
    watched = np.ones(T.n_points, dtype=bool)
    if not every:
        watched[1:] = False
    clusters = watched[T.row_of_cluster]

    def check(points: np.ndarray, x: np.ndarray) -> None:
        new = points & watched
        if new.any() and any(r is not None for r in _sharp(T, x, opts, new)):
            raise _SharpPoint

    def far(g: np.ndarray) -> None:
        Q = unpack_state(g, T.K, T.L)[0][clusters]
        if np.isfinite(Q).all() and sym_eigvals(Q).max() > SHARP_IMAGE_FACTOR * SMOOTH_Q_MAX:
            raise _SharpPoint

    T.on_freeze, T.on_image = check, far


def _sharp(
    T: StackedMap, x: np.ndarray, opts: SolverOptions, points: np.ndarray | None = None
) -> list:
    """The sharp rule of each point of the stacked state ``x`` (of ``points``, a mask)
    solved with the automatic rule of the smooth regime, as a single point tests it
    (:func:`~gaussmix.theory.refinement.sharp_rule`; None: its rule stays): the points at
    most at the threshold without a call, and without the symmetry one call for all the
    points above it (its rule there does not depend on the state)."""
    p0 = T.problems[0]
    idx = np.arange(T.n_points) if points is None else np.flatnonzero(points)
    if not needs_quadrature(p0):
        return [None] * idx.size
    # each point's largest overlap eigenvalue, all at once (the same numbers as each
    # point's own test: the eigenvalues are block by block)
    top = sym_eigvals(T.unpack(x)[0][idx]).max(axis=(1, 2))
    if top.max() <= SMOOTH_Q_MAX:
        return [None] * idx.size
    rule = channel_rule(p0, None, opts.symmetry)
    sym = T.symmetry is not None
    states = T.split(x)
    out: list = [None] * idx.size  # (a point at most at the threshold: its rule stays)
    same = None  # without the symmetry, the rule of every point above it (state-free)
    for k in np.flatnonzero(~(top <= SMOOTH_Q_MAX)):  # (NaN: tested, as each point's)
        i = idx[k]
        if sym or same is None:
            out[k] = sharp_rule(T.problems[i], rule, states[i], symmetric=sym)
            same = (out[k],)
        else:
            out[k] = same[0]
    return out


def _converged(
    T: StackedMap,
    x0: np.ndarray,
    history: AndersonState | None,
    opts: SolverOptions,
    report: Callable[..., None] | None = None,
):
    """The stacked iteration of ``T`` from ``x0`` (:func:`_iterated`), or None where it
    fails."""
    try:
        out = _iterated(T, x0, history, opts, report)
    except _SharpPoint:
        return None
    if not out.converged or not T.is_valid(out.x):
        return None
    return out


def _iterated(
    T: StackedMap,
    x0: np.ndarray,
    history: AndersonState | None,
    opts: SolverOptions,
    report: Callable[..., None] | None = None,
    on_step: Callable[[IterationState], IterationState | None] | None = None,
) -> IterationOutcome:
    """The stacked iteration of ``T`` from ``x0`` with the secant pairs ``history``, with
    the solver's options, each point frozen at its own convergence (``report``: the
    iteration's callback; ``on_step``: :func:`~gaussmix.theory.iteration.iterate`'s)."""
    kw = dict(tol=opts.tol, max_iter=opts.max_iter, damping=opts.damping)
    T.freeze_tol = opts.tol
    T.trail_len = opts.anderson + 1
    anderson = T.anderson(opts.anderson, history)
    return iterate(T, x0, anderson, return_image=False, callback=report, on_step=on_step, **kw)


def _first_solve(
    T: StackedMap,
    x0: np.ndarray,
    opts: SolverOptions,
    on_converged: Callable[[int], None] | None = None,
) -> tuple[StackedMap, IterationOutcome | None]:
    """The first stacked solve of a curve, from the cold start ``x0`` (:func:`_converged`),
    and the map that made it: for a sweep over lambda (:func:`_seed_params`) with its slow
    points restarted from their fast neighbours (:func:`_seeded_iterate`), and where that
    fails (a restarted point rejected by the safeguard or late, no convergence) again
    without, on a fresh map with ``T``'s hooks: the plain solve, as for every other curve.
    ``on_converged``: :func:`solve_points`'s, with the number of points frozen in the map
    iterated, never fewer than it reported before (a progress bar's count does not go back
    where the first solve is made again)."""

    most = [0]  # the most points reported (the count never goes back)

    def reporter(T: StackedMap) -> Callable[..., None] | None:
        if on_converged is None:
            return None

        def report(*_) -> None:
            most[0] = max(most[0], int(T.frozen.sum()))
            on_converged(most[0])

        return report

    params = _seed_params(T)
    if params is not None:
        try:
            out = _seeded_iterate(T, x0, params, reporter(T), opts)
        except _SharpPoint:
            return T, None
        if out is not None and out.converged and T.is_valid(out.x):
            return T, out
        fresh = StackedMap(T.problems, T.rule, T.symmetry, T.log_chart)
        fresh.on_freeze, fresh.on_image = T.on_freeze, T.on_image
        T = fresh
    return T, _converged(T, x0, None, opts, reporter(T))


#: A sweep over lambda solved as one stacked state restarts its slow points once
#: (:func:`_seeded_iterate`), after the first evaluation where at least
#: :data:`SEED_FRACTION` of its points (the seeds) have an own residual below this: their
#: images are then within about this of their fixed points.  The constants below were
#: chosen on 21 sweeps (BENCHMARKS.md, "Stacked sweeps over lambda seeded from their fast
#: points"), counting the stacked map's evaluations: the lasso sweep of
#: ``benchmarks/bench_curves.py`` 47 -> 34, its K = 3 cross-entropy sweep 31 -> 23; with
#: seeds below 3e-3 (later) 35 and 24, and one lasso sweep 99 instead of 52.
SEED_TOL = 1e-2

#: The points restarted: those not frozen whose own residual is at least this (a point
#: nearly converged goes on: restarting every point above :data:`SEED_TOL`, a lasso + square
#: sweep took 48 evaluations instead of 25, its restarted points rejected).
SEED_RESTART = 3e-2

#: The prediction of a restarted point goes through this many seeds, the nearest to it in
#: ``log lambda`` (3: a quadratic; with 2, a secant, the two sweeps of :data:`SEED_TOL` took
#: 38 and 35 evaluations, with 4, 35 and 32).
SEED_POINTS = 3

#: The fraction of a sweep's points below :data:`SEED_TOL` at which its slow points are
#: restarted (0.3 and 0.4: an earlier restart, from fewer seeds, 32 and 40 on the two sweeps
#: of :data:`SEED_TOL`, and 83 and 122 instead of 45 and 87 on two lasso sweeps from 1e-3; 0.6:
#: 37 and 23, and one lasso sweep whose solve ran to 1190 evaluations before
#: :data:`SEED_BUDGET`).
SEED_FRACTION = 0.5

#: A seeded iteration of a sweep over lambda not converged this many times the
#: evaluations before the restart after it (and at least
#: :data:`~gaussmix.experiments.continuation.PREDICTOR_MIN_ITER`) is abandoned for the
#: plain one (:func:`_first_solve`): the restart is a heuristic on a map whose convergence
#: from afar is erratic (the one lasso sweep above, 1190 -> 218 evaluations), and the
#: abandoned part bounds what it can cost.  A curve over alpha has no such budget (the
#: safeguard still judges each restarted point where it freezes): the point at its end,
#: extrapolated from its seeds, may take longer from its prediction than the budget and
#: still far less than the plain solve, which waits for its slowest cold point (the
#: square loss at ``lam = 1.16e-3`` on a block mixture, 20 alphas in [0.77, 14.9]:
#: restarted after 17 evaluations, 19 points converged, its point at alpha = 0.77 froze
#: 56 after, where its cold point takes 124; the curve 73 evaluations, against 226 for
#: the plain solve alone; ``benchmarks/bench_curves.py --grids``).  And a curve over
#: alpha restarts once half its points have converged (not once half are below
#: :data:`SEED_TOL`): only the points slower than its median point are restarted, and a
#: curve whose points converge alike keeps its single points' iterates (the four curves
#: over alpha of ``bench_curves.py``: not restarted, the same evaluations).
SEED_BUDGET = 3


def _seed_params(T: StackedMap) -> np.ndarray | None:
    """``log lambda`` of each point of ``T`` where its points are a sweep over lambda that
    is seeded (:func:`_seeded_iterate`: one ``alpha``, distinct positive ``lam``, at least
    :data:`SEED_POINTS` + 1 points), ``log alpha`` where they are a curve over alpha (one
    ``lam``, distinct ``alpha``, as many points), else None."""
    lams = T.lams
    alphas = np.array([p.alpha for p in T.problems])
    if alphas.size <= SEED_POINTS:
        return None
    if np.unique(alphas).size == alphas.size and np.unique(lams).size == 1:
        return np.log(alphas)
    if np.unique(alphas).size > 1 or not (lams > 0).all():
        return None
    if np.unique(lams).size < lams.size:
        return None
    return np.log(lams)


def _own_residuals(T: StackedMap) -> np.ndarray:
    """Each point's own residual ``max |T(x) - x| / s`` at the last evaluation of ``T``
    (its trail; inf where not finite): the freeze test's of that evaluation where it made
    them (the same numbers: a non-finite residual is infinite either way)."""
    if T.own_at is not None and T.own_at[0] == T.evaluations:
        return T.own_at[1]
    return T.own_residuals(*T.trail[-1])


def _seeded_iterate(
    T: StackedMap,
    x0: np.ndarray,
    params: np.ndarray,
    report: Callable[..., None] | None,
    opts: SolverOptions,
) -> IterationOutcome | None:
    """The stacked iteration of a sweep over lambda or a curve over alpha (``params``: each
    point's ``log lambda`` or ``log alpha``, :func:`_seed_params`) from the cold start
    ``x0``, its slow points restarted once from their solved neighbours: a continuation
    inside the one stacked solve.

    The points of a sweep converge from the cold start at very different speeds (lasso +
    logistic, alpha = 1: 11 evaluations at ``lam = 1`` and 34 at ``1e-2``, where ``V``
    marches to its fixed point and overshoots; BENCHMARKS.md), and the stacked solve takes
    the slowest one's.  Here, after the first evaluation where at least
    :data:`SEED_FRACTION` of the points have an own residual below :data:`SEED_TOL`
    (:func:`_own_residuals`; the seeds, their images standing for their fixed points),
    every point not frozen whose residual is at least :data:`SEED_RESTART` is restarted
    from the Lagrange polynomial in ``log lambda`` through the :data:`SEED_POINTS` seeds
    nearest to it (:func:`~gaussmix.experiments.continuation.predict`, in the logarithmic
    chart's coordinates, :class:`~gaussmix.theory.state.LogChart`, where ``V ~ 1 / lam`` is
    linear), its secant pairs zeroed (its block of the Anderson mixing starts afresh), the
    others going on with theirs (the iteration's ``on_step``, :class:`_Seeding`).  After
    the first evaluation at the predictions, a point whose own residual there is not below
    its residual before goes back to its iterate and pairs of then.  Every point still
    converges to the same test (its own residual below ``tol``) and is frozen there: a
    restarted point's answer is its fixed point within the iteration's tolerance, not its
    single point's iterates.

    The safeguard of the continuation
    (:func:`~gaussmix.experiments.continuation.prediction_accepted`): a restarted point's
    fixed point must be closer to its prediction than the prediction is to its nearest
    seed's state, and it must converge within the predictor's budget
    (:data:`~gaussmix.experiments.continuation.PREDICTOR_ITER_FACTOR` times the evaluations
    before the restart, at least
    :data:`~gaussmix.experiments.continuation.PREDICTOR_MIN_ITER`), and every point within
    :data:`SEED_BUDGET` times them (a sweep over lambda; on a curve over alpha the
    safeguard alone); otherwise None, and the curve's first solve is made again without
    the restart (:func:`_first_solve`).  Without enough seeds, or nothing to
    restart, the iteration is the plain one.  A curve over alpha restarts once
    :data:`SEED_FRACTION` of its points have converged (frozen), see :data:`SEED_BUDGET`.
    Deterministic: the trigger, the seeds and the predictions depend on the iterates
    only."""
    seeding = _Seeding(T, params)
    try:
        out = _iterated(T, x0, None, opts, report, on_step=seeding)
    except _SeedRejected:
        return None
    if out.converged and seeding.rejections(final=True):
        return None
    return out


class _SeedRejected(Exception):
    """A restarted point of a seeded stacked solve is rejected by the safeguard."""


class _Seeding:
    """The restart of a stacked sweep's slow points (:func:`_seeded_iterate`): the
    iteration's ``on_step``, and the safeguard's record of the restarted points."""

    def __init__(self, T: StackedMap, params: np.ndarray) -> None:
        self.T, self.params = T, params
        #: whether the restarted points have a budget (a sweep over lambda, SEED_BUDGET)
        self.budgeted = len({p.alpha for p in T.problems}) == 1
        self.need = max(SEED_POINTS, math.ceil(SEED_FRACTION * T.n_points))
        self.done = False  # restarted once (or found nothing to restart)
        self.at = 0  # the evaluations before the restart
        self.waiting: dict[int, tuple[dict, dict]] = {}  # point -> (prediction, nearest seed)
        #: (the iterate, secant pairs and own residuals before the restart) until the first
        #: evaluation at the predictions
        self.trial: tuple | None = None

    def __call__(self, s: IterationState) -> IterationState | None:
        T = self.T
        if self.trial is not None:
            return self._tried(s)
        if self.done:
            if not self.budgeted:  # a curve over alpha: the safeguard only
                if self.rejections():
                    raise _SeedRejected
                return None
            budget = max(PREDICTOR_MIN_ITER, PREDICTOR_ITER_FACTOR * self.at)
            late = s.n_iter - self.at >= budget
            cap = max(PREDICTOR_MIN_ITER, SEED_BUDGET * self.at)
            if self.rejections(final=late) or s.n_iter - self.at >= cap:
                raise _SeedRejected
            return None
        if not T.trail:
            return None
        own = _own_residuals(T)
        # (a curve over alpha: once half its points have converged, its own points'
        # count, so that only the points slower than its median point are restarted)
        below = own < SEED_TOL if self.budgeted else T.frozen
        if below.sum() < self.need or not (own >= SEED_RESTART).any():
            return None
        self.done, self.at = True, s.n_iter
        made = _reseed(T, s.x, own, self.params)
        if made is None:
            return None
        x, points, predictions, nearest = made
        self.waiting = {j: (p, q) for j, p, q in zip(points, predictions, nearest)}
        self.trial = (s.x, s.anderson, own)
        return self._restarted(s, x, _point_mask(T.n_points, points)[T.blocks])

    @staticmethod
    def _restarted(
        s: IterationState, x: np.ndarray, mask: np.ndarray, anderson: AndersonState | None = None
    ) -> IterationState:
        """The iteration going on from ``x``, the points of the components ``mask`` having
        jumped: their secant pairs zeroed (or ``anderson``), and no last evaluation, so that
        the next evaluation makes no pair (its difference from the last would span the
        jump: a secant across a long stretch of the map, which, kept, made the sweeps of
        ``SEED_BUDGET``'s measurements slower, one of them from 87 to 3086 evaluations);
        the damping and the divergence test's best step are the iteration's."""
        if anderson is None:
            anderson = _without(s.anderson, mask)
        return s._replace(x=x, anderson=anderson, last=None)

    def _tried(self, s: IterationState) -> IterationState | None:
        """After the first evaluation at the predictions: the restarted points whose own
        residual there is not below their residual before the restart go back to their
        iterate and secant pairs of then (a prediction no better than where the point
        was), the others go on from their predictions."""
        x_old, anderson_old, own_old = self.trial
        self.trial = None
        own = _own_residuals(self.T)
        back = [j for j in self.waiting if not own[j] < own_old[j]]
        if not back:
            return None
        for j in back:
            del self.waiting[j]
        mask = _point_mask(self.T.n_points, back)[self.T.blocks]
        x = np.where(mask, x_old, s.x)
        anderson = replace(
            s.anderson,
            dxs=tuple(np.where(mask, a, d) for a, d in zip(anderson_old.dxs, s.anderson.dxs)),
            dgs=tuple(np.where(mask, a, d) for a, d in zip(anderson_old.dgs, s.anderson.dgs)),
        )
        return self._restarted(s, x, mask, anderson)

    def rejections(self, final: bool = False) -> bool:
        """Whether a restarted point is rejected: frozen at a fixed point the safeguard
        rejects (:func:`~gaussmix.experiments.continuation.prediction_accepted`), or, with
        ``final`` (the end of the iteration, or the predictor's budget spent:
        :data:`~gaussmix.experiments.continuation.PREDICTOR_ITER_FACTOR` times the
        evaluations before the restart, at least
        :data:`~gaussmix.experiments.continuation.PREDICTOR_MIN_ITER`), not frozen.  The
        frozen points accepted are no longer watched (the frozen points tested at once,
        :func:`~gaussmix.experiments.continuation.predictions_accepted`)."""
        T = self.T
        frozen = [j for j in self.waiting if T.frozen[j]]
        if final and len(frozen) < len(self.waiting):
            return True
        if not frozen:
            return False
        parts = T.unpack(T.frozen_x)  # (each point's state at its freeze)
        fixed = [_PointState(*(a[j] for a in parts)) for j in frozen]
        watched = [self.waiting.pop(j) for j in frozen]
        accepted = predictions_accepted(fixed, *(list(w) for w in zip(*watched)))
        return not accepted.all()


def _without(history: AndersonState, mask: np.ndarray) -> AndersonState:
    """The secant history ``history`` with the components ``mask`` of its pairs zeroed (the
    blocks of restarted points mix afresh; a block whose pairs are zero takes the damped
    step)."""
    return replace(
        history,
        dxs=tuple(np.where(mask, 0.0, d) for d in history.dxs),
        dgs=tuple(np.where(mask, 0.0, d) for d in history.dgs),
    )


class _PointState(NamedTuple):
    """A point's ``Q, M, V, b`` (a state, or its chart coordinates) as the continuation's
    predictor and safeguard read a result."""

    Q: np.ndarray
    M: np.ndarray
    V: np.ndarray
    b: np.ndarray
    success: bool = True


def _reseed(
    T: StackedMap, x_next: np.ndarray, own: np.ndarray, params: np.ndarray
) -> tuple[np.ndarray, list[int], list[dict], list[dict]] | None:
    """The next stacked iterate ``x_next`` with the slow points (not frozen, own residual ``own``
    at least :data:`SEED_RESTART`) replaced by their predictions from the seeds (below it, at
    their images of the last evaluation), see :func:`_seeded_iterate`; with the restarted
    points, their predictions and their nearest seeds' states (dicts of ``Q, M, V, b``).
    None where no point can be predicted (fewer than two seeds in the chart).  The seeds
    enter the chart, and the predictions leave it, all at once (:func:`_charted`)."""
    x_last, g_last = T.trail[-1]
    # each point's state: a frozen point's own, else its image of the last evaluation
    at = np.where(T.frozen[T.blocks], x_last, g_last)
    below = np.flatnonzero(own < SEED_TOL)
    charted = _charted(T, at, below, forward=True)
    seeds = [int(i) for i, y in zip(below, charted) if y is not None]
    if len(seeds) < 2:
        return None
    charted = {int(i): y for i, y in zip(below, charted) if y is not None}
    states = dict(zip(seeds, _point_dicts(T.unpack(at), seeds)))
    slow = np.flatnonzero((own >= SEED_RESTART) & ~T.frozen)
    preds = []
    for j in slow:
        # the nearest seeds, the nearest last (predict's order), ties by index
        near = sorted(seeds, key=lambda i: (-abs(params[i] - params[j]), -i))[-SEED_POINTS:]
        done = [(float(params[i]), _PointState(**charted[i])) for i in near]
        preds.append((predict(done, float(params[j]), SEED_POINTS), near[-1]))
    x = x_next.copy()
    points, predictions, nearest = [], [], []
    inverse = _charted(T, [pred for pred, _ in preds], slow, forward=False)
    for j, xj, (_, seed) in zip(slow, inverse, preds):
        if not np.isfinite(xj).all():
            continue
        x[T.blocks == j] = xj
        points.append(int(j))
        predictions.append(dict(zip("QMVb", unpack_state(xj, T.K0, T.L))))
        nearest.append(states[seed])
    if not points:
        return None
    return x, points, predictions, nearest


def _point_dicts(parts: tuple[np.ndarray, ...], points) -> list[dict]:
    """``Q, M, V, b`` of each of ``points`` (dicts) of a state's parts with a leading axis of
    points (:meth:`StackedMap.unpack`)."""
    return [dict(zip("QMVb", (a[i] for a in parts))) for i in points]


def _charted(T: StackedMap, z, points: np.ndarray, forward: bool) -> list:
    """The chart's coordinates of ``points`` (increasing) of the stacked state ``z``
    (``forward``: dicts of ``Q, M, V, b``, None for a point not in the chart,
    :meth:`~gaussmix.theory.state.LogChart.forward`), or the state vector of each point of
    the chart's coordinates ``z`` (dicts of ``Q, M, V, b``, one a point,
    :meth:`~gaussmix.theory.state.LogChart.inverse`): the points' overlaps in one stacked
    call of the chart (its matrix logarithms and exponentials are matrix by matrix: each
    point's the same numbers as on its own), a point at a time where a forward one fails
    (which points are in the chart: each point's own test)."""
    n, K0, L = len(points), T.K0, T.L
    if n == 0:
        return []
    chart = LogChart(n * K0, L)
    if forward:
        y = chart.forward(z[_point_mask(T.n_points, list(points))[T.blocks]])
        if y is None:  # some point is not in the chart: each point's own test
            one = LogChart(K0, L)
            ys = [one.forward(z[T.blocks == i]) for i in points]
            return [None if y is None else dict(zip("QMVb", unpack_state(y, K0, L))) for y in ys]
        parts = unpack_state(y, n * K0, L)
    else:
        y = pack_state(*(np.concatenate([d[k] for d in z]) for k in "QMVb"))
        parts = unpack_state(chart.inverse(y), n * K0, L)
    Q, M, V, b = parts
    parts = (Q.reshape(n, K0, L, L), M.reshape(n, K0, L), V.reshape(n, K0, L, L), b.reshape(n, L))
    if forward:
        return _point_dicts(parts, range(n))
    return [pack_state(*(a[k] for a in parts)) for k in range(n)]


def solve_points(
    problems: list[Problem],
    opts: SolverOptions,
    *,
    on_converged: Callable[[int], None] | None = None,
) -> list[FixedPointResult] | None:
    """The fixed points of ``problems`` (problems that differ in ``lam`` and ``alpha``,
    :func:`stackable`) solved as one stacked state, each with its own integration error
    estimate and its result; None where the stacked solve fails (no convergence, a
    spurious or degenerate point) or, with two outputs, where a point is in the sharp
    regime, for the caller to solve point by point.

    One output, as a single point (:func:`~gaussmix.theory.solver.solve_problem`): every
    point starts from the solver's cold start (:meth:`StackedMap.start`) and the stacked
    state is iterated with the solver's automatic rule to ``opts.tol`` in every component
    of every point (a sweep over lambda restarting its slow points once from its fast
    ones, :func:`_first_solve`); the points in the sharp regime of the channel
    (:func:`~gaussmix.theory.refinement.sharp_rule`) are solved again, stacked, with its
    rule from there; then each group of points on one rule estimates its errors
    (:func:`_estimate`; a sweep over lambda with its refined re-solve merged into one
    iteration, :func:`_refined_solve`).  A point's ``n_iter`` counts the evaluations of the
    stacked maps up to its own convergence (the single point's count where the iterates
    agree: on a curve over alpha; a point of a sweep over lambda restarted from a prediction
    counts the evaluations before its restart too).

    Two outputs by quadrature (K = 3 cross-entropy), as the points of a curve solved one
    by one (:mod:`gaussmix.experiments.continuation`): the rule is one step down the
    refinement chain of the automatic rule
    (:func:`~gaussmix.experiments.continuation.chain_predecessor`), reached by continuation
    from its coarser rule (``opts.continuation``; a sweep over lambda restarting its slow
    points there once from its fast ones, :func:`_first_solve`), with the single point's
    symmetry of
    exchangeable clusters and chart; each point then refines it until its own estimate
    meets ``quad_tol``, so that its answer is on the automatic rule or finer (without an
    estimate by refinement, the automatic rule itself, and any point in the sharp regime
    sends the curve back to the points, which then carry no rule).  Where the
    curve's first point is in the sharp regime (a single point solves it on a rule of its
    own state, and so does the point-by-point curve for every point, none carrying a rule
    to the next) the curve goes back to the point-by-point solve; otherwise every point
    stays on the curve's rule, as the point-by-point curve carries it to every point after
    the first.

    ``on_converged(n)``, if given, is called after each evaluation of the stacked map in
    the solve on the curve's rule (after the continuation from its coarser rule, with two
    outputs) with the number ``n`` of points converged so far (frozen: their own
    residual passed the test), for a progress bar: it never goes back (where a seeded first
    solve is made again without its restart, the count stays where it was until the new
    solve passes it); the later stages (the sharp regime's re-solve, the error estimates)
    are not counted.  It does not change the iterates.
    """
    p0 = problems[0]
    sym, _ = map_features(p0, opts)
    log_chart = any(uses_log_chart(p) for p in problems)
    rule = channel_rule(p0, None, opts.symmetry)
    two = needs_quadrature(p0) and p0.dim > 1
    refines = opts.estimate_error and (not opts.auto_refine or opts.max_refine > 0)
    if two and refines:  # the curve's rule (continuation.curve_start_rule)
        rule = chain_predecessor(rule) or rule
    T = StackedMap(problems, rule, sym, log_chart)
    if two:
        _stop_if_first_is_sharp(T, opts, every=not refines)
    x0 = T.start()
    if not T.is_valid(x0):
        return None
    # the refined re-solves merged into one iteration (_refined_solve) where the curve's
    # iterates are not its single points' anyway: two outputs, and a sweep over lambda (one
    # alpha), whose first solve restarts its slow points (_first_solve)
    merge = two or len({p.alpha for p in problems}) == 1
    history = None
    coarse = rule.coarsened() if two and opts.continuation else None
    if coarse is not None:  # the continuation from the coarser rule (run_fixed_point)
        Tc = T.like(problems, coarse)
        _stop_if_first_is_sharp(Tc, opts, every=not refines)
        Tc, out = _first_solve(Tc, x0, opts)
        if out is None:
            return None
        x0, history = out.x, Tc.pairs(out.anderson, list(range(len(problems))), opts.anderson)
        T.warm_from(Tc)  # (two outputs: the curve's rule is not the single point's)
        n_coarse = Tc.own_iterations(out.n_iter)
    if coarse is None:
        T, out = _first_solve(T, x0, opts, on_converged)
    else:
        report = None if on_converged is None else lambda *_: on_converged(int(T.frozen.sum()))
        out = _converged(T, x0, history, opts, report)
    if out is None:
        return None
    residuals = np.where(T.frozen, T.residuals, out.residual)  # each point's own
    n_iters = T.own_iterations(out.n_iter) + (n_coarse if coarse is not None else 0)
    # (two outputs: the points after the first stay on the curve's rule, as point by point)
    sharps = [None] * len(problems) if two else _sharp(T, out.x, opts)
    groups: dict = {}  # the rule of each point -> its points
    for i, sharp in enumerate(sharps):
        groups.setdefault(sharp, []).append(i)
    results: list = [None] * len(problems)
    with warnings.catch_warnings(record=True) as caught:  # given once every point stands
        warnings.simplefilter("always")
        for sharp, idx in groups.items():
            T_g, x_g, n_iter, res_g = T, out.x, n_iters[idx], residuals[idx]
            hist = T.pairs(out.anderson, idx, opts.anderson, own=_own_refined_pairs(T))
            if len(idx) < len(problems):  # the group's points alone
                T_g = T.like([problems[i] for i in idx], rule)
                x_g = T.points_of(out.x, idx)
            if sharp is not None:  # in the sharp regime: its rule, from there
                # (with the secant pairs of the iteration that reached it, as a single
                # point's re-solve, solver.solve_problem)
                T_g = T_g.like(T_g.problems, sharp)
                out_g = _converged(T_g, x_g, hist, opts)
                if out_g is None:
                    return None
                x_g, n_iter = out_g.x, n_iter + T_g.own_iterations(out_g.n_iter)
                res_g = np.where(T_g.frozen, T_g.residuals, out_g.residual)
                hist = T_g.pairs(out_g.anderson, list(range(len(idx))), opts.anderson)
            done = _estimate(T_g, x_g, n_iter, res_g, opts, hist, merge=merge)
            if done is None:
                return None
            for i, res in zip(idx, done):
                results[i] = res
    for w in caught:
        # at the user's line: solve_points <- _curve <- learning_curve / lambda_sweep <- user
        warnings.warn(w.message, w.category, stacklevel=4)
    return results


def _estimate(
    T: StackedMap,
    x: np.ndarray,
    n_iter: np.ndarray,
    residual: np.ndarray,
    opts: SolverOptions,
    history: AndersonState | None = None,
    merge: bool = False,
) -> list[FixedPointResult] | None:
    """The results of the points of the stacked fixed point ``x`` of ``T``, each with its
    integration error estimated as :func:`~gaussmix.theory.refinement.estimate_errors`
    estimates a single point's: the stacked state re-solved with the refined rule (returning
    the image, so that the state moves with the rule), the change of each point's
    observables plus their own errors; again, for the points whose estimate of the test
    error or training loss exceeds ``quad_tol`` (``auto_refine``, at most ``max_refine``
    times); None after a failure.  As a single point's, each re-solve starts with the
    secant pairs of the last solve (``history``: those of the iteration that reached
    ``x``; with one output each point's own, :meth:`StackedMap.pairs`,
    :func:`_own_refined_pairs`) as its model of the Jacobian, and a point converged in it
    leaves it with its own image (with ``merge``, two outputs or a sweep over lambda: its
    last iterate, whose moments the map remembers, :func:`_refined_solve`)."""
    problems = T.problems
    kw = dict(tol=opts.tol, max_iter=opts.max_iter, damping=opts.damping)
    states = T.split(x)
    # each point's last solve: its stacked map, state and index there (its single point's
    # map made once, at the end, :meth:`StackedMap.point_maps`)
    where = [(T, x, i) for i in range(len(problems))]
    try:
        obs = _light_observables(T, x)
    except (FloatingPointError, np.linalg.LinAlgError, ValueError):
        return None
    quad = [dict.fromkeys(_ERROR_KEYS, 0.0) for _ in problems]
    evals = [dict(o.errors) for o in obs]
    n_iters = [int(n) for n in n_iter]
    residuals = [float(r) for r in residual]
    refinements = opts.max_refine if opts.auto_refine else 1
    refining = opts.estimate_error and needs_quadrature(problems[0]) and refinements > 0
    active = list(range(len(problems))) if refining else []
    # the last solve, its state and the active points among its
    T_last, x_last, active_last = T, x, active
    for _ in range(refinements if refining else 0):
        finer = where[active[0]][0].rule.refined()  # (the single point's bound on its nodes)
        if finer is None or finer.weights.size > MAX_QUADRATURE_NODES:
            break
        T2 = T.like([problems[i] for i in active], finer)
        T2.trail_len = opts.anderson + 1
        pairs = T_last.pairs(history, active_last, opts.anderson, own=_own_refined_pairs(T))
        x2 = T_last.points_of(x_last, active_last)
        if merge:  # (else each point's iterates from here are its single point's)
            T2.warm_from(T_last)
        solved = _refined_solve(T2, x2, T2.anderson(opts.anderson, pairs), opts, kw, merge)
        if solved is None:
            return None
        out2, own, own_res, history = solved
        T_last, x_last = T2, out2.x
        try:
            obs2 = _light_observables(T2, out2.x)
        except (FloatingPointError, np.linalg.LinAlgError, ValueError):
            return None
        split = T2.split(out2.x)
        still = []
        for j, i in enumerate(active):
            quad[i] = {k: abs(obs2[j].value(k) - obs[i].value(k)) for k in _ERROR_KEYS}
            evals[i] = dict(obs2[j].errors)
            states[i], obs[i], where[i] = split[j], obs2[j], (T2, out2.x, j)
            n_iters[i] += int(own[j])
            residuals[i] = float(own_res[j])
            total = {k: quad[i][k] + evals[i][k] for k in ("test_error", "train_loss")}
            if max(total.values()) > opts.quad_tol:
                still.append(i)
        active_last = [active.index(i) for i in still]  # (in T_last's points)
        active = still
        if not active:
            break
    opts = replace(opts, throw=False)
    maps = _point_maps(where, states)
    try:
        priors = _prior_details(T, [T_i.last for T_i in maps])
        fulls = with_statistics_points(problems, maps, states, obs, priors)
    except (FloatingPointError, np.linalg.LinAlgError, ValueError):
        return None
    ests = [
        Estimate(
            maps[i],
            states[i],
            n_iters[i],
            residuals[i],
            IterationStatus.CONVERGED,
            "converged",
            full,
            quad[i],
            evals[i],
        )
        for i, full in enumerate(fulls)
    ]
    results = assemble_results(problems, opts, ests)
    if not all(res.success for res in results):  # a spurious or degenerate point: point by point
        return None
    return results


def _point_maps(
    where: list[tuple[StackedMap, np.ndarray, int]], states: list[np.ndarray]
) -> list[FixedPointMap]:
    """Each point's single point's map at its state ``states[i]`` in its last solve
    (``where``: the stacked map, its state and the point's index there), one
    :meth:`StackedMap.point_maps` for the points of each solve."""
    maps: list = [None] * len(where)
    solves: dict = {}  # id of a stacked map -> (it, its state, its points, theirs here)
    for i, (T, x, j) in enumerate(where):
        _, _, points, mine = solves.setdefault(id(T), (T, x, [], []))
        points.append(j)
        mine.append(i)
    for T, x, points, mine in solves.values():
        for i, m in zip(mine, T.point_maps(x, points, [states[i] for i in mine])[1]):
            maps[i] = m
    return maps


def _prior_details(T: StackedMap, hats: list[HatEvaluation]) -> list[PriorResult]:
    """The prior's details (``psi_w``, penalty, sparsity) at each point's hats, one prior
    update for all points (:func:`~gaussmix.theory.prior.prior_update` with ``details``)."""
    Qh, Mh, Vh = (np.stack([getattr(h, f) for h in hats]) for f in ("Qhat", "Mhat", "Vhat"))
    pr = prior_update(T.problems[0], Qh, Mh, Vh, lam=T.lams, details=True)
    # (the floats of each array at once: ``tolist`` gives each entry's ``float``)
    floats = zip(
        *(np.asarray(a, dtype=float).tolist() for a in (pr.psi_w, pr.penalty, pr.l1_norm))
    )
    return [
        PriorResult(
            Q=pr.Q[i],
            M=pr.M[i],
            V=pr.V[i],
            psi_w=psi_w,
            penalty=penalty,
            atom_nonzero=pr.atom_nonzero[i],
            l1_norm=l1_norm,
        )
        for i, (psi_w, penalty, l1_norm) in enumerate(floats)
    ]


#: the fields of the channel moments
_MOMENTS = tuple(ChannelMoments.__dataclass_fields__)


def _merged(old: np.ndarray, new: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``old`` with its ``rows`` (indices) replaced by ``new``."""
    out = old.copy()
    out[rows] = new
    return out


#: the arrays of a warm start of the proximal solves
_WARM = ("h", "omega", "V")


def _warm_rows(warm: ProxWarmStart, rows: np.ndarray) -> ProxWarmStart:
    """The warm start of the proximal solves of the clusters ``rows`` (indices)."""
    rule, shape = warm.key
    return ProxWarmStart(
        (rule, (rows.size, *shape[1:])), *(np.take(getattr(warm, f), rows, 0) for f in _WARM)
    )
