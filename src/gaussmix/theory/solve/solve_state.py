"""The state a solve's steps work on: one state with a point axis, below the policy.

The policy (:mod:`gaussmix.theory.solve.policy`) declares the steps of a solve and is their
one driver (:meth:`~gaussmix.theory.solve.policy.SolvePolicy.loop`); the steps read and
update a :class:`SolveState`, which holds ``P >= 1`` points (problems of one mixture, loss
and penalty at other ``lam`` and ``alpha``) and does the work the steps call on all of
them: :meth:`SolveState.iterate`, :meth:`SolveState.switch` and
:meth:`SolveState.estimate_errors`.  A single solve is a state of one point
(:func:`~gaussmix.theory.solve.solver.solve_problem`), a curve's stacked points a state of
``P`` (:func:`~gaussmix.theory.solve.solver.solve_batch`).  The state makes no decision:
which rule, continuation, estimate and fallback is its policy's, read through the
fields it declares (:class:`Declared`); the steps that need one point say so
(:attr:`~gaussmix.theory.solve.policy.Step.points`).

Below the state there is one run and one estimate of its points, a single point's being a
map of one point: :func:`~gaussmix.theory.solve.batch_solve.run_points` and
:func:`~gaussmix.theory.solve.batch_solve.estimate_points`.  What differs between a single
point's and a curve's is what the policy declares, read by the state and handed to them:
:attr:`Declared.stacked` (each point frozen at its own convergence, the curve's first
solve; or one point's iteration, with its early stop), the predicted start, the merged
tighter run, whose secant pairs, and the memory of a run from a fixed point.  The sharp
switch is still two-fold (:meth:`SolveState.switch`): a single point solves again with its
sharp rule after the policy's continuation, a curve's points grouped by the rule each
ends with, stacked.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

import numpy as np

from ...core.caught import caught
from ..numerics.quadrature import QuadratureRule
from ..problem.problem import Problem
from . import batch_solve
from .batch import NO_FREEZING, Watch
from .batch_solve import FirstSolve, plain_first_solve, solve_freezing
from .estimate import resolve_memory
from .fixed_point import FixedPointMap, MapMemory, map_features
from .iteration import AndersonState, IterationOutcome, IterationStatus
from .options import SolverOptions
from .refinement import (
    Continuation,
    ErrorEstimate,
    Estimate,
)

__all__ = ["Declared", "PointGroup", "SolveState"]


class _FailFast(Protocol):
    """The policy's early stop of a run that stalls
    (:class:`~gaussmix.theory.solve.policy.FailFast`)."""

    def watch(self) -> Callable: ...


class Declared(Protocol):
    """What the state reads of its policy
    (:class:`~gaussmix.theory.solve.policy.SolvePolicy`): the declared fields that choose
    its mechanics, never a decision of its own."""

    @property
    def stacked(self) -> bool:
        """Whether each point of a run is frozen at its own convergence and the runs are the
        curve's (a curve's points), rather than one point's iteration."""

    @property
    def continuation(self) -> Continuation:
        """The cheaper first phase of every fixed-point run."""

    @property
    def fail_fast(self) -> _FailFast | None:
        """The early stop of a single point's runs, where a fallback waits."""

    @property
    def sharp_watch(self) -> Watch | None:
        """The stop of a stacked solve in the sharp regime (two outputs)."""

    @property
    def predicted_start(self) -> bool:
        """Whether an estimate's refined re-solve starts from the predicted start (one
        step of the last solve's own iteration), rather than from the fixed point."""

    @property
    def longer_resolve_memory(self) -> bool:
        """Whether an estimate's re-solves take the longer Anderson memory of a re-solve
        (:func:`~gaussmix.theory.solve.estimate.resolve_memory`), rather than
        ``opts.anderson``."""

    @property
    def merge(self) -> bool:
        """Whether a stacked estimate's refined re-solve goes on to the tighter tolerance in
        the same iteration."""

    @property
    def own_pairs(self) -> bool:
        """Whether the stacked re-solves start from each point's own secant pairs."""


@dataclass
class PointGroup:
    """The points of a stacked state on one rule after the sharp switch (indices ``idx``):
    their map, stacked state, each point's evaluations and residual, the map's memory of
    its last evaluation (None: a fresh one) and the secant pairs the estimate starts
    from."""

    idx: list[int]
    T: FixedPointMap
    x: np.ndarray
    n_iter: np.ndarray
    residual: np.ndarray
    memory: MapMemory | None
    history: AndersonState | None


