"""The explorer's warm starts: a curve one control away from the curve before it starts
from that curve's fixed points (``gaussmix.explore.warm_start``, the library curve's
``init``), and the final curve after a coarse pass from the coarse pass's.  The values are
the library's with that ``init`` (to the bit), the cold curve's fixed points within the
screen precision's tolerance, in fewer iterations.

The states are the binary square lasso of the explorer's tail (BENCHMARKS.md) on 8 points:
fewer than 10, so that the library solves them point by point, where ``init`` acts.
"""

from __future__ import annotations

import numpy as np
import pytest

import gaussmix as gm
from gaussmix.explore import CurveJob, ExplorerState, Session, clear_cache
from gaussmix.explore.engine import warm_start
from gaussmix.explore.state import SCREEN_TOL, setup

HANG = 300.0
STATE = ExplorerState(
    delta=0.1169,
    rho=(0.6358, 0.3642),
    means="simplex",
    loss="square",
    penalty="l1",
    lam=7.974e-4 * 10**0.5,
    alpha_min=0.0622,
    alpha_max=0.4152,
    n_points=8,
)
MOVED = STATE.replace(lam=7.974e-4)  # the lambda slider, half a decade down
#: a screen-precision curve's errors within this of the fixed point (the bound of
#: tests/test_explore_engine.py between the screen and library precisions)
BOUND = 10 * SCREEN_TOL
COLUMNS = ["test_error", "train_error", "train_loss"]


def _library(state: ExplorerState, init=None, **kw):
    point, values = setup(state)
    opts = {**point.solve_kw, **kw}
    return gm.learning_curve(
        point.mixture, point.loss, values, lam=point.lam, init=init, **point.penalty_kw, **opts
    )


@pytest.fixture(scope="module")
def fixed_point():
    """The moved state's curve to a tolerance 1e5 times the screen's."""
    return _library(MOVED, tol=SCREEN_TOL * 1e-5)


@pytest.fixture(scope="module")
def cold():
    return _library(MOVED)


def test_a_move_of_one_control_starts_from_the_curve_before_it(fixed_point, cold):
    clear_cache()
    with Session(coarse=0) as session:
        before = session.submit(STATE)
        before.wait(HANG)
        moved = session.submit(MOVED)
        table = moved.wait(HANG)
    assert moved.init and not moved.cached
    # the library's with that init, to the bit
    direct = _library(MOVED, init=before.table)
    np.testing.assert_array_equal(table[[*COLUMNS, "n_iter"]], direct[[*COLUMNS, "n_iter"]])
    # the cold curve's fixed points, in fewer iterations (the first point: 115 cold)
    for col in COLUMNS:
        np.testing.assert_allclose(table[col], fixed_point[col], rtol=0, atol=BOUND)
        np.testing.assert_allclose(cold[col], fixed_point[col], rtol=0, atol=BOUND)
    assert table.n_iter.iloc[0] < cold.n_iter.iloc[0] / 4
    assert table.n_iter.sum() < cold.n_iter.sum()


def test_which_moves_start_warm():
    job = CurveJob(STATE)
    job.results = [None]
    assert warm_start(job, MOVED) is None  # nothing solved
    job.results = [_library(STATE).points[0], None]
    assert warm_start(job, MOVED) == [job.results[0]]
    assert warm_start(job, STATE.replace(alpha_max=0.5)) == [job.results[0]]
    # what is drawn does not count as a move
    assert warm_start(job, MOVED.replace(show=("test_error",), overlays=("bayes",)))
    # two controls, or a discrete one: cold
    assert warm_start(job, MOVED.replace(alpha_max=0.5)) is None
    assert warm_start(job, STATE.replace(loss="logistic")) is None
    assert warm_start(job, STATE.replace(means="gaussian")) is None
    assert warm_start(None, MOVED) is None


def test_the_final_curve_starts_from_the_coarse_pass(fixed_point, cold):
    clear_cache()
    job = CurveJob(MOVED, coarse=4)
    job.coarse_budget = np.inf  # the whole pass, however loaded the machine
    job._start()
    table = job.wait(HANG)
    assert len(job.preview) == 4 and not job.coarse_stopped
    # the first point (both passes' first) from its own fixed point at the coarse pass
    assert table.n_iter.iloc[0] < cold.n_iter.iloc[0] / 4
    for col in COLUMNS:
        np.testing.assert_allclose(table[col], fixed_point[col], rtol=0, atol=BOUND)


def test_a_prefetched_neighbour_starts_from_the_curve_on_display(cold):
    clear_cache()
    with Session(coarse=0) as session:
        session.submit(STATE).wait(HANG)
        ahead = session.prefetch([MOVED])
        assert ahead.join(HANG) and ahead.error is None
        moved = session.submit(MOVED)
        table = moved.wait(HANG)
    assert moved.cached
    assert table.n_iter.iloc[0] < cold.n_iter.iloc[0] / 4
