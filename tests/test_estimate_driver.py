"""The one driver of the integration error estimate by refinement (issue 31, item 1):
``refine_rule`` does the bookkeeping of a single point and of a curve's stacked points alike
(the change of each observable under the last refinement, that evaluation's own error, the
evaluations and residuals, which points refine again), whatever map re-solves them; and a
single point's estimate is a curve's point's."""

from __future__ import annotations

import numpy as np
import pytest

import gaussmix as gm
from gaussmix.theory.numerics.quadrature import GaussHermite
from gaussmix.theory.solve.estimate import Observables, RuleRefinement, refine_rule
from gaussmix.theory.solve.options import SolverOptions


def _obs(test_error: float, train_loss: float, err: float = 0.0) -> Observables:
    errors = {"test_error": err, "train_error": 0.0, "train_loss": 0.0, "test_loss": 0.0}
    return Observables((), (), test_error, 0.1, train_loss, errors, test_loss=1.0)


class _Resolve:
    """A re-solve whose observables of point ``i`` with a rule of ``n`` nodes are
    ``value_i + c_i / n``: their change under refinement halves with each doubling."""

    def __init__(self, c: list[float], fail_at: int | None = None) -> None:
        self.c, self.fail_at, self.calls = c, fail_at, []

    def value(self, i: int, n: int) -> float:
        return 0.2 + self.c[i] / n

    def __call__(self, finer, active):
        self.calls.append((finer.weights.size, list(active)))
        if self.fail_at is not None and len(self.calls) == self.fail_at:
            return None
        n = finer.weights.size
        return [(_obs(self.value(i, n), self.value(i, n)), 3, 1e-12) for i in active]


def _start(resolve: _Resolve, rule) -> list[Observables]:
    n = rule.weights.size
    return [_obs(resolve.value(i, n), resolve.value(i, n)) for i in range(len(resolve.c))]


def test_each_point_refines_until_its_change_is_below_quad_tol() -> None:
    rule = GaussHermite(8, 1)
    # exact; a change 5e-3 (1/n - 1/n'), below quad_tol after three refinements (8 -> 12 ->
    # 18 -> 27 nodes: 2.1e-4, 1.4e-4, 9.3e-5); a large change, never below it
    resolve = _Resolve([0.0, 5e-3, 1.0])
    opts = SolverOptions(quad_tol=1e-4, max_refine=4)
    done = refine_rule(rule, _start(resolve, rule), [10, 10, 10], [1e-9] * 3, opts, resolve)
    assert not done.failed
    sizes = [n for n, _ in resolve.calls]
    assert sizes == [12, 18, 27, 40]
    assert [a for _, a in resolve.calls] == [[0, 1, 2], [1, 2], [1, 2], [2]]
    for i, c in enumerate(resolve.c):
        # each point's change is that of its last refinement, from the rule before
        steps = sum(i in a for _, a in resolve.calls)
        n_last = sizes[steps - 1]
        n_prev = rule.weights.size if steps == 1 else sizes[steps - 2]
        expected = abs(c / n_last - c / n_prev)
        assert done.quad[i]["test_error"] == pytest.approx(expected, rel=1e-12, abs=1e-300)
        assert done.quad[i]["train_loss"] == pytest.approx(expected, rel=1e-12, abs=1e-300)
        assert done.n_iter[i] == 10 + 3 * steps
        assert done.residual[i] == 1e-12
    assert done.quad[0]["test_error"] == 0.0 and done.quad[1]["test_error"] <= 1e-4
    assert done.quad[2]["test_error"] > 1e-4  # still above: stopped by max_refine
    assert len(resolve.calls) == 4


def test_without_auto_refine_one_refinement_and_a_failure_keeps_what_was_had() -> None:
    rule = GaussHermite(8, 1)
    resolve = _Resolve([1.0])
    opts = SolverOptions(auto_refine=False, quad_tol=1e-12)
    done = refine_rule(rule, _start(resolve, rule), [5], [1e-9], opts, resolve)
    assert len(resolve.calls) == 1 and done.n_iter == [8]
    failing = _Resolve([1.0], fail_at=2)
    start = _start(failing, rule)
    done = refine_rule(rule, start, [5], [1e-9], SolverOptions(quad_tol=1e-12), failing)
    assert done.failed and len(failing.calls) == 2
    n1 = failing.calls[0][0]
    assert done.obs[0].test_error == pytest.approx(failing.value(0, n1))  # the first re-solve's
    assert done.n_iter == [8]
    assert RuleRefinement.unrefined(start, [5], [1.0]).quad == [
        dict.fromkeys(start[0].errors, 0.0)
    ]


def test_a_single_point_and_a_curve_point_get_the_same_estimate() -> None:
    # the two callers of the driver: one solve, and the same point on a stacked curve
    mix = gm.Mixture.isotropic(0.5, "simplex", n_clusters=3)
    alphas = [1.0, 2.0]
    curve = gm.learning_curve(mix, "cross-entropy", alphas, lam=1.0, tol=1e-8)
    for alpha, point in zip(alphas, curve.points):
        single = gm.solve(mix, "cross-entropy", lam=1.0, alpha=alpha, tol=1e-8)
        assert point.test_error == pytest.approx(single.test_error, abs=1e-7)
        est_c = point.integration_errors["test_error"]
        est_s = single.integration_errors["test_error"]
        assert np.isfinite(est_c) and np.isfinite(est_s)
        # both estimates bound the other answer's distance (each within its own estimate)
        assert abs(point.test_error - single.test_error) <= max(est_c, est_s) + 1e-7


