"""The explorer's budget of a point (``gaussmix.explore.engine.POINT_BUDGET``): at the
screen precision a point of a curve that has not converged within the budget's steps of
the solver is drawn missing, with the reason, and the library's curve goes on over the
points after it from the fixed points solved so far.  Counted in steps, never timed: the
rows are the library's, to the bit, piece by piece.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import gaussmix as gm
from gaussmix.explore import CurveJob, ExplorerState, clear_cache, engine
from gaussmix.explore.state import setup
from gaussmix.theory.prior import lasso as lasso_mod

HANG = 300.0


@pytest.fixture(scope="module", autouse=True)
def rule_of_lines():
    """The lasso prior's rule of lines on every atom (the exact soft-threshold moments of a
    diagonal metric, ``lasso._decoupled_atoms``, off), for every test of the module: the
    scenarios below are pinned to the steps each point of a K = 3 square lasso sweep takes
    on that rule (7-11, one point just over a budget), which the exact moments change (the
    square loss keeps its metrics diagonal); the budget's logic does not depend on the
    prior's rule, and the rule of lines still serves every non-diagonal metric."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(lasso_mod, "_decoupled_atoms", lambda A, shift_free: np.zeros(len(A), bool))
        yield


COLUMNS = ["test_error", "train_error", "train_loss", "n_iter", "converged"]
#: a K = 3 cross-entropy lasso at lam = 9.6 (a state of the explorer's sampled space,
#: ``benchmarks/_explore_space.py``, seed 0) near its zero estimator: from the cold start
#: the solver does not converge at alpha = 3 (its fallback still running after 200 s of
#: CPU), and does at alpha = 3.6 in 9 iterations
HOPELESS = ExplorerState.from_query(
    "n_clusters=3&delta=0.4638&rho=0.2065,0.3292,0.4643&means=gaussian&loss=cross-entropy"
    "&penalty=l1&lam=9.634&alpha_min=3.0&alpha_max=3.6&n_points=2"
)
#: a K = 3 square lasso along lambda (solved from large to small lambda), whose points
#: take 7-10 iterations each
SWEEP = ExplorerState(
    n_clusters=3,
    loss="square",
    penalty="l1",
    delta=(0.5,),
    axis="lambda",
    alpha=2.0,
    lam_min=0.01,
    lam_max=1.0,
    n_points=8,
)


def _run(state: ExplorerState, init=None) -> CurveJob:
    clear_cache()
    job = engine.start_curve(state, init=init)
    job.wait(HANG)
    assert job.done and job.error is None
    return job


def test_a_point_over_the_budget_is_drawn_missing_and_the_curve_goes_on(monkeypatch):
    point, values = setup(HOPELESS)
    kw = {**point.penalty_kw, **point.solve_kw}
    start = gm.learning_curve(point.mixture, point.loss, values[1:], lam=point.lam, **kw)
    monkeypatch.setattr(engine, "POINT_BUDGET", 20)
    job = _run(HOPELESS, init=list(start.points))  # the curve's start: the fixed point at 3.6
    table = job.table
    # alpha = 3: stopped after the budget's steps, NaN, the reason given
    assert [x for x, _ in job.failed] == [3.0]
    assert "not solved within the screen precision's 20 iterations" in job.failed[0][1]
    assert table.n_iter.iloc[0] == 20 and not table.converged.iloc[0]
    assert np.isnan(table.test_error.iloc[0]) and table.points[0] is None
    assert np.isnan(job.rows[0]["test_error"]) and np.isnan(job.rows[0]["q1"])
    # alpha = 3.6: the library's curve over the points after it, from init, to the bit
    rest = gm.learning_curve(
        point.mixture, point.loss, values[1:], lam=point.lam, init=start, **kw
    )
    np.testing.assert_array_equal(table[COLUMNS].iloc[1:], rest[COLUMNS])
    assert table.points[1] is not None and table.n_iter.iloc[1] < 20


#: a K = 3 square lasso along lambda whose third point solved (lam = 0.0311) takes more
#: than 11 steps from the continuation, the points before it fewer (7 and 9), and the
#: points after it, from the fixed points solved before, at most 11
STOPPED_SWEEP = SWEEP.replace(alpha=1.0, lam_min=0.003)


