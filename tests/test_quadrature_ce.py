"""Cross-entropy at small lambda and many classes (issue 10, items 2-3 and performance):
the relabelling symmetry of exchangeable clusters (one cluster's integrals stand for all),
the logarithmic chart of the fixed-point iteration, and their accuracy against the full
computation."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import gaussmix as gm
from gaussmix.theory.api.api import make_problem
from gaussmix.theory.numerics.quadrature import GaussHermite, GradedPanels, SobolRQMC
from gaussmix.theory.problem.symmetry import ClusterSymmetry, exchangeable_mixture
from gaussmix.theory.solve import fixed_point
from gaussmix.theory.solve import solver as S
from gaussmix.theory.solve.defect import PROXIMAL
from gaussmix.theory.solve.policy import channel_rule

#: the acceptance target of issue 10: integration error of the test error at small lambda
SMALL_LAM_TARGET = 1e-7


def _solve(mix, lam, alpha, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("error", gm.IntegrationWarning)
        return gm.solve(mix, "cross-entropy", lam=lam, alpha=alpha, **kw)


# ----------------------------------------------------------------------------- detection
def test_exchangeable_clusters_are_detected_and_others_are_not():
    iso = gm.Mixture.isotropic(0.5, "gaussian", n_clusters=4)
    assert exchangeable_mixture(iso)
    assert exchangeable_mixture(gm.Mixture.isotropic(1.0, "simplex", n_clusters=3))
    sym = ClusterSymmetry.of(make_problem(iso, "cross-entropy", lam=1.0, alpha=2.0))
    assert sym is not None and sym.n_clusters == 4
    unbalanced = gm.Mixture.isotropic(0.5, "gaussian", n_clusters=3, rho=[0.2, 0.3, 0.5])
    deltas = gm.Mixture.isotropic([0.5, 0.5, 0.7], "gaussian")
    gram = np.eye(3) + np.diag([0.0, 0.0, 0.5])
    means = gm.Mixture.isotropic(0.5, gram)
    for mix in (unbalanced, deltas, means):
        assert not exchangeable_mixture(mix)
        assert ClusterSymmetry.of(make_problem(mix, "cross-entropy", lam=1.0, alpha=2.0)) is None
    # two classes: one effective output, nothing to gain; square loss: closed-form channel
    two = gm.Mixture.isotropic(0.5, "gaussian", n_clusters=2)
    assert ClusterSymmetry.of(make_problem(two, "cross-entropy", lam=1.0, alpha=2.0)) is None
    assert ClusterSymmetry.of(make_problem(iso, "square", lam=1.0, alpha=2.0)) is None


def test_relabellings_are_orthogonal_and_fix_the_symmetric_state():
    mix = gm.Mixture.isotropic(0.5, "gaussian", n_clusters=4)
    problem = make_problem(mix, "cross-entropy", lam=1.0, alpha=2.0)
    sym = ClusterSymmetry.of(problem)
    L = problem.dim
    for R in sym.R:
        np.testing.assert_allclose(R @ R.T, np.eye(L), atol=1e-14)
    # the symmetric state of the max-margin parametrisation: Q = q Pi, M_c = m Pi e_c, b = 0
    P = problem.P
    Q = np.broadcast_to(2.0 * np.eye(L), (4, L, L))
    V = np.broadcast_to(0.7 * np.eye(L), (4, L, L))
    M = 1.3 * (P @ np.eye(4)).T
    b = np.zeros(L)
    for got, want in zip(sym.symmetric_state(Q, M, V, b), (Q, M, V, b), strict=True):
        np.testing.assert_allclose(got, want, atol=1e-14)
    # a non-symmetric state is projected: b -> 0, cluster c is cluster 0 relabelled
    rng = np.random.default_rng(0)
    A = rng.standard_normal((L, L))
    Qs, Ms, Vs, bs = sym.symmetric_state(
        np.broadcast_to(A @ A.T, (4, L, L)), rng.standard_normal((4, L)), V, np.ones(L)
    )
    assert np.all(bs == 0)
    full = P.T @ Ms[2]  # class 2's own logit is its largest distinct entry
    np.testing.assert_allclose(np.delete(full, 2), full[0], atol=1e-14)


def test_one_cluster_channel_equals_the_full_channel_at_a_symmetric_state():
    """Independent of the symmetry code's algebra: at an equivariant state the channel of
    every cluster, each integrated with the same (fine) rule, is cluster 0's relabelled, to
    the accuracy of the rule."""
    mix = gm.Mixture.isotropic(0.5, "gaussian", n_clusters=3)
    problem = make_problem(mix, "cross-entropy", lam=1e-2, alpha=3.0)
    r = _solve(mix, 1e-2, 3.0)
    x = r.state.x
    rule = GradedPanels(32, 2, 6)
    full = S.FixedPointMap(problem, rule)
    reduced = S.FixedPointMap(problem, rule, symmetry=ClusterSymmetry.of(problem))
    a, b = full.hats(x), reduced.hats(x)
    for name in ("Qhat", "Mhat", "Vhat"):
        np.testing.assert_allclose(getattr(b, name), getattr(a, name), rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(full(x), reduced(x), rtol=1e-8, atol=1e-8)


# ----------------------------------------------------------------------------- solves
@pytest.mark.parametrize(
    ("K", "lam", "kw"),
    [
        (3, 1e-2, {}),
        pytest.param(
            4,
            1.0,
            {"quadrature": GaussHermite(6, 3), "estimate_error": False},
            marks=pytest.mark.long,  # ~12 s: the full path's four orthants and QMC sets
        ),
    ],
)
def test_symmetric_solve_agrees_with_the_full_solve(K, lam, kw):
    mix = gm.Mixture.isotropic(0.5, "gaussian", n_clusters=K)
    on = _solve(mix, lam, float(K), **kw)
    off = _solve(mix, lam, float(K), symmetry=False, **kw)
    for key in ("test_error", "train_error", "train_loss"):
        # both carry an error estimate; allow three of each (one standard error for the
        # seeded estimators of K = 4) plus the iteration's tolerance
        bound = 3 * (on.integration_errors[key] + off.integration_errors[key]) + 1e-7
        assert abs(getattr(on, key) - getattr(off, key)) <= bound, key
    np.testing.assert_allclose(on.Q, off.Q, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(on.M, off.M, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(on.b, 0.0, atol=1e-12)
    # the free energy is the minimal risk per dimension (eq. (168)), also reduced
    risk = K * on.train_loss + on.params["lam"] * on.penalty_value
    assert on.free_energy == pytest.approx(risk, rel=1e-6)


def test_k3_small_lambda_cold_start_is_cheap_and_accurate():
    """Issue 10's benchmark point (K = 3, Delta = 0.5, Gaussian means, lam = 1e-4): from the
    default start, few iterations (0.85 s, 149 iterations before the symmetry and the log
    chart; 35 iterations now), an estimated test-error integration error <= 1e-7 and no
    warning."""
    mix = gm.Mixture.isotropic(0.5, "gaussian", n_clusters=3)
    r = _solve(mix, 1e-4, 3.0)
    assert r.success and r.n_iter <= 60
    assert r.integration_errors["test_error"] <= SMALL_LAM_TARGET
    assert r.train_error == 0.0  # separable at alpha = 3 (alpha*_3(0.5) is larger)


def test_log_chart_round_trip_and_its_domain():
    rng = np.random.default_rng(1)
    K, L = 3, 2
    A = rng.standard_normal((K, L, L))
    Q = A @ np.swapaxes(A, 1, 2) + 0.1 * np.eye(L)
    V = 50.0 * np.broadcast_to(np.eye(L), (K, L, L))
    x = S.pack_state(Q, rng.standard_normal((K, L)), V, rng.standard_normal(L))
    chart = S.LogChart(K, L)
    y = chart.forward(x)
    np.testing.assert_allclose(chart.inverse(y), x, rtol=1e-12, atol=1e-12)
    Qs = Q.copy()
    Qs[1] = np.outer([1.0, 1.0], [1.0, 1.0])  # singular: outside the chart
    assert chart.forward(S.pack_state(Qs, np.zeros((K, L)), V, np.zeros(L))) is None


def test_log_chart_changes_the_path_not_the_fixed_point(monkeypatch):
    mix = gm.Mixture.isotropic(0.5, "gaussian", n_clusters=3)
    kw = dict(quadrature=GradedPanels(16, 2, 6), estimate_error=False)
    log = _solve(mix, 1e-3, 3.0, **kw)
    monkeypatch.setattr(fixed_point, "uses_log_chart", lambda problem: False)
    plain = _solve(mix, 1e-3, 3.0, **kw)
    assert log.n_iter < plain.n_iter
    np.testing.assert_allclose(log.Q, plain.Q, rtol=1e-7)
    np.testing.assert_allclose(log.V, plain.V, rtol=1e-7)
    assert log.test_error == pytest.approx(plain.test_error, abs=1e-9)


@pytest.mark.slow  # ~5 s
def test_k4_tensor_rule_runs_with_the_symmetry():
    """K = 4 (three effective outputs, tensor Gauss-Hermite) with the reduction: one
    cluster's channel, one three-dimensional orthant and one cluster's training-error
    quasi-Monte Carlo; every error estimate is finite and the training-error one meets
    issue 10's 1e-4."""
    mix = gm.Mixture.isotropic(0.5, "gaussian", n_clusters=4)
    r = _solve(mix, 1.0, 4.0, quadrature=GaussHermite(8, 3))
    assert r.success
    assert r.integration_errors["train_error"] <= 1e-4
    assert 0.0 < r.train_error < r.test_error < 0.75


