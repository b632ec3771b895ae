"""Pictures of the data models: two-dimensional projections of samples of a mixture.

Samples are drawn from the library's own :class:`~gaussmix.theory.model.mixture.Mixture` objects
by :mod:`gaussmix.simulate` (:func:`~gaussmix.simulate.realise` for one finite-``d``
instance, then :meth:`~gaussmix.simulate.Instance.sample`), seeded, in the units of the
mixture (``x = mu_c + Sigma_c^{1/2} g``, means of norm O(1)), and projected on a plane
that shows the structure of the model.

``sparse-projection`` -- :func:`sparse_projection` / :func:`plot_sparse_projection`
    Fig. 1 (left): the correlated sparse mixture eq. (12) projected on the direction
    of its means (which lies in the support, variance ``Delta1``) and on a direction off
    the support (variance ``Delta2``), for one ``Delta2`` per panel.
``appe-xor-projection`` -- :func:`xor_projection` / :func:`plot_xor_projection`
    Fig. 8 (Appendix E): the four isotropic clusters ``+-e_1 +- e_2`` with realisable
    and XOR labels (top) and the two-cluster mixtures with the same class means and
    covariances (bottom), projected on the plane of ``e_1, e_2``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import matplotlib as mpl
import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from gaussmix.core.docstrings import shared_doc
from gaussmix.core.renames import renamed_keywords
from gaussmix.core.validation import check_int, check_param, check_real
from gaussmix.simulate.simulation import realise
from gaussmix.theory.model.mixture import Mixture

from ._common import (
    SLIDE_STYLE,
    check_bool,
    check_df,
    fmt_g,
    new_slide_figure,
    positive_list,
    preset_note,
)
from .appendix_e import XOR_LABELS, XOR_MEANS, matched_classes, xor_mixtures
from .registry import FigureOption, FigureSpec, register_figure

__all__ = [
    "PROJECTION_CAPTION",
    "sparse_projection",
    "plot_sparse_projection",
    "xor_projection",
    "plot_xor_projection",
]

#: the sentence every caption of a projection carries
PROJECTION_CAPTION = (
    "Dots: samples of the mixture drawn by gaussmix.simulate (seeded), no estimator and no "
    "error bars; crosses: the class means of the mixture."
)
#: colour and marker of the classes y = +1, -1
_CLASS_STYLE = {1.0: ("C0", "o"), -1.0: ("C3", "^")}


def _check_counts(d: Any, n_points: Any, seed: Any, d_min: int) -> tuple[int, int, int]:
    return (
        check_int("d", d, low=d_min),
        check_int("n_points", n_points, low=2),
        check_param("seed", seed),
    )


# =========================================================================== Fig. 1 left
def _sparse_args(delta2s, sparsity, delta1, d, n_points, seed, progress) -> dict[str, Any]:
    dd = positive_list("delta2s", delta2s)
    sp = check_real("sparsity", sparsity, low=0.0, high=1.0, low_open=True)
    d1 = check_real("delta1", delta1, low=0.0, low_open=True)
    d, n, seed = _check_counts(d, n_points, seed, 2)
    if sp * d < 1.0 or sp == 1.0:
        raise ValueError(
            f"sparsity * d must be >= 1 and sparsity < 1 (a direction on and one off the "
            f"support), got sparsity={sp:g}, d={d}"
        )
    check_bool("progress", progress)
    mixtures = [Mixture.sparse(sp, d1, float(x)) for x in dd]  # validates every Delta2
    return {
        "delta2s": dd,
        "sparsity": sp,
        "delta1": d1,
        "d": d,
        "n": n,
        "seed": seed,
        "mixtures": mixtures,
    }


#: the parameters the two projections share (:func:`gaussmix.core.docstrings.shared_doc`)
_SAMPLING_DOC = shared_doc(
    sampling="""
        d : int
            Input dimension of the instances.
        n_points : int
            Points drawn per panel.
        seed : int
            Seed of the instances and the points.
        progress : bool
            Show a progress bar.
    """
)


@_SAMPLING_DOC
@renamed_keywords(n="n_points")
def sparse_projection(
    delta2s: Sequence[float] = (1.0, 0.01),
    *,
    sparsity: float = 0.1,
    delta1: float = 0.1,
    d: int = 1000,
    n_points: int = 600,
    seed: int = 0,
    progress: bool = False,
) -> pd.DataFrame:
    """Fig. 1 (left): samples of the correlated sparse mixture in two dimensions.

    For each ``Delta2`` one instance of :meth:`Mixture.sparse` at dimension ``d`` is drawn
    (seed ``seed``), then ``n_points`` labelled points.  Coordinates: ``u = x . mu / ||mu||``
    along the means of the class ``y = +1`` (the means live on the support, where the
    variance is ``Delta1``: ``u`` has mean ``y ||mu||`` and variance ``Delta1``) and
    ``v = x . e`` along a unit vector ``e`` drawn at random off the support (mean 0,
    variance ``Delta2``).

    Parameters
    ----------
    delta2s : sequence of float
        Variances off the support, one panel each.
    sparsity : float
        Fraction ``rho`` of the directions in the support.
    delta1 : float
        Variance on the support.
    %(sampling)s

    Returns
    -------
    pandas.DataFrame
        One row per point: ``delta1, delta2, ratio, sparsity, d, seed, y, u, v`` and the
        realised ``mean_norm`` (``||mu||``, about ``sqrt(sparsity)``).
    """
    a = _sparse_args(delta2s, sparsity, delta1, d, n_points, seed, progress)
    frames = []
    for i, (d2, mix) in enumerate(zip(a["delta2s"], a["mixtures"])):
        rng = np.random.default_rng([a["seed"], i])
        inst = realise(mix, a["d"], rng)
        X, cid = inst.sample(a["n"], rng)
        mu = inst.means[0]
        support = mu != 0.0
        e = np.where(support, 0.0, rng.standard_normal(a["d"]))
        norm = float(np.linalg.norm(mu))
        frames.append(
            pd.DataFrame(
                {
                    "delta1": a["delta1"],
                    "delta2": float(d2),
                    "ratio": a["delta1"] / float(d2),
                    "sparsity": a["sparsity"],
                    "d": a["d"],
                    "seed": a["seed"],
                    "y": mix.labels.labels[cid, 0],
                    "u": X @ (mu / norm),
                    "v": X @ (e / np.linalg.norm(e)),
                    "mean_norm": norm,
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


def plot_sparse_projection(df: pd.DataFrame) -> Figure:
    """One panel per ``Delta2``: the samples coloured by class, the class means as crosses,
    the same axis limits in every panel.

    Parameters
    ----------
    df : pandas.DataFrame
        A table of :func:`sparse_projection`.
    """
    df = check_df(df, ["delta2", "ratio", "y", "u", "v", "mean_norm"])
    delta2s = list(dict.fromkeys(df["delta2"].tolist()))
    fig, axes = new_slide_figure((5.2 * len(delta2s) + 1.2, 5.4), 1, len(delta2s))
    lim = 1.05 * float(np.abs(df[["u", "v"]].to_numpy()).max())
    with mpl.rc_context(SLIDE_STYLE):
        for ax, d2 in zip(axes[0], delta2s):
            g = df[df["delta2"] == d2]
            norm = float(g["mean_norm"].iloc[0])
            _scatter_classes(ax, g["y"], g["u"], g["v"], [(norm, 0.0), (-norm, 0.0)])
            ax.set_title(
                rf"$\Delta_2 = {fmt_g(d2)}$: $\Delta_1/\Delta_2 = {fmt_g(g['ratio'].iloc[0])}$"
            )
            ax.set_xlabel(r"$x \cdot \mu / \|\mu\|$ (on the support: variance $\Delta_1$)")
            ax.set_xlim(-lim, lim)
            ax.set_ylim(-lim, lim)
            ax.set_aspect("equal")
            ax.grid(True, alpha=0.3, linewidth=0.6)
        axes[0][0].set_ylabel(r"$x \cdot e$, $e$ off the support (variance $\Delta_2$)")
        fig.legend(handles=_class_handles(), loc="outside right center", frameon=False)
        first = df.iloc[0]
        fig.suptitle(
            rf"correlated sparse mixture eq. (12): $\rho = {fmt_g(first['sparsity'])}$, "
            rf"$\Delta_1 = {fmt_g(first['delta1'])}$, $y = \pm 1$"
            f"\nsamples at $d = {int(first['d'])}$ (seed {int(first['seed'])}): the data "
            "only, no estimator"
        )
    return fig


def _scatter_classes(ax: Any, y: Any, x1: Any, x2: Any, means: Sequence[tuple]) -> None:
    """Samples coloured and marked by class; the class means (``+1`` first) as crosses,
    the second one smaller so that both stay visible where they coincide (XOR)."""
    y = np.asarray(y, dtype=float)
    for label, (colour, marker) in _CLASS_STYLE.items():
        keep = y == label
        ax.scatter(
            np.asarray(x1)[keep],
            np.asarray(x2)[keep],
            s=14,
            color=colour,
            marker=marker,
            alpha=0.45,
            linewidths=0,
            zorder=2,
        )
    for (colour, _), m, size in zip(_CLASS_STYLE.values(), means, (17, 10)):
        ax.plot(*m, marker="X", markersize=size, color=colour, markeredgecolor="black",
                linestyle="none", zorder=4)  # fmt: skip


def _class_handles() -> list:
    handles = [
        Line2D([], [], linestyle="none", marker=m, color=c, label=f"class $y = {int(y):+d}$")
        for y, (c, m) in _CLASS_STYLE.items()
    ]
    handles.append(
        Line2D(
            [],
            [],
            linestyle="none",
            marker="X",
            markersize=12,
            color="0.5",
            markeredgecolor="black",
            label="class means",
        )
    )
    return handles


# ================================================================ Appendix E, Fig. 8
def _xor_args(delta, d, n_points, seed, progress) -> dict[str, Any]:
    delta = check_real("delta", delta, low=0.0, low_open=True)
    d, n, seed = _check_counts(d, n_points, seed, 4)
    check_bool("progress", progress)
    return {"delta": delta, "d": d, "n": n, "seed": seed}


@_SAMPLING_DOC
@renamed_keywords(n="n_points")
def xor_projection(
    delta: float = 0.5,
    *,
    d: int = 1000,
    n_points: int = 800,
    seed: int = 0,
    progress: bool = False,
) -> pd.DataFrame:
    """Fig. 8 (Appendix E): samples of the four-cluster mixtures (realisable and XOR
    labels) and of their matched two-cluster mixtures (:func:`xor_mixtures`) in the
    plane of ``e_1, e_2``.

    The four-cluster instance realises the Gram matrix of the means exactly in a random
    ``d x 4`` frame; its samples are mapped isometrically onto the plane where the means
    are ``+-e_1 +- e_2``.  The matched mixture is an empirical spectral law whose first
    two directions carry the class means and spreads in the eigenbasis ``U`` of
    :func:`matched_classes`; its samples are rotated back by ``U``.

    Parameters
    ----------
    delta : float
        Cluster variance ``Sigma_k = Delta I``.
    %(sampling)s

    Returns
    -------
    pandas.DataFrame
        One row per point: ``model`` (``'realisable'`` / ``'xor'``), ``mixture``
        (``'K = 4'`` / ``'matched K = 2'``), ``cluster`` (its index within that mixture),
        ``y``, ``x1, x2``, ``delta, d, seed``.
    """
    a = _xor_args(delta, d, n_points, seed, progress)
    frames = []
    for i, model in enumerate(XOR_LABELS):
        k4, k2 = xor_mixtures(model, a["delta"], a["d"])
        _, _, _, U = matched_classes(model)
        for j, (name, mix) in enumerate((("K = 4", k4), ("matched K = 2", k2))):
            rng = np.random.default_rng([a["seed"], i, j])
            inst = realise(mix, a["d"], rng)
            X, cid = inst.sample(a["n"], rng)
            if name == "K = 4":
                plane = X @ (np.linalg.pinv(inst.means) @ XOR_MEANS)
            else:
                plane = X[:, :2] @ U.T
            frames.append(
                pd.DataFrame(
                    {
                        "model": model,
                        "mixture": name,
                        "cluster": cid,
                        "y": mix.labels.labels[cid, 0],
                        "x1": plane[:, 0],
                        "x2": plane[:, 1],
                        "delta": a["delta"],
                        "d": a["d"],
                        "seed": a["seed"],
                    }
                )
            )
    return pd.concat(frames, ignore_index=True)


def plot_xor_projection(df: pd.DataFrame) -> Figure:
    """Four panels: realisable (left) and XOR (right) labels; the four-cluster mixtures
    (top) and their matched two-cluster mixtures (bottom).

    Parameters
    ----------
    df : pandas.DataFrame
        A table of :func:`xor_projection`.
    """
    df = check_df(df, ["model", "mixture", "y", "x1", "x2"])
    models = list(dict.fromkeys(df["model"]))
    rows = list(dict.fromkeys(df["mixture"]))
    fig, axes = new_slide_figure((10.4, 9.6), len(rows), len(models), sharex=True, sharey=True)
    lim = 1.05 * float(np.abs(df[["x1", "x2"]].to_numpy()).max())
    with mpl.rc_context(SLIDE_STYLE):
        for r, mixture in enumerate(rows):
            for c, model in enumerate(models):
                ax = axes[r][c]
                g = df[(df["model"] == model) & (df["mixture"] == mixture)]
                _, means, _, _ = matched_classes(str(model))
                _scatter_classes(ax, g["y"], g["x1"], g["x2"], [tuple(m) for m in means])
                if mixture == "K = 4":
                    ax.plot(
                        XOR_MEANS[:, 0],
                        XOR_MEANS[:, 1],
                        "k+",
                        markersize=12,
                        markeredgewidth=2,
                        zorder=5,
                    )
                ax.set_title(f"{model}, {mixture}")
                ax.set_xlim(-lim, lim)
                ax.set_ylim(-lim, lim)
                ax.set_aspect("equal")
                ax.grid(True, alpha=0.3, linewidth=0.6)
            axes[r][0].set_ylabel("$x \\cdot e_2$")
        for ax in axes[-1]:
            ax.set_xlabel("$x \\cdot e_1$")
        handles = _class_handles()
        handles.append(
            Line2D(
                [],
                [],
                linestyle="none",
                marker="+",
                markersize=12,
                markeredgewidth=2,
                color="black",
                label="cluster means $\\pm e_1 \\pm e_2$",
            )
        )
        fig.legend(handles=handles, loc="outside lower center", ncols=4, frameon=False)
        first = df.iloc[0]
        fig.suptitle(
            f"four clusters $\\pm e_1 \\pm e_2$, $\\Sigma = {fmt_g(first['delta'])}\\,I$ (top) "
            "and the two-cluster mixtures\nwith the same class means and covariances "
            f"(bottom); samples at $d = {int(first['d'])}$: the data only, no estimator"
        )
    return fig


# =========================================================================== registry
#: the --fast presets of the two projections
SPARSE_PROJECTION_FAST = {"d": 200, "n_points": 300}
XOR_PROJECTION_FAST = {"d": 200, "n_points": 400}

register_figure(
    FigureSpec(
        name="sparse-projection",
        paper="Fig. 1 (left)",
        description="samples of the correlated sparse mixture eq. (12) projected on the "
        "mean direction and a direction off the support",
        caption=(
            "The correlated sparse binary mixture eq. (12) (rho = 0.1, Delta1 = 0.1): "
            "one panel per Delta2; horizontal: the direction of the means, which lies in the "
            "support (variance Delta1); vertical: a direction off the support (variance "
            "Delta2). " + PROJECTION_CAPTION
        ),
        fixed_mixture=(
            "it draws samples of the correlated sparse mixture eq. (12) on its mean "
            "direction and a direction off the support, for several Delta2"
        ),
        table=sparse_projection,
        check=_sparse_args,
        plot=plot_sparse_projection,
        fast=SPARSE_PROJECTION_FAST,
        fast_note=preset_note(SPARSE_PROJECTION_FAST),
        dots=("samples",),
        options=(
            FigureOption("--delta2s", "delta2s", "grid"),
            FigureOption("--sparsity", "sparsity", "float"),
            FigureOption("--delta1", "delta1", "float"),
            FigureOption("--d", "d", "int"),
            FigureOption("--n-points", "n_points", "int"),
            FigureOption("--seed", "seed", "int"),
        ),
    )
)

register_figure(
    FigureSpec(
        name="appe-xor-projection",
        paper="Fig. 8 (Appendix E, XOR set-up)",
        description="samples of the four-cluster mixtures +-e1 +-e2 (realisable and XOR "
        "labels) and of their matched two-cluster mixtures in the plane of e1, e2",
        caption=(
            "Four isotropic clusters with means +-e1 +-e2 and Sigma = 0.5 I, labelled "
            "realisably (left) or as XOR (right), and the two-cluster mixtures with the same "
            "class means and covariances (bottom), projected on the plane of e1, e2. "
            + PROJECTION_CAPTION
        ),
        fixed_mixture=(
            "it draws samples of the four-cluster mixtures +-e1 +-e2 and of their matched "
            "two-cluster mixtures"
        ),
        table=xor_projection,
        check=_xor_args,
        plot=plot_xor_projection,
        fast=XOR_PROJECTION_FAST,
        fast_note=preset_note(XOR_PROJECTION_FAST),
        dots=("samples",),
        options=(
            FigureOption("--delta", "delta", "float"),
            FigureOption("--d", "d", "int"),
            FigureOption("--n-points", "n_points", "int"),
            FigureOption("--seed", "seed", "int"),
        ),
    )
)
