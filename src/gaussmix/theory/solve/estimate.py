"""The integration error estimate's driver, one for a single point and for the points of a
curve.

A solve estimates the integration error of Theorem 2's observables (eq. (9)) by re-solving
its fixed point with finer channel rules: :func:`refine_rule` is that loop, whichever map
re-solves (one point's or a curve's stacked points, in the one estimate
:func:`~gaussmix.theory.solve.batch_solve.estimate_points`): the next
finer rule (:func:`finer_rule`), the change of each observable plus the new evaluation's own
error, and refinement again for the points whose estimate exceeds ``quad_tol``.  Each
re-solve goes on to a tighter tolerance (:func:`tighter_run`) so that the change also holds
the error of stopping the iteration at ``tol``.  :class:`Observables` is what the estimate
compares.  Two linear responses of the fixed point, each checked by the iteration that
follows it: :func:`predicted_start` (to the residual a solve stopped at: where a single
point's re-solve with the finer rule starts) and :func:`replicate_state` (to the change of
the rule to one replicate of a randomised rule).  A randomised rule's estimate: the
standard error from its replicates' values (:func:`standard_errors`, of some of them at all
the replicates' coverage), whether half of them decide its refinement (:func:`half_decides`)
and which (:func:`finer_randomised`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gaussmix.core.interrupt import check_interrupt

from ..model.outputs import error_keys
from ..numerics.quadrature import MAX_QUADRATURE_NODES, QuadratureRule
from ..numerics.tolerances import (
    HALF_REPLICATES_CONFIDENCE,
    REFINED_EXTRA_ITER,
    REPLICATE_SHIFT_RTOL,
    RESOLVE_ANDERSON_FACTOR,
    SECANT_GAIN_RCOND,
    TRAIN_ERROR_TARGET,
    refined_tol,
)
from .iteration import AndersonState, FixedPointIteration, IterationOutcome, iterate
from .options import MAX_ANDERSON_MEMORY, SolverOptions

__all__ = [
    "MAX_TRAIN_RQMC_NODES",
    "Observables",
    "Resolve",
    "RuleRefinement",
    "finer_randomised",
    "finer_rule",
    "half_decides",
    "largest_nodes",
    "predicted_start",
    "refine_rule",
    "refinement_reaches",
    "replicate_state",
    "resolve_memory",
    "secant_gain",
    "spread_scale",
    "standard_errors",
    "tighter_run",
]

#: the observables whose integration error is estimated (the observables registry's)
_ERROR_KEYS = error_keys()
#: (the refinement's target, ``quad_tol``, is on the test error and the training loss)
_TARGET_KEYS = ("test_error", "train_loss")


@dataclass(frozen=True)
class Observables:
    """Theorem 2 observables at one state; ``complete`` once the free energy, penalty and
    sparsity are in (a "light" evaluation has only the errors and losses, which the
    integration-error estimate compares)."""

    state: tuple
    hats: tuple
    test_error: float
    train_error: float
    train_loss: float
    errors: dict
    free_energy: float = np.nan
    penalty_value: float = np.nan
    sparsity: dict = field(default_factory=dict)
    complete: bool = False
    test_loss: float = np.nan

    def value(self, key: str) -> float:
        """One of the estimated observables by name (``test_error``, ``train_error``,
        ``train_loss``, ``test_loss``)."""
        return float(getattr(self, key))


def finer_rule(rule: QuadratureRule, cap: int = MAX_QUADRATURE_NODES) -> QuadratureRule | None:
    """The next rule of a refinement, or None beyond ``cap`` nodes."""
    finer = rule.refined()
    if finer is None or finer.weights.size > cap:
        return None
    return finer


def resolve_memory(opts: SolverOptions) -> int:
    """The Anderson memory of an error estimate's re-solves of one point (a finer channel
    rule, :func:`tighter_run`, a finer rule of the prior) and of a solve from a coarser
    rule's fixed point (:func:`~gaussmix.theory.solve.batch_solve.run_points`), where the
    policy declares it (:func:`~gaussmix.theory.solve.policy.anderson_memory`: a prior
    integrated by quadrature, and every prior's refinement):
    :data:`~gaussmix.theory.numerics.tolerances.RESOLVE_ANDERSON_FACTOR` times ``opts.anderson``
    (0, a plain damped iteration, stays 0), at most the largest memory the options accept.

    A re-solve starts at a fixed point moved by a small change of the map, where the
    iteration is linear to first order: Anderson mixing with ``m`` pairs is then GMRES(m) on
    ``(I - J) dx = T(x) - x``, and more pairs span more of the slow directions of the
    Jacobian ``J`` (a cold solve, far from the fixed point, keeps the shorter memory, whose
    old pairs would describe another state)."""
    return min(RESOLVE_ANDERSON_FACTOR * opts.anderson, MAX_ANDERSON_MEMORY)


def predicted_start(
    T, x: np.ndarray, pairs: AndersonState, opts: SolverOptions, aux: Any = None
) -> np.ndarray:
    """The state a refined rule's re-solve starts from: the next iterate of the coarser
    rule's own iteration at its fixed point ``x`` (one Anderson step of the map ``T`` with
    its secant pairs ``pairs``; ``aux``, the map's memory of its evaluation at ``x``, saves
    the channel), or ``x`` itself where that step fails or leaves the cone of valid states.

    The coarse iteration stops at ``x`` with a residual below ``opts.tol``; its next step is
    the linear response ``(I - J)^{-1} (T(x) - x)`` of the fixed point in the secant model
    of the Jacobian ``J``, which removes the error of stopping at ``tol`` to first order.
    Under the refined rule ``T2`` the residual of that state is then about the change of
    the map, ``T2 - T``, plus the secant model's error, instead of the stopping residual
    too: where the change of the rule is below the refined tolerance
    (:func:`~gaussmix.theory.numerics.tolerances.refined_tol`) the re-solve converges at its
    first evaluation, where it would otherwise take an evaluation for the linear response
    and one to check it.  Only a start: the re-solve's own convergence test decides.

    Measured at the fixed points of ``benchmarks/bench_estimate.py`` (scaled residuals of
    the refined rule, ``tol = 1e-8``): K = 3 cross-entropy, ``lam = 1``: 2.2e-10 at ``x``,
    8.2e-12 at the predicted start (the refined fixed point 7.8e-12 away); binary logistic:
    1.6e-9 -> 1.5e-12."""
    if pairs.empty:
        return x
    solver = FixedPointIteration(0.0, 1, opts.damping, return_image=False, report=False)
    try:
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):  # as in iterate
            s = solver.step(T, solver.init(T, x, pairs, aux))
    except (FloatingPointError, np.linalg.LinAlgError, ValueError):
        return x
    if s.outcome is not None or not s.evaluated or not np.all(np.isfinite(s.x)):
        return x
    return s.x if T.is_valid(s.x) else x


def secant_gain(pairs: AndersonState | None, weight: np.ndarray) -> float | None:
    """The smallest gain ``|W (I - J) dy| / |W dy|`` of the linearised map over the span of
    the secant pairs ``pairs`` (``dy`` the differences of states, ``(I - J) dy`` those of
    the states minus those of their images, both in the pairs' coordinates), in the
    weighted norm ``|W v| = |weight * v|_2``; None without pairs.

    The pairs are a model of the Jacobian ``J`` of the map: on their span its gains are
    exact to first order, so the smallest of them, ``sigma``, is the model's
    ``1 / |(I - J)^{-1}|``, and ``|W e| <= |W r| / sigma`` bounds the distance ``e`` of a
    state to the fixed point by its residual ``r`` wherever the slow directions of ``J``
    are in the span (the pairs of a converged run: its last steps are made of them).  Each
    pair is normalised first (the pairs of a run span decades of step length); directions
    of the span whose singular value is below
    :data:`~gaussmix.theory.numerics.tolerances.SECANT_GAIN_RCOND` of the largest are
    dropped (combinations of the pairs at their rounding)."""
    if pairs is None or pairs.empty:
        return None
    dX = np.array(pairs.dxs).T
    dY = dX * weight[:, None]
    dR = (np.array(pairs.dgs).T - dX) * weight[:, None]
    norms = np.linalg.norm(dY, axis=0)
    ok = norms > 0.0
    if not ok.any():
        return None
    dY, dR = dY[:, ok] / norms[ok], dR[:, ok] / norms[ok]
    _, s, vt = np.linalg.svd(dY, full_matrices=False)
    keep = s > SECANT_GAIN_RCOND * s[0]
    # (dY = U S V^T: the unit vectors of the span are U a, mapped to dR V S^-1 a)
    gain = float(np.linalg.svd(dR @ (vt[keep].T / s[keep]), compute_uv=False).min())
    return gain if np.isfinite(gain) and gain > 0.0 else None


def replicate_state(
    Tr,
    x: np.ndarray,
    pairs: AndersonState | None,
    opts: SolverOptions,
    callback: Callable | None,
    memory: Any,
    anderson: int,
    model: AndersonState | None = None,
    gains: dict | None = None,
) -> tuple[np.ndarray, int, Any] | None:
    """The fixed point of a replicate's map ``Tr`` near the full rule's fixed point ``x``, to
    the accuracy of its shift, the evaluations spent and the map's memory of its last
    evaluation (at that state); None where the iteration fails or ends at an invalid state.
    ``memory``: the map's memory to start from (the warm start of its proximal solves, or
    None); ``anderson``: the Anderson memory, the policy's for the replicates (they start as
    a solve of the rule: ``SolvePolicy.memory.of(Phase.SOLVE, rule)``,
    :class:`~gaussmix.theory.solve.memory.AndersonMemory`; no default, so that no run mixes
    with a memory the policy did not declare);
    ``model``: the full rule's secant pairs whose :func:`secant_gain` bounds the distance
    to the replicate's fixed point (None: ``pairs``); ``gains``: where given, a memo of that
    gain shared by the replicates of one rule started at one state ``x`` with one ``model``
    (their maps' coordinates alike), which then compute it once, not once each (16 singular
    value decompositions of the same pairs at ten classes, 8 ms of an estimate).

    The iteration of ``Tr`` starts at ``x`` with the full rule's secant pairs, a model of
    the Jacobian ``J`` that the replicate's map shares to first order: its first evaluation
    is ``Tr(x) - x``, and the Anderson step from there is the linear response of the fixed
    point, ``(I - J)^{-1} (Tr(x) - x)``.  The iteration stops at the first evaluated state
    ``y`` (after the first) whose distance to the replicate's fixed point, bounded on the
    linearised map by its residual ``r`` over the smallest gain ``sigma`` of ``I - J`` on
    the model's span (:func:`secant_gain`: ``|e| <= |r| / sigma``), is at most
    :data:`~gaussmix.theory.numerics.tolerances.REPLICATE_SHIFT_RTOL` times its distance
    from ``x`` (both in the iteration's coordinates, each component weighted by ``1 /
    max(1, |x_i|)``), or at ``opts.tol``; it returns that state with the memory of its
    channel evaluation (the observables reuse it).  Without a model of the full rule the
    replicate's own pairs give ``sigma``.

    Where the map contracts slowly the residual alone, or with the next step's length (the
    secant model's own distance, the test before), understates the distance.  Measured on
    the sharp K = 4 point #426 of the cold stream (8 x 2**12 points; ``sigma`` 0.048 on
    the run's 20 pairs), with the run from the coarser rule's fixed point started from 6
    or from 12 of its pairs (two fixed points within ``tol``), and the replicates mixing
    with 6 pairs or with the policy's 20: the test before stopped states up to 0.84 of
    the shift from the replicate's fixed point (1.34 with 6 pairs), where it claimed 0.2,
    and the spreads ran 0.86-1.26 of those of the replicates re-solved to ``tol``, by
    where the run had stopped; with the bound every state was within 0.11-0.48 of the
    shift and every spread within 0.93-1.14, in 59-68 evaluations for the eight
    replicates (32-37 before, 228-238 to ``tol``).  Where the map contracts fast the
    bound costs little: 2 evaluations per replicate on ten classes from digits, where
    the iteration to ``opts.tol`` took 4.
    """
    solver = FixedPointIteration(opts.tol, opts.max_iter, opts.damping, return_image=False)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):  # as in iterate
        s = solver.init(Tr, x, AndersonState.init(anderson, pairs), memory)
        y0 = x if s.chart is None else s.chart.forward(x)
        weight = None if y0 is None else 1.0 / np.maximum(1.0, np.abs(y0))
        model = pairs if model is None else model
        gain = None
        if weight is not None and model is not None and model.log_chart == s.anderson.log_chart:
            key = s.anderson.log_chart  # (the coordinates of the pairs and of ``weight``)
            if gains is None or key not in gains:
                gain = secant_gain(model, weight)
                if gains is not None:
                    gains[key] = gain
            else:
                gain = gains[key]
        while not solver.terminate(s):
            at = s.x
            s = solver.step(Tr, s)
            if callback is not None and s.evaluated:
                callback(s.n_iter, s.residual)
            check_interrupt()
            if s.outcome is None and s.evaluated and s.n_iter > 1 and s.last is not None:
                if weight is None:
                    continue
                y, yg = s.last  # (``at`` and its image, in the iteration's coordinates)
                sigma = gain if gain is not None else secant_gain(s.anderson, weight)
                shift = float(np.linalg.norm(weight * (y - y0)))
                bound = float(np.linalg.norm(weight * (yg - y)))
                if sigma is not None and bound <= REPLICATE_SHIFT_RTOL * sigma * shift:
                    if Tr.is_valid(at):
                        return at, s.n_iter, s.aux
    out = solver.outcome(s)
    if not out.converged or not Tr.is_valid(out.x):
        return None
    return out.x, out.n_iter, out.aux


def tighter_run(
    T, x: np.ndarray, start: AndersonState, opts: SolverOptions, kw: dict, aux: Any = None
) -> IterationOutcome | None:
    """The refined rule's fixed point ``x`` (converged to ``opts.tol``) iterated on by the
    map ``T`` (one point's, or a stacked one whose points freeze at the tighter tolerance)
    to :func:`~gaussmix.theory.numerics.tolerances.refined_tol` (at most
    :data:`~gaussmix.theory.numerics.tolerances.REFINED_EXTRA_ITER` more evaluations, from the
    secant pairs ``start``), so that the change of the observables under refinement also
    contains the error of stopping the coarser rule's iteration at ``opts.tol`` (``aux``: the
    map's memory of its last evaluation, :func:`~gaussmix.theory.solve.iteration.iterate`'s);
    None where
    the tighter tolerance is not below ``opts.tol``.  A point that does not converge to it
    (a noise floor above the tighter tolerance) keeps its state at ``opts.tol``: the
    caller's choice, by the outcome's status or each point's freeze.

    Measured at K = 3 cross-entropy, ``lam = 1e-3``, alpha = 4.74 (BENCHMARKS, "K = 3 at
    lam = 1e-3"): stopped at ``tol = 1e-8`` a single point was 1.5e-9 off in the training
    error with an estimate (of the integration only) of 1e-12."""
    tight = refined_tol(opts.tol)
    if tight >= opts.tol:
        return None
    return iterate(T, x, start, aux=aux, **{**kw, "tol": tight, "max_iter": REFINED_EXTRA_ITER})


@dataclass
class RuleRefinement:
    """What :func:`refine_rule` returns, per point: the observables of the last rule each
    point was solved with, the change of each observable under the last refinement
    (``quad``), that evaluation's own error (``evals``), the evaluations and residuals
    (the starting ones plus each re-solve's), and whether a re-solve failed (the
    refinement then stopped; each point keeps what it had)."""

    obs: list[Observables]
    quad: list[dict]
    evals: list[dict]
    n_iter: list[int]
    residual: list[float]
    failed: bool = False

    @classmethod
    def unrefined(
        cls, obs: list[Observables], n_iter: list[int], residual: list[float]
    ) -> RuleRefinement:
        """Points without a refinement: no change, each evaluation's own error."""
        quad = [dict.fromkeys(_ERROR_KEYS, 0.0) for _ in obs]
        return cls(list(obs), quad, [dict(o.errors) for o in obs], n_iter, residual)


#: a re-solve of :func:`refine_rule`: the points ``active`` (indices) with the rule given,
#: from their last solve, returning each one's light observables there, evaluations and
#: residual (in the order of ``active``), or None after a failure
Resolve = Callable[[QuadratureRule, list[int]], list[tuple[Observables, int, float]] | None]


def refine_rule(
    rule: QuadratureRule,
    obs: list[Observables],
    n_iter: list[int],
    residual: list[float],
    opts: SolverOptions,
    resolve: Resolve,
) -> RuleRefinement:
    """The integration error estimate by refinement of the channel rule, of one point or
    of the points of a curve (the bookkeeping of the one estimate of both,
    :func:`~gaussmix.theory.solve.batch_solve.estimate_points`; only the re-solve is the
    map's, ``resolve``).

    The points, solved with ``rule`` (observables ``obs``), are re-solved with the next
    finer rule (``rule.refined()``, within :data:`MAX_QUADRATURE_NODES`); the change of
    every observable plus the new evaluation's own error estimates each point's
    integration error.  With ``auto_refine`` this repeats, at most ``max_refine`` times,
    for the points whose estimate of the test error or training loss is not below
    ``quad_tol`` (without, once).
    """
    out = RuleRefinement.unrefined(obs, list(n_iter), list(residual))
    active = list(range(len(obs)))
    for _ in range(opts.max_refine if opts.auto_refine else 1):
        finer = finer_rule(rule)
        if finer is None:
            break
        solved = resolve(finer, active)
        if solved is None:
            out.failed = True
            break
        still = []
        for i, (obs2, n, res) in zip(active, solved):
            out.quad[i] = {k: abs(obs2.value(k) - out.obs[i].value(k)) for k in _ERROR_KEYS}
            out.evals[i] = dict(obs2.errors)
            out.obs[i], out.n_iter[i], out.residual[i] = obs2, out.n_iter[i] + n, res
            total = [out.quad[i][k] + out.evals[i][k] for k in _TARGET_KEYS]
            if not max(total) <= opts.quad_tol:
                still.append(i)
        if not still:
            break
        active, rule = still, finer
    return out


# --------------------------------------------------------------------------- randomised rules
#: largest number of nodes of a randomised rule refined for the training error's target
#: (:data:`~gaussmix.theory.numerics.tolerances.TRAIN_ERROR_TARGET`): ``8 x 2**13`` Sobol' points
MAX_TRAIN_RQMC_NODES = 2**16


def standard_errors(values: dict, n_rep: int, quantile: float | None = None) -> dict:
    """The standard error of the mean of ``n_rep`` replicates for each observable, from the
    ``values`` of the first ``n <= n_rep`` of them (a list per observable), scaled by
    :func:`spread_scale` (``quantile``: its confidence bound instead)."""
    n = len(values["test_error"])
    scale = spread_scale(n, n_rep, quantile)
    return {k: scale * float(np.std(v, ddof=1) / np.sqrt(n_rep)) for k, v in values.items()}


def spread_scale(n: int, n_rep: int, quantile: float | None = None) -> float:
    """The factor of the spread of ``n`` of ``n_rep`` replicates over ``sqrt(n_rep)``.

    The replicates are independent and alike, so the spread of any ``n`` of them estimates
    the variance of one, and its square root over ``sqrt(n_rep)`` the standard error of
    the rule's mean.  With fewer values it is less precise: for Gaussian errors the rule's
    mean lies within it with the probability ``2 F_{n-1}(1) - 1`` of Student's ``t`` (its
    ratio to that estimate is ``t_{n-1}``-distributed: the mean of all ``n_rep`` is
    independent of the spread of the first ``n``), 0.65 at ``n = 8`` and 0.61 at ``n =
    4``.  Fewer values are scaled by ``t_{n-1}^{-1}(F_{n_rep-1}(1))`` (1.10 for four of
    eight), so that the estimate keeps the coverage of all the replicates' one standard
    error: its meaning does not weaken.  ``quantile``: instead, the factor of the standard
    error's one-sided confidence bound at that probability, ``sqrt((n - 1) /
    chi2_{n-1}(1 - q))`` (the true one is below it with probability ``q``)."""
    if quantile is None and n >= n_rep:
        return 1.0
    from scipy import stats  # lazily: the command line's start-up loads no scipy

    if quantile is not None:
        return float(np.sqrt((n - 1) / stats.chi2.ppf(1.0 - quantile, n - 1)))
    return float(stats.t.ppf(stats.t.cdf(1.0, n_rep - 1), n - 1))


def finer_randomised(
    rule: QuadratureRule, quad: dict, evals: dict, opts: SolverOptions
) -> QuadratureRule | None:
    """The rule that the randomised estimate
    (:func:`~gaussmix.theory.solve.refinement.estimate_randomised`) refines ``rule`` to, given
    the estimate's parts (the replicates' ``quad``, the evaluation's own ``evals``), or
    None: twice the points while the test error's or training loss's estimate exceeds
    ``quad_tol`` and a finer rule reaches it, else while the training error's exceeds
    :data:`~gaussmix.theory.numerics.tolerances.TRAIN_ERROR_TARGET`."""
    finer = finer_rule(rule)
    ratio = rule.weights.size / largest_nodes(rule)
    wants_finer = finer is not None and refinement_reaches(
        quad, evals, ("test_error", "train_loss"), opts.quad_tol, ratio
    )
    if wants_finer:
        return finer
    # the training error's own target (issue 10), a little further if need be
    finer = finer_rule(rule, cap=MAX_TRAIN_RQMC_NODES)
    if finer is None or not refinement_reaches(
        quad, evals, ("train_error",), TRAIN_ERROR_TARGET, 0.0
    ):
        return None
    return finer


def half_decides(
    rule: QuadratureRule, values: dict, evals: dict, opts: SolverOptions, last: bool
) -> bool:
    """Whether the ``values`` of the first half of ``rule``'s replicates make the estimate
    (:func:`standard_errors`, scaled to all the replicates' coverage) without the others:
    where every standard error within the two-sided confidence interval the half gives
    (:data:`~gaussmix.theory.numerics.tolerances.HALF_REPLICATES_CONFIDENCE`, 90 %:
    :func:`spread_scale`'s bounds at 5 % and 95 %, a factor 4.7 apart with four values)
    leads to the same refinement (:func:`finer_randomised`; none in the estimate's
    ``last`` round), so that a true standard error that would refine otherwise lies
    outside it, with a probability of at most 5 % for Gaussian errors.  The interval is
    sampled at ratios below 2: within it the refinement changes only where an estimate
    crosses a target or where the test error's or training loss's target comes into reach,
    a range of at least a factor ``1 / ratio >= 2``."""
    if last:
        return True
    n = len(values["test_error"])
    tail = (1.0 - HALF_REPLICATES_CONFIDENCE) / 2
    lo, hi = (spread_scale(n, rule.n_rep, q) for q in (tail, 1.0 - tail))
    base = standard_errors(values, rule.n_rep, quantile=tail)
    steps = int(np.ceil(np.log(hi / lo) / np.log(2.0))) + 1
    decided = [
        finer_randomised(rule, {k: f / lo * v for k, v in base.items()}, evals, opts)
        for f in np.geomspace(lo, hi, steps + 1)
    ]
    return all(d == decided[0] for d in decided)


def refinement_reaches(
    quad: dict, evals: dict, keys: tuple[str, ...], target: float, ratio: float
) -> bool:
    """Whether a finer randomised channel rule can bring the estimates of ``keys`` above
    ``target`` (``quad + evals``) down to it: some estimate exceeds it, and for each that
    does, the evaluation's own error ``evals`` (the seeded orthant and training-error
    integrals, which no channel rule reduces) is below it, with room for the channel's
    part ``quad`` once divided by ``1 / ratio`` (``ratio``: the nodes of the rule over
    those of its finest admissible refinement, the optimistic rate ``1 / N``; 0 asks only
    that the evaluation's own error leaves room).

    Measured on ten classes fitted from scikit-learn's digits (``lam = 1``, alpha = 1): the
    training error's own estimate is 1.07e-4 at its sampling cap, above
    :data:`~gaussmix.theory.numerics.tolerances.TRAIN_ERROR_TARGET`, and the five refinements of
    the
    channel rule that chased the target (to 8 x 2**13 nodes) cost 26 times the solve and
    left the estimate at 1.06e-4."""
    excess = [k for k in keys if quad[k] + evals[k] > target]
    return bool(excess) and all(evals[k] + ratio * quad[k] < target for k in excess)


def largest_nodes(rule: QuadratureRule) -> int:
    """Nodes of the finest admissible refinement of ``rule``."""
    size = rule.weights.size
    finer = finer_rule(rule)
    while finer is not None:
        size = finer.weights.size
        finer = finer_rule(finer)
    return size
