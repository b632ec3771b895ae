"""Finite-size simulation engine: conventions, exact ERM, exact test error, reproducibility."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import minimize

from gaussmix.simulate.simulation import (
    ERMConvergenceWarning,
    Instance,
    exact_test_error,
    fit_erm,
    largest_remainder,
    monte_carlo_test_error,
    observables,
    realise,
    simulate,
)
from gaussmix.theory.channel.losses import get_loss
from gaussmix.theory.model import conventions as conv
from gaussmix.theory.model.mixture import Mixture


# ---------------------------------------------------------------------------- helpers
def _instance(mixture: Mixture, d: int, n: int, seed: int):
    rng = np.random.default_rng(seed)
    inst = realise(mixture, d, rng)
    X, cid = inst.sample(n, rng)
    return inst, X, cid


def _direct(X, Y, loss, lam, penalty="l2", l1_ratio=None):
    """Minimise eq. (2) directly with L-BFGS-B (lasso part by the split W = U - V, U, V >= 0)."""
    n, d = X.shape
    L = Y.shape[1]
    Xs = X / np.sqrt(d)
    lf = get_loss(loss)
    _, r = conv.normalise_penalty(penalty, l1_ratio)
    split = r > 0
    m = L * d

    def unpack(theta):
        if split:
            W = (theta[:m] - theta[m : 2 * m]).reshape(L, d)
            return W, theta[2 * m :]
        return theta[:m].reshape(L, d), theta[m:]

    def fun(theta):
        W, b = unpack(theta)
        h = Xs @ W.T + b
        val = lf.value(Y, h).sum() + 0.5 * lam * (1 - r) * np.sum(W * W)
        g = lf.grad(Y, h)
        gW = (g.T @ Xs + lam * (1 - r) * W).ravel()
        gb = g.sum(axis=0)
        if split:
            val += lam * r * theta[: 2 * m].sum()
            grad = np.concatenate([gW + lam * r, -gW + lam * r, gb])
        else:
            grad = np.concatenate([gW, gb])
        return val / n, grad / n

    size = (2 * m if split else m) + L
    bounds = [(0, None)] * (2 * m) + [(None, None)] * L if split else None
    res = minimize(
        fun,
        np.zeros(size),
        jac=True,
        method="L-BFGS-B",
        bounds=bounds,
        options={"maxiter": 100_000, "maxfun": 200_000, "ftol": 1e-16, "gtol": 1e-13},
    )
    return unpack(res.x)


def _objective(X, Y, W, b, loss, lam, penalty="l2", l1_ratio=None):
    return conv.erm_objective(W, b, X, Y, get_loss(loss), lam, penalty, l1_ratio)


BINARY = Mixture.isotropic(0.6, "antipodal", labels="binary")
THREE = Mixture.isotropic(0.5, "simplex", n_clusters=3)


# ---------------------------------------------------------------------------- (a) conventions
def test_mapping_functions():
    assert conv.sklearn_logistic_C(4.0) == 0.25
    assert conv.svc_C(0.5) == 2.0
    assert conv.sklearn_lasso_alpha(3.0, 300) == pytest.approx(0.01)
    assert conv.sklearn_logistic_params(2.0)["solver"] == "lbfgs"
    assert conv.sklearn_logistic_params(2.0, "l1")["l1_ratio"] == 1.0
    assert conv.twoclass_softmax_as_binary(1.0) == (0.5, "l2", None)
    assert conv.twoclass_softmax_as_binary(1.0, "l1") == (1.0, "l1", None)
    lam_b, pen_b, r_b = conv.twoclass_softmax_as_binary(1.0, "elastic-net", 0.5)
    assert (lam_b, pen_b, r_b) == (0.75, "elastic-net", pytest.approx(2 / 3))
    W = np.array([[1.0, -2.0]])
    assert conv.penalty_value(W, "l2") == 2.5
    assert conv.penalty_value(W, "l1") == 3.0
    assert conv.penalty_value(W, "elastic-net", 0.5) == 2.75
    with pytest.raises(ValueError, match="lam"):
        conv.sklearn_logistic_C(0.0)


CASES = [
    # (mixture, loss, penalty, l1_ratio, lam)
    (BINARY, "logistic", "l2", None, 0.7),
    (BINARY, "square", "l2", None, 0.7),
    (THREE, "cross-entropy", "l2", None, 0.7),
    (THREE, "square", "l2", None, 0.7),
    (Mixture.isotropic(0.6, "antipodal", labels="onehot"), "cross-entropy", "l2", None, 0.7),
    (Mixture.isotropic(0.6, "antipodal", labels="onehot"), "cross-entropy", "l1", None, 0.7),
    (BINARY, "square", "l1", None, 2.0),
    (BINARY, "square", "elastic-net", 0.4, 2.0),
    (THREE, "square", "l1", None, 2.0),
    (BINARY, "logistic", "l1", None, 1.0),
    (BINARY, "logistic", "elastic-net", 0.5, 1.0),
    (THREE, "cross-entropy", "l1", None, 1.0),
]


@pytest.mark.parametrize(("mixture", "loss", "penalty", "l1_ratio", "lam"), CASES)
def test_solver_minimises_theory_objective(mixture, loss, penalty, l1_ratio, lam):
    """fit_erm's (W, b) minimises eq. (2): same objective and minimiser as direct L-BFGS."""
    inst, X, cid = _instance(mixture, d=12, n=48, seed=7)
    Y = mixture.labels.labels[cid]
    W, b, info = fit_erm(X, mixture.labels, cid, loss, penalty, lam, l1_ratio, return_info=True)
    assert info["converged"]
    Wd, bd = _direct(X, Y, loss, lam, penalty, l1_ratio)
    f_fit = _objective(X, Y, W, b, loss, lam, penalty, l1_ratio)
    f_dir = _objective(X, Y, Wd, bd, loss, lam, penalty, l1_ratio)
    assert f_fit <= f_dir + 1e-9 * abs(f_dir)
    assert f_fit == pytest.approx(f_dir, rel=1e-8)
    if loss == "cross-entropy":  # gauge: compare logit differences
        W, Wd = W - W.mean(0), Wd - Wd.mean(0)
        b, bd = b - b.mean(), bd - bd.mean()
    np.testing.assert_allclose(W, Wd, atol=2e-5)
    np.testing.assert_allclose(b, bd, atol=2e-5)


