"""The solve policy: every decision of a solve of Theorem 1's fixed point, declared in one place.

A solve is a short sequence of steps, and which steps, with which quadrature rule and which
error estimate, depends on the kind of problem (closed-form or quadrature channel, the
number of effective outputs, exchangeable clusters, the prior's own integrals, the size of
a dense prior) and on the options.  :func:`policy_for` decides it once per problem and
returns a frozen :class:`SolvePolicy`; :func:`~gaussmix.theory.solve.solver.solve_problem` is
one loop over its :attr:`SolvePolicy.steps` (:meth:`SolvePolicy.loop`).  The points of a
curve solved as one stacked state take the same loop over the steps
:func:`policy_for_points` declares (:class:`Iterate`, :class:`SharpSwitch`,
:class:`EstimateErrors`), with the same decisions, on the same state with a point axis
(:class:`~gaussmix.theory.solve.solve_state.SolveState`, of one point in a single solve;
:func:`~gaussmix.theory.solve.solver.solve_batch`).  The steps, in the order they run:

==================  =======================================================================
step                what it does, and when the policy takes it
==================  =======================================================================
:class:`WarmStart`  from a given starting state (a curve's neighbour, a user's ``init``),
                    the softmax-normaliser rule of the sharp regime straight away
                    (K = 5, 6 cross-entropy of exchangeable clusters); the solve below is
                    skipped where the sharp rule at its fixed point is that same rule
:class:`Iterate`    the fixed point with the first rule (:func:`channel_rule`), after the
                    policy's :class:`~gaussmix.theory.solve.refinement.Continuation` (a coarser
                    rule first, or the prior in single precision first)
:class:`SharpSwitch`  where the automatic smooth-regime rule meets a sharp state (an
                    eigenvalue of some ``Q_c`` above ``SMOOTH_Q_MAX``), the sharp regime's
                    rule from there (:func:`sharp_rule`)
:class:`EstimateErrors`  the observables of Theorem 2 and their integration error, of the
                    kind :func:`estimate_kind` gives for the rule the solve ended with:
                    re-solves with refined rules, replicates of a randomised rule, or none
:class:`NormaliserSwitch`  K = 4 cross-entropy of exchangeable clusters near ``alpha*_4``:
                    where the panels' estimate would warn, the normaliser's integrals
                    (:func:`normaliser_switch`), kept if their estimate is smaller
:class:`RefinePrior`  the multi-output lasso: the error of the prior's own rule, by
                    refinement (:func:`~gaussmix.theory.solve.refinement.refine_prior`)
:class:`Fallback`   a cold solve that failed (:func:`verdict`) handed to
                    :attr:`SolvePolicy.fallback`: the :class:`LambdaHomotopy` from a
                    larger (or smaller) ``lam`` to the problem's, and the
                    :class:`~gaussmix.theory.solve.homotopy.AlphaHomotopy` from a larger
                    ``alpha`` (first where the weights were unbounded)
==================  =======================================================================

The steps hold no numerics: they call the work of one state with a point axis below the
policy (:class:`~gaussmix.theory.solve.solve_state.SolveState`: one point, or a curve's
stacked points; the steps of one point declare so, :attr:`Step.points`), with the
decisions made here, and read
the rules' declared capabilities (:class:`~gaussmix.theory.numerics.quadrature.QuadratureRule`:
``randomised``, ``computes_moments``, ``needs_symmetry``, ``seed``, ``fallback``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import ClassVar

import numpy as np

from ..channel.normaliser import NormaliserRule, normaliser_serves
from ..numerics import tolerances
from ..numerics.linalg import sym_eigvals
from ..numerics.quadrature import MAX_QUADRATURE_NODES, GaussHermite, QuadratureRule, auto_rule
from ..numerics.tolerances import (
    DEGENERATE_BIAS_STEP,
    RANDOMISED_MIXING_MEMORY,
    SMOOTH_Q_MAX,
    STALL_GAIN,
    STALL_WINDOW,
    integration_warning_threshold,
)
from ..prior.lasso import COARSE_OUTER_PANELS, START_MAX_LAM
from ..prior.prior import prior_quadrature_dim, single_precision_phase
from ..problem.problem import Problem
from ..problem.symmetry import (
    EXCHANGEABLE_ORDER,
    EXCHANGEABLE_PANEL_DIMS,
    ExchangeablePanels,
    symmetric_rule,
)
from .batch import SharpPoint
from .bias import bias_condition_step
from .estimate import resolve_memory
from .fixed_point import (
    FixedPointMap,
    needs_quadrature,
)
from .homotopy import AlphaHomotopy, Fallbacks, LambdaHomotopy
from .iteration import IterationOutcome, IterationState, IterationStatus
from .memory import AndersonMemory, Phase
from .options import SolverOptions
from .refinement import (
    Continuation,
    ErrorEstimate,
    Estimate,
    failed_observables,
    refine_prior,
)
from .solve_state import SolveState
from .state import unpack_state

__all__ = [
    "SolvePolicy",
    "SolveState",
    "anderson_memory",
    "Step",
    "WarmStart",
    "Iterate",
    "SharpSwitch",
    "EstimateErrors",
    "NormaliserSwitch",
    "RefinePrior",
    "Fallback",
    "FallbackHook",
    "FailFast",
    "policy_for",
    "policy_for_points",
    "chain_predecessor",
    "own_refined_pairs",
    "verdict",
    "channel_rule",
    "continuation",
    "estimate_kind",
    "sharp_rule",
    "sharp_rules",
    "SharpPoint",
    "SharpWatch",
    "SHARP_IMAGE_FACTOR",
    "normaliser_switch",
]


# --------------------------------------------------------------------------- the steps
class Step:
    """One step of a solve: :meth:`run` reads and updates the
    :class:`~gaussmix.theory.solve.solve_state.SolveState`, of one point or of a curve's
    stacked points.

    Attributes
    ----------
    points : bool
        Whether the step works on a state of any number of points (:class:`Iterate`,
        :class:`SharpSwitch`, :class:`EstimateErrors`), rather than on one point's alone
        (the warm start, the normaliser switch, the prior's refinement and the fallback):
        :meth:`SolvePolicy.loop` refuses a step of one point on a state of several.
    """

    points: ClassVar[bool] = False

    def run(self, s: SolveState) -> None:
        """Do the step."""
        raise NotImplementedError


@dataclass(frozen=True)
class WarmStart(Step):
    """From a given starting state in the sharp regime, the rule :func:`sharp_rule` chooses
    there where it is a :class:`~gaussmix.theory.channel.normaliser.NormaliserRule` (K = 5, 6
    cross-entropy of exchangeable clusters), instead of the smooth-regime rule's solve first.

    In the sharp regime the smooth-regime rule's fixed point is far from the normaliser's
    (the reason for the switch), so the normaliser's solve from it costs as many iterations
    as from a cold start, while a neighbouring point's state is close (measured along
    Fig. 3 left's K = 5 curve: 12 evaluations at 6 nodes and 4 at 8 from the Gauss-Hermite
    fixed point, after 20 of Gauss-Hermite).  The solve stands (and :class:`Iterate` and
    :class:`SharpSwitch` are skipped) only where :func:`sharp_rule` chooses the same rule at
    its fixed point; otherwise the usual path runs from the starting state."""

    def run(self, s: SolveState) -> None:
        rule = s.policy.rule
        warm = sharp_rule(s.problem, rule, s.x0, symmetric=s.policy.symmetric)
        if not isinstance(warm, NormaliserRule):
            return
        T, out = s.run(warm, s.x0)
        s.n_warm = out.n_iter
        symmetric = T.symmetry is not None
        if out.converged and sharp_rule(s.problem, rule, out.x, symmetric=symmetric) == warm:
            s.stand(T, out)
        else:
            s.history.pop(warm, None)


@dataclass(frozen=True)
class Iterate(Step):
    """The fixed point with ``rule`` from the starting state, after the policy's
    continuation; the warm start's iterations count.  Of a curve's stacked points: each
    point frozen at its own convergence
    (:meth:`~gaussmix.theory.solve.solve_state.SolveState.iterate`)."""

    rule: QuadratureRule

    points: ClassVar[bool] = True

    def run(self, s: SolveState) -> None:
        if s.warm_kept:
            return
        s.iterate(self.rule)


@dataclass(frozen=True)
class SharpSwitch(Step):
    """Where the solve converged with the automatic smooth-regime rule to a sharp state,
    the sharp regime's rule from that state, with its secant pairs: the test of each
    point (:func:`sharp_rules`), the points grouped by the rule each ends with, a single
    point a group of one
    (:meth:`~gaussmix.theory.solve.solve_state.SolveState.switch`)."""

    points: ClassVar[bool] = True

    def run(self, s: SolveState) -> None:
        if s.warm_kept or not s.converged:
            return
        s.switch(sharp_rules(s.T, s.x, s.opts))


@dataclass(frozen=True)
class EstimateErrors(Step):
    """The observables at the fixed point and their integration error (the kind of
    :func:`estimate_kind` for the rule the solve ended with), each point of a batch its
    own (:meth:`~gaussmix.theory.solve.solve_state.SolveState.estimate_errors`)."""

    points: ClassVar[bool] = True

    def run(self, s: SolveState) -> None:
        s.estimate_errors(lambda rule: estimate_kind(s.problems[0], s.opts, rule))


@dataclass(frozen=True)
class NormaliserSwitch(Step):
    """Where :func:`normaliser_switch` gives a rule, the solve again with it from the fixed
    point; its answer is kept where it converges with a smaller estimate of the test error
    and training loss."""

    def run(self, s: SolveState) -> None:
        switch = normaliser_switch(s.problem, s.opts, s.est)
        if switch is None:
            return
        T, out2 = s.run(switch, s.est.x)
        out2 = replace(out2, n_iter=s.est.n_iter + out2.n_iter)
        est2 = s.estimate(T, out2, estimate_kind(s.problem, s.opts, T.rule))
        if est2.status is IterationStatus.CONVERGED and _worst(est2) < _worst(s.est):
            s.est = est2


@dataclass(frozen=True)
class RefinePrior(Step):
    """The integration error of the prior's own rule (the multi-output lasso), by
    refinement: :func:`~gaussmix.theory.solve.refinement.refine_prior`."""

    def run(self, s: SolveState) -> None:
        memory = s.policy.memory.of(Phase.PRIOR, s.est.T.rule)
        s.est = refine_prior(
            s.problem, s.est, s.opts, s.callback, s.history, memory, at_start=s.at_finer
        )


#: a fallback of a failed solve: given the state of the failed solve, a converged
#: :class:`~gaussmix.theory.solve.refinement.Estimate` of the same problem, or, where it
#: fails too, the failed estimate with its own account in ``Estimate.fallback``
FallbackHook = Callable[[SolveState], "Estimate"]


@dataclass(frozen=True)
class Fallback(Step):
    """Where the solve failed (:func:`verdict`: not converged, or converged to a spurious
    or degenerate point), ``hook``'s estimate instead (where the hook fails too, the failed
    estimate with the hook's account in ``Estimate.fallback``)."""

    hook: FallbackHook

    def run(self, s: SolveState) -> None:
        status, _ = verdict(s.problem, s.opts, s.est)
        if status is not IterationStatus.CONVERGED:
            s.est = self.hook(s)


