"""The data model: a mixture of K Gaussian clusters with a label map.

A :class:`Mixture` stores what the asymptotic theory needs to know about
``P(x, c) = rho_c N(x | mu_c, Sigma_c)``, independent of any loss:

* the cluster priors ``rho`` (K,);
* the label map (:class:`LabelMap`), the L-dimensional label ``y_c`` of each cluster;
* a covariance structure holding the means and covariances, one of

  - :class:`SpectralLaw` (``structure = 'spectral'``): the joint law of the covariance
    eigenvalues and mean components over shared eigen-directions (Corollary 3): a finite
    set of *atoms* ``j`` with weights ``weights[j]`` (fractions of directions), eigenvalues
    ``sigma[j, k]`` of ``Sigma_k`` on those directions and the conditional second moment
    of the rescaled mean components ``theta[j, k, k'] = E[mu^k mu^k' | atom j]``, where
    ``mu^k_i = sqrt(d) mu_k . v_i``;
  - :class:`DenseCovariance` (``structure = 'dense'``): full ``Sigma_k`` (d x d) and
    ``mu_k`` (d) at a given finite ``d`` (Appendix C, eq. of the l2 case), e.g. fitted to a
    data set by :meth:`Mixture.from_data`.

The *isotropic* representation (``Sigma_k = Delta_k I``, Gram matrix of the
means) is the one-atom case, the parametric *block* law, the correlated *sparse*
model eq. (12) and the *empirical* spectral law are several atoms.  The mean Gram matrix is
``gram = sum_j weights[j] theta[j]`` (``Theta_kk' = mu_k . mu_k'``).

Units (docs/design.md pitfall 9).  In both structures the estimator acts on ``x / sqrt(d)`` and
the overlaps are ``M_k = W mu_k / sqrt(d)``, ``Q_k = W Sigma_k W^T / d``.  A dense structure
stores the means *in the inputs' own units* (``x = mu_k + Sigma_k^{1/2} z``), exactly as
:class:`gaussmix.simulate.Instance` does; its rescaled components on an eigenvector ``v_i``
are ``mu^k_i = sqrt(d) mu_k . v_i``, so a dense mixture with diagonal covariances
``diag(sigma[:, k])`` and means ``mu[:, k] / sqrt(d)`` *is* ``Mixture.spectral(sigma, mu)``.
The paper's regime has ``||mu_k|| = O(1)``; means fitted to images have
``||mu_k|| = O(sqrt(d))`` and are used as they are (the equations are the same at finite d).
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gaussmix.core.exceptions import ArgumentError
from gaussmix.core.registry import Registry
from gaussmix.core.validation import (
    check_array,
    check_choice,
    check_param,
    check_probability_vector,
)

from .covariance import (
    STRUCTURES,
    CovarianceStructure,
    DenseCovariance,
    IsotropicLaw,
    SpectralLaw,
    hash_arrays,
    is_covariance_structure,
)
from .labels import LabelMap, infer_n_clusters, labels_from_data

__all__ = [
    "Mixture",
    "MixtureModel",
    "mean_gram",
    "load_mixture",
    "MixtureFileError",
    "MIXTURE_FILE_VERSION",
    "MIXTURE_MODELS",
    "parametric_model",
]

MEAN_KINDS = ("simplex", "gaussian", "antipodal")


def mean_gram(kind: str, n_clusters: int) -> np.ndarray:
    """Gram matrix ``Theta_kk' = mu_k . mu_k'`` of a named family of means.

    Parameters
    ----------
    kind : {'simplex', 'gaussian', 'antipodal'}
        ``'simplex'``: unit-norm means at the vertices of a regular simplex centred at the
        origin, ``Theta = K/(K-1) (I - 11^T / K)``; ``'gaussian'``: ``mu_k ~ N(0, I_d/d)``,
        whose Gram matrix tends to ``I`` (Section 3.2); ``'antipodal'``: ``mu_1 = -mu_2``
        with ``||mu|| = 1`` (K = 2 only).
    n_clusters : int
        K.
    """
    check_choice("means", kind, MEAN_KINDS)
    k = n_clusters
    if kind == "gaussian":
        return np.eye(k)
    if kind == "antipodal":
        if k != 2:
            raise ArgumentError("means", f"'antipodal' needs exactly 2 clusters, got {k}")
        return np.array([[1.0, -1.0], [-1.0, 1.0]])
    return k / (k - 1) * (np.eye(k) - np.ones((k, k)) / k)


def _check_gram(name: str, gram: Any, k: int) -> np.ndarray:
    g = check_array(name, gram, shape=(k, k))
    if not np.allclose(g, g.T, atol=1e-12, rtol=0):
        raise ValueError(f"{name} must be symmetric")
    ev = np.linalg.eigvalsh(0.5 * (g + g.T))
    if ev.min() < -1e-10 * max(1.0, abs(ev).max()):
        raise ValueError(
            f"{name} must be positive semi-definite (smallest eigenvalue {ev.min():g})"
        )
    return 0.5 * (g + g.T)


@dataclass(frozen=True, eq=False)
class Mixture:
    """A K-cluster Gaussian mixture: priors, label map and covariance structure.

    Build it with :meth:`isotropic`, :meth:`block`, :meth:`sparse`, :meth:`spectral`,
    :meth:`dense` or :meth:`from_data` (the models of :data:`MIXTURE_MODELS`); the
    constructor itself validates the parts.

    Attributes
    ----------
    rho : ndarray (K,)
        Cluster priors ``rho_k`` (positive, summing to 1).
    labels : LabelMap
        The label vector ``y_k`` of every cluster (one-hot, binary +-1 or custom).
    covariance : CovarianceStructure
        The covariance structure with the means (:class:`IsotropicLaw`,
        :class:`SpectralLaw` or :class:`DenseCovariance`).  The priors of the fixed point
        are chosen by (penalty, ``covariance.structure``), see
        :data:`gaussmix.theory.prior.prior.PRIORS`.
    kind : str
        The mixture model that built it (a name in :data:`MIXTURE_MODELS`).
    info : dict
        What the model recorded about how it was built (e.g. the data set a mixture was
        fitted to); not used by the theory.
    rho_test : ndarray (K,) or None
        The cluster priors of the *test* distribution when they differ from the training
        priors ``rho`` (a train / test prior shift; None: no shift, the test distribution is
        the training one).  Theorem 1's fixed point depends on the training composition
        ``rho`` alone (it enters the channel and the bias condition); Theorem 2's test-side
        observables (test error, test loss) are sums over clusters weighted by the test
        priors, :attr:`test_priors`.  Nonnegative, summing to 1 (a zero drops a cluster
        from the test distribution).  Set it with :meth:`with_test_priors`.

    Examples
    --------
    Three balanced clusters with Gaussian means (Gram matrix I) and ``Sigma = 0.5 I``,
    one-hot labels:

    >>> import gaussmix as gm
    >>> mix = gm.Mixture.isotropic(delta=0.5, means="gaussian", n_clusters=3)
    >>> mix.n_clusters, mix.labels.kind, mix.rho.round(3).tolist()
    (3, 'onehot', [0.333, 0.333, 0.333])

    Two opposite clusters with labels +-1 and their own variances:

    >>> two = gm.Mixture.isotropic(delta=[0.1, 0.01], means="antipodal", labels="binary")
    >>> two.labels.labels.ravel().tolist(), two.sigma.ravel().tolist()
    ([1.0, -1.0], [0.1, 0.01])
    """

    rho: np.ndarray
    labels: LabelMap
    covariance: CovarianceStructure
    kind: str = "spectral"
    info: dict = field(default_factory=dict)
    rho_test: np.ndarray | None = None

    def __post_init__(self) -> None:
        k = self.labels.n_clusters
        rho = check_probability_vector("rho", self.rho, size=k)
        if self.rho_test is not None:
            object.__setattr__(
                self,
                "rho_test",
                check_probability_vector("rho_test", self.rho_test, size=k, zeros=True),
            )
        if not is_covariance_structure(self.covariance):
            raise TypeError(
                "covariance must be a covariance structure (gaussmix.theory.model.mixture."
                f"IsotropicLaw, SpectralLaw or DenseCovariance), got "
                f"{type(self.covariance).__name__}"
            )
        if self.covariance.n_clusters != k:
            raise ValueError(
                f"the covariance structure has {self.covariance.n_clusters} clusters but the "
                f"labels have {k}"
            )
        MIXTURE_MODELS.get(self.kind)  # a registered model, or a ValueError naming them
        object.__setattr__(self, "rho", rho)

    @property
    def model(self) -> MixtureModel:
        """The declaration of the model that built this mixture."""
        return MIXTURE_MODELS.get(self.kind)

    # spectral-law conveniences (the fields of ``covariance``)
    @property
    def weights(self) -> np.ndarray:
        return self.covariance.weights

    @property
    def sigma(self) -> np.ndarray:
        return self._spectral("sigma")

    @property
    def theta(self) -> np.ndarray:
        return self._spectral("theta")

    @property
    def mu(self) -> np.ndarray | None:
        return self._spectral("mu")

    def _spectral(self, name: str) -> Any:
        """A field of a spectral law, or an AttributeError naming the structure."""
        if not isinstance(self.covariance, SpectralLaw):
            raise AttributeError(
                f"Mixture.{name} is a field of spectral laws; this mixture's covariance "
                f"structure is {self.covariance.structure!r} (see mixture.covariance)"
            )
        return getattr(self.covariance, name)

    # ------------------------------------------------------------------ constructors
    @classmethod
    def isotropic(
        cls,
        delta: float | Any = 1.0,
        means: str | Any = "simplex",
        *,
        n_clusters: int | None = None,
        rho: Any = None,
        labels: str | Any = "onehot",
    ) -> Mixture:
        """Isotropic clusters ``Sigma_k = Delta_k I`` with a given Gram matrix of the means.

        Parameters
        ----------
        delta : float or array (K,)
            Cluster variances ``Delta_k > 0`` (one number: shared by all clusters).
        means : {'simplex', 'gaussian', 'antipodal'} or array (K, K)
            A named family (:func:`mean_gram`) or the Gram matrix ``mu_k . mu_k'`` itself.
        n_clusters : int, optional
            K; inferred from ``delta``, ``rho``, ``means`` or ``labels`` when omitted.
        rho : array (K,), optional
            Cluster priors (default balanced).
        labels : {'onehot', 'binary'}, array (K, L) or LabelMap
        """
        k = infer_n_clusters(n_clusters, delta=delta, rho=rho, means=means, labels=labels)
        d = np.asarray(delta, dtype=float) if not np.isscalar(delta) else None
        if d is None:
            from gaussmix.core.validation import check_real

            dv = check_real("delta", delta, low=0.0, low_open=True)
            deltas = np.full(k, dv)
        else:
            deltas = check_array("delta", d, shape=(k,), positive=True)
        gram = mean_gram(means, k) if isinstance(means, str) else _check_gram("means", means, k)
        rho_arr = np.full(k, 1.0 / k) if rho is None else rho
        lm = LabelMap.make(labels, k)
        return cls(
            rho=rho_arr,
            labels=lm,
            covariance=IsotropicLaw(np.ones(1), deltas[None, :], gram[None, :, :]),
            kind="isotropic",
            info={"means": means if isinstance(means, str) else "custom"},
        )

    @classmethod
    def block(
        cls,
        fractions: Any,
        deltas: Any,
        *,
        means: str | Any = "antipodal",
        rho: Any = None,
        labels: str | Any = "binary",
        n_clusters: int | None = None,
    ) -> Mixture:
        """Parametric block law: blocks of directions with their own variances.

        A fraction ``fractions[b]`` of the eigen-directions has covariance eigenvalue
        ``deltas[b]`` (shared by all clusters, or ``deltas[b, k]`` per cluster); on every
        direction the rescaled mean components are Gaussian with covariance ``Theta``
        given by ``means`` (default: antipodal binary means, ``mu^1 = -mu^2 ~ N(0, 1)``).
        Then ``||mu_k||^2 = Theta_kk``.
        """
        f = check_array("fractions", fractions, shape=(None,), positive=True)
        if abs(f.sum() - 1.0) > 1e-9:
            raise ArgumentError("fractions", f"must sum to 1, got {f.sum():.12g}")
        nb = f.size
        dl = check_array("deltas", deltas, positive=True)
        k = infer_n_clusters(n_clusters, rho=rho, means=means, labels=labels)
        if dl.ndim == 1:
            if dl.shape != (nb,):
                raise ArgumentError(
                    "deltas", f"must have one entry per block ({nb}), got shape {dl.shape}"
                )
            sigma = np.repeat(dl[:, None], k, axis=1)
        elif dl.shape == (nb, k):
            sigma = dl
        else:
            raise ValueError(f"deltas must have shape ({nb},) or ({nb}, {k}), got {dl.shape}")
        gram = mean_gram(means, k) if isinstance(means, str) else _check_gram("means", means, k)
        rho_arr = np.full(k, 1.0 / k) if rho is None else rho
        return cls(
            rho=rho_arr,
            labels=LabelMap.make(labels, k),
            covariance=SpectralLaw(f, sigma, np.repeat(gram[None], nb, axis=0)),
            kind="block",
            info={"means": means if isinstance(means, str) else "custom"},
        )

    @classmethod
    def spectral(
        cls,
        sigma: Any,
        mu: Any,
        *,
        rho: Any = None,
        labels: str | Any = "onehot",
    ) -> Mixture:
        """Empirical joint law of ``(sigma_i^k, mu_i^k)`` over d shared eigen-directions.

        Parameters
        ----------
        sigma : array (d, K)
            ``sigma[i, k]``: eigenvalue of ``Sigma_k`` on eigenvector ``v_i``.
        mu : array (d, K)
            ``mu[i, k] = sqrt(d) mu_k . v_i``.
        """
        s = check_array("sigma", sigma, positive=True)
        if s.ndim != 2:
            raise ValueError(f"sigma must have shape (d, K), got {s.shape}")
        d, k = s.shape
        m = check_array("mu", mu, shape=(d, k))
        return cls(
            rho=np.full(k, 1.0 / k) if rho is None else rho,
            labels=LabelMap.make(labels, k),
            covariance=SpectralLaw(np.full(d, 1.0 / d), s, m[:, :, None] * m[:, None, :], mu=m),
            kind="spectral",
        )

    @classmethod
    def dense(
        cls,
        means: Any,
        covariances: Any,
        *,
        rho: Any = None,
        labels: str | Any = "onehot",
        info: dict | None = None,
    ) -> Mixture:
        """General covariances: full ``Sigma_k`` and ``mu_k`` at a given ``d`` (Appendix C).

        Parameters
        ----------
        means : array (K, d)
            Cluster means in the inputs' own units (``x = mu_k + Sigma_k^{1/2} z``; the
            estimator acts on ``x / sqrt(d)``, see :class:`DenseCovariance`).
        covariances : array (K, d, d)
            Symmetric positive semi-definite; singular covariances are allowed (``lam > 0``
            keeps the ridge prior well defined).
        rho : array (K,), optional
            Cluster priors (default balanced).
        labels : {'onehot', 'binary'}, array (K, L) or LabelMap
        info : dict, optional
            JSON-friendly provenance kept in :meth:`describe`.
        """
        cov = DenseCovariance(means, covariances)
        k = cov.n_clusters
        return cls(
            rho=np.full(k, 1.0 / k) if rho is None else rho,
            labels=LabelMap.make(labels, k),
            covariance=cov,
            kind="dense",
            info={"dim": cov.dim, **(info or {})},
        )

    @classmethod
    def from_data(
        cls,
        X: Any,
        y: Any,
        *,
        labels: str | Any = "onehot",
        center: bool = True,
    ) -> Mixture:
        """The Gaussian mixture with the per-cluster means, covariances and frequencies of a
        data set (Appendix E: ``P_2``, or ``P_K`` with one cluster per original class).

        For each cluster ``c`` (the samples with ``y == c``): ``mu_c`` is the sample mean,
        ``Sigma_c = (1/n_c) sum (x - mu_c)(x - mu_c)^T`` and ``rho_c = n_c / n``.  The
        inputs are used in their own units (no rescaling; the estimator acts on
        ``x / sqrt(d)``, see :class:`DenseCovariance`); normalise them first if the model
        should.

        With ``center`` (default) the means are translated by the mean of all inputs, so
        that ``sum_c rho_c mu_c = 0``.  A common translation of the inputs changes nothing
        but ``M_c`` and ``b`` (by ``-+ w . mu_0 / sqrt(d)``; the bias is unpenalised): the
        errors, the training loss, ``Q_c`` and ``V_c`` are the same.  It matters for the
        fixed-point iteration, which is badly conditioned by a common mean of norm
        ``O(sqrt(d))`` (e.g. raw pixels): the bias and the weights' component along it are
        then nearly collinear and the iteration may not converge (it then reports so).

        Parameters
        ----------
        X : array (n, d)
            Inputs (any real dtype; e.g. ``uint8`` pixels are converted per cluster).
        y : array (n,)
            Cluster id of every sample (integers or strings).  The clusters are the distinct
            ids in sorted order (``mixture.info['clusters']``).
        labels : {'onehot', 'binary'}, mapping, array (K, L) or LabelMap
            The label ``y_c`` of every cluster:

            * ``'onehot'`` (default): one class per cluster, ``y_c = e_c``;
            * ``'binary'``: the ids must be exactly ``-1`` and ``+1``, and are the labels
              (``P_2`` of a binary task);
            * a mapping ``{cluster id: label}`` with one entry per cluster, each label a
              number (binary: ``+1`` / ``-1``) or a vector of length L, e.g. ten MNIST
              digits to even / odd: ``{c: 1 if c % 2 == 0 else -1 for c in range(10)}``
              (``P_10``);
            * an array (K, L) or :class:`LabelMap`, rows in the sorted order of the ids.

        center : bool
            Translate the means so that ``sum_c rho_c mu_c = 0`` (see above).

        Returns
        -------
        Mixture
            Of kind ``'dense'``; ``info`` holds ``clusters``, ``counts``, ``n_samples`` and
            ``centered``.

        Raises
        ------
        ValueError
            Bad shapes, non-finite inputs, fewer than two clusters, a cluster with fewer
            than two samples, or labels that do not match the clusters.
        """
        try:
            Xa = np.asarray(X)
        except (TypeError, ValueError) as exc:  # ragged input
            raise TypeError(f"X must be an array of real numbers: {exc}") from exc
        if Xa.ndim != 2 or Xa.shape[0] < 1 or Xa.shape[1] < 1:
            raise ValueError(f"X must have shape (n, d), got {Xa.shape}")
        if not (np.issubdtype(Xa.dtype, np.number) and not np.iscomplexobj(Xa)):
            raise TypeError(f"X must be an array of real numbers, got dtype {Xa.dtype}")
        n, d = Xa.shape
        ya = np.asarray(y)
        if ya.ndim != 1 or ya.shape[0] != n:
            raise ValueError(
                f"y must have shape ({n},) (one cluster id per row of X), got {ya.shape}"
            )
        ids, inverse, counts = np.unique(ya, return_inverse=True, return_counts=True)
        k = int(ids.size)
        if k < 2:
            raise ValueError(f"y must contain at least two clusters, got {k}")
        ids_py = [v.item() if hasattr(v, "item") else v for v in ids]
        few = [ids_py[c] for c in range(k) if counts[c] < 2]
        if few:
            raise ValueError(
                f"y: clusters {few} have fewer than 2 samples; at least 2 per cluster are "
                "needed to estimate a covariance"
            )
        lm = labels_from_data(labels, ids_py)
        order = np.argsort(inverse.reshape(-1), kind="stable")
        bounds = np.concatenate([[0], np.cumsum(counts)])
        means = np.empty((k, d))
        covs = np.empty((k, d, d))
        for c in range(k):
            Xc = np.asarray(Xa[order[bounds[c] : bounds[c + 1]]], dtype=float)
            if not np.all(np.isfinite(Xc)):
                raise ValueError("X must contain only finite numbers")
            mu = Xc.mean(axis=0)
            Xc -= mu
            means[c] = mu
            np.matmul(Xc.T, Xc, out=covs[c])  # X^T X: one symmetric rank-n update
            covs[c] /= counts[c]
        if not isinstance(center, bool):
            raise TypeError(f"center must be a bool, got {center!r}")
        rho = counts / n
        if center:
            means -= rho @ means
        info = {
            "clusters": ids_py,
            "counts": counts.tolist(),
            "n_samples": int(n),
            "centered": center,
        }
        return cls.dense(means, covs, rho=rho, labels=lm, info=info)

    @classmethod
    def sparse(
        cls,
        sparsity: float,
        delta1: float,
        delta2: float,
        *,
        rho: Any = None,
        n_clusters: int | None = None,
        labels: str = "binary",
        means: str = "sparse",
    ) -> Mixture:
        """The correlated sparse binary mixture, eq. (12) of Section 3.1.

        ``x ~ N(y mu, Sigma)``, ``y = +-1``, with diagonal ``Sigma`` and sparse means: on a
        fraction ``sparsity`` of the directions the rescaled mean component is
        ``sqrt(d) mu_i ~ N(0, 1)`` and the variance is ``delta1``; on the others the mean
        component is zero and the variance ``delta2``.  So ``||mu||^2 = sparsity``.

        In the spectral representation: two atoms, weight ``sparsity`` with
        ``sigma = (delta1, delta1)`` and Gaussian antipodal mean components
        (``theta = [[1, -1], [-1, 1]]``), weight ``1 - sparsity`` with
        ``sigma = (delta2, delta2)`` and ``theta = 0`` (one atom when ``sparsity = 1``).

        Parameters
        ----------
        sparsity : float
            Fraction ``rho`` of directions carrying the means, in ``(0, 1]``.
        delta1, delta2 : float
            Variances on and off the support of the means (``> 0``).
        rho : array (2,), optional
            Cluster priors of ``y = +1`` and ``y = -1`` (default balanced).
        n_clusters, labels, means : optional
            What the model fixes, accepted so that every model is called with the same
            keywords: ``n_clusters`` must be 2 (or None), ``labels`` ``'binary'`` and
            ``means`` ``'sparse'`` (its own means, above).

        Raises
        ------
        ArgumentError
            Naming the argument: ``sparsity`` outside ``(0, 1]``, ``delta1`` / ``delta2``
            not > 0, or ``n_clusters`` / ``labels`` / ``means`` other than the model's.
        """
        from gaussmix.core.validation import check_real

        sp = check_real("sparsity", sparsity, low=0.0, high=1.0, low_open=True)
        d1 = check_real("delta1", delta1, low=0.0, low_open=True)
        d2 = check_real("delta2", delta2, low=0.0, low_open=True)
        if n_clusters is not None and check_param("n_clusters", n_clusters) != 2:
            raise ArgumentError(
                "n_clusters", f"must be 2 with the sparse model (labels +1/-1), got {n_clusters}"
            )
        if not (isinstance(labels, str) and labels == "binary"):
            raise ArgumentError(
                "labels", f"must be 'binary' with the sparse model (+1/-1), got {labels!r}"
            )
        if not (isinstance(means, str) and means == "sparse"):
            raise ArgumentError(
                "means",
                f"must be 'sparse' with the sparse model (its own means, on a fraction "
                f"sparsity of the directions), got {means!r}",
            )
        anti = mean_gram("antipodal", 2)
        if sp == 1.0:
            weights = np.ones(1)
            sigma = np.array([[d1, d1]])
            theta = anti[None]
        else:
            weights = np.array([sp, 1.0 - sp])
            sigma = np.array([[d1, d1], [d2, d2]])
            theta = np.stack([anti, np.zeros((2, 2))])
        return cls(
            rho=np.full(2, 0.5) if rho is None else rho,
            labels=LabelMap.binary(),
            covariance=SpectralLaw(weights, sigma, theta),
            kind="sparse",
            info={"means": "sparse", "sparsity": sp, "delta1": d1, "delta2": d2},
        )

    @property
    def support(self) -> np.ndarray:
        """Boolean mask (J,) of the atoms on the support of the means (``theta[j] != 0``)."""
        return self.covariance.support

    # ------------------------------------------------------------------ properties
    @property
    def n_clusters(self) -> int:
        """K."""
        return int(self.rho.size)

    @property
    def test_priors(self) -> np.ndarray:
        """The cluster priors of the test distribution: :attr:`rho_test`, or the training
        priors ``rho`` without a prior shift.  Every test-side observable of Theorem 2
        (test error, test loss, in the theory and in the simulations) weights its clusters
        by these."""
        return self.rho if self.rho_test is None else self.rho_test

    def with_test_priors(self, rho_test: Any) -> Mixture:
        """This mixture trained on its priors ``rho`` and tested under ``rho_test`` (a
        train / test prior shift; None removes the shift).  Everything else is shared.

        Parameters
        ----------
        rho_test : array (K,) or None
            Nonnegative test priors summing to 1 (to 1e-9).

        Raises
        ------
        ValueError
            Naming ``rho_test``: not of length K, negative or non-finite entries, a sum
            other than 1.
        """
        return dataclasses.replace(
            self,
            rho_test=None
            if rho_test is None
            else check_probability_vector("rho_test", rho_test, size=self.n_clusters, zeros=True),
            info=dict(self.info),
        )

    @property
    def n_atoms(self) -> int:
        """Number of atoms J of a spectral law (the d coordinate axes of a dense structure)."""
        return self.covariance.n_atoms

    @property
    def gram(self) -> np.ndarray:
        """Gram matrix of the means, ``Theta_kk' = mu_k . mu_k'``."""
        return self.covariance.gram

    @property
    def mean_variance(self) -> np.ndarray:
        """``tr(Sigma_k) / d`` for each cluster."""
        return self.covariance.mean_variance

    def permute(self, perm: Any) -> Mixture:
        """The same mixture with its clusters listed in the order ``perm``."""
        p = np.asarray(perm)
        if sorted(p.tolist()) != list(range(self.n_clusters)):
            raise ValueError(f"perm must be a permutation of 0..{self.n_clusters - 1}")
        return Mixture(
            rho=self.rho[p],
            labels=self.labels.permute(p),
            covariance=self.covariance.permute(p),
            kind=self.kind,
            info=dict(self.info),
            rho_test=None if self.rho_test is None else self.rho_test[p],
        )

    def describe(self) -> dict:
        """A JSON-friendly summary (for provenance in result tables)."""
        return {
            "kind": self.kind,
            "n_clusters": self.n_clusters,
            "label_dim": self.labels.dim,
            "labels": self.labels.kind,
            "rho": self.rho.tolist(),
            **({} if self.rho_test is None else {"rho_test": self.rho_test.tolist()}),
            "n_atoms": self.n_atoms,
            **self.info,
        }

    # ------------------------------------------------------------------ identity and files
    def fingerprint(self) -> str:
        """A stable, content-based hash (20 hex digits) of the model name, the priors, the
        label vectors and the structure's arrays (:meth:`CovarianceStructure.arrays`): equal
        for equal mixtures in every process, whatever file or constructor they came from.
        The sweep's checkpoint keys read it."""
        fp = self.__dict__.get("_fingerprint")
        if fp is None:
            h = hashlib.sha256(self.kind.encode())
            hash_arrays(h, (self.rho, self.labels.labels, *self.covariance.arrays().values()))
            if self.rho_test is not None:  # (no shift: the fingerprint of before the field)
                h.update(b"rho_test;")
                hash_arrays(h, (self.rho_test,))
            fp = h.hexdigest()[:20]
            object.__setattr__(self, "_fingerprint", fp)
        return fp

    def save(self, path: Any) -> None:
        """Write the mixture to an ``.npz`` file that :meth:`load` reads back exactly.

        The file holds ``version`` (:data:`MIXTURE_FILE_VERSION`), ``structure`` (a name
        of :data:`STRUCTURES`), ``kind`` (the model), ``rho`` (K,), ``labels`` (K, L),
        ``label_kind``, ``info`` (JSON text) and the structure's arrays: ``means`` (K, d)
        and ``covariances`` (K, d, d) for a dense mixture; ``weights`` (J,), ``sigma``
        (J, K), ``theta`` (J, K, K) and, for an empirical law, ``mu`` (J, K) for a spectral
        one.  Written uncompressed through a temporary file, then renamed: a failed write
        leaves nothing behind.

        Parameters
        ----------
        path : str or path-like
            The file (numpy adds ``.npz`` if the name lacks it).
        """
        from gaussmix.core.jsonio import dumps

        target = str(path) if str(path).endswith(".npz") else f"{path}.npz"
        content: dict[str, Any] = {
            "version": np.int64(MIXTURE_FILE_VERSION),
            "structure": np.str_(self.covariance.name),
            "kind": np.str_(self.kind),
            "rho": self.rho,
            "labels": self.labels.labels,
            "label_kind": np.str_(self.labels.kind),
            "info": np.str_(dumps(self.info).decode()),
        }
        if self.rho_test is not None:
            content["rho_test"] = self.rho_test
        content.update({k: v for k, v in self.covariance.arrays().items() if v is not None})
        _write_atomically(target, content)

    @classmethod
    def load(cls, path: Any) -> Mixture:
        """Read a mixture written by :meth:`save` (the same arrays, to the bit).

        Raises
        ------
        MixtureFileError
            (a ``ValueError``) One line naming the file and the problem: not a readable
            ``.npz`` file, an unknown format version or structure, a missing or unknown
            entry, arrays of the wrong shape or with mismatched K or d, non-finite values, a
            covariance that is not symmetric positive semi-definite, priors that are not a
            probability vector.
        """
        return load_mixture(path)