def test_ridge_closed_form_branches():
    """Primal (d <= n), dual (d > n) and lam = 0 (OLS) closed forms minimise eq. (2)."""
    for d, n, lam in [(10, 40, 0.3), (40, 15, 0.3), (10, 40, 0.0)]:
        inst, X, cid = _instance(THREE, d=d, n=n, seed=3)
        Y = THREE.labels.labels[cid]
        W, b = fit_erm(X, THREE.labels, cid, "square", "l2", lam)
        Xs = X / np.sqrt(d)
        h = Xs @ W.T + b
        # stationarity of the square loss + ridge, with unpenalised bias
        np.testing.assert_allclose((h - Y).T @ Xs + lam * W, 0.0, atol=1e-10)
        np.testing.assert_allclose((h - Y).sum(0), 0.0, atol=1e-10)
    with pytest.raises(ValueError, match="lam"):
        fit_erm(X[:10], THREE.labels, cid[:10], "square", "l2", 0.0)


def test_hinge_matches_quadratic_programme():
    """SVC(C = 1/lam) solves min lam/2 ||w||^2 + sum hinge (QP solved by SLSQP)."""
    d, n, lam = 5, 30, 0.5
    inst, X, cid = _instance(BINARY, d=d, n=n, seed=11)
    y = BINARY.labels.labels[cid][:, 0]
    W, b = fit_erm(X, BINARY.labels, cid, "hinge", "l2", lam)
    Xs = X / np.sqrt(d)

    def obj(z):
        return 0.5 * lam * z[:d] @ z[:d] + z[d + 1 :].sum()

    def jac(z):
        return np.concatenate([lam * z[:d], [0.0], np.ones(n)])

    A = np.hstack([y[:, None] * Xs, y[:, None], np.eye(n)])
    cons = {"type": "ineq", "fun": lambda z: A @ z - 1.0, "jac": lambda z: A}
    z0 = np.concatenate([np.zeros(d + 1), np.ones(n)])
    res = minimize(
        obj,
        z0,
        jac=jac,
        constraints=[cons],
        bounds=[(None, None)] * (d + 1) + [(0, None)] * n,
        method="SLSQP",
        # ftol 1e-12 (~200 eps |f| for f ~ 5): at 1e-14 SLSQP's line search stops on
        # rounding ("positive directional derivative") with some BLAS kernels (measured with
        # OPENBLAS_CORETYPE=Prescott), at the same point to 3e-8
        options={"ftol": 1e-12, "maxiter": 1000},
    )
    assert res.success
    Y = y[:, None]
    f_fit = _objective(X, Y, W, b, "hinge", lam)
    f_qp = _objective(X, Y, res.x[:d][None], res.x[d : d + 1], "hinge", lam)
    assert f_fit == pytest.approx(f_qp, rel=1e-7)
    np.testing.assert_allclose(W[0], res.x[:d], atol=1e-5)


