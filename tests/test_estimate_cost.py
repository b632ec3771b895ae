"""The integration-error estimate of a randomised channel rule (issue 32, item 4): it
refines the rule only where a finer rule can meet the target, and on ten classes fitted
from scikit-learn's digits it still bounds the change to a rule with eight times the
points."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from _helpers import (
    dense_ten_class_mixture,
    policy_memory,
    replicate_spread,
    solved_on_randomised_rule,
)
from sklearn.datasets import load_digits

import gaussmix as gm
from gaussmix.theory.api.api import make_problem
from gaussmix.theory.numerics.quadrature import SobolRQMC
from gaussmix.theory.numerics.tolerances import PROX_TOL, REPLICATE_SHIFT_RTOL
from gaussmix.theory.solve import estimate, fixed_point, nested, refinement
from gaussmix.theory.solve.estimate import refinement_reaches as _refinement_reaches
from gaussmix.theory.solve.fixed_point import MapMemory, new_map
from gaussmix.theory.solve.iteration import AndersonState, iterate

KEYS = ("test_error", "train_loss")


def _parts(quad: float, evals: float) -> tuple[dict, dict]:
    return {"test_error": quad, "train_loss": 0.0}, {"test_error": evals, "train_loss": 0.0}


def test_refinement_only_where_the_channel_part_can_meet_the_target():
    # the channel's part alone exceeds the target and halves within reach: refine
    assert _refinement_reaches(*_parts(4e-7, 1e-8), KEYS, 1e-7, 1 / 8)
    # the evaluation's own error alone exceeds the target: no channel rule meets it
    assert not _refinement_reaches(*_parts(4e-7, 2e-7), KEYS, 1e-7, 1 / 8)
    # out of reach at the optimistic rate 1 / N within the largest rule
    assert not _refinement_reaches(*_parts(1e-5, 1e-8), KEYS, 1e-7, 1 / 8)
    # already within the target: nothing to refine
    assert not _refinement_reaches(*_parts(5e-8, 4e-8), KEYS, 1e-7, 1 / 8)
    # ratio 0 (the training error's target): only the evaluation's room counts
    assert _refinement_reaches(*_parts(3e-4, 9e-5), KEYS, 1e-4, 0.0)
    assert not _refinement_reaches(*_parts(3e-4, 1.07e-4), KEYS, 1e-4, 0.0)


def _resolved_spread(problem, T, x, opts, history) -> tuple[dict, int]:
    """The replicate spread with every replicate re-solved to ``tol`` (the estimate before
    the linear response): the reference the cheap one is checked against."""
    values: dict = {k: [] for k in refinement._ERROR_KEYS}
    n_iter = 0
    for rep in T.rule.replicates():
        Tr = new_map(problem, rep, T)
        start = AndersonState.init(opts.anderson, history.get(T.rule))
        out = iterate(Tr, x, start, tol=opts.tol, max_iter=opts.max_iter, damping=opts.damping)
        assert out.converged
        n_iter += out.n_iter
        obs = refinement.evaluate_observables(problem, Tr, out.x, light=True, spread=True)
        for k in values:
            values[k].append(obs.value(k))
    n = len(values["test_error"])
    return {k: float(np.std(v, ddof=1) / np.sqrt(n)) for k, v in values.items()}, n_iter


@pytest.mark.parametrize(("K", "lam", "alpha"), [(10, 1e-2, 10.0), (8, 0.1, 4.0)])
def test_linear_response_spread_tracks_the_resolved_one(K, lam, alpha):
    """The replicates' states by linear response (one Anderson step on the solve's secant
    pairs, checked by a re-evaluation: the distance it bounds, the residual over the
    linearised map's smallest gain, within REPLICATE_SHIFT_RTOL of the shift) give the spread
    of every observable that re-solving each replicate to tol gives, within twice that
    relative accuracy (the spread is a difference of two such shifted evaluations' worth;
    measured 0.90-1.25 on eight problems, 0.999-1.01 on these), in fewer evaluations."""
    problem, opts, history, T, out = _solved_randomised(K, lam, alpha)
    cheap, n_cheap = replicate_spread(problem, T, out.x, opts, history)
    ref, n_ref = _resolved_spread(problem, T, out.x, opts, history)
    for key in ref:
        assert ref[key] > 0.0, key  # not vacuous
        assert abs(cheap[key] / ref[key] - 1.0) <= 2 * REPLICATE_SHIFT_RTOL, key
    assert n_cheap <= n_ref and n_cheap <= 3 * T.rule.n_rep


@pytest.fixture(scope="module")
def digits_mixture() -> gm.Mixture:
    X, y = load_digits(return_X_y=True)
    return gm.Mixture.from_data(X / 16, y)


@pytest.mark.slow  # ~60 s of CPU: three ten-class points
def test_ten_class_estimate_keeps_the_rule_and_bounds_a_finer_one(digits_mixture):
    """Ten classes from digits (d = 64, lam = 1, alpha = 1): the training error's own
    quasi-Monte Carlo estimate (1.07e-4 at its cap) exceeds TRAIN_ERROR_TARGET, which no
    channel rule reduces, so the estimate keeps the automatic rule (before: five
    refinements to 8 x 2**13 nodes, 27 times the solve); its answer is the solve's own,
    and the change to a rule with eight times the points is within the estimate."""
    kw = dict(lam=1.0, alpha=1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gm.IntegrationWarning)
        res = gm.solve(digits_mixture, "cross-entropy", **kw)
        bare = gm.solve(digits_mixture, "cross-entropy", **kw, estimate_error=False)
        fine = gm.solve(
            digits_mixture,
            "cross-entropy",
            **kw,
            quadrature=SobolRQMC(9, 11, 8),
            estimate_error=False,
        )
    assert res.success and bare.success and fine.success
    assert res.params["quadrature"].startswith("sobol-rqmc(dim=9, points=2**8")
    assert res.test_error == bare.test_error and res.train_loss == bare.train_loss
    err, fine_err = res.integration_errors, fine.integration_errors
    for key in ("test_error", "train_loss"):
        change = abs(getattr(res, key) - getattr(fine, key))
        # two standard errors of the coarse rule's spread (the estimate) and the fine
        # evaluation's own
        assert change <= 2.0 * (err[key] + fine_err[key]), key
    assert np.isfinite(err["train_error"]) and err["train_error"] > 0.0


def test_refined_randomised_rule_counts_every_channel_evaluation(monkeypatch):
    """Isotropic K = 10 (lam = 1e-2, alpha = 10), whose training error's spread refines
    the rule to 8 x 2**12 points: the refined rule's re-solve returns its last iterate
    (converged to tol), whose channel evaluation its observables and replicates reuse, so
    that every channel evaluation of the solve and its estimate is one the result counts
    (before: one more of the refined rule, at its image, 53 for 52)."""
    calls = []
    real = fixed_point.FixedPointMap._point_hats

    def spy(self, x, memory):
        calls.append(self.rule.weights.size)
        return real(self, x, memory)

    monkeypatch.setattr(fixed_point.FixedPointMap, "_point_hats", spy)
    mix = gm.Mixture.isotropic(0.5, "gaussian", n_clusters=10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gm.IntegrationWarning)
        res = gm.solve(mix, "cross-entropy", lam=1e-2, alpha=10.0)
    assert res.success and res.residual <= 1e-8
    assert res.params["quadrature"].startswith("sobol-rqmc(dim=9, points=2**12")  # refined
    assert len(calls) == res.n_iter
    assert calls.count(8 * 2**12) >= 2  # (the re-solve's own evaluations, counted)


def _solved_randomised(K: int, lam: float, alpha: float):
    """A cross-entropy point of K isotropic gaussian clusters whose automatic rule is
    randomised, solved to its fixed point (no estimate): problem, options, secant history,
    map and the iteration's outcome."""
    mix = gm.Mixture.isotropic(0.5, "gaussian", n_clusters=K)
    return solved_on_randomised_rule(make_problem(mix, "cross-entropy", lam=lam, alpha=alpha))


