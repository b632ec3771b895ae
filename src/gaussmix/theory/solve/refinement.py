"""Quadrature rules of a solve, their refinement, and the integration error estimate.

Which rule, continuation and estimate a solve takes is decided by its policy
(:mod:`gaussmix.theory.solve.policy`); this module does part of the work: the first phase of
a run in single precision (:func:`single_phase`; the one run of a point and of a curve's
points is :func:`~gaussmix.theory.solve.batch_solve.run_points`), Theorem 2's observables at
the fixed point (:func:`evaluate_observables`: test error and loss, training error and loss,
the free energy of eq. (168), the penalty and the sparsity of ``W*``), the estimate of the
integration error across the independent replicates of a randomised rule
(:func:`estimate_randomised`; the one estimate of a point and of a curve's points, of the
kind its policy chose, is :func:`~gaussmix.theory.solve.batch_solve.estimate_points`), and
the estimate of a finer rule of the prior's own integrals where it has one
(:func:`refine_prior`: the multi-output lasso).
:func:`~gaussmix.theory.solve.warning_text.integration_warning_text` says where a large
estimate comes from; the solver issues the warning.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from enum import Enum

import numpy as np

from ..channel.channel import ChannelMoments
from ..model.outputs import error_keys
from ..numerics import tolerances
from ..numerics.quadrature import MAX_PANELS, MAX_QUADRATURE_NODES, MAX_TENSOR_DIM, QuadratureRule
from ..numerics.tolerances import SINGLE_REPLICATE_MIN_SHIFT
from ..prior.lasso import OUTER_PANEL_ORDER, outer_panels
from ..prior.prior import (
    PriorResult,
    dense_prior,
    prior_quadrature_dim,
    single_precision_phase,
)
from ..problem.problem import Problem
from .batch import MOMENTS
from .coarse_axes import coarse_axes_phase
from .defect import defect_corrected_solve, image_at_start
from .estimate import (
    MAX_TRAIN_RQMC_NODES,
    Observables,
    replicate_state,
)
from .estimate import finer_randomised as _finer_randomised
from .estimate import half_decides as _half_decides
from .estimate import standard_errors as _standard_errors
from .fixed_point import (
    FixedPointMap,
    HatEvaluation,
    MapMemory,
    needs_quadrature,
    new_map,
)
from .iteration import (
    AndersonState,
    IterationOutcome,
    IterationStatus,
    KnownImage,
    iterate,
)
from .memory import AndersonMemory, Phase
from .nested import nested_warm, refined_blocks, refined_warm, replicate_blocks
from .observables import (
    affine_train_accuracy,
    exact_orthants,
    free_energy_terms,
    gaussian_risk,
    isotropic_softmax_metric,
    stacked_orthants,
    test_accuracy,
    test_loss,
    train_accuracy,
    weight_sparsities,
)
from .options import SolverOptions
from .state import is_valid_state, residual_scale

__all__ = [
    "MAX_QUADRATURE_DIM",
    "MAX_QUADRATURE_NODES",
    "MAX_TRAIN_RQMC_NODES",
    "Observables",
    "evaluate_observables",
    "with_statistics",
    "with_statistics_points",
    "failed_observables",
    "Continuation",
    "ErrorEstimate",
    "single_phase",
    "Estimate",
    "estimate_randomised",
    "numerical_failure",
    "refine_prior",
    "MAX_PRIOR_LINES",
    "MAX_PRIOR_ESTIMATE_LINES",
    "finer_prior_panels",
    "prior_refinement_map",
]

#: largest dimension of a deterministic (tensor) channel rule; beyond it the automatic rule is
#: randomised quasi-Monte Carlo (:class:`~gaussmix.theory.numerics.quadrature.SobolRQMC`)
MAX_QUADRATURE_DIM = MAX_TENSOR_DIM

#: largest number of lines per atom (``(panels OUTER_PANEL_ORDER)^(L' - 1)``, before the
#: kinks' extra panels) of the prior's outer rule that the automatic refinement reaches
#: beyond its first step (:func:`refine_prior`): 1024 panels at two effective outputs, 32 x
#: 32 at three.  Measured on the K = 3 lasso (Delta = 0.5, alpha = 2) under load: a prior
#: evaluation costs 0.02 s with 64 to 256 panels at two effective outputs (cross-entropy,
#: lam = 0.1, whose first refinement already meets ``quad_tol``), 0.09 s with 8 x 8, 0.19 s
#: with 16 x 16 and 0.75 s with 32 x 32 at three (square loss, lam = 0.3); each refinement
#: is a re-solve of 5 to 8 iterations
MAX_PRIOR_LINES = 10_000
#: largest number of lines per atom of the refined rule that makes the prior's estimate:
#: four effective outputs (K = 4 square loss, K = 5 cross-entropy) refine 4 to 8 panels per
#: dimension (13824 lines), three may start from 32 x 32 (``prior_panels=32``, an estimate
#: with 64 x 64: 36864 lines); five or more would need 3.3e5 and have no estimate (NaN)
MAX_PRIOR_ESTIMATE_LINES = 40_000
#: the observables whose integration error is estimated (the observables registry's)
_ERROR_KEYS = error_keys()
#: With the dense prior (general covariances: ten classes fitted from data) a replicate of a
#: randomised rule costs about the same whatever its points (its prior's linear algebra and
#: its ``K`` orthants of dimension ``K - 1``; measured on ten classes from digits, ``lam =
#: 1``, alpha = 1: 85 ms for its state, 100 ms for its observables, the channel ~10 ms of
#: it), so the estimate finds the first half of the replicates first, and the others only
#: where the half does not decide the refinement (:func:`_half_decides`): a rule of at least
#: twice this many replicates
HALF_REPLICATES_MIN = 4
#: (the refinement's target, ``quad_tol``, and the integration warning are on the test error
#: and the training loss; the test loss's estimate is reported, in ``integration_errors``:
#: its integrand, the loss at the Gaussian output itself, is less smooth than the training
#: loss's at the proximal point, and at small ``lam`` it grows with the weights, e.g. 6.5
#: with an estimate of 4e-4 at the K = 4 point of Fig. 3 left, lam = 1e-4, alpha = 3)


class Continuation(Enum):
    """The cheaper first phase of a fixed-point run
    (:func:`~gaussmix.theory.solve.batch_solve.run_points`) before the rule's own solve (the
    solve's policy chooses it, :mod:`gaussmix.theory.solve.policy`)."""

    #: the rule's own iteration from the start
    NONE = "none"
    #: a solve with the rule's
    #: :meth:`~gaussmix.theory.numerics.quadrature.QuadratureRule.coarsened`
    #: rule first, where it has one
    COARSE = "coarse rule"
    #: the map with its prior in single precision first (:func:`single_phase`)
    SINGLE = "single precision"
    #: from a start near the fixed point (a curve's predictor) whose rule has no secant
    #: pairs to start from: the coarser rule corrected by the two rules' difference at the
    #: start first (:func:`~gaussmix.theory.solve.defect.coarse_corrected_start`), which
    #: builds them at the coarser rule's cost; with the rule's pairs, none
    CORRECTED = "coarse rule, defect-corrected"


