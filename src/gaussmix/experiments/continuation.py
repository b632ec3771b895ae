"""Predictor-corrector continuation along a curve of fixed points, and the quadrature rule
carried from point to point (the engine of :func:`gaussmix.learning_curve` and
:func:`gaussmix.lambda_sweep`).

Neighbouring points of a curve differ little.  Along a curve:

* each point starts from a *prediction* of its state, the Lagrange polynomial in the
  curve's parameter (``log alpha`` or ``log lambda``) through the last
  :data:`PREDICTOR_POINTS` points (:func:`predict`), safeguarded: a solve from the predictor
  is kept only where its correction is smaller than the step the predictor took from the
  last point (:func:`prediction_accepted`), otherwise the point is solved again from the
  last point, the plain warm start of continuation;
* the channel's quadrature rule starts one step down the refinement chain of a single
  point's (:func:`curve_start_rule`) and then from the rule the previous point's refinement
  judged accurate (:func:`next_start_rule`): every point still refines its rule until its
  own estimate meets ``quad_tol``, so each point's integration error is estimated at that
  point, as a single point's is, and the curve pays for the rule its accuracy needs, not
  for one rule more.

A curve of :data:`STACKED_MIN_POINTS` points or more whose problem stacks
(:func:`stackable`) is instead solved at all its points at once (:func:`solve_points`) by
the steps of the solve policy on a point axis
(:func:`~gaussmix.theory.solve.solver.solve_batch`: the loop of a single solve over the
steps of :func:`~gaussmix.theory.solve.policy.policy_for_points`, which decides the curve's
rule, its sharp regime and its estimates); what is decided here is when to stack, the
first stacked solve's restart of its slow points from predictions through its fast ones
(:func:`_first_solve`, :func:`_seeded_iterate`: the predictor and safeguard above applied
inside the one stacked solve) and the fall back to the points one by one.  The
point-by-point path uses only public solver entry points
(:func:`~gaussmix.theory.solve.solver.solve_problem` with its options), so a single
point's iterates are untouched.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from typing import NamedTuple

import numpy as np

from gaussmix.core.caught import reissue
from gaussmix.theory.numerics.quadrature import QuadratureRule, auto_rule
from gaussmix.theory.prior.prior import prior_quadrature_dim, takes_stacked_points
from gaussmix.theory.problem.problem import Problem
from gaussmix.theory.solve.batch import FreezeRecord, point_mask
from gaussmix.theory.solve.batch_solve import iterated_solve
from gaussmix.theory.solve.fixed_point import (
    FixedPointMap,
    MapMemory,
    needs_quadrature,
)
from gaussmix.theory.solve.iteration import AndersonState, IterationOutcome, IterationState
from gaussmix.theory.solve.options import SolverOptions
from gaussmix.theory.solve.policy import SharpPoint, chain_predecessor, channel_rule
from gaussmix.theory.solve.solver import FixedPointResult, solve_batch
from gaussmix.theory.solve.state import LogChart, chart_resolved, pack_state, unpack_state

__all__ = [
    "PREDICTOR_POINTS",
    "PREDICTOR_ITER_FACTOR",
    "PREDICTOR_MIN_ITER",
    "PREDICTOR_PACE_POINTS",
    "STATE_KEYS",
    "predict",
    "state_distance",
    "PREDICTOR_UNRESOLVED",
    "PREDICTOR_STEP_GROWTH",
    "prediction_resolved",
    "prediction_accepted",
    "chain_predecessor",
    "curve_start_rule",
    "next_start_rule",
    "STACKED_MIN_POINTS",
    "stackable",
    "stacked_curve_options",
    "solve_points",
]

#: Points of the curve through which :func:`predict` extrapolates the next state (4: a cubic
#: in the curve's parameter; fewer at the start of a curve).
PREDICTOR_POINTS = 4

#: A solve from the predictor may take at most this many times the iterations of the
#: curve's recent points (the median of the last :data:`PREDICTOR_PACE_POINTS`; at least
#: :data:`PREDICTOR_MIN_ITER`); beyond, the point is solved from the last point instead.
#: Across a sharp change of the curve (K = 3 cross-entropy at ``lam = 1e-4`` past the
#: separability threshold) an extrapolated start without the coarse-rule continuation
#: took 705 iterations where the warm start took 29.
PREDICTOR_ITER_FACTOR = 2

#: The least iteration budget of a solve from the predictor.
PREDICTOR_MIN_ITER = 30

#: Points of the curve whose median iterations pace a solve from the predictor
#: (:data:`PREDICTOR_ITER_FACTOR`): the last point alone let one slow point (a transition
#: solved from its warm start) double the next one's cap.  On the explorer's K = 3
#: cross-entropy lasso at lam = 6.6e-4 (``benchmarks/bench_explore.py``) the point after
#: one of 84 iterations spent a cap of 168 on the 8536-node rule (3.2 s) before its warm
#: start, where the median of its last three points (13) caps it at 30.
PREDICTOR_PACE_POINTS = 3

#: A predictor whose change from the polynomial through one point fewer exceeds this
#: fraction of its step from the last point is not used (:func:`prediction_resolved`).
PREDICTOR_UNRESOLVED = 0.5

#: ... nor one whose step exceeds this many times the curve's last step.
PREDICTOR_STEP_GROWTH = 2.0

#: The order parameters (full label space) a predictor extrapolates.
STATE_KEYS = ("Q", "M", "V", "b")


def predict(
    done: list[tuple[float, FixedPointResult]], param: float, points: int = PREDICTOR_POINTS
) -> dict | None:
    """The state at ``param`` extrapolated through the last :data:`PREDICTOR_POINTS` points
    of ``done`` with distinct parameters: the Lagrange polynomial through them of ``Q, M,
    V, b`` (full space), a secant with two points.

    Parameters
    ----------
    done : list of (float, FixedPointResult)
        The solved points of the curve, in order, with their parameters.
    param : float
        The parameter of the next point.
    points : int
        At most this many points (:data:`PREDICTOR_POINTS`).

    Returns
    -------
    dict or None
        ``Q, M, V, b`` (an ``init`` of :func:`~gaussmix.theory.solve.solver.solve_problem`); None
        with fewer than two points.
    """
    pts: list[tuple[float, FixedPointResult]] = []
    for p, r in reversed(done):
        if all(p != q for q, _ in pts):
            pts.append((p, r))
        if len(pts) == points:
            break
    if len(pts) < 2:
        return None
    weights = [math.prod((param - q) / (p - q) for q, _ in pts if q != p) for p, _ in pts]
    return {k: sum(w * getattr(r, k) for w, (_, r) in zip(weights, pts)) for k in STATE_KEYS}


def state_distance(a: FixedPointResult | dict, b: FixedPointResult | dict) -> float:
    """``max |a_i - b_i| / max(1, |b_i|)`` over the order parameters ``Q, M, V, b`` (full
    space) of two states of one problem (the solver's measure of a step)."""
    return float(state_distances([a], [b])[0])


def state_distances(a: list, b: list) -> np.ndarray:
    """:func:`state_distance` of each pair ``(a[i], b[i])`` (states of problems of one shape,
    e.g. the points of a curve) at once: each state's order parameters in one row, each
    parameter's maximum by :func:`numpy.maximum.reduceat` (NaN if any entry is), the largest
    of them that is not NaN (as a running ``max`` from 0 keeps), infinite where not finite.
    The maxima are exact: each pair's the same number as on its own."""
    A, starts = _state_rows(a)
    B, _ = _state_rows(b)
    return _row_distances(A, B, starts)


def _state_rows(states: list) -> tuple[np.ndarray, np.ndarray]:
    """The order parameters ``Q, M, V, b`` of each state in one row, and where each
    parameter starts."""
    rows = [
        [
            np.ravel(np.asarray(s.get(k) if isinstance(s, dict) else getattr(s, k), dtype=float))
            for k in STATE_KEYS
        ]
        for s in states
    ]
    starts = np.cumsum([0] + [p.size for p in rows[0][:-1]])
    return np.array([np.concatenate(r) for r in rows]), starts


def _row_distances(A: np.ndarray, B: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """:func:`state_distances` of the rows of :func:`_state_rows`."""
    d = np.abs(A - B) / np.maximum(1.0, np.abs(B))
    out = np.fmax.reduce(np.maximum.reduceat(d, starts, axis=1), axis=1, initial=0.0)
    return np.where(np.isfinite(out), out, np.inf)


def prediction_resolved(
    done: list[tuple[float, FixedPointResult]], param: float, prediction: dict
) -> bool:
    """Whether the predictor ``prediction`` of the state at ``param`` (:func:`predict`)
    resolves the curve.  It does not where the polynomial through one point fewer differs
    from it by more than :data:`PREDICTOR_UNRESOLVED` times the step it takes from the last
    point (its extrapolation error is of the step's order), or where that step is more than
    :data:`PREDICTOR_STEP_GROWTH` times the curve's last step (:func:`state_distance`); the
    point is then solved from the last point, the plain warm start, without a solve from
    the predictor (with one point or two there is nothing to compare: resolved).

    Measured along the K = 5 cross-entropy curve at ``lam = 1e-4`` (``alpha`` in [0.5, 8],
    40 points): up to ``alpha = 4.9`` and from 6.5 the difference is 0.01 to 0.43 of the
    step and the step 0.84 to 1.44 times the last (the predictor 0.007 to 0.33 times as far
    from the fixed point as the last point); across the separability threshold, from 5.3
    to 6.3, the difference reaches 0.54 to 1.8 steps or the step 2.4 to 20 times the last,
    where the predictor was 0.6 to 31 times as far from the fixed point as the last point
    and its solves took 7 to 56 evaluations (of the 8-node rule, 0.07 s each) before their
    rejection or acceptance; the warm start takes 10 to 33 at the continuation's 6 nodes
    (0.03 s) and 3 at 8.
    """
    lower = predict(done, param, PREDICTOR_POINTS - 1)
    if lower is None or len(done) < 2:
        return True
    step = state_distance(prediction, done[-1][1])
    last_step = state_distance(done[-1][1], done[-2][1])
    return (
        state_distance(prediction, lower) <= PREDICTOR_UNRESOLVED * step
        and step <= PREDICTOR_STEP_GROWTH * last_step
    )


def prediction_accepted(
    result: FixedPointResult, prediction: dict, previous: FixedPointResult
) -> bool:
    """The safeguard of the predictor: whether the fixed point ``result`` reached from
    ``prediction`` continues the curve from ``previous`` (the last point).

    Accepted where the correction ``|result - prediction|`` is at most the step
    ``|prediction - previous|`` that the predictor took (:func:`state_distance`): a
    corrector that had to move further than the predictor stepped left the predictor's
    neighbourhood, and may have reached another fixed point than continuation from the last
    point would; that point is then solved again from ``previous``.
    """
    return bool(predictions_accepted([result], [prediction], [previous])[0])


def predictions_accepted(results: list, predictions: list, previous: list) -> np.ndarray:
    """:func:`prediction_accepted` of each of several points (of one shape) at once (the
    distances of the successful ones)."""
    out = np.array([bool(r.success) for r in results], dtype=bool)
    idx = np.flatnonzero(out)
    if idx.size:
        (R, starts), (Q, _), (P, _) = (
            _state_rows([xs[i] for i in idx]) for xs in (results, predictions, previous)
        )
        out[idx] = _row_distances(R, Q, starts) <= _row_distances(Q, P, starts)
    return out


def curve_start_rule(result: FixedPointResult, problem: Problem) -> QuadratureRule | None:
    """The rule the next point of a curve starts its refinement from, after a point solved
    with the solver's automatic choice of rule: where that point ended on the chain of the
    regime-free automatic rule (:func:`~gaussmix.theory.numerics.quadrature.auto_rule` without
    ``smooth``: graded panels in one and two dimensions, accurate in every regime), one step
    down the refinement chain (:func:`chain_predecessor`) from the rule its refinement
    judged accurate (:func:`next_start_rule`).

    A single point refines its automatic rule once to estimate the error, and returns the
    finer answer; a curve whose points find the coarser rule accurate (their estimates
    within ``quad_tol``) solves every point on it and refines once to the single point's
    automatic rule (measured at K = 3 cross-entropy: ``|GP(16) - GP(8)|`` from 5e-12 to
    4e-8 over ``lam`` in [1e-3, 10], ``alpha`` in [0.2, 4], where the single point's
    ``|GP(32) - GP(16)|`` is 1e-13 to 4e-10 and the two answers differ by at most 4e-10:
    the estimate is of the coarser rule, the answer the finer's; a point then costs about a
    quarter of the evaluations' work).  A point that does not find it accurate refines
    further, and the rule is carried up from there (:func:`next_start_rule`).  In one
    dimension a point in the sharp regime (small ``lam``, where the solver moves from
    Gauss-Hermite to graded panels) hands its panels on, so that the next point does not
    iterate on Gauss-Hermite first.

    Parameters
    ----------
    result : FixedPointResult
        The first point, solved with the solver's automatic rule.
    problem : Problem
        Its problem.

    Returns
    -------
    QuadratureRule or None
        None where the solver's choice is kept: a closed-form channel, a point that ended
        on another chain (one output in the smooth regime: Gauss-Hermite, where the solver
        decides the regime at each point), a randomised regime-free rule (three outputs
        and more).
    """
    if problem.loss.exact_channel:
        return None
    rule = auto_rule(problem.dim)
    if rule.randomised:
        return None
    accurate = next_start_rule(result, rule)
    if accurate is None:
        return None
    return chain_predecessor(accurate) or accurate


def next_start_rule(result: FixedPointResult, start: QuadratureRule) -> QuadratureRule | None:
    """The rule the next point of a curve starts from: the last rule that ``result``'s
    refinement (from ``start``) judged accurate, i.e. the one before the finest rule reached
    (whose only role was to estimate the error), so that the rule grows only where a point
    needed more than one refinement; ``start`` where the final rule is of ``start``'s family
    but off its chain.  None where nothing is carried: a closed-form channel, a final rule of
    another family (the solver changed regime), a randomised rule.

    Parameters
    ----------
    result : FixedPointResult
        A point solved with its refinement starting from ``start``.
    start : QuadratureRule

    Returns
    -------
    QuadratureRule or None
    """
    final = result.state.rule if result.state is not None else None
    if (
        result.params.get("quadrature") == "closed-form"
        or final is None
        or type(final) is not type(start)
        or final.randomised
    ):
        return None
    prev, rule = start, start
    while rule is not None and rule != final:
        prev, rule = rule, rule.refined()
    return prev if rule == final else start


#: Curves of fewer points are solved point by point.  Stacking pays from about 5 points
#: (measured, binary logistic over alpha in [0.2, 4]: 3 points 8.8 ms stacked against 7.4
#: point by point, 5 points 5.9 against 11.0, 8 points 7.4 against 16.0, 20 points 14
#: against 47); short curves keep the point-by-point continuation, the path of every curve
#: of four classes or more, whose predictor and safeguard are tested on short curves.
STACKED_MIN_POINTS = 10


def stackable(problem: Problem, opts: SolverOptions) -> bool:
    """Whether the points of a curve of ``problem`` (at other ``lam`` and ``alpha``) can be
    solved as one stacked state with the options ``opts``: a prior in closed form that
    takes the points on a leading axis (ridge on a spectral mixture, and for one effective
    output the lasso and elastic net), the solver's automatic deterministic rule, and either
    a channel in closed form (the square loss, any K: its errors are Gaussian orthants,
    all points' at once) or correct sets of at most two constraints (one output; two
    outputs, K = 3 cross-entropy, on graded panels)."""
    if not takes_stacked_points(problem.penalty_spec, problem.mixture, problem.P):
        return False
    if prior_quadrature_dim(problem) or opts.quadrature is not None:
        return False  # (a caller's rule: the points are its single points)
    if not needs_quadrature(problem):
        return True
    if max(D.shape[0] for D, _ in problem.constraints) > 2:
        return False
    if problem.dim > 2:
        return False
    rule = channel_rule(problem, None, opts.symmetry)
    return not rule.randomised and not rule.computes_moments


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


def _first_solve(
    T: FixedPointMap,
    x0: np.ndarray,
    opts: SolverOptions,
    on_converged: Callable[[int], None] | None = None,
) -> tuple[FixedPointMap, IterationOutcome | None]:
    """The first stacked solve of a curve, from the cold start ``x0`` (:func:`converged_solve`),
    and the map that made it: for a sweep over lambda (:func:`_seed_params`) with its slow
    points restarted from their fast neighbours (:func:`_seeded_iterate`), and where that
    fails (a restarted point rejected by the safeguard or late, no convergence) again
    without, on a fresh map with ``T``'s freezing (and its watch): the plain solve, as for
    every other curve.  Either solve that stalls (:data:`STALL_EVALS`, :class:`_StallWatch`)
    ends it (None, not made again): the curve goes point by point.
    ``on_converged``: :func:`solve_points`'s, with the number of points frozen in the map
    iterated, never fewer than it reported before (a progress bar's count does not go back
    where the first solve is made again)."""

    most = [0]  # the most points reported (the count never goes back)

    def reporter(record: FreezeRecord) -> Callable[..., None] | None:
        if on_converged is None:
            return None

        def report(*_) -> None:
            most[0] = max(most[0], int(record.frozen.sum()))
            on_converged(most[0])

        return report

    params = _seed_params(T)
    if params is not None:
        memory = T.memory()
        try:
            out = _seeded_iterate(T, x0, params, reporter(memory.record), opts, memory)
        except (SharpPoint, _Stalled):
            return T, None
        if out is not None and out.converged and T.is_valid(out.x):
            return T, out
        T = FixedPointMap(T.problems, T.rule, T.symmetry, T.log_chart, T.freezing)
    memory = T.memory()
    try:
        out = iterated_solve(
            T,
            x0,
            None,
            opts,
            reporter(memory.record),
            _StallWatch(T, memory.record),
            memory,
            anderson=opts.anderson,  # (the policy's for a first solve: batch_solve checks it)
        )
    except (SharpPoint, _Stalled):
        return T, None
    return T, out if out.converged and T.is_valid(out.x) else None


#: A curve's first stacked solve (:func:`_first_solve`) is given up for the point-by-point
#: solve where, after this many evaluations, the median of its points' own residuals (a
#: frozen point's 0) has not once been below the median at its first evaluation
#: (:class:`_StallWatch`): half its points are no nearer their fixed points than at the
#: cold start, so that the stacked solve would take at least as many evaluations as its
#: median point's cold solve (its restart of the slow points, :func:`_seeded_iterate`,
#: waits for half of them), where the point-by-point curve pays its first point's cold
#: solve and a few evaluations a point after it.  Measured over the stacked solves of
#: ``benchmarks/bench_curves.py --grids 40`` (its six cases, the paper's sparse lasso, 38
#: random grids) and of the explorer states of ``benchmarks/_explore_space.py`` (60 of
#: seed 0 and 60 of seed 1, screen and library precision), 120 of them reaching 10
#: evaluations: in every solve that converged the least median of evaluations 2-10 was at
#: most 0.57 of the first (a binary hinge lasso with priors 0.05 and 0.95, whose median
#: rose 60-fold over its first evaluations and converged after 80; the paper's sparse
#: lasso, whose largest residual rises 10-fold over its first 18 evaluations, 0.02), in
#: the binary square lasso of the explorer at ``lam = 8e-4`` (40 alphas in [0.062, 0.42],
#: unequal priors) 1.67: it never converged (1982 evaluations, seeded, then as many plain:
#: 2.6 s of CPU, where its points one by one take 194 evaluations, 0.09 s).  The window is
#: 25, not 10: the K = 3 square loss's 40-point curve of ``benchmarks/bench_square_k.py``
#: (gaussian means, unequal priors) has its median 3 to 9.5 times the first's over
#: evaluations 2-11, then 0.18 at the 12th, and converges stacked in 48 (given up at 10,
#: point by point: 436).  The test at the median point does not see a stacked solve whose
#: few slowest points do not converge.
STALL_EVALS = 25


class _Stalled(Exception):
    """A curve's first stacked solve stalls (:data:`STALL_EVALS`): the curve goes point by
    point."""


class _StallWatch:
    """The test of :data:`STALL_EVALS` after each evaluation of a stacked iteration (its
    ``on_step``; ``record``: the iteration's :class:`FreezeRecord`), raising
    :class:`_Stalled`; it never changes the iterates.  ``then``: the iteration's own
    ``on_step`` (:class:`_Seeding`), called after the test.  The test is decided once a
    later median is below the first (the solve is not given up) or at the
    :data:`STALL_EVALS`-th evaluation: no median is taken after it (a converging curve's
    solve takes one or two, not one an evaluation)."""

    def __init__(
        self,
        T: FixedPointMap,
        record: FreezeRecord,
        then: Callable[[IterationState], IterationState | None] | None = None,
    ) -> None:
        self.T, self.record, self.then = T, record, then
        self.medians: list[float] = []  # the median own residual after each evaluation
        self.decided = False  # whether the test is decided (no median taken after)

    def __call__(self, s: IterationState) -> IterationState | None:
        rec = self.record
        if not self.decided and s.evaluated and rec.trail:
            own = np.where(rec.frozen, 0.0, self.T.last_own_residuals(rec))
            medians = self.medians
            medians.append(float(np.median(own)))
            if len(medians) > 1 and medians[-1] < medians[0]:
                self.decided = True  # (the least later median is below the first)
            elif len(medians) == STALL_EVALS:
                raise _Stalled
        return self.then(s) if self.then is not None else None


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
#: 37 and 23, and one lasso sweep whose solve ran to 1190 evaluations, then with a budget
#: of evaluations on the restarted points, since dropped).
SEED_FRACTION = 0.5

#: A point restarted before is restarted again (:func:`_reseed`, a later round of the same
#: solve) where the seed nearest to it is now at most this fraction of the distance (in
#: ``log lambda`` or ``log alpha``) of the nearest seed of its last prediction: seeds that
#: converged since, between it and the first seeds.  Measured on the hinge + lasso sweep at
#: alpha = 2.25, 20 lambdas in [0.0243, 1.05] (``bench_curves.py --grids``, random 29): its
#: eight smallest lambdas, restarted after 11 evaluations from seeds at lam >= 0.12 (a
#: quadratic extrapolated over 0.7 decades: Q = 8.4 to 8.9 predicted against 9.6 to 15.8),
#: froze 17 to 105 evaluations later; the four at lam >= 0.054 at 28 to 34, from which the
#: four below are predicted again.
SEED_NEARER = 0.5

#: The most evaluations of a seeded stacked solve (:func:`_seeded_iterate`, with its
#: restarts) before it is given up for the plain solve (:func:`_first_solve`), where the
#: solver's ``max_iter`` (3000) let it run to that end.  Measured on the seeded solves of
#: ``benchmarks/bench_curves.py --grids 40`` and of the K <= 3 explorer states of
#: ``benchmarks/_explore_space.py`` (60 of seed 0 and 60 of seed 1, library precision):
#: every one that converged took at most 57 evaluations but one, a binary logistic lasso
#: at lam = 6.3e-4 (524, where the plain solve's curve took 2.4 s of CPU against 3.7 s
#: seeded); two ran to 3000 without converging, then the plain solve: a binary hinge
#: lasso at lam = 0.0144 (3.7 s, 2.5 s plain) and the K = 3 square ridge at lam = 1.46e-4
#: of ``benchmarks/bench_square_k.py --means sampled --seed 1`` (its problem 1: 3.0 s,
#: the plain solve 158 evaluations).  120 is twice the largest converged solve but the one
#: that lost to the plain solve (a seeded evaluation of 40 points costs 4-5 ms there).
SEED_MAX_EVALS = 120

# A restarted point has no budget of evaluations, on a sweep over lambda as on a curve
# over alpha: the safeguard judges it where it freezes
# (:func:`~gaussmix.experiments.continuation.prediction_accepted`), and a seeded iteration
# that does not converge, or converges with a restarted point rejected, is made again
# without the restart (:func:`_first_solve`).  The point at a curve's end, extrapolated
# from its seeds, may take longer from its prediction than the evaluations before the
# restart and still far less than the plain solve, which waits for its slowest cold point
# and whose iterates the stack's point-by-point judgement of the cone couples
# (:func:`~gaussmix.theory.solve.iteration._next_iterate`).  Measured
# (``benchmarks/bench_curves.py --grids 40``): the hinge + elastic-net sweep at alpha =
# 6.89, 20 lambdas in [1.49e-3, 0.108], restarted after 8 evaluations, its point at the
# smallest lambda froze 46 after (85 alone from the cold start, 119 by gm.solve): 54
# evaluations, where the budget of twice the evaluations before the restart (at least
# 30) and of three times them for the whole solve abandoned it after 38 for the plain
# solve's 87 (its point at lam = 2.33e-3 there 87, 31 cold); the hinge + lasso sweep at
# alpha = 2.25, 20 lambdas in [0.0243, 1.05], 767 -> 116 (the plain solve's point at
# lam = 0.0798 726, 26 cold); every other grid of the 40, the curves of
# ``bench_curves.py`` and the 40-point lasso sweep from lam = 1e-4 the same (the budget
# never cut them).  The square loss at ``lam = 1.16e-3`` on a block mixture, 20 alphas in
# [0.77, 14.9]: restarted after 17 evaluations, its point at alpha = 0.77 froze 56 after,
# where its cold point takes 124.  A curve over alpha restarts once half its points have
# converged (not once half are below :data:`SEED_TOL`): only the points slower than its
# median point are restarted, and a curve whose points converge alike keeps its single
# points' iterates (the four curves over alpha of ``bench_curves.py``: not restarted, the
# same evaluations).


def _seed_params(T: FixedPointMap) -> np.ndarray | None:
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


def _seeded_iterate(
    T: FixedPointMap,
    x0: np.ndarray,
    params: np.ndarray,
    report: Callable[..., None] | None,
    opts: SolverOptions,
    memory: MapMemory,
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
    (:meth:`~gaussmix.theory.solve.batch.FixedPointMap.last_own_residuals`; the seeds, their images
    standing for their fixed points),
    every point not frozen whose residual is at least :data:`SEED_RESTART` is restarted
    (once more, in one later round, where it still is once half the points restarted have
    frozen and a seed has converged within :data:`SEED_NEARER` of its last nearest seed's
    distance) from the Lagrange polynomial in ``log lambda`` through the :data:`SEED_POINTS` seeds
    nearest to it (:func:`~gaussmix.experiments.continuation.predict`, in the logarithmic
    chart's coordinates, :class:`~gaussmix.theory.solve.state.LogChart`, where ``V ~ 1 / lam`` is
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
    seed's state, and it must converge (within :data:`SEED_MAX_EVALS` evaluations of the
    whole seeded solve, no budget of a restarted point's own: see the note after
    :data:`SEED_FRACTION`); otherwise None, and the curve's first solve is made again
    without the restart (:func:`_first_solve`).  Without enough seeds, or
    nothing to restart, the iteration is the plain one.  A curve over alpha restarts once
    :data:`SEED_FRACTION` of its points have converged (frozen).
    Deterministic: the trigger, the seeds and the predictions depend on the iterates
    only.  ``memory``: the map's memory the iteration starts from, whose record the
    restart reads."""
    seeding = _Seeding(T, params, memory.record)
    watch = _StallWatch(T, memory.record, seeding)  # (its _Stalled goes to _first_solve)
    capped = replace(opts, max_iter=min(opts.max_iter, SEED_MAX_EVALS))
    try:
        out = iterated_solve(
            T, x0, None, capped, report, on_step=watch, memory=memory, anderson=opts.anderson
        )
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

    def __init__(self, T: FixedPointMap, params: np.ndarray, record: FreezeRecord) -> None:
        self.T, self.params = T, params
        self.record = record  # (the iteration's: its freezes and trail)
        #: a sweep over lambda (restarted once half its points are below SEED_TOL), or a
        #: curve over alpha (once half have converged)
        self.sweep = len({p.alpha for p in T.problems}) == 1
        self.need = max(SEED_POINTS, math.ceil(SEED_FRACTION * T.n_points))
        self.done = False  # restarted once (or found nothing to restart)
        #: each restarted point's distance to the nearest seed of its last prediction
        #: (a later round restarts it only from nearer seeds, SEED_NEARER)
        self.reach: dict[int, float] = {}
        self.rounds = 0  # restarts made (at most two: the first, and one later round)
        self.first_points = np.zeros(0, int)  # the points of the first restart
        self.waiting: dict[int, tuple[dict, dict]] = {}  # point -> (prediction, nearest seed)
        #: (the iterate, secant pairs and own residuals before the restart) until the first
        #: evaluation at the predictions
        self.trial: tuple | None = None

    def __call__(self, s: IterationState) -> IterationState | None:
        T = self.T
        if self.trial is not None:
            return self._tried(s)
        if self.done:  # the safeguard, at each restarted point's freeze
            if self.rejections():
                raise _SeedRejected
        rec = self.record
        if not rec.trail:
            return None
        own = T.last_own_residuals(rec)
        # (a curve over alpha: once half its points have converged, its own points'
        # count, so that only the points slower than its median point are restarted)
        below = own < SEED_TOL if self.sweep else rec.frozen
        if below.sum() < self.need or not ((own >= SEED_RESTART) & ~rec.frozen).any():
            return None
        first = not self.done
        if not first:  # the one later round: once half the points restarted have frozen
            if self.rounds > 1 or 2 * rec.frozen[self.first_points].sum() < self.first_points.size:
                return None
        self.done = True
        self.rounds += 1
        made = _reseed(T, rec, s.x, own, self.params, self.reach)
        if made is None:
            return None
        x, points, predictions, nearest = made
        if first:
            self.waiting, self.first_points = {}, np.array(points, int)
        self.waiting.update({j: (p, q) for j, p, q in zip(points, predictions, nearest)})
        self.trial = (s.x, s.anderson, own, points)
        return self._restarted(s, x, point_mask(T.n_points, points)[T.blocks])

    @staticmethod
    def _restarted(
        s: IterationState, x: np.ndarray, mask: np.ndarray, anderson: AndersonState | None = None
    ) -> IterationState:
        """The iteration going on from ``x``, the points of the components ``mask`` having
        jumped: their secant pairs zeroed (or ``anderson``), and no last evaluation, so that
        the next evaluation makes no pair (its difference from the last would span the
        jump: a secant across a long stretch of the map, which, kept, made the seeded
        sweeps measured when the seeding was written slower, one of them from 87 to 3086
        evaluations); the damping and the divergence test's best step are the iteration's."""
        if anderson is None:
            anderson = _without(s.anderson, mask)
        return s._replace(x=x, anderson=anderson, last=None)

    def _tried(self, s: IterationState) -> IterationState | None:
        """After the first evaluation at the predictions: the restarted points whose own
        residual there is not below their residual before the restart go back to their
        iterate and secant pairs of then (a prediction no better than where the point
        was), the others go on from their predictions."""
        x_old, anderson_old, own_old, points = self.trial
        self.trial = None
        own = self.T.last_own_residuals(self.record)
        back = [j for j in points if j in self.waiting and not own[j] < own_old[j]]
        if not back:
            return None
        for j in back:
            del self.waiting[j]
        mask = point_mask(self.T.n_points, back)[self.T.blocks]
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
        ``final`` (the end of the iteration), not frozen.  The
        frozen points accepted are no longer watched (the frozen points tested at once,
        :func:`~gaussmix.experiments.continuation.predictions_accepted`)."""
        T, rec = self.T, self.record
        frozen = [j for j in self.waiting if rec.frozen[j]]
        if final and len(frozen) < len(self.waiting):
            return True
        if not frozen:
            return False
        parts = T.unpack_points(rec.frozen_x)  # (each point's state at its freeze)
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
    T: FixedPointMap,
    rec: FreezeRecord,
    x_next: np.ndarray,
    own: np.ndarray,
    params: np.ndarray,
    reach: dict[int, float] | None = None,
) -> tuple[np.ndarray, list[int], list[dict], list[dict]] | None:
    """The next stacked iterate ``x_next`` with the slow points (not frozen, own residual ``own``
    at least :data:`SEED_RESTART`) replaced by their predictions from the seeds (below it, at
    their images of the last evaluation), see :func:`_seeded_iterate`; with the restarted
    points, their predictions and their nearest seeds' states (dicts of ``Q, M, V, b``).
    A seed is a point whose chart's coordinates its residual determines
    (:func:`~gaussmix.theory.solve.state.chart_resolved`: not an overlap converging to a
    singular one, such as the square loss's ``Q_c`` of rank ``L - 1``, whose smallest
    eigenvalue's logarithm a residual of ``SEED_TOL`` leaves open: through such seeds the
    K = 3 square-loss curve of ``bench_square_k.py --means gaussian`` predicted ``Q`` up
    to 1e125, and its seeded solve ended not positive definite after 76 evaluations).
    None where no point can be predicted (fewer than :data:`SEED_POINTS` seeds in the
    chart: a secant through the two left may span the curve).  The seeds enter the chart,
    and the predictions leave it, all at once (:func:`_charted`).

    ``reach`` (updated): each point's distance to the nearest seed of its last prediction;
    a point in it is restarted again only where its nearest seed now is within
    :data:`SEED_NEARER` of that distance (None: every slow point)."""
    slow = np.flatnonzero((own >= SEED_RESTART) & ~rec.frozen)
    below = np.flatnonzero(own < SEED_TOL)
    if reach is not None and reach:  # a later round: only points with nearer seeds
        if below.size == 0:
            return None
        gap = {int(j): float(np.min(np.abs(params[below] - params[j]))) for j in slow}
        slow = np.array(
            [j for j in slow if gap[int(j)] < SEED_NEARER * reach.get(int(j), np.inf)], int
        )
        if slow.size == 0:
            return None
    x_last, g_last = rec.trail[-1]
    # each point's state: a frozen point's own, else its image of the last evaluation
    at = np.where(rec.frozen[T.blocks], x_last, g_last)
    parts = T.unpack_points(at)
    # (a seed where its chart's coordinates are known to its residual, a frozen point's
    # at its freeze: not an overlap converging to a singular one, the logarithm of whose
    # smallest eigenvalue the residual leaves open)
    known = chart_resolved(parts[0], parts[2], np.where(rec.frozen, rec.residuals, own))
    below = np.flatnonzero((own < SEED_TOL) & known)
    charted = _charted(T, at, below, forward=True)
    seeds = [int(i) for i, y in zip(below, charted) if y is not None]
    if len(seeds) < SEED_POINTS:
        return None
    charted = {int(i): y for i, y in zip(below, charted) if y is not None}
    states = dict(zip(seeds, _point_dicts(parts, seeds)))
    preds = []
    for j in slow:
        # the nearest seeds, the nearest last (predict's order), ties by index
        near = sorted(seeds, key=lambda i: (-abs(params[i] - params[j]), -i))[-SEED_POINTS:]
        if reach is not None:
            reach[int(j)] = abs(float(params[near[-1]] - params[j]))
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
    points (:meth:`FixedPointMap.unpack`)."""
    return [dict(zip("QMVb", (a[i] for a in parts))) for i in points]


def _charted(T: FixedPointMap, z, points: np.ndarray, forward: bool) -> list:
    """The chart's coordinates of ``points`` (increasing) of the stacked state ``z``
    (``forward``: dicts of ``Q, M, V, b``, None for a point not in the chart,
    :meth:`~gaussmix.theory.solve.state.LogChart.forward`), or the state vector of each point of
    the chart's coordinates ``z`` (dicts of ``Q, M, V, b``, one a point,
    :meth:`~gaussmix.theory.solve.state.LogChart.inverse`): the points' overlaps in one stacked
    call of the chart (its matrix logarithms and exponentials are matrix by matrix: each
    point's the same numbers as on its own), a point at a time where a forward one fails
    (which points are in the chart: each point's own test)."""
    n, K0, L = len(points), T.K0, T.L
    if n == 0:
        return []
    chart = LogChart(n * K0, L)
    if forward:
        y = chart.forward(z[point_mask(T.n_points, list(points))[T.blocks]])
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
    regime, for the caller to solve point by point.  The solve is the policy's steps
    (:func:`~gaussmix.theory.solve.solver.solve_batch`,
    :func:`~gaussmix.theory.solve.policy.policy_for_points`), the first stacked solve this
    module's (:func:`_first_solve`).

    One output, as a single point (:func:`~gaussmix.theory.solve.solver.solve_problem`): every
    point starts from the solver's cold start (:meth:`FixedPointMap.start`) and the stacked
    state is iterated with the solver's automatic rule to ``opts.tol`` in every component
    of every point (a sweep over lambda restarting its slow points once from its fast
    ones, :func:`_first_solve`); the points in the sharp regime of the channel
    (:func:`~gaussmix.theory.solve.policy.sharp_rules`) are solved again, stacked, with its
    rule from there; then each group of points on one rule estimates its errors
    (:func:`~gaussmix.theory.solve.batch_solve.estimate_points`; a sweep over lambda with its
    refined re-solve merged into one iteration,
    :func:`~gaussmix.theory.solve.batch_solve.refined_solve`).  A point's ``n_iter``
    counts the evaluations of the stacked maps up to its own convergence (the single
    point's count where the iterates agree: on a curve over alpha; a point of a sweep over
    lambda restarted from a prediction counts the evaluations before its restart too).

    Two outputs by quadrature (K = 3 cross-entropy), as the points of a curve solved one
    by one (:mod:`gaussmix.experiments.continuation`): the rule is one step down the
    refinement chain of the automatic rule
    (:func:`~gaussmix.theory.solve.policy.chain_predecessor`), reached by continuation
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
    s = solve_batch(problems, opts, first_solve=_first_solve, on_converged=on_converged)
    if s.results is None:
        return None
    # (the warnings of the sharp switch and the estimates, given once every point stands)
    # at the user's line: solve_points <- _curve <- learning_curve / lambda_sweep <- user
    reissue(s.log, stacklevel=4)
    return s.results
