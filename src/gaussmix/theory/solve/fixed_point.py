"""The fixed-point map of Theorem 1, with a leading axis of points, and its fixed point.

One application of the map sends the order parameters ``x = (Q_c, M_c, V_c, b)`` to new
ones:

1. channel (loss half, eq. (8), right):  ``Qhat_c = alpha rho_c E[f f^T]``,
   ``Mhat_c = alpha rho_c E[f]``, ``Vhat_c = alpha rho_c E[(I + H V_c)^{-1} H]``;
2. bias: one Newton step on the stationarity condition of the unpenalised bias,
   ``sum_c rho_c E[f_c] = 0`` (gradient form, docs/design.md pitfall 1), i.e.
   ``b <- b + (sum_c Vhat_c)^{-1} sum_c Mhat_c`` (:mod:`gaussmix.theory.solve.bias`);
3. prior (eq. (8), left / Corollary 3): ``(Q_c, M_c, V_c)`` from the hats.

One map, :class:`FixedPointMap`, for one problem or for the ``P`` points of a curve at
once (problems that differ only in ``lam`` and ``alpha``): their clusters are those of one
stacked state (:mod:`gaussmix.theory.solve.batch`), evaluated by one channel evaluation of
every point's clusters, each point's bias step and the priors of all points in one call
where the prior takes a leading axis of points; a single solve is a batch of one, whose
state and iterates are the single point's, to the bit.  The map is a frozen value; what
one evaluation hands to the next (the last channel evaluation, the prior's, the warm
start of the proximal solves, the record of which points froze) is a :class:`MapMemory`
that the iteration carries in its state; the fixed point of a result is its
:class:`FixedPointState`.  This module also holds the starting point of an iteration
(:func:`start_state`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import ClassVar, Literal, NamedTuple

import numpy as np

from gaussmix.core.memo import IdentityMemo
from gaussmix.core.results import Result

from ..channel.channel import (
    ChannelMoments,
    ProxWarmStart,
    channel_evaluation,
    flat_metrics,
    identity_prox_moments,
)
from ..numerics.quadrature import QuadratureRule
from ..numerics.tolerances import LOG_CHART_MAX_LAM
from ..prior.lasso import START_MAX_LAM, weak_penalty_start
from ..prior.prior import (
    PriorResult,
    coarse_axes_problem,
    prior_quadrature_dim,
    prior_update,
    single_precision_phase,
    takes_stacked_points,
)
from ..problem.problem import Problem
from ..problem.symmetry import ClusterSymmetry
from .batch import (
    MOMENTS,
    NO_FREEZING,
    FreezeRecord,
    Freezing,
    StackedPoints,
    point_mask,
)
from .bias import bias_step, flat_bias, mean_bias_step
from .nested import nearest_nodes
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


class _StackedOutputs(NamedTuple):
    """The outputs of the ``P K`` stacked clusters as the observables and the regime test
    read them (labels, the loss, each cluster's correct set, the number of clusters and of
    effective outputs, the effective output basis): a problem's, repeated for each point
    (a named tuple: made with every map, a map of one point at every solve, where a frozen
    dataclass's fields cost a call each)."""

    loss: object
    y: np.ndarray
    constraints: tuple
    n_clusters: int
    dim: int = 1
    P: np.ndarray | None = None


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
        The prior evaluation made at ``ev``'s hats (a map of one point), returned again by
        :meth:`FixedPointMap.prior_at` where it holds the details.
    warm : ProxWarmStart or None
        The proximal points of the last evaluation, the warm start of the next.
    rows : ChannelMoments or None
        The integrated clusters' moments of that evaluation (a frozen point's stand for its
        unchanged state at the next evaluation).
    owns_warm : bool
        Whether this memory alone holds ``warm``'s arrays (a partial evaluation then writes
        its clusters' proximal points into them instead of into copies; a memory handed to
        another map, :meth:`FixedPointMap.shared`, shares them until it evaluates).
    record : FreezeRecord or None
        The record of the iteration's freezes and trail
        (:class:`~gaussmix.theory.solve.batch.FreezeRecord`; made by the first evaluation
        where a caller's memory has none).
    """

    ev: HatEvaluation | None = None
    prior: PriorResult | None = None
    warm: ProxWarmStart | None = None
    rows: ChannelMoments | None = None
    owns_warm: bool = False
    record: FreezeRecord | None = None


class FixedPointMap(StackedPoints):
    """The fixed-point map ``x -> T(x)`` of Theorem 1 for one problem, or for the ``P``
    points of a curve at once (a stacked state, :mod:`gaussmix.theory.solve.batch`: ``K =
    P K0`` clusters, ``L`` effective outputs, ``P L`` biases), and one quadrature rule.

    Parameters
    ----------
    problems : Problem or list of Problem
        One problem (a batch of one), or problems that differ only in ``lam`` and ``alpha``.
    rule : QuadratureRule
        The channel's quadrature rule (a placeholder, or None, for closed-form channels).
    symmetry : ClusterSymmetry, optional
        The relabelling symmetry of exchangeable clusters: cluster 0's channel of each point
        stands for its ``K0`` clusters.
    log_chart : bool
        Mix in :class:`~gaussmix.theory.solve.state.LogChart` coordinates (each point's
        overlaps; the chart is block by block).
    freezing : Freezing
        How its iteration freezes converged points (default: never;
        :class:`~gaussmix.theory.solve.batch.Freezing`).
    prior_panels : int, optional
        Panels per outer dimension of the prior's own rule where it has one (the lasso with
        two or more effective outputs,
        :func:`~gaussmix.theory.prior.prior.prior_quadrature_dim`); default
        :func:`~gaussmix.theory.prior.lasso.outer_panels`.
    single : bool
        Evaluate the prior in single precision (the first phase of a large dense fixed
        point, :func:`~gaussmix.theory.solve.batch_solve.run_points`; never a returned
        state).

    Notes
    -----
    A map is a frozen value set by its constructor: no attribute can be written afterwards
    (``AttributeError``); a map with other settings is a new map (:meth:`like`,
    :func:`new_map`).  What one evaluation reuses from the last (the channel evaluation,
    the prior's, the warm start of the proximal solves, the record of which points froze
    where and of the trail of evaluations) is a :class:`MapMemory` that :meth:`evaluate`
    takes and returns: the iteration carries it in its state (``aux``), as it carries the
    Anderson history, and its caller reads the record from it.  A map of one point works on
    the point's own arrays (no leading axis): the single point's operations, to the bit
    (``tests/test_one_map.py``).
    """

    #: whether the channel is the library's :func:`channel_evaluation` (a map of one point
    #: without symmetry then calls it on the point's own arrays); False for a map with a
    #: channel of its own in :meth:`_rows_channel` (the max-margin map's)
    library_channel: ClassVar[bool] = True

    def __init__(
        self,
        problems: Problem | list[Problem],
        rule: QuadratureRule,
        symmetry: ClusterSymmetry | None = None,
        log_chart: bool = False,
        freezing: Freezing = NO_FREEZING,
        *,
        prior_panels: int | None = None,
        single: bool = False,
    ) -> None:
        if isinstance(problems, Problem):
            problems = [problems]
        p0 = problems[0]
        P, K0, L = len(problems), p0.n_clusters, p0.dim
        if P == 1:  # (the problem's own arrays: a map of one point is made at every solve)
            ar, y, constraints = p0.alpha * p0.mixture.rho, p0.y, p0.constraints
        else:  # each point's alpha rho_c (one mixture), all at once
            alphas = np.array([p.alpha for p in problems])
            ar = np.repeat(alphas, K0) * np.tile(p0.mixture.rho, P)
            y, constraints = np.tile(p0.y, (P, 1)), _repeated(p0.constraints, P)
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
            ar=ar,
            lams=np.array([p.lam for p in problems]),
            prior_panels=prior_panels,
            single=single,
            # whether one prior call takes every point (the priors declared for a leading
            # axis of points, :func:`~gaussmix.theory.prior.prior.takes_stacked_points`);
            # else one call a point, each the single point's
            batched_prior=takes_stacked_points(p0.penalty_spec, p0.mixture, p0.P),
            outputs=_StackedOutputs(p0.loss, y, constraints, P * K0, L, p0.P),
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
        vars(self).update(settings)  # (past __setattr__, at once: a map is made at every solve)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(
            f"{type(self).__name__}.{name} is set by the constructor; make a new map (like, "
            "new_map) for other settings"
        )

    @property
    def problem(self) -> Problem:
        """The problem of a map of one point."""
        if self.n_points != 1:
            raise AttributeError(f"a map of {self.n_points} points has no one problem")
        return self.problems[0]

    def like(
        self,
        problems: list[Problem],
        rule: QuadratureRule,
        freezing: Freezing = NO_FREEZING,
        prior_panels: int | None | Literal["like"] = "like",
    ) -> FixedPointMap:
        """A map of ``problems`` with ``rule``, ``freezing`` and this map's symmetry, chart
        and prior panels (or ``prior_panels``), in double precision (its memory is the
        caller's: :meth:`shared`, :meth:`warm_from`)."""
        return FixedPointMap(
            problems,
            rule,
            symmetry=self.symmetry,
            log_chart=self.log_chart,
            freezing=freezing,
            prior_panels=self.prior_panels if prior_panels == "like" else prior_panels,
        )

    def memory(self) -> MapMemory:
        """The memory before a first evaluation (a fresh record)."""
        return MapMemory(record=FreezeRecord.empty(*self._sizes()))

    def _sizes(self) -> tuple[int, int]:
        return self.n_points, self.blocks.size

    def shared(self, other: FixedPointMap, memory: MapMemory | None) -> MapMemory:
        """The memory this map starts from after ``other``'s evaluations (``memory``): for
        the same points and rule (an iteration continued, a refined re-solve) ``other``'s
        proximal points as the warm start of its first evaluation, as a single point's
        iteration keeps them from one evaluation to the next (shared until either
        evaluates, :attr:`MapMemory.owns_warm`); a fresh memory otherwise."""
        fresh = self.memory()
        if memory is None or self.rule != other.rule or self.n_points != other.n_points:
            return fresh
        if not all(p is q for p, q in zip(self.problems, other.problems)):
            return fresh
        return fresh._replace(warm=memory.warm)

    def warm_from(self, other: FixedPointMap, memory: MapMemory | None) -> MapMemory:
        """The memory that starts the first evaluation of this map (whose points are some of
        ``other``'s, in the same order, and whose rule is another) from the proximal points
        of ``other``'s last evaluation (``memory``), at the state this map starts from: each
        node's from the nearest node of ``other``'s rule (:func:`.nested.nearest_nodes`), whose
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
        nodes = nearest_nodes(other.rule, self.rule)
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

    def unpack(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(Q, M, V, b)`` of a state of this map, the clusters of all points in one axis
        (:func:`~gaussmix.theory.solve.state.unpack_state`: a single point's)."""
        return unpack_state(x, self.K, self.L)

    def unpack_points(
        self, x: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
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

    def means(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(M_c + b, Q_c, V_c)`` of every point and cluster (its point's bias added),
        with a leading axis of points, and the biases; of the equivariant state
        (:meth:`~gaussmix.theory.problem.symmetry.ClusterSymmetry.symmetric_state`, ``b = 0``)
        with the symmetry, as a single point's map and observables read it."""
        Q, M, V, b = self.unpack_points(x)
        if self.symmetry is not None:
            Q, M, V, b = self.symmetry.symmetric_state(Q, M, V, b)
        return M + b[:, None, :], Q, V, b

    def is_valid(self, x: np.ndarray) -> bool:
        """:func:`~gaussmix.theory.solve.state.is_valid_state` of every point."""
        return is_valid_state(x, self.K, self.L)

    def hats(self, x: np.ndarray, memory: MapMemory | None = None) -> HatEvaluation:
        """The channel of every stacked cluster at ``x`` in one evaluation (of cluster 0 of
        each point with the symmetry), and the hats ``alpha rho_c E[...]`` of each point:
        ``memory``'s evaluation where made at ``x``, else a new one."""
        return self.hats_memory(x, memory)[0]

    def hats_memory(
        self, x: np.ndarray, memory: MapMemory | None = None
    ) -> tuple[HatEvaluation, MapMemory]:
        """:meth:`hats` and the memory after it."""
        if memory is None:
            memory = self.memory()
        last = memory.ev
        if last is not None and last.x.shape == x.shape and (last.x == x).all():
            return last, memory  # (np.array_equal's test, without its cost)
        if memory.record is None:  # (a caller's memory: ``MapMemory(warm=...)``)
            memory = memory._replace(record=FreezeRecord.empty(*self._sizes()))
        if self.n_points == 1 and not memory.record.frozen[0]:  # (its one point: no any())
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
        return ev, MapMemory(ev, None, warm, rows_mom, owns, memory.record)

    def _point_hats(self, x: np.ndarray, memory: MapMemory) -> tuple[HatEvaluation, MapMemory]:
        """:meth:`hats_memory` of a map of one point (not frozen): on the point's own arrays
        (no leading axis of points), the operations of a single point's map to the bit."""
        Q, M, V, b = unpack_state(x, self.K, self.L)
        y = self.outputs.y
        sym = self.symmetry
        if sym is None and self.library_channel:
            # (the channel adds the bias itself, as a single point's map did)
            loss = self.problems[0].loss
            rows, warm = channel_evaluation(loss, y, M, b, Q, V, self.rule, memory.warm)
            ev = HatEvaluation.of(x, rows, self.ar)
            return ev, MapMemory(ev, None, warm, rows, True, memory.record)
        if sym is not None:  # cluster 0's channel stands for all (its equivariant state)
            Q, M, V, b = sym.symmetric_state(Q, M, V, b)
            Q, M, V, y = Q[:1], M[:1], V[:1], y[:1]
        rows, warm = self._rows_channel(y, M + b, Q, V, memory.warm)
        mom = rows if sym is None else sym.expand_moments(rows)
        ev = HatEvaluation.of(x, mom, self.ar)
        return ev, MapMemory(ev, None, warm, rows, True, memory.record)

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

    def __call__(self, x: np.ndarray, memory: MapMemory | None = None) -> np.ndarray:
        """``T(x)`` (:meth:`evaluate`'s image)."""
        return self.evaluate(x, memory)[0]

    def evaluate(
        self, x: np.ndarray, memory: MapMemory | None = None
    ) -> tuple[np.ndarray, MapMemory]:
        """``T(x)`` of every point: channel, Newton step of each bias, priors; and the
        memory of this evaluation for the next (its record written: the evaluation counted,
        the trail, the points that freeze)."""
        ev, memory = self.hats_memory(x, memory)
        return self.image(x, ev, memory)

    def image(
        self, x: np.ndarray, ev: HatEvaluation, memory: MapMemory
    ) -> tuple[np.ndarray, MapMemory]:
        """The second half of :meth:`evaluate`: the image at ``x`` from its channel
        evaluation ``ev`` (:meth:`hats_memory`'s, with its ``memory``), as a single point's
        map's (:meth:`~gaussmix.theory.solve.fixed_point.FixedPointMap.image`)."""
        P, L = self.n_points, self.L
        record = memory.record
        if record is None:  # (a caller's memory, its evaluation given: ``MapMemory(ev=...)``)
            record = FreezeRecord.empty(*self._sizes())
            memory = memory._replace(record=record)
        if P == 1:  # the point's own arrays (no leading axis)
            _, M, _, b = unpack_state(x, self.K, L)
            if self.symmetry is not None:  # the equivariant bias (see the channel)
                b = np.zeros_like(b)
            parts = self._point_image(self.problems[0], x, M, b, ev.Qhat, ev.Mhat, ev.Vhat)
            g = pack_state(*parts[:4])
            # (its details: prior_at; the fields in order, cheaper than ``_replace``)
            memory = MapMemory(ev, parts[4], memory.warm, memory.rows, memory.owns_warm, record)
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
        (:func:`~gaussmix.theory.solve.bias.mean_bias_step`: the same fixed points,
        reached in fewer iterations where the prior's gain is large); where the loss has no
        curvature and the bias condition is unmet, the zero estimator's bias
        (:func:`~gaussmix.theory.solve.bias.flat_bias`); else the Newton step of the
        bias (:func:`~gaussmix.theory.solve.bias.bias_step`)."""
        pr = prior_update(problem, Qhat, Mhat, Vhat, panels=self.prior_panels, single=self.single)
        response = pr.mean_response if self.symmetry is None else None
        if response is not None:
            step = mean_bias_step(response.gain, Vhat, Mhat, pr.M - M)
            if step is not None:
                dMhat, db = step
                dQ, dM = response.change(dMhat)
                return pr.Q + dQ, pr.M + dM, pr.V, b + db, pr
        Sv, Sm = _cluster_sum(Vhat), _cluster_sum(Mhat)
        if not any(Sv.ravel().tolist()) and any(Sm.tolist()):  # no curvature, the bias
            # condition unmet (``any()`` of the few entries as floats: the same test)
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
        _, Mx, _, b = self.unpack_points(x)
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

    def prior_at(self, ev: HatEvaluation, memory: MapMemory | None = None) -> PriorResult:
        """The prior with its free-energy terms (``details``) at the hats of ``ev``, of a map
        of one point.

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

    def point_maps(
        self,
        x: np.ndarray,
        memory: MapMemory | None = None,
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


def _has_details(pr: PriorResult) -> bool:
    """Whether a prior result holds what ``details=True`` adds (free-energy terms, l1 norm)."""
    return bool(np.isfinite(pr.psi_w) and np.isfinite(pr.penalty) and np.isfinite(pr.l1_norm))


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


def _cluster_sum(A: np.ndarray) -> np.ndarray:
    """``A.sum(axis=0)`` over the clusters of a point's hats (K, ...): of two clusters (a
    binary point) numpy's reduction from its identity, ``(0 + A_0) + A_1`` (signed zeros
    and NaN payloads included, ``tests/test_one_map.py``), in two additions instead of the
    reduction's machinery (a few microseconds at every evaluation)."""
    if A.shape[0] == 2:
        return (0.0 + A[0]) + A[1]
    return A.sum(axis=0)


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
    of ``problem`` starts in it (:func:`~gaussmix.theory.prior.prior.single_precision_phase`),
    for the multi-output lasso (two or more effective outputs) below
    :data:`~gaussmix.theory.prior.lasso.START_MAX_LAM` raised to the scale of its fixed points
    (:func:`~gaussmix.theory.prior.lasso.weak_penalty_start`): only a starting point.  Where
    the first phase runs on the covariances' leading axes
    (:func:`~gaussmix.theory.prior.prior.coarse_axes_problem`), the image is that prior's
    (MNIST ten classes: 0.12 of the cost; the phase iterates its map from here)."""
    Qhat, Mhat, Vhat, lam, ybar = initial_hats(problem)
    single = single_precision_phase(problem)
    coarse = coarse_axes_problem(problem)  # (None without a single-precision phase)
    pr = prior_update(coarse or problem, Qhat, Mhat, Vhat, lam=lam, single=single)
    Q, M, V = pr.Q, pr.M, pr.V
    if prior_quadrature_dim(problem) > 0 and problem.lam < START_MAX_LAM:
        Q, M, V = weak_penalty_start(Q, M, V, problem.lam)
    return pack_state(Q, M, V, ybar)


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


@functools.lru_cache(maxsize=32)
def _layout(P: int, K0: int, L: int, symmetric: bool) -> tuple[np.ndarray, ...]:
    """The index arrays of a :class:`FixedPointMap` of ``P`` points of ``K0`` clusters and
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
