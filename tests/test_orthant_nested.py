"""The deterministic orthant probabilities of three to five variables (nested Gauss-Legendre
rules with the last two variables exact,
:func:`gaussmix.theory.numerics.orthant.orthant_probability`)
against independent answers: the closed form of a centred trivariate orthant, the
equicorrelated one-dimensional integral, the randomised quasi-Monte Carlo path within its
standard errors, and the exchangeable clusters' test error; and deterministic (no seed)."""

from __future__ import annotations

import numpy as np
import pytest

import gaussmix as gm
from gaussmix.theory.numerics import orthant
from gaussmix.theory.numerics.equicorrelated import equicorrelated_orthant
from gaussmix.theory.numerics.orthant import orthant_probability, orthant_probability_batch
from gaussmix.theory.solve.observables import test_accuracy as accuracy
from gaussmix.theory.solve.observables import train_accuracy


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
    # (the solver's own state: the square loss's K - 1 outputs orthogonal to the ones)
    Q, M, _, b = res.state.unpack()
    general, e1 = accuracy(problem, M, b, Q)
    equi, e2 = accuracy(problem, M, b, Q, exchangeable=True)
    assert np.all(np.abs(general - equi) <= e1 + e2 + 1e-13)
    assert e1 < 1e-9


# ------------------------------------------------------------ a stack of problems at once


def _stack(rng: np.random.Generator, m: int, B: int) -> tuple[np.ndarray, np.ndarray]:
    covs = np.stack([_random_cov(rng, m) for _ in range(B)])
    return 0.7 * rng.normal(size=(B, m)), covs


