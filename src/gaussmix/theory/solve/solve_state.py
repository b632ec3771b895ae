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
:func:`~gaussmix.theory.solve.batch_solve.estimate_points`; and one sharp switch
(:meth:`SolveState.switch`): the points grouped by the rule each ends with, each group with
a sharp rule solved again by the one run from its fixed point, a single point a group of
one.  What differs between a single point's and a curve's is what the policy declares, read
by the state and handed to them: :attr:`Declared.stacked` (each point frozen at its own
convergence, the curve's first solve; or one point's iteration, with its early stop), the
continuation, the predicted start, the merged tighter run, whose secant pairs, and the
memory of a run from a fixed point.  Where the warnings of the work go is the caller's
(``log``: held for a curve's points until every point stands).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from typing import Protocol

import numpy as np

from ...core.caught import caught
from ..numerics.quadrature import QuadratureRule
from ..problem.problem import Problem
from . import batch_solve
from .batch import NO_FREEZING, Freezing, Watch
from .batch_solve import FirstSolve, plain_first_solve, solve_freezing
from .fixed_point import FixedPointMap, MapMemory, map_features
from .iteration import AndersonState, IterationOutcome, IterationStatus
from .memory import AndersonMemory
from .options import SolverOptions
from .refinement import (
    Continuation,
    ErrorEstimate,
    Estimate,
    prior_refinement_map,
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
        """Whether each point of a run is frozen at its own convergence, its first run the
        curve's first solve and a failed run failing the points (a curve's points), rather
        than one point's iteration."""

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
    def coarse_stop(self) -> bool:
        """Whether a single point's coarser first phase stops near its rule's own error."""

    @property
    def coarse_prior_panels(self) -> int | None:
        """The prior's panels in a single point's coarser first phase (None: the solve's)."""

    @property
    def prior_stop(self) -> bool:
        """Whether the first run stops near the prior's first rule's own error (the prior's
        refinement re-solves from it directly)."""

    @property
    def memory(self) -> AndersonMemory:
        """The Anderson memory of every run, by phase and rule, handed to the run and the
        estimate."""

    @property
    def merge(self) -> bool:
        """Whether a stacked estimate's refined re-solve goes on to the tighter tolerance in
        the same iteration."""

    @property
    def own_pairs(self) -> bool:
        """Whether the stacked re-solves start from each point's own secant pairs."""


@dataclass
class PointGroup:
    """The points of a state on one rule after the sharp switch (indices ``idx``; a single
    point's, a group of one): their map, (stacked) state, each point's evaluations and
    residual, the map's memory of its last evaluation (None: a fresh one), the secant pairs
    the estimate starts from, and the status and message of the run that reached the state
    (a single point's run may end not converged: its estimate is the failure's)."""

    idx: list[int]
    T: FixedPointMap
    x: np.ndarray
    n_iter: np.ndarray
    residual: np.ndarray
    memory: MapMemory | None
    history: AndersonState | None
    status: IterationStatus = IterationStatus.CONVERGED
    message: str = "converged"


@dataclass
class SolveState:
    """What the steps of a solve hand on, for ``P >= 1`` points (``problems``).

    Given: the policy (:class:`Declared`), the points' problems, the options, the
    iteration's callback and the secant pairs by rule (``history``; a single point's),
    the starting state ``x0`` (a single point's; a stacked solve starts cold), the first
    stacked solve (``first_solve``, :data:`~gaussmix.theory.solve.batch_solve.FirstSolve`:
    the continuation's restart of a sweep's slow points) and its progress callback
    (``on_converged``), and where the warnings of the switch and the estimates go
    (``log``: a list that holds them for the caller to give once every point stands, a
    curve's; None: as they come, a single solve's).  Handed on: the map and outcome of the
    last fixed-point run of :meth:`iterate` or the warm start (``T``, ``out``; each point's
    evaluations ``n_iter`` and residual ``residual``), the points by the rule each ends
    with after the sharp switch or the estimate (``groups``), whether the warm start's
    solve stands (``warm_kept``) and its iterations (``n_warm``), and once made each
    point's estimate (``ests``); ``failed`` where a run fails the points or a point's
    estimate did not converge (the points after it then not estimated); ``at_finer``: the
    map of the prior's first refinement evaluated at the first run's end, ``(x, T'(x),
    memory)``, where the policy's ``prior_stop`` stopped that run at it (the refinement's
    first evaluation, :func:`~gaussmix.theory.solve.refinement.refine_prior`)."""

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
    log: list | None = None
    n_warm: int = 0
    warm_kept: bool = False
    at_finer: tuple | None = None

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
        """The first run of the state's points with ``rule`` from ``x0`` (None: the map's
        cold start of every point; None is returned for the outcome where it is not valid),
        :meth:`_run` of a map of the state's points (each point's chart), with the state's
        first stacked solve and its progress callback."""
        problems, opts = self.problems, self.opts
        sym, _ = map_features(problems[0], opts)
        log_chart = any(map_features(p, opts)[1] for p in problems)  # (each point's chart)
        T = FixedPointMap(
            problems,
            rule,
            symmetry=sym,
            log_chart=log_chart,
            freezing=self._freezing(),
            prior_panels=opts.prior_panels,
        )
        if x0 is None:  # (the cold start)
            x0 = T.start()
            if not T.is_valid(x0):
                return batch_solve.failed_run(T)
        finer = prior_refinement_map(problems[0], T) if self.policy.prior_stop else None
        history = self._pairs_by_rule()
        return self._run(T, x0, history, self.first_solve, self.on_converged, finer)

    def _at_finer(self, known: tuple) -> None:
        """Keep the finer prior map's evaluation at the first run's end (``at_finer``)."""
        self.at_finer = known

    def _freezing(self) -> Freezing:
        """The freezing of the state's maps: each point frozen at its own convergence, with
        the sharp watch, where the policy declares ``stacked``; else none."""
        policy = self.policy
        return solve_freezing(self.opts, policy.sharp_watch) if policy.stacked else NO_FREEZING

    def _pairs_by_rule(self) -> dict:
        """The secant pairs by rule that a run starts from and leaves its own in: a state of
        one point's ``history`` (the solve's, which a curve hands to its next point); a
        fresh dict for a state of several points (pairs of a stacked state are of its
        points alone: a group of them has other components)."""
        return self.history if self.n_points == 1 else {}

    def _run(
        self,
        T: FixedPointMap,
        x0: np.ndarray,
        history: dict,
        first_solve: FirstSolve | None,
        on_converged: Callable[[int], None] | None,
        finer: FixedPointMap | None = None,
    ) -> tuple[FixedPointMap, IterationOutcome | None, np.ndarray, np.ndarray]:
        """:func:`~gaussmix.theory.solve.batch_solve.run_points` of the points of ``T``
        from ``x0`` with the secant pairs by rule ``history``, with what the policy
        declares: its continuation, whether the points are frozen at their own convergence
        (``stacked``), the Anderson memory of each of its phases (``memory``),
        the early stop of a single point's runs (``fail_fast``); and the state's callback.
        ``first_solve``: the first stacked solve (None: a run from a fixed point, from the
        pairs in ``history``) and its progress callback ``on_converged``; the early stops of
        a single point's coarser runs near their rule's error (``coarse_stop``, and
        ``finer``: the map of the prior's first refinement where the policy declares
        ``prior_stop``)."""
        policy = self.policy
        fail_fast = policy.fail_fast
        return batch_solve.run_points(
            T,
            x0,
            self.opts,
            continuation=policy.continuation,
            stacked=policy.stacked,
            memory=policy.memory,
            history=history,
            callback=self.callback,
            watch=None if fail_fast is None else fail_fast.watch,
            first_solve=first_solve,
            on_converged=on_converged,
            coarse_stop=policy.coarse_stop and not policy.stacked,
            coarse_prior_panels=None if policy.stacked else policy.coarse_prior_panels,
            finer=finer,
            on_finer=None if finer is None else self._at_finer,
        )

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
            memory=policy.memory,
            history=history,
            callback=self.callback,
        )

    def _held(self) -> AbstractContextManager:
        """Where the warnings of the state's work go: held in ``log`` where the caller gives
        one (a curve's points, given once every point stands), else as they come."""
        return nullcontext() if self.log is None else _held_in(self.log)

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

    def stand(self, T: FixedPointMap, out: IterationOutcome) -> None:
        """The run ``out`` of the one point (the warm start's) as the state's last, in place
        of :meth:`iterate`'s (``warm_kept``)."""
        self._one("stand")
        self.T, self.out, self.warm_kept = T, out, True
        self.n_iter, self.residual = np.array([out.n_iter]), np.array([out.residual])

    def switch(self, sharps: list[QuadratureRule | None]) -> None:
        """The points with a sharp rule (``sharps``, one a point; None: its rule stays)
        solved again with it from their fixed point, with the secant pairs of the iteration
        that reached it: the points grouped by the rule each ends with (``groups``;
        :meth:`_grouped`), a single point a group of one."""
        with self._held():
            self.groups = self._grouped(sharps)

    def estimate_errors(self, kind: Callable[[QuadratureRule], ErrorEstimate]) -> None:
        """Each point's observables at its fixed point and their integration error, of the
        policy's ``kind`` for the rule the point ended with, group by group (``ests``; a
        point's not converged: its failed estimate, and ``failed``, the groups after it not
        estimated)."""
        if self.failed:
            return
        ests: list = [None] * self.n_points
        with self._held():
            if self.groups is None:  # (no sharp switch: every point on its rule)
                self.groups = self._grouped([None] * self.n_points)
            for g in self.groups:
                at = IterationOutcome(g.x, 0, 0.0, g.status, g.message, g.history, g.memory)
                history = self._pairs_by_rule()
                done = self._estimates(g.T, at, g.n_iter, g.residual, kind(g.T.rule), history)
                for i, est in zip(g.idx, done):
                    ests[i] = est
                if any(est.status is not IterationStatus.CONVERGED for est in done):
                    self.failed = True
                    break
        self.ests = ests

    # ----------------------------------------------------------------- the groups
    def _grouped(self, sharps: list[QuadratureRule | None]) -> list[PointGroup] | None:
        """The points by the rule ``sharps`` gives each (None: the rule of the last run), the
        points with a sharp rule solved again with it from their fixed point by the one run
        (:meth:`_run`, after the policy's continuation, from the secant pairs of the
        iteration that reached it, each point's own where the policy declares
        ``own_pairs``); None after a run that fails (``failed``).  A state of one point is
        a group of one, whose run starts from the solve's own pairs of the sharp rule
        where an earlier solve left them (``history``)."""
        T, out, opts, problems = self.T, self.out, self.opts, self.problems
        rec = None if out.aux is None else out.aux.record  # (None: a failed first evaluation)
        by_rule: dict = {}  # the rule of each point -> its points
        for i, sharp in enumerate(sharps):
            by_rule.setdefault(sharp, []).append(i)
        groups = []
        for sharp, idx in by_rule.items():
            T_g, x_g, n_iter, res_g = T, out.x, self.n_iter[idx], self.residual[idx]
            mem_g = out.aux  # (the memory of the map's last evaluation)
            status, message = out.status, out.message
            hist = out.anderson  # (all the points on their rule: the estimate's own pairs)
            if rec is not None and (sharp is not None or len(idx) < len(problems)):
                hist = T.pairs(rec, out.anderson, idx, opts.anderson, own=self.policy.own_pairs)
            if len(idx) < len(problems):  # the group's points alone
                T_g = T.like([problems[i] for i in idx], T.rule)
                x_g, mem_g = T.points_of(out.x, idx), None
            if sharp is not None:  # in the sharp regime: its rule, from there
                T_s = T_g.like(T_g.problems, sharp, self._freezing())
                pairs = self._pairs_by_rule()
                pairs.setdefault(sharp, hist)
                T_s, out_g, n_s, res_g = self._run(T_s, x_g, pairs, None, None)
                if out_g is None:
                    self.failed = True
                    return None
                T_g, mem_g, x_g, n_iter = T_s, out_g.aux, out_g.x, n_iter + n_s
                status, message, hist = out_g.status, out_g.message, out_g.anderson
                if out_g.aux is not None:
                    rec_g, mine = out_g.aux.record, list(range(len(idx)))
                    own = self.policy.own_pairs
                    hist = T_g.pairs(rec_g, out_g.anderson, mine, opts.anderson, own=own)
            groups.append(PointGroup(idx, T_g, x_g, n_iter, res_g, mem_g, hist, status, message))
        return groups


@contextmanager
def _held_in(log: list) -> Iterator[None]:
    """The warnings of the block held in ``log`` (:func:`~gaussmix.core.caught.caught`)."""
    with caught() as got:
        yield
    log.extend(got)
