"""Stacked sweeps over lambda and curves over alpha restart their slow points from their
fast neighbours (:func:`gaussmix.experiments.continuation._seeded_iterate`, issue 19, item 3;
issue 31, item 5): each restarted point reaches its own fixed point (the single point's,
within the tolerance that follows from the convergence test), a rejected restart makes the
solve again without it, and the whole is deterministic."""

from __future__ import annotations

import numpy as np
import pytest

import gaussmix as gm
from gaussmix.experiments import continuation, curves
from gaussmix.experiments.continuation import state_distance
from gaussmix.theory.numerics.quadrature import GaussHermite
from gaussmix.theory.solve import batch_solve, fixed_point
from gaussmix.theory.solve.fixed_point import FixedPointMap
from gaussmix.theory.solve.options import solver_options
from gaussmix.theory.solve.state import residual_scale

SPARSE = gm.Mixture.sparse(0.1, 0.1, 1.0)
MIX3 = gm.Mixture.isotropic(0.5, "simplex", n_clusters=3)
KEYS = ("test_error", "train_error", "train_loss", "test_loss")
TOL = 1e-10
#: Two states that pass the convergence test ``|T(x) - x| / s < tol`` of one map are each
#: within ``tol s / (1 - r)`` of its fixed point (``r`` the map's contraction there: at
#: most 0.71 on the lasso sweep, BENCHMARKS.md, "The small-lambda lasso's iteration"),
#: so within ``2 tol / (1 - r) < 7 tol`` relative of each other; 10 tol.
STATE_BOUND = 10 * TOL


@pytest.fixture
def restarts(monkeypatch) -> list[list[int]]:
    """The points restarted from predictions, per seeded solve (and whether each curve was
    solved stacked, in ``restarts.stacked``)."""
    seen: list[list[int]] = []
    reseed = continuation._reseed

    def spy(T, *args):
        out = reseed(T, *args)
        seen.append([] if out is None else list(out[1]))
        return out

    monkeypatch.setattr(continuation, "_reseed", spy)
    return seen


def _unseeded(monkeypatch, fn, *args, **kw):
    """A curve whose stacked solve does not restart (the plain first solve)."""
    with monkeypatch.context() as m:
        m.setattr(continuation, "_seed_params", lambda T: None)
        return fn(*args, **kw)


def test_a_seeded_lasso_sweep_is_its_single_points(stacked_calls, restarts) -> None:
    lams = np.geomspace(1e-2, 1.0, 20)
    df = gm.lambda_sweep(SPARSE, "logistic", lams, alpha=1.0, penalty="l1", tol=TOL)
    assert stacked_calls == [True] and df.converged.all()
    assert restarts and len(restarts[0]) >= 5  # not vacuous: the small lambdas restarted
    for lam, r in zip(lams, df.points):
        single = gm.solve(SPARSE, "logistic", lam=lam, alpha=1.0, penalty="l1", tol=TOL)
        assert r.params["quadrature"] == single.params["quadrature"]  # the same routing
        assert state_distance(r, single) <= STATE_BOUND, lam
        bound = r.integration_error + single.integration_error + STATE_BOUND
        for k in KEYS:
            assert abs(getattr(r, k) - getattr(single, k)) <= bound, (lam, k)
        assert abs(r.nonzero_fraction - single.nonzero_fraction) <= bound
        # its own estimate: the single point's, up to the fixed points' tolerance
        assert abs(r.integration_error - single.integration_error) <= 100 * TOL


