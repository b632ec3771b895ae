"""The stacked mechanics of the one solve state: the points of a curve iterated and
estimated as one state.

A curve's points (problems that differ only in ``lam`` and ``alpha``) are solved by the
same steps as a single point, run by the same loop
(:meth:`~gaussmix.theory.solve.policy.SolvePolicy.loop`) over the steps their policy
declares (:func:`~gaussmix.theory.solve.policy.policy_for_points`), on the one state with
a point axis (:class:`~gaussmix.theory.solve.solve_state.SolveState`, whose policy
declares these mechanics: ``stacked``), by
:func:`~gaussmix.theory.solve.solver.solve_batch`.  Every decision is the policy's (the
first rule, the continuation, the sharp regime's test
:func:`~gaussmix.theory.solve.policy.sharp_rules`, the kind of estimate, which secant pairs
the re-solves start from); this module does the work below the state and imports neither
the policy nor the solver: the stacked iteration (:func:`iterated_solve`,
:func:`converged_solve`), each point frozen at its own convergence; each point's own
integration error estimate, as a single point's
(:func:`estimate_points`, :func:`~gaussmix.theory.solve.refinement.estimate_errors`, one
driver :func:`~gaussmix.theory.solve.estimate.refine_rule`): the stacked state re-solved
with the refined rule from the last solve's secant pairs (:func:`refined_solve`), the change
of each point's observables, refinement again for the points whose estimate exceeds
``quad_tol``; the points' estimates, whose results the solver assembles
(:func:`~gaussmix.theory.solve.solver.assemble_results`).  Which points are stacked, the
first solve's restart of a sweep's slow points and the fall back to the points one by one
are the continuation's (:func:`gaussmix.experiments.continuation.solve_points`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np

from ..model.outputs import error_keys
from ..numerics.quadrature import QuadratureRule
from ..numerics.tolerances import REFINED_EXTRA_ITER, refined_tol
from .batch import Freezing, SharpPoint, Watch
from .estimate import RuleRefinement, refine_rule, tighter_run
from .fixed_point import FixedPointMap, MapMemory
from .iteration import AndersonState, IterationOutcome, IterationState, IterationStatus, iterate
from .options import SolverOptions
from .refinement import (
    Estimate,
    Observables,
    light_observables,
    with_statistics_points,
)

__all__ = [
    "FirstSolve",
    "plain_first_solve",
    "converged_solve",
    "estimate_points",
    "iterated_solve",
    "refined_solve",
    "refined_freezing",
    "solve_freezing",
]

#: the observables whose integration error is estimated (the observables registry's)
_ERROR_KEYS = error_keys()


def solve_freezing(opts: SolverOptions, watch: Watch | None = None) -> Freezing:
    """The freezing of a stacked solve with the options ``opts`` (:func:`iterated_solve`):
    each point frozen at its own residual below ``opts.tol``, with its last
    ``opts.anderson + 1`` evaluations kept (its own secant pairs), and ``watch``."""
    return Freezing(opts.tol, opts.anderson + 1, watch=watch)


def refined_freezing(opts: SolverOptions, merge: bool) -> Freezing:
    """The freezing of the refined re-solve of an error estimate (:func:`refined_solve`):
    with ``merge`` (and a tighter tolerance below ``opts.tol``), each point going on to
    :func:`~gaussmix.theory.numerics.tolerances.refined_tol` and frozen at its image at
    ``opts.tol``
    where it does not get there within
    :data:`~gaussmix.theory.numerics.tolerances.REFINED_EXTRA_ITER` evaluations; without, frozen at
    ``opts.tol``."""
    tight = refined_tol(opts.tol)
    if merge and tight < opts.tol:
        return Freezing(tight, opts.anderson + 1, opts.tol, REFINED_EXTRA_ITER)
    return Freezing(opts.tol, opts.anderson + 1)


def refined_solve(
    T: FixedPointMap,
    x0: np.ndarray,
    anderson: AndersonState,
    opts: SolverOptions,
    kw: dict,
    merge: bool,
    memory: MapMemory | None = None,
) -> tuple[IterationOutcome, np.ndarray, np.ndarray, AndersonState] | None:
    """The refined stacked fixed point of ``T`` from ``x0`` in an error estimate, as a single
    point's (:func:`~gaussmix.theory.solve.refinement.estimate_errors`: the refined rule iterated
    to ``opts.tol``, then on to :func:`~gaussmix.theory.numerics.tolerances.refined_tol` for at
    most
    :data:`~gaussmix.theory.numerics.tolerances.REFINED_EXTRA_ITER` more evaluations): each point's
    state where its own residual passes ``refined_tol`` (one output: its image there; two:
    its last iterate, see below), else its image at ``opts.tol``; its own evaluations and
    residuals; and the secant pairs of the iteration to ``opts.tol`` (for the next
    refinement); the outcome's ``aux`` is the map's memory after the iteration to
    ``opts.tol`` (``memory``: the one it starts from, :meth:`FixedPointMap.warm_from`).  None
    where a point does not reach ``opts.tol``.

    Without ``merge`` (one output, a curve over alpha): the two iterations one after the
    other, as a single point's (each point's iterates from there are its single point's,
    :func:`_tighter_stacked`).  With ``merge`` (two outputs, whose curve is on the curve's
    rule, not the single point's; one output, a sweep over lambda, whose first solve
    restarted its slow points, :func:`_first_solve`, so that its iterates are not its single
    points' from the start): in one iteration, each
    point going on towards ``refined_tol`` while others still converge to ``opts.tol``, and
    frozen at its image there where it does not get there within ``REFINED_EXTRA_ITER``
    evaluations (:attr:`~gaussmix.theory.solve.batch.Freezing.settle_tol`): on the explorer's
    K = 3 cross-entropy curves, 3 to 5
    evaluations of the refined rule where the two iterations took 5 to 7, in each of which
    the points already at ``opts.tol`` waited for the others (BENCHMARKS.md, "The
    explorer's redraw").  A point that passes ``refined_tol`` there keeps its last iterate
    ``x``, not its image: the outcome's memory holds the channel's moments at ``x`` (a frozen
    point's, of its frozen state), so the observables of the estimate
    (:func:`stacked_observables`) need no evaluation of the refined rule of their own (one
    of three to four a point on the K = 3 curves of ``benchmarks/bench_curves.py``).  The
    estimate stays what it was: ``|T(x) - x| / s < refined_tol`` puts ``x`` within about
    ``refined_tol / (1 - r)`` of the refined fixed point (``r`` the map's contraction; its
    image within ``r`` times that), a hundred times below the error of stopping the coarser
    rule's iteration at ``opts.tol`` that the estimate is to hold
    (:data:`~gaussmix.theory.numerics.tolerances.REFINED_TOL_FACTOR`); the observables move by
    that order (measured on the K = 3 curves at ``tol = 1e-8``: at most 7e-11; on the lasso
    sweep of ``benchmarks/bench_curves.py``, where it saves 2 of the 8 evaluations of the
    refined rules and the 2 evaluations of the observables, see BENCHMARKS.md, "The lasso
    sweep's estimates merged"). A point
    frozen at ``opts.tol`` (:attr:`~gaussmix.theory.solve.batch.Freezing.settle_tol`) keeps its
    image, whose moments
    the observables evaluate (for those points alone)."""
    merged = merge and refined_tol(opts.tol) < opts.tol
    if T.freezing != refined_freezing(opts, merge):
        raise ValueError("the refined map is made with refined_freezing(opts, merge)")
    kw = {**kw, "tol": T.freezing.tol}
    out = iterate(T, x0, anderson, return_image=not merged, aux=memory, **kw)
    if not out.converged:
        return None
    history = out.anderson
    rec = out.aux.record
    if merged:  # each point's last iterate, a settled point's image
        out = replace(out, x=np.where(rec.settled[T.blocks], rec.frozen_g, out.x))
    else:
        out = replace(out, x=T.images(rec, out.x))
    own = T.own_iterations(rec, out.n_iter)
    own_res = np.where(rec.frozen, rec.residuals, out.residual)
    if not merged:
        out, own, own_res = _tighter_stacked(T, out, own, own_res, opts, kw)
    return out, own, own_res, history


def _tighter_stacked(
    T: FixedPointMap,
    out: IterationOutcome,
    own: np.ndarray,
    own_res: np.ndarray,
    opts: SolverOptions,
    kw: dict,
) -> tuple[IterationOutcome, np.ndarray, np.ndarray]:
    """The refined stacked fixed point ``out`` of ``T`` (each point's images, evaluations
    ``own`` and residuals ``own_res``) iterated on to
    :func:`~gaussmix.theory.numerics.tolerances.refined_tol`, as a single point's
    (:func:`~gaussmix.theory.solve.estimate.tighter_run`, frozen point by point): each point
    that converges to it within
    :data:`~gaussmix.theory.numerics.tolerances.REFINED_EXTRA_ITER` more evaluations takes its
    image there, the others keep theirs at ``opts.tol``."""
    if refined_tol(opts.tol) >= opts.tol:  # (no tighter run: no map for it)
        return out, own, own_res
    T3 = T.like(T.problems, T.rule, Freezing(tol=refined_tol(opts.tol)))
    start = T3.anderson(opts.anderson, out.anderson)
    more = tighter_run(T3, out.x, start, opts, kw, aux=T3.shared(T, out.aux))
    if more is None or not more.aux.record.frozen.any():
        return out, own, own_res
    rec = more.aux.record
    done = rec.frozen
    x = np.where(done[T3.blocks], T3.images(rec, more.x), out.x)
    own = np.where(done, own + T3.own_iterations(rec, more.n_iter), own)
    own_res = np.where(done, rec.residuals, own_res)
    return replace(out, x=x), own, own_res


def stacked_observables(
    T: FixedPointMap, x: np.ndarray, memory: MapMemory | None = None
) -> list[Observables]:
    """Each point's errors and losses at the stacked state ``x``:
    :func:`~gaussmix.theory.solve.refinement.light_observables` of the map's points (of its
    equivariant state with the symmetry, as a single point's), at ``memory``'s channel
    evaluation where made at ``x``."""
    Q, M, V, b = T.unpack_points(x)
    if T.symmetry is not None:
        Q, M, V, b = T.symmetry.symmetric_state(Q, M, V, b)
    return light_observables(
        T.problems, T.outputs, T.rule, T.symmetry is not None, (Q, M, V, b), T.hats(x, memory)
    )


def converged_solve(
    T: FixedPointMap,
    x0: np.ndarray,
    history: AndersonState | None,
    opts: SolverOptions,
    report: Callable[..., None] | None = None,
    memory: MapMemory | None = None,
):
    """The stacked iteration of ``T`` from ``x0`` (:func:`iterated_solve`), or None where it
    fails."""
    try:
        out = iterated_solve(T, x0, history, opts, report, memory=memory)
    except SharpPoint:
        return None
    if not out.converged or not T.is_valid(out.x):
        return None
    return out


def iterated_solve(
    T: FixedPointMap,
    x0: np.ndarray,
    history: AndersonState | None,
    opts: SolverOptions,
    report: Callable[..., None] | None = None,
    on_step: Callable[[IterationState], IterationState | None] | None = None,
    memory: MapMemory | None = None,
) -> IterationOutcome:
    """The stacked iteration of ``T`` from ``x0`` with the secant pairs ``history``, with
    the solver's options, each point frozen at its own convergence (``report``: the
    iteration's callback; ``on_step``: :func:`~gaussmix.theory.solve.iteration.iterate`'s); ``T``
    is made with :func:`solve_freezing` of ``opts``.  ``memory``: the map's memory to start
    from (:meth:`FixedPointMap.memory`, whose record a caller reads as the iteration goes; a
    fresh one by default); the outcome's ``aux`` is the memory after it."""
    kw = dict(tol=opts.tol, max_iter=opts.max_iter, damping=opts.damping)
    if T.freezing.tol != opts.tol or T.freezing.trail != opts.anderson + 1:
        raise ValueError("a stacked solve's map is made with solve_freezing(opts)")
    anderson = T.anderson(opts.anderson, history)
    if memory is None:
        memory = T.memory()
    return iterate(
        T, x0, anderson, return_image=False, callback=report, on_step=on_step, aux=memory, **kw
    )


def estimate_points(
    T: FixedPointMap,
    x: np.ndarray,
    n_iter: np.ndarray,
    residual: np.ndarray,
    opts: SolverOptions,
    history: AndersonState | None = None,
    merge: bool = False,
    memory: MapMemory | None = None,
    *,
    refine: bool,
    own_pairs: bool,
) -> list[Estimate] | None:
    """The estimates of the points of the stacked fixed point ``x`` of ``T``, each with its
    integration error estimated as :func:`~gaussmix.theory.solve.refinement.estimate_errors`
    estimates a single point's: the stacked state re-solved with the refined rule (returning
    the image, so that the state moves with the rule), the change of each point's
    observables plus their own errors; again, for the points whose estimate of the test
    error or training loss exceeds ``quad_tol`` (``auto_refine``, at most ``max_refine``
    times); None after a failure.  As a single point's, each re-solve starts with the
    secant pairs of the last solve (``history``: those of the iteration that reached
    ``x``; with ``own_pairs`` each point's own, :meth:`FixedPointMap.pairs`,
    :func:`~gaussmix.theory.solve.policy.own_refined_pairs`) as its model of the Jacobian,
    and a point converged in it leaves it with its own image (with ``merge``, two outputs
    or a sweep over lambda: its last iterate, whose channel evaluation its memory holds,
    :func:`refined_solve`).
    ``refine``: whether the estimate is by refinement of the rule (the policy's
    :func:`~gaussmix.theory.solve.policy.estimate_kind`; else each point's observables and
    their own errors).  ``memory``: the memory of the iteration that reached ``x`` (its
    record and last evaluation), None for a fresh one."""
    problems = T.problems
    kw = dict(tol=opts.tol, max_iter=opts.max_iter, damping=opts.damping)
    states = T.split(x)
    try:
        memory = T.hats_memory(x, memory)[1]
        obs = stacked_observables(T, x, memory)
    except (FloatingPointError, np.linalg.LinAlgError, ValueError):
        return None
    # each point's last solve: its stacked map, state, index there and memory (its single
    # point's map made once, at the end, :meth:`FixedPointMap.point_maps`)
    where = [(T, x, i, memory) for i in range(len(problems))]
    # the last solve and its points (indices among all)
    last = (T, x, list(range(len(problems))), memory)

    def resolve(finer: QuadratureRule, active: list[int]):
        nonlocal last, history
        T_last, x_last, points, mem_last = last
        mine = [points.index(i) for i in active]  # (in T_last's points)
        T2 = T.like([problems[i] for i in active], finer, refined_freezing(opts, merge))
        own = own_pairs
        pairs = T_last.pairs(mem_last.record, history, mine, opts.anderson, own=own)
        x2 = T_last.points_of(x_last, mine)
        # (else each point's iterates from here are its single point's)
        start = T2.warm_from(T_last, mem_last) if merge else None
        anderson = T2.anderson(opts.anderson, pairs)
        solved = refined_solve(T2, x2, anderson, opts, kw, merge, memory=start)
        if solved is None:
            return None
        out2, own, own_res, history = solved
        try:
            mem2 = T2.hats_memory(out2.x, out2.aux)[1]
            obs2 = stacked_observables(T2, out2.x, mem2)
        except (FloatingPointError, np.linalg.LinAlgError, ValueError):
            return None
        last = (T2, out2.x, active, mem2)
        for j, (i, xi) in enumerate(zip(active, T2.split(out2.x))):
            states[i], where[i] = xi, (T2, out2.x, j, mem2)
        return [(o, int(n), float(r)) for o, n, r in zip(obs2, own, own_res)]

    done = RuleRefinement.unrefined(obs, [int(n) for n in n_iter], [float(r) for r in residual])
    if refine:  # (the policy's estimate by refinement of the rule)
        done = refine_rule(T.rule, obs, done.n_iter, done.residual, opts, resolve)
        if done.failed:
            return None
    obs, quad, evals = done.obs, done.quad, done.evals
    n_iters, residuals = done.n_iter, done.residual
    maps, memories = _point_maps(where, states)
    try:
        priors = T.prior_details([m.ev for m in memories])
        fulls = with_statistics_points(problems, maps, states, obs, priors, memories)
    except (FloatingPointError, np.linalg.LinAlgError, ValueError):
        return None
    return [
        Estimate(
            maps[i],
            states[i],
            n_iters[i],
            residuals[i],
            IterationStatus.CONVERGED,
            "converged",
            full,
            quad[i],
            evals[i],
            memory=memories[i],
        )
        for i, full in enumerate(fulls)
    ]


#: the first stacked solve of a batch (``SolveState.first_solve``): given the map (its
#: freezing made with :func:`solve_freezing`), the cold start, the options and a progress
#: callback (``on_converged(n)``, or None), the map that made it and the converged
#: outcome, or None where it fails (a curve's continuation restarts its slow points there,
#: :func:`gaussmix.experiments.continuation.solve_points`)
FirstSolve = Callable[
    [FixedPointMap, np.ndarray, SolverOptions, "Callable[[int], None] | None"],
    "tuple[FixedPointMap, IterationOutcome | None]",
]


def plain_first_solve(
    T: FixedPointMap,
    x0: np.ndarray,
    opts: SolverOptions,
    on_converged: Callable[[int], None] | None = None,
) -> tuple[FixedPointMap, IterationOutcome | None]:
    """The first stacked solve without a continuation of its own: :func:`converged_solve`
    from ``x0`` (``on_converged``: called after each evaluation with the points frozen)."""
    memory = T.memory()
    frozen = memory.record.frozen
    report = None if on_converged is None else lambda *_: on_converged(int(frozen.sum()))
    return T, converged_solve(T, x0, None, opts, report, memory=memory)


def _point_maps(
    where: list[tuple[FixedPointMap, np.ndarray, int, MapMemory]], states: list[np.ndarray]
) -> tuple[list[FixedPointMap], list[MapMemory]]:
    """Each point's single point's map at its state ``states[i]`` in its last solve
    (``where``: the stacked map, its state, the point's index there and the map's memory)
    and its memory of
    its share of the channel evaluation there, one :meth:`FixedPointMap.point_maps` for the
    points of each solve."""
    maps: list = [None] * len(where)
    memories: list = [None] * len(where)
    solves: dict = {}  # id of a stacked map -> (it, its state, its points, theirs here)
    for i, (T, x, j, memory) in enumerate(where):
        _, _, _, points, mine = solves.setdefault(id(T), (T, x, memory, [], []))
        points.append(j)
        mine.append(i)
    for T, x, memory, points, mine in solves.values():
        _, made, known = T.point_maps(x, memory, points, [states[i] for i in mine])
        for i, m, k in zip(mine, made, known):
            maps[i], memories[i] = m, k
    return maps, memories
