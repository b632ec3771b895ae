"""The first phase of a large dense ridge fixed point on the covariances' leading axes.

The dense ridge prior (:mod:`gaussmix.theory.prior.dense`) costs ``O((L r)^3)`` an
evaluation, most of an iteration where ``r`` (the axes with variance) is in the hundreds:
MNIST's ten classes, ``n = L r = 6453``, 12 / 21 s of CPU in float32 / double on one BLAS
thread.  The same prior on the leading ``p`` axes of the covariances' weighted sum
(:func:`~gaussmix.theory.prior.dense.coarse_covariance`) costs ``(p / r)^3`` of it, and its
map ``Tc`` differs from the map ``T`` by a smooth function of the state (the axes left out),
so the defect correction converges fast: the fixed point of ``Tc + (T(x) - Tc(x))``, whose
Jacobian is ``Tc``'s, is ``T``'s to the change of ``T - Tc`` between ``x`` and it.  Each
correction costs one evaluation of ``T`` and one iteration of the cheap map
(:func:`coarse_axes_phase`); the first, far from the fixed point, both in float32.

Only a starting point, as the single-precision phase
(:func:`~gaussmix.theory.solve.refinement.single_phase`) whose place it takes: the double
phase (:func:`~gaussmix.theory.solve.batch_solve.run_points`) iterates ``T`` itself from
there to its own convergence test, so the answer is ``T``'s fixed point to ``tol`` whatever
the correction did (here it converges at its first evaluation).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..numerics import tolerances
from ..numerics.quadrature import QuadratureRule
from ..prior.prior import coarse_axes_problem
from ..problem.problem import Problem
from .defect import DefectCorrected, corrected_at
from .fixed_point import MapMemory, new_map
from .iteration import AndersonState, iterate
from .memory import AndersonMemory, Phase
from .options import SolverOptions
from .state import is_valid_state, residual_scale

__all__ = ["CoarsePhase", "coarse_axes_phase"]


@dataclass(frozen=True)
class CoarsePhase:
    """What :func:`coarse_axes_phase` hands to the double phase: the state to start from,
    its secant pairs, the phase's evaluations, whether it converged (False: no correction
    reduced the full map's residual, or the coarse start did not converge; the
    single-precision phase then starts from the solve's own start) and the full map's
    residual at ``x`` where evaluated there (inf otherwise)."""

    x: np.ndarray
    pairs: AndersonState | None
    evaluations: int
    converged: bool
    residual: float = np.inf


def coarse_axes_phase(
    problem: Problem,
    rule: QuadratureRule,
    x0: np.ndarray,
    opts: SolverOptions,
    features: tuple,
    history: dict,
    kw: dict,
    memory: AndersonMemory,
) -> CoarsePhase | None:
    """The state the double phase starts from, by defect correction on the coarse axes
    (module docstring), as a :class:`CoarsePhase`; None where ``problem`` has no coarse
    problem (:func:`~gaussmix.theory.prior.prior.coarse_axes_problem`).

    1. The coarse map in float32 from ``x0`` to
       :data:`~gaussmix.theory.numerics.tolerances.COARSE_AXES_START_TOL` (its fixed point
       is within the axes left out of ``T``'s: a fine evaluation is worth it from there);
       not converged within :data:`~gaussmix.theory.numerics.tolerances.SINGLE_PHASE_MAX_ITER`
       evaluations, the phase has not converged (the coarse problem can be harder than
       the full one: fewer axes, a stronger separation).
    2. At most :data:`~gaussmix.theory.numerics.tolerances.COARSE_AXES_MAX_CORRECTIONS`
       times: ``T`` and the coarse map at ``x`` (one channel evaluation), ``T``'s residual
       ``r`` (the first time with both priors in float32, half the cost: from the coarse
       fixed point ``r`` is of the order of the axes left out, and the correction reaches
       about ``g r``, still above the float32 maps' distance from the double ones); the
       corrected coarse map iterated from ``x`` to a tenth of the residual the correction
       is expected to reach, ``g r`` with ``g =``
       :data:`~gaussmix.theory.numerics.tolerances.COARSE_AXES_GAIN`, or of ``tol``
       (whichever is larger), with the secant pairs of the runs before (a constant
       correction leaves the map's differences, so its pairs, unchanged); its first image
       is the coarse one the difference was formed from (no second coarse prior at ``x``).
       The first correction's run is the float32 coarse map's (corrected by the float32
       difference) to that target or to
       :data:`~gaussmix.theory.numerics.tolerances.COARSE_AXES_SINGLE_TOL`, whichever is
       larger, and goes on with the double coarse map only where its residual is still
       above the target (the later runs double throughout).  It stops where
       ``r`` is below ``tol`` (then ``x`` is returned), or after the correction from
       ``r <= tol / g`` (whose fixed point is expected within ``tol``), or where a
       correction did not reduce ``r`` tenfold or its run failed (the evaluated state of
       smallest ``r`` is returned, converged if a correction reduced ``r`` there).

    Each evaluation counts one (a correction's ``T`` and coarse prior share the channel
    evaluation).  ``memory``: the policy's Anderson memory
    (:class:`~gaussmix.theory.solve.memory.AndersonMemory`; a solve's).
    """
    coarse = coarse_axes_problem(problem)
    if coarse is None:
        return None
    K, L = problem.n_clusters, problem.dim
    panels = opts.prior_panels
    T = new_map(problem, rule, features, prior_panels=panels)
    Tc = new_map(coarse, rule, features, prior_panels=panels)
    Ts = new_map(coarse, rule, features, prior_panels=panels, single=True)
    max_iter = min(opts.max_iter, tolerances.SINGLE_PHASE_MAX_ITER)
    start = memory.starting(Phase.SOLVE, rule, history.get(rule))
    start_kw = {**kw, "tol": tolerances.COARSE_AXES_START_TOL, "max_iter": max_iter}
    out = iterate(Ts, x0, start, **start_kw)
    spent = out.n_iter
    if not out.converged or not is_valid_state(out.x, K, L):
        return CoarsePhase(x0, None, spent, False)
    x, pairs = out.x, out.anderson
    tol, gain = kw["tol"], tolerances.COARSE_AXES_GAIN
    best: CoarsePhase | None = None  # (the evaluated state of smallest residual)
    T32 = new_map(problem, rule, features, prior_panels=panels, single=True)
    inner_kw = {**kw, "max_iter": max_iter}
    for k in range(tolerances.COARSE_AXES_MAX_CORRECTIONS):
        # (the first correction in float32, full and coarse prior: module docstring)
        Tk, Tck = (T32, Ts) if k == 0 else (T, Tc)
        ev, mem = Tk.hats_memory(x)  # (the map's memory of this evaluation)
        g, _ = Tk.image(x, ev, mem)
        gc, _ = Tck.image(x, ev, MapMemory(ev=ev))
        spent += 1
        r = float(np.max(np.abs(g - x) / residual_scale(x, K, L)))
        if best is not None and r > 0.1 * best.residual:  # (the last one did not pay)
            return replace(best, evaluations=spent)
        if r <= tol:
            return CoarsePhase(x, pairs, spent, True, r)
        best = CoarsePhase(x, pairs, spent, best is not None, r)
        target = 0.1 * max(tol, gain * r)
        # (its first image the coarse one it was formed from: no second prior there)
        corrected, aux = corrected_at(Tck, x, g, gc, MapMemory(ev=ev))
        if k == 0:  # in float32 to its rounding's decade, then in double the rest if any
            reach = max(target, tolerances.COARSE_AXES_SINGLE_TOL)
            corr = iterate(corrected, x, pairs, aux=aux, **{**inner_kw, "tol": reach})
            spent += corr.n_iter
            if not corr.converged or not is_valid_state(corr.x, K, L):
                return replace(best, evaluations=spent)
            x, pairs, aux = corr.x, corr.anderson, None
            if corr.residual <= target:
                continue
            corrected = DefectCorrected(Tc, corrected.delta)  # (no image known at corr.x)
        corr = iterate(corrected, x, pairs, aux=aux, **{**inner_kw, "tol": target})
        spent += corr.n_iter
        if not corr.converged or not is_valid_state(corr.x, K, L):
            return replace(best, evaluations=spent)
        x, pairs = corr.x, corr.anderson
        if gain * r <= tol:
            break
    return CoarsePhase(x, pairs, spent, True)
