"""Tests of the compiled separation-of-variables integrand of the randomised orthant
(gaussmix.theory.numerics.sov_kernels): the integrand against a numpy evaluation of the same
formulas (the path it replaced, kept here as the reference), and the randomised orthant's
estimates with either.  Its normal functions are tested in ``test_normal_kernels.py``."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import ndtr, ndtri
from test_normal_kernels import _map_ndtri

from gaussmix.theory.numerics import orthant as o


def _numpy_integrand(factor, wt: np.ndarray, ndtri=ndtri) -> np.ndarray:
    """The separation-of-variables integrand in numpy, column by column over all points
    (the path the compiled kernel replaced; the first column's limits at every point), with
    scipy's inverse normal function or ``ndtri``."""
    npts = wt.shape[1]
    y = np.empty((factor.rank, npts))
    prod = np.ones(npts)
    for c, (U, LO, HI, two_sided) in enumerate(factor.columns):
        last = c == factor.rank - 1
        s = U @ y[:c] if c else np.zeros((len(HI), npts))
        hi = np.min(HI[:, None] - s, axis=0)
        if not two_sided:
            e = ndtr(hi)
            prod *= e
            if not last:
                y[c] = ndtri(e * wt[c])
        else:
            lo = np.max(LO[:, None] - s, axis=0)
            hi = np.maximum(hi, lo)
            upper = lo > 0
            p_lo = np.where(upper, ndtr(-lo), ndtr(lo))
            e = np.abs(np.where(upper, ndtr(-hi), ndtr(hi)) - p_lo)
            prod *= e
            if not last:
                with np.errstate(invalid="ignore"):
                    y[c] = np.where(upper, -ndtri(p_lo - wt[c] * e), ndtri(p_lo + wt[c] * e))
        if not last:
            np.clip(y[c], -o.YMAX, o.YMAX, out=y[c])
    return prod


def _problem(rng: np.random.Generator, m: int, kind: str):
    """A standardised rectangle ``P[a < X <= b]`` of ``m`` variables: ``orthant`` (one-sided),
    ``two`` (finite lower limits on half the variables, one limit infinite above),
    ``singular`` (a covariance of rank ``max(m - 2, 2)``: several constraints in a column)."""
    G = rng.standard_normal((m, m + 1 if kind != "singular" else max(m - 2, 2)))
    cov = G @ G.T / m
    sd = np.sqrt(np.diag(cov))
    corr = cov / np.outer(sd, sd)
    b = rng.standard_normal(m) + 0.5
    a = np.full(m, -np.inf)
    if kind == "two":
        a[::2] = b[::2] - 0.3 - rng.random(len(a[::2]))
        a[1] = 0.4  # an interval above the mean: the upper-tail branch
        b[1] = 1.5
        b[-1] = np.inf
    return a, b, corr


def _inverse_as241(p: np.ndarray) -> np.ndarray:
    p = np.asarray(p, dtype=float)
    return _map_ndtri(p.ravel()).reshape(p.shape)


@pytest.mark.parametrize("kind", ["orthant", "two", "singular"])
@pytest.mark.parametrize("m", [3, 5, 7, 9])
def test_compiled_integrand_matches_numpy(m: int, kind: str) -> None:
    """The compiled integrand against the numpy evaluation of the same formulas at 2,000
    random points (blocks of the kernel, a partial last one): with the same inverse normal
    function (AS241) within 1e-14 relative at every point (a singular factor: and of the
    largest value); with scipy's (the numpy path
    the kernel replaced) within 1e-14 of the largest value (the estimate is the mean of the
    values): at a point deep in a tail, or in a narrow two-sided interval, a deviate's
    last-bit difference (AS241 against cephes) moves ``Phi(h)`` relatively by ``|h|``, or
    by ``Phi(h) / e``, times as much, which is conditioning, not the kernel's error."""
    rng = np.random.default_rng(100 * m + len(kind))
    a, b, corr = _problem(rng, m, kind)
    factor = o._SOVFactor(a, b, corr)
    assert not factor.infeasible and factor.rank >= 2
    if kind == "two":
        assert any(col[3] for col in factor.columns)
    if kind == "singular":
        assert factor.rank == max(m - 2, 2)
        assert any(col[0].shape[0] > 1 for col in factor.columns)
    wt = rng.random((factor.rank - 1, 2000 + m))
    got = factor.integrand(wt)
    same = _numpy_integrand(factor, wt, _inverse_as241)
    assert np.all(np.isfinite(got)) and np.any(same > 0)
    # singular: a column's several constraints, whose loadings ``L / g`` can be large, sum
    # ``u . y`` in another order than numpy's product, a rounding of ``|u| |y|`` in ``h``
    atol = 1e-14 * same.max() if kind == "singular" else 0.0
    np.testing.assert_allclose(got, same, rtol=1e-14, atol=atol)
    ref = _numpy_integrand(factor, wt)
    np.testing.assert_allclose(got, ref, rtol=1e-14, atol=1e-14 * ref.max())


def test_compiled_integrand_constant() -> None:
    """One random variable (rank 1): the integrand is the first column's probability, a
    constant, the same as numpy's."""
    corr = np.ones((3, 3))
    factor = o._SOVFactor(np.array([-np.inf, -0.5, -np.inf]), np.array([0.3, 1.0, 0.2]), corr)
    assert factor.rank == 1
    got = factor.integrand(np.zeros((0, 1)))
    np.testing.assert_allclose(got, _numpy_integrand(factor, np.zeros((0, 1))), rtol=1e-15)
    np.testing.assert_allclose(got[0], ndtr(0.2) - ndtr(-0.5), rtol=1e-14)


@pytest.mark.parametrize("kind", ["orthant", "two"])
def test_sov_rqmc_estimates_as_numpy(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The randomised orthant's estimate and error with the compiled integrand and with the
    numpy one: equal to rounding (1e-13), far within the estimate's error."""
    rng = np.random.default_rng(5)
    a, b, corr = _problem(rng, 8, kind)
    p, err = o._sov_rqmc(a, b, corr, 3, 1e-5)
    monkeypatch.setattr(o._SOVFactor, "integrand", _numpy_integrand)
    q, e = o._sov_rqmc(a, b, corr, 3, 1e-5)
    assert 0.0 < p < 1.0 and err > 0.0
    assert abs(p - q) <= 1e-13 and abs(err - e) <= 1e-13 + 1e-9 * e
