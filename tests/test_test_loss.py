"""The test loss: the population risk ``E loss(y, W x / sqrt(d) + b)`` of the trained estimator
(the loss alone, without the penalty), in the theory and in the simulations.

Checked against closed forms and adaptive quadrature, exact equivalences between losses,
a much finer rule at the same fixed point, Monte Carlo on fresh samples, and exact ERM on
simulated data.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate
from scipy.special import log_expit

import gaussmix as gm
import gaussmix.theory.solve.observables as obs
from gaussmix.simulate import simulate
from gaussmix.simulate.simulation import exact_test_loss, fit_erm, realise
from gaussmix.theory.channel.losses import HingeLoss, LogisticLoss, SquareLoss
from gaussmix.theory.numerics.quadrature import GaussHermite, GradedPanels
from gaussmix.theory.solve.solver import SUMMARY_ERROR_KEYS, effective_state

slow = pytest.mark.slow


def _psd(rng: np.random.Generator, K: int, L: int) -> np.ndarray:
    A = rng.normal(size=(K, L, L))
    return A @ np.swapaxes(A, 1, 2) / L


# ------------------------------------------------------------------------ closed forms
def test_square_closed_form_equals_quadrature_of_the_loss() -> None:
    """``(||y - m||^2 + tr Q) / 2`` against Gauss-Hermite quadrature of the loss itself (a
    quadratic integrand: the rule is exact up to rounding)."""
    rng = np.random.default_rng(0)
    K, L = 3, 2
    y, m, Q = rng.normal(size=(K, L)), rng.normal(size=(K, L)), _psd(rng, K, L)
    closed = obs.gaussian_risk(SquareLoss(), y, m, Q)
    rule = GaussHermite(8, L)
    z = m[:, None, :] + rule.nodes @ np.linalg.cholesky(Q).transpose(0, 2, 1)
    quad = (0.5 * np.sum((y[:, None, :] - z) ** 2, axis=-1)) @ rule.weights
    np.testing.assert_allclose(closed, quad, rtol=1e-13)


@pytest.mark.parametrize(("mean", "q"), [(0.3, 0.5), (-1.2, 2.0), (2.5, 0.01), (0.7, 0.0)])
@pytest.mark.parametrize("y", [1.0, -1.0])
def test_hinge_closed_form_equals_adaptive_quadrature(mean: float, q: float, y: float) -> None:
    closed = float(obs.gaussian_risk(HingeLoss(), np.array([[y]]), np.array([[mean]]),
                                     np.array([[[q]]]))[0])  # fmt: skip
    if q == 0.0:
        assert closed == max(0.0, 1.0 - y * mean)
        return
    s = np.sqrt(q)
    kink = (1.0 / y - mean) / s  # where 1 - y z = 0, in units of xi
    f = lambda x: max(0.0, 1.0 - y * (mean + s * x)) * np.exp(-0.5 * x * x)  # noqa: E731
    val = sum(integrate.quad(f, a, b, epsabs=1e-13)[0] for a, b in
              ((-np.inf, kink), (kink, np.inf))) / np.sqrt(2 * np.pi)  # fmt: skip
    assert closed == pytest.approx(val, rel=1e-10, abs=1e-13)


def test_logistic_quadrature_converges_to_adaptive_quadrature() -> None:
    """The 1-D logistic risk with the solver's rules against scipy's adaptive quadrature,
    in the smooth (q <= 4) and sharp (q = 400) regimes."""
    loss = LogisticLoss()
    for mean, q, rule in ((0.4, 2.0, GaussHermite(64)), (0.4, 400.0, GradedPanels(32, 1, 8))):
        val = obs.gaussian_risk(loss, np.array([[1.0]]), np.array([[mean]]),
                                np.array([[[q]]]), rule)[0]  # fmt: skip
        s = np.sqrt(q)
        f = lambda x, m=mean, s=s: -log_expit(m + s * x) * np.exp(-0.5 * x * x)  # noqa: E731
        ref = integrate.quad(f, -40, 40, points=[-mean / s], epsabs=1e-13, limit=200)[0]
        assert val == pytest.approx(ref / np.sqrt(2 * np.pi), rel=1e-10), q


# ------------------------------------------------------------------------ the theory
def _mix2() -> gm.Mixture:
    return gm.Mixture.isotropic([0.3, 0.6], "antipodal", rho=[0.4, 0.6], labels="binary")


@pytest.mark.parametrize("loss", ["square", "logistic", "hinge"])
def test_test_loss_is_at_least_the_loss_at_the_mean_output(loss: str) -> None:
    """Jensen: for a convex loss ``E loss(y, z) >= loss(y, E z)``, cluster by cluster; for
    the square loss the gap is exactly ``sum_c rho_c q_c / 2``."""
    mix = _mix2()
    r = gm.solve(mix, loss, lam=0.3, alpha=1.5)
    y = mix.labels.labels
    at_mean = gm.get_loss(loss).value(y, r.M + r.b) @ mix.rho
    assert r.test_loss > at_mean
    if loss == "square":
        gap = 0.5 * mix.rho @ r.Q[:, 0, 0]
        assert r.test_loss - at_mean == pytest.approx(gap, rel=1e-12)


def test_two_class_cross_entropy_is_logistic_at_half_the_penalty() -> None:
    """Two-class softmax cross-entropy with ``lam`` is binary logistic regression with
    ``lam / 2`` on ``w = W_1 - W_2`` (docs: pitfall 3): the same estimator, the same test
    loss."""
    kw = dict(delta=0.4, means="antipodal", rho=[0.35, 0.65])
    ce = gm.solve(gm.Mixture.isotropic(labels="onehot", **kw), "cross-entropy", lam=0.5,
                  alpha=2.0, tol=1e-10)  # fmt: skip
    lg = gm.solve(gm.Mixture.isotropic(labels="binary", **kw), "logistic", lam=0.25,
                  alpha=2.0, tol=1e-10)  # fmt: skip
    bound = ce.integration_errors["test_loss"] + lg.integration_errors["test_loss"] + 1e-8
    assert abs(ce.test_loss - lg.test_loss) <= bound
    assert ce.test_error == pytest.approx(lg.test_error, abs=1e-8)


def test_two_class_one_hot_square_loss_has_half_the_scalar_test_loss() -> None:
    kw = dict(delta=[0.3, 0.6], means="antipodal", rho=[0.4, 0.6])
    onehot = gm.solve(gm.Mixture.isotropic(labels="onehot", **kw), "square", lam=0.2, alpha=2.0,
                      tol=1e-11)  # fmt: skip
    scalar = gm.solve(gm.Mixture.isotropic(labels="binary", **kw), "square", lam=0.2, alpha=2.0,
                      tol=1e-11)  # fmt: skip
    assert onehot.test_loss == pytest.approx(0.5 * scalar.test_loss, rel=1e-8)


@pytest.mark.parametrize(
    ("K", "lam", "fine"),
    [
        (2, 0.1, GradedPanels(128, 1, 12)),  # logistic, smooth: Gauss-Hermite 64
        (2, 1e-3, GradedPanels(128, 1, 12)),  # logistic, sharp: graded panels
        (3, 0.1, GradedPanels(64, 2, 8)),  # cross-entropy, 2-D graded panels
    ],
)
def test_test_loss_within_its_estimate_of_a_much_finer_rule(K: int, lam: float, fine) -> None:
    """The reported test loss against the same fixed point's test loss with a much finer
    rule: within the reported integration error (plus rounding)."""
    if K == 2:
        mix, loss = gm.Mixture.isotropic(0.5, "antipodal", labels="binary"), "logistic"
    else:
        mix, loss = gm.Mixture.isotropic(0.5, "simplex", n_clusters=3), "cross-entropy"
    r = gm.solve(mix, loss, lam=lam, alpha=2.0, tol=1e-10)
    assert r.success
    st = effective_state(r)
    p = st["problem"]
    risk = obs.gaussian_risk(p.loss, p.y, st["M"] + st["b"], st["Q"], fine)
    assert abs(float(mix.rho @ risk) - r.test_loss) <= r.integration_errors["test_loss"] + 1e-12
    # the result's integration_error summarises what the refinement controls, not this
    assert r.integration_error == max(r.integration_errors[k] for k in SUMMARY_ERROR_KEYS)


def test_exchangeable_reduction_gives_the_test_loss_of_the_full_solve() -> None:
    """K = 4 exchangeable clusters: cluster 0's risk (symmetry) against all four clusters'."""
    mix = gm.Mixture.isotropic(0.5, "simplex", n_clusters=4)
    sym = gm.solve(mix, "cross-entropy", lam=1.0, alpha=2.0, tol=1e-10)
    full = gm.solve(mix, "cross-entropy", lam=1.0, alpha=2.0, tol=1e-10, symmetry=False)
    bound = sym.integration_errors["test_loss"] + full.integration_errors["test_loss"] + 1e-8
    assert abs(sym.test_loss - full.test_loss) <= bound


def test_test_loss_is_in_every_result_and_curve() -> None:
    mix = _mix2()
    r = gm.solve(mix, "logistic", lam=0.3, alpha=1.5)
    assert r.to_dict()["test_loss"] == r.test_loss and "test_loss" in r.integration_errors
    assert r.to_frame()["test_loss"].iloc[0] == r.test_loss
    df = gm.learning_curve(mix, "logistic", [1.0, 1.5], lam=0.3)
    assert df["test_loss"].iloc[1] == pytest.approx(r.test_loss, rel=1e-6)


# ------------------------------------------------------------------------ the simulation
@pytest.mark.parametrize(
    ("loss", "mixture"),
    [
        ("square", _mix2),
        ("logistic", _mix2),
        ("hinge", _mix2),
        ("cross-entropy", lambda: gm.Mixture.isotropic(0.5, "simplex", n_clusters=3)),
    ],
)
def test_exact_test_loss_of_fitted_weights_against_fresh_samples(loss: str, mixture) -> None:
    """The exact population risk of a fitted ``(W, b)`` against its mean loss on 200 000
    fresh samples (within 4 standard errors of the Monte Carlo mean)."""
    mix = mixture()
    rng = np.random.default_rng(3)
    inst = realise(mix, 150, rng)
    X, cid = inst.sample(300, rng)
    W, b = fit_erm(X, mix.labels, cid, loss, "l2", 0.5)
    exact, _, err = exact_test_loss(inst, W, b, loss)
    assert err < 1e-8
    Xt, ct = inst.sample(200_000, rng, counts="random")
    h = Xt @ np.atleast_2d(W).T / np.sqrt(inst.d) + b
    vals = gm.get_loss(loss).value(mix.labels.labels[ct], h)
    se = vals.std(ddof=1) / np.sqrt(vals.size)
    assert abs(vals.mean() - exact) <= 4 * se, (vals.mean(), exact, se)


@pytest.mark.parametrize(
    ("loss", "mixture", "lam"),
    [
        ("square", _mix2, 0.1),
        ("logistic", _mix2, 0.1),
        pytest.param(
            "cross-entropy",
            lambda: gm.Mixture.isotropic(0.5, "simplex", n_clusters=3),
            0.5,
            marks=slow,
        ),
    ],
)
def test_simulated_test_loss_agrees_with_the_theory(loss: str, mixture, lam: float) -> None:
    """Exact ERM on ``seeds`` instances at d = 800: the mean test loss within 3 standard
    errors of the theory (the finite-size bias, O(1/d), is below one standard error
    here: measured at d = 400, 1.1, 0.9 and 1.1 standard errors)."""
    mix = mixture()
    theory = gm.solve(mix, loss, lam=lam, alpha=2.0, tol=1e-10)
    sim = simulate(mix, loss=loss, lam=lam, alpha=2.0, d=800, seeds=8, seed=1)
    mean, se = sim.mean["test_loss"], sim.se["test_loss"]
    assert se > 0 and abs(mean - theory.test_loss) <= 3 * se, (mean, se, theory.test_loss)
    assert sim.to_dict()["test_loss_se"] == se


# ------------------------------------------------------------------------ Fig. 4 left
def test_fig4_left_marks_the_optima_of_the_test_mse_its_note_states() -> None:
    """``lam_star_loss`` of fig4-left (the minimiser of the test loss, i.e. of the test
    mean-squared error) equals the ``lambda*`` of the note to the digits stated (half a unit
    of the last), is interior and grows with alpha; the classification error of the same
    curves has no interior optimum (``lam_star_at_upper_bound``)."""
    import re

    from gaussmix.figures import get_figure
    from gaussmix.figures.regularisation import fig4_left

    note = get_figure("fig4-left").differs
    m = re.search(r"lambda\* = ([0-9., ]+) at alpha = ([0-9., ]+)", note)
    assert m is not None, note
    stated = [s.strip() for s in m.group(1).split(",")]
    alphas = [float(a) for a in m.group(2).rstrip(" .").split(",")]
    df = fig4_left(alphas, fast=True, simulate=False)
    star = df.groupby("alpha")["lam_star_loss"].first()
    assert df.groupby("alpha")["lam_star_loss_interior"].first().all()
    assert np.all(np.diff(star.to_numpy()) > 0)
    for alpha, text in zip(alphas, stated):
        half_unit = 0.5 * 10.0 ** -len(text.split(".")[1])
        assert abs(star[alpha] - float(text)) <= half_unit, (alpha, star[alpha], text)
    assert df["lam_star_at_upper_bound"].all()
    # the column is the minimum of the theory's test loss on the curve and at the optimum
    for alpha, g in df.groupby("alpha"):
        best = float(g["lam_star_loss_test_loss"].iloc[0])
        assert best <= g["test_loss"].min()
        r = gm.solve(_fig4_mix(), "square", alpha=alpha,
                     lam=float(star[alpha]), tol=1e-10)  # fmt: skip
        assert r.test_loss == pytest.approx(best, rel=1e-9)


def _fig4_mix() -> gm.Mixture:
    return gm.Mixture.isotropic(delta=np.array([0.1, 0.01]), means="antipodal", labels="binary")


@pytest.mark.parametrize("K", [3, 5])
def test_compiled_cross_entropy_risk_equals_the_reference_path(K: int) -> None:
    """The compiled risk (the channel kernel's own loss value) against ``loss.value``."""
    from gaussmix.theory.api.api import make_problem
    from gaussmix.theory.numerics.quadrature import SobolRQMC

    p = make_problem(gm.Mixture.isotropic(0.5, "simplex", n_clusters=K), "cross-entropy",
                     lam=1.0, alpha=2.0)  # fmt: skip
    rng = np.random.default_rng(K)
    m, Q = rng.normal(size=(K, K - 1)), 3.0 * _psd(rng, K, K - 1)
    rule = SobolRQMC(K - 1, 8, 2, 0)
    fast = obs.gaussian_risk(p.loss, p.y, m, Q, rule)
    ref = obs.gaussian_risk(p.loss, p.y, m, Q, rule, compiled=False)
    np.testing.assert_allclose(fast, ref, rtol=1e-13)


def test_test_loss_is_a_column_of_sweeps_and_simulation_json() -> None:
    from gaussmix.sweep.tasks import simulation_keys, theory_keys

    assert "test_loss" in theory_keys()
    keys = simulation_keys()
    assert keys[keys.index("test_loss") + 1] == "test_loss_se"


def _dense_mixture() -> gm.Mixture:
    """Two classes fitted from data at d = 80 (general covariances, own units)."""
    rng = np.random.default_rng(0)
    X = np.concatenate([rng.normal(0.3, 1.0, (400, 80)), rng.normal(-0.3, 0.7, (400, 80))])
    return gm.Mixture.from_data(X, np.repeat([0, 1], 400), labels={0: 1, 1: -1})


@pytest.mark.parametrize(
    ("mixture", "loss", "kw", "d", "seeds"),
    [
        # dense covariances: theory and simulation at the mixture's own dimension
        (_dense_mixture, "logistic", {"lam": 0.5}, 80, 32),
        # covariances sharing eigenvectors, lasso (measured: 0.05 and -1.4 standard errors
        # at d = 800 and 1600 with 16 seeds)
        pytest.param(
            lambda: gm.Mixture.block([0.3, 0.7], [0.2, 1.0], labels="binary"),
            "square",
            {"lam": 0.1, "penalty": "l1"},
            800,
            16,
            marks=slow,
        ),
    ],
)
def test_simulated_test_loss_for_other_structures_and_penalties(mixture, loss, kw, d, seeds):
    mix = mixture()
    theory = gm.solve(mix, loss, alpha=2.0, tol=1e-10, **kw)
    sim = simulate(mix, loss=loss, alpha=2.0, d=d, seeds=seeds, seed=3, **kw)
    mean, se = sim.mean["test_loss"], sim.se["test_loss"]
    assert abs(mean - theory.test_loss) <= 3 * se, (mean, se, theory.test_loss)
