"""Curves solved at all their points at once (issue 19, item 3,
:mod:`gaussmix.theory.solve.batch`; one output, K = 3 classes, the square loss for any K):
each point agrees with the single point within the two integration-error estimates, with
its own estimate; the stacked priors and bias step are the single point's on a leading axis
of points."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from _helpers import first_solve_memory

import gaussmix as gm
from gaussmix.experiments import continuation, curves
from gaussmix.theory.numerics.quadrature import auto_rule
from gaussmix.theory.numerics.tolerances import refined_tol
from gaussmix.theory.prior.prior import elastic_net_prior, ridge_prior
from gaussmix.theory.solve import (
    batch,
    batch_solve,
    fixed_point,
    iteration,
    nested,
    policy,
    solver,
)
from gaussmix.theory.solve.bias import bias_step
from gaussmix.theory.solve.fixed_point import FixedPointMap
from gaussmix.theory.solve.iteration import AndersonState
from gaussmix.theory.solve.options import solver_options
from gaussmix.theory.solve.state import residual_scale

BINARY = gm.Mixture.isotropic(0.5, "antipodal", labels="binary")
SPARSE = gm.Mixture.sparse(0.1, 0.1, 1.0)
MIX3 = gm.Mixture.isotropic(0.5, "simplex", n_clusters=3)
KEYS = ("test_error", "train_error", "train_loss", "test_loss", "free_energy")
TOL = 1e-10


@pytest.mark.parametrize(
    ("mixture", "loss", "penalty", "kind", "grid", "fixed"),
    [
        (BINARY, "logistic", "l2", "alpha", np.linspace(0.2, 4.0, 12), 0.1),
        (SPARSE, "square", "l1", "alpha", np.linspace(0.2, 4.0, 12), 0.1),
        # the sharp regime (graded panels) for most points, Gauss-Hermite for the first
        (SPARSE, "logistic", "l1", "alpha", np.linspace(0.2, 4.0, 12), 0.1),
        (SPARSE, "logistic", "l1", "lambda", np.geomspace(1e-2, 1.0, 12), 1.0),
        (BINARY, "hinge", "l2", "alpha", np.linspace(0.5, 3.0, 10), 0.1),
    ],
    ids=["binary logistic", "lasso square", "lasso logistic", "lasso lambda", "hinge"],
)
def test_a_stacked_curve_is_its_single_points(
    stacked_calls, mixture, loss, penalty, kind, grid, fixed
) -> None:
    if kind == "alpha":
        df = gm.learning_curve(mixture, loss, grid, lam=fixed, penalty=penalty, tol=TOL)
        pts = [(fixed, a) for a in grid]
    else:
        df = gm.lambda_sweep(mixture, loss, grid, alpha=fixed, penalty=penalty, tol=TOL)
        pts = [(lam, fixed) for lam in grid]
    assert stacked_calls == [True]
    assert df.converged.all()
    for (lam, alpha), r in zip(pts, df.points):
        assert (r.params["lam"], r.params["alpha"]) == (lam, alpha)
        single = gm.solve(mixture, loss, lam=lam, alpha=alpha, penalty=penalty, tol=TOL)
        assert r.params["quadrature"] == single.params["quadrature"]
        bound = r.integration_error + single.integration_error + 10 * TOL
        for k in KEYS:
            assert abs(getattr(r, k) - getattr(single, k)) <= bound, k
        if penalty == "l1":
            assert abs(r.nonzero_fraction - single.nonzero_fraction) <= bound
        # its own estimate: the single point's, up to the fixed points' tolerance
        assert abs(r.integration_error - single.integration_error) <= 100 * TOL


def test_short_curves_and_other_problems_are_solved_point_by_point(stacked_calls) -> None:
    short = np.linspace(1.0, 2.0, continuation.STACKED_MIN_POINTS - 1)
    gm.learning_curve(BINARY, "logistic", short, lam=0.1)
    grid = np.linspace(1.0, 2.0, continuation.STACKED_MIN_POINTS)
    # a rule given by the caller: its single points
    gm.learning_curve(BINARY, "logistic", grid, lam=0.1, quadrature=gm.GaussHermite(16, 1))
    assert stacked_calls == []
    gm.learning_curve(BINARY, "logistic", grid, lam=0.1)
    assert stacked_calls == [True]


def test_a_failed_stacked_solve_falls_back_to_the_points(monkeypatch) -> None:
    grid = np.linspace(0.5, 3.0, 12)
    expected = gm.learning_curve(BINARY, "logistic", grid, lam=0.1)
    monkeypatch.setattr(curves, "solve_points", lambda problems, opts, **kw: None)
    fallback = gm.learning_curve(BINARY, "logistic", grid, lam=0.1)
    assert fallback.converged.all()
    assert np.allclose(fallback.test_error, expected.test_error, atol=1e-7)


def _prior(mix, l1_ratio, lam, Qh, Mh, Vh, details=False):
    if l1_ratio is None:
        return ridge_prior(mix, lam, Qh, Mh, Vh, details=details)
    return elastic_net_prior(mix, lam, l1_ratio, Qh, Mh, Vh)


def test_the_stacked_priors_are_the_single_points_to_rounding() -> None:
    rng = np.random.default_rng(1)
    P = 5
    for mix in (BINARY, SPARSE, gm.Mixture.sparse(0.3, 0.2, 2.0)):
        K = mix.n_clusters
        Qh = rng.uniform(0.1, 2.0, (P, K, 1, 1))
        Vh = rng.uniform(0.1, 2.0, (P, K, 1, 1))
        Mh = rng.normal(size=(P, K, 1))
        lams = rng.uniform(0.01, 1.0, P)
        for l1_ratio in (None, 1.0, 0.4):
            for details in (False, True):
                stacked = _prior(mix, l1_ratio, lams, Qh, Mh, Vh, details)
                for i in range(P):
                    one = _prior(mix, l1_ratio, float(lams[i]), Qh[i], Mh[i], Vh[i], details)
                    fields = ("Q", "M", "V")
                    if details or l1_ratio is not None:
                        fields += ("psi_w", "penalty", "l1_norm", "atom_nonzero")
                    for f in fields:
                        np.testing.assert_allclose(
                            getattr(stacked, f)[i], getattr(one, f), rtol=1e-13, atol=1e-15
                        )


def test_the_stacked_bias_step_is_each_points() -> None:
    rng = np.random.default_rng(2)
    for L in (1, 2):
        A = rng.normal(size=(4, L, L))
        Sv = A @ np.swapaxes(A, 1, 2) + np.eye(L)
        Sm = rng.normal(size=(4, L))
        Sv[2] = 0.0  # no curvature: the ridge's floor
        stacked = bias_step(Sv, Sm)
        for i in range(4):
            np.testing.assert_allclose(stacked[i], bias_step(Sv[i], Sm[i]), rtol=1e-14)


@pytest.mark.filterwarnings("ignore::gaussmix.IntegrationWarning")  # coarse on purpose
def test_each_stacked_point_estimates_its_own_error(monkeypatch, stacked_calls) -> None:
    # a coarse rule, so that the estimates stand far above the tolerance: each point's is
    # the single point's on the same rule (not a neighbour's, not the curve's)
    rule = gm.GaussHermite(8, 1)
    for module in (continuation, policy):  # (the curve's rule and the sharp regime's test)
        monkeypatch.setattr(module, "channel_rule", lambda problem, quadrature, sym=False: rule)
    alphas = np.linspace(0.5, 4.0, 12)
    opts = dict(lam=0.1, tol=TOL, max_refine=1)
    df = gm.learning_curve(BINARY, "logistic", alphas, **opts)
    assert stacked_calls == [True]
    errors = []
    for alpha, r in zip(alphas, df.points):
        single = gm.solve(BINARY, "logistic", alpha=alpha, quadrature=rule, **opts)
        assert r.params["quadrature"] == single.params["quadrature"]
        for k in ("test_error", "train_error", "train_loss"):
            assert r.integration_errors[k] == pytest.approx(
                single.integration_errors[k], abs=100 * TOL
            )
        errors.append(r.integration_error)
    assert max(errors) > 1e4 * TOL and len(set(errors)) == len(errors)  # not vacuous


def test_every_point_of_a_stacked_curve_is_its_own(stacked_calls) -> None:
    # a sweep across the channel's regimes (Gauss-Hermite at large lam, graded panels
    # below): the points are solved in groups, one per rule, and each row is its point's
    lams = np.geomspace(1e-4, 10.0, 40)
    df = gm.lambda_sweep(SPARSE, "logistic", lams, alpha=1.5, penalty="l1")
    assert stacked_calls == [True] and df.converged.all()
    rules = {r.params["quadrature"].split("(")[0] for r in df.points}
    assert rules == {"gauss-hermite", "graded-panels"}
    for lam, row, r in zip(lams, df.itertuples(), df.points):
        assert r.params["lam"] == row.lam == lam and r.test_error == row.test_error
    # each row is its point's: single points (where a cold start converges, lam >= 1e-2)
    for i in range(16, 40, 4):
        single = gm.solve(SPARSE, "logistic", lam=lams[i], alpha=1.5, penalty="l1")
        r = df.points[i]
        assert abs(r.test_error - single.test_error) <= (
            r.integration_error + single.integration_error + 1e-7
        )


def test_the_groups_of_a_stacked_solve_keep_their_points() -> None:
    # points of the two regimes interleaved: each result is its own point's
    lams = [1e-3, 1.0, 3e-3, 2.0, 1e-2, 5.0, 2e-3, 0.5, 4e-3, 3.0]
    problems = curves._problems(SPARSE, "logistic", [(lam, 1.5) for lam in lams], "l1", None)
    opts = solver_options(None, {})
    results = continuation.solve_points(problems, opts)
    rules = [r.params["quadrature"].split("(")[0] for r in results]
    assert set(rules) == {"gauss-hermite", "graded-panels"}
    assert [r.params["lam"] for r in results] == lams
    for lam, r in zip(lams[1::2], results[1::2]):
        single = gm.solve(SPARSE, "logistic", lam=lam, alpha=1.5, penalty="l1")
        assert abs(r.test_error - single.test_error) <= (
            r.integration_error + single.integration_error + 1e-7
        )


@pytest.mark.parametrize("m", [1, 3, 9])
def test_each_block_is_mixed_as_if_alone(m: int) -> None:
    # Anderson mixing of a stacked state with blocks: each block's step is the one its
    # components would take in an iteration of their own (any number of pairs: the
    # normal matrix's upper triangle and its mirror)
    rng = np.random.default_rng(3)
    blocks = np.array([0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 2] * 4)
    n = blocks.size
    pairs = [(rng.normal(size=n), rng.normal(size=n)) for _ in range(m)]
    x, r = rng.normal(size=n), rng.normal(size=n)
    scale = rng.uniform(0.5, 2.0, n)
    state = AndersonState(tuple(p[0] for p in pairs), tuple(p[1] for p in pairs), m, False, blocks)
    stacked = state.extrapolate(x, r, 0.7, scale)
    # the layout remembered for this blocks array, or made for another with its values:
    # the same numbers
    again = state.extrapolate(x, r, 0.7, scale)
    other = replace(state, blocks=blocks.copy()).extrapolate(x, r, 0.7, scale)
    assert np.array_equal(again, stacked) and np.array_equal(other, stacked)
    for b in range(3):
        sel = blocks == b
        alone = AndersonState(tuple(p[0][sel] for p in pairs), tuple(p[1][sel] for p in pairs), m)
        np.testing.assert_allclose(
            stacked[sel], alone.extrapolate(x[sel], r[sel], 0.7, scale[sel]), rtol=1e-12
        )
    # updates and restarts keep the blocks
    st = AndersonState((), (), m, False, blocks).update(x, r)
    assert st.blocks is blocks and st.cleared().blocks is blocks


@pytest.mark.parametrize("m", [2, 6, 9])
def test_runs_of_blocks_are_mixed_as_all_at_once(monkeypatch, m: int) -> None:
    # blocks that are runs of components (a stacked curve's points) have their sums formed
    # a few whole blocks at a time: the same additions in the same order as all at once
    # (one run), to the bit, with any number of pairs (fewer than 8: the step's sums made
    # row by row; more: numpy's pairwise ones), a block larger than a run, an empty block
    rng = np.random.default_rng(5)
    blocks = np.repeat(np.arange(6), [12, 40, 0, 13, 25, 14])
    n = blocks.size
    pairs = [(rng.normal(size=n), rng.normal(size=n)) for _ in range(m)]
    x, r = rng.normal(size=n), rng.normal(size=n)
    scale = rng.uniform(0.5, 2.0, n)
    answers = []
    for terms in (1, 120, 2**40):  # one block a run, a few, all in one run
        monkeypatch.setattr(iteration, "_BLOCK_TERMS", terms)
        state = AndersonState(
            tuple(p[0] for p in pairs), tuple(p[1] for p in pairs), m, False, blocks.copy()
        )
        answers.append(state.extrapolate(x, r, 0.7, scale))
    assert all(np.array_equal(a, answers[-1]) for a in answers)
    for b in (0, 1, 3, 4, 5):
        sel = blocks == b
        alone = AndersonState(tuple(p[0][sel] for p in pairs), tuple(p[1][sel] for p in pairs), m)
        np.testing.assert_allclose(
            answers[0][sel], alone.extrapolate(x[sel], r[sel], 0.7, scale[sel]), rtol=1e-12
        )


def test_stacked_points_take_their_single_points_iterations(monkeypatch) -> None:
    # each point is mixed with its own coefficients and stops (freezes) where its own
    # residual passes the test: in the smooth regime its fixed point is the single point's
    # iterate, to rounding (far below the tolerance, 1e-8), and converged points are not
    # evaluated again
    sizes: list[int] = []
    evaluate = fixed_point.channel_evaluation

    def spy(loss, y, *args):
        sizes.append(y.shape[0])
        return evaluate(loss, y, *args)

    monkeypatch.setattr(fixed_point, "channel_evaluation", spy)
    # (20 points: the point at alpha = 1.4 froze more than the Anderson memory before the
    # last point, and its refined re-solve started without its own secant pairs, 10
    # evaluations against its single point's 11, until each point carried its own)
    alphas = np.linspace(0.2, 4.0, 20)
    df = gm.learning_curve(BINARY, "logistic", alphas, lam=0.1)
    bare = gm.learning_curve(BINARY, "logistic", alphas, lam=0.1, estimate_error=False)
    for alpha, r, r0 in zip(alphas, df.points, bare.points):
        single = gm.solve(BINARY, "logistic", lam=0.1, alpha=alpha)
        single0 = gm.solve(BINARY, "logistic", lam=0.1, alpha=alpha, estimate_error=False)
        assert abs(r0.test_error - single0.test_error) < 1e-12
        assert abs(r0.train_loss - single0.train_loss) < 1e-12
        assert r0.n_iter == single0.n_iter  # its own evaluations, not the stack's
        # with the error estimate: the single point's re-solves from the predicted start
        # (batch_solve.estimate_points of one point: one evaluation of the refined rule
        # where the change of the rule is below refined_tol), the stacked curve's from the
        # fixed point, each to refined_tol: the answers agree to that tolerance, no longer
        # to rounding
        tight = refined_tol(1e-8)
        assert abs(r.test_error - single.test_error) < tight
        assert abs(r.train_loss - single.train_loss) < tight
        assert single.n_iter <= r.n_iter
    assert sizes[0] == 2 * len(alphas) and min(sizes) < sizes[0]


@pytest.mark.parametrize("kind", ["alpha", "lambda"])
def test_a_stacked_curve_gives_the_callback_every_row(stacked_calls, kind) -> None:
    """The per-row hook (which the explorer streams) sees each row of a stacked curve,
    equal to the table's: a stacked solve must not skip it."""
    rows: list[dict] = []
    grid = np.linspace(0.2, 4.0, 12) if kind == "alpha" else np.geomspace(1e-2, 1.0, 12)
    if kind == "alpha":
        df = gm.learning_curve(
            BINARY, "logistic", grid, lam=0.1, callback=lambda row, res: rows.append(row)
        )
    else:
        df = gm.lambda_sweep(
            BINARY, "logistic", grid, alpha=1.0, callback=lambda row, res: rows.append(row)
        )
    assert stacked_calls == [True]
    assert len(rows) == len(df) == len(grid)
    # in the order solved (a lambda sweep runs from the largest lambda down)
    x = "alpha" if kind == "alpha" else "lam"
    by_x = {row[x]: row for row in rows}
    assert sorted(by_x) == sorted(df[x])
    for _, expected in df.iterrows():
        assert by_x[expected[x]]["test_error"] == expected["test_error"]


