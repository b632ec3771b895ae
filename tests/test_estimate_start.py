"""The refined rule's re-solve of the integration-error estimate starts at the coarse
iteration's next step (:func:`~gaussmix.theory.solve.estimate.predicted_start`, the linear
response of the fixed point to the stopping residual), with its proximal solves started at
the coarser rule's nearest nodes (:func:`~gaussmix.theory.solve.nested.nearest_warm`): both
only starts, so the estimate is the re-solve's from the fixed point, to the refined
tolerance, in fewer evaluations (issue 32, item 4)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from _helpers import dense_ten_class_mixture, replicate_spread, solved_on_randomised_rule

import gaussmix as gm
from gaussmix.theory.api.api import make_problem
from gaussmix.theory.numerics import tolerances
from gaussmix.theory.numerics.tolerances import PROX_TOL, REPLICATE_SHIFT_RTOL, refined_tol
from gaussmix.theory.prior.prior import single_precision_phase
from gaussmix.theory.solve import batch_solve, fixed_point, iteration, refinement
from gaussmix.theory.solve.estimate import predicted_start, resolve_memory
from gaussmix.theory.solve.fixed_point import MapMemory, new_map, start_state
from gaussmix.theory.solve.iteration import AndersonState, iterate
from gaussmix.theory.solve.nested import linear_nodes, linear_warm, nearest_nodes, nearest_warm
from gaussmix.theory.solve.options import SolverOptions
from gaussmix.theory.solve.policy import SolveState, channel_rule, policy_for
from gaussmix.theory.solve.state import residual_scale

#: problem kinds whose estimate re-solves with a refined deterministic rule: (mixture,
#: loss, lam, alpha)
KINDS = {
    "binary logistic": (("antipodal", 2, "binary"), "logistic", 0.1, 2.0),
    "K = 3 cross-entropy, lam = 1": (("gaussian", 3, None), "cross-entropy", 1.0, 2.0),
    "K = 3 cross-entropy, lam = 0.01": (("gaussian", 3, None), "cross-entropy", 0.01, 2.0),
    "K = 2 cross-entropy, lam = 0.1": (("gaussian", 2, None), "cross-entropy", 0.1, 3.0),
}


def _mixture(means: str, K: int, labels: str | None) -> gm.Mixture:
    if labels == "binary":
        return gm.Mixture.isotropic(0.5, means, labels="binary")
    return gm.Mixture.isotropic(0.5, means, n_clusters=K)


def _solved(kind: str):
    """The point's fixed point with its automatic rule (no estimate): problem, options,
    secant history, map and the iteration's outcome."""
    spec, loss, lam, alpha = KINDS[kind]
    problem = make_problem(_mixture(*spec), loss, lam=lam, alpha=alpha)
    opts, history = SolverOptions(), {}
    rule = channel_rule(problem, None, opts.symmetry)
    assert not rule.randomised and rule.refined() is not None
    x0 = start_state(problem, None)
    state = SolveState(policy_for(problem, opts, warm=True), [problem], opts, None, history, x0)
    T, out = state.run(rule, x0)
    assert out.converged
    return problem, opts, history, T, out


def _dist(a: np.ndarray, b: np.ndarray, scale: np.ndarray) -> float:
    return float(np.max(np.abs(a - b) / scale))


@pytest.mark.parametrize("kind", list(KINDS))
def test_the_predicted_start_is_the_linear_response_to_the_stopping_residual(kind):
    """Against the refined rule's fixed point ``x2`` (iterated to 1e-13): the coarse fixed
    point ``x`` is off by the stopping error plus the change of the rule; the predicted
    start removes the first, to the secant model's accuracy.  Measured (scaled units;
    binary, K = 3 at lam = 1 and 0.01, K = 2): ``|x - x2|`` 1.7e-9, 2.2e-10, 4.3e-9,
    4.7e-11; the change of the map there ``|T2(x) - T(x)|`` 2.3e-14, 8.3e-12, 1.0e-10,
    1.2e-10; the start 1.2e-12, 7.8e-12, 2.2e-10, 3.6e-11 from ``x2``.  Asserted: within
    twice the change of the map plus 0.7 of the stopping error, and nearer than ``x``."""
    problem, opts, history, T, out = _solved(kind)
    x = out.x
    scale = residual_scale(x, T.K, T.L)
    T2 = new_map(problem, T.rule.refined(), T)
    pairs = AndersonState.init(opts.anderson, history[T.rule])
    ref = iterate(T2, x, pairs, tol=1e-13, max_iter=60, damping=opts.damping)
    assert ref.converged
    x2 = ref.x
    change = _dist(T2(x), T(x), scale)
    x0 = predicted_start(T, x, pairs, opts, out.aux)
    stop = _dist(x, x2, scale)
    assert stop > 0.0 and not np.array_equal(x0, x)  # not vacuous: a step was taken
    assert _dist(x0, x2, scale) <= 2.0 * change + 0.7 * stop
    assert _dist(x0, x2, scale) < stop
    # without pairs there is no model: the start is the fixed point itself
    empty = AndersonState.init(opts.anderson)
    assert predicted_start(T, x, empty, opts, out.aux) is x


