"""Real data against Gaussian-mixture theory (Section 3.3 and Appendix E of the paper).

One protocol, used everywhere (the docs, "Real data"):

1. the data set is loaded under :func:`gaussmix.data.load_dataset`'s protocol — pixels / 255
   as float64, flattened (``d = 784``), centred by the mean of the 60 000 training inputs
   (the same vector subtracted from the test split), nothing else — with the binary labels of
   a task (``even-odd``, ``clothes-accessories``, ``low-high``);
2. optionally a feature map, fitted on the training split only and applied to both splits
   (random features ``erf(F x / sqrt(d))``, ``p = gamma d``, or a trained network's hidden
   layer); then ``d`` is the feature dimension;
3. a Gaussian mixture is fitted on *all* inputs of both splits (the population both splits
   come from; :meth:`gaussmix.Mixture.from_data`, covariances with 1/n_c normalisation):
   ``'p2'`` one cluster per binary class, ``'pk'`` one cluster per original class with the
   task's binary label map;
4. three learning curves of the same estimator — the loss summed over the samples plus
   ``lam ||w||^2 / 2``, acting on ``x / sqrt(d)`` with an unpenalised intercept:

   * **real**: ``n = round(alpha d)`` images drawn without replacement from the training
     split, the test error measured on the whole test split, averaged over subsamples;
   * **synthetic**: the same ERM on ``n`` samples of the fitted mixture, the test error exact
     on the mixture (:func:`gaussmix.simulate.simulate`), averaged over seeds;
   * **theory**: the fixed point of Theorem 1 for the fitted mixture and Theorem 2.

Error bars are one standard error over subsamples (real) or seeds (synthetic).
"""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from gaussmix.core.docstrings import shared_doc
from gaussmix.core.exceptions import SingularCovarianceWarning
from gaussmix.core.progress import progress_bar
from gaussmix.core.registry import Registry
from gaussmix.core.renames import renamed_keywords
from gaussmix.core.tables import CurveTable
from gaussmix.core.validation import check_choice, check_int, check_param, check_param_values
from gaussmix.data import Dataset, featurize, load_dataset, subsample_indices
from gaussmix.experiments.curves import lambda_sweep, learning_curve
from gaussmix.simulate import fit_erm, largest_remainder, predict_class, simulate
from gaussmix.theory.losses import get_loss
from gaussmix.theory.mixture import LabelMap, Mixture

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
        Fitted on the inputs of both splits.
    features : str
        Description of the feature map (``'pixels'`` without one).
    info : dict
        Provenance (data source, clustering, timings).
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


@renamed_keywords(clusters="clustering")
def prepare_realdata(
    dataset: str | Dataset,
    task: str | None = None,
    *,
    clustering: str | None = None,
    feature_map: Any = None,
    data_dir: str | os.PathLike[str] | None = None,
    download: bool = False,
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
    """
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
    return fit_problem(ds, c_train, c_test, labels, features=features, info=info)


def fit_problem(
    ds: Dataset,
    cluster_train: np.ndarray,
    cluster_test: np.ndarray,
    labels: LabelMap,
    *,
    features: str = "pixels",
    info: dict | None = None,
    cluster_names: Sequence[Any] | None = None,
) -> RealDataProblem:
    """Step 3 of the module's protocol: the Gaussian mixture fitted on the inputs of both
    splits (:meth:`gaussmix.Mixture.from_data`), one cluster per id of ``cluster_train`` /
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
    """
    t1 = time.perf_counter()
    mixture = Mixture.from_data(
        np.concatenate([ds.x_train, ds.x_test]),
        np.concatenate([cluster_train, cluster_test]),
        labels=labels,
    )
    info = {**(info or {}), "fit_seconds": time.perf_counter() - t1}
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


def _stratified_indices(problem: RealDataProblem, alpha: float, seed: int) -> np.ndarray:
    """``n = round(alpha d)`` training rows with the mixture's cluster counts
    ``round(rho_c n)`` (largest remainder), drawn without replacement in every cluster."""
    n = subsample_indices(problem.x_train.shape[0], problem.d, alpha, seed=seed).size
    nc = largest_remainder(problem.mixture.rho, n)
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
                problem.mixture,
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
) -> CurveTable:
    """Theorems 1–2 for the fitted mixture: :func:`gaussmix.learning_curve` over alpha
    (warm-started), or :func:`gaussmix.lambda_sweep` over lam (annealed).

    Parameters
    ----------
    %(problem)s
    %(points)s
    progress : bool
        Show a progress bar.
    options : SolverOptions, optional
        Options of every fixed point (default: the solver's).
    """
    points, x = curve_points(lam, alphas)
    kw = {} if options is None else {"options": options}
    if x == "alpha":
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
            "n": np.round(df["alpha"].to_numpy() * problem.d).astype(int),
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
                problem, loss=loss, lam=lam, alphas=alphas, progress=progress, options=options
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