def test_what_is_stacked_is_the_priors_declaration() -> None:
    """A curve is stacked where the prior declares that it takes points on a leading axis
    (ridge, lasso and elastic net on spectral mixtures, one output; ridge with several)
    and the errors are orthants of at most two dimensions, and nowhere else: a dense
    mixture (its prior takes one point), the lasso with several outputs (its prior's own
    rule), four classes or more go point by point but for the square loss (a channel in
    closed form: its errors are orthants of any dimension, all points at once)."""
    from gaussmix.theory.prior.prior import STACKED_PRIORS, takes_stacked_points

    opts = solver_options(None, {})
    dense = gm.Mixture.dense(
        np.array([[2.0, 0.0, 0.0, 0.0], [-2.0, 0.0, 0.0, 0.0]]),
        np.stack([np.eye(4), np.diag([0.5, 1.0, 2.0, 1.0])]),
        labels="binary",
    )
    assert {(cls.__name__, s) for cls, s in STACKED_PRIORS} == {
        ("Ridge", "spectral"),
        ("Lasso", "spectral"),
        ("ElasticNet", "spectral"),
    }
    one = curves._problems(BINARY, "logistic", [(0.1, 1.0)], "l2", None)[0]
    assert takes_stacked_points(one.penalty_spec, one.mixture) and continuation.stackable(
        one, opts
    )
    for loss in ("square", "cross-entropy"):  # K = 3: two-dimensional orthants
        three = curves._problems(MIX3, loss, [(0.1, 1.0)], "l2", None)[0]
        assert three.dim > 1 and continuation.stackable(three, opts)
    lasso3 = curves._problems(MIX3, "square", [(0.1, 1.0)], "l1", None)[0]
    # the lasso stacks for one output (or two of the two-class cross-entropy), not for the
    # L-dimensional lasso of several outputs (one point per call)
    assert takes_stacked_points(lasso3.penalty_spec, lasso3.mixture)  # one output
    assert not takes_stacked_points(lasso3.penalty_spec, lasso3.mixture, lasso3.P)
    assert not continuation.stackable(lasso3, opts)
    mix4 = gm.Mixture.isotropic(0.5, "simplex", n_clusters=4)
    # four classes: the square loss's channel is in closed form (stacked, its orthants of
    # three dimensions all at once); the cross-entropy's is not (point by point)
    four = curves._problems(mix4, "square", [(0.1, 1.0)], "l2", None)[0]
    assert continuation.stackable(four, opts)
    four = curves._problems(mix4, "cross-entropy", [(0.1, 1.0)], "l2", None)[0]
    assert not continuation.stackable(four, opts)
    full = curves._problems(dense, "logistic", [(0.1, 1.0)], "l2", None)[0]
    assert full.dim == 1 and not takes_stacked_points(full.penalty_spec, full.mixture)
    assert not continuation.stackable(full, opts)