# ---------------------------------------------------------------------------- (b) shifts
SHIFT_CASES = [
    (BINARY, "square", "l2", None),
    (BINARY, "square", "l1", None),
    (BINARY, "logistic", "l2", None),
    (BINARY, "logistic", "l1", None),
    (BINARY, "hinge", "l2", None),
    (THREE, "square", "l2", None),
    (THREE, "cross-entropy", "l2", None),
    (THREE, "cross-entropy", "elastic-net", 0.5),
    (Mixture.isotropic(0.6, "antipodal", labels="onehot"), "cross-entropy", "l2", None),
]


@pytest.mark.parametrize(("mixture", "loss", "penalty", "l1_ratio"), SHIFT_CASES)
def test_shift_invariance(mixture, loss, penalty, l1_ratio):
    """x -> x + s leaves W, training error/loss and test error unchanged (bias unpenalised)."""
    d, n, lam = 40, 100, 0.5
    inst, X, cid = _instance(mixture, d=d, n=n, seed=5)
    s = 1.0 + np.random.default_rng(0).standard_normal(d)
    shifted = Instance(inst.means + s, inst.variances, inst.rho, inst.labels)
    W0, b0 = fit_erm(X, mixture.labels, cid, loss, penalty, lam, l1_ratio)
    W1, b1 = fit_erm(X + s, mixture.labels, cid, loss, penalty, lam, l1_ratio)
    np.testing.assert_allclose(W1, W0, atol=1e-5 * max(1.0, np.abs(W0).max()))
    shifted_b = b1 + W1 @ s / np.sqrt(d)
    if loss == "cross-entropy":  # b is defined up to a common shift of the logits
        shifted_b, b0c = shifted_b - shifted_b.mean(), b0 - b0.mean()
    else:
        b0c = b0
    np.testing.assert_allclose(shifted_b, b0c, atol=1e-5)
    o0 = observables(inst, X, cid, W0, b0, loss)
    o1 = observables(shifted, X + s, cid, W1, b1, loss)
    assert o1["train_error"] == o0["train_error"]
    assert o1["train_loss"] == pytest.approx(o0["train_loss"], rel=1e-6, abs=1e-9)
    assert o1["test_error"] == pytest.approx(o0["test_error"], abs=1e-5)


# ---------------------------------------------------------------------------- (c) realisation
@pytest.mark.parametrize("means", ["simplex", "gaussian"])
def test_isotropic_means_realise_gram_exactly(means):
    mix = Mixture.isotropic([0.5, 1.0, 2.0], means)
    inst = realise(mix, 50, np.random.default_rng(1))
    np.testing.assert_allclose(inst.gram, mix.gram, atol=1e-12)
    np.testing.assert_array_equal(inst.variances, np.repeat([[0.5], [1.0], [2.0]], 50, axis=1))
    anti = realise(BINARY, 7, np.random.default_rng(2))
    np.testing.assert_allclose(anti.gram, BINARY.gram, atol=1e-12)
    with pytest.raises(ValueError, match="d must be >="):
        realise(mix, 2, np.random.default_rng(0))


