"""The fixed-point solver of Theorem 1: the public API.

:func:`solve_problem` solves a validated :class:`~gaussmix.theory.problem.problem.Problem` with the
options of a :class:`~gaussmix.theory.solve.options.SolverOptions` and returns a
:class:`~gaussmix.theory.solve.results.FixedPointResult`; it raises or reports a failed solve, and
warns where the estimated integration error is large.  The work is done, by job, in

- :mod:`gaussmix.theory.solve.state`: the state vector ``x = (Q_c, M_c, V_c, b)``, its cone of
  valid states, the scale of the convergence test and the logarithmic chart;
- :mod:`gaussmix.theory.solve.fixed_point`: the map ``x -> T(x)`` of Theorem 1 (channel, bias
  condition, prior), its fixed point and the starting point;
- :mod:`gaussmix.theory.solve.iteration`: Anderson mixing and the safeguarded loop;
- :mod:`gaussmix.theory.solve.policy`: the steps of a solve, declared per problem kind (rule
  choice, continuation, regime switches, error estimate, fallback): :func:`solve_problem`
  is one loop over them;
- :mod:`gaussmix.theory.solve.refinement`: the fixed-point run, the observables of Theorem 2 at the
  fixed point and the integration error estimate;
- :mod:`gaussmix.theory.solve.results`: the result type.

The names of those modules that were defined here before (``FixedPointMap``,
``AndersonState``, ``pack_state``, ...) are re-exported.  Tolerances are the named
constants of :mod:`gaussmix.theory.numerics.tolerances`.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import replace
from typing import Any, NamedTuple

import numpy as np

from gaussmix.core.caught import caught
from gaussmix.core.exceptions import ConvergenceError, IntegrationWarning
from gaussmix.core.version import __version__

from ..channel.channel import channel_moments
from ..numerics.quadrature import QuadratureRule, auto_rule
from ..numerics.tolerances import (
    SMALL_LAM_HINT,
    integration_warning_threshold,
)
from ..prior.prior import prior_update
from ..problem.problem import Problem
from .batch_solve import FirstSolve, plain_first_solve
from .bias import bias_condition_step
from .fixed_point import (
    FixedPointMap,
    FixedPointState,
    HatEvaluation,
    needs_quadrature,
    start_state,
)
from .iteration import AndersonState, IterationOutcome, IterationStatus, iterate
from .observables import free_energy_terms
from .options import DEFAULT_OPTIONS, SolverOptions, solver_options, with_options_doc
from .policy import policy_for, policy_for_points, verdict
from .refinement import (
    MAX_QUADRATURE_DIM,
    MAX_QUADRATURE_NODES,
    MAX_TRAIN_RQMC_NODES,
    Estimate,
    failed_observables,
)
from .results import FixedPointResult
from .solve_state import SolveState
from .state import LogChart, is_valid_state, pack_state, residual_scale, unpack_state
from .warning_text import integration_warning_text

__all__ = [
    "FixedPointResult",
    "FixedPointState",
    "FixedPointMap",
    "HatEvaluation",
    "SolverOptions",
    "IterationStatus",
    "IterationOutcome",
    "AndersonState",
    "LogChart",
    "iterate",
    "solve_problem",
    "solve_batch",
    "BatchSolve",
    "with_options_doc",
    "DEFAULT_OPTIONS",
    "free_energy",
    "effective_state",
    "pack_state",
    "unpack_state",
    "is_valid_state",
    "residual_scale",
    "bias_condition_step",
    "MAX_QUADRATURE_DIM",
    "MAX_QUADRATURE_NODES",
    "MAX_TRAIN_RQMC_NODES",
]


def assemble_result(
    problem: Problem, opts: SolverOptions, est: Estimate, stacklevel: int = 5
) -> FixedPointResult:
    """The result of a solve (NaN observables unless converged to a valid state), with a
    spurious point detected, and the integration warning where the estimate is large."""
    # stacklevel: assemble_results <- assemble_result <- solve_problem <- its caller's caller
    return assemble_results([problem], opts, [est], stacklevel=stacklevel)[0]


def assemble_results(
    problems: list[Problem], opts: SolverOptions, ests: list[Estimate], stacklevel: int = 4
) -> list[FixedPointResult]:
    """:func:`assemble_result` of each of several solves (the points of a curve), in one
    call: each rule described once.  ``stacklevel``: the integration warning's, as
    :func:`warnings.warn`'s from here; with ``opts.throw``, the first point not converged
    raises."""
    described: dict = {}  # id of a rule -> (it, its description)
    results = []
    for problem, est in zip(problems, ests):
        T, x = est.T, est.x
        ob = est.obs if est.obs is not None else failed_observables(problem, T, x, est.memory)
        st, text = verdict(problem, opts, est)
        ok = st is IterationStatus.CONVERGED
        if not ok and problem.lam < SMALL_LAM_HINT:
            text += f" (lam={problem.lam:g}; the limit lam -> 0+ is gaussmix.max_margin)"
        if not ok and est.fallback:
            text += "; " + est.fallback
        if not needs_quadrature(problem):
            quadrature = "closed-form"
        else:
            rule = described.get(id(T.rule))
            if rule is None or rule[0] is not T.rule:
                rule = described[id(T.rule)] = (T.rule, T.rule.describe())
            quadrature = rule[1]
        errors = est.errors
        Q, M, V, b = ob.state
        Qhat, Mhat, Vhat = ob.hats
        P = problem.P
        nan = np.nan
        result = FixedPointResult(
            success=ok,
            n_iter=est.n_iter,
            residual=est.residual,
            message=text,
            Q=_to_full(P, Q),
            M=M @ P,
            V=problem.full_response(_to_full(P, V), V),
            b=problem.full_bias(b),
            Qhat=_to_full(P, Qhat),
            Mhat=Mhat @ P,
            Vhat=problem.full_response(_to_full(P, Vhat), Vhat),
            test_error=ob.test_error if ok else nan,
            train_error=ob.train_error if ok else nan,
            train_loss=ob.train_loss if ok else nan,
            test_loss=ob.test_loss if ok else nan,
            free_energy=ob.free_energy if ok else nan,
            penalty_value=ob.penalty_value if ok else nan,
            integration_error=_largest({k: errors[k] for k in SUMMARY_ERROR_KEYS if k in errors}),
            integration_errors=errors,
            **{k: (v if ok else nan) for k, v in ob.sparsity.items()},
            params={
                **problem.describe(),
                "tol": opts.tol,
                "quadrature": quadrature,
                "version": __version__,
                **({"fallback": est.fallback} if ok and est.fallback else {}),
            },
            status=st,
            state=FixedPointState(problem, T.rule, x, T.symmetry, T.prior_panels),
        )
        worst = max(errors["test_error"], errors["train_loss"])
        if ok and (worst > integration_warning_threshold(opts.tol) or np.isnan(_largest(errors))):
            warnings.warn(
                integration_warning_text(problem, opts, est),
                IntegrationWarning,
                stacklevel=stacklevel,
            )
        if not ok and opts.throw:
            raise failure(result)
        results.append(result)
    return results


def failure(result: FixedPointResult) -> ConvergenceError:
    """The exception of a failed solve (``throw=True``): its status's class
    (:attr:`~gaussmix.theory.solve.iteration.IterationStatus.error_class`), with the result."""
    return result.status.error_class(f"fixed point not found: {result.message}", result)


#: the estimates the result's ``integration_error`` summarises: the errors and the training
#: loss, which the refinement controls (``quad_tol``); the test loss's estimate is reported
#: in ``integration_errors`` only (refinement.py says why it is not a refinement target)
SUMMARY_ERROR_KEYS = ("test_error", "train_error", "train_loss")


def _largest(errors: dict) -> float:
    """The largest estimate, NaN if any is NaN (not estimated)."""
    values = list(errors.values())
    return np.nan if any(v != v for v in values) else max(values)  # (v != v: NaN)


def _to_full(P: np.ndarray, A: np.ndarray) -> np.ndarray:
    """``P^T A_c P`` for a stack of effective-space matrices (``A`` itself, a copy, for
    the identity map of one output: the same numbers, without the einsum's cost)."""
    if P.shape == (1, 1) and P[0, 0] == 1.0:
        return A.copy()
    return np.einsum("ia,kij,jb->kab", P, A, P)


@with_options_doc
def solve_problem(
    problem: Problem,
    *,
    options: SolverOptions | None = None,
    init: FixedPointResult | dict | None = None,
    callback: Callable[[int, float], Any] | None = None,
    history: dict | None = None,
    fail_fast: bool = False,
    predicted: bool = False,
    **option_keywords: Any,
) -> FixedPointResult:
    """Solve the fixed point of a validated :class:`~gaussmix.theory.problem.problem.Problem`.

    The options are one :class:`~gaussmix.theory.solve.options.SolverOptions` (``options``, and
    any option given as a keyword, :func:`~gaussmix.theory.solve.options.solver_options`).

    Parameters
    ----------
    problem : Problem
        Mixture, loss, penalty, ``lam`` and ``alpha``
        (:func:`~gaussmix.theory.api.api.make_problem`).
    %(solve_inputs)s
    fail_fast : bool
        Stop a run from ``init`` that stalls early
        (:class:`~gaussmix.theory.solve.policy.FailFast`) instead of after ``max_iter``
        evaluations, where the caller has a fallback of its own (a curve's warm start from
        its last point, whose point is then solved cold); a cold solve with
        ``fallback`` does so anyway.
    predicted : bool
        ``init`` is a curve's predictor, near the fixed point: where the rule has no secant
        pairs in ``history``, its first run is the coarser rule's corrected by the two
        rules' difference at ``init``
        (:attr:`~gaussmix.theory.solve.refinement.Continuation.CORRECTED`; with
        ``continuation``).
    %(solver_options)s
    Returns
    -------
    FixedPointResult

    Notes
    -----
    The solve is the steps of its :class:`~gaussmix.theory.solve.policy.SolvePolicy`
    (:func:`~gaussmix.theory.solve.policy.policy_for`), then the result's checks (a spurious or
    degenerate fixed point) and the integration warning.
    """
    opts = solver_options(options, option_keywords, caller="solve_problem")
    history = history if history is not None else {}
    policy = policy_for(
        problem, opts, warm=init is not None, fail_fast=fail_fast, predicted=predicted
    )
    est = policy.run(problem, opts, start_state(problem, init), callback, history)
    # stacklevel: assemble_results <- assemble_result <- solve_problem <- its caller's caller
    return assemble_result(problem, opts, est, stacklevel=5)


class BatchSolve(NamedTuple):
    """The points of :func:`solve_batch`: each point's result (None where the stacked
    solve failed: no convergence, a point in the sharp regime with two outputs, a spurious
    or degenerate point) and the warnings of the sharp switch, the estimates and the
    results (``log``, :func:`~gaussmix.core.caught.caught`'s), for the caller to give once
    every point stands."""

    results: list[FixedPointResult] | None
    log: list


def solve_batch(
    problems: list[Problem],
    opts: SolverOptions,
    *,
    first_solve: FirstSolve = plain_first_solve,
    on_converged: Callable[[int], None] | None = None,
) -> BatchSolve:
    """The points ``problems`` (of one mixture, loss and penalty, at other ``lam`` and
    ``alpha``) solved as one stacked state by the steps of their policy
    (:func:`~gaussmix.theory.solve.policy.policy_for_points`): the one loop of a single
    solve (:meth:`~gaussmix.theory.solve.policy.SolvePolicy.loop`) on the one state with a
    point axis (:class:`~gaussmix.theory.solve.solve_state.SolveState` of ``P`` points,
    where :func:`solve_problem`'s has one); ``first_solve`` and ``on_converged``: the first
    stacked solve (:data:`~gaussmix.theory.solve.batch_solve.FirstSolve`) and its progress
    callback.  The results are assembled as a single point's (:func:`assemble_results`);
    where one of them is not a success, none is returned (the caller solves the points
    one by one)."""
    policy = policy_for_points(problems, opts)
    s = SolveState(
        policy,
        list(problems),
        opts,
        first_solve=first_solve,
        on_converged=on_converged,
        log=[],  # (held: given once every point stands)
    )
    policy.loop(s)
    if s.failed:
        return BatchSolve(None, s.log)
    with caught() as log:
        results = assemble_results(problems, replace(opts, throw=False), s.ests)
    s.log.extend(log)
    if not all(res.success for res in results):  # a spurious or degenerate point
        return BatchSolve(None, s.log)
    return BatchSolve(results, s.log)


def free_energy(
    problem: Problem,
    Q: np.ndarray,
    M: np.ndarray,
    V: np.ndarray,
    b: np.ndarray,
    Qhat: np.ndarray,
    Mhat: np.ndarray,
    Vhat: np.ndarray,
    rule: QuadratureRule | None = None,
) -> float:
    """The replica-symmetric free energy (eq. (168)) at arbitrary order parameters.

    All arguments are in the *effective* output space of ``problem`` (see
    :mod:`gaussmix.theory.problem.problem`).  Stationary at the fixed point of Theorem 1, where it
    equals the minimal empirical risk per dimension, ``alpha eps_l + lam E[r(W*)] / d``.
    """
    if rule is None:  # graded panels in one and two dimensions, tensor Gauss-Hermite beyond
        rule = auto_rule(problem.dim, smooth=problem.dim > 2)
    mom = channel_moments(problem.loss, problem.y, M, b, Q, V, rule)
    pr = prior_update(problem, Qhat, Mhat, Vhat, details=True)
    return free_energy_terms(problem, M, Q, V, Mhat, Qhat, Vhat, mom.Eenv, pr.psi_w)


def effective_state(result: FixedPointResult) -> dict:
    """Order parameters of a result in its effective output space (for tests and tools)."""
    state = result.state
    if state is None:
        raise ValueError("effective_state needs a FixedPointResult made by the solver")
    problem = state.problem
    Q, M, V, b = state.unpack()
    P = problem.P
    return {
        "problem": problem,
        "rule": state.rule,
        "Q": Q,
        "M": M,
        "V": V,
        "b": b,
        "Qhat": P @ result.Qhat @ P.T,
        "Mhat": result.Mhat @ P.T,
        "Vhat": P @ result.Vhat @ P.T,
    }