class MixtureFileError(ValueError):
    """A mixture file cannot be read: the one-line message names the file and the problem."""

    #: the command line prints the message as it is (it names entries of the file, not options)
    cli_verbatim = True


#: the format version of mixture files (:meth:`Mixture.save`)
MIXTURE_FILE_VERSION = 1
#: the entries of every mixture file besides the structure's arrays
_FILE_KEYS = ("version", "structure", "kind", "rho", "labels", "label_kind", "info")
#: entries written only when set: the test priors of a prior shift
_OPTIONAL_FILE_KEYS = ("rho_test",)


def _write_atomically(target: str, content: dict[str, Any]) -> None:
    """``numpy.savez`` to a temporary file next to ``target``, renamed over it."""
    import os
    import tempfile

    folder = os.path.dirname(os.path.abspath(target))
    fd, tmp = tempfile.mkstemp(prefix=".gaussmix-", suffix=".npz", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, **content)
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _read_npz(path: Any) -> dict[str, np.ndarray]:
    """Every entry of a mixture file (:func:`gaussmix.core.npzfile.read_npz`, no pickles);
    ValueError for an unreadable file."""
    from gaussmix.core.npzfile import read_npz

    return read_npz(path, written_by="Mixture.save")


def _scalar(data: Mapping[str, np.ndarray], key: str, kind: type) -> Any:
    v = data[key]
    if v.shape != () or not isinstance(v.item(), kind):
        want = "an integer" if kind is int else "a string"
        raise ValueError(f"entry {key!r} must be {want}, got {v!r}")
    return v.item()