# ----------------------------------------------------------------------------- training error
def _effective(mix, lam, **kw):
    r = gm.solve(mix, "cross-entropy", lam=lam, alpha=float(mix.n_clusters), **kw)
    e = S.effective_state(r)
    return e["problem"], e["M"], e["b"], e["Q"], e["V"]


@pytest.mark.parametrize("lam", [1.0, 1e-2, 1e-4])
def test_training_accuracy_orthant_equals_the_wedge_boundary_integral(lam, monkeypatch):
    """K = 3, exchangeable clusters (isotropic metric): the training accuracy as the orthant
    probability of ``omega + v y`` equals the independent boundary integral over the image
    of the correct wedge (divergence theorem)."""
    from gaussmix.theory.solve import observables as O

    mix = gm.Mixture.isotropic(0.5, "gaussian", n_clusters=3)
    problem, M, b, Q, V = _effective(mix, lam, estimate_error=False)
    assert O.isotropic_softmax_metric(problem, V)
    fast, err = O.train_accuracy(problem, M, b, Q, V)
    assert err <= 1e-14
    monkeypatch.setattr(O, "isotropic_softmax_metric", lambda problem, V: False)
    wedge, werr = O.train_accuracy(problem, M, b, Q, V)
    np.testing.assert_allclose(fast, wedge, atol=10 * werr + 1e-13)


