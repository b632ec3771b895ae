"""The separability threshold alpha*: the homogeneous limit of the max-margin fixed point.

The max-margin estimator (:mod:`gaussmix.theory.limits.margin`) is Theorem 1 with the ridge prior
and the indicator of the *margin polyhedron* of each cluster as the loss; this module holds
what it shares with the threshold: the problem (:func:`margin_problem`), the polyhedron's
channel (:func:`polyhedron_moments`) and the seeded quasi-Monte Carlo points
(:class:`QMCNodes`).

**Separability threshold.**  At margin ``kappa = 0`` and ``lam = 0`` in the ridge prior the
map ``(Q, M, b, V) -> (Q', M', b', V')`` is homogeneous: invariant under
``(Q, M, b, V) -> (s^2 Q, s M, s b, V / c)``.  A non-trivial fixed point (the limit of the
max-margin fixed point rescaled by its norm as ``alpha -> alpha*-``, where the normalised
margin ``kappa(alpha) -> 0``) exists only at ``alpha = alpha*``.  ``V' `` scales exactly as
``1 / alpha`` (the hats are proportional to ``alpha``, ``A_j = sum_k sigma_j^k Vhat_k``), so we
iterate on (shape of the state, alpha): ``alpha <- tr(sum rho V'_1) / tr(sum rho V)`` makes
``V' = V`` in trace, the state is normalised to ``tr(sum_c rho_c Q_c) = 1``, and at
convergence the growth factor ``s^2`` of ``Q`` must be 1 — an identity (Moreau
decomposition ``|h - omega|^2 = -(h - omega) . omega`` and Stein's lemma) that is checked,
not imposed.  At the threshold the expected number of active constraints per sample is
``E|A| = (K - 1) / alpha*`` for balanced isotropic clusters (``alpha* E|A|`` = parameters per
input dimension: the classical support-vector count at the SAT/UNSAT transition).

*Exchangeable clusters* (isotropic, one shared ``Delta``, balanced ``rho``, Gram matrix
``a I + b 11^T``, one-hot labels): by permutation symmetry ``Q = q Pi``, ``V = v Pi``,
``M_c = m Pi e_c``, ``b = 0`` (``Pi`` the projector on the complement of ``1``), the metric
is Euclidean and the projection onto ``{h_c - h_mu >= kappa}`` is the sort-based closed form
``h_c = tau``, ``h_mu = tau - kappa`` for the ``k`` largest competitors, ``tau = (omega_c +
sum_top-k (omega_mu + kappa)) / (k + 1)``, ``k = #{mu : omega_mu + kappa > tau_{k-1}}``.
Eliminating ``alpha`` and ``q`` leaves one scalar equation for ``r = m / sqrt(q)``,

    r Delta e1(r) = a e2(r),   e1 = E|A| = -E[(h - omega) . g],   e2 = E[h_c - omega_c],

(``omega = r e_c + g``, ``g ~ N(0, I_K)``), and ``alpha* = (K - 1) / e1(r*)``.  The
competitors are i.i.d. given the own logit, so both integrals are nested 1-D ones
(:func:`waterfill_moments`): the water level ``tau`` has the distribution function
``P(Z + sum_mu (y_mu - t)_+ <= t - r)``, a Gil-Pelaez inversion of the ``(K-1)``-th power of
one hinge's characteristic function (Faddeeva function); deterministic, ``alpha*`` to about
1e-10 in about a second for K <= 20 (larger K needs finer rules, which the error estimate
asks for).

**Binary closed form.**  For two isotropic clusters (variance ``Delta``, means ``+-mu_bar``
around a centre absorbed by the bias, ``s = |mu_bar|^2``, priors ``rho, 1 - rho``), Gordon's
comparison (Gardner's volume) on the directions orthogonal to ``mu_bar`` gives: separable
with bias iff there are ``c in [0, 1)`` and ``b`` with
``alpha E_{y, xi}[(xi - (c sqrt(s) + y b) / sqrt(Delta))_+^2] < 1 - c^2``, so

    alpha*_2 = max_{c, b} (1 - c^2) / E_{y, xi}[(xi - (c sqrt(s) + y b) / sqrt(Delta))_+^2]

(Cover's 2 at ``s = 0``; cf. Mignacco et al. 2020, Deng, Kammoun & Thrampoulidis 2019).  It
is an independent derivation of what the fixed point computes for ``K = 2``.

Integrals: one effective output (``K = 2``) uses exact Gaussian partial moments; the
exchangeable threshold, Gauss-Hermite / Gauss-Legendre rules refined until two agree to
``rel_tol`` (their difference is the error estimate); the rest (the homogeneous map with
``K >= 3``, the max-margin maps) scrambled Sobol points (seeded, ``n_randomisations``
independent scramblings: the spread is the error estimate), the same points for every
evaluation (common random numbers, so the root searches see a deterministic function).
"""

from __future__ import annotations

import functools
import itertools
import weakref
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from scipy.special import ndtr, ndtri, wofz

from gaussmix.core.exceptions import ArgumentError, GaussmixError
from gaussmix.core.jsonio import plain
from gaussmix.core.results import Result
from gaussmix.core.validation import check_int, check_real

from ..channel.channel import ChannelMoments, sqrtm_psd
from ..channel.losses import solve_batch
from ..model.mixture import Mixture
from ..numerics.orthant import make_sobol
from ..prior.prior import prior_update
from ..problem.problem import Problem, build_problem
from ..problem.symmetry import exchangeable_mixture
from ..solve.iteration import AndersonState
from ..solve.state import is_valid_state, pack_state, unpack_state