# --------------------------------------------------------------------------- K = 3 classes
UNBALANCED3 = gm.Mixture.isotropic(0.5, "simplex", n_clusters=3, rho=[0.2, 0.3, 0.5])
UNBALANCED4 = gm.Mixture.isotropic(0.5, "gaussian", n_clusters=4, rho=[0.1, 0.2, 0.3, 0.4])
MIX5 = gm.Mixture.isotropic(0.7, "simplex", n_clusters=5)


def _point_by_point(monkeypatch, fn, *args, **kw):
    """A curve solved point by point (the stacked solve switched off)."""
    with monkeypatch.context() as m:
        m.setattr(continuation, "stackable", lambda problem, opts: False)
        return fn(*args, **kw)


@pytest.mark.parametrize(
    ("mixture", "loss", "lam", "grid"),
    [
        (MIX3, "cross-entropy", 1.0, np.linspace(0.2, 4.0, 10)),
        # lam < LOG_CHART_MAX_LAM: the iteration mixes in the logarithmic chart
        (MIX3, "cross-entropy", 0.05, np.linspace(0.2, 1.5, 10)),
        # not exchangeable (no symmetry; metrics not isotropic: the training error's
        # boundary integrals)
        pytest.param(
            UNBALANCED3, "cross-entropy", 1.0, np.linspace(0.2, 4.0, 10), marks=pytest.mark.slow
        ),
        (MIX3, "square", 1.0, np.linspace(0.2, 4.0, 10)),
        (UNBALANCED3, "square", 0.1, np.linspace(0.2, 4.0, 10)),
        # K = 4, 5: orthants of three and four dimensions (nested rules, each point's own
        # error estimate)
        (UNBALANCED4, "square", 0.1, np.linspace(0.2, 4.0, 10)),
        (MIX5, "square", 0.3, np.linspace(0.2, 4.0, 10)),
    ],
    ids=[
        "ce",
        "ce log chart",
        "ce unbalanced",
        "square",
        "square unbalanced",
        "square K=4 unbalanced",
        "square K=5",
    ],
)
def test_a_stacked_three_class_curve_is_its_single_points(
    monkeypatch, stacked_calls, mixture, loss, lam, grid
) -> None:
    """K = 3 (two effective outputs for cross-entropy, three for the square loss): each
    point agrees with ``gm.solve`` within the two estimates plus the fixed points'
    tolerance, and with the same curve solved point by point (on the same rule) within
    the tolerance."""
    df = gm.learning_curve(mixture, loss, grid, lam=lam, tol=TOL)
    assert stacked_calls == [True] and df.converged.all()
    by_points = _point_by_point(
        monkeypatch, gm.learning_curve, mixture, loss, grid, lam=lam, tol=TOL
    )
    quadrature = loss == "cross-entropy"
    for i, (alpha, r) in enumerate(zip(grid, df.points)):
        single = gm.solve(mixture, loss, lam=lam, alpha=alpha, tol=TOL)
        bound = r.integration_error + single.integration_error + 10 * TOL
        for k in KEYS:
            assert abs(getattr(r, k) - getattr(single, k)) <= bound, k
        other = by_points.points[i]
        if quadrature:  # the curve's rule (the point-by-point curve's, after its first point)
            assert r.params["quadrature"] == auto_rule(2).describe()
            assert 0 < r.integration_error < 1e-7  # its own estimate, within quad_tol
        if i > 0 or not quadrature:
            assert r.params["quadrature"] == other.params["quadrature"]
            for k in KEYS:
                assert abs(getattr(r, k) - getattr(other, k)) <= 10 * TOL, k


