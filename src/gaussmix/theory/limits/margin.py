"""The max-margin estimator: the limit lambda -> 0+ below the separability threshold.

**Max-margin estimator.**  ``min ||W||_F^2 / 2`` subject to the margin constraints of every
training sample: one-hot labels ``(W x / sqrt(d) + b)_c - (W x / sqrt(d) + b)_mu >= 1`` for
``mu != c``; binary labels ``y (w.x / sqrt(d) + b) >= 1``.  It is Theorem 1 with the ridge
prior (any ``lam > 0`` gives the same minimiser; we use ``lam = 1``) and the loss equal to
the indicator of the *margin polyhedron* of each cluster, in the effective output space of
:mod:`gaussmix.theory.problem.problem` (``P``, ``constraints``):

    C_c(kappa) = {h : D_c h <= t_c - kappa g_c},   g_c = |rows of D_c|^2 / 2,

(``kappa = 1``: the rows ``(y_mu - y_c) . h`` of the nearest-label rule are at least
``|y_mu - y_c|^2 / 2`` inside, i.e. margin 1 in both label conventions).  Its proximal map is
the projection onto ``C_c`` in the metric ``V_c^{-1}``; with ``z = D h`` (``D`` square and
invertible for one-hot and binary labels), ``u = t' - z >= 0`` and ``G = D V D^T`` this is the
non-negative quadratic program ``min (u - u0)^T G^{-1} (u - u0) / 2``, ``u >= 0``, solved by
enumerating the active set ``A``: ``mu_A = -G_AA^{-1} u0_A >= 0`` and
``u_F = u0_F + G_FA mu_A >= 0``.  Then ``f = V^{-1}(h - omega) = -D^T mu`` and
``-df/domega = D_A^T G_AA^{-1} D_A`` (the Stein form of ``Vhat``).

It exists only below the separability threshold ``alpha*``; there it is the direction of
the cross-entropy (logistic, hinge) estimator as ``lam -> 0+`` (Rosset et al. 2003;
paper, Appendix C.1.1, eq. (198)), so its test error is the ``lam -> 0+`` test error and its

The threshold ``alpha*`` itself, the problem both share (:func:`margin_problem`) and the
margin polyhedron's channel (:func:`polyhedron_moments`) are in
:mod:`gaussmix.theory.limits.separability`.

Integrals: scrambled Sobol points (seeded, ``n_randomisations`` independent scramblings: the
spread is the error estimate), the same points for every evaluation (common random numbers).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from gaussmix.core.jsonio import plain
from gaussmix.core.results import Result
from gaussmix.core.validation import check_real

from ..channel.channel import ChannelMoments
from ..model.mixture import Mixture
from ..prior.prior import prior_update
from ..problem.problem import Problem
from ..solve.fixed_point import FixedPointMap
from ..solve.iteration import AndersonState, IterationStatus, iterate
from ..solve.observables import test_accuracy
from ..solve.state import is_valid_state, unpack_state
from .separability import (
    QMCNodes,
    SeparabilityError,
    describe_mixture,
    exchangeable_stats,
    initial_margin_state,
    is_exchangeable,
    margin_problem,
    polyhedron_moments,
    separability_threshold_estimate,
    to_full,
)

__all__ = ["MaxMarginResult", "max_margin"]


# --------------------------------------------------------------------------- max-margin map
class _MarginMap(FixedPointMap):
    """Theorem 1's map with the max-margin channel (margin ``kappa``) and the problem's ridge
    prior; the bias and prior steps are
    :class:`~gaussmix.theory.solve.fixed_point.FixedPointMap`'s."""

    __slots__ = ("kappa", "nodes")

    library_channel = False  # (its channel is _rows_channel's max-margin polyhedron)

    def __init__(self, problem: Problem, kappa: float, nodes: QMCNodes | None) -> None:
        super().__init__(problem, None)  # type: ignore[arg-type] - no quadrature rule
        object.__setattr__(self, "kappa", kappa)  # (a map is frozen after construction)
        object.__setattr__(self, "nodes", nodes)

    def _rows_channel(
        self, y: np.ndarray, m: np.ndarray, Q: np.ndarray, V: np.ndarray, warm: None
    ) -> tuple[ChannelMoments, None]:
        """The max-margin channel of every cluster at means ``m = M_c + b`` (the map's
        channel hook: a map of one point, no symmetry)."""
        mom, _ = polyhedron_moments(
            self.problem, m, np.zeros(self.L), Q, V, self.kappa, self.nodes
        )
        return mom, None


