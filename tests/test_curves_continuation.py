"""Curves by predictor-corrector continuation, with the quadrature rule carried from point to
point (issue 19, item 3): every point of a curve refines its own rule and is within its own
estimated integration error of a fine reference and of the single point ``gm.solve``; a
rule fixed by the caller gives the single points; the predictor is safeguarded."""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np
import pytest

import gaussmix as gm
from gaussmix.experiments import continuation, curves
from gaussmix.experiments.continuation import (
    chain_predecessor,
    curve_start_rule,
    next_start_rule,
    predict,
    prediction_accepted,
    prediction_resolved,
    state_distance,
)
from gaussmix.theory.api.api import make_problem
from gaussmix.theory.numerics.quadrature import GaussHermite, auto_rule
from gaussmix.theory.numerics.tolerances import integration_warning_threshold

MIX3 = gm.Mixture.isotropic(0.5, "simplex", n_clusters=3)
BINARY = gm.Mixture.isotropic(0.5, "antipodal", labels="binary")
KEYS = ("test_error", "train_error", "train_loss")

#: the fixed points are solved to tol = 1e-10 (scaled residual of the state): two solves of
#: one point from different starts agree to a few times that in every observable
TOL = 1e-10
SAME = 10 * TOL


def _gap(a: gm.FixedPointResult, b: gm.FixedPointResult) -> float:
    return max(abs(getattr(a, k) - getattr(b, k)) for k in KEYS)


def _fine(mixture, loss, **kw) -> gm.FixedPointResult:
    """A reference on a rule four times finer per dimension than the automatic one."""
    rule = replace(auto_rule(2), panels=4 * auto_rule(2).panels)
    return gm.solve(mixture, loss, quadrature=rule, estimate_error=False, tol=TOL, **kw)


@pytest.mark.parametrize("kind", ["alpha", "lambda"])
def test_every_curve_point_is_within_its_own_estimate_of_a_fine_reference(kind) -> None:
    if kind == "alpha":
        grid = np.linspace(0.2, 4.0, 12)
        df = gm.learning_curve(MIX3, "cross-entropy", grid, lam=1.0, tol=TOL)
        refs = {i: _fine(MIX3, "cross-entropy", lam=1.0, alpha=grid[i]) for i in (1, 6, 11)}
    else:
        grid = np.geomspace(1e-3, 10.0, 12)
        df = gm.lambda_sweep(MIX3, "cross-entropy", grid, alpha=2.0, tol=TOL)
        refs = {i: _fine(MIX3, "cross-entropy", lam=grid[i], alpha=2.0) for i in (0, 5, 10)}
    assert df.converged.all()
    # the first point solved is a single point (the automatic rule refined once); every
    # other point refined its own rule, the one the curve carries, to the automatic one: its
    # estimate is its own, not borrowed from another point
    # (solved point by point; these curves of 12 points are solved stacked,
    # gaussmix.theory.solve.batch, every point from the rule the curve carries, the first
    # too: each point solved on its own is tested in test_curve_points_agree_with_single_...)
    first = None
    for i, r in enumerate(df.points):
        rule = auto_rule(2).refined() if i == first else auto_rule(2)
        assert r.params["quadrature"] == rule.describe()
    for i, ref in refs.items():
        r = df.points[i]
        assert 0 < r.integration_error < 1e-7  # quad_tol
        assert _gap(r, ref) <= r.integration_error + SAME


def test_curve_points_agree_with_single_points_within_their_estimates() -> None:
    alphas = np.linspace(0.2, 4.0, 12)
    df = gm.learning_curve(MIX3, "cross-entropy", alphas, lam=1.0)
    for alpha, r in zip(alphas, df.points):
        single = gm.solve(MIX3, "cross-entropy", lam=1.0, alpha=alpha)
        # both to the default tol = 1e-8, and each within its own integration error
        assert _gap(r, single) <= r.integration_error + single.integration_error + 1e-7


