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

Only public solver entry points are used (:func:`~gaussmix.theory.solver.solve_problem` with
its options), so a single point's iterates are untouched.
"""

from __future__ import annotations

import math

import numpy as np

from gaussmix.theory.problem import Problem
from gaussmix.theory.quadrature import QuadratureRule, auto_rule
from gaussmix.theory.solver import FixedPointResult

__all__ = [
    "PREDICTOR_POINTS",
    "PREDICTOR_ITER_FACTOR",
    "PREDICTOR_MIN_ITER",
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
]

#: Points of the curve through which :func:`predict` extrapolates the next state (4: a cubic
#: in the curve's parameter; fewer at the start of a curve).
PREDICTOR_POINTS = 4

#: A solve from the predictor may take at most this many times the iterations of the last
#: point (and at least :data:`PREDICTOR_MIN_ITER`); beyond, the point is solved from the
#: last point instead.  Across a sharp change of the curve (K = 3 cross-entropy at
#: ``lam = 1e-4`` past the separability threshold) an extrapolated start without the
#: coarse-rule continuation took 705 iterations where the warm start took 29.
PREDICTOR_ITER_FACTOR = 2

#: The least iteration budget of a solve from the predictor.
PREDICTOR_MIN_ITER = 30

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
        ``Q, M, V, b`` (an ``init`` of :func:`~gaussmix.theory.solver.solve_problem`); None
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


def chain_predecessor(rule: QuadratureRule) -> QuadratureRule | None:
    """The rule whose refinement is ``rule`` (``prev.refined() == rule``), reached from
    ``rule.coarsened()`` up the refinement chain; None where there is none (a cheap rule, or
    a coarsening off the chain)."""
    prev, cur = None, rule.coarsened()
    while cur is not None and cur != rule and cur.weights.size < rule.weights.size:
        prev, cur = cur, cur.refined()
    return prev if cur == rule else None


def curve_start_rule(result: FixedPointResult, problem: Problem) -> QuadratureRule | None:
    """The rule the next point of a curve starts its refinement from, after a point solved
    with the solver's automatic choice of rule: where that point ended on the chain of the
    regime-free automatic rule (:func:`~gaussmix.theory.quadrature.auto_rule` without
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
