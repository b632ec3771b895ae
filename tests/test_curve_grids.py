"""Curves at the cost of a few points on every grid (issue 31, item 5): a 20-point curve's
channel evaluations (stacked or single, the error estimate's included) are at most 5 times
those of its median point solved cold, over the curves of ``bench_curves.py``, the paper's
sparse lasso curve and seeded random grids (``benchmarks/_curve_grids.py``: mixture kind,
loss, penalty, lambda and alpha ranges); and a curve has a fixed point wherever its point
solved cold has one.

Counted, not timed: the same on any load (``python benchmarks/bench_curves.py --grids 40``
prints the table).  The grids known to cost more are marked ``xfail(strict=True)`` with
their numbers and cause, so that the fix that brings them under the bound shows as an
unexpected pass and removes the mark.
"""

from __future__ import annotations

import pytest
from _helpers import load_benchmark

cg = load_benchmark("_curve_grids")

#: The random grids of the test: seed 0, the first 40 (the first 24 are the table of
#: BENCHMARKS.md; the 16 after them widen the sample beyond the grids the solver was tuned on).
RANDOM = cg.random_grids(40, seed=0)

#: Grids above the bound, with the cause measured (at 04d47b4 the stacked solve of a
#: one-output curve over alpha took as many evaluations as its slowest point; since it
#: restarts the points slower than its median one from their neighbours, the grids
#: "random 0" and "random 13" pass: 226 -> 73 and 95 -> 39 evaluations; since a point's
#: extrapolation leaving the cone of valid states is judged point by point instead of
#: dropping every point's secant pairs, the paper's sparse lasso curve passes: 272 -> 60;
#: since a sweep's restarted points have no budget of evaluations, "random 15", a hinge +
#: elastic-net sweep, passes: 125 -> 54; since a curve's warm start from its last point
#: stops where it stalls, its cold solve following, "random 36", hinge + lasso on the
#: sparse mixture, passes: 3877 -> 1177, its second point's warm start stopped after 300
#: evaluations instead of 3001; since a sweep's points still slow once half its restarted
#: points have frozen are restarted once more from the seeds converged nearer to them,
#: "random 29", a hinge + lasso sweep, passes: 116 -> 53; since the homotopy in alpha
#: starts each of its solves from the secant through its last two fixed points, and a
#: learning curve walks its path from a point that needed a fallback to the next, "random
#: 3", hinge + lasso at lam = 9.75 by the zero estimator, passes: 4376 -> 360, 45 -> 4.7
#: median cold points, its first point's cold solve 515 -> 203, each of the next three
#: points 860-1914 (a stalled warm start, a rejected predictor, the cold homotopy from a
#: larger alpha) -> 20).
KNOWN: dict[str, str] = {}


def _param(grid, slow: bool = False):
    marks = [pytest.mark.slow] if slow else []
    if grid.name in KNOWN:
        marks.append(pytest.mark.xfail(strict=True, reason=KNOWN[grid.name]))
    return pytest.param(grid, id=grid.name, marks=marks)