def test_training_accuracy_orthant_agrees_with_qmc_at_four_classes():
    from gaussmix.theory.solve import observables as O

    mix = gm.Mixture.isotropic(0.5, "gaussian", n_clusters=4)
    problem, M, b, Q, V = _effective(mix, 1.0, quadrature=GaussHermite(6, 3), estimate_error=False)
    fast, err = O.train_accuracy(problem, M, b, Q, V)
    assert err < 1e-6  # a seeded three-dimensional orthant
    qmc, se = O._qmc_train_accuracy(problem, M, b, Q, V, start=12, stop=12)
    assert se < 3e-4
    assert abs(problem.mixture.rho @ (qmc - fast)) <= 4 * se


def test_anisotropic_metrics_keep_the_general_training_error():
    """Unbalanced clusters: V_c is not isotropic, so the orthant shortcut does not apply."""
    from gaussmix.theory.solve import observables as O

    mix = gm.Mixture.isotropic(0.5, "gaussian", n_clusters=3, rho=[0.2, 0.3, 0.5])
    problem, M, b, Q, V = _effective(mix, 1e-2, estimate_error=False)
    assert not O.isotropic_softmax_metric(problem, V)


# ----------------------------------------------------------------------------- K >= 4 rules
def test_automatic_rqmc_spends_the_saved_clusters_on_points():
    mix = gm.Mixture.isotropic(0.5, "gaussian", n_clusters=10)
    problem = make_problem(mix, "cross-entropy", lam=1.0, alpha=10.0)
    sym = channel_rule(problem, None, symmetry=True)
    full = channel_rule(problem, None, symmetry=False)
    assert full.randomised and sym.n_log2 == full.n_log2 + 3  # 2**3 <= K = 10
    assert sym.weights.size <= S.MAX_QUADRATURE_NODES
    # three to five dimensions: the sharp-regime rule is at the node cap already
    four = make_problem(gm.Mixture.isotropic(0.5, "gaussian", n_clusters=4), "cross-entropy",
                        lam=1e-4, alpha=4.0)  # fmt: skip
    assert channel_rule(four, None, symmetry=True) == GaussHermite(10, 3)


