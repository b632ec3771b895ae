"""Finite-size check of the separability transition: is a sample linearly separable?

The training error of the cross-entropy (or logistic) estimator at ``lam -> 0+`` is zero
exactly when the training set is linearly separable (Section 3.2 of the paper; docs/design.md
pitfall 4), and the fraction of separable samples of ``n = round(alpha d)`` points drops from
one to zero around ``alpha*`` as ``d`` grows.  This module measures that fraction directly,
independently of the fixed point: for each sample it decides, by linear programming, whether
there exist ``W`` (C x d) and ``b`` (C) with

    (W x_nu + b)_{c_nu} - (W x_nu + b)_k >= 1    for every sample nu and class k != c_nu,

where ``c_nu`` is the class of the sample (the distinct label vectors of the mixture's label
map: the clusters for one-hot labels, the sign for binary labels).  Any strictly separating
``(W, b)`` can be rescaled to margin one, so feasibility is equivalent to separability.  The
gauge ``W_{C-1} = 0, b_{C-1} = 0`` removes the shift invariance; for two classes the problem
is the binary one, ``y_nu (w . x_nu + b) >= 1``.  The LP (zero objective, free variables) is
solved by HiGHS (``scipy.optimize.linprog(method='highs')``, then its interior-point method
if the simplex stops undecided): a feasible answer comes with a certificate whose margins are
verified; "infeasible" is HiGHS's verdict; any other status is an error (never counted as
separable or not).

Large LPs are slow (K = 3, ``d = 400``: about 30 s of CPU each), so ``method='auto'`` first
looks there for a certificate from unpenalised logistic regression: a classifier with every
margin positive (separable, verified), or -- when the fit converges -- the Farkas
certificate ``lambda_{nu k} = p_k(x_nu) >= 0`` with ``sum lambda (e_c - e_k) (x_nu, 1) = r``
(the negative gradient of the log-likelihood, near zero at the optimum): any ``(W, b)`` of
margin one then has ``|(W, b)|_F >= sum lambda / |r|_F``, i.e. a geometric margin at most
``|r|_F / sum lambda``; at or below ``1e-9`` the sample is declared not separable (the
LP's own feasibility tolerance is ``1e-7``).  Without a certificate the LP decides.

Samples are drawn from the mixture by the simulation's sampler
(:func:`gaussmix.simulate.simulation.realise` and :meth:`Instance.sample`: isotropic means
realise the Gram matrix exactly, cluster counts are ``round(rho n)`` unless
``counts='random'``); features are ``x / sqrt(d)`` (separability does not depend on the
scale).  Every sample has its own seed, ``SeedSequence(seed, spawn_key=(d, i, r))`` for the
``r``-th sample at the ``i``-th alpha, so the table does not depend on ``n_jobs``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy.optimize import linprog, minimize
from scipy.special import expit, log_expit

from gaussmix.core.caught import caught
from gaussmix.core.exceptions import ArgumentError, GaussmixError
from gaussmix.core.progress import progress_bar
from gaussmix.core.renames import renamed_keywords
from gaussmix.core.validation import check_array, check_choice, check_int, check_param
from gaussmix.theory.model.mixture import Mixture

from .simulation import check_dimension, check_sample_size, realise

__all__ = [
    "LPError",
    "draw_dataset",
    "separating_hyperplane",
    "separability_fraction",
    "lp_crossing",
]

#: a certificate must have every margin >= 1 - _MARGIN_TOL (HiGHS's primal feasibility
#: tolerance is 1e-7)
_MARGIN_TOL = 1e-6
#: a Farkas certificate with ``|r|_F / Lambda`` at or below this decides "not separable"
_FARKAS_TOL = 1e-9
#: ``method='auto'`` solves the LP directly up to this many entries of its matrix
_LP_MAX_ENTRIES = 400_000
#: HiGHS methods tried in turn until one decides
_LP_METHODS = ("highs", "highs-ipm")
#: how a sample is decided
METHODS = ("auto", "lp", "certificate")
#: logistic fits tried for a certificate before the LP: (solver, max_iter)
_CERTIFICATE_SOLVERS = (("lbfgs", 100), ("newton-cg", 30))
#: columns of :func:`separability_fraction`
COLUMNS = ("alpha", "d", "n", "fraction", "se", "n_separable", "seeds", "seed")
#: the column ``seeds`` as tables written before gaussmix 1.0 name it
OLD_SEEDS_COLUMN = "n_datasets"


class LPError(GaussmixError, RuntimeError):
    """HiGHS did not decide the feasibility of a separability LP (or its answer failed
    verification)."""


# ------------------------------------------------------------------------------ data
def draw_dataset(
    mixture: Mixture, n: int, d: int, rng: np.random.Generator, counts: str = "fixed"
) -> tuple[np.ndarray, np.ndarray]:
    """One sample of ``n`` points of ``mixture`` at dimension ``d`` (a fresh realisation).

    Parameters
    ----------
    mixture : Mixture
    n, d : int
        Number of points and input dimension.
    rng : numpy.random.Generator
    counts : {'fixed', 'random'}
        Cluster counts ``round(rho n)`` (largest remainder) or multinomial.

    Returns
    -------
    X : ndarray (n, d)
        Features ``x / sqrt(d)``.
    classes : ndarray (n,) of int
        Class of each point (index of its distinct label vector,
        ``mixture.labels.cluster_class``).
    """
    inst = realise(mixture, d, rng)
    X, cid = inst.sample(n, rng, counts)
    X /= np.sqrt(d)
    return X, mixture.labels.cluster_class[cid]


# ------------------------------------------------------------------------------- LP
def _constraints(X: np.ndarray, classes: np.ndarray, n_classes: int) -> sp.csr_matrix:
    """``A`` with ``A z <= -1`` iff every margin is >= 1; ``z = (W_0..W_{C-2}, b_0..b_{C-2})``
    (the last class has ``W = 0, b = 0``)."""
    n, d = X.shape
    free = n_classes - 1
    rows, cols, vals = [], [], []
    row = 0
    Xa = np.hstack([X, np.ones((n, 1))])  # (x, 1) multiplies (W_k, b_k)
    for k in range(n_classes):
        for c in range(n_classes):
            if c == k:
                continue
            idx = np.flatnonzero(classes == c)  # samples of class c, competitor k
            m = idx.size
            if m == 0:
                continue
            r = row + np.arange(m)
            row += m
            # -(W_c - W_k).x - (b_c - b_k) <= -1
            for cls, sign in ((c, -1.0), (k, 1.0)):
                if cls == free:  # gauge: the last class has no variables
                    continue
                w_cols = cls * d + np.arange(d)
                rows.append(np.repeat(r, d + 1))
                cols.append(np.tile(np.append(w_cols, free * d + cls), m))
                vals.append(sign * Xa[idx].reshape(-1))
    return sp.csr_matrix(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
        shape=(row, free * (d + 1)),
    )


def _verified(
    X: np.ndarray, cls: np.ndarray, W: np.ndarray, b: np.ndarray
) -> tuple[np.ndarray, np.ndarray] | None:
    """``(W, b)`` rescaled to margin one (last row zero) if every margin is positive."""
    n = X.shape[0]
    W = W - W[-1]
    b = b - b[-1]
    scores = X @ W.T + b
    own = scores[np.arange(n), cls]
    scores[np.arange(n), cls] = -np.inf
    margin = float((own - scores.max(axis=1)).min())
    if not (np.isfinite(margin) and margin > 0):
        return None
    return W / margin, b / margin


def _farkas_ratio(X: np.ndarray, cls: np.ndarray, P: np.ndarray) -> float:
    """``|r|_F / Lambda`` of the Farkas certificate ``lambda_{nu k} = P[nu, k]`` (k != c_nu).

    ``r = sum lambda_{nu k} (e_c - e_k) (x_nu, 1)^T = G^T (X, 1)`` with ``G = onehot - P``
    and ``Lambda = sum lambda = sum_nu (1 - P[nu, c_nu])``.  Any ``(W, b)`` of margin one
    has ``Lambda <= <(W, b), r> <= |(W, b)|_F |r|_F``: its geometric margin
    ``1 / |(W, b)|_F`` is at most the ratio.
    """
    n = X.shape[0]
    G = -P
    G[np.arange(n), cls] += 1.0
    r = np.hstack([G.T @ X, G.sum(axis=0)[:, None]])
    lam = float(n - P[np.arange(n), cls].sum())
    return float(np.linalg.norm(r)) / lam if lam > 0 else np.inf


def _logistic(X: np.ndarray, cls: np.ndarray, solver: str, max_iter: int) -> Any:
    """Unpenalised multinomial (binary for two classes) logistic regression."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression

    # separable data: the unpenalised fit diverges, as it should
    with caught((ConvergenceWarning, RuntimeWarning), drop_message="Line Search failed"):
        est = LogisticRegression(C=np.inf, solver=solver, tol=1e-12, max_iter=max_iter)
        est.fit(X, cls)
    return est


