"""Real data against Gaussian-mixture theory (Section 3.3 and Appendix E of the paper).

One protocol, used everywhere (the docs, "Real data"):

1. the data set is loaded under :func:`gaussmix.data.load_dataset`'s protocol — pixels / 255
   as float64, flattened (``d = 784``), centred by the mean of the 60 000 training inputs
   (the same vector subtracted from the test split), nothing else — with the binary labels of
   a task (``even-odd``, ``clothes-accessories``, ``low-high``);
2. optionally a feature map, fitted on the training split only and applied to both splits
   (random features ``erf(F x / sqrt(d))``, ``p = gamma d``, or a trained network's hidden
   layer); then ``d`` is the feature dimension;
3. a Gaussian mixture is fitted (:meth:`gaussmix.Mixture.from_data`, covariances with
   1/n_c normalisation) on the training split only (``fit_on='train'``, the default: the
   held-out split is never seen), or on the inputs of both splits (``fit_on='all'``, the
   paper's protocol: the population both splits come from, which the paper's figures use):
   ``'p2'`` one cluster per binary class, ``'pk'`` one cluster per original class with the
   task's binary label map;
4. three learning curves of the same estimator — the loss summed over the samples plus
   ``lam ||w||^2 / 2``, acting on ``x / sqrt(d)`` with an unpenalised intercept:

   * **real**: ``n = round(alpha d)`` images drawn without replacement from the training
     split, the test error measured on the whole test split, averaged over subsamples;
   * **synthetic**: the same ERM on ``n`` samples of the fitted mixture, the test error exact
     on the mixture (:func:`gaussmix.simulate.simulate`), averaged over seeds;
   * **theory**: the fixed point of Theorem 1 for the fitted mixture and Theorem 2.

   With fixed cluster counts (``counts='fixed'``) the three rows train on one composition:
   the counts ``n_c`` of :func:`training_counts` (``round(rho_c n)``, largest remainder),
   drawn in every cluster of the training split (real), in the mixture's samples
   (synthetic), and the theory's training priors are exactly ``n_c / n``; the test error of
   all three is weighted by the composition of the test split (a train / test prior shift,
   :meth:`gaussmix.Mixture.with_test_priors`), so that rounding the counts at small ``n``
   is not read as a Gaussian-equivalence gap.  The table says which (``train_priors``,
   ``test_priors``).

Error bars are one standard error over subsamples (real) or seeds (synthetic).
"""

from __future__ import annotations

import dataclasses
import os
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from gaussmix.core.docstrings import shared_doc
from gaussmix.core.exceptions import ArgumentError, SingularCovarianceWarning
from gaussmix.core.progress import progress_bar
from gaussmix.core.registry import Registry
from gaussmix.core.renames import renamed_keywords
from gaussmix.core.tables import CurveTable
from gaussmix.core.validation import check_choice, check_int, check_param, check_param_values
from gaussmix.data import Dataset, featurize, load_dataset, subsample_indices
from gaussmix.experiments.curves import lambda_sweep, learning_curve
from gaussmix.simulate import fit_erm, largest_remainder, predict_class, simulate
from gaussmix.theory.api.api import solve
from gaussmix.theory.channel.losses import get_loss
from gaussmix.theory.model.labels import LabelMap
from gaussmix.theory.model.mixture import Mixture

__all__ = [
    "CLUSTERINGS",
    "SOURCES",
    "RealDataProblem",
    "fit_problem",
    "prepare_realdata",
    "real_curve",
    "synthetic_curve",
    "theory_curve",
    "realdata_curve",
    "realdata_lambda_curve",
]

#: the three curves of a real-data study, in the order of the table
SOURCES = ("theory", "synthetic", "real")

#: columns of every curve (mean and one standard error; theory has se 0)
COLUMNS = (
    "alpha",
    "lam",
    "source",
    "n",
    "test_error",
    "test_error_se",
    "train_error",
    "train_error_se",
    "train_loss",
    "train_loss_se",
    "converged",
)


@dataclass(frozen=True)
class Clustering:
    """How the clusters of the fitted mixture are formed from a data set's classes.

    Attributes
    ----------
    name : str
    description : str
    """

    name: str
    description: str

    def clusters(self, ds: Dataset) -> tuple[np.ndarray, np.ndarray, LabelMap]:
        """Cluster ids of the training and test inputs and the label map of the clusters."""
        raise NotImplementedError


#: the mixtures a data set can be fitted with
CLUSTERINGS: Registry[Clustering] = Registry("clustering")