@dataclass(frozen=True)
class FailFast:
    """The early stop of a fixed-point run that will not converge, where a fallback waits.

    Every :attr:`window` evaluations the run's smallest step so far
    (:attr:`~gaussmix.theory.solve.iteration.IterationState.best`, ``max |T(x) - x| /
    max(1, |x|)``: the same for every caller, with or without a callback) is noted; where
    it has not fallen by the factor :attr:`gain` over the last two windows the run stops
    with the status :attr:`~gaussmix.theory.solve.iteration.IterationStatus.STALLED`
    instead of spending ``max_iter`` evaluations (3000 by default) before the fallback
    starts.  A run that converges at a rate better than 1/2 in 200 evaluations is not
    touched; one that circles at a constant residual is stopped whether or not it would
    have escaped later (on the random problems of seed 0, seven such direct solves of
    424 to 1580 evaluations: the homotopy finds the same fixed points, within 1.4e-9); a
    diverging run (a bias or an overlap that grows) never improves on its first steps.

    Attributes
    ----------
    window : int
        Evaluations between two looks
        (:data:`~gaussmix.theory.numerics.tolerances.STALL_WINDOW`).
    gain : float
        The factor by which the smallest step must fall in two windows
        (:data:`~gaussmix.theory.numerics.tolerances.STALL_GAIN`).
    """

    window: int = STALL_WINDOW
    gain: float = STALL_GAIN

    def watch(self) -> Callable[[IterationState], IterationState | None]:
        """A fresh ``on_step`` of :func:`~gaussmix.theory.solve.iteration.iterate` for one
        run: None while it progresses, the state with its
        :class:`~gaussmix.theory.solve.iteration.IterationOutcome` once it has stalled."""
        marks: list[float] = []

        def on_step(s: IterationState) -> IterationState | None:
            if s.n_iter % self.window:
                return None
            marks.append(s.best)
            if len(marks) < 3 or marks[-1] < self.gain * marks[-3]:
                return None
            res = s.exact_residual()
            text = (
                f"stalled after {s.n_iter} iterations (residual {res:.3g}; the smallest "
                f"step {marks[-1]:.3g} was {marks[-3]:.3g} {2 * self.window} iterations "
                "before)"
            )
            out = IterationOutcome(
                s.x, s.n_iter, res, IterationStatus.STALLED, text, s.anderson, s.aux
            )
            return s._replace(outcome=out)

        return on_step


