"""The explorer's engine: curves and overlays computed in background threads.

:func:`start_curve` runs :func:`gaussmix.learning_curve` (axis alpha) or
:func:`gaussmix.lambda_sweep` (axis lambda) on the problem the state describes, built by the
library's one validated path (:func:`gaussmix.explore.state.setup`), in a thread, and
delivers each row as its point is solved (the curve's ``callback`` hook).  The values are
the library's to the bit: the job calls the library, nothing else.  A curve whose state is
one control away from the curve before it starts from that curve's fixed points (the
library curve's ``init``, :func:`warm_start`, for problems of more than one output): its
values are the library's with that ``init``, the same fixed points as the cold curve's
within the solver's tolerance (not to the bit: the exports, which solve cold, give them
within it).  A point without a fixed
point is listed in :attr:`CurveJob.failed` and is NaN in the rows, never a number; warnings
are collected as text; an exception becomes :attr:`CurveJob.error` (the caller never sees it
raised).  :meth:`CurveJob.cancel` stops the job after the point being solved.

Finished curves are kept in a small LRU cache keyed by the problem's parameters (the
``params`` of :class:`~gaussmix.frontend.options.PointSetup`, which identify a mixture file by
its content) and the grid: moving a control back redraws at once.

:func:`start_overlays` computes the Bayes-optimal error (:func:`gaussmix.bayes_optimal_error`,
Appendix D), the separability threshold alpha*_K (:func:`gaussmix.separability_threshold`),
the optimal penalty lambda* (:func:`gaussmix.optimal_lambda`) and finite-size simulation
points (:func:`gaussmix.simulate`, seeded, with standard errors), each where it is defined
(otherwise the reason is given), in the background, cancellable.

:class:`Session` holds the jobs of one browser tab or notebook: a new request cancels the
previous one.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from gaussmix.core.caught import routed
from gaussmix.core.interrupt import interruptible

from .budget import PointOverBudget as _PointOverBudget
from .budget import PointSteps as _PointSteps
from .budget import coarse_hopeless as _coarse_hopeless
from .budget import restart as _restart
from .cache import CACHE, CACHE_SIZE, cache_key, clear_cache, copy_table
from .overlays import MAX_OVERLAY_POINTS, Overlay
from .overlays import evenly as _evenly
from .overlays import overlay_steps as _overlay_steps
from .state import ORDER_PARAMETERS, ExplorerState, setup

#: the explorer's controls (the fields of a state)
_FIELD_NAMES = tuple(f.name for f in dataclasses.fields(ExplorerState))

if TYPE_CHECKING:  # pragma: no cover
    from gaussmix.core.tables import CurveTable
    from gaussmix.theory.model.mixture import Mixture
    from gaussmix.theory.solve.results import FixedPointResult

__all__ = [
    "CurveJob",
    "OverlayJob",
    "Session",
    "start_curve",
    "start_overlays",
    "order_parameters",
    "x_column",
    "clear_cache",
    "CACHE_SIZE",
    "COARSE_POINTS",
    "COARSE_BUDGET_S",
    "coarse_budget",
    "POINT_BUDGET",
    "FIRST_TRY_SHARE",
    "PrefetchJob",
    "MAX_OVERLAY_POINTS",
    "WARM_CONTROLS",
    "warm_start",
    "TYPICAL_FACTOR",
    "TYPICAL_FLOOR",
    "TYPICAL_FROM",
]

#: points of the coarse pass drawn first (:func:`start_curve`'s ``coarse``, :class:`Session`)
COARSE_POINTS = 10
#: seconds of the job thread's CPU time after which the coarse pass stops (its rows so far
#: kept as the preview) and the final curve starts: the coarse pass takes larger
#: continuation steps than the curve, and cost up to 5 times the curve on a K = 3 lasso
#: (BENCHMARKS.md); bounded so, a curve that takes longer is drawn coarse first, and one
#: that the coarse pass would delay by more than this is computed point by point at once
COARSE_BUDGET_S = 0.3
#: steps of the solver (about one evaluation of its map each, counted by the cooperative
#: stop :func:`gaussmix.core.interrupt.check_interrupt`) that a point of a curve at the
#: screen precision may take, where it has a fixed point to start from (a stacked solve:
#: this many for each of its points); past them it is drawn missing with the reason and
#: the curve goes on (:meth:`CurveJob._budgeted`).  A point takes 2-30 steps from its
#: neighbour; points near the lasso's zero estimator that the solver does not resolve
#: took 9000 evaluations of its fallback each, minutes a curve (BENCHMARKS.md).  Counted,
#: not timed: the same curve on any machine.  The library's precision has no budget
POINT_BUDGET = 300


#: the share of :data:`POINT_BUDGET` that a point of a curve with a neighbouring curve's
#: fixed points (:func:`warm_start`) may take from the continuation along the curve; past
#: it the point starts again from the neighbouring curve's fixed point nearest to it (the
#: same alpha at the lambda before a slider's move) with the rest of the budget
#: (:meth:`CurveJob._budgeted`).  The two points that the sampled space's slowest states
#: (K = 3 cross-entropy lasso, lam = 6.1e-4 and 6.6e-4, after a move from half a decade
#: above; ``benchmarks/bench_explore.py``) stopped after 300 steps of the continuation
#: take 32 and 17 steps from there; the slowest points that the continuation solved took
#: 78 and 116 (from the curve before: 404 and 239), within this share
FIRST_TRY_SHARE = 0.5

#: the budget of a point of a curve at the screen precision once :data:`TYPICAL_FROM`
#: points of it have been solved (:meth:`CurveJob._budgeted`): at most
#: :data:`TYPICAL_FACTOR` times the median steps those points took (their starts
#: together), and never under :data:`TYPICAL_FLOOR` steps (nor over :data:`POINT_BUDGET`).
#: A point past the solver's reach took the whole :data:`POINT_BUDGET` before it was drawn
#: missing: 1.3 s of the 2.0 s of the sampled K = 3 cross-entropy lasso at lam = 9.63
#: (after the lambda slider's move; ``benchmarks/bench_explore.py``), whose other points
#: take 1-6 steps: now 120.  Over the 29 sampled states with K <= 3 the slowest point
#: that converged took 17 times its curve's median (83 iterations against 5, near a
#: lasso's transition; more steps, its predictor's tries counted): a factor of 40 drew it
#: missing, 20 another one, 10 also two points of a ridge at 21-29.  Counted, not timed
TYPICAL_FACTOR = 60
#: the least budget of a point that the median of its curve's points sets
#: (:data:`TYPICAL_FACTOR`)
TYPICAL_FLOOR = 40
#: points of a curve solved before their median steps set the budget of the next
#: (:data:`TYPICAL_FACTOR`)
TYPICAL_FROM = 3

#: test hook: the environment variable naming a coarse pass's budget in seconds instead of
#: :data:`COARSE_BUDGET_S` (read when a job starts; ``inf``: the whole pass), so that a test
#: served explorer draws a coarse pass whole on a machine of any speed.  Not for other uses.
COARSE_BUDGET_ENV = "GAUSSMIX_EXPLORE_COARSE_BUDGET"


def coarse_budget() -> float:
    """A coarse pass's budget of CPU seconds: :data:`COARSE_BUDGET_S`, or the test hook's
    :data:`COARSE_BUDGET_ENV` where it is set."""
    return float(os.environ.get(COARSE_BUDGET_ENV) or COARSE_BUDGET_S)


class _Cancelled(Exception):
    """Raised in a job's thread by its hook when the job was cancelled."""