def test_a_stacked_three_class_point_short_of_the_tighter_tolerance_keeps_its_state_at_tol(
    monkeypatch, stacked_calls
) -> None:
    """The refined rule of a stacked K = 3 curve iterates each point on towards
    ``refined_tol`` in one iteration (:func:`~gaussmix.experiments.batch_solve.refined_solve`);
    a point that does not get there within ``REFINED_EXTRA_ITER`` evaluations after passing
    ``tol`` is frozen at its image there.  With a tighter tolerance out of reach every point
    takes that way out: each is converged (its own residual below ``tol``), and within the
    two estimates of the single point and of the same curve's points that got there."""
    grid = np.linspace(0.2, 4.0, 10)
    df = gm.learning_curve(MIX3, "cross-entropy", grid, lam=1.0, tol=TOL)
    evaluations: list[int] = []
    refined_solve = batch_solve.refined_solve

    def spy(T, *args, **kw):
        out = refined_solve(T, *args, **kw)
        if out is not None:  # (the iteration's record of its evaluations)
            evaluations.append(out[0].aux.record.evaluations)
        return out

    monkeypatch.setattr(batch_solve, "refined_solve", spy)
    monkeypatch.setattr(batch_solve, "refined_tol", lambda tol: 1e-300)
    monkeypatch.setattr(batch_solve, "REFINED_EXTRA_ITER", 2)
    short = gm.learning_curve(MIX3, "cross-entropy", grid, lam=1.0, tol=TOL)
    assert stacked_calls == [True, True] and short.converged.all()
    assert evaluations and max(evaluations) <= 12  # not max_iter: frozen after 2 more
    for alpha, r, tight in zip(grid, short.points, df.points):
        assert r.residual < TOL
        single = gm.solve(MIX3, "cross-entropy", lam=1.0, alpha=alpha, tol=TOL)
        for k in KEYS:
            bound = r.integration_error + single.integration_error + 10 * TOL
            assert abs(getattr(r, k) - getattr(single, k)) <= bound, k
            assert abs(getattr(r, k) - getattr(tight, k)) <= 10 * TOL, k