@pytest.mark.parametrize("kind", list(KINDS))
def test_the_estimate_is_the_resolve_from_the_fixed_point(kind, monkeypatch):
    """The estimate (the refined answer and each observable's change) is the one the
    refined rule's re-solve from the solve's fixed point gives, iterated to the refined
    tolerance from there (the estimate before the predicted start): both refined states
    converged to that tolerance, so the answers and changes agree to a few times it,
    relative to the observables' size."""
    seen = {}
    real = batch_solve.estimate_points

    def spy(T, out, n_iter, residual, opts, **kw):
        pairs = kw["history"].get(T.rule)
        seen.update(problem=T.problems[0], T=T, out=out, opts=opts, pairs=pairs)
        return real(T, out, n_iter, residual, opts, **kw)

    monkeypatch.setattr(batch_solve, "estimate_points", spy)
    spec, loss, lam, alpha = KINDS[kind]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gm.IntegrationWarning)
        res = gm.solve(_mixture(*spec), loss, lam=lam, alpha=alpha)
        bare = gm.solve(_mixture(*spec), loss, lam=lam, alpha=alpha, estimate_error=False)
    assert res.success
    problem, T, out, opts = seen["problem"], seen["T"], seen["out"], seen["opts"]
    coarse = refinement.evaluate_observables(problem, T, out.x, light=True)
    T2 = new_map(problem, T.rule.refined(), T)
    pairs = AndersonState.init(opts.anderson, seen["pairs"])
    tight = refined_tol(opts.tol)
    ref = iterate(T2, out.x, pairs, tol=tight, max_iter=60, damping=opts.damping)
    assert ref.converged
    fine = refinement.evaluate_observables(problem, T2, ref.x, light=True)
    for key in ("test_error", "train_loss", "train_error"):
        size = max(1.0, abs(fine.value(key)))
        assert abs(getattr(res, key) - fine.value(key)) <= 20 * tight * size, key
        change = abs(fine.value(key) - coarse.value(key))
        est = res.integration_errors[key] - fine.errors[key]
        assert abs(est - change) <= 20 * tight * size, key
    # one evaluation of the refined rule where the change of the rule is below the
    # refined tolerance (K = 3 at lam = 1: two before), never more than two
    extra = res.n_iter - bare.n_iter
    assert 1 <= extra <= 2
    if kind == "K = 3 cross-entropy, lam = 1":
        assert extra == 1


def test_nearest_warm_starts_each_node_at_the_coarser_rules_nearest():
    """The refined rule's nodes start at the proximal points of the coarser rule's nearest
    nodes (checked by brute force), and the moments are the cold start's to the proximal
    tolerance (a start only); an evaluation of another rule gives no start."""
    problem, opts, history, T, out = _solved("K = 3 cross-entropy, lam = 1")
    mem = T.hats_memory(out.x, out.aux)[1]
    finer = T.rule.refined()
    start = nearest_warm(mem.warm, T.rule, finer)
    assert start is not None and start.key[0] == finer
    coarse, fine = T.rule.nodes, finer.nodes
    rows = np.arange(0, fine.shape[0], 97)  # a sample of the nodes
    d2 = ((fine[rows, None, :] - coarse[None, :, :]) ** 2).sum(axis=-1)
    want = d2.min(axis=1)
    got = ((fine[rows] - coarse[np.argmin(d2, axis=1)]) ** 2).sum(axis=-1)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-14)
    nearest = np.argmin(d2, axis=1)
    ok = np.isclose(d2[np.arange(rows.size), nearest], want, rtol=0, atol=1e-14)
    assert ok.all()
    # the start of each sampled node is a nearest node's proximal point
    for j, r in enumerate(rows):
        cands = np.flatnonzero(np.isclose(d2[j], want[j], rtol=0, atol=1e-14))
        assert any(np.array_equal(start.h[:, r], mem.warm.h[:, c]) for c in cands)
    T2 = new_map(problem, finer, T)

    def moments(warm):
        m = T2.hats(out.x, MapMemory(warm=warm)).moments
        return np.concatenate([np.ravel(a) for a in (m.Ef, m.Eff, m.Edf, m.Eloss, m.Eenv)])

    np.testing.assert_allclose(moments(start), moments(None), rtol=0, atol=1e3 * PROX_TOL)
    assert nearest_warm(mem.warm, finer, finer.refined()) is None
    assert nearest_warm(None, T.rule, finer) is None