def verdict(problem: Problem, opts: SolverOptions, est: Estimate) -> tuple[IterationStatus, str]:
    """The status and message of a solve's estimate after the result's checks: a state
    that converged but is not valid (a ``Q_c`` or ``V_c`` not positive definite) is
    spurious; one whose bias condition holds only in absolute terms
    (:func:`~gaussmix.theory.solve.fixed_point.bias_condition_step` above
    ``max(DEGENERATE_BIAS_STEP, 100 tol)``) is degenerate: the channel's moments
    underflowed and the weights collapsed."""
    st, text = est.status, est.message
    if st is IterationStatus.CONVERGED and not est.T.is_valid(est.x):
        st = IterationStatus.NOT_POSITIVE_DEFINITE
        text = "spurious fixed point: an overlap matrix Q_c or V_c is not positive definite"
    if st is IterationStatus.CONVERGED:
        ob = (
            est.obs
            if est.obs is not None
            else failed_observables(problem, est.T, est.x, est.memory)
        )
        step = bias_condition_step(ob.hats[1], ob.hats[2], ob.state[3])
        if step > max(DEGENERATE_BIAS_STEP, 100.0 * opts.tol):
            st = IterationStatus.DEGENERATE
            text = (
                "degenerate fixed point: the bias condition sum_c rho_c E[f_c] = 0 holds "
                f"only in absolute terms (its Newton step is {step:.3g} relative): the "
                "channel's moments underflowed and the weights collapsed"
            )
    return st, text


def _worst(est: Estimate) -> float:
    """The larger estimate of the test error and the training loss (the warning's)."""
    return max(est.errors["test_error"], est.errors["train_loss"])


