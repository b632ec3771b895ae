"""The paper's figures as data and pictures: tidy tables, then matplotlib figures.

Each figure is a pair of pure functions: one computes a pandas table (theory, and
finite-size simulations where the paper shows them), the other draws it.  Both are
usable on their own; both are registered in :data:`gaussmix.figures.registry.FIGURES`
and :func:`gaussmix.figures.write_figure` runs a named figure and writes
``DIR/<name>.csv``, ``DIR/<name>.png`` and ``DIR/<name>.json``.  Figures are built on
an Agg canvas without ``pyplot`` (see :mod:`gaussmix.figures`).

Figures (Section 3.1 of the paper, the correlated sparse mixture eq. (12)):

``sparse-setup`` -- :func:`sparse_setup` / :func:`plot_sparse_setup`
    Fig. 1 (right): fraction of non-zero weights of the lasso at the optimal penalty
    ``lambda*`` and ``lambda*`` itself against ``alpha = n/d``, for several anisotropy
    ratios ``Delta1 / Delta2`` at sparsity ``rho = 0.1``.  Where the test error decreases
    all the way down to ``lambda -> 0+`` (basis pursuit), ``lam_star = 0`` and
    ``at_boundary`` is True.
``sparse-curves`` -- :func:`sparse_curves` / :func:`plot_sparse_curves`
    Fig. 2: test error and training loss of ridge and lasso at their optimal penalties
    against ``alpha``, ``rho = 0.1``, ``Delta1 = 0.1`` and several ``Delta2``; theory
    lines and simulation dots at ``d = 1000``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib as mpl
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from gaussmix.core.progress import progress_bar
from gaussmix.core.renames import renamed_keywords
from gaussmix.core.validation import check_choice, check_param, check_real
from gaussmix.experiments.lambda_star import OptimalLambdaResult, optimal_lambda_curve
from gaussmix.simulate.simulation import simulate as run_simulation
from gaussmix.theory.channel.losses import get_loss, losses_accepting
from gaussmix.theory.model.mixture import Mixture
from gaussmix.theory.model.penalties import make_penalty
from gaussmix.theory.solve.options import SolverOptions

from ._common import (
    SLIDE_STYLE,
    check_alphas,
    check_bool,
    check_df,
    colour_cycle,
    figure_options,
    fmt_g,
    log_axis,
    new_slide_figure,
    positive_list,
    preset_note,
)
from .plotting import AXIS_LABELS
from .registry import (
    ERROR_BAR_CAPTION,
    FigureOption,
    FigureSpec,
    register_figure,
    simulation_options,
)

__all__ = [
    "SETUP_ALPHAS",
    "CURVE_ALPHAS",
    "CURVE_SIM_ALPHAS",
    "CURVE_DELTA2S",
    "CURVE_SEEDS",
    "sparse_setup",
    "plot_sparse_setup",
    "sparse_curves",
    "plot_sparse_curves",
    "simulation_alpha",
]

#: default sample complexities of ``sparse-setup`` (log-spaced: the lambda -> 0+ region
#: sits at small alpha)
SETUP_ALPHAS = tuple(float(a) for a in np.geomspace(0.1, 5.0, 25))
#: default theory grid of ``sparse-curves``
CURVE_ALPHAS = tuple(float(a) for a in np.geomspace(0.1, 3.0, 20))
#: default simulated sample complexities of ``sparse-curves`` (also solved by the theory)
CURVE_SIM_ALPHAS = (0.3, 0.7, 1.5, 3.0)
#: default variances off the support in ``sparse-curves`` (with Delta1 = 0.1: ratios
#: Delta1/Delta2 = 10, 1, 0.1, 0.01 -- both regimes of Fig. 2)
CURVE_DELTA2S = (0.01, 0.1, 1.0, 10.0)
#: default simulated instances per point of ``sparse-curves``
CURVE_SEEDS = 8
#: ``sparse-setup`` with ``fast``: two ratios, seven alphas (basis pursuit still shows)
SETUP_FAST = {
    "alphas": tuple(float(a) for a in np.geomspace(0.1, 5.0, 40)),
    "ratios": (1.0, 0.1, 0.01),
}
#: ``sparse-curves`` with ``fast``: both regimes of Fig. 2, five alphas, small simulations
CURVES_FAST = {
    "alphas": tuple(float(a) for a in np.geomspace(0.1, 3.0, 40)),
    "delta2s": (0.01, 1.0),
    "sim_alphas": (1.0, 3.0),
    "d": 200,
    "seeds": 3,
}
#: penalties of ``sparse-curves`` and their names in legends
PENALTY_NAMES = {"l2": r"ridge ($\ell_2$)", "l1": r"lasso ($\ell_1$)"}
#: the losses that train on +-1 labels (the sparse mixture is binary), as they declare
SPARSE_LOSSES = losses_accepting("binary")
#: lasso penalties below this are simulated at a larger penalty with the same theory
#: errors (coordinate descent near basis pursuit takes minutes and stops early)
LASSO_SIM_LAM_MIN = 0.05


# =========================================================================== helpers


def _check_loss(loss: Any) -> str:
    return check_choice("loss", loss, SPARSE_LOSSES)


def simulation_alpha(alpha: float, d: int) -> float:
    """``alpha`` rounded so that ``n = alpha d`` is even (and >= 2).

    With balanced clusters the simulated class counts are then exactly equal.  With one
    extra sample of one class the unpenalised intercept is off by ``1/n``, which dominates
    the scores of a strongly penalised estimator (ridge at ``lambda* -> infinity``) and
    sends its simulated test error to 1/2.

    Parameters
    ----------
    alpha : float
        The sample complexity asked for.
    d : int
        The simulations' dimension.
    """
    n = max(2, 2 * int(np.floor(alpha * d / 2 + 0.5)))
    return n / d


def _curve_rows(df: pd.DataFrame, **coords: Any) -> pd.DataFrame:
    keep = [
        "alpha",
        "lam_star",
        "at_boundary",
        "at_upper_bound",
        "test_error",
        "train_error",
        "train_loss",
        "nonzero_fraction",
        "l1_norm",
        "lam_min",
        "lam_max",
        "converged",
    ]
    out = df.reindex(columns=keep).copy()
    for c in ("at_boundary", "at_upper_bound", "converged"):
        out[c] = out[c].fillna(False).astype(bool)
    for i, (name, value) in enumerate(coords.items()):
        out.insert(1 + i, name, value)
    return out


# =========================================================================== Fig. 1 right
def sparse_setup(
    alphas: Sequence[float] | np.ndarray = SETUP_ALPHAS,
    ratios: Sequence[float] = (1.0, 0.1, 0.01),
    *,
    sparsity: float = 0.1,
    delta2: float = 1.0,
    loss: str = "square",
    progress: bool = False,
    options: SolverOptions | Mapping[str, Any] | None = None,
    **search_kw: Any,
) -> pd.DataFrame:
    """Fig. 1 (right): sparsity of the lasso and ``lambda*`` against ``alpha``.

    For each anisotropy ratio ``r = Delta1 / Delta2`` (``Delta1 = r * delta2``) the
    lasso's optimal penalty ``lambda*(alpha) = argmin_lambda eps_g`` is followed along
    ``alphas`` (:func:`gaussmix.optimal_lambda_curve`), with the fraction of non-zero
    weights of the estimator there.

    Parameters
    ----------
    alphas : sequence of float
        Sample complexities ``n/d`` (> 0; sorted, duplicates dropped).
    ratios : sequence of float
        Anisotropy ratios ``Delta1 / Delta2`` (> 0), one curve each.
    sparsity : float
        Fraction ``rho`` of directions carrying the means, in ``(0, 1]``.
    delta2 : float
        Variance off the support of the means (> 0).
    loss : {'square', 'logistic', 'hinge'}
        Training loss (the paper: square).
    progress : bool
        Progress bars (stderr).
    options : SolverOptions or mapping, optional
        The solver's options (:func:`~gaussmix.figures._common.figure_options`), passed to
        :func:`gaussmix.optimal_lambda`.
    **search_kw
        Passed to :func:`gaussmix.optimal_lambda` (``lam_bounds``, ``n_grid``, ``tol``, ...).

    Returns
    -------
    pandas.DataFrame
        One row per ``(ratio, alpha)``: ``alpha, ratio, delta1, delta2, sparsity, loss, lam_star,
        at_boundary, at_upper_bound, test_error, train_error, train_loss,
        nonzero_fraction, l1_norm, lam_min, lam_max, converged``.  ``lam_star = 0`` and
        ``at_boundary = True`` where the optimum is ``lambda -> 0+`` (basis pursuit);
        there the errors and the non-zero fraction are those of the smallest penalty
        solved (``lam_min``), i.e. of the ``lambda -> 0+`` limit.
    """
    a, r, sp, d2, loss, progress, mixtures, opts = _setup_args(
        alphas, ratios, sparsity, delta2, loss, progress, options
    )
    frames = []
    for ratio, mix in progress_bar(
        list(zip(r, mixtures)), desc="sparse-setup", enabled=progress, unit="curve"
    ):
        df = optimal_lambda_curve(
            mix, loss, a, penalty="l1", progress=progress, options=opts, **search_kw
        )
        frames.append(
            _curve_rows(
                df,
                ratio=float(ratio),
                delta1=float(ratio) * d2,
                delta2=d2,
                sparsity=sp,
                loss=loss,
            )
        )
    return pd.concat(frames, ignore_index=True)


def _setup_args(alphas, ratios, sparsity, delta2, loss, progress, options=None) -> tuple:
    a = check_alphas("alphas", alphas)
    r = positive_list("ratios", ratios)
    sp = check_real("sparsity", sparsity, low=0.0, high=1.0, low_open=True)
    d2 = check_real("delta2", delta2, low=0.0, low_open=True)
    loss = _check_loss(loss)
    progress = check_bool("progress", progress)
    mixtures = [Mixture.sparse(sp, float(x) * d2, d2) for x in r]  # validates every Delta1
    return a, r, sp, d2, loss, progress, mixtures, figure_options(options)


def _boundary_markers(ax: Axes, x: np.ndarray, y_axes: float, colour: Any, marker: str) -> None:
    """Markers at a fixed height in axes coordinates (for lambda* = 0+ or infinity)."""
    if x.size == 0:
        return
    ax.plot(
        x,
        np.full(x.size, y_axes),
        linestyle="none",
        marker=marker,
        color=colour,
        markersize=SLIDE_STYLE["lines.markersize"] + 2.5,
        transform=ax.get_xaxis_transform(),
        clip_on=False,
    )


def plot_sparse_setup(df: pd.DataFrame, *, title: str | None = None) -> Figure:
    """Draw :func:`sparse_setup`: non-zero fraction (top) and ``lambda*`` (bottom) vs alpha.

    One colour per ratio ``Delta1 / Delta2``.  In the ``lambda*`` panel (log scale)
    points where the optimum is ``lambda -> 0+`` (``at_boundary``) are drawn as downward
    triangles on the bottom edge, ``lambda -> infinity`` (``at_upper_bound``) as upward
    triangles on the top edge.  The dotted line in the top panel is the sparsity ``rho``
    of the means.

    Parameters
    ----------
    df : pandas.DataFrame
        A table of :func:`sparse_setup`.
    title : str, optional
        The figure's title (default: one naming the mixture, the loss, the penalty and
        lambda).
    """
    cols = ["alpha", "ratio", "lam_star", "at_boundary", "nonzero_fraction"]
    df = check_df(df, cols)
    fig, axes = new_slide_figure((6.4, 7.0), 2, 1, sharex=True)
    ax_nz, ax_lam = axes[:, 0]
    with mpl.rc_context(SLIDE_STYLE):
        any_low, any_high = _draw_setup_curves(ax_nz, ax_lam, df)
        _draw_sparsity_line(ax_nz, df)
        _setup_axes(ax_nz, ax_lam, df)
        _setup_legend(ax_lam, any_low, any_high)
        if title is None:
            title = _setup_title(df)
        if title:
            fig.suptitle(title)
    return fig


def _draw_setup_curves(ax_nz: Axes, ax_lam: Axes, df: pd.DataFrame) -> tuple[bool, bool]:
    """One colour per ratio: non-zero fraction, interior ``lambda*``, and boundary markers
    (stacked rows, not overlapping).  Whether any ``lambda* -> 0+`` / ``infinity``."""
    ratios = list(dict.fromkeys(df["ratio"].tolist()))
    n_low = n_high = 0  # rows of boundary markers drawn so far
    for ratio, colour in zip(ratios, colour_cycle(len(ratios))):
        g = df[df["ratio"] == ratio].sort_values("alpha", kind="stable")
        alpha = g["alpha"].to_numpy(dtype=float)
        label = rf"$\Delta_1/\Delta_2 = {fmt_g(ratio)}$"
        ax_nz.plot(alpha, g["nonzero_fraction"].to_numpy(dtype=float), "-", color=colour)
        low = g["at_boundary"].to_numpy(dtype=bool)
        high = (
            g["at_upper_bound"].to_numpy(dtype=bool)
            if "at_upper_bound" in g.columns
            else np.zeros(alpha.size, dtype=bool)
        )
        lam = g["lam_star"].to_numpy(dtype=float).copy()
        lam[low | high | ~np.isfinite(lam) | (lam <= 0)] = np.nan
        ax_lam.plot(alpha, lam, "-", color=colour, label=label)
        _boundary_markers(ax_lam, alpha[low], 0.03 + 0.045 * n_low, colour, "v")
        _boundary_markers(ax_lam, alpha[high], 0.97 - 0.045 * n_high, colour, "^")
        n_low += bool(low.any())
        n_high += bool(high.any())
    return n_low > 0, n_high > 0


def _draw_sparsity_line(ax_nz: Axes, df: pd.DataFrame) -> None:
    """The dotted line at the sparsity ``rho`` of the means (when there is one)."""
    if "sparsity" not in df.columns or df["sparsity"].nunique() != 1:
        return
    rho = float(df["sparsity"].iloc[0])
    ax_nz.axhline(rho, color="0.5", linestyle=":", linewidth=1.0)
    ax_nz.annotate(
        rf"$\rho = {fmt_g(rho)}$",
        xy=(1.0, rho),
        xycoords=ax_nz.get_yaxis_transform(),
        xytext=(-2, -2),
        textcoords="offset points",
        ha="right",
        va="top",
        color="0.4",
        fontsize=SLIDE_STYLE["legend.fontsize"],
    )


def _setup_axes(ax_nz: Axes, ax_lam: Axes, df: pd.DataFrame) -> None:
    """Labels, scales (log ``lambda*`` when any is finite, log alpha over > 5x), grids."""
    ax_nz.set_ylabel(r"fraction of non-zero weights")
    ax_nz.set_ylim(bottom=0.0)
    ax_lam.set_ylabel(r"optimal penalty $\lambda^*$")
    finite = df["lam_star"].to_numpy(dtype=float)
    if np.any(np.isfinite(finite) & (finite > 0)):
        ax_lam.set_yscale("log")
    ax_lam.set_xlabel(AXIS_LABELS["alpha"])
    alpha_all = df["alpha"].to_numpy(dtype=float)
    if np.all(alpha_all > 0) and alpha_all.max() / alpha_all.min() > 5:
        log_axis(ax_lam)
    for ax in (ax_nz, ax_lam):
        ax.grid(True, which="major", alpha=0.3, linewidth=0.6)


def _setup_legend(ax_lam: Axes, any_low: bool, any_high: bool) -> None:
    """The ratios, plus the boundary markers that were drawn."""
    handles, labels = ax_lam.get_legend_handles_labels()
    size = SLIDE_STYLE["lines.markersize"] + 2.5
    if any_low:
        handles.append(Line2D([], [], linestyle="none", marker="v", color="0.3", markersize=size))
        labels.append(r"$\lambda^* \to 0^+$ (basis pursuit)")
    if any_high:
        handles.append(Line2D([], [], linestyle="none", marker="^", color="0.3", markersize=size))
        labels.append(r"$\lambda^* \to \infty$")
    ax_lam.legend(handles, labels, loc="best")


def _setup_title(df: pd.DataFrame) -> str:
    head = f"{_loss_name(df)} + lasso ($\\ell_1$) at its optimal $\\lambda^*(\\alpha)$"
    return f"{head}\n{_sparse_mixture_name(df)}"


def _loss_name(df: pd.DataFrame) -> str:
    """``'square loss'`` (the table's loss, or the paper's when the table has none)."""
    loss = str(df["loss"].iloc[0]) if "loss" in df.columns else "square"
    return f"{loss} loss"


def _sparse_mixture_name(df: pd.DataFrame) -> str:
    """The mixture of eq. (12) and its parameters that are the same on every row."""
    parts = []
    for col, tex in (("sparsity", r"\rho"), ("delta1", r"\Delta_1"), ("delta2", r"\Delta_2")):
        if col in df.columns and df[col].nunique() == 1:
            parts.append(rf"${tex} = {fmt_g(float(df[col].iloc[0]))}$")
    return "sparse mixture eq. (12): " + ", ".join(parts)


# =========================================================================== Fig. 2
SIM_COLUMNS = (
    "sim_alpha",
    "sim_lam",
    "sim_test_error",
    "sim_test_error_se",
    "sim_train_loss",
    "sim_train_loss_se",
    "sim_nonzero_fraction",
    "sim_converged",
    "sim_d",
    "sim_seeds",
)


def _simulation_lambda(res: OptimalLambdaResult, penalty: str, tol: float) -> float:
    """The penalty at which a point of the lambda* curve is simulated (``sim_lam``).

    ``lambda*`` itself when it is interior (the smallest / largest penalty solved when the
    optimum is ``lambda -> 0+`` / ``infinity``).  For the lasso below
    :data:`LASSO_SIM_LAM_MIN` (basis pursuit and its neighbourhood, where coordinate
    descent needs minutes and stops early): the largest penalty of the search, at least
    ``lambda*``, whose theory test error and training loss are both within ``tol``
    (``sim_tol`` of :func:`sparse_curves`) of those at ``lambda*``.
    """
    r = res.result
    lam = float(r.params["lam"]) if r is not None else float(res.lam_star)
    if not make_penalty(penalty).sparse or lam >= LASSO_SIM_LAM_MIN:
        return lam
    ev = res.evaluations
    ev = ev[ev["converged"] & (ev["lam"] >= lam)]
    ok = (np.abs(ev["test_error"] - r.test_error) <= tol) & (
        np.abs(ev["train_loss"] - r.train_loss) <= tol
    )
    return float(max(lam, ev.loc[ok, "lam"].max())) if ok.any() else lam


@renamed_keywords(simulate_d="d")
def sparse_curves(
    alphas: Sequence[float] | np.ndarray = CURVE_ALPHAS,
    delta2s: Sequence[float] = CURVE_DELTA2S,
    *,
    sparsity: float = 0.1,
    delta1: float = 0.1,
    loss: str = "square",
    simulate: bool = True,
    sim_alphas: Sequence[float] | np.ndarray = CURVE_SIM_ALPHAS,
    d: int = 1000,
    seeds: int = CURVE_SEEDS,
    seed: int = 0,
    n_jobs: int = 1,
    sim_tol: float = 2e-3,
    erm_tol: float | None = None,
    progress: bool = False,
    options: SolverOptions | Mapping[str, Any] | None = None,
    **search_kw: Any,
) -> pd.DataFrame:
    """Fig. 2: ridge against lasso at their optimal penalties, theory and simulation.

    For each ``Delta2`` of ``delta2s`` and each penalty (``'l2'``, ``'l1'``) the optimal
    penalty ``lambda*(alpha)`` is followed along ``alphas`` and the test error and
    training loss there are reported; at ``sim_alphas`` the same estimator is also fitted
    on ``seeds`` finite instances of dimension ``d`` (:func:`gaussmix.simulate.simulate`)
    at the penalty ``sim_lam`` of :func:`_simulation_lambda` (``lambda*``, or near it).

    Parameters
    ----------
    alphas : sequence of float
        Theory grid (the simulated alphas are added to it).
    delta2s : sequence of float
        Variances off the support of the means, one pair of curves each.
    sparsity, delta1 : float
        ``rho`` in ``(0, 1]`` and the variance on the support.
    loss : {'square', 'logistic', 'hinge'}
        Training loss (the paper: square; the hinge loss has no lasso simulation).
    simulate : bool
        Run the simulations (otherwise the ``sim_*`` columns are NaN).
    sim_alphas : sequence of float
        Sample complexities simulated, each rounded so that ``n = alpha d`` is even
        (:func:`simulation_alpha`) and added to the theory grid.
    d : int
        Input dimension of the simulated instances.
    seeds, seed : int
        Instances per point (error bars: standard errors over them) and root seed.
    n_jobs : int
        joblib workers over seeds (results do not depend on it).
    sim_tol : float
        Tolerance on the theory errors when a lasso point is simulated at a larger penalty
        than ``lambda*`` (see :func:`_simulation_lambda`).
    erm_tol : float, optional
        Tolerance of the finite-size solver (default: that of
        :func:`gaussmix.simulate.fit_erm`; 1e-5 is ample for logistic + lasso).
    progress : bool
        Progress bars (stderr).
    options : SolverOptions or mapping, optional
        The solver's options of the theory (:func:`~gaussmix.figures._common.figure_options`),
        passed to :func:`gaussmix.optimal_lambda`.
    **search_kw
        Passed to :func:`gaussmix.optimal_lambda`.

    Returns
    -------
    pandas.DataFrame
        One row per ``(delta2, penalty, alpha)``: ``alpha, delta2, penalty, delta1, ratio,
        sparsity, loss,`` the columns of :func:`gaussmix.optimal_lambda_curve` (``lam_star,
        at_boundary, at_upper_bound, test_error, train_error, train_loss, nonzero_fraction,
        l1_norm, lam_min, lam_max, converged``) and :data:`SIM_COLUMNS` (NaN except at the
        simulated alphas).
    """
    # _curves_args takes the parameters of this function by name (as validate_figure does)
    checked = _curves_args(**{k: v for k, v in locals().items() if k != "search_kw"})
    grid, dd, sp, d1, loss, simulate, sim_a, d, seeds, seed, n_jobs, sim_tol, progress, opts = (
        checked
    )
    frames = _theory_frames(grid, dd, sp, d1, loss, progress, {**search_kw, "options": opts})
    if simulate:
        sim = {"d": d, "seeds": seeds, "seed": seed, "n_jobs": n_jobs, "erm_tol": erm_tol}
        _simulate_frames(frames, sim_a, loss, sim, sim_tol=sim_tol, progress=progress)
    return pd.concat([f[0] for f in frames], ignore_index=True)


def _theory_frames(
    grid: np.ndarray,
    delta2s: np.ndarray,
    sparsity: float,
    delta1: float,
    loss: str,
    progress: bool,
    search_kw: dict,
) -> list[tuple[pd.DataFrame, list, Mixture]]:
    """For each ``(Delta2, penalty)``: its rows (``sim_*`` columns empty), the
    :class:`OptimalLambdaResult` at each alpha, and the mixture."""
    mixtures = [Mixture.sparse(sparsity, delta1, float(x)) for x in delta2s]
    frames = []
    jobs = [(float(x), mix, pen) for x, mix in zip(delta2s, mixtures) for pen in ("l2", "l1")]
    for d2, mix, pen in progress_bar(jobs, desc="sparse-curves", enabled=progress, unit="curve"):
        df = optimal_lambda_curve(mix, loss, grid, penalty=pen, progress=progress, **search_kw)
        res = df.points
        rows = _curve_rows(
            df,
            delta2=d2,
            penalty=pen,
            delta1=delta1,
            ratio=delta1 / d2,
            sparsity=sparsity,
            loss=loss,
        )
        for c in SIM_COLUMNS:
            rows[c] = np.nan
        rows["sim_converged"] = pd.array([pd.NA] * len(rows), dtype="boolean")
        frames.append((rows, res, mix))
    return frames


def _simulate_frames(
    frames: list, sim_alphas: np.ndarray, loss: str, sim: dict, *, sim_tol: float, progress: bool
) -> None:
    """Fill the ``sim_*`` columns of ``frames`` at ``sim_alphas`` (in place).

    ``sim`` holds ``d, seeds, seed, n_jobs, erm_tol``."""
    seeds = sim["seeds"]
    total = sum(int(np.isin(rows["alpha"], sim_alphas).sum()) for rows, _, _ in frames)
    with progress_bar(
        total=total * seeds,
        desc=f"simulate d={sim['d']}",
        unit="seed",
        enabled=progress,
    ) as bar:
        for rows, res, mix in frames:
            pen = str(rows["penalty"].iloc[0])
            for i in np.flatnonzero(np.isin(rows["alpha"].to_numpy(), sim_alphas)):
                r = res[i]
                if r is not None and r.result is not None:
                    lam = _simulation_lambda(r, pen, sim_tol)
                    alpha = float(rows["alpha"].iloc[i])
                    bar.set_postfix_str(f"{pen}, Δ2={rows['delta2'].iloc[i]:g}, α={alpha:.3g}")
                    _simulate_row(rows, rows.index[i], mix, loss, pen, lam, alpha, sim)
                bar.update(seeds)


def _simulate_row(
    rows: pd.DataFrame,
    idx: Any,
    mix: Mixture,
    loss: str,
    pen: str,
    lam: float,
    alpha: float,
    sim: dict,
) -> None:
    """Simulate one point and write its ``sim_*`` columns into ``rows.loc[idx]``."""
    d, seeds = sim["d"], sim["seeds"]
    s = run_simulation(
        mix,
        loss=loss,
        lam=lam,
        alpha=alpha,
        d=d,
        seeds=seeds,
        seed=sim["seed"],
        penalty=pen,
        n_jobs=sim["n_jobs"],
        tol=sim["erm_tol"],
    )
    rows.loc[idx, "sim_alpha"] = alpha
    rows.loc[idx, "sim_lam"] = lam
    for key in ("test_error", "train_loss"):
        rows.loc[idx, f"sim_{key}"] = s.mean[key]
        rows.loc[idx, f"sim_{key}_se"] = s.se[key]
    sparse = make_penalty(pen).sparse
    rows.loc[idx, "sim_nonzero_fraction"] = s.mean["nonzero_fraction"] if sparse else 1.0
    rows.loc[idx, "sim_converged"] = s.success
    rows.loc[idx, "sim_d"] = d
    rows.loc[idx, "sim_seeds"] = seeds


def _curves_args(
    alphas,
    delta2s,
    sparsity,
    delta1,
    loss,
    simulate,
    sim_alphas,
    d,
    seeds,
    seed,
    n_jobs,
    sim_tol,
    erm_tol,
    progress,
    options=None,
) -> tuple:
    grid = check_alphas("alphas", alphas)
    dd = positive_list("delta2s", delta2s)
    sp = check_real("sparsity", sparsity, low=0.0, high=1.0, low_open=True)
    d1 = check_real("delta1", delta1, low=0.0, low_open=True)
    loss = _check_loss(loss)
    simulate = check_bool("simulate", simulate)
    progress = check_bool("progress", progress)
    sim_tol = check_real("sim_tol", sim_tol, low=0.0)
    if erm_tol is not None:
        check_real("erm_tol", erm_tol, low=0.0, low_open=True)
    sim_a = np.empty(0)
    d = check_param("d", d) if simulate else None
    if simulate:
        seeds = check_param("seeds", seeds)
        seed = check_param("seed", seed)
        n_jobs = check_param("n_jobs", n_jobs)
        try:
            get_loss(loss).check_simulation_penalty(make_penalty("l1"))
        except ValueError as exc:
            raise ValueError(f"{exc}; or use simulate=False") from None
        sim_a = np.unique([simulation_alpha(x, d) for x in check_alphas("sim_alphas", sim_alphas)])
        grid = np.unique(np.concatenate([grid, sim_a]))
    for x in dd:
        Mixture.sparse(sp, d1, float(x))  # validates every Delta2
    opts = figure_options(options)
    return grid, dd, sp, d1, loss, simulate, sim_a, d, seeds, seed, n_jobs, sim_tol, progress, opts


#: penalty -> (line style, simulation marker, marker face; None: filled)
_CURVE_STYLES = {"l2": ("--", "s", "none"), "l1": ("-", "o", None)}
#: penalty -> theory line width, opacity and drawing order: the lasso's wide pale line lies
#: under the ridge's dashed one, so both stay visible where the two curves coincide
#: (Delta1/Delta2 >~ 1)
_CURVE_LAYERS = {"l2": (1.8, 1.0, 3), "l1": (4.2, 0.45, 2)}


def plot_sparse_curves(
    df: pd.DataFrame, *, title: str | None = None, logx: bool = False
) -> Figure:
    """Draw :func:`sparse_curves`: test error (left) and training loss (right) vs alpha.

    One colour per ``Delta2``; ridge dashed, lasso a wide pale solid line underneath
    (theory at ``lambda*``: where the two coincide the dashed line runs inside the wide
    one); simulations as dots (ridge: open squares, lasso: filled circles) with +-1
    standard-error bars in the colour of their curve.

    Parameters
    ----------
    df : pandas.DataFrame
        A table of :func:`sparse_curves`.
    title : str, optional
        The figure's title (default: one naming the mixture, the loss, the penalty and
        lambda).
    logx : bool
        A logarithmic alpha axis.
    """
    cols = ["alpha", "delta2", "penalty", "test_error", "train_loss"]
    df = check_df(df, cols)
    fig, axes = new_slide_figure((12.0, 4.8), 1, 2)
    ax_err, ax_loss = axes[0]
    delta2s = list(dict.fromkeys(df["delta2"].tolist()))
    colours = colour_cycle(len(delta2s))
    with mpl.rc_context(SLIDE_STYLE):
        sims = False
        for d2, colour in zip(delta2s, colours):
            for pen in _CURVE_STYLES:
                g = df[(df["delta2"] == d2) & (df["penalty"] == pen)]
                if not g.empty:
                    sims |= _draw_penalty_curves(ax_err, ax_loss, g, pen, colour)
        _curves_axes(ax_err, ax_loss, logx)
        fig.legend(
            handles=_curves_legend(df, delta2s, colours, sims),
            loc="outside right center",
            frameon=False,
        )
        if title is None:
            title = _curves_title(df)
        if title:
            fig.suptitle(title)
    return fig


def _draw_penalty_curves(ax_err: Axes, ax_loss: Axes, g: pd.DataFrame, pen: str, colour) -> bool:
    """The theory lines of one ``(Delta2, penalty)`` and its simulation dots with error
    bars; whether any simulation was drawn."""
    ls, marker, face = _CURVE_STYLES[pen]
    width, opacity, order = _CURVE_LAYERS[pen]
    g = g.sort_values("alpha", kind="stable")
    alpha = g["alpha"].to_numpy(dtype=float)
    sims = False
    for ax, key in ((ax_err, "test_error"), (ax_loss, "train_loss")):
        y = g[key].to_numpy(dtype=float)
        ax.plot(alpha, y, ls, color=colour, linewidth=width, alpha=opacity, zorder=order)
        col = f"sim_{key}"
        if col not in g.columns:
            continue
        s = g[np.isfinite(g[col].to_numpy(dtype=float))]
        if s.empty:
            continue
        sims = True
        se = f"{col}_se"
        yerr = s[se].to_numpy(dtype=float) if se in s.columns else None
        x = s["sim_alpha"] if "sim_alpha" in s.columns else s["alpha"]
        ax.errorbar(
            x.to_numpy(dtype=float),
            s[col].to_numpy(dtype=float),
            yerr=yerr,
            fmt=marker,
            color=colour,
            mfc=face if face is not None else colour,
            capsize=SLIDE_STYLE["errorbar.capsize"] + 1.0,
            markersize=SLIDE_STYLE["lines.markersize"] + 1.0,
            zorder=4,
        )
    return sims


def _curves_axes(ax_err: Axes, ax_loss: Axes, logx: bool) -> None:
    ax_err.set_ylabel(r"test error $\varepsilon_g$")
    ax_loss.set_ylabel(r"training loss $\varepsilon_\ell$")
    for ax in (ax_err, ax_loss):
        ax.set_xlabel(AXIS_LABELS["alpha"])
        if logx:
            log_axis(ax)
        ax.grid(True, which="major", alpha=0.3, linewidth=0.6)
    ax_err.set_title(r"classification error at $\lambda^*$")
    ax_loss.set_title(r"training loss at $\lambda^*$")


def _curves_legend(df: pd.DataFrame, delta2s: list, colours: list, sims: bool) -> list:
    """Handles: one colour per ``Delta2``, one line style per penalty, what dots are."""
    d1 = float(df["delta1"].iloc[0]) if "delta1" in df.columns else None
    handles = [
        Line2D(
            [],
            [],
            color=c,
            label=rf"$\Delta_2 = {fmt_g(d2)}$"
            + (rf" ($\Delta_1/\Delta_2 = {fmt_g(d1 / d2)}$)" if d1 is not None else ""),
        )
        for d2, c in zip(delta2s, colours)
    ]
    present = [p for p in _CURVE_STYLES if (df["penalty"] == p).any()]
    for pen in present:
        ls, marker, face = _CURVE_STYLES[pen]
        width, opacity, _ = _CURVE_LAYERS[pen]
        handles.append(
            Line2D(
                [],
                [],
                color="0.2",
                linestyle=ls,
                linewidth=width,
                alpha=opacity,
                marker=marker if sims else None,
                mfc=face if face is not None else "0.2",
                label=PENALTY_NAMES[pen],
            )
        )
    if sims:
        d = df["sim_d"].dropna()
        n_seeds = df["sim_seeds"].dropna()
        what = "dots: simulation"
        if not d.empty:
            what += f", $d = {int(d.iloc[0])}$"
        if not n_seeds.empty:
            what += f", {int(n_seeds.iloc[0])} seeds"
        handles.append(Line2D([], [], linestyle="none", label=what + r" ($\pm$1 s.e.)"))
    return handles


def _curves_title(df: pd.DataFrame) -> str:
    head = (
        f"{_loss_name(df)}: ridge ($\\ell_2$) vs lasso ($\\ell_1$), each at its optimal "
        "$\\lambda^*(\\alpha)$"
    )
    return f"{head}\n{_sparse_mixture_name(df)}"


# =========================================================================== registry
_SPARSE_COMMON = (
    FigureOption("--alphas", "alphas", "grid"),
    FigureOption("--loss", "loss", "str"),
    FigureOption("--sparsity", "sparsity", "float"),
)

register_figure(
    FigureSpec(
        name="sparse-setup",
        paper="Fig. 1 (right)",
        description="lasso at lambda*: fraction of non-zero weights and lambda* vs alpha, "
        "Delta1/Delta2 = 1, 0.1, 0.01 (sparse mixture)",
        caption=(
            "Square loss with the lasso at its optimal penalty lambda*(alpha) on the "
            "correlated sparse mixture eq. (12): "
            "fraction of non-zero weights (top) and lambda* (bottom) against alpha, one "
            "colour per ratio Delta1/Delta2. Triangles on the bottom edge: lambda* -> 0+ "
            "(basis pursuit); on the top edge: lambda* -> infinity. Theory only."
        ),
        fixed_mixture="it varies Delta1/Delta2 of the correlated sparse mixture eq. (12)",
        table=sparse_setup,
        check=_setup_args,
        plot=plot_sparse_setup,
        fast=SETUP_FAST,
        fast_note=preset_note(SETUP_FAST),
        options=(
            *_SPARSE_COMMON,
            FigureOption("--ratios", "ratios", "grid"),
            FigureOption("--delta2", "delta2", "float"),
        ),
    )
)

register_figure(
    FigureSpec(
        name="sparse-curves",
        paper="Fig. 2",
        description="ridge vs lasso at lambda*, theory and simulation (sparse mixture)",
        caption=(
            "Square loss on the correlated sparse mixture: test error (left) and training "
            "loss (right) of ridge (dashed) and lasso (wide pale solid line underneath, so "
            "that coincident curves stay visible) at their optimal penalties lambda*(alpha) "
            "against alpha, one colour per Delta2; lines: theory (Theorems 1-2). "
            + ERROR_BAR_CAPTION
        ),
        fixed_mixture="it varies Delta2 of the correlated sparse mixture eq. (12)",
        table=sparse_curves,
        check=_curves_args,
        plot=plot_sparse_curves,
        fast=CURVES_FAST,
        fast_note=preset_note(CURVES_FAST),
        dots=("simulation",),
        options=(
            *_SPARSE_COMMON,
            FigureOption("--delta1", "delta1", "float"),
            FigureOption("--delta2s", "delta2s", "grid"),
            FigureOption("--sim-alphas", "sim_alphas", "grid", simulation=True),
            *simulation_options(jobs_default=-1),
        ),
    )
)
