"""Observables at a fixed point: Theorem 2 errors and the replica-symmetric free energy.

* test error ``eps_g = 1 - sum_c rho_c P[phi(omega_c) = y_c]`` with ``omega_c ~ N(M_c + b,
  Q_c)``: a Gaussian orthant probability (DESIGN.md pitfall 6), computed deterministically;
* training error ``eps_t = 1 - sum_c rho_c P[phi(h_c) = y_c]`` with ``h_c = prox(omega_c)``:
  exact for affine proxes (square loss: ``h_c`` is Gaussian) and for one-dimensional outputs
  (the prox is monotone, so the correct set is an interval of ``omega``); otherwise by
  quadrature of the indicator;
* training loss ``eps_l = sum_c rho_c E[loss(y_c, h_c)]``;
* free energy (eq. app:rsfree, zero temperature)
  ``Phi = alpha sum_c rho_c E[env_c] + Psi_w + sum_c [Mhat_c.M_c - tr(Vhat_c Q_c)/2
  + tr(Qhat_c V_c)/2]``, stationary at the fixed point, equal there to the minimal
  empirical risk per dimension ``alpha eps_l + lam E[r(W*)]/d``.
"""

from __future__ import annotations

import numpy as np
from scipy.special import ndtr

from .channel import sqrtm_psd
from .orthant import orthant_probability
from .problem import Problem

__all__ = ["test_accuracy", "train_accuracy", "free_energy_terms"]


def test_accuracy(problem: Problem, M: np.ndarray, b: np.ndarray, Q: np.ndarray) -> np.ndarray:
    """``P[phi(omega_c) = y_c]`` for each cluster (Theorem 2, eq. errors), shape (K,)."""
    out = np.empty(problem.n_clusters)
    for c, (D, t) in enumerate(problem.constraints):
        mean = D @ (M[c] + b) - t
        cov = D @ Q[c] @ D.T
        out[c] = orthant_probability(mean, 0.5 * (cov + cov.T))[0]
    return out


def _gaussian_interval(m: float, s: float, lo: float, hi: float) -> float:
    if s <= 0:
        return float(lo < m < hi)
    a = -np.inf if lo == -np.inf else (lo - m) / s
    z = np.inf if hi == np.inf else (hi - m) / s
    return float(ndtr(z) - ndtr(a))


def train_accuracy(
    problem: Problem,
    M: np.ndarray,
    b: np.ndarray,
    Q: np.ndarray,
    V: np.ndarray,
    *,
    qmc_seed: int = 0,
) -> tuple[np.ndarray, float]:
    """``P[phi(h_c) = y_c]`` for each cluster (Theorem 2, eq. errors) and an error estimate.

    * affine prox (square loss): ``h_c`` is Gaussian, an orthant probability;
    * one effective output: the prox is monotone, ``h`` in ``(lo, hi)`` iff ``omega`` in
      ``(omega(lo), omega(hi))`` with ``omega(h) = h + V grad loss(h)`` — exact;
    * two effective outputs (cross-entropy, K = 3): change of variables to ``h``,
      ``P = int_{cone_c} N(omega(h); m_c, Q_c) det(I + V H(h)) dh``, in polar coordinates
      with Gauss-Legendre rules (the correct set is a wedge with apex at the origin);
    * more outputs: scrambled-Sobol quasi-Monte Carlo over ``omega`` (seeded), with the
      standard error over 8 independent scramblings.

    Returns
    -------
    accuracy : ndarray (K,)
    error : float
        Estimated absolute integration error of ``sum_c rho_c accuracy_c``.
    """
    loss = problem.loss
    K, L = M.shape
    out = np.empty(K)
    if loss.affine_prox:  # square loss: h = (I+V)^{-1}(omega + V y) is Gaussian
        A = np.linalg.inv(np.eye(L) + V)
        for c, (D, t) in enumerate(problem.constraints):
            mh = A[c] @ (M[c] + b + V[c] @ problem.y[c])
            cov = D @ A[c] @ Q[c] @ A[c] @ D.T
            out[c] = orthant_probability(D @ mh - t, 0.5 * (cov + cov.T))[0]
        return out, 0.0
    if L == 1:  # monotone prox: h in (lo, hi) iff omega in (omega(lo), omega(hi))
        for c, (D, t) in enumerate(problem.constraints):
            d = D[:, 0]
            lo = max([t[i] / d[i] for i in range(d.size) if d[i] < 0], default=-np.inf)
            hi = min([t[i] / d[i] for i in range(d.size) if d[i] > 0], default=np.inf)
            bounds = []
            for edge in (lo, hi):
                if np.isinf(edge):
                    bounds.append(edge)
                    continue
                he = np.array([[[edge]]])
                g = loss.grad(problem.y[c][None, None, :], he)[0, 0, 0]
                bounds.append(edge + V[c, 0, 0] * g)
            out[c] = _gaussian_interval(
                M[c, 0] + b[0], float(np.sqrt(max(Q[c, 0, 0], 0.0))), *bounds
            )
        return out, 0.0
    if L == 2:
        errs = np.empty(K)
        for c in range(K):
            out[c], errs[c] = _wedge_probability(problem, c, M[c] + b, Q[c], V[c])
        return out, float(problem.mixture.rho @ errs)
    return _qmc_train_accuracy(problem, M, b, Q, V, seed=qmc_seed)