def _mixture_from_file(data: Mapping[str, np.ndarray]) -> Mixture:
    """The mixture of the entries of a mixture file (every check of the constructors)."""
    from gaussmix.core.jsonio import loads

    missing = [k for k in _FILE_KEYS if k not in data]
    if missing:
        raise ValueError(f"missing entries {missing} (is it a file of Mixture.save?)")
    version = _scalar(data, "version", int)
    if version != MIXTURE_FILE_VERSION:
        raise ValueError(
            f"format version {version} is not supported (this gaussmix reads version "
            f"{MIXTURE_FILE_VERSION})"
        )
    structure = STRUCTURES.get(_scalar(data, "structure", str))
    declared = [f for f in dataclasses.fields(structure) if f.init]
    fields = [f.name for f in declared]
    extra = sorted(set(data) - set(_FILE_KEYS) - set(_OPTIONAL_FILE_KEYS) - set(fields))
    if extra:
        raise ValueError(f"unknown entries {extra} for a {structure.name!r} structure")
    arrays = {f: data[f] for f in fields if f in data}
    required = [f.name for f in declared if f.default is not None]
    absent = [f for f in required if f not in arrays]
    if absent:
        raise ValueError(f"missing entries {absent} of a {structure.name!r} structure")
    cov = structure.from_arrays(arrays)
    info = loads(_scalar(data, "info", str))
    if not isinstance(info, dict):
        raise ValueError(f"entry 'info' must hold a JSON object, got {info!r}")
    k = cov.n_clusters
    for key in ("rho", "labels"):
        if data[key].ndim not in (1, 2) or data[key].shape[0] != k:
            raise ValueError(
                f"{key} has shape {data[key].shape} but the {structure.name} structure has "
                f"K = {k} clusters"
            )
    labels = LabelMap(data["labels"], kind=_scalar(data, "label_kind", str))
    rho = data["rho"]
    mix = Mixture(
        rho=rho,
        labels=labels,
        covariance=cov,
        kind=_scalar(data, "kind", str),
        info=info,
        rho_test=data["rho_test"] if "rho_test" in data else None,
    )
    # the stored normalised priors exactly (dividing by their sum again may move a last bit)
    object.__setattr__(mix, "rho", np.array(rho, dtype=float))
    return mix


