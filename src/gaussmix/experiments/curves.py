"""Curves of fixed points: learning curves over alpha and sweeps over lambda.

Both walk along the curve with warm starts (continuation) and return tidy pandas tables,
one row per point.  :func:`optimal_lambda` searches ``argmin_lambda eps_g`` (detecting the
boundary optimum ``lambda -> 0+``), :func:`optimal_lambda_curve` follows it along alpha, and
:func:`d_test_error_d_lambda` differentiates ``eps_g`` with respect to lambda through the
fixed point.  Sweeps over lambda run from large to small lambda (annealing, Appendix
B numerical note 1) whatever the order asked for, then report in the order asked for.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from gaussmix.core.exceptions import ConvergenceError, ConvergenceWarning
from gaussmix.core.validation import check_array, check_int, check_real
from gaussmix.theory.losses import Loss
from gaussmix.theory.mixture import Mixture
from gaussmix.theory.observables import test_accuracy
from gaussmix.theory.problem import LAM_MAX, make_problem
from gaussmix.theory.solver import FixedPointResult, solve_problem

__all__ = [
    "learning_curve",
    "lambda_sweep",
    "parse_range",
    "optimal_lambda",
    "optimal_lambda_curve",
    "OptimalLambdaResult",
    "d_test_error_d_lambda",
]


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
) -> list[FixedPointResult | None]:
    results: list[FixedPointResult | None] = []
    done: list[tuple[float, FixedPointResult]] = []  # (curve parameter, result)
    history: dict = {}  # Anderson secant pairs (per quadrature rule) carried along the curve
    last: Exception | None = None
    for lam, alpha in tqdm(points, desc=desc, disable=not progress, leave=False):
        problem = make_problem(
            mixture, loss, lam=lam, alpha=alpha, penalty=penalty, l1_ratio=l1_ratio
        )
        param = alpha if desc == "alpha" else np.log(max(lam, 1e-300))
        res: FixedPointResult | None = None
        for init in _warm_starts(done, param):
            try:
                res = solve_problem(problem, init=init, throw=True, history=history, **solve_kw)
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
        results.append(res)
    return results


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
    a = check_array("alphas", alphas, shape=(None,), positive=True)
    if a.size == 0:
        raise ValueError("alphas must not be empty")
    points = [(float(lam), float(x)) for x in a]
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

    Solved from the largest to the smallest lambda with warm starts (annealing); the table
    is in the order of ``lams``.
    """
    lv = check_array("lams", lams, shape=(None,), nonnegative=True)
    if lv.size == 0:
        raise ValueError("lams must not be empty")
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
    )
    res: list = [None] * lv.size
    for i, r in zip(order, res_sorted):
        res[i] = r
    df = pd.DataFrame([_row(r, alpha=float(alpha), lam=float(lam)) for r, lam in zip(res, lv)])
    return (df, res) if return_results else df


# --------------------------------------------------------------------------- optimal lambda
@dataclass
class OptimalLambdaResult:
    """Result of :func:`optimal_lambda`: ``lambda* = argmin_lambda eps_g(alpha, lambda)``.

    Attributes
    ----------
    lam_star : float
        The optimal penalty strength; ``0.0`` when ``at_boundary`` (the optimum is the limit
        ``lambda -> 0+``, basis pursuit for the lasso).
    test_error : float
        ``eps_g`` at ``lam_star`` (at ``lam_min`` when ``at_boundary``: the test error still
        decreases, by less than ``flat_tol``, towards the ``lambda -> 0+`` limit).
    at_boundary : bool
        The test error decreases monotonically down to the smallest penalty solved
        (``lam_min``, two decades below ``lam_bounds[0]`` by default): ``lambda* -> 0+``.
    at_upper_bound : bool
        The test error still decreases (or is flat within ``flat_tol``) at the largest
        penalty solved (``lam_max``, two decades above ``lam_bounds[1]`` by default): the
        optimum is ``lambda -> infinity`` (for ridge: the mean / Hebbian estimator) and
        ``lam_star = inf``.
    result : FixedPointResult or None
        The fixed point at ``lam_star`` (at ``lam_min`` / ``lam_max`` at a boundary), solved
        with the caller's solver options.
    evaluations : pandas.DataFrame
        Every fixed point of the search, in order: ``lam, test_error, train_error,
        train_loss, nonzero_fraction, converged, stage`` (``'grid'``, ``'extend'``,
        ``'refine'``, ``'final'``).
    lam_min, lam_max : float
        Smallest and largest penalty solved.
    derivative : float
        ``d eps_g / d lambda`` at the returned point, by implicit differentiation through the
        fixed point (:func:`d_test_error_d_lambda`); ~0 at an interior optimum, > 0 at the
        ``lambda -> 0+`` boundary.  NaN if not computed.
    message : str
    """

    lam_star: float
    test_error: float
    at_boundary: bool
    result: FixedPointResult | None
    evaluations: pd.DataFrame
    lam_min: float
    at_upper_bound: bool = False
    lam_max: float = float("nan")
    derivative: float = float("nan")
    message: str = ""
    _fixed_points: dict = field(default_factory=dict, repr=False)

    @property
    def n_evaluations(self) -> int:
        """Number of fixed points solved."""
        return int(len(self.evaluations))

    def summary(self) -> dict:
        """Scalar summary (a row of :func:`optimal_lambda_curve`)."""
        r = self.result
        get = (lambda k: getattr(r, k)) if r is not None else (lambda k: np.nan)
        return {
            "lam_star": self.lam_star,
            "at_boundary": self.at_boundary,
            "at_upper_bound": self.at_upper_bound,
            "test_error": self.test_error,
            "train_error": get("train_error"),
            "train_loss": get("train_loss"),
            "nonzero_fraction": get("nonzero_fraction"),
            "l1_norm": get("l1_norm"),
            "lam_min": self.lam_min,
            "lam_max": self.lam_max,
            "derivative": self.derivative,
            "converged": bool(r is not None and r.converged),
            "n_evaluations": self.n_evaluations,
        }