def _randomised_fixed_point():
    """An eight-class point whose automatic rule is randomised, solved: problem, map,
    state and the proximal points of the map's last evaluation."""
    problem, _, _, T, out = _solved_randomised(8, 0.1, 4.0)
    assert out.aux.warm is not None
    return problem, T, out.x, out.aux.warm


def _moments(T, x, warm=None) -> np.ndarray:
    m = T.hats(x, MapMemory(warm=warm)).moments
    return np.concatenate([np.ravel(a) for a in (m.Ef, m.Eff, m.Edf, m.Eloss, m.Eenv)])


def test_nested_warm_starts_a_replicate_and_the_refined_rule_where_the_points_are_shared():
    """A replicate's nodes are a block of its rule's, and the refined rule's replicates
    begin with the rule's: their proximal solves start at the rule's proximal points there
    (the others cold: zero predictor), and the moments are the cold start's to the
    proximal tolerance (a start only).  Points that are not the same give no start."""
    problem, T, x, warm = _randomised_fixed_point()
    rule = T.rule
    reps = rule.replicates()
    n = reps[0].weights.size
    for r in (0, len(reps) - 1):
        start = nested.nested_warm(
            warm, rule, reps[r], nested.replicate_blocks(rule, r, len(reps))
        )
        assert start is not None and start.key == (reps[r], (warm.h.shape[0], n, problem.dim))
        np.testing.assert_array_equal(start.h, warm.h[:, r * n : (r + 1) * n])
        Tr = new_map(problem, reps[r], T)
        # the prox solves stop at PROX_TOL in stationarity; moments move by that order
        np.testing.assert_allclose(
            _moments(Tr, x, start), _moments(Tr, x), rtol=0, atol=1e3 * PROX_TOL
        )
    # a block of another replicate is not the same points: no start
    assert nested.nested_warm(warm, rule, reps[0], [(slice(0, n), slice(n, 2 * n))]) is None
    # a start of another rule is not used
    assert nested.nested_warm(warm, reps[0], reps[1], [(slice(0, n), slice(0, n))]) is None
    finer = rule.refined()
    blocks = nested.refined_blocks(rule, finer, len(reps))
    start = nested.nested_warm(warm, rule, finer, blocks)
    assert start is not None
    m = finer.weights.size // len(reps)
    np.testing.assert_array_equal(start.h[:, m : m + n], warm.h[:, n : 2 * n])
    assert not start.h[:, n:m].any() and not start.omega[:, n:m].any()  # new points: cold
    T2 = new_map(problem, finer, T)
    np.testing.assert_allclose(
        _moments(T2, x, start), _moments(T2, x), rtol=0, atol=1e3 * PROX_TOL
    )


