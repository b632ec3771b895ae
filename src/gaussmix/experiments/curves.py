"""Curves of fixed points: learning curves over alpha and sweeps over lambda.

Both walk along the curve with warm starts (continuation) and return tidy pandas tables,
one row per point.  :func:`d_test_error_d_lambda` differentiates ``eps_g`` with respect to
lambda through the fixed point.  Sweeps over lambda run from large to small lambda
(annealing, Appendix B numerical note 1) whatever the order asked for, then report in the
order asked for.
The optimal penalty (``optimal_lambda``, ``optimal_lambda_curve``, ``OptimalLambdaResult``)
lives in :mod:`gaussmix.experiments.lambda_star`; the names are still importable from
here.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from gaussmix.core.exceptions import ConvergenceError, ConvergenceWarning
from gaussmix.core.progress import progress_bar
from gaussmix.core.validation import check_param, check_param_values
from gaussmix.theory.losses import Loss
from gaussmix.theory.mixture import Mixture
from gaussmix.theory.observables import test_accuracy
from gaussmix.theory.problem import make_problem
from gaussmix.theory.quadrature import GaussHermite, default_rule
from gaussmix.theory.solver import FixedPointResult, solve_problem

__all__ = [
    "learning_curve",
    "lambda_sweep",
    "parse_range",
    "d_test_error_d_lambda",
]

#: names that moved to :mod:`gaussmix.experiments.lambda_star` (imported on first use:
#: that module imports this one)
_MOVED = ("optimal_lambda", "optimal_lambda_curve", "OptimalLambdaResult")


def __getattr__(name: str) -> Any:
    if name in _MOVED:
        from . import lambda_star as _module

        return getattr(_module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def parse_range(spec: str, *, name: str = "alphas", log: bool | None = None) -> np.ndarray:
    """Parse ``'start:stop:num'`` (linear) or ``'log:start:stop:num'`` into an array."""
    parts = spec.split(":")
    is_log = False
    if parts and parts[0] == "log":
        is_log, parts = True, parts[1:]
    if log is not None:
        is_log = log
    if len(parts) != 3:
        raise ValueError(
            f"{name} must look like 'start:stop:num' (or 'log:start:stop:num'), got {spec!r}"
        )
    try:
        start, stop, num = float(parts[0]), float(parts[1]), int(parts[2])
    except ValueError as exc:
        raise ValueError(f"{name}: cannot parse {spec!r} as start:stop:num") from exc
    if num < 1:
        raise ValueError(f"{name}: the number of points must be >= 1, got {num}")
    if is_log:
        if start <= 0 or stop <= 0:
            raise ValueError(f"{name}: a log range needs positive ends, got {spec!r}")
        return np.geomspace(start, stop, num)
    if num == 1:  # its start (linspace computes start + 0 * step: NaN for start = inf)
        return np.array([start])
    return np.linspace(start, stop, num)


def _row(res: FixedPointResult | None, **coords: Any) -> dict:
    if res is None:
        base = {
            "test_error": np.nan,
            "train_error": np.nan,
            "train_loss": np.nan,
            "free_energy": np.nan,
            "penalty_value": np.nan,
            "nonzero_fraction": np.nan,
            "nonzero_fraction_support": np.nan,
            "nonzero_fraction_off_support": np.nan,
            "l1_norm": np.nan,
            "converged": False,
            "n_iter": 0,
            "residual": np.nan,
            "integration_error": np.nan,
        }
    else:
        base = res.summary()
    return {**coords, **base}


def _curve(
    mixture: Mixture,
    loss: str | Loss,
    points: list[tuple[float, float]],
    *,
    penalty: str,
    progress: bool,
    desc: str,
    solve_kw: dict,
    l1_ratio: float | None = None,
    carry_rule: bool = False,
) -> list[FixedPointResult | None]:
    """Solve ``points`` in order, each warm-started from the previous ones.

    With ``carry_rule`` (annealing in lambda: the channel integrand sharpens as lambda
    decreases) each point starts from the quadrature rule its predecessor found accurate
    (:func:`_next_start_rule`), so that its own refinements (at most ``max_refine``) go
    beyond it instead of starting again from the default rule; not when the caller fixes
    ``quadrature``.
    """
    kw = dict(solve_kw)
    carry_rule = carry_rule and "quadrature" not in solve_kw
    results: list[FixedPointResult | None] = []
    done: list[tuple[float, FixedPointResult]] = []  # (curve parameter, result)
    history: dict = {}  # Anderson secant pairs (per quadrature rule) carried along the curve
    last: Exception | None = None
    for lam, alpha in progress_bar(points, desc=desc, enabled=progress, leave=False):
        problem = make_problem(
            mixture, loss, lam=lam, alpha=alpha, penalty=penalty, l1_ratio=l1_ratio
        )
        param = alpha if desc == "alpha" else np.log(max(lam, 1e-300))
        res: FixedPointResult | None = None
        for init in _warm_starts(done, param):
            try:
                res = solve_problem(problem, init=init, throw=True, history=history, **kw)
                break
            except ConvergenceError as exc:
                res = None
                last = exc
                history.clear()
        if res is None:
            warnings.warn(
                f"no fixed point at lam={lam:g}, alpha={alpha:g}: {last}; reported as NaN",
                ConvergenceWarning,
                stacklevel=3,
            )
        else:
            done.append((param, res))
            if carry_rule:
                start = _next_start_rule(res, kw.get("quadrature") or default_rule(problem.dim))
                if start is not None:
                    kw["quadrature"] = start
        results.append(res)
    return results


def _next_start_rule(res: FixedPointResult, base: GaussHermite) -> GaussHermite | None:
    """The rule the next point of an annealing starts from: the last rule that ``res``'s
    refinement (from ``base``) judged accurate, i.e. the one before the finest rule reached
    (whose only role was to estimate the error), so that the rule grows only where a
    point needed more than one refinement.  None for a closed-form channel."""
    final = res.state.rule if res.state is not None else None
    if res.params.get("quadrature") == "closed-form" or not isinstance(final, GaussHermite):
        return None
    prev, rule = base, base
    while rule is not None and rule != final:
        prev, rule = rule, rule.refined()
    return prev if rule == final else base


def _warm_starts(done: list, param: float) -> list:
    """Initial points to try, best first: a secant predictor through the last two points of
    the curve, the last point, a cold start."""
    starts: list = []
    if len(done) >= 2 and done[-1][0] != done[-2][0]:
        (p1, r1), (p2, r2) = done[-2], done[-1]
        s = (param - p2) / (p2 - p1)
        starts.append(
            {
                k: getattr(r2, k) + s * (getattr(r2, k) - getattr(r1, k))
                for k in ("Q", "M", "V", "b")
            }
        )
    if done:
        starts.append(done[-1][1])
    starts.append(None)
    return starts


def learning_curve(
    mixture: Mixture,
    loss: str | Loss,
    alphas: Sequence[float] | np.ndarray,
    *,
    lam: float,
    penalty: str = "l2",
    l1_ratio: float | None = None,
    progress: bool = False,
    return_results: bool = False,
    **solve_kw: Any,
) -> pd.DataFrame | tuple[pd.DataFrame, list]:
    """Theory learning curve: Theorem 2 errors at each ``alpha``, warm-started.

    Parameters
    ----------
    mixture, loss, lam, penalty, l1_ratio
        As in :func:`gaussmix.solve`.
    alphas : sequence of float
        Sample complexities (each > 0).
    progress : bool
        Show a progress bar.
    return_results : bool
        Also return the list of :class:`FixedPointResult` (None where no fixed point).
    **solve_kw
        Passed to the solver (``tol``, ``quadrature``, ``max_iter``, ...).

    Returns
    -------
    pandas.DataFrame
        Columns ``alpha, lam, test_error, train_error, train_loss, free_energy,
        penalty_value, nonzero_fraction, nonzero_fraction_support,
        nonzero_fraction_off_support, l1_norm, converged, n_iter, residual,
        integration_error``.  Points without a
        valid fixed point are NaN with ``converged=False`` (and a ConvergenceWarning).
    """
    a = check_param_values("alpha", alphas, name="alphas")
    lam = check_param("lam", lam)
    points = [(lam, float(x)) for x in a]
    res = _curve(
        mixture,
        loss,
        points,
        penalty=penalty,
        progress=progress,
        desc="alpha",
        solve_kw=solve_kw,
        l1_ratio=l1_ratio,
    )
    df = pd.DataFrame([_row(r, alpha=al, lam=float(lam)) for r, (_, al) in zip(res, points)])
    return (df, res) if return_results else df


def lambda_sweep(
    mixture: Mixture,
    loss: str | Loss,
    lams: Sequence[float] | np.ndarray,
    *,
    alpha: float,
    penalty: str = "l2",
    l1_ratio: float | None = None,
    progress: bool = False,
    return_results: bool = False,
    **solve_kw: Any,
) -> pd.DataFrame | tuple[pd.DataFrame, list]:
    """Theorem 2 errors at fixed ``alpha`` over penalty strengths ``lams``.

    Solved from the largest to the smallest lambda with warm starts (annealing), each
    point starting from the finest quadrature rule that the larger penalties needed (the
    channel integrand sharpens as lambda decreases, towards the separable regime); the
    table is in the order of ``lams``.
    """
    lv = check_param_values("lam", lams, name="lams")
    alpha = check_param("alpha", alpha)
    order = np.argsort(-lv, kind="stable")
    points = [(float(lv[i]), float(alpha)) for i in order]
    res_sorted = _curve(
        mixture,
        loss,
        points,
        penalty=penalty,
        progress=progress,
        desc="lambda",
        solve_kw=solve_kw,
        l1_ratio=l1_ratio,
        carry_rule=True,
    )
    res: list = [None] * lv.size
    for i, r in zip(order, res_sorted):
        res[i] = r
    df = pd.DataFrame([_row(r, alpha=float(alpha), lam=float(lam)) for r, lam in zip(res, lv)])
    return (df, res) if return_results else df


def d_test_error_d_lambda(result: FixedPointResult, *, rel_step: float = 1e-6) -> float:
    """``d eps_g / d lambda`` at a fixed point, by implicit differentiation.

    With ``x* = T(x*; lambda)`` the fixed point of the map of Theorem 1,
    ``dx*/dlambda = (I - dT/dx)^{-1} dT/dlambda``, and
    ``d eps_g / d lambda = grad_x eps_g(x*) . dx*/dlambda``.  The state is parametrised by
    its independent entries (each symmetric pair ``Q_c[i, j] = Q_c[j, i]``, ``V_c[i, j] =
    V_c[j, i]`` is one coordinate, perturbed on both sides, so every perturbed overlap stays
    symmetric).  The Jacobians of the (smooth) map and of ``eps_g(Q, M, b)`` are central
    differences with step ``rel_step max(1, |x_i|)`` (smaller for tiny positive overlaps,
    which must stay positive); nothing is re-solved, so the cost is ``2 m + 2`` evaluations
    of the map for ``m`` independent entries.
    """
    state = result.state
    if state is None or not result.converged:
        raise ValueError("d_test_error_d_lambda needs a converged FixedPointResult")
    problem, x = state.problem, state.x
    if problem.lam <= 0:
        raise ValueError("d_test_error_d_lambda needs lam > 0")
    n = x.size
    coords = _independent_entries(problem.n_clusters, problem.dim)
    rows = np.array([idx[0] for idx in coords])
    m = rows.size
    T = state.map()
    J = np.empty((m, m))
    for k, idx in enumerate(coords):
        h = _fd_step(x[idx[0]], rel_step)
        e = np.zeros(n)
        e[idx] = h
        J[:, k] = ((T(x + e) - T(x - e)) / (2 * h))[rows]
    lam = problem.lam
    hl = rel_step * max(lam, 1e-300)
    Tp = state.map(replace(problem, lam=lam + hl))(x)
    Tm = state.map(replace(problem, lam=lam - hl))(x)
    dz = np.linalg.solve(np.eye(m) - J, ((Tp - Tm) / (2 * hl))[rows])
    rho = problem.mixture.rho

    def eps(xx: np.ndarray) -> float:
        Q, M, _, b = state.unpack(xx)
        return float(1.0 - rho @ test_accuracy(problem, M, b, Q)[0])

    g = np.empty(m)
    for k, idx in enumerate(coords):
        h = _fd_step(x[idx[0]], rel_step)
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


def _fd_step(xi: float, rel_step: float) -> float:
    h = rel_step * max(1.0, abs(xi))
    return 1e-3 * xi if 0.0 < xi < 1e3 * h else h