class _OverBudget(Exception):
    """Raised in a job's thread when its coarse pass has spent :data:`COARSE_BUDGET_S`."""


# ============================================================================ warnings
def _collecting(sink: list[str]) -> contextlib.AbstractContextManager[None]:
    """Within the block, the warnings of this thread (a job's) go into ``sink`` as one line
    of text each, a repeated one once; numpy's ``RuntimeWarning`` (overflow noise in the
    solver) is dropped, as the command line does.  Thread-safe
    (:func:`gaussmix.core.caught.routed`): jobs run side by side."""

    def receive(w: warnings.WarningMessage) -> None:
        text = f"{w.category.__name__}: {' '.join(str(w.message).split())}"
        if text not in sink:
            sink.append(text)

    return routed(receive, (RuntimeWarning,))


# ============================================================================ rows
def x_column(state: ExplorerState) -> str:
    """The table's column on the horizontal axis: ``'alpha'`` or ``'lam'``."""
    return "alpha" if state.axis == "alpha" else "lam"


def order_parameters(result: FixedPointResult | None, mixture: Mixture) -> dict[str, float]:
    """The order parameters of Theorem 1 along each cluster's label, one column per cluster
    ``c = 1..K``: ``m<c> = y_c . M_c``, ``q<c> = y_c^T Q_c y_c``, ``v<c> = y_c^T V_c y_c``
    (``y_c`` the label vector of cluster c: for binary labels ``m<c> = +-M_c``, positive
    when the estimator leans towards the cluster's label; for one-hot labels the diagonal
    entries of cluster c's own class).  NaN without a fixed point.

    Parameters
    ----------
    result : FixedPointResult or None
        The solved point (:func:`gaussmix.solve`); None for a point without a fixed point.
    mixture : Mixture
        The point's mixture (its label map gives ``y_c``).

    Returns
    -------
    dict of str to float
        ``'m1'``, ``'q1'``, ``'v1'``, ..., ``'mK'``, ``'qK'``, ``'vK'`` -> the value.
    """
    y = np.asarray(mixture.labels.labels, dtype=float)
    k = y.shape[0]
    if result is None:
        return {f"{p}{c + 1}": float("nan") for c in range(k) for p in ORDER_PARAMETERS}
    out: dict[str, float] = {}
    for c in range(k):
        yc = y[c]
        out[f"m{c + 1}"] = float(yc @ np.asarray(result.M[c]))
        out[f"q{c + 1}"] = float(yc @ np.asarray(result.Q[c]) @ yc)
        out[f"v{c + 1}"] = float(yc @ np.asarray(result.V[c]) @ yc)
    return out


