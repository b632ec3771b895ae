"""The mechanics of the one solve state: the points of a curve iterated as one state, and
the one integration error estimate of a single point and of a curve's points.

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
integration error estimate, the one of a single point too (:func:`estimate_points`, whose
bookkeeping is :func:`~gaussmix.theory.solve.estimate.refine_rule`; what differs between a
single point's re-solves and a curve's is the policy's declared fields): the stacked state
re-solved with the refined rule from the last solve's secant pairs (:func:`refined_solve`; a
single point's, :func:`_point_resolve`, from the predicted start), the change
of each point's observables, refinement again for the points whose estimate exceeds
``quad_tol``; the points' estimates, whose results the solver assembles
(:func:`~gaussmix.theory.solve.solver.assemble_results`).  Which points are stacked, the
first solve's restart of a sweep's slow points and the fall back to the points one by one
are the continuation's (:func:`gaussmix.experiments.continuation.solve_points`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np

from ..model.outputs import error_keys
from ..numerics.quadrature import QuadratureRule
from ..numerics.tolerances import REFINED_EXTRA_ITER, refined_tol
from .batch import NO_FREEZING, Freezing, SharpPoint, Watch
from .defect import PROXIMAL, coarse_corrected_start, image_at
from .estimate import RuleRefinement, predicted_start, refine_rule, tighter_run
from .fixed_point import FixedPointMap, MapMemory
from .iteration import (
    AndersonState,
    IterationOutcome,
    IterationState,
    IterationStatus,
    KnownImage,
    iterate,
    iterate_to_rule_error,
)
from .memory import AndersonMemory, Phase
from .nested import linear_warm
from .options import SolverOptions
from .refinement import (
    Continuation,
    ErrorEstimate,
    Estimate,
    Observables,
    estimate_randomised,
    light_observables,
    numerical_failure,
    single_phase,
    with_statistics_points,
)
from .state import residual_scale

__all__ = [
    "FirstSolve",
    "plain_first_solve",
    "failed_run",
    "converged_solve",
    "run_points",
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
    point's (:func:`_point_resolve`: the refined rule iterated to ``opts.tol``, then on to
    :func:`~gaussmix.theory.numerics.tolerances.refined_tol` for at most
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
    start = T3.anderson(out.anderson.memory, out.anderson)  # (the re-solve's memory)
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
    equivariant state with the symmetry; a map of one point on its own arrays, as
    :func:`~gaussmix.theory.solve.refinement.evaluate_observables`), with the seed of the
    map's rule, at ``memory``'s channel evaluation where made at ``x``."""
    sym = T.symmetry is not None
    if T.n_points == 1:  # (a single point's arrays, its problem its outputs)
        Q, M, V, b = T.unpack(x)
        if sym:
            Q, M, V, b = T.symmetry.symmetric_state(Q, M, V, b)
        Q, M, V, b, outputs = Q[None], M[None], V[None], b[None], T.problems[0]
    else:
        Q, M, V, b = T.unpack_points(x)
        if sym:
            Q, M, V, b = T.symmetry.symmetric_state(Q, M, V, b)
        outputs = T.outputs
    ev = T.hats(x, memory)
    return light_observables(T.problems, outputs, T.rule, sym, (Q, M, V, b), ev, seed=T.rule.seed)


def failed_run(T: FixedPointMap) -> tuple[FixedPointMap, None, np.ndarray, np.ndarray]:
    """What :func:`run_points` returns for the points of ``T`` where no run is made or the
    run fails: no outcome, no evaluations and an infinite residual for each point."""
    P = T.n_points
    return T, None, np.zeros(P, dtype=int), np.full(P, np.inf)