def test_a_seeded_three_class_sweep_is_its_point_by_point_sweep(
    monkeypatch, stacked_calls, restarts
) -> None:
    lams = np.geomspace(1e-3, 10.0, 12)
    df = gm.lambda_sweep(MIX3, "cross-entropy", lams, alpha=2.0, tol=TOL)
    assert stacked_calls == [True] and df.converged.all()
    assert restarts and restarts[0]  # the coarse rule's solve restarted points
    with monkeypatch.context() as m:
        m.setattr(continuation, "stackable", lambda problem, opts: False)
        by_points = gm.lambda_sweep(MIX3, "cross-entropy", lams, alpha=2.0, tol=TOL)
    for i, (lam, r) in enumerate(zip(lams, df.points)):
        single = gm.solve(MIX3, "cross-entropy", lam=lam, alpha=2.0, tol=TOL)
        bound = r.integration_error + single.integration_error + STATE_BOUND
        for k in ("test_error", "train_error", "train_loss"):
            assert abs(getattr(r, k) - getattr(single, k)) <= bound, (lam, k)
        if i < len(lams) - 1:  # (the point-by-point sweep's first point is a single point)
            other = by_points.points[i]
            assert r.params["quadrature"] == other.params["quadrature"]
            for k in KEYS:
                assert abs(getattr(r, k) - getattr(other, k)) <= STATE_BOUND, (lam, k)


def test_a_rejected_restart_solves_the_curve_again_without_it(
    monkeypatch, stacked_calls, restarts
) -> None:
    # every restarted point rejected by the safeguard: the first solve is made again
    # without the restart, on a fresh map: the curve of the plain solve, to the bit
    lams = np.geomspace(1e-2, 1.0, 20)
    args = (SPARSE, "logistic", lams)
    kw = dict(alpha=1.0, penalty="l1")
    plain = _unseeded(monkeypatch, gm.lambda_sweep, *args, **kw)
    checked: list[bool] = []

    def reject(results, predictions, previous):
        checked.append(True)
        return np.zeros(len(results), dtype=bool)

    monkeypatch.setattr(continuation, "predictions_accepted", reject)
    df = gm.lambda_sweep(*args, **kw)
    assert restarts and restarts[0] and checked  # restarted, then rejected
    assert stacked_calls == [True, True]  # (the plain curve's, this one's)
    assert df.equals(plain)
    assert [r.n_iter for r in df.points] == [r.n_iter for r in plain.points]


def test_a_seeded_solve_that_runs_long_is_given_up_for_the_plain_one(
    monkeypatch, stacked_calls, restarts
) -> None:
    # the K = 3 square ridge at lam = 1.46e-4 over its interpolation peak (40 alphas, the
    # sampled square-loss problem that ran its seeded solve to max_iter = 3000): after
    # SEED_MAX_EVALS evaluations the seeded solve is given up, and the curve is the plain
    # solve's, made again on a fresh map, to the bit
    mixture = gm.Mixture.isotropic(0.5013, "simplex", n_clusters=3)
    alphas = np.geomspace(0.2084, 14.2467, 40)
    args, kw = (mixture, "square", alphas), dict(lam=1.463e-4)
    plain = _unseeded(monkeypatch, gm.learning_curve, *args, **kw)
    given_up: list[tuple[int, int, bool]] = []  # (cap, evaluations, converged)
    real = continuation.iterated_solve

    def solve(T, x0, aux, opts, *a, **k):
        out = real(T, x0, aux, opts, *a, **k)
        given_up.append((opts.max_iter, out.n_iter, bool(out.converged)))
        return out

    monkeypatch.setattr(continuation, "iterated_solve", solve)
    df = gm.learning_curve(*args, **kw)
    assert restarts and restarts[0]  # (its slow points restarted)
    cap = continuation.SEED_MAX_EVALS
    # the seeded solve ran to its cap, not converged; then the plain solve converged
    assert given_up[0] == (cap, cap, False), given_up
    assert len(given_up) == 2 and given_up[1][2]
    assert stacked_calls == [True, True] and df.converged.all()
    assert df.equals(plain)
    assert [r.n_iter for r in df.points] == [r.n_iter for r in plain.points]