# --------------------------------------------------------------------------- the policy
@dataclass(frozen=True)
class SolvePolicy:
    """The declared steps of a solve of one problem with one set of options
    (:func:`policy_for`).

    Attributes
    ----------
    rule : QuadratureRule
        The channel's first rule (:func:`channel_rule`; a placeholder for a closed-form
        channel, which integrates nothing).
    symmetric : bool
        Whether the maps integrate cluster 0's channel for all exchangeable clusters.
    continuation : Continuation
        The cheaper first phase of every fixed-point run (:func:`continuation`).
    warm_start : bool
        Whether the :class:`WarmStart` step is taken (a given starting state, and a sharp
        regime whose rule is the normaliser's).
    sharp_switch : bool
        Whether the :class:`SharpSwitch` step is taken (an automatic smooth-regime rule with
        a different sharp-regime rule).
    estimate : ErrorEstimate
        The kind of error estimate with :attr:`rule` (:func:`estimate_kind`; a switched
        rule gets its own kind from the same function).
    normaliser_switch : bool
        Whether the :class:`NormaliserSwitch` step is taken.
    prior_refinement : bool
        Whether the :class:`RefinePrior` step is taken.
    memory : AndersonMemory
        The Anderson memory of every run of the solve, by phase and rule
        (:func:`anderson_memory`): read by the state and handed to each run, estimate and
        refinement.
    fail_fast : FailFast or None
        The early stop of a fixed-point run that stalls, where a fallback waits (set with
        :attr:`fallback`); None: every run may take ``max_iter`` evaluations.
    fallback : FallbackHook or None
        What a failed solve is handed to (:class:`Fallback`): the :class:`LambdaHomotopy`
        of a cold solve with ``opts.fallback``; None (a warm start, whose caller has its
        own continuation, or ``fallback=False``): the failure is reported.
    sharp_watch : SharpWatch or None
        Of a curve's stacked points with two outputs (:func:`policy_for_points`): the
        stop of the stacked solve as soon as its first point (every point, without an
        estimate by refinement) is in the sharp regime, where the curve goes point by
        point instead of a :class:`SharpSwitch`; None: not watched.
    merge : bool
        Of a curve's stacked points: whether each refined re-solve of the estimate goes on
        to the tighter tolerance in the same iteration
        (:func:`~gaussmix.theory.solve.batch_solve.refined_solve`: two outputs, and a
        sweep over lambda), rather than in a second one as a single point's.
    own_pairs : bool
        Of a curve's stacked points: whether the re-solves of the sharp switch and the
        estimate start from each point's own secant pairs (one output) or the stacked
        history (two; :func:`own_refined_pairs`).
    predicted_start : bool
        Whether each refined re-solve of the estimate starts from the predicted start
        (:func:`~gaussmix.theory.solve.estimate.predicted_start`: one step of the last
        solve's own iteration, a single point's), rather than from the fixed point (a
        curve's stacked points).
    coarse_stop : bool
        Whether a single point's coarser first phase (:attr:`continuation`'s coarser channel
        rule) stops near its rule's own error rather than at ``tol``
        (:func:`~gaussmix.theory.solve.iteration.iterate_to_rule_error`): a prior integrated
        by quadrature (the multi-output lasso), whose evaluation costs the same at either
        channel rule and is most of the map's cost.
    coarse_prior_panels : int or None
        The prior's panels (its rule of lines) in a single point's coarser first phase
        (:func:`coarse_prior_panels`: the multi-output lasso of two effective outputs at
        small ``lam``); None: the solve's own.
    prior_stop : bool
        Whether the :class:`Iterate` step's run stops near the prior's first rule's own error
        too, against the map of the prior's first refinement, which re-solves from there
        directly (:func:`~gaussmix.theory.solve.refinement.prior_refinement_map`): a prior
        refinement whose first refinement is made, and a channel in closed form (no channel
        estimate between the two that would read the run's fixed point).
    stacked : bool
        Whether each point of the state's runs is frozen at its own convergence, the runs
        the curve's (its first solve, a failed run failing the points; a curve's points,
        :func:`policy_for_points`), rather than one point's iteration (:func:`policy_for`;
        the sharp switch is one code for both, its points grouped by rule): read by the
        :class:`~gaussmix.theory.solve.solve_state.SolveState` and handed to the one run
        and estimate (:func:`~gaussmix.theory.solve.batch_solve.run_points`,
        :func:`~gaussmix.theory.solve.batch_solve.estimate_points`).
    """

    rule: QuadratureRule
    symmetric: bool
    continuation: Continuation
    warm_start: bool
    sharp_switch: bool
    estimate: ErrorEstimate
    normaliser_switch: bool
    prior_refinement: bool
    memory: AndersonMemory
    fallback: FallbackHook | None = None
    fail_fast: FailFast | None = None
    sharp_watch: SharpWatch | None = None
    merge: bool = False
    own_pairs: bool = True
    predicted_start: bool = True
    coarse_stop: bool = False
    coarse_prior_panels: int | None = None
    prior_stop: bool = False
    stacked: bool = False

    @property
    def steps(self) -> tuple[Step, ...]:
        """The steps of the solve, in order."""
        steps: list[Step] = []
        if self.warm_start:
            steps.append(WarmStart())
        steps.append(Iterate(self.rule))
        if self.sharp_switch:
            steps.append(SharpSwitch())
        steps.append(EstimateErrors())
        if self.normaliser_switch:
            steps.append(NormaliserSwitch())
        if self.prior_refinement:
            steps.append(RefinePrior())
        if self.fallback is not None:
            steps.append(Fallback(self.fallback))
        return tuple(steps)

    def run(
        self,
        problem: Problem,
        opts: SolverOptions,
        x0: np.ndarray,
        callback: Callable | None,
        history: dict,
    ) -> Estimate:
        """The solve of one point: :meth:`loop` from the starting state ``x0``."""
        s = SolveState(self, [problem], opts, callback, history, x0)
        self.loop(s)
        return s.est

    def loop(self, s: SolveState) -> SolveState:
        """The one loop of every solve: each of :attr:`steps` in turn on the state ``s``
        (one point, or a curve's stacked points); a step of one point
        (:attr:`Step.points` false) on a state of several is refused."""
        steps = self.steps
        for step in steps:
            if not step.points and s.n_points != 1:
                raise ValueError(
                    f"the step {type(step).__name__} works on one point; the state has "
                    f"{s.n_points}"
                )
        for step in steps:
            step.run(s)
        return s


