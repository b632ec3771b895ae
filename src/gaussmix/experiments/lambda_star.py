"""The optimal penalty ``lambda* = argmin_lambda eps_g(alpha, lambda)`` and its curve in alpha.

:func:`optimal_lambda` searches a log grid of penalties, extends it beyond an edge while the
best point sits there, and either refines an interior minimum (Brent on ``log lambda``) or
reports a boundary: ``lambda -> 0+`` (basis pursuit for the lasso; ``lam_star = 0``) or
``lambda -> infinity`` (for ridge on isotropic balanced clusters with a bias: the
mean-difference / Hebbian estimator; ``lam_star = inf``).  Two test errors are *equal* when
they differ by less than their accuracy: ``flat_tol`` plus the integration error of each
(its change under a refined quadrature rule), so that the decision does not flip with the
noise of the quadrature from one ``alpha`` to the next.

With ridge, every fixed point of the search is solved to a tolerance relative to the size of
its order parameters: at large ``lambda`` the overlaps shrink like ``Q ~ lambda^-2``, and a
tolerance absolute in ``Q`` (the solver's) would leave the test error, a function of
``M / sqrt(Q)``, wrong in the fifth digit.  (The lasso and the elastic net have ``W* = 0``
beyond a finite ``lambda``: there a small ``Q`` is no scale to resolve.)
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from gaussmix.core.caught import caught
from gaussmix.core.exceptions import (
    ArgumentError,
    ConvergenceError,
    ConvergenceWarning,
    IntegrationWarning,
)
from gaussmix.core.jsonio import plain
from gaussmix.core.progress import progress_bar
from gaussmix.core.results import Result
from gaussmix.core.tables import CurveTable, deprecated_return_results
from gaussmix.core.validation import check_array, check_int, check_real
from gaussmix.theory.api.api import make_problem
from gaussmix.theory.channel.losses import Loss
from gaussmix.theory.model.mixture import Mixture
from gaussmix.theory.model.penalties import make_penalty
from gaussmix.theory.problem.problem import LAM_MAX, Problem
from gaussmix.theory.solve.options import (
    DEFAULT_OPTIONS,
    SolverOptions,
    changed_options,
    solver_options,
    with_options_doc,
)
from gaussmix.theory.solve.solver import FixedPointResult, solve_problem

from .derivative import d_test_error_d_lambda

__all__ = ["optimal_lambda", "optimal_lambda_curve", "OptimalLambdaResult"]

#: the solver's default tolerance (scaled down where the overlaps are small)
_SOLVER_TOL = DEFAULT_OPTIONS.tol
_MAX_ITER = DEFAULT_OPTIONS.max_iter
#: relative rounding of an evaluation of the fixed-point map (floor of a relative tolerance)
ROUNDING = 64 * np.finfo(float).eps
#: iterations allowed to re-solve a fixed point to a relative tolerance (from the fixed point)
RESOLVE_ITER = 100
#: options of the caller's solve that the search also uses
_SEARCH_KEYS = ("quadrature", "max_iter", "anderson", "damping")


@dataclass
class OptimalLambdaResult(Result):
    """Result of :func:`optimal_lambda`: ``lambda* = argmin_lambda eps_g(alpha, lambda)``
    (the result protocol of :mod:`gaussmix.core.results`).

    Attributes
    ----------
    lam_star : float
        The optimal penalty strength; ``0.0`` when ``at_boundary`` (the optimum is the limit
        ``lambda -> 0+``, basis pursuit for the lasso), ``inf`` when ``at_upper_bound``.
    test_error : float
        ``eps_g`` at ``lam_star`` (at ``lam_min`` when ``at_boundary``: the test error still
        decreases, by less than its accuracy, towards the ``lambda -> 0+`` limit; at
        ``lam_max`` when ``at_upper_bound``).
    at_boundary : bool
        The test error decreases monotonically down to the smallest penalty solved
        (``lam_min``, two decades below ``lam_bounds[0]`` by default): ``lambda* -> 0+``.
    at_upper_bound : bool
        The test error decreases up to the largest penalty solved (``lam_max``: decades
        are added above ``lam_bounds[1]``, up to ``LAM_MAX``, while the decrease over a
        decade exceeds the accuracy of the test errors), where it is flat within that
        accuracy: the infimum is the limit ``lambda -> infinity`` (for ridge: the mean /
        Hebbian estimator) and ``lam_star = inf``.
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
        fixed point (:func:`~gaussmix.experiments.derivative.d_test_error_d_lambda`); ~0 at an
        interior optimum, > 0 at the ``lambda -> 0+`` boundary.  NaN if not computed.
    message : str
        How the search ended, in words (e.g. "interior optimum (6 refinement steps)").
    success : bool
        The fixed point at ``lam_star`` was found (property; the column of
        :meth:`summary` is ``converged``).
    """

    #: nothing iterates (the result protocol's ``n_iter`` does not apply)
    n_iter: ClassVar[None] = None

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
    def success(self) -> bool:
        return bool(self.result is not None and self.result.success)

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
            "converged": self.success,
            "n_evaluations": self.n_evaluations,
        }

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe plain types: :meth:`summary` (with ``success`` for its ``converged``)
        and the message; the fixed point is ``result.to_dict()``."""
        row = {("success" if k == "converged" else k): v for k, v in self.summary().items()}
        return plain({**row, "message": self.message})

    def to_frame(self) -> pd.DataFrame:
        """One row: :meth:`summary` (the row of :func:`optimal_lambda_curve`)."""
        return pd.DataFrame([self.summary()])