def _singular_problems(rng: np.random.Generator, m: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """A zero variance, an exact copy (merged), a negated copy (a two-sided interval) and a
    rank-deficient factor without perfect correlations (the randomised path)."""
    out = []
    C = _random_cov(rng, m)
    mean = 0.5 * rng.normal(size=m)
    Z = C.copy()
    Z[0, :] = Z[:, 0] = 0.0
    out.append((np.concatenate([[-0.2], mean[1:]]), Z))
    for sign in (1.0, -1.0):
        T = np.eye(m)
        T[-1] = 0.0
        T[-1, 0] = sign
        out.append((T @ mean + np.eye(m)[-1] * 0.3, T @ C @ T.T))
    T = np.eye(m)
    T[-1] = 0.0
    T[-1, :2] = [0.8, -0.6]  # Z_m = 0.8 Z_1 - 0.6 Z_2: rank m - 1, |correlations| < 1
    out.append((T @ mean, T @ C @ T.T))
    return out


@pytest.mark.parametrize("m", [3, 4, 5, 6])
def test_a_batch_is_each_problem_alone(m: int) -> None:
    """Regular and singular problems mixed in one stack: each result (and error estimate) is
    the scalar path's on the problem alone, to rounding."""
    rng = np.random.default_rng(40 + m)
    mean, cov = _stack(rng, m, 5)
    extra = _singular_problems(rng, m)
    mean = np.concatenate([mean, [e[0] for e in extra]])
    cov = np.concatenate([cov, [e[1] for e in extra]])
    order = rng.permutation(mean.shape[0])
    mean, cov = mean[order], cov[order]
    p, err = orthant_probability_batch(mean, cov, rng_seed=3, return_error=True)
    for i in range(mean.shape[0]):
        q, e = orthant_probability(mean[i], cov[i], rng_seed=3)
        assert abs(p[i] - q) <= 1e-14
        assert err[i] == pytest.approx(e, abs=1e-14)
    assert np.array_equal(orthant_probability_batch(mean, cov, rng_seed=3), p)


def _without_plackett(monkeypatch: pytest.MonkeyPatch) -> None:
    """Four-variable orthants by the nested rule alone (Plackett's reduction settles none)."""

    def none(b: np.ndarray, R: np.ndarray, abs_tol: float):
        nan = np.full(b.shape[0], np.nan)
        return nan, nan, np.zeros(b.shape[0], dtype=bool)

    monkeypatch.setattr(orthant, "plackett_orthant4", none)


def test_a_problem_doubles_its_nodes_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """The doubling is decided per problem: the hard problem of a stack is refined alone, and
    each result and error estimate is the one of the problem alone (to rounding)."""
    _without_plackett(monkeypatch)
    mean = np.array([np.full(4, -0.3), np.full(4, 0.01)])
    # independent components (two rules), and nearly singular (four rules)
    cov = np.array([np.eye(4), 0.02 * np.eye(4) + np.ones((4, 4))])
    calls: list[tuple[int, int]] = []
    rule = orthant._nested_pair_rule

    def counted(a: np.ndarray, b: np.ndarray, L: np.ndarray, q: int) -> np.ndarray:
        calls.append((a.shape[0], q))
        return rule(a, b, L, q)

    monkeypatch.setattr(orthant, "_nested_pair_rule", counted)
    both = orthant_probability_batch(mean, cov, return_error=True)
    assert calls[0][0] == 2 and calls[-1][0] == 1  # the easy one stopped first
    for i in range(2):
        alone = orthant_probability_batch(mean[i : i + 1], cov[i : i + 1], return_error=True)
        assert abs(both[0][i] - alone[0][0]) <= 1e-15
        assert both[1][i] == pytest.approx(alone[1][0], rel=1e-6, abs=1e-15)


def test_the_chunked_rule_is_the_whole_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(11)
    mean, cov = _stack(rng, 4, 6)
    whole = orthant_probability_batch(mean, cov)
    monkeypatch.setattr(orthant, "_TENSOR_BATCH_POINTS", 300)  # one problem per chunk
    assert np.array_equal(orthant_probability_batch(mean, cov), whole)


@pytest.mark.parametrize("seed", range(3))
def test_a_batch_of_centred_trivariate_orthants_is_their_closed_form(seed: int) -> None:
    mean, cov = _stack(np.random.default_rng(seed), 3, 6)
    sd = np.sqrt(np.diagonal(cov, axis1=1, axis2=2))
    R = cov / sd[:, :, None] / sd[:, None, :]
    asin = np.arcsin(R[:, 0, 1]) + np.arcsin(R[:, 0, 2]) + np.arcsin(R[:, 1, 2])
    p, err = orthant_probability_batch(np.zeros_like(mean), cov, return_error=True)
    assert np.all(np.abs(p - (1 / 8 + asin / (4 * np.pi))) < 1e-14)
    assert np.all(err < 1e-10)


@pytest.mark.parametrize("m", [3, 4, 5])
def test_a_batch_of_equicorrelated_orthants_is_the_one_dimensional_integral(m: int) -> None:
    rs, mus = [0.05, 0.5, 0.95], [-1.5, -0.3, 0.4]
    cov = np.stack([1.7 * ((1 - r) * np.eye(m) + r * np.ones((m, m))) for r in rs for _ in mus])
    mean = np.stack([np.full(m, mu) for _ in rs for mu in mus])
    p, err = orthant_probability_batch(mean, cov, return_error=True)
    for i in range(len(p)):
        ref, ref_err = equicorrelated_orthant(mean[i], cov[i])
        assert abs(p[i] - ref) <= err[i] + ref_err + 1e-14


@pytest.mark.parametrize("m", [3, 4, 5])
def test_the_pivoted_factor_of_a_stack_is_a_cholesky_factor_in_genz_bretz_order(m: int) -> None:
    """``L L^T`` is the correlation matrix in the pivot order, and the first pivot is the
    variable of the smallest marginal probability (the most restrictive)."""
    rng = np.random.default_rng(m)
    mean, cov = _stack(rng, m, 7)
    sd = np.sqrt(np.diagonal(cov, axis1=1, axis2=2))
    b = -mean / sd
    corr = cov / sd[:, :, None] / sd[:, None, :]
    a_o, b_o, L, rank = orthant._pivoted_factor(np.full(b.shape, -np.inf), b, corr)
    assert np.all(rank == m) and np.all(np.isneginf(a_o))
    for i in range(7):
        perm = [int(np.nonzero(b[i] == v)[0][0]) for v in b_o[i]]
        assert sorted(perm) == list(range(m))
        np.testing.assert_allclose(L[i] @ L[i].T, corr[i][np.ix_(perm, perm)], atol=1e-13)
        assert np.allclose(np.triu(L[i], 1), 0.0)
        assert b_o[i, 0] == b[i].min()


def test_an_empty_batch_of_three_variables() -> None:
    p, err = orthant_probability_batch(np.zeros((0, 3)), np.zeros((0, 3, 3)), return_error=True)
    assert p.shape == err.shape == (0,)


@pytest.mark.parametrize("K", [4, 5])
def test_the_square_loss_errors_of_all_clusters_at_once_are_each_clusters_orthant(K: int) -> None:
    """The batched test and training accuracies of a K-class square-loss fixed point against
    one :func:`orthant_probability` per cluster (clusters of different sizes and spreads: no
    symmetry), and their reported errors."""
    rng = np.random.default_rng(K)
    means = rng.normal(size=(K, 60)) * 0.6
    covs = np.stack([(1.0 + 0.2 * c) * np.eye(60) for c in range(K)])
    mix = gm.Mixture.dense(means, covs, rho=np.arange(1, K + 1) / (K * (K + 1) / 2))
    res = gm.solve(mix, "square", lam=0.1, alpha=1.5)
    problem = gm.make_problem(mix, "square", lam=0.1, alpha=1.5)
    # (the solver's own state: the square loss's K - 1 outputs orthogonal to the ones)
    Q, M, V, b = res.state.unpack()
    acc, err = accuracy(problem, M, b, Q)
    tacc, terr = train_accuracy(problem, M, b, Q, V)
    A = np.linalg.inv(np.eye(K - 1) + V)
    for c, (D, t) in enumerate(problem.constraints):
        cov = D @ Q[c] @ D.T
        p, e = orthant_probability(D @ (M[c] + b) - t, 0.5 * (cov + cov.T))
        assert abs(acc[c] - p) <= 1e-14
        mh = A[c] @ (M[c] + b + V[c] @ (problem.y[c] @ problem.P.T))  # (labels P y there)
        cov = D @ A[c] @ Q[c] @ A[c] @ D.T
        p, e2 = orthant_probability(D @ mh - t, 0.5 * (cov + cov.T))
        assert abs(tacc[c] - p) <= 1e-14
        # the largest cluster's (the batch is each problem alone to rounding, so its
        # rules' differences are too: within a few ulps of 1)
        assert e2 <= terr + 4 * np.finfo(float).eps
    assert 0 < err < 1e-9 and 0 < terr < 1e-9


def _counted_batch(
    monkeypatch: pytest.MonkeyPatch, mean: np.ndarray, cov: np.ndarray
) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """``orthant_probability_batch(mean, cov)`` with its error, and the sizes of the stacks
    the nested rule or Plackett's reduction (four variables) was called on (how many distinct
    problems they integrated)."""
    sizes: list[int] = []
    rule, reduction = orthant._nested_pair_rule, orthant.plackett_orthant4

    def counted(a: np.ndarray, b: np.ndarray, L: np.ndarray, q: int) -> np.ndarray:
        sizes.append(a.shape[0])
        return rule(a, b, L, q)

    def counted_reduction(b: np.ndarray, R: np.ndarray, abs_tol: float):
        sizes.append(b.shape[0])
        return reduction(b, R, abs_tol)

    with monkeypatch.context() as patch:
        patch.setattr(orthant, "_nested_pair_rule", counted)
        patch.setattr(orthant, "plackett_orthant4", counted_reduction)
        p, err = orthant_probability_batch(mean, cov, return_error=True)
    return p, err, sizes


@pytest.mark.parametrize("m", [4, 5])
def test_permuted_problems_are_integrated_once(m: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """A problem and its relabellings (the orthants of exchangeable clusters) are one problem
    after the pivoting: a stack of permutations of two problems evaluates two, and every
    result is its problem's alone, within its error estimate."""
    rng = np.random.default_rng(70 + m)
    base_mean, base_cov = _stack(rng, m, 2)
    mean, cov = [], []
    for _ in range(4):
        for j in range(2):
            perm = rng.permutation(m)
            mean.append(base_mean[j][perm])
            cov.append(base_cov[j][np.ix_(perm, perm)])
    mean, cov = np.array(mean), np.array(cov)
    p, err, sizes = _counted_batch(monkeypatch, mean, cov)
    assert sizes[0] == 2
    for i in range(mean.shape[0]):
        q, e = orthant_probability(mean[i], cov[i])
        assert abs(p[i] - q) <= err[i] + e
        assert err[i] < 1e-10


def test_the_bound_of_nearly_equal_problems_holds(monkeypatch: pytest.MonkeyPatch) -> None:
    """Problems matched to another one within the matching tolerance take its value and add
    the bound on the difference (derivatives in the limits and, by Plackett's identity, in the
    correlations) to their error estimate.  With the tolerance widened to 0.05 the bound is
    tested where it matters: every matched problem's value is within its estimate of the
    problem's own, and the bound is not vacuous (below 0.2)."""
    rng = np.random.default_rng(5)
    m = 4
    mean0, cov0 = _stack(rng, m, 1)
    sd = np.sqrt(np.diag(cov0[0]))
    corr0 = cov0[0] / np.outer(sd, sd)
    # (distinct limits: the perturbations keep the pivot order)
    mean, cov = [np.array([-0.9, -0.4, 0.1, 0.6])], [corr0]
    for _ in range(6):
        dm = rng.uniform(-0.005, 0.005, m)
        E = rng.uniform(-0.005, 0.005, (m, m))
        E = np.triu(E, 1) + np.triu(E, 1).T
        mean.append(mean[0] + dm)
        cov.append(corr0 + E)
    mean, cov = np.array(mean), np.array(cov)
    alone = [orthant_probability(mean[i], cov[i]) for i in range(len(mean))]
    monkeypatch.setattr(orthant, "_SAME_TOL", 0.05)
    p, err, sizes = _counted_batch(monkeypatch, mean, cov)
    assert sizes[0] == 1  # all matched to the first
    gaps = np.array([abs(p[i] - alone[i][0]) for i in range(len(p))])
    assert np.all(gaps <= err + np.array([e for _, e in alone]))
    assert np.all(gaps[1:] > 1e-6) and np.all(err[1:] < 0.2)