# A rule fixed by the caller is not carried: every point is the single point (to the
# fixed-point tolerance), its estimate that of the single point, also where the rule's
# error (up to 3e-7 here) stands far above the tolerance.
@pytest.mark.filterwarnings("ignore::gaussmix.IntegrationWarning")  # coarse on purpose
@pytest.mark.parametrize(
    ("mixture", "loss", "lam", "alphas", "rule"),
    [
        (MIX3, "cross-entropy", 1.0, np.linspace(1.2, 2.4, 8), GaussHermite(4, 2)),
        (BINARY, "logistic", 0.1, np.linspace(2.0, 3.0, 8), GaussHermite(12, 1)),
    ],
    ids=["K=3 cross-entropy", "binary logistic"],
)
def test_with_a_given_rule_a_curve_is_its_single_points(mixture, loss, lam, alphas, rule):
    opts = dict(quadrature=rule, quad_tol=1e-4, max_refine=1, tol=TOL)
    df = gm.learning_curve(mixture, loss, alphas, lam=lam, **opts)
    for alpha, r in zip(alphas, df.points):
        single = gm.solve(mixture, loss, lam=lam, alpha=alpha, **opts)
        assert r.params["quadrature"] == single.params["quadrature"]
        assert _gap(r, single) < SAME
        assert r.integration_error == pytest.approx(single.integration_error, abs=SAME)
    assert max(r.integration_error for r in df.points) > 100 * SAME  # not vacuous


@pytest.mark.parametrize("loss", ["square", "logistic"])
def test_a_lasso_curve_is_its_single_points(loss) -> None:
    mix = gm.Mixture.sparse(0.1, 0.1, 1.0)
    alphas = np.geomspace(0.3, 3.0, 12)
    df = gm.learning_curve(mix, loss, alphas, lam=0.1, penalty="l1", tol=TOL)
    for alpha, row, r in zip(alphas, df.itertuples(), df.points):
        single = gm.solve(mix, loss, lam=0.1, alpha=alpha, penalty="l1", tol=TOL)
        bound = SAME + r.integration_error + single.integration_error
        assert abs(row.test_error - single.test_error) <= bound
        assert abs(row.nonzero_fraction - single.nonzero_fraction) <= bound


def test_the_curve_rule_steps_down_the_chain_where_the_rule_is_regime_free() -> None:
    # two effective outputs: graded panels in every regime
    two = make_problem(MIX3, "cross-entropy", lam=1.0, alpha=1.0)
    first = gm.solve(MIX3, "cross-entropy", lam=1.0, alpha=1.0)  # refined once: GP16 judged
    start = curve_start_rule(first, two)
    assert start is not None and start.refined() == auto_rule(2)
    assert chain_predecessor(auto_rule(2)) == start
    # one output (Gauss-Hermite or graded panels by regime), closed forms: the solver's
    one = gm.solve(BINARY, "logistic", lam=0.1, alpha=1.0)
    assert curve_start_rule(one, make_problem(BINARY, "logistic", lam=0.1, alpha=1.0)) is None
    # ... until a point is in the sharp regime: its panels are handed on
    sharp = gm.solve(BINARY, "logistic", lam=1e-3, alpha=2.0)
    panels = curve_start_rule(sharp, make_problem(BINARY, "logistic", lam=1e-3, alpha=2.0))
    assert panels == auto_rule(1) and sharp.state.rule == auto_rule(1).refined()
    sq = gm.solve(MIX3, "square", lam=0.1, alpha=1.0)
    assert curve_start_rule(sq, make_problem(MIX3, "square", lam=0.1, alpha=1.0)) is None
    # the first point of a curve is the single point, to the bit
    df = gm.learning_curve(MIX3, "cross-entropy", [1.0, 1.5], lam=1.0)
    assert all(df.points[0].integration_errors[k] == first.integration_errors[k] for k in KEYS)
    assert _gap(df.points[0], first) == 0.0
    # without a refinement nothing is carried: the points are the single points
    df = gm.learning_curve(MIX3, "cross-entropy", [1.0, 1.5], lam=1.0, estimate_error=False)
    assert all(r.params["quadrature"] == auto_rule(2).describe() for r in df.points)