# ============================================================================ jobs
class _Job:
    """What a curve job and an overlay job share: a daemon thread, progress, cancel."""

    def __init__(self, total: int, on_done: Callable[[], None] | None = None) -> None:
        self.progress: tuple[int, int] = (0, total)
        self._on_done = on_done
        self.done = False
        self.cancelled = False
        self.error: str | None = None
        self.warnings: list[str] = []
        self._cancel = threading.Event()
        self._finished = threading.Event()
        self._thread = threading.Thread(target=self._main, daemon=True, name=self._name())

    def _name(self) -> str:
        return f"gaussmix-explore-{type(self).__name__}"

    def _start(self) -> None:
        self._thread.start()

    def cancel(self) -> None:
        """Stop after the point being computed (cooperative: at most one more point)."""
        self._cancel.set()

    def _check(self) -> None:
        if self._cancel.is_set():
            raise _Cancelled

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the thread to end; whether it has."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def _main(self) -> None:
        try:
            self._check()
            # a solve stops within one evaluation
            with _collecting(self.warnings), interruptible(self._check):
                self._run()
        except _Cancelled:
            self.cancelled = True
        except (ValueError, TypeError, OSError) as exc:  # bad input: the library's message
            self.error = " ".join(str(exc).split())
        except Exception as exc:  # noqa: BLE001 - a job reports, it never kills its caller
            self.error = " ".join(f"{type(exc).__name__}: {exc}".split())
        finally:
            self.done = True
            self._finished.set()
            if self._on_done is not None:
                self._on_done()

    def _run(self) -> None:  # pragma: no cover - overridden
        raise NotImplementedError