def test_a_seeded_sweep_is_deterministic(monkeypatch, restarts) -> None:
    lams = np.geomspace(1e-2, 1.0, 20)
    a = gm.lambda_sweep(SPARSE, "logistic", lams, alpha=1.0, penalty="l1")
    b = gm.lambda_sweep(SPARSE, "logistic", lams, alpha=1.0, penalty="l1")
    assert len(restarts) == 2 and restarts[0] == restarts[1] and restarts[0]
    assert a.equals(b)
    for r, s in zip(a.points, b.points):
        assert r.n_iter == s.n_iter
        for k in ("Q", "M", "V", "b"):
            np.testing.assert_array_equal(getattr(r, k), getattr(s, k))


def test_what_is_seeded_is_a_sweep_over_lambda_or_a_curve_over_alpha() -> None:
    def stacked_map(points):
        problems = curves._problems(SPARSE, "logistic", points, "l1", None)
        return FixedPointMap(problems, GaussHermite(8, 1))

    lams = np.geomspace(1e-2, 1.0, 10)
    params = continuation._seed_params(stacked_map([(lam, 1.0) for lam in lams]))
    np.testing.assert_allclose(params, np.log(lams), rtol=0, atol=0)
    # a curve over alpha: in log alpha
    alphas = np.linspace(1, 2, 10)
    params = continuation._seed_params(stacked_map([(0.1, a) for a in alphas]))
    np.testing.assert_allclose(params, np.log(alphas), rtol=0, atol=0)
    # both moving, a repeated alpha, a repeated lambda, too few points: not seeded
    assert (
        continuation._seed_params(stacked_map([(lam, a) for lam, a in zip(lams, alphas)])) is None
    )
    assert continuation._seed_params(stacked_map([(0.1, a) for a in [1.0, *alphas]])) is None
    assert (
        continuation._seed_params(stacked_map([(lams[3], 1.0)] + [(lam, 1.0) for lam in lams]))
        is None
    )
    few = [(lam, 1.0) for lam in lams[: continuation.SEED_POINTS]]
    assert continuation._seed_params(stacked_map(few)) is None


def test_a_sweeps_progress_count_never_goes_back(monkeypatch) -> None:
    """Where the seeded first solve is abandoned (every restarted point rejected here) and
    made again without the restart, the count of converged points reported
    (``on_converged``, a progress bar's) stays where it was until the new solve passes it:
    the plain solve's counts under the most reported before."""
    lams = np.geomspace(1e-2, 1.0, 20)
    problems = curves._problems(SPARSE, "logistic", [(lam, 1.0) for lam in lams], "l1", None)
    opts = solver_options(None, {})
    plain: list[int] = []
    with monkeypatch.context() as m:
        m.setattr(continuation, "_seed_params", lambda T: None)
        assert continuation.solve_points(problems, opts, on_converged=plain.append) is not None
    counts: list[int] = []
    monkeypatch.setattr(
        continuation,
        "predictions_accepted",
        lambda results, *_: np.zeros(len(results), dtype=bool),
    )
    assert continuation.solve_points(problems, opts, on_converged=counts.append) is not None
    n = len(plain)
    assert len(counts) > n and counts[-1] == len(problems)
    before = counts[-n - 1]  # the most the abandoned solve reported
    assert before > plain[0]  # (not vacuous: the plain solve starts below it)
    assert counts == sorted(counts)
    assert counts[-n:] == [max(before, c) for c in plain]