def _logistic_wb(est: Any, n_classes: int) -> tuple[np.ndarray, np.ndarray]:
    """The fitted scores as ``(W, b)`` with one row per class."""
    coef, icpt = np.asarray(est.coef_, dtype=float), np.asarray(est.intercept_, dtype=float)
    if n_classes == 2:  # binary: score of class 1 minus class 0
        return np.vstack([np.zeros_like(coef), coef]), np.array([0.0, icpt[0]])
    return coef, icpt


def _certificate(
    X: np.ndarray, cls: np.ndarray, n_classes: int
) -> tuple[bool, tuple[np.ndarray, np.ndarray] | None]:
    """``(decided, certificate)`` from logistic regression: a separating ``(W, b)``
    (verified margins), or a Farkas certificate that no separator has a geometric margin
    above ``_FARKAS_TOL``; ``decided`` is False when neither is found."""
    for solver, max_iter in _CERTIFICATE_SOLVERS:
        est = _logistic(X, cls, solver, max_iter)
        wb = _verified(X, cls, *_logistic_wb(est, n_classes))
        if wb is not None:
            return True, wb
        P = np.clip(np.asarray(est.predict_proba(X), dtype=float), 0.0, 1.0)
        if np.all(np.isfinite(P)) and _farkas_ratio(X, cls, P) <= _FARKAS_TOL:
            return True, None
    return False, None