def test_block_means_realise_atom_moments_exactly():
    gram = np.array([[1.0, 0.3, -0.2], [0.3, 0.8, 0.1], [-0.2, 0.1, 1.2]])
    mix = Mixture.block(
        [0.25, 0.35, 0.4],
        [[0.5, 1.0, 2.0], [1.0, 1.0, 1.0], [3.0, 0.2, 1.0]],
        means=gram,
        labels="onehot",
    )
    d = 101
    inst = realise(mix, d, np.random.default_rng(4))
    nj = largest_remainder(mix.weights, d)
    assert nj.sum() == d and inst.info["directions"] == nj.tolist()
    start = 0
    for j, n_j in enumerate(nj):
        z = np.sqrt(d) * inst.means[:, start : start + n_j]
        np.testing.assert_allclose(z @ z.T / n_j, mix.theta[j], atol=1e-12)
        np.testing.assert_array_equal(
            inst.variances[:, start : start + n_j], np.repeat(mix.sigma[j][:, None], n_j, 1)
        )
        start += n_j
    # rank-deficient second moment (antipodal means)
    blk = Mixture.block([0.5, 0.5], [0.3, 2.0])
    z = np.sqrt(60) * realise(blk, 60, np.random.default_rng(0)).means[:, :30]
    np.testing.assert_allclose(z @ z.T / 30, blk.theta[0], atol=1e-12)


def test_spectral_law_and_counts():
    rng = np.random.default_rng(0)
    sig, mu = rng.uniform(0.5, 2.0, (30, 2)), rng.standard_normal((30, 2))
    mix = Mixture.spectral(sig, mu, labels="binary")
    inst = realise(mix, 30, rng)
    np.testing.assert_allclose(inst.means, mu.T / np.sqrt(30))
    np.testing.assert_allclose(inst.variances, sig.T)
    with pytest.raises(
        ValueError,
        match="d must equal 30, the number of directions of this empirical spectral law, got 31",
    ):
        realise(mix, 31, rng)
    assert largest_remainder(np.array([1, 1, 1]) / 3, 10).tolist() == [4, 3, 3]
    X, cid = realise(THREE, 20, rng).sample(10, rng)
    assert sorted(np.bincount(cid).tolist()) == [3, 3, 4]
    assert X.shape == (10, 20)


# ---------------------------------------------------------------------------- (d) seeds
def test_simulate_reproducible_bit_for_bit():
    kw = {"loss": "cross-entropy", "lam": 0.5, "alpha": 2.0, "d": 60, "seeds": 3}
    r1 = simulate(THREE, seed=3, **kw)
    r2 = simulate(THREE, seed=3, **kw)
    r3 = simulate(THREE, seed=4, **kw)
    pd.testing.assert_frame_equal(r1.per_seed, r2.per_seed, check_exact=True)
    np.testing.assert_array_equal(r1.Q, r2.Q)
    np.testing.assert_array_equal(r1.M, r2.M)
    assert not np.any(r1.per_seed["test_error"].to_numpy() == r3.per_seed["test_error"].to_numpy())
    # seeds are independent streams: they differ from one another
    assert r1.per_seed["test_error"].nunique() == 3
    rp = simulate(THREE, seed=3, n_jobs=2, **kw)
    np.testing.assert_allclose(rp.per_seed["test_error"], r1.per_seed["test_error"], rtol=1e-8)
    # result object
    d = r1.to_dict()
    json.dumps(d, allow_nan=False)
    assert d["V"] is None and d["converged"] is True and d["seeds"] == 3 and d["d"] == 60
    assert np.asarray(d["Q"]).shape == (3, 3, 3) and np.asarray(d["M"]).shape == (3, 3)
    assert d["test_error_se"] == pytest.approx(r1.per_seed["test_error"].std(ddof=1) / np.sqrt(3))
    # one seed: standard errors are NaN (None in JSON)
    r_one = simulate(THREE, seed=3, **{**kw, "seeds": 1})
    assert np.isnan(r_one.se["test_error"]) and r_one.to_dict()["test_error_se"] is None