def _check(grid) -> None:
    cost = cg.cost(grid)
    solved = [n for i, n in enumerate(cost.cold) if i not in cost.cold_failed]
    assert len(solved) * 2 > len(cost.cold), f"most cold points fail: {cost}"
    median = sorted(solved)[len(solved) // 2]
    # no point without a fixed point on the curve where its cold point has one
    assert cost.curve_failed <= len(cost.cold_failed), cost
    assert cost.curve <= cg.TARGET * median, (
        f"{grid.describe()}: the curve {cost.curve} evaluations, "
        f"{cost.curve / median:.1f} median cold points ({median}; all {cost.cold})"
    )


@pytest.mark.parametrize("grid", [_param(g) for g in cg.EXAMPLES])
def test_a_benchmarked_curve_costs_a_few_cold_points(grid) -> None:
    _check(grid)


@pytest.mark.parametrize("grid", [_param(g, slow=True) for g in RANDOM])
def test_a_random_curve_costs_a_few_cold_points(grid) -> None:
    _check(grid)


def test_the_counter_sees_every_evaluation_of_a_point() -> None:
    # one cold point: as many channel evaluations counted as the fixed-point iteration
    # and its error estimate made (the result's n_iter counts the iteration's own; the
    # estimate's re-solve on the refined rule adds its own evaluations)
    import gaussmix as gm

    mix = cg.mixture("isotropic binary")
    with cg.counted_evaluations() as log:
        res = gm.solve(mix, "logistic", lam=0.1, alpha=2.0)
    with cg.counted_evaluations() as bare:
        plain = gm.solve(mix, "logistic", lam=0.1, alpha=2.0, estimate_error=False)
    assert len(bare) == plain.n_iter > 0
    assert len(log) > len(bare) and all(n == 2 for n in log)  # two clusters, one point
    # nested blocks count in the innermost; a module imported since is counted too
    with cg.counted_evaluations() as outer:
        with cg.counted_evaluations() as inner:
            gm.solve(mix, "logistic", lam=0.1, alpha=2.0, estimate_error=False)
    assert outer == [] and len(inner) == plain.n_iter
    assert res.success


def test_the_random_grids_are_seeded_and_cover_the_space() -> None:
    again = cg.random_grids(40, seed=0)
    assert [g.describe() for g in again] == [g.describe() for g in RANDOM]
    assert {g.loss for g in RANDOM} >= {"square", "logistic", "hinge"}
    assert {g.penalty for g in RANDOM} == {"l2", "l1", "elastic-net"}
    assert {g.axis for g in RANDOM} == {"alpha", "lam"}
    assert {g.mixture for g in RANDOM} >= {
        "isotropic binary",
        "block binary",
        "sparse (0.5, 0.1, 0.5)",
        "sparse (0.1, 0.1, 1)",
        "isotropic K = 3",
    }
    for g in RANDOM:
        assert len(g.values) == cg.N_POINTS
        lam = g.fixed if g.axis == "alpha" else min(g.values)
        assert 1e-5 <= lam <= 10


def test_the_counter_sees_a_stacked_curves_evaluations() -> None:
    # a stacked curve (one output, 20 points): each point's n_iter counts the stacked
    # map's evaluations up to its own convergence, so the curve's count is at least the
    # largest of them (a counter blind to the stacked map, wherever it lives, fails here)
    grid = next(g for g in cg.EXAMPLES if g.name == "binary-logistic")
    with cg.counted_evaluations() as log:
        table = cg.curve(grid)
    assert len(log) >= table["n_iter"].max() > 0
    assert max(log) == 2 * len(grid.values)  # the first evaluations: every point's clusters


def test_a_sweeps_restarted_points_are_kept_and_restarted_again(monkeypatch) -> None:
    # "random 15" (a hinge + elastic-net sweep to lam = 1.5e-3): its slow points, the point
    # at the smallest lambda among them, are restarted from their predictions after 8
    # evaluations; once half of them have frozen (after 22), the one still slow is
    # restarted again from the seeds converged nearer to it, and freezes at 31 (with one
    # restart it froze at 54, beyond the budget of evaluations a restarted point once had:
    # twice those before the restart, at least 30).  Kept, judged by the safeguard alone,
    # the curve costs less than its plain solve from the cold start, and each point is its
    # cold point's
    import gaussmix as gm
    from gaussmix.experiments import continuation

    grid = next(g for g in RANDOM if g.name == "random 15")
    restarted: list[tuple[int, list[int]]] = []  # (evaluations before, points restarted)
    reseed = continuation._reseed

    def spy(T, rec, x, own, params, *rest):
        out = reseed(T, rec, x, own, params, *rest)
        restarted.append((rec.evaluations, [] if out is None else list(out[1])))
        return out

    monkeypatch.setattr(continuation, "_reseed", spy)
    with cg.counted_evaluations() as log:
        table = cg.curve(grid)
    seeded = len(log)
    with monkeypatch.context() as m:
        m.setattr(continuation, "_seed_params", lambda T: None)
        with cg.counted_evaluations() as log:
            cg.curve(grid)
    assert len(restarted) == 2 and table["converged"].all()
    (at, points), (again, later) = restarted
    # the point at the smallest lambda (the stacked state's last: its points run from the
    # largest lambda) was restarted, and again, later, alone
    last = len(grid.values) - 1
    assert last in points and later == [last] and again > at
    assert seeded == table["n_iter"].max() < len(log)
    mix = cg.mixture(grid.mixture)
    assert list(table["lam"]) == list(grid.values)
    for (lam, alpha), r in zip(grid.points(), table.points):
        single = gm.solve(
            mix, grid.loss, lam=lam, alpha=alpha, penalty=grid.penalty, **grid.kwargs
        )
        assert abs(r.test_error - single.test_error) <= (
            r.integration_error + single.integration_error + 1e-7
        )


def test_a_curves_stalled_warm_start_stops_early() -> None:
    # "random 36": its second point's warm start from its first point's fixed point stalls
    # at residual 0.998 (the curve spent 3001 evaluations there before its cold solve's
    # 96); with fail_fast (a curve's warm start from its last point) the run stops where
    # its smallest step has not halved over two windows of the early stop, without it
    # the run goes on to max_iter; a warm start that converges is the same either way
    import numpy as np

    import gaussmix as gm
    from gaussmix.theory.api.api import make_problem
    from gaussmix.theory.solve.iteration import IterationStatus
    from gaussmix.theory.solve.policy import FailFast, policy_for
    from gaussmix.theory.solve.solver import solve_problem

    grid = next(g for g in RANDOM if g.name == "random 36")
    mix = cg.mixture(grid.mixture)
    (lam, a0), (_, a1), (_, a2), (_, a3) = grid.points()[:4]

    def problem(alpha):
        return make_problem(mix, grid.loss, lam=lam, alpha=alpha, penalty=grid.penalty)

    assert policy_for(problem(a1), gm.SolverOptions(), warm=True).fail_fast is None
    assert policy_for(problem(a1), gm.SolverOptions(), warm=True, fail_fast=True).fail_fast
    first = gm.solve(mix, grid.loss, lam=lam, alpha=a0, penalty=grid.penalty)
    stopped = solve_problem(problem(a1), init=first, fail_fast=True, throw=False)
    window = FailFast().window
    assert not stopped.success and stopped.status is IterationStatus.STALLED
    assert stopped.n_iter == 3 * window and "stalled" in stopped.message
    plain = solve_problem(problem(a1), init=first, throw=False, max_iter=4 * window)
    assert not plain.success and plain.n_iter == 4 * window
    assert plain.status is IterationStatus.MAX_ITER
    # (the point's cold solve, which follows on the curve, has a fixed point)
    assert gm.solve(mix, grid.loss, lam=lam, alpha=a1, penalty=grid.penalty).success
    third = solve_problem(problem(a2))
    fast, slow = (solve_problem(problem(a3), init=third, fail_fast=f) for f in (True, False))
    assert fast.success and fast.n_iter == slow.n_iter < window
    for key in ("Q", "M", "V", "b", "test_error"):
        assert np.array_equal(getattr(fast, key), getattr(slow, key))


def test_a_second_copy_of_the_counting_module_counts_what_the_first_installed() -> None:
    """A test that loads ``_curve_grids`` afresh (a second module object) counts the
    evaluations made through the stand-in the first copy installed: the open blocks' logs
    are the stand-in's own, not a module's."""
    import gaussmix as gm

    again = load_benchmark("_curve_grids")
    assert again is not cg
    mix = gm.Mixture.isotropic(0.5, "antipodal", labels="binary")
    with cg.counted_evaluations() as first:
        gm.solve(mix, "logistic", lam=0.1, alpha=2.0, estimate_error=False)
    with again.counted_evaluations() as second:
        gm.solve(mix, "logistic", lam=0.1, alpha=2.0, estimate_error=False)
    assert len(first) > 0 and first == second


def test_random_3s_smallest_alphas_converge_cold() -> None:
    # "random 3" (isotropic, hinge + lasso at lam = 9.75): at its three smallest alphas the
    # direct iteration fails at its first evaluation (the cold start, Q ~ 1e-92, is the
    # zero estimator's neighbourhood, where the hinge has no curvature:
    # UnboundedWeightsError) and so does the homotopy in lam (3339-3633 evaluations before
    # it was given up); the homotopy in alpha, tried first for that failure, reaches them.
    # Each answer is a fixed point of the map in the state's own coordinates (a warm start
    # from it converges at its first evaluation); at alpha = 0.39 it is the one a
    # continuation in alpha in steps of about 0.002 from alpha = 1.59 reached (Q = 0.011,
    # nonzero fraction 5e-40, test error 0.5); at alpha = 1.59 the homotopy in lam arrives
    # too, at the same fixed point
    from dataclasses import replace

    import gaussmix as gm
    from gaussmix.theory.api.api import make_problem
    from gaussmix.theory.solve.fixed_point import start_state
    from gaussmix.theory.solve.homotopy import Fallbacks, LambdaHomotopy
    from gaussmix.theory.solve.policy import policy_for, verdict
    from gaussmix.theory.solve.solver import assemble_result

    grid = next(g for g in RANDOM if g.name == "random 3")
    mix = cg.mixture(grid.mixture)
    kw = {"lam": grid.fixed, "penalty": grid.penalty}
    for alpha in grid.values[:3]:
        with pytest.raises(gm.UnboundedWeightsError):
            gm.solve(mix, grid.loss, alpha=alpha, fallback=False, **kw)
        with cg.counted_evaluations() as log:
            res = gm.solve(mix, grid.loss, alpha=alpha, **kw)
        assert res.success and res.params["fallback"].startswith("alpha homotopy from")
        assert len(log) < 300  # (measured 181-203; 515-654 before the secant)
        again = gm.solve(mix, grid.loss, alpha=alpha, init=res, **kw)
        assert again.success and again.n_iter == 1
        assert res.test_error == pytest.approx(0.5, abs=1e-4)
    low = gm.solve(mix, grid.loss, alpha=grid.values[0], **kw)
    assert float(low.Q[0, 0, 0]) == pytest.approx(0.011, rel=0.02)
    assert 1e-40 < low.nonzero_fraction < 1e-39
    assert low.test_error == pytest.approx(0.5, abs=1e-9)
    # alpha = 1.59: the homotopy in alpha (the default) against the homotopy in lam alone
    problem = make_problem(mix, grid.loss, alpha=grid.values[3], **kw)
    opts = gm.SolverOptions()
    lam_only = Fallbacks((LambdaHomotopy(),), verdict, policy_for)
    policy = replace(policy_for(problem, opts), fallback=lam_only)
    est = policy.run(problem, opts, start_state(problem, None), None, {})
    by_lam = assemble_result(problem, opts, est)
    by_alpha = gm.solve(mix, grid.loss, alpha=grid.values[3], **kw)
    assert by_lam.params["fallback"].startswith("lambda homotopy from")
    assert by_alpha.params["fallback"].startswith("alpha homotopy from")
    for key in ("test_error", "train_error", "train_loss", "nonzero_fraction"):
        assert getattr(by_alpha, key) == pytest.approx(getattr(by_lam, key), abs=1e-9), key


def test_random_3s_cold_points_are_its_curves() -> None:
    """The cold solves of "random 3"'s three smallest alphas (each through the homotopy in
    alpha from a larger alpha) and its learning curve (its first point solved cold, the
    next ones walked in alpha from the last: :func:`gaussmix.experiments.curves._walked`)
    reach the same fixed points: the order parameters within a few times the tolerance
    (1e-8, relative to ``max(1, |x|)`` as the solver measures a step), the test error
    within its integration error."""
    import numpy as np

    import gaussmix as gm

    grid = next(g for g in RANDOM if g.name == "random 3")
    mix = cg.mixture(grid.mixture)
    table = cg.curve(grid)
    assert table["converged"].all()
    assert "fallback" in table.points[0].params  # (the first point: the cold solve's)
    for alpha, on_curve in zip(grid.values[:3], table.points[:3]):
        cold = gm.solve(mix, grid.loss, lam=grid.fixed, alpha=alpha, penalty=grid.penalty)
        assert cold.success and cold.params["fallback"].startswith("alpha homotopy")
        for key in ("Q", "M", "V", "b"):
            a, b = np.asarray(getattr(cold, key)), np.asarray(getattr(on_curve, key))
            assert np.max(np.abs(a - b) / np.maximum(1.0, np.abs(b))) < 1e-7, (alpha, key)
        bound = cold.integration_error + on_curve.integration_error + 1e-9
        assert abs(cold.test_error - on_curve.test_error) <= bound