def _overlap_scale(res: FixedPointResult) -> float:
    """Size of the smallest overlap, ``min_c tr Q_c`` (``~ lambda^-2`` at large lambda)."""
    return float(np.min(np.trace(res.Q, axis1=1, axis2=2)))


def _relative_kw(res: FixedPointResult, kw: dict, resolution: float) -> dict | None:
    """Solver options making ``kw['tol']`` relative to the overlaps of ``res``, or None where
    the absolute tolerance already resolves the test error to ``resolution`` (its error is
    about ``tol / min_c tr Q_c``).  The new tolerance is ``tol * min_c tr Q_c``, not below
    what rounding allows (``ROUNDING`` times the largest order parameter), with a bounded
    number of iterations (the re-solve starts at the fixed point)."""
    scale = _overlap_scale(res)
    tol = kw.get("tol", _SOLVER_TOL)
    if not (0.0 < scale < 1.0) or tol <= resolution * scale:  # Q = 0: W* = 0, no scale
        return None
    size = max(float(np.max(np.abs(a))) for a in (res.Q, res.M, res.V, res.b))
    tight = max(tol * scale, ROUNDING * min(1.0, size))
    if not (0.0 < tight < tol):
        return None
    return {**kw, "tol": tight, "max_iter": min(kw.get("max_iter", _MAX_ITER), RESOLVE_ITER)}


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
        resolution: float = 0.0,
    ) -> None:
        self.mixture, self.loss, self.alpha = mixture, loss, alpha
        self.resolution = resolution  # test errors closer than this count as equal
        self.penalty, self.l1_ratio = penalty, l1_ratio
        # penalties whose W* has exact zeros (lasso, elastic net) reach W* = 0 at a finite
        # lambda: their search keeps the absolute tolerance
        self.penalty_spec = make_penalty(penalty, l1_ratio)
        self.solve_kw = solve_kw
        self.warm = warm or {}
        self.solved: dict[float, FixedPointResult] = {}
        self.rows: list[dict] = []
        self.history: dict = {}  # Anderson secant pairs carried from point to point
        self._accuracy: dict[float, float] = {}

    def problem(self, lam: float) -> Problem:
        return make_problem(
            self.mixture,
            self.loss,
            lam=lam,
            alpha=self.alpha,
            penalty=self.penalty,
            l1_ratio=self.l1_ratio,
        )

    def _nearest(self, pool: dict, lam: float) -> tuple[float, FixedPointResult | None]:
        if not pool:
            return np.inf, None
        keys = np.fromiter(pool.keys(), dtype=float)
        dist = np.abs(np.log(keys / lam))
        i = int(np.argmin(dist))
        return float(dist[i]), pool[float(keys[i])]

    def _starts(self, lam: float) -> list:
        d_here, here = self._nearest(self.solved, lam)
        d_warm, there = self._nearest(self.warm, lam)
        starts = [here, there] if d_here <= min(d_warm, 0.05) else [there, here]
        return [s for s in starts if s is not None] + [None]

    def _solve_from(self, problem: Problem, starts: list, kw: dict) -> FixedPointResult | None:
        for init in starts:
            try:
                return solve_problem(problem, init=init, throw=True, history=self.history, **kw)
            except ConvergenceError:
                self.history.clear()
        return None

    def solve(self, lam: float, stage: str, kw: dict | None = None) -> FixedPointResult | None:
        """Solve at ``lam`` (tolerance relative to the overlaps) and record the point."""
        problem = self.problem(lam)
        kw = self.solve_kw if kw is None else kw
        res = self._solve_from(problem, self._starts(lam), kw)
        relative = res is not None and not self.penalty_spec.sparse
        tight = _relative_kw(res, kw, self.resolution) if relative else None
        if tight is not None:
            # the solver's tolerance is absolute: re-solve (cheaply, from the fixed point)
            # to the same tolerance relative to the overlaps
            res = self._solve_from(problem, [res], tight) or res
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

    def accuracy(self, lam: float) -> float:
        """Integration error of the search's test error at a solved ``lam``: its change
        when the fixed point is re-solved with a refined quadrature rule (plus the error of
        the evaluation itself; ~1e-16 for closed-form channels).  0 if that fails."""
        if lam not in self._accuracy:
            res = self.solved[lam]
            kw = {**self.solve_kw, "estimate_error": True, "auto_refine": False}
            if not self.penalty_spec.sparse:
                kw = _relative_kw(res, kw, self.resolution) or kw
            with caught((IntegrationWarning,), record=False):  # the estimate is the point
                fine = self._solve_from(self.problem(lam), [res], kw)
            err = 0.0
            if fine is not None:
                err = max(
                    float(fine.integration_errors.get("test_error", 0.0)),
                    abs(float(fine.test_error) - float(res.test_error)),
                )
            self._accuracy[lam] = err if np.isfinite(err) else 0.0
        return self._accuracy[lam]

    def equal(self, lam_a: float, lam_b: float, err_a: float, err_b: float, flat_tol: float):
        """``err_a <= err_b`` within ``flat_tol`` plus the accuracy of both test errors."""
        if err_a <= err_b + flat_tol:
            return True
        return bool(err_a <= err_b + flat_tol + self.accuracy(lam_a) + self.accuracy(lam_b))