@dataclass
class MaxMarginResult(Result):
    """The max-margin estimator at one ``alpha`` (below ``alpha*``); the result protocol of
    :mod:`gaussmix.core.results`.

    Attributes
    ----------
    success : bool
        The fixed point was found and is valid (``converged`` is its deprecated name).
    message : str
    alpha : float
    test_error : float
        Theorem 2 (Gaussian orthant probabilities, :mod:`gaussmix.theory.numerics.orthant`); equal
        to
        the ``lam -> 0+`` test error of cross-entropy / logistic / hinge.
    train_error : float
        0 (every training sample is classified with margin 1).
    margin : float
        The normalised margin ``1 / (||W||_F / sqrt(d))`` (Theorem 1 with ``||W||_F^2 / d =
        2 E[r(W*)] / d`` from the prior).
    Q, M, V, b, Qhat, Mhat, Vhat : ndarray
        Order parameters in the full label space (as in
        :class:`~gaussmix.theory.solve.results.FixedPointResult`), for ``||W||`` normalised so that
        the margin is 1 (the hats are None on the exchangeable path, which iterates on
        ``q, m, v`` only).
    n_iter : int
    residual : float
    integration_error : float
        Standard error of the test error from the quasi-Monte Carlo channel (0 for K = 2).
    alpha_star : float
        The separability threshold it was checked against.
    """

    success: bool
    message: str
    alpha: float
    test_error: float
    train_error: float
    margin: float
    Q: np.ndarray
    M: np.ndarray
    V: np.ndarray
    b: np.ndarray
    Qhat: np.ndarray | None
    Mhat: np.ndarray | None
    Vhat: np.ndarray | None
    n_iter: int
    residual: float
    integration_error: float
    alpha_star: float
    params: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        """JSON-safe plain types (NaN as None); the flag under its key ``converged``."""
        return {("converged" if k == "success" else k): plain(v) for k, v in self.__dict__.items()}


