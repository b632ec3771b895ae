"""The homotopies of a failed cold solve, and the chain that tries them.

Where the direct iteration of a cold solve fails, the policy hands the solve to its
fallbacks (:class:`~gaussmix.theory.solve.policy.Fallback`), each a path of warm-started
solves from a problem that converges cold to the problem's own: the homotopy in ``lam``
(:class:`LambdaHomotopy`, from a larger or smaller penalty) and the homotopy in ``alpha``
(:class:`AlphaHomotopy`, from a larger sample ratio), tried in turn by :class:`Fallbacks`,
first those that declare the failure's status their own (``prefers``, a class attribute of
each).  Both walk their parameter the same way (:class:`PathWalk`): in its logarithm
towards the problem's, a step that converges followed by one half as long again, one that
fails halved, the path given up below a least step or at a number of solves; where a path
starts, how a point of it is solved and what is done at the problem's own point are each
homotopy's.  A failing problem costs at most :attr:`Fallbacks.max_solves` solves of the
homotopies (100 with the defaults: 40 in ``lam``, 60 in ``alpha``) before its error.

Why a homotopy in ``alpha``, with its steps in
:class:`~gaussmix.theory.solve.state.LogChart` coordinates and damped: the hinge with a
lasso at large ``lam`` (issue 31's random grid 3: lam = 9.75, alpha in [0.39, 8]) has
fixed points next to the zero estimator.  There every margin is below the hinge's kink but
for a Gaussian tail, so the channel's hats are the zero estimator's (``f = y``: ``Qhat_c``
and ``Mhat_c`` constant) but for the curvature ``Vhat_c``, the density of the margins at the
kink, ``~ exp(-(1 - M)^2 / (2 Q))``; the lasso's weights scale as ``1 / Vhat``, so that
``Q ~ E[(|B| - t)_+^2] / Vhat^2``.  The map is stiff: its derivative in ``log Q`` is about
``-(1 - M)^2 / Q`` (-90 at alpha = 0.39, where ``Q = 0.011`` and the nonzero fraction is
5e-40).  The cold start (the prior's image of the default hats: ``Q ~ 1e-92`` at lam = 9.75)
has ``Vhat = 0`` to the last bit, so the direct iteration stops at its first evaluation
(:class:`~gaussmix.core.exceptions.UnboundedWeightsError`), and from any state the
undamped steps overshoot into that underflow.  A larger ``alpha`` moves the fixed point away
from the zero estimator (alpha = 6.2 converges cold in 143 evaluations), and along the path
down to the problem's ``alpha`` each point converges from the last in about 20 evaluations
in log coordinates with the damping
:data:`~gaussmix.theory.numerics.tolerances.ALPHA_HOMOTOPY_DAMPING` (the residual in
``log Q`` is about linear in ``1 / Q``, where Anderson's secant model holds; in the state's
own coordinates steps of about 0.002 in ``alpha`` were needed).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Protocol

import numpy as np

from ...core.caught import caught
from ..numerics.quadrature import QuadratureRule
from ..numerics.tolerances import (
    ALPHA_HOMOTOPY_DAMPING,
    ALPHA_HOMOTOPY_MAX_SOLVES,
    ALPHA_HOMOTOPY_MIN_STEP,
    ALPHA_HOMOTOPY_STARTS,
    ALPHA_HOMOTOPY_STEP,
    ALPHA_HOMOTOPY_STEP_ITER,
    HOMOTOPY_MAX_SOLVES,
    HOMOTOPY_MIN_STEP,
    HOMOTOPY_PATH_SOLVES,
    HOMOTOPY_STARTS,
    HOMOTOPY_STEP,
    HOMOTOPY_STEP_ITER,
)
from ..problem.problem import Problem
from ..problem.symmetry import ClusterSymmetry
from .fixed_point import FixedPointState, new_map, start_state
from .iteration import AndersonState, IterationOutcome, IterationStatus, iterate
from .memory import AndersonMemory, Phase
from .options import SolverOptions
from .refinement import Estimate
from .state import LogChart, is_valid_state, unpack_state

__all__ = ["PathWalk", "Trail", "Homotopy", "LambdaHomotopy", "AlphaHomotopy", "Fallbacks"]

#: ``judge(problem, opts, est) -> (status, message)``: the policy's
#: :func:`~gaussmix.theory.solve.policy.verdict` on a solve's estimate
Judge = Callable[[Problem, SolverOptions, Estimate], tuple[IterationStatus, str]]
#: ``plan(problem, opts, warm=..., fail_fast=...)``: the policy of a solve,
#: :func:`~gaussmix.theory.solve.policy.policy_for` (given to the chain by the policy,
#: which this module sits below)
Plan = Callable[..., Any]


@dataclass(frozen=True)
class PathWalk:
    """The walk of a homotopy's parameter, in its logarithm, from a point solved to the
    problem's own: the one adaptive step of :class:`LambdaHomotopy` and
    :class:`AlphaHomotopy`.

    The first step is the longest, a factor :attr:`step` of the parameter; a step whose
    solve fails is halved and tried again from the last point, one that converges is
    followed by one half as long again (at most :attr:`step`); the step that reaches or
    passes the target is made to the target itself.  The walk is given up where the step
    is halved below :attr:`min_step` or the solves reach the caller's limit.

    Attributes
    ----------
    step, min_step : float
        The longest and the shortest step, factors of the parameter.
    """

    step: float
    min_step: float

    def walk(
        self,
        current: float,
        target: float,
        solve: Callable[[float, bool], bool],
        solves: int,
        limit: int,
        first: float | None = None,
    ) -> tuple[bool, int]:
        """Walk from the logarithm ``current`` to ``target``: ``solve(log_param, final)``
        solves the point (``final``: the problem's own, ``log_param`` then ``target``) from
        the last point it solved, and says whether it converged.  Returns whether the
        target was reached and the solves counted so far (``solves`` before the walk; no
        solve once they reach ``limit``).  ``first``: the first step, a factor (None:
        :attr:`step`)."""
        longest = np.log(self.step)
        step = longest if first is None else min(np.log(first), longest)
        while solves < limit and step >= np.log(self.min_step):
            down = current > target
            nxt = current - step if down else current + step
            final = nxt <= target if down else nxt >= target
            if final:
                nxt = target
            ok = solve(nxt, final)
            solves += 1
            if not ok:
                step /= 2.0
                continue
            if final:
                return True, solves
            current = nxt
            step = min(1.5 * step, longest)
        return False, solves


class Homotopy(Protocol):
    """What :class:`Fallbacks` reads of a homotopy: the failures it is tried first for,
    its budget of solves, its account of a failure, and the solve itself (given the
    failed solve's :class:`~gaussmix.theory.solve.solve_state.SolveState`, the policy's
    ``judge`` and ``plan``)."""

    prefers: ClassVar[tuple[IterationStatus, ...]]
    max_solves: int

    def describe(self) -> str: ...

    def __call__(self, s: Any, judge: Judge, plan: Plan) -> Estimate: ...


@dataclass
class _Path:
    """A homotopy's path while it is walked: the last point solved (an estimate, or a
    state), the evaluations spent so far and the steps that converged."""

    last: Any
    spent: int
    n_steps: int = 0


@dataclass(frozen=True)
class LambdaHomotopy:
    """The fallback of a failed cold solve: the problem solved by homotopy in ``lam``.

    The annealing of the paper's Appendix B: the fixed point at a larger ``lam`` is close
    to the cold start (the penalty dominates the loss, the overlaps are small), and it moves
    continuously with ``lam``.  The homotopy starts at ``lam`` times the first factor of
    :attr:`starts` whose point converges from the cold start, then walks in ``log lam`` to
    the problem's (:class:`PathWalk`: at most a factor :attr:`step`, halved on failure,
    grown by half on success), each step warm-started from the last point (its state and
    its Anderson secant pairs); a path that does not arrive within :attr:`path_solves`
    solves, or whose step falls below :attr:`min_step`, is left for the first starting
    factor on the other side of ``lam`` (a second start on the same side would retrace
    the failed path from the point where it converged cold).  The factors below 1 are for
    the problems that a larger ``lam`` makes harder: the hinge loss with unbalanced
    classes, whose bias tends to a kink of the loss as ``W* -> 0``, and whose path from
    above can stall at the ``lam`` where the weights vanish (issue 31's #533: the elastic
    net at lam = 2.9, stalled near 3.6 from above, reached from 0.29).  At most
    :attr:`max_solves` solves in all.  The intermediate points are solved without an
    error estimate and with at most :attr:`step_iter` iterations; the last, the problem's
    own point, with the solve's options and the policy of a warm start, failing fast (so
    that its fixed point passes the checks and gets the error estimate of a direct
    solve).  No solve of the homotopy falls back itself.

    Attributes
    ----------
    prefers : tuple of IterationStatus
        The failures this fallback is tried first for (:class:`Fallbacks`): none, it is
        the first of the chain.
    starts : tuple of float
        The factors of ``lam`` the paths start from, in the order tried
        (:data:`~gaussmix.theory.numerics.tolerances.HOMOTOPY_STARTS`).
    path_solves : int
        Solves of one path (:data:`~gaussmix.theory.numerics.tolerances.HOMOTOPY_PATH_SOLVES`).
    max_solves : int
        Solves in all (:data:`~gaussmix.theory.numerics.tolerances.HOMOTOPY_MAX_SOLVES`).
    step : float
        The longest step, a factor of ``lam``
        (:data:`~gaussmix.theory.numerics.tolerances.HOMOTOPY_STEP`).
    min_step : float
        The shortest: a path whose step is halved below it is given up
        (:data:`~gaussmix.theory.numerics.tolerances.HOMOTOPY_MIN_STEP`).
    step_iter : int
        The iterations of an intermediate point
        (:data:`~gaussmix.theory.numerics.tolerances.HOMOTOPY_STEP_ITER`).
    """

    prefers: ClassVar[tuple[IterationStatus, ...]] = ()
    starts: tuple[float, ...] = HOMOTOPY_STARTS
    path_solves: int = HOMOTOPY_PATH_SOLVES
    max_solves: int = HOMOTOPY_MAX_SOLVES
    step: float = HOMOTOPY_STEP
    min_step: float = HOMOTOPY_MIN_STEP
    step_iter: int = HOMOTOPY_STEP_ITER

    def describe(self) -> str:
        """The account of a homotopy that failed (appended to the failed solve's message)."""
        starts = ", ".join(f"{f:g} lam" for f in self.starts)
        return f"the fallback, a homotopy in lam from {starts}, failed too"

    def __call__(self, s: Any, judge: Judge, plan: Plan) -> Estimate:
        """The problem's estimate at the end of the homotopy, with ``fallback`` saying what
        was done and ``n_iter`` counting every iteration (the failed solve's included);
        where every path fails, the failed solve's estimate with ``fallback`` saying so
        (appended to its message).  ``s`` is the failed solve's
        :class:`~gaussmix.theory.solve.solve_state.SolveState`; ``judge`` and ``plan`` the
        policy's (:class:`Fallbacks`)."""
        problem, opts, failed = s.problem, s.opts, s.est
        lam, spent, solves = problem.lam, int(failed.n_iter), 0
        steps = self._step_options(opts)
        sides: set[bool] = set()  # the sides (above lam: True) whose path has started
        for factor in self.starts:
            if solves >= self.max_solves:
                break
            if (factor > 1.0) in sides:  # that side's path started and failed: the next
                continue  # start on it would retrace it from where it is solved cold
            start_lam, local = lam * factor, {}
            start = problem.with_lam_alpha(start_lam, problem.alpha)
            est, ok = _quiet(start, steps, None, local, judge, plan)
            solves += 1
            spent += int(est.n_iter)
            if not ok:
                continue
            sides.add(factor > 1.0)
            path = _Path(est, spent)
            limit = min(solves + self.path_solves, self.max_solves)
            arrived, solves = self._walk(s, judge, plan, path, start_lam, local, solves, limit)
            spent = path.spent
            if arrived:
                s.history.update(local)
                text = (
                    f"lambda homotopy from lam={start_lam:.3g} ({path.n_steps} steps, "
                    f"{solves} solves): the cold solve failed "
                    f"({judge(problem, opts, failed)[1]})"
                )
                return replace(path.last, n_iter=spent, fallback=text)
        return replace(failed, fallback=self.describe())

    def _walk(
        self,
        s: Any,
        judge: Judge,
        plan: Plan,
        path: _Path,
        start_lam: float,
        local: dict,
        solves: int,
        limit: int,
    ) -> tuple[bool, int]:
        """The path in ``log lam`` from ``start_lam`` (solved: ``path.last``) to the
        problem's ``lam`` (:meth:`PathWalk.walk`), ``path`` updated at each step."""
        problem, opts = s.problem, s.opts
        steps = self._step_options(opts)
        final_opts = replace(opts, fallback=False)
        trail = Trail(LogChart(problem.n_clusters, problem.dim))
        trail.add(float(np.log(start_lam)), path.last.x)

        def solve(nxt: float, final: bool) -> bool:
            x0 = trail.predict(nxt, path.last.x)
            if final:  # the problem's own point: its options, failing fast
                policy = plan(problem, final_opts, warm=True, fail_fast=True)
                est = policy.run(problem, final_opts, x0, s.callback, local)
                ok = judge(problem, final_opts, est)[0] is IterationStatus.CONVERGED
            else:
                point = problem.with_lam_alpha(float(np.exp(nxt)), problem.alpha)
                est, ok = _quiet(point, steps, x0, local, judge, plan)
            path.spent += int(est.n_iter)
            if ok:
                path.last, path.n_steps = est, path.n_steps + 1
                trail.add(nxt, est.x)
            return ok

        walk = PathWalk(self.step, self.min_step)
        return walk.walk(np.log(start_lam), np.log(problem.lam), solve, solves, limit)

    def _step_options(self, opts: SolverOptions) -> SolverOptions:
        """The options of an intermediate solve: no fallback, no error estimate, at most
        :attr:`step_iter` iterations."""
        return replace(
            opts, fallback=False, estimate_error=False, max_iter=min(opts.max_iter, self.step_iter)
        )


def _quiet(
    problem: Problem,
    opts: SolverOptions,
    start: np.ndarray | None,
    history: dict,
    judge: Judge,
    plan: Plan,
) -> tuple[Estimate, bool]:
    """An intermediate solve of the homotopy in ``lam``, from the state ``start`` (the
    path's prediction, :class:`Trail`; None: the cold start; warnings dropped: its
    observables are not reported), and whether it passed ``judge``."""
    with caught((Warning,)):
        x0 = start_state(problem, None) if start is None else start
        policy = plan(problem, opts, warm=start is not None)
        est = policy.run(problem, opts, x0, None, history)
        return est, judge(problem, opts, est)[0] is IterationStatus.CONVERGED


@dataclass(frozen=True)
class AlphaHomotopy:
    """The fallback of a failed cold solve: the problem solved by homotopy in ``alpha``.

    The path starts at ``alpha`` times the first factor of :attr:`starts` whose point
    converges from the cold start (the direct iteration, at most :attr:`step_iter`
    evaluations), then walks down in ``log alpha`` to the problem's (:class:`PathWalk`:
    at most a factor :attr:`step`, halved on failure, grown by half on success), each
    step a fixed-point run from the secant through the path's last two fixed points
    (:class:`Trail`; the first step from the start's fixed point) in
    :class:`~gaussmix.theory.solve.state.LogChart` coordinates with the damping
    :attr:`damping` (the module docstring says why); the path is given up where the step
    falls below :attr:`min_step` or after :attr:`max_solves` solves (a further start
    would retrace it).  At the problem's own ``alpha`` the failed solve's policy, without
    its fallback, runs from the path's fixed point (its checks and error estimate those
    of a direct solve).

    Attributes
    ----------
    prefers : tuple of IterationStatus
        The failures this fallback is tried first for (:class:`Fallbacks`): the weights
        the loss leaves unbounded, the zero estimator's stiffness.
    starts : tuple of float
        The factors of ``alpha`` the path may start from, in the order tried
        (:data:`~gaussmix.theory.numerics.tolerances.ALPHA_HOMOTOPY_STARTS`).
    step, min_step : float
        The longest and the shortest step, factors of ``alpha``
        (:data:`~gaussmix.theory.numerics.tolerances.ALPHA_HOMOTOPY_STEP`,
        :data:`~gaussmix.theory.numerics.tolerances.ALPHA_HOMOTOPY_MIN_STEP`).
    max_solves : int
        Solves in all (:data:`~gaussmix.theory.numerics.tolerances.ALPHA_HOMOTOPY_MAX_SOLVES`).
    step_iter : int
        The evaluations of each solve of the path
        (:data:`~gaussmix.theory.numerics.tolerances.ALPHA_HOMOTOPY_STEP_ITER`).
    damping : float
        The mixing parameter of the steps
        (:data:`~gaussmix.theory.numerics.tolerances.ALPHA_HOMOTOPY_DAMPING`).
    """

    prefers: ClassVar[tuple[IterationStatus, ...]] = (IterationStatus.UNBOUNDED_WEIGHTS,)
    starts: tuple[float, ...] = ALPHA_HOMOTOPY_STARTS
    step: float = ALPHA_HOMOTOPY_STEP
    min_step: float = ALPHA_HOMOTOPY_MIN_STEP
    max_solves: int = ALPHA_HOMOTOPY_MAX_SOLVES
    step_iter: int = ALPHA_HOMOTOPY_STEP_ITER
    damping: float = ALPHA_HOMOTOPY_DAMPING

    def describe(self) -> str:
        """The account of a homotopy that failed (appended to the failed solve's message)."""
        starts = ", ".join(f"{f:g} alpha" for f in self.starts)
        return f"the homotopy in alpha from the first of {starts} solved cold failed too"

    def __call__(self, s: Any, judge: Judge, plan: Plan) -> Estimate:
        """The problem's estimate at the end of the path, with ``fallback`` saying what was
        done and ``n_iter`` counting the failed solve's iterations and the path's; where the
        path fails, the failed estimate with ``fallback`` saying so.  ``s`` is the failed
        solve's :class:`~gaussmix.theory.solve.solve_state.SolveState` (its own policy is the
        one run at the end: ``judge`` and ``plan`` are not needed)."""
        problem, opts, failed, memory = s.problem, s.opts, s.est, s.policy.memory
        rule, sym = failed.T.rule, failed.T.symmetry
        spent, solves = int(failed.n_iter), 0
        for factor in self.starts:
            if solves >= self.max_solves:
                break
            start = problem.with_lam_alpha(problem.lam, problem.alpha * factor)
            x0 = start_state(start, None)
            out, ok = self._run(start, rule, sym, x0, opts, memory, False)
            solves += 1
            spent += out.n_iter
            if not ok:
                continue
            path = _Path(out.x, spent)
            arrived, solves = self._walk(
                problem, opts, memory, rule, sym, path, [start.alpha], solves
            )
            spent = path.spent
            if arrived:
                return self._finish(s, path.last, spent, start.alpha, solves)
            break  # the path from the first start that converged failed
        return replace(failed, fallback=self.describe())

    def walk_from(
        self,
        problem: Problem,
        opts: SolverOptions,
        states: list[FixedPointState],
        memory: AndersonMemory,
    ) -> tuple[dict | None, int]:
        """The homotopy's path to ``problem`` from fixed points of the same problem at
        other ``alpha`` (``states``, the nearest last: a curve's last points, of their
        rule and symmetry), without its search for a start: the path walked from the last
        of them, each solve from the secant through the path's last two fixed points (the
        first through the last two of ``states``), each with the Anderson memory of a solve
        in ``memory`` (the policy's, :func:`~gaussmix.theory.solve.policy.anderson_memory`).
        Returns the path's fixed point at the
        problem's ``alpha`` as an ``init`` of a solve (``Q, M, V, b`` of the full label
        space; None where the path fails) and the evaluations spent."""
        last = states[-1]
        path = _Path(last.x, 0)
        alphas = [st.problem.alpha for st in states[-2:]]
        earlier = states[-2].x if len(states) > 1 else None
        # without a secant, the first step is from the fixed point itself: half as long in
        # log alpha as the longest (from alpha = 0.39 on "random 3", a step of a factor 2
        # failed after 100 evaluations where one of 1.41 converged in 12)
        first = None if earlier is not None else float(np.sqrt(self.step))
        sym = last.symmetry
        arrived, _ = self._walk(
            problem, opts, memory, last.rule, sym, path, alphas, 0, earlier, first
        )
        if not arrived:
            return None, path.spent
        Q, M, V, b = unpack_state(path.last, problem.n_clusters, problem.dim)
        P = problem.P
        full = {
            "Q": np.einsum("ia,kij,jb->kab", P, Q, P),
            "M": M @ P,
            "V": np.einsum("ia,kij,jb->kab", P, V, P),
            "b": problem.full_bias(b),
        }
        return full, path.spent

    def _walk(
        self,
        problem: Problem,
        opts: SolverOptions,
        memory: AndersonMemory,
        rule: QuadratureRule,
        sym: ClusterSymmetry | None,
        path: _Path,
        alphas: list[float],
        solves: int,
        earlier: np.ndarray | None = None,
        first: float | None = None,
    ) -> tuple[bool, int]:
        """The path in ``log alpha`` from ``alphas[-1]`` (solved: the state ``path.last``;
        with ``earlier``, the fixed point at ``alphas[0]`` before it) to the problem's
        ``alpha`` (:meth:`PathWalk.walk`), each solve from the secant through the path's
        last two fixed points (:class:`Trail`), ``path`` updated at each step; ``first``:
        the first step, a factor (None: :attr:`step`)."""
        trail = Trail(LogChart(problem.n_clusters, problem.dim))
        if earlier is not None:
            trail.add(float(np.log(alphas[0])), earlier)
        trail.add(float(np.log(alphas[-1])), path.last)

        def solve(nxt: float, final: bool) -> bool:
            point = problem.with_lam_alpha(problem.lam, float(np.exp(nxt)))
            x0 = trail.predict(nxt, path.last)
            out, ok = self._run(point, rule, sym, x0, opts, memory, True)
            path.spent += out.n_iter
            if ok:
                path.last = out.x
                trail.add(nxt, out.x)
            return ok

        walk = PathWalk(self.step, self.min_step)
        current = float(np.log(alphas[-1]))
        target = np.log(problem.alpha)
        return walk.walk(current, target, solve, solves, self.max_solves, first)

    def _run(
        self,
        point: Problem,
        rule: QuadratureRule,
        sym: ClusterSymmetry | None,
        x0: np.ndarray,
        opts: SolverOptions,
        memory: AndersonMemory,
        step: bool,
    ) -> tuple[IterationOutcome, bool]:
        """A solve of the path at ``point`` from ``x0``: its start (``step`` False: the
        direct iteration from the cold start) or a step (log coordinates, damped); and
        whether it converged to a valid state."""
        T = new_map(point, rule, (sym, step), prior_panels=opts.prior_panels)
        out = iterate(
            T,
            x0,
            AndersonState.init(memory.of(Phase.SOLVE, rule)),
            tol=opts.tol,
            max_iter=min(opts.max_iter, self.step_iter),
            damping=self.damping if step else opts.damping,
            return_image=not step,
        )
        ok = out.converged and is_valid_state(out.x, point.n_clusters, point.dim)
        return out, ok

    def _finish(self, s: Any, x: np.ndarray, spent: int, alpha0: float, solves: int) -> Estimate:
        """The failed solve's policy without its fallback from the path's fixed point ``x``
        at the problem's own ``alpha``."""
        local: dict = {}
        policy = replace(s.policy, fallback=None)
        est = policy.run(s.problem, s.opts, x, s.callback, local)
        s.history.update(local)
        text = (
            f"alpha homotopy from alpha={alpha0:.3g} ({solves} solves): the cold solve "
            f"failed ({s.est.message})"
        )
        return replace(est, n_iter=spent + int(est.n_iter), fallback=text)


@dataclass
class Trail:
    """The fixed points of a homotopy's path so far and the predictor of its next point:
    the secant through the last two, in the logarithm of the path's parameter and in
    :class:`~gaussmix.theory.solve.state.LogChart` coordinates (the predictor of a
    predictor-corrector path), the one start of every step of :class:`LambdaHomotopy` and
    :class:`AlphaHomotopy`.

    In the chart the overlaps are matrix logarithms, so a march by a factor per decade of
    the parameter (``V_c ~ 1 / lam`` where the penalty leaves the weights free) is a
    straight line, and every prediction is a valid state (positive-definite ``Q_c`` and
    ``V_c``).  Measured on the learning curve "random 3" of ``benchmarks/_curve_grids.py``
    (hinge + lasso, lam = 9.75, the homotopy in alpha): the cold solves at alpha = 0.39,
    0.79, 1.19, 1.59, 2.0 cost 207, 181, 176, 172, 71 evaluations instead of 518, 559,
    654, 304, 424 from the last fixed point, whose steps of a factor 2 failed after 100
    evaluations and were halved (every step from the secant converged, in 9 to 20
    evaluations).  In ``lam`` (issue 32's K = 3 square-loss lasso at lam = 1.4e-3, alpha =
    0.73, from 100 lam in steps of a factor 10, ``bench_lasso_k3.py`` seed 1 #5): the last
    step from 10 lam took 254 evaluations from the last fixed point (the largest overlap
    from 7.7 towards 78 by way of 4.8e3), 76 from the secant (the point 678 -> 502).

    Attributes
    ----------
    chart : LogChart
        The coordinates of the secant.
    points : list of (float, ndarray or None)
        The path's fixed points so far, oldest first: the logarithm of the parameter and
        the chart's coordinates (None outside the chart: a state that is not positive
        definite, whose step starts from the last fixed point itself).
    """

    chart: LogChart
    points: list[tuple[float, np.ndarray | None]] = field(default_factory=list)

    def add(self, t: float, x: np.ndarray) -> None:
        """Note the fixed point ``x`` of the path at the logarithm ``t`` of its parameter."""
        self.points.append((t, self.chart.forward(x)))

    def predict(self, t: float, last: np.ndarray) -> np.ndarray:
        """The start of the solve at ``t``: the secant through the last two fixed points
        extrapolated (or interpolated) to ``t`` in the chart; the last fixed point
        ``last`` itself where there is no secant (the path's first step, or a point
        outside the chart)."""
        if len(self.points) < 2 or self.points[-1][1] is None or self.points[-2][1] is None:
            return last
        (t0, y0), (t1, y1) = self.points[-2], self.points[-1]
        return self.chart.inverse(y1 + (y1 - y0) * (t - t1) / (t1 - t0))


@dataclass(frozen=True)
class Fallbacks:
    """The fallbacks of a failed cold solve, tried in turn until one converges (``judge``,
    the policy's :func:`~gaussmix.theory.solve.policy.verdict`, says whether it did): first
    those that declare the failure's status in their ``prefers``, then the others in the
    order given.  Where every one fails, the failed estimate with their accounts in
    ``Estimate.fallback``, after at most :attr:`max_solves` solves of the homotopies.

    Attributes
    ----------
    hooks : tuple of Homotopy
        The fallbacks.
    judge : callable
        ``judge(problem, opts, est) -> (status, message)``.
    plan : callable
        ``plan(problem, opts, warm=..., fail_fast=...)``, the policy of a solve (the
        policy's :func:`~gaussmix.theory.solve.policy.policy_for`), for the homotopies'
        own solves.
    """

    hooks: tuple[Homotopy, ...]
    judge: Judge
    plan: Plan

    @property
    def max_solves(self) -> int:
        """The most solves the homotopies make for one failed solve: each its own
        ``max_solves`` (each solve at most the homotopy's ``step_iter`` evaluations, the
        problem's own point's ``max_iter``)."""
        return sum(h.max_solves for h in self.hooks)

    def order(self, status: IterationStatus) -> list[Homotopy]:
        """The hooks in the order tried after a failure of ``status``."""
        return sorted(self.hooks, key=lambda h: status not in h.prefers)

    def __call__(self, s: Any) -> Estimate:
        failed, texts = s.est, []
        for hook in self.order(failed.status):
            est = hook(s, self.judge, self.plan)
            if self.judge(s.problem, s.opts, est)[0] is IterationStatus.CONVERGED:
                return est
            texts.append(est.fallback)
        return replace(failed, fallback="; ".join(t for t in texts if t))
