"""The fixed-point solver of Theorem 1 and its result object.

One iteration maps the order parameters ``x = (Q_c, M_c, V_c, b)`` to new ones:

1. channel (loss half, eq. spgeneral right):  ``Qhat_c = alpha rho_c E[f f^T]``,
   ``Mhat_c = alpha rho_c E[f]``, ``Vhat_c = alpha rho_c E[(I + H V_c)^{-1} H]``;
2. bias: one Newton step on the stationarity condition of the unpenalised bias,
   ``sum_c rho_c E[f_c] = 0`` (gradient form, DESIGN.md pitfall 1), i.e.
   ``b <- b + (sum_c Vhat_c)^{-1} sum_c Mhat_c``;
3. prior (eq. spgeneral left / Corollary 1): ``(Q_c, M_c, V_c)`` from the hats.

The map is accelerated with Anderson mixing (with a ridge-regularised least-squares
problem and a fallback to damped steps whenever an extrapolation leaves the cone of valid
overlaps).  Convergence is declared when ``max_i |T(x)_i - x_i| / max(1, |x_i|) < tol``.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gaussmix.core.exceptions import ConvergenceError, IntegrationWarning, SpuriousFixedPointError
from gaussmix.core.validation import check_int, check_real
from gaussmix.core.version import __version__

from .channel import channel_moments
from .linalg import sym_eigvals
from .losses import Loss, _solve_batch
from .mixture import Mixture
from .observables import free_energy_terms, test_accuracy, train_accuracy, weight_sparsity
from .prior import prior_update
from .problem import Problem, make_problem
from .quadrature import GaussHermite, default_rule

__all__ = ["FixedPointResult", "solve", "solve_problem", "free_energy"]

#: largest dimension of the channel integral (cross-entropy with K classes: K - 1)
MAX_QUADRATURE_DIM = 5
#: largest number of nodes a refinement may reach
MAX_QUADRATURE_NODES = 60_000


@dataclass
class FixedPointResult:
    """Result of :func:`solve`, in the spirit of ``scipy.optimize.OptimizeResult``.

    Order parameters are in the full label space (``L`` = label dimension): ``Q``, ``V``,
    ``Qhat``, ``Vhat`` have shape (K, L, L); ``M``, ``Mhat`` (K, L); ``b`` (L,).  For the
    cross-entropy the outputs are in the gauge ``1^T h = 0`` (``Q_c 1 = 0``).

    Attributes
    ----------
    converged : bool
    n_iter : int
    residual : float
        Final scaled residual ``max |T(x) - x| / max(1, |x|)``.
    message : str
    test_error, train_error, train_loss : float
        Theorem 2.
    free_energy : float
        RS free energy (eq. app:rsfree) at the fixed point (= minimal risk per dimension).
    penalty_value : float
        ``E[r(W*)] / d``.
    integration_error : float
        Largest estimated integration error of the three errors (0 for closed-form channels
        with orthants of dimension <= 2).
    integration_errors : dict
        The estimate for each of ``test_error``, ``train_error``, ``train_loss``: the change
        under a refined channel rule plus the error of the final evaluation itself (the
        training error of the cross-entropy with K >= 4 uses seeded quasi-Monte Carlo).
    nonzero_fraction : float
        Expected fraction of non-zero components of ``W*`` (1.0 for ridge).
    nonzero_fraction_support, nonzero_fraction_off_support : float
        The same on the directions where the means have non-zero / zero components (NaN if
        there are none).
    l1_norm : float
        ``||W*||_1 / d``.
    """

    converged: bool
    n_iter: int
    residual: float
    message: str
    Q: np.ndarray
    M: np.ndarray
    V: np.ndarray
    b: np.ndarray
    Qhat: np.ndarray
    Mhat: np.ndarray
    Vhat: np.ndarray
    test_error: float
    train_error: float
    train_loss: float
    free_energy: float
    penalty_value: float
    integration_error: float
    integration_errors: dict = field(default_factory=dict)
    nonzero_fraction: float = float("nan")
    nonzero_fraction_support: float = float("nan")
    nonzero_fraction_off_support: float = float("nan")
    l1_norm: float = float("nan")
    params: dict = field(default_factory=dict)
    _state: Any = field(default=None, repr=False)

    @property
    def success(self) -> bool:
        """Alias of ``converged`` (scipy naming)."""
        return self.converged

    def to_dict(self) -> dict:
        """JSON-friendly dictionary (the ``gaussmix point --json`` contract)."""
        return {
            "test_error": float(self.test_error),
            "train_error": float(self.train_error),
            "train_loss": float(self.train_loss),
            "converged": bool(self.converged),
            "n_iter": int(self.n_iter),
            "residual": float(self.residual),
            "Q": self.Q.tolist(),
            "M": self.M.tolist(),
            "V": self.V.tolist(),
            "b": self.b.tolist(),
            "free_energy": float(self.free_energy),
            "integration_error": float(self.integration_error),
            "integration_errors": {k: float(v) for k, v in self.integration_errors.items()},
            "nonzero_fraction": float(self.nonzero_fraction),
            "message": self.message,
        }

    def summary(self) -> dict:
        """Scalar observables only (a row of a learning-curve table)."""
        return {
            "test_error": self.test_error,
            "train_error": self.train_error,
            "train_loss": self.train_loss,
            "free_energy": self.free_energy,
            "penalty_value": self.penalty_value,
            "nonzero_fraction": self.nonzero_fraction,
            "nonzero_fraction_support": self.nonzero_fraction_support,
            "nonzero_fraction_off_support": self.nonzero_fraction_off_support,
            "l1_norm": self.l1_norm,
            "converged": self.converged,
            "n_iter": self.n_iter,
            "residual": self.residual,
            "integration_error": self.integration_error,
        }


# --------------------------------------------------------------------------- packing
def _pack(Q: np.ndarray, M: np.ndarray, V: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.concatenate([Q.ravel(), M.ravel(), V.ravel(), b.ravel()])


def _unpack(x: np.ndarray, K: int, L: int):
    n2 = K * L * L
    Q = x[:n2].reshape(K, L, L)
    M = x[n2 : n2 + K * L].reshape(K, L)
    V = x[n2 + K * L : 2 * n2 + K * L].reshape(K, L, L)
    b = x[2 * n2 + K * L :]
    return Q, M, V, b


def _valid(x: np.ndarray, K: int, L: int) -> bool:
    """Finite, every ``Q_c`` positive semi-definite and every ``V_c`` positive definite."""
    if not np.all(np.isfinite(x)):
        return False
    Q, _, V, _ = _unpack(x, K, L)
    eq, ev = sym_eigvals(Q), sym_eigvals(V)
    scale = max(1.0, float(np.abs(eq).max()))
    return bool(eq.min() >= -1e-9 * scale and ev.min() > 0)


class _Map:
    """The fixed-point map ``x -> T(x)`` of one problem and one quadrature rule."""

    def __init__(self, problem: Problem, rule: GaussHermite) -> None:
        self.problem = problem
        self.rule = rule
        self.cache: dict = {}
        self.K = problem.n_clusters
        self.L = problem.dim
        self.ar = problem.alpha * problem.mixture.rho

    def hats(self, x: np.ndarray):
        """Channel moments and hat parameters at ``x`` (the last evaluation is remembered,
        so the observables at a converged state cost no second channel evaluation)."""
        last = self.cache.get("last")
        if last is not None and np.array_equal(last[0], x):
            return last[1]
        Q, M, V, b = _unpack(x, self.K, self.L)
        p = self.problem
        mom = channel_moments(p.loss, p.y, M, b, Q, V, self.rule, self.cache)
        Mhat = self.ar[:, None] * mom.Ef
        Qhat = self.ar[:, None, None] * mom.Eff
        Vhat = self.ar[:, None, None] * mom.Edf
        out = (mom, Qhat, Mhat, Vhat)
        self.cache["last"] = (x.copy(), out)
        return out

    def __call__(self, x: np.ndarray) -> np.ndarray:
        Q, M, V, b = _unpack(x, self.K, self.L)
        _, Qhat, Mhat, Vhat = self.hats(x)
        Sv = Vhat.sum(axis=0)
        Sm = Mhat.sum(axis=0)
        reg = 1e-12 * max(1.0, float(np.abs(Sv).max()))
        db = _solve_batch(Sv + reg * np.eye(self.L), Sm)
        pr = prior_update(self.problem, Qhat, Mhat, Vhat)
        return _pack(pr.Q, pr.M, pr.V, b + db)


def _initial_state(problem: Problem) -> np.ndarray:
    L = problem.dim
    rho = problem.mixture.rho
    ar = problem.alpha * rho
    yr = problem.y @ problem.P.T  # effective labels
    ybar = rho @ yr
    Mhat = 0.5 * ar[:, None] * (yr - ybar)
    Qhat = 0.5 * ar[:, None, None] * np.eye(L)
    Vhat = 0.5 * ar[:, None, None] * np.eye(L)
    lam = problem.lam if problem.lam > 0 else 1e-3
    pr = prior_update(problem, Qhat, Mhat, Vhat, lam=lam)
    return _pack(pr.Q, pr.M, pr.V, ybar)


def _state_from_result(problem: Problem, res: FixedPointResult | dict) -> np.ndarray | None:
    """Effective-space state vector from a result (or a dict with full-space Q, M, V, b)."""
    P = problem.P
    get = res.get if isinstance(res, dict) else lambda k: getattr(res, k)
    try:
        Q = P @ np.asarray(get("Q")) @ P.T
        V = P @ np.asarray(get("V")) @ P.T
        M = np.asarray(get("M")) @ P.T
        b = np.asarray(get("b")) @ P.T
    except (ValueError, TypeError, KeyError, AttributeError):
        return None
    if Q.shape != (problem.n_clusters, problem.dim, problem.dim) or M.shape != (
        problem.n_clusters,
        problem.dim,
    ):
        return None
    return _pack(Q, M, V, b)


def _anderson(
    T: _Map,
    x0: np.ndarray,
    *,
    tol: float,
    max_iter: int,
    memory: int,
    damping: float,
    callback=None,
    history: list | None = None,
    return_image: bool = True,
) -> tuple[np.ndarray, int, float, bool, str]:
    """Anderson-accelerated fixed-point iteration with safeguards.

    On convergence (``max |T(x) - x| / max(1, |x|) < tol``) the image ``T(x)`` is returned,
    or ``x`` itself with ``return_image=False`` (whose channel moments the map remembers).

    ``history`` is a list of difference pairs ``(dx, dg)`` (``dg = T(x + dx) - T(x)``); it is
    extended in place, so that the next point of a curve can start with a secant model of the
    inverse Jacobian of the previous one (a quasi-Newton warm start).
    """
    K, L = T.K, T.L
    x = x0.copy()
    pairs: list[tuple[np.ndarray, np.ndarray]] = history if history is not None else []
    del pairs[: max(0, len(pairs) - memory)]
    last: tuple[np.ndarray, np.ndarray] | None = None
    best = np.inf
    beta = damping
    res = np.inf
    for it in range(1, max_iter + 1):
        try:
            g = T(x)
        except (FloatingPointError, np.linalg.LinAlgError) as exc:
            if last is not None:
                x = last[0] + 0.5 * beta * (last[1] - last[0])
                pairs.clear()
                last = None
                beta *= 0.5
                continue
            return x, it, np.inf, False, f"map failed: {exc}"
        r = g - x
        scale = np.maximum(1.0, np.abs(x))
        res = float(np.max(np.abs(r) / scale))
        if callback is not None:
            callback(it, res)
        if not np.isfinite(res):
            return x, it, res, False, "NaN or infinite order parameters"
        if last is not None:
            pairs.append((x - last[0], g - last[1]))
            if len(pairs) > memory:
                pairs.pop(0)
        if res < tol:
            return (g if return_image else x), it, res, True, "converged"
        if res > 1e4 * best and pairs:
            # divergence of the extrapolation: restart from here with more damping
            pairs.clear()
            beta = max(0.05, 0.5 * beta)
        best = min(best, res)
        last = (x, g)
        x_new = x + beta * r
        if pairs and memory > 0:
            dX = np.stack([p[0] for p in pairs], axis=1)
            dG = np.stack([p[1] for p in pairs], axis=1)
            dR = (dG - dX) / scale[:, None]
            A = dR.T @ dR
            A += (1e-10 * np.trace(A) / A.shape[0] + 1e-300) * np.eye(A.shape[0])
            try:
                gamma = np.linalg.solve(A, dR.T @ (r / scale))
                cand = x + beta * r - (dX + beta * (dG - dX)) @ gamma
                if _valid(cand, K, L):
                    x_new = cand
                else:
                    pairs.clear()
            except np.linalg.LinAlgError:
                pairs.clear()
        if not _valid(x_new, K, L):
            # a damped step that leaves the cone: shrink it
            t = 0.5
            while t > 1e-6 and not _valid(x + t * beta * r, K, L):
                t *= 0.5
            x_new = x + t * beta * r
        x = x_new
    return (
        x,
        max_iter,
        res,
        False,
        f"did not converge in {max_iter} iterations (residual {res:.3g})",
    )


def _observables(problem: Problem, T: _Map, x: np.ndarray, *, light: bool = False) -> dict:
    """Theorem 2 observables at the state ``x``; ``light`` computes only the three errors
    (what the integration-error estimate compares), not the free energy, penalty and
    sparsity."""
    K, L = T.K, T.L
    Q, M, V, b = _unpack(x, K, L)
    mom, Qhat, Mhat, Vhat = T.hats(x)
    rho = problem.mixture.rho
    test_acc, test_err = test_accuracy(problem, M, b, Q)
    train_acc, train_err = train_accuracy(problem, M, b, Q, V)
    out = {
        "state": (Q, M, V, b),
        "hats": (Qhat, Mhat, Vhat),
        "test_error": float(1.0 - rho @ test_acc),
        "train_error": float(1.0 - rho @ train_acc),
        "train_loss": float(rho @ mom.Eloss),
        "errors": {"test_error": test_err, "train_error": train_err, "train_loss": 0.0},
        "light": light,
    }
    if not light:
        out.update(_state_statistics(problem, T, x))
    return out


def _state_statistics(problem: Problem, T: _Map, x: np.ndarray) -> dict:
    """Free energy (eq. app:rsfree), penalty value and sparsity of ``W*`` at the state."""
    K, L = T.K, T.L
    Q, M, V, b = _unpack(x, K, L)
    mom, Qhat, Mhat, Vhat = T.hats(x)
    pr = prior_update(problem, Qhat, Mhat, Vhat, details=True)
    return {
        "free_energy": free_energy_terms(problem, M, Q, V, Mhat, Qhat, Vhat, mom.Eenv, pr.psi_w),
        "penalty_value": pr.penalty,
        "sparsity": weight_sparsity(problem.mixture, pr),
        "light": False,
    }


def _needs_quadrature(problem: Problem) -> bool:
    return not problem.loss.exact_channel


def solve_problem(
    problem: Problem,
    *,
    tol: float = 1e-8,
    max_iter: int = 3000,
    quadrature: GaussHermite | None = None,
    init: FixedPointResult | dict | None = None,
    anderson: int = 6,
    damping: float = 1.0,
    estimate_error: bool = True,
    auto_refine: bool = True,
    quad_tol: float = 1e-7,
    max_refine: int = 5,
    throw: bool = True,
    callback=None,
    history: dict | None = None,
    continuation: bool = True,
) -> FixedPointResult:
    """Solve the fixed point of a validated :class:`~gaussmix.theory.problem.Problem`.

    See :func:`solve` for the parameters.  ``history`` (a dict, updated in place) carries
    the Anderson secant pairs of each quadrature rule from one point of a curve to the next.
    ``continuation`` first converges with a coarser rule where the rule is expensive
    (:meth:`~gaussmix.theory.quadrature.GaussHermite.coarsened`); it changes the starting point
    only, not the fixed point.
    """
    history = history if history is not None else {}
    tol = check_real("tol", tol, low=0.0, low_open=True)
    max_iter = check_int("max_iter", max_iter, low=1)
    anderson = check_int("anderson", anderson, low=0, high=50)
    damping = check_real("damping", damping, low=0.0, high=1.0, low_open=True)
    quad_tol = check_real("quad_tol", quad_tol, low=0.0)
    max_refine = check_int("max_refine", max_refine, low=0, high=10)
    L = problem.dim
    needs_quad = _needs_quadrature(problem)
    if quadrature is not None:
        rule = quadrature
        if not isinstance(rule, GaussHermite):
            raise TypeError(f"quadrature must be a GaussHermite rule, got {type(rule).__name__}")
        if rule.dim != L:
            raise ValueError(f"quadrature has dimension {rule.dim}, the problem needs {L}")
    elif needs_quad:
        if L > MAX_QUADRATURE_DIM:
            raise ValueError(
                f"loss={problem.loss_name!r} with {L + 1} classes needs a {L}-dimensional "
                f"quadrature; at most {MAX_QUADRATURE_DIM} is supported (K <= "
                f"{MAX_QUADRATURE_DIM + 1})"
            )
        rule = default_rule(L)
    else:
        rule = GaussHermite(1, 1)  # unused: closed-form channel
    x0 = _state_from_result(problem, init) if init is not None else None
    if x0 is None or not _valid(x0, problem.n_clusters, L):
        x0 = _initial_state(problem)
    T = _Map(problem, rule)
    kw = dict(
        tol=tol,
        max_iter=max_iter,
        memory=anderson,
        damping=damping,
        callback=callback,
    )
    n_coarse = 0
    coarse = rule.coarsened() if needs_quad and continuation else None
    if coarse is not None:
        # continuation in the rule: converge with a coarse rule first (cheap evaluations),
        # then the default rule starts from there with the coarse secant pairs as its
        # Jacobian model and needs one or two evaluations.  Only the starting point and the
        # secant pairs carry over; a failure of the coarse solve is ignored.
        pairs: list = []
        xc, n_coarse, _, okc, _ = _anderson(
            _Map(problem, coarse), x0, history=pairs, return_image=False, **kw
        )
        if okc and _valid(xc, problem.n_clusters, L):
            x0 = xc
            history[rule] = pairs
    # the first solve returns its last evaluated state (its observables reuse that channel
    # evaluation); the re-solve with a refined rule returns the image T2(x), so that the
    # state moves with the rule and the change of every observable estimates the error
    x, n_iter, res, ok, msg = _anderson(
        T, x0, history=history.setdefault(rule, []), return_image=False, **kw
    )
    n_iter += n_coarse
    obs = None
    errors = {"test_error": 0.0, "train_error": 0.0, "train_loss": 0.0}
    try:
        if ok:
            refinements = max_refine if auto_refine else 1
            refining = estimate_error and needs_quad and refinements > 0
            # (only the errors at a rule that a finer one will replace)
            obs = _observables(problem, T, x, light=refining)
            errors = dict(obs["errors"])
            for _ in range(refinements if refining else 0):
                # re-solve with a finer rule from the fixed point; the change of the errors
                # (plus each evaluation's own error) estimates the integration error
                finer = rule.refined()
                if finer is None or finer.weights.size > MAX_QUADRATURE_NODES:
                    break
                T2 = _Map(problem, finer)
                pairs2 = history.setdefault(finer, [])
                if not pairs2:  # the previous rule's secant pairs model this map's Jacobian
                    pairs2.extend(history.get(rule, []))
                x2, n2, res2, ok2, msg2 = _anderson(T2, x, history=pairs2, **kw)
                if not ok2:
                    ok, msg = False, f"refined quadrature: {msg2}"
                    break
                obs2 = _observables(problem, T2, x2, light=True)
                errors = {k: abs(obs2[k] - obs[k]) + obs2["errors"][k] for k in errors}
                x, obs, res, n_iter, rule, T = x2, obs2, res2, n_iter + n2, finer, T2
                if max(errors["test_error"], errors["train_loss"]) <= quad_tol:
                    break
        if ok and obs["light"]:  # the returned state's free energy, penalty, sparsity
            obs.update(_state_statistics(problem, T, x))
    except (FloatingPointError, np.linalg.LinAlgError, ValueError) as exc:
        ok, msg, obs = False, f"numerical failure at the fixed point: {exc}", None
    integration_error = max(errors.values())
    if obs is None:
        obs = _observables_safe(problem, T, x)
    Q, M, V, b = obs["state"]
    Qhat, Mhat, Vhat = obs["hats"]
    P = problem.P
    valid = _valid(x, problem.n_clusters, L)
    if ok and not valid:
        ok = False
        msg = "spurious fixed point: an overlap matrix Q_c or V_c is not positive definite"
    result = FixedPointResult(
        converged=ok,
        n_iter=n_iter,
        residual=res,
        message=msg,
        Q=_to_full(P, Q),
        M=M @ P,
        V=_to_full(P, V),
        b=b @ P,
        Qhat=_to_full(P, Qhat),
        Mhat=Mhat @ P,
        Vhat=_to_full(P, Vhat),
        test_error=obs["test_error"] if ok else np.nan,
        train_error=obs["train_error"] if ok else np.nan,
        train_loss=obs["train_loss"] if ok else np.nan,
        free_energy=obs["free_energy"] if ok else np.nan,
        penalty_value=obs["penalty_value"] if ok else np.nan,
        integration_error=integration_error,
        integration_errors=errors,
        **{k: (v if ok else np.nan) for k, v in obs.get("sparsity", {}).items()},
        params={
            **problem.describe(),
            "tol": tol,
            "quadrature": rule.describe() if needs_quad else "closed-form",
            "version": __version__,
        },
        _state=(problem, rule, x),
    )
    worst = max(errors["test_error"], errors["train_loss"])
    if ok and worst > max(1e-6, 100 * tol):
        warnings.warn(
            f"estimated integration error {worst:.2g} of the test error or training loss is "
            "large; pass a finer quadrature rule (quadrature=GaussHermite(n, dim))",
            IntegrationWarning,
            stacklevel=3,
        )
    if not ok and throw:
        cls = SpuriousFixedPointError if "spurious" in msg or "NaN" in msg else ConvergenceError
        raise cls(f"fixed point not found: {msg}", result)
    return result


def _to_full(P: np.ndarray, A: np.ndarray) -> np.ndarray:
    """``P^T A_c P`` for a stack of effective-space matrices."""
    return np.einsum("ia,kij,jb->kab", P, A, P)


def _observables_safe(problem: Problem, T: _Map, x: np.ndarray) -> dict:
    K, L = T.K, T.L
    Q, M, V, b = _unpack(x, K, L)
    nan = np.full_like
    try:
        _, Qhat, Mhat, Vhat = T.hats(x)
    except Exception:  # noqa: BLE001 - reporting a failed point
        Qhat, Mhat, Vhat = nan(Q, np.nan), nan(M, np.nan), nan(V, np.nan)
    return {
        "state": (Q, M, V, b),
        "hats": (Qhat, Mhat, Vhat),
        "test_error": np.nan,
        "train_error": np.nan,
        "train_loss": np.nan,
        "free_energy": np.nan,
        "penalty_value": np.nan,
    }


def solve(
    mixture: Mixture,
    loss: str | Loss = "logistic",
    *,
    lam: float,
    alpha: float,
    penalty: str = "l2",
    l1_ratio: float | None = None,
    tol: float = 1e-8,
    max_iter: int = 3000,
    quadrature: GaussHermite | None = None,
    init: FixedPointResult | None = None,
    anderson: int = 6,
    damping: float = 1.0,
    estimate_error: bool = True,
    auto_refine: bool = True,
    quad_tol: float = 1e-7,
    throw: bool = True,
) -> FixedPointResult:
    """Solve the self-consistent equations of Theorem 1 and evaluate Theorem 2.

    Parameters
    ----------
    mixture : Mixture
        The data model (with its label map).
    loss : {'square', 'logistic', 'cross-entropy', 'hinge'} or Loss
    lam : float
        Penalty strength ``lam >= 0`` of ``lam r(W)``.
    alpha : float
        Sample complexity ``n / d > 0``.
    penalty : {'l2', 'l1', 'elastic-net'}
        ``r(W) = ||W||_F^2 / 2``, ``||W||_1`` or
        ``l1_ratio ||W||_1 + (1 - l1_ratio) ||W||_F^2 / 2``; ``'l1'`` and ``'elastic-net'``
        need binary labels (one output) and ``lam > 0``.
    l1_ratio : float, optional
        Elastic-net mixing in ``[0, 1]`` (required for ``'elastic-net'``, implied 1 for
        ``'l1'``, None for ``'l2'``).
    tol : float
        Tolerance on the scaled change of every order parameter.
    max_iter : int
        Maximum number of iterations.
    quadrature : GaussHermite, optional
        Rule for the channel expectations (default by output dimension, see
        :func:`gaussmix.theory.quadrature.default_rule`).
    init : FixedPointResult or dict, optional
        Warm start (e.g. the previous point of a curve), or a dict of full-space ``Q``,
        ``M``, ``V``, ``b`` (e.g. a predictor extrapolated along a curve).
    anderson : int
        Anderson memory (0: damped plain iteration).
    damping : float
        Mixing parameter in (0, 1].
    estimate_error : bool
        Re-solve with a refined rule and report the change of the errors as
        ``integration_error`` (the refined answer is returned).
    auto_refine : bool
        While the estimated integration error of the test error or the training loss exceeds
        ``quad_tol``, refine the rule again (up to 5 times, and at most
        ``MAX_QUADRATURE_NODES`` nodes); otherwise refine once.
    quad_tol : float
        Target integration error for ``auto_refine``.
    throw : bool
        Raise :class:`~gaussmix.exceptions.ConvergenceError` when no valid fixed point is
        found (default).  With ``throw=False`` a result with ``converged=False`` and NaN
        observables is returned.

    Returns
    -------
    FixedPointResult
    """
    problem = make_problem(mixture, loss, lam=lam, alpha=alpha, penalty=penalty, l1_ratio=l1_ratio)
    return solve_problem(
        problem,
        tol=tol,
        max_iter=max_iter,
        quadrature=quadrature,
        init=init,
        anderson=anderson,
        damping=damping,
        estimate_error=estimate_error,
        auto_refine=auto_refine,
        quad_tol=quad_tol,
        throw=throw,
    )


def free_energy(
    problem: Problem,
    Q: np.ndarray,
    M: np.ndarray,
    V: np.ndarray,
    b: np.ndarray,
    Qhat: np.ndarray,
    Mhat: np.ndarray,
    Vhat: np.ndarray,
    rule: GaussHermite | None = None,
) -> float:
    """The replica-symmetric free energy (eq. app:rsfree) at arbitrary order parameters.

    All arguments are in the *effective* output space of ``problem`` (see
    :mod:`gaussmix.theory.problem`).  Stationary at the fixed point of Theorem 1, where it
    equals the minimal empirical risk per dimension, ``alpha eps_l + lam E[r(W*)] / d``.
    """
    rule = rule if rule is not None else default_rule(problem.dim)
    mom = channel_moments(problem.loss, problem.y, M, b, Q, V, rule)
    pr = prior_update(problem, Qhat, Mhat, Vhat, details=True)
    return free_energy_terms(problem, M, Q, V, Mhat, Qhat, Vhat, mom.Eenv, pr.psi_w)


def effective_state(result: FixedPointResult) -> dict:
    """Order parameters of a result in its effective output space (for tests and tools)."""
    problem, rule, x = result._state
    Q, M, V, b = _unpack(x, problem.n_clusters, problem.dim)
    P = problem.P
    return {
        "problem": problem,
        "rule": rule,
        "Q": Q,
        "M": M,
        "V": V,
        "b": b,
        "Qhat": P @ result.Qhat @ P.T,
        "Mhat": result.Mhat @ P.T,
        "Vhat": P @ result.Vhat @ P.T,
    }