class _BinaryClasses(Clustering):
    def clusters(self, ds: Dataset) -> tuple[np.ndarray, np.ndarray, LabelMap]:
        if ds.task is not None and ds.task.is_onehot:
            raise ValueError(
                f"clustering 'p2' needs a binary task; {ds.task.name!r} is one-hot "
                "(one cluster per class): use clustering 'pk'"
            )
        # cluster 0: label +1, cluster 1: label -1 (LabelMap.binary)
        return (
            np.where(ds.y_train > 0, 0, 1),
            np.where(ds.y_test > 0, 0, 1),
            LabelMap.binary(),
        )


class _OriginalClasses(Clustering):
    def clusters(self, ds: Dataset) -> tuple[np.ndarray, np.ndarray, LabelMap]:
        classes = np.unique(np.concatenate([ds.classes_train, ds.classes_test]))
        index = {int(c): i for i, c in enumerate(classes)}
        to_cluster = np.vectorize(index.__getitem__, otypes=[np.int64])
        if ds.task is not None and ds.task.is_onehot:
            onehot = LabelMap.onehot(classes.size)
            return to_cluster(ds.classes_train), to_cluster(ds.classes_test), onehot
        label_of = np.zeros((classes.size, 1))
        for c, i in index.items():
            label_of[i, 0] = ds.y_train[ds.classes_train == c][0]
        return to_cluster(ds.classes_train), to_cluster(ds.classes_test), LabelMap(label_of)


CLUSTERINGS.register(
    _BinaryClasses("p2", "one cluster per binary class (the P2 mixture)"), name="p2"
)
CLUSTERINGS.register(
    _OriginalClasses(
        "pk", "one cluster per original class, labelled by the task (the P_K mixture, e.g. P10)"
    ),
    name="pk",
)


@dataclass(frozen=True, eq=False)
class RealDataProblem:
    """A data set under the protocol, its feature map, and the mixture fitted to it.

    Attributes
    ----------
    dataset : Dataset
        The data under the protocol (raw pixels, centred), with the task's labels.
    x_train, x_test : ndarray (n, d)
        The inputs the estimator sees (after the feature map, if any).
    cluster_train, cluster_test : ndarray (n,)
        Cluster id of every input (:data:`CLUSTERINGS`).
    labels : LabelMap
        Label of every cluster.
    mixture : Mixture
        Fitted on the training split (``info['fit_on'] == 'train'``) or on the inputs of
        both splits (``'all'``, the paper's protocol).
    features : str
        Description of the feature map (``'pixels'`` without one).
    info : dict
        Provenance (data source, clustering, ``fit_on``, timings).
    """

    dataset: Dataset
    x_train: np.ndarray
    x_test: np.ndarray
    cluster_train: np.ndarray
    cluster_test: np.ndarray
    labels: LabelMap
    mixture: Mixture
    features: str = "pixels"
    info: dict = field(default_factory=dict)

    @property
    def d(self) -> int:
        """Dimension of the inputs the estimator sees."""
        return int(self.x_train.shape[1])

    @property
    def fit_on(self) -> str:
        """Which inputs the mixture was fitted on: ``'train'`` or ``'all'``."""
        return str(self.info.get("fit_on", "all"))

    @property
    def test_composition(self) -> np.ndarray:
        """The cluster fractions of the test split (K,): the priors under which the real
        test error is measured."""
        k = np.bincount(self.cluster_test, minlength=self.mixture.n_clusters)
        return k / k.sum()


#: where the mixture of a study is fitted: the training split only (the default: the held-out
#: split is never seen) or both splits (the paper's protocol, Section 3.3)
FIT_ON = ("train", "all")


