"""Fig. 4 (left): the role of regularisation with clusters of different covariances.

``fig4-left`` -- :func:`fig4_left` / :func:`plot_fig4_left`
    Ridge regression (square loss, ``l2`` penalty) on two opposite balanced clusters
    (``mu_1 = -mu_2``, ``||mu|| = 1``, binary labels +-1) with ``Sigma_1 = 0.1 I`` and
    ``Sigma_2 = 0.01 I`` (Section 3.2, "The role of regularisation"): test error against
    ``lambda`` on a log grid in ``[1e-4, 1e2]`` for several ``alpha``, the optimal
    penalty ``lambda*(alpha)`` of each curve (:func:`gaussmix.optimal_lambda`, searched
    over the same interval and, where the error still falls at an end, beyond it), and
    simulation dots; beside it the test mean-squared error of the same estimator
    (``2 x test_loss``, the population risk of the square loss) with its optimum
    ``lambda*_MSE(alpha)``.

The paper reports a finite ``lambda*`` that depends on ``alpha``.  The library finds
(and finite-size simulations at d = 800 confirm) a test error that falls monotonically
to a plateau as ``lambda`` grows: the optimum sits at, or beyond, the top of the grid
(``lam_star_at_upper_bound``), with at most a dip of relative size ~1e-4 on the
plateau.  The figure shows what the theory gives and marks ``lambda*`` as a triangle on
the right edge when it lies beyond the grid.  The test mean-squared error has the
interior optimum that moves with ``alpha`` (``lam_star_loss``): the paper's claim holds
for it.

The figure takes any mixture (``mixture=``, ``gaussmix figure fig4-left --mixture FILE``)
in place of the two clusters: the same ridge regression on its label vectors, named in the
title and the table (columns ``mixture``, ``fingerprint``).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib as mpl
import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from gaussmix.core.exceptions import ConvergenceError, ConvergenceWarning
from gaussmix.core.progress import progress_bar
from gaussmix.core.renames import renamed_keywords
from gaussmix.core.validation import check_array, check_param
from gaussmix.experiments.curves import lambda_sweep
from gaussmix.experiments.lambda_star import optimal_lambda
from gaussmix.simulate.simulation import simulate as run_simulation
from gaussmix.theory.api.api import solve
from gaussmix.theory.model.mixture import Mixture
from gaussmix.theory.solve.options import SolverOptions

from ._common import (
    LINE_STYLES,
    MARKERS,
    SLIDE_STYLE,
    add_mixture_columns,
    balanced_alpha,
    check_alphas,
    check_bool,
    check_df,
    colour_cycle,
    errorbars,
    figure_options,
    fill_simulation,
    fmt_g,
    log_axis,
    mixture_title,
    new_slide_figure,
    pick,
    positive_list,
    preset_note,
    simulation_columns,
    simulation_handle,
    user_mixture,
)
from .plotting import AXIS_LABELS
from .registry import (
    ERROR_BAR_CAPTION,
    FigureOption,
    FigureSpec,
    register_figure,
    simulation_options,
)

__all__ = ["FIG4_LEFT_FULL", "FIG4_LEFT_FAST", "fig4_left", "plot_fig4_left"]

#: defaults of ``fig4-left`` (the paper's setting)
FIG4_LEFT_FULL = {
    "alphas": (0.5, 1.0, 2.0, 5.0),
    "lams": tuple(float(x) for x in np.geomspace(1e-4, 1e2, 31)),
    "sim_lams": (1e-3, 1e-1, 1e1),
    "d": 1000,
    "seeds": 8,
}
#: the same figure, coarser and smaller (``fast=True``)
FIG4_LEFT_FAST = {
    "alphas": (0.5, 1.0, 2.0, 5.0),
    "lams": tuple(float(x) for x in np.geomspace(1e-4, 1e2, 41)),
    "sim_lams": (1e-2, 1e1),
    "d": 200,
    "seeds": 4,
}
#: the paper's cluster variances of ``fig4-left``
DELTAS = (0.1, 0.01)
#: how ``fig4-left`` differs from the paper's figure (tests/test_figures.py checks the
#: optima of the test mean-squared error it states against the theory and a simulation)
FIG4_LEFT_DIFFERS = (
    "The paper draws an interior optimal lambda* on every curve. Under the paper's ERM "
    "(square loss, ridge penalty) the theory's classification error (left panel) has "
    "none: it falls monotonically to a plateau as lambda grows (lambda* beyond the grid, "
    "drawn as a triangle on the right edge), and the simulations agree with the theory. "
    "The paper's claim holds for the test mean-squared error of the same estimator "
    "(right panel: twice the test loss, sum_c rho_c [(y_c - m_c - b)^2 + q_c]), whose "
    "interior optimum moves with alpha: lambda* = 0.021, 0.060, 0.12, 0.25 at "
    "alpha = 0.5, 1, 2, 5 (stars), the likely reading of the paper's figure."
)
#: theory columns of :func:`fig4_left` taken from :func:`gaussmix.lambda_sweep`
_THEORY = ("test_error", "train_error", "train_loss", "converged", "n_iter", "integration_error")
#: the simulated observables of :func:`fig4_left`
_SIMULATED = ("test_error", "train_error", "test_loss")
#: tolerance of the fixed points of the search for ``lambda*_MSE`` (the test loss is a
#: closed form of the overlaps; its minimum in ``log lambda`` is located to ``_LOSS_XATOL``)
_LOSS_SOLVE_TOL = 1e-10
_LOSS_XATOL = 1e-4


def _fig4_args(
    alphas,
    lams,
    mixture,
    deltas,
    simulate,
    sim_lams,
    d,
    seeds,
    seed,
    n_jobs,
    fast,
    progress,
    options=None,
) -> dict[str, Any]:
    """Validated arguments of :func:`fig4_left` with the presets applied."""
    fast = check_bool("fast", fast)
    preset = FIG4_LEFT_FAST if fast else FIG4_LEFT_FULL
    out: dict[str, Any] = {
        "alphas": check_alphas("alphas", pick(alphas, preset["alphas"])),
        "lams": np.unique(positive_list("lams", pick(lams, preset["lams"]))),
        "simulate": check_bool("simulate", simulate),
        "progress": check_bool("progress", progress),
        "options": figure_options(options),
    }
    lam, alpha = float(out["lams"][0]), float(out["alphas"][0])
    out["user"] = user_mixture(mixture, "square", lam=lam, alpha=alpha, deltas=deltas)
    if out["user"] is None:
        dv = check_array("deltas", pick(deltas, DELTAS), shape=(2,), positive=True)
        out["mixture"] = Mixture.isotropic(delta=dv, means="antipodal", labels="binary")
        out["deltas"] = dv
    else:
        out["mixture"] = out["user"]
    if out["simulate"]:
        out["sim_lams"] = positive_list("sim_lams", pick(sim_lams, preset["sim_lams"]))
        out["d"] = check_param("d", pick(d, preset["d"]))
        out["seeds"] = check_param("seeds", pick(seeds, preset["seeds"]))
        out["seed"] = check_param("seed", seed)
        out["n_jobs"] = check_param("n_jobs", n_jobs)
        out["mixture"].covariance.check_dim(out["d"], name="d")
        out["lams"] = np.unique(np.concatenate([out["lams"], out["sim_lams"]]))
    return out


@renamed_keywords(simulate_d="d")
def fig4_left(
    alphas: Sequence[float] | None = None,
    lams: Sequence[float] | None = None,
    *,
    mixture: Mixture | None = None,
    deltas: Sequence[float] | None = None,
    simulate: bool = True,
    sim_lams: Sequence[float] | None = None,
    d: int | None = None,
    seeds: int | None = None,
    seed: int = 0,
    n_jobs: int = 1,
    fast: bool = False,
    progress: bool = False,
    options: SolverOptions | Mapping[str, Any] | None = None,
) -> pd.DataFrame:
    """Fig. 4 (left): ridge regression's test error against ``lambda`` for several alpha.

    Parameters
    ----------
    alphas : sequence of float, optional
        Sample complexities, one curve each (default :data:`FIG4_LEFT_FULL`, or
        :data:`FIG4_LEFT_FAST` with ``fast``; likewise for every ``None`` below).
    lams : sequence of float, optional
        Penalty strengths (> 0); the simulated ones are added.
    mixture : Mixture, optional
        Any mixture in place of the paper's two clusters (then without ``deltas``); the
        simulations need a ``d`` its structure takes (a dense mixture: its own
        dimension).
    deltas : (float, float), optional
        Variances ``Delta_1, Delta_2`` of the two clusters (``Sigma_c = Delta_c I``;
        default 0.1, 0.01).
    simulate : bool
        Simulation dots: ridge regression fitted on ``seeds`` instances of dimension
        ``d`` at each ``alpha`` (rounded so that both classes have ``n/2``
        samples) and each penalty of ``sim_lams``.
    sim_lams : sequence of float, optional
        The simulated penalties (solved by the theory too).
    d : int, optional
        Dimension of the simulated instances.
    seeds : int, optional
        Instances per simulated point.
    seed : int
        Root seed of the simulations (reproducible bit for bit).
    n_jobs : int
        joblib workers over seeds (results do not depend on it).
    fast : bool
        Smaller presets (:data:`FIG4_LEFT_FAST`) for a quick look and for tests.
    progress : bool
        Progress bars (stderr).
    options : SolverOptions or mapping, optional
        The solver's options of the theory points and of the searches of ``lambda*``
        (those asked for over the searches' own tolerance).
        (A mapping: the solver keywords asked for, also at their defaults; a
        ``SolverOptions``: its fields that differ from the defaults.)

    Returns
    -------
    pandas.DataFrame
        One row per ``(alpha, lam)``: ``alpha, lam, delta1, delta2, loss, penalty,
        test_error, train_error, train_loss, converged, n_iter, integration_error``; the
        optimum of each alpha ``lam_star`` (``inf`` when the error falls all the way to
        ``lambda -> infinity``), ``lam_star_test_error, lam_star_at_upper_bound,
        lam_star_at_lower_bound``; and ``sim_alpha, sim_lam, sim_test_error,
        sim_test_error_se, sim_train_error, sim_train_error_se, sim_converged, sim_d,
        sim_seeds`` (NaN except at the simulated penalties); then ``test_loss`` (the
        population risk of the square loss, half the test mean-squared error), its
        optimum over the grid ``lam_star_loss, lam_star_loss_test_loss,
        lam_star_loss_interior`` and ``sim_test_loss, sim_test_loss_se``; with
        ``mixture``, no ``delta1, delta2`` but ``mixture`` and ``fingerprint`` last.
    """
    a = _fig4_args(**{k: v for k, v in locals().items()})
    mix, lams_v = a["mixture"], a["lams"]
    frames = []
    for alpha in progress_bar(a["alphas"], desc="fig4-left", enabled=a["progress"], unit="α"):
        df = lambda_sweep(
            mix, "square", lams_v, alpha=float(alpha), penalty="l2", options=a["options"]
        )
        rows = df[["alpha", "lam", *_THEORY]].copy()
        if a["user"] is None:
            rows.insert(2, "delta1", float(a["deltas"][0]))
            rows.insert(3, "delta2", float(a["deltas"][1]))
        at = 2 if a["user"] is not None else 4
        rows.insert(at, "loss", "square")
        rows.insert(at + 1, "penalty", "l2")
        for key, value in _lambda_star(mix, float(alpha), lams_v, a["options"]).items():
            rows[key] = value
        simulation_columns(rows, ("test_error", "train_error"))
        # the new columns after the former ones: the test loss and its optimum
        rows["test_loss"] = df["test_loss"].to_numpy()
        for key, value in _loss_lambda_star(mix, float(alpha), rows, a["options"]).items():
            rows[key] = value
        rows["sim_test_loss"] = np.nan
        rows["sim_test_loss_se"] = np.nan
        frames.append(rows)
    if a["simulate"]:
        _simulate_fig4(frames, mix, a)
    if a["user"] is not None:
        for rows in frames:
            add_mixture_columns(rows, mix)
    return pd.concat(frames, ignore_index=True)


def _lambda_star(
    mix: Mixture, alpha: float, lams: np.ndarray, options: SolverOptions | None = None
) -> dict[str, Any]:
    """The optimum of one curve (:func:`gaussmix.optimal_lambda` over the grid's span),
    with the solver's ``options``."""
    try:
        res = optimal_lambda(
            mix,
            "square",
            alpha=alpha,
            penalty="l2",
            lam_bounds=(lams.min(), lams.max()),
            options=options,
        )
    except ConvergenceError as exc:
        warnings.warn(
            f"no optimal lambda at alpha={alpha:g}: {exc}; reported as NaN",
            ConvergenceWarning,
            stacklevel=3,
        )
        return {
            "lam_star": np.nan,
            "lam_star_test_error": np.nan,
            "lam_star_at_upper_bound": False,
            "lam_star_at_lower_bound": False,
        }
    return {
        "lam_star": float(res.lam_star),
        "lam_star_test_error": float(res.test_error),
        "lam_star_at_upper_bound": bool(res.at_upper_bound),
        "lam_star_at_lower_bound": bool(res.at_boundary),
    }


def _loss_lambda_star(
    mix: Mixture, alpha: float, rows: pd.DataFrame, options: SolverOptions | None = None
) -> dict[str, Any]:
    """The penalty minimising the test loss of one curve (for the square loss, the test
    mean-squared error over two): the smallest grid value, then a bounded search in
    ``log lambda`` between its two neighbours (to :data:`_LOSS_XATOL`).  At an end of the
    grid that end is reported, with ``lam_star_loss_interior`` False."""
    from scipy.optimize import minimize_scalar

    g = rows.sort_values("lam", kind="stable")
    lam, val = g["lam"].to_numpy(dtype=float), g["test_loss"].to_numpy(dtype=float)
    if not np.any(np.isfinite(val)):
        return {"lam_star_loss": np.nan, "lam_star_loss_test_loss": np.nan,
                "lam_star_loss_interior": False}  # fmt: skip
    i = int(np.nanargmin(val))
    if i in (0, lam.size - 1):
        return {"lam_star_loss": float(lam[i]), "lam_star_loss_test_loss": float(val[i]),
                "lam_star_loss_interior": False}  # fmt: skip

    solver = figure_options(options, tol=_LOSS_SOLVE_TOL, throw=False)

    def risk(t: float) -> float:
        r = solve(mix, "square", lam=float(np.exp(t)), alpha=alpha, options=solver)
        return float(r.test_loss) if r.success else np.inf

    res = minimize_scalar(
        risk,
        bounds=(np.log(lam[i - 1]), np.log(lam[i + 1])),
        method="bounded",
        options={"xatol": _LOSS_XATOL},
    )
    best = (float(np.exp(res.x)), float(res.fun)) if res.fun <= val[i] else (lam[i], val[i])
    return {"lam_star_loss": float(best[0]), "lam_star_loss_test_loss": float(best[1]),
            "lam_star_loss_interior": True}  # fmt: skip


def _simulate_fig4(frames: list[pd.DataFrame], mix: Mixture, a: dict) -> None:
    """Fill the ``sim_*`` columns of ``frames`` at the simulated penalties (in place)."""
    total = len(frames) * len(a["sim_lams"]) * a["seeds"]
    with progress_bar(
        total=total, desc=f"simulate d={a['d']}", unit="seed", enabled=a["progress"]
    ) as bar:
        for rows in frames:
            alpha = balanced_alpha(float(rows["alpha"].iloc[0]), a["d"], mix.n_clusters)
            for lam in a["sim_lams"]:
                idx = rows.index[np.isclose(rows["lam"].to_numpy(), lam, rtol=1e-12)][0]
                res = run_simulation(
                    mix,
                    loss="square",
                    lam=float(lam),
                    alpha=alpha,
                    d=a["d"],
                    seeds=a["seeds"],
                    seed=a["seed"],
                    penalty="l2",
                    n_jobs=a["n_jobs"],
                )
                fill_simulation(rows, idx, res, _SIMULATED)
                bar.update(a["seeds"])


def plot_fig4_left(df: pd.DataFrame, *, title: str | None = None) -> Figure:
    """Draw :func:`fig4_left`: test error (log) against ``lambda`` (log), one curve per
    alpha, and beside it the test mean-squared error (``2 x test_loss``) with
    ``lambda*_MSE`` (tables without ``test_loss``: the first panel alone).

    Each alpha has its colour, line style and marker; ``lambda*`` is a star on its
    curve, or a right-pointing triangle on the right edge (at the height of the plateau)
    when it lies beyond the grid; simulations are open dots with +-1 standard-error bars.

    Parameters
    ----------
    df : pandas.DataFrame
        A table of :func:`fig4_left`.
    title : str, optional
        The figure's title (default: one naming the mixture, the loss, the penalty and
        lambda).
    """
    df = check_df(df, ["alpha", "lam", "test_error"])
    mse = "test_loss" in df.columns  # (tables written before the test loss: one panel)
    fig, axes = new_slide_figure((11.6, 4.6) if mse else (6.4, 4.6), 1, 2 if mse else 1)
    ax = axes[0, 0]
    alphas = list(dict.fromkeys(df["alpha"].tolist()))
    colours = colour_cycle(len(alphas))
    beyond = sims = False
    with mpl.rc_context(SLIDE_STYLE):
        if mse:
            _draw_mse_panel(axes[0, 1], df, alphas, colours)
        for i, (alpha, colour) in enumerate(zip(alphas, colours)):
            g = df[df["alpha"] == alpha].sort_values("lam", kind="stable")
            marker, lam = _curve(ax, g, g["test_error"].to_numpy(dtype=float), i, colour)
            beyond |= _mark_lambda_star(ax, g, colour, lam.max())
            sims |= _draw_sims(ax, g, colour, marker)
        log_axis(ax)
        err = df["test_error"].to_numpy(dtype=float)
        if np.all(err[np.isfinite(err)] > 0):
            ax.set_yscale("log")  # the errors of the alphas span decades
        ax.set_xlabel(AXIS_LABELS["lam"])
        ax.set_ylabel(r"test error $\varepsilon_g$")
        ax.grid(True, which="both", alpha=0.3, linewidth=0.6)
        ax.legend(handles=_fig4_legend(ax, df, beyond, sims), loc="best")
        fig.suptitle(title if title is not None else _fig4_title(df))
    return fig


def _curve(ax: Any, g: pd.DataFrame, y: np.ndarray, i: int, colour: Any) -> tuple[str, Any]:
    """The theory curve ``y`` of the ``i``-th alpha (rows ``g``, sorted by ``lam``) in its
    colour, line style and marker; returns the marker and the penalties."""
    ls, marker = LINE_STYLES[i % len(LINE_STYLES)], MARKERS[i % len(MARKERS)]
    lam = g["lam"].to_numpy(dtype=float)
    ax.plot(
        lam,
        y,
        linestyle=ls,
        marker=marker,
        markevery=max(1, lam.size // 6),
        markersize=4.0,  # small and filled: the simulations are large open dots
        color=colour,
        label=rf"$\alpha = {fmt_g(float(g['alpha'].iloc[0]))}$",
    )
    return marker, lam


def _draw_mse_panel(ax: Any, df: pd.DataFrame, alphas: list, colours: list) -> None:
    """The test mean-squared error (``2 x test_loss``) against ``lambda``, one curve per
    alpha, a star at each interior ``lambda*_MSE`` and the simulations' dots."""
    for i, (alpha, colour) in enumerate(zip(alphas, colours)):
        g = df[df["alpha"] == alpha].sort_values("lam", kind="stable")
        marker, _ = _curve(ax, g, 2.0 * g["test_loss"].to_numpy(dtype=float), i, colour)
        if "lam_star_loss" in g.columns and bool(g["lam_star_loss_interior"].iloc[0]):
            ax.plot(
                [float(g["lam_star_loss"].iloc[0])],
                [2.0 * float(g["lam_star_loss_test_loss"].iloc[0])],
                linestyle="none",
                marker="*",
                color=colour,
                markersize=SLIDE_STYLE["lines.markersize"] + 6,
            )
        if "sim_test_loss" in g.columns:
            s = g[np.isfinite(g["sim_test_loss"].to_numpy(dtype=float))]
            if not s.empty:
                mse, se = 2.0 * s["sim_test_loss"], 2.0 * s["sim_test_loss_se"]
                errorbars(ax, s["lam"], mse, se, colour, marker)
    log_axis(ax)
    log_axis(ax, "y")
    ax.set_xlabel(AXIS_LABELS["lam"])
    ax.set_ylabel(r"test mean-squared error ($2 \times$ test loss)")
    ax.grid(True, which="both", alpha=0.3, linewidth=0.6)
    ax.set_title(r"stars: $\lambda^*_{\mathrm{MSE}}$", fontsize="medium")


def _mark_lambda_star(ax: Any, g: pd.DataFrame, colour: Any, lam_max: float) -> bool:
    """A star at an interior ``lambda*``; a triangle on the right edge when it is beyond
    the grid.  Whether the triangle was drawn."""
    if "lam_star" not in g.columns:
        return False
    ls, err = float(g["lam_star"].iloc[0]), float(g["lam_star_test_error"].iloc[0])
    if not np.isfinite(err):
        return False
    size = SLIDE_STYLE["lines.markersize"] + 6
    if np.isfinite(ls) and 0 < ls <= lam_max * (1 + 1e-9):
        ax.plot([ls], [err], linestyle="none", marker="*", color=colour, markersize=size)
        return False
    ax.plot(
        [1.0],
        [err],
        linestyle="none",
        marker=">",
        color=colour,
        markersize=size - 3,
        transform=ax.get_yaxis_transform(),
        clip_on=False,
    )
    return True


def _draw_sims(ax: Any, g: pd.DataFrame, colour: Any, marker: str) -> bool:
    if "sim_test_error" not in g.columns:
        return False
    s = g[np.isfinite(g["sim_test_error"].to_numpy(dtype=float))]
    if s.empty:
        return False
    errorbars(ax, s["lam"], s["sim_test_error"], s["sim_test_error_se"], colour, marker)
    return True


def _fig4_legend(ax: Any, df: pd.DataFrame, beyond: bool, sims: bool) -> list:
    handles, _ = ax.get_legend_handles_labels()
    size = SLIDE_STYLE["lines.markersize"] + 3
    if "lam_star" in df.columns and not beyond:
        handles.append(
            Line2D([], [], linestyle="none", marker="*", color="0.3", label=r"$\lambda^*$")
        )
    elif beyond:
        handles.append(
            Line2D(
                [],
                [],
                linestyle="none",
                marker=">",
                markersize=size,
                color="0.3",
                label=r"$\lambda^*$ beyond the grid",
            )
        )
    if sims:
        handles.append(simulation_handle(df))
    return handles


def _fig4_title(df: pd.DataFrame) -> str:
    d1 = fmt_g(float(df["delta1"].iloc[0])) if "delta1" in df.columns else "?"
    d2 = fmt_g(float(df["delta2"].iloc[0])) if "delta2" in df.columns else "?"
    user = mixture_title(df)
    return (
        "ridge regression (square loss, $\\ell_2$), $\\lambda \\in$ "
        f"[{fmt_g(df['lam'].min())}, {fmt_g(df['lam'].max())}]\n"
        + (
            user
            if user is not None
            else f"2 opposite balanced clusters, $\\Sigma_1 = {d1}\\,I$, $\\Sigma_2 = {d2}\\,I$"
        )
    )


register_figure(
    FigureSpec(
        name="fig4-left",
        paper="Fig. 4 (left)",
        description="ridge regression, two clusters of different covariances: "
        "test error and test mean-squared error vs lambda for several alpha",
        caption=(
            "Ridge regression (square loss, l2 penalty) on two opposite balanced clusters "
            "with Sigma_1 = 0.1 I and Sigma_2 = 0.01 I, one curve per alpha (theory). Left: "
            "test error against lambda; stars: the optimal lambda* of each curve; a "
            "triangle on the right edge: lambda* beyond the grid (the error decreases "
            "to a plateau). Right: test mean-squared error (twice the test loss) against "
            "lambda; stars: its interior optimum lambda*_MSE, which moves with alpha. "
            + ERROR_BAR_CAPTION
        ),
        mixture_caption=(
            "Ridge regression (square loss, l2 penalty) on the mixture named below, one "
            "curve per alpha (theory). Left: test error against lambda; stars: the optimal "
            "lambda* of each curve; a triangle on the right edge: lambda* beyond the grid. "
            "Right: test mean-squared error (twice the test loss); stars: its optimum "
            "lambda*_MSE where it is interior. " + ERROR_BAR_CAPTION
        ),
        table=fig4_left,
        check=_fig4_args,
        plot=plot_fig4_left,
        fast={"fast": True},
        fast_note=preset_note(FIG4_LEFT_FAST),
        dots=("simulation",),
        differs=FIG4_LEFT_DIFFERS,
        options=(
            FigureOption("--alphas", "alphas", "grid"),
            FigureOption("--lams", "lams", "grid"),
            FigureOption("--deltas", "deltas", "grid"),
            FigureOption("--sim-lams", "sim_lams", "grid", simulation=True),
            *simulation_options(),
        ),
    )
)
