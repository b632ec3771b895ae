"""The per-point work of a stacked curve done for all its points at once (issue 19, item 3):
each function of several points gives each point the numbers it gives that point alone, to
the bit, and the shared ones agree with an independent form of what they compute."""

from __future__ import annotations

import math

import numpy as np
import pytest
from _helpers import first_solve_memory

import gaussmix as gm
from gaussmix.experiments import continuation, curves
from gaussmix.experiments.continuation import (
    STATE_KEYS,
    prediction_accepted,
    predictions_accepted,
    state_distance,
    state_distances,
)
from gaussmix.theory.numerics.quadrature import GaussHermite, GradedPanels
from gaussmix.theory.prior.prior import prior_update
from gaussmix.theory.solve import batch, batch_solve, fixed_point
from gaussmix.theory.solve.fixed_point import FixedPointMap, initial_hats, initial_hats_points
from gaussmix.theory.solve.observables import weight_sparsities, weight_sparsity
from gaussmix.theory.solve.options import solver_options
from gaussmix.theory.solve.state import LogChart, pack_state

SPARSE = gm.Mixture.sparse(0.1, 0.1, 1.0)
MIX3 = gm.Mixture.isotropic(0.5, "simplex", n_clusters=3)


def _same(a, b) -> bool:
    """Equal to the bit (arrays by their bytes, NaN where NaN)."""
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def _stacked(mixture, loss, points, penalty="l2", rule=None):
    problems = curves._problems(mixture, loss, points, penalty, None)
    L = problems[0].dim
    return FixedPointMap(problems, rule or GaussHermite(8, L)), problems


def _reference_distance(a: dict, b: dict) -> float:
    """``max |a_i - b_i| / max(1, |b_i|)`` as a running maximum over the parameters (the
    form of the solver's measure before it took several pairs at once)."""
    out = 0.0
    for k in STATE_KEYS:
        xa, xb = np.asarray(a[k], dtype=float), np.asarray(b[k], dtype=float)
        out = max(out, float(np.max(np.abs(xa - xb) / np.maximum(1.0, np.abs(xb)))))
    return out if math.isfinite(out) else math.inf


def test_state_distances_are_each_pairs_distance() -> None:
    rng = np.random.default_rng(3)

    def state() -> dict:
        return {
            "Q": rng.normal(size=(3, 2, 2)),
            "M": rng.normal(size=(3, 2)) * 10,
            "V": rng.normal(size=(3, 2, 2)),
            "b": rng.normal(size=2),
        }

    a, b = [state() for _ in range(6)], [state() for _ in range(6)]
    a[1]["M"][0, 1] = np.nan  # a parameter whose maximum is NaN does not count
    a[2]["V"][2, 0, 0] = np.inf  # infinite
    b[3] = dict(a[3])  # the same state: 0
    got = state_distances(a, b)
    ref = [_reference_distance(x, y) for x, y in zip(a, b)]
    assert got.tolist() == ref
    assert got[2] == np.inf and got[3] == 0.0 and np.isfinite(got[1])
    assert [state_distance(x, y) for x, y in zip(a, b)] == ref


def test_predictions_accepted_are_each_points_safeguard() -> None:
    rng = np.random.default_rng(5)
    keys = {"Q": (2, 1, 1), "M": (2, 1), "V": (2, 1, 1), "b": (1,)}
    prev = [{k: rng.normal(size=s) for k, s in keys.items()} for _ in range(8)]
    pred = [{k: v + 0.1 * rng.normal(size=v.shape) for k, v in p.items()} for p in prev]
    # corrections of a tenth to ten times the predictor's step
    fixed = [
        continuation._PointState(*(q[k] + f * (q[k] - p[k]) for k in STATE_KEYS))
        for p, q, f in zip(prev, pred, (0.1, 0.5, 0.9, 1.5, 3.0, 10.0, 0.2, 0.3))
    ]
    fixed[6] = fixed[6]._replace(success=False)
    got = predictions_accepted(fixed, pred, prev)
    each = [prediction_accepted(r, q, p) for r, q, p in zip(fixed, pred, prev)]
    ref = [
        r.success and _reference_distance(r._asdict(), q) <= _reference_distance(q, p)
        for r, q, p in zip(fixed, pred, prev)
    ]
    assert got.tolist() == each == ref
    assert ref[:3] == [True, True, True] and ref[3:7] == [False] * 4 and ref[7]


