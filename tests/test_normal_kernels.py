"""Tests of the engine's compiled normal distribution function and its inverse
(gaussmix.theory.numerics.normal_kernels): ``ndtr_scalar`` against scipy's ``ndtr`` to the
bit over the whole line, far tails included, and against an independent tail expansion;
``ndtri_scalar`` against scipy's ``ndtri``."""

from __future__ import annotations

import math

import numpy as np
from numba import njit
from scipy.special import ndtr, ndtri

from gaussmix.theory.numerics.normal_kernels import ndtr_scalar, ndtri_scalar

EPS = np.finfo(float).eps


@njit(cache=False)
def _map_ndtr(x: np.ndarray) -> np.ndarray:
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = ndtr_scalar(x[i])
    return out


@njit(cache=False)
def _map_ndtri(p: np.ndarray) -> np.ndarray:
    out = np.empty_like(p)
    for i in range(p.shape[0]):
        out[i] = ndtri_scalar(p[i])
    return out


def test_ndtr_scalar_is_scipys() -> None:
    """cephes' ``ndtr`` written out: scipy's values to the bit over the whole line (the
    ``erf`` branch, both ``erfc`` branches, the lower tail to its underflow near ``-37.7``
    and beyond, the upper tail where it rounds to 1), at the branches' edges; +-inf; NaN."""
    rng = np.random.default_rng(0)
    edges = np.sqrt(2.0) * np.array([-8.0, -1.0, 1.0, 8.0])
    x = np.concatenate(
        [
            rng.uniform(-40.0, 40.0, 20000),
            3.0 * rng.standard_normal(20000),
            -(10.0 ** rng.uniform(-3.0, np.log10(40.0), 10000)),
            edges,
            np.nextafter(edges, 0.0),
            np.nextafter(edges, np.array([-np.inf, -np.inf, np.inf, np.inf])),
            [0.0, -0.0, 1e-300, -1e-300, 37.5, -37.5, -37.7, -38.5, -39.0, np.inf, -np.inf],
        ]
    )
    np.testing.assert_array_equal(_map_ndtr(x), ndtr(x))
    assert np.isnan(_map_ndtr(np.array([np.nan]))[0])


def _tail_reference(a: float) -> float:
    """``Phi(a)`` for ``a <= -10`` from the asymptotic expansion of Mills' ratio,
    ``phi(a) / |a| sum_n (-1)^n (2n - 1)!! / a^(2n)`` (20 terms: the first omitted below
    ``3e-17`` relative), with ``a^2`` split exactly (``a = h + l``, ``h`` of 26 bits) so that
    ``exp(-a^2 / 2)`` carries only its own rounding."""
    h = float(np.float32(a))  # 24 bits: h * h exact
    l = a - h
    dens = math.exp(-0.5 * h * h) * math.exp(-(h * l + 0.5 * l * l)) / math.sqrt(2.0 * math.pi)
    term, total = 1.0, 1.0
    for n in range(1, 20):
        term *= -(2 * n - 1) / (a * a)
        total += term
    return dens / abs(a) * total


def test_ndtr_scalar_lower_tail_against_expansion() -> None:
    """The lower tail against an independent evaluation (:func:`_tail_reference`), within the
    rounding the computation implies: ``x = a * fl(1 / sqrt 2)`` (the constant rounded by
    0.62 units of ``eps / 2``, the product by at most 1) and ``x * x`` (at most 1) moved
    through ``exp(-x^2)`` by ``2 x^2`` and ``x^2`` times their relative rounding: at most
    ``(1.62 a^2 + a^2 / 2) eps / 2``, about ``1.06 a^2 eps``, plus a few for the rational
    function and the reference (measured: up to ``0.99 a^2 eps``; the reference within
    ``3 eps`` of a 200-bit evaluation)."""
    a = -np.concatenate(
        [np.linspace(10.0, 37.5, 400), np.random.default_rng(2).uniform(10, 37.5, 400)]
    )
    got = _map_ndtr(a)
    ref = np.array([_tail_reference(v) for v in a])
    rel = np.abs(got - ref) / ref
    assert np.all(rel <= (1.1 * a * a + 8.0) * EPS)


def test_ndtri_scalar_against_scipy() -> None:
    """Wichura's AS241 against scipy's ``ndtri`` (cephes) over ``(0, 1)``: the central
    branch, both tails down to ``1e-300`` and up to ``1 - 1e-16``, within 1e-14 relative
    (measured: 1.1e-15, the two algorithms' rounding); 0, 1 and values outside ``[0, 1]``
    as scipy's (``-inf``, ``inf``, NaN)."""
    rng = np.random.default_rng(1)
    p = np.concatenate(
        [
            rng.random(20000),
            10.0 ** rng.uniform(-300.0, -1.0, 10000),
            1.0 - 10.0 ** rng.uniform(-16.0, -1.0, 10000),
            [1e-300, 1e-16, 0.075, 0.925, 0.5, 1.0 - 1e-16, np.exp(-25.0)],
        ]
    )
    np.testing.assert_allclose(_map_ndtri(p), ndtri(p), rtol=1e-14, atol=0.0)
    edge = np.array([0.0, 1.0, -0.1, 1.1, np.nan])
    np.testing.assert_array_equal(_map_ndtri(edge), ndtri(edge))


def test_ndtri_scalar_inverts_ndtr_scalar() -> None:
    """The two are each other's inverse where ``Phi`` is well conditioned: ``Phi^{-1}(Phi(a))``
    returns ``a`` within the rounding of ``Phi(a)`` moved by ``Phi / (|a| phi)``."""
    a = np.linspace(-30.0, 5.0, 3501)
    p = _map_ndtr(a)
    back = _map_ndtri(p)
    cond = p / (np.exp(-0.5 * a * a) / np.sqrt(2.0 * np.pi)) / np.maximum(np.abs(a), 1.0)
    np.testing.assert_array_less(
        np.abs(back - a), (cond + 1.0) * 8.0 * EPS * np.maximum(np.abs(a), 1.0) + 1e-300
    )