def load_mixture(path: Any) -> Mixture:
    """Read a mixture file written by :meth:`Mixture.save` (see :meth:`Mixture.load`).

    Parameters
    ----------
    path : str or os.PathLike
        The ``.npz`` file.

    Returns
    -------
    Mixture

    Raises
    ------
    MixtureFileError
        The file is not a mixture file of a known version, or its contents are not valid
        (one line naming the file and the problem).
    """
    import os

    try:
        name = os.fspath(path)
    except TypeError:
        raise TypeError(f"path must be a file name, got {path!r}") from None
    try:
        return _mixture_from_file(_read_npz(name))
    except (ValueError, TypeError) as exc:
        msg = " ".join(str(exc).split())
        raise MixtureFileError(f"mixture file {str(name)!r}: {msg}") from None


@dataclass(frozen=True)
class MixtureModel:
    """The declaration of a mixture model (a way of building a :class:`Mixture`).

    Attributes
    ----------
    name : str
        The model's name (``Mixture.kind``; ``--model`` on the command line).
    build : callable
        The constructor (a :class:`Mixture` class method).
    binary : bool
        Whether the model is defined for two clusters with ``+-1`` labels only.
    parametric : bool
        Whether it is built from a few numbers (the command line and grid files offer it)
        rather than from arrays.
    description : str
    parameters : tuple of str
        The parameters of ``build`` that belong to this model alone (``delta``;
        ``fractions``, ``deltas``; ...): the options the command line and grid files offer
        with it, and the entries of a point's ``params`` that describe its covariances.
    required : tuple of str
        Those of ``parameters`` without a default.
    pair_means : str
        The family of means chosen automatically for two clusters (for more: ``'simplex'``).
    own_means : str or None
        For a model whose means are its own (not a family of :func:`mean_gram`), the name
        shown for them.
    """

    name: str
    build: Callable[..., Mixture]
    binary: bool = False
    parametric: bool = True
    description: str = ""
    parameters: tuple[str, ...] = ()
    required: tuple[str, ...] = ()
    pair_means: str = "simplex"
    own_means: str | None = None

    def check_parameters(self, given: Mapping[str, Any]) -> None:
        """Refuse the parameters of another model and a missing required one.

        Parameters
        ----------
        given : mapping of str to value
            Model parameters (of any model of :data:`MIXTURE_MODELS`) by name; None is
            not given.

        Raises
        ------
        ArgumentError
            Naming the parameter: one of another model given, or one of ``required``
            missing.
        """
        takes = ", ".join(self.parameters) or "none"
        for other in MIXTURE_MODELS:
            for name in other.parameters:
                if name not in self.parameters and given.get(name) is not None:
                    raise ArgumentError(
                        name,
                        f"is a parameter of model={other.name!r}, not of "
                        f"model={self.name!r} (which takes {takes})",
                    )
        for name in self.required:
            if given.get(name) is None:
                raise ArgumentError(
                    name, f"is required with model={self.name!r} (which takes {takes})"
                )