def _check_search_args(
    lam_bounds: Any, n_grid: Any, extend: Any, xtol: Any, flat_tol: Any, search_tol: Any
) -> tuple[float, float, int, int, float, float, float]:
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
    return lo, hi, n_grid, extend, xtol, flat_tol, search_tol


def _grid_and_extend(search: _LambdaSearch, lo: float, hi: float, n_grid: int, extend: int):
    """The coarse grid (largest penalty first: annealing), then up to ``extend`` decades
    beyond an edge while the best point sits there."""
    for lam in np.geomspace(hi, lo, n_grid):
        search.solve(float(lam), "grid")
    lams, errs = search.table()
    if lams.size == 0:
        raise ConvergenceError(
            f"no fixed point on the lambda grid [{lo:g}, {hi:g}] at alpha={search.alpha:g}"
        )
    for _ in range(extend):
        k = int(np.argmin(errs))
        if k == 0 and lams[0] <= lo * (1 + 1e-12):
            search.solve(float(lams[0] / 10.0), "extend")
        elif k == lams.size - 1 and lams[-1] >= hi * (1 - 1e-12) and lams[-1] * 10 <= LAM_MAX:
            search.solve(float(lams[-1] * 10.0), "extend")
        else:
            break
        lams, errs = search.table()


def _extend_upper(search: _LambdaSearch, hi: float, flat_tol: float) -> None:
    """Decades above the extended grid, up to ``LAM_MAX``, while the test error is still
    smallest at the top and decreased over the last decade by more than its accuracy
    (it decreases like ``1/lambda`` towards the ``lambda -> infinity`` limit, so once a
    decade changes it by less than the accuracy, the limit is within that accuracy)."""
    lams, errs = search.table()
    while (
        lams.size >= 2
        and lams[-1] > hi
        and int(np.argmin(errs)) == lams.size - 1
        and lams[-1] * 10 <= LAM_MAX
        and not search.equal(lams[-2], lams[-1], errs[-2], errs[-1], flat_tol)
    ):
        if search.solve(float(lams[-1] * 10.0), "extend") is None:
            break
        lams, errs = search.table()


def _boundary(search: _LambdaSearch, lo: float, hi: float, flat_tol: float) -> str:
    """``'low'`` (lambda -> 0+), ``'high'`` (lambda -> infinity) or ``'interior'``."""
    lams, errs = search.table()
    k = int(np.argmin(errs))
    if lams[0] < lo and search.equal(lams[0], lams[k], errs[0], errs[k], flat_tol):
        return "low"
    if (
        lams.size >= 2
        and lams[-1] > hi
        and search.equal(lams[-1], lams[k], errs[-1], errs[k], flat_tol)
        and search.equal(lams[-1], lams[-2], errs[-1], errs[-2], flat_tol)
    ):
        return "high"
    return "interior"


