"""The real-data figures of Appendix E, as tables and matplotlib figures (the protocol and
its helpers: :mod:`gaussmix.figures.realdata`).

* ``appe-trained`` -- :func:`trained_features_table`: features of a two-layer network at
  several stages of training;
* ``appe-p2-p10`` -- :func:`p2_p10_table`: MNIST 0-4 vs 5-9 with the two-cluster and the
  ten-cluster mixtures;
* ``appe-xor`` -- :func:`xor_table`: four isotropic clusters (realisable and XOR labels)
  against the two-cluster mixtures with the same class means and covariances (theory).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib as mpl
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from gaussmix.core.progress import progress_bar
from gaussmix.core.validation import check_int, check_param, check_real
from gaussmix.data import NetworkFeatures, get_task, load_dataset
from gaussmix.experiments.curves import learning_curve
from gaussmix.studies import (
    prepare_realdata,
)
from gaussmix.theory.model.mixture import Mixture
from gaussmix.theory.solve.options import SolverOptions

from ._common import (
    SLIDE_STYLE,
    check_alphas,
    figure_options,
    log_axis,
    new_slide_figure,
    preset_note,
)
from .plotting import AXIS_LABELS
from .realdata import (
    DATASET_NAMES,
    ESTIMATOR_TEXT,
    REAL_CAPTION,
    REAL_FAST,
    REAL_SETUPS,
    SEED_OPTION,
    SEEDS_OPTION,
    SOURCES_OPTION,
    SUBSAMPLES_OPTION,
    data_name,
    dataset_names,
    draw_panels,
    lam_text,
    source_names,
    subsample_counts,
    theory_curve,
)
from .registry import FigureOption, FigureSpec, register_figure

__all__ = [
    "trained_features_table",
    "plot_trained_features",
    "p2_p10_table",
    "plot_p2_p10",
    "xor_mixtures",
    "xor_table",
    "plot_xor",
    "XOR_MEANS",
    "XOR_LABELS",
    "matched_classes",
    "TRAINED_DIFFERS",
]


# ------------------------------------------------------------- Appendix E: trained net
def _trained_args(
    dataset, epochs, alphas, hidden, subsamples, seed, sources, progress, options=None
) -> dict:
    """Validated arguments of :func:`trained_features_table` (its check before any work,
    too); the epochs sorted, each once."""
    (name,) = dataset_names(dataset)
    a, src = check_alphas("alphas", alphas), source_names(sources)
    ep = sorted({check_int("epochs", e, low=1) for e in epochs})
    if not ep:
        raise ValueError("epochs must not be empty")
    return {
        "dataset": name,
        "epochs": ep,
        "alphas": a,
        "hidden": check_int("hidden", hidden, low=1),
        "kw": dict(
            subsamples=check_int("subsamples", subsamples, low=1),
            seeds=2,
            seed=check_param("seed", seed),
            sources=src,
            progress=progress,
            options=figure_options(options),
        ),
    }


def trained_features_table(
    dataset: str = "mnist",
    epochs: Sequence[int] = (1, 5, 20),
    alphas: Sequence[float] = (0.5, 1.0, 2.0, 3.0),
    *,
    hidden: int = 784,
    subsamples: int = 3,
    seed: int = 0,
    sources: Sequence[str] = ("theory", "real"),
    progress: bool = False,
    options: SolverOptions | Mapping[str, Any] | None = None,
) -> pd.DataFrame:
    """Appendix E: logistic regression (lambda = 0.05 for MNIST) on the hidden layer of a
    784-``hidden`` ReLU network trained on the whole training split (square loss, Adam), at several
    epochs.  One row per (epoch, alpha, source).  ``options``: the solver's options of the
    theory points."""
    args = _trained_args(
        dataset, epochs, alphas, hidden, subsamples, seed, sources, progress, options
    )
    name, ep, kw = args["dataset"], args["epochs"], args["kw"]
    task, lam = REAL_SETUPS[name]
    ds = load_dataset(name, task)
    net = NetworkFeatures(epochs=tuple(ep), hidden=args["hidden"], seed=kw["seed"])
    net = net.fit(ds.x_train, ds.y_train)
    parts = []
    for e in ep:
        problem = prepare_realdata(
            ds, feature_map=_Fitted(net.at(e), f"network, epoch {e}"), fit_on="all"
        )
        df = theory_curve(problem, lam, args["alphas"], kw)
        parts.append(df.assign(dataset=name, task=task, epoch=e))
    return pd.concat(parts, ignore_index=True)


class _Fitted:
    """A fitted feature map presented to :func:`gaussmix.data.featurize` (fit is a no-op:
    the network was trained on the training split already)."""

    def __init__(self, stage: Any, description: str) -> None:
        self.stage, self.description = stage, description

    def fit(self, X: Any, y: Any = None) -> _Fitted:
        return self

    def transform(self, X: Any) -> np.ndarray:
        return self.stage.transform(X)


def plot_trained_features(df: pd.DataFrame) -> Figure:
    """Test error and training loss against alpha, one colour per stage of training."""
    title = (
        f"{data_name(df)} on the hidden layer of a trained two-layer network"
        f"\n{ESTIMATOR_TEXT}, {lam_text(df)}; lines: theory for the two-cluster Gaussian "
        "mixture fitted to the features"
    )
    return draw_panels(df, "epoch", lambda e: f"epoch {e}: ", title)


# ---------------------------------------------------------- Appendix E: P2 against P10
def _p2_p10_args(
    dataset, alphas, lam, subsamples, seeds, seed, progress, options=None
) -> dict[str, Any]:
    """Validated arguments of :func:`p2_p10_table` (its check before any work, too)."""
    (name,) = dataset_names(dataset)
    get_task("low-high", name)
    a, (subsamples, seeds) = check_alphas("alphas", alphas), subsample_counts(subsamples, seeds)
    kw = dict(
        subsamples=subsamples,
        seeds=seeds,
        seed=check_param("seed", seed),
        options=figure_options(options),
    )
    return {"dataset": name, "alphas": a, "lam": check_param("lam", lam), "kw": kw}


def p2_p10_table(
    dataset: str = "mnist",
    alphas: Sequence[float] = (0.5, 1.0, 2.0, 3.0),
    lam: float = 0.1,
    *,
    subsamples: int = 3,
    seeds: int = 3,
    seed: int = 0,
    progress: bool = False,
    options: SolverOptions | Mapping[str, Any] | None = None,
) -> pd.DataFrame:
    """Appendix E: MNIST 0-4 vs 5-9, logistic regression at lambda = 0.1; the two-cluster
    mixture ``P2`` (theory and synthetic), the ten-cluster mixture ``P10`` (theory and
    synthetic) and the real data.  One row per (mixture, alpha, source); ``mixture`` is
    ``'P2'``, ``'P10'`` or ``'data'``.  ``options``: the solver's options of the theory
    points."""
    args = _p2_p10_args(dataset, alphas, lam, subsamples, seeds, seed, progress, options)
    name = args["dataset"]
    ds = load_dataset(name, "low-high")
    parts = []
    for clustering, label in (("p2", "P2"), ("pk", f"P{np.unique(ds.classes_train).size}")):
        problem = prepare_realdata(ds, clustering=clustering, fit_on="all")
        sources = ["theory", "synthetic"] + (["real"] if clustering == "p2" else [])
        kw = {**args["kw"], "sources": sources, "progress": progress}
        df = theory_curve(problem, args["lam"], args["alphas"], kw)
        df["mixture"] = np.where(df["source"] == "real", "data", label)
        parts.append(df.assign(dataset=name, task="low-high"))
    return pd.concat(parts, ignore_index=True)


def plot_p2_p10(df: pd.DataFrame) -> Figure:
    """Test error and training loss against alpha: P2 and P10 (theory lines, synthetic
    dots) and the real data."""
    name = str(df["dataset"].iloc[0])
    title = (
        f"{DATASET_NAMES.get(name, name)} 0-4 vs 5-9: {ESTIMATOR_TEXT}, {lam_text(df)}\n"
        "lines: theory for the two-cluster (P2) and ten-cluster (P10) Gaussian mixtures "
        "fitted to the data"
    )
    return draw_panels(df, "mixture", lambda m: f"{m}: ", title)


# ------------------------------------------------------------------ Appendix E: XOR
#: the four means of eq. (232) in the plane of e_1, e_2
XOR_MEANS = np.array([[1.0, 1.0], [1.0, -1.0], [-1.0, 1.0], [-1.0, -1.0]])
#: the labels of the four clusters: realisable (1, 2 vs 3, 4) and XOR (1, 4 vs 2, 3)
XOR_LABELS = {"realisable": (1.0, 1.0, -1.0, -1.0), "xor": (1.0, -1.0, -1.0, 1.0)}


def xor_mixtures(model: str, delta: float = 0.5, d: int = 1000) -> tuple[Mixture, Mixture]:
    """The K = 4 mixture of eq. (232) with ``model``'s labels, and the K = 2 mixture
    with the same class means and covariances.

    The four clusters are isotropic (``Sigma = delta I``) with means ``+-e_1 +- e_2``; the
    class ``y`` of the matched mixture has the mean and covariance of its two clusters:
    ``mu_y = (mu_a + mu_b) / 2`` and ``Sigma_y = delta I + (mu_a - mu_b)(mu_a - mu_b)^T / 4``.
    The two class covariances commute (their spikes are orthogonal or equal), so the matched
    mixture is an empirical spectral law at dimension ``d`` (two spiked directions, the
    others of variance ``delta``), exact at that ``d``.
    """
    delta = check_real("delta", delta, low=0.0, low_open=True)
    d = check_int("d", d, low=3)
    y, means, covs, U = matched_classes(model)
    k4 = Mixture.isotropic(delta, XOR_MEANS @ XOR_MEANS.T, labels=y[:, None])
    sigma = np.full((d, 2), delta)
    mu = np.zeros((d, 2))
    for c in range(2):
        sigma[:2, c] += np.diag(U.T @ covs[c] @ U)
        mu[:2, c] = np.sqrt(d) * (U.T @ means[c])
    return k4, Mixture.spectral(sigma, mu, labels="binary")


def matched_classes(model: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The labels of the four clusters of ``model``, and in the plane of ``e_1, e_2`` the
    mean (2, 2) and the spread of the means (2, 2, 2) of the classes ``+1, -1``, with a
    common eigenbasis ``U`` (2, 2) of the two spreads: the matched mixture of
    :func:`xor_mixtures` has, in its first two directions, the means ``U^T mu_y`` and
    the variances ``delta + diag(U^T S_y U)``."""
    if model not in XOR_LABELS:
        raise ValueError(f"model must be one of {', '.join(XOR_LABELS)}; got {model!r}")
    y = np.array(XOR_LABELS[model])
    means = np.stack([XOR_MEANS[y == label].mean(axis=0) for label in (1.0, -1.0)])
    covs = np.stack([np.cov(XOR_MEANS[y == label].T, bias=True) for label in (1.0, -1.0)])
    _, U = np.linalg.eigh(covs[0] + 2.0 * covs[1])  # a common eigenbasis of both spikes
    return y, means, covs, U