class ErrorEstimate(Enum):
    """How :func:`~gaussmix.theory.solve.batch_solve.estimate_points` estimates the
    integration error (the solve's policy chooses it, :mod:`gaussmix.theory.solve.policy`)."""

    #: the observables only (a closed-form channel, or no estimate asked for)
    NONE = "none"
    #: the change under re-solves with finer rules (:meth:`QuadratureRule.refined`)
    REFINED_RULE = "refined rule"
    #: the standard error across the independent replicates of a randomised rule
    REPLICATES = "randomised replicates"


# --------------------------------------------------------------------------- observables
def evaluate_observables(
    problem: Problem,
    T: FixedPointMap,
    x: np.ndarray,
    *,
    light: bool = False,
    spread: bool = False,
    memory: MapMemory | None = None,
) -> Observables:
    """Theorem 2 observables at the state ``x``; ``light`` computes only the errors and
    losses (:func:`light_observables` of a batch of one point).  ``memory``: the map's
    memory of an evaluation (:class:`~gaussmix.theory.solve.fixed_point.MapMemory`), whose
    channel evaluation is reused where it was made at ``x``.

    The seeded estimators (orthant probabilities of dimension >= 3, the training error with
    three or more outputs) take the seed of a randomised channel rule.  ``spread`` asks for
    their cheaper versions with the same seeds (common random numbers), for the differences
    between nearby states of :func:`_replicate_values`.
    """
    ev, memory = T.hats_memory(x, memory)
    Q, M, V, b = T.unpack(x)
    sym = T.symmetry is not None  # exchangeable clusters: cluster 0 stands for all
    if sym:
        Q, M, V, b = T.symmetry.symmetric_state(Q, M, V, b)
    state = (Q[None], M[None], V[None], b[None])
    (obs,) = light_observables(
        [problem],
        problem,
        T.rule,
        sym,
        state,
        ev,
        seed=T.rule.seed,
        quick=spread,
    )
    return obs if light else with_statistics(problem, T, x, obs, memory=memory)