def test_weight_sparsities_are_each_priors() -> None:
    sm, problems = _stacked(SPARSE, "logistic", [(lam, 1.0) for lam in (1e-2, 0.1, 1.0)], "l1")
    Qh, Mh, Vh, lams, _ = initial_hats_points(problems)
    pr = prior_update(problems[0], Qh, Mh, Vh, lam=np.array(lams), details=True)
    priors = []
    for i in range(len(problems)):
        one = prior_update(problems[i], Qh[i], Mh[i], Vh[i], lam=lams[i], details=True)
        priors.append(one)
        assert _same(pr.atom_nonzero[i], one.atom_nonzero)
    got = weight_sparsities(SPARSE, priors)
    assert got == [weight_sparsity(SPARSE, p) for p in priors]
    # against the definition: the weighted mean of the atoms' non-zero probabilities
    w, on = SPARSE.weights, SPARSE.support
    for g, p in zip(got, priors):
        assert g["nonzero_fraction"] == pytest.approx(np.average(p.atom_nonzero, weights=w))
        assert g["nonzero_fraction_support"] == pytest.approx(
            np.average(p.atom_nonzero[on], weights=w[on])
        )
        assert g["nonzero_fraction_off_support"] == pytest.approx(
            np.average(p.atom_nonzero[~on], weights=w[~on])
        )


@pytest.mark.parametrize(
    ("mixture", "loss"), [(SPARSE, "logistic"), (MIX3, "cross-entropy"), (MIX3, "square")]
)
def test_initial_hats_of_points_are_each_points(mixture, loss) -> None:
    # (lam = 0 only where the estimator exists: square loss)
    points = [(1e-2, 0.5), (0.3, 1.7), (0.0 if loss == "square" else 1e-4, 2.0)]
    problems = curves._problems(mixture, loss, points, "l2", None)
    Qh, Mh, Vh, lams, ybar = initial_hats_points(problems)
    for i, p in enumerate(problems):
        Q1, M1, V1, lam1, ybar1 = initial_hats(p)
        assert _same(Qh[i], Q1) and _same(Mh[i], M1) and _same(Vh[i], V1)
        assert lams[i] == lam1 and _same(ybar, ybar1)
        # against the definition: alpha rho_c I / 2 and alpha rho_c (y_c - ybar) / 2
        ar = p.alpha * p.mixture.rho
        np.testing.assert_allclose(Q1[:, 0, 0], ar / 2, rtol=1e-15)
        yr = p.y @ p.P.T
        np.testing.assert_allclose(M1, ar[:, None] * (yr - p.mixture.rho @ yr) / 2, rtol=1e-14)
    assert lams[2] > 0  # (lam = 0 starts from a small penalty)


def test_points_enter_and_leave_the_chart_as_each_alone() -> None:
    lams = np.geomspace(1e-3, 1.0, 6)
    T, _ = _stacked(MIX3, "cross-entropy", [(lam, 2.0) for lam in lams], rule=GradedPanels(2))
    x = T.start()
    one = LogChart(T.K0, T.L)
    points = np.array([0, 2, 3, 5])
    ys = continuation._charted(T, x, points, forward=True)
    for i, y in zip(points, ys):
        alone = one.forward(x[T.blocks == i])
        assert _same(pack_state(*(y[k] for k in "QMVb")), alone)
    back = continuation._charted(T, ys, points, forward=False)
    for i, y, xi in zip(points, ys, back):
        assert _same(xi, one.inverse(pack_state(*(y[k] for k in "QMVb"))))
        np.testing.assert_allclose(xi, x[T.blocks == i], rtol=1e-12, atol=1e-14)
    # a point outside the chart (a V_c not positive definite): None for it alone
    bad = x.copy()
    V = T.unpack_points(bad)[2]
    V[2, 1] = -V[2, 1]
    ys_bad = continuation._charted(T, bad, points, forward=True)
    assert ys_bad[1] is None
    for y, y_ok in zip([ys_bad[0], *ys_bad[2:]], [ys[0], *ys[2:]]):
        assert all(_same(y[k], y_ok[k]) for k in "QMVb")


