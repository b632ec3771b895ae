"""The derivative of the test error with respect to lambda through the fixed point
(implicit differentiation of Theorem 1's map); used by the optimal-lambda search
(:mod:`gaussmix.experiments.lambda_star`) and public as
:func:`gaussmix.d_test_error_d_lambda`."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from gaussmix.theory.solve.observables import test_accuracy
from gaussmix.theory.solve.solver import FixedPointResult

__all__ = ["d_test_error_d_lambda"]


def d_test_error_d_lambda(result: FixedPointResult, *, rel_step: float = 1e-6) -> float:
    """``d eps_g / d lambda`` at a fixed point, by implicit differentiation.

    With ``x* = T(x*; lambda)`` the fixed point of the map of Theorem 1,
    ``dx*/dlambda = (I - dT/dx)^{-1} dT/dlambda``, and
    ``d eps_g / d lambda = grad_x eps_g(x*) . dx*/dlambda``.  The state is parametrised by
    its independent entries (each symmetric pair ``Q_c[i, j] = Q_c[j, i]``, ``V_c[i, j] =
    V_c[j, i]`` is one coordinate, perturbed on both sides, so every perturbed overlap stays
    symmetric).  The Jacobians of the (smooth) map and of ``eps_g(Q, M, b)`` are central
    differences with step ``rel_step max(1, |x_i|)`` (smaller for a tiny diagonal entry of
    ``Q_c`` or ``V_c``, which must stay positive; never for a signed entry: a bias of
    ``3e-16`` at a symmetric point, a step of ``3e-19`` there would turn the map's rounding
    into a Jacobian column of order ``1e2``); nothing is re-solved, so the cost is
    ``2 m + 2`` evaluations of the map for ``m`` independent entries.

    Parameters
    ----------
    result : FixedPointResult
        A converged fixed point of :func:`gaussmix.solve` (with its ``state``).
    rel_step : float
        Relative step of the central differences.

    Returns
    -------
    float
    """
    state = result.state
    if state is None or not result.success:
        raise ValueError("d_test_error_d_lambda needs a converged FixedPointResult")
    problem, x = state.problem, state.x
    if problem.lam <= 0:
        raise ValueError("d_test_error_d_lambda needs lam > 0")
    n = x.size
    coords = _independent_entries(problem.n_clusters, problem.dim)
    positive = _positive_entries(problem.n_clusters, problem.dim)
    rows = np.array([idx[0] for idx in coords])
    m = rows.size
    steps = [_fd_step(x[idx[0]], rel_step, idx[0] in positive) for idx in coords]
    T = state.map()
    J = np.empty((m, m))
    for k, idx in enumerate(coords):
        h = steps[k]
        e = np.zeros(n)
        e[idx] = h
        J[:, k] = ((T(x + e) - T(x - e)) / (2 * h))[rows]
    lam = problem.lam
    hl = rel_step * max(lam, 1e-300)
    Tp = state.map(replace(problem, lam=lam + hl))(x)
    Tm = state.map(replace(problem, lam=lam - hl))(x)
    dz = np.linalg.solve(np.eye(m) - J, ((Tp - Tm) / (2 * hl))[rows])
    rho = problem.mixture.test_priors  # (the test error's weights)

    def eps(xx: np.ndarray) -> float:
        Q, M, _, b = state.unpack(xx)
        return float(1.0 - rho @ test_accuracy(problem, M, b, Q)[0])

    g = np.empty(m)
    for k, idx in enumerate(coords):
        h = steps[k]
        e = np.zeros(n)
        e[idx] = h
        g[k] = (eps(x + e) - eps(x - e)) / (2 * h)
    return float(g @ dz)


def _independent_entries(K: int, L: int) -> list[np.ndarray]:
    """Indices into the state vector ``(Q, M, V, b)`` of each independent coordinate, in state
    order: a symmetric pair of an overlap matrix is one coordinate (its upper entry first),
    every other entry its own (for ``L = 1``: every entry, in order)."""
    n2 = K * L * L
    block = np.arange(n2).reshape(K, L, L)
    sym = [
        np.array([block[c, i, j], block[c, j, i]][: 1 + (i != j)])
        for c in range(K)
        for i in range(L)
        for j in range(L)
        if i <= j
    ]
    means = [np.array([n2 + i]) for i in range(K * L)]
    metrics = [idx + n2 + K * L for idx in sym]
    bias = [np.array([2 * n2 + K * L + i]) for i in range(L)]
    return sym + means + metrics + bias


def _positive_entries(K: int, L: int) -> frozenset[int]:
    """Indices into the state vector ``(Q, M, V, b)`` of the diagonal entries of every
    ``Q_c`` and ``V_c``: the only ones that must stay positive (the means, the bias and the
    off-diagonal overlaps are signed)."""
    n2 = K * L * L
    diag = [c * L * L + i * (L + 1) for c in range(K) for i in range(L)]
    return frozenset(diag + [n2 + K * L + j for j in diag])


def _fd_step(xi: float, rel_step: float, positive: bool) -> float:
    """The central difference's step at ``xi``: ``rel_step max(1, |xi|)``, or, for an entry
    that must stay positive (``positive``) and is below ``1e3`` times that, ``xi / 1e3``."""
    h = rel_step * max(1.0, abs(xi))
    return 1e-3 * xi if positive and 0.0 < xi < 1e3 * h else h
