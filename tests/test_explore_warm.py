"""The explorer's warm start: a curve one control away from the whole curve before it
starts from that curve's fixed points (``gaussmix.explore.engine.warm_start``, the library
curve's ``init``), for problems of more than one output.  The values are the library's with
that ``init`` (to the bit), the cold curve's fixed points within the screen precision's
tolerance, in fewer iterations.

The state is a K = 3 square lasso on 8 points (solved point by point, where ``init`` acts).
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
    n_clusters=3, loss="square", penalty="l1", delta=(0.5,), lam=0.05 * 10**0.5, n_points=8
)
MOVED = STATE.replace(lam=0.05)  # the lambda slider, half a decade down
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
    # the cold curve's fixed points, in fewer iterations (the first point: 25 cold, 13)
    for col in COLUMNS:
        np.testing.assert_allclose(table[col], fixed_point[col], rtol=0, atol=BOUND)
        np.testing.assert_allclose(cold[col], fixed_point[col], rtol=0, atol=BOUND)
    assert table.n_iter.iloc[0] < cold.n_iter.iloc[0]
    assert table.n_iter.sum() < cold.n_iter.sum()


def test_which_moves_start_warm():
    job = CurveJob(STATE)
    assert warm_start(job, MOVED) is None  # not done (or cancelled)
    job.table = _library(STATE)
    points = list(job.table.points)
    assert warm_start(job, MOVED) == points
    assert warm_start(job, STATE.replace(alpha_max=9.0)) == points
    # what is drawn does not count as a move
    assert warm_start(job, MOVED.replace(show=("test_error",), overlays=("bayes",)))
    # two controls, or a discrete one: cold
    assert warm_start(job, MOVED.replace(alpha_max=9.0)) is None
    assert warm_start(job, STATE.replace(loss="cross-entropy")) is None
    assert warm_start(job, STATE.replace(means="gaussian")) is None
    assert warm_start(None, MOVED) is None
    # one output (binary labels): its curves take a tenth of a second, cold
    binary = CurveJob(ExplorerState(n_points=4))
    binary.table = _library(binary.state)
    assert warm_start(binary, binary.state.replace(lam=0.2)) is None


def test_a_prefetched_neighbour_starts_from_the_curve_on_display(cold):
    clear_cache()
    with Session(coarse=0) as session:
        session.submit(STATE).wait(HANG)
        ahead = session.prefetch([MOVED])
        assert ahead.join(HANG) and ahead.error is None
        moved = session.submit(MOVED)
        table = moved.wait(HANG)
    assert moved.cached
    assert table.n_iter.iloc[0] < cold.n_iter.iloc[0]
