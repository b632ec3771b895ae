"""The lasso's zero estimator: past the point where every weight's ``P(|B| > t)`` underflows,
``W* = 0`` and the fixed point is the bias-only fit, for every loss.

Checked against closed forms of the bias-only classifier (not against the solver): the bias
solving ``sum_c rho_c E[grad loss(y_c, b)] = 0`` and the errors and losses of the constant
output ``b``; continuity of a sweep across the threshold; a finite-size ERM whose weights
are exactly zero.  (The soft threshold's tail moments, exactly zero past that point, are
tested in ``test_soft_threshold.py``.)
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import gaussmix as gm
from gaussmix import Mixture
from gaussmix.theory.channel.channel import channel_moments, identity_prox_moments
from gaussmix.theory.channel.losses import get_loss
from gaussmix.theory.prior.prior import _over_for
from gaussmix.theory.solve.iteration import IterationStatus
from gaussmix.theory.solve.state import is_valid_state, pack_state

#: far past the threshold: ``t / s > 38.5`` for every problem below (``s^2 ~ alpha``)
LAM = 100.0


def _bias_only_binary(loss: str, rho_plus: float) -> tuple[float, float, float]:
    """Bias, error and training loss of the constant output ``b`` fitted to labels +-1
    with frequencies ``(rho_plus, 1 - rho_plus)``, ``rho_plus > 1/2`` (closed forms)."""
    rp, rm = rho_plus, 1.0 - rho_plus
    if loss == "square":  # min 1/2 sum rho (y - b)^2: b = sum rho y
        b = rp - rm
        return b, rm, 0.5 * (rp * (1 - b) ** 2 + rm * (1 + b) ** 2)
    if loss == "logistic":  # sigmoid(b) = rho_plus
        return np.log(rp / rm), rm, -(rp * np.log(rp) + rm * np.log(rm))
    if loss == "hinge":  # rho_+ (1 - b)_+ + rho_- (1 + b)_+: least at the kink b = 1
        return 1.0, rm, 2.0 * rm
    raise ValueError(loss)


@pytest.mark.parametrize("loss", ["square", "logistic", "hinge"])
@pytest.mark.parametrize("penalty", ["l1", "elastic-net"])
def test_balanced_zero_estimator(loss, penalty):
    """Balanced antipodal means: ``b = 0`` and the errors 1/2 (ties shared), the training
    loss the loss at 0; every overlap exactly zero, no weight kept."""
    mix = Mixture.isotropic(1.0, "antipodal", labels="binary")
    kw = {"l1_ratio": 0.5} if penalty == "elastic-net" else {}
    r = gm.solve(mix, loss, alpha=0.5, lam=LAM, penalty=penalty, **kw)
    assert r.success
    assert r.nonzero_fraction == 0.0 and r.l1_norm == 0.0
    assert np.all(r.Q == 0.0) and np.all(r.M == 0.0) and np.all(r.V == 0.0)
    assert abs(r.b[0]) < 1e-15
    assert r.test_error == 0.5 and r.train_error == 0.5
    expected_loss = {"square": 0.5, "logistic": np.log(2.0), "hinge": 1.0}[loss]
    assert r.train_loss == pytest.approx(expected_loss, rel=1e-14)
    assert r.test_loss == pytest.approx(expected_loss, rel=1e-14)


@pytest.mark.parametrize("loss", ["square", "logistic", "hinge"])
@pytest.mark.parametrize(
    "mix",
    [
        Mixture.isotropic(1.0, "antipodal", labels="binary", rho=[0.7, 0.3]),
        Mixture.block([0.5, 0.5], [0.5, 2.0], rho=[0.7, 0.3]),
        Mixture.sparse(0.5, delta1=0.1, delta2=0.5, rho=[0.7, 0.3]),
        Mixture.spectral(
            np.linspace(0.5, 2.0, 40)[:, None].repeat(2, axis=1),
            np.outer(np.sin(np.arange(40.0)), [1.0, -1.0]),
            rho=[0.7, 0.3],
            labels="binary",
        ),
    ],
    ids=["isotropic", "block", "sparse", "spectral"],
)
def test_unbalanced_zero_estimator(loss, mix):
    """Unequal cluster weights: the bias of the constant fit, error ``min rho``, and its
    loss, on every mixture kind that takes the lasso (spectral laws: Gaussian mean
    components, and an empirical law of them)."""
    r = gm.solve(mix, loss, alpha=0.5, lam=LAM, penalty="l1")
    b, err, tl = _bias_only_binary(loss, 0.7)
    assert r.success and r.nonzero_fraction == 0.0
    assert r.b[0] == pytest.approx(b, rel=1e-9)
    assert r.test_error == pytest.approx(err, abs=1e-15)
    assert r.train_error == pytest.approx(err, abs=1e-15)
    assert r.train_loss == pytest.approx(tl, rel=1e-9)


@pytest.mark.parametrize("penalty", ["l1", "elastic-net"])
def test_cross_entropy_zero_estimator(penalty):
    """K = 3 cross-entropy with weights rho: the constant logits have softmax ``rho``; the
    error is ``1 - max rho`` and the training loss the entropy of ``rho``."""
    rho = np.array([0.5, 0.3, 0.2])
    mix = Mixture.isotropic(1.0, "simplex", n_clusters=3, rho=rho)
    kw = {"l1_ratio": 0.5} if penalty == "elastic-net" else {}
    r = gm.solve(mix, "cross-entropy", alpha=0.5, lam=LAM, penalty=penalty, **kw)
    assert r.success and r.nonzero_fraction == 0.0
    assert np.all(r.Q == 0.0) and np.all(r.V == 0.0)
    p = np.exp(r.b - r.b.max())
    np.testing.assert_allclose(p / p.sum(), rho, rtol=1e-9)
    assert r.test_error == pytest.approx(0.5, abs=1e-15)
    assert r.train_error == pytest.approx(0.5, abs=1e-15)
    assert r.train_loss == pytest.approx(-(rho @ np.log(rho)), rel=1e-9)


def test_sweep_continuous_across_threshold():
    """A logistic lasso sweep up to and past the threshold is finite everywhere, its test
    error rises to the bias-only 1/2 and its non-zero fraction falls to exactly 0."""
    mix = Mixture.isotropic(1.0, "antipodal", labels="binary")
    lams = np.logspace(-2, 2, 9)
    with warnings.catch_warnings():
        warnings.simplefilter("error", gm.ConvergenceWarning)
        t = gm.lambda_sweep(mix, "logistic", lams, alpha=0.5, penalty="l1")
    err = t["test_error"].to_numpy()
    nz = t["nonzero_fraction"].to_numpy()
    assert np.all(np.isfinite(err)) and np.all(np.isfinite(t["train_loss"].to_numpy()))
    # past the minimum of the curve the error climbs to 1/2 and stays there
    k = int(np.argmin(err))
    assert np.all(np.diff(err[k:]) >= -1e-12)
    assert np.all(np.diff(nz) <= 0.0)
    assert nz[-1] == 0.0 and err[-1] == 0.5
    # the last point still with weights is within its non-zero fraction of 1/2
    assert 0.5 - err[-2] <= 10 * np.sqrt(nz[-2]) + 1e-12


@pytest.mark.parametrize("loss", ["square", "logistic"])
def test_issue_sweep_finite(loss):
    """The issue's sweep (logistic was NaN from lam = 31.6, square from about 100): finite
    at every point, the bias-only answer where no weight is left."""
    mix = Mixture.isotropic(1.0, "antipodal", labels="binary")
    lams = np.logspace(-2, 1.5, 8)
    with warnings.catch_warnings():
        warnings.simplefilter("error", gm.ConvergenceWarning)
        t = gm.lambda_sweep(mix, loss, lams, alpha=0.5, penalty="l1")
    for col in ("test_error", "train_error", "train_loss", "nonzero_fraction"):
        assert np.all(np.isfinite(t[col].to_numpy())), col
    assert t["test_error"].iloc[-1] == 0.5 and t["train_error"].iloc[-1] == 0.5


def test_over_for_divides_where_every_curvature_and_square_is_positive():
    """Plain division exactly where ``min(a) > 0`` and ``min(a**2) > 0`` (a curvature whose
    square underflows, a zero or a NaN: the guarded quotient)."""
    for a, plain in (
        ([0.5, 2.0], True),
        ([1e-150, 3.0], True),
        ([1e-170, 3.0], False),
        ([0.0, 1.0], False),
        ([np.nan, 1.0], False),
        ([-1.0, 1.0], False),
    ):
        a = np.array(a)
        assert (a.min() > 0.0 and (a**2).min() > 0.0) == plain
        assert (_over_for(a) is np.divide) == plain


@pytest.mark.parametrize("loss", ["logistic", "hinge"])
def test_channel_at_zero_metric_is_the_limit(loss):
    """The channel at ``V = 0`` is the limit of the channel at small ``V`` (``Q`` fixed):
    ``f = -grad loss(omega)``, the Moreau envelope the loss."""
    L = get_loss(loss)
    y = np.array([[1.0], [-1.0]])
    M, b = np.array([[0.3], [-0.2]]), np.array([0.1])
    Q = np.full((2, 1, 1), 0.4)
    rule = gm.theory.numerics.quadrature.auto_rule(1, smooth=False) if loss != "hinge" else None
    zero = channel_moments(L, y, M, b, Q, np.zeros((2, 1, 1)), rule)
    small = channel_moments(L, y, M, b, Q, np.full((2, 1, 1), 1e-7), rule)
    for name in ("Ef", "Eff", "Edf", "Eloss", "Eenv"):
        np.testing.assert_allclose(getattr(zero, name), getattr(small, name), rtol=2e-6)
    if loss == "logistic":
        direct = identity_prox_moments(L, y, M + b, Q, rule)
        np.testing.assert_array_equal(direct.Ef, zero.Ef)


def test_zero_estimator_state_is_valid_only_with_zero_q():
    """``V_c = 0`` is valid with ``Q_c = 0`` (no weight), not with ``Q_c > 0``."""
    Z = np.zeros((2, 1, 1))
    assert is_valid_state(pack_state(Z, np.zeros((2, 1)), Z, np.zeros(1)), 2, 1)
    Q = np.full((2, 1, 1), 0.1)
    assert not is_valid_state(pack_state(Q, np.zeros((2, 1)), Z, np.zeros(1)), 2, 1)
    assert not is_valid_state(pack_state(Z, np.zeros((2, 1)), -Q, np.zeros(1)), 2, 1)


@pytest.mark.slow
def test_simulation_keeps_no_weight():
    """Finite-size lasso ERM (d = 400, weights 0.7 / 0.3) at lam = 31.6: every weight zero,
    so ``Q = M = 0``, the bias the labels' mean and the errors those of the theory's
    bias-only fit (``min rho = 0.3``)."""
    mix = Mixture.isotropic(1.0, "antipodal", labels="binary", rho=[0.7, 0.3])
    lam = 10**1.5
    theory = gm.solve(mix, "square", alpha=0.5, lam=lam, penalty="l1")
    sim = gm.simulate(mix, loss="square", lam=lam, alpha=0.5, d=400, seeds=2, penalty="l1")
    assert theory.nonzero_fraction == 0.0
    assert sim.mean["nonzero_fraction"] == 0.0
    assert np.all(sim.Q == 0.0) and np.all(sim.M == 0.0)
    assert sim.b[0] == pytest.approx(theory.b[0], abs=1e-9)
    assert sim.mean["test_error"] == pytest.approx(theory.test_error, abs=1e-12)
    assert sim.mean["train_error"] == pytest.approx(theory.train_error, abs=1e-12)


def test_hinge_lasso_without_curvature_is_named():
    """Hinge + pure lasso between the decline and the underflow: the cold start is a state
    where the hinge has no curvature while weights remain, and the direct iteration says
    so (not an anonymous NaN): the named :class:`gaussmix.UnboundedWeightsError`, a
    :class:`gaussmix.ConvergenceError`; the solve's homotopy in alpha then reaches the fixed
    point next to the zero estimator (test error 0.5 to 1e-9, weights on a fraction below
    1e-20 of the coordinates)."""
    mix = Mixture.isotropic(1.0, "antipodal", labels="binary")
    with pytest.raises(gm.UnboundedWeightsError, match="lasso's weights are unbounded") as exc:
        gm.solve(mix, "hinge", alpha=0.5, lam=10.0, penalty="l1", fallback=False)
    assert isinstance(exc.value, gm.ConvergenceError)
    assert exc.value.result.status is IterationStatus.UNBOUNDED_WEIGHTS
    assert not exc.value.result.success
    res = gm.solve(mix, "hinge", alpha=0.5, lam=10.0, penalty="l1")
    assert res.success and res.params["fallback"].startswith("alpha homotopy")
    assert res.test_error == pytest.approx(0.5, abs=1e-9)
    assert 0.0 < res.nonzero_fraction < 1e-20


def test_a_tiny_overlap_rounded_below_the_cone_is_projected_not_refused():
    """K = 3 square + lasso near its zero estimator (the explorer's state lam = 3.23, unequal
    priors): the fixed points have ``Q_c ~ 1e-19 .. 1e-12`` whose smallest eigenvalue is
    negative by 1e-10 .. 1e-8 of the largest (the prior's tail integrals' absolute error),
    which the orthants refused (a ConvergenceError, "cov must be positive semi-definite").
    Within the state's own PSD test the overlap is projected onto the cone: the errors are
    the majority-class classifier's (the bias alone, 1 - max rho) to the width of the fields."""
    from gaussmix.theory.numerics.orthant import PSD_CHECK_RTOL
    from gaussmix.theory.numerics.tolerances import PSD_RTOL
    from gaussmix.theory.solve.observables import _within_state_psd

    rho = [0.7332, 0.1115, 0.1553]
    mix = Mixture.isotropic(0.2064, "gaussian", n_clusters=3, rho=rho)
    for alpha in (1.2725, 1.7):
        r = gm.solve(mix, "square", lam=3.23, alpha=alpha, penalty="l1")
        width = float(np.sqrt(np.abs(r.Q).max()))  # the fields' spread about their means
        assert width < 1e-5
        assert abs(r.test_error - (1 - max(rho))) <= 1e-12 + 10 * width
        assert abs(r.train_error - (1 - max(rho))) <= 1e-12 + 10 * width

    # the projection itself: moves a rounded-below overlap by no more than its eigenvalue
    rng = np.random.default_rng(0)
    U = np.linalg.qr(rng.standard_normal((3, 3)))[0]
    Q = (U * np.array([5.9e-19, 2e-20, -1.5e-28])) @ U.T
    Q = 0.5 * (Q + Q.T)[None]
    P = _within_state_psd(Q)
    assert np.linalg.eigvalsh(P[0]).min() >= -PSD_CHECK_RTOL * 5.9e-19
    assert np.abs(P - Q).max() <= 2e-28
    # an overlap the orthants accept is returned as it is, and an indefinite one too
    fine = np.eye(3)[None] * 0.3
    assert _within_state_psd(fine) is fine
    bad = (U * np.array([1.0, 0.5, -10 * PSD_RTOL])) @ U.T
    assert np.array_equal(_within_state_psd(bad[None]), bad[None])