def test_the_rule_is_carried_upwards_only() -> None:
    res = gm.solve(MIX3, "cross-entropy", lam=1.0, alpha=2.0)
    base = auto_rule(2)
    r1, r2 = base.refined(), base.refined().refined()

    def at(rule):
        return replace(res, state=replace(res.state, rule=rule))

    assert next_start_rule(at(r1), base) == base
    assert next_start_rule(at(r2), base) == r1
    assert next_start_rule(at(GaussHermite(8, 2)), base) is None  # the solver's choice


def test_the_predictor_is_a_cubic_and_its_safeguard_rejects_a_far_correction() -> None:
    alphas = [1.0, 1.1, 1.2, 1.3, 1.4]
    sols = [gm.solve(BINARY, "logistic", lam=0.1, alpha=a) for a in alphas]
    done = [(float(np.log(a)), r) for a, r in zip(alphas[:-1], sols[:-1])]
    pred = predict(done, float(np.log(alphas[-1])))
    # along a smooth curve the cubic lands far closer than the plain warm start
    assert state_distance(pred, sols[-1]) < 1e-3 * state_distance(sols[-2], sols[-1])
    assert prediction_accepted(sols[-1], pred, sols[-2])
    assert predict(done[:1], 0.0) is None  # one point: no predictor
    # a predictor whose correction is larger than its step is rejected
    far = {k: 1.5 * getattr(sols[-1], k) for k in ("Q", "M", "V", "b")}
    near = {k: getattr(sols[-2], k) for k in ("Q", "M", "V", "b")}
    far_from_near = {k: near[k] + 1e-3 * (far[k] - near[k]) for k in near}
    assert not prediction_accepted(sols[-1], far_from_near, sols[-2])


def _timid(monkeypatch) -> list[bool]:
    """Replace the curves' predictor by one a hair from the last point (its step is tiny, so
    the safeguard rejects the fixed point it leads to; it is no polynomial, so the check of
    its resolution is passed over); the safeguard's verdicts."""
    verdicts: list[bool] = []

    def timid(done, param):
        if len(done) < 2:
            return None
        return {k: (1 + 1e-7) * getattr(done[-1][1], k) for k in ("Q", "M", "V", "b")}

    def judged(*args):
        verdicts.append(prediction_accepted(*args))
        return verdicts[-1]

    monkeypatch.setattr(curves, "predict", timid)
    monkeypatch.setattr(curves, "prediction_resolved", lambda *args: True)
    monkeypatch.setattr(curves, "prediction_accepted", judged)
    return verdicts


def test_a_predictor_that_its_lower_order_or_its_last_step_contradicts_is_not_used() -> None:
    alphas = [1.0, 1.1, 1.2, 1.3, 1.4]
    sols = [gm.solve(BINARY, "logistic", lam=0.1, alpha=a) for a in alphas]
    done = [(float(np.log(a)), r) for a, r in zip(alphas[:-1], sols[:-1])]
    param = float(np.log(alphas[-1]))
    # a smooth curve: the cubic and the quadratic agree to far less than the step
    assert prediction_resolved(done, param, predict(done, param))
    assert prediction_resolved(done[:1], param, {})  # one point: nothing to compare
    # the same points with a kink (a state two points back 20 % off): the cubic's weight on
    # it is 4, the quadratic's 1, and their difference 3/4 of the cubic's step
    jump = replace(sols[-4], Q=1.2 * sols[-4].Q, M=1.2 * sols[-4].M, V=1.2 * sols[-4].V)
    kinked = done[:-3] + [(done[-3][0], jump)] + done[-2:]
    assert not prediction_resolved(kinked, param, predict(kinked, param))
    # a step far longer than the curve's last one (a predictor the far side of a turn)
    lower = predict(done, param, continuation.PREDICTOR_POINTS - 1)
    last = state_distance(done[-1][1], done[-2][1])
    far = {k: lower[k] * (1.0 + 4.0 * last) for k in lower}
    assert state_distance(far, done[-1][1]) > continuation.PREDICTOR_STEP_GROWTH * last
    assert not prediction_resolved(done, param, far)