@renamed_keywords(clusters="clustering")
def prepare_realdata(
    dataset: str | Dataset,
    task: str | None = None,
    *,
    clustering: str | None = None,
    feature_map: Any = None,
    data_dir: str | os.PathLike[str] | None = None,
    download: bool = False,
    fit_on: str = "train",
) -> RealDataProblem:
    """Load a data set, apply a feature map and fit the Gaussian mixture (steps 1–3 of the
    module's protocol).

    Parameters
    ----------
    dataset : str or Dataset
        A name of :data:`gaussmix.data.DATASETS` or a loaded data set (with a task).
    task : str, optional
        The binary task (required with a name).
    clustering : {'p2', 'pk'}, optional
        The mixture: one cluster per binary class, or one per original class (default:
        ``'p2'`` for a binary task, ``'pk'`` for a one-hot task, whose labels are one-hot).
    feature_map : object with ``fit(X, y)`` and ``transform(X)``, optional
        Fitted on the training split only and applied to both
        (:func:`gaussmix.data.featurize`), e.g. :class:`gaussmix.data.RandomFeatures` or a
        stage of :class:`gaussmix.data.NetworkFeatures`.
    data_dir, download
        As in :func:`gaussmix.data.load_dataset`.
    fit_on : {'train', 'all'}
        Fit the mixture on the training split only (default), or on both splits (the
        paper's protocol, which the paper's figures use).
    """
    check_choice("fit_on", fit_on, FIT_ON)
    if clustering is not None:
        CLUSTERINGS.get(clustering)  # an unknown name is refused before anything is loaded
    t0 = time.perf_counter()
    if isinstance(dataset, Dataset):
        ds = dataset
    else:
        if task is None:
            raise ValueError("task is required when dataset is given by name")
        ds = load_dataset(dataset, task, data_dir=data_dir, download=download)
    if ds.y_train is None:
        raise ValueError(f"the data set {ds.name!r} has no binary task; load it with a task")
    t_load = time.perf_counter() - t0
    if clustering is None:
        clustering = "pk" if ds.task is not None and ds.task.is_onehot else "p2"
    rule = CLUSTERINGS.get(clustering)
    features = "pixels"
    if feature_map is not None:
        ds = featurize(ds, feature_map)
        features = _describe(feature_map)
    c_train, c_test, labels = rule.clusters(ds)
    info = {
        "dataset": ds.name,
        "task": ds.task.name if ds.task is not None else None,
        "source": ds.source,
        "clustering": rule.name,
        "features": features,
        "load_seconds": t_load,
    }
    return fit_problem(ds, c_train, c_test, labels, features=features, info=info, fit_on=fit_on)


def fit_problem(
    ds: Dataset,
    cluster_train: np.ndarray,
    cluster_test: np.ndarray,
    labels: LabelMap,
    *,
    features: str = "pixels",
    info: dict | None = None,
    cluster_names: Sequence[Any] | None = None,
    fit_on: str = "train",
) -> RealDataProblem:
    """Step 3 of the module's protocol: the Gaussian mixture fitted on the training split
    (``fit_on='train'``) or on the inputs of both splits (``'all'``, the paper's protocol)
    (:meth:`gaussmix.Mixture.from_data`), one cluster per id of ``cluster_train`` /
    ``cluster_test`` (integers ``0 .. K - 1``, the rows of ``labels``).

    A cluster with no more samples than dimensions has a singular fitted covariance: said
    once (:class:`~gaussmix.core.exceptions.SingularCovarianceWarning`, with the counts:
    the theory then describes the fitted mixture, not the data) and recorded in
    ``info['singular_clusters']``.

    Parameters
    ----------
    ds : Dataset
        The data under the protocol (its ``x_train``, ``x_test`` are the inputs).
    cluster_train, cluster_test : ndarray (n,)
        Cluster id of every input.
    labels : LabelMap
        Label of every cluster.
    features : str
        Description of the feature map.
    info : dict, optional
        Provenance, completed with ``fit_seconds`` and ``singular_clusters``.
    cluster_names : sequence, optional
        The name of every cluster in messages (default: its index).
    fit_on : {'train', 'all'}
        The inputs the mixture is fitted on: the training split only (default: the
        held-out split is never seen), or both splits (the paper's protocol).
    """
    fit_on = check_choice("fit_on", fit_on, FIT_ON)
    t1 = time.perf_counter()
    if fit_on == "train":
        k = labels.n_clusters
        have = np.bincount(cluster_train, minlength=k)
        if np.any(have == 0):
            c = int(np.flatnonzero(have == 0)[0])
            name = c if cluster_names is None else list(cluster_names)[c]
            raise ArgumentError(
                "fit_on",
                f"'train' needs every cluster in the training split; cluster {name!r} has "
                "no training row (use fit_on='all', or another split)",
            )
        mixture = Mixture.from_data(ds.x_train, cluster_train, labels=labels)
    else:
        mixture = Mixture.from_data(
            np.concatenate([ds.x_train, ds.x_test]),
            np.concatenate([cluster_train, cluster_test]),
            labels=labels,
        )
    info = {**(info or {}), "fit_on": fit_on, "fit_seconds": time.perf_counter() - t1}
    names = list(range(mixture.n_clusters)) if cluster_names is None else list(cluster_names)
    d = ds.x_train.shape[1]
    counts = mixture.info["counts"]
    singular = [(names[k], int(n)) for k, n in enumerate(counts) if n <= d]
    info["singular_clusters"] = [{"cluster": c, "count": n} for c, n in singular]
    if singular:
        many = len(singular) > 1
        warnings.warn(
            f"{len(singular)} cluster{'s' if many else ''} of the fitted mixture "
            f"{'have' if many else 'has'} no more samples than the d = {d} dimensions ("
            + ", ".join(f"{c!r}: {n}" for c, n in singular)
            + f"), so {'their' if many else 'its'} covariance is singular: the theory "
            "describes the fitted Gaussian mixture, not the data",
            SingularCovarianceWarning,
            stacklevel=3,
        )
    return RealDataProblem(
        dataset=ds,
        x_train=ds.x_train,
        x_test=ds.x_test,
        cluster_train=cluster_train,
        cluster_test=cluster_test,
        labels=labels,
        mixture=mixture,
        features=features,
        info=info,
    )