def max_margin(
    mixture: Mixture,
    alpha: float,
    *,
    alpha_star: float | None = None,
    tol: float = 1e-9,
    max_iter: int = 3000,
    log2_n: int = 14,
    n_randomisations: int = 8,
    seed: int = 0,
    method: str = "auto",
    throw: bool = True,
) -> MaxMarginResult:
    """The max-margin classifier's fixed point (Theorem 1 with the margin-polyhedron
    indicator loss and ridge, see the module docstring) and its Theorem 2 test error.

    Parameters
    ----------
    mixture : Mixture
        One-hot labels (any K with exchangeable clusters, K <= 6 otherwise) or binary
        ``+-1`` labels (K = 2).
    alpha : float
        Sample complexity; must be below ``alpha*``.
    alpha_star : float, optional
        The separability threshold, if known (else computed).
    tol, max_iter
        Fixed-point tolerance (scaled residual) and iteration cap.
    log2_n, n_randomisations, seed
        Quasi-Monte Carlo nodes for ``K >= 3`` (``2^log2_n`` points per scrambling).
    method : {'auto', 'exchangeable', 'general'}
        ``'auto'``: the scalar map of exchangeable clusters (:func:`is_exchangeable`) for
        ``K >= 3``, the general map (active-set enumeration, ``K <= 6``) otherwise.
    throw : bool
        Raise :class:`~gaussmix.core.exceptions.ConvergenceError` if no fixed point is found
        (else return ``success=False`` with NaN observables).

    Raises
    ------
    SeparabilityError
        If ``alpha >= alpha*``: the data are not linearly separable and the estimator does
        not exist.
    """
    from gaussmix.core.exceptions import ConvergenceError

    problem = margin_problem(mixture, alpha)
    a = problem.alpha
    if alpha_star is None:
        alpha_star = separability_threshold_estimate(
            mixture, log2_n=max(log2_n, 15), n_randomisations=n_randomisations, seed=seed
        ).alpha_star
    astar = check_real("alpha_star", alpha_star, low=0.0, low_open=True)
    if a >= astar:
        raise SeparabilityError(
            f"the max-margin estimator does not exist at alpha={a:g}: the training data are "
            f"not linearly separable for alpha >= alpha* = {astar:.6g} "
            f"({describe_mixture(mixture)}); use lam > 0"
        )
    L = problem.dim
    if method not in ("auto", "exchangeable", "general"):
        raise ValueError(f"method must be 'auto', 'exchangeable' or 'general', got {method!r}")
    exch = is_exchangeable(mixture)
    if method == "exchangeable" and not exch:
        raise ValueError("method='exchangeable' needs exchangeable clusters (is_exchangeable)")
    if method == "exchangeable" or (method == "auto" and exch and L > 1):
        nodes = QMCNodes.make(L + 1, log2_n, n_randomisations, seed)
        # continuation in alpha as on the general path below: warm starts along gaps
        # alpha* - alpha shrinking geometrically (a cold start near alpha* overshoots)
        gap0, gap = 0.4 * astar, astar - a
        steps = [a] if gap >= gap0 else list(astar - np.geomspace(gap0, gap, 6))
        x0, n_it = None, 0
        for step in steps:
            ok, msg, n_i, resid, o = _exchangeable_max_margin(
                problem.with_lam_alpha(1.0, float(step)), tol, max_iter, nodes, x0
            )
            n_it += n_i
            if not ok:
                break
            x0 = o["x"]
        nan = np.full((problem.n_clusters,) + (L + 1,) * 2, np.nan)
        res = MaxMarginResult(
            success=ok,
            message=msg,
            alpha=a,
            test_error=float(o.get("test_error", np.nan)),
            train_error=0.0 if ok else np.nan,
            margin=float(o.get("margin", np.nan)),
            Q=o.get("Q", nan),
            M=o.get("M", nan[:, 0]),
            V=o.get("V", nan),
            b=o.get("b", nan[0, 0]),
            Qhat=None,
            Mhat=None,
            Vhat=None,
            n_iter=n_it,
            residual=resid,
            integration_error=float(o.get("integration_error", np.nan)),
            alpha_star=astar,
            params={"mixture": mixture.describe(), "tol": tol, "method": "exchangeable"},
        )
        if not ok and throw:
            raise ConvergenceError(f"max-margin fixed point not found: {msg}", res)
        return res
    nodes = None if L == 1 else QMCNodes.make(L, log2_n, n_randomisations, seed)
    x = initial_margin_state(problem)
    # continuation in alpha: the norm of the margin-1 solution grows like (alpha* - alpha)^-2,
    # so the gaps alpha* - alpha of the steps shrink geometrically towards the target's
    gap0, gap = 0.4 * astar, astar - a
    steps = [a] if gap >= gap0 else list(astar - np.geomspace(gap0, gap, 6))
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        for step in steps:
            T = _MarginMap(problem.with_lam_alpha(1.0, float(step)), 1.0, nodes)
            # Anderson mixing can stall in a cycle on this map: then Powell's hybrid method
            # from the (warm) start, then plain iteration (slow but monotone here) and Powell
            # again from where it ended
            out = iterate(T, x, AndersonState.init(4), tol=tol, max_iter=300, damping=1.0)
            if not out.converged:
                out = _polish(T, replace(out, x=x), tol)
            if not out.converged:
                out = iterate(T, x, AndersonState.init(0), tol=tol, max_iter=max_iter, damping=1.0)
            if not out.converged and np.all(np.isfinite(out.x)):
                out = _polish(T, out, tol)  # from the nearly converged plain iterate
            if not out.converged:
                break
            x = out.x
    P = problem.P
    ok = out.converged and is_valid_state(out.x, problem.n_clusters, L)
    Q, M, V, b = unpack_state(out.x, problem.n_clusters, L)
    ev = T.hats(out.x, out.aux) if ok else None
    test_err = margin = ierr = np.nan
    if ok:
        acc, err = test_accuracy(problem, M, b, Q)
        test_err = float(1.0 - problem.mixture.test_priors @ acc)
        pr = prior_update(problem, ev.Qhat, ev.Mhat, ev.Vhat, details=True)
        margin = float(1.0 / np.sqrt(2.0 * pr.penalty))
        ierr = err + (0.0 if nodes is None else _margin_test_se(problem, T, out.x, nodes))
    nanK = np.full_like
    res = MaxMarginResult(
        success=ok,
        message=out.message if ok or not out.converged else "spurious fixed point",
        alpha=a,
        test_error=test_err,
        train_error=0.0 if ok else np.nan,
        margin=margin,
        Q=to_full(P, Q),
        M=M @ P,
        V=to_full(P, V),
        b=problem.full_bias(b),
        Qhat=to_full(P, ev.Qhat) if ok else nanK(to_full(P, Q), np.nan),
        Mhat=ev.Mhat @ P if ok else nanK(M @ P, np.nan),
        Vhat=to_full(P, ev.Vhat) if ok else nanK(to_full(P, Q), np.nan),
        n_iter=out.n_iter,
        residual=out.residual,
        integration_error=float(ierr),
        alpha_star=astar,
        params={"mixture": mixture.describe(), "tol": tol, "method": "general"},
    )
    if not ok and throw:
        raise ConvergenceError(f"max-margin fixed point not found: {res.message}", res)
    return res