def _xor_args(alphas, lam, delta, d, progress, options=None) -> dict[str, Any]:
    """Validated arguments of :func:`xor_table` (its check before any work, too)."""
    return {
        "alphas": check_alphas("alphas", alphas),
        "lam": check_param("lam", lam),
        "delta": check_real("delta", delta, low=0.0, low_open=True),
        "d": check_int("d", d, low=3),
        "options": figure_options(options),
    }


def xor_table(
    alphas: Sequence[float] = tuple(np.geomspace(0.25, 8.0, 12)),
    lam: float = 1e-2,
    delta: float = 0.5,
    d: int = 1000,
    *,
    progress: bool = False,
    options: SolverOptions | Mapping[str, Any] | None = None,
) -> pd.DataFrame:
    """Appendix E (Fig. 9): logistic regression on the four-cluster mixtures
    (realisable and XOR labels) and on their matched two-cluster mixtures (theory).
    One row per (model, mixture, alpha) with ``test_error, train_error, train_loss``."""
    args = _xor_args(alphas, lam, delta, d, progress, options)
    rows = []
    with progress_bar(total=4, desc="xor", enabled=progress) as bar:
        for model in XOR_LABELS:
            k4, k2 = xor_mixtures(model, args["delta"], args["d"])
            for label, mix in (("K = 4", k4), ("matched K = 2", k2)):
                df = learning_curve(
                    mix, "logistic", args["alphas"], lam=args["lam"], options=args["options"]
                )
                rows.append(df.assign(model=model, mixture=label, delta=args["delta"]))
                bar.update(1)
    cols = [
        "model",
        "mixture",
        "delta",
        "alpha",
        "lam",
        "test_error",
        "train_error",
        "train_loss",
        "converged",
    ]
    return pd.concat(rows, ignore_index=True)[cols]