def test_the_sharp_test_of_the_points_is_each_points() -> None:
    from gaussmix.theory.solve.policy import channel_rule, sharp_rule, sharp_rules

    lams = np.geomspace(1e-3, 1.0, 12)
    problems = curves._problems(SPARSE, "logistic", [(lam, 1.0) for lam in lams], "l1", None)
    opts = solver_options(None, {})
    rule = channel_rule(problems[0], None, opts.symmetry)
    T = FixedPointMap(problems, rule, freezing=batch_solve.solve_freezing(opts))
    m = first_solve_memory(T, opts)
    out = batch_solve.converged_solve(T, T.start(), None, opts, anderson=m)
    assert out is not None
    got = sharp_rules(T, out.x, opts)
    each = [sharp_rule(p, rule, xi) for p, xi in zip(problems, T.split(out.x))]
    assert got == each
    assert any(r is None for r in each) and any(r is not None for r in each)
    # a NaN state is tested as a single point tests it
    nan = out.x.copy()
    nan[T.blocks == 0] = np.nan
    assert sharp_rules(T, nan, opts)[0] == sharp_rule(problems[0], rule, T.split(nan)[0])


def test_the_state_of_some_points_is_their_states_stacked() -> None:
    lams = np.geomspace(1e-3, 1.0, 6)
    T, _ = _stacked(MIX3, "cross-entropy", [(lam, 2.0) for lam in lams], rule=GradedPanels(2))
    x = T.start() + np.arange(T.blocks.size) * 1e-3  # (every component its own number)
    for points in ([0, 1, 2, 3, 4, 5], [1, 3], [5]):
        assert _same(T.points_of(x, points), T.stack([T.split(x)[i] for i in points]))


def test_identity_memo_remembers_by_the_object_not_its_value() -> None:
    from gaussmix.core.memo import IdentityMemo

    memo = IdentityMemo(2)
    made: list[int] = []

    def make(v):
        def f():
            made.append(v)
            return v

        return f

    a, b, c = (np.zeros(1),), (np.zeros(1),), (np.ones(1),)
    assert memo.get(a, "k", make(1)) == 1 and memo.get(a, "k", make(2)) == 1
    assert memo.get(a, "other", make(3)) == 3  # (another key of the same object)
    assert memo.get(b, "k", make(4)) == 4  # an equal object of its own: made again
    assert made == [1, 3, 4]
    memo.get(c, "k", make(5))  # a third object: the oldest (a) forgotten
    assert memo.get(a, "k", make(6)) == 6 and made == [1, 3, 4, 5, 6]