class CurveJob(_Job):
    """One curve of the explorer computed in a background thread (:func:`start_curve`).

    Made by :func:`start_curve` (which starts it) or :meth:`Session.submit`.

    Parameters
    ----------
    state : ExplorerState
        What is computed.
    on_point : callable, optional
        ``on_point(row)``, called in the job's thread with each row as it arrives.
    coarse : int
        Points of the coarse pass run first (0: none); see :func:`start_curve`.
    on_preview : callable, optional
        ``on_preview(rows)``, called in the job's thread when the coarse pass is done.
    on_done : callable, optional
        ``on_done()``, called in the job's thread once it has ended (:attr:`done` set),
        however it ended.
    init : list of FixedPointResult, optional
        Fixed points of a neighbouring state's curve (:func:`warm_start`): the nearest to
        the curve's first point starts it (the library curve's ``init``, of the coarse
        pass and of the curve).

    Attributes
    ----------
    state : ExplorerState
        What is computed.
    rows : list of dict
        The rows that have arrived, in the order solved: the columns of the library's
        table (:func:`gaussmix.learning_curve`) and the order parameters
        (:func:`order_parameters`).  A point without a fixed point has NaN observables and
        ``converged`` False.
    preview : list of dict
        The rows of the coarse pass, when one was run (:func:`start_curve`'s ``coarse``):
        the library's curve on every few points of the grid, to draw until ``rows`` cover
        the range (values within the solver's tolerance of the final ones; never exported).
        Its rows arrive one by one, as the final curve's do (in the order solved; sorted
        along the axis once the pass is done).
    coarse_budget : float
        Seconds of the job thread's CPU time the coarse pass may spend
        (:data:`COARSE_BUDGET_S`).
    coarse_stopped : bool
        Whether the coarse pass was stopped by its budget (``preview`` then holds the
        rows it had solved, from the low end of the range).
    point_cpu : float or None
        The median seconds of the job thread's CPU time a row of the curve took (after its
        coarse pass; None until it is done; from the cache, the computing job's): what the
        next curve's coarse pass would cost is judged by it (:meth:`Session.submit`).
    refining : bool
        Whether the coarse pass is over, with rows to draw, and the final curve is being
        computed, its rows replacing the coarse ones in place (False for a curve without a
        coarse pass, or whose coarse pass was stopped before its first point).
    started : float
        When the job was made (:func:`time.monotonic`): a display's clock of a running job.
    failed : list of (float, str)
        The x value and the reason of each point without a fixed point (drawn missing).
    warnings : list of str
        The warnings raised while computing, ``'<Category>: <message>'``.
    progress : (int, int)
        Points done, points in all (of the final curve).
    done, cancelled : bool
        Whether the job has ended, and whether it ended by :meth:`cancel`.
    error : str or None
        The error that ended the job (invalid state, unexpected failure).
    table : CurveTable or None
        The library's table, once the whole curve is computed.
    cached : bool
        Whether the curve came from the cache of finished curves.
    """

    def __init__(
        self,
        state: ExplorerState,
        on_point: Callable[[dict], None] | None = None,
        *,
        coarse: int = 0,
        on_preview: Callable[[list[dict]], None] | None = None,
        on_done: Callable[[], None] | None = None,
        init: list[FixedPointResult] | None = None,
    ) -> None:
        self.state = state
        self.init = list(init or [])
        self.rows: list[dict] = []
        self.preview: list[dict] = []
        self.failed: list[tuple[float, str]] = []
        self.table: CurveTable | None = None
        self.cached = False
        self._on_point = on_point
        self._on_preview = on_preview
        self._coarse = coarse
        self.coarse_budget = coarse_budget()
        self.coarse_stopped = False
        self.point_cpu: float | None = None
        self._row_cpu: list[float] = []  # the CPU seconds of each row (the curve's)
        self._mark = 0.0  # the job thread's CPU time at the row before
        self.point_budget = POINT_BUDGET if state.precision == "screen" else None
        self.refining = False
        self.started = time.monotonic()
        self._x = x_column(state)
        super().__init__(state.n_points, on_done)

    def wait(self, timeout: float | None = None) -> CurveTable | None:
        """Wait for the job to end (at most ``timeout`` seconds); the table (None if the job
        was cancelled, failed, or is still running)."""
        self._finished.wait(timeout)
        return self.table

    def _add(self, row: dict) -> None:
        now = time.thread_time()
        self._row_cpu.append(now - self._mark)
        self._mark = now
        if not row["converged"]:
            self.failed.append((float(row[self._x]), row.pop("_reason")))
        row.pop("_reason", None)
        self.rows.append(row)
        self.progress = (len(self.rows), self.progress[1])
        if self._on_point is not None:
            self._on_point(row)

    def _run(self) -> None:
        point, values = setup(self.state)
        key = cache_key(self.state, point.params, values)
        hit = CACHE.get(key)
        if hit is not None:
            table, rows, warned, self.point_cpu = hit
            self.cached = True
            self.warnings.extend(warned)
            for row in rows:
                self._check()
                self._add(dict(row))
            self.table = copy_table(table)
            return
        if 0 < self._coarse and 2 * self._coarse <= len(values):
            self._preview(point, values)
        self._mark, self._row_cpu = time.thread_time(), []
        if self.point_budget is None:
            self.table = _library_curve(self.state, point, values, self._solved(point), self.init)
        else:
            self.table = self._budgeted(point, values, self.point_budget)
        self.point_cpu = float(np.median(self._row_cpu)) if self._row_cpu else None
        # the rows as they arrived (a row without a fixed point with its reason: a move
        # back lists it again)
        reasons = dict(self.failed)
        cached = [
            dict(r) if r["converged"] else {**r, "_reason": reasons[float(r[self._x])]}
            for r in self.rows
        ]
        CACHE.put(key, (copy_table(self.table), cached, list(self.warnings), self.point_cpu))

    def _solved(self, point: Any) -> Callable[[dict, FixedPointResult | None], None]:
        """The library curve's callback: each row with its order parameters, then the
        cancel check (the cooperative cancel between two points)."""

        def hook(row: dict, result: FixedPointResult | None) -> None:
            row = {**row, **order_parameters(result, point.mixture)}
            if not row["converged"]:
                row["_reason"] = _failure(row)
            self._add(row)
            self._check()

        return hook

    def _budgeted(self, point: Any, values: np.ndarray, budget: int) -> CurveTable:
        """The library's curve over ``values`` with each point's steps counted (the
        cooperative stop, within one evaluation of the map): a point past ``budget`` steps
        (``budget`` for each point of a stacked solve, :func:`_stacks`; once
        :data:`TYPICAL_FROM` points are solved, :data:`TYPICAL_FACTOR` times their median
        steps, at least :data:`TYPICAL_FLOOR`, if that is less) that had a fixed
        point to start from (of ``init``, or one solved before it: a cold point has no
        budget, so that a curve whose cold start is slow is never drawn all missing) is
        stopped and
        drawn missing with the reason (:func:`gaussmix.experiments.curves.missing_row`),
        where the job has a neighbouring curve's fixed points (``init``) after a second
        start: a point that the continuation along the curve has not solved within
        :data:`FIRST_TRY_SHARE` of the budget starts again from ``init`` (its nearest: the
        same alpha on the curve before a slider's move) with the rest of it,
        and the library's curve goes on over the points after it (in the order the library
        solves them: a sweep over lambda from large to small), from the fixed points solved
        so far and those of ``init`` (the library curve's ``init``: its nearest, the point
        before, starts it), or those of ``init`` alone where it has any (:func:`_restart`:
        the same alpha on the curve before a slider's move).  The table: the rows in the
        grid's order, each point's result beside its row."""
        from gaussmix.core.tables import CurveTable
        from gaussmix.experiments.curves import missing_row

        # the order the library solves the points in (lambda_sweep: large to small lambda)
        order = list(
            range(len(values)) if self._x == "alpha" else np.argsort(-values, kind="stable")
        )
        rows: dict[int, dict] = {}  # the library's rows, by the index in the grid
        results: dict[int, FixedPointResult | None] = {}
        solved = self._solved(point)

        now = _PointSteps()  # the point being solved
        costs: list[int] = []  # the steps of each point solved (its starts together)

        def whole() -> float:
            # the budget of the next point over all its starts: the screen precision's, or
            # the curve's typical cost's once it has one
            if len(costs) < TYPICAL_FROM:
                return budget
            typical = TYPICAL_FACTOR * float(np.median(costs))
            return min(budget, max(TYPICAL_FLOOR, math.ceil(typical)))

        def limit(n: int, along: bool) -> float:
            # the budget of the next point (n: points left; along: started by the
            # continuation along the curve, not from the library call's init)
            if not self.init and all(r is None for r in results.values()):
                return math.inf  # the cold start
            if _stacks(point, n):
                return budget * n
            if now.spent:  # started again from init: what is left of the point's budget
                return now.whole - now.spent
            now.whole = whole()
            # with a neighbouring curve, the continuation's share; then init (_budgeted)
            if along and self.init:
                return math.ceil(FIRST_TRY_SHARE * now.whole)
            return now.whole

        def check() -> None:
            self._check()
            now.step()

        def hook(row: dict, result: FixedPointResult | None) -> None:
            i = order[len(rows)]
            rows[i], results[i] = dict(row), result
            if result is not None and math.isfinite(now.limit):
                costs.append(now.spent + now.taken)
            now.spent = 0
            if len(rows) < len(values):
                now.start(limit(1, True), along=True)
            solved(row, result)

        stopped = False  # whether a point has been stopped by the budget
        while len(rows) < len(values):
            rest = order[len(rows) :]
            now.start(limit(len(rest), False), along=False)
            # a point started again, and after a point stopped by the budget the rest of
            # the curve: from the neighbouring curve's fixed points where the job has them
            # (the same alpha at the lambda before a slider's move), not from this curve's
            # points before the stop: the continuation from them did not cross the stopped
            # point, and the point after it started from them failed too (:func:`_restart`)
            init = _restart(self.init, results, stopped or bool(now.spent))
            try:
                with interruptible(check):
                    _library_curve(self.state, point, values[sorted(rest)], hook, init)
            except _PointOverBudget:
                used = int(now.spent + now.limit)
                if now.along and self.init and used < now.whole:
                    now.spent = used  # the same point again, from init
                    continue
                now.spent = 0
                stopped = True
                i = order[len(rows)]
                x = float(values[i])
                at = (
                    {"alpha": x, "lam": point.lam}
                    if self._x == "alpha"
                    else {"alpha": point.alpha, "lam": x}
                )
                rows[i], results[i] = {**missing_row(**at), "n_iter": used}, None
                self._add(
                    {
                        **rows[i],
                        **order_parameters(None, point.mixture),
                        "_reason": (
                            f"not solved within the screen precision's {used} iterations "
                            f"at lam={at['lam']:g}, alpha={at['alpha']:g} (the library's "
                            "precision has no such budget): drawn missing"
                        ),
                    }
                )
        index = range(len(values))
        return CurveTable.from_rows([rows[i] for i in index], [results[i] for i in index])

    def _preview(self, point: Any, values: np.ndarray) -> None:
        """The coarse pass: the library's curve on ``coarse`` points of the grid, evenly
        picked (both ends), its warnings dropped (the final curve gives its own); stopped
        once it has spent :data:`COARSE_BUDGET_S` of the thread's CPU time (within one
        evaluation of the solver's map), the rows solved until then kept."""
        index = _evenly(len(values), self._coarse)
        rows: list[dict] = []
        self.preview = rows  # drawn as its rows arrive (a list only ever appended to)
        start = time.thread_time()

        def check() -> None:
            self._check()
            if time.thread_time() - start > self.coarse_budget:
                raise _OverBudget

        def hook(row: dict, result: FixedPointResult | None) -> None:
            rows.append({**row, **order_parameters(result, point.mixture)})
            check()

        mark = len(self.warnings)
        try:
            with interruptible(check):  # (the job's own cancel check included)
                _library_curve(self.state, point, values[index], hook, self.init)
        except _OverBudget:
            self.coarse_stopped = True
        del self.warnings[mark:]
        self.preview = sorted(rows, key=lambda r: r[self._x])
        self.refining = bool(rows)  # a coarse curve to refine (none: stopped at once)
        if self._on_preview is not None:
            self._on_preview(self.preview)


