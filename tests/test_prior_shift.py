"""Train / test prior shift: the estimator trained on the mixture's priors ``rho`` (Theorem 1)
and tested under other priors ``rho_test`` (Theorem 2's test-side sums re-weighted)."""

from __future__ import annotations

import re

import numpy as np
import pytest

import gaussmix as gm
from gaussmix.simulate import simulate
from gaussmix.theory.solve.observables import test_accuracy as cluster_accuracy

_LOSS, _LAM, _ALPHA = "cross-entropy", 1.0, 1.0


@pytest.fixture(scope="module")
def unbalanced() -> gm.Mixture:
    return gm.Mixture.isotropic(delta=0.5, means="gaussian", n_clusters=3, rho=[0.5, 0.3, 0.2])


@pytest.fixture(scope="module")
def plain(unbalanced: gm.Mixture) -> gm.FixedPointResult:
    return gm.solve(unbalanced, _LOSS, lam=_LAM, alpha=_ALPHA)


def _solve(mix: gm.Mixture, rho_test: object) -> gm.FixedPointResult:
    return gm.solve(mix, _LOSS, lam=_LAM, alpha=_ALPHA, rho_test=rho_test)


def test_rho_test_equal_to_rho_changes_nothing(unbalanced, plain):
    same = _solve(unbalanced, unbalanced.rho)
    for key in ("test_error", "train_error", "train_loss", "test_loss", "free_energy"):
        assert getattr(same, key) == getattr(plain, key), key
    np.testing.assert_array_equal(same.Q, plain.Q)
    np.testing.assert_array_equal(same.rho_test, unbalanced.rho)
    np.testing.assert_array_equal(plain.rho_test, unbalanced.rho)


def test_one_cluster_test_priors_give_that_clusters_error(unbalanced, plain):
    """``rho_test = e_c``: the error of cluster ``c`` alone, ``1 - P_c``, with ``P_c`` the
    orthant probability of the unshifted fixed point; the fixed point and the training side
    do not move; the unshifted error is their ``rho``-weighted sum."""
    problem = gm.make_problem(unbalanced, _LOSS, lam=_LAM, alpha=_ALPHA)
    P = problem.P
    acc, _ = cluster_accuracy(problem, plain.M @ P.T, plain.b @ P.T, P @ plain.Q @ P.T)
    errs = []
    for c in range(3):
        shifted = _solve(unbalanced, np.eye(3)[c])
        assert shifted.train_error == plain.train_error
        assert shifted.train_loss == plain.train_loss
        np.testing.assert_array_equal(shifted.Q, plain.Q)
        np.testing.assert_allclose(shifted.test_error, 1.0 - acc[c], rtol=0, atol=1e-12)
        errs.append(shifted.test_error)
    np.testing.assert_allclose(unbalanced.rho @ errs, plain.test_error, rtol=0, atol=1e-12)
    # a cluster the classifier favours (the most frequent) has the smallest error
    assert errs[0] < errs[1] < errs[2]


def test_test_loss_is_linear_in_the_test_priors(unbalanced, plain):
    losses = [_solve(unbalanced, np.eye(3)[c]).test_loss for c in range(3)]
    balanced = _solve(unbalanced, np.full(3, 1 / 3))
    np.testing.assert_allclose(balanced.test_loss, np.mean(losses), rtol=1e-12)
    np.testing.assert_allclose(unbalanced.rho @ losses, plain.test_loss, rtol=1e-12)


def test_curves_carry_the_shift(unbalanced):
    """A learning curve (the batched solve of several points) on the shifted mixture equals
    the shifted single solves."""
    shifted = unbalanced.with_test_priors(np.full(3, 1 / 3))
    df = gm.learning_curve(shifted, _LOSS, [0.5, 1.0], lam=_LAM)
    for alpha, err in zip(df["alpha"], df["test_error"], strict=True):
        one = gm.solve(shifted, _LOSS, lam=_LAM, alpha=float(alpha))
        np.testing.assert_allclose(err, one.test_error, rtol=0, atol=1e-6)


@pytest.mark.parametrize(
    ("rho_test", "message"),
    [
        ([0.5, 0.5], "rho_test must have shape (3)"),
        ([0.5, 0.6, -0.1], "rho_test must have nonnegative entries"),
        ([0.5, np.nan, 0.5], "rho_test must contain only finite numbers"),
        ([0.5, 0.3, 0.3], "rho_test must sum to 1"),
        ("abc", "rho_test must be an array of real numbers"),
    ],
)
def test_bad_test_priors_are_refused_naming_rho_test(unbalanced, rho_test, message):
    with pytest.raises((ValueError, TypeError), match=re.escape(message)):
        _solve(unbalanced, rho_test)


def test_the_shift_is_part_of_the_mixture(unbalanced, tmp_path):
    shifted = unbalanced.with_test_priors([0.0, 0.5, 0.5])
    assert shifted.fingerprint() != unbalanced.fingerprint()
    assert unbalanced.with_test_priors(None).fingerprint() == unbalanced.fingerprint()
    assert shifted.describe()["rho_test"] == [0.0, 0.5, 0.5]
    assert "rho_test" not in unbalanced.describe()
    np.testing.assert_array_equal(shifted.permute([2, 0, 1]).rho_test, [0.5, 0.0, 0.5])
    shifted.save(tmp_path / "m.npz")
    back = gm.Mixture.load(tmp_path / "m.npz")
    np.testing.assert_array_equal(back.rho_test, shifted.rho_test)
    assert back.fingerprint() == shifted.fingerprint()
    unbalanced.save(tmp_path / "u.npz")
    assert gm.Mixture.load(tmp_path / "u.npz").rho_test is None


@pytest.mark.slow
def test_simulation_trained_unbalanced_tested_balanced_agrees():
    """Finite-size ERM on 80 / 20 class counts, its exact test error under balanced priors:
    the shifted theory within the simulation's error bars, the unshifted one far outside."""
    mix = gm.Mixture.isotropic(delta=0.5, means="antipodal", labels="binary", rho=[0.8, 0.2])
    shifted = mix.with_test_priors([0.5, 0.5])
    lam, alpha, d, seeds = 0.1, 2.0, 1000, 8
    theory = gm.solve(shifted, "logistic", lam=lam, alpha=alpha)
    unshifted = gm.solve(mix, "logistic", lam=lam, alpha=alpha)
    sim = simulate(shifted, loss="logistic", lam=lam, alpha=alpha, d=d, seeds=seeds, seed=3)
    mean, se = sim.mean["test_error"], sim.se["test_error"]
    # the finite-size bias at d = 1000 (pitfall 8: O(1/d), a few 1e-4) is well inside 4 se
    assert abs(mean - theory.test_error) < 4 * se + 1e-3, (mean, se, theory.test_error)
    assert abs(mean - unshifted.test_error) > 10 * se
    # the training side is the unshifted problem's
    assert abs(sim.mean["train_error"] - theory.train_error) < 4 * sim.se["train_error"] + 2e-3
    assert theory.train_error == unshifted.train_error


def test_the_bayes_error_refuses_a_shifted_mixture():
    mix = gm.Mixture.isotropic(delta=0.5, means="antipodal", labels="binary", rho=[0.8, 0.2])
    with pytest.raises(ValueError, match="mixture .*prior shift"):
        gm.bayes_optimal_error(mix.with_test_priors([0.5, 0.5]), alpha=2.0)
    base = gm.bayes_optimal_error(mix, alpha=2.0).test_error
    back = mix.with_test_priors([0.5, 0.5]).with_test_priors(None)
    assert gm.bayes_optimal_error(back, alpha=2.0).test_error == base