def light_observables(
    problems: Sequence[Problem],
    outputs: Problem,
    rule: QuadratureRule,
    exchangeable: bool,
    state: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    ev: HatEvaluation,
    *,
    seed: int = 0,
    quick: bool = False,
) -> list[Observables]:
    """Theorem 2's errors and losses (eq. (9): test and training errors; the training loss;
    the test loss, :func:`~gaussmix.theory.solve.observables.test_loss`) of ``P`` points of one
    mixture at once, a single point being a batch of one.

    ``state`` is ``(Q, M, V, b)`` with a leading axis of points ((P, K0, L, L), (P, K0, L),
    (P, K0, L, L), (P, L); with ``exchangeable`` clusters the equivariant state,
    :meth:`~gaussmix.theory.problem.symmetry.ClusterSymmetry.symmetric_state`) and ``ev`` the
    channel's evaluation there with the ``P K0`` clusters on its leading axis; ``outputs``
    reads the ``P K0`` clusters' outputs (labels, correct sets) as a problem does (the
    problem itself for one point).  Where every orthant has dimension <= 2 (two or three
    classes) each observable of all points is one call over the ``P K0`` clusters (exact);
    with more classes and one-hot labels
    (:func:`~gaussmix.theory.solve.observables.stacked_orthants`),
    without the symmetry and without a zero estimator, the test error of all points is one
    batched orthant call too, and so is the square loss's training error
    (:func:`~gaussmix.theory.solve.observables.affine_train_accuracy`), each orthant refined on
    its own as alone; otherwise, and for the training error of two outputs whose metrics are
    not isotropic (a boundary integral per cluster), point by point, with the seeded
    estimators' ``seed`` and ``quick`` (:func:`evaluate_observables`).
    """
    Q, M, V, b = state
    P, K0, L = M.shape
    p0 = problems[0]
    rho, rho_test = p0.mixture.rho, p0.mixture.test_priors  # (training, test priors)
    Mf, Qf, Vf = M.reshape(-1, L), Q.reshape(-1, L, L), V.reshape(-1, L, L)
    bf = np.repeat(b, K0, axis=0)  # each cluster's bias: ``Mf + bf`` its outputs' means
    mf = Mf + bf
    low = exact_orthants(p0)
    # more classes (orthants of dimension >= 3), one-hot labels, no zero estimator (whose
    # ties test_accuracy breaks point by point): every point's clusters in one batched call
    # too, each orthant decided (and refined) on its own
    stacked = (
        not low and not exchangeable and stacked_orthants(p0) and bool(Qf.any(axis=(1, 2)).all())
    )
    if low:  # every point's clusters in one call
        acc, test_err = test_accuracy(outputs, Mf, bf, Qf)
        test_error = np.clip(1.0 - acc.reshape(P, K0) @ rho_test, 0.0, 1.0)
        test_errs = np.full(P, test_err)
    elif stacked:
        acc, cluster_errs = test_accuracy(
            outputs, Mf, bf, Qf, seed=seed, quick=quick, per_cluster=True
        )
        test_error = np.clip(1.0 - acc.reshape(P, K0) @ rho_test, 0.0, 1.0)
        test_errs = cluster_errs.reshape(P, K0) @ rho_test
    else:
        test_error, test_errs = np.empty(P), np.empty(P)
        for i, p in enumerate(problems):
            acc, test_errs[i] = test_accuracy(
                p, M[i], b[i], Q[i], seed=seed, quick=quick, exchangeable=exchangeable
            )
            test_error[i] = np.clip(1.0 - rho_test @ acc, 0.0, 1.0)
    if low and (L == 1 or p0.loss.affine_prox or isotropic_softmax_metric(outputs, Vf)):
        acc, train_err = train_accuracy(outputs, Mf, bf, Qf, Vf)
        train_error = np.clip(1.0 - acc.reshape(P, K0) @ rho, 0.0, 1.0)
        train_errs = np.full(P, train_err)
    elif stacked and p0.loss.affine_prox:
        acc, cluster_errs = affine_train_accuracy(outputs, Mf, bf, Qf, Vf)
        train_error = np.clip(1.0 - acc.reshape(P, K0) @ rho, 0.0, 1.0)
        train_errs = cluster_errs.reshape(P, K0).max(axis=1)  # as train_accuracy's
    else:  # point by point (the boundary integrals of each point's clusters)
        train_error, train_errs = np.empty(P), np.empty(P)
        for i, p in enumerate(problems):
            acc, train_errs[i] = train_accuracy(
                p, M[i], b[i], Q[i], V[i], qmc_seed=seed, quick=quick, exchangeable=exchangeable
            )
            train_error[i] = np.clip(1.0 - rho @ acc, 0.0, 1.0)
    train_loss = ev.moments.Eloss.reshape(P, K0) @ rho
    if exchangeable:  # cluster 0's risk stands for its point's clusters
        rows = K0 * np.arange(P)
        test_loss = gaussian_risk(p0.loss, outputs.y[rows], mf[rows], Qf[rows], rule)
    else:
        test_loss = gaussian_risk(p0.loss, outputs.y, mf, Qf, rule).reshape(P, K0) @ rho_test
    test_loss_errs = _fallback_spread(problems, rule, exchangeable, M, b, Q)
    Qh, Mh, Vh = (
        ev.Qhat.reshape(P, K0, L, L),
        ev.Mhat.reshape(P, K0, L),
        ev.Vhat.reshape(P, K0, L, L),
    )
    # (the floats of each array at once: ``tolist`` gives each entry's ``float``)
    values = zip(
        test_error.tolist(),
        train_error.tolist(),
        train_loss.tolist(),
        test_loss.tolist(),
        test_errs.tolist(),
        train_errs.tolist(),
        test_loss_errs,
    )
    return [
        Observables(
            state=(Q[i], M[i], V[i], b[i]),
            hats=(Qh[i], Mh[i], Vh[i]),
            # (probabilities: 1 - sum can round a hair below 0, e.g. -2.2e-16 for a training
            # error of zero at K = 4, found by tests/test_properties.py: clipped above)
            test_error=te,
            train_error=tre,
            train_loss=trl,
            test_loss=tl,
            errors={
                "test_error": te_err,
                "train_error": tr_err,
                "train_loss": 0.0,
                "test_loss": tl_err,
            },
        )
        for i, (te, tre, trl, tl, te_err, tr_err, tl_err) in enumerate(values)
    ]


def _fallback_spread(
    problems: Sequence[Problem],
    rule: QuadratureRule,
    exchangeable: bool,
    M: np.ndarray,
    b: np.ndarray,
    Q: np.ndarray,
) -> list[float]:
    """Each point's standard error of the test loss across the replicates of a randomised
    rule that only the test loss uses (the fallback of
    :class:`~gaussmix.theory.channel.normaliser.NormaliserRule`, whose channel moments are its own:
    the state does not move with the replicates), else 0 (``M``, ``b``, ``Q`` with a leading
    axis of points, as :func:`light_observables`'s)."""
    fallback = rule.fallback
    if not rule.computes_moments or fallback is None or not fallback.randomised:
        return [0.0] * len(problems)
    spreads = []
    for i, problem in enumerate(problems):
        values = [
            test_loss(problem, M[i], b[i], Q[i], rep, exchangeable=exchangeable)
            for rep in fallback.replicates()
        ]
        spreads.append(float(np.std(values, ddof=1) / np.sqrt(len(values))))
    return spreads


def with_statistics(
    problem: Problem,
    T: FixedPointMap,
    x: np.ndarray,
    obs: Observables,
    prior: PriorResult | None = None,
    memory: MapMemory | None = None,
) -> Observables:
    """``obs`` with the free energy (eq. (168)), penalty value and sparsity of ``W*``
    (``prior``: the prior's details at the hats of ``x``, where already computed;
    ``memory``: the map's memory of an evaluation, reused where made at ``x``)."""
    return with_statistics_points([problem], [T], [x], [obs], [prior], [memory])[0]