def test_half_of_the_replicates_keeps_the_coverage_of_all():
    """The spread of the first four of eight replicates, scaled by _spread_scale, covers
    the mean of all eight (Gaussian errors, simulated) as often as the eight replicates'
    own one standard error does (0.649, Student's t with 7 degrees of freedom); unscaled it
    would cover it less often (0.61), which the test tells apart.  The confidence bounds
    hold the true standard error with their stated probabilities."""
    rng = np.random.default_rng(0)
    n_sim = 200_000
    z = rng.standard_normal((n_sim, 8))  # the replicates' errors, true value 0, sd 1
    mean = z.mean(axis=1)
    first = {"test_error": list(z[0, :4])}
    assert estimate.standard_errors(first, 8)["test_error"] == pytest.approx(
        estimate.spread_scale(4, 8) * np.std(z[0, :4], ddof=1) / np.sqrt(8), rel=1e-14
    )
    assert estimate.spread_scale(8, 8) == 1.0
    s4 = z[:, :4].std(axis=1, ddof=1) / np.sqrt(8)
    cover8 = np.mean(np.abs(mean) <= z.std(axis=1, ddof=1) / np.sqrt(8))
    cover4 = np.mean(np.abs(mean) <= estimate.spread_scale(4, 8) * s4)
    bare4 = np.mean(np.abs(mean) <= s4)
    sd = np.sqrt(2 * cover8 * (1 - cover8) / n_sim)  # of the difference of two coverages
    assert abs(cover8 - 0.6494) <= 4 * sd  # the eight replicates' own coverage
    assert abs(cover4 - cover8) <= 4 * sd
    assert cover8 - bare4 > 10 * sd
    true_se = 1 / np.sqrt(8)
    for q in (0.05, 0.95):
        below = np.mean(true_se <= estimate.spread_scale(4, 8, q) * s4)
        assert abs(below - q) <= 4 * np.sqrt(q * (1 - q) / n_sim), q


