"""The homotopy in ``alpha`` of a failed cold solve, and the chain of a cold solve's fallbacks.

Where the direct iteration of a cold solve fails, the policy hands the solve to its
fallbacks (:class:`~gaussmix.theory.solve.policy.Fallback`), each a path of warm-started
solves from a problem that converges cold to the problem's own: the homotopy in ``lam``
(:class:`~gaussmix.theory.solve.policy.LambdaHomotopy`, from a larger or smaller penalty)
and the homotopy in ``alpha`` here (:class:`AlphaHomotopy`, from a larger sample ratio),
tried in turn by :class:`Fallbacks`, the first the one that declares the failure's status
its own (:attr:`AlphaHomotopy.prefers`).

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
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np

from ..numerics.quadrature import QuadratureRule
from ..numerics.tolerances import (
    ALPHA_HOMOTOPY_DAMPING,
    ALPHA_HOMOTOPY_MAX_SOLVES,
    ALPHA_HOMOTOPY_MIN_STEP,
    ALPHA_HOMOTOPY_STARTS,
    ALPHA_HOMOTOPY_STEP,
    ALPHA_HOMOTOPY_STEP_ITER,
)
from ..problem.problem import Problem
from ..problem.symmetry import ClusterSymmetry
from .fixed_point import new_map, start_state
from .iteration import AndersonState, IterationOutcome, IterationStatus, iterate
from .options import SolverOptions
from .refinement import Estimate
from .state import is_valid_state

__all__ = ["AlphaHomotopy", "Fallbacks"]


@dataclass(frozen=True)
class AlphaHomotopy:
    """The fallback of a failed cold solve: the problem solved by homotopy in ``alpha``.

    The path starts at ``alpha`` times the first factor of :attr:`starts` whose point
    converges from the cold start (the direct iteration, at most :attr:`step_iter`
    evaluations), then steps down in ``log alpha`` to the problem's, each step a
    fixed-point run from the last point's state in
    :class:`~gaussmix.theory.solve.state.LogChart` coordinates with the damping
    :attr:`damping` (the module docstring says why); a step that converges is followed by
    one half as long again (at most a factor :attr:`step`), one that fails is halved, and
    the path is given up where the step falls below :attr:`min_step` or after
    :attr:`max_solves` solves (a further start would retrace it).  At the problem's own
    ``alpha`` the failed solve's policy, without its fallback, runs from the path's fixed
    point (its checks and error estimate those of a direct solve).

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

    def __call__(self, s: Any) -> Estimate:
        """The problem's estimate at the end of the path, with ``fallback`` saying what was
        done and ``n_iter`` counting the failed solve's iterations and the path's; where the
        path fails, the failed estimate with ``fallback`` saying so.  ``s`` is the failed
        solve's :class:`~gaussmix.theory.solve.policy.SolveState`."""
        problem, opts, failed = s.problem, s.opts, s.est
        rule, sym = failed.T.rule, failed.T.symmetry
        spent, solves = int(failed.n_iter), 0
        target = np.log(problem.alpha)
        for factor in self.starts:
            if solves >= self.max_solves:
                break
            start = problem.with_lam_alpha(problem.lam, problem.alpha * factor)
            out, ok = self._run(start, rule, sym, start_state(start, None), opts, False)
            solves += 1
            spent += out.n_iter
            if not ok:
                continue
            x, current, step = out.x, np.log(start.alpha), np.log(self.step)
            while solves < self.max_solves and step >= np.log(self.min_step):
                nxt = max(current - step, target)
                point = problem.with_lam_alpha(problem.lam, float(np.exp(nxt)))
                out, ok = self._run(point, rule, sym, x, opts, True)
                solves += 1
                spent += out.n_iter
                if not ok:
                    step /= 2.0
                    continue
                x, current = out.x, nxt
                if nxt <= target:
                    return self._finish(s, x, spent, start.alpha, solves)
                step = min(1.5 * step, np.log(self.step))
            break  # the path from the first start that converged failed
        return replace(failed, fallback=self.describe())

    def _run(
        self,
        point: Problem,
        rule: QuadratureRule,
        sym: ClusterSymmetry | None,
        x0: np.ndarray,
        opts: SolverOptions,
        step: bool,
    ) -> tuple[IterationOutcome, bool]:
        """A solve of the path at ``point`` from ``x0``: its start (``step`` False: the
        direct iteration from the cold start) or a step (log coordinates, damped); and
        whether it converged to a valid state."""
        T = new_map(point, rule, (sym, step), prior_panels=opts.prior_panels)
        out = iterate(
            T,
            x0,
            AndersonState.init(opts.anderson),
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


@dataclass(frozen=True)
class Fallbacks:
    """The fallbacks of a failed cold solve, tried in turn until one converges (``judge``,
    the policy's :func:`~gaussmix.theory.solve.policy.verdict`, says whether it did): first
    those that declare the failure's status in their ``prefers``, then the others in the
    order given.  Where every one fails, the failed estimate with their accounts in
    ``Estimate.fallback``.

    Attributes
    ----------
    hooks : tuple
        The fallbacks (each a :data:`~gaussmix.theory.solve.policy.FallbackHook`).
    judge : callable
        ``judge(problem, opts, est) -> (status, message)``.
    """

    hooks: tuple[Callable[[Any], Estimate], ...]
    judge: Callable[[Problem, SolverOptions, Estimate], tuple[IterationStatus, str]]

    def order(self, status: IterationStatus) -> list[Callable[[Any], Estimate]]:
        """The hooks in the order tried after a failure of ``status``."""
        return sorted(self.hooks, key=lambda h: status not in getattr(h, "prefers", ()))

    def __call__(self, s: Any) -> Estimate:
        failed, texts = s.est, []
        for hook in self.order(failed.status):
            est = hook(s)
            if self.judge(s.problem, s.opts, est)[0] is IterationStatus.CONVERGED:
                return est
            texts.append(est.fallback)
        return replace(failed, fallback="; ".join(t for t in texts if t))