def test_a_sweep_goes_on_from_the_points_solved_in_its_order(monkeypatch):
    # a budget of 11 steps stops the sixth smallest lambda (the third solved), not the others
    monkeypatch.setattr(engine, "POINT_BUDGET", 11)
    job = _run(STOPPED_SWEEP)
    table = job.table
    point, values = setup(STOPPED_SWEEP)
    assert values[0] < values[-1]  # solved from the end
    assert [x for x, _ in job.failed] == [values[5]]
    assert table.n_iter.iloc[5] == 11 and np.isnan(table.test_error.iloc[5])
    # the rows solved before it: the library's sweep over them, to the bit
    kw = {**point.penalty_kw, **point.solve_kw}
    first = gm.lambda_sweep(point.mixture, point.loss, values[6:], alpha=point.alpha, **kw)
    np.testing.assert_array_equal(table[COLUMNS].iloc[6:], first[COLUMNS])
    assert table.n_iter.iloc[6:].max() <= 11
    # the rows after it: the library's, started from the fixed points solved
    last = gm.lambda_sweep(
        point.mixture, point.loss, values[:5], alpha=point.alpha, init=first, **kw
    )
    np.testing.assert_array_equal(table[COLUMNS].iloc[:5], last[COLUMNS])
    assert table.converged.iloc[:5].all()
    # the rows in the grid's order, as the library's table has them
    np.testing.assert_array_equal(table.lam, values)


@pytest.mark.parametrize("budget", [None, 10**6])
def test_without_a_stop_the_curve_is_the_librarys_whole(monkeypatch, budget):
    if budget is not None:
        monkeypatch.setattr(engine, "POINT_BUDGET", budget)
    state = SWEEP if budget is not None else SWEEP.replace(precision="library", n_points=3)
    job = _run(state)
    assert job.point_budget == budget and not job.failed
    point, values = setup(state)
    kw = {**point.penalty_kw, **point.solve_kw}
    whole = gm.lambda_sweep(point.mixture, point.loss, values, alpha=point.alpha, **kw)
    np.testing.assert_array_equal(job.table[COLUMNS], whole[COLUMNS])


def test_a_cold_point_has_no_budget(monkeypatch):
    # a budget of one step: the first point solved (lambda = 1, nothing to start from) takes
    # what it takes, each point after it is stopped (never a curve drawn all missing)
    monkeypatch.setattr(engine, "POINT_BUDGET", 1)
    job = _run(SWEEP)
    table = job.table
    assert table.converged.iloc[-1] and table.n_iter.iloc[-1] > 1
    assert not table.converged.iloc[:-1].any() and (table.n_iter.iloc[:-1] == 1).all()
    assert len(job.failed) == len(table) - 1


def test_a_slow_point_starts_again_from_the_curve_before(monkeypatch):
    # the sweep with a neighbouring curve's fixed points (alpha 4 instead of 2, as a move
    # of the alpha control gives them; its points take 7-9 steps from them), a budget of
    # 16 steps: the continuation along the curve may take half of them (8); a point past
    # them starts again from the neighbouring curve's fixed point at its own lambda with
    # the other half, and after a point stopped by the whole budget the rest of the curve
    # starts from the neighbouring curve alone, not from the points solved before the stop
    point, values = setup(SWEEP)
    kw = {**point.penalty_kw, **point.solve_kw}
    near = list(gm.lambda_sweep(point.mixture, point.loss, values, alpha=4.0, **kw).points)
    calls = []
    library_curve = engine._library_curve

    def spy(state, point, values, callback, init=None):
        calls.append((list(values), list(init or [])))
        return library_curve(state, point, values, callback, init)

    monkeypatch.setattr(engine, "_library_curve", spy)
    monkeypatch.setattr(engine, "POINT_BUDGET", 16)
    job = _run(SWEEP, init=near)
    table = job.table
    share = math.ceil(engine.FIRST_TRY_SHARE * 16)
    # solved from lambda = 1 down: lambda[6] and lambda[5] past the share, each solved
    # again from near; lambda[4] past the share, again from near, past the budget: drawn
    # missing, its steps those of both starts
    assert [x for x, _ in job.failed] == [values[4]]
    assert table.n_iter.iloc[4] == 16 and np.isnan(table.test_error.iloc[4])
    # the library's calls: the curve, lambda[6], [5] and [4] again, the rest after the
    # stop, lambda[2] and lambda[0] again (past the share: lambda[1] the continuation
    # solved), each from near alone
    expected = [list(values), *(list(values[:k]) for k in (7, 6, 5, 4, 3, 1))]
    assert [c[0] for c in calls] == expected
    assert calls[0][1] == near
    for _, init in calls[1:]:
        assert len(init) == len(near) and all(r is n for r, n in zip(init, near, strict=True))
    # lambda[0] started again: the library's from near, to the bit
    again = gm.lambda_sweep(
        point.mixture, point.loss, values[:1], alpha=point.alpha, init=near, **kw
    )
    np.testing.assert_array_equal(table[COLUMNS].iloc[:1], again[COLUMNS])
    # the point the continuation solved (after lambda[2], the first of its call, from near
    # with the whole budget) within its share
    assert table.n_iter.iloc[1] <= share