def test_a_solve_and_a_stacked_curve_take_the_one_estimate(monkeypatch) -> None:
    """The estimate of a single point and of a curve's stacked points is one function
    (``batch_solve.estimate_points``), on a map of one point and of the curve's points;
    what differs is the policy's declared fields (the predicted start, a single point's;
    the points frozen at their own convergence, a curve's)."""
    from gaussmix.theory.solve import batch_solve

    calls: list[tuple[int, bool, bool]] = []
    real = batch_solve.estimate_points

    def spy(T, out, n_iter, residual, opts, **kw):
        calls.append((T.n_points, kw["predicted"], kw["stacked"]))
        return real(T, out, n_iter, residual, opts, **kw)

    monkeypatch.setattr(batch_solve, "estimate_points", spy)
    mix = gm.Mixture.isotropic(1.0, "antipodal", labels="binary")
    single = gm.solve(mix, "logistic", lam=0.1, alpha=2.0)
    assert single.success and calls == [(1, True, False)]
    calls.clear()
    alphas = np.linspace(0.5, 3.0, 10)
    curve = gm.learning_curve(mix, "logistic", alphas, lam=0.1)
    # (the points by the rule each ends with: the sharp switch may group them)
    assert curve.converged.all() and sum(n for n, _, _ in calls) == len(alphas)
    assert all(not predicted and stacked for _, predicted, stacked in calls)


def test_the_predicted_start_is_a_single_points() -> None:
    """The predicted start (one step of the last solve's own iteration) is declared for a
    map of one point; with several points the one estimate refuses it rather than step
    the stacked state with another point's pairs."""
    from gaussmix.theory.api.api import make_problem
    from gaussmix.theory.solve import batch_solve
    from gaussmix.theory.solve.fixed_point import FixedPointMap
    from gaussmix.theory.solve.iteration import IterationStatus
    from gaussmix.theory.solve.refinement import ErrorEstimate

    mix = gm.Mixture.isotropic(1.0, "antipodal", labels="binary")
    problems = [make_problem(mix, "logistic", lam=0.1, alpha=a) for a in (1.0, 2.0)]
    T = FixedPointMap(problems, GaussHermite(8, 1))
    x = T.start()
    out = batch_solve.IterationOutcome(x, 0, 0.0, IterationStatus.CONVERGED, "", None, None)
    with pytest.raises(ValueError, match="predicted start"):
        batch_solve.estimate_points(
            T,
            out,
            [0, 0],
            [0.0, 0.0],
            SolverOptions(),
            kind=ErrorEstimate.REFINED_RULE,
            stacked=True,
            predicted=True,
            merge=False,
            own_pairs=True,
            memory=6,
        )


def test_a_solve_and_a_stacked_curve_take_the_one_run(monkeypatch) -> None:
    """The fixed-point run of a single point and of a curve's stacked points is one
    function (``batch_solve.run_points``) on a map of one point and of the curve's points:
    a single point's map freezes nothing and its runs are its iteration; the curve's
    freezes each point at its own convergence (``stacked``).  The sharp switch's re-solve
    is that run too, of a single point (a group of one) and of the curve's points in the
    sharp regime (one group, stacked)."""
    from gaussmix.theory.solve import batch_solve
    from gaussmix.theory.solve.batch import NO_FREEZING

    calls: list[tuple[int, bool, bool]] = []
    real = batch_solve.run_points

    def spy(T, x0, opts, **kw):
        calls.append((T.n_points, kw["stacked"], T.freezing == NO_FREEZING))
        return real(T, x0, opts, **kw)

    monkeypatch.setattr(batch_solve, "run_points", spy)
    mix = gm.Mixture.isotropic(1.0, "antipodal", labels="binary")
    single = gm.solve(mix, "logistic", lam=0.1, alpha=2.0)
    assert single.success and calls == [(1, False, True)]
    calls.clear()
    sharp = gm.solve(mix, "logistic", lam=0.03, alpha=2.0)  # (graded panels at the end)
    assert sharp.success and calls == [(1, False, True)] * 2
    calls.clear()
    alphas = np.linspace(0.5, 3.0, 10)
    curve = gm.learning_curve(mix, "logistic", alphas, lam=0.1)
    assert curve.converged.all() and len(calls) == 2 and calls[0] == (10, True, False)
    assert 0 < calls[1][0] < 10 and calls[1][1:] == (True, False)


@pytest.mark.parametrize(
    "mixture, loss",
    [
        (gm.Mixture.isotropic(1.0, "antipodal", labels="binary"), "logistic"),
        (gm.Mixture.isotropic(0.5, "simplex", n_clusters=3), "cross-entropy"),
    ],
)
def test_the_observables_of_a_map_of_one_point_are_a_batchs(mixture, loss) -> None:
    """The one estimate reads a map of one point on its own arrays (its problem its
    outputs, as a single point's observables): the same errors and losses as that point's
    in a map of several, at the same state, to rounding."""
    from gaussmix.theory.api.api import make_problem
    from gaussmix.theory.solve.batch_solve import stacked_observables
    from gaussmix.theory.solve.fixed_point import FixedPointMap
    from gaussmix.theory.solve.policy import channel_rule

    problems = [make_problem(mixture, loss, lam=0.1, alpha=a) for a in (0.5, 1.0, 3.0)]
    rule = channel_rule(problems[0], None)
    T = FixedPointMap(problems, rule)
    x = T.start()
    together = stacked_observables(T, x)
    for p, xi, ob in zip(problems, T.split(x), together):
        (alone,) = stacked_observables(FixedPointMap(p, rule), xi)
        for key in ("test_error", "train_error", "train_loss", "test_loss"):
            assert alone.value(key) == pytest.approx(ob.value(key), rel=1e-12, abs=1e-15), key