def run_points(
    T: FixedPointMap,
    x0: np.ndarray,
    opts: SolverOptions,
    *,
    continuation: Continuation,
    stacked: bool,
    memory: AndersonMemory,
    history: dict,
    callback: Callable | None = None,
    watch: Callable[[], Callable] | None = None,
    first_solve: FirstSolve | None = None,
    on_converged: Callable[[int], None] | None = None,
    coarse_stop: bool = False,
    coarse_prior_panels: int | None = None,
    finer: FixedPointMap | None = None,
    on_finer: Callable[[tuple], None] | None = None,
) -> tuple[FixedPointMap, IterationOutcome | None, np.ndarray, np.ndarray]:
    """The fixed point of the points of ``T`` (with its rule) from ``x0`` after the cheaper
    first phase ``continuation`` the policy chose
    (:func:`~gaussmix.theory.solve.policy.continuation`): the one run of a single point (a
    map of one point) and of a curve's stacked points.

    The first phase: the prior in single precision (a map of one point whose prior's linear
    algebra is most of an iteration, :func:`~gaussmix.theory.solve.refinement.single_phase`),
    or a solve with the rule's coarser rule (:meth:`QuadratureRule.coarsened`), whose
    cheap evaluations converge; the rule's own solve then starts from there with the coarse
    secant pairs as its Jacobian model (each point's own, :meth:`FixedPointMap.pairs`) and
    needs one or two evaluations.  Each phase runs with the Anderson memory the policy
    declares for it and its rule (``memory``,
    :class:`~gaussmix.theory.solve.memory.AndersonMemory`: :attr:`Phase.SOLVE` for the
    first phase and a run without one, :attr:`Phase.RESOLVE` for the rule's run from the
    first phase's fixed point).  Only the starting point and the secant pairs carry over.
    A coarse run that converged at its start made no pairs: the rule's own in ``history``
    (the solve's pairs by rule, e.g. those a sharp switch handed it) stay its Jacobian
    model; each run leaves its own there.

    What differs between a single point's run and a curve's is the policy's, read here:
    ``stacked`` (each point frozen at its own convergence, ``T``'s freezing made with
    :func:`solve_freezing`): each run is the curve's first solve (``first_solve``, its
    restart of a sweep's slow points; the coarse one and, without it, the rule's) or
    :func:`converged_solve` (the rule's after the coarse one, the proximal solves warm from
    its nearest nodes, :meth:`FixedPointMap.warm_from`; without ``first_solve``, a run from
    a given state such as the sharp switch's, from the rule's pairs in ``history``), a
    failed run fails the points
    (None); one point: each run is its iteration (``callback``; ``watch``: a fresh
    ``on_step`` of :func:`~gaussmix.theory.solve.iteration.iterate` for each run, the
    policy's :class:`~gaussmix.theory.solve.policy.FailFast`), a failed first phase is
    ignored and the rule's run returned as it ends.

    Where the policy declares it for one point (the multi-output lasso, whose prior costs
    the same at either channel rule), the coarse run stops near its rule's own error
    (``coarse_stop``: :func:`~gaussmix.theory.solve.iteration.iterate_to_rule_error`, the
    rule's map ``T`` the finer one, its evaluation there the first of the rule's run where
    that starts at the same state), and so does the rule's run where ``finer`` is given (the
    map of the prior's first refinement, which re-solves from this run's end; its
    evaluation at the run's end, where the run stopped at the check, is handed to
    ``on_finer`` for that re-solve's first).

    ``coarse_prior_panels``: the prior's panels in that coarse run (the policy's, for one
    point whose coarse phase only starts the rule's run, where a coarser rule of lines is
    within the coarse channel rule's own error); None: ``T``'s.

    Returns the map of the rule's run (a curve's first solve may make it afresh), its
    outcome (the last evaluated state, whose channel evaluation the outcome's ``aux``
    holds), each point's evaluations in both phases (to its own convergence) and each
    point's own residual."""
    problems, rule = T.problems, T.rule
    kw = dict(tol=opts.tol, max_iter=opts.max_iter, damping=opts.damping, callback=callback)
    fresh = (lambda: {}) if watch is None else (lambda: {"on_step": watch()})
    first = plain_first_solve if first_solve is None else first_solve
    n_first: np.ndarray | int = 0
    phase, aux, coarse_ran, known = Phase.SOLVE, None, False, None
    coarse = rule.coarsened() if continuation is Continuation.COARSE else None
    # (from a predicted start: the coarser rule corrected at the start, where the rule has no
    # secant pairs to start from; with them, the rule's own run from there)
    corrected = continuation is Continuation.CORRECTED and not stacked
    if corrected and history.get(rule) is None:
        coarse = rule.coarsened()
    if continuation is Continuation.SINGLE:  # (a point's prior in float32 first)
        if len(problems) != 1:
            raise ValueError("the single-precision phase is a single point's (P = 1)")
        features = (T.symmetry, T.log_chart)
        x0, pairs, n_first = single_phase(T.problem, rule, x0, opts, features, history, kw, memory)
        if pairs is not None:
            history[rule] = pairs
    elif coarse is not None:
        panels = T.prior_panels if coarse_prior_panels is None else coarse_prior_panels
        Tc = T.like(problems, coarse, T.freezing, prior_panels=panels)
        if stacked:
            _first_memory(memory, coarse, opts)
            Tc, out = first(Tc, x0, opts, None)
        elif corrected:  # (Tc's own map for its pairs and validity below)
            start = AndersonState.init(memory.of(Phase.SOLVE, coarse))
            out = None  # (T converged at the start, or a map failed there: T's run from x0)
            try:
                with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
                    known = image_at(T, x0, history.get(PROXIMAL))
                    res0 = np.max(np.abs(known[1] - x0) / residual_scale(x0, T.K, T.L))
                    if res0 >= opts.tol:
                        Td, aux_c = coarse_corrected_start(T, Tc, known)
                        out = iterate(
                            Td, x0, start, return_image=False, aux=aux_c, **kw, **fresh()
                        )
            except (FloatingPointError, np.linalg.LinAlgError):
                pass
        elif coarse_stop:
            start = AndersonState.init(memory.of(Phase.SOLVE, coarse))
            out, known = iterate_to_rule_error(
                Tc, x0, start, _evaluation(T, lambda o: T.warm_from(Tc, o.aux)), fresh=fresh, **kw
            )
        else:
            start = AndersonState.init(memory.of(Phase.SOLVE, coarse))
            out = iterate(Tc, x0, start, return_image=False, **kw, **fresh())
        coarse_ran = True
        if out is not None and out.converged and Tc.is_valid(out.x):
            rec = out.aux.record
            x0, phase = out.x, Phase.RESOLVE  # (from a fixed point moved by the rule)
            pairs = Tc.pairs(rec, out.anderson, list(range(len(problems))), opts.anderson)
            if pairs is not None or history.get(rule) is None:
                history[rule] = pairs
            n_first = Tc.own_iterations(rec, out.n_iter)
            if stacked:  # (two outputs: the curve's rule is not the single point's)
                aux = T.warm_from(Tc, out.aux)
        elif stacked:
            return failed_run(T)
        elif out is None:  # (no corrected run: T's own from the start, its image known)
            n_first = 0
        elif corrected:  # (the start is not near the fixed point: no run of T from there)
            P = len(problems)
            return T, replace(out, aux=None), np.full(P, out.n_iter), np.full(P, out.residual)
        else:
            n_first, known = out.n_iter, None
    if stacked:
        if coarse_ran or first_solve is None:  # (from the first phase, or a given state)
            aux = T.memory() if aux is None else aux
            frozen = aux.record.frozen
            report = None if on_converged is None else lambda *_: on_converged(int(frozen.sum()))
            m = memory.of(phase, rule)
            out = converged_solve(T, x0, history.get(rule), opts, report, aux, anderson=m)
        else:
            _first_memory(memory, rule, opts)
            T, out = first_solve(T, x0, opts, on_converged)
        if out is None:
            return failed_run(T)
    elif finer is not None:  # (a closed-form channel's prior_stop: no coarse phase before it)
        start = memory.starting(phase, rule, history.get(rule))
        shared = lambda o: finer.shared(T, o.aux)._replace(ev=o.aux.ev)  # noqa: E731
        out, at_finer = iterate_to_rule_error(
            T, x0, start, _evaluation(finer, shared), fresh=fresh, **kw
        )
        if on_finer is not None and at_finer is not None:
            on_finer(at_finer)
    else:
        start = memory.starting(phase, rule, history.get(rule))
        Tk = T if known is None else KnownImage(T, known)
        aux = aux if known is None else known[2]
        out = iterate(Tk, x0, start, return_image=False, aux=aux, **kw, **fresh())
    history[rule] = out.anderson
    if not stacked and out.aux is not None and out.aux.warm is not None:
        history[PROXIMAL] = out.aux.warm  # (a curve's next predicted start, corrected)
    rec = None if out.aux is None else out.aux.record
    if rec is None:  # (a run whose first evaluation failed: no record)
        P = len(problems)
        return T, out, np.full(P, out.n_iter) + n_first, np.full(P, out.residual)
    residual = np.where(rec.frozen, rec.residuals, out.residual)  # each point's own
    return T, out, T.own_iterations(rec, out.n_iter) + n_first, residual


