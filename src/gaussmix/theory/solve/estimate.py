"""The integration error estimate's driver, one for a single point and for the points of a
curve.

A solve estimates the integration error of Theorem 2's observables (eq. (9)) by re-solving
its fixed point with finer channel rules: :func:`refine_rule` is that loop, whichever map
re-solves (one point's, :func:`~gaussmix.theory.solve.refinement.estimate_errors`, or a
curve's stacked points, :func:`~gaussmix.theory.solve.batch_solve.estimate_points`): the next
finer rule (:func:`finer_rule`), the change of each observable plus the new evaluation's own
error, and refinement again for the points whose estimate exceeds ``quad_tol``.  Each
re-solve goes on to a tighter tolerance (:func:`tighter_run`) so that the change also holds
the error of stopping the iteration at ``tol``.  :class:`Observables` is what the estimate
compares.  Two linear responses of the fixed point, each checked by the iteration that
follows it: :func:`predicted_start` (to the residual a solve stopped at: where a single
point's re-solve with the finer rule starts) and :func:`replicate_state` (to the change of
the rule to one replicate of a randomised rule).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gaussmix.core.interrupt import check_interrupt

from ..model.outputs import error_keys
from ..numerics.quadrature import MAX_QUADRATURE_NODES, QuadratureRule
from ..numerics.tolerances import REFINED_EXTRA_ITER, REPLICATE_SHIFT_RTOL, refined_tol
from .iteration import AndersonState, FixedPointIteration, IterationOutcome, iterate
from .options import SolverOptions
from .state import residual_scale

__all__ = [
    "Observables",
    "Resolve",
    "RuleRefinement",
    "finer_rule",
    "predicted_start",
    "refine_rule",
    "replicate_state",
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


def replicate_state(
    Tr,
    x: np.ndarray,
    pairs: AndersonState | None,
    opts: SolverOptions,
    callback: Callable | None,
    memory: Any = None,
) -> tuple[np.ndarray, int, Any] | None:
    """The fixed point of a replicate's map ``Tr`` near the full rule's fixed point ``x``, to
    the accuracy of its shift, the evaluations spent and the map's memory of its last
    evaluation (at that state); None where the iteration fails or ends at an invalid state.
    ``memory``: the map's memory to start from (the warm start of its proximal solves).

    The iteration of ``Tr`` starts at ``x`` with the full rule's secant pairs, a model of
    the Jacobian ``J`` that the replicate's map shares to first order: its first evaluation
    is ``Tr(x) - x``, and the Anderson step from there is the linear response of the fixed
    point, ``(I - J)^{-1} (Tr(x) - x)``.  The iteration stops at the first evaluated state
    whose scaled residual (its distance to the replicate's fixed point, to first order) is
    at most :data:`~gaussmix.theory.numerics.tolerances.REPLICATE_SHIFT_RTOL` times its scaled
    distance from ``x`` (usually the second evaluation: the linear response checked by one
    re-evaluation), or at ``opts.tol``; it returns that state with the memory of its
    channel evaluation (the observables reuse it).  Measured on ten classes from digits: 2
    evaluations per replicate where the iteration to ``opts.tol`` took 4.
    """
    solver = FixedPointIteration(opts.tol, opts.max_iter, opts.damping, return_image=False)
    scale = residual_scale(x, Tr.K, Tr.L)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):  # as in iterate
        s = solver.init(Tr, x, AndersonState.init(opts.anderson, pairs), memory)
        while not solver.terminate(s):
            at = s.x
            s = solver.step(Tr, s)
            if callback is not None and s.evaluated:
                callback(s.n_iter, s.residual)
            check_interrupt()
            if s.outcome is None and s.evaluated and s.n_iter > 1:
                shift = float(np.max(np.abs(at - x) / scale))
                if s.residual <= REPLICATE_SHIFT_RTOL * shift and Tr.is_valid(at):
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
    of the points of a curve (the one driver of both: :func:`estimate_errors`,
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
