"""Finite-``d`` realisations of the covariance structures (what a simulation samples).

Every covariance structure of :mod:`gaussmix.theory.model.mixture` answers ``realise(d, rng)``
with a :class:`Realisation`: the means ``mu_k`` (K, d), the diagonals of the covariances
and, for full covariances, factors ``F_k`` with ``Sigma_k = F_k F_k^T``.  The rules (the
simulations' conventions: means realised exactly where the law allows, so that a finite-size
simulation differs from the theory by its sampling noise only):

* isotropic laws: ``mu = Theta^{1/2} O^T`` with ``O`` a random ``d x K`` frame, so that
  ``mu_k . mu_k' = Theta_kk'`` exactly; needs ``d >= K``;
* empirical spectral laws (mean components given on J directions): ``d == J``,
  ``mu_k[i] = mu[i, k] / sqrt(d)``, ``Sigma_k = diag(sigma[:, k])``;
* other spectral laws (Gaussian mean components): atom ``j`` gets ``n_j`` directions
  (largest-remainder rounding of ``weights * d``) with eigenvalues ``sigma[j]``, its mean
  components whitened so that their empirical second moment is exactly ``theta[j]``;
* dense structures: ``d`` equal to their dimension; the means and covariances are the
  structure's, sampled through an eigen-factorisation (zero and rounding-level negative
  eigenvalues give zero columns, so singular covariances are exact).
"""

from __future__ import annotations

import warnings
from typing import NamedTuple

import numpy as np

__all__ = [
    "Realisation",
    "FiniteSizeWarning",
    "largest_remainder",
    "realise_exact_gram",
    "realise_components",
    "realise_atoms",
    "full_factors",
    "realise_full",
]


class FiniteSizeWarning(UserWarning):
    """The finite instance cannot realise the mixture's law exactly at this ``d``."""


class Realisation(NamedTuple):
    """Means and covariances of one finite-``d`` instance of a covariance structure.

    Attributes
    ----------
    means : ndarray (K, d)
    variances : ndarray (K, d)
        The diagonals of the covariances (their eigenvalues when they are diagonal).
    factors : ndarray (K, d, d) or None
        ``F_k`` with ``Sigma_k = F_k F_k^T`` for full covariances; None when the
        covariances are ``diag(variances[k])``.
    directions : list of int
        Number of directions given to each atom of the law.
    """

    means: np.ndarray
    variances: np.ndarray
    factors: np.ndarray | None
    directions: list[int]


def largest_remainder(weights: np.ndarray, total: int) -> np.ndarray:
    """Integers ``n_j >= 0`` with ``sum n_j = total`` closest to ``weights * total``.

    Hamilton's largest-remainder rounding: floor every quota, then give the remaining units
    to the largest fractional parts (ties broken by order).
    """
    w = np.asarray(weights, dtype=float)
    quota = w / w.sum() * total
    base = np.floor(quota).astype(np.int64)
    rest = int(total - base.sum())
    if rest > 0:
        order = np.argsort(-(quota - base), kind="stable")
        base[order[:rest]] += 1
    return base


def _psd_sqrt(a: np.ndarray) -> np.ndarray:
    """Symmetric square root of a positive semi-definite matrix."""
    ev, vec = np.linalg.eigh(0.5 * (a + a.T))
    return (vec * np.sqrt(np.clip(ev, 0.0, None))) @ vec.T


def _psd_factor(a: np.ndarray, rtol: float = 1e-12) -> np.ndarray:
    """``A`` (K, r) with ``A A^T = a`` and ``r = rank(a)``."""
    ev, vec = np.linalg.eigh(0.5 * (a + a.T))
    keep = ev > rtol * max(1.0, float(np.abs(ev).max(initial=0.0)))
    return vec[:, keep] * np.sqrt(ev[keep])


def full_factors(covariances: np.ndarray) -> np.ndarray:
    """``F_k`` (K, d, d) with ``F_k F_k^T = Sigma_k`` for symmetric positive semi-definite
    ``covariances`` (K, d, d): the eigenvectors scaled by the square roots of the
    eigenvalues, negative rounding clipped to zero (a singular ``Sigma_k`` gets zero
    columns); read-only."""
    out = []
    for s in covariances:
        ev, vec = np.linalg.eigh(s)
        out.append(vec * np.sqrt(np.clip(ev, 0.0, None)))
    f = np.stack(out)
    f.flags.writeable = False
    return f