#: how :func:`plot_xor` draws each mixture: K = 4 a wide pale line underneath, the matched
#: mixture dashed with open markers on top (the two coincide, by symmetry for XOR)
_XOR_STYLES = {
    "K = 4": {"linestyle": "-", "linewidth": 5.0, "alpha": 0.4, "zorder": 1},
    "matched K = 2": {"linestyle": "--", "linewidth": 1.8, "mfc": "none", "ms": 7, "zorder": 3},
}
#: the paper's markers: points for the realisable model, triangles for XOR
_XOR_MARKERS = {"realisable": "o", "xor": "^"}


def plot_xor(df: pd.DataFrame) -> Figure:
    """Test and training error against alpha: K = 4 a wide pale line, the matched K = 2
    mixture dashed with open markers on top of it (coincident curves stay visible)."""
    fig, axes = new_slide_figure((12.0, 4.8), 1, 2)
    with mpl.rc_context(SLIDE_STYLE):
        for ax, y, label in zip(
            axes[0], ("test_error", "train_error"), ("test error", "training error")
        ):
            for i, (model, part) in enumerate(df.groupby("model", sort=False)):
                for mix, style in _XOR_STYLES.items():
                    sub = part[part["mixture"] == mix]
                    marker = _XOR_MARKERS.get(str(model), "s") if "mfc" in style else None
                    ax.plot(
                        sub["alpha"],
                        sub[y],
                        color=f"C{i}",
                        marker=marker,
                        label=f"{model}, {mix}",
                        **style,
                    )
            log_axis(ax)
            ax.set_xlabel(AXIS_LABELS["alpha"])
            ax.set_ylabel(label)
            ax.grid(True, which="major", alpha=0.3, linewidth=0.6)
        handles, labels = axes[0][0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="outside right center", frameon=False)
        fig.suptitle(
            f"{ESTIMATOR_TEXT}, {lam_text(df)}: four clusters $\\pm e_1 \\pm e_2$, "
            f"$\\Sigma = {float(df['delta'].iloc[0]):g}\\,I$ (realisable and XOR labels)\n"
            "against the two-cluster mixtures with the same class means and covariances"
        )
    return fig