def policy_for(
    problem: Problem,
    opts: SolverOptions,
    *,
    warm: bool = False,
    fail_fast: bool = False,
    predicted: bool = False,
) -> SolvePolicy:
    """The policy of a solve of ``problem`` with the options ``opts`` (``warm``: from a
    given starting state, a curve's neighbour or a user's ``init``; ``predicted``: that
    state a curve's predictor, near the fixed point, :func:`continuation`).

    Every kind of problem solved cold with ``opts.fallback`` declares the same fallbacks, the
    :class:`LambdaHomotopy` (a penalty's ``lam`` is the one parameter every problem has) and
    the :class:`~gaussmix.theory.solve.homotopy.AlphaHomotopy`, tried in turn
    (:class:`~gaussmix.theory.solve.homotopy.Fallbacks`), and with them the
    :class:`FailFast` of its fixed-point runs; a warm start declares neither, unless
    ``fail_fast``: its caller has a fallback of its own (a curve's warm start from its last
    point, whose point is then solved cold), so that a run that stalls is stopped early
    (:class:`FailFast`) instead of after ``max_iter`` evaluations."""
    rule = channel_rule(problem, opts.quadrature, opts.symmetry)
    symmetric = opts.symmetry and problem.symmetry is not None
    automatic = opts.quadrature is None and needs_quadrature(problem)
    sharp = automatic and _switches_regime(rule, symmetric)
    # the sharp rule of exchangeable cross-entropy (symmetric_rule): panels in two and three
    # dimensions (K = 3, 4), the softmax normaliser's integrals beyond (K = 5, 6)
    normaliser = sharp and symmetric and normaliser_serves(problem)
    panels = rule.dim in EXCHANGEABLE_PANEL_DIMS
    falls_back = opts.fallback and not warm
    quadrature_prior = prior_quadrature_dim(problem) > 0
    refines_prior = opts.estimate_error and quadrature_prior
    return SolvePolicy(
        rule=rule,
        symmetric=symmetric,
        continuation=continuation(problem, opts, predicted and warm),
        warm_start=warm and normaliser and not panels,
        sharp_switch=sharp,
        estimate=estimate_kind(problem, opts, rule),
        normaliser_switch=normaliser and panels and opts.estimate_error,
        prior_refinement=refines_prior,
        coarse_stop=quadrature_prior,
        coarse_prior_panels=coarse_prior_panels(problem, opts),
        prior_stop=(
            refines_prior
            and not needs_quadrature(problem)
            and (opts.max_refine >= 1 or not opts.auto_refine)
        ),
        # (a re-solve's longer memory from a fixed point only where the prior is integrated
        # by quadrature, or with the sharp regime's randomised rule: anderson_memory)
        memory=anderson_memory(
            opts, longer_resolve=prior_quadrature_dim(problem) > 0, longer_randomised=True
        ),
        fallback=(
            Fallbacks((LambdaHomotopy(), AlphaHomotopy()), verdict, policy_for)
            if falls_back
            else None
        ),
        fail_fast=FailFast() if falls_back or fail_fast else None,
    )


def policy_for_points(problems: list[Problem], opts: SolverOptions) -> SolvePolicy:
    """The policy of the points of a curve solved as one stacked state (problems of one
    mixture, loss and penalty at other ``lam`` and ``alpha`` that stack,
    :func:`gaussmix.experiments.continuation.stackable`; the automatic rule), run by the
    same loop as a single point's (:meth:`SolvePolicy.loop`).

    The same decisions as :func:`policy_for`'s, with the points' own where a curve's
    differ.  One output: the automatic rule from the cold start, without a coarser rule
    first (each point's iterates its single point's on a curve over alpha), the
    :class:`SharpSwitch` where the automatic rule has a sharp regime's, the estimate of
    the rule each point ends with.  Two outputs by quadrature (K = 3 cross-entropy): the
    curve's rule one step down the refinement chain of the automatic rule
    (:func:`chain_predecessor`; each point's estimate then refines it to the automatic
    rule or finer) where an estimate by refinement is asked for, after a coarser rule
    first (``opts.continuation``), and no switch: a point in the sharp regime
    (:class:`SharpWatch`) sends the curve back to the point-by-point solve.  No warm
    start, normaliser switch, prior refinement or fallback: the continuation of the
    curve is its caller's."""
    p0 = problems[0]
    rule = channel_rule(p0, None, opts.symmetry)
    symmetric = opts.symmetry and p0.symmetry is not None
    two = needs_quadrature(p0) and p0.dim > 1
    refines = opts.estimate_error and (not opts.auto_refine or opts.max_refine > 0)
    sharp = needs_quadrature(p0) and _switches_regime(rule, symmetric)
    if two and refines:  # the curve's rule (continuation.curve_start_rule)
        rule = chain_predecessor(rule) or rule
    return SolvePolicy(
        rule=rule,
        symmetric=symmetric,
        continuation=Continuation.COARSE if two and opts.continuation else Continuation.NONE,
        warm_start=False,
        sharp_switch=sharp and not two,
        estimate=estimate_kind(p0, opts, rule),
        normaliser_switch=False,
        prior_refinement=False,
        # (the options' own from a fixed point: each point's iterates its single point's on
        # a curve over alpha)
        memory=anderson_memory(opts, longer_resolve=False),
        sharp_watch=SharpWatch(opts, every=not refines) if two else None,
        # the re-solves merged where the curve's iterates are not its single points'
        # anyway: two outputs, and a sweep over lambda (one alpha), whose first solve
        # restarts its slow points
        merge=two or len({p.alpha for p in problems}) == 1,
        own_pairs=own_refined_pairs(p0),
        predicted_start=False,
        stacked=True,
    )