def test_half_of_the_replicates_decides_only_far_from_a_target():
    """_half_decides: four replicates whose training-error spread is far below its target
    (and the test error's target out of reach) decide; a spread whose confidence interval
    holds the target does not (the other half is found); the last round always does."""
    from gaussmix.theory.numerics.tolerances import TRAIN_ERROR_TARGET
    from gaussmix.theory.solve.options import SolverOptions

    rule, opts = SobolRQMC(9, 8, 8), SolverOptions()
    evals = {"test_error": 4e-6, "train_error": 1.8e-5, "train_loss": 0.0, "test_loss": 0.0}
    unit = np.array([1.0, -1.0, 0.5, -0.5])  # spread: std 0.913

    def values(sd: float) -> dict:
        return {k: list(sd * unit / np.std(unit, ddof=1)) for k in refinement._ERROR_KEYS}

    def se(sd: float) -> float:  # the estimate of the training error's part
        return estimate.standard_errors(values(sd), 8)["train_error"]

    far = values(1e-5 * np.sqrt(8))  # a standard error of 1.1e-5: + 1.8e-5 << 1e-4
    assert se(1e-5 * np.sqrt(8)) + evals["train_error"] < TRAIN_ERROR_TARGET / 2
    assert estimate.half_decides(rule, far, evals, opts, last=False)
    near = values(6e-5 * np.sqrt(8))  # 6.6e-5 + 1.8e-5: below the target, not by enough
    assert se(6e-5 * np.sqrt(8)) + evals["train_error"] < TRAIN_ERROR_TARGET
    assert estimate.finer_randomised(rule, estimate.standard_errors(near, 8), evals, opts) is None
    assert not estimate.half_decides(rule, near, evals, opts, last=False)
    assert estimate.half_decides(rule, near, evals, opts, last=True)
    above = values(3e-4 * np.sqrt(8))  # far above: refined whatever the other half
    assert estimate.half_decides(rule, above, evals, opts, last=False)
    assert (
        estimate.finer_randomised(rule, estimate.standard_errors(above, 8), evals, opts)
        == rule.refined()
    )


@pytest.mark.slow  # ~20 s of CPU: two ten-class points on a dense prior
def test_dense_prior_estimate_from_half_the_replicates_bounds_a_finer_rule(monkeypatch):
    """Ten classes with the dense ridge prior (Gaussian data, d = 24): the training error's
    estimate is far from its target, so the estimate is made from the first half of the
    replicates (four replicate maps), and the change of every estimated error to a rule
    with eight times the points is within two estimates (the coarse one and the fine
    evaluation's own)."""
    mix = dense_ten_class_mixture()
    kw = dict(lam=1.0, alpha=1.0)
    rules = []
    real = refinement.new_map

    def spy(problem, rule, *args, **kwargs):
        rules.append(rule)
        return real(problem, rule, *args, **kwargs)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gm.IntegrationWarning)
        with monkeypatch.context() as m:
            m.setattr(refinement, "new_map", spy)
            res = gm.solve(mix, "cross-entropy", **kw)
        fine = gm.solve(
            mix, "cross-entropy", **kw, quadrature=SobolRQMC(9, 11, 8), estimate_error=False
        )
    assert res.success and fine.success
    assert res.params["quadrature"].startswith("sobol-rqmc(dim=9, points=2**8, replicates=8")
    assert sum(r.randomised and r.n_rep == 1 for r in rules) == 4
    err, fine_err = res.integration_errors, fine.integration_errors
    for key in ("test_error", "train_error", "train_loss"):
        assert err[key] > 0.0, key  # not vacuous
        change = abs(getattr(res, key) - getattr(fine, key))
        assert change <= 2.0 * (err[key] + fine_err[key]), key