def test_the_start_after_a_stop():
    near = [object(), object()]
    solved = {0: "a", 1: None, 2: "b"}
    assert engine._restart(near, solved, stopped=False) == [*near, "a", "b"]
    assert engine._restart(near, solved, stopped=True) == near
    # a curve that started cold: the points solved so far are all there is
    assert engine._restart([], solved, stopped=True) == ["a", "b"]


def _steps(job: CurveJob) -> list[int]:
    """The steps of each row of a budgeted curve in the order solved (its ``n_iter``)."""
    return [int(r["n_iter"]) for r in job.rows]


@pytest.fixture(scope="module")
def sweep() -> CurveJob:
    """STOPPED_SWEEP with the default budgets: no point stopped (its points take 7-11
    steps, the last solved 11, over the median 9 of those before it)."""
    return _run(STOPPED_SWEEP)


def test_a_point_far_over_its_curves_typical_steps_is_drawn_missing(monkeypatch, sweep):
    # the sweep's points' steps in the order solved (the first cold), none stopped
    assert not sweep.failed
    steps = _steps(sweep)
    # the budget of a point after TYPICAL_FROM solved (the cold one not counted): the
    # median of their steps (factor 1, no floor); the first point over it is stopped there
    monkeypatch.setattr(engine, "TYPICAL_FROM", 3)
    monkeypatch.setattr(engine, "TYPICAL_FACTOR", 1)
    monkeypatch.setattr(engine, "TYPICAL_FLOOR", 1)
    over = next(k for k in range(4, len(steps)) if steps[k] > np.median(steps[1:k]))
    limit = math.ceil(np.median(steps[1:over]))
    job = _run(STOPPED_SWEEP)
    assert _steps(job)[:over] == steps[:over]  # the points before it: as unbudgeted
    _, values = setup(STOPPED_SWEEP)
    stopped = values[::-1][over]  # (solved from the largest lambda)
    assert job.failed[0][0] == stopped
    assert f"within the screen precision's {limit} iterations" in job.failed[0][1]
    assert job.table.n_iter[job.table.lam == stopped].item() == limit


@pytest.fixture(scope="module")
def hopeless_start() -> list:
    """HOPELESS's library curve at alpha = 3.6 alone (the start of its budgeted curves)."""
    point, values = setup(HOPELESS)
    kw = {**point.penalty_kw, **point.solve_kw}
    return list(
        gm.learning_curve(point.mixture, point.loss, values[1:], lam=point.lam, **kw).points
    )


@pytest.fixture
def hopeless(monkeypatch, hopeless_start):
    """HOPELESS's start and a budget of 20 steps."""
    monkeypatch.setattr(engine, "POINT_BUDGET", 20)
    return hopeless_start


def test_a_curve_with_a_point_missing_comes_back_from_the_cache_with_its_reason(hopeless):
    job = _run(HOPELESS, init=hopeless)
    again = engine.start_curve(HOPELESS, init=hopeless)
    again.wait(HANG)
    assert again.cached and again.error is None
    assert again.failed == job.failed and not again.rows[0]["converged"]