# --------------------------------------------------------------------------- the decisions
def anderson_memory(
    opts: SolverOptions, *, longer_resolve: bool = True, longer_randomised: bool = False
) -> AndersonMemory:
    """The Anderson memory of a solve with the options ``opts``, by phase
    (:class:`~gaussmix.theory.solve.memory.Phase`) and rule: ``opts.anderson`` for a solve
    from its start; a re-solve's longer memory
    (:func:`~gaussmix.theory.solve.estimate.resolve_memory`) for a run from a fixed point
    with ``longer_resolve`` (with ``longer_randomised``: also a run of the sharp regime's
    randomised rule of three to five outputs), else ``opts.anderson``, and for the prior's
    refinement always; and at least
    :data:`~gaussmix.theory.numerics.tolerances.RANDOMISED_MIXING_MEMORY` (unless 0) in
    every phase with the sharp regime's randomised rule of three to five outputs (the
    slowest cold K = 4 points: 205 -> 144 evaluations with 20 pairs instead of 6).

    ``longer_resolve`` is declared by :func:`policy_for` for a single point whose prior is
    integrated by quadrature (the multi-output lasso,
    :func:`~gaussmix.theory.prior.prior.prior_quadrature_dim`), and for no other point nor
    a curve's stacked points (:func:`policy_for_points`: each point's iterates its single
    point's on a curve over alpha).  The longer memory pays only there, where the run from
    the coarser rule's fixed point follows the prior's quadrature as well: cold, with the
    default options, the 80 K = 3 lasso points of ``bench_lasso_k3.py`` (seeds 0, 1) take
    2969 evaluations with 12 pairs against 3092 with 6 (21 points differ; 12 K = 3
    cross-entropy lasso points of the slowest, 180 -> 130 of the finer rule after the
    coarse one); on points whose prior is in closed form it does not, and there the same
    count is kept or lowered with 6: cross-entropy of isotropic clusters, K = 3 at ``lam``
    1e-4, 1e-2 and 1 and alpha 1 and 4, K = 4 and 5 at ``lam = 1``, the same evaluations
    (at alpha = 2, K = 3: the states within 1.5e-11 of the 12 pairs', relative to
    ``max(1, |x|)``, the observables within 3e-13); K = 5 at ``lam = 1e-4``, alpha = 3 (the
    softmax normaliser's rule), 54 against 56.  ``longer_randomised`` is declared by
    :func:`policy_for` for every single point: the run of the sharp regime's randomised
    rule from the coarser rule's fixed point starts from 12 of its pairs, not 6, where its
    replicates' estimate follows (:func:`~gaussmix.theory.solve.estimate.replicate_state`,
    from that run's pairs); measured on the sharp K = 4 ridge point #426 of the cold
    stream, 170 evaluations of the solve and its estimate against 184 (0.90 million
    node-evaluations against 1.13: 16 of the full rule, 8 x 2**12 points, against 22)."""
    longer = resolve_memory(opts)
    resolve = longer if longer_resolve else opts.anderson
    return AndersonMemory(
        solve=opts.anderson,
        resolve=resolve,
        prior=longer,
        resolve_randomised=longer if longer_randomised else resolve,
        randomised=RANDOMISED_MIXING_MEMORY,
    )


def channel_rule(
    problem: Problem, quadrature: QuadratureRule | None, symmetry: bool = False
) -> QuadratureRule:
    """The channel's quadrature rule: the given one (checked against the problem), the
    automatic one for the output dimension
    (:func:`~gaussmix.theory.numerics.quadrature.auto_rule`),
    or a placeholder for closed-form channels.

    With ``symmetry`` and exchangeable clusters (one cluster's channel is integrated instead
    of ``K``) an automatic randomised rule spends the work saved on its points: ``2**j``
    times the points per replicate, ``2**j <= K``, within ``MAX_QUADRATURE_NODES`` (its
    standard error falls by about that factor to the power 1/2 or more).  Measured at
    K = 10, lam = 1: training-loss standard error 1.9e-5 with 8 x 2**11 points for one
    cluster (10 s), 3.6e-4 with 8 x 2**8, 1.6e-4 for 8 x 2**8 on all ten clusters (63 s)."""
    L = problem.dim
    if quadrature is not None:
        if quadrature.dim != L:
            raise ValueError(f"quadrature has dimension {quadrature.dim}, the problem needs {L}")
        if quadrature.needs_symmetry and not (symmetry and problem.symmetry is not None):
            raise ValueError(
                f"quadrature {type(quadrature).__name__} needs exchangeable clusters, "
                "cross-entropy, ridge and symmetry=True"
            )
        return quadrature
    if not needs_quadrature(problem):
        return GaussHermite(1, 1)  # unused: closed-form channel
    rule = auto_rule(L, smooth=True)
    if symmetry and rule.randomised and problem.symmetry is not None:
        extra = int(np.floor(np.log2(problem.n_clusters)))
        while extra > 0 and rule.weights.size * 2**extra > MAX_QUADRATURE_NODES:
            extra -= 1
        rule = replace(rule, n_log2=rule.n_log2 + extra)
    return rule