def _lp(X: np.ndarray, cls: np.ndarray, n_classes: int) -> tuple[np.ndarray, np.ndarray] | None:
    """The LP (HiGHS): a verified ``(W, b)`` of margin one, None if infeasible.

    HiGHS's default (dual simplex) first; when it stops without deciding (it sometimes
    reports numerical difficulties on these degenerate, zero-objective problems), its
    interior-point method.
    """
    n, d = X.shape
    A = _constraints(X, cls, n_classes)
    failures = []
    for method in _LP_METHODS:
        res = linprog(
            np.zeros(A.shape[1]),
            A_ub=A,
            b_ub=-np.ones(A.shape[0]),
            bounds=(None, None),
            method=method,
        )
        if res.status == 2:
            return None
        if res.status == 0:
            break
        failures.append(f"{method}: status {res.status}, {res.message}")
    else:
        raise LPError(f"HiGHS did not decide separability ({'; '.join(failures)})")
    free = n_classes - 1
    W = np.zeros((n_classes, d))
    b = np.zeros(n_classes)
    W[:free] = res.x[: free * d].reshape(free, d)
    b[:free] = res.x[free * d :]
    scores = X @ W.T + b
    own = scores[np.arange(n), cls]
    scores[np.arange(n), cls] = -np.inf
    margin = float((own - scores.max(axis=1)).min())
    if not margin >= 1.0 - _MARGIN_TOL:
        raise LPError(f"HiGHS returned a classifier of margin {margin:.3g} < 1 (status 0)")
    return W, b


