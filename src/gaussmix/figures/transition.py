"""Fig. 3 (centre): the separability threshold ``alpha*_K`` against K for several Delta.

Setting of Section 3.2: K balanced clusters, Gaussian means (Gram matrix ``Theta = I``),
``Sigma = Delta I``.  Lines: ``alpha*_K`` from :func:`gaussmix.separability_threshold` (K = 2
exact; K >= 3 to a relative standard error of ``rel_tol``).  Dots (optional, ``simulate``):
the 50 % crossing of the fraction of linearly separable data sets at dimension ``d``
(:func:`gaussmix.separability_fraction`, HiGHS LP feasibility with bias, or its verified
certificates), with its standard error, for the smaller K.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import matplotlib as mpl
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from gaussmix.core.exceptions import ArgumentError
from gaussmix.core.progress import progress_bar
from gaussmix.core.renames import renamed_keywords
from gaussmix.core.validation import check_int, check_param, check_real
from gaussmix.experiments.transition import separability_threshold
from gaussmix.simulate.separability import lp_crossing, separability_fraction
from gaussmix.theory.model.mixture import Mixture

from ._common import (
    LINE_STYLES,
    MARKERS,
    SLIDE_STYLE,
    check_bool,
    fmt_g,
    new_slide_figure,
    pick,
    positive_list,
    preset_note,
)
from .registry import FigureOption, FigureSpec, register_figure

__all__ = ["FIG3_CENTRE_FULL", "FIG3_CENTRE_FAST", "fig3_centre", "plot_fig3_centre"]

#: the paper's figure: K = 2..10, three Delta; LP dots at d = 400 for K <= 5
FIG3_CENTRE_FULL = {
    "n_clusters": tuple(range(2, 11)),
    "deltas": (0.25, 0.5, 1.0),
    "sim_ks": (2, 3, 4, 5),
    "sim_d": 400,
    "seeds": 20,
}
#: a quick look: the paper's thresholds (theory is cheap), LP dots at d = 100
FIG3_CENTRE_FAST = {
    "n_clusters": tuple(range(2, 11)),
    "deltas": (0.25, 0.5, 1.0),
    "sim_ks": (2, 3),
    "sim_d": 100,
    "seeds": 12,
}
#: the alphas of the LP check, relative to alpha*
SIM_SPAN = np.linspace(0.8, 1.2, 7)


def _args(n_clusters, deltas, fast, simulate, sim_ks, d, seeds, seed, rel_tol, progress):
    """Validated arguments of :func:`fig3_centre` with the presets applied (its check before
    any work, too)."""
    fast = check_bool("fast", fast)
    preset = FIG3_CENTRE_FAST if fast else FIG3_CENTRE_FULL
    k = [check_param("n_clusters", x) for x in pick(n_clusters, preset["n_clusters"])]
    if not k:
        raise ArgumentError("n_clusters", "must not be empty")
    return {
        "n_clusters": sorted(set(k)),
        "deltas": positive_list("deltas", pick(deltas, preset["deltas"])),
        "simulate": check_bool("simulate", simulate),
        "sim_ks": sorted(
            {check_param("n_clusters", x, name="sim_ks") for x in pick(sim_ks, preset["sim_ks"])}
        ),
        "d": check_param("d", pick(d, preset["sim_d"])),
        "seeds": check_int("seeds", pick(seeds, preset["seeds"]), low=2),
        "seed": check_param("seed", seed),
        "rel_tol": check_real("rel_tol", rel_tol, low=0.0, low_open=True),
        "progress": check_bool("progress", progress),
    }


@renamed_keywords(ks="n_clusters", simulate_d="d", datasets="seeds")
def fig3_centre(
    n_clusters: Sequence[int] | None = None,
    deltas: Sequence[float] | None = None,
    *,
    fast: bool = False,
    simulate: bool = False,
    sim_ks: Sequence[int] | None = None,
    d: int | None = None,
    seeds: int | None = None,
    seed: int = 0,
    rel_tol: float = 1e-4,
    progress: bool = False,
) -> pd.DataFrame:
    """Fig. 3 (centre): ``alpha*_K`` for every (K, Delta), and the LP crossings.

    Parameters
    ----------
    n_clusters : sequence of int, optional
        Numbers of clusters (default :data:`FIG3_CENTRE_FULL`, or :data:`FIG3_CENTRE_FAST`
        with ``fast``; likewise for every ``None`` below).
    deltas : sequence of float, optional
        Cluster variances ``Sigma = Delta I``, one line each.
    fast : bool
        The smaller presets.
    simulate : bool
        Add the LP crossings: the alpha where half of the data sets of dimension
        ``d`` are linearly separable.
    sim_ks : sequence of int, optional
        The K of the LP crossings.
    d : int, optional
        Dimension of the LP data sets.
    seeds : int, optional
        Data sets per alpha of the LP check.
    seed : int
        Root seed of the LP data sets.
    rel_tol : float
        Relative standard error of ``alpha*_K`` for K >= 3
        (:func:`gaussmix.separability_threshold`).
    progress : bool
        Show a progress bar.

    Returns
    -------
    pandas.DataFrame
        One row per (K, delta): ``K, delta, alpha_star, rel_accuracy, converged, seconds``
        and, with ``simulate`` for K in ``sim_ks``, ``lp_alpha, lp_alpha_se, lp_d,
        lp_seeds`` (NaN elsewhere).
    """
    a = _args(n_clusters, deltas, fast, simulate, sim_ks, d, seeds, seed, rel_tol, progress)
    rows = []
    pairs = [(k, float(dl)) for dl in a["deltas"] for k in a["n_clusters"]]
    with progress_bar(total=len(pairs), desc="alpha*_K", enabled=a["progress"]) as bar:
        for k, delta in pairs:
            mix = Mixture.isotropic(delta, "gaussian", n_clusters=k)
            res = separability_threshold(mix, rel_tol=a["rel_tol"], evidence=False)
            row: dict[str, Any] = {
                "K": k,
                "delta": delta,
                "alpha_star": res.alpha_star,
                "rel_accuracy": res.rel_accuracy,
                "converged": res.success,
                "seconds": res.elapsed,
                "lp_alpha": np.nan,
                "lp_alpha_se": np.nan,
                "lp_d": np.nan,
                "lp_seeds": np.nan,
            }
            if a["simulate"] and k in a["sim_ks"] and np.isfinite(res.alpha_star):
                table = separability_fraction(
                    mix,
                    res.alpha_star * SIM_SPAN,
                    d=a["d"],
                    seeds=a["seeds"],
                    seed=a["seed"],
                )
                c, se = lp_crossing(table)
                row.update(lp_alpha=c, lp_alpha_se=se, lp_d=a["d"], lp_seeds=a["seeds"])
            rows.append(row)
            bar.update(1)
    return pd.DataFrame(rows)


def plot_fig3_centre(df: pd.DataFrame) -> Figure:
    """``alpha*_K`` against K, one line (colour, line style, marker) per Delta; LP
    crossings as open dots with +-1 standard-error bars.

    Parameters
    ----------
    df : pandas.DataFrame
        A table of :func:`fig3_centre`.
    """
    from matplotlib.ticker import MaxNLocator

    fig, axes = new_slide_figure((6.4, 4.8), 1, 1)
    ax = axes[0][0]
    with mpl.rc_context(SLIDE_STYLE):
        for i, (delta, g) in enumerate(df.groupby("delta")):
            g = g.sort_values("K")
            colour, ls, marker = f"C{i}", LINE_STYLES[i % 4], MARKERS[i % len(MARKERS)]
            ax.plot(g["K"], g["alpha_star"], linestyle=ls, marker=marker, color=colour,
                    label=rf"$\Delta = {fmt_g(delta)}$ (theory)")  # fmt: skip
            sim = g[g["lp_alpha"].notna()]
            if len(sim):
                d = int(sim["lp_d"].iloc[0])
                ax.errorbar(sim["K"], sim["lp_alpha"], yerr=sim["lp_alpha_se"], fmt="o",
                            mfc="white", color=colour, markersize=7, capsize=3, zorder=3,
                            label=rf"LP crossing, $d = {d}$ ($\pm$1 s.e.)")  # fmt: skip
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel("number of clusters $K$")
        ax.set_ylabel(r"separability threshold $\alpha^*_K = n/d$")
        ax.grid(True, which="major", alpha=0.3, linewidth=0.6)
        ax.legend(loc="best")
        fig.suptitle(
            "cross-entropy + ridge ($\\ell_2$), $\\lambda \\to 0^+$: separability "
            "threshold $\\alpha^*_K$\n$K$ balanced clusters, Gaussian means, "
            "$\\Sigma = \\Delta\\,I$"
        )
    return fig


register_figure(
    FigureSpec(
        name="fig3-centre",
        paper="Fig. 3 (centre)",
        description="separability threshold alpha*_K vs K = 2..10 for Delta = 0.25, 0.5, 1 "
        "(theory; with --simulate, LP crossings at finite d)",
        caption=(
            "Cross-entropy with ridge penalty, lambda -> 0+, on K balanced clusters with "
            "Gaussian means and Sigma = Delta I. Lines: the separability threshold alpha*_K "
            "(theory; K = 2 exact, K >= 3 to a relative standard error of 1e-4); "
            "dots (with --simulate): the 50 % crossing of the fraction of linearly separable "
            "data sets at dimension d (LP feasibility with bias), +-1 standard error of the "
            "logistic fit."
        ),
        fixed_mixture="it varies K and Delta of the isotropic mixture",
        table=fig3_centre,
        check=_args,
        plot=plot_fig3_centre,
        fast={"fast": True},
        fast_note=preset_note(FIG3_CENTRE_FAST),
        dots=("LP",),
        options=(
            FigureOption("--n-clusters", "n_clusters", "ints"),
            FigureOption("--deltas", "deltas", "grid"),
            FigureOption("--simulate", "simulate", "bool", cli_default=False),
            FigureOption("--d", "d", "int", simulation=True),
            FigureOption("--seeds", "seeds", "int", simulation=True),
            FigureOption("--seed", "seed", "int", simulation=True),
        ),
    )
)