@pytest.mark.long  # ~30 s: python -m pytest -m long tests/test_quadrature_ce.py
def test_k4_small_lambda_rules_agree_with_graded_panels():
    """K = 4, lam = 1e-4 (issue 10, item 3; issue 19): at alpha = 4, in the band below
    alpha*_4 = 4.69 where the fixed point is ill-conditioned, the estimate of the automatic
    :class:`ExchangeablePanels` (measured 4e-6 test error, 4.7e-5 training loss) would warn,
    so the solve goes on with the integration over the softmax normaliser, whose estimates
    are <= 1e-6; the answer is within its estimate plus the reference's spread of a
    graded-panel solve (12 panels of 6 nodes per dimension, 3e5 nodes, spread ~3e-5 in the
    test error over 6-12 panels), and of the randomised rule (the automatic one before
    issue 19) within four of its standard errors, where Gauss-Hermite at its refinement cap
    was 1.2e-3 away."""
    mix = gm.Mixture.isotropic(0.5, "gaussian", n_clusters=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gm.IntegrationWarning)  # the estimates are ~1e-4
        auto = gm.solve(mix, "cross-entropy", lam=1e-4, alpha=4.0)
        rqmc = gm.solve(mix, "cross-entropy", lam=1e-4, alpha=4.0,
                        quadrature=SobolRQMC(3, 12, 8))  # fmt: skip
        ref = gm.solve(mix, "cross-entropy", lam=1e-4, alpha=4.0,
                       quadrature=GradedPanels(12, 3, 6), estimate_error=False)  # fmt: skip
    assert auto.params["quadrature"].startswith("normaliser(K=4")
    for key, spread in (("test_error", 3e-5), ("train_loss", 2e-4)):
        est = auto.integration_errors[key]
        assert est <= 1e-6
        assert abs(getattr(auto, key) - getattr(ref, key)) <= est + spread, key
        se = rqmc.integration_errors[key]
        assert se < 3e-4
        assert abs(getattr(auto, key) - getattr(rqmc, key)) <= 4 * se + est, key


def test_a_curve_crossing_the_log_chart_threshold_drops_the_other_charts_pairs():
    """History carried from a large-lambda point (state coordinates) to a small-lambda one
    (log chart) is not mixed with it: the warm-started point equals the cold one."""
    mix = gm.Mixture.isotropic(0.5, "gaussian", n_clusters=3)
    history: dict = {}
    big = _solve(mix, 1.0, 3.0, history=history)
    pairs = lambda: [h for k, h in history.items() if k != PROXIMAL]  # noqa: E731 (the rules')
    assert all(not h.log_chart for h in pairs())
    warm = _solve(mix, 1e-2, 3.0, history=history, init=big)
    cold = _solve(mix, 1e-2, 3.0)
    assert warm.success and any(h.log_chart for h in pairs())
    assert warm.test_error == pytest.approx(cold.test_error, abs=1e-8)
    np.testing.assert_allclose(warm.Q, cold.Q, rtol=1e-6)


@pytest.mark.slow  # ~9 s
def test_training_error_estimate_is_refined_to_its_target():
    """Issue 10: the K >= 4 training error's estimate <= 1e-4 with a randomised rule.  At
    K = 6, lam = 1e-4 the randomised rule of the sharp regime (8 x 2**12 points; the
    automatic rule there is now the normaliser's, issue 19, so it is passed) leaves 2.0e-4;
    the solver doubles the points while the estimate exceeds TRAIN_ERROR_TARGET, up to
    MAX_TRAIN_RQMC_NODES (here one doubling), the estimate falls at least at the Monte-Carlo
    rate 1 / sqrt(N), and the refined point agrees with the coarse one within their
    estimates.  At the cap the estimate is 0.95-1.10e-4 (measured over the estimate's
    variants: one standard error of eight replicates, each stopped within 20 % of its
    shift, REPLICATE_SHIFT_RTOL), on either side of the target: above it the solver stops
    at the cap and says so in the estimate, which the test reads as it is."""
    from gaussmix.theory.numerics.tolerances import TRAIN_ERROR_TARGET
    from gaussmix.theory.solve.estimate import MAX_TRAIN_RQMC_NODES

    mix = gm.Mixture.isotropic(0.5, "gaussian", n_clusters=6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gm.IntegrationWarning)  # test error above quad_tol
        res = gm.solve(mix, "cross-entropy", lam=1e-4, alpha=6.0, quadrature=SobolRQMC(5, 12, 8))
        coarse = gm.solve(
            mix, "cross-entropy", lam=1e-4, alpha=6.0, quadrature=SobolRQMC(5, 12, 8),
            auto_refine=False,
        )  # fmt: skip
    assert res.success and coarse.success
    assert res.params["quadrature"].startswith("sobol-rqmc(dim=5, points=2**13")
    assert 8 * 2**13 == MAX_TRAIN_RQMC_NODES  # (refined while above the target, to the cap)
    assert coarse.integration_errors["train_error"] > TRAIN_ERROR_TARGET
    refined, first = (
        res.integration_errors["train_error"],
        coarse.integration_errors["train_error"],
    )
    assert refined <= first / np.sqrt(2.0)
    bound = 3 * (res.integration_errors["train_error"] + coarse.integration_errors["train_error"])
    assert abs(res.train_error - coarse.train_error) <= bound