def separating_hyperplane(
    X: np.ndarray, classes: np.ndarray, n_classes: int | None = None, *, method: str = "auto"
) -> tuple[np.ndarray, np.ndarray] | None:
    """A linear classifier with bias of margin one on ``(X, classes)``, or None.

    Parameters
    ----------
    X : ndarray (n, d)
        Features.
    classes : ndarray (n,) of int
        Classes in ``0 .. n_classes - 1``.
    n_classes : int, optional
        C (default ``classes.max() + 1``, at least 2).
    method : {'auto', 'lp', 'certificate'}
        ``'lp'``: the feasibility LP, solved by HiGHS.  ``'certificate'`` first looks for a
        certificate with unpenalised logistic regression (lbfgs, then Newton-CG): a
        classifier whose margins are all positive (separable), or the Farkas certificate
        ``lambda_{nu k} = p_k(x_nu)`` of the fitted probabilities, which shows that no
        separator has a geometric margin ``min margin / |(W, b)|_F`` above ``1e-9``
        (not separable; the LP's own feasibility tolerance is ``1e-7``); and solves the LP
        only when neither is found.  ``'auto'`` (default): ``'lp'`` for LPs of at most
        ``4e5`` matrix entries, else ``'certificate'`` (at ``d = 400``, K = 3 an LP takes
        about 30 s of CPU, a certificate a few seconds).

    Returns
    -------
    (W, b) or None
        ``W`` (C, d) and ``b`` (C,) with ``(W x + b)_c - (W x + b)_k >= 1 - 1e-6`` for every
        sample of class ``c`` and ``k != c`` (verified; the last row is zero), or None when
        the sample is not linearly separable.

    Raises
    ------
    LPError
        If HiGHS stops without deciding (iteration limit, numerical trouble) or returns a
        certificate whose margins fail the check.
    """
    X = check_array("X", X, shape=(None, None))
    n, d = X.shape
    cls = np.asarray(classes)
    if cls.shape != (n,) or not np.issubdtype(cls.dtype, np.integer):
        raise ValueError(f"classes must be {n} integers, got shape {cls.shape}")
    c_max = int(cls.max(initial=0)) + 1
    n_classes = max(c_max, 2) if n_classes is None else check_int("n_classes", n_classes, low=2)
    if cls.min(initial=0) < 0 or c_max > n_classes:
        raise ValueError(f"classes must lie in 0..{n_classes - 1}")
    check_choice("method", method, METHODS)
    present = np.unique(cls)
    if present.size < 2:  # one class present: any constant classifier separates
        W = np.zeros((n_classes, d))
        b = np.zeros(n_classes)
        if n:
            b[int(cls[0])] = 1.0
            b -= b[-1]
        return W, b
    if method == "auto":
        size = n * (n_classes - 1) ** 2 * (d + 1)
        method = "lp" if size <= _LP_MAX_ENTRIES else "certificate"
    if method == "certificate" and present.size == n_classes:
        decided, wb = _certificate(X, cls, n_classes)
        if decided:
            return wb
    return _lp(X, cls, n_classes)


def _one(
    mixture: Mixture, n: int, d: int, key: tuple[int, ...], seed: int, counts: str, method: str
) -> bool:
    """Whether the sample with spawn key ``key`` is separable."""
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=key))
    X, cls = draw_dataset(mixture, n, d, rng, counts)
    n_classes = mixture.labels.classes.shape[0]
    return separating_hyperplane(X, cls, n_classes, method=method) is not None


def _as_dims(mixture: Mixture, d: Any) -> list[int]:
    values = [d] if np.isscalar(d) else list(d)
    if not values:
        raise ArgumentError("d", "must be an integer or a non-empty list of them")
    return [check_dimension(mixture, v) for v in values]