def test_simulate_l1_reports_sparsity():
    r = simulate(BINARY, loss="square", penalty="l1", lam=3.0, alpha=1.5, d=60, seeds=2)
    frac = r.per_seed["nonzero_fraction"]
    assert ((frac > 0) & (frac < 1)).all()


# ---------------------------------------------------------------------------- (e) test error
@pytest.mark.parametrize(
    ("mixture", "loss"),
    [
        (BINARY, "logistic"),
        (
            Mixture.block(
                [0.5, 0.5],
                [[0.3, 1.5, 0.8], [1.0, 0.5, 1.2]],
                means="gaussian",
                n_clusters=3,
                labels="onehot",
            ),
            "cross-entropy",
        ),
        (
            Mixture.isotropic(
                [0.4, 0.6, 0.5, 0.7], "gaussian", labels=[[1.0], [1.0], [-1.0], [-1.0]]
            ),
            "square",
        ),
    ],
)
def test_exact_test_error_matches_monte_carlo(mixture, loss):
    inst, X, cid = _instance(mixture, d=80, n=160, seed=9)
    W, b = fit_erm(X, mixture.labels, cid, loss, "l2", 0.3)
    err, correct, ierr = exact_test_error(inst, W, b)
    mc, se = monte_carlo_test_error(inst, W, b, 200_000, np.random.default_rng(1))
    assert 0.02 < err < 0.6
    assert abs(err - mc) < 4 * se
    assert ierr < 1e-6
    r = simulate(mixture, loss=loss, lam=0.3, alpha=2.0, d=80, seeds=1, test_samples=50_000)
    row = r.per_seed.iloc[0]
    assert abs(row["test_error"] - row["test_error_mc"]) < 4 * row["test_error_mc_se"]


# ---------------------------------------------------------------------------- (f) two classes
def test_two_class_cross_entropy_is_binary_logistic_at_half_lambda():
    """Two-class softmax with lam == binary logistic on w = W_1 - W_2 with lam / 2."""
    onehot = Mixture.isotropic(0.6, "antipodal", labels="onehot")
    d, n, lam = 60, 120, 0.8
    inst_o, X, cid = _instance(onehot, d, n, seed=21)
    inst_b, Xb, cidb = _instance(BINARY, d, n, seed=21)
    np.testing.assert_array_equal(X, Xb)
    np.testing.assert_array_equal(cid, cidb)
    Wc, bc = fit_erm(X, onehot.labels, cid, "cross-entropy", "l2", lam)
    Wl, bl = fit_erm(X, BINARY.labels, cid, "logistic", "l2", lam / 2)
    np.testing.assert_allclose(Wc[0] - Wc[1], Wl[0], atol=1e-6)
    np.testing.assert_allclose(bc[0] - bc[1], bl[0], atol=1e-6)
    np.testing.assert_allclose(Wc.sum(0), 0.0, atol=1e-12)
    Xt, _ = inst_o.sample(500, np.random.default_rng(2))
    hc = Xt @ Wc.T / np.sqrt(d) + bc
    hl = Xt @ Wl.T / np.sqrt(d) + bl
    np.testing.assert_allclose(hc[:, 0] - hc[:, 1], hl[:, 0], atol=1e-6)
    assert exact_test_error(inst_o, Wc, bc)[0] == pytest.approx(
        exact_test_error(inst_b, Wl, bl)[0], abs=1e-9
    )
    rc = simulate(onehot, loss="cross-entropy", lam=lam, alpha=2.0, d=d, seeds=2)
    rl = simulate(BINARY, loss="logistic", lam=lam / 2, alpha=2.0, d=d, seeds=2)
    np.testing.assert_allclose(rc.per_seed["test_error"], rl.per_seed["test_error"], atol=1e-8)
    np.testing.assert_allclose(rc.per_seed["train_loss"], rl.per_seed["train_loss"], atol=1e-8)


# ---------------------------------------------------------------------------- (g) validation
GOOD = {"loss": "logistic", "lam": 0.5, "alpha": 2.0, "d": 20}