def test_a_stacked_three_class_estimate_takes_its_observables_from_the_last_refined_evaluation(
    monkeypatch, stacked_calls
) -> None:
    """A point of a stacked K = 3 curve that passes ``refined_tol`` on the refined rule is
    returned at its last iterate, whose channel moments the refined map remembers: the
    estimate's observables cost no evaluation of the refined rule beyond the iteration's,
    and each returned state passes the refined rule's tighter test in a single point's map
    (evaluated afresh here), so that it is the refined fixed point to within
    ``refined_tol / (1 - r)``."""
    grid = np.linspace(0.2, 4.0, 10)
    refined = auto_rule(2).weights.size  # (one step finer than the curve's rule)
    calls: list[int] = []  # the rows integrated by each evaluation of the refined rule
    evaluations: list[int] = []  # of the refined map, by its iteration
    channel = fixed_point.channel_evaluation
    refined_solve = batch_solve.refined_solve

    def counted(loss, y, m, b, Q, V, rule, warm):
        if rule.weights.size == refined:
            calls.append(m.shape[0])
        return channel(loss, y, m, b, Q, V, rule, warm)

    def spy(T, *args, **kw):
        out = refined_solve(T, *args, **kw)
        if out is not None:  # (the iteration's record of its evaluations)
            evaluations.append(out[0].aux.record.evaluations)
        return out

    monkeypatch.setattr(fixed_point, "channel_evaluation", counted)
    monkeypatch.setattr(batch_solve, "refined_solve", spy)
    df = gm.learning_curve(MIX3, "cross-entropy", grid, lam=1.0)
    assert stacked_calls == [True] and df.converged.all()
    assert evaluations and len(calls) == sum(evaluations)
    tight = batch_solve.refined_tol(gm.SolverOptions().tol)
    for r in df.points:
        st = r.state
        assert st.rule.weights.size == refined
        x = st.x
        g = st.map()(x)
        scale = residual_scale(x, st.problem.n_clusters, st.problem.dim)
        assert np.max(np.abs(g - x) / scale) < tight