__all__ = [
    "SeparabilityError",
    "ThresholdEstimate",
    "QMCNodes",
    "margin_problem",
    "is_exchangeable",
    "polyhedron_moments",
    "waterfill_cdf",
    "waterfill_moments",
    "separability_threshold_estimate",
    "binary_separability_threshold",
    "gardner_threshold",
    "check_not_separable",
    "cached_threshold",
]

_INV_SQRT_2PI = 0.3989422804014327
_INV_SQRT_2 = 0.7071067811865476
#: largest effective output dimension for the active-set enumeration (2^L subsets)
MAX_ENUMERATION_DIM = 5


class SeparabilityError(GaussmixError, ValueError):
    """An estimator that exists only on one side of the separability threshold was asked
    for on the other (max-margin at ``alpha >= alpha*``, maximum likelihood at
    ``alpha <= alpha*``)."""


class ZeroPenaltyError(SeparabilityError, ArgumentError):
    """``lam = 0`` asked for on the side of the separability threshold where the
    maximum-likelihood estimator does not exist (an :class:`ArgumentError` naming ``lam``)."""


# --------------------------------------------------------------------------- nodes
@dataclass(frozen=True)
class QMCNodes:
    """Standard normal points from scrambled Sobol sequences (seeded).

    Attributes
    ----------
    xi : ndarray (R, N, dim)
        ``R`` independent scramblings of ``N = 2^log2_n`` points each.
    """

    xi: np.ndarray

    @classmethod
    def make(cls, dim: int, log2_n: int, n_randomisations: int, seed: int = 0) -> QMCNodes:
        out = []
        for child in np.random.SeedSequence(seed).spawn(n_randomisations):
            out.append(ndtri(make_sobol(dim, child).random_base2(log2_n)))
        xi = np.stack(out)
        xi.setflags(write=False)
        return cls(xi)

    @property
    def n_randomisations(self) -> int:
        return int(self.xi.shape[0])

    @property
    def pooled(self) -> np.ndarray:
        """All points, (R N, dim)."""
        return self.xi.reshape(-1, self.xi.shape[-1])


# --------------------------------------------------------------------------- problem
def margin_problem(mixture: Mixture, alpha: float) -> Problem:
    """The problem whose effective output space and classification rule the max-margin
    estimator uses: the cross-entropy's (complement of ``1``) for one-hot labels, the
    label space for binary ``+-1`` labels; ridge prior with ``lam = 1``.

    Raises
    ------
    ValueError
        For other label maps (the margin polyhedron needs one constraint per effective
        output: one-hot labels, or binary labels with two clusters).
    """
    if not isinstance(mixture, Mixture):
        raise TypeError(f"mixture must be a gaussmix.Mixture, got {type(mixture).__name__}")
    if mixture.covariance.structure == "dense":
        raise ArgumentError(
            "mixture",
            ": the separability threshold (the max-margin limit lam -> 0+) is not "
            "available for a dense covariance structure, whose ridge prior needs lam > 0; "
            f"this mixture's is {mixture.covariance.describe()!r}",
        )
    labels = mixture.labels
    if labels.is_onehot and labels.n_clusters == labels.dim:
        loss = "cross-entropy"
    elif labels.is_binary and labels.n_clusters == 2:
        loss = "logistic"
    else:
        raise ValueError(
            "mixture must have one-hot labels (one class per cluster) or binary +-1 labels "
            f"with 2 clusters for the max-margin estimator; got {labels.kind} labels of "
            f"dimension {labels.dim} for {labels.n_clusters} clusters"
        )
    return build_problem(mixture, loss, lam=1.0, alpha=alpha, separability=check_not_separable)


def _geometry(problem: Problem, kappa: float) -> tuple[np.ndarray, np.ndarray]:
    """``D`` (K, L, L) and the shifted thresholds ``t' = t - kappa |D rows|^2 / 2`` (K, L)."""
    D = np.stack([D for D, _ in problem.constraints])
    t = np.stack([t for _, t in problem.constraints])
    return D, t - kappa * 0.5 * np.sum(D * D, axis=-1)


#: whether all clusters are equivalent under relabelling (one test for the whole engine)
is_exchangeable = exchangeable_mixture