class _LambdaSearch:
    """Fixed points at one ``alpha`` over penalty strengths, each warm-started from the
    nearest solved penalty (or from the same penalty on a neighbouring curve point)."""

    def __init__(
        self,
        mixture: Mixture,
        loss: str | Loss,
        alpha: float,
        penalty: str,
        l1_ratio: float | None,
        solve_kw: dict,
        warm: dict | None,
    ) -> None:
        self.mixture, self.loss, self.alpha = mixture, loss, alpha
        self.penalty, self.l1_ratio = penalty, l1_ratio
        self.solve_kw = solve_kw
        self.warm = warm or {}
        self.solved: dict[float, FixedPointResult] = {}
        self.rows: list[dict] = []
        self.history: dict = {}  # Anderson secant pairs carried from point to point

    def _nearest(self, pool: dict, lam: float) -> tuple[float, FixedPointResult | None]:
        if not pool:
            return np.inf, None
        keys = np.fromiter(pool.keys(), dtype=float)
        dist = np.abs(np.log(keys / lam))
        i = int(np.argmin(dist))
        return float(dist[i]), pool[float(keys[i])]

    def solve(self, lam: float, stage: str, kw: dict | None = None) -> FixedPointResult | None:
        problem = make_problem(
            self.mixture,
            self.loss,
            lam=lam,
            alpha=self.alpha,
            penalty=self.penalty,
            l1_ratio=self.l1_ratio,
        )
        d_here, here = self._nearest(self.solved, lam)
        d_warm, there = self._nearest(self.warm, lam)
        starts = [here, there] if d_here <= min(d_warm, 0.05) else [there, here]
        starts = [s for s in starts if s is not None] + [None]
        kw = self.solve_kw if kw is None else kw
        res = None
        for init in starts:
            try:
                res = solve_problem(problem, init=init, throw=True, history=self.history, **kw)
                break
            except ConvergenceError:
                res = None
                self.history.clear()
        if res is not None:
            self.solved[lam] = res
        self.rows.append(
            {
                "lam": lam,
                "test_error": np.nan if res is None else res.test_error,
                "train_error": np.nan if res is None else res.train_error,
                "train_loss": np.nan if res is None else res.train_loss,
                "nonzero_fraction": np.nan if res is None else res.nonzero_fraction,
                "converged": res is not None,
                "stage": stage,
            }
        )
        return res

    def error(self, lam: float, stage: str) -> float:
        res = self.solve(lam, stage)
        return np.inf if res is None else float(res.test_error)

    def table(self) -> tuple[np.ndarray, np.ndarray]:
        """Solved penalties (ascending) and their test errors."""
        lams = np.array(sorted(self.solved))
        return lams, np.array([self.solved[x].test_error for x in lams])