def _describe(feature_map: Any) -> str:
    """A short description of a feature map for titles and provenance."""
    p = getattr(feature_map, "p", None)
    d = getattr(feature_map, "d_", None)
    name = type(feature_map).__name__
    if p is not None and d:
        return f"{name}(p={p}, gamma={p / d:g})"
    return name


def curve_points(
    lam: float | Sequence[float], alpha: float | Sequence[float]
) -> tuple[list[tuple[float, float]], str]:
    """The (lam, alpha) points of a curve over alpha (``lam`` a number) or over lam."""
    if np.ndim(lam) == 0:
        lam_v = check_param("lam", lam)
        alphas = check_param_values("alpha", alpha, name="alphas").tolist()
        return [(lam_v, a) for a in alphas], "alpha"
    alpha_v = check_param("alpha", alpha)
    lams = check_param_values("lam", lam, name="lams").tolist()
    return [(x, alpha_v) for x in lams], "lam"


def sample_size(d: int, alpha: float) -> int:
    """``n = round(alpha d)``, half up: the training size of every row of a study (real,
    synthetic and theory; :func:`gaussmix.data.subsample_indices` and
    :func:`gaussmix.simulate.simulate` round the same way)."""
    return int(np.floor(alpha * d + 0.5))


def training_counts(problem: RealDataProblem, alpha: float) -> np.ndarray:
    """The cluster counts ``n_c`` of a training sample with fixed counts at ``alpha``:
    ``round(rho_c n)`` by largest remainder over the fitted mixture's priors, ``n =``
    :func:`sample_size`.  The real subsamples draw exactly these in every cluster, and the
    theory and the mixture's samples train on priors ``n_c / n``
    (:func:`training_mixture`).

    Raises
    ------
    ArgumentError
        (``alphas``) when ``n < 1``.
    """
    n = sample_size(problem.d, alpha)
    if n < 1:
        raise ArgumentError(
            "alphas", f"alpha = {alpha:g} gives n = round(alpha d) = {n} training samples"
        )
    return largest_remainder(problem.mixture.rho, n)


def training_mixture(problem: RealDataProblem, alpha: float) -> Mixture:
    """The fitted mixture with the composition actually trained on at ``alpha`` (fixed
    counts): training priors ``n_c / n`` (:func:`training_counts`) and test priors the
    composition of the test split (:attr:`RealDataProblem.test_composition`), under which
    the real test error is measured: a train / test prior shift
    (:meth:`gaussmix.Mixture.with_test_priors`).

    Raises
    ------
    ArgumentError
        (``alphas``) when a cluster gets no training sample at this ``n``.
    """
    nc = training_counts(problem, alpha)
    n = int(nc.sum())
    if np.any(nc == 0):
        raise ArgumentError(
            "alphas",
            f"alpha = {alpha:g} gives n = {n} training samples, and {int(np.sum(nc == 0))} of "
            f"the {nc.size} clusters get none with fixed counts: choose a larger alpha "
            f"(n >= {nc.size})",
        )
    mix = dataclasses.replace(problem.mixture, rho=nc / n, info=dict(problem.mixture.info))
    if not np.array_equal(largest_remainder(mix.rho, n), nc):  # (the samples' counts)
        raise RuntimeError(f"the priors {mix.rho} do not give back the counts {nc} at n = {n}")
    return mix.with_test_priors(problem.test_composition)


def _stratified_indices(problem: RealDataProblem, alpha: float, seed: int) -> np.ndarray:
    """``n = round(alpha d)`` training rows with the cluster counts of
    :func:`training_counts`, drawn without replacement in every cluster."""
    nc = training_counts(problem, alpha)
    rng = np.random.default_rng(seed)
    idx = []
    for c, k in enumerate(nc):
        rows = np.flatnonzero(problem.cluster_train == c)
        if k > rows.size:
            raise ValueError(
                f"alpha = {alpha:g} asks for {k} training rows of cluster {c} with fixed "
                f"counts; the training split has {rows.size}: choose a smaller alpha"
            )
        idx.append(rng.choice(rows, size=k, replace=False))
    return rng.permutation(np.concatenate(idx))


