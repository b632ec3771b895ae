"""Lasso and elastic-net penalties (Appendix C.2) on spectral binary mixtures, the correlated
sparse mixture eq. (12), the sparsity observables of W*, and the optimal penalty.

The closed forms of :mod:`gaussmix.theory.prior.prior` are checked against direct quadrature of the
soft-threshold proximal map, the elastic net against its ridge and lasso limits, and the
fixed point against the free-energy identities of the core engine."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from _helpers import check_free_energy, gauss_expect, soft

import gaussmix as gm
from gaussmix.core.exceptions import IntegrationWarning
from gaussmix.experiments.curves import d_test_error_d_lambda, optimal_lambda, optimal_lambda_curve
from gaussmix.theory.model.covariance import SpectralLaw
from gaussmix.theory.model.labels import LabelMap
from gaussmix.theory.model.mixture import Mixture
from gaussmix.theory.numerics.tolerances import integration_warning_threshold
from gaussmix.theory.prior.prior import elastic_net_prior, ridge_prior


def _point_expectations(m, s, t, a):
    """E over ``B ~ N(m, s^2)`` of ``w^2, w, |w|, xi w, min-value, 1{w != 0}`` for the prox
    ``w = soft(B, t) / a`` (``xi = (B - m) / s``)."""

    def w_of(b):
        return soft(b, t) / a

    return (
        gauss_expect(lambda b: w_of(b) ** 2, m, s, t),
        gauss_expect(w_of, m, s, t),
        gauss_expect(lambda b: np.abs(w_of(b)), m, s, t),
        gauss_expect(lambda b: (b - m) / s * w_of(b), m, s, t),
        gauss_expect(lambda b: t * np.abs(w_of(b)) + a * w_of(b) ** 2 / 2 - b * w_of(b), m, s, t),
        gauss_expect(lambda b: (np.abs(b) > t).astype(float), m, s, t),
    )


def _direct_prior(mix: Mixture, lam, rho1, Qhat, Mhat, Vhat):
    """The elastic-net prior by direct quadrature over (mean component, xi) of the
    soft-threshold prox ``w = soft(B, lam rho1) / a`` — no closed form and no Stein lemma:
    ``V_k = E[sigma^k w xi] / sqrt(c)`` (Gaussian integration by parts is the definition of
    the derivative average), ``M_k = E[mu^k w]`` integrated directly."""
    qh, mh, vh = Qhat[:, 0, 0], Mhat[:, 0], Vhat[:, 0, 0]
    t = lam * rho1
    out = {k: np.zeros(2) for k in ("Q", "M", "V")}
    out.update({k: 0.0 for k in ("psi", "pen", "nz", "l1")})
    for j, wj in enumerate(mix.weights):
        sig = mix.sigma[j]
        a = sig @ vh + lam * (1 - rho1)
        c = sig @ qh
        if mix.mu is not None:
            zw, dirs = np.array([1.0]), mix.mu[j][None, :]
        else:
            ev, U = np.linalg.eigh(mix.theta[j])
            keep = ev > 1e-12
            assert keep.sum() <= 1, "the reference handles rank <= 1 mean laws"
            if keep.sum() == 0:
                zw, dirs = np.array([1.0]), np.zeros((1, 2))
            else:
                u = U[:, keep][:, 0] * np.sqrt(ev[keep][0])  # mu = z u, z ~ N(0, 1)
                zs, zw = np.polynomial.hermite_e.hermegauss(80)
                zw = zw / zw.sum()
                dirs = zs[:, None] * u[None, :]
        for mu, wz in zip(dirs, zw):
            m = float(mu @ mh)
            s = float(np.sqrt(c))
            Ew2, Ew, Eabs, Exiw, Emin, Enz = _point_expectations(m, s, t, a)
            f = wj * wz
            out["Q"] += f * sig * Ew2
            out["M"] += f * mu * Ew
            out["V"] += f * sig * Exiw / s
            out["psi"] += f * Emin
            out["pen"] += f * (rho1 * Eabs + (1 - rho1) * Ew2 / 2)
            out["l1"] += f * Eabs
            out["nz"] += f * Enz
    return out


def _hats(seed=0):
    rng = np.random.default_rng(seed)
    Qhat = rng.uniform(0.2, 1.5, size=(2, 1, 1))
    Mhat = np.array([[rng.uniform(0.2, 1.0)], [-rng.uniform(0.2, 1.0)]])
    Vhat = rng.uniform(0.2, 1.5, size=(2, 1, 1))
    return Qhat, Mhat, Vhat


def _asymmetric_gaussian_mixture():
    """Three atoms, cluster-dependent eigenvalues, Gaussian (rank-one) mean laws."""
    th = np.array([[1.0, -0.8], [-0.8, 0.64]])
    return Mixture(
        rho=np.array([0.35, 0.65]),
        labels=LabelMap.binary(),
        covariance=SpectralLaw(
            weights=np.array([0.2, 0.3, 0.5]),
            sigma=np.array([[0.1, 0.3], [0.6, 0.4], [1.5, 1.0]]),
            theta=np.stack([th, 2.0 * th, np.zeros((2, 2))]),
        ),
    )


def _empirical_mixture():
    rng = np.random.default_rng(7)
    J = 5
    mu = rng.standard_normal((J, 2))
    mu[-1] = 0.0
    return Mixture(
        rho=np.array([0.4, 0.6]),
        labels=LabelMap.binary(),
        covariance=SpectralLaw(
            weights=np.full(J, 1.0 / J),
            sigma=rng.uniform(0.2, 1.5, size=(J, 2)),
            theta=mu[:, :, None] * mu[:, None, :],
            mu=mu,
        ),
    )


PRIOR_MIXTURES = {
    "sparse": lambda: Mixture.sparse(0.3, 0.2, 1.3),
    "asymmetric-gaussian": _asymmetric_gaussian_mixture,
    "empirical": _empirical_mixture,
}


@pytest.mark.parametrize("name", list(PRIOR_MIXTURES))
@pytest.mark.parametrize("lam,rho1", [(0.4, 1.0), (0.25, 0.5), (1.5, 1.0), (0.3, 0.0)])
def test_elastic_net_prior_matches_direct_quadrature(name, lam, rho1):
    mix = PRIOR_MIXTURES[name]()
    Qhat, Mhat, Vhat = _hats(1)
    pr = elastic_net_prior(mix, lam, rho1, Qhat, Mhat, Vhat)
    ref = _direct_prior(mix, lam, rho1, Qhat, Mhat, Vhat)
    tol = dict(rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(pr.Q[:, 0, 0], ref["Q"], **tol)
    np.testing.assert_allclose(pr.M[:, 0], ref["M"], **tol)
    np.testing.assert_allclose(pr.V[:, 0, 0], ref["V"], **tol)
    np.testing.assert_allclose(pr.psi_w, ref["psi"], **tol)
    np.testing.assert_allclose(pr.penalty, ref["pen"], **tol)
    np.testing.assert_allclose(pr.l1_norm, ref["l1"], **tol)
    np.testing.assert_allclose(mix.weights @ pr.atom_nonzero, ref["nz"], **tol)


@pytest.mark.parametrize("name", list(PRIOR_MIXTURES))
def test_elastic_net_at_zero_l1_ratio_is_the_ridge_prior(name):
    mix = PRIOR_MIXTURES[name]()
    Qhat, Mhat, Vhat = _hats(2)
    en = elastic_net_prior(mix, 0.3, 0.0, Qhat, Mhat, Vhat)
    rg = ridge_prior(mix, 0.3, Qhat, Mhat, Vhat, details=True)
    for key in ("Q", "M", "V", "psi_w", "penalty", "l1_norm"):
        np.testing.assert_allclose(getattr(en, key), getattr(rg, key), rtol=1e-13, atol=1e-15)
    np.testing.assert_array_equal(en.atom_nonzero, 1.0)
    # and continuously so
    near = elastic_net_prior(mix, 0.3, 1e-9, Qhat, Mhat, Vhat)
    np.testing.assert_allclose(near.Q, rg.Q, rtol=1e-7)


@pytest.mark.parametrize("loss", ["square", "logistic", "hinge"])
def test_elastic_net_limits_of_the_fixed_point(loss):
    mix = gm.Mixture.sparse(0.2, 0.3, 1.0, rho=[0.4, 0.6])
    kw = dict(lam=0.2, alpha=1.3, tol=1e-12)
    ridge = gm.solve(mix, loss, **kw)
    en0 = gm.solve(mix, loss, penalty="elastic-net", l1_ratio=0.0, **kw)
    lasso = gm.solve(mix, loss, penalty="l1", **kw)
    en1 = gm.solve(mix, loss, penalty="elastic-net", l1_ratio=1.0, **kw)
    for key in ("Q", "M", "V", "b", "test_error", "train_error", "train_loss", "free_energy"):
        np.testing.assert_allclose(getattr(en0, key), getattr(ridge, key), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(getattr(en1, key), getattr(lasso, key), rtol=0, atol=0)
    assert ridge.nonzero_fraction == 1.0 and en0.nonzero_fraction == 1.0
    assert 0.0 < lasso.nonzero_fraction < 1.0
    # a genuine mixture lies in between (here: the test error is monotone in l1_ratio)
    mid = gm.solve(mix, loss, penalty="elastic-net", l1_ratio=0.5, **kw)
    assert lasso.nonzero_fraction < mid.nonzero_fraction < 1.0


# ----------------------------------------------------------------------------- fixed point

FE_CASES = [
    (loss, pen, r1, mix)
    for loss in ("square", "logistic", "hinge")
    for pen, r1 in (("l1", None), ("elastic-net", 0.4))
    for mix in ("sparse", "asymmetric")
]


def _fe_mixture(kind):
    if kind == "sparse":
        return gm.Mixture.sparse(0.1, 0.1, 1.0)
    return _asymmetric_gaussian_mixture()


@pytest.mark.parametrize("loss,penalty,l1_ratio,kind", FE_CASES)
def test_free_energy_is_stationary_and_equals_the_minimal_risk(loss, penalty, l1_ratio, kind):
    mix = _fe_mixture(kind)
    lam, alpha = 0.15, 1.4
    res = gm.solve(
        mix,
        loss,
        lam=lam,
        alpha=alpha,
        penalty=penalty,
        l1_ratio=l1_ratio,
        tol=1e-13,
        estimate_error=False,
    )
    assert 0.0 < res.nonzero_fraction < 1.0
    # the hats are small here (V is large): a small step keeps the O(eps^2) truncation error
    # of the central difference (third derivatives ~ 1/Vhat^4) below the tolerance
    worst = check_free_energy(res, lam=lam, alpha=alpha, eps=1e-6)
    assert worst < 1e-7, worst


def test_lasso_penalty_value_is_the_l1_norm_and_ridge_l1_norm_is_folded_normal():
    mix = gm.Mixture.sparse(0.1, 0.1, 1.0)
    r = gm.solve(mix, "square", lam=0.3, alpha=1.0, penalty="l1")
    np.testing.assert_allclose(r.penalty_value, r.l1_norm, rtol=1e-12)
    iso = gm.Mixture.isotropic(0.7, "antipodal", labels="binary")
    r = gm.solve(iso, "logistic", lam=0.3, alpha=1.0)
    # one atom, Gaussian means: w ~ N(0, Q / Delta), E|w| = sqrt(2/pi) sqrt(Q / Delta)
    np.testing.assert_allclose(r.l1_norm, np.sqrt(2 / np.pi * r.Q[0, 0, 0] / 0.7), rtol=1e-10)
    assert r.nonzero_fraction == 1.0


def test_sparsity_observables_are_consistent():
    mix = gm.Mixture.sparse(0.1, 0.1, 1.0)
    r = gm.solve(mix, "logistic", lam=0.1, alpha=1.0, penalty="l1")
    on, off = r.nonzero_fraction_support, r.nonzero_fraction_off_support
    np.testing.assert_allclose(0.1 * on + 0.9 * off, r.nonzero_fraction, rtol=1e-12)
    assert 0 < on < 1 and 0 < off < 1
    d = r.to_dict()
    assert d["nonzero_fraction"] == pytest.approx(r.nonzero_fraction)
    s = r.summary()
    for key in ("nonzero_fraction", "nonzero_fraction_support", "l1_norm"):
        assert key in s
    # one atom: no off-support directions
    one = gm.solve(gm.Mixture.sparse(1.0, 0.5, 1.0), "square", lam=0.1, alpha=1.0, penalty="l1")
    assert np.isnan(one.nonzero_fraction_off_support)
    assert one.nonzero_fraction_support == one.nonzero_fraction
    # ridge: the JSON contract has the key, weights are non-zero almost surely
    assert gm.solve(mix, "square", lam=0.1, alpha=1.0).to_dict()["nonzero_fraction"] == 1.0


def test_basis_pursuit_limit_has_alpha_d_nonzero_weights():
    """Square loss, lasso, alpha < 1, lambda -> 0+: the minimum-l1 interpolator has n
    non-zero components (generic position), i.e. a non-zero fraction alpha."""
    mix = gm.Mixture.sparse(0.1, 0.1, 1.0)
    for alpha in (0.3, 0.6):
        r = gm.solve(mix, "square", lam=1e-6, alpha=alpha, penalty="l1")
        np.testing.assert_allclose(r.nonzero_fraction, alpha, atol=1e-4)
        assert r.train_loss < 1e-9


def test_spectral_representations_agree_for_the_lasso():
    """The sparse model, the same law with its support atom split in two, the isotropic
    one-atom case, and an empirical spectral law on Gauss-Hermite nodes of the Gaussian
    mean components (weights = GH weights) all give the same fixed point."""
    kw = dict(lam=0.1, alpha=1.5, penalty="l1", tol=1e-13)
    sp = gm.Mixture.sparse(0.3, 0.2, 0.9)
    anti = np.array([[1.0, -1.0], [-1.0, 1.0]])
    split = Mixture(
        rho=np.full(2, 0.5),
        labels=LabelMap.binary(),
        covariance=SpectralLaw(
            weights=np.array([0.1, 0.2, 0.7]),
            sigma=np.array([[0.2, 0.2], [0.2, 0.2], [0.9, 0.9]]),
            theta=np.stack([anti, anti, np.zeros((2, 2))]),
        ),
    )
    z, wz = np.polynomial.hermite_e.hermegauss(60)
    wz = wz / wz.sum()
    mu = np.concatenate([np.stack([z, -z], axis=1), np.zeros((1, 2))])
    emp = Mixture(
        rho=np.full(2, 0.5),
        labels=LabelMap.binary(),
        covariance=SpectralLaw(
            weights=np.concatenate([0.3 * wz, [0.7]]),
            sigma=np.concatenate([np.full((60, 2), 0.2), [[0.9, 0.9]]]),
            theta=mu[:, :, None] * mu[:, None, :],
            mu=mu,
        ),
    )
    for loss in ("square", "logistic"):
        ref = gm.solve(sp, loss, **kw)
        for other in (split, emp):
            r = gm.solve(other, loss, **kw)
            np.testing.assert_allclose(r.Q, ref.Q, rtol=1e-9)
            np.testing.assert_allclose(r.M, ref.M, rtol=1e-9)
            np.testing.assert_allclose(r.V, ref.V, rtol=1e-9)
            for key in ("test_error", "train_loss", "nonzero_fraction", "l1_norm"):
                np.testing.assert_allclose(getattr(r, key), getattr(ref, key), rtol=1e-9)
    iso = gm.Mixture.isotropic(0.4, "antipodal", labels="binary")
    one = gm.Mixture.sparse(1.0, 0.4, 5.0)
    a = gm.solve(iso, "logistic", **kw)
    b = gm.solve(one, "logistic", **kw)
    np.testing.assert_allclose(b.Q, a.Q, rtol=1e-12)
    np.testing.assert_allclose(b.test_error, a.test_error, rtol=1e-12)


# ----------------------------------------------------------------------------- the sparse model


def test_sparse_mixture_layout():
    mix = gm.Mixture.sparse(0.1, 0.2, 3.0)
    assert mix.kind == "sparse" and mix.n_atoms == 2 and mix.labels.is_binary
    np.testing.assert_allclose(mix.weights, [0.1, 0.9])
    np.testing.assert_allclose(mix.sigma, [[0.2, 0.2], [3.0, 3.0]])
    np.testing.assert_allclose(mix.gram, 0.1 * np.array([[1.0, -1.0], [-1.0, 1.0]]))
    np.testing.assert_array_equal(mix.support, [True, False])
    assert mix.describe()["sparsity"] == 0.1
    one = gm.Mixture.sparse(1.0, 0.2, 3.0)
    assert one.n_atoms == 1
    np.testing.assert_allclose(gm.Mixture.sparse(0.5, 1, 1, rho=[0.3, 0.7]).rho, [0.3, 0.7])


def test_sparse_mixture_realises_its_law():
    from gaussmix.simulate.simulation import realise

    inst = realise(gm.Mixture.sparse(0.1, 0.2, 3.0), 1000, np.random.default_rng(0))
    on = inst.variances[0] == 0.2
    assert on.sum() == 100
    np.testing.assert_allclose(inst.means[0], -inst.means[1])
    np.testing.assert_allclose(inst.means[0][~on], 0.0)
    np.testing.assert_allclose(inst.means[0] @ inst.means[0], 0.1, rtol=1e-12)


# ----------------------------------------------------------------------------- optimal lambda


@pytest.mark.parametrize(
    "loss,penalty,alpha",
    [("square", "l1", 1.0), ("square", "l2", 0.5), ("logistic", "l1", 1.5)],
)
def test_optimal_lambda_agrees_with_dense_grid(loss, penalty, alpha):
    mix = gm.Mixture.sparse(0.1, 0.1, 1.0)
    opt = optimal_lambda(mix, loss, alpha=alpha, penalty=penalty)
    assert not opt.at_boundary and not opt.at_upper_bound
    assert opt.lam_star > 0 and opt.result.success
    # a dense grid over the whole range: its argmin is within one grid step of lambda*
    lams = np.geomspace(1e-4, 10.0, 161)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", IntegrationWarning)
        df = gm.lambda_sweep(mix, loss, lams, alpha=alpha, penalty=penalty, tol=1e-10)
    # the grid's IntegrationWarnings (logistic-l1 only: the channel rule's estimate of about
    # 3e-5 at the rule cap) concern lambdas two decades and more below lambda*, whose
    # estimates say so in the table; nothing near the optimum warns
    warned = df.integration_error > integration_warning_threshold(1e-10)
    assert len(caught) == warned.sum()
    assert (df.lam[warned] < opt.lam_star / 100).all()
    k = int(np.nanargmin(df.test_error))
    assert not warned[k]
    step = np.log(lams[1] / lams[0])
    assert abs(np.log(opt.lam_star / lams[k])) <= step, (opt.lam_star, lams[k])
    assert opt.test_error <= df.test_error[k] + 1e-8
    # and a fine grid around lambda*
    fine = np.exp(np.log(opt.lam_star) + np.linspace(-0.05, 0.05, 21))
    df2 = gm.lambda_sweep(mix, loss, fine, alpha=alpha, penalty=penalty, tol=1e-10)
    assert opt.test_error <= df2.test_error.min() + 1e-8
    # d eps_g / d lambda vanishes at an interior optimum
    assert abs(opt.derivative) * opt.lam_star < 1e-4
    ev = opt.evaluations
    assert set(ev.stage) >= {"grid", "refine", "final"}
    assert len(ev) == opt.n_evaluations


def test_basis_pursuit_optimum_is_reported_as_the_boundary():
    """Fig. 1 of the paper: for Delta1/Delta2 = 0.1 and small alpha the optimal lasso is
    basis pursuit (lambda -> 0+); for Delta1/Delta2 = 1 the optimum is interior."""
    weak = gm.Mixture.sparse(0.1, 0.1, 1.0)
    opt = optimal_lambda(weak, "square", alpha=0.2, penalty="l1")
    assert opt.at_boundary and opt.lam_star == 0.0
    assert opt.lam_min < 1e-5  # not the grid edge: the search went below it
    assert "0+" in opt.message
    ev = opt.evaluations[opt.evaluations.converged]
    assert opt.test_error <= ev.test_error.min() + 1e-9
    assert (ev.sort_values("lam").test_error.diff().dropna() >= -1e-9).all()  # monotone
    assert opt.derivative > 0
    np.testing.assert_allclose(opt.result.nonzero_fraction, 0.2, atol=1e-3)
    flat = gm.Mixture.sparse(0.1, 0.1, 0.1)
    opt = optimal_lambda(flat, "square", alpha=0.2, penalty="l1")
    assert not opt.at_boundary and opt.lam_star > 1e-2


def test_upper_boundary_is_reported_as_infinity():
    """Balanced isotropic mixture: ridge is best as lambda -> infinity (the mean / Hebbian
    estimator, whose direction is that of the Bayes-optimal classifier)."""
    iso = gm.Mixture.isotropic(0.5, "antipodal", labels="binary")
    opt = optimal_lambda(iso, "square", alpha=0.5)
    assert opt.at_upper_bound and not opt.at_boundary and opt.lam_star == np.inf
    assert opt.lam_max > 1e2
    ev = opt.evaluations[opt.evaluations.converged]
    assert opt.test_error <= ev.test_error.min() + 1e-9


def test_curves_take_the_elastic_net():
    mix = gm.Mixture.sparse(0.1, 0.1, 1.0)
    df = gm.learning_curve(mix, "square", [0.5, 1.0], lam=0.1, penalty="elastic-net", l1_ratio=0.5)
    one = gm.solve(mix, "square", lam=0.1, alpha=1.0, penalty="elastic-net", l1_ratio=0.5)
    np.testing.assert_allclose(df.test_error[1], one.test_error, atol=1e-9)
    np.testing.assert_allclose(df.nonzero_fraction[1], one.nonzero_fraction, atol=1e-9)
    sw = gm.lambda_sweep(mix, "logistic", [0.3, 0.1], alpha=1.0, penalty="l1")
    assert (sw.nonzero_fraction < 1).all() and "l1_norm" in sw.columns


def test_optimal_lambda_curve_table():
    mix = gm.Mixture.sparse(0.1, 0.1, 1.0)
    df = optimal_lambda_curve(mix, "square", [0.2, 0.5, 1.0], penalty="l1")
    res = df.points
    assert isinstance(df, pd.DataFrame) and len(res) == 3
    assert all(isinstance(r, gm.OptimalLambdaResult) for r in res)
    assert df["lam_star"].tolist() == [r.lam_star for r in res]
    # the deprecated flag still returns the pair, with a warning naming the replacement
    with pytest.warns(FutureWarning, match=r"\.points"):
        df2, res2 = optimal_lambda_curve(
            mix, "square", [0.2, 0.5, 1.0], penalty="l1", return_results=True
        )
    assert [r.lam_star for r in res2] == [r.lam_star for r in res]
    pd.testing.assert_frame_equal(df2.to_frame(), df.to_frame())
    for col in (
        "alpha",
        "lam_star",
        "at_boundary",
        "test_error",
        "train_loss",
        "nonzero_fraction",
    ):
        assert col in df.columns
    assert bool(df.at_boundary[0]) and df.lam_star[0] == 0.0
    assert not df.at_boundary[2]
    one = optimal_lambda(mix, "square", alpha=1.0, penalty="l1")
    np.testing.assert_allclose(df.lam_star[2], one.lam_star, rtol=1e-2)
    np.testing.assert_allclose(df.test_error[2], one.test_error, atol=1e-9)


@pytest.mark.parametrize("loss", ["square", "logistic"])
@pytest.mark.parametrize("penalty", ["l1", "l2"])
def test_implicit_derivative_matches_finite_differences(loss, penalty):
    mix = gm.Mixture.sparse(0.1, 0.1, 1.0)
    lam, alpha = 0.2, 1.2
    kw = dict(alpha=alpha, penalty=penalty, tol=1e-13, estimate_error=False)
    r = gm.solve(mix, loss, lam=lam, **kw)
    h = 1e-4 * lam
    fd = (
        gm.solve(mix, loss, lam=lam + h, **kw).test_error
        - gm.solve(mix, loss, lam=lam - h, **kw).test_error
    ) / (2 * h)
    np.testing.assert_allclose(d_test_error_d_lambda(r), fd, rtol=1e-5)


# ----------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("sparsity", [0.0, -0.1, 1.5, np.nan])
def test_sparsity_outside_the_unit_interval_is_rejected(sparsity):
    with pytest.raises(ValueError, match="sparsity"):
        gm.Mixture.sparse(sparsity, 0.1, 1.0)


def test_bad_variances_are_rejected():
    with pytest.raises(ValueError, match="delta1"):
        gm.Mixture.sparse(0.1, 0.0, 1.0)
    with pytest.raises(ValueError, match="delta2"):
        gm.Mixture.sparse(0.1, 1.0, -1.0)


@pytest.mark.parametrize("l1_ratio", [-0.1, 1.5, np.inf])
def test_l1_ratio_outside_the_unit_interval_is_rejected(l1_ratio):
    mix = gm.Mixture.sparse(0.1, 0.1, 1.0)
    with pytest.raises(ValueError, match="l1_ratio"):
        gm.solve(mix, "square", lam=0.1, alpha=1.0, penalty="elastic-net", l1_ratio=l1_ratio)


def test_penalty_arguments_are_checked():
    mix = gm.Mixture.sparse(0.1, 0.1, 1.0)
    with pytest.raises(ValueError, match="l1_ratio is required with penalty=.elastic-net."):
        gm.solve(mix, "square", lam=0.1, alpha=1.0, penalty="elastic-net")
    with pytest.raises(ValueError, match="contradicts penalty='l2'"):
        gm.solve(mix, "square", lam=0.1, alpha=1.0, l1_ratio=0.5)
    with pytest.raises(ValueError, match="contradicts penalty='l1'"):
        gm.solve(mix, "square", lam=0.1, alpha=1.0, penalty="l1", l1_ratio=0.5)
    with pytest.raises(TypeError, match="l1_ratio"):
        gm.solve(mix, "square", lam=0.1, alpha=1.0, penalty="elastic-net", l1_ratio="half")
    with pytest.raises(ValueError, match="penalty must be one of"):
        gm.solve(mix, "square", lam=0.1, alpha=1.0, penalty="l3")
    # consistent redundant values are fine
    a = gm.solve(mix, "square", lam=0.1, alpha=1.0, penalty="l1", l1_ratio=1.0)
    b = gm.solve(mix, "square", lam=0.1, alpha=1.0, penalty="l1")
    assert a.test_error == b.test_error


def test_penalty_the_mixture_cannot_take_is_rejected():
    rng = np.random.default_rng(0)
    G = rng.standard_normal((3, 4, 5))
    dense = gm.Mixture.dense(rng.standard_normal((3, 4)) / 2.0, G @ np.swapaxes(G, 1, 2) / 5)
    for loss in ("cross-entropy", "square"):
        with pytest.raises(ValueError, match="penalty 'l1' is not available on a 'dense'"):
            gm.solve(dense, loss, lam=0.1, alpha=1.0, penalty="l1")
    with pytest.raises(ValueError, match="basis pursuit"):
        gm.solve(gm.Mixture.sparse(0.1, 0.1, 1.0), "square", lam=0.0, alpha=2.0, penalty="l1")


def test_optimal_lambda_arguments_are_checked():
    mix = gm.Mixture.sparse(0.1, 0.1, 1.0)
    with pytest.raises(ValueError, match=r"lam_bounds\[1\]"):
        optimal_lambda(mix, "square", alpha=1.0, lam_bounds=(1.0, 0.1))
    with pytest.raises(ValueError, match=r"lam_bounds\[0\]"):
        optimal_lambda(mix, "square", alpha=1.0, lam_bounds=(0.0, 1.0))
    with pytest.raises(ValueError, match="n_grid"):
        optimal_lambda(mix, "square", alpha=1.0, n_grid=2)
