"""The compiled channel's array work and the compiled cross-entropy risk give numpy's and the
general kernel's numbers to the bit (``gaussmix.theory.numerics.channel_arrays``,
``gaussmix.theory.numerics.ce_risk``): they replace those computations on the solver's path,
where ``benchmarks/check_bits.py`` holds the curves to the bit."""

from __future__ import annotations

import numpy as np
import pytest

from gaussmix.theory.channel.losses import solve_batch
from gaussmix.theory.numerics import kernels
from gaussmix.theory.numerics.ce_risk import _ce_value, ce3_risk, ce_risk
from gaussmix.theory.numerics.channel_arrays import (
    inverse_metrics,
    metric_coordinates,
    shifted_nodes,
)
from gaussmix.theory.numerics.linalg import complement_of_ones


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal to the bit (``-0.0`` is not ``0.0``, a NaN its own bytes)."""
    a, b = np.ascontiguousarray(a, dtype=float), np.ascontiguousarray(b, dtype=float)
    return a.shape == b.shape and np.array_equal(a.view(np.int64), b.view(np.int64))


def _metrics(rng: np.random.Generator, K: int, L: int) -> np.ndarray:
    """Metrics over many scales, symmetric and not (the channel's ``V`` before and after
    its symmetrisation), some with negative entries, one nearly singular."""
    A = rng.normal(size=(K, L, L)) * 10.0 ** rng.uniform(-8, 4, (K, 1, 1))
    V = A @ np.swapaxes(A, -1, -2) + 1e-3 * rng.uniform(size=(K, 1, 1)) * np.eye(L)
    V[::3] += 1e-9 * rng.normal(size=V[::3].shape)  # (not symmetric)
    V[-1, 0, 0] = -abs(V[-1, 0, 0])  # (indefinite: the formulas, not a metric)
    return V


@pytest.mark.parametrize("L", [1, 2, 3])
def test_channel_arrays_are_numpys_to_the_bit(L: int) -> None:
    rng = np.random.default_rng(L)
    K, N = 7, 301
    V = _metrics(rng, K, L)
    h = rng.normal(size=(K, N, L)) * 10.0 ** rng.uniform(-6, 3, (K, N, 1))
    omega = h + rng.normal(size=(K, N, L)) * 10.0 ** rng.uniform(-12, 1, (K, N, 1))
    m = rng.normal(size=(K, L))
    xs = rng.normal(size=(K, N, L))
    out = np.empty((K + 2, N, L))  # rows of a larger array, as the channel's parts write
    shifted_nodes(m, xs, out[1 : K + 1])
    assert _same_bits(out[1 : K + 1], np.add(m[:, None, :], xs))
    f = metric_coordinates(V, h, omega)
    inv = inverse_metrics(V)
    if L > 2:  # (LAPACK's: not compiled)
        assert f is None and inv is None
        return
    assert _same_bits(f, solve_batch(V[:, None], h - omega))
    if L == 2:
        assert _same_bits(inv, solve_batch(V, np.broadcast_to(np.eye(L), V.shape)))
    else:
        assert inv is None


@pytest.mark.parametrize("n_classes", [3, 4, 6])
def test_compiled_risk_is_the_kernels_loss_to_the_bit(n_classes: int) -> None:
    """``_ce_value`` is the loss of the channel kernel's node evaluation (``_ce_eval``) and
    ``ce3_risk`` is ``ce_risk`` for three classes, bit for bit, on far and near logits."""
    rng = np.random.default_rng(n_classes)
    L = n_classes - 1
    P = np.ascontiguousarray(complement_of_ones(n_classes))
    z, p, Pp, gr = (np.empty(n) for n in (n_classes, n_classes, L, L))
    for scale in (1e-3, 1.0, 30.0, 800.0):
        for _ in range(50):
            u = scale * rng.normal(size=L)
            yc = int(rng.integers(n_classes))
            want = kernels._ce_eval(u, P, yc, z, p, Pp, gr)
            assert _same_bits(np.array(_ce_value(u, P, yc, np.empty(n_classes))), np.array(want))
    K, N = 5, 257
    ylab = rng.integers(n_classes, size=K).astype(np.int64)
    m = rng.normal(size=(K, L)) * 3.0
    A = rng.normal(size=(K, L, L))
    S = np.ascontiguousarray(A + np.swapaxes(A, -1, -2))
    xi, w = rng.normal(size=(N, L)), rng.uniform(size=N)
    general = ce_risk(ylab, P, m, S, xi, w)
    assert np.all(np.isfinite(general))
    if n_classes == 3:
        assert _same_bits(ce3_risk(ylab, P, m, S, xi, w), general)