def _library_curve(
    state: ExplorerState,
    point: Any,
    values: np.ndarray,
    callback: Callable[[dict, FixedPointResult | None], None],
    init: list[FixedPointResult] | None = None,
) -> CurveTable:
    """:func:`gaussmix.learning_curve` (axis alpha) or :func:`gaussmix.lambda_sweep` (axis
    lambda) of the validated point over ``values``, as ``gaussmix curve`` /
    ``lambda-curve`` call them, with ``callback`` and the warm start ``init`` (none if
    empty)."""
    from gaussmix.experiments.curves import lambda_sweep, learning_curve

    init = init or None
    if state.axis == "alpha":
        return learning_curve(
            point.mixture,
            point.loss,
            values,
            lam=point.lam,
            **point.penalty_kw,
            callback=callback,
            init=init,
            **point.solve_kw,
        )
    return lambda_sweep(
        point.mixture,
        point.loss,
        values,
        alpha=point.alpha,
        **point.penalty_kw,
        callback=callback,
        init=init,
        **point.solve_kw,
    )


def _failure(row: dict) -> str:
    """Why a row has no fixed point."""
    return (
        f"no fixed point at lam={row['lam']:g}, alpha={row['alpha']:g} "
        f"({int(row['n_iter'])} iterations, residual {row['residual']:.2g}): "
        "drawn missing"
    )