def with_statistics_points(
    problems: list[Problem],
    maps: list[FixedPointMap],
    states: list[np.ndarray],
    obs: list[Observables],
    priors: list[PriorResult | None],
    memories: list[MapMemory | None] | None = None,
) -> list[Observables]:
    """:func:`with_statistics` of each of several points of one mixture (the points of a
    curve, each with its map, state, observables and prior's details or None), the
    sparsities of all of them in one
    :func:`~gaussmix.theory.solve.observables.weight_sparsities` (``memories``: each map's
    memory of an evaluation, or None)."""
    done = []
    if memories is None:
        memories = [None] * len(maps)
    for problem, T, x, prior, memory in zip(problems, maps, states, priors, memories):
        Q, M, V, b = T.unpack(x)
        ev = T.hats(x, memory)
        # the caller's evaluation, else the memory's where it has the details
        pr = prior if prior is not None else T.prior_at(ev, memory)
        fe = free_energy_terms(
            problem, M, Q, V, ev.Mhat, ev.Qhat, ev.Vhat, ev.moments.Eenv, pr.psi_w
        )
        done.append((fe, pr))
    sparsities = weight_sparsities(problems[0].mixture, [pr for _, pr in done])
    return [
        replace(o, free_energy=fe, penalty_value=pr.penalty, sparsity=sp, complete=True)
        for o, (fe, pr), sp in zip(obs, done, sparsities)
    ]


def failed_observables(
    problem: Problem, T: FixedPointMap, x: np.ndarray, memory: MapMemory | None = None
) -> Observables:
    """NaN observables at a failed point (with its hats where they can be evaluated;
    ``memory``'s evaluation where made at ``x``)."""
    Q, M, V, b = T.unpack(x)
    nan = np.full_like
    try:
        ev = T.hats(x, memory)
        hats = (ev.Qhat, ev.Mhat, ev.Vhat)
    except Exception:  # noqa: BLE001 - reporting a failed point
        hats = (nan(Q, np.nan), nan(M, np.nan), nan(V, np.nan))
    return Observables((Q, M, V, b), hats, np.nan, np.nan, np.nan, {})


# --------------------------------------------------------------------------- the solve
def single_phase(
    problem: Problem,
    rule: QuadratureRule,
    x0: np.ndarray,
    opts: SolverOptions,
    features: tuple,
    history: dict,
    kw: dict,
    memory: AndersonMemory,
) -> tuple[np.ndarray, AndersonState | None, int]:
    """The single-precision phase of a fixed-point run of one point
    (:func:`~gaussmix.theory.solve.batch_solve.run_points`): the map with the prior in
    float32 (:func:`gaussmix.theory.prior.dense.dense_ridge_terms`' ``single``: half the time of
    an evaluation at MNIST's size, within ~1e-6 of the double map), iterated from ``x0``
    to :data:`~gaussmix.theory.numerics.tolerances.SINGLE_PHASE_TOL`, or for at most
    :data:`~gaussmix.theory.numerics.tolerances.SINGLE_PHASE_MAX_ITER` evaluations.

    Returns the state the double phase starts from (the phase's last image, or ``x0`` where
    the phase failed or left the cone of valid states), its secant pairs (None after a
    failure: the double phase starts with the pairs it had) and its evaluations.  Only a
    starting point: the double map's iteration decides convergence and returns the state.
    ``memory``: the policy's Anderson memory
    (:class:`~gaussmix.theory.solve.memory.AndersonMemory`; a solve's).
    Where the covariances have a cheaper coarse prior on their leading axes, the phase is
    the defect correction on those axes instead
    (:func:`~gaussmix.theory.solve.coarse_axes.coarse_axes_phase`), and the float32 map
    from ``x0`` only where that did not converge (its evaluations counted).
    """
    coarse = coarse_axes_phase(problem, rule, x0, opts, features, history, kw, memory)
    if coarse is not None and coarse.converged:  # (a cheaper coarse prior: its phase)
        return coarse.x, coarse.pairs, coarse.evaluations
    spent = 0 if coarse is None else coarse.evaluations
    Ts = new_map(problem, rule, features, prior_panels=opts.prior_panels, single=True)
    start = memory.starting(Phase.SOLVE, rule, history.get(rule))
    max_iter = min(opts.max_iter, tolerances.SINGLE_PHASE_MAX_ITER)
    out = iterate(
        Ts, x0, start, **{**kw, "tol": tolerances.SINGLE_PHASE_TOL, "max_iter": max_iter}
    )
    usable = out.status in (IterationStatus.CONVERGED, IterationStatus.MAX_ITER)
    if not usable or not is_valid_state(out.x, problem.n_clusters, problem.dim):
        return x0, None, spent + out.n_iter
    return out.x, out.anderson, spent + out.n_iter


@dataclass(frozen=True)
class Estimate:
    """The solve after the error estimate: the map and state it ended with, the iteration's
    totals, the observables (None after a numerical failure) and the integration error of
    each observable in three parts, the change under the last refinement of the channel rule
    (``quad``), the final evaluation's own error (``evals``: orthant and training-error
    integrals) and the change under the last refinement of the prior's own rule (``prior``:
    the multi-output lasso, :func:`refine_prior`; zero for a prior in closed form); and
    what a fallback did (``fallback``); the map's memory of its last evaluation
    (``memory``, a :class:`~gaussmix.theory.solve.fixed_point.MapMemory`: its channel
    evaluation at ``x``, reused by the observables and the prior's refinement)."""

    T: FixedPointMap
    x: np.ndarray
    n_iter: int
    residual: float
    status: IterationStatus
    message: str
    obs: Observables | None
    quad: dict
    evals: dict
    prior: dict = field(default_factory=lambda: dict.fromkeys(_ERROR_KEYS, 0.0))
    #: what the solve policy's fallback did (empty: it did not run): the account of a
    #: success (the result's ``params['fallback']``) or of its own failure (appended to the
    #: message)
    fallback: str = ""
    memory: MapMemory | None = None

    @property
    def errors(self) -> dict:
        """The integration error of each observable (``quad + evals + prior``)."""
        return {k: self.quad[k] + self.evals[k] + self.prior[k] for k in _ERROR_KEYS}