def continuation(problem: Problem, opts: SolverOptions, predicted: bool = False) -> Continuation:
    """The first phase of the solve's fixed-point runs: single precision where the prior
    takes it on a large matrix (:func:`~gaussmix.theory.prior.prior.single_precision_phase`) and
    the tolerance is below the phase's own
    (:data:`~gaussmix.theory.numerics.tolerances.SINGLE_PHASE_TOL`); otherwise a coarser rule first
    for a channel by quadrature with ``opts.continuation`` (where the rule has one,
    :meth:`~gaussmix.theory.numerics.quadrature.QuadratureRule.coarsened`): from a
    ``predicted`` start (a curve's predictor, near the fixed point) corrected by the two
    rules' difference there (:attr:`Continuation.CORRECTED`, where the rule has no secant
    pairs of its own to start from); else none."""
    if opts.tol < tolerances.SINGLE_PHASE_TOL and single_precision_phase(problem):
        return Continuation.SINGLE
    if needs_quadrature(problem) and opts.continuation:
        return Continuation.CORRECTED if predicted else Continuation.COARSE
    return Continuation.NONE


def coarse_prior_panels(problem: Problem, opts: SolverOptions) -> int | None:
    """The prior's panels in a single point's coarser first phase (:data:`Continuation.COARSE`):
    for the multi-output lasso of two effective outputs (the K = 3 cross-entropy) below
    :data:`~gaussmix.theory.prior.lasso.START_MAX_LAM`, with the default rule of lines,
    :data:`~gaussmix.theory.prior.lasso.COARSE_OUTER_PANELS`: the phase only starts the
    solve's rules, from a channel rule farther off than that prior rule, and stops near
    that difference (``coarse_stop``, measured against the solve's own rules); None (the
    solve's own panels) otherwise."""
    if (
        opts.prior_panels is None
        and prior_quadrature_dim(problem) == 1
        and problem.lam < START_MAX_LAM
        and continuation(problem, opts) is Continuation.COARSE
    ):
        return COARSE_OUTER_PANELS
    return None


def estimate_kind(problem: Problem, opts: SolverOptions, rule: QuadratureRule) -> ErrorEstimate:
    """How the integration error of a solve ending with ``rule`` is estimated: across the
    replicates of a randomised rule; by re-solves with refined rules for a channel by
    quadrature (within ``max_refine`` with ``auto_refine``, else once); none without
    ``estimate_error`` or refinements, or for a closed-form channel."""
    if not opts.estimate_error:
        return ErrorEstimate.NONE
    if rule.randomised:
        return ErrorEstimate.REPLICATES
    refinements = opts.max_refine if opts.auto_refine else 1
    if needs_quadrature(problem) and refinements > 0:
        return ErrorEstimate.REFINED_RULE
    return ErrorEstimate.NONE


def chain_predecessor(rule: QuadratureRule) -> QuadratureRule | None:
    """The rule whose refinement is ``rule`` (``prev.refined() == rule``), reached from
    ``rule.coarsened()`` up the refinement chain; None where there is none (a cheap rule, or
    a coarsening off the chain)."""
    prev, cur = None, rule.coarsened()
    while cur is not None and cur != rule and cur.weights.size < rule.weights.size:
        prev, cur = cur, cur.refined()
    return prev if cur == rule else None


def own_refined_pairs(problem: Problem) -> bool:
    """Whether the refined re-solve of an error estimate (and the sharp regime's re-solve)
    of the stacked points of ``problem`` starts from each point's own secant pairs
    (:meth:`~gaussmix.theory.solve.fixed_point.FixedPointMap.pairs`), by whether they have
    more than one effective output (``problem.dim``; the one key of both re-solves: K = 3
    square, several outputs without quadrature, has neither).  One output: yes, as a
    single point's; the binary logistic curve then takes its single points' ``n_iter`` at
    every point, and the lasso sweep (20 lambdas in [1e-2, 1]) 50 stacked evaluations
    instead of 53.  Two outputs (K = 3 cross-entropy, whose refined rule has four times the
    curve's nodes): no, the stacked history (pairs only for the points that froze within
    the memory); measured on 20 lambdas in [1e-3, 10] at alpha = 2: 1.00 million
    node-evaluations against 1.12 million from each point's own pairs and 1.30 million
    without pairs, and again once the estimate's observables came from the last refined
    evaluation (:func:`~gaussmix.theory.solve.batch_solve.refined_solve`): 0.64 million
    against 0.81 million from each point's own pairs."""
    return problem.dim == 1


def _switches_regime(rule: QuadratureRule, symmetric: bool) -> bool:
    """Whether :func:`sharp_rule` may replace ``rule``: the automatic smooth-regime rule of
    its dimension, with another rule in the sharp regime (always for exchangeable clusters,
    whose sharp rule is :func:`~gaussmix.theory.problem.symmetry.symmetric_rule`'s)."""
    if rule != auto_rule(rule.dim, smooth=True):
        return False
    return symmetric or rule != auto_rule(rule.dim)


def sharp_rule(
    problem: Problem, rule: QuadratureRule, x: np.ndarray, symmetric: bool = False
) -> QuadratureRule | None:
    """The automatic rule of the sharp regime where the automatic smooth-regime ``rule``
    meets a sharp state ``x`` (some ``Q_c`` has an eigenvalue above
    :data:`~gaussmix.theory.numerics.tolerances.SMOOTH_Q_MAX`: the proximal map then changes regime
    on a scale ``~ 1 / sqrt(Q)`` of ``xi``), else None.

    With ``symmetric`` (the solve integrates cluster 0's channel for all exchangeable
    clusters, :class:`~gaussmix.theory.problem.symmetry.ClusterSymmetry`) the sharp rule is
    :func:`~gaussmix.theory.problem.symmetry.symmetric_rule`'s, also where the automatic rule of
    the dimension is the same in both regimes (K = 3: graded panels in two dimensions)."""
    if not _switches_regime(rule, symmetric):
        return None
    Q, M, V, _ = unpack_state(x, problem.n_clusters, problem.dim)
    if float(sym_eigvals(Q).max()) <= SMOOTH_Q_MAX:
        return None
    sharp = auto_rule(rule.dim)
    if symmetric:  # exchangeable clusters: cluster 0's rule
        sharp = symmetric_rule(problem, sharp, Q, M, V)
    return None if sharp == rule else sharp