def test_a_three_class_curve_in_the_sharp_regime_is_solved_point_by_point(
    monkeypatch, stacked_calls
) -> None:
    """Where the curve's first point is in the sharp regime (a single point there solves
    on a rule of its own state, and so does every point of the point-by-point curve), the
    stacked attempt gives up (on its first image, far into that regime) and the curve is
    the point-by-point one, to the bit."""
    grid = np.linspace(1.0, 3.0, 10)
    calls: list[int] = []
    sm = FixedPointMap.image

    def counted(self, x, ev, memory):
        calls.append(self.n_points)
        return sm(self, x, ev, memory)

    monkeypatch.setattr(FixedPointMap, "image", counted)
    df = gm.learning_curve(MIX3, "cross-entropy", grid, lam=1e-3)
    # one stacked evaluation (the points' own solves are maps of one point)
    assert stacked_calls == [False] and [n for n in calls if n > 1] == [10]
    expected = _point_by_point(
        monkeypatch, gm.learning_curve, MIX3, "cross-entropy", grid, lam=1e-3
    )
    assert df.converged.all()
    np.testing.assert_array_equal(df[list(KEYS)].to_numpy(), expected[list(KEYS)].to_numpy())
    assert any("exchangeable" in r.params["quadrature"] for r in df.points)


def test_a_stacked_three_class_sweep_keeps_the_curves_rule_into_the_sharp_regime(
    monkeypatch, stacked_calls
) -> None:
    """A sweep from lam = 10 down to 1e-3: its first point (the largest lambda) is smooth,
    so every point stays on the curve's rule, refined to its own estimate, as the
    point-by-point sweep carries it; each agrees with ``gm.solve`` (on the symmetric sharp
    rule below lam ~ 0.03) within the two estimates, and with the point-by-point sweep
    within the tolerance."""
    lams = np.geomspace(1e-3, 10.0, 10)
    df = gm.lambda_sweep(MIX3, "cross-entropy", lams, alpha=2.0, tol=TOL)
    assert stacked_calls == [True] and df.converged.all()
    by_points = _point_by_point(
        monkeypatch, gm.lambda_sweep, MIX3, "cross-entropy", lams, alpha=2.0, tol=TOL
    )
    sharp = 0
    for i, (lam, r) in enumerate(zip(lams, df.points)):
        assert r.params["quadrature"] == auto_rule(2).describe()
        single = gm.solve(MIX3, "cross-entropy", lam=lam, alpha=2.0, tol=TOL)
        sharp += "exchangeable" in single.params["quadrature"]
        bound = r.integration_error + single.integration_error + 10 * TOL
        for k in ("test_error", "train_error", "train_loss"):
            assert abs(getattr(r, k) - getattr(single, k)) <= bound, k
        if i < len(lams) - 1:  # (the point-by-point sweep's first point is a single point)
            other = by_points.points[i]
            assert r.params["quadrature"] == other.params["quadrature"]
            for k in KEYS:
                assert abs(getattr(r, k) - getattr(other, k)) <= 10 * TOL, k
    assert sharp >= 2  # not vacuous: points of the sharp regime


def test_a_stacked_three_class_curve_gives_the_callback_every_row(stacked_calls) -> None:
    grid = np.linspace(0.5, 3.0, 10)
    rows: list[dict] = []
    results: list = []

    def callback(row, res):
        rows.append(row)
        results.append(res)

    df = gm.learning_curve(MIX3, "cross-entropy", grid, lam=1.0, callback=callback)
    assert stacked_calls == [True]
    assert [row["alpha"] for row in rows] == list(grid)
    assert results == list(df.points)
    for row, (_, expected) in zip(rows, df.iterrows()):
        for k in (*KEYS, "n_iter", "integration_error"):
            assert row[k] == expected[k]


def test_a_point_without_a_fixed_point_in_a_stacked_curve_is_reported(
    monkeypatch, stacked_calls
) -> None:
    """A point whose map fails (its prior returns NaN, at lam = 0.5 only) fails the stacked
    solve, which goes back to the points: that point is reported (NaN, ``converged``
    False, a ConvergenceWarning naming it), the others are the clean curve's."""
    from gaussmix.core.exceptions import ConvergenceWarning
    from gaussmix.theory.model.penalties import Ridge
    from gaussmix.theory.prior import prior as prior_module

    lams = np.geomspace(0.2, 10.0, 10)
    bad = lams[4]
    clean = gm.lambda_sweep(MIX3, "cross-entropy", lams, alpha=2.0)
    assert stacked_calls == [True]
    key = (Ridge, "spectral")
    ridge = prior_module.PRIORS[key]

    def failing(penalty, mixture, lam, *args, **kw):
        out = ridge(penalty, mixture, lam, *args, **kw)
        at = np.asarray(lam) == bad
        if at.any():
            Q = np.array(out.Q, dtype=float)
            Q[at] = np.nan
            out = replace(out, Q=Q)
        return out

    monkeypatch.setitem(prior_module.PRIORS, key, failing)
    with pytest.warns(ConvergenceWarning, match=f"lam={bad:g}"):
        df = gm.lambda_sweep(MIX3, "cross-entropy", lams, alpha=2.0)
    assert stacked_calls == [True, False]
    assert df.converged.tolist() == [lam != bad for lam in lams]
    assert np.isnan(df.test_error[4]) and df.points[4] is None
    ok = df.converged.to_numpy()
    assert np.allclose(df.test_error[ok], clean.test_error[ok], rtol=0, atol=1e-7)