def _evaluation(
    T: FixedPointMap, memory: Callable[[IterationOutcome], MapMemory]
) -> Callable[[IterationOutcome], tuple[np.ndarray, MapMemory]]:
    """The ``finer`` of :func:`~gaussmix.theory.solve.iteration.iterate_to_rule_error`: the
    image of ``T`` at an outcome's state, from the memory ``memory(outcome)``, and the
    memory after it."""

    def image(out: IterationOutcome) -> tuple[np.ndarray, MapMemory]:
        ev, mem = T.hats_memory(out.x, memory(out))
        return T.image(out.x, ev, mem)

    return image


def _first_memory(memory: AndersonMemory, rule: QuadratureRule, opts: SolverOptions) -> None:
    """Refuse a curve's first stacked solve with ``rule`` where the policy's memory of a
    solve from its start is not the options' own, which the first solve runs with
    (:data:`FirstSolve`: no rule a curve stacks, :func:`~gaussmix.theory.solve.policy.
    policy_for_points`, is the sharp regime's randomised one)."""
    m = memory.of(Phase.SOLVE, rule)
    if m != opts.anderson:
        raise ValueError(
            f"a curve's first stacked solve runs with the options' Anderson memory "
            f"{opts.anderson}; the policy declares {m} for {rule.describe()}"
        )