@renamed_keywords(n_datasets="seeds")
def separability_fraction(
    mixture: Mixture,
    alphas: Sequence[float] | np.ndarray,
    *,
    d: int | Sequence[int],
    seeds: int,
    seed: int = 0,
    n_jobs: int = 1,
    progress: bool = False,
    counts: str = "fixed",
    method: str = "auto",
) -> pd.DataFrame:
    """Fraction of linearly separable samples of the mixture at each ``(d, alpha)``.

    Parameters
    ----------
    mixture : Mixture
        The data model (its label map gives the classes to separate).
    alphas : sequence of float
        Sample complexities; each sample has ``n = round(alpha d) >= 1`` points.
    d : int or sequence of int
        Input dimension(s) (``>= K`` for isotropic mixtures, whose means are realised
        exactly).
    seeds : int
        Independent samples per point (each with its own realisation of the means).
    seed : int
        Root seed; sample ``r`` at alpha index ``i`` and dimension ``d`` uses
        ``SeedSequence(seed, spawn_key=(d, i, r))``.
    n_jobs : int
        Worker processes (joblib convention; the table does not depend on it).
    progress : bool
        A progress bar on stderr (drawn on a terminal only).
    counts : {'fixed', 'random'}
        Cluster counts ``round(rho n)`` or multinomial (i.i.d. labels).
    method : {'auto', 'lp', 'certificate'}
        How each sample is decided (:func:`separating_hyperplane`).

    Returns
    -------
    pandas.DataFrame
        One row per ``(d, alpha)``: ``alpha, d, n, fraction, se`` (binomial standard error
        ``sqrt(f (1 - f) / seeds)``, zero when every sample agrees),
        ``n_separable, seeds, seed``.

    Raises
    ------
    LPError
        If HiGHS fails on a sample (never counted as separable or not).
    """
    if not isinstance(mixture, Mixture):
        raise TypeError(f"mixture must be a gaussmix.Mixture, got {type(mixture).__name__}")
    grid = check_array("alphas", alphas, shape=(None,), positive=True)
    if grid.size == 0:
        raise ArgumentError("alphas", "must not be empty")
    dims = _as_dims(mixture, d)
    seeds = check_param("seeds", seeds)
    seed = check_param("seed", seed)
    n_jobs = check_param("n_jobs", n_jobs)
    check_choice("counts", counts, ("fixed", "random"))
    check_choice("method", method, METHODS)
    for dim in dims:
        for a in grid:
            if int(round(a * dim)) < 1:
                raise ValueError(f"alphas: alpha={a:g} gives n = round(alpha d) = 0 at d={dim}")
            check_sample_size(int(round(a * dim)), dim)
    tasks = [
        (dim, i, r, int(round(a * dim)))
        for dim in dims
        for i, a in enumerate(grid)
        for r in range(seeds)
    ]
    results = _run(mixture, tasks, seed, counts, method, n_jobs, progress)
    rows = []
    for dim in dims:
        for i, a in enumerate(grid):
            sep = sum(results[(dim, i, r)] for r in range(seeds))
            f = sep / seeds
            rows.append(
                {
                    "alpha": float(a),
                    "d": dim,
                    "n": int(round(a * dim)),
                    "fraction": f,
                    "se": float(np.sqrt(f * (1 - f) / seeds)),
                    "n_separable": int(sep),
                    "seeds": seeds,
                    "seed": seed,
                }
            )
    return pd.DataFrame(rows, columns=list(COLUMNS))


def _run(
    mixture: Mixture,
    tasks: list[tuple[int, int, int, int]],
    seed: int,
    counts: str,
    method: str,
    n_jobs: int,
    progress: bool,
) -> dict[tuple[int, int, int], bool]:
    """Run the LPs (serially or with joblib), with a progress bar over samples."""
    out: dict[tuple[int, int, int], bool] = {}
    bar_kw = {"total": len(tasks), "desc": "separability", "unit": "sample"}
    with progress_bar(enabled=progress, **bar_kw) as bar:
        if n_jobs == 1:
            for dim, i, r, n in tasks:
                out[(dim, i, r)] = _one(mixture, n, dim, (dim, i, r), seed, counts, method)
                bar.update(1)
            return out
        from joblib import Parallel, delayed

        gen = Parallel(n_jobs=n_jobs, return_as="generator")(
            delayed(_one)(mixture, n, dim, (dim, i, r), seed, counts, method)
            for dim, i, r, n in tasks
        )
        for (dim, i, r, _), value in zip(tasks, gen):
            out[(dim, i, r)] = value
            bar.update(1)
    return out


