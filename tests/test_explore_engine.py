"""The explorer's engine (issue 22): the curve of a state is the library's to the bit,
points arrive as they are solved, a point without a fixed point is listed and NaN, errors and
warnings are reported, cancelling stops within one point, and no thread is left behind."""

from __future__ import annotations

import importlib
import math
import threading
import time

import numpy as np
import pandas as pd
import pytest
from conftest import HANG

import gaussmix as gm
import gaussmix.experiments.curves as curves
from gaussmix.core.exceptions import ConvergenceError
from gaussmix.explore import (
    CurveJob,
    ExplorerState,
    Session,
    clear_cache,
    start_curve,
    start_overlays,
)
from gaussmix.explore.engine import CACHE_SIZE, COARSE_POINTS, MAX_OVERLAY_POINTS
from gaussmix.explore.state import PRECISIONS, SCREEN_TOL

#: the solver's options of the explorer's default (screen) precision, for the library's calls
SCREEN = PRECISIONS["screen"]

BINARY = ExplorerState(n_points=12)
THREE = ExplorerState(n_clusters=3, delta=(0.5,), loss="cross-entropy", lam=1.0, n_points=10)


@pytest.fixture(autouse=True)
def _fresh_cache():
    clear_cache()
    yield
    clear_cache()


def _cancel_from(holder: dict, when: int = 1):
    """An ``on_point`` that cancels ``holder['job']`` when it has ``when`` rows (waiting
    for the job to be stored, which may follow its first point)."""

    def on_point(row: dict) -> None:
        while "job" not in holder:
            time.sleep(0.001)
        if len(holder["job"].rows) == when:
            holder["job"].cancel()

    return on_point


def _explore_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("gaussmix-explore")]


@pytest.fixture(autouse=True)
def _no_thread_left():
    yield
    deadline = time.monotonic() + HANG
    while _explore_threads() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert _explore_threads() == []


