"""Four-variable orthants by Plackett's reduction
(:func:`gaussmix.theory.numerics.plackett.plackett_orthant4`) against independent answers:
the nested two-dimensional rule of 64 x 64 nodes (another algorithm), a closed form (block
correlations), the rule of 400 nodes (the error estimate is an upper bound where the reduction
is taken), and randomised quasi-Monte Carlo within its standard errors; the gate on
near-singular correlations and the per-problem refinement."""

from __future__ import annotations

import numpy as np
import pytest

from gaussmix.theory.numerics import orthant, plackett
from gaussmix.theory.numerics.bivariate import bvn_cdf
from gaussmix.theory.numerics.orthant import orthant_probability_batch
from gaussmix.theory.numerics.plackett import PLACKETT_MIN_EIG, plackett_orthant4


def _problems(
    rng: np.random.Generator, n: int, df: int, scale: float
) -> tuple[np.ndarray, np.ndarray]:
    """``n`` limits of scale ``scale`` and normalised Wishart correlations of ``df`` degrees of
    freedom (plus ``1e-3 I``: small ``df``, nearly singular)."""
    G = rng.standard_normal((n, 4, df))
    S = G @ np.swapaxes(G, 1, 2) + 1e-3 * np.eye(4)
    d = np.sqrt(np.einsum("bii->bi", S))
    return scale * rng.standard_normal((n, 4)), S / d[:, :, None] / d[:, None, :]


def _nested(b: np.ndarray, R: np.ndarray, q: int) -> np.ndarray:
    """The nested rule of ``q x q`` outer nodes (the deterministic path of five and, before
    the reduction, four variables)."""
    a, bo, L, rank = orthant._pivoted_factor(np.full(b.shape, -np.inf), b, R)
    assert np.all(rank == 4)
    return orthant._nested_pair_rule(a, bo, L, q)


@pytest.mark.parametrize("df,scale", [(8, 0.5), (8, 2.0), (5, 1.0), (4, 1.0)])
def test_the_reduction_is_the_nested_rule_within_its_error(df: int, scale: float) -> None:
    b, R = _problems(np.random.default_rng(df * 10 + int(scale)), 60, df, scale)
    p, err, ok = plackett_orthant4(b, R, 1e-10)
    taken = np.linalg.eigvalsh(R)[:, 0] >= PLACKETT_MIN_EIG
    assert np.array_equal(ok, taken) and ok.sum() >= 20
    ref, finer = _nested(b[ok], R[ok], 64), _nested(b[ok], R[ok], 96)
    ref_err = np.abs(finer - ref)  # (a bound on the coarser one's error: geometric rule)
    assert np.all(np.abs(p[ok] - finer) <= err[ok] + ref_err + 1e-14)
    assert np.all(err[ok] <= 1e-10)


def test_the_error_estimate_bounds_the_error_where_the_reduction_is_taken() -> None:
    """The difference of the last two rules against the rule of 400 nodes, on problems down
    to the gate's smallest eigenvalue (the module's measured claim, on other draws)."""
    rng = np.random.default_rng(2)
    bs, Rs = zip(*(_problems(rng, 200, df, s) for df in (3, 4, 5) for s in (0.3, 1.0, 3.0)))
    b, R = np.concatenate(bs), np.concatenate(Rs)
    p, err, ok = plackett_orthant4(b, R, 1e-10)
    assert ok.sum() >= 600
    bo, Ro = plackett._arrange(b[ok], R[ok])
    base = bvn_cdf(bo[:, 0], bo[:, 1], Ro[:, 0, 1]) * bvn_cdf(bo[:, 2], bo[:, 3], Ro[:, 2, 3])
    ref = plackett._plackett_rule(bo, Ro, base, 400)
    assert np.all(np.abs(p[ok] - ref) <= err[ok] + 1e-14)


def test_block_correlations_are_the_product_of_two_bivariate_cdfs() -> None:
    """No cross correlation: the reduction's starting point is the answer (closed form)."""
    rng = np.random.default_rng(4)
    b = rng.normal(size=(20, 4))
    R = np.tile(np.eye(4), (20, 1, 1))
    r1, r2 = rng.uniform(-0.95, 0.95, (2, 20))
    R[:, 0, 2] = R[:, 2, 0] = r1
    R[:, 1, 3] = R[:, 3, 1] = r2
    p, err, ok = plackett_orthant4(b, R, 1e-10)
    exact = bvn_cdf(b[:, 0], b[:, 2], r1) * bvn_cdf(b[:, 1], b[:, 3], r2)
    assert ok.all() and np.all(np.abs(p - exact) <= 1e-15)


