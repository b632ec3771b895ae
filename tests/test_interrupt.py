"""The cooperative stop of :mod:`gaussmix.core.interrupt`: a solve checks it after every
evaluation of its map, so that a curve solved at all its points at once (which gives its
rows only at the end) stops within one evaluation; the explorer's jobs run under it."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from conftest import HANG

import gaussmix as gm
from gaussmix.core.interrupt import check_interrupt, interruptible
from gaussmix.experiments import continuation, curves
from gaussmix.explore import ExplorerState, start_curve

THREE = gm.Mixture.isotropic(0.5, "simplex", n_clusters=3)
BINARY = gm.Mixture.isotropic(0.5, "antipodal", labels="binary")


class _Stop(Exception):
    pass


def test_the_check_is_per_thread_and_nests() -> None:
    calls: list[str] = []
    check_interrupt()  # none installed: nothing happens
    with interruptible(lambda: calls.append("outer")):
        check_interrupt()
        with interruptible(lambda: calls.append("inner")):
            check_interrupt()
        check_interrupt()
        seen: list[bool] = []
        other = threading.Thread(target=lambda: seen.append(check_interrupt() is None))
        other.start()
        other.join()
    check_interrupt()
    assert calls == ["outer", "inner", "outer"] and seen == [True]


@pytest.mark.parametrize("loss", ["cross-entropy", "logistic"])
def test_a_stacked_curve_stops_within_one_evaluation(loss: str, monkeypatch) -> None:
    """The check's exception leaves the stacked solve at once (it is not taken for a
    failure of the stacked solve, which would solve the curve again point by point)."""
    mix = (
        THREE
        if loss == "cross-entropy"
        else gm.Mixture.isotropic(0.5, "antipodal", labels="binary")
    )
    grid = np.geomspace(0.3, 4.0, 20)
    evaluations = []
    solve = continuation.solve_points

    def spy(problems, opts, **kw):
        evaluations.append("stacked")
        return solve(problems, opts, **kw)

    monkeypatch.setattr(curves, "solve_points", spy)
    count = [0]

    def check() -> None:
        count[0] += 1
        if count[0] == 5:
            raise _Stop

    rows: list = []
    with interruptible(check), pytest.raises(_Stop):
        gm.learning_curve(mix, loss, grid, lam=0.5, callback=lambda r, _: rows.append(r))
    assert evaluations == ["stacked"] and count[0] == 5 and rows == []
    # and without the check, the same curve is solved stacked to its end
    table = gm.learning_curve(mix, loss, grid, lam=0.5)
    assert evaluations == ["stacked", "stacked"] and len(table) == 20


def test_the_explorer_cancels_a_stacked_curve_before_its_rows(monkeypatch) -> None:
    """A job cancelled while its curve is being solved stacked ends with no row (before,
    the stacked solve ran to its end, seconds for 400 points, and the cancel was seen at
    its first row)."""
    entered = threading.Event()
    solve = continuation.solve_points

    def spy(problems, opts, **kw):
        entered.set()
        return solve(problems, opts, **kw)

    monkeypatch.setattr(curves, "solve_points", spy)
    state = ExplorerState(n_clusters=3, delta=(0.5,), loss="cross-entropy", n_points=400)
    job = start_curve(state, coarse=0)
    assert entered.wait(HANG)
    job.cancel()
    job.wait(HANG)
    assert job.done and job.cancelled and job.rows == [] and job.error is None