def _wedge_probability(
    problem: Problem, c: int, m: np.ndarray, Q: np.ndarray, V: np.ndarray
) -> tuple[float, float]:
    """``P[h_c in cone_c]`` for a two-dimensional effective output, by the change of
    variables ``omega = h + V grad loss(h)`` (Jacobian ``I + V H``)."""
    D, t = problem.constraints[c]
    if np.any(t != 0):
        raise ValueError("the wedge rule needs decision boundaries through the origin")
    wq, U = np.linalg.eigh(Q)
    if wq.min() <= 1e-12 * max(wq.max(), 1e-300):
        raise FloatingPointError("Q_c is singular: the training error needs quadrature")
    Qinv = (U / wq) @ U.T
    logdet_q = float(np.sum(np.log(wq)))
    ref = problem.P @ problem.y[c]  # the label direction lies inside the cone
    phi0 = np.arctan2(ref[1], ref[0])
    centers = np.arctan2(-D[:, 1], -D[:, 0]) - phi0
    centers = (centers + np.pi) % (2 * np.pi) - np.pi
    lo = float(np.max(centers - np.pi / 2))
    hi = float(np.min(centers + np.pi / 2))
    # restrict to where the Gaussian has mass: |omega(h) - m| <= 12 sqrt(lmax) and
    # |omega(h) - h| <= |V| max|grad|
    gmax = np.sqrt(2.0) * max(1.0, float(np.abs(problem.y[c]).max()))
    rad = 12.0 * np.sqrt(wq.max()) + np.linalg.norm(V, 2) * gmax
    rm = float(np.linalg.norm(m))
    rlo, rhi = max(0.0, rm - rad), rm + rad
    if rm > rad:
        tm = np.arctan2(m[1], m[0]) - phi0
        tm = (tm + np.pi) % (2 * np.pi) - np.pi
        half = float(np.arcsin(rad / rm))
        lo, hi = max(lo, tm - half), min(hi, tm + half)
    if hi <= lo:
        return 0.0, 0.0
    y = problem.y[c][None, :]

    def integrate(nt: int, nr: int, panels: int) -> float:
        xt, wt = np.polynomial.legendre.leggauss(nt)
        th = phi0 + lo + (hi - lo) * (xt + 1) / 2
        wth = wt * (hi - lo) / 2
        xr, wr = np.polynomial.legendre.leggauss(nr)
        edges = np.linspace(rlo, rhi, panels + 1)
        r = np.concatenate([a + (e - a) * (xr + 1) / 2 for a, e in zip(edges[:-1], edges[1:])])
        wrr = np.concatenate([wr * (e - a) / 2 for a, e in zip(edges[:-1], edges[1:])])
        h = np.stack(
            [r[:, None] * np.cos(th)[None, :], r[:, None] * np.sin(th)[None, :]], axis=-1
        ).reshape(-1, 2)
        g = problem.loss.grad(y, h)
        H = problem.loss.hess(y, h)
        omega = h + g @ V.T
        J = np.eye(2) + V @ H
        detJ = J[:, 0, 0] * J[:, 1, 1] - J[:, 0, 1] * J[:, 1, 0]
        z = omega - m
        quad = np.einsum("ni,ij,nj->n", z, Qinv, z)
        dens = np.exp(-0.5 * quad - 0.5 * logdet_q) / (2 * np.pi)
        vals = (dens * np.abs(detJ)).reshape(r.size, th.size)
        return float(np.einsum("i,ij,j->", wrr * r, vals, wth))

    fine = integrate(64, 32, 8)
    coarse = integrate(40, 20, 8)
    return min(max(fine, 0.0), 1.0), abs(fine - coarse)


def _qmc_train_accuracy(
    problem: Problem, M, b, Q, V, *, seed: int = 0, n_log2: int = 12, n_rep: int = 8
) -> tuple[np.ndarray, float]:
    """Randomised quasi-Monte Carlo estimate of the training accuracy (seeded)."""
    from scipy.special import ndtri
    from scipy.stats import qmc

    K, L = M.shape
    S = sqrtm_psd(Q)
    reps = np.empty((n_rep, K))
    for r in range(n_rep):
        u = qmc.Sobol(d=L, scramble=True, seed=seed + r).random_base2(n_log2)
        xi = ndtri(np.clip(u, 1e-16, 1 - 1e-16))
        omega = (M + b)[:, None, :] + np.einsum("kij,nj->kni", S, xi)
        h = problem.loss.prox(problem.y, omega, V)
        for c, (D, t) in enumerate(problem.constraints):
            reps[r, c] = np.mean(np.all(h[c] @ D.T < t, axis=-1))
    acc = reps.mean(axis=0)
    tot = reps @ problem.mixture.rho
    return acc, float(tot.std(ddof=1) / np.sqrt(n_rep))


def free_energy_terms(
    problem: Problem,
    M: np.ndarray,
    Q: np.ndarray,
    V: np.ndarray,
    Mhat: np.ndarray,
    Qhat: np.ndarray,
    Vhat: np.ndarray,
    Eenv: np.ndarray,
    psi_w: float,
) -> float:
    """The RS free energy ``Phi`` (eq. app:rsfree) given the channel and prior parts."""
    rho = problem.mixture.rho
    coupling = (
        np.einsum("ka,ka->", Mhat, M)
        - 0.5 * np.einsum("kab,kba->", Vhat, Q)
        + 0.5 * np.einsum("kab,kba->", Qhat, V)
    )
    return float(problem.alpha * rho @ Eenv + psi_w + coupling)