# ------------------------------------------------------------------------- crossing
def lp_crossing(table: pd.DataFrame, *, d: int | None = None) -> tuple[float, float]:
    """The ``alpha`` at which half of the samples are separable, with a standard error.

    A logistic fit ``P[separable] = expit(b0 + b1 alpha)`` by maximum likelihood on the
    binomial counts; ``alpha_50 = -b0 / b1`` and its standard error by the delta method from
    the Fisher information.  When the counts are a perfect step (every sample separable up
    to some alpha, none beyond), the likelihood has no maximum: ``alpha_50`` is then the
    midpoint of the step and the standard error that of a uniform law on it
    (``gap / sqrt(12)``).  With a single alpha strictly between all and none, the standard
    error is at least that of a uniform law on the bracket of all-or-nothing alphas around
    the crossing (the Fisher information would claim more than the data show).

    Parameters
    ----------
    table : pandas.DataFrame
        Output of :func:`separability_fraction` (a table written before gaussmix 1.0,
        whose column ``seeds`` was called ``n_datasets``, is read as well).
    d : int, optional
        The dimension to use (required when the table has several).

    Returns
    -------
    (alpha_50, se) : tuple of float

    Raises
    ------
    ValueError
        If the table lacks columns, ``d`` is missing or absent, or the fraction does not
        cross one half inside the alphas of the table (widen them), or it increases with
        alpha.
    """
    need = {"alpha", "d", "n_separable", "seeds"}
    if isinstance(table, pd.DataFrame) and OLD_SEEDS_COLUMN in table.columns:
        table = table.rename(columns={OLD_SEEDS_COLUMN: "seeds"})
    if not isinstance(table, pd.DataFrame) or not need <= set(table.columns):
        raise ValueError(
            f"table must be a separability_fraction table with columns {sorted(need)}"
        )
    dims = sorted(set(table["d"].tolist()))
    if d is None:
        if len(dims) != 1:
            raise ArgumentError("d", f"must be given: the table has dimensions {dims}")
        d = dims[0]
    elif d not in dims:
        raise ArgumentError("d", f"{d} is not in the table (dimensions {dims})")
    t = table[table["d"] == d].sort_values("alpha")
    a = t["alpha"].to_numpy(float)
    k = t["n_separable"].to_numpy(float)
    N = t["seeds"].to_numpy(float)
    f = k / N
    if not (f.max() > 0.5 and f.min() < 0.5):
        raise ValueError(
            f"the separable fraction at d={d} does not cross 1/2 within alpha in "
            f"[{a.min():g}, {a.max():g}] (fractions {np.round(f, 3).tolist()}); widen the alphas"
        )
    if np.all((k == 0) | (k == N)):
        ones = a[k == N]
        zeros = a[k == 0]
        if ones.max() < zeros.min():  # a perfect step: no maximum-likelihood fit
            lo, hi = ones.max(), zeros.min()
            return float(0.5 * (lo + hi)), float((hi - lo) / np.sqrt(12.0))
    scale = float(a.std()) or 1.0
    x = (a - a.mean()) / scale

    def nll(beta: np.ndarray) -> float:
        z = beta[0] + beta[1] * x
        return float(-(k * log_expit(z) + (N - k) * log_expit(-z)).sum())

    def grad(beta: np.ndarray) -> np.ndarray:
        r = N * expit(beta[0] + beta[1] * x) - k
        return np.array([r.sum(), (r * x).sum()])

    fit = minimize(nll, np.array([0.0, -1.0]), jac=grad, method="BFGS", options={"gtol": 1e-10})
    b0, b1 = fit.x
    if not b1 < 0:
        raise ValueError(
            f"the separable fraction at d={d} does not decrease with alpha (logistic slope "
            f"{b1 / scale:g}); widen the alphas or add samples"
        )
    p = expit(b0 + b1 * x)
    w = N * p * (1 - p)
    info = np.array([[w.sum(), (w * x).sum()], [(w * x).sum(), (w * x * x).sum()]])
    cov = np.linalg.inv(info)
    x50 = -b0 / b1
    g = np.array([-1.0 / b1, b0 / b1**2])
    se_x = float(np.sqrt(g @ cov @ g))
    alpha_50 = float(a.mean() + scale * x50)
    se = scale * se_x
    if np.count_nonzero((k > 0) & (k < N)) < 2:
        # at most one informative alpha: the fitted slope is poorly determined and the
        # Fisher error too small; the crossing is known to the bracket of all-or-nothing
        # alphas around it (standard deviation of a uniform law on it) at best
        lo = a[(k == N) & (a <= alpha_50)].max(initial=a.min())
        hi = a[(k == 0) & (a >= alpha_50)].min(initial=a.max())
        se = max(se, float((hi - lo) / np.sqrt(12.0)))
    if not a.min() <= alpha_50 <= a.max():
        raise ValueError(
            f"the fitted crossing alpha={alpha_50:g} at d={d} lies outside the alphas "
            f"[{a.min():g}, {a.max():g}]; widen them"
        )
    return alpha_50, se