#: every mixture model, by name
MIXTURE_MODELS: Registry[MixtureModel] = Registry("mixture model", "model")
for _model in (
    MixtureModel(
        "isotropic",
        Mixture.isotropic,
        description="isotropic clusters Sigma_c = Delta_c I with a Gram matrix of the means",
        parameters=("delta",),
    ),
    MixtureModel(
        "block",
        Mixture.block,
        description="blocks of directions with their own variances, shared eigenvectors",
        parameters=("fractions", "deltas"),
        required=("fractions", "deltas"),
        pair_means="antipodal",
    ),
    MixtureModel(
        "sparse",
        Mixture.sparse,
        binary=True,
        description="the correlated sparse binary mixture of Section 3.1, eq. (12)",
        parameters=("sparsity", "delta1", "delta2"),
        required=("delta1", "delta2"),
        own_means="sparse",
    ),
    MixtureModel(
        "spectral",
        Mixture.spectral,
        parametric=False,
        description="an empirical joint law of covariance eigenvalues and mean components",
    ),
    MixtureModel(
        "dense",
        Mixture.dense,
        parametric=False,
        description="full covariances and means at a finite d, e.g. fitted to a data set "
        "(Mixture.from_data)",
    ),
):
    MIXTURE_MODELS.register(_model)


def parametric_model(name: Any) -> MixtureModel:
    """The declaration of a model built from a few numbers (:attr:`MixtureModel.parametric`:
    ``'isotropic'``, ``'block'``, ``'sparse'``).

    Raises
    ------
    ArgumentError
        Naming ``model``: another name, or a model built from arrays.
    """
    model = MIXTURE_MODELS.get(name) if isinstance(name, str) and name in MIXTURE_MODELS else None
    if model is None or not model.parametric:
        allowed = ", ".join(repr(m.name) for m in MIXTURE_MODELS if m.parametric)
        raise ArgumentError("model", f"must be one of {allowed}; got {name!r}")
    return model