def start_curve(
    state: ExplorerState,
    on_point: Callable[[dict], None] | None = None,
    *,
    coarse: int = 0,
    on_preview: Callable[[list[dict]], None] | None = None,
    on_done: Callable[[], None] | None = None,
    init: list[FixedPointResult] | None = None,
) -> CurveJob:
    """Start computing the curve of ``state`` in a background thread.

    Parameters
    ----------
    state : ExplorerState
        The controls.  An invalid state ends the job at once with :attr:`CurveJob.error`
        (the library's message); :func:`gaussmix.explore.validate` says which field.
    on_point : callable, optional
        ``on_point(row)`` in the job's thread for each row as it arrives.
    coarse : int
        Before a curve that is not in the cache (of at least ``2 coarse`` points), compute
        the library's curve on ``coarse`` of its points (:attr:`CurveJob.preview`), to draw
        the whole range early (0: none); it stops after :data:`COARSE_BUDGET_S` of CPU time.
    on_preview : callable, optional
        ``on_preview(rows)`` in the job's thread when the coarse pass is done.
    on_done : callable, optional
        ``on_done()`` in the job's thread once it has ended (a display can draw the whole
        curve at once rather than at its next poll).
    init : list of FixedPointResult, optional
        The warm start of the curve (:func:`warm_start`): its values are then the
        library's with that ``init``, within the solver's tolerance of the cold curve's.

    Returns
    -------
    CurveJob
        Running; :meth:`CurveJob.wait` for the library's table.
    """
    job = CurveJob(
        state, on_point, coarse=coarse, on_preview=on_preview, on_done=on_done, init=init
    )
    job._start()
    return job


# ============================================================================ warm start
#: The controls whose move leaves the curve's problem of the same shape and near the last
#: one: the curve before such a move (one control moved, :func:`warm_start`) starts the
#: next (a discrete change, of the loss, the penalty, K, the means' family, the axis or
#: the mixture's model, starts cold).
WARM_CONTROLS = frozenset(
    {
        "lam",
        "alpha_min",
        "alpha_max",
        "n_points",
        "log_x",
        "alpha",
        "lam_min",
        "lam_max",
        "delta",
        "rho",
        "fractions",
        "deltas",
        "sparsity",
        "delta1",
        "delta2",
        "l1_ratio",
        "precision",
    }
)
#: The controls that change what is drawn, not the curve (the cache serves them).
_DISPLAY_CONTROLS = frozenset({"show", "overlays", "sim_d", "sim_seeds"})


def warm_start(job: CurveJob | None, state: ExplorerState) -> list[FixedPointResult] | None:
    """The fixed points of ``job``'s curve, where it ended with its whole curve (not
    cancelled: the values never depend on when a move came), its problem has more than one
    output (one-hot labels: binary curves take a tenth of a second) and ``state`` differs
    from its state in one of :data:`WARM_CONTROLS` alone (the controls that change only
    what is drawn aside): ``state``'s curve starts from them (the library's ``init``: its
    fixed point nearest to the curve's first point, e.g. the same alpha at the lambda
    before a slider's move, starts it; measured on the K = 3 cross-entropy lasso at lam =
    9.6e-4, from half a decade away, 208 iterations of the cold first point -> 23).  None
    otherwise."""
    if job is None or job.table is None:
        return None
    moved = {
        name
        for name in _FIELD_NAMES
        if name not in _DISPLAY_CONTROLS and getattr(job.state, name) != getattr(state, name)
    }
    if len(moved) != 1 or not moved <= WARM_CONTROLS:
        return None
    found = [r for r in job.table.points if r is not None]
    if not found or np.shape(found[0].Q)[-1] < 2:  # one output
        return None
    return found