def _same_bits(a: pd.DataFrame, b: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(a, b, check_exact=True)
    for col in a.columns:
        if a[col].dtype.kind == "f":
            assert a[col].to_numpy().tobytes() == b[col].to_numpy().tobytes(), col


def _rows_are_the_table(rows: list[dict], table: pd.DataFrame, x: str) -> None:
    by_x = {row[x]: row for row in rows}
    assert len(by_x) == len(table)
    for rec in table.to_dict("records"):
        row = by_x[rec[x]]
        for key, value in rec.items():
            if isinstance(value, float) and math.isnan(value):
                assert math.isnan(row[key]), key
            else:
                assert row[key] == value, key


# ---------------------------------------------------------------------------- to the bit
def test_the_binary_curve_is_gm_learning_curve_to_the_bit():
    job = start_curve(BINARY)
    table = job.wait(HANG)
    assert job.done and job.error is None and not job.cancelled
    mix = gm.Mixture.isotropic(1.0, "simplex", n_clusters=2, labels="binary")
    direct = gm.learning_curve(mix, "logistic", np.geomspace(0.2, 8.0, 12), lam=0.1, **SCREEN)
    _same_bits(table, direct)
    _rows_are_the_table(job.rows, direct, "alpha")
    assert job.progress == (12, 12) and job.failed == []


def test_the_three_cluster_curve_is_gm_learning_curve_to_the_bit():
    state = THREE.replace(rho=(0.2, 0.3, 0.5), log_x=False)
    job = start_curve(state)
    table = job.wait(HANG)
    assert job.error is None
    mix = gm.Mixture.isotropic(0.5, "simplex", n_clusters=3, rho=[0.2, 0.3, 0.5])
    direct = gm.learning_curve(mix, "cross-entropy", np.linspace(0.2, 8.0, 10), lam=1.0, **SCREEN)
    _same_bits(table, direct)
    _rows_are_the_table(job.rows, direct, "alpha")


def test_the_lambda_axis_is_gm_lambda_sweep_to_the_bit():
    state = BINARY.replace(
        axis="lambda", alpha=3.0, lam_min=1e-3, lam_max=10.0, n_points=9, precision="library"
    )
    order = []
    job = start_curve(state, on_point=lambda row: order.append(row["lam"]))
    table = job.wait(HANG)
    mix = gm.Mixture.isotropic(1.0, "simplex", n_clusters=2, labels="binary")
    with pytest.warns(gm.IntegrationWarning) as caught:
        direct = gm.lambda_sweep(mix, "logistic", np.geomspace(1e-3, 10.0, 9), alpha=3.0)
    _same_bits(table, direct)
    _rows_are_the_table(job.rows, direct, "lam")
    assert order == sorted(order, reverse=True)  # solved from the largest lambda down
    # the library's warnings (small lambda: the integration error estimate), as text
    texts = {f"IntegrationWarning: {' '.join(str(w.message).split())}" for w in caught}
    assert set(job.warnings) == texts


def test_a_finished_curve_is_served_from_the_cache():
    first = start_curve(BINARY)
    table = first.wait(HANG)
    again = start_curve(BINARY.replace(show=("train_loss",), overlays=("bayes",)))
    served = again.wait(HANG)
    assert again.cached and not first.cached
    _same_bits(served, table)
    assert served.points == table.points and again.rows == first.rows
    served["test_error"] = 0.0  # the caller's own copy
    _same_bits(start_curve(BINARY).wait(HANG), table)
    # another lambda is another curve
    other = start_curve(BINARY.replace(lam=0.2))
    other.wait(HANG)
    assert not other.cached
    assert CACHE_SIZE >= 2


# ---------------------------------------------------------------------------- order parameters
def test_the_order_parameters_follow_each_clusters_label():
    job = start_curve(BINARY.replace(n_points=3, alpha_min=1.0, alpha_max=4.0))
    job.wait(HANG)
    mix = gm.Mixture.isotropic(1.0, "simplex", n_clusters=2, labels="binary")
    for row in job.rows:
        res = gm.solve(mix, "logistic", lam=0.1, alpha=row["alpha"])
        # y_1 = +1, y_2 = -1: m1 = M_1, m2 = -M_2 (equal by the mixture's symmetry)
        assert row["m1"] == pytest.approx(float(res.M[0, 0]), rel=1e-6)
        assert row["m2"] == pytest.approx(-float(res.M[1, 0]), rel=1e-6)
        assert row["m1"] == pytest.approx(row["m2"], rel=1e-6)
        assert row["q1"] == pytest.approx(float(res.Q[0, 0, 0]), rel=1e-6)
        assert row["v2"] == pytest.approx(float(res.V[1, 0, 0]), rel=1e-6)
        assert row["q1"] > row["m1"] ** 2  # Q - M^2 is the variance of the projection


# ---------------------------------------------------------------------------- failures
def _fail_at(monkeypatch, alpha_bad: float) -> None:
    real = curves.solve_problem

    def solve_problem(problem, **kw):
        if problem.alpha == alpha_bad:
            raise ConvergenceError(f"forced failure at alpha={alpha_bad}")
        return real(problem, **kw)

    monkeypatch.setattr(curves, "solve_problem", solve_problem)
    # a curve solved as one stacked state fails as a whole and falls back to the points
    # one by one: the forced failure is then at one point, as a real one would be
    monkeypatch.setattr(curves, "solve_points", lambda problems, opts, **kw: None)


def test_a_point_without_fixed_point_is_listed_and_never_a_number(monkeypatch):
    alphas = np.geomspace(0.2, 8.0, 12)
    _fail_at(monkeypatch, float(alphas[5]))
    job = start_curve(BINARY)
    table = job.wait(HANG)
    assert job.error is None
    assert [x for x, _ in job.failed] == [float(alphas[5])]
    assert "no fixed point" in job.failed[0][1]
    bad = [row for row in job.rows if not row["converged"]]
    assert len(bad) == 1 and math.isnan(bad[0]["test_error"]) and math.isnan(bad[0]["m1"])
    assert math.isnan(table["test_error"].iloc[5]) and not table["converged"].iloc[5]
    assert any(w.startswith("ConvergenceWarning: no fixed point") for w in job.warnings)
    # the library's table with the same failure, to the bit
    mix = gm.Mixture.isotropic(1.0, "simplex", n_clusters=2, labels="binary")
    with pytest.warns(gm.ConvergenceWarning):
        direct = gm.learning_curve(mix, "logistic", alphas, lam=0.1, **SCREEN)
    _same_bits(table, direct)


def test_an_invalid_state_ends_the_job_with_the_librarys_message():
    job = start_curve(BINARY.replace(rho=(0.3, 0.3)))
    assert job.wait(HANG) is None
    assert job.done and job.error.startswith("rho must sum to 1") and job.rows == []


def test_an_exception_in_the_worker_becomes_the_error(monkeypatch):
    def boom(*args, **kwargs):
        raise RuntimeError("the solver broke")

    monkeypatch.setattr(curves, "learning_curve", boom)
    job = start_curve(BINARY)
    assert job.wait(HANG) is None
    assert job.error == "RuntimeError: the solver broke"


def test_a_failing_on_point_callback_is_reported_too():
    def bad(row):
        raise ValueError("display failed")

    job = start_curve(BINARY)
    job.wait(HANG)
    job = start_curve(BINARY, on_point=bad)  # from the cache: the callback still runs
    job.wait(HANG)
    assert job.error == "display failed"


def test_warnings_of_the_library_are_collected_as_text(monkeypatch):
    real = curves.solve_problem

    def solve_problem(problem, **kw):
        import warnings

        warnings.warn("rule too coarse here", gm.IntegrationWarning, stacklevel=2)
        return real(problem, **kw)

    monkeypatch.setattr(curves, "solve_problem", solve_problem)
    job = start_curve(BINARY.replace(n_points=3))
    job.wait(HANG)
    assert job.warnings == ["IntegrationWarning: rule too coarse here"]


# ---------------------------------------------------------------------------- cancel
def test_cancel_stops_within_one_point():
    holder = {}
    holder["job"] = job = start_curve(THREE.replace(n_points=40), on_point=_cancel_from(holder, 2))
    assert job.wait(HANG) is None
    assert job.cancelled and job.done and job.error is None
    assert len(job.rows) == 2 and job.progress == (2, 40)


#: a curve whose rows come one by one: K = 3 cross-entropy whose first point is in the
#: sharp regime is solved point by point (at larger lambda its points are solved at once,
#: gaussmix.theory.solve.batch, and the rows come together at the end)
STREAMING = THREE.replace(n_points=40, lam=0.01)


def test_cancel_from_another_thread():
    job = start_curve(STREAMING)
    while not job.rows and not job.done:
        time.sleep(0.001)
    job.cancel()
    seen = len(job.rows)
    job.wait(HANG)
    assert job.cancelled and len(job.rows) <= seen + 1


def test_a_cancelled_curve_is_not_cached():
    holder = {}
    holder["job"] = start_curve(BINARY, on_point=_cancel_from(holder))
    assert holder["job"].wait(HANG) is None and holder["job"].cancelled
    job = start_curve(BINARY)
    assert job.wait(HANG) is not None and not job.cached and len(job.rows) == 12


def test_a_session_cancels_the_older_request_and_closes_cleanly():
    with Session() as session:
        slow = session.submit(STREAMING)
        while not slow.rows:
            time.sleep(0.001)
        fast = session.submit(BINARY)
        assert fast.wait(HANG) is not None
        slow.wait(HANG)
        assert slow.cancelled and len(slow.rows) < 40
        overlays = session.submit_overlays(BINARY.replace(overlays=("bayes",)))
        session.submit(THREE.replace(n_points=40, lam=0.02))
    assert overlays.done
    assert _explore_threads() == []


# ---------------------------------------------------------------------------- overlays
def test_the_bayes_overlay_is_the_librarys_and_below_the_curve():
    state = BINARY.replace(overlays=("bayes",))
    job = start_overlays(state)
    results = job.wait(HANG)
    assert job.error is None and job.progress == (12, 12)
    mix = gm.Mixture.isotropic(1.0, "simplex", n_clusters=2, labels="binary")
    curve = start_curve(state).wait(HANG)
    for row, erm in zip(results["bayes"].rows, curve["test_error"]):
        assert row["test_error"] == gm.bayes_optimal_error(mix, row["alpha"]).test_error
        assert row["test_error"] < erm


def test_alpha_star_is_the_closed_form_for_two_clusters():
    results = start_overlays(BINARY.replace(overlays=("alpha_star",))).wait(HANG)
    mix = gm.Mixture.isotropic(1.0, "simplex", n_clusters=2, labels="binary")
    exact = gm.binary_separability_threshold(mix)
    assert results["alpha_star"].value == pytest.approx(exact, rel=1e-4)


def test_an_overlay_the_library_does_not_define_says_why():
    block = BINARY.replace(
        model="block", fractions=(0.5, 0.5), deltas=(0.5, 2.0), overlays=("bayes",)
    )
    bayes = start_overlays(block).wait(HANG)["bayes"]
    assert bayes.rows == [] and "only for isotropic covariances" in bayes.unavailable
    many = ExplorerState(
        n_clusters=7,
        loss="cross-entropy",
        rho=(0.1, 0.1, 0.1, 0.1, 0.2, 0.2, 0.2),
        overlays=("alpha_star",),
    )
    star = start_overlays(many).wait(HANG)["alpha_star"]
    assert star.value is None and "supports K <= 6" in star.unavailable


def test_lambda_star_and_simulation_points_are_the_librarys():
    state = BINARY.replace(
        axis="lambda",
        alpha=2.0,
        lam_min=0.01,
        lam_max=1.0,
        n_points=3,
        overlays=("lambda_star", "simulation"),
        sim_d=100,
        sim_seeds=3,
    )
    seen = []
    job = start_overlays(state, on_result=lambda o: seen.append(o.name))
    results = job.wait(HANG)
    assert seen == ["lambda_star", "simulation"] and job.progress == (4, 4)
    mix = gm.Mixture.isotropic(1.0, "simplex", n_clusters=2, labels="binary")
    best = gm.optimal_lambda(mix, "logistic", alpha=2.0)
    assert results["lambda_star"].value == best.lam_star
    sims = results["simulation"].rows
    assert [r["lam"] for r in sims] == [0.01, 0.1, 1.0]
    direct = gm.simulate(mix, loss="logistic", lam=0.1, alpha=2.0, d=100, seeds=3, seed=0)
    assert sims[1]["test_error"] == direct.mean["test_error"]
    assert sims[1]["test_error_se"] == direct.se["test_error"] > 0


def test_the_costly_overlays_are_thinned_along_alpha_and_cancel(monkeypatch):
    # the cancel comes from inside the first simulation, so that the test does not race the
    # job's thread: the job must stop before the second of its thinned points
    simulation = importlib.import_module("gaussmix.simulate.simulation")
    real, started, jobs = simulation.simulate, threading.Event(), []

    def simulate_then_cancel(*args, **kwargs):
        result = real(*args, **kwargs)
        started.wait(HANG)
        jobs[0].cancel()
        return result

    monkeypatch.setattr(simulation, "simulate", simulate_then_cancel)
    jobs.append(start_overlays(BINARY.replace(n_points=40, overlays=("simulation",), sim_d=50)))
    started.set()
    job = jobs[0]
    results = job.wait(HANG)
    assert job.done and job.cancelled
    assert job.progress == (1, MAX_OVERLAY_POINTS) and MAX_OVERLAY_POINTS < 40
    assert len(results["simulation"].rows) == 1


# ---------------------------------------------------------------------------- speed aids
def test_the_coarse_pass_is_the_librarys_curve_on_every_few_points():
    previews, refining = [], []
    job = CurveJob(THREE.replace(n_points=21), coarse=5)
    job._on_preview = lambda rows: (previews.append(rows), refining.append(job.refining))
    job._on_point = lambda _: refining.append(job.refining)
    job.coarse_budget = math.inf  # the whole pass, however loaded the machine
    job._start()
    table = job.wait(HANG)
    assert not job.coarse_stopped
    # refining from the end of the coarse pass on: at its preview and every row after it
    assert refining == [True] * 22
    picked = np.geomspace(0.2, 8.0, 21)[[0, 5, 10, 15, 20]]
    mix = gm.Mixture.isotropic(0.5, "simplex", n_clusters=3)
    direct = gm.learning_curve(mix, "cross-entropy", picked, lam=1.0, **SCREEN)
    assert previews == [job.preview] and len(job.preview) == 5
    _rows_are_the_table(job.preview, direct, "alpha")
    # the final curve is unchanged by it, and within the solver's tolerance of it
    full = gm.learning_curve(mix, "cross-entropy", np.geomspace(0.2, 8.0, 21), lam=1.0, **SCREEN)
    _same_bits(table, full)
    np.testing.assert_allclose(
        full["test_error"].to_numpy()[[0, 5, 10, 15, 20]], direct["test_error"], atol=1e-6
    )


def test_a_session_runs_the_coarse_pass_for_multi_output_problems_only():
    """... that the library solves point by point: a K = 3 curve of 10 points or more with
    ridge is solved at all its points at once, its rows together in about twice a coarse
    pass's time (gaussmix.theory.solve.batch), and has none."""
    from gaussmix.explore.engine import _auto_coarse

    with Session(coarse="auto") as session:
        binary = session.submit(BINARY.replace(n_points=40))
        binary.wait(HANG)
        three = session.submit(THREE.replace(n_points=20))
        three.wait(HANG)
    assert binary.preview == [] and three.preview == [] and len(three.rows) == 20
    assert not binary.refining and not three.refining  # nothing coarse to refine
    assert _auto_coarse(THREE.replace(n_points=9)) == COARSE_POINTS  # too few to be stacked
    assert _auto_coarse(THREE.replace(penalty="l1")) == COARSE_POINTS  # the prior's own rule
    assert _auto_coarse(THREE.replace(n_clusters=4)) == COARSE_POINTS
    assert _auto_coarse(THREE) == _auto_coarse(BINARY) == 0


def test_prefetched_neighbours_are_served_from_the_cache():
    with Session(coarse=0) as session:
        shown = session.submit(BINARY)
        ahead = session.prefetch([BINARY.replace(lam=0.2), BINARY.replace(lam=-1.0)])
        assert ahead.join(HANG) and ahead.error is None and ahead.progress == (2, 2)
        assert shown.done
        moved = session.submit(BINARY.replace(lam=0.2))
        assert moved.wait(HANG) is not None and moved.cached
    mix = gm.Mixture.isotropic(1.0, "simplex", n_clusters=2, labels="binary")
    _same_bits(
        moved.table,
        gm.learning_curve(mix, "logistic", np.geomspace(0.2, 8.0, 12), lam=0.2, **SCREEN),
    )


def test_a_new_request_cancels_the_prefetch():
    with Session(coarse=0) as session:
        session.submit(BINARY).wait(HANG)
        ahead = session.prefetch([THREE.replace(n_points=40, lam=lam) for lam in (0.3, 0.4)])
        session.submit(BINARY.replace(lam=0.3))
        assert ahead.join(HANG) and ahead.cancelled and ahead.progress[0] < 2


def test_a_prefetch_waits_its_delay_after_the_curve_and_cancel_stops_it():
    """The prefetch starts ``delay`` seconds after the curve on display has ended (the
    page draws meanwhile); :meth:`Session.cancel` stops the curve and the prefetch, and the
    curve's ``on_done`` is called once it has ended, cancelled or not."""
    ended: list[float] = []
    with Session(coarse=0) as session:
        shown = session.submit(BINARY, on_done=lambda: ended.append(time.monotonic()))
        # a delay long enough that the prefetch is still waiting when the curve's wait returns,
        # on a busy machine too
        ahead = session.prefetch([BINARY.replace(lam=0.7)], delay=2.0)
        assert shown.wait(HANG) is not None and ahead.join(0.2) is False
        assert ahead.progress == (0, 1)  # still waiting its delay
        assert ahead.join(HANG) and ahead.progress == (1, 1) and ahead.error is None
        assert len(ended) == 1
        slow = session.submit(STREAMING, on_done=lambda: ended.append(time.monotonic()))
        ahead = session.prefetch([BINARY.replace(lam=0.8)], delay=60.0)
        session.cancel()
        assert slow.wait(HANG) is None and slow.cancelled and len(ended) == 2
        # ended within 30 s, less than its 60 s delay: cancel stopped the wait
        assert ahead.join(30) and ahead.cancelled and ahead.progress == (0, 1)


# ---------------------------------------------------------------------------- the library hook
def test_the_curves_callback_gives_each_row_and_result_as_solved():
    mix = gm.Mixture.isotropic(1.0, "simplex", n_clusters=2, labels="binary")
    seen = []
    alphas = [0.5, 1.0, 2.0]
    table = gm.learning_curve(mix, "logistic", alphas, lam=0.1, callback=lambda *a: seen.append(a))
    assert [row["alpha"] for row, _ in seen] == alphas
    _rows_are_the_table([row for row, _ in seen], table, "alpha")
    assert [res for _, res in seen] == list(table.points)
    assert table.equals(gm.learning_curve(mix, "logistic", alphas, lam=0.1))  # no effect


def test_an_exception_in_the_callback_stops_the_curve():
    mix = gm.Mixture.isotropic(1.0, "simplex", n_clusters=2, labels="binary")
    seen = []

    def stop(row, result):
        seen.append(row["lam"])
        if len(seen) == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        gm.lambda_sweep(mix, "logistic", [0.01, 0.1, 1.0, 10.0], alpha=2.0, callback=stop)
    assert seen == [10.0, 1.0]


def test_a_row_without_fixed_point_has_the_columns_of_a_converged_row(monkeypatch):
    alphas = np.geomspace(0.2, 8.0, 12)
    _fail_at(monkeypatch, float(alphas[0]))
    job = start_curve(BINARY)
    table = job.wait(HANG)
    monkeypatch.undo()
    clear_cache()
    assert list(job.rows[0]) == list(job.rows[1])  # test_loss included, in its place
    assert list(table.columns) == list(start_curve(BINARY).wait(HANG).columns)
    assert math.isnan(table["test_loss"].iloc[0])


# ---------------------------------------------------------------------------- precision
@pytest.mark.parametrize(
    "state",
    [
        BINARY,
        THREE.replace(rho=(0.2, 0.3, 0.5), lam=0.01),
        ExplorerState(loss="square", penalty="l1", lam=0.001, rho=(0.3, 0.7), n_points=6),
        ExplorerState(n_clusters=4, loss="square", lam=0.08, n_points=5),
    ],
    ids=["binary", "K=3 cross-entropy", "binary lasso", "K=4 square"],
)
def test_the_screen_precision_is_within_ten_tolerances_of_the_librarys(state):
    """The default (screen) precision solves to SCREEN_TOL without the error estimate: its
    errors are Lipschitz in the order parameters, which it has to SCREEN_TOL (relative), so
    they stay within a few tolerances of the library's default (measured: at most 3e-6 over
    sampled states); 10 tolerances (1e-4, 0.04 pixel of a 400-pixel plot) bounds it."""
    screen = start_curve(state).wait(HANG)
    library = start_curve(state.replace(precision="library")).wait(HANG)
    assert screen is not None and library is not None
    for column in ("test_error", "train_error", "train_loss"):
        a, b = screen[column].to_numpy(), library[column].to_numpy()
        np.testing.assert_allclose(a, b, rtol=0, atol=10 * SCREEN_TOL, err_msg=column)
    assert not np.array_equal(screen["test_error"], library["test_error"])  # not one solve


def test_an_unknown_precision_is_refused_naming_the_control():
    from gaussmix.explore import validate

    assert "precision" in validate(BINARY.replace(precision="pixel"))


def test_the_coarse_pass_rows_can_be_drawn_as_they_arrive(monkeypatch):
    """job.preview grows by one row as each point of the coarse pass is solved (a display
    draws them then), before the pass ends and before the final curve's first row."""
    holder: dict = {}
    seen: list[tuple[int, int]] = []
    library = curves.learning_curve

    def watched(*args, callback, **kwargs):
        def hook(row, result):
            callback(row, result)
            job = holder.get("job")
            if job is not None:
                seen.append((len(job.preview), len(job.rows)))

        return library(*args, callback=hook, **kwargs)

    monkeypatch.setattr(curves, "learning_curve", watched)
    job = CurveJob(THREE.replace(n_points=12), coarse=4)  # (start_curve, stored first)
    job.coarse_budget = math.inf
    holder["job"] = job
    job._start()
    assert job.wait(HANG) is not None
    assert [p for p, r in seen if r == 0] == [1, 2, 3, 4]
    assert len(job.rows) == 12


def test_a_coarse_pass_over_its_budget_stops_and_the_curve_is_unchanged():
    """The coarse pass stops once it has spent its CPU budget (here none: within the first
    evaluation of the solver's map, or at its first row); the rows it had are the library's
    coarse curve's first ones, and the final curve is the library's to the bit."""
    from gaussmix.explore.engine import _evenly

    state = THREE.replace(n_points=12)
    job = CurveJob(state, coarse=4)
    job.coarse_budget = 0.0
    job._start()
    table = job.wait(HANG)
    assert job.coarse_stopped and not job.error
    assert len(job.preview) <= 1  # stopped at the first check
    mix = gm.Mixture.isotropic(0.5, "simplex", n_clusters=3)
    grid = np.geomspace(0.2, 8.0, 12)
    if job.preview:
        direct = gm.learning_curve(
            mix, "cross-entropy", grid[_evenly(12, 4)][:1], lam=1.0, **SCREEN
        )
        _rows_are_the_table(job.preview, direct, "alpha")
    _same_bits(table, gm.learning_curve(mix, "cross-entropy", grid, lam=1.0, **SCREEN))
    assert len(job.rows) == 12 and not job.failed


def test_a_session_skips_a_coarse_pass_that_the_curve_before_says_would_stop(monkeypatch):
    """Where 4 points at the pace of the curve before (the median CPU time of its rows)
    take more than the coarse pass's budget (here none), the next curve one control away
    starts without one (it would only delay the curve: its rows come from the low end as
    the coarse pass's would), its rows those of the same curve without a coarse pass, to
    the bit; where they fit the budget, the coarse pass is run.  A curve from the cache
    carries the pace of its computation."""
    from gaussmix.explore.budget import coarse_hopeless
    from gaussmix.explore.engine import COARSE_BUDGET_ENV

    state = THREE.replace(n_points=8)  # point by point: fewer than 10 points
    monkeypatch.setenv(COARSE_BUDGET_ENV, "0")
    with Session(coarse=4) as session:
        first = session.submit(state)
        first.wait(HANG)
        assert first.coarse_stopped and first.point_cpu > 0
        moved = state.replace(lam=0.8)
        second = session.submit(moved)
        second.wait(HANG)
        assert second.init and second.preview == [] and not second.coarse_stopped
        assert not second.refining and len(second.rows) == 8 and not second.error
        alone = CurveJob(moved, init=second.init)
        alone._run()
        _same_bits(second.table, alone.table)
        again = session.submit(state)  # (from the cache)
        again.wait(HANG)
        assert again.cached and again.point_cpu == first.point_cpu
    # 10 points of 20 ms, each counted at twice the pace (COARSE_POINT_FACTOR): over 0.3 s
    assert coarse_hopeless(0.02, 10, 0.3) and coarse_hopeless(0.05, 10, 0.3)
    assert not coarse_hopeless(0.0125, 10, 0.3)
    assert not coarse_hopeless(None, 10, 0.3)  # not known
    assert not coarse_hopeless(10.0, 10, math.inf)