def optimal_lambda(
    mixture: Mixture,
    loss: str | Loss,
    *,
    alpha: float,
    penalty: str = "l2",
    l1_ratio: float | None = None,
    lam_bounds: tuple[float, float] = (1e-5, 1e2),
    n_grid: int = 15,
    extend: int = 2,
    xtol: float = 1e-3,
    flat_tol: float = 1e-9,
    search_tol: float = 1e-10,
    derivative: bool = True,
    init: dict | None = None,
    **solve_kw: Any,
) -> OptimalLambdaResult:
    """The penalty strength minimising the test error, ``lambda* = argmin eps_g(alpha, .)``.

    1. A coarse log grid of ``n_grid`` penalties in ``lam_bounds``, solved from the largest
       to the smallest with warm starts (annealing, Appendix B note 1).
    2. If the best grid point is an end of the grid, the grid is extended by factors of 10
       (``extend`` times) beyond it.  If the test error is still (weakly, within
       ``flat_tol``) smallest at the smallest penalty solved, the optimum is the boundary
       ``lambda -> 0+`` (basis pursuit for the lasso): ``at_boundary=True``,
       ``lam_star=0.0`` — not the grid edge.  Symmetrically ``at_upper_bound`` and
       ``lam_star=inf`` at the top.
    3. Otherwise a bounded scalar minimisation (Brent, ``scipy.optimize.minimize_scalar``)
       on ``log lambda`` between the neighbours of the best point, to ``xtol`` in
       ``log lambda``, each fixed point warm-started from the nearest solved one.

    Parameters
    ----------
    mixture, loss, alpha, penalty, l1_ratio
        As in :func:`gaussmix.solve`.
    lam_bounds : (float, float)
        Search interval ``0 < lo < hi``.
    n_grid : int
        Points of the coarse grid (>= 3).
    extend : int
        Decades added beyond an edge of the grid when the best point is there (>= 0).
    xtol : float
        Tolerance on ``log lambda*``.
    flat_tol : float
        Test errors within ``flat_tol`` are treated as equal (boundary detection).
    search_tol : float
        Fixed-point tolerance during the search (the test error must be accurate to well
        below ``flat_tol``).  The search solves without quadrature refinement, with the
        rule ``solve_kw['quadrature']`` if given (the default rule otherwise); for the
        logistic loss deep in the separable regime (tiny lambda) pass a finer rule, e.g.
        ``quadrature=GaussHermite(256)``.
    derivative : bool
        Also compute ``d eps_g / d lambda`` at the answer (:func:`d_test_error_d_lambda`).
    init : dict, optional
        ``{lam: FixedPointResult}`` at a neighbouring ``alpha`` (warm starts along a curve).
    **solve_kw
        Options of the final solve at ``lam_star`` (``tol``, ``quadrature``,
        ``estimate_error``, ...).

    Returns
    -------
    OptimalLambdaResult
    """
    from scipy.optimize import minimize_scalar

    try:
        lo, hi = (float(v) for v in lam_bounds)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"lam_bounds must be a pair of floats, got {lam_bounds!r}") from exc
    lo = check_real("lam_bounds[0]", lo, low=0.0, low_open=True)
    hi = check_real("lam_bounds[1]", hi, low=lo, low_open=True, high=LAM_MAX)
    n_grid = check_int("n_grid", n_grid, low=3)
    extend = check_int("extend", extend, low=0, high=10)
    xtol = check_real("xtol", xtol, low=0.0, low_open=True)
    flat_tol = check_real("flat_tol", flat_tol, low=0.0)
    search_tol = check_real("search_tol", search_tol, low=0.0, low_open=True)
    # validate everything else once, at the door
    make_problem(mixture, loss, lam=hi, alpha=alpha, penalty=penalty, l1_ratio=l1_ratio)
    # the search uses one fixed quadrature rule (a smooth error curve in lambda); the final
    # point gets the caller's options (error estimate and refinement by default)
    keep = ("quadrature", "max_iter", "anderson", "damping")
    search_kw = {k: v for k, v in solve_kw.items() if k in keep}
    search_kw.update(tol=min(search_tol, solve_kw.get("tol", search_tol)), estimate_error=False)
    search = _LambdaSearch(mixture, loss, float(alpha), penalty, l1_ratio, search_kw, init)
    for lam in np.geomspace(hi, lo, n_grid):
        search.solve(float(lam), "grid")
    lams, errs = search.table()
    if lams.size == 0:
        raise ConvergenceError(
            f"no fixed point on the lambda grid [{lo:g}, {hi:g}] at alpha={alpha:g}"
        )
    # extend beyond an edge while the best point sits there
    for _ in range(extend):
        k = int(np.argmin(errs))
        if k == 0 and lams[0] <= lo * (1 + 1e-12):
            search.solve(float(lams[0] / 10.0), "extend")
        elif k == lams.size - 1 and lams[-1] >= hi * (1 - 1e-12) and lams[-1] * 10 <= LAM_MAX:
            search.solve(float(lams[-1] * 10.0), "extend")
        else:
            break
        lams, errs = search.table()
    emin = float(np.min(errs))
    k = int(np.argmin(errs))
    lam_min = float(lams[0])
    at_boundary = bool(errs[0] <= emin + flat_tol and lams[0] < lo)
    at_upper = bool(not at_boundary and errs[-1] <= emin + flat_tol and lams[-1] > hi)
    if at_boundary:
        lam_best = lam_min
        message = (
            f"the test error decreases down to lambda = {lam_min:.3g} (the smallest penalty "
            "solved): the optimum is the boundary lambda -> 0+"
        )
    elif at_upper:
        lam_best = float(lams[-1])
        message = (
            f"the test error decreases up to lambda = {lam_best:.3g} (the largest penalty "
            "solved): the optimum is the boundary lambda -> infinity"
        )
    else:
        a = lams[max(k - 1, 0)]
        b = lams[min(k + 1, lams.size - 1)]
        opt = minimize_scalar(
            lambda u: search.error(float(np.exp(u)), "refine"),
            bounds=(float(np.log(a)), float(np.log(b))),
            method="bounded",
            options={"xatol": xtol},
        )
        lams, errs = search.table()
        k = int(np.argmin(errs))
        lam_best = float(lams[k])
        message = f"interior optimum ({opt.nfev} refinement steps)"
    final = search.solve(lam_best, "final", solve_kw)
    d = np.nan
    if derivative and final is not None:
        try:
            d = d_test_error_d_lambda(final)
        except (FloatingPointError, np.linalg.LinAlgError, ValueError):
            d = np.nan
    return OptimalLambdaResult(
        lam_star=0.0 if at_boundary else (np.inf if at_upper else lam_best),
        test_error=np.nan if final is None else float(final.test_error),
        at_boundary=at_boundary,
        result=final,
        evaluations=pd.DataFrame(search.rows),
        lam_min=lam_min,
        at_upper_bound=at_upper,
        lam_max=float(lams[-1]),
        derivative=float(d),
        message=message,
        _fixed_points=dict(search.solved),
    )


