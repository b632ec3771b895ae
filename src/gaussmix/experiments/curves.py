"""Curves of fixed points: learning curves over alpha and sweeps over lambda.

Both return tidy pandas tables, one row per point.  One-output curves of
:data:`~gaussmix.experiments.continuation.STACKED_MIN_POINTS` points or more are solved at all
their points at once (:mod:`gaussmix.theory.solve.batch`); the others walk along the
curve with warm starts (predictor-corrector continuation,
:mod:`gaussmix.experiments.continuation`), sweeps over lambda from large to small lambda
(annealing, Appendix B.5, item 1) whatever the order asked for; both report in the
order asked for.
:func:`d_test_error_d_lambda` (:mod:`gaussmix.experiments.derivative`) differentiates
``eps_g`` with respect to lambda through the fixed point.
The optimal penalty (``optimal_lambda``, ``optimal_lambda_curve``, ``OptimalLambdaResult``)
lives in :mod:`gaussmix.experiments.lambda_star`; the names are still importable from
here.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, Literal

import numpy as np

from gaussmix.core.caught import caught, reissue
from gaussmix.core.exceptions import (
    ArgumentError,
    ArgumentTypeError,
    ConvergenceError,
    ConvergenceWarning,
)
from gaussmix.core.progress import progress_bar
from gaussmix.core.tables import CurveTable, deprecated_return_results
from gaussmix.core.validation import check_param, check_param_values
from gaussmix.theory.api.api import check_lam_alpha, make_problem
from gaussmix.theory.channel.losses import Loss
from gaussmix.theory.model.mixture import Mixture
from gaussmix.theory.model.outputs import summary_keys
from gaussmix.theory.numerics.quadrature import QuadratureRule, default_rule
from gaussmix.theory.problem.problem import Problem
from gaussmix.theory.solve.homotopy import AlphaHomotopy
from gaussmix.theory.solve.options import SolverOptions, solver_options, with_options_doc
from gaussmix.theory.solve.policy import anderson_memory
from gaussmix.theory.solve.solver import FixedPointResult, solve_problem

from .continuation import (
    PREDICTOR_ITER_FACTOR,
    PREDICTOR_MIN_ITER,
    PREDICTOR_PACE_POINTS,
    PREDICTOR_POINTS,
    curve_start_rule,
    next_start_rule,
    predict,
    prediction_accepted,
    prediction_resolved,
    solve_points,
    stacked_curve_options,
)
from .derivative import d_test_error_d_lambda

# moved to gaussmix.experiments.lambda_star; still importable from here
from .lambda_star import OptimalLambdaResult, optimal_lambda, optimal_lambda_curve  # noqa: F401

__all__ = [
    "learning_curve",
    "lambda_sweep",
    "parse_range",
    "d_test_error_d_lambda",
]


def parse_range(
    spec: str, *, name: str = "alphas", log: bool | None = None, fact: str | None = None
) -> np.ndarray:
    """Parse ``'start:stop:num'`` (linear) or ``'log:start:stop:num'`` into an array.

    Parameters
    ----------
    spec : str
        The range: ``num`` points from ``start`` to ``stop`` (both included).
    name : str
        The argument's name in error messages.
    log : bool, optional
        Force a log (True) or linear (False) spacing; default: log with the ``log:``
        prefix.
    fact : str, optional
        The parameter the values are (``'alpha'``, ``'lam'``): an end that is not finite is
        refused by its rule (:func:`~gaussmix.core.validation.check_param_values`), with
        the message a single value gets.

    Raises
    ------
    ArgumentError
        Naming ``name``: ``spec`` is not a range, its ends are not finite (or not positive
        on a log range), or it has fewer than one point.
    """
    parts = spec.split(":")
    is_log = False
    if parts and parts[0] == "log":
        is_log, parts = True, parts[1:]
    if log is not None:
        is_log = log
    if len(parts) != 3:
        raise ArgumentError(
            name, f"must look like 'start:stop:num' (or 'log:start:stop:num'), got {spec!r}"
        )
    try:
        start, stop, num = float(parts[0]), float(parts[1]), int(parts[2])
    except ValueError:
        raise ArgumentError(name, f": cannot parse {spec!r} as start:stop:num") from None
    if not (np.isfinite(start) and np.isfinite(stop)):
        if fact is not None:  # the parameter's own rule says it, as for one value
            check_param_values(fact, [start, stop], name=name)
        raise ArgumentError(name, f": the ends must be finite numbers, got {spec!r}")
    if num < 1:
        raise ArgumentError(name, f": the number of points must be >= 1, got {num}")
    if is_log:
        if start <= 0 or stop <= 0:
            raise ArgumentError(name, f": a log range needs positive ends, got {spec!r}")
        return np.geomspace(start, stop, num)
    if num == 1:  # its start (linspace computes start + 0 * step: NaN when stop - start overflows)
        return np.array([start])
    return np.linspace(start, stop, num)


def _row(res: FixedPointResult | None, **coords: Any) -> dict:
    """A row of a curve's table: ``res``'s summary, or NaN observables with
    ``converged=False`` when ``res`` is None or not converged (``n_iter`` and ``residual``
    are then those of the last attempt, as in a sweep's row: the iterations it ran)."""
    if res is None or not res.success:
        # the columns of a converged row (FixedPointResult.summary), in the same order
        base = {key: np.nan for key in summary_keys()}
        base.update(converged=False, n_iter=0, residual=np.nan, integration_error=np.nan)
        if res is not None:
            base.update(n_iter=int(res.n_iter), residual=float(res.residual))
    else:
        base = res.summary()
    return {**coords, **base}


def missing_row(**coords: float) -> dict:
    """The row of a curve's table for a point that a caller stopped before it was solved
    (NaN observables, ``converged`` False, no iterations), with the columns and order of
    the rows :func:`learning_curve` and :func:`lambda_sweep` give (the explorer's budget
    of a point, :mod:`gaussmix.explore.engine`)."""
    return _row(None, **coords)


def _curve(
    mixture: Mixture,
    loss: str | Loss,
    points: list[tuple[float, float]],
    *,
    axis: Literal["alpha", "lam"],
    penalty: str,
    progress: bool,
    opts: SolverOptions,
    l1_ratio: float | None = None,
    carry_rule: bool = False,
    on_result: Callable[[int, FixedPointResult | None], None] | None = None,
    init: list[FixedPointResult] | None = None,
) -> list[FixedPointResult | None]:
    """Solve ``points`` in order by predictor-corrector continuation; each point's result,
    or the last iterate of its last attempt (``converged=False``), or None.

    ``axis`` is the curve's parameter (``'alpha'`` or ``'lam'``: the predictor works in its
    logarithm, the progress bar is labelled with it); ``opts`` the solver's options, one
    validated object however the caller spelled them (keywords or ``options=``), so that
    both take the same path.

    Each point starts from the state predicted through the last points of the curve
    (:func:`~gaussmix.experiments.continuation.predict`, in ``log alpha`` or ``log
    lambda``), kept only where the safeguard accepts the fixed point it led to
    (:func:`~gaussmix.experiments.continuation.prediction_accepted`), else from the last
    point, else from the cold start; the Anderson secant pairs are carried along too.  The
    point after one whose solve from the predictor failed starts from the last point at once
    (:func:`_predicted`'s ``predictor``).

    Unless the caller fixes ``quadrature`` (``opts.quadrature`` not None), the channel rule is
    carried (:func:`_carried_rule`): points are solved as single points are until one ends on
    the chain of the regime-free automatic rule (graded panels: in two dimensions the first
    point, in one the first in the sharp regime); the next starts its refinement one step down
    that chain from the rule this point found accurate
    (:func:`~gaussmix.experiments.continuation.curve_start_rule`), and each later point from
    the rule its predecessor found accurate (:func:`_next_start_rule`), so that its own
    refinements (at most ``max_refine``) go beyond it instead of starting again.  Every point's
    integration error is still estimated at that point, by refinement until it meets
    ``quad_tol``.
    With ``carry_rule`` (annealing in lambda: the channel integrand sharpens as lambda
    decreases) the Gauss-Hermite rule of one output is carried too.

    ``init`` (fixed points of a curve of the same shape, :func:`_init_results`): the point
    among them nearest to ``points[0]`` (:func:`_nearest`) starts the curve's first point
    where it is solved point by point (:func:`_from_init`), instead of the cold start; a
    stacked curve (below) starts cold, and uses it only where it goes point by point.

    ``on_result(i, result)`` is called after the point ``points[i]`` is solved (with what
    :func:`_curve` returns for it); an exception it raises stops the curve there.  A curve
    solved as one stacked state (:func:`~gaussmix.experiments.continuation.solve_points`) calls
    it for every point once all are solved (a point's result stands only then: until its
    error is estimated the stacked solve can still fail and leave the curve to be solved
    point by point); its progress bar advances as its points converge.
    """
    if axis not in ("alpha", "lam"):
        raise ArgumentError("axis", f"must be 'alpha' or 'lam', got {axis!r}")
    desc = "alpha" if axis == "alpha" else "lambda"
    carry = opts.quadrature is None
    results: list[FixedPointResult | None] = []
    done: list[tuple[float, FixedPointResult]] = []  # (curve parameter, result)
    history: dict = {}  # Anderson secant pairs (per quadrature rule) carried along the curve
    failures: list[str] = []
    problems = _problems(mixture, loss, points, penalty, l1_ratio)
    stacked_opts = stacked_curve_options(problems[0], opts, len(points))
    if stacked_opts is not None:
        with progress_bar(total=len(problems), desc=desc, enabled=progress, leave=False) as bar:
            # drawn: it advances as the points of the stacked state converge
            advance = None if bar.disable else lambda n: bar.update(n - bar.n)
            stacked = solve_points(problems, stacked_opts, on_converged=advance)
        if stacked is not None:
            if on_result is not None:  # solved together: each row once all are done
                for i, res in enumerate(stacked):
                    on_result(i, res)
            return stacked
    stiff = False  # the last point needed a fallback, or a walk in alpha (below)
    failed = False  # the last point's solve from the predictor failed (_predicted)
    for problem, (lam, alpha) in zip(
        progress_bar(problems, desc=desc, enabled=progress, leave=False), points
    ):
        param = float(np.log(max(alpha if axis == "alpha" else lam, 1e-300)))
        walk = stiff and axis == "alpha"
        # (the walk's first solve starts from the secant through the last two points in
        # the logarithmic chart: where the curve's predictor would be that secant in the
        # state's own coordinates, the walk is made instead)
        res = None
        if not walk or len(done) >= PREDICTOR_POINTS:
            # after a point whose predictor failed (a transition), the next starts from its
            # warm start at once (:func:`_predicted`'s ``predictor``)
            res, failed = _predicted(
                problem, done, param, opts, history, warm=not walk, predictor=not failed
            )
        else:
            failed = False
        walked = res is None and walk
        if walked:
            res = _walked(problem, done, opts, history)
        if res is None and not results and init:  # the curve's first point
            res = _from_init(problem, _nearest(init, lam, alpha), opts, history)
        if res is None:
            res = _solve_cold(problem, opts, history, failures)
        stiff = res is not None and res.success and (walked or "fallback" in res.params)
        if res is not None and res.success:
            done.append((param, res))
            if carry:
                start = _carried_rule(res, problem, opts, carry_rule)
                if start is not None:
                    opts = replace(opts, quadrature=start)
            # the secant pairs of the rule that estimated this point's error model another
            # point's Jacobian: dropped, so that the next point's refinement starts from the
            # pairs of its own solve, as a single point's does (5-12 % fewer iterations in
            # lambda sweeps and at lam = 1e-3); not where the next point starts on that rule.
            # A closed-form channel's pairs (its one placeholder rule) are dropped too: kept,
            # they modelled the Jacobian of points further and further back, and every other
            # point of the K = 3 square lasso at lam = 2.4e-4 took 25-30 iterations where it
            # takes 4 (40 alphas in [0.38, 31], screen precision: 821 -> 428 iterations from
            # the curve at lam half a decade above, 671 -> 489 cold; library precision 2456
            # -> 1765; the curves that stack are not solved here)
            final = res.state.rule if res.state is not None else None
            if final != opts.quadrature:
                history.pop(final, None)
        results.append(res)
        if on_result is not None:
            on_result(len(results) - 1, res)
    for msg in failures:
        warnings.warn(msg, ConvergenceWarning, stacklevel=3)
    return results


def _problems(
    mixture: Mixture,
    loss: str | Loss,
    points: list[tuple[float, float]],
    penalty: str,
    l1_ratio: float | None,
) -> list[Problem]:
    """The problem of each ``(lam, alpha)`` of a curve: the first made by
    :func:`~gaussmix.theory.api.api.make_problem`, the others copies of it
    (:meth:`~gaussmix.theory.problem.problem.Problem.with_lam_alpha`) sharing its relabelling
    symmetry (``Problem.symmetry``, made once with the first).  The values are
    those the callers validated (``check_param_values``, ``check_param``); what
    ``make_problem`` checks beyond them, at ``lam = 0``, is checked at each such point
    (:func:`~gaussmix.theory.api.api.check_lam_alpha`)."""
    base = make_problem(
        mixture, loss, lam=points[0][0], alpha=points[0][1], penalty=penalty, l1_ratio=l1_ratio
    )
    out = [base]
    for lam, alpha in points[1:]:
        if lam == 0.0:
            check_lam_alpha(
                lam, alpha, loss=loss, penalty=penalty, l1_ratio=l1_ratio, mixture=mixture
            )
        out.append(base.with_lam_alpha(float(lam), float(alpha)))
    return out


def _carried_rule(
    res: FixedPointResult, problem: Problem, opts: SolverOptions, carry_rule: bool
) -> QuadratureRule | None:
    """The rule the point after ``res`` (solved with the options ``opts``) starts from, or
    None to keep ``opts``'s: :func:`_next_start_rule` from the rule ``res`` started from once
    a rule is carried; before, :func:`~gaussmix.experiments.continuation.curve_start_rule`
    where the solves refine their rule (else, with ``carry_rule``, the Gauss-Hermite rule
    of one output)."""
    if opts.quadrature is not None:
        return _next_start_rule(res, opts.quadrature)
    start = curve_start_rule(res, problem) if _refines(opts) else None
    if start is None and carry_rule:
        start = _next_start_rule(res, default_rule(problem.dim))
    return start


def _next_start_rule(res: FixedPointResult, base: QuadratureRule) -> QuadratureRule | None:
    """:func:`~gaussmix.experiments.continuation.next_start_rule` (the rule the next point
    of a curve starts from)."""
    return next_start_rule(res, base)


def _predicted(
    problem: Problem,
    done: list,
    param: float,
    opts: SolverOptions,
    history: dict,
    warm: bool = True,
    predictor: bool = True,
) -> tuple[FixedPointResult | None, bool]:
    """``problem`` solved (options ``opts``) from the predictor through ``done``, or from the
    last point of ``done`` where the safeguard rejects the predictor's fixed point (or there
    is no predictor, or it does not resolve the curve:
    :func:`~gaussmix.experiments.continuation.prediction_resolved`, or ``predictor`` is
    False); None if that fails (or ``done`` is empty); and whether the solve from the
    predictor failed (reached its cap or an error).

    From the predictor the solve skips the continuation from a coarser rule (``continuation``
    changes the starting point only): the predictor is closer to the fixed point than the
    coarse rule's (measured at K = 3 cross-entropy: 2 evaluations of the rule instead of 5
    coarse and 2 of the rule, 30 % less time per point).  Its iterations are capped at
    :data:`~gaussmix.experiments.continuation.PREDICTOR_ITER_FACTOR` times the median of
    the last :data:`~gaussmix.experiments.continuation.PREDICTOR_PACE_POINTS` points'
    (:func:`_pace`; at least :data:`~gaussmix.experiments.continuation.PREDICTOR_MIN_ITER`):
    a predictor that converges slowly is abandoned for the warm start (``warm`` False:
    for None, the caller's walk in alpha, :func:`_walked`).

    The caller passes ``predictor`` False for the point after one whose solve from the
    predictor failed: at a transition the next predictor fails too, each time after its cap
    on the fine rule, where the warm start's continuation runs on the coarse rule first.  On
    the explorer's K = 3 cross-entropy lasso at lam = 6.1e-4 (``benchmarks/bench_explore.py``,
    after the lambda slider's move) the point at alpha 3.43 spent 51 fine evaluations (1.31
    million node-evaluations) on its failed predictor: the curve 16.9 -> 11.8 million
    node-evaluations, 1147 -> 963 evaluations; at 6.6e-4 10.3 -> 9.7 million."""
    if not done:
        return None, False
    previous = done[-1][1]
    prediction = predict(done, param) if predictor else None
    failed = False
    if prediction is not None and prediction_resolved(done, param, prediction):
        # the warnings of a solve that the safeguard rejects are dropped with it; those of
        # an accepted one are given as the solve gave them (at the caller's line)
        res, log = _capped_solve(problem, prediction, _pace(done), opts, history, predicted=True)
        if res is not None and prediction_accepted(res, prediction, previous):
            reissue(log, stacklevel=2)
            return res, False
        failed = res is None
    if not warm:
        return None, failed
    try:  # (a warm start that stalls is given up early: the cold solve follows)
        res = solve_problem(
            problem,
            options=replace(opts, throw=True),
            init=previous,
            history=history,
            fail_fast=True,
        )
    except ConvergenceError:
        history.clear()
        return None, failed
    return res, failed


def _walked(
    problem: Problem, done: list, opts: SolverOptions, history: dict
) -> FixedPointResult | None:
    """``problem`` solved (options ``opts``) after the point before it needed a fallback
    or this walk, on a learning curve: the path of the cold solve's homotopy in alpha
    (:meth:`~gaussmix.theory.solve.homotopy.AlphaHomotopy.walk_from`) from the curve's last
    two points, then a warm start from the path's fixed point (its checks and error
    estimate those of a direct solve; ``n_iter`` counts the path's evaluations too); None
    where either fails (the cold solve, with its fallback, follows).

    Near the zero estimator of the hinge with a lasso (the map stiff, ``docs/design.md``,
    *When the direct iteration fails*) the plain warm start from the last point stalls
    where the homotopy's damped steps in logarithmic coordinates converge: on the curve
    "random 3" of ``benchmarks/_curve_grids.py`` (lam = 9.75) the points at alpha = 0.79
    to 1.59 each spent 301 evaluations on the stalled warm start and 77-184 on the cold
    solve's homotopy from a larger alpha, where the walk from the last points takes
    about 20."""
    states = [r.state for _, r in done[-2:] if r.state is not None]
    if not states:
        return None
    start, spent = AlphaHomotopy().walk_from(problem, opts, states, anderson_memory(opts))
    if start is None:
        return None
    try:
        res = solve_problem(
            problem, options=replace(opts, throw=True), init=start, history=history, fail_fast=True
        )
    except ConvergenceError:
        history.clear()
        return None
    return replace(res, n_iter=res.n_iter + spent)


def _solve_cold(
    problem: Problem, opts: SolverOptions, history: dict, failures: list[str]
) -> FixedPointResult | None:
    """``problem`` solved from the cold start (options ``opts``); else the attempt's last
    iterate (``converged=False``), or None, and a message in ``failures``."""
    try:
        return solve_problem(problem, options=replace(opts, throw=True), history=history)
    except ConvergenceError as exc:
        history.clear()
        failures.append(
            f"no fixed point at lam={problem.lam:g}, alpha={problem.alpha:g}: {exc}; "
            "reported as NaN"
        )
        return getattr(exc, "result", None)


def _init_results(init: Any) -> list[FixedPointResult] | None:
    """The fixed points a curve's ``init`` offers (:func:`learning_curve`): a
    :class:`FixedPointResult`, a curve (a :class:`~gaussmix.core.tables.CurveTable`, its
    ``.points``) or a sequence of results (None entries, and results without a fixed point,
    left out); None for ``init=None``.

    Raises
    ------
    ArgumentTypeError
        Naming ``init``: anything else.
    """
    if init is None:
        return None
    if isinstance(init, FixedPointResult):
        found: list = [init]
    elif isinstance(init, CurveTable):
        found = list(init.points)
    elif isinstance(init, Sequence) and not isinstance(init, str):
        found = list(init)
    else:
        raise ArgumentTypeError(
            "init",
            "must be a FixedPointResult, a curve (the table of learning_curve or "
            f"lambda_sweep) or a sequence of FixedPointResult, got {type(init).__name__}",
        )
    for r in found:
        if r is not None and not isinstance(r, FixedPointResult):
            raise ArgumentTypeError(
                "init", f"must hold FixedPointResult (or None) only, got {type(r).__name__}"
            )
    return [r for r in found if r is not None and r.success]


def _nearest(results: list[FixedPointResult], lam: float, alpha: float) -> FixedPointResult:
    """The result of ``results`` (non-empty) nearest to ``(lam, alpha)`` in ``|log lam -
    log lam_r| + |log alpha - log alpha_r|`` (a result's own ``lam`` and ``alpha`` from its
    ``params``; the first of equals), the distance the curves' continuation steps in."""

    def log(x: float) -> float:
        return float(np.log(max(float(x), 1e-300)))

    def distance(r: FixedPointResult) -> float:
        lr, ar = r.params.get("lam", lam), r.params.get("alpha", alpha)
        return abs(log(lam) - log(lr)) + abs(log(alpha) - log(ar))

    return min(results, key=distance)


def _from_init(
    problem: Problem, start: FixedPointResult, opts: SolverOptions, history: dict
) -> FixedPointResult | None:
    """``problem`` solved (options ``opts``) from the fixed point ``start`` of a neighbouring
    problem (a curve's ``init``), as a point of a curve is from the last one; its iterations
    capped at :data:`~gaussmix.experiments.continuation.PREDICTOR_ITER_FACTOR` times
    ``start``'s own (at least :data:`~gaussmix.experiments.continuation.PREDICTOR_MIN_ITER`),
    so that a start that converges slowly is abandoned for the cold start (None; also where
    it fails, or where ``start``'s overlaps are not of ``problem``'s shape, which the solver
    would replace by its cold start: another number of clusters or labels)."""
    L = problem.P.shape[1]  # the full label space of Q, M, V, b
    if np.shape(start.Q) != (problem.n_clusters, L, L):
        return None
    res, log = _capped_solve(problem, start, int(start.n_iter), opts, history)
    if res is not None:  # the warnings of an abandoned start are dropped with it
        reissue(log, stacklevel=2)
    return res


def _pace(done: list) -> int:
    """The iterations that pace a solve from the predictor through ``done`` (non-empty
    ``(parameter, result)`` pairs of a curve): the median of its last
    :data:`~gaussmix.experiments.continuation.PREDICTOR_PACE_POINTS` points' (rounded
    down), so that one slow point does not double the next one's cap."""
    recent = [int(r.n_iter) for _, r in done[-PREDICTOR_PACE_POINTS:]]
    return int(np.median(recent))


def _capped_solve(
    problem: Problem,
    start: FixedPointResult | dict,
    pace: int,
    opts: SolverOptions,
    history: dict,
    predicted: bool = False,
) -> tuple[FixedPointResult | None, list]:
    """``problem`` solved (options ``opts``) from ``start`` with its iterations capped at
    :data:`~gaussmix.experiments.continuation.PREDICTOR_ITER_FACTOR` times ``pace`` (the
    iterations of its neighbours; at least
    :data:`~gaussmix.experiments.continuation.PREDICTOR_MIN_ITER`), so that a start that
    converges slowly is abandoned: the result (None where it fails, the history then
    cleared) and the warnings it gave, caught for the caller to reissue or drop."""
    cap = max(PREDICTOR_MIN_ITER, PREDICTOR_ITER_FACTOR * pace)
    capped = replace(opts, max_iter=min(opts.max_iter, cap), throw=True)
    with caught() as log:
        try:
            res = solve_problem(
                problem, options=capped, init=start, history=history, predicted=predicted
            )
        except ConvergenceError:
            history.clear()
            res = None
    return res, log


def _refines(opts: SolverOptions) -> bool:
    """Whether solves with the options ``opts`` estimate the integration error by refining
    the channel rule (the condition for starting a curve below a single point's rule)."""
    if not opts.estimate_error:
        return False
    return not opts.auto_refine or opts.max_refine > 0


@with_options_doc
def learning_curve(
    mixture: Mixture,
    loss: str | Loss,
    alphas: Sequence[float] | np.ndarray,
    *,
    lam: float,
    penalty: str = "l2",
    l1_ratio: float | None = None,
    progress: bool = False,
    return_results: bool | None = None,
    callback: Callable[[dict, FixedPointResult | None], None] | None = None,
    init: CurveTable | FixedPointResult | Sequence[FixedPointResult | None] | None = None,
    options: SolverOptions | None = None,
    **option_keywords: Any,
) -> CurveTable:
    """Theory learning curve: Theorem 2 errors at each ``alpha``, warm-started (curves
    of 10 points or more of one output or K = 3 classes with ridge: all points at once,
    :mod:`gaussmix.theory.solve.batch`).

    Parameters
    ----------
    mixture, loss, lam, penalty, l1_ratio
        As in :func:`gaussmix.solve`.
    alphas : sequence of float
        Sample complexities (each > 0).
    progress : bool
        Show a progress bar.
    return_results : bool
        Deprecated: the table's ``.points`` holds the :class:`FixedPointResult` of every
        row (``True`` still returns ``(table, list)``, with a ``FutureWarning``, for one
        release).
    callback : callable, optional
        ``callback(row, result)`` with each row of the table (a dict) and its
        :class:`FixedPointResult` (None where there is no fixed point, as in ``.points``)
        as soon as its point is solved, in the order solved (a hook for live displays).
        An exception it raises stops the curve and propagates: a cooperative cancel
        between two points.
    init : CurveTable, FixedPointResult or sequence of FixedPointResult, optional
        A warm start of the curve: a previous curve (its ``.points``), a result, or
        results, of the same mixture shape (clusters and labels) at other parameters (e.g.
        the curve before a control moved).  Its fixed point nearest to the curve's first
        point (in ``|log lam - log lam'| + |log alpha - log alpha'|``) starts that point in
        place of the cold start, and the curve goes on from there as usual; a start that
        takes more than twice its own iterations (at least 30) is abandoned for the cold
        start.  The answers are the same fixed points, each within the solver's ``tol``
        of the curve solved cold.  Curves solved at all their points at once (one output,
        or K = 3 classes with ridge) start cold, and use it only where they go point by
        point.
    options : SolverOptions, optional
        The solver's options as one validated object, as :func:`gaussmix.solve` takes them;
        any option may instead, or also, be given as a keyword (the names below), and
        keywords override the fields of ``options``: both spellings take the same path.
        Each point's failure is a NaN row with a ConvergenceWarning whatever ``throw``.
    %(solver_options)s
    Returns
    -------
    CurveTable
        A :class:`pandas.DataFrame` with columns ``alpha, lam, test_error, train_error,
        train_loss, free_energy, penalty_value, nonzero_fraction,
        nonzero_fraction_support, nonzero_fraction_off_support, l1_norm, converged,
        n_iter, residual, integration_error``, and the :class:`FixedPointResult` of each
        row in ``.points`` (:class:`~gaussmix.core.tables.CurveTable`).  Points without a
        valid fixed point are NaN with ``converged=False`` and None in ``.points`` (and a
        ConvergenceWarning).

    Examples
    --------
    >>> import gaussmix as gm
    >>> mix = gm.Mixture.isotropic(delta=0.5, means="antipodal", labels="binary")
    >>> df = gm.learning_curve(mix, "logistic", [0.5, 1.0, 2.0], lam=0.1)
    >>> print(df[["alpha", "test_error", "train_error"]].round(4).to_string(index=False))
     alpha  test_error  train_error
       0.5      0.1673       0.0002
       1.0      0.1361       0.0032
       2.0      0.1166       0.0146
    """
    a = check_param_values("alpha", alphas, name="alphas")
    lam = check_param("lam", lam)
    opts = solver_options(options, option_keywords, caller="learning_curve")
    start = _init_results(init)
    points = [(lam, float(x)) for x in a]
    res = _curve(
        mixture,
        loss,
        points,
        penalty=penalty,
        progress=progress,
        axis="alpha",
        opts=opts,
        l1_ratio=l1_ratio,
        on_result=_row_callback(callback, points),
        init=start,
    )
    rows = [_row(r, alpha=al, lam=float(lam)) for r, (_, al) in zip(res, points)]
    return deprecated_return_results(CurveTable.from_rows(rows, _converged(res)), return_results)


def _row_callback(
    callback: Callable[[dict, FixedPointResult | None], None] | None,
    points: list[tuple[float, float]],
) -> Callable[[int, FixedPointResult | None], None] | None:
    """The ``on_result`` hook of :func:`_curve` that gives ``callback`` the table's row of
    each point (:func:`_row`, as the table has it) and its result (None without a fixed
    point, as :func:`_converged`) as soon as it is solved."""
    if callback is None:
        return None

    def on_result(i: int, res: FixedPointResult | None) -> None:
        lam, alpha = points[i]
        valid = res if res is not None and res.success else None
        callback(_row(res, alpha=float(alpha), lam=float(lam)), valid)

    return on_result


def _converged(results: list[FixedPointResult | None]) -> list[FixedPointResult | None]:
    """The per-point results of a curve: None where no fixed point (a row that did not
    converge keeps its last attempt's ``n_iter`` and ``residual`` in the table only)."""
    return [r if r is not None and r.success else None for r in results]


@with_options_doc
def lambda_sweep(
    mixture: Mixture,
    loss: str | Loss,
    lams: Sequence[float] | np.ndarray,
    *,
    alpha: float,
    penalty: str = "l2",
    l1_ratio: float | None = None,
    progress: bool = False,
    return_results: bool | None = None,
    callback: Callable[[dict, FixedPointResult | None], None] | None = None,
    init: CurveTable | FixedPointResult | Sequence[FixedPointResult | None] | None = None,
    options: SolverOptions | None = None,
    **option_keywords: Any,
) -> CurveTable:
    """Theorem 2 errors at fixed ``alpha`` over penalty strengths ``lams``.

    Solved from the largest to the smallest lambda with warm starts (annealing), each
    point starting from the finest quadrature rule that the larger penalties needed (the
    channel integrand sharpens as lambda decreases, towards the separable regime); a
    sweep of 10 points or more of one output or K = 3 classes with ridge at all points at
    once, each on the rule of its own regime (:mod:`gaussmix.theory.solve.batch`; K = 3
    cross-entropy point by point where a point is in the sharp regime), its slow points
    (small lambda) restarted once, inside that one solve, from predictions through their
    fast neighbours, and each point's error estimate one iteration on the refined rule
    towards its tighter tolerance (its answer within ``refined_tol / (1 - r)`` of the
    refined fixed point); the table is in the order of ``lams``.

    Parameters
    ----------
    mixture, loss, alpha, penalty, l1_ratio
        As in :func:`gaussmix.solve`.
    lams : sequence of float
        Penalty strengths (each >= 0).
    progress : bool
        Show a progress bar.
    return_results : bool
        Deprecated: the table holds the per-point results in ``.points``.
    callback : callable, optional
        As in :func:`learning_curve`: each row as soon as its point is solved (from the
        largest lambda down).
    init : CurveTable, FixedPointResult or sequence of FixedPointResult, optional
        As in :func:`learning_curve`: its fixed point nearest to the largest lambda (the
        sweep's first point) starts it.
    options : SolverOptions, optional
        The solver's options as one validated object, as :func:`gaussmix.solve` takes them;
        any option may instead, or also, be given as a keyword (the names below), and
        keywords override the fields of ``options``: both spellings take the same path.
        Each point's failure is a NaN row with a ConvergenceWarning whatever ``throw``.
    %(solver_options)s
    Returns
    -------
    CurveTable
        The columns of :func:`learning_curve`, one row per penalty, in the order of
        ``lams``, and the :class:`FixedPointResult` of each row in ``.points``.

    Examples
    --------
    >>> import gaussmix as gm
    >>> mix = gm.Mixture.isotropic(delta=0.5, means="antipodal", labels="binary")
    >>> df = gm.lambda_sweep(mix, "square", [0.01, 0.1, 1.0], alpha=2.0)
    >>> print(df[["lam", "test_error"]].round(4).to_string(index=False))
     lam  test_error
    0.01      0.1811
    0.10      0.1563
    1.00      0.1146
    """
    lv = check_param_values("lam", lams, name="lams")
    alpha = check_param("alpha", alpha)
    opts = solver_options(options, option_keywords, caller="lambda_sweep")
    start = _init_results(init)
    order = np.argsort(-lv, kind="stable")
    points = [(float(lv[i]), float(alpha)) for i in order]
    res_sorted = _curve(
        mixture,
        loss,
        points,
        penalty=penalty,
        progress=progress,
        axis="lam",
        opts=opts,
        l1_ratio=l1_ratio,
        carry_rule=True,
        on_result=_row_callback(callback, points),
        init=start,
    )
    res: list = [None] * lv.size
    for i, r in zip(order, res_sorted):
        res[i] = r
    rows = [_row(r, alpha=float(alpha), lam=float(lam)) for r, lam in zip(res, lv)]
    return deprecated_return_results(CurveTable.from_rows(rows, _converged(res)), return_results)