def _exchangeable_margin_map(
    x: np.ndarray, alpha: float, delta: float, a_theta: float, g: np.ndarray
) -> np.ndarray:
    """The max-margin map (margin 1, ridge ``lam = 1``) of exchangeable clusters on
    ``(log q, m, log v)`` (module docstring): with ``e1 = E|A|`` (Stein form),
    ``phi = E[f_0] K / (K - 1)`` and ``E|f|^2`` from the sort-based projection,

        a = 1 + Delta alpha e1 / (v (K - 1)),   v' = Delta / a,
        m' = alpha phi a_theta / (K a),
        q' = Delta [(alpha phi / K)^2 a_theta + Delta alpha E|f|^2 / (K - 1)] / a^2.
    """
    K = g.shape[-1]
    q, m, v = np.exp(x[0]), x[1], np.exp(x[2])
    sq = np.sqrt(q)
    _, d0, dg, dd = exchangeable_stats(m / sq, g, 1.0 / sq)
    e1 = -float(dg.mean())
    phi = sq * float(d0.mean()) * K / ((K - 1) * v)
    ef2 = q * float(dd.mean()) / (v * v)
    a = 1.0 + delta * alpha * e1 / (v * (K - 1))
    v2 = delta / a
    m2 = alpha * phi * a_theta / (K * a)
    q2 = delta * ((alpha * phi / K) ** 2 * a_theta + delta * alpha * ef2 / (K - 1)) / a**2
    return np.array([np.log(q2), m2, np.log(v2)])


