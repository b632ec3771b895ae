"""Theorem 1's map for the points of a curve at once: a state with a leading axis of points.

The ``P`` points of a curve (problems that differ only in ``lam`` and ``alpha``) are the
clusters of one *stacked* state

    x = (Q (P K), M (P K), V (P K), b (P L)),

(:func:`~gaussmix.theory.solve.state.pack_state`'s layout with one bias per point), and
:class:`StackedMap` is Theorem 1's map for all of them at once: one channel evaluation of
the ``P K`` clusters (the compiled kernels loop over clusters; with exchangeable clusters,
:class:`~gaussmix.theory.problem.symmetry.ClusterSymmetry`, of cluster 0 of each point, as a single
point's map), the Newton step of each point's bias
(:func:`~gaussmix.theory.solve.fixed_point.bias_step`), the priors of all points in one call
where the prior takes a leading axis of points
(:func:`~gaussmix.theory.prior.prior.ridge_prior` and
:func:`~gaussmix.theory.prior.prior.elastic_net_prior` on spectral covariances), else one
call a point with what a single point's map has (dense covariances with the joint Newton
step of the means and the bias, the lasso of several outputs with the panels of its own
rule, the single-precision phase; the zero estimator's bias, a rule with integrals of its
own: each point's image is its single point's, ``tests/test_one_map.py``).  The
iteration is the solver's own (:func:`~gaussmix.theory.solve.iteration.iterate`), each point
mixed with its own Anderson coefficients (``AndersonState.blocks``) and frozen, no longer
evaluated, once its own residual passes the convergence test: on a curve over alpha a
point's iterates are its single point's.  The stacked solve, its sharp-regime test and
each point's integration error estimate are :mod:`gaussmix.theory.solve.batch_solve`; the order
of the points and the restart of a sweep's slow points are the continuation's
(:mod:`gaussmix.experiments.continuation`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, replace
from typing import NamedTuple, Protocol

import numpy as np
from scipy.spatial import cKDTree

from gaussmix.core.memo import IdentityMemo

from ..channel.channel import (
    ChannelMoments,
    ProxWarmStart,
    channel_evaluation,
    flat_metrics,
    identity_prox_moments,
)
from ..numerics.quadrature import QuadratureRule
from ..prior.prior import (
    PriorResult,
    prior_update,
    single_precision_phase,
    takes_stacked_points,
)
from ..problem.problem import Problem
from ..problem.symmetry import ClusterSymmetry
from .fixed_point import (
    FixedPointMap,
    HatEvaluation,
    MapMemory,
    bias_step,
    flat_bias,
    initial_hats_points,
    mean_bias_step,
    new_map,
)
from .iteration import AndersonState
from .state import LogChart, is_valid_state, pack_state, residual_scale, unpack_state

__all__ = [
    "MOMENTS",
    "NO_FREEZING",
    "FreezeRecord",
    "Freezing",
    "StackedMap",
    "StackedMemory",
    "Watch",
    "point_mask",
]


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


class Watch(Protocol):
    """What a stacked solve watches as it goes (:class:`Freezing`): called with the map and
    the points that freeze (a mask) and the state, and with the map and every image; either
    may raise to stop the iteration."""

    def on_freeze(self, T: StackedMap, points: np.ndarray, x: np.ndarray) -> None: ...

    def on_image(self, T: StackedMap, g: np.ndarray) -> None: ...


@dataclass(frozen=True)
class Freezing:
    """How the iteration of a :class:`StackedMap` freezes its points: the settings of one
    stacked solve, given to the map's constructor.

    Attributes
    ----------
    tol : float, optional
        A point whose own residual is below it is converged and stops being evaluated (the
        iteration's ``tol``; None: no point freezes, e.g. a map that is only evaluated).
    trail : int
        Evaluations ``(x, T(x))`` kept (0: none): the last ones of the iteration, and each
        point's own at its freeze, whose differences are its own secant pairs
        (:meth:`StackedMap.pairs`).
    settle_tol : float, optional
        Set (with ``tol`` below it) for a solve that freezes a point at ``tol`` where it gets
        there within ``settle_extra`` evaluations after its residual first passed
        ``settle_tol``, and else at its image there
        (:func:`~gaussmix.theory.solve.batch_solve.refined_solve`).
    settle_extra : int
    watch : Watch, optional
        Told of every freeze and image (:class:`Watch`).
    """

    tol: float | None = None
    trail: int = 0
    settle_tol: float | None = None
    settle_extra: int = 0
    watch: Watch | None = None


#: a map whose points never freeze
NO_FREEZING = Freezing()


@dataclass(eq=False)
class FreezeRecord:
    """What the evaluations of one stacked iteration record as they go (which points froze
    where and after how many evaluations, the trail of evaluations), read by its caller
    during and after the iteration (:meth:`StackedMap.own_iterations`,
    :meth:`StackedMap.images`, :meth:`StackedMap.pairs`).

    The record of one iteration, made with its memory (:meth:`StackedMap.memory`) and
    carried in it (:class:`StackedMemory`, the iteration state's ``aux``); the map keeps
    none.  Its arrays are written in place by the evaluations of that iteration.
    """

    frozen: np.ndarray  # (P,) bool: the points frozen
    frozen_x: np.ndarray  # the state each point froze at
    frozen_g: np.ndarray  # and its image there
    residuals: np.ndarray  # each frozen point's residual
    frozen_after: np.ndarray  # each frozen point's evaluations
    has_trail: np.ndarray  # the points whose own trail is kept
    settled_g: np.ndarray  # each point's image at settle_tol (``freezing.settle_tol``)
    settled_res: np.ndarray  # its residual there
    settled_after: np.ndarray  # and its evaluations
    settled: np.ndarray  # the points frozen at their image there
    #: evaluations of the map in this iteration
    evaluations: int = 0
    #: each point's own residual at an evaluation, by the freeze test, and which
    #: evaluation (:meth:`StackedMap.last_own_residuals` reads it instead of making it again)
    own_at: tuple[int, np.ndarray] | None = None
    #: the last evaluations ``(x, T(x))`` of the iteration (``freezing.trail``)
    trail: list[tuple[np.ndarray, np.ndarray]] = field(default_factory=list)
    #: (freezing.trail, 2, components): each frozen point's last evaluations ``(x, T(x))``
    #: at its freeze, the newest last (the oldest repeated where it had fewer)
    point_trail: np.ndarray | None = None

    @classmethod
    def empty(cls, n_points: int, n_components: int) -> FreezeRecord:
        """The record before the first evaluation."""

        def nan(n: int) -> np.ndarray:
            return np.full(n, np.nan)

        def no(n: int) -> np.ndarray:
            return np.zeros(n, dtype=bool)

        P, n = n_points, n_components
        count = np.zeros(P, dtype=int)
        return cls(
            no(P), nan(n), nan(n), nan(P), count, no(P), nan(n), nan(P), count.copy(), no(P)
        )


class StackedMemory(NamedTuple):
    """What one evaluation of a :class:`StackedMap` hands to the next (the iteration
    state's ``aux``, as a single point's map's
    :class:`~gaussmix.theory.solve.fixed_point.MapMemory`).

    Attributes
    ----------
    ev : HatEvaluation or None
        The last channel evaluation (at ``ev.x``), returned again by :meth:`StackedMap.hats`
        at that state.
    rows : ChannelMoments or None
        The integrated clusters' moments of that evaluation (a frozen point's stand for its
        unchanged state at the next evaluation).
    warm : ProxWarmStart or None
        The proximal points of the last evaluation, the warm start of the next.
    owns_warm : bool
        Whether this memory alone holds ``warm``'s arrays (a partial evaluation then writes
        its clusters' proximal points into them instead of into copies; a memory handed to
        another map, :meth:`StackedMap.shared`, shares them until it evaluates).
    record : FreezeRecord
        The record of the iteration's freezes and trail.
    """

    ev: HatEvaluation | None
    rows: ChannelMoments | None
    warm: ProxWarmStart | None
    owns_warm: bool
    record: FreezeRecord


class StackedMap:
    """Theorem 1's map for ``P`` problems at once (a stacked state, see the module's
    docstring): the interface of a :class:`~gaussmix.theory.solve.fixed_point.FixedPointMap` for
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
        Mix in :class:`~gaussmix.theory.solve.state.LogChart` coordinates (each point's overlaps;
        the chart is block by block).
    freezing : Freezing
        How its iteration freezes converged points (default: never).
    prior_panels : int, optional
        Panels per outer dimension of the prior's own rule where it has one, as a single
        point's map's (:class:`~gaussmix.theory.solve.fixed_point.FixedPointMap`).
    single : bool
        Evaluate the prior in single precision (the first phase of a large dense fixed
        point), as a single point's map's.

    Notes
    -----
    A map is a frozen value set by its constructor: no attribute can be written afterwards
    (``AttributeError``).  What one evaluation hands to the next (the last evaluation, the
    proximal points, the record of which points froze where and of the trail of
    evaluations) is a :class:`StackedMemory` that :meth:`evaluate` takes and returns: the
    iteration carries it in its state (``aux``), and its caller reads the record from it.
    """

    def __init__(
        self,
        problems: list[Problem],
        rule: QuadratureRule,
        symmetry: ClusterSymmetry | None = None,
        log_chart: bool = False,
        freezing: Freezing = NO_FREEZING,
        *,
        prior_panels: int | None = None,
        single: bool = False,
    ) -> None:
        p0 = problems[0]
        P, K0, L = len(problems), p0.n_clusters, p0.dim
        # each point's alpha rho_c (one mixture), all at once
        alphas = np.array([p.alpha for p in problems])
        layout = _layout(P, K0, L, symmetry is not None)
        settings = dict(
            freezing=freezing,
            problems=problems,
            rule=rule,
            symmetry=symmetry,
            log_chart=log_chart,
            n_points=P,
            K0=K0,
            K=P * K0,
            L=L,
            ar=np.repeat(alphas, K0) * np.tile(p0.mixture.rho, P),
            lams=np.array([p.lam for p in problems]),
            prior_panels=prior_panels,
            single=single,
            # whether one prior call takes every point (the priors declared for a leading
            # axis of points, :func:`~gaussmix.theory.prior.prior.takes_stacked_points`);
            # else one call a point, each the single point's
            batched_prior=takes_stacked_points(p0.penalty_spec, p0.mixture, p0.P),
            outputs=_StackedOutputs(
                p0.loss, np.tile(p0.y, (P, 1)), _repeated(p0.constraints, P), P * K0, L, p0.P
            ),
            # the clusters whose channel is integrated (cluster 0 of each point with the
            # symmetry, every cluster without), the point of each, the point of each
            # cluster and the point of each component of the stacked state (Q, M, V: K0
            # blocks each; b: L)
            rows=layout[0],
            row_point=layout[1],
            row_of_cluster=layout[2],
            blocks=layout[3],
            # the components of each point in one run (a maximum over each point's
            # components by ``np.maximum.reduceat``, exact, instead of the slower
            # ``np.maximum.at``)
            _order=layout[4],
            _starts=layout[5],
        )
        for name, value in settings.items():
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(
            f"StackedMap.{name} is set by the constructor; make a new map (like) for "
            "other settings"
        )

    def like(
        self, problems: list[Problem], rule: QuadratureRule, freezing: Freezing = NO_FREEZING
    ) -> StackedMap:
        """A stacked map of ``problems`` with ``rule``, ``freezing`` and this map's symmetry,
        chart and prior panels, in double precision (its memory is the caller's:
        :meth:`shared`, :meth:`warm_from`)."""
        return StackedMap(
            problems,
            rule,
            self.symmetry,
            self.log_chart,
            freezing,
            prior_panels=self.prior_panels,
        )

    def memory(self) -> StackedMemory:
        """The memory before a first evaluation (a fresh record)."""
        return StackedMemory(None, None, None, False, FreezeRecord.empty(*self._sizes()))

    def _sizes(self) -> tuple[int, int]:
        return self.n_points, self.blocks.size

    def shared(self, other: StackedMap, memory: StackedMemory | None) -> StackedMemory:
        """The memory this map starts from after ``other``'s evaluations (``memory``): for
        the same points and rule (an iteration continued, a refined re-solve) ``other``'s
        proximal points as the warm start of its first evaluation, as a single point's
        iteration keeps them from one evaluation to the next (shared until either
        evaluates, :attr:`StackedMemory.owns_warm`); a fresh memory otherwise."""
        fresh = self.memory()
        if memory is None or self.rule != other.rule or self.n_points != other.n_points:
            return fresh
        if not all(p is q for p, q in zip(self.problems, other.problems)):
            return fresh
        return fresh._replace(warm=memory.warm)

    def warm_from(self, other: StackedMap, memory: StackedMemory | None) -> StackedMemory:
        """The memory that starts the first evaluation of this map (whose points are some of
        ``other``'s, in the same order, and whose rule is another) from the proximal points
        of ``other``'s last evaluation (``memory``), at the state this map starts from: each
        node's from the nearest node of ``other``'s rule (:func:`_nearest_nodes`), whose
        ``f = V^{-1}(h - omega)`` the compiled channel maps through this evaluation's nodes
        and metrics, as from one evaluation to the next
        (:class:`~gaussmix.theory.channel.channel.ProxWarmStart`).  The proximal solves
        converge to their own tolerance from any start; a good one saves Newton steps (a
        rule's first evaluation started from ``h = omega`` costs about 2.5 times a warm one,
        BENCHMARKS.md).  A fresh memory without ``other``'s proximal points."""
        fresh = self.memory()
        warm = None if memory is None else memory.warm
        if warm is None or warm.h.shape[0] != other.rows.size or self.rule == other.rule:
            return fresh
        ids = {id(p): i for i, p in enumerate(other.problems)}
        points = [ids.get(id(p)) for p in self.problems]
        if None in points or points != sorted(points):
            return fresh
        rows = point_mask(other.n_points, points)[other.row_point]
        nodes = _nearest_nodes(other.rule, self.rule)
        # (np.take gathers the nodes about 8 times faster than fancy indexing)
        h, omega = (np.take(a[rows], nodes, axis=1) for a in (warm.h, warm.omega))
        start = ProxWarmStart((self.rule, h.shape), h, omega, warm.V[rows])
        return fresh._replace(warm=start, owns_warm=True)

    def start(self) -> np.ndarray:
        """The solver's starting point of every point
        (:func:`~gaussmix.theory.solve.fixed_point.start_state` without ``init``), its prior
        update made for all points at once where the prior takes them (else point by point,
        each in the precision of its single point's start)."""
        Qh, Mh, Vh, lams, ybar = initial_hats_points(self.problems)
        if self.batched_prior:
            pr = prior_update(self.problems[0], Qh, Mh, Vh, lam=np.array(lams))
            Q, M, V = pr.Q, pr.M, pr.V
        else:
            prs = [
                prior_update(p, Qh[i], Mh[i], Vh[i], lam=lams[i], single=single_precision_phase(p))
                for i, p in enumerate(self.problems)
            ]
            Q, M, V = (np.stack([getattr(pr, f) for pr in prs]) for f in ("Q", "M", "V"))
        return self._pack(Q, M, V, np.tile(ybar, self.n_points))

    def _pack(self, Q: np.ndarray, M: np.ndarray, V: np.ndarray, b: np.ndarray) -> np.ndarray:
        """The stacked state of the points' overlaps (any leading shape)."""
        L = self.L
        return pack_state(Q.reshape(-1, L, L), M.reshape(-1, L), V.reshape(-1, L, L), b)

    def anderson(self, memory: int, previous: AndersonState | None = None) -> AndersonState:
        """A secant history that mixes each point with its own coefficients (empty, or the
        newest pairs of ``previous``, an iteration of the same stacked state); one point's
        without blocks (the same coefficients: a single point's mixing, to the bit)."""
        if self.n_points == 1:
            return AndersonState.init(memory, previous)
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
        return x[point_mask(self.n_points, points)[self.blocks]]

    def split(self, x: np.ndarray) -> list[np.ndarray]:
        """Each point's state of a stacked state (the rows of one array: each point's
        components in the order of its points are its state's layout,
        :func:`~gaussmix.theory.solve.state.pack_state`)."""
        return list(x[self._order].reshape(self.n_points, -1))

    def means(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(M_c + b, Q_c, V_c)`` of every point and cluster (its point's bias added),
        with a leading axis of points, and the biases; of the equivariant state
        (:meth:`~gaussmix.theory.problem.symmetry.ClusterSymmetry.symmetric_state`, ``b = 0``)
        with the symmetry, as a single point's map and observables read it."""
        Q, M, V, b = self.unpack(x)
        if self.symmetry is not None:
            Q, M, V, b = self.symmetry.symmetric_state(Q, M, V, b)
        return M + b[:, None, :], Q, V, b

    def is_valid(self, x: np.ndarray) -> bool:
        """:func:`~gaussmix.theory.solve.state.is_valid_state` of every point."""
        return is_valid_state(x, self.K, self.L)

    def hats(self, x: np.ndarray, memory: StackedMemory | None = None) -> HatEvaluation:
        """The channel of every stacked cluster at ``x`` in one evaluation (of cluster 0 of
        each point with the symmetry), and the hats ``alpha rho_c E[...]`` of each point:
        ``memory``'s evaluation where made at ``x``, else a new one."""
        return self.hats_memory(x, memory)[0]

    def hats_memory(
        self, x: np.ndarray, memory: StackedMemory | None = None
    ) -> tuple[HatEvaluation, StackedMemory]:
        """:meth:`hats` and the memory after it."""
        if memory is None:
            memory = self.memory()
        last = memory.ev
        if last is not None and last.x.shape == x.shape and (last.x == x).all():
            return last, memory  # (np.array_equal's test, without its cost)
        if self.n_points == 1 and not memory.record.frozen.any():
            return self._point_hats(x, memory)
        m, Q, V, _ = self.means(x)
        L = self.L
        rows = self.rows
        m, Q, V = m.reshape(-1, L)[rows], Q.reshape(-1, L, L)[rows], V.reshape(-1, L, L)[rows]
        y = self.outputs.y[rows]
        active = ~self._frozen_at(memory.record, x)[self.row_point]
        owns = memory.owns_warm
        if memory.rows is None or active.all():
            mom, warm = self._rows_channel(y, m, Q, V, memory.warm)
            owns = True  # (the evaluation's own arrays)
        else:  # the frozen points' moments are those of their (unchanged) states
            active = np.flatnonzero(active)  # (the rows by index: cheaper to gather)
            warm = memory.warm
            full = warm if warm is not None and warm.h.shape[0] == rows.size else None
            sub, warm_sub = self._rows_channel(
                y[active],
                m[active],
                Q[active],
                V[active],
                None if full is None else _warm_rows(full, active),
            )
            if full is not None and warm_sub is not None:  # the proximal points of every cluster
                if not owns:  # (copies: another memory holds these arrays)
                    full = ProxWarmStart(full.key, *(getattr(full, f).copy() for f in _WARM))
                    owns = True
                for f in _WARM:  # (a cluster's rows of a stacked rule: about 1 MB each)
                    getattr(full, f)[active] = getattr(warm_sub, f)
                warm = full
            mom = ChannelMoments(
                *(_merged(getattr(memory.rows, f), getattr(sub, f), active) for f in MOMENTS)
            )
        rows_mom = mom
        if self.symmetry is not None:  # cluster 0's moments stand for its point's clusters
            mom = self.symmetry.expand_point_moments(mom)
        ev = HatEvaluation.of(x, mom, self.ar)
        return ev, StackedMemory(ev, rows_mom, warm, owns, memory.record)

    def _point_hats(
        self, x: np.ndarray, memory: StackedMemory
    ) -> tuple[HatEvaluation, StackedMemory]:
        """:meth:`hats_memory` of a map of one point (not frozen): on the point's own arrays
        (no leading axis of points), the operations of a single point's map to the bit."""
        Q, M, V, b = unpack_state(x, self.K, self.L)
        y = self.outputs.y
        sym = self.symmetry
        if sym is not None:  # cluster 0's channel stands for all (its equivariant state)
            Q, M, V, b = sym.symmetric_state(Q, M, V, b)
            Q, M, V, y = Q[:1], M[:1], V[:1], y[:1]
        rows, warm = self._rows_channel(y, M + b, Q, V, memory.warm)
        mom = rows if sym is None else sym.expand_moments(rows)
        ev = HatEvaluation.of(x, mom, self.ar)
        return ev, StackedMemory(ev, rows, warm, True, memory.record)

    def _rows_channel(
        self,
        y: np.ndarray,
        m: np.ndarray,
        Q: np.ndarray,
        V: np.ndarray,
        warm: ProxWarmStart | None,
    ) -> tuple[ChannelMoments, ProxWarmStart | None]:
        """The channel moments of the integrated clusters (rows: outputs ``y``, means with
        their point's bias ``m``, overlaps ``Q``, metrics ``V``) from the proximal points
        ``warm``, and this evaluation's proximal points.  A rule with integrals of its own
        (``computes_moments``: cluster 0 of exchangeable clusters, the softmax normaliser's)
        takes each point's cluster 0 as a single point's map does, the zero estimator's
        point (``V_0 = Q_0 = 0``) by the identity prox
        (:meth:`~gaussmix.theory.solve.fixed_point.FixedPointMap.channel`)."""
        loss = self.problems[0].loss
        if self.symmetry is None or not self.rule.computes_moments:
            return channel_evaluation(loss, y, m, np.zeros(self.L), Q, V, self.rule, warm)
        parts = []
        for r in range(m.shape[0]):
            if flat_metrics(V[r : r + 1])[0] and not np.any(Q[r]):
                parts.append(
                    identity_prox_moments(loss, y[r : r + 1], m[r : r + 1], Q[r : r + 1], None)
                )
            else:
                parts.append(self.rule.cluster0_moments(self.symmetry.P, m[r], Q[r], V[r]))
        mom = ChannelMoments(*(np.concatenate([getattr(q, f) for q in parts]) for f in MOMENTS))
        return mom, warm

    def __call__(self, x: np.ndarray, memory: StackedMemory | None = None) -> np.ndarray:
        """``T(x)`` (:meth:`evaluate`'s image)."""
        return self.evaluate(x, memory)[0]

    def evaluate(
        self, x: np.ndarray, memory: StackedMemory | None = None
    ) -> tuple[np.ndarray, StackedMemory]:
        """``T(x)`` of every point: channel, Newton step of each bias, priors; and the
        memory of this evaluation for the next (its record written: the evaluation counted,
        the trail, the points that freeze)."""
        ev, memory = self.hats_memory(x, memory)
        return self.image(x, ev, memory)

    def image(
        self, x: np.ndarray, ev: HatEvaluation, memory: StackedMemory
    ) -> tuple[np.ndarray, StackedMemory]:
        """The second half of :meth:`evaluate`: the image at ``x`` from its channel
        evaluation ``ev`` (:meth:`hats_memory`'s, with its ``memory``), as a single point's
        map's (:meth:`~gaussmix.theory.solve.fixed_point.FixedPointMap.image`)."""
        P, L = self.n_points, self.L
        record = memory.record
        if P == 1:  # the point's own arrays (no leading axis)
            _, M, _, b = unpack_state(x, self.K, L)
            if self.symmetry is not None:  # the equivariant bias (see the channel)
                b = np.zeros_like(b)
            parts = self._point_image(self.problems[0], x, M, b, ev.Qhat, ev.Mhat, ev.Vhat)
            g = pack_state(*parts[:4])
        else:
            g = self._points_image(x, ev)
        watch, trail = self.freezing.watch, self.freezing.trail
        if watch is not None:
            watch.on_image(self, g)
        record.evaluations += 1
        if trail:
            record.trail.append((x.copy(), g.copy()))
            del record.trail[:-trail]
        if self.freezing.tol is not None:
            self._freeze(record, x, g)
        return g, memory

    def _point_image(
        self,
        problem: Problem,
        x: np.ndarray,
        M: np.ndarray,
        b: np.ndarray,
        Qhat: np.ndarray,
        Mhat: np.ndarray,
        Vhat: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, PriorResult]:
        """One point's image ``(Q, M, V, b)`` from its hats (of one point, no leading axis;
        ``x`` its state, ``M`` and ``b`` its means and bias) and its prior evaluation: the
        prior (this map's panels and precision); where the prior gives its mean response
        (ridge on dense covariances, :class:`~gaussmix.theory.prior.dense.MeanResponse`; no
        symmetry) the joint Newton step of the means and the bias
        (:func:`~gaussmix.theory.solve.fixed_point.mean_bias_step`: the same fixed points,
        reached in fewer iterations where the prior's gain is large); where the loss has no
        curvature and the bias condition is unmet, the zero estimator's bias
        (:func:`~gaussmix.theory.solve.fixed_point.flat_bias`); else the Newton step of the
        bias (:func:`~gaussmix.theory.solve.fixed_point.bias_step`)."""
        pr = prior_update(problem, Qhat, Mhat, Vhat, panels=self.prior_panels, single=self.single)
        response = pr.mean_response if self.symmetry is None else None
        if response is not None:
            step = mean_bias_step(response.gain, Vhat, Mhat, pr.M - M)
            if step is not None:
                dMhat, db = step
                dQ, dM = response.change(dMhat)
                return pr.Q + dQ, pr.M + dM, pr.V, b + db, pr
        Sv, Sm = Vhat.sum(axis=0), Mhat.sum(axis=0)
        if not Sv.any() and Sm.any():  # no curvature, the bias condition unmet
            bf = flat_bias(problem, x)
            if bf is not None:
                return pr.Q, pr.M, pr.V, bf, pr
        return pr.Q, pr.M, pr.V, b + bias_step(Sv, Sm), pr

    def _points_image(self, x: np.ndarray, ev: HatEvaluation) -> np.ndarray:
        """The image of two or more points: where the prior takes a leading axis of points
        (:data:`batched_prior`) one prior call and one bias step for all (each the single
        point's to rounding, ``tests/test_batched_curves.py``), the zero estimator's bias
        point by point; else each point's :meth:`_point_image`."""
        P, K0, L = self.n_points, self.K0, self.L
        _, Mx, _, b = self.unpack(x)
        if self.symmetry is not None:  # the equivariant bias (see the channel)
            b = np.zeros_like(b)
        Qh = ev.Qhat.reshape(P, K0, L, L)
        Vh = ev.Vhat.reshape(P, K0, L, L)
        Mh = ev.Mhat.reshape(P, K0, L)
        if not self.batched_prior:
            states = self.split(x)
            parts = [
                self._point_image(p, states[i], Mx[i], b[i], Qh[i], Mh[i], Vh[i])
                for i, p in enumerate(self.problems)
            ]
            return self._pack(*(np.stack(a) for a in list(zip(*parts))[:4]))
        Sv, Sm = Vh.sum(axis=1), Mh.sum(axis=1)
        bn = b + bias_step(Sv, Sm)
        pr = prior_update(self.problems[0], Qh, Mh, Vh, lam=self.lams)
        if not Sv.all():  # (an entry at zero: perhaps a point without curvature)
            flat = ~Sv.reshape(P, -1).any(axis=1) & Sm.any(axis=1)
            states = self.split(x) if flat.any() else []
            for i in np.flatnonzero(flat):  # the zero estimator's bias, as :meth:`_point_image`
                bf = flat_bias(self.problems[i], states[i])
                if bf is not None:
                    bn[i] = bf
        return self._pack(pr.Q, pr.M, pr.V, bn.ravel())

    def prior_details(self, hats: list[HatEvaluation]) -> list[PriorResult]:
        """The prior's details (``psi_w``, penalty, sparsity) at each point's hats
        (:func:`~gaussmix.theory.prior.prior.prior_update` with ``details``): one call for
        all points where the prior takes them, else one a point with this map's panels, as
        a single point's :meth:`~gaussmix.theory.solve.fixed_point.FixedPointMap.prior_at`."""
        if not self.batched_prior:
            return [
                prior_update(p, h.Qhat, h.Mhat, h.Vhat, details=True, panels=self.prior_panels)
                for p, h in zip(self.problems, hats)
            ]
        Qh, Mh, Vh = (np.stack([getattr(h, f) for h in hats]) for f in ("Qhat", "Mhat", "Vhat"))
        pr = prior_update(self.problems[0], Qh, Mh, Vh, lam=self.lams, details=True)
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

    def own_iterations(self, record: FreezeRecord, n_iter: int) -> np.ndarray:
        """Each point's evaluations in an iteration of ``n_iter`` evaluations (its
        ``record``): up to the one that froze it (its own convergence), or all."""
        return np.where(record.frozen, record.frozen_after, n_iter)

    def _frozen_at(self, record: FreezeRecord, x: np.ndarray) -> np.ndarray:
        """The points frozen at their state in ``x`` (a frozen point whose state moved, by a
        retreat of the iteration, is evaluated again)."""
        if not record.frozen.any():
            return record.frozen
        moved = np.bincount(self.blocks, weights=x != record.frozen_x, minlength=self.n_points)
        record.frozen &= moved == 0
        return record.frozen

    def own_residuals(self, x: np.ndarray, g: np.ndarray) -> np.ndarray:
        """Each point's own residual ``max |T(x) - x| / s`` at ``x`` with image ``g`` (the
        iteration's convergence test, :func:`~gaussmix.theory.solve.state.residual_scale`),
        infinite where not finite."""
        r = np.abs(g - x) / residual_scale(x, self.K, self.L)
        # (a point with a non-finite residual has none: NaN propagates through the
        # maximum, and infinity stays)
        own = np.maximum.reduceat(r[self._order], self._starts)
        own[np.isnan(own)] = np.inf
        return own

    def last_own_residuals(self, record: FreezeRecord) -> np.ndarray:
        """Each point's own residual ``max |T(x) - x| / s`` at the last evaluation of the
        iteration of ``record`` (its trail; inf where not finite): the freeze test's of that
        evaluation where it made them (the same numbers: a non-finite residual is infinite
        either way)."""
        if record.own_at is not None and record.own_at[0] == record.evaluations:
            return record.own_at[1]
        return self.own_residuals(*record.trail[-1])

    def _freeze(self, rec: FreezeRecord, x: np.ndarray, g: np.ndarray) -> None:
        """Freeze the points whose own residual ``max |T(x) - x| / s`` (the iteration's
        convergence test, :func:`~gaussmix.theory.solve.state.residual_scale`) is below
        ``freezing.tol`` at ``x``: their image is set to ``x`` (residual 0: the iteration
        leaves them where they are) and they are not evaluated again while they stay."""
        own = self.own_residuals(x, g)
        rec.own_at = (rec.evaluations, own)
        new = (own < self.freezing.tol) & ~rec.frozen
        freezing = bool(new.any())
        if freezing:
            rec.residuals[new] = own[new]
            rec.frozen_after[new] = rec.evaluations
        settled = self._settle(rec, own, g, new) if self.freezing.settle_tol is not None else None
        if settled is not None:  # (``new`` now holds them)
            freezing = True
        if freezing:
            fresh = new[self.blocks]
            if self.freezing.trail:
                if rec.point_trail is None:
                    rec.point_trail = np.zeros((self.freezing.trail, 2, self.blocks.size))
                rows = np.array(rec.trail)
                pad = self.freezing.trail - len(rows)
                rows = np.concatenate([np.repeat(rows[:1], pad, 0), rows])
                rec.point_trail[:, :, fresh] = rows[:, :, fresh]
                rec.has_trail |= new
            rec.frozen |= new
            if self.freezing.watch is not None:
                self.freezing.watch.on_freeze(self, new, x)
            rec.frozen_g[fresh] = g[fresh]
            if settled is not None:  # frozen at their image at settle_tol
                rec.frozen_g[settled] = rec.settled_g[settled]
        if freezing or rec.frozen.any():
            comp = rec.frozen[self.blocks]
            g[comp] = x[comp]
            rec.frozen_x[comp] = x[comp]

    def _settle(
        self, rec: FreezeRecord, own: np.ndarray, g: np.ndarray, new: np.ndarray
    ) -> np.ndarray | None:
        """Record the image of each point whose own residual ``own`` first passes
        ``freezing.settle_tol``; once every point not frozen has passed it ``settle_extra``
        evaluations ago or more, add them to ``new`` (the points that freeze now) with their
        recorded residual and evaluations, and return their components (whose image is the
        recorded one); else None."""
        first = (own < self.freezing.settle_tol) & np.isnan(rec.settled_res) & ~rec.frozen
        rec.settled_res[first] = own[first]
        rec.settled_after[first] = rec.evaluations
        comp = first[self.blocks]
        rec.settled_g[comp] = g[comp]
        rest = ~rec.frozen & ~new
        if not rest.any() or np.isnan(rec.settled_res[rest]).any():
            return None
        if rec.evaluations - rec.settled_after[rest].max() < self.freezing.settle_extra:
            return None
        new |= rest
        rec.settled |= rest
        rec.residuals[rest] = rec.settled_res[rest]
        rec.frozen_after[rest] = rec.settled_after[rest]
        return rest[self.blocks]

    def images(self, record: FreezeRecord, x: np.ndarray) -> np.ndarray:
        """The image ``T(x)`` that an iteration returning images (``return_image``) returns
        for each point: a frozen point's own image at its convergence (its ``record``), the
        others' ``x`` (the iteration's image)."""
        comp = record.frozen[self.blocks]
        out = x.copy()
        out[comp] = record.frozen_g[comp]
        return out

    def pairs(
        self,
        record: FreezeRecord,
        history: AndersonState | None,
        points: list[int],
        memory: int,
        own: bool = True,
    ):
        """The secant history of ``points`` (in increasing order) of this stacked state, for
        a stacked map of these points alone (:meth:`like`; all of them: this map's layout):
        with ``own``, each point's own last pairs before it froze where the iteration (of
        ``record``) kept them (``freezing.trail``), as a single point's iteration ends with its own
        (``history``'s pairs are zero in a point frozen for ``memory`` evaluations), else
        the components of ``history``'s pairs that belong to them; None without pairs."""
        mask = point_mask(self.n_points, points)[self.blocks]
        if own and record.point_trail is not None and record.has_trail[points].all():
            return self._own_pairs(record, len(points), mask, memory)
        if history is None or history.empty:
            return None
        return AndersonState(
            tuple(d[mask] for d in history.dxs),
            tuple(d[mask] for d in history.dgs),
            memory,
            history.log_chart,
        )

    def _own_pairs(
        self, record: FreezeRecord, n_points: int, mask: np.ndarray, memory: int
    ) -> AndersonState | None:
        """The secant pairs of the ``n_points`` points of the components ``mask``, each
        point's own (at most ``memory``, the newest last): the differences of its last
        evaluations before it froze, in the iteration's coordinates (the logarithmic chart
        where this map mixes in it; a pair whose ends leave the chart is dropped), zero where
        a point has fewer; None without pairs."""
        rows = record.point_trail[:, :, mask]
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
        memory: StackedMemory | None = None,
        points: list[int] | None = None,
        states: list[np.ndarray] | None = None,
    ) -> tuple[list[np.ndarray], list[FixedPointMap], list[MapMemory]]:
        """Each point's state of the stacked state ``x``, a single point's map there and its
        memory (:class:`~gaussmix.theory.solve.fixed_point.MapMemory`) of its share of the
        channel evaluation at ``x`` (``memory``'s where made there: its observables then
        need none); of ``points`` alone, in their order, where given; ``states``: theirs,
        where the caller has split ``x`` already."""
        ev = self.hats(x, memory)
        if points is None:
            points = list(range(self.n_points))
        if states is None:
            split = self.split(x)
            states = [split[i] for i in points]
        maps, memories = [], []
        k = self.K0
        for i, xi in zip(points, states):
            p = self.problems[i]
            s = slice(i * k, (i + 1) * k)
            mom = ChannelMoments(*(getattr(ev.moments, f)[s] for f in MOMENTS))
            known = HatEvaluation(xi.copy(), mom, ev.Qhat[s], ev.Mhat[s], ev.Vhat[s])
            maps.append(
                new_map(
                    p, self.rule, (self.symmetry, self.log_chart), prior_panels=self.prior_panels
                )
            )
            memories.append(MapMemory(ev=known))
        return states, maps, memories


#: the constraints of a curve's stacked clusters, by the identity of its problems' (a tuple
#: shared by the problems of one label map) and the number of points: one tuple for all the
#: maps of a curve (and of the curves of a label map), whose arrays the observables then
#: make once (:func:`~gaussmix.theory.solve.observables.test_accuracy`)
_REPEATED = IdentityMemo(16)


def _repeated(constraints: tuple, n_points: int) -> tuple:
    """``constraints * n_points``, one tuple for a tuple of constraints and a count."""
    if not isinstance(constraints, tuple):  # (only an immutable sequence is remembered)
        return tuple(constraints) * n_points
    return _REPEATED.get(constraints, n_points, lambda: constraints * n_points)


def point_mask(n_points: int, points: list[int]) -> np.ndarray:
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
    the mixing remembers, :meth:`~gaussmix.theory.solve.iteration.AndersonState.extrapolate`):
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


#: the fields of the channel moments
MOMENTS = tuple(ChannelMoments.__dataclass_fields__)


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