def optimal_lambda_curve(
    mixture: Mixture,
    loss: str | Loss,
    alphas: Sequence[float] | np.ndarray,
    *,
    penalty: str = "l2",
    l1_ratio: float | None = None,
    progress: bool = False,
    return_results: bool = False,
    **kw: Any,
) -> pd.DataFrame | tuple[pd.DataFrame, list]:
    """Optimal-penalty learning curve: :func:`optimal_lambda` at each ``alpha``.

    Every search is warm-started from the fixed points of the previous ``alpha`` at the
    same penalties.

    Returns
    -------
    pandas.DataFrame
        Columns ``alpha, lam_star, at_boundary, at_upper_bound, test_error, train_error,
        train_loss, nonzero_fraction, l1_norm, lam_min, lam_max, derivative, converged,
        n_evaluations`` (``lam_star = 0`` where the optimum is ``lambda -> 0+``, ``inf``
        where it is ``lambda -> infinity``).  With
        ``return_results`` also the list of :class:`OptimalLambdaResult`.
    """
    a = check_array("alphas", alphas, shape=(None,), positive=True)
    if a.size == 0:
        raise ValueError("alphas must not be empty")
    rows, out = [], []
    warm: dict | None = None
    for alpha in tqdm(a, desc="alpha", disable=not progress, leave=False):
        try:
            res = optimal_lambda(
                mixture,
                loss,
                alpha=float(alpha),
                penalty=penalty,
                l1_ratio=l1_ratio,
                init=warm,
                **kw,
            )
        except ConvergenceError as exc:
            warnings.warn(
                f"no optimal lambda at alpha={alpha:g}: {exc}; reported as NaN",
                ConvergenceWarning,
                stacklevel=2,
            )
            res = None
        if res is None:
            rows.append({"alpha": float(alpha), "lam_star": np.nan, "converged": False})
        else:
            rows.append({"alpha": float(alpha), **res.summary()})
            warm = res._fixed_points
        out.append(res)
    df = pd.DataFrame(rows)
    return (df, out) if return_results else df


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
