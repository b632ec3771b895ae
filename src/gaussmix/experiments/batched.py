"""All the points of a one-output curve solved at once: one map for the whole curve.

A point of a curve solved on its own pays fixed costs that no warm start removes: setting
up its maps, the refined re-solve of its error estimate, the observables at two rules, the
result.  Measured from the exact fixed point of the previous point (the perfect predictor,
``benchmarks/bench_curves.py --floor``) they are 0.2 to 0.5 of a cold point in one-output
problems, so a 20-point curve solved point by point costs at least 5 to 11 cold points.
Here the ``P`` points of a curve of one-output problems (binary labels: ridge or lasso /
elastic net on a spectral mixture, any loss) are the clusters of one *stacked* state

    x = (Q (P K), M (P K), V (P K), b (P)),

(:func:`~gaussmix.theory.state.pack_state`'s layout with one bias per point), and
:class:`StackedMap` is Theorem 1's map for all of them at once: one channel evaluation of
the ``P K`` clusters (the compiled kernels loop over clusters), the Newton step of each
point's bias (:func:`~gaussmix.theory.fixed_point.bias_step`), the priors of all points in
one call (:func:`~gaussmix.theory.prior.ridge_prior` and
:func:`~gaussmix.theory.prior.elastic_net_prior` take a leading axis of points).  The
iteration is the solver's own (:func:`~gaussmix.theory.iteration.iterate`), with each point
mixed with its own Anderson coefficients (``AndersonState.blocks``) and frozen, no longer
evaluated, once its own residual passes the convergence test: a point's iterates are its
single point's.  The points in the sharp regime of the channel are solved again, stacked,
on its rule.  Each point then estimates its own integration error as a single point does
(:func:`~gaussmix.theory.refinement.estimate_errors`): the stacked state re-solved with the
refined rule, the change of each point's observables, refinement again for the points whose
estimate exceeds ``quad_tol``; and its result is assembled by the solver's own code, with its
free energy and sparsity.

Where the stacked solve does not apply (more outputs, a rule given by the caller, a
randomised rule, a dense covariance, fewer than :data:`STACKED_MIN_POINTS` points) the
curve is solved point by point (:mod:`gaussmix.experiments.continuation`); where it does not
succeed (no convergence, a spurious or degenerate point) :func:`solve_points` returns None
and so is the curve.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass, fields, replace

import numpy as np

from gaussmix.theory.channel import ChannelMoments, ProxWarmStart, channel_evaluation
from gaussmix.theory.fixed_point import (
    FixedPointMap,
    HatEvaluation,
    bias_step,
    initial_hats,
    needs_quadrature,
)
from gaussmix.theory.iteration import AndersonState, IterationStatus, iterate
from gaussmix.theory.observables import gaussian_risk, test_accuracy, train_accuracy
from gaussmix.theory.options import SolverOptions, solver_options
from gaussmix.theory.outputs import error_keys
from gaussmix.theory.prior import PriorResult, prior_update, takes_stacked_points
from gaussmix.theory.problem import Problem
from gaussmix.theory.quadrature import QuadratureRule
from gaussmix.theory.refinement import (
    MAX_QUADRATURE_NODES,
    Estimate,
    Observables,
    channel_rule,
    sharp_rule,
    with_statistics,
)
from gaussmix.theory.results import FixedPointResult
from gaussmix.theory.solver import assemble_result
from gaussmix.theory.state import is_valid_state, pack_state, residual_scale, unpack_state

__all__ = ["STACKED_MIN_POINTS", "StackedMap", "stackable", "stackable_options", "solve_points"]

#: Curves of fewer points are solved point by point.  Stacking pays from about 5 points
#: (measured, binary logistic over alpha in [0.2, 4]: 3 points 8.8 ms stacked against 7.4
#: point by point, 5 points 5.9 against 11.0, 8 points 7.4 against 16.0, 20 points 14
#: against 47); short curves keep the point-by-point continuation, the path of every curve
#: with more outputs, whose predictor and safeguard are tested on short binary curves.
STACKED_MIN_POINTS = 10

#: the observables whose integration error is estimated (the observables registry's)
_ERROR_KEYS = error_keys()


def stackable_options(keywords: dict) -> SolverOptions | None:
    """The solver options of a curve's keywords, or None where a keyword is not an option
    (``callback``, ``init``...: the points are solved one by one)."""
    names = {f.name for f in fields(SolverOptions)}
    if not set(keywords) <= names:
        return None
    return solver_options(None, keywords, caller="learning_curve")


def stackable(problem: Problem, opts: SolverOptions) -> bool:
    """Whether the points of a curve of ``problem`` (at other ``lam`` and ``alpha``) can be
    solved as one stacked state with the options ``opts``: one effective output, a prior in
    closed form on a spectral mixture (ridge, lasso, elastic net), the solver's automatic
    deterministic rule (or a channel in closed form)."""
    if problem.dim != 1 or not takes_stacked_points(problem.penalty_spec, problem.mixture):
        return False
    if opts.quadrature is not None:  # the caller's rule: the points are its single points
        return False
    return not channel_rule(problem, None).randomised


@dataclass(frozen=True)
class _StackedOutputs:
    """The outputs of the ``P K`` stacked clusters as the observables and the regime test
    read them (labels, the loss, each cluster's correct set, the number of clusters and of
    effective outputs): a problem's, repeated for each point."""

    loss: object
    y: np.ndarray
    constraints: tuple
    n_clusters: int
    dim: int = 1