#: the exceptions of a numerical failure at the fixed point (reported, not raised)
_NUMERICAL_FAILURES = (FloatingPointError, np.linalg.LinAlgError, ValueError)


def numerical_failure(exc: Exception) -> tuple[IterationStatus, str, None]:
    """Status, message and (no) observables of a numerical failure at the fixed point."""
    return IterationStatus.NUMERICAL_FAILURE, f"numerical failure at the fixed point: {exc}", None


def finer_prior_panels(panels: int, n_outer: int, first: bool) -> int | None:
    """Twice ``panels``, or None where the outer rule of the prior would exceed
    :data:`MAX_PRIOR_LINES` lines per atom (:data:`MAX_PRIOR_ESTIMATE_LINES` for the
    ``first`` refinement, which makes the estimate) or
    :data:`~gaussmix.theory.numerics.quadrature.MAX_PANELS` panels."""
    finer = 2 * panels
    cap = MAX_PRIOR_ESTIMATE_LINES if first else MAX_PRIOR_LINES
    if finer > MAX_PANELS or (finer * OUTER_PANEL_ORDER) ** n_outer > cap:
        return None
    return finer


def prior_refinement_map(problem: Problem, T: FixedPointMap) -> FixedPointMap | None:
    """The map of the first refinement of the prior's rule that :func:`refine_prior` makes
    from a fixed point of ``T`` (twice its panels, :func:`finer_prior_panels`), or None
    where it makes none (a prior without a rule of its own, or beyond the caps)."""
    n_outer = prior_quadrature_dim(problem)
    if n_outer == 0:
        return None
    finer = finer_prior_panels(T.prior_panels or outer_panels(n_outer), n_outer, first=True)
    return None if finer is None else new_map(problem, T.rule, T, prior_panels=finer)


def _prior_refinement_reaches(prior: dict, quad: dict, evals: dict, quad_tol: float) -> bool:
    """Whether :func:`refine_prior` refines the prior's rule again: the change under its last
    refinement, ``prior``, exceeds ``quad_tol`` for the test error or the training loss (the
    targets of ``quad_tol``), and for each that does, the rest of its estimate, the channel
    rule's part ``quad`` and the evaluation's own ``evals`` (which no rule of the prior
    reduces), is at most ``quad_tol``: the target is within reach (as
    :func:`_refinement_reaches` decides for a randomised channel rule; where the rest is
    zero, a channel in closed form, every refinement within the caps is made while the
    change exceeds ``quad_tol``, as before).

    Where it is not, the answer and its estimate are those of the last refinement made (the
    change under it bounds the error of its finer rule).  Measured on six of the K = 4
    cross-entropy multi-output lasso problems of the cold test that took over 10 s of CPU
    (``tests/test_cold.py``): the channel's randomised rule leaves 7e-7 to 5e-5 out of
    reach of ``quad_tol``, the first refinement (8 x 8 -> 16 x 16 panels) changes the test
    error by 6e-6 to 6e-5, and the second (32 x 32, four times the lines of the prior) by
    9e-8 to 1.4e-5, below the channel's part, at 17 to 31 % of the solve's CPU time; the
    estimate of the answer at 16 x 16 is that first change, up to 20 times the one at
    32 x 32 (the training loss of #440: 1.7e-5 for 7.5e-7)."""
    excess = [k for k in ("test_error", "train_loss") if prior[k] > quad_tol]
    return bool(excess) and all(quad[k] + evals[k] <= quad_tol for k in excess)