def test_a_lasso_sweeps_estimate_is_one_iteration_on_each_refined_rule(monkeypatch) -> None:
    """A stacked sweep over lambda with one output iterates each point of its error
    estimate towards ``refined_tol`` in one iteration on the refined rule, as a K = 3 curve
    does (:func:`~gaussmix.theory.solve.batch_solve.refined_solve` with ``merge``), and keeps
    its last iterate, whose moments the refined map remembers: the refined rules are
    evaluated by their iterations alone (not again for the observables), and each returned
    state passes the refined rule's tighter test in a single point's map evaluated afresh,
    so that it is within ``refined_tol / (1 - r)`` of the refined fixed point.  A curve over
    alpha is not merged (its points keep their single points' iterates)."""
    lams = np.geomspace(1e-2, 1.0, 20)
    rules: list = []  # the rule of each channel evaluation
    solves: list[tuple] = []  # (rule, evaluations, merge) of each refined solve
    channel = fixed_point.channel_evaluation
    refined_solve = batch_solve.refined_solve

    def counted(loss, y, m, b, Q, V, rule, warm):
        rules.append(rule)
        return channel(loss, y, m, b, Q, V, rule, warm)

    def spy(T, *args, **kw):
        out = refined_solve(T, *args, **kw)
        assert out is not None
        solves.append((T.rule, out[0].aux.record.evaluations, args[-1]))
        return out

    monkeypatch.setattr(fixed_point, "channel_evaluation", counted)
    monkeypatch.setattr(batch_solve, "refined_solve", spy)
    df = gm.lambda_sweep(SPARSE, "logistic", lams, alpha=1.0, penalty="l1")
    assert df.converged.all() and len(solves) == 2  # (the smooth and the sharp points)
    assert all(merge for _, _, merge in solves)
    for rule, evaluations, _ in solves:
        assert sum(r == rule for r in rules) == evaluations
    tight = batch_solve.refined_tol(gm.SolverOptions().tol)
    for r in df.points:
        st = r.state
        assert st.rule in [rule for rule, _, _ in solves]
        x = st.x
        scale = residual_scale(x, st.problem.n_clusters, st.problem.dim)
        assert np.max(np.abs(st.map()(x) - x) / scale) < tight
    solves.clear()
    gm.learning_curve(SPARSE, "logistic", np.linspace(0.2, 4.0, 12), lam=0.1, penalty="l1")
    assert solves and not any(merge for _, _, merge in solves)


#: A curve over alpha whose first point converges far slower from the cold start than the
#: others (square loss at lam = 1.16e-3 on a block mixture: 124 evaluations, the median
#: point 17; ``benchmarks/_curve_grids.py``, its random grid 0).
BLOCK = gm.Mixture.block([0.3, 0.7], [0.2, 1.0])
SLOW_ALPHAS = np.linspace(0.7700029501048737, 14.922014948771576, 20)
SLOW_LAM = 0.0011644223751767875


def test_a_curve_over_alpha_restarts_only_its_slow_point(stacked_calls, restarts) -> None:
    # once half its points have converged, the one slower than the rest is restarted from
    # its neighbours' prediction and kept, though it takes longer than a sweep's budget:
    # one stacked solve, its point its single point's fixed point within the bound of the
    # convergence test (measured: 0.3 tol); its cost: the next test
    df = gm.learning_curve(BLOCK, "square", SLOW_ALPHAS, lam=SLOW_LAM, tol=TOL)
    assert restarts == [[0]] and stacked_calls == [True] and df.converged.all()
    for alpha, r in zip(SLOW_ALPHAS, df.points):
        single = gm.solve(BLOCK, "square", lam=SLOW_LAM, alpha=alpha, tol=TOL)
        assert state_distance(r, single) <= STATE_BOUND, alpha
        for k in KEYS:
            assert abs(getattr(r, k) - getattr(single, k)) <= STATE_BOUND, (alpha, k)


def test_a_curve_over_alpha_costs_less_restarted(monkeypatch) -> None:
    # the channel evaluations of the curve with its restart and without (the plain solve,
    # which waits for its slowest point)
    counts = []
    for seeded in (True, False):
        with monkeypatch.context() as m:
            if not seeded:
                m.setattr(continuation, "_seed_params", lambda T: None)
            log: list[int] = []
            evaluate = fixed_point.channel_evaluation

            def spy(*args, log=log, evaluate=evaluate):
                log.append(1)
                return evaluate(*args)

            m.setattr(fixed_point, "channel_evaluation", spy)
            gm.learning_curve(BLOCK, "square", SLOW_ALPHAS, lam=SLOW_LAM)
            counts.append(len(log))
    assert counts[0] * 2 < counts[1], counts  # measured: 73 against 226
