"""The points of Theorem 1's map: their layout in one state, and the freezing of the points
that converge.

The fixed-point map (:class:`~gaussmix.theory.solve.fixed_point.FixedPointMap`) takes a
leading axis of points: the ``P`` points of a curve (problems that differ only in ``lam``
and ``alpha``) are the clusters of one *stacked* state

    x = (Q (P K), M (P K), V (P K), b (P L)),

(:func:`~gaussmix.theory.solve.state.pack_state`'s layout with one bias per point; a single
solve is a batch of one, whose state is the single point's).  This module holds what the
map's points share beside the equations: the layout of their components
(:class:`StackedPoints`: split, stack, each point's own Anderson mixing) and, for an
iteration of several points, the freezing of each point at its own convergence
(:class:`Freezing`, :class:`FreezeRecord`): a frozen point is no longer evaluated, so that
on a curve over alpha a point's iterates are its single point's.  The stacked solve, its
sharp-regime test and each point's integration error estimate are the solve policy's steps
(:mod:`gaussmix.theory.solve.policy`), their work on stacked points
:mod:`gaussmix.theory.solve.batch_solve`; the order of the points and the restart of a
sweep's slow points are the continuation's (:mod:`gaussmix.experiments.continuation`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Protocol

import numpy as np

from ..channel.channel import ChannelMoments
from .iteration import AndersonState
from .state import LogChart, pack_state, residual_scale, unpack_state

__all__ = [
    "MOMENTS",
    "NO_FREEZING",
    "FreezeRecord",
    "Freezing",
    "SharpPoint",
    "StackedPoints",
    "Watch",
    "point_mask",
]


class SharpPoint(Exception):
    """The first point of a stacked solve of two outputs is in the sharp regime (raised by
    a :class:`Watch`, the policy's
    :class:`~gaussmix.theory.solve.policy.SharpWatch`)."""


class Watch(Protocol):
    """What a stacked solve watches as it goes (:class:`Freezing`): called with the map and
    the points that freeze (a mask) and the state, and with the map and every image; either
    may raise to stop the iteration."""

    def on_freeze(self, T: StackedPoints, points: np.ndarray, x: np.ndarray) -> None: ...

    def on_image(self, T: StackedPoints, g: np.ndarray) -> None: ...


@dataclass(frozen=True)
class Freezing:
    """How the iteration of a :class:`~gaussmix.theory.solve.fixed_point.FixedPointMap` of
    several points freezes them: the settings of one stacked solve, given to the map's
    constructor.

    Attributes
    ----------
    tol : float, optional
        A point whose own residual is below it is converged and stops being evaluated (the
        iteration's ``tol``; None: no point freezes, e.g. a map that is only evaluated).
    trail : int
        Evaluations ``(x, T(x))`` kept (0: none): the last ones of the iteration, and each
        point's own at its freeze, whose differences are its own secant pairs
        (:meth:`StackedPoints.pairs`).
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
    during and after the iteration (:meth:`StackedPoints.own_iterations`,
    :meth:`StackedPoints.images`, :meth:`StackedPoints.pairs`).

    The record of one iteration, made with its memory
    (:meth:`~gaussmix.theory.solve.fixed_point.FixedPointMap.memory`) and carried in it
    (:class:`~gaussmix.theory.solve.fixed_point.MapMemory`, the iteration state's ``aux``);
    the map keeps none.  Its arrays are written in place by the evaluations of that iteration.
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
    #: evaluation (:meth:`StackedPoints.last_own_residuals` reads it instead of making it again)
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


class StackedPoints:
    """The points of a fixed-point map stacked in one state: the layout of their components
    and the freezing of each at its own convergence (the part of
    :class:`~gaussmix.theory.solve.fixed_point.FixedPointMap` that knows no equation).

    It reads the map's ``n_points``, ``K0`` (clusters a point), ``K``, ``L``, ``log_chart``,
    ``freezing`` and the layout arrays ``blocks`` (the point of each component), ``_order``
    and ``_starts`` (the components in the order of their points, the start of each
    point's run).  What one iteration records as it goes (which points froze where) is
    the :class:`FreezeRecord` that its memory carries, given to these methods.
    """

    def anderson(self, memory: int, previous: AndersonState | None = None) -> AndersonState:
        """A secant history that mixes each point with its own coefficients (empty, or the
        newest pairs of ``previous``, an iteration of the same stacked state); one point's
        without blocks (the same coefficients: a single point's mixing, to the bit)."""
        if self.n_points == 1:
            return AndersonState.init(memory, previous)
        return replace(AndersonState.init(memory, previous), blocks=self.blocks)

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


def point_mask(n_points: int, points: list[int]) -> np.ndarray:
    """The mask of ``points`` among ``n_points`` points (a mask of components or clusters
    is its entries at their points: ``np.isin``'s answer, without its sort)."""
    mask = np.zeros(n_points, dtype=bool)
    mask[points] = True
    return mask


#: the fields of the channel moments
MOMENTS = tuple(ChannelMoments.__dataclass_fields__)