# ============================================================================ overlays
class OverlayJob(_Job):
    """The overlays of a state computed in a background thread (:func:`start_overlays`).

    Made by :func:`start_overlays` (which starts it) or :meth:`Session.submit_overlays`.

    Parameters
    ----------
    state : ExplorerState
        What is computed: the overlays named in ``state.overlays``.
    on_result : callable, optional
        ``on_result(overlay)``, called in the job's thread with each :class:`Overlay` as it
        completes.

    Attributes
    ----------
    state : ExplorerState
        What is computed.
    results : dict of str to Overlay
        The overlays computed so far, by name (``bayes``, ``alpha_star``, ``lambda_star``,
        ``simulation``).
    progress, done, cancelled, error, warnings
        As in :class:`CurveJob`; progress counts the library calls.
    """

    def __init__(
        self, state: ExplorerState, on_result: Callable[[Overlay], None] | None = None
    ) -> None:
        self.state = state
        self.results: dict[str, Overlay] = {}
        self._on_result = on_result
        super().__init__(0)

    def wait(self, timeout: float | None = None) -> dict[str, Overlay]:
        """Wait for the job to end (at most ``timeout`` seconds); the results so far."""
        self._finished.wait(timeout)
        return self.results

    def _run(self) -> None:
        # at the library's precision whatever the curve's: lambda* searches a minimum and
        # the overlays are few points (the screen precision is the curve's, state.py)
        point, values = setup(self.state.replace(precision="library"))
        steps = _overlay_steps(self.state, point, values)
        self.progress = (0, sum(len(calls) for _, calls in steps))
        done = 0
        for name, calls in steps:
            overlay = Overlay(name)
            self.results[name] = overlay
            errors: list[str] = []
            for call in calls:
                self._check()
                try:
                    call(overlay)
                except (ValueError, TypeError, ArithmeticError, RuntimeError) as exc:
                    errors.append(" ".join(str(exc).split()))
                done += 1
                self.progress = (done, self.progress[1])
            if errors and not overlay.rows and overlay.value is None:
                overlay.unavailable = errors[0]  # the library's reason (the same at each x)
            else:
                self.warnings.extend(f"{name}: {e}" for e in errors)
            if self._on_result is not None:
                self._on_result(overlay)


def start_overlays(
    state: ExplorerState, on_result: Callable[[Overlay], None] | None = None
) -> OverlayJob:
    """Start computing the overlays ``state.overlays`` in a background thread.

    ``bayes``: the Bayes-optimal test error (Appendix D) at each alpha of the curve (at
    ``state.alpha`` on the lambda axis), for isotropic mixtures whose clusters each have
    their own label; ``alpha_star``: the separability threshold alpha*_K (the lambda -> 0+
    limit of Appendix C, where the training error of the max-margin estimator leaves 0;
    the same value as :func:`gaussmix.separability_threshold`'s default, without its
    evidence checks on both sides, which take three times as long);
    ``lambda_star``: the optimal penalty and its test error at up to
    :data:`MAX_OVERLAY_POINTS` alphas (one on the lambda axis); ``simulation``: exact ERM at
    dimension ``state.sim_d`` over ``state.sim_seeds`` seeds (seed 0) at up to
    :data:`MAX_OVERLAY_POINTS` points of the curve, means and standard errors.  An overlay
    the library does not define for the state carries the library's reason in
    :attr:`Overlay.unavailable`.

    Parameters
    ----------
    state : ExplorerState
        The controls; the overlays computed are ``state.overlays`` (the simulation's size
        is ``state.sim_d`` and ``state.sim_seeds``).  An invalid state ends the job at once
        with :attr:`OverlayJob.error`.
    on_result : callable, optional
        ``on_result(overlay)``, called in the job's thread as each overlay completes.

    Returns
    -------
    OverlayJob
        Running; :meth:`OverlayJob.wait` for the results.
    """
    job = OverlayJob(state, on_result)
    job._start()
    return job


# ============================================================================ session
class PrefetchJob(_Job):
    """Curves computed ahead into the cache of finished curves (:meth:`Session.prefetch`),
    one after the other, ``delay`` seconds after ``after`` (the curve on display) has
    ended."""

    def __init__(
        self, states: list[ExplorerState], after: _Job | None, delay: float = 0.0
    ) -> None:
        self.states = states
        self._after = after
        self._delay = delay
        super().__init__(len(states))

    def _run(self) -> None:
        while self._after is not None and not self._after._finished.wait(0.01):
            self._check()
        if self._delay > 0 and self._cancel.wait(self._delay):
            self._check()
        for i, state in enumerate(self.states):
            self._check()
            job = CurveJob(state, init=warm_start(self._after, state))
            job._cancel = self._cancel  # cancelling the prefetch stops its curve
            try:
                with _collecting(job.warnings):  # the curve's own warnings, cached with it
                    job._run()
            except (ValueError, TypeError, OSError):
                pass  # an invalid neighbour: nothing to prefetch
            self.progress = (i + 1, self.progress[1])


def _stacks(point: Any, n: int) -> bool:
    """Whether the library solves a curve of ``n`` points of ``point``'s problem at all
    its points at once (:func:`~gaussmix.experiments.continuation.stacked_curve_options`)."""
    from gaussmix.experiments.continuation import stacked_curve_options
    from gaussmix.theory.solve.options import solver_options

    opts = solver_options(None, point.solve_kw)
    return stacked_curve_options(point.problem, opts, n) is not None


