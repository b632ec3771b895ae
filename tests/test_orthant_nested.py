"""The deterministic orthant probabilities of three to five variables (nested Gauss-Legendre
rules with the last two variables exact, :func:`gaussmix.theory.orthant.orthant_probability`)
against independent answers: the closed form of a centred trivariate orthant, the
equicorrelated one-dimensional integral, the randomised quasi-Monte Carlo path within its
standard errors, and the exchangeable clusters' test error; and deterministic (no seed)."""

from __future__ import annotations

import numpy as np
import pytest

import gaussmix as gm
from gaussmix.theory import orthant
from gaussmix.theory.observables import test_accuracy as accuracy
from gaussmix.theory.orthant import equicorrelated_orthant, orthant_probability


def _random_cov(rng: np.random.Generator, m: int) -> np.ndarray:
    A = rng.normal(size=(m, m + 2))
    return A @ A.T


@pytest.mark.parametrize("seed", range(8))
def test_a_centred_trivariate_orthant_is_its_closed_form(seed: int) -> None:
    # P[Z <= 0] = 1/8 + (asin r12 + asin r13 + asin r23) / (4 pi) for a centred Z
    C = _random_cov(np.random.default_rng(seed), 3)
    sd = np.sqrt(np.diag(C))
    R = C / sd[:, None] / sd[None, :]
    exact = 1 / 8 + (np.arcsin(R[0, 1]) + np.arcsin(R[0, 2]) + np.arcsin(R[1, 2])) / (4 * np.pi)
    p, err = orthant_probability(np.zeros(3), C)
    assert abs(p - exact) < 1e-14
    assert err < 1e-10


@pytest.mark.parametrize("m", [3, 4, 5])
@pytest.mark.parametrize("r", [0.05, 0.5, 0.95])
@pytest.mark.parametrize("mu", [-1.5, -0.3, 0.4])
def test_equicorrelated_orthants_agree_with_the_one_dimensional_integral(
    m: int, r: float, mu: float
) -> None:
    cov = 1.7 * ((1 - r) * np.eye(m) + r * np.ones((m, m)))
    mean = np.full(m, mu)
    ref, ref_err = equicorrelated_orthant(mean, cov)
    p, err = orthant_probability(mean, cov)
    # both deterministic: within the sum of the two estimates (each at least 1e-15)
    assert abs(p - ref) <= err + ref_err + 1e-14


@pytest.mark.parametrize("m", [3, 4, 5])
def test_random_orthants_agree_with_randomised_qmc_within_its_standard_error(m: int) -> None:
    rng = np.random.default_rng(100 + m)
    for _ in range(3):
        C = _random_cov(rng, m)
        mean = 0.7 * rng.normal(size=m)
        p, err = orthant_probability(mean, C)
        sd = np.sqrt(np.diag(C))
        corr = C / sd[:, None] / sd[None, :]
        q, se = orthant._sov_rqmc(np.full(m, -np.inf), -mean / sd, corr, 0, 1e-10)
        assert err < 1e-9
        assert abs(p - q) < 5 * se + err  # five standard errors: a failure is not chance


def test_two_sided_intervals_of_merged_pairs() -> None:
    # Z4 = c - Z1 exactly: a singular covariance, merged into Z1 in (c, 0]
    rng = np.random.default_rng(7)
    C3 = _random_cov(rng, 3)
    mean3 = 0.3 * rng.normal(size=3)
    c = -0.6
    T = np.vstack([np.eye(3), [-1.0, 0.0, 0.0]])
    mean = T @ mean3 + np.array([0, 0, 0, c])
    p, err = orthant_probability(mean, T @ C3 @ T.T)
    sd = np.sqrt(np.diag(C3))
    corr = C3 / sd[:, None] / sd[None, :]
    lo = np.array([(c - mean3[0]) / sd[0], -np.inf, -np.inf])  # Z1 > c
    q, se = orthant._sov_rqmc(lo, -mean3 / sd, corr, 0, 1e-10)
    assert abs(p - q) < 5 * se + err


def test_three_to_five_variables_need_no_seed() -> None:
    rng = np.random.default_rng(3)
    for m in (3, 4, 5):
        C = _random_cov(rng, m)
        mean = rng.normal(size=m)
        assert orthant_probability(mean, C, rng_seed=0) == orthant_probability(
            mean, C, rng_seed=12345
        )


@pytest.mark.parametrize("K", [4, 5])
def test_the_square_loss_test_error_of_exchangeable_clusters_both_ways(K: int) -> None:
    """The general orthant of each cluster against the exchangeable clusters' equicorrelated
    integral, at the same fixed point (the square loss, one-hot labels, simplex means)."""
    mix = gm.Mixture.isotropic(0.5, "simplex", n_clusters=K)
    res = gm.solve(mix, "square", lam=0.1, alpha=1.5)
    problem = gm.make_problem(mix, "square", lam=0.1, alpha=1.5)
    general, e1 = accuracy(problem, res.M, res.b, res.Q)
    equi, e2 = accuracy(problem, res.M, res.b, res.Q, exchangeable=True)
    assert np.all(np.abs(general - equi) <= e1 + e2 + 1e-13)
    assert e1 < 1e-9
