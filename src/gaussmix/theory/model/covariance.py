"""The covariance structures of a :class:`~gaussmix.theory.model.mixture.Mixture`: where the means
and covariances live.

* :class:`SpectralLaw` (``structure = 'spectral'``): the joint law of the covariance
  eigenvalues and mean components over shared eigen-directions (Corollary 3), a finite set of
  atoms; :class:`IsotropicLaw` is its one-atom case (``Sigma_k = Delta_k I`` and the Gram
  matrix of the means);
* :class:`DenseCovariance` (``structure = 'dense'``): full ``Sigma_k`` (d x d) and ``mu_k``
  (d) at a given finite ``d``, in the inputs' own units (docs/design.md pitfall 9).

Every structure answers the :class:`CovarianceStructure` protocol; :data:`STRUCTURES` names
them (the ``structure`` entry of a mixture file).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np

from gaussmix.core.exceptions import ArgumentError
from gaussmix.core.registry import Registry
from gaussmix.core.validation import (
    check_array,
    check_param,
)

from ..numerics.linalg import one_blas_thread
from . import realisation as _real
from .realisation import Realisation

__all__ = [
    "CovarianceStructure",
    "SpectralLaw",
    "IsotropicLaw",
    "DenseCovariance",
    "STRUCTURES",
    "COVARIANCE_RTOL",
    "hash_arrays",
    "is_covariance_structure",
]


def hash_arrays(h: Any, arrays: Iterable[np.ndarray | None]) -> None:
    """Feed arrays to the hashlib object ``h``: each as its shape and little-endian float64
    bytes, ``None`` as ``b'none;'`` (the encoding of the sweep's checkpoint keys since their
    version 3: changing it would orphan every existing checkpoint)."""
    for a in arrays:
        if a is None:
            h.update(b"none;")
            continue
        x = np.ascontiguousarray(a, dtype="<f8")
        h.update(repr(x.shape).encode())
        h.update(x.tobytes())


@runtime_checkable
class CovarianceStructure(Protocol):
    """What every covariance structure of a :class:`Mixture` answers (and all that the
    layers above the theory may ask of it: no ``isinstance`` on the classes elsewhere).

    Attributes
    ----------
    name : str
        The structure's name (:data:`STRUCTURES`; the ``structure`` entry of a mixture file).
    structure : str
        The family the priors of the fixed point are registered under
        (:data:`gaussmix.theory.prior.prior.PRIORS`): ``'spectral'`` or ``'dense'``.
    """

    name: ClassVar[str]
    structure: ClassVar[str]

    @property
    def n_clusters(self) -> int: ...

    def arrays(self) -> dict[str, np.ndarray | None]:
        """The arrays that define the structure, by name (what a mixture file stores)."""
        ...

    def fingerprint(self) -> str:
        """A stable hash of :meth:`arrays` (equal for equal structures, in every process)."""
        ...

    def check_dim(self, d: Any, name: str = "d") -> int:
        """``d`` if the structure can be realised in dimension ``d``, else a ValueError
        naming ``name``."""
        ...

    def realise(self, d: int, rng: np.random.Generator) -> Realisation:
        """Means and covariances of one instance in dimension ``d``."""
        ...

    def describe(self) -> str:
        """One line for tables, titles and messages."""
        ...

    def permute(self, p: np.ndarray) -> CovarianceStructure:
        """The same structure with its clusters listed in the order ``p``."""
        ...


class _Structure:
    """The parts of :class:`CovarianceStructure` that every structure shares."""

    name: ClassVar[str]

    def arrays(self) -> dict[str, np.ndarray | None]:  # pragma: no cover - overridden
        raise NotImplementedError

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, Any]) -> Any:
        """The structure from :meth:`arrays` (validated by the constructor)."""
        return cls(**arrays)

    def fingerprint(self) -> str:
        """sha256 of the name and :meth:`arrays` (:func:`hash_arrays`), 20 hex digits."""
        h = hashlib.sha256(self.name.encode())
        hash_arrays(h, self.arrays().values())
        return h.hexdigest()[:20]


@dataclass(frozen=True, eq=False)
class SpectralLaw(_Structure):
    """Covariances that share eigenvectors (Corollary 3): the joint law of the covariance
    eigenvalues and the rescaled mean components over the shared eigen-directions.

    A finite set of *atoms* ``j`` with weights ``weights[j]`` (fractions of directions),
    eigenvalues ``sigma[j, k]`` of ``Sigma_k`` on those directions and the conditional second
    moment ``theta[j, k, k'] = E[mu^k mu^k' | atom j]`` of the rescaled mean components
    ``mu^k_i = sqrt(d) mu_k . v_i``.  Covers isotropic (one atom), block-diagonal, the sparse
    model eq. (12) and empirical spectral laws.

    Attributes
    ----------
    weights : ndarray (J,)
    sigma : ndarray (J, K)
    theta : ndarray (J, K, K)
    mu : ndarray (J, K) or None
        For an empirical law: the mean components on each atom (then
        ``theta[j] = outer(mu[j], mu[j])``); ``None`` when the mean components are Gaussian
        with covariance ``theta[j]``.
    """

    weights: np.ndarray
    sigma: np.ndarray
    theta: np.ndarray
    mu: np.ndarray | None = None

    #: the structure's name (:data:`STRUCTURES`)
    name: ClassVar[str] = "spectral"
    #: the name priors are registered under (:data:`gaussmix.theory.prior.prior.PRIORS`)
    structure: ClassVar[str] = "spectral"

    def __post_init__(self) -> None:
        w = check_array("weights", self.weights, shape=(None,), positive=True)
        if abs(w.sum() - 1.0) > 1e-9:
            raise ValueError(f"atom weights must sum to 1, got {w.sum():.12g}")
        j = w.size
        sigma = check_array("sigma", self.sigma, positive=True)
        if sigma.ndim != 2 or sigma.shape[0] != j:
            raise ValueError(f"sigma must have shape ({j}, K), got {sigma.shape}")
        k = sigma.shape[1]
        theta = check_array("theta", self.theta, shape=(j, k, k))
        object.__setattr__(self, "weights", w / w.sum())
        object.__setattr__(self, "sigma", sigma)
        object.__setattr__(self, "theta", 0.5 * (theta + np.swapaxes(theta, 1, 2)))
        if self.mu is not None:
            object.__setattr__(self, "mu", check_array("mu", self.mu, shape=(j, k)))

    @property
    def n_clusters(self) -> int:
        """K."""
        return int(self.sigma.shape[1])

    @property
    def n_atoms(self) -> int:
        """Number of atoms J."""
        return int(self.weights.size)

    @property
    def gram(self) -> np.ndarray:
        """Gram matrix of the means, ``Theta_kk' = mu_k . mu_k' = sum_j weights_j theta_j``."""
        return np.einsum("j,jkl->kl", self.weights, self.theta)

    @property
    def mean_variance(self) -> np.ndarray:
        """``tr(Sigma_k) / d`` for each cluster."""
        return self.weights @ self.sigma

    @property
    def support(self) -> np.ndarray:
        """Boolean mask (J,) of the atoms on the support of the means (``theta[j] != 0``)."""
        return np.any(self.theta != 0.0, axis=(1, 2))

    def permute(self, p: np.ndarray) -> SpectralLaw:
        """The same law with its clusters listed in the order ``p``."""
        return type(self)(
            weights=self.weights,
            sigma=self.sigma[:, p],
            theta=self.theta[:, p][:, :, p],
            mu=None if self.mu is None else self.mu[:, p],
        )

    def arrays(self) -> dict[str, np.ndarray | None]:
        """``weights``, ``sigma``, ``theta`` and ``mu`` (None for Gaussian components)."""
        return {"weights": self.weights, "sigma": self.sigma, "theta": self.theta, "mu": self.mu}

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, Any]) -> SpectralLaw:
        """The law of :meth:`arrays`, validated by the constructor, with the stored weights
        exactly (normalising a normalised vector again may move its last bits)."""
        law = cls(**arrays)
        object.__setattr__(law, "weights", np.array(arrays["weights"], dtype=float))
        return law

    def check_dim(self, d: Any, name: str = "d") -> int:
        """Any ``d`` by the rule of ``d``; an empirical law (``mu`` given) only on its own J
        directions."""
        d = check_param("d", d, name=name)
        if self.mu is not None and d != self.n_atoms:
            raise ArgumentError(
                name,
                f"must equal {self.n_atoms}, the number of directions of this empirical "
                f"spectral law, got {d}",
            )
        return d

    def realise(self, d: int, rng: np.random.Generator) -> Realisation:
        """An empirical law on its own directions (:func:`~gaussmix.theory.model.realisation.
        realise_components`), else atoms of ``round(weights d)`` directions whose Gaussian
        mean components have exactly the second moments ``theta``
        (:func:`~gaussmix.theory.model.realisation.realise_atoms`)."""
        d = self.check_dim(d)
        if self.mu is not None:
            return _real.realise_components(self.sigma, self.mu)
        return _real.realise_atoms(self.weights, self.sigma, self.theta, d, rng)

    def describe(self) -> str:
        """``'spectral law: J atoms, K = k'`` (``empirical`` with mean components)."""
        kind = "empirical spectral law" if self.mu is not None else "spectral law"
        atoms = "atom" if self.n_atoms == 1 else "atoms"
        return f"{kind}: {self.n_atoms} {atoms}, K = {self.n_clusters}"


@dataclass(frozen=True, eq=False)
class IsotropicLaw(SpectralLaw):
    """Isotropic clusters ``Sigma_k = Delta_k I`` (``sigma[0]``) with the Gram matrix
    ``theta[0]`` of the means: a one-atom :class:`SpectralLaw` whose finite instances
    realise the Gram matrix exactly (so they need ``d >= K``)."""

    name: ClassVar[str] = "isotropic"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.n_atoms != 1 or self.mu is not None:
            raise ValueError(
                f"an isotropic law has one atom and no mean components, got {self.n_atoms} "
                "atoms" + ("" if self.mu is None else " and mean components mu")
            )

    def check_dim(self, d: Any, name: str = "d") -> int:
        """``d >= K`` (the means realise their Gram matrix exactly)."""
        d = check_param("d", d, name=name)
        k = self.n_clusters
        if d < k:
            raise ArgumentError(
                name,
                f"must be >= the number of clusters K={k} to realise the Gram matrix of the "
                f"means exactly, got {d}",
            )
        return d

    def realise(self, d: int, rng: np.random.Generator) -> Realisation:
        """Means ``Theta^{1/2} O^T`` with a random frame ``O`` (the Gram matrix exactly)."""
        d = self.check_dim(d)
        return _real.realise_exact_gram(self.theta[0], self.sigma[0], d, rng)

    def describe(self) -> str:
        """``'isotropic: K = k, Delta = ...'``."""
        delta = self.sigma[0]
        shown = f"{delta[0]:g}" if np.all(delta == delta[0]) else ",".join(f"{v:g}" for v in delta)
        return f"isotropic: K = {self.n_clusters}, Delta = {shown}"


#: relative tolerance of the symmetry and positive semi-definiteness checks of a dense
#: covariance: ``|Sigma - Sigma^T| <= tol max|Sigma|`` and smallest eigenvalue
#: ``>= -tol max(eig)`` (rounding of an estimate ``X^T X / n`` stays ~1e-15 inside it)
COVARIANCE_RTOL = 1e-10


@dataclass(frozen=True, eq=False)
class DenseCovariance(_Structure):
    """General covariances: full ``Sigma_k`` (d x d) and means ``mu_k`` (d) at a finite ``d``.

    The structure of Appendix C (l2 case), ``S = (lam I_L (x) I_d + sum_k Vhat_k (x)
    Sigma_k)^{-1}``; no assumption that the covariances commute or are invertible (real
    covariances have exact zero eigenvalues, e.g. constant pixels).

    Units: ``means`` are in the inputs' own units, ``x = mu_k + Sigma_k^{1/2} z`` with the
    estimator acting on ``x / sqrt(d)``, so ``M_k = W mu_k / sqrt(d)`` and
    ``Q_k = W Sigma_k W^T / d``; the mean term of the prior is then the replica form
    ``sqrt(d) sum_k Mhat_k mu_k^T`` (Appendices B-C; docs/design.md pitfall 9).  With
    ``Sigma_k = diag(sigma[:, k])`` and ``means[k] = mu[:, k] / sqrt(d)`` this is
    ``SpectralLaw`` of ``Mixture.spectral(sigma, mu)`` (Corollary 3).

    Attributes
    ----------
    means : ndarray (K, d)
    covariances : ndarray (K, d, d)
        Symmetric positive semi-definite (checked to :data:`COVARIANCE_RTOL`, then
        symmetrised); read-only.

    Notes
    -----
    For the statistics of ``W*`` over directions (``weights``, ``support``) the directions
    are the d coordinate axes, each of weight ``1/d``.
    """

    means: np.ndarray
    covariances: np.ndarray
    _active: np.ndarray = field(init=False, repr=False)
    _active_cov: np.ndarray = field(init=False, repr=False)

    #: the structure's name (:data:`STRUCTURES`)
    name: ClassVar[str] = "dense"
    #: the name priors are registered under (:data:`gaussmix.theory.prior.prior.PRIORS`)
    structure: ClassVar[str] = "dense"

    def __post_init__(self) -> None:
        mu = check_array("means", self.means, shape=(None, None))
        k, d = mu.shape
        if k < 2 or d < 1:
            raise ArgumentError("means", f"must have shape (K, d) with K >= 2, got {mu.shape}")
        cov = check_array("covariances", self.covariances, shape=(k, d, d))
        scale = float(np.abs(cov).max(initial=0.0))
        asym = float(np.abs(cov - np.swapaxes(cov, 1, 2)).max(initial=0.0))
        if asym > COVARIANCE_RTOL * max(scale, 1e-300):
            raise ValueError(f"covariances must be symmetric (largest asymmetry {asym:g})")
        cov = 0.5 * (cov + np.swapaxes(cov, 1, 2))
        for c in range(k):
            with one_blas_thread():
                ev = np.linalg.eigvalsh(cov[c])
            if ev[0] < -COVARIANCE_RTOL * max(float(ev[-1]), 1e-300):
                raise ValueError(
                    f"covariances[{c}] must be positive semi-definite (smallest eigenvalue "
                    f"{ev[0]:g}, largest {ev[-1]:g})"
                )
        mu = np.ascontiguousarray(mu)
        cov = np.ascontiguousarray(cov)
        # an axis with zero variance in every cluster has a zero row and column in every
        # (positive semi-definite) covariance: the prior treats those axes in closed form
        active = np.any(np.diagonal(cov, axis1=1, axis2=2) > 0.0, axis=0)
        sub = cov if active.all() else np.ascontiguousarray(cov[:, active][:, :, active])
        for a in (mu, cov, sub, active):
            a.flags.writeable = False
        object.__setattr__(self, "means", mu)
        object.__setattr__(self, "covariances", cov)
        object.__setattr__(self, "_active", active)
        object.__setattr__(self, "_active_cov", sub)

    @property
    def n_clusters(self) -> int:
        """K."""
        return int(self.means.shape[0])

    @property
    def dim(self) -> int:
        """Input dimension d."""
        return int(self.means.shape[1])

    @property
    def active(self) -> np.ndarray:
        """Boolean mask (d,) of the axes with non-zero variance in some cluster (on the
        others every covariance has a zero row and column: e.g. constant pixels)."""
        return self._active

    @property
    def active_covariances(self) -> np.ndarray:
        """The covariances restricted to the :attr:`active` axes (K, r, r), read-only."""
        return self._active_cov

    @cached_property
    def factors(self) -> np.ndarray:
        """``F_k`` (K, d, d) with ``F_k F_k^T = Sigma_k``: the eigenvectors scaled by the
        square roots of the eigenvalues, negative rounding clipped to zero (a singular
        ``Sigma_k`` gets zero columns); computed once per mixture (the samplers of
        :func:`gaussmix.simulate.realise` draw ``x = mu_k + F_k z``), read-only."""
        return _real.full_factors(self.covariances)

    @property
    def n_atoms(self) -> int:
        """Number of directions (the d coordinate axes)."""
        return self.dim

    @property
    def weights(self) -> np.ndarray:
        """Weight ``1/d`` of each coordinate axis."""
        return np.full(self.dim, 1.0 / self.dim)

    @property
    def support(self) -> np.ndarray:
        """Boolean mask (d,) of the coordinate axes on which some mean is non-zero."""
        return np.any(self.means != 0.0, axis=0)

    @property
    def gram(self) -> np.ndarray:
        """Gram matrix of the means, ``Theta_kk' = mu_k . mu_k'`` (input units)."""
        return self.means @ self.means.T

    @property
    def mean_variance(self) -> np.ndarray:
        """``tr(Sigma_k) / d`` for each cluster."""
        return np.trace(self.covariances, axis1=1, axis2=2) / self.dim

    def permute(self, p: np.ndarray) -> DenseCovariance:
        """The same structure with its clusters listed in the order ``p``."""
        return DenseCovariance(self.means[p], self.covariances[p])

    def arrays(self) -> dict[str, np.ndarray | None]:
        """``means`` (K, d) and ``covariances`` (K, d, d)."""
        return {"means": self.means, "covariances": self.covariances}

    def check_dim(self, d: Any, name: str = "d") -> int:
        """Only the structure's own dimension."""
        d = check_param("d", d, name=name)
        if d != self.dim:
            raise ArgumentError(
                name,
                f"must equal the dimension {self.dim} of the mixture's full covariances, got {d}",
            )
        return d

    def realise(self, d: int, rng: np.random.Generator) -> Realisation:
        """The structure's means and covariances, with factors ``Sigma_k = F_k F_k^T``."""
        self.check_dim(d)
        return _real.realise_full(self.means, self.covariances, self.factors)

    def describe(self) -> str:
        """``'dense: K = k, d = d'``."""
        return f"dense: K = {self.n_clusters}, d = {self.dim}"


#: the covariance structures, by name (the ``structure`` entry of a mixture file)
STRUCTURES: Registry[type] = Registry("covariance structure", "structure")
for _cls in (IsotropicLaw, SpectralLaw, DenseCovariance):
    STRUCTURES.register(_cls, name=_cls.name)


def is_covariance_structure(obj: Any) -> bool:
    """Whether ``obj`` answers :class:`CovarianceStructure`: the library's own structures
    first (a Protocol check is slow)."""
    return isinstance(obj, _Structure) or isinstance(obj, CovarianceStructure)