def refine_prior(
    problem: Problem,
    est: Estimate,
    opts: SolverOptions,
    callback: Callable | None,
    history: dict,
    anderson: int,
    *,
    at_start: tuple | None = None,
) -> Estimate:
    """The integration error of the prior's own rule, by refinement.

    Where the prior has its own rule (:func:`~gaussmix.theory.prior.prior.prior_quadrature_dim`)
    and the solve asks for an error estimate (the policy's step,
    :class:`gaussmix.theory.solve.policy.RefinePrior`), after the channel's refinement
    (:func:`~gaussmix.theory.solve.batch_solve.estimate_points`); a solve that did not
    converge is returned as it is.  The
    multi-output lasso's moments (:func:`~gaussmix.theory.prior.lasso.gaussian_l1_moments`) are
    exact along lines and integrated across them by a composite Gauss-Legendre rule of ``L' - 1``
    dimensions, whose error reaches the order parameters (and so every observable) through
    the fixed point.  As for the channel, the state of ``est`` (converged
    with its final channel rule) is re-solved with twice the panels per outer dimension; the
    change of each observable is its ``prior`` error and the refined answer is returned.
    With ``auto_refine`` this repeats while that change of the test error or the training
    loss exceeds ``quad_tol`` and the rest of its estimate leaves room for that target
    (:func:`_prior_refinement_reaches`), within ``max_refine`` refinements and
    :data:`MAX_PRIOR_LINES` lines per atom (the first refinement, the estimate itself, is
    always made within :data:`MAX_PRIOR_ESTIMATE_LINES`; beyond, from five effective outputs
    on, the prior's errors are NaN: not estimated, and the solver warns).  The re-solves
    start from the fixed point and reuse its channel evaluation there (the channel does not
    depend on the prior's rule), the first with the channel rule's secant pairs, each next
    one with the last re-solve's (the Jacobian model of the nearest state and map: 14 K = 3
    lasso points of ``bench_lasso_k3.py``, the second refinement's 92 -> 79 evaluations),
    with the Anderson memory ``anderson`` (the policy's for the prior's refinement,
    :attr:`~gaussmix.theory.solve.memory.Phase.PRIOR`).  Each re-solve's state is its last
    iterate (``return_image=False``, converged: ``|T2(x) - x| / s < tol``), not its image:
    the outcome's memory holds the channel's and the prior's evaluations there (the prior's
    with its details), so its observables cost no channel evaluation and its statistics
    (:func:`with_statistics`) no prior evaluation, one of the finest rule's two to three
    (measured on ``bench_lasso_k3.py``'s 80 problems of seeds 0 and 1: the square loss's
    32 x 32 evaluations 3 -> 2 a point, the same iterations; the answers move by at most
    1.5e-9, the order of stopping at ``tol``: the image and the last iterate are both
    within about ``tol / (1 - r)`` of the fixed point, ``r`` the map's contraction).  A
    re-solve that converged at its first evaluation returns the image there
    (:func:`~gaussmix.theory.solve.defect.image_at_start`): its last iterate would be the
    coarser rule's fixed point itself, and the change under refinement zero however
    much the finer rule moves an observable (near the zero estimator, seed 2 #8, the test
    error by 4e-3 for a state that moves by less than ``tol``).  ``at_start``: the first
    refinement's map evaluated at ``est``'s state, ``(x, T'(x), memory)``, where the solve's
    run made that evaluation (stopped near its rule's error, the policy's ``prior_stop``):
    the re-solve's first evaluation (:class:`~gaussmix.theory.solve.iteration.KnownImage`).
    """
    n_outer = prior_quadrature_dim(problem)
    if est.status is not IterationStatus.CONVERGED:
        return est
    # (each re-solve's last iterate, whose channel and prior evaluations the outcome's memory
    # holds: the observables and the statistics at it cost no evaluation of their own)
    kw = dict(
        tol=opts.tol,
        max_iter=opts.max_iter,
        damping=opts.damping,
        callback=callback,
        return_image=False,
    )
    T, x, obs, evals, mem = est.T, est.x, est.obs, dict(est.evals), est.memory
    n_iter, res, status, msg = est.n_iter, est.residual, est.status, est.message
    prior = dict(est.prior)
    panels = T.prior_panels or outer_panels(n_outer)
    changed = False
    # (a channel in closed form: the prior's rule is the map's cost; from the second
    # refinement on, whose rules' difference is small, see defect_corrected_solve)
    corrected = not needs_quadrature(problem)
    pairs = history.get(T.rule)  # (then each re-solve's own: the model nearest the next)
    try:
        for k in range(opts.max_refine if opts.auto_refine else 1):
            finer = finer_prior_panels(panels, n_outer, first=k == 0)
            if finer is None:
                if k == 0:
                    prior = dict.fromkeys(_ERROR_KEYS, np.nan)
                break
            # (the channel at x, if evaluated there, is the same: its evaluation, and its
            # proximal points the warm start of the next one, as within an iteration)
            T2 = new_map(problem, T.rule, T, prior_panels=finer)
            known = T2.shared(T, mem)._replace(ev=None if mem is None else mem.ev)
            # (the newest pairs up to the memory the policy declares for the prior's
            # refinement, ``anderson``: a re-solve's, or with the sharp regime's randomised
            # rule its larger memory; measured on the K = 4 cross-entropy lasso problems of
            # the cold test, 20 pairs instead of 12: #217, #477, #409 14 -> 11, 11 -> 9,
            # 11 -> 10 evaluations of the re-solve)
            start = AndersonState.init(anderson, pairs)
            if corrected and k > 0:
                out2, spent = defect_corrected_solve(T, T2, x, known, start, kw)
                n_iter += spent
            else:
                Tk = T2 if k > 0 or at_start is None else KnownImage(T2, at_start)
                out2 = iterate(Tk, x, start, aux=known, **kw)
                out2 = image_at_start(out2)
            pairs = out2.anderson
            mem = out2.aux
            n_iter += out2.n_iter
            if not out2.converged:
                status, msg = out2.status, f"refined prior quadrature: {out2.message}"
                break
            mem = T2.hats_memory(out2.x, mem)[1]
            obs2 = evaluate_observables(problem, T2, out2.x, light=True, memory=mem)
            prior = {key: abs(obs2.value(key) - obs.value(key)) for key in _ERROR_KEYS}
            evals = dict(obs2.errors)
            T, x, obs, res, panels, changed = T2, out2.x, obs2, out2.residual, finer, True
            if not _prior_refinement_reaches(prior, est.quad, evals, opts.quad_tol):
                break
        if changed and status is IterationStatus.CONVERGED:
            obs = with_statistics(problem, T, x, obs, memory=mem)
    except _NUMERICAL_FAILURES as exc:
        status, msg, obs = numerical_failure(exc)
    return replace(
        est,
        T=T,
        x=x,
        n_iter=n_iter,
        residual=res,
        status=status,
        message=msg,
        obs=obs,
        evals=evals,
        prior=prior,
        memory=mem,
    )