def _exchangeable_max_margin(
    problem: Problem,
    tol: float,
    max_iter: int,
    nodes: QMCNodes,
    x0: np.ndarray | None = None,
) -> tuple[bool, str, int, float, dict]:
    """Fixed point of :func:`_exchangeable_margin_map` (Anderson-accelerated, from ``x0`` =
    ``(log q, m, log v)`` if given), the test error (a ``(K - 1)``-dimensional orthant
    probability) and the full-space order parameters (and ``'x'``, the fixed point)."""
    from ..numerics.equicorrelated import equicorrelated_orthant
    from ..numerics.orthant import orthant_probability

    mix = problem.mixture
    K = mix.n_clusters
    delta = float(mix.sigma[0, 0])
    Pi = np.eye(K) - 1.0 / K
    a_theta = float(np.trace(Pi @ mix.theta[0]) / (K - 1))
    g = nodes.pooled
    x = np.array([0.0, 1.0, 0.0]) if x0 is None else np.array(x0, dtype=float)
    anderson = AndersonState.init(5)
    last = None
    good = None  # the last finite image of the plain map
    res = np.inf
    it = 0
    while it < max_iter:
        it += 1
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            gx = _exchangeable_margin_map(x, problem.alpha, delta, a_theta, g)
        r = gx - x
        res = float(np.max(np.abs(r) / np.maximum(1.0, np.abs(x))))
        if not np.isfinite(res):
            if good is None or np.array_equal(x, good):
                break
            # an extrapolation left the domain (near alpha* the norm grows fast): restart
            # plain iteration, which converges here, from the last finite image
            anderson, last, x = anderson.cleared(), None, good
            continue
        good = gx
        if res < tol:
            x = gx
            break
        if last is not None:
            anderson = anderson.update(x - last[0], gx - last[1])
        last = (x, gx)
        try:
            x = anderson.extrapolate(x, r, 1.0, np.ones(3)) if not anderson.empty else gx
        except np.linalg.LinAlgError:
            anderson, x = anderson.cleared(), gx
    ok = bool(res < tol)
    q, m, v = np.exp(x[0]), x[1], np.exp(x[2])
    out: dict = {}
    if ok:
        # correlation 1/2: the deterministic equicorrelated integral (QMC if it declines)
        mean, cov = np.full(K - 1, -m), q * (np.eye(K - 1) + 1.0)
        p, err = equicorrelated_orthant(mean, cov) or orthant_probability(mean, cov)
        out = {
            "test_error": 1.0 - p,
            "integration_error": err,
            "margin": 1.0 / np.sqrt(q * (K - 1) / delta),
            "Q": np.broadcast_to(q * Pi, (K, K, K)).copy(),
            "M": m * Pi,
            "V": np.broadcast_to(v * Pi, (K, K, K)).copy(),
            "b": np.zeros(K),
            "x": x,
        }
    msg = "converged" if ok else f"did not converge in {it} iterations (residual {res:.3g})"
    return ok, msg, it, res, out


def _polish(T: FixedPointMap, out: Any, tol: float) -> Any:
    """Near ``alpha*`` the map contracts slowly (the margin-1 norm diverges): finish with
    Powell's hybrid method on ``T(x) - x`` from the last iterate (the channel is continuous
    in the state with fixed quasi-Monte Carlo points), and accept only a valid state whose
    scaled residual meets ``tol``."""
    from scipy.optimize import root

    def fun(x: np.ndarray) -> np.ndarray:
        try:
            return T(x) - x
        except (FloatingPointError, np.linalg.LinAlgError):
            return np.full_like(x, 1e6)

    sol = root(fun, out.x, method="hybr", options={"xtol": 1e-13, "maxfev": 2000})
    x = sol.x
    if not (np.all(np.isfinite(x)) and T.is_valid(x)):
        return out
    g = T(x)
    res = float(np.max(np.abs(g - x) / np.maximum(1.0, np.abs(x))))
    if res >= tol:
        return out
    return replace(out, x=g, residual=res, status=IterationStatus.CONVERGED, message="converged")


def _margin_test_se(problem: Problem, T: _MarginMap, x: np.ndarray, nodes: QMCNodes) -> float:
    """Standard error of the test error across the quasi-Monte Carlo scramblings: one map
    step per scrambling from the fixed point, test error of each image."""
    vals = []
    for r in range(nodes.n_randomisations):
        Tr = _MarginMap(problem, T.kappa, QMCNodes(nodes.xi[r : r + 1]))
        Q, M, V, b = unpack_state(Tr(x), problem.n_clusters, problem.dim)
        acc, _ = test_accuracy(problem, M, b, Q)
        vals.append(1.0 - problem.mixture.test_priors @ acc)
    return float(np.std(vals, ddof=1) / np.sqrt(len(vals)))