@pytest.mark.parametrize(
    ("mixture", "changes", "exc", "match"),
    [
        (BINARY, {"d": 0}, ValueError, "d must be"),
        (BINARY, {"d": 10.5}, TypeError, "d must be an integer"),
        (BINARY, {"seeds": 0}, ValueError, "seeds"),
        (BINARY, {"seeds": 2.0}, TypeError, "seeds"),
        (BINARY, {"seed": -1}, ValueError, "seed"),
        (BINARY, {"lam": -1.0}, ValueError, "lam"),
        (BINARY, {"lam": "big"}, TypeError, "lam"),
        (BINARY, {"lam": 0.0}, ValueError, "lam 0 "),
        (BINARY, {"loss": "square", "lam": 0.0, "alpha": 1.0}, ValueError, "lam 0 "),
        (BINARY, {"alpha": 0.0}, ValueError, "alpha"),
        (BINARY, {"alpha": float("nan")}, ValueError, "alpha"),
        (BINARY, {"loss": "probit"}, ValueError, "loss"),
        (BINARY, {"loss": "cross-entropy"}, ValueError, "loss 'cross-entropy'"),
        (THREE, {}, ValueError, "loss 'logistic'"),
        (THREE, {"loss": "hinge"}, ValueError, "loss 'hinge'"),
        (BINARY, {"penalty": "l3"}, ValueError, "penalty"),
        (BINARY, {"loss": "hinge", "penalty": "l1"}, ValueError, "penalty"),
        (BINARY, {"penalty": "elastic-net"}, ValueError, "l1_ratio"),
        (BINARY, {"penalty": "elastic-net", "l1_ratio": 1.5}, ValueError, "l1_ratio"),
        (BINARY, {"penalty": "l2", "l1_ratio": 0.5}, ValueError, "l1_ratio"),
        (BINARY, {"counts": "poisson"}, ValueError, "counts"),
        (BINARY, {"n_jobs": 0}, ValueError, "n_jobs"),
        (BINARY, {"test_samples": 0}, ValueError, "test_samples"),
        (BINARY, {"alpha": 0.01}, ValueError, "alpha"),
        ("not a mixture", {}, TypeError, "mixture"),
    ],
)
def test_bad_input_names_the_argument(mixture, changes, exc, match):
    with pytest.raises(exc, match=match):
        simulate(mixture, **{**GOOD, **changes})


def test_nonconvergence_warns():
    inst, X, cid = _instance(THREE, 30, 90, seed=0)
    with pytest.warns(ERMConvergenceWarning, match="did not reach"):
        W, b, info = fit_erm(
            X, THREE.labels, cid, "cross-entropy", "l2", 0.01, max_iter=2, return_info=True
        )
    assert not info["converged"]
    with pytest.warns(ERMConvergenceWarning) as record:
        r = simulate(THREE, loss="cross-entropy", lam=0.01, alpha=3.0, d=30, seeds=2, max_iter=2)
    assert any("2 of 2 seeds did not reach" in str(w.message) for w in record)
    assert r.to_dict()["converged"] is False


def test_simulate_random_counts_and_progress():
    r = simulate(
        BINARY, loss="hinge", lam=0.5, alpha=2.0, d=40, seeds=2, counts="random", progress=True
    )
    assert r.per_seed.shape[0] == 2 and r.success
    assert np.isnan(r.per_seed["kkt_residual"]).all()


def test_fit_erm_bad_input():
    inst, X, cid = _instance(BINARY, 10, 20, seed=0)
    with pytest.raises(ValueError, match="loss"):
        fit_erm(X, BINARY.labels, cid, "probit", "l2", 1.0)
    with pytest.raises(ValueError, match="cluster_ids"):
        fit_erm(X, BINARY.labels, cid[:-1], "logistic", "l2", 1.0)
    with pytest.raises(ValueError, match="lam 0 "):
        fit_erm(X, BINARY.labels, cid, "logistic", "l2", 0.0)
    with pytest.raises(ValueError, match="d must"):
        realise(THREE, 0, np.random.default_rng(0))
