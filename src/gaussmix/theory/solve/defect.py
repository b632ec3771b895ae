"""The defect correction of a re-solve with a finer prior rule.

Where the channel is in closed form (the square loss) a map's cost is its prior's rule:
the lasso prior with several effective outputs integrates across lines with a composite
rule whose refinement (:func:`gaussmix.theory.solve.refinement.refine_prior`) costs four
times the lines per doubling at three effective outputs.  Its re-solve from the coarser
rule's fixed point iterates the coarser map corrected by the two rules' difference there
(:class:`DefectCorrected`), then the finer map itself from the corrected fixed point, to
its own convergence test (:func:`defect_corrected_solve`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from .fixed_point import FixedPointMap, HatEvaluation, MapMemory
from .iteration import AndersonState, IteratedMap, IterationOutcome, KnownImage, iterate

__all__ = [
    "PROXIMAL",
    "DefectCorrected",
    "coarse_corrected_start",
    "corrected_at",
    "defect_corrected_solve",
    "image_at",
    "image_at_start",
]

#: the key of a solve's ``history`` (its secant pairs by rule, which a curve hands from
#: point to point) under which a single point's run leaves the proximal points of its last
#: evaluation (:class:`~gaussmix.theory.channel.channel.ProxWarmStart`, used only by an
#: evaluation of the same rule and shapes), the warm start of :func:`image_at`, the rule's
#: evaluation at the next point's predicted start: started
#: from ``h = omega`` instead, that evaluation of the K = 3 cross-entropy's 8536-node rule
#: took 17 ms against 4.2 ms (the explorer's lasso at lam = 9.55e-4)
PROXIMAL = "proximal points"


@dataclass(frozen=True)
class DefectCorrected:
    """The map ``x -> T(x) + delta`` of a coarser prior rule ``T`` corrected by the
    difference ``delta = T'(x0) - T(x0)`` of the finer rule's map ``T'`` at one state ``x0``
    (the defect correction of :func:`defect_corrected_solve`): each evaluation costs the
    channel and the coarser prior.  What :func:`~gaussmix.theory.solve.iteration.iterate`
    reads of a map, the coarse map's (its channel is the finer map's: they differ in the
    prior's rule only); the memory it hands on holds no prior evaluation (its image is not
    the coarse prior's).  Where ``T(x0)`` is already evaluated (it forms ``delta``, and the
    corrected run's first evaluation is at ``x0``), ``coarse`` is ``T`` with that image
    known (:func:`corrected_at`, a :class:`~gaussmix.theory.solve.iteration.KnownImage`):
    no second coarse prior there, the same numbers."""

    coarse: IteratedMap
    delta: np.ndarray

    @property
    def K(self) -> int:
        return self.coarse.K

    @property
    def L(self) -> int:
        return self.coarse.L

    @property
    def log_chart(self) -> bool:
        return self.coarse.log_chart

    def hats_memory(self, x: np.ndarray, memory: MapMemory | None) -> tuple:
        return self.coarse.hats_memory(x, memory)

    def image(self, x: np.ndarray, ev: HatEvaluation, memory: MapMemory) -> tuple:
        g, memory = self.coarse.image(x, ev, memory)
        return g + self.delta, memory._replace(prior=None)


def corrected_at(
    coarse: IteratedMap, x: np.ndarray, g: np.ndarray, gc: np.ndarray, memory: MapMemory
) -> tuple[DefectCorrected, MapMemory]:
    """The coarse map ``coarse`` corrected by ``g - gc``, the finer and the coarse map's
    images at ``x`` (:class:`DefectCorrected`), and the memory its run from ``x`` starts
    with: ``memory``, the coarse map's evaluation at ``x`` that made ``gc`` (for two prior
    rules of one channel evaluation ``ev``, ``MapMemory(ev=ev)``: the run's first
    evaluation, at ``x``, is no channel evaluation of its own).  The coarse image at ``x``
    is the known ``gc`` (:class:`~gaussmix.theory.solve.iteration.KnownImage`) with that
    memory, the one ``coarse.hats_memory(x, memory)`` hands on there: the corrected run's
    first image ``gc + delta`` and its memory are those of an evaluation of the coarse map
    at ``x``, which is not made again."""
    return DefectCorrected(KnownImage(coarse, (x, gc, memory)), g - gc), memory


def image_at(T: FixedPointMap, x: np.ndarray, warm: object | None) -> tuple:
    """``T``'s evaluation at ``x`` ``(x, T(x), memory)``, its proximal points started from
    ``warm`` (the last point's, :data:`PROXIMAL`, where of ``T``'s rule; else from ``h =
    omega``): the start of
    :func:`coarse_corrected_start`, and of ``T``'s run from ``x`` where it converges there
    (:class:`~gaussmix.theory.solve.iteration.KnownImage`)."""
    mine = warm is not None and warm.key[0] == T.rule  # (a rule's own: nothing else)
    ev, m = T.hats_memory(x, T.memory()._replace(warm=warm if mine else None))
    g, m = T.image(x, ev, m)
    return x, g, m


def coarse_corrected_start(
    T: FixedPointMap, Tc: FixedPointMap, known: tuple
) -> tuple[DefectCorrected, MapMemory]:
    """The coarser channel rule's map ``Tc`` corrected by the difference ``T(x) - Tc(x)`` of
    the two maps at a start ``x`` near the fixed point (a curve's predictor;
    :attr:`~gaussmix.theory.solve.refinement.Continuation.CORRECTED`), from ``T``'s
    evaluation there ``known = (x, T(x), memory)`` (:func:`image_at`), and the memory its
    run from ``x`` starts with (its first image ``T(x)``, no evaluation of its own); ``Tc``
    evaluated at ``x`` from ``T``'s proximal points at its nearest nodes
    (:meth:`~gaussmix.theory.solve.fixed_point.FixedPointMap.warm_from`).

    The corrected run's fixed point ``x*`` leaves ``T`` the residual ``D(x*) - D(x)`` of the
    rules' difference ``D = T - Tc``: the difference's change over the distance from the
    predictor to the fixed point, below the screen's tolerance where the predictor is
    within a few thousandths and the coarser rule's error a thousandth; its secant pairs
    are ``Tc``'s, a model of ``T``'s Jacobian to that rule's error.  So ``T``'s run from
    ``x*`` with them converges in one or two evaluations, where from the predictor without
    pairs Anderson's mixing took four or five of ``T`` (it extrapolates from about four
    pairs): measured in :mod:`gaussmix.experiments.curves`."""
    x, g, m = known
    # (a rule with integrals of its own hands on the proximal points it was given: those
    # of T's rule only are mapped to Tc's nodes)
    mine = m.warm is not None and m.warm.key[0] == T.rule
    evc, mc = Tc.hats_memory(x, Tc.warm_from(T, m) if mine else Tc.memory())
    gc, mc = Tc.image(x, evc, mc)
    return corrected_at(Tc, x, g, gc, mc)


def defect_corrected_solve(
    T: FixedPointMap,
    T2: FixedPointMap,
    x: np.ndarray,
    known: MapMemory,
    start: AndersonState,
    kw: dict,
) -> tuple[IterationOutcome, int]:
    """The fixed point of the finer prior rule's map ``T2`` from the coarser one's ``x`` (a
    fixed point of ``T``), by defect correction: ``T2`` and ``T`` evaluated once at ``x``
    (one channel evaluation, two priors), the corrected map ``T + (T2(x) - T(x))``
    (:class:`DefectCorrected`) iterated from ``x`` to ``tol``, then ``T2`` itself from there
    with the corrected run's secant pairs, to its own convergence test (so the answer is
    ``T2``'s fixed point to ``tol`` whatever the correction's quality; a corrected run that
    fails leaves ``T2`` to start from ``x``).

    The corrected map's fixed point ``x*`` differs from ``T2``'s by the change of the rules'
    difference ``D = T2 - T`` between ``x`` and ``x*``: ``T2(x*) - x* = D(x*) - D(x)``, of
    the order of the rules' difference times the state's move, far below ``tol`` where the
    finer rule moves the state by ``1e-4`` or less; ``T2``'s run then converges at its first
    evaluation.  Measured (``benchmarks/bench_lasso_k3.py``, the square loss: 8 x 8, 16 x 16
    and 32 x 32 panels, one prior evaluation 6, 20 and 82 ms on the spectral model's 16
    atoms): the re-solves took 4 to 7 evaluations at 32 x 32, by defect correction two (the
    difference and one of ``T2``'s run) and 3 to 8 of the 16 x 16 rule's.  Used from the
    second refinement on (:func:`~gaussmix.theory.solve.refinement.refine_prior`): the first
    rules' difference (8 -> 16 panels, up to 1e-4) moves the state further, and the 16 x 16
    run from the corrected state still took 2 to 7 evaluations, 11 near the zero estimator
    (seed 1 #21: the prior's unresolved atoms set to zero make the map not smooth there;
    3 from the coarse fixed point).  ``kw``: the options of ``T2``'s runs (its
    ``return_image`` among them: :func:`~gaussmix.theory.solve.refinement.refine_prior`
    keeps their last iterate); the corrected run returns its image.  Returns ``T2``'s
    outcome and the evaluations before its run."""
    ev, m2 = T2.hats_memory(x, known)
    g2, m2 = T2.image(x, ev, m2)
    g1, _ = T.image(x, ev, MapMemory(ev=ev))
    spent = 1
    # (the corrected map's image: ``kw``'s ``return_image`` is for ``T2``'s runs)
    # (its first image the coarse one the difference was formed from: no second prior at x)
    corrected, aux = corrected_at(T, x, g2, g1, MapMemory(ev=ev))
    corr = iterate(corrected, x, start, aux=aux, **{**kw, "return_image": True})
    spent += corr.n_iter
    if not corr.converged:  # (T2 from x: at its first evaluation, the image there)
        return image_at_start(iterate(T2, x, start, aux=m2, **kw)), spent
    return iterate(T2, corr.x, corr.anderson, aux=MapMemory(ev=None), **kw), spent


def image_at_start(out: IterationOutcome) -> IterationOutcome:
    """``out``, or where its run (returning its last iterate, ``return_image=False``)
    converged at its first evaluation, ``out`` with the image there as its state
    (:attr:`~gaussmix.theory.solve.iteration.IterationOutcome.image`): that iterate is the
    run's start, the coarser rule's fixed point, and the answer is the image there, which
    carries the finer rule's change (at a state near the zero estimator the test error
    moves with it by 4e-3, ``bench_lasso_k3.py`` seed 2 #8, where the state moves by less
    than ``tol``)."""
    if out.converged and out.n_iter <= 1 and out.image is not None:
        return replace(out, x=out.image)
    return out