def _refine(search: _LambdaSearch, xtol: float) -> tuple[float, str]:
    """Brent's bounded minimisation on ``log lambda`` between the neighbours of the best
    solved point; the best point solved afterwards and a message."""
    from scipy.optimize import minimize_scalar

    lams, errs = search.table()
    k = int(np.argmin(errs))
    a = lams[max(k - 1, 0)]
    b = lams[min(k + 1, lams.size - 1)]
    opt = minimize_scalar(
        lambda u: search.error(float(np.exp(u)), "refine"),
        bounds=(float(np.log(a)), float(np.log(b))),
        method="bounded",
        options={"xatol": xtol},
    )
    lams, errs = search.table()
    return float(lams[int(np.argmin(errs))]), f"interior optimum ({opt.nfev} refinement steps)"


def _assemble(
    search: _LambdaSearch, kind: str, lam_best: float, message: str, solve_kw: dict, deriv: bool
) -> OptimalLambdaResult:
    """The final solve at ``lam_best`` with the caller's options, and the result."""
    lams, _ = search.table()
    lam_min, lam_max = float(lams[0]), float(lams[-1])
    final = search.solve(lam_best, "final", solve_kw)
    d = np.nan
    if deriv and final is not None:
        try:
            d = d_test_error_d_lambda(final)
        except (FloatingPointError, np.linalg.LinAlgError, ValueError):
            d = np.nan
    lam_star = {"low": 0.0, "high": np.inf}.get(kind, lam_best)
    return OptimalLambdaResult(
        lam_star=float(lam_star),
        test_error=np.nan if final is None else float(final.test_error),
        at_boundary=kind == "low",
        result=final,
        evaluations=pd.DataFrame(search.rows),
        lam_min=lam_min,
        at_upper_bound=kind == "high",
        lam_max=lam_max,
        derivative=float(d),
        message=message,
        _fixed_points=dict(search.solved),
    )


@with_options_doc
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
    options: SolverOptions | None = None,
    **solve_kw: Any,
) -> OptimalLambdaResult:
    """The penalty strength minimising the test error, ``lambda* = argmin eps_g(alpha, .)``.

    1. A coarse log grid of ``n_grid`` penalties in ``lam_bounds``, solved from the largest
       to the smallest with warm starts (annealing, Appendix B note 1), extended by
       decades (``extend`` times) beyond an end where the best point sits; at the top,
       further decades up to ``LAM_MAX`` while the error still falls by more than its
       accuracy.
    2. If the test error is smallest (within its accuracy: ``flat_tol`` plus the
       integration errors) at the smallest penalty solved, the optimum is the boundary
       ``lambda -> 0+`` (basis pursuit for the lasso): ``at_boundary``, ``lam_star = 0``
       -- not the grid edge; symmetrically ``at_upper_bound``, ``lam_star = inf``.
    3. Otherwise Brent's bounded minimisation on ``log lambda`` between the neighbours of
       the best point, to ``xtol``, each point warm-started from the nearest solved one.

    Parameters
    ----------
    mixture, loss, alpha, penalty, l1_ratio
        As in :func:`gaussmix.solve`.
    lam_bounds : (float, float)
        Search interval ``0 < lo < hi <= LAM_MAX``.
    n_grid : int
        Points of the coarse grid (>= 3).
    extend : int
        Decades added beyond an edge of the grid when the best point is there (>= 0).
    xtol : float
        Tolerance on ``log lambda*``.
    flat_tol : float
        Test errors within ``flat_tol`` plus their integration errors are equal.
    search_tol : float
        Fixed-point tolerance of the search (relative to small overlaps), which uses the
        rule ``quadrature`` (else the default) without refinement; for the
        logistic loss at tiny lambda pass a finer rule, e.g. ``GaussHermite(256)``.
    derivative : bool
        Also compute ``d eps_g / d lambda`` at the answer (:func:`d_test_error_d_lambda`).
    init : dict, optional
        ``{lam: FixedPointResult}`` at a neighbouring ``alpha`` (warm starts along a curve).
    options : SolverOptions, optional
        The solver's options as one object, as :func:`gaussmix.solve` takes them (any option
        may instead, or also, be given as a keyword; keywords override ``options``): the
        options of the final solve at ``lam_star``; the search uses their ``quadrature``,
        ``max_iter``, ``anderson`` and ``damping``.
    %(solver_options)s
    Returns
    -------
    OptimalLambdaResult

    Examples
    --------
    On two balanced opposite isotropic clusters the ridge classifier is best at
    ``lambda -> infinity`` (the mean estimator), where it reaches the Bayes-optimal error:

    >>> import gaussmix as gm
    >>> mix = gm.Mixture.isotropic(delta=0.5, means="antipodal", labels="binary")
    >>> opt = gm.optimal_lambda(mix, "square", alpha=2.0)
    >>> opt.lam_star, opt.at_upper_bound
    (inf, True)
    >>> bayes = gm.bayes_optimal_error(mix, alpha=2.0)
    >>> print(f"{opt.test_error:.4f} {bayes.test_error:.4f}")
    0.1030 0.1030
    """
    lo, hi, n_grid, extend, xtol, flat_tol, search_tol = _check_search_args(
        lam_bounds, n_grid, extend, xtol, flat_tol, search_tol
    )
    # the options asked for, however spelled (options= or keywords), validated once
    solve_kw = changed_options(solver_options(options, solve_kw, caller="optimal_lambda"))
    make_problem(mixture, loss, lam=hi, alpha=alpha, penalty=penalty, l1_ratio=l1_ratio)
    # one fixed rule for the search (a smooth error curve); the caller's options at the end
    search_kw = {k: v for k, v in solve_kw.items() if k in _SEARCH_KEYS}
    search_kw.update(tol=min(search_tol, solve_kw.get("tol", search_tol)), estimate_error=False)
    search = _LambdaSearch(
        mixture, loss, float(alpha), penalty, l1_ratio, search_kw, init, resolution=flat_tol
    )
    _grid_and_extend(search, lo, hi, n_grid, extend)
    _extend_upper(search, hi, flat_tol)
    kind = _boundary(search, lo, hi, flat_tol)
    if kind == "interior":
        lam_best, message = _refine(search, xtol)
    else:
        lam_best, message = _boundary_answer(search, kind)
    return _assemble(search, kind, lam_best, message, solve_kw, derivative)