def converged_solve(
    T: FixedPointMap,
    x0: np.ndarray,
    history: AndersonState | None,
    opts: SolverOptions,
    report: Callable[..., None] | None = None,
    memory: MapMemory | None = None,
    *,
    anderson: int,
):
    """The stacked iteration of ``T`` from ``x0`` (:func:`iterated_solve`, with the Anderson
    memory ``anderson``: the policy's for the run, ``SolvePolicy.memory.of(phase, rule)``),
    or None where it fails."""
    try:
        out = iterated_solve(T, x0, history, opts, report, memory=memory, anderson=anderson)
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
    *,
    anderson: int,
) -> IterationOutcome:
    """The stacked iteration of ``T`` from ``x0`` with the secant pairs ``history``, with
    the solver's options, each point frozen at its own convergence (``report``: the
    iteration's callback; ``on_step``: :func:`~gaussmix.theory.solve.iteration.iterate`'s); ``T``
    is made with :func:`solve_freezing` of ``opts``.  ``memory``: the map's memory to start
    from (:meth:`FixedPointMap.memory`, whose record a caller reads as the iteration goes; a
    fresh one by default); the outcome's ``aux`` is the memory after it.  ``anderson``: the
    Anderson memory, the policy's for the run (``SolvePolicy.memory.of(phase, rule)``,
    :class:`~gaussmix.theory.solve.memory.AndersonMemory`; a curve's first solve runs with
    the options' own, which :func:`_first_memory` checks the policy declares; a run from a
    fixed point may take a longer one, :func:`run_points`)."""
    kw = dict(tol=opts.tol, max_iter=opts.max_iter, damping=opts.damping)
    if T.freezing.tol != opts.tol or T.freezing.trail != opts.anderson + 1:
        raise ValueError("a stacked solve's map is made with solve_freezing(opts)")
    start = T.anderson(anderson, history)
    if memory is None:
        memory = T.memory()
    return iterate(
        T, x0, start, return_image=False, callback=report, on_step=on_step, aux=memory, **kw
    )