def _auto_coarse(state: ExplorerState) -> int:
    """:data:`COARSE_POINTS` for curves of problems with more than one output (one-hot
    labels: cross-entropy and multi-output square or hinge losses, about 10 times the cost
    of a binary curve) that the library solves point by point, else 0.  A curve that it
    solves at all its points at once (:func:`~gaussmix.experiments.continuation.stackable`: K = 3
    classes with ridge, 10 points or more) has its rows together at the end, in about
    twice the time of a coarse pass, which would delay them by half as much again
    (BENCHMARKS.md); one whose first point turns out to be in the sharp regime is then
    solved point by point, and its rows stream."""
    try:
        point, values = setup(state)
    except (ValueError, TypeError, OSError):
        return 0
    if point.problem.dim == 1 or _stacks(point, len(values)):
        return 0
    return COARSE_POINTS


class Session:
    """The jobs of one browser tab or notebook: a newer request cancels the older one.

    Parameters
    ----------
    coarse : int or 'auto'
        The coarse pass of each new curve (:func:`start_curve`; default none); ``'auto'``:
        :data:`COARSE_POINTS` points for problems with more than one output solved point by
        point, none for binary ones (which take a tenth of a second) nor for curves solved
        at all their points at once (K = 3 classes with ridge, :func:`_auto_coarse`).  A
        display that draws :attr:`CurveJob.preview` until the rows cover the range should
        ask for ``'auto'``: the whole range is drawn in about a quarter of the curve's time,
        the final rows arrive about a third later.

    Examples
    --------
    >>> from gaussmix.explore import ExplorerState, Session
    >>> session = Session()
    >>> job = session.submit(ExplorerState(n_points=5))
    >>> table = job.wait()
    >>> session.close()
    """

    def __init__(self, *, coarse: int | str = 0) -> None:
        self._lock = threading.Lock()
        self.coarse = coarse
        self.curve: CurveJob | None = None
        self.overlays: OverlayJob | None = None
        self.prefetching: PrefetchJob | None = None
        self._jobs: list[_Job] = []

    def _track(self, job: _Job) -> None:
        self._jobs = [j for j in self._jobs if not j.done] + [job]

    def submit(
        self,
        state: ExplorerState,
        on_point: Callable[[dict], None] | None = None,
        on_preview: Callable[[list[dict]], None] | None = None,
        on_done: Callable[[], None] | None = None,
    ) -> CurveJob:
        """Cancel the running curve and prefetch (if any) and start the curve of
        ``state``, from the fixed points of the curve before it where one control moved
        (:func:`warm_start`); without the coarse pass where the curve before says that it
        would not draw the range within its budget
        (:func:`~gaussmix.explore.budget.coarse_hopeless`)."""
        coarse = _auto_coarse(state) if self.coarse == "auto" else int(self.coarse)
        with self._lock:
            self._cancel_curve()
            before = self.curve
            init = warm_start(before, state)
            if coarse and init is not None and before is not None:
                if _coarse_hopeless(before.point_cpu, coarse, coarse_budget()):
                    coarse = 0
            self.curve = start_curve(
                state, on_point, coarse=coarse, on_preview=on_preview, on_done=on_done, init=init
            )
            self._track(self.curve)
            return self.curve

    def cancel(self) -> None:
        """Cancel the running curve and prefetch (if any): a display that changes first,
        then submits, lets them stop meanwhile (a job's thread shares the interpreter)."""
        with self._lock:
            self._cancel_curve()

    def _cancel_curve(self) -> None:
        for job in (self.curve, self.prefetching):
            if job is not None:
                job.cancel()

    def prefetch(self, states: Sequence[ExplorerState], delay: float = 0.0) -> PrefetchJob:
        """Compute ``states`` into the cache ``delay`` seconds after the current curve has
        ended (e.g. the neighbouring positions of a slider: moving it there then redraws
        at once; the delay leaves the machine to the display of the curve); the next
        :meth:`submit` or :meth:`prefetch` cancels it."""
        with self._lock:
            if self.prefetching is not None:
                self.prefetching.cancel()
            job = PrefetchJob(list(states), self.curve, delay)
            job._start()
            self.prefetching = job
            self._track(job)
            return job

    def submit_overlays(
        self, state: ExplorerState, on_result: Callable[[Overlay], None] | None = None
    ) -> OverlayJob:
        """Cancel the running overlays (if any) and start those of ``state``."""
        with self._lock:
            if self.overlays is not None:
                self.overlays.cancel()
            self.overlays = start_overlays(state, on_result)
            self._track(self.overlays)
            return self.overlays

    def close(self, timeout: float | None = None) -> None:
        """Cancel every job and wait for their threads to end."""
        with self._lock:
            jobs = list(self._jobs)
            self._jobs = []
        for job in jobs:
            job.cancel()
        for job in jobs:
            job.join(timeout)

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