def test_near_singular_correlations_are_left_to_the_nested_rule() -> None:
    """A correlation with its smallest eigenvalue below the gate is not taken, and the batched
    orthant gives it the nested rule's answer."""
    R = np.full((4, 4), 0.995) + 0.005 * np.eye(4)  # smallest eigenvalue 0.005
    b = np.array([[0.3, -0.2, 0.1, 0.5]])
    p, err, ok = plackett_orthant4(b, R[None], 1e-10)
    assert not ok[0] and np.isnan(p[0]) and np.isnan(err[0])
    q, e = orthant_probability_batch(-b, R[None], return_error=True)
    a, bo, L, _ = orthant._pivoted_factor(np.full((1, 4), -np.inf), b, R[None])
    nested, nested_err = orthant._sov_tensor(a, bo, L, 1e-10)
    assert q[0] == nested[0] and e[0] == nested_err[0]


def test_each_problem_is_refined_alone() -> None:
    """Problems of one stack that need different rules (the Kronrod pair, then 27 nodes up
    to 90) each get the rules and the answer they get alone (to rounding)."""
    rng = np.random.default_rng(9)
    b, R = _problems(rng, 40, 4, 1.0)
    keep = np.linalg.eigvalsh(R)[:, 0] >= PLACKETT_MIN_EIG
    b, R = b[keep], R[keep]
    p, err, ok = plackett_orthant4(b, R, 1e-10)
    for i in range(b.shape[0]):
        q, e, o = plackett_orthant4(b[i : i + 1], R[i : i + 1], 1e-10)
        assert o[0] == ok[i] and abs(q[0] - p[i]) <= 1e-15
        assert e[0] == pytest.approx(err[i], rel=1e-6, abs=1e-15)
    assert err.max() > 1e3 * err.min()  # (not all settled by the same two rules)


def test_an_empty_stack() -> None:
    p, err, ok = plackett_orthant4(np.zeros((0, 4)), np.zeros((0, 4, 4)), 1e-10)
    assert p.shape == err.shape == ok.shape == (0,)


@pytest.mark.parametrize("seed", range(3))
def test_random_orthants_agree_with_randomised_qmc(seed: int) -> None:
    """Against the seeded quasi-Monte Carlo path (an independent integrand) within four of
    its standard errors."""
    rng = np.random.default_rng(40 + seed)
    b, R = _problems(rng, 30, 6, 1.0)
    p, err, ok = plackett_orthant4(b, R, 1e-10)
    for i in np.nonzero(ok)[0][:5]:
        q, se = orthant._sov_rqmc(np.full(4, -np.inf), b[i], R[i], 0, 1e-10)
        assert abs(p[i] - q) <= 4 * se + err[i]


def test_the_kronrod_rule_is_exact_to_degree_31_and_holds_the_gauss_rule() -> None:
    """QUADPACK's 21-point Kronrod nodes and weights (transcribed): exact for the monomials
    of degree up to 31 on [-1, 1] (3n + 1 for n = 10), its odd nodes the 10-point Gauss
    rule's; in ``t`` on [0, 1] both rules integrate the substitution's Jacobian to 1."""
    xk, wk = np.array(plackett._KRONROD_NODES), np.array(plackett._KRONROD_WEIGHTS)
    x = np.concatenate([-xk[:-1], xk[::-1]])
    w = np.concatenate([wk[:-1], wk[::-1]])
    for d in range(32):
        exact = (1 - (-1) ** (d + 1)) / (d + 1)
        assert abs(w @ x**d - exact) <= 2e-15, d
    assert abs(w @ x**32 - 2 / 33) > 1e-12  # (not beyond)
    xg, _ = np.polynomial.legendre.leggauss(10)
    assert np.allclose(x[1::2], xg, rtol=0, atol=2e-16)
    t, wt, gauss, wg = plackett._kronrod_rule()
    assert np.all(np.diff(t) > 0) and t[0] > 0 and t[-1] < 1
    assert abs(wt.sum() - 1) <= 1e-15 and abs(wg.sum() - 1) <= 1e-15
    np.testing.assert_allclose(t[gauss] @ wg, t @ wt, rtol=0, atol=1e-15)