def test_a_rejected_predictor_falls_back_to_the_plain_warm_start(monkeypatch) -> None:
    verdicts = _timid(monkeypatch)
    alphas = np.linspace(1.0, 2.0, 8)
    df = gm.learning_curve(BINARY, "logistic", alphas, lam=0.1, tol=TOL)
    assert len(verdicts) == len(alphas) - 2 and not any(verdicts)
    for alpha, r in zip(alphas, df.points):
        single = gm.solve(BINARY, "logistic", lam=0.1, alpha=alpha, tol=TOL)
        assert _gap(r, single) <= SAME + r.integration_error + single.integration_error


def test_a_sharp_binary_curve_hands_its_panels_on_and_matches_single_points() -> None:
    alphas = np.linspace(1.5, 3.0, 8)
    df = gm.learning_curve(BINARY, "logistic", alphas, lam=1e-3, tol=TOL)
    assert df.converged.all()
    # every point ends on the panels refined once, as the single point does
    assert {r.params["quadrature"] for r in df.points} == {auto_rule(1).refined().describe()}
    for alpha, r in zip(alphas, df.points):
        single = gm.solve(BINARY, "logistic", lam=1e-3, alpha=alpha, tol=TOL)
        assert _gap(r, single) <= r.integration_error + single.integration_error + SAME


@pytest.mark.parametrize("rejected", [False, True])
def test_a_curve_warns_once_for_each_point_whose_estimate_is_large(monkeypatch, rejected):
    # (rejected: every predictor; the warnings of its solves are dropped with them)
    verdicts = _timid(monkeypatch) if rejected else []
    alphas = np.linspace(0.5, 4.0, 10)
    rule = GaussHermite(8, 1)  # coarse: some points' estimates exceed the threshold
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        df = gm.learning_curve(BINARY, "logistic", alphas, lam=0.1, quadrature=rule, max_refine=1)
    large = int((df.integration_error > integration_warning_threshold(1e-8)).sum())
    assert 0 < large < len(alphas)
    assert sum(w.category is gm.IntegrationWarning for w in caught) == large
    assert len(verdicts) == (len(alphas) - 2 if rejected else 0) and not any(verdicts)