def test_the_stacked_symmetry_is_each_points_to_rounding() -> None:
    """:class:`~gaussmix.theory.problem.symmetry.ClusterSymmetry` on a leading axis of points
    (the stacked map's) is its single point's, point by point."""
    from gaussmix.theory.channel.channel import ChannelMoments

    problem = curves._problems(MIX3, "cross-entropy", [(1.0, 1.0)], "l2", None)[0]
    sym = problem.symmetry
    rng = np.random.default_rng(3)
    P, K, L = 4, 3, 2
    A = rng.normal(size=(P, K, L, L))
    Q, V = A @ np.swapaxes(A, -1, -2), A @ np.swapaxes(A, -1, -2) + np.eye(L)
    M, b = rng.normal(size=(P, K, L)), rng.normal(size=(P, L))
    stacked = sym.symmetric_state(Q, M, V, b)
    for i in range(P):
        for got, want in zip(stacked, sym.symmetric_state(Q[i], M[i], V[i], b[i])):
            np.testing.assert_allclose(got[i], want, rtol=0, atol=1e-14)
    mom0 = ChannelMoments(M[:, 0], Q[:, 0], V[:, 0], b[:, 0], b[:, 1])
    expanded = sym.expand_point_moments(mom0)
    for i in range(P):
        one = ChannelMoments(*(getattr(mom0, f)[i : i + 1] for f in batch.MOMENTS))
        want = sym.expand_moments(one)
        for f in batch.MOMENTS:
            np.testing.assert_allclose(
                getattr(expanded, f)[i * K : (i + 1) * K], getattr(want, f), rtol=0, atol=1e-14
            )


def test_a_stacked_three_class_curve_without_an_estimate_is_on_the_automatic_rule(
    monkeypatch, stacked_calls
) -> None:
    """Without an estimate by refinement the points carry no rule point by point: the
    stacked curve is on the automatic rule (not the curve's coarser one), as they are."""
    grid = np.linspace(0.5, 3.0, 10)
    kw = dict(lam=1.0, tol=TOL, estimate_error=False)
    df = gm.learning_curve(MIX3, "cross-entropy", grid, **kw)
    assert stacked_calls == [True]
    by_points = _point_by_point(monkeypatch, gm.learning_curve, MIX3, "cross-entropy", grid, **kw)
    for r, other in zip(df.points, by_points.points):
        assert r.params["quadrature"] == other.params["quadrature"] == auto_rule(2).describe()
        for k in KEYS:
            assert abs(getattr(r, k) - getattr(other, k)) <= 10 * TOL, k


def test_a_point_carries_its_own_secant_pairs() -> None:
    # a stacked point's secant history for the next solve is its own last evaluations
    # before it froze (as a single point's iteration ends with its own), not the stacked
    # history's components, which are zero in a point frozen for longer than the memory
    # (a lasso sweep: its points converge after 11 to 34 evaluations)
    lams = np.geomspace(1e-2, 1.0, 12)
    problems = curves._problems(SPARSE, "logistic", [(lam, 1.0) for lam in lams], "l1", None)
    opts = solver_options(None, {})
    T = FixedPointMap(
        problems, auto_rule(1, smooth=True), freezing=batch_solve.solve_freezing(opts)
    )
    assert not T.log_chart  # (the pairs are differences of the states themselves)
    m = first_solve_memory(T, opts)
    out = batch_solve.converged_solve(T, T.start(), None, opts, anderson=m)
    rec = out.aux.record  # (the iteration's record of its freezes and trail)
    assert out is not None and rec.frozen.all()
    first = int(np.argmin(rec.frozen_after))  # frozen longest before the end
    assert out.n_iter - rec.frozen_after[first] > opts.anderson
    at = T.blocks == first
    assert all(not d[at].any() for d in out.anderson.dxs)  # the stacked history: nothing
    own = T.pairs(rec, out.anderson, list(range(len(problems))), opts.anderson)
    trail = rec.point_trail[:, :, at]  # its (x, T(x)) at its last evaluations, newest last
    assert len(own.dxs) == opts.anderson and len(trail) == opts.anderson + 1
    for j in range(opts.anderson):  # their differences
        np.testing.assert_array_equal(own.dxs[j][at], trail[j + 1, 0] - trail[j, 0])
        np.testing.assert_array_equal(own.dgs[j][at], trail[j + 1, 1] - trail[j, 1])
        assert own.dxs[j][at].any()  # (a point frozen after more than the memory)
    # the state it froze at is the last of its own evaluations
    np.testing.assert_array_equal(trail[-1, 0], T.split(out.x)[first])
    # a map of some points alone takes theirs, in its own layout
    sub = [1, first, 7] if first not in (1, 7) else [2, 5, 8]
    T_sub = T.like([problems[i] for i in sub], T.rule)
    part = T.pairs(rec, out.anderson, sorted(sub), opts.anderson)
    assert part.dxs[0].size == T_sub.blocks.size


def test_an_iteration_continued_on_the_same_rule_keeps_the_proximal_points() -> None:
    # the tighter refined iteration (same points, same rule) starts from the proximal
    # points of the last evaluation, as a single point's map keeps them; another rule or
    # other points start cold
    problems = curves._problems(BINARY, "logistic", [(0.1, a) for a in (1.0, 2.0)], "l2", None)
    rule = auto_rule(1, smooth=True)
    T = FixedPointMap(problems, rule)
    _, memory = T.evaluate(T.start())
    assert memory.warm is not None
    shared = T.like(problems, rule).shared(T, memory)
    assert shared.warm is memory.warm and not shared.owns_warm  # (copied before written)
    assert shared.record is not memory.record  # (a new iteration's record)
    assert T.like(problems, rule.refined()).shared(T, memory).warm is None
    T_one = T.like(problems[:1], rule)
    assert T_one.shared(T, memory).warm is None