def test_linear_warm_interpolates_within_the_coarser_rules_cells():
    """The refined rule's nodes inside a cell of the coarser rule's tensor grid start at
    the bilinear interpolation of its corners (an affine function of the nodes reproduced
    to rounding, checked against the nodes themselves), the others at the nearest node's;
    the moments are the cold start's to the proximal tolerance (a start only)."""
    problem, opts, history, T, out = _solved("K = 3 cross-entropy, lam = 1")
    finer = T.rule.refined()
    index, weight = linear_nodes(T.rule, finer)
    np.testing.assert_allclose(weight.sum(axis=1), 1.0, rtol=0, atol=1e-15)
    cell = (weight[:, 1:] != 0).any(axis=1)
    assert cell.mean() > 0.9 and (weight >= 0).all()
    affine = T.rule.nodes @ np.array([[1.5, -0.25], [0.5, 2.0]]) + 0.75
    got = np.einsum("nc,ncj->nj", weight, affine[index])
    want = finer.nodes @ np.array([[1.5, -0.25], [0.5, 2.0]]) + 0.75
    np.testing.assert_allclose(got[cell], want[cell], rtol=0, atol=1e-13)
    np.testing.assert_array_equal(index[~cell, 0], nearest_nodes(T.rule, finer)[~cell])
    mem = T.hats_memory(out.x, out.aux)[1]
    start = linear_warm(mem.warm, T.rule, finer)
    assert start is not None and start.key[0] == finer
    T2 = new_map(problem, finer, T)

    def moments(warm):
        m = T2.hats(out.x, MapMemory(warm=warm)).moments
        return np.concatenate([np.ravel(a) for a in (m.Ef, m.Eff, m.Edf, m.Eloss, m.Eenv)])

    np.testing.assert_allclose(moments(start), moments(None), rtol=0, atol=1e3 * PROX_TOL)
    assert linear_warm(mem.warm, finer, finer.refined()) is None
    assert linear_warm(None, T.rule, finer) is None


def _dense_randomised():
    """Ten classes fitted from seeded Gaussian data (d = 24, the dense ridge prior on a
    216-row matrix), solved with its randomised rule: problem, options, history, map and
    outcome."""
    mix = dense_ten_class_mixture()
    return solved_on_randomised_rule(make_problem(mix, "cross-entropy", lam=1.0, alpha=1.0))


def test_single_precision_replicates_give_the_double_spread(monkeypatch):
    """With the dense prior in single precision for the replicates (made to apply here by
    lowering SINGLE_PHASE_MIN_N to the problem's 216 rows) the spread of every observable
    is the double map's within REPLICATE_SHIFT_RTOL (the float32 map is within ~1e-6 of
    the double one, the shifts here ~1e-3); a shift below SINGLE_REPLICATE_MIN_SHIFT is
    found again in double precision, which then gives the double spread exactly."""
    problem, opts, history, T, out = _dense_randomised()
    assert not single_precision_phase(problem)
    double, n_double = replicate_spread(problem, T, out.x, opts, history)
    monkeypatch.setattr(tolerances, "SINGLE_PHASE_MIN_N", 100)
    assert single_precision_phase(problem)
    calls = []
    real = fixed_point.new_map

    def spy(*args, **kw):
        calls.append(kw.get("single", False))
        return real(*args, **kw)

    monkeypatch.setattr(refinement, "new_map", spy)
    single, _ = replicate_spread(problem, T, out.x, opts, history)
    assert calls and all(calls)  # every replicate in single precision
    for key in double:
        assert double[key] > 0.0, key
        assert abs(single[key] / double[key] - 1.0) <= REPLICATE_SHIFT_RTOL, key
    calls.clear()
    monkeypatch.setattr(refinement, "SINGLE_REPLICATE_MIN_SHIFT", 1.0)
    again, n_again = replicate_spread(problem, T, out.x, opts, history)
    assert calls[:2] == [True, False] and not any(calls[2:])  # one try, then double
    assert again == double and n_again > n_double


