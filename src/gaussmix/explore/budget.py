"""The explorer's budget of a point of a curve at the screen precision: the steps of the
point being solved and where the curve goes on after a point stopped by it
(:meth:`gaussmix.explore.engine.CurveJob._budgeted`, whose budgets are
:data:`~gaussmix.explore.engine.POINT_BUDGET` and its neighbours); and whether a coarse
pass could draw the range within its budget (:func:`coarse_hopeless`)."""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from gaussmix.theory.solve.results import FixedPointResult

__all__ = ["COARSE_POINT_FACTOR", "PointOverBudget", "PointSteps", "coarse_hopeless", "restart"]


class PointOverBudget(Exception):
    """Raised in a job's thread when a point of its curve has taken its budget's steps
    (:data:`~gaussmix.explore.engine.POINT_BUDGET`)."""


@dataclasses.dataclass
class PointSteps:
    """The budget of the point of a curve being solved
    (:meth:`~gaussmix.explore.engine.CurveJob._budgeted`): the steps of its current start
    against that start's limit, and what an earlier start of the same point spent.

    Attributes
    ----------
    taken : int
        Steps of the solver since the point's current start.
    limit : float
        Steps that start may take (``math.inf``: a cold start, without a budget).
    along : bool
        Whether the continuation along the curve started it (from the point solved
        before it), not the library call's ``init``.
    spent : int
        Steps the point took before it started again from the neighbouring curve's fixed
        points (0: its first start).
    whole : float
        Steps the point may take over all its starts (set at its first start).
    """

    taken: int = 0
    limit: float = math.inf
    along: bool = False
    spent: int = 0
    whole: float = math.inf

    def start(self, limit: float, along: bool) -> None:
        """A new start of the point being solved (or of the next one): ``limit`` steps."""
        self.taken, self.limit, self.along = 0, limit, along

    def step(self) -> None:
        """One step of the solver; :class:`PointOverBudget` past the start's limit."""
        self.taken += 1
        if self.taken > self.limit:
            raise PointOverBudget


def restart(
    init: list[FixedPointResult],
    results: dict[int, FixedPointResult | None],
    stopped: bool,
) -> list[FixedPointResult]:
    """The fixed points that start the library's curve over the points not yet solved
    (:meth:`~gaussmix.explore.engine.CurveJob._budgeted`; the library's ``init``: its
    nearest starts the first of them): those of the neighbouring curve ``init``
    (:func:`~gaussmix.explore.engine.warm_start`) and the fixed points ``results`` solved
    so far, or, once a point has been ``stopped`` by the
    budget and ``init`` is not empty, those of ``init`` alone.

    The point after a stopped one lies beyond a region that the continuation from this
    curve's points did not cross; the nearest of them (before the stop) is a start that
    the library's capped warm start gives up only after twice its own iterations, before
    its cold start.  Measured on the two slowest states of the explorer's sampled space
    (K = 3 cross-entropy lasso, lam = 6.1e-4 and 6.6e-4, after the lambda slider's move
    from half a decade above; ``benchmarks/bench_explore.py``): the point after the
    stopped one took 239 + 29 and 139 + 26 steps from the point before the stop (its
    warm start given up, then cold), 19 and 14 from the curve before's point at the same
    alpha.  Without ``init`` (a curve that started cold) the points solved so far are
    all there is: its cold start has the budget too."""
    solved = [r for r in results.values() if r is not None]
    if stopped and init:
        return list(init)
    return init + solved


#: what a point of a coarse pass costs at most in points of the curve before
#: (:func:`coarse_hopeless`): its continuation steps are four times the curve's, each point
#: dearer; measured 1.3-2.0 times on the K = 3 cross-entropy lasso at lam = 9.55e-4 (the
#: sampled space's coarse passes that drew the range: 1.35 times on the K = 3 square lasso
#: at lam = 0.036)
COARSE_POINT_FACTOR = 2.0


def coarse_hopeless(point_cpu: float | None, coarse: int, budget: float) -> bool:
    """Whether the coarse pass of ``coarse`` points of a curve one control away from a
    finished curve (the curve before a slider's move, whose fixed points start it:
    :func:`~gaussmix.explore.engine.warm_start`) would be stopped by its ``budget`` of CPU
    seconds before it has drawn the range (:data:`~gaussmix.explore.engine.COARSE_BUDGET_S`):
    ``coarse`` points at the pace of the curve before, the median ``point_cpu`` seconds of
    CPU a point (:attr:`~gaussmix.explore.engine.CurveJob.point_cpu`; None: not known),
    take more than ``budget``.  A lower bound: the coarse pass takes larger continuation
    steps, each point dearer; the median leaves out a curve's cold first point (seconds at
    K >= 4) and its few points near a transition.

    Such a coarse pass draws the few points from the low end that the curve itself draws
    first, and delays the curve by its whole budget: on the sampled space's three K = 3
    cross-entropy lassos at lambda below 1e-3 (``benchmarks/bench_explore.py``, after the
    lambda slider's move; 44-76 ms a point) it stopped after 2-4 of its 10 points, 0.30-0.31
    s of CPU each time; the curve's rows are the same either way (the coarse pass's are
    never kept).  Each of its points is counted at :data:`COARSE_POINT_FACTOR` times the
    curve before's pace: with the predictor's defect-corrected start
    (:attr:`~gaussmix.theory.solve.refinement.Continuation.CORRECTED`) the lasso at lam =
    9.55e-4 goes at 27 ms a point, 10 of them within the budget, but its coarse pass took
    35-55 ms a point and was stopped after 5 of them (0.3 s, the curve's second point)."""
    return point_cpu is not None and coarse * COARSE_POINT_FACTOR * point_cpu > budget