def test_a_rules_first_evaluation_starts_from_the_nearest_nodes_of_the_last_rule() -> None:
    """:meth:`~gaussmix.theory.solve.fixed_point.FixedPointMap.warm_from`: the first evaluation of
    the refined rule (of all the points, or of some) starts from the proximal points of the
    coarser rule's last evaluation at the nearest nodes; the proximal solves converge to
    their own tolerance, so the moments are those of a cold start to that tolerance."""
    lam_alphas = [(1.0, a) for a in (0.5, 1.0, 2.0, 3.0)]
    problems = curves._problems(MIX3, "cross-entropy", lam_alphas, "l2", None)
    sym = fixed_point.map_features(problems[0], gm.SolverOptions())[0]
    rule = auto_rule(2).coarsened()
    T = FixedPointMap(problems, rule, sym)
    x = T.start()
    x, memory = T.evaluate(x)
    _, memory = T.evaluate(x, memory)  # the coarse map's last evaluation is at x
    finer = rule.refined()
    nodes = nested.nearest_nodes(rule, finer)
    d = np.linalg.norm(finer.nodes - rule.nodes[nodes], axis=1)
    brute = np.linalg.norm(finer.nodes[:, None] - rule.nodes[None], axis=2).min(axis=1)
    np.testing.assert_array_equal(d, brute)
    for points in ([0, 1, 2, 3], [1, 3]):
        sub = [problems[i] for i in points]
        xs = T.stack([T.split(x)[i] for i in points])
        fine = T.like(sub, finer)
        given = fine.warm_from(T, memory)
        start = given.warm
        assert start is not None and start.h.shape[:2] == (len(points), finer.weights.size)
        assert fine.warm_from(T, None).warm is None
        (a, _), (b, cold) = fine.hats_memory(xs, given), fine.hats_memory(xs)
        a, b = a.moments, b.moments
        # each start's node omega = m + Q^{1/2} xi is its point's, at the nearest node: within
        # |Q^{1/2}| times the distance of the nodes of the refined evaluation's
        Q = fine.means(xs)[1][:, 0]  # (cluster 0 of each point: the rows)
        reach = np.sqrt(np.linalg.eigvalsh(Q).max(axis=1))[:, None] * d.max()
        gap = np.abs(start.omega - cold.warm.omega).max(axis=(2,))
        assert np.all(gap <= reach + 1e-12)
        for f in ("Ef", "Eff", "Edf", "Eloss"):
            # (each proximal point to a relative PROX_TOL, 1e-13: the moments to ~10 times it)
            np.testing.assert_allclose(getattr(a, f), getattr(b, f), rtol=0, atol=1e-12)
    other = T.like(problems[::-1], finer)  # points not in the order of the last map's
    assert other.warm_from(T, memory).warm is None


def test_correct_intervals_of_many_clusters_at_once() -> None:
    # the interval of the one output in which each cluster's constraints D h >= t hold, all
    # clusters in one array operation (the stacked clusters of a curve's points): each
    # cluster's largest t_i / d_i over d_i < 0 and smallest over d_i > 0, to the bit, also
    # for clusters with different numbers of constraints and zero coefficients
    from gaussmix.theory.solve.observables import _correct_intervals

    rng = np.random.default_rng(11)
    constraints = []
    for n in (1, 3, 2, 4, 1):
        d = rng.normal(size=(n, 1)) * (rng.random((n, 1)) > 0.3)
        constraints.append((d, rng.normal(size=n)))
    constraints += [(np.array([[1.0]]), np.array([0.0])), (np.array([[-1.0]]), np.array([0.0]))]
    got = _correct_intervals(constraints)
    for (D, t), (lo, hi) in zip(constraints, got):
        d = D[:, 0]
        want_lo = max([t[i] / d[i] for i in range(d.size) if d[i] < 0], default=-np.inf)
        want_hi = min([t[i] / d[i] for i in range(d.size) if d[i] > 0], default=np.inf)
        assert repr(float(lo)) == repr(float(want_lo))
        assert repr(float(hi)) == repr(float(want_hi))


def test_a_batch_without_a_continuation_is_the_same_loop() -> None:
    """``solve_batch`` with its own first solve (no restart of slow points) is the policy's
    loop alone: on a curve over alpha whose points converge alike (the continuation's
    restart then leaves the iterates alone) every point's state, evaluations and estimate
    are the continuation's to the bit, and the progress callback counts the frozen points
    up to all of them, never going back."""
    alphas = np.linspace(0.2, 4.0, 20)
    problems = curves._problems(BINARY, "logistic", [(0.1, a) for a in alphas], "l2", None)
    opts = solver_options(None, {})
    counts: list[int] = []
    s = solver.solve_batch(problems, opts, on_converged=counts.append)
    ref = continuation.solve_points(problems, opts)
    assert s.results is not None and ref is not None
    for got, want in zip(s.results, ref):
        np.testing.assert_array_equal(got.state.x, want.state.x)
        assert got.n_iter == want.n_iter
        assert got.integration_errors == want.integration_errors
    assert counts == sorted(counts) and counts[-1] == len(problems)