def _real_point(
    problem: RealDataProblem,
    loss: str,
    lam: float,
    alpha: float,
    seed: int,
    counts: str | None = None,
) -> tuple[int, tuple[float, float, float, bool]]:
    """ERM on one subsample of the training split; errors on the whole test split."""
    labels, d = problem.labels, problem.d
    if counts == "fixed":
        idx = _stratified_indices(problem, alpha, seed)
    else:
        idx = subsample_indices(problem.x_train.shape[0], d, alpha, seed=seed)
    X, cid = problem.x_train[idx], problem.cluster_train[idx]
    W, b, info = fit_erm(X, labels, cid, loss, lam=lam, return_info=True)
    h_train = X @ W.T / np.sqrt(d) + b
    h_test = problem.x_test @ W.T / np.sqrt(d) + b
    true_test = labels.cluster_class[problem.cluster_test]
    return idx.size, (
        float(np.mean(predict_class(labels, h_test) != true_test)),
        float(np.mean(predict_class(labels, h_train) != labels.cluster_class[cid])),
        float(np.mean(get_loss(loss).value(labels.labels[cid], h_train))),
        bool(info["converged"]),
    )


def _aggregate(lam: float, alpha: float, source: str, n: int, per: list[tuple]) -> dict:
    arr = np.array([p[:3] for p in per], dtype=float)
    m = arr.mean(axis=0)
    se = arr.std(axis=0, ddof=1) / np.sqrt(len(per)) if len(per) > 1 else np.full(3, np.nan)
    return {
        "alpha": alpha,
        "lam": lam,
        "source": source,
        "n": int(n),
        "test_error": m[0],
        "test_error_se": se[0],
        "train_error": m[1],
        "train_error_se": se[1],
        "train_loss": m[2],
        "train_loss_se": se[2],
        "converged": all(p[3] for p in per),
    }


#: docstring blocks of the curve functions (:func:`gaussmix.core.docstrings.shared_doc`)
_DOC = shared_doc(
    problem="""
        problem : RealDataProblem
            The data under the protocol and its fitted mixture (:func:`prepare_realdata`).
        loss : str
            The loss of the ERM (a name of :data:`gaussmix.LOSSES`).
    """,
    points="""
        lam : float or sequence of float
            The penalty strength, or several (a curve over lambda at one alpha).
        alphas : float or sequence of float
            The sample complexities, or one (with several ``lam``).
    """,
    sources="""
        subsamples : int
            Training subsamples per point of the real curve.
        seeds : int
            Samples of the fitted mixture per point of the synthetic curve.
        seed : int
            Root seed of the subsamples and the samples.
        sources : sequence of {'theory', 'synthetic', 'real'}
            The curves computed.
        counts : {'fixed', 'random'} or None
            Cluster counts of the training samples: ``'fixed'``, ``round(rho_c n)``
            (largest remainder) in both the real subsamples (drawn in every cluster) and
            the samples of the mixture; ``'random'``, real subsamples drawn from the whole
            training split and multinomial counts in the mixture's samples; None (the
            registered tasks' protocol): real drawn at random, the mixture's fixed.
            Random counts raise the error at small n (docs/design.md pitfall 8).
        progress : bool
            Show a progress bar.
    """,
)


@_DOC
def real_curve(
    problem: RealDataProblem,
    *,
    loss: str,
    lam: float | Sequence[float],
    alphas: float | Sequence[float] | np.ndarray,
    subsamples: int = 5,
    seed: int = 0,
    progress: bool = False,
    counts: str | None = None,
) -> CurveTable:
    """ERM on ``n = round(alpha d)`` training images (without replacement), tested on the
    whole test split; mean and standard error over ``subsamples`` draws (seeds ``seed,
    seed + 1, ...``).  A curve over ``alphas`` at one ``lam``, or over ``lam`` (a sequence)
    at one alpha (``alphas`` a number).

    Parameters
    ----------
    %(problem)s
    %(points)s
    subsamples : int
        Training subsamples per point.
    seed : int
        Seed of the first subsample.
    progress : bool
        Show a progress bar.
    counts : {'fixed', 'random'} or None
        Cluster counts of the subsamples: None or ``'random'`` draws from the whole
        training split, ``'fixed'`` in every cluster (:func:`realdata_curve`).
    """
    points, _ = curve_points(lam, alphas)
    subsamples = check_int("subsamples", subsamples, low=1)
    if counts is not None:
        check_choice("counts", counts, ("fixed", "random"))
    rows = []
    with progress_bar(total=len(points) * subsamples, desc="real", enabled=progress) as bar:
        for lam_v, alpha in points:
            per = []
            for s in range(subsamples):
                n, values = _real_point(problem, loss, lam_v, alpha, seed + s, counts)
                per.append(values)
                bar.update(1)
            rows.append(_aggregate(lam_v, alpha, "real", n, per))
    # no result object per point: the subsamples are aggregated in the row
    return CurveTable.from_rows(pd.DataFrame(rows, columns=list(COLUMNS)), [None] * len(rows))