def test_a_slow_predictor_is_abandoned_for_the_warm_start() -> None:
    # K = 3 at lam = 1e-4 across the separability threshold: the cubic's start at alpha = 8
    # took 705 iterations without the cap; capped, the point is solved from alpha = 6.5
    alphas = np.array([0.5, 1.0, 2.0, 3.0, 4.0, 5.0, 6.5, 8.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gm.IntegrationWarning)  # the cusp's estimate
        df = gm.learning_curve(MIX3, "cross-entropy", alphas, lam=1e-4)
        single = gm.solve(MIX3, "cross-entropy", lam=1e-4, alpha=8.0)
    assert df.converged.all()
    assert df.n_iter.max() <= 2 * continuation.PREDICTOR_MIN_ITER
    last = df.points[-1]
    assert _gap(last, single) <= last.integration_error + single.integration_error + 1e-7


def test_the_predictors_cap_is_paced_by_the_median_of_the_last_three_points(monkeypatch):
    # one slow point (84 iterations, a transition solved from its warm start) no longer
    # doubles the next point's cap: the median of the last three paces it
    from types import SimpleNamespace

    from gaussmix.theory.solve.options import SolverOptions

    done = [(float(p), SimpleNamespace(n_iter=n)) for p, n in enumerate([40, 5, 13, 84, 7])]
    assert continuation.PREDICTOR_PACE_POINTS == 3
    assert curves._pace(done) == 13  # median(13, 84, 7)
    assert curves._pace(done[:4]) == 13  # median(5, 13, 84)
    assert curves._pace(done[:2]) == 22  # two points: their mean, rounded down
    assert curves._pace(done[:1]) == 40
    caps = []

    def solve(problem, options, **kw):
        caps.append(options.max_iter)
        return "solved"

    monkeypatch.setattr(curves, "solve_problem", solve)
    opts = SolverOptions(max_iter=100)
    for pace in (7, 40, 84):
        assert curves._capped_solve(None, {}, pace, opts, {})[0] == "solved"
    factor, least = continuation.PREDICTOR_ITER_FACTOR, continuation.PREDICTOR_MIN_ITER
    assert caps == [max(least, factor * 7), factor * 40, 100]  # never over max_iter


def test_the_point_after_a_failed_predictor_starts_from_its_warm_start(monkeypatch) -> None:
    # at a transition the predictor of the next point fails too, after its cap on the fine
    # rule: that point goes to its warm start at once (the coarse rule's continuation), and
    # the predictor is tried again from the point after it
    alphas = np.linspace(1.0, 2.0, 8)
    real = curves._capped_solve
    tried: list[float] = []

    def capped(problem, start, pace, opts, history, predicted=False):
        tried.append(float(problem.alpha))
        if problem.alpha == alphas[4]:  # this one fails (as at its cap)
            history.clear()
            return None, []
        return real(problem, start, pace, opts, history, predicted)

    monkeypatch.setattr(curves, "_capped_solve", capped)
    monkeypatch.setattr(curves, "prediction_resolved", lambda *args: True)
    df = gm.learning_curve(BINARY, "logistic", alphas, lam=0.1, tol=TOL)
    assert df.converged.all()
    assert tried == [float(alphas[i]) for i in (2, 3, 4, 6, 7)]  # not at alphas[5]
    for alpha, r in zip(alphas, df.points):
        single = gm.solve(BINARY, "logistic", lam=0.1, alpha=alpha, tol=TOL)
        assert _gap(r, single) <= SAME + r.integration_error + single.integration_error


def test_a_predicted_point_runs_the_coarse_rule_corrected_at_the_predictor(monkeypatch) -> None:
    # from the predictor, without secant pairs of its rule (a curve without an estimate
    # drops them after each point), a point's first run is the coarse rule's map corrected
    # by the two rules' difference at the predictor (Continuation.CORRECTED): its fixed
    # point leaves the automatic rule one or two evaluations, where the rule's own run from
    # the predictor took four or five; the fixed points are the rule's, to its tolerance
    from gaussmix.theory.numerics.quadrature import auto_rule as rule_of
    from gaussmix.theory.solve import fixed_point
    from gaussmix.theory.solve.policy import policy_for
    from gaussmix.theory.solve.refinement import Continuation

    # (unequal priors: no exchangeable clusters, whose curve keeps its rule's pairs)
    mixture = gm.Mixture.isotropic(0.5, "simplex", n_clusters=3, rho=(0.25, 0.35, 0.4))
    alphas = np.geomspace(0.5, 1.0, 6)
    fine = rule_of(2).weights.size
    evaluate = fixed_point.channel_evaluation
    runs: list[list[int]] = []  # the nodes of each channel evaluation, by solve

    def counted(loss, y, M, b, Q, V, rule, warm=None):
        runs[-1].append(rule.weights.size)
        return evaluate(loss, y, M, b, Q, V, rule, warm)

    solve = curves.solve_problem

    def traced(problem, **kw):
        if not (runs and runs[-1] == [-1]):  # (a solve not marked before)
            runs.append([-1] if kw.get("predicted") else [])
        return solve(problem, **kw)

    monkeypatch.setattr(fixed_point, "channel_evaluation", counted)
    monkeypatch.setattr(curves, "solve_problem", traced)

    def curve(predicted: bool, tol: float, n: int = len(alphas)) -> gm.CurveTable:
        runs.clear()
        real = curves._capped_solve
        if not predicted:  # the rule's own run from the predictor (as before)

            def direct(problem, start, pace, opts, history, predicted=False):
                if predicted:  # (marked as predicted, solved as before)
                    runs.append([-1])
                    opts = replace(opts, continuation=False)
                return real(problem, start, pace, opts, history)

            monkeypatch.setattr(curves, "_capped_solve", direct)
        try:
            kw = dict(lam=1e-3, tol=tol, estimate_error=False)
            return gm.learning_curve(mixture, "cross-entropy", alphas[:n], **kw)
        finally:
            monkeypatch.setattr(curves, "_capped_solve", real)

    corrected = curve(True, 1e-5)
    fine_runs = [sum(n == fine for n in r) for r in runs if r and r[0] == -1]
    coarse_runs = [sum(0 < n < fine for n in r) for r in runs if r and r[0] == -1]
    plain = curve(False, 1e-5)
    plain_runs = [sum(n == fine for n in r) for r in runs if r and r[0] == -1]
    assert len(fine_runs) == len(plain_runs) >= 3  # the points after the first two or three
    assert max(fine_runs) <= 2 and min(coarse_runs) >= 2, (fine_runs, plain_runs)
    assert min(plain_runs) >= 4
    assert corrected.converged.all() and plain.converged.all()
    # the same fixed points, each to its solver's tolerance: at tol = 1e-8 the two agree
    # as two solves of one point from different starts do (SAME's factor 10; four points,
    # the last two from the predictor)
    a, b = curve(True, 1e-8, 4), curve(False, 1e-8, 4)
    for ra, rb in zip(a.points, b.points):
        assert _gap(ra, rb) <= 10 * 1e-8
    problem = make_problem(mixture, "cross-entropy", lam=1e-3, alpha=1.0)
    opts = gm.SolverOptions()
    assert policy_for(problem, opts, warm=True, predicted=True).continuation is (
        Continuation.CORRECTED
    )
    assert policy_for(problem, opts, predicted=True).continuation is Continuation.COARSE
    square = make_problem(MIX3, "square", lam=1e-3, alpha=1.0)
    assert policy_for(square, opts, warm=True, predicted=True).continuation is Continuation.NONE


def test_the_corrected_start_maps_only_its_rules_own_proximal_points() -> None:
    # a rule with integrals of its own (the softmax normaliser's at K = 5) hands on the
    # proximal points it was given: a curve's last ones may be of another rule, which the
    # coarse rule's warm start must not map as the rule's own (an IndexError at K = 5 in the
    # explorer); they start nothing, and the corrected map is the one from no warm start
    from gaussmix.theory.solve.defect import coarse_corrected_start, image_at
    from gaussmix.theory.solve.fixed_point import FixedPointMap

    mixture = gm.Mixture.isotropic(0.5, "simplex", n_clusters=3, rho=(0.25, 0.35, 0.4))
    res = gm.solve(mixture, "cross-entropy", lam=1e-3, alpha=1.0, tol=1e-5, estimate_error=False)
    T = res.state.map()
    Tc = FixedPointMap(res.state.problem, T.rule.coarsened())
    x = res.state.x * (1.0 + 1e-3)
    coarse = image_at(Tc, x, None)[2].warm  # (proximal points of another rule)
    assert coarse is not None and coarse.key[0] != T.rule
    clean = image_at(T, x, None)
    x0, g, m = image_at(T, x, coarse)  # (not T's: not used)
    assert np.array_equal(g, clean[1])
    stale = (x0, g, m._replace(warm=coarse))  # (as a rule that passes them on)
    corrected, _ = coarse_corrected_start(T, Tc, stale)
    reference, _ = coarse_corrected_start(T, Tc, (x0, g, m._replace(warm=None)))
    assert np.array_equal(corrected.delta, reference.delta)