# --------------------------------------------------------------------------- channel
def _relu_moments(m: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``P(X > 0)``, ``E[X_+]``, ``E[X_+^2]`` for ``X ~ N(m, s^2)``, ``s > 0``."""
    u = m / s
    Phi = ndtr(u)
    phi = _INV_SQRT_2PI * np.exp(-0.5 * u * u)
    return Phi, s * (u * Phi + phi), s * s * ((u * u + 1.0) * Phi + u * phi)


def polyhedron_moments(
    problem: Problem,
    M: np.ndarray,
    b: np.ndarray,
    Q: np.ndarray,
    V: np.ndarray,
    kappa: float,
    nodes: QMCNodes | None,
    *,
    per_randomisation: bool = False,
) -> tuple[ChannelMoments, np.ndarray]:
    """Channel moments of the indicator loss of ``C_c(kappa)`` (module docstring).

    Returns the moments (``Ef``, ``Eff``, ``Edf = -E[df/domega]``; ``Eloss = 0``,
    ``Eenv = E[f^T V f] / 2``) and ``E|A|`` (K,), the expected number of active
    constraints.  One effective output: exact; more: quasi-Monte Carlo over ``nodes`` with
    ``Edf`` in Stein's form ``-E[f xi^T] S^{-1}`` (``S = Q_c^{1/2}``), which is continuous
    in ``omega`` where the active-set form is piecewise constant.  ``per_randomisation``:
    arrays get a leading axis over the independent scramblings (for error estimates).
    """
    D, tp = _geometry(problem, kappa)
    K, L = M.shape
    m = M + b
    if L == 1:
        d = D[:, 0, 0]
        v = V[:, 0, 0]
        s = np.abs(d) * np.sqrt(np.maximum(Q[:, 0, 0], 1e-300))
        # X = -u0 = d omega - t' ~ N(d m - t', d^2 q);  mu = X_+ / (d^2 v);  f = -d mu
        p0, p1, p2 = _relu_moments(d * m[:, 0] - tp[:, 0], s)
        G = d * d * v
        Ef = (-d * p1 / G)[:, None]
        Eff = (d * d * p2 / G**2)[:, None, None]
        Edf = (p0 / v)[:, None, None]
        mom = ChannelMoments(Ef, Eff, Edf, np.zeros(K), 0.5 * v * Eff[:, 0, 0])
        if per_randomisation:
            mom = ChannelMoments(*(a[None] for a in (Ef, Eff, Edf, mom.Eloss, mom.Eenv)))
            return mom, p0[None]
        return mom, p0
    if L > MAX_ENUMERATION_DIM:
        raise ValueError(
            f"the max-margin channel with {L + 1} classes and non-exchangeable clusters needs "
            f"an active-set enumeration over 2^{L} subsets; at most {MAX_ENUMERATION_DIM + 1} "
            "classes are supported (exchangeable clusters have a closed form for any K)"
        )
    if nodes is None or nodes.xi.shape[-1] != L:
        raise ValueError(f"quasi-Monte Carlo nodes of dimension {L} are needed")
    xi = nodes.xi  # (R, N, L)
    R, N, _ = xi.shape
    S = sqrtm_psd(Q)
    Sinv = np.linalg.inv(S)
    shape = (R, K) if per_randomisation else (K,)
    Ef = np.zeros(shape + (L,))
    Eff = np.zeros(shape + (L, L))
    Edf = np.zeros(shape + (L, L))
    Eenv = np.zeros(shape)
    Ek = np.zeros(shape)
    subsets = [
        np.array(A, dtype=int) for n in range(L + 1) for A in itertools.combinations(range(L), n)
    ]
    for c in range(K):
        omega = m[c] + xi @ S[c]  # (R, N, L), S symmetric
        u0 = tp[c] - omega @ D[c].T
        G = D[c] @ V[c] @ D[c].T
        G = 0.5 * (G + G.T)
        mu = np.zeros_like(u0)
        kact = np.zeros((R, N))
        done = np.zeros((R, N), dtype=bool)
        for A in subsets:
            F = np.setdiff1d(np.arange(L), A)
            if A.size == 0:
                ok = np.all(u0 >= 0.0, axis=-1)
                muA = None
            else:
                GAi = np.linalg.inv(G[np.ix_(A, A)])
                muA = -u0[..., A] @ GAi.T
                uF = u0[..., F] + muA @ G[np.ix_(F, A)].T
                ok = np.all(muA >= 0.0, axis=-1) & np.all(uF >= 0.0, axis=-1)
            ok &= ~done
            if muA is not None:
                sub = mu[..., A]
                mu[..., A] = np.where(ok[..., None], muA, sub)
            kact = np.where(ok, A.size, kact)
            done |= ok
        if not np.all(done):
            raise FloatingPointError(
                f"max-margin projection: no active set found at {int((~done).sum())} nodes"
            )
        f = -mu @ D[c]  # (R, N, L)
        axes = (1,) if per_randomisation else (0, 1)
        Ef[..., c, :] = f.mean(axis=axes)
        fT = np.swapaxes(f, 1, 2)
        ff = fT @ f / N
        Eff[..., c, :, :] = ff if per_randomisation else ff.mean(axis=0)
        fx = fT @ xi / N  # E[f xi^T] per scrambling
        fx = fx if per_randomisation else fx.mean(axis=0)
        Edf[..., c, :, :] = -fx @ Sinv[c]
        Eenv[..., c] = 0.5 * np.sum((f @ V[c]) * f, axis=-1).mean(axis=axes)
        Ek[..., c] = kact.mean(axis=axes)
    Edf = 0.5 * (Edf + np.swapaxes(Edf, -1, -2))
    return ChannelMoments(Ef, Eff, Edf, np.zeros(shape), Eenv), Ek


def to_full(P: np.ndarray, A: np.ndarray) -> np.ndarray:
    return np.einsum("ia,kij,jb->kab", P, A, P)


def initial_margin_state(problem: Problem, scale: float = 1.0) -> np.ndarray:
    """A valid starting state: the prior of unit hats along the labels."""
    L = problem.dim
    rho = problem.mixture.rho
    yr = problem.y @ problem.P.T
    ybar = rho @ yr
    K = problem.n_clusters
    Mhat = scale * rho[:, None] * (yr - ybar)
    Qhat = scale * rho[:, None, None] * np.broadcast_to(np.eye(L), (K, L, L))
    Vhat = scale * rho[:, None, None] * np.broadcast_to(np.eye(L), (K, L, L))
    pr = prior_update(problem, Qhat, Mhat, Vhat, lam=1.0)
    return pack_state(pr.Q, pr.M, pr.V, np.zeros(L))


def describe_mixture(mixture: Mixture) -> str:
    info = mixture.describe()
    parts = [f"K = {mixture.n_clusters}", f"{info['kind']}"]
    if mixture.n_atoms == 1:
        d = np.unique(mixture.sigma[0])
        parts.append("Delta = " + ", ".join(f"{v:g}" for v in d))
    if "means" in info:
        parts.append(f"means={info['means']}")
    return ", ".join(parts)


# --------------------------------------------------------------------------- threshold
@dataclass
class ThresholdEstimate(Result):
    """The fixed point at the separability threshold (theory layer; the experiment
    :func:`gaussmix.experiments.transition.separability_threshold` wraps it).

    Attributes
    ----------
    alpha_star : float
    std_error : float
        Absolute error estimate: the standard error from the independent quasi-Monte Carlo
        scramblings (homogeneous map, ``K >= 3``), the difference between the last two
        quadrature rules (exchangeable clusters), 0 for K = 2 (exact integrals).
    method : str
        ``'exchangeable'`` (scalar equation for ``r = m / sqrt(q)``, deterministic
        quadrature) or ``'homogeneous'`` (the normalised homogeneous map).
    success : bool
        The threshold's fixed point was found (``converged`` is its deprecated name).
    message : str
    n_evaluations : int
        Channel evaluations.
    growth : float
        ``s^2`` of the homogeneous map at the solution (1 at a true fixed point).
    active : float
        ``alpha* sum_c rho_c E|A_c|``, the support vectors per input dimension.
    shape : dict
        The normalised state (``r`` for exchangeable clusters; full-space ``Q, M, b, V``).
    """

    #: nothing iterates (the result protocol's ``n_iter`` does not apply)
    n_iter: ClassVar[None] = None

    alpha_star: float
    std_error: float
    method: str
    success: bool
    message: str
    n_evaluations: int
    growth: float
    active: float
    shape: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        """JSON-safe plain types (NaN as None)."""
        return plain(self.__dict__)


def exchangeable_stats(
    r: float, g: np.ndarray, kappa: float = 0.0
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per-node quantities of the Euclidean projection of ``omega = r e_0 + g`` onto
    ``{h_0 - h_mu >= kappa}``: ``k = |A|``, ``d_0 = h_0 - omega_0``, ``d . g`` and ``|d|^2``
    with ``d = h - omega`` (the sort-based closed form of the module docstring)."""
    a = r + g[..., 0]
    y = g[..., 1:] + kappa
    ys = -np.sort(-y, axis=-1)
    cs = np.cumsum(ys, axis=-1)
    K1 = ys.shape[-1]
    j = np.arange(1, K1 + 1)
    # tau_{j-1} = (a + sum of the j-1 largest) / j, compared with the j-th largest
    tau_prev = np.concatenate([a[..., None], (a[..., None] + cs[..., :-1]) / j[1:]], axis=-1)
    k = np.sum(ys > tau_prev, axis=-1)
    csum = np.concatenate([np.zeros(a.shape + (1,)), cs], axis=-1)
    tau = (a + np.take_along_axis(csum, k[..., None], axis=-1)[..., 0]) / (k + 1)
    d0 = tau - a
    dy = np.where(j - 1 < k[..., None], tau[..., None] - ys, 0.0)
    dg = d0 * g[..., 0] + np.sum(dy * (ys - kappa), axis=-1)
    dd = d0 * d0 + np.sum(dy * dy, axis=-1)
    return k, d0, dg, dd


#: Gil-Pelaez inversion: the characteristic function of ``Z + S_t`` is below
#: ``exp(-u^2 / 2)``, so ``u <= 9`` leaves a tail below ``exp(-40.5) / 81 ~ 3e-20``
_GP_U_MAX = 9.0
#: coarse grid that sets each inversion's own cut-off ``u_t`` (where ``|chi| / u`` has fallen
#: below ``_GP_EPS``)
_GP_SCAN = 24
_GP_EPS = 1e-18
#: the tails of tau and of the competitors beyond 9 standard deviations (Phi(-9) ~ 1e-19)
_TAIL_SD = 9.0
#: quadrature rules of the exchangeable threshold, coarse to fine: (nodes in t or s, nodes
#: in u); each level's alpha* is compared with the previous level's (the error estimate)
WATERFILL_RULES = ((32, 48), (48, 64), (64, 96), (96, 144), (128, 192), (192, 288), (256, 384))


@functools.lru_cache(maxsize=16)
def _legendre01(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Gauss-Legendre nodes and weights on ``[0, 1]``."""
    x, w = np.polynomial.legendre.leggauss(n)
    return 0.5 * (x + 1.0), 0.5 * w


@functools.lru_cache(maxsize=16)
def _hermite_normal(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Gauss-Hermite nodes and weights for ``E[f(s)]``, ``s ~ N(0, 1)``."""
    x, w = np.polynomial.hermite_e.hermegauss(n)
    return x, w / np.sqrt(2.0 * np.pi)


def _hinge_cf(t: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Characteristic function ``E[exp(i u (y - t)_+)]`` of ``y ~ N(0, 1)``, broadcast over
    ``t`` (T, 1) and ``u`` (T, N): ``Phi(t) + exp(-t^2 / 2) w((u + i t) / sqrt 2) / 2`` with
    ``w`` the Faddeeva function (the atom at 0 plus ``int_t^inf phi(y) e^{iu(y - t)} dy``,
    written without overflow)."""
    return ndtr(t) + 0.5 * np.exp(-0.5 * t * t) * wofz((u + 1j * t) * _INV_SQRT_2)


def waterfill_cdf(t: np.ndarray, c: np.ndarray, m: int, n_u: int = 96) -> np.ndarray:
    """``P(Z + sum_{i <= m} (y_i - t)_+ <= c)`` for i.i.d. standard normal ``Z, y_i``, by
    Gil-Pelaez inversion of the characteristic function ``exp(-u^2/2) psi_t(u)^m``
    (``psi_t`` from :func:`_hinge_cf`):

        P = 1/2 - (1/pi) int_0^inf Im[exp(-i u c) exp(-u^2/2) psi_t(u)^m] du / u,

    Gauss-Legendre with ``n_u`` nodes on ``[0, u_t]``, ``u_t <= 9`` the point where the
    integrand's modulus has fallen below 1e-18 (a coarse scan per ``t``).

    Parameters
    ----------
    t, c : ndarray (T,)
        Hinge locations and arguments of the distribution function.
    m : int
        Number of hinge terms (``m >= 0``; ``m = 0`` gives ``Phi(c)``).
    n_u : int
        Nodes of each inversion integral.
    """
    t = np.asarray(t, dtype=float)[:, None]
    c = np.asarray(c, dtype=float)[:, None]
    scan = np.linspace(_GP_U_MAX / _GP_SCAN, _GP_U_MAX, _GP_SCAN)
    mod = np.exp(-0.5 * scan * scan) * np.abs(_hinge_cf(t, scan[None, :])) ** m / scan
    above = mod > _GP_EPS
    last = _GP_SCAN - 1 - np.argmax(above[:, ::-1], axis=1)  # last scan point above
    u_t = scan[np.minimum(last + 1, _GP_SCAN - 1)][:, None]
    x, w = _legendre01(n_u)
    u = u_t * x[None, :]
    chi = np.exp(-0.5 * u * u - 1j * u * c) * _hinge_cf(t, u) ** m
    return 0.5 - (chi.imag / u) @ w * u_t[:, 0] / np.pi


def waterfill_moments(r: float, K: int, rule: tuple[int, int] = (64, 96)) -> tuple[float, float]:
    """``e1 = E|A|`` and ``e2 = E[h_0 - omega_0]`` of the Euclidean projection ``h`` of
    ``omega = r e_0 + g`` (``g ~ N(0, I_K)``) onto the cone ``{h_0 >= h_mu}`` (margin 0):
    the two integrals of the exchangeable threshold equation, deterministically.

    The projection is a water-filling: ``h_0 = tau``, ``h_mu = min(omega_mu, tau)``, ``tau``
    the root of ``tau - a = S_tau``, ``S_t = sum_mu (y_mu - t)_+`` (``a = omega_0``,
    ``y_mu = omega_mu``, ``n = K - 1`` competitors, i.i.d. given nothing: the common factor
    of the equicorrelated logits is the projection's invariant direction ``1``).  As
    ``t - a - S_t`` increases with ``t``, ``tau <= t`` iff ``Z + S_t <= t - r``, and
    ``y_1 > tau`` iff ``Z + S'_{y_1} < y_1 - r`` (``S'`` over the other ``n - 1``), so with
    ``G_m(t, c) = P(Z + S^{(m)}_t <= c)`` (:func:`waterfill_cdf`):

        e1 = n E_s[G_{n-1}(s, s - r)]                 (Gauss-Hermite in s),
        e2 = E[tau] - r = T1 - int_T0^T1 G_n(t, t - r) dt - r   (Gauss-Legendre in t),

    with ``T0 = max(r - 9, r/K - 9/sqrt K)`` (``tau >= max(a, mean(omega))``) and
    ``T1 = max(r, 0) + 9`` (``tau <= max(a, y)``).  ``e1`` is the count of active
    constraints (equal to ``-E[(h - omega) . g]`` by Stein's lemma, as in
    :func:`exchangeable_stats`).

    Parameters
    ----------
    r : float
        ``m / sqrt(q)``, the normalised mean of the own logit.
    K : int
        Number of clusters (``K >= 2``).
    rule : (int, int)
        Nodes in ``s`` / ``t`` and in each inversion integral ``u``.
    """
    n = K - 1
    n_t, n_u = rule
    s, ws = _hermite_normal(n_t)
    e1 = n * float(ws @ waterfill_cdf(s, s - r, n - 1, n_u))
    t0 = max(r - _TAIL_SD, r / K - _TAIL_SD / np.sqrt(K))
    t1 = max(r, 0.0) + _TAIL_SD
    x, w = _legendre01(n_t)
    t = t0 + (t1 - t0) * x
    e2 = t1 - (t1 - t0) * float(w @ waterfill_cdf(t, t - r, n, n_u)) - r
    return e1, e2


def _exchangeable_threshold(mixture: Mixture, rel_tol: float = 1e-10) -> ThresholdEstimate:
    """``alpha*`` for exchangeable clusters: root ``r*`` of ``r Delta e1(r) = a e2(r)``,
    then ``alpha* = (K - 1) / e1(r*)`` (module docstring), with the deterministic integrals
    of :func:`waterfill_moments`.  The rules of ``WATERFILL_RULES`` are taken coarse to
    fine (a full root search on the coarsest, a bracket around the previous root on the
    next) until two successive ``alpha*`` differ by at most ``rel_tol`` (relative); that
    difference is the error estimate of the finer one (``std_error``)."""
    from scipy.optimize import brentq

    K = mixture.n_clusters
    delta = float(mixture.sigma[0, 0])
    th = mixture.theta[0]
    Pi = np.eye(K) - 1.0 / K
    a_theta = float(np.trace(Pi @ th) / (K - 1))
    count = [0]

    def fn(r: float, rule: tuple[int, int]) -> float:
        count[0] += 1
        e1, e2 = waterfill_moments(r, K, rule)
        return r * delta * e1 - a_theta * e2

    def fail(msg: str) -> ThresholdEstimate:
        return ThresholdEstimate(
            np.nan, np.nan, "exchangeable", False, msg, count[0], np.nan, np.nan
        )

    r_star = 0.0  # a_theta <= 0: no information in the means, the symmetric point r = 0
    prev = np.nan
    err = np.inf
    rule = WATERFILL_RULES[0]
    for level, rule in enumerate(WATERFILL_RULES):
        if a_theta > 0.0 and level == 0:
            hi = 0.25
            while fn(hi, rule) <= 0.0:
                hi *= 1.5
                if hi > 50.0:
                    return fail("no root of the exchangeable threshold equation below r = 50")
            r_star = brentq(fn, 0.0, hi, args=(rule,), xtol=1e-13, rtol=1e-13)
        elif a_theta > 0.0:
            r_star = _root_near(lambda r, rule=rule: fn(r, rule), r_star)
        count[0] += 1
        astar = (K - 1) / waterfill_moments(r_star, K, rule)[0]
        err = abs(astar - prev)
        prev = astar
        if err <= rel_tol * astar:
            break
    if not np.isfinite(astar):
        return fail("the exchangeable threshold integrals are not finite")
    return ThresholdEstimate(
        alpha_star=float(astar),
        std_error=float(err),
        method="exchangeable",
        success=True,
        message="converged",
        n_evaluations=count[0],
        growth=1.0,
        active=float(K - 1),
        shape={"r": float(r_star), "a_theta": a_theta, "delta": delta, "rule": list(rule)},
    )


def _root_near(f: Any, x0: float, rel_step: float = 1e-4) -> float:
    """Root of the increasing-through-zero ``f`` near ``x0``: a bracket grown geometrically
    around ``x0`` until ``f`` changes sign, then Brent's method."""
    from scipy.optimize import brentq

    step = rel_step * max(abs(x0), 1e-3)
    lo, hi = x0 - step, x0 + step
    flo, fhi = f(lo), f(hi)
    while flo * fhi > 0.0:
        step *= 4.0
        if flo > 0.0:
            lo, flo = max(lo - step, 0.0), f(max(lo - step, 0.0))
            if lo == 0.0 and flo > 0.0:
                return 0.0
        else:
            hi, fhi = hi + step, f(hi + step)
    return brentq(f, lo, hi, xtol=1e-13, rtol=1e-13)


def _homogeneous_step(
    problem: Problem, x: np.ndarray, nodes: QMCNodes | None, *, per_randomisation=False
) -> tuple[np.ndarray, float, float, np.ndarray]:
    """One step of the normalised homogeneous map (margin 0, ``lam = 0``): returns the
    normalised image, the ``alpha`` that makes ``tr V' = tr V``, the growth ``s^2`` and
    ``E|A|`` per cluster (module docstring)."""
    K, L = problem.n_clusters, problem.dim
    rho = problem.mixture.rho
    Q, M, V, b = unpack_state(x, K, L)
    mom, Ek = polyhedron_moments(problem, M, b, Q, V, 0.0, nodes)
    Mh = rho[:, None] * mom.Ef
    Qh = rho[:, None, None] * mom.Eff
    Vh = rho[:, None, None] * mom.Edf
    pr1 = prior_update(problem, Qh, Mh, Vh, lam=0.0)
    prm = prior_update(problem, np.zeros_like(Qh), Mh, Vh, lam=0.0)
    a_new = float(np.einsum("k,kii->", rho, pr1.V) / np.einsum("k,kii->", rho, V))
    Qn = prm.Q + (pr1.Q - prm.Q) / a_new
    Vn = pr1.V / a_new
    Sv, Sm = Vh.sum(axis=0), Mh.sum(axis=0)
    bn = b + solve_batch(Sv, Sm)
    s2 = float(np.einsum("k,kii->", rho, Qn) / np.einsum("k,kii->", rho, Q))
    s = np.sqrt(s2)
    xn = pack_state(Qn / s2, pr1.M / s, Vn, bn / s)
    return xn, a_new, s2, Ek


def _homogeneous_iterate(
    problem: Problem, x: np.ndarray, nodes: QMCNodes | None, tol: float, max_iter: int
) -> tuple[np.ndarray, float, int, str]:
    """Anderson-accelerated iteration of :func:`_homogeneous_step` from ``x``: the final
    state, its scaled residual, the number of steps and a failure message ('' if none)."""
    K, L = problem.n_clusters, problem.dim
    anderson = AndersonState.init(6)
    last = None
    res = np.inf
    n = 0
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        for n in range(1, max_iter + 1):
            try:
                g = _homogeneous_step(problem, x, nodes)[0]
            except (FloatingPointError, np.linalg.LinAlgError) as exc:
                return x, np.inf, n, f"map failed: {exc}"
            r = g - x
            scale = np.maximum(1.0, np.abs(x))
            res = float(np.max(np.abs(r) / scale))
            if not np.isfinite(res):
                return x, res, n, "NaN or infinite order parameters"
            if res < tol:
                return g, res, n, ""
            if last is not None:
                anderson = anderson.update(x - last[0], g - last[1])
            last = (x, g)
            cand = None
            if not anderson.empty:
                try:
                    cand = anderson.extrapolate(x, r, 1.0, scale)
                except np.linalg.LinAlgError:
                    cand = None
            if cand is None or not is_valid_state(cand, K, L):
                anderson = anderson.cleared()
                cand = g
            x = cand
    return (
        x,
        res,
        n,
        f"the homogeneous map did not converge in {n} iterations (residual {res:.3g})",
    )


def _homogeneous_threshold(
    mixture: Mixture,
    log2_n: int,
    n_randomisations: int,
    seed: int,
    tol: float = 1e-10,
    max_iter: int = 3000,
) -> ThresholdEstimate:
    """``alpha*`` from the normalised homogeneous map (any supported mixture); the standard
    error from re-solving with each scrambling alone, started at the pooled solution."""
    problem = margin_problem(mixture, 1.0)
    K, L = problem.n_clusters, problem.dim
    nodes = None if L == 1 else QMCNodes.make(L, log2_n, n_randomisations, seed)
    rho = problem.mixture.rho
    x = initial_margin_state(problem)
    Q, M, V, b = unpack_state(x, K, L)
    x = pack_state(Q / np.einsum("k,kii->", rho, Q), M, V, b)
    x, res, n, fail = _homogeneous_iterate(problem, x, nodes, tol, max_iter)
    if fail and not np.isfinite(res):
        return ThresholdEstimate(np.nan, np.nan, "homogeneous", False, fail, n, np.nan, np.nan)
    converged = res < tol
    # the growth factor, alpha and E|A| at the final state (and the spread over scramblings)
    g, alpha, s2, Ek = _homogeneous_step(problem, x, nodes)
    se = 0.0
    if nodes is not None and converged:
        alphas = []
        for i in range(nodes.n_randomisations):
            one = QMCNodes(nodes.xi[i : i + 1])
            xi_, res_i, n_i, fail_i = _homogeneous_iterate(problem, x, one, tol, max_iter)
            n += n_i
            if fail_i:
                converged, fail = False, f"scrambling {i}: {fail_i}"
                break
            alphas.append(_homogeneous_step(problem, xi_, one)[1])
        if converged:
            se = float(np.std(alphas, ddof=1) / np.sqrt(len(alphas)))
    growth_tol = max(1e-6, 10.0 * se / max(alpha, 1e-300))
    msg = "converged"
    if not converged:
        msg = fail
    elif abs(s2 - 1.0) > growth_tol:
        converged = False
        msg = (
            f"the normalised homogeneous map converged with growth factor s^2 = {s2:.6g} != 1: "
            "no fixed point at the threshold (inconsistent equations)"
        )
    Q, M, V, b = unpack_state(x, K, L)
    P = problem.P
    return ThresholdEstimate(
        alpha_star=float(alpha) if converged else np.nan,
        std_error=se,
        method="homogeneous",
        success=converged,
        message=msg,
        n_evaluations=n + 1,
        growth=s2,
        active=float(alpha * rho @ Ek),
        shape={
            "Q": to_full(P, Q).tolist(),
            "M": (M @ P).tolist(),
            "b": problem.full_bias(b).tolist(),
            "V": to_full(P, V).tolist(),
        },
    )


def separability_threshold_estimate(
    mixture: Mixture,
    *,
    log2_n: int = 16,
    n_randomisations: int = 8,
    seed: int = 0,
    method: str = "auto",
    rel_tol: float = 1e-10,
) -> ThresholdEstimate:
    """The separability threshold ``alpha*`` of ``mixture`` from the fixed point at the
    threshold (module docstring).

    Parameters
    ----------
    mixture : Mixture
        One-hot labels, or binary ``+-1`` labels with two clusters.
    log2_n, n_randomisations, seed
        Quasi-Monte Carlo points of the homogeneous map with ``K >= 3``:
        ``n_randomisations`` scramblings of ``2^log2_n`` points (unused by the exact paths).
    method : {'auto', 'exchangeable', 'homogeneous'}
        ``'auto'``: the scalar equation for exchangeable clusters with ``K >= 3``
        (:func:`is_exchangeable`; deterministic integrals, :func:`waterfill_moments`), the
        homogeneous map otherwise (exact for ``K = 2``).
    rel_tol : float
        Target relative error of the exchangeable path's deterministic quadrature
        (``1e-13 <= rel_tol < 1``; the estimate reached is ``std_error``).
    """
    margin_problem(mixture, 1.0)  # label checks
    log2_n = check_int("log2_n", log2_n, low=6, high=22)
    n_randomisations = check_int("n_randomisations", n_randomisations, low=2, high=64)
    rel_tol = check_real("rel_tol", rel_tol, low=1e-13, high=1.0, high_open=True)
    if method not in ("auto", "exchangeable", "homogeneous"):
        raise ValueError(f"method must be 'auto', 'exchangeable' or 'homogeneous', got {method!r}")
    exch = is_exchangeable(mixture)
    if method == "exchangeable" and not exch:
        raise ValueError("method='exchangeable' needs exchangeable clusters (is_exchangeable)")
    if method == "exchangeable" or (method == "auto" and exch and mixture.n_clusters >= 3):
        return _exchangeable_threshold(mixture, rel_tol)
    return _homogeneous_threshold(mixture, log2_n, n_randomisations, seed)


#: alpha* of each mixture already checked by :func:`check_not_separable` (mixtures are
#: immutable)
_THRESHOLDS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def cached_threshold(mixture: Mixture) -> ThresholdEstimate:
    """:func:`separability_threshold_estimate` with its defaults, computed once per mixture."""
    hit = _THRESHOLDS.get(mixture)
    if hit is None:
        hit = _THRESHOLDS[mixture] = separability_threshold_estimate(mixture)
    return hit


def check_not_separable(mixture: Mixture, alpha: float, loss_name: str = "logistic") -> None:
    """Raise :class:`SeparabilityError` unless ``alpha`` is clearly above ``alpha*``: the
    condition for the unregularised (``lam = 0``) logistic / cross-entropy estimator to
    exist (below ``alpha*`` the training data are linearly separable and the likelihood has
    no maximiser).  Within four standard errors of ``alpha*`` it cannot be decided, and is
    refused too."""
    est = cached_threshold(mixture)
    if not est.success:
        raise ZeroPenaltyError(
            "lam",
            f"0 is only valid for loss={loss_name!r} above the separability threshold, "
            f"which could not be computed for this mixture ({est.message}); use lam > 0",
        )
    margin = max(4.0 * est.std_error, 1e-9 * est.alpha_star)
    if alpha <= est.alpha_star + margin:
        raise ZeroPenaltyError(
            "lam",
            f"0 is only valid for loss={loss_name!r} above the separability threshold: "
            "the maximum-likelihood estimator does not exist, the training data are "
            f"linearly separable for alpha < alpha* = {est.alpha_star:.4g} "
            f"({describe_mixture(mixture)}), got alpha={alpha:g}; use lam > 0 or max_margin",
        )


# --------------------------------------------------------------------------- closed form
def gardner_threshold(mean_sq: float, delta: float, rho: float = 0.5) -> float:
    """``alpha*_2 = max_{c, b} (1 - c^2) / E_{y, xi}[(xi - (c sqrt(s) + y b)/sqrt(Delta))_+^2]``
    (module docstring; ``s = mean_sq = |mu_bar|^2``, ``y = +1`` with probability ``rho``).

    The partial moment is ``E[(xi - a)_+^2] = (1 + a^2) Phi(-a) - a phi(a)``; the maximum
    over ``c = tanh(u) in (-1, 1)`` and ``b`` is found by Nelder-Mead from three starts,
    polished by BFGS.
    """
    from scipy.optimize import minimize

    s = check_real("mean_sq", mean_sq, low=0.0)
    dl = check_real("delta", delta, low=0.0, low_open=True)
    p = check_real("rho", rho, low=0.0, high=1.0, low_open=True, high_open=True)
    rs, sd = np.sqrt(s), np.sqrt(dl)

    def m2(a: float) -> float:
        return (1.0 + a * a) * ndtr(-a) - a * _INV_SQRT_2PI * np.exp(-0.5 * a * a)

    def neg(z: np.ndarray) -> float:
        c = np.tanh(z[0])
        e = p * m2((c * rs + z[1]) / sd) + (1.0 - p) * m2((c * rs - z[1]) / sd)
        return -(1.0 - c * c) / e

    best = None
    for u0 in (0.0, 0.5, 1.0):
        r = minimize(
            neg,
            np.array([u0, 0.0]),
            method="Nelder-Mead",
            options={"xatol": 1e-7, "fatol": 1e-13, "maxiter": 4000},
        )
        if best is None or r.fun < best.fun:
            best = r
    # polish the smooth maximum (quasi-Newton from the simplex's best point)
    pol = minimize(neg, best.x, method="BFGS", options={"gtol": 1e-12})
    return float(-min(best.fun, pol.fun))


def binary_separability_threshold(mixture: Mixture) -> float:
    """Closed-form ``alpha*`` of a two-cluster isotropic mixture with one shared variance
    (one-hot or binary labels, any priors and Gram matrix): :func:`gardner_threshold` with
    ``|mu_bar|^2 = (Theta_11 + Theta_22 - 2 Theta_12) / 4``.

    Parameters
    ----------
    mixture : Mixture
        Two isotropic clusters (one atom) with one shared variance ``Delta``."""
    if not isinstance(mixture, Mixture):
        raise TypeError(f"mixture must be a gaussmix.Mixture, got {type(mixture).__name__}")
    if mixture.n_clusters != 2 or mixture.n_atoms != 1 or mixture.mu is not None:
        raise ValueError(
            "mixture must be a two-cluster isotropic mixture (one atom) for the closed form; "
            f"got {mixture.n_clusters} clusters and {mixture.n_atoms} atoms"
        )
    sig = mixture.sigma[0]
    if not np.isclose(sig[0], sig[1], rtol=1e-12, atol=0):
        raise ValueError(
            f"mixture must have one shared variance for the closed form, got Delta = {sig}"
        )
    th = mixture.theta[0]
    s = max(0.0, float(th[0, 0] + th[1, 1] - 2.0 * th[0, 1]) / 4.0)
    margin_problem(mixture, 1.0)  # label checks
    return gardner_threshold(s, float(sig[0]), float(mixture.rho[0]))