@_DOC
def synthetic_curve(
    problem: RealDataProblem,
    *,
    loss: str,
    lam: float | Sequence[float],
    alphas: float | Sequence[float] | np.ndarray,
    seeds: int = 5,
    seed: int = 0,
    progress: bool = False,
    counts: str | None = None,
) -> CurveTable:
    """The same ERM on ``n = round(alpha d)`` samples of the fitted mixture; the test error
    is exact on the mixture (:func:`gaussmix.simulate.simulate`).  Points as in
    :func:`real_curve`.

    Parameters
    ----------
    %(problem)s
    %(points)s
    seeds : int
        Samples of the fitted mixture per point.
    seed : int
        Root seed of the samples.
    progress : bool
        Show a progress bar.
    counts : {'fixed', 'random'} or None
        Cluster counts of the samples (:func:`gaussmix.simulate.simulate`; None: fixed).
    """
    points, _ = curve_points(lam, alphas)
    seeds = check_param("seeds", seeds)
    rows, sims = [], []
    with progress_bar(total=len(points), desc="synthetic", enabled=progress) as bar:
        for lam_v, alpha in points:
            sim = simulate(
                training_mixture(problem, alpha) if counts == "fixed" else problem.mixture,
                loss=loss,
                lam=lam_v,
                alpha=alpha,
                d=problem.d,
                seeds=seeds,
                seed=seed,
                counts=counts or "fixed",
            )
            row = {
                "alpha": alpha,
                "lam": lam_v,
                "source": "synthetic",
                "n": int(sim.params["n"]),
            }
            for key in ("test_error", "train_error", "train_loss"):
                row[key] = float(sim.mean[key])
                row[f"{key}_se"] = float(sim.se[key])
            row["converged"] = bool(sim.success)
            rows.append(row)
            sims.append(sim)
            bar.update(1)
    return CurveTable.from_rows(pd.DataFrame(rows, columns=list(COLUMNS)), sims)


@_DOC
def theory_curve(
    problem: RealDataProblem,
    *,
    loss: str,
    lam: float | Sequence[float],
    alphas: float | Sequence[float] | np.ndarray,
    progress: bool = False,
    options: Any = None,
    counts: str | None = None,
) -> CurveTable:
    """Theorems 1–2 for the fitted mixture: :func:`gaussmix.learning_curve` over alpha
    (warm-started), or :func:`gaussmix.lambda_sweep` over lam (annealed).

    With ``counts='fixed'`` each point is the theory of the composition the other rows
    train on (:func:`training_mixture`: training priors ``n_c / n``, test priors those of
    the test split); over alpha each point is then its own mixture, solved warm-started from
    the one before (:func:`gaussmix.solve`).

    Parameters
    ----------
    %(problem)s
    %(points)s
    progress : bool
        Show a progress bar.
    options : SolverOptions, optional
        Options of every fixed point (default: the solver's).
    counts : {'fixed', 'random'} or None
        ``'fixed'``: the composition actually trained on (above); otherwise the fitted
        mixture's priors.
    """
    points, x = curve_points(lam, alphas)
    kw = {} if options is None else {"options": options}
    if counts == "fixed" and x == "alpha":
        df = _composition_curve(problem, loss, points, progress, options)
    elif counts == "fixed":
        df = lambda_sweep(
            training_mixture(problem, points[0][1]),
            loss,
            [lv for lv, _ in points],
            alpha=points[0][1],
            progress=progress,
            **kw,
        )
    elif x == "alpha":
        df = learning_curve(
            problem.mixture,
            loss,
            [a for _, a in points],
            lam=points[0][0],
            progress=progress,
            **kw,
        )
    else:
        df = lambda_sweep(
            problem.mixture,
            loss,
            [lv for lv, _ in points],
            alpha=points[0][1],
            progress=progress,
            **kw,
        )
    out = pd.DataFrame(
        {
            "alpha": df["alpha"].astype(float),
            "lam": df["lam"].astype(float),
            "source": "theory",
            "n": [sample_size(problem.d, a) for a in df["alpha"].to_numpy(dtype=float)],
            "test_error": df["test_error"],
            "test_error_se": 0.0,
            "train_error": df["train_error"],
            "train_error_se": 0.0,
            "train_loss": df["train_loss"],
            "train_loss_se": 0.0,
            "converged": df["converged"].astype(bool),
        }
    )
    return CurveTable.from_rows(out[list(COLUMNS)], df.points)