def test_the_resolves_mix_with_the_longer_memory(monkeypatch):
    """The estimate's re-solves (the refined rule, on to the tighter tolerance, the finer
    rule of the lasso prior) and the rule's own solve from the coarser rule's fixed point
    mix with :func:`resolve_memory`'s pairs, the cold coarse solve with the options' own; a
    plain damped iteration (``anderson=0``) stays one, and the memory stays within what the
    options accept."""
    assert resolve_memory(SolverOptions()) == tolerances.RESOLVE_ANDERSON_FACTOR * 6
    assert resolve_memory(SolverOptions(anderson=0)) == 0
    assert resolve_memory(SolverOptions(anderson=50)) == 50
    memories = []
    real = refinement.iterate

    def spy(T, x0, anderson, **kw):
        memories.append((kw["tol"], T.prior_panels, anderson.memory))
        return real(T, x0, anderson, **kw)

    monkeypatch.setattr(refinement, "iterate", spy)  # (the runs, the prior's re-solves)
    monkeypatch.setattr(batch_solve, "iterate", spy)  # (the estimate's re-solves)
    monkeypatch.setattr(iteration, "iterate", spy)  # (the coarse solve's, iterate_to_rule_error)
    mixture = gm.Mixture.isotropic(0.5, "simplex", n_clusters=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gm.IntegrationWarning)
        res = gm.solve(mixture, "cross-entropy", lam=0.1, alpha=2.0, penalty="l1")
    assert res.success
    long = resolve_memory(SolverOptions())
    # the cold solve with a coarser rule (one run, or two where it goes on past the check
    # of its rule's error), then the rule's own from its fixed point, then the estimate's
    # re-solves: the refined rule, possibly the tighter tolerance, and the prior's finer rule
    n_cold = next(i for i, (*_, m) in enumerate(memories) if m != 6)
    cold, resolves = memories[:n_cold], memories[n_cold:]
    assert 1 <= len(cold) <= 2
    assert len(resolves) >= 3 and all(m == long for *_, m in resolves)
    assert resolves[-1][1] == 2 * 64  # (the prior's: twice its 64 panels)


def test_the_tighter_run_starts_from_the_known_image(monkeypatch):
    """A single point's re-solve that returns its last iterate (K = 3 cross-entropy) hands
    its image there to the tighter run (``KnownImage``): the same numbers as evaluating it
    again, one evaluation of the map's image fewer (a lasso point of ``bench_lasso_k3.py``,
    seed 1 #2, whose re-solve goes on to ``refined_tol``)."""
    mix = gm.Mixture.isotropic(0.33455081099958367, "simplex", n_clusters=3)
    kw = dict(lam=0.06516157274392362, alpha=0.09872200969206338, penalty="l1")
    calls = [0]
    image = fixed_point.FixedPointMap.image

    def counted(self, *args):
        calls[0] += 1
        return image(self, *args)

    monkeypatch.setattr(fixed_point.FixedPointMap, "image", counted)
    tighter = []
    real_tighter = batch_solve.tighter_run
    unwrap = [False]

    def watched(T, *args, **kwargs):
        tighter.append(isinstance(T, iteration.KnownImage))
        if unwrap[0] and tighter[-1]:  # (the map itself: its image at the start again)
            T = T.T
        return real_tighter(T, *args, **kwargs)

    monkeypatch.setattr(batch_solve, "tighter_run", watched)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gm.IntegrationWarning)
        r = gm.solve(mix, "cross-entropy", **kw)
        known = calls[0]
        calls[0], unwrap[0] = 0, True
        r2 = gm.solve(mix, "cross-entropy", **kw)
    assert tighter == [True, True]
    assert known == calls[0] - 1
    np.testing.assert_array_equal(r.state.x, r2.state.x)
    assert r.n_iter == r2.n_iter
    for key in ("test_error", "train_error", "train_loss", "integration_error"):
        assert getattr(r, key) == getattr(r2, key)