def estimate_points(
    T: FixedPointMap,
    out: IterationOutcome,
    n_iter: Sequence[int],
    residual: Sequence[float],
    opts: SolverOptions,
    *,
    kind: ErrorEstimate,
    stacked: bool,
    predicted: bool,
    merge: bool,
    own_pairs: bool,
    memory: AndersonMemory,
    history: dict | None = None,
    callback: Callable | None = None,
) -> list[Estimate]:
    """Each point's observables of Theorem 2 (eq. (9)) at the fixed point ``out.x`` of
    ``T`` and their integration error of the ``kind`` the policy chose
    (:func:`~gaussmix.theory.solve.policy.estimate_kind`): the one estimate of a single
    point (a map of one point) and of a curve's stacked points.

    By refinement of the rule (:func:`~gaussmix.theory.solve.estimate.refine_rule`, the
    one driver of its bookkeeping): the points re-solved with the refined rule from their
    last solve, the change of each point's observables plus their own errors, again for
    the points whose estimate of the test error or training loss exceeds ``quad_tol``
    (``auto_refine``, at most ``max_refine`` times); across the replicates of a randomised
    rule (one point: :func:`~gaussmix.theory.solve.refinement.estimate_randomised`); or
    none.  A point's own evaluations and residual (``n_iter``, ``residual``) count its
    re-solves'.

    What differs between a single point's re-solves and a curve's is the policy's, each
    a declared field read once here:

    - ``stacked``: each point of the re-solve frozen at its own convergence
      (:func:`refined_solve`), or the iteration of a map of one point (:func:`_point_resolve`);
    - ``predicted``: the re-solve starts from the predicted start
      (:func:`~gaussmix.theory.solve.estimate.predicted_start`, one step of the last
      solve's own iteration; a map of one point), else from the last fixed point;
    - ``merge``: the tighter tolerance in the same iteration (:func:`refined_solve`), the
      proximal solves warm from the last solve's nearest nodes;
    - ``own_pairs``: the re-solve's secant pairs each point's own
      (:meth:`FixedPointMap.pairs`), else the last solve's stacked ones;
    - ``memory``: the Anderson memory of each re-solve, :attr:`Phase.RESOLVE`'s of its rule
      (a single point's longer one,
      :func:`~gaussmix.theory.solve.estimate.resolve_memory`, or ``opts.anderson``), and of
      the replicates of a randomised rule, :attr:`Phase.SOLVE`'s.

    ``out``: the outcome that reached the fixed point (its secant pairs ``anderson``, the
    map's memory of its last evaluation ``aux``; a fixed point not converged is returned as
    it is).  ``history``: the solve's secant pairs by rule (a single point's, whose curve
    hands them to its next point): the refined rule's there, where an earlier solve left
    them, start its re-solve, and each re-solve leaves its own; None for a curve's points.
    Returns each point's estimate; after a failure (a re-solve that does not converge, a
    numerical failure) each point's with the failure's status."""
    problems = T.problems
    P = len(problems)
    if kind is ErrorEstimate.REPLICATES and out.status is IterationStatus.CONVERGED:
        if P != 1:
            raise ValueError("the estimate across a randomised rule's replicates is one point's")
        known = history if history is not None else {}
        # (the point's own evaluations and residual: the outcome's are a run's)
        own = replace(out, n_iter=int(n_iter[0]), residual=float(residual[0]))
        return [estimate_randomised(problems[0], T, own, opts, callback, known, memory)]
    if predicted and P != 1:
        raise ValueError("the predicted start of a re-solve is a single point's (P = 1)")
    kw = dict(tol=opts.tol, max_iter=opts.max_iter, damping=opts.damping, callback=callback)
    x, status, msg = out.x, out.status, out.message
    n_iters, residuals = [int(n) for n in n_iter], [float(r) for r in residual]
    states = [x] if P == 1 else T.split(x)
    # each point's last solve: its map, state, index there and memory (a stacked point's
    # single point's map made once, at the end, :meth:`FixedPointMap.point_maps`)
    where = [(T, x, i, out.aux) for i in range(P)]
    done = None
    try:
        if status is not IterationStatus.CONVERGED:
            raise _Failed(status, msg)
        mem = T.hats_memory(x, out.aux)[1]
        obs = stacked_observables(T, x, mem)
        where = [(T, x, i, mem) for i in range(P)]
        done = RuleRefinement.unrefined(obs, n_iters, residuals)
        # the last solve: its map, state, points (indices among all), memory and pairs
        last = (T, x, list(range(P)), mem, out.anderson)

        def resolve(finer: QuadratureRule, active: list[int]):
            nonlocal last
            T_last, x_last, points, mem_last, pairs_last = last
            mine = [points.index(i) for i in active]  # (in T_last's points)
            freezing = refined_freezing(opts, merge) if stacked else NO_FREEZING
            T2 = T.like([problems[i] for i in active], finer, freezing)
            pairs = T_last.pairs(mem_last.record, pairs_last, mine, opts.anderson, own=own_pairs)
            earlier = None if history is None else history.get(finer)
            if earlier is not None and not earlier.empty:  # (the refined rule's own model)
                pairs = earlier
            m2 = memory.of(Phase.RESOLVE, finer)
            start = T2.anderson(m2, pairs)
            x2 = T_last.points_of(x_last, mine)
            if predicted:  # (one step of the last solve's own iteration)
                x2 = predicted_start(
                    T_last, x2, T_last.anderson(opts.anderson, pairs_last), opts, mem_last
                )
            if stacked:
                # (else each point's iterates from here are its single point's)
                warm = T2.warm_from(T_last, mem_last) if merge else None
                solved = refined_solve(T2, x2, start, opts, kw, merge, memory=warm)
            else:  # (its proximal solves from the last rule's cells or nearest nodes)
                warm = linear_warm(mem_last.warm, T_last.rule, finer)
                solved = _point_resolve(T2, x2, start, opts, kw, m2, MapMemory(warm=warm))
            if solved is not None and history is not None:
                history[finer] = solved[3]
            if solved is None or not solved[0].converged:
                failed = None if solved is None else solved[0]
                raise _Failed(
                    IterationStatus.MAX_ITER if failed is None else failed.status,
                    "refined quadrature: "
                    + ("a point did not converge" if failed is None else failed.message),
                )
            out2, own, own_res, pairs2 = solved
            mem2 = T2.hats_memory(out2.x, out2.aux)[1]
            obs2 = stacked_observables(T2, out2.x, mem2)
            last = (T2, out2.x, active, mem2, pairs2)
            for j, (i, xi) in enumerate(zip(active, T2.split(out2.x))):
                states[i], where[i] = xi, (T2, out2.x, j, mem2)
            return [(o, int(n), float(r)) for o, n, r in zip(obs2, own, own_res)]

        if kind is ErrorEstimate.REFINED_RULE:
            failures: list = []

            def resolving(finer: QuadratureRule, active: list[int]):
                try:
                    return resolve(finer, active)
                except _Failed as exc:  # (refine_rule keeps what each point had)
                    failures.append(exc)
                    return None

            done = refine_rule(T.rule, obs, done.n_iter, done.residual, opts, resolving)
            if failures:
                raise failures[0]
        fulls = _with_statistics(T, where, states, done.obs)
    except (_Failed, FloatingPointError, np.linalg.LinAlgError, ValueError) as exc:
        if isinstance(exc, _Failed):
            status, msg = exc.status, exc.message
        else:
            status, msg = numerical_failure(exc)[:2]
        if done is None:
            blank = dict.fromkeys(_ERROR_KEYS, 0.0)
            done = RuleRefinement([None] * P, [blank] * P, [blank] * P, n_iters, residuals)
        keep = isinstance(exc, _Failed)  # (a numerical failure has no observables)
        return [
            Estimate(
                where[i][0],
                states[i],
                done.n_iter[i],
                done.residual[i],
                status,
                msg,
                done.obs[i] if keep else None,
                dict(done.quad[i]),
                dict(done.evals[i]),
                memory=where[i][3],
            )
            for i in range(P)
        ]
    return [
        Estimate(
            T_i,
            states[i],
            done.n_iter[i],
            done.residual[i],
            IterationStatus.CONVERGED,
            msg,
            full,
            done.quad[i],
            done.evals[i],
            memory=m_i,
        )
        for i, (full, T_i, m_i) in enumerate(fulls)
    ]


