"""The plain-float paths of a small state's evaluation give numpy's answers to the bit: the
cone tests of a state of one output (``is_valid_state``, ``q_is_psd``) and the Anderson
mixing's linear solve."""

from __future__ import annotations

import numpy as np
import pytest

from gaussmix.theory.solve import iteration, state

#: entries that exercise every branch: signed zeros, the PSD tolerance's edge, large,
#: non-finite
_ENTRIES = [
    0.0,
    -0.0,
    1e-20,
    -1e-20,
    1.0,
    -1.0,
    2.5,
    -1e-13,
    1e-13,
    np.nan,
    np.inf,
    -np.inf,
    1e300,
]


@pytest.mark.parametrize("K", [1, 2, 3, 5])
def test_small_state_tests_are_numpys(K: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(K)
    p = np.array([10, 5, 5, 5, 20, 10, 10, 10, 10, 5, 4, 3, 3], dtype=float)
    xs = rng.choice(_ENTRIES, size=(4000, 3 * K + 1), p=p / p.sum())
    fast = [(state.is_valid_state(x, K, 1), state.q_is_psd(x, K, 1)) for x in xs]
    monkeypatch.setattr(state, "_SMALL_STATE", -1)  # every state through the numpy path
    slow = [(state.is_valid_state(x, K, 1), state.q_is_psd(x, K, 1)) for x in xs]
    assert fast == slow
    assert {v for v, _ in fast} == {True, False}  # both answers occur


def test_solve_is_numpys_to_the_bit() -> None:
    rng = np.random.default_rng(0)
    for m in range(1, 7):
        for _ in range(50):
            dR = rng.standard_normal((7, m))
            A = dR.T @ dR + 1e-3 * np.eye(m)
            b = rng.standard_normal(m)
            assert np.array_equal(iteration._solve(A, b), np.linalg.solve(A, b))


def test_stacked_solve_is_numpys_to_the_bit() -> None:
    """A block-mixed step's systems, one per block (``A`` (n, m, m), ``b`` (n, m), ``b`` a
    strided view as the step's sums give it): ``np.linalg.solve``'s numbers."""
    rng = np.random.default_rng(1)
    for m in range(1, 7):
        for n in (1, 2, 20):
            dR = rng.standard_normal((n, 7, m))
            A = dR.transpose(0, 2, 1) @ dR + 1e-3 * np.eye(m)
            b = rng.standard_normal((n, 2 * m))[:, m:]
            ref = np.linalg.solve(A, b[..., None])[..., 0]
            assert np.array_equal(iteration._solve(A, b), ref)


def test_solve_of_a_singular_matrix_raises() -> None:
    with np.errstate(invalid="ignore"), pytest.raises(np.linalg.LinAlgError):
        iteration._solve(np.zeros((2, 2)), np.ones(2))
    A = np.stack([np.eye(2), np.zeros((2, 2))])  # (one singular block of two)
    with np.errstate(invalid="ignore"), pytest.raises(np.linalg.LinAlgError):
        iteration._solve(A, np.ones((2, 2)))


def test_one_variable_orthant_check_is_the_eigenvalue_check() -> None:
    """The orthants' PSD check of 1 x 1 covariances (entries as eigenvalues) accepts and
    refuses what the general path (symmetry, then eigenvalues) does, with its message."""
    from gaussmix.theory.numerics import orthant

    def general(cov: np.ndarray) -> None:  # the path of two or more variables
        with np.errstate(invalid="ignore"):  # (inf - inf: NaN, which fails no test)
            asym = np.abs(cov - np.swapaxes(cov, -1, -2)).max(axis=(-2, -1))
        assert not np.any(asym > orthant.PSD_CHECK_RTOL * np.abs(cov).max(axis=(-2, -1)))
        orthant._check_eigenvalues("cov", orthant.sym_eigvals(cov))

    refused = 0
    for c in (0.0, -0.0, 1e-300, -1e-300, 2.0, -2.0, np.inf, -np.inf, np.nan):
        cov = np.array([[[1.0]], [[c]]])
        try:
            general(cov)
        except ValueError as exc:
            refused += 1
            with pytest.raises(ValueError, match="positive semi-definite") as fast:
                orthant._check_psd("cov", cov)
            assert str(fast.value) == str(exc)
        else:
            orthant._check_psd("cov", cov)
    assert refused == 2  # (-1e-300 and -2; -inf against an infinite scale is not)
    with pytest.raises(ValueError, match="positive semi-definite"):
        orthant.orthant_probability_batch(np.zeros((2, 1)), np.array([[[1.0]], [[-1.0]]]))


@pytest.mark.parametrize("K", [2, 3, 4, 6])
def test_stabilised_matrix_is_the_means(K: int) -> None:
    """Cluster 0's stabilised matrix (sums over counts, the trace once) is the label-space
    average by ``np.mean`` entry by entry, to the bit."""
    from gaussmix.theory.numerics.linalg import complement_of_ones
    from gaussmix.theory.problem.symmetry import ClusterSymmetry

    P = complement_of_ones(K)
    sym = ClusterSymmetry(P, np.zeros((K, K - 1, K - 1)))
    rng = np.random.default_rng(K)
    for _ in range(200):
        A = rng.standard_normal((K - 1, K - 1))
        A = A + A.T
        full = P.T @ A @ P
        want = np.empty_like(full)
        want[0, 0] = full[0, 0]
        want[0, 1:] = full[0, 1:].mean()
        want[1:, 0] = full[1:, 0].mean()
        rest = full[1:, 1:]
        want[1:, 1:] = (rest.sum() - np.trace(rest)) / max(1, (K - 1) * (K - 2))
        for j in range(1, K):
            want[j, j] = np.trace(rest) / (K - 1)
        assert np.array_equal(sym.stabilised_matrix(A), P @ want @ P.T)