def _replicate_values(
    problem: Problem,
    T: FixedPointMap,
    x: np.ndarray,
    opts: SolverOptions,
    callback: Callable | None,
    history: dict,
    memory: MapMemory | None = None,
    *,
    anderson: AndersonMemory,
    known: dict | None = None,
    stop: int | None = None,
    halves: dict | None = None,
    at_x: list | None = None,
) -> tuple[dict, int] | None:
    """The errors and losses at the fixed point of each replicate of a randomised rule.

    Each replicate of ``T.rule`` alone (an independent randomisation; the rule is their
    average; its proximal solves start at the rule's last ones, held by ``memory``, the
    map's memory of its last evaluation: :func:`~gaussmix.theory.solve.nested.nested_warm`)
    moves the fixed point from ``x``; the replicate's state is found by
    :func:`~gaussmix.theory.solve.estimate.replicate_state` (its linear response, to
    :data:`~gaussmix.theory.numerics.tolerances.REPLICATE_SHIFT_RTOL` of the shift), and the
    observables are evaluated there with common random numbers (the same seeded orthant and
    training-error estimators at every replicate, so that their own noise cancels in the
    spread).  To first order in the channel error the fixed point of the full rule is the
    mean of the replicates' fixed points, so the spread over ``sqrt(n_rep)`` is the standard
    error of its observables.  Where the solve's first phase is in single precision (the
    dense ridge prior on a large matrix,
    :func:`~gaussmix.theory.prior.prior.single_precision_phase`) the replicate's state is
    found with the prior in float32 (within ~1e-6 of the double map, half the time of its
    linear algebra) where its shift is at least
    :data:`~gaussmix.theory.numerics.tolerances.SINGLE_REPLICATE_MIN_SHIFT`, else again in
    double precision (and the next replicates with it); the observables are the double
    channel's at that state either way.  ``known``: the values of the first replicates,
    found before (the next ones are found, up to ``stop``, default all of them).

    ``halves``: the values of every replicate of ``T.rule``; the values returned are then
    those of the replicates of its refinement (``T.rule.refined()``).  Replicate ``r`` of
    the refined rule is ``T.rule``'s replicate ``r`` extended by its tail
    (:meth:`~gaussmix.theory.numerics.quadrature.SobolRQMC.tails`), and its channel
    integrals the average of the two halves', so to first order in the channel error its
    fixed point's shift, and each observable's, is the average of theirs: only the tail's
    state is found (half the nodes, from ``x``; its proximal solves cold: the tail's points
    are new) and the replicate's value is the average of the two.  ``at_x``: a list to
    which the map's memory of each replicate's channel evaluation at ``x`` is appended (the
    first of its iteration).  ``anderson``: the policy's Anderson memory
    (``SolvePolicy.memory``; the replicates start as a solve of the rule, and mix with
    ``anderson.of(Phase.SOLVE, T.rule)`` pairs,
    :attr:`~gaussmix.theory.solve.memory.Phase.SOLVE`).
    Returns the values (a list per observable, in the replicates' order) and the iterations
    spent, or None if a replicate's iteration fails.
    """
    values: dict = {k: list(known[k]) if known else [] for k in _ERROR_KEYS}
    n_iter = 0
    reps = T.rule.replicates() if halves is None else T.rule.tails()
    single = single_precision_phase(problem)
    scale = residual_scale(x, T.K, T.L)
    model = history.get(T.rule)  # (all the full rule's pairs: each replicate's bound)
    pairs = anderson.starting(Phase.SOLVE, T.rule, model)  # (the replicates' pairs)
    m = pairs.memory  # (and memory)
    gains: dict = {}  # (every replicate's bound from the same model at the same x: once)
    for r in range(len(values["test_error"]), len(reps) if stop is None else stop):
        rep = reps[r]
        warm = None  # (a tail's points are new: its proximal solves cold)
        if halves is None:
            warm = nested_warm(
                None if memory is None else memory.warm,
                T.rule,
                rep,
                replicate_blocks(T.rule, r, len(reps)),
            )
        Tr = new_map(problem, rep, T, single=True) if single else new_map(problem, rep, T)
        # (its channel at x, the first evaluation of its iteration in either precision)
        start = Tr.hats_memory(x, MapMemory(warm=warm))[1]
        if at_x is not None:
            at_x.append(start)
        found = None
        if single:  # the prior in float32, where its shift is well above that rounding
            found = replicate_state(Tr, x, pairs, opts, callback, start, m, model, gains)
            if found is not None:
                n_iter += found[1]
                shift = float(np.max(np.abs(found[0] - x) / scale))
                if not shift >= SINGLE_REPLICATE_MIN_SHIFT:
                    found, single = None, False  # (and the next replicates in double)
        if found is None:
            if Tr.single:  # (again in double, from the same channel evaluation at x)
                Tr, start = new_map(problem, rep, T), start._replace(record=None)
            found = replicate_state(Tr, x, pairs, opts, callback, start, m, model, gains)
            if found is None:
                return None
            n_iter += found[1]
        xr, _, at_r = found  # (``memory`` stays the rule's: every replicate warms from it)
        obs = evaluate_observables(problem, Tr, xr, light=True, spread=True, memory=at_r)
        for k in _ERROR_KEYS:
            half = None if halves is None else halves[k][r]
            values[k].append(obs.value(k) if half is None else (half + obs.value(k)) / 2)
    return values, n_iter