class _Failed(Exception):
    """A re-solve of :func:`estimate_points` that did not converge (its status and
    message), or a fixed point that was not."""

    def __init__(self, status: IterationStatus, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


def _point_resolve(
    T2: FixedPointMap,
    x0: np.ndarray,
    start: AndersonState,
    opts: SolverOptions,
    kw: dict,
    memory: int,
    aux: MapMemory,
) -> tuple[IterationOutcome, list[int], list[float], AndersonState]:
    """The refined fixed point of a map of one point ``T2`` from ``x0`` in an error
    estimate (:func:`estimate_points`, a single point's re-solve): the refined rule
    iterated to ``opts.tol`` from the secant pairs ``start``, then on to
    :func:`~gaussmix.theory.numerics.tolerances.refined_tol`, unless already there (from the
    predicted start, often at the first evaluation), with the Anderson memory ``memory``
    (:func:`~gaussmix.theory.solve.estimate.tighter_run`; a point that does not get there
    keeps its state at ``opts.tol``).  The state returned is the image, or the last iterate
    (whose channel evaluation the outcome's memory holds) with two outputs and with a rule
    that computes its own moments (:class:`~gaussmix.theory.channel.normaliser.NormaliserRule`),
    as the stacked K = 3 curves do: the observables then need no evaluation of the refined
    rule of their own, one of four at K = 3; such a rule's fixed point already passed at its
    start is its image (measured along the K = 5 curve, 3 evaluations of the finer rule a
    point -> 2).  Returns the outcome (not converged: the failure), the point's evaluations
    and residual, and the secant pairs of the iteration to ``opts.tol``."""
    finer = T2.rule
    keep = finer.computes_moments or T2.L == 2  # the last iterate
    out2 = iterate(T2, x0, start, return_image=not keep, aux=aux, **kw)
    pairs = out2.anderson
    if not out2.converged:
        return out2, [out2.n_iter], [out2.residual], pairs
    mem2 = out2.aux
    if out2.residual >= refined_tol(opts.tol):
        more_start = AndersonState.init(memory, out2.anderson)
        # (the last iterate's image is known: the tighter run's first evaluation, the same
        # numbers, costs no second evaluation of the prior and the bias there)
        Tt = T2 if not keep or out2.image is None else KnownImage(T2, (out2.x, out2.image, mem2))
        more = tighter_run(Tt, out2.x, more_start, opts, {**kw, "return_image": not keep}, mem2)
        if more is not None:
            mem2 = more.aux
        if more is not None and more.converged:
            out2 = replace(more, n_iter=out2.n_iter + more.n_iter)
    if finer.computes_moments and out2.n_iter <= 1:  # converged where it started: to T2(x)
        g, mem2 = T2.evaluate(out2.x, mem2)
        out2 = replace(out2, x=g)
    out2 = replace(out2, aux=mem2)
    return out2, [out2.n_iter], [out2.residual], pairs


def _with_statistics(
    T: FixedPointMap,
    where: list[tuple[FixedPointMap, np.ndarray, int, MapMemory]],
    states: list[np.ndarray],
    obs: list[Observables],
) -> list[tuple[Observables, FixedPointMap, MapMemory]]:
    """Each point's observables ``obs`` with the free energy, penalty and sparsity at its
    state (:func:`~gaussmix.theory.solve.refinement.with_statistics_points`), its map and
    memory: of one point, its last map and memory (the prior's details at its hats as the
    map's, :meth:`FixedPointMap.prior_at`); of several, each point's single point's map
    (:func:`_point_maps`), the priors' details of all points in one call where the prior
    takes them (:meth:`FixedPointMap.prior_details`)."""
    problems = T.problems
    if len(problems) == 1:
        T1, x1, _, m1 = where[0]
        full = with_statistics_points(problems, [T1], [x1], obs, [None], [m1])
        return [(full[0], T1, m1)]
    maps, memories = _point_maps(where, states)
    priors = T.prior_details([m.ev for m in memories])
    fulls = with_statistics_points(problems, maps, states, obs, priors, memories)
    return list(zip(fulls, maps, memories))


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
    from ``x0`` (``on_converged``: called after each evaluation with the points frozen),
    with the options' Anderson memory (the policy's for a curve's first solve,
    :func:`_first_memory`)."""
    memory = T.memory()
    frozen = memory.record.frozen
    report = None if on_converged is None else lambda *_: on_converged(int(frozen.sum()))
    return T, converged_solve(T, x0, None, opts, report, memory=memory, anderson=opts.anderson)


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