@pytest.mark.parametrize("mixture", [SPARSE, MIX3])
def test_the_constraints_arrays_made_once_give_the_same_accuracies(mixture) -> None:
    from gaussmix.theory.solve.observables import test_accuracy, train_accuracy

    T, problems = _stacked(
        mixture,
        "logistic" if mixture is SPARSE else "cross-entropy",
        [(lam, 1.0) for lam in (1e-2, 0.1, 1.0)],
    )
    again = FixedPointMap(problems, T.rule)
    assert again.outputs.constraints is T.outputs.constraints  # (one tuple for the maps)
    m, Q, V, b = T.means(T.start())
    L = T.L
    mf, Qf, Vf = m.reshape(-1, L), Q.reshape(-1, L, L), V.reshape(-1, L, L)
    zero = np.zeros(L)
    # the same outputs with their constraints as a list (never remembered): made afresh
    fresh = fixed_point._StackedOutputs(
        T.outputs.loss, T.outputs.y, list(T.outputs.constraints), T.K, L, T.outputs.P
    )
    for _ in range(2):  # (made, then remembered)
        a, b_ = test_accuracy(T.outputs, mf, zero, Qf), test_accuracy(fresh, mf, zero, Qf)
        assert _same(a[0], b_[0]) and a[1] == b_[1]
        if L == 1:
            a = train_accuracy(T.outputs, mf, zero, Qf, Vf)
            b_ = train_accuracy(fresh, mf, zero, Qf, Vf)
            assert _same(a[0], b_[0]) and a[1] == b_[1]


def test_own_residuals_of_the_freeze_test_are_the_trails() -> None:
    from gaussmix.theory.solve.policy import channel_rule

    lams = np.geomspace(1e-2, 1.0, 6)
    problems = curves._problems(SPARSE, "logistic", [(lam, 1.0) for lam in lams], "l1", None)
    freezing = batch.Freezing(tol=1e-8, trail=3)
    T = FixedPointMap(problems, channel_rule(problems[0], None), freezing=freezing)
    x, memory = T.start(), T.memory()
    rec = memory.record  # (the iteration's record, written by its evaluations)
    for _ in range(3):
        x, memory = T.evaluate(x, memory)
        assert memory.record is rec
        assert rec.own_at is not None and rec.own_at[0] == rec.evaluations
        remembered = T.last_own_residuals(rec)
        rec.own_at = None  # made again from the trail
        again = T.last_own_residuals(rec)
        assert _same(remembered, again) and np.isfinite(again).all() and (again > 0).all()


@pytest.mark.parametrize(("mixture", "loss"), [(SPARSE, "logistic"), (MIX3, "cross-entropy")])
def test_a_stacked_states_points_are_their_packed_states(mixture, loss) -> None:
    T, _ = _stacked(mixture, loss, [(lam, 1.0) for lam in (1e-2, 0.1, 1.0, 3.0)])
    x = T.start() + np.arange(T.blocks.size) * 1e-3  # (every component its own number)
    Q, M, V, b = T.unpack_points(x)
    for i, xi in enumerate(T.split(x)):
        assert _same(xi, pack_state(Q[i], M[i], V[i], b[i]))
    assert _same(T.stack(T.split(x)), x)


def test_a_stacked_map_is_set_by_its_constructor() -> None:
    """A stacked map is a frozen value: its settings (its points, rule, freezing and the
    layout made from them) are written once, by its constructor, and a later write
    raises, of a setting or of a memory of an evaluation; what an evaluation hands to the
    next (and the record of which points froze) is the MapMemory it returns, carried
    by the iteration; a solve refuses a map not made for its options."""
    T, problems = _stacked(SPARSE, "logistic", [(0.1, 1.0), (0.1, 2.0)])
    names = ("freezing", "rule", "problems", "blocks", "lams", "last", "warm", "frozen")
    for name in names:
        with pytest.raises(AttributeError, match=name):
            setattr(T, name, None)
    x = T.start()
    g, memory = T.evaluate(x)
    assert memory.record.evaluations == 1 and memory.ev is not None
    assert T.hats(x, memory) is memory.ev  # reused where made at the state
    assert _same(T(x), g)  # (the map itself remembers nothing)
    opts = solver_options(None, {})
    with pytest.raises(ValueError, match="solve_freezing"):
        batch_solve.iterated_solve(T, x, None, opts, anderson=first_solve_memory(T, opts))
    made = FixedPointMap(problems, T.rule, freezing=batch_solve.solve_freezing(opts))
    out = batch_solve.converged_solve(made, x, None, opts, anderson=first_solve_memory(T, opts))
    assert out is not None and out.aux.record.frozen.all()