def _composition_curve(
    problem: RealDataProblem,
    loss: str,
    points: list[tuple[float, float]],
    progress: bool,
    options: Any,
) -> CurveTable:
    """The theory over alpha with each point's own training composition
    (:func:`training_mixture`): one fixed point per alpha, each warm-started from the
    previous one (the order parameters move little when ``n_c / n`` does); a table with
    the columns of :func:`gaussmix.learning_curve` that :func:`theory_curve` reads and
    ``.points``."""
    rows, results, prev = [], [], None
    kw = {} if options is None else {"options": options}
    with progress_bar(total=len(points), desc="theory", enabled=progress) as bar:
        for lam_v, alpha in points:
            mix = training_mixture(problem, alpha)
            res = solve(mix, loss, lam=lam_v, alpha=alpha, init=prev, **kw)
            if not res.success:  # a warm start from a failed point is not one
                res = solve(mix, loss, lam=lam_v, alpha=alpha, **kw)
            prev = res if res.success else None
            rows.append(
                {
                    "alpha": alpha,
                    "lam": lam_v,
                    "test_error": res.test_error,
                    "train_error": res.train_error,
                    "train_loss": res.train_loss,
                    "converged": bool(res.success),
                }
            )
            results.append(res)
            bar.update(1)
    return CurveTable.from_rows(pd.DataFrame(rows), results)


#: the observables whose Gaussian-equivalence gap is reported (a measured curve minus the
#: theory at the same point): ``<name>_gap`` and ``<name>_gap_se`` columns.  The test loss
#: joins here when the curves carry it.
GAP_OBSERVABLES = ("test_error", "train_error")


def _with_gaps(df: pd.DataFrame, n_test: int) -> pd.DataFrame:
    """``df`` with the gap columns of :data:`GAP_OBSERVABLES`: on every real and synthetic
    row, its value minus the theory's at the same (alpha, lam), with the row's standard
    error (the theory's is 0) -- for the real test error combined with the binomial error
    ``sqrt(p (1 - p) / n_test)`` of the finite test split that every subsample shares; NaN
    on theory rows and where the theory is absent or did not converge."""
    theory = df[(df["source"] == "theory") & df["converged"].astype(bool)]
    keys = ["alpha", "lam"]
    measured = (df["source"] != "theory").to_numpy()
    real = (df["source"] == "real").to_numpy()
    for name in GAP_OBSERVABLES:
        ref = df[keys].merge(theory[[*keys, name]], on=keys, how="left")[name].to_numpy()
        se = df[f"{name}_se"].to_numpy(dtype=float)
        if name == "test_error":
            p = df[name].to_numpy(dtype=float)
            se = np.where(real, np.hypot(se, np.sqrt(p * (1 - p) / n_test)), se)
        df[f"{name}_gap"] = np.where(measured, df[name].to_numpy() - ref, np.nan)
        df[f"{name}_gap_se"] = np.where(measured & np.isfinite(ref), se, np.nan)
    return df


#: the ``train_priors`` / ``test_priors`` columns of a study: the composition each row
#: trains on and is tested under
SAMPLE_PRIORS, MIXTURE_PRIORS, TEST_SPLIT, RANDOM_DRAW = (
    "sample n_c/n",
    "mixture rho",
    "test split",
    "random draw",
)