def _haar_frame(d: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """A uniformly random ``d x k`` matrix with orthonormal columns."""
    q, r = np.linalg.qr(rng.standard_normal((d, k)))
    s = np.sign(np.diag(r))
    s[s == 0] = 1.0
    return q * s


def _inv_sqrt(s: np.ndarray) -> np.ndarray:
    ev, vec = np.linalg.eigh(0.5 * (s + s.T))
    return (vec / np.sqrt(ev)) @ vec.T


def realise_exact_gram(
    gram: np.ndarray, variances: np.ndarray, d: int, rng: np.random.Generator
) -> Realisation:
    """Isotropic clusters ``Sigma_k = variances[k] I`` with means realising ``gram``
    exactly: ``mu = gram^{1/2} O^T`` with a random ``d x K`` frame ``O`` (needs ``d >= K``)."""
    k = gram.shape[0]
    means = _psd_sqrt(gram) @ _haar_frame(d, k, rng).T
    return Realisation(
        np.ascontiguousarray(means), np.repeat(variances[:, None], d, axis=1), None, [d]
    )


def realise_components(sigma: np.ndarray, mu: np.ndarray) -> Realisation:
    """An empirical spectral law on its own J = d directions: ``mu_k[i] = mu[i, k] /
    sqrt(d)``, ``Sigma_k = diag(sigma[:, k])``."""
    d = sigma.shape[0]
    return Realisation(
        np.ascontiguousarray(mu.T / np.sqrt(d)), np.ascontiguousarray(sigma.T), None, [1] * d
    )


def realise_atoms(
    weights: np.ndarray,
    sigma: np.ndarray,
    theta: np.ndarray,
    d: int,
    rng: np.random.Generator,
) -> Realisation:
    """A spectral law with Gaussian mean components: atom ``j`` gets ``n_j`` directions
    (largest remainder), its mean components whitened so that their empirical second
    moment is exactly ``theta[j]``.

    Warns
    -----
    FiniteSizeWarning
        If an atom gets no direction at this ``d`` or fewer directions than the rank of its
        ``theta[j]`` (then its second moment is not realised exactly).
    """
    k = sigma.shape[1]
    nj = largest_remainder(weights, d)
    if np.any(nj == 0):
        warnings.warn(
            f"at d={d}, atoms {np.flatnonzero(nj == 0).tolist()} of the spectral law get no "
            "direction (weights too small); the realised law differs from the mixture's",
            FiniteSizeWarning,
            stacklevel=4,
        )
    means = np.empty((k, d))
    variances = np.empty((k, d))
    start = 0
    for jj, n_j in enumerate(nj.tolist()):
        sl = slice(start, start + n_j)
        start += n_j
        variances[:, sl] = sigma[jj][:, None]
        if n_j == 0:
            continue
        A = _psd_factor(theta[jj])
        r = A.shape[1]
        if r == 0:
            means[:, sl] = 0.0
            continue
        G = rng.standard_normal((n_j, r))
        if n_j >= r:
            G = G @ _inv_sqrt(G.T @ G / n_j)
        else:
            warnings.warn(
                f"atom {jj} has {n_j} directions at d={d}, fewer than the rank {r} of its "
                "mean second moment: it is not realised exactly",
                FiniteSizeWarning,
                stacklevel=4,
            )
        means[:, sl] = (G @ A.T).T / np.sqrt(d)
    return Realisation(means, variances, None, nj.tolist())


def realise_full(means: np.ndarray, covariances: np.ndarray, factors: np.ndarray) -> Realisation:
    """Full covariances at their own dimension, sampled through ``Sigma_k = F_k F_k^T``
    (``factors``, from :func:`full_factors`)."""
    d = means.shape[1]
    diag = np.ascontiguousarray(np.diagonal(covariances, axis1=1, axis2=2))
    return Realisation(np.array(means), diag, factors, [1] * d)