# ---------------------------------------------------------------------- registration


#: how the trained-features figure differs from the paper's, with the evidence
#: (``tests/test_gallery.py`` checks the numbers: the committed figure at the paper's
#: settings, and the ``--fast`` preset's network)
TRAINED_DIFFERS = (
    "The paper shows this figure among the real data that the Gaussian mixture describes "
    "(it names only the 0-4 vs 5-9 figure as a case where the approximation is not as "
    "sharp). Here the theory lies below the real-data test error by a factor that grows "
    "with alpha: at the paper's settings (784 hidden units, epochs 1, 5, 20) 1.4 to 1.6 at "
    "alpha = 0.5 and 3.0 to 3.8 at alpha = 3; on the --fast preset's 64 units, 2 to 6 at "
    "alpha = 4 to 16. The gap is the features' non-Gaussianity, not "
    "the theory or the fit; measured on the --fast preset's network (64 hidden units, "
    "alpha = n/p = 4, 8, 16) at epoch 5: Gaussian samples of the fitted mixture follow "
    "the theory (synthetic 0.013, 0.004, 0.004; theory 0.016, 0.007, 0.003) while the "
    "real data do not (0.035, 0.028, 0.021); fitting the mixture to the test split's "
    "features only, which the network never saw, raises the theory only to 0.021, 0.010, "
    "0.005; and testing on held-out training images, which the network did see, lowers "
    "the real error only to 0.024, 0.018, 0.016. The network also differs from the "
    "paper's (784-784 ReLU, no biases, tanh output, trained on the whole data set): it "
    "has biases and no tanh (scikit-learn's MLPRegressor) and is trained on the 60 000 "
    "training images only; the paper does not say at which epochs its curves are drawn."
)