def _priors_said(source: pd.Series, counts: str | None) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the composition it trains on and the one it is tested under: with fixed
    counts every row trains on the sample's ``n_c / n`` and is tested under the test
    split's composition (:func:`training_mixture`); otherwise the theory and the mixture's
    samples use the mixture's ``rho`` (the samples' counts ``round(rho_c n)`` unless
    ``'random'``), and the real rows a random draw tested on the test split."""
    real = (source == "real").to_numpy()
    if counts == "fixed":
        return np.full(real.size, SAMPLE_PRIORS), np.full(real.size, TEST_SPLIT)
    train = np.where(real, RANDOM_DRAW, MIXTURE_PRIORS)
    if counts == "random":
        train = np.full(real.size, RANDOM_DRAW, dtype=object)
        train[(source == "theory").to_numpy()] = MIXTURE_PRIORS
    return train, np.where(real, TEST_SPLIT, MIXTURE_PRIORS)


def _study(
    problem: RealDataProblem,
    loss: str,
    lam: float | Sequence[float],
    alphas: float | Sequence[float],
    subsamples: int,
    seeds: int,
    seed: int,
    sources: Sequence[str],
    progress: bool,
    counts: str | None = None,
    options: Any = None,
) -> CurveTable:
    unknown = [s for s in sources if s not in SOURCES]
    if unknown or not sources:
        raise ValueError(f"sources must be a non-empty subset of {SOURCES}, got {list(sources)}")
    _, x = curve_points(lam, alphas)
    parts = []
    if "theory" in sources:
        parts.append(
            theory_curve(
                problem,
                loss=loss,
                lam=lam,
                alphas=alphas,
                progress=progress,
                options=options,
                counts=counts,
            )
        )
    if "synthetic" in sources:
        parts.append(
            synthetic_curve(
                problem,
                loss=loss,
                lam=lam,
                alphas=alphas,
                seeds=seeds,
                seed=seed,
                progress=progress,
                counts=counts,
            )
        )
    if "real" in sources:
        parts.append(
            real_curve(
                problem,
                loss=loss,
                lam=lam,
                alphas=alphas,
                subsamples=subsamples,
                seed=seed,
                progress=progress,
                counts=counts,
            )
        )
    df = _with_gaps(pd.concat(parts, ignore_index=True), problem.x_test.shape[0])
    df["train_priors"], df["test_priors"] = _priors_said(df["source"], counts)
    points = [p for part in parts for p in part.points]
    rank = df["source"].map({s: i for i, s in enumerate(SOURCES)})
    order = df.assign(_rank=rank).sort_values([x, "_rank"], kind="stable").index
    return CurveTable.from_rows(df.loc[order].reset_index(drop=True), [points[i] for i in order])


@_DOC
def realdata_curve(
    problem: RealDataProblem,
    *,
    loss: str = "logistic",
    lam: float,
    alphas: Sequence[float] | np.ndarray,
    subsamples: int = 5,
    seeds: int = 5,
    seed: int = 0,
    sources: Sequence[str] = SOURCES,
    progress: bool = False,
    counts: str | None = None,
    options: Any = None,
) -> CurveTable:
    """The learning curves of step 4 of the module's protocol, one row per (alpha, source).

    Parameters
    ----------
    %(problem)s
    lam : float
        The penalty strength.
    alphas : sequence of float
        The sample complexities ``n / d``.
    %(sources)s
    options : SolverOptions, optional
        Options of the theory's fixed points (default: the solver's).

    Returns
    -------
    CurveTable
        A pandas DataFrame with columns :data:`COLUMNS`; ``*_se`` is one standard error
        over subsamples (real) or seeds (synthetic), 0 for theory; the Gaussian-equivalence
        gaps ``<name>_gap``, ``<name>_gap_se`` of :data:`GAP_OBSERVABLES` (a real or
        synthetic row minus the theory at the same point, with the row's standard error,
        for the real test error combined with the binomial error of the finite test split;
        NaN on theory rows); ``.points`` holds each row's result (a ``FixedPointResult``
        for theory, a ``SimulationResult`` for synthetic, None for real data, whose
        subsamples the row aggregates).
    """
    check_param("lam", lam)
    return _study(
        problem, loss, lam, alphas, subsamples, seeds, seed, sources, progress, counts, options
    )


@_DOC
def realdata_lambda_curve(
    problem: RealDataProblem,
    *,
    loss: str = "logistic",
    lams: Sequence[float] | np.ndarray,
    alpha: float,
    subsamples: int = 5,
    seeds: int = 5,
    seed: int = 0,
    sources: Sequence[str] = SOURCES,
    progress: bool = False,
    counts: str | None = None,
    options: Any = None,
) -> CurveTable:
    """The test error against the penalty at one sample complexity (Fig. 4 right): one row
    per (lam, source), columns :data:`COLUMNS`.

    Parameters
    ----------
    %(problem)s
    lams : sequence of float
        The penalty strengths.
    alpha : float
        The sample complexity ``n / d``.
    %(sources)s
    options : SolverOptions, optional
        Options of the theory's fixed points (default: the solver's).
    """
    check_param("alpha", alpha)
    return _study(
        problem,
        loss,
        list(lams),
        alpha,
        subsamples,
        seeds,
        seed,
        sources,
        progress,
        counts,
        options,
    )