@dataclass
class SolveState:
    """What the steps of a solve hand on, for ``P >= 1`` points (``problems``).

    Given: the policy (:class:`Declared`), the points' problems, the options, the
    iteration's callback and the secant pairs by rule (``history``; a single point's),
    the starting state ``x0`` (a single point's; a stacked solve starts cold), the first
    stacked solve (``first_solve``, :data:`~gaussmix.theory.solve.batch_solve.FirstSolve`:
    the continuation's restart of a sweep's slow points) and its progress callback
    (``on_converged``).  Handed on: the map and outcome of the last fixed-point run (``T``,
    ``out``; stacked: each point's evaluations ``n_iter`` and residual ``residual``, and
    after the sharp switch its points by rule, ``groups``), whether the warm start's solve
    stands (``warm_kept``) and its iterations (``n_warm``), and once made each point's
    estimate (``ests``; None after a failed stacked solve, ``failed``), with the warnings of
    the stacked switch and estimates in ``log`` for the caller to give once every point
    stands."""

    policy: Declared
    problems: list[Problem]
    opts: SolverOptions
    callback: Callable | None = None
    history: dict = field(default_factory=dict)
    x0: np.ndarray | None = None
    first_solve: FirstSolve = plain_first_solve
    on_converged: Callable[[int], None] | None = None
    T: FixedPointMap | None = None
    out: IterationOutcome | None = None
    n_iter: np.ndarray | None = None
    residual: np.ndarray | None = None
    groups: list[PointGroup] | None = None
    ests: list[Estimate] | None = None
    failed: bool = False
    log: list = field(default_factory=list)
    n_warm: int = 0
    warm_kept: bool = False

    # ----------------------------------------------------------------- the point axis
    @property
    def n_points(self) -> int:
        """The number ``P`` of points."""
        return len(self.problems)

    @property
    def problem(self) -> Problem:
        """The problem of a state of one point (the steps that need one point)."""
        self._one("problem")
        return self.problems[0]

    @property
    def est(self) -> Estimate | None:
        """The estimate of a state of one point (None before the estimate)."""
        self._one("est")
        return None if self.ests is None else self.ests[0]

    @est.setter
    def est(self, value: Estimate) -> None:
        self._one("est")
        self.ests = [value]

    def _one(self, what: str) -> None:
        if self.n_points != 1:
            raise ValueError(
                f"SolveState.{what} is a single point's; the state has {self.n_points}"
            )

    @property
    def converged(self) -> bool:
        """Whether every point converged in the last fixed-point run."""
        return not self.failed and self.out is not None and self.out.converged

    @property
    def x(self) -> np.ndarray:
        """The (stacked) state of the last fixed-point run."""
        return self.out.x

    # ----------------------------------------------------------------- the runs
    def run(self, rule: QuadratureRule, x0: np.ndarray) -> tuple[FixedPointMap, IterationOutcome]:
        """The run of the one point with ``rule`` from ``x0`` after the policy's
        continuation (:meth:`run_points`); the outcome's evaluations count both phases."""
        T, out, n_iter, _ = self.run_points(rule, x0)
        return T, replace(out, n_iter=int(n_iter[0]))

    def run_points(
        self, rule: QuadratureRule, x0: np.ndarray | None
    ) -> tuple[FixedPointMap, IterationOutcome | None, np.ndarray, np.ndarray]:
        """:func:`~gaussmix.theory.solve.batch_solve.run_points` of the state's points with
        ``rule`` from ``x0`` (None: the map's cold start of every point; None is returned
        for the outcome where it is not valid), with what the policy declares: its
        continuation, whether the points are frozen at their own convergence
        (``stacked``, with the sharp watch), the rule's memory after a first phase
        (``longer_resolve_memory``), the early stop of a single point's runs
        (``fail_fast``); and the state's callback, first stacked solve and its progress
        callback."""
        problems, opts, policy = self.problems, self.opts, self.policy
        sym, _ = map_features(problems[0], opts)
        log_chart = any(map_features(p, opts)[1] for p in problems)  # (each point's chart)
        freezing = solve_freezing(opts, policy.sharp_watch) if policy.stacked else NO_FREEZING
        T = FixedPointMap(
            problems,
            rule,
            symmetry=sym,
            log_chart=log_chart,
            freezing=freezing,
            prior_panels=opts.prior_panels,
        )
        if x0 is None:  # (the cold start)
            x0 = T.start()
            if not T.is_valid(x0):
                return batch_solve.failed_run(T)
        fail_fast = policy.fail_fast
        return batch_solve.run_points(
            T,
            x0,
            opts,
            continuation=policy.continuation,
            stacked=policy.stacked,
            memory=self._resolve_memory(),
            history=self.history if self.n_points == 1 else {},
            callback=self.callback,
            watch=None if fail_fast is None else fail_fast.watch,
            first_solve=self.first_solve,
            on_converged=self.on_converged,
        )

    def _resolve_memory(self) -> int:
        """The Anderson memory of a run from a fixed point (after a first phase, and the
        estimate's re-solves): :func:`~gaussmix.theory.solve.estimate.resolve_memory` where
        the policy declares ``longer_resolve_memory``, else the options' own."""
        opts = self.opts
        return resolve_memory(opts) if self.policy.longer_resolve_memory else opts.anderson

    def estimate(self, T: FixedPointMap, out: IterationOutcome, kind: ErrorEstimate) -> Estimate:
        """The estimate of the one point at ``out`` of ``kind``
        (:func:`~gaussmix.theory.solve.batch_solve.estimate_points` of a map of one point)."""
        (est,) = self._estimates(T, out, [out.n_iter], [out.residual], kind, self.history)
        return est

    def _estimates(
        self,
        T: FixedPointMap,
        out: IterationOutcome,
        n_iter: Sequence[int],
        residual: Sequence[float],
        kind: ErrorEstimate,
        history: dict | None,
    ) -> list[Estimate]:
        """:func:`~gaussmix.theory.solve.batch_solve.estimate_points` of the points of
        ``T`` at ``out``, with the re-solves the policy declares."""
        policy = self.policy
        return batch_solve.estimate_points(
            T,
            out,
            n_iter,
            residual,
            self.opts,
            kind=kind,
            stacked=policy.stacked,
            predicted=policy.predicted_start,
            merge=policy.merge,
            own_pairs=policy.own_pairs,
            memory=self._resolve_memory(),
            history=history,
            callback=self.callback,
        )

    # ----------------------------------------------------------------- the steps' work
    def iterate(self, rule: QuadratureRule) -> None:
        """The fixed point with ``rule`` after the policy's continuation, of every point
        from its starting state (a single point's, whose warm start's iterations count; the
        cold start of a curve's stacked points, each frozen at its own convergence): each
        point's evaluations (``n_iter``) and own residual (``residual``); ``failed`` where
        a stacked run fails."""
        T, out, n_iter, residual = self.run_points(rule, self.x0)
        if out is None:
            self.failed = True
            return
        self.T, self.n_iter, self.residual = T, n_iter + self.n_warm, residual
        self.out = out if self.n_points != 1 else replace(out, n_iter=int(self.n_iter[0]))

    def switch(self, sharps: list[QuadratureRule | None]) -> None:
        """The points with a sharp rule (``sharps``, one a point; None: its rule stays)
        solved again with it from their fixed point, with the secant pairs of the iteration
        that reached it."""
        if self.policy.stacked:
            with caught() as log:
                self.groups = self._grouped(sharps)
            self.log.extend(log)
            return
        (sharp,) = sharps
        if sharp is None:
            return
        self.history.setdefault(sharp, self.out.anderson)
        T, out2 = self.run(sharp, self.out.x)
        self.T, self.out = T, replace(out2, n_iter=self.out.n_iter + out2.n_iter)

    def estimate_errors(self, kind: Callable[[QuadratureRule], ErrorEstimate]) -> None:
        """Each point's observables at its fixed point and their integration error, of the
        policy's ``kind`` for the rule the point ended with (``ests``; a stacked solve's:
        None after a failure)."""
        if not self.policy.stacked:
            self.est = self.estimate(self.T, self.out, kind(self.T.rule))
            return
        if self.failed:
            return
        with caught() as log:
            if self.groups is None:  # (no sharp switch: every point on its rule)
                self.groups = self._grouped([None] * self.n_points)
            ests: list = [None] * self.n_points
            for g in self.groups:
                at = IterationOutcome(
                    g.x, 0, 0.0, IterationStatus.CONVERGED, "converged", g.history, g.memory
                )
                done = self._estimates(g.T, at, g.n_iter, g.residual, kind(g.T.rule), None)
                if any(est.status is not IterationStatus.CONVERGED for est in done):
                    self.failed = True
                    break
                for i, est in zip(g.idx, done):
                    ests[i] = est
        self.log.extend(log)
        if not self.failed:
            self.ests = ests

    # ----------------------------------------------------------------- stacked points
    def _grouped(self, sharps: list[QuadratureRule | None]) -> list[PointGroup] | None:
        """The stacked points by the rule ``sharps`` gives each, those with a sharp rule
        solved again with it, stacked (None after a failure)."""
        T, out, opts, problems = self.T, self.out, self.opts, self.problems
        rec = out.aux.record
        by_rule: dict = {}  # the rule of each point -> its points
        for i, sharp in enumerate(sharps):
            by_rule.setdefault(sharp, []).append(i)
        groups = []
        for sharp, idx in by_rule.items():
            T_g, x_g, n_iter, res_g = T, out.x, self.n_iter[idx], self.residual[idx]
            mem_g = out.aux  # (the memory of the map's last evaluation)
            hist = T.pairs(rec, out.anderson, idx, opts.anderson, own=self.policy.own_pairs)
            if len(idx) < len(problems):  # the group's points alone
                T_g = T.like([problems[i] for i in idx], T.rule)
                x_g, mem_g = T.points_of(out.x, idx), None
            if sharp is not None:  # in the sharp regime: its rule, from there
                T_s = T_g.like(T_g.problems, sharp, solve_freezing(opts))
                out_g = batch_solve.converged_solve(
                    T_s, x_g, hist, opts, memory=T_s.shared(T_g, mem_g)
                )
                if out_g is None:
                    self.failed = True
                    return None
                T_g, mem_g, rec_g = T_s, out_g.aux, out_g.aux.record
                x_g, n_iter = out_g.x, n_iter + T_g.own_iterations(rec_g, out_g.n_iter)
                res_g = np.where(rec_g.frozen, rec_g.residuals, out_g.residual)
                hist = T_g.pairs(rec_g, out_g.anderson, list(range(len(idx))), opts.anderson)
            groups.append(PointGroup(idx, T_g, x_g, n_iter, res_g, mem_g, hist))
        return groups