def _boundary_answer(search: _LambdaSearch, kind: str) -> tuple[float, str]:
    """The penalty solved nearest the boundary ``kind`` (``'low'`` or ``'high'``) and a
    message."""
    lams, _ = search.table()
    if kind == "low":
        return float(lams[0]), (
            f"the test error decreases down to lambda = {lams[0]:.3g} (the smallest penalty "
            "solved): the optimum is the boundary lambda -> 0+"
        )
    return float(lams[-1]), (
        f"the test error decreases up to lambda = {lams[-1]:.3g} (the largest penalty "
        "solved): the optimum is the boundary lambda -> infinity"
    )


def optimal_lambda_curve(
    mixture: Mixture,
    loss: str | Loss,
    alphas: Sequence[float] | np.ndarray,
    *,
    penalty: str = "l2",
    l1_ratio: float | None = None,
    progress: bool = False,
    return_results: bool | None = None,
    **kw: Any,
) -> CurveTable:
    """Optimal-penalty learning curve: :func:`optimal_lambda` at each ``alpha``.

    Every search is warm-started from the fixed points of the previous ``alpha`` at the
    same penalties.

    Parameters
    ----------
    mixture, loss, penalty, l1_ratio
        As in :func:`gaussmix.solve`.
    alphas : sequence of float
        Sample complexities (each > 0).
    progress : bool
        Show a progress bar.
    return_results : bool
        Also return the list of :class:`OptimalLambdaResult`.
    **kw
        Passed to :func:`optimal_lambda` (search bounds, solver options).

    Returns
    -------
    CurveTable
        A :class:`pandas.DataFrame` with columns ``alpha, lam_star, at_boundary,
        at_upper_bound, test_error, train_error, train_loss, nonzero_fraction, l1_norm,
        lam_min, lam_max, derivative, converged, n_evaluations`` (``lam_star = 0`` where
        the optimum is ``lambda -> 0+``, ``inf`` where it is ``lambda -> infinity``), and
        the :class:`OptimalLambdaResult` of each row in ``.points`` (None where the search
        failed).  ``return_results`` is deprecated (``True`` still returns ``(table,
        list)`` with a ``FutureWarning``, for one release).
    """
    a = check_array("alphas", alphas, shape=(None,), positive=True)
    if a.size == 0:
        raise ArgumentError("alphas", "must not be empty")
    rows, out = [], []
    warm: dict | None = None
    for alpha in progress_bar(a, desc="alpha", enabled=progress, leave=False):
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
    return deprecated_return_results(CurveTable.from_rows(rows, out), return_results)