register_figure(
    FigureSpec(
        name="appe-trained",
        paper="Fig. 7 (Appendix E, trained features)",
        description="MNIST on the hidden layer of a trained two-layer network, several "
        "stages of training",
        caption=REAL_CAPTION,
        fixed_mixture=(
            "it compares real data on trained features with the mixtures fitted to them"
        ),
        table=trained_features_table,
        check=_trained_args,
        plot=plot_trained_features,
        fast=REAL_FAST["appe-trained"],
        fast_note=preset_note(REAL_FAST["appe-trained"]),
        differs=TRAINED_DIFFERS,
        dots=("real data",),
        options=(
            FigureOption("--dataset", "dataset", "str"),
            FigureOption("--epochs", "epochs", "ints"),
            FigureOption("--alphas", "alphas", "grid"),
            FigureOption("--hidden", "hidden", "int"),
            SUBSAMPLES_OPTION,
            SEED_OPTION,
            SOURCES_OPTION,
        ),
    )
)
register_figure(
    FigureSpec(
        name="appe-p2-p10",
        paper="Fig. 10 (Appendix E, P2 vs P10)",
        description="MNIST 0-4 vs 5-9: the two-cluster and the ten-cluster mixtures against "
        "the real data",
        caption=REAL_CAPTION,
        fixed_mixture=(
            "it compares the two- and ten-cluster mixtures fitted to MNIST with the real data"
        ),
        table=p2_p10_table,
        check=_p2_p10_args,
        plot=plot_p2_p10,
        fast=REAL_FAST["appe-p2-p10"],
        fast_note=preset_note(REAL_FAST["appe-p2-p10"]),
        dots=("real data", "simulation"),
        options=(
            FigureOption("--dataset", "dataset", "str"),
            FigureOption("--alphas", "alphas", "grid"),
            FigureOption("--lam", "lam", "float"),
            SUBSAMPLES_OPTION,
            SEEDS_OPTION,
            SEED_OPTION,
        ),
    )
)
register_figure(
    FigureSpec(
        name="appe-xor",
        paper="Fig. 9 (Appendix E, XOR vs realisable)",
        description="four clusters +-e1 +-e2 (realisable and XOR labels) against their "
        "matched two-cluster mixtures, theory",
        caption=(
            "Logistic regression with ridge penalty; wide pale lines: the four-cluster "
            "mixture, dashed with open markers (circles: realisable, triangles: XOR) on top: "
            "the two-cluster mixture with the same class means and covariances (theory, "
            "Theorems 1-2; the two coincide). No simulations."
        ),
        fixed_mixture=(
            "it compares the four-cluster XOR and realisable mixtures with their matched two-"
            "cluster mixtures"
        ),
        table=xor_table,
        check=_xor_args,
        plot=plot_xor,
        fast=REAL_FAST["appe-xor"],
        fast_note=preset_note(REAL_FAST["appe-xor"]),
        differs=(
            "The paper reports that the four-cluster mixtures and their matched two-cluster "
            "mixtures (same class means and covariances) give different curves. Here they "
            "coincide, for the realisable and the XOR labels alike, to O(1/d) (2e-4 at "
            "d = 1000, five times less at d = 4000): by the symmetry x -> -x of the XOR mixture "
            "(clusters 1 <-> 4, 2 <-> 3, labels kept) the overlaps with the means vanish, so "
            "every cluster's local field is the same Gaussian as in the matched mixture, and "
            "the XOR test error is 1/2 for both. Exact ERM at d = 400 (10 seeds, "
            "lambda = 0.01, alpha = 2) agrees: XOR training errors 0.1334 +- 0.0049 (four "
            "clusters) and 0.1328 +- 0.0079 (matched) against the theory's 0.1400. The "
            "figure uses lambda = 0.01 (the paper: 1e-4; --lam 1e-4 works)."
        ),
        options=(
            FigureOption("--alphas", "alphas", "grid"),
            FigureOption("--lam", "lam", "float"),
            FigureOption("--delta", "delta", "float"),
            FigureOption("--d", "d", "int"),
        ),
    )
)