def estimate_randomised(
    problem: Problem,
    T: FixedPointMap,
    out: IterationOutcome,
    opts: SolverOptions,
    callback: Callable | None,
    history: dict,
    memory: AndersonMemory,
) -> Estimate:
    """The estimate of one point with a randomised rule
    (:func:`~gaussmix.theory.solve.batch_solve.estimate_points`): the integration error is
    the standard error across its replicates (:func:`_standard_errors` of
    :func:`_replicate_values`) plus the final evaluation's own error.  With ``auto_refine``
    the rule is refined (twice the points) while the estimate of the test error or training
    loss exceeds ``quad_tol`` and the target is within reach within ``MAX_QUADRATURE_NODES``
    nodes at the optimistic rate ``1 / N``, and otherwise while the training error's
    estimate exceeds :data:`~gaussmix.theory.numerics.tolerances.TRAIN_ERROR_TARGET` (up to
    ``MAX_TRAIN_RQMC_NODES`` nodes); never where the evaluation's own error alone leaves no
    room for the target (:func:`_refinement_reaches`: a finer channel rule does not reduce
    it).  Its replicates and each refined rule's re-solve run with the Anderson memory the
    policy declares for a solve (``memory``, :attr:`~gaussmix.theory.solve.memory.Phase.SOLVE`
    of the rule)."""
    kw = dict(tol=opts.tol, max_iter=opts.max_iter, damping=opts.damping, callback=callback)
    x, n_iter, res, status, msg = out.x, out.n_iter, out.residual, out.status, out.message
    mem = out.aux  # the memory of the map's last evaluation
    refined = None  # the values of the replicates of a rule refined by its tails
    for k in range(opts.max_refine + 1):
        mem = T.hats_memory(x, mem)[1]
        obs = evaluate_observables(problem, T, x, light=True, memory=mem)
        evals = dict(obs.errors)
        last = not opts.auto_refine or k == opts.max_refine
        n_rep = T.rule.n_rep
        # with the dense prior the first half of the replicates, where it decides
        first = n_rep // 2 if dense_prior(problem) and n_rep >= 2 * HALF_REPLICATES_MIN else None
        if refined is not None:  # (found with the tails, before the re-solve)
            found = (refined, 0)
        else:
            found = _replicate_values(
                problem, T, x, opts, callback, history, mem, stop=first, anderson=memory
            )
        if found is not None and first is not None and refined is None:
            if not _half_decides(T.rule, found[0], evals, opts, last):  # the other half
                more = _replicate_values(
                    problem,
                    T,
                    x,
                    opts,
                    callback,
                    history,
                    mem,
                    known=found[0],
                    anderson=memory,
                )
                found = None if more is None else (more[0], found[1] + more[1])
        if found is None:
            status = IterationStatus.NUMERICAL_FAILURE
            msg = "a replicate of the randomised channel rule found no fixed point"
            quad = dict.fromkeys(_ERROR_KEYS, np.inf)
            break
        values, extra = found
        quad = _standard_errors(values, n_rep)
        n_iter += extra
        finer = None if last else _finer_randomised(T.rule, quad, evals, opts)
        if finer is None:
            break
        T2 = new_map(problem, finer, T)
        aux, reused = None, 0
        if T.rule.tails() is not None and finer == T.rule.refined() and T.n_points == 1:
            found = _tail_start(problem, T, T2, x, opts, callback, history, mem, values, memory)
            if found is None:
                status = IterationStatus.NUMERICAL_FAILURE
                msg = "a replicate of the randomised channel rule found no fixed point"
                quad = dict.fromkeys(_ERROR_KEYS, np.inf)
                break
            refined, aux, extra = found
            n_iter += extra
            reused = 1  # (the re-solve's first evaluation: the halves', counted)
        else:
            refined = None
            warm = nested_warm(
                None if mem is None else mem.warm,
                T.rule,
                finer,
                refined_blocks(T.rule, finer, len(T.rule.replicates())),
            )
            aux = MapMemory(warm=warm)
        pairs = memory.starting(Phase.SOLVE, finer, history.get(T.rule))
        # (the last iterate, whose channel evaluation the memory holds, as the solve's own
        # run returns: its observables and replicates need no evaluation of the refined
        # rule of their own, one of four at K = 10)
        out2 = iterate(T2, x, pairs, return_image=False, aux=aux, **kw)
        history[finer] = out2.anderson
        n_iter += out2.n_iter - reused
        if not out2.converged:
            status, msg = out2.status, f"refined quadrature: {out2.message}"
            break
        T, x, res, mem = T2, out2.x, out2.residual, out2.aux
    evals = dict(obs.errors)
    if status is IterationStatus.CONVERGED:
        obs = with_statistics(problem, T, x, obs, memory=mem)
    return Estimate(T, x, n_iter, res, status, msg, obs, quad, evals, memory=mem)


def _tail_start(
    problem: Problem,
    T: FixedPointMap,
    T2: FixedPointMap,
    x: np.ndarray,
    opts: SolverOptions,
    callback: Callable | None,
    history: dict,
    memory: MapMemory,
    values: dict,
    anderson: AndersonMemory,
) -> tuple[dict, MapMemory, int] | None:
    """The refinement of :func:`estimate_randomised` by the tails of a nested randomised
    rule, before the refined rule's re-solve (``T2``) from the fixed point ``x`` of ``T``
    (``memory``: its channel evaluation there; ``values``: its replicates', the first ones
    where only they were found).

    The values of the refined rule's replicates (:func:`_replicate_values` with
    ``halves``: every replicate of ``T.rule`` and its tail), the memory of ``T2``'s channel
    evaluation at ``x`` and the iterations spent (None where a replicate fails).  The
    tails' iterations start at ``x``, so their channel evaluations there, averaged, are the
    channel integrals over the points the refinement adds, and with ``T``'s over the
    others, ``T2``'s: the re-solve's first evaluation costs none of its own (its proximal
    points those of the halves, :func:`~gaussmix.theory.solve.nested.refined_warm`).
    Measured at isotropic K = 10 (``lam = 1e-2``, alpha = 10): 3 evaluations of the refined
    rule's 8 x 2**12 points and 16 of its replicates' 2**12 -> 16 of the tails' 2**11 and 2
    of the refined rule.  ``anderson``: the policy's Anderson memory
    (``SolvePolicy.memory``, the replicates', :func:`_replicate_values`')."""
    n_iter = 0
    n_rep = T.rule.n_rep
    if len(values["test_error"]) < n_rep:  # (the first half decided: the others too)
        more = _replicate_values(
            problem, T, x, opts, callback, history, memory, known=values, anderson=anderson
        )
        if more is None:
            return None
        values, n_iter = more
    at_x: list[MapMemory] = []
    found = _replicate_values(
        problem, T, x, opts, callback, history, memory, halves=values, at_x=at_x, anderson=anderson
    )
    if found is None:
        return None
    rows = [memory.rows] + [m.rows for m in at_x]
    weights = [0.5] + [0.5 / n_rep] * n_rep  # (the halves' points: equal weights)
    mean = ChannelMoments(
        *(sum(w * getattr(m, f) for w, m in zip(weights, rows)) for f in MOMENTS)
    )
    mom = mean if T2.symmetry is None else T2.symmetry.expand_moments(mean)
    warm = refined_warm(memory.warm, [m.warm for m in at_x], T.rule, T2.rule)
    ev = HatEvaluation.of(x, mom, T2.ar)
    return found[0], MapMemory(ev, None, warm, mean, True, None), n_iter + found[1]