def test_every_replicate_starts_its_proximal_solves_from_the_rules_last_evaluation(monkeypatch):
    """Each replicate's proximal solves start at the rule's last evaluation (its block of
    it, :func:`~gaussmix.theory.solve.nested.nested_warm`), not only the first one's: the
    memory a replicate's own solve ends with is of the replicate's rule, from which no
    later replicate can start (before, it replaced the rule's, and replicates 2 to 8
    started cold).  Their bound's gain (the full rule's secant pairs at the same state) is
    computed once for all of them, and is each one's: the values to the bit of replicates
    that compute it each."""
    problem, opts, history, T, out = _solved_randomised(8, 0.1, 4.0)
    assert out.aux.warm is not None
    starts: list[bool] = []
    real = refinement.nested_warm

    def spy(warm, rule, target, blocks):
        start = real(warm, rule, target, blocks)
        starts.append(start is not None)
        return start

    gains: list[float | None] = []
    real_gain = estimate.secant_gain

    def spy_gain(pairs, weight):
        gains.append(real_gain(pairs, weight))
        return gains[-1]

    monkeypatch.setattr(refinement, "nested_warm", spy)
    monkeypatch.setattr(estimate, "secant_gain", spy_gain)
    anderson = policy_memory(problem, opts)
    found = refinement._replicate_values(
        problem, T, out.x, opts, None, history, out.aux, anderson=anderson
    )
    assert found is not None
    assert starts == [True] * T.rule.n_rep
    assert len(gains) == 1 and gains[0] is not None  # (a gain: the bound is not vacuous)
    real_state = refinement.replicate_state
    monkeypatch.setattr(
        refinement, "replicate_state", lambda *a: real_state(*a[:-1], None)
    )  # (no memo: each replicate its own; the first two)
    each = refinement._replicate_values(
        problem, T, out.x, opts, None, history, out.aux, anderson=anderson, stop=2
    )
    assert each is not None and len(gains) == 3 and gains[1:] == gains[:1] * 2
    assert each[0] == {k: v[:2] for k, v in found[0].items()}


@pytest.mark.slow  # ~20 s of CPU: a sharp K = 4 point's eight replicates re-solved to tol
def test_linear_response_spread_where_the_map_contracts_slowly():
    """Problem #426 of the cold stream (K = 4 cross-entropy, spectral covariances, lam =
    2.4e-3, alpha = 3.0; the rule it ends with, 8 x 2**12 points), whose linearised map's
    smallest gain on the run's secant pairs is 0.048: a residual, or the next step's
    length, at 20 % of the shift left states up to 0.5-1.3 times the shift from the
    replicate's fixed point, and the spreads' agreement with the replicates re-solved to
    tol hung on where the point's run had stopped (0.87-1.03 from the run of 12 pairs
    after the coarser rule, 0.95-1.26 from the run of 6, within tol of each other); with
    the residual over that gain (the distance bounded on the linearised map) every
    spread is within REPLICATE_SHIFT_RTOL of them from either run (measured 0.93-1.02 and
    1.00-1.14), in 68 and 67 evaluations against 238 and 228."""
    from _random_problems import random_problems

    from gaussmix.theory.solve.fixed_point import start_state
    from gaussmix.theory.solve.options import SolverOptions
    from gaussmix.theory.solve.policy import SolveState, policy_for

    p = random_problems(427)[426]
    assert (p.loss, p.penalty) == ("cross-entropy", "l2")
    problem = make_problem(p.mixture, p.loss, lam=p.lam, alpha=p.alpha)
    opts, history = SolverOptions(), {}
    x0 = start_state(problem, None)
    # (the run of the one point with that rule after the policy's continuation)
    state = SolveState(policy_for(problem, opts, warm=True), [problem], opts, None, history, x0)
    T, out = state.run(SobolRQMC(problem.dim, 12, 8), x0)
    assert out.converged
    cheap, n_cheap = replicate_spread(problem, T, out.x, opts, history)
    ref, n_ref = _resolved_spread(problem, T, out.x, opts, history)
    for key in ref:
        assert ref[key] > 0.0, key  # not vacuous
        assert abs(cheap[key] / ref[key] - 1.0) <= REPLICATE_SHIFT_RTOL, key
    assert n_cheap <= n_ref / 3