#: a stacked solve of two outputs gives up where an image of the map at the curve's first
#: point has an overlap ``Q_c`` with an eigenvalue above this many times
#: :data:`~gaussmix.theory.numerics.tolerances.SMOOTH_Q_MAX` (the sharp regime's threshold, tested
#: at the fixed point).  Measured at K = 3 cross-entropy, alphas in [0.2, 4], from the cold
#: start: the largest eigenvalue of the first image is within 30 % of the fixed point's
#: (96 against 73 at lam = 1e-3, 15.0 against 13.9 at 1e-2, 2.43 against 2.34 at 0.1)
SHARP_IMAGE_FACTOR = 2.0


@dataclass(frozen=True)
class SharpWatch:
    """Stops a stacked iteration (:class:`SharpPoint`) as soon as the curve's first point
    (``every``: any point) converges in the sharp regime (the test :func:`sharp_rules` makes
    at the end, made as it freezes at its own fixed point), or its image is far into it
    (:data:`SHARP_IMAGE_FACTOR`): a curve that goes back to the point-by-point solve pays
    little of the stacked one (a :class:`~gaussmix.theory.solve.batch.Watch`)."""

    opts: SolverOptions
    every: bool = False

    def _watched(self, n_points: int) -> np.ndarray:
        watched = np.ones(n_points, dtype=bool)
        if not self.every:
            watched[1:] = False
        return watched

    def on_freeze(self, T: FixedPointMap, points: np.ndarray, x: np.ndarray) -> None:
        new = points & self._watched(T.n_points)
        if new.any() and any(r is not None for r in sharp_rules(T, x, self.opts, new)):
            raise SharpPoint

    def on_image(self, T: FixedPointMap, g: np.ndarray) -> None:
        Q = unpack_state(g, T.K, T.L)[0][self._watched(T.n_points)[T.row_of_cluster]]
        if np.isfinite(Q).all() and sym_eigvals(Q).max() > SHARP_IMAGE_FACTOR * SMOOTH_Q_MAX:
            raise SharpPoint


def sharp_rules(
    T: FixedPointMap, x: np.ndarray, opts: SolverOptions, points: np.ndarray | None = None
) -> list:
    """The sharp rule of each point of the stacked state ``x`` (of ``points``, a mask)
    solved with the automatic rule of the smooth regime, as a single point tests it
    (:func:`~gaussmix.theory.solve.policy.sharp_rule`; None: its rule stays): the points at
    most at the threshold without a call, and without the symmetry one call for all the
    points above it (its rule there does not depend on the state)."""
    p0 = T.problems[0]
    idx = np.arange(T.n_points) if points is None else np.flatnonzero(points)
    if not needs_quadrature(p0):
        return [None] * idx.size
    # each point's largest overlap eigenvalue, all at once (the same numbers as each
    # point's own test: the eigenvalues are block by block)
    top = sym_eigvals(T.unpack_points(x)[0][idx]).max(axis=(1, 2))
    if top.max() <= SMOOTH_Q_MAX:
        return [None] * idx.size
    rule = channel_rule(p0, None, opts.symmetry)
    sym = T.symmetry is not None
    states = T.split(x)
    out: list = [None] * idx.size  # (a point at most at the threshold: its rule stays)
    same = None  # without the symmetry, the rule of every point above it (state-free)
    for k in np.flatnonzero(~(top <= SMOOTH_Q_MAX)):  # (NaN: tested, as each point's)
        i = idx[k]
        if sym or same is None:
            out[k] = sharp_rule(T.problems[i], rule, states[i], symmetric=sym)
            same = (out[k],)
        else:
            out[k] = same[0]
    return out


def normaliser_switch(
    problem: Problem, opts: SolverOptions, est: Estimate
) -> NormaliserRule | None:
    """The rule that replaces the automatic
    :class:`~gaussmix.theory.problem.symmetry.ExchangeablePanels`
    of K = 4 cross-entropy where its estimate would warn, else None.

    Near ``alpha*_4`` (lam = 1e-4: alpha in about [3.3, 5.1]) a third class entering the
    softmax where two already share it is an oblique line in the panels' coordinates, which
    their grading does not follow: the change under refinement of the test error or the
    training loss then exceeds the warning threshold
    (:func:`~gaussmix.theory.numerics.tolerances.integration_warning_threshold`; up to 9e-3 at
    alpha = 4.5).  The integration over the softmax normaliser
    (:class:`~gaussmix.theory.channel.normaliser.NormaliserRule`, the panels kept for the test
    loss)
    has no such line.  Points whose estimate does not warn keep the panels (and their
    numbers); a solve with a rule of the user's, or without an estimate, is never switched
    (the policy does not take the step, :func:`policy_for`).
    """
    rule = est.T.rule
    if (
        est.status is not IterationStatus.CONVERGED
        or est.T.symmetry is None
        or not isinstance(rule, ExchangeablePanels)
    ):
        return None
    worst = max(est.quad["test_error"], est.quad["train_loss"])
    if worst <= integration_warning_threshold(opts.tol):
        return None
    # the test loss's rule: the panels before their refinement (the estimate refines both)
    return NormaliserRule(problem.n_clusters, fallback=replace(rule, order=EXCHANGEABLE_ORDER))