class StackedMap:
    """Theorem 1's map for ``P`` one-output problems at once (a stacked state, see the
    module's docstring): the interface of a
    :class:`~gaussmix.theory.fixed_point.FixedPointMap` for the iteration (``K = P K0``
    clusters, ``L = 1``).

    Parameters
    ----------
    problems : list of Problem
        One-output problems that differ only in ``lam`` and ``alpha``.
    rule : QuadratureRule
        The channel's rule (a placeholder for closed-form channels).
    """

    log_chart = False  # one output: the iteration mixes in the state itself

    def __init__(self, problems: list[Problem], rule: QuadratureRule) -> None:
        p0 = problems[0]
        self.problems = problems
        self.rule = rule
        self.n_points = len(problems)
        self.K0 = p0.n_clusters
        self.K = self.n_points * self.K0
        self.L = 1
        self.ar = np.concatenate([p.alpha * p.mixture.rho for p in problems])
        self.lams = np.array([p.lam for p in problems])
        self.outputs = _StackedOutputs(
            p0.loss, np.tile(p0.y, (self.n_points, 1)), p0.constraints * self.n_points, self.K
        )
        self.last: HatEvaluation | None = None
        self.warm: ProxWarmStart | None = None
        # the point of each component of the stacked state (Q, M, V: K0 each; b: one)
        per = np.repeat(np.arange(self.n_points), self.K0)
        self.blocks = np.concatenate([per, per, per, np.arange(self.n_points)])
        #: set (to the iteration's ``tol``) for a solve that returns the evaluated state:
        #: a point whose own residual is below it is converged and stops being evaluated
        self.freeze_tol: float | None = None
        self.frozen = np.zeros(self.n_points, dtype=bool)
        self.frozen_x = np.full(self.blocks.size, np.nan)  # the state each point froze at
        self.residuals = np.full(self.n_points, np.nan)  # each frozen point's residual
        self.evaluations = 0  # of the map
        self.frozen_after = np.zeros(self.n_points, dtype=int)  # each frozen point's

    def start(self) -> np.ndarray:
        """The solver's starting point of every point
        (:func:`~gaussmix.theory.fixed_point.start_state` without ``init``), its prior
        update made for all points at once."""
        hats = [initial_hats(p) for p in self.problems]
        Qh, Mh, Vh = (np.stack([h[j] for h in hats]) for j in range(3))
        pr = prior_update(self.problems[0], Qh, Mh, Vh, lam=np.array([h[3] for h in hats]))
        b = np.concatenate([h[4] for h in hats])
        return pack_state(pr.Q.reshape(-1, 1, 1), pr.M.reshape(-1, 1), pr.V.reshape(-1, 1, 1), b)

    def anderson(self, memory: int) -> AndersonState:
        """An empty secant history that mixes each point with its own coefficients."""
        return AndersonState((), (), memory, False, self.blocks)

    def stack(self, states: list[np.ndarray]) -> np.ndarray:
        """The stacked state of one state per point."""
        parts = [unpack_state(x, self.K0, 1) for x in states]
        return pack_state(*(np.concatenate([pt[i] for pt in parts]) for i in range(4)))

    def split(self, x: np.ndarray) -> list[np.ndarray]:
        """Each point's state of a stacked state."""
        Q, M, V, b = unpack_state(x, self.K, 1)
        k = self.K0
        return [
            pack_state(
                Q[i * k : (i + 1) * k],
                M[i * k : (i + 1) * k],
                V[i * k : (i + 1) * k],
                b[i : i + 1],
            )
            for i in range(self.n_points)
        ]

    def means(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(M_c + b, Q_c, V_c)`` of every stacked cluster (its point's bias added)."""
        Q, M, V, b = unpack_state(x, self.K, 1)
        return M + np.repeat(b, self.K0)[:, None], Q, V

    def is_valid(self, x: np.ndarray) -> bool:
        """:func:`~gaussmix.theory.state.is_valid_state` of every point."""
        return is_valid_state(x, self.K, 1)

    def hats(self, x: np.ndarray) -> HatEvaluation:
        """The channel of every stacked cluster at ``x`` in one evaluation, and the hats
        ``alpha rho_c E[...]`` of each point (the last evaluation is remembered)."""
        last = self.last
        if last is not None and np.array_equal(last.x, x):
            return last
        m, Q, V = self.means(x)
        p = self.problems[0]
        active = ~self._frozen_at(x)[np.repeat(np.arange(self.n_points), self.K0)]
        if last is None or active.all():
            mom, self.warm = channel_evaluation(
                p.loss, self.outputs.y, m, np.zeros(1), Q, V, self.rule, self.warm
            )
        else:  # the frozen points' moments are those of their (unchanged) states
            full = self.warm if self.warm is not None and self.warm.h.shape[0] == self.K else None
            sub, warm = channel_evaluation(
                p.loss,
                self.outputs.y[active],
                m[active],
                np.zeros(1),
                Q[active],
                V[active],
                self.rule,
                None if full is None else _warm_rows(full, active),
            )
            if full is not None and warm is not None:  # the proximal points of every cluster
                self.warm = ProxWarmStart(
                    full.key, *(_merged(getattr(full, f), getattr(warm, f), active) for f in _WARM)
                )
            mom = ChannelMoments(
                *(_merged(getattr(last.moments, f), getattr(sub, f), active) for f in _MOMENTS)
            )
        self.last = HatEvaluation.of(x, mom, self.ar)
        return self.last

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """``T(x)`` of every point: channel, Newton step of each bias, priors."""
        P, K0 = self.n_points, self.K0
        b = unpack_state(x, self.K, 1)[3]
        ev = self.hats(x)
        Vh = ev.Vhat.reshape(P, K0, 1, 1)
        Mh = ev.Mhat.reshape(P, K0, 1)
        db = bias_step(Vh.sum(axis=1), Mh.sum(axis=1))[:, 0]
        pr = prior_update(self.problems[0], ev.Qhat.reshape(P, K0, 1, 1), Mh, Vh, lam=self.lams)
        g = pack_state(pr.Q.reshape(-1, 1, 1), pr.M.reshape(-1, 1), pr.V.reshape(-1, 1, 1), b + db)
        self.evaluations += 1
        if self.freeze_tol is not None:
            self._freeze(x, g)
        return g

    def own_iterations(self, n_iter: int) -> np.ndarray:
        """Each point's evaluations in an iteration of ``n_iter`` evaluations: up to the one
        that froze it (its own convergence), or all."""
        return np.where(self.frozen, self.frozen_after, n_iter)

    def _frozen_at(self, x: np.ndarray) -> np.ndarray:
        """The points frozen at their state in ``x`` (a frozen point whose state moved, by a
        retreat of the iteration, is evaluated again)."""
        if not self.frozen.any():
            return self.frozen
        moved = np.bincount(self.blocks, weights=x != self.frozen_x, minlength=self.n_points)
        self.frozen &= moved == 0
        return self.frozen

    def _freeze(self, x: np.ndarray, g: np.ndarray) -> None:
        """Freeze the points whose own residual ``max |T(x) - x| / s`` (the iteration's
        convergence test, :func:`~gaussmix.theory.state.residual_scale`) is below
        ``freeze_tol`` at ``x``: their image is set to ``x`` (residual 0: the iteration
        leaves them where they are) and they are not evaluated again while they stay."""
        r = np.abs(g - x) / residual_scale(x, self.K, 1)
        own = np.zeros(self.n_points)
        np.maximum.at(own, self.blocks, np.where(np.isfinite(r), r, np.inf))
        new = (own < self.freeze_tol) & ~self.frozen
        self.residuals[new] = own[new]
        self.frozen_after[new] = self.evaluations
        self.frozen |= new
        comp = self.frozen[self.blocks]
        g[comp] = x[comp]
        self.frozen_x[comp] = x[comp]

    def point_maps(self, x: np.ndarray) -> tuple[list[np.ndarray], list[FixedPointMap]]:
        """Each point's state of the stacked state ``x`` and a single point's map there,
        remembering its share of the channel evaluation at ``x`` (its observables then need
        none)."""
        ev = self.hats(x)
        states = self.split(x)
        maps = []
        k = self.K0
        for i, (p, xi) in enumerate(zip(self.problems, states)):
            s = slice(i * k, (i + 1) * k)
            mom = ChannelMoments(*(getattr(ev.moments, f)[s] for f in _MOMENTS))
            T = FixedPointMap(p, self.rule)
            T.last = HatEvaluation(xi.copy(), mom, ev.Qhat[s], ev.Mhat[s], ev.Vhat[s])
            maps.append(T)
        return states, maps


def _light_observables(T: StackedMap, x: np.ndarray) -> list[Observables]:
    """Each point's errors and losses at the stacked state ``x`` (those of
    :func:`~gaussmix.theory.refinement.evaluate_observables` with ``light=True``), each
    observable of all points in one call."""
    ev = T.hats(x)
    m, Q, V = T.means(x)
    zero = np.zeros(1)
    rho = T.problems[0].mixture.rho
    P, K0 = T.n_points, T.K0
    test_acc, test_err = test_accuracy(T.outputs, m, zero, Q)
    train_acc, train_err = train_accuracy(T.outputs, m, zero, Q, V)
    risk = gaussian_risk(T.outputs.loss, T.outputs.y, m, Q, T.rule)
    test_error = np.clip(1.0 - test_acc.reshape(P, K0) @ rho, 0.0, 1.0)
    train_error = np.clip(1.0 - train_acc.reshape(P, K0) @ rho, 0.0, 1.0)
    train_loss = ev.moments.Eloss.reshape(P, K0) @ rho
    test_loss = risk.reshape(P, K0) @ rho
    errors = {
        "test_error": test_err,
        "train_error": train_err,
        "train_loss": 0.0,
        "test_loss": 0.0,
    }
    Qs, Ms, Vs, b = unpack_state(x, T.K, 1)
    Qs, Ms, Vs = Qs.reshape(P, K0, 1, 1), Ms.reshape(P, K0, 1), Vs.reshape(P, K0, 1, 1)
    hats = (ev.Qhat.reshape(P, K0, 1, 1), ev.Mhat.reshape(P, K0, 1), ev.Vhat.reshape(P, K0, 1, 1))
    return [
        Observables(
            state=(Qs[i], Ms[i], Vs[i], b[i : i + 1]),
            hats=(hats[0][i], hats[1][i], hats[2][i]),
            test_error=float(test_error[i]),
            train_error=float(train_error[i]),
            train_loss=float(train_loss[i]),
            test_loss=float(test_loss[i]),
            errors=dict(errors),
        )
        for i in range(P)
    ]


def solve_points(
    problems: list[Problem],
    opts: SolverOptions,
    *,
    on_converged: Callable[[int], None] | None = None,
) -> list[FixedPointResult] | None:
    """The fixed points of ``problems`` (one-output problems that differ in ``lam`` and
    ``alpha``, :func:`stackable`) solved as one stacked state, each with its own integration
    error estimate and its result; None where the stacked solve fails (no convergence, a
    spurious or degenerate point), for the caller to solve point by point.

    As a single point (:func:`~gaussmix.theory.solver.solve_problem`): every point starts
    from the solver's cold start (:meth:`StackedMap.start`) and the
    stacked state is iterated with the solver's automatic rule to ``opts.tol`` in every
    component of every point; the points in the sharp regime of the channel
    (:func:`~gaussmix.theory.refinement.sharp_rule`) are solved again, stacked, with its
    rule from there; then each group of points on one rule estimates its errors
    (:func:`_estimate`).  A point's ``n_iter`` counts the evaluations of the stacked maps
    up to its own convergence (the single point's count where the iterates agree).

    ``on_converged(n)``, if given, is called after each evaluation of the stacked map in
    the first solve with the number ``n`` of points converged so far (frozen: their own
    residual passed the test), for a progress bar; the later stages (the sharp regime's
    re-solve, the error estimates) are not counted.  It does not change the iterates.
    """
    p0 = problems[0]
    rule = channel_rule(p0, None)
    T = StackedMap(problems, rule)
    kw = dict(tol=opts.tol, max_iter=opts.max_iter, damping=opts.damping)
    x0 = T.start()
    if not T.is_valid(x0):
        return None
    T.freeze_tol = opts.tol
    report = None if on_converged is None else lambda *_: on_converged(int(T.frozen.sum()))
    out = iterate(T, x0, T.anderson(opts.anderson), return_image=False, callback=report, **kw)
    if not out.converged or not T.is_valid(out.x):
        return None
    states = T.split(out.x)
    residuals = np.where(T.frozen, T.residuals, out.residual)  # each point's own
    n_iters = T.own_iterations(out.n_iter)
    groups: dict = {None: list(range(len(problems)))}  # the rule of each point -> its points
    # (the regime test of all points at once: one sharp point, and each is tested alone)
    if needs_quadrature(p0) and sharp_rule(T.outputs, rule, out.x) is not None:
        groups = {}
        for i, (p, xi) in enumerate(zip(problems, states)):
            groups.setdefault(sharp_rule(p, rule, xi), []).append(i)
    results: list = [None] * len(problems)
    with warnings.catch_warnings(record=True) as caught:  # given once every point stands
        warnings.simplefilter("always")
        for sharp, idx in groups.items():
            T_g, x_g, n_iter, res_g = T, out.x, n_iters[idx], residuals[idx]
            if len(idx) < len(problems):  # the group's points alone
                T_g = StackedMap([problems[i] for i in idx], rule)
                x_g = T_g.stack([states[i] for i in idx])
            if sharp is not None:  # in the sharp regime: its rule, from there
                T_g = StackedMap(T_g.problems, sharp)
                T_g.freeze_tol = opts.tol
                out_g = iterate(T_g, x_g, T_g.anderson(opts.anderson), return_image=False, **kw)
                if not out_g.converged or not T_g.is_valid(out_g.x):
                    return None
                x_g, n_iter = out_g.x, n_iter + T_g.own_iterations(out_g.n_iter)
                res_g = np.where(T_g.frozen, T_g.residuals, out_g.residual)
            done = _estimate(T_g, x_g, n_iter, res_g, opts)
            if done is None:
                return None
            for i, res in zip(idx, done):
                results[i] = res
    for w in caught:
        # at the user's line: solve_points <- _curve <- learning_curve / lambda_sweep <- user
        warnings.warn(w.message, w.category, stacklevel=4)
    return results


def _estimate(
    T: StackedMap, x: np.ndarray, n_iter: np.ndarray, residual: np.ndarray, opts: SolverOptions
) -> list[FixedPointResult] | None:
    """The results of the points of the stacked fixed point ``x`` of ``T``, each with its
    integration error estimated as :func:`~gaussmix.theory.refinement.estimate_errors`
    estimates a single point's: the stacked state re-solved with the refined rule (returning
    the image, so that the state moves with the rule), the change of each point's
    observables plus their own errors; again, for the points whose estimate of the test
    error or training loss exceeds ``quad_tol`` (``auto_refine``, at most ``max_refine``
    times); None after a failure."""
    problems = T.problems
    kw = dict(tol=opts.tol, max_iter=opts.max_iter, damping=opts.damping)
    states, maps = T.point_maps(x)
    try:
        obs = _light_observables(T, x)
    except (FloatingPointError, np.linalg.LinAlgError, ValueError):
        return None
    quad = [dict.fromkeys(_ERROR_KEYS, 0.0) for _ in problems]
    evals = [dict(o.errors) for o in obs]
    n_iters = [int(n) for n in n_iter]
    residuals = [float(r) for r in residual]
    refinements = opts.max_refine if opts.auto_refine else 1
    refining = opts.estimate_error and needs_quadrature(problems[0]) and refinements > 0
    active = list(range(len(problems))) if refining else []
    for _ in range(refinements if refining else 0):
        finer = maps[active[0]].rule.refined()  # (the single point's bound on its nodes)
        if finer is None or finer.weights.size > MAX_QUADRATURE_NODES:
            break
        T2 = StackedMap([problems[i] for i in active], finer)
        out2 = iterate(T2, T2.stack([states[i] for i in active]), T2.anderson(opts.anderson), **kw)
        if not out2.converged:
            return None
        try:
            obs2 = _light_observables(T2, out2.x)
        except (FloatingPointError, np.linalg.LinAlgError, ValueError):
            return None
        split, maps2 = T2.point_maps(out2.x)
        still = []
        for j, i in enumerate(active):
            quad[i] = {k: abs(obs2[j].value(k) - obs[i].value(k)) for k in _ERROR_KEYS}
            evals[i] = dict(obs2[j].errors)
            states[i], obs[i], maps[i] = split[j], obs2[j], maps2[j]
            n_iters[i] += out2.n_iter
            residuals[i] = out2.residual
            total = {k: quad[i][k] + evals[i][k] for k in ("test_error", "train_loss")}
            if max(total.values()) > opts.quad_tol:
                still.append(i)
        active = still
        if not active:
            break
    opts = replace(opts, throw=False)
    results = []
    try:
        priors = _prior_details(T, [T_i.last for T_i in maps])
    except (FloatingPointError, np.linalg.LinAlgError, ValueError):
        return None
    for i, p in enumerate(problems):
        try:
            full = with_statistics(p, maps[i], states[i], obs[i], priors[i])
        except (FloatingPointError, np.linalg.LinAlgError, ValueError):
            return None
        est = Estimate(
            maps[i],
            states[i],
            n_iters[i],
            residuals[i],
            IterationStatus.CONVERGED,
            "converged",
            full,
            quad[i],
            evals[i],
        )
        res = assemble_result(p, opts, est)
        if not res.success:  # a spurious or degenerate point: point by point
            return None
        results.append(res)
    return results


def _prior_details(T: StackedMap, hats: list[HatEvaluation]) -> list[PriorResult]:
    """The prior's details (``psi_w``, penalty, sparsity) at each point's hats, one prior
    update for all points (:func:`~gaussmix.theory.prior.prior_update` with ``details``)."""
    Qh, Mh, Vh = (np.stack([getattr(h, f) for h in hats]) for f in ("Qhat", "Mhat", "Vhat"))
    pr = prior_update(T.problems[0], Qh, Mh, Vh, lam=T.lams, details=True)
    return [
        PriorResult(
            Q=pr.Q[i],
            M=pr.M[i],
            V=pr.V[i],
            psi_w=float(pr.psi_w[i]),
            penalty=float(pr.penalty[i]),
            atom_nonzero=pr.atom_nonzero[i],
            l1_norm=float(pr.l1_norm[i]),
        )
        for i in range(len(hats))
    ]


#: the fields of the channel moments
_MOMENTS = tuple(ChannelMoments.__dataclass_fields__)


def _merged(old: np.ndarray, new: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``old`` with its ``rows`` replaced by ``new``."""
    out = old.copy()
    out[rows] = new
    return out


#: the arrays of a warm start of the proximal solves
_WARM = ("h", "omega", "V")


def _warm_rows(warm: ProxWarmStart, rows: np.ndarray) -> ProxWarmStart:
    """The warm start of the proximal solves of the clusters ``rows`` (a mask)."""
    rule, shape = warm.key
    n = int(rows.sum())
    return ProxWarmStart((rule, (n, *shape[1:])), *(getattr(warm, f)[rows] for f in _WARM))
