"""Fig. 3: cross-entropy classification of K Gaussian clusters (Section 3.2).

Setting of the paper: Gaussian means ``mu_k ~ N(0, I_d/d)`` (Gram matrix ``Theta = I``),
``Sigma_k = Delta I`` with ``Delta = 1/2``, balanced clusters, one-hot labels, softmax
cross-entropy and a ridge penalty ``lam ||W||_F^2 / 2``.

``fig3-left`` -- :func:`fig3_left` / :func:`plot_fig3_left`
    Test error (top) and training error (bottom) against ``alpha`` at ``lam = 1e-4`` for
    ``K = 2..5``: theory lines and simulation dots (exact multinomial logistic regression
    at ``d = 1000``, +-1 standard error over seeds).  The training error is 0 below the
    separability transition ``alpha*_K`` and positive above it, where the test error has
    a cusp.
``fig3-right`` -- :func:`fig3_right` / :func:`plot_fig3_right`
    Test error against ``lambda`` for ``K = 3`` at a few ``alpha``.

Both take any mixture with one-hot labels (``mixture=``, ``gaussmix figure NAME --mixture
FILE``) in place of the paper's: one curve (fig3-left) or one curve per alpha (fig3-right)
of the same cross-entropy and ridge penalty, with the mixture named in the title and the
table (columns ``mixture``, ``fingerprint``).

Hooks for the Bayes-optimal error and the transition
----------------------------------------------------
Both table functions take ``bayes_error``, a callable ``(mixture, alpha) -> float``
returning the Bayes-optimal test error (e.g. ``lambda m, a:
gaussmix.theory.limits.bayes.bayes_optimal_error(m, a).test_error``); :func:`fig3_left` also
takes ``alpha_star``, a callable ``mixture -> float`` returning the separability
threshold ``alpha*_K`` (e.g. ``lambda m:
gaussmix.experiments.transition.separability_threshold(m).alpha_star``).  They fill the
columns ``bayes_error`` (per row) and ``alpha_star`` (per K); by default they are
:func:`bayes_optimal_hook` and :func:`separability_hook`, and ``None`` leaves the columns
NaN.  The plots draw a finite ``bayes_error`` as a dash-dotted line in the colour of
its curve (:func:`plot_fig3_right`: a horizontal line per alpha) and a finite
``alpha_star`` as a dotted vertical line in both panels.

Small penalties
---------------
At ``lam = 1e-4`` near the cusp the fixed point is hard to reach: the solver may warn
about the integration error, and a point where it finds no fixed point is NaN with
``converged = False`` and a ``ConvergenceWarning``.  Nothing is hidden here: the
warnings reach the caller (the CLI prints them).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import matplotlib as mpl
import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from gaussmix.core.exceptions import ArgumentError
from gaussmix.core.progress import progress_bar
from gaussmix.core.renames import renamed_keywords
from gaussmix.core.validation import check_array, check_param, check_real
from gaussmix.experiments.curves import lambda_sweep, learning_curve
from gaussmix.simulate.simulation import simulate as run_simulation
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
    hook_values,
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

__all__ = [
    "FIG3_LEFT_FULL",
    "FIG3_LEFT_FAST",
    "FIG3_RIGHT_FULL",
    "FIG3_RIGHT_FAST",
    "fig3_mixture",
    "bayes_optimal_hook",
    "separability_hook",
    "fig3_left",
    "plot_fig3_left",
    "fig3_right",
    "plot_fig3_right",
]


def bayes_optimal_hook(mixture: Mixture, alpha: float) -> float:
    """The Bayes-optimal test error of ``mixture`` at ``alpha`` (Appendix D,
    :func:`gaussmix.theory.limits.bayes.bayes_optimal_error`): the default ``bayes_error`` hook."""
    from gaussmix.theory.limits.bayes import bayes_optimal_error

    return float(bayes_optimal_error(mixture, alpha).test_error)


def separability_hook(mixture: Mixture) -> float:
    """The separability threshold ``alpha*_K`` of ``mixture``
    (:func:`gaussmix.experiments.transition.separability_threshold`): the default
    ``alpha_star`` hook."""
    from gaussmix.experiments.transition import separability_threshold

    # the value only: the evidence on both sides (max-margin, cross-entropy solves) costs
    # seconds to minutes where the threshold itself costs well under a second
    return float(separability_threshold(mixture, evidence=False).alpha_star)


#: defaults of ``fig3-left`` (the paper's setting; about 7 minutes on one core, most of it the
#: 128 multinomial fits at d = 1000)
FIG3_LEFT_FULL = {
    "n_clusters": (2, 3, 4, 5),
    "alphas": tuple(float(x) for x in np.arange(0.5, 6.01, 0.5)),
    "sim_alphas": (0.6, 1.2, 2.4, 4.8),  # n = alpha d a multiple of 2, 3, 4 and 5
    "d": 1000,
    "seeds": 8,
}
#: ``fig3-left`` with ``fast=True``: K = 2, 3 on 40 alphas (alpha*_K is added to each K's
#: grid, so the cusp is drawn), small simulations
FIG3_LEFT_FAST = {
    "n_clusters": (2, 3),
    "alphas": tuple(float(x) for x in np.linspace(0.25, 6.0, 40)),
    "sim_alphas": (1.0, 5.0),
    "d": 240,  # n = alpha d a multiple of 2 and 3
    "seeds": 3,
}
#: defaults of ``fig3-right``
FIG3_RIGHT_FULL = {
    "alphas": (0.5, 1.0, 2.0, 5.0),
    "lams": tuple(float(x) for x in np.geomspace(1e-4, 1e2, 25)),
}
#: ``fig3-right`` with ``fast=True``
FIG3_RIGHT_FAST = {
    "alphas": (0.5, 1.0, 2.0, 5.0),
    "lams": tuple(float(x) for x in np.geomspace(1e-4, 1e2, 40)),
}
#: the paper's cluster variance and penalty of ``fig3-left``
DELTA = 0.5
LAM = 1e-4
#: columns of :func:`gaussmix.learning_curve` / :func:`gaussmix.lambda_sweep` kept
_THEORY = ("test_error", "train_error", "train_loss", "converged", "n_iter", "integration_error")
_SIM_KEYS = ("test_error", "train_error")

BayesHook = Callable[[Mixture, float], float]
AlphaStarHook = Callable[[Mixture], float]


def fig3_mixture(n_clusters: int, delta: float = DELTA) -> Mixture:
    """The mixture of Fig. 3: ``K`` balanced clusters, Gaussian means, ``Sigma = Delta I``."""
    return Mixture.isotropic(delta=delta, means="gaussian", n_clusters=n_clusters)


def _check_hook(name: str, hook: Any) -> Any:
    if hook is not None and not callable(hook):
        raise TypeError(f"{name} must be callable or None, got {type(hook).__name__}")
    return hook


def _ks(n_clusters: Any) -> tuple[int, ...]:
    if isinstance(n_clusters, int | np.integer):
        n_clusters = (n_clusters,)
    values = tuple(check_param("n_clusters", k) for k in n_clusters)
    if not values:
        raise ArgumentError("n_clusters", "must not be empty")
    if len(set(values)) != len(values):
        raise ArgumentError("n_clusters", f"must not repeat a value, got {list(values)}")
    return values


def _sim_args(out: dict, preset: dict, sim_alphas, d, seeds, seed, n_jobs) -> None:
    out["sim_alphas"] = check_alphas("sim_alphas", pick(sim_alphas, preset["sim_alphas"]))
    out["d"] = check_param("d", pick(d, preset["d"]))
    out["seeds"] = check_param("seeds", pick(seeds, preset["seeds"]))
    out["seed"] = check_param("seed", seed)
    out["n_jobs"] = check_param("n_jobs", n_jobs)
    if out["mixture"] is not None:  # the dimensions its structure can be realised at
        out["mixture"].covariance.check_dim(out["d"], name="d")
    elif out["d"] < max(out["n_clusters"]):
        raise ArgumentError(
            "d", f"must be >= the largest K ({max(out['n_clusters'])}), got {out['d']}"
        )


def _mixture_args(out: dict, mixture: Any, *, n_clusters: Any, delta: Any, given: Any) -> None:
    """The mixtures of a Fig. 3 table into ``out``: ``mixture`` (a user's, validated for
    cross-entropy at the table's first alpha and lambda, or None), ``n_clusters`` and
    ``delta`` (the paper's K and Delta; the user's K and NaN).  ``given``: the K argument as
    given (refused with a mixture, as ``delta`` is)."""
    lam = out["lam"] if "lam" in out else float(out["lams"][0])
    user = user_mixture(
        mixture,
        "cross-entropy",
        lam=lam,
        alpha=float(out["alphas"][0]),
        n_clusters=given,
        delta=delta,
    )
    out["mixture"] = user
    if user is not None:
        out["n_clusters"], out["delta"] = (user.n_clusters,), np.nan
        return
    out["n_clusters"] = _ks(n_clusters)
    out["delta"] = check_real("delta", pick(delta, DELTA), low=0.0, low_open=True)


def _figure_mixtures(a: dict) -> list[Mixture]:
    """The mixtures a Fig. 3 table draws: the user's, or the paper's for each K."""
    if a["mixture"] is not None:
        return [a["mixture"]]
    return [fig3_mixture(k, a["delta"]) for k in a["n_clusters"]]


def _theory_rows(df: pd.DataFrame, mix: Mixture, a: dict, *, delta_at: int) -> pd.DataFrame:
    """The theory columns of one curve: ``K``, the curve's ``alpha, lam``, ``delta`` (at
    ``delta_at``, the paper's mixtures only), ``loss, penalty`` and :data:`_THEORY`."""
    rows = df[["alpha", "lam", *_THEORY]].copy()
    rows.insert(0, "K", mix.n_clusters)
    if a["mixture"] is None:
        rows.insert(delta_at, "delta", a["delta"])
    at = 4 if a["mixture"] is None else 3
    rows.insert(at, "loss", "cross-entropy")
    rows.insert(at + 1, "penalty", "l2")
    return rows


# =========================================================================== Fig. 3 left
def _left_args(
    alphas,
    n_clusters,
    mixture,
    delta,
    lam,
    simulate,
    sim_alphas,
    d,
    seeds,
    seed,
    n_jobs,
    fast,
    progress,
    bayes_error,
    alpha_star,
    options=None,
) -> dict[str, Any]:
    """Validated arguments of :func:`fig3_left` with the presets applied."""
    fast = check_bool("fast", fast)
    preset = FIG3_LEFT_FAST if fast else FIG3_LEFT_FULL
    out: dict[str, Any] = {
        "alphas": check_alphas("alphas", pick(alphas, preset["alphas"])),
        "lam": check_param("lam", lam),
        "simulate": check_bool("simulate", simulate),
        "progress": check_bool("progress", progress),
        "bayes_error": _check_hook("bayes_error", bayes_error),
        "alpha_star": _check_hook("alpha_star", alpha_star),
        "options": figure_options(options),
    }
    _mixture_args(
        out,
        mixture,
        n_clusters=pick(n_clusters, preset["n_clusters"]),
        delta=delta,
        given=n_clusters,
    )
    if out["simulate"]:
        _sim_args(out, preset, sim_alphas, d, seeds, seed, n_jobs)
    return out


@renamed_keywords(ks="n_clusters", simulate_d="d")
def fig3_left(
    alphas: Sequence[float] | None = None,
    n_clusters: Sequence[int] | None = None,
    *,
    mixture: Mixture | None = None,
    delta: float | None = None,
    lam: float = LAM,
    simulate: bool = True,
    sim_alphas: Sequence[float] | None = None,
    d: int | None = None,
    seeds: int | None = None,
    seed: int = 0,
    n_jobs: int = 1,
    fast: bool = False,
    progress: bool = False,
    bayes_error: BayesHook | None = bayes_optimal_hook,
    alpha_star: AlphaStarHook | None = separability_hook,
    options: SolverOptions | Mapping[str, Any] | None = None,
) -> pd.DataFrame:
    """Fig. 3 (left): test and training errors of cross-entropy against alpha, K = 2..5.

    Parameters
    ----------
    alphas : sequence of float, optional
        Theory grid (default :data:`FIG3_LEFT_FULL`, or :data:`FIG3_LEFT_FAST` with
        ``fast``; likewise for every ``None`` below).  The simulated alphas are added, and
        so is each K's ``alpha*_K`` (with ``alpha_star``) when it lies inside the grid, so
        that the cusp is drawn where it is.
    n_clusters : sequence of int, optional
        Numbers of clusters (>= 2), one colour each.
    mixture : Mixture, optional
        Any mixture with one-hot labels in place of the paper's (then without ``n_clusters`` and
        ``delta``): one curve, its ``alpha*_K`` and Bayes-optimal error where the hooks
        take the mixture (else NaN, with a ``UserWarning``), simulations at a
        ``d`` its structure takes (a dense mixture: its own dimension).
    delta : float, optional
        Cluster variance ``Sigma_k = Delta I`` (default 0.5).
    lam : float
        Ridge penalty strength (> 0).
    simulate : bool
        Simulation dots: multinomial logistic regression (exact ERM) on ``seeds``
        instances of dimension ``d`` at each of ``sim_alphas``, each rounded so
        that every cluster has exactly ``n/K`` samples.
    sim_alphas : sequence of float, optional
        The simulated sample complexities (solved by the theory too).
    d : int, optional
        Dimension of the simulated instances.
    seeds : int, optional
        Instances per simulated point.
    seed : int
        Root seed of the simulations (reproducible bit for bit).
    n_jobs : int
        joblib workers over seeds (results do not depend on it).
    fast : bool
        :data:`FIG3_LEFT_FAST` presets: K = 2, 3, seven alphas, d = 240, 3 seeds.
    progress : bool
        Progress bars (stderr).
    bayes_error : callable, optional
        ``(mixture, alpha) -> float``: the Bayes-optimal test error (see the module
        documentation); None leaves ``bayes_error`` NaN.
    alpha_star : callable, optional
        ``mixture -> float``: the separability threshold ``alpha*_K``; None leaves
        ``alpha_star`` NaN.
    options : SolverOptions or mapping, optional
        The solver's options of the theory points (``gaussmix figure fig3-left
        --max-iter N``); the hooks keep their own.
        (A mapping: the solver keywords asked for, also at their defaults; a
        ``SolverOptions``: its fields that differ from the defaults.)

    Returns
    -------
    pandas.DataFrame
        One row per ``(K, alpha)``: ``K, alpha, delta, lam, loss, penalty, test_error,
        train_error, train_loss, converged, n_iter, integration_error, bayes_error,
        alpha_star, sim_alpha, sim_lam, sim_test_error, sim_test_error_se,
        sim_train_error, sim_train_error_se, sim_converged, sim_d, sim_seeds`` (the
        ``sim_*`` columns NaN except at the simulated alphas); with ``mixture``, no
        ``delta`` but ``mixture`` and ``fingerprint`` last.
    """
    a = _left_args(**{k: v for k, v in locals().items()})
    grid = a["alphas"]
    user = a["mixture"] is not None
    frames = []
    for mix in progress_bar(
        _figure_mixtures(a), desc="fig3-left", enabled=a["progress"], unit="K"
    ):
        k = mix.n_clusters
        sim_a = (
            np.unique([balanced_alpha(x, a["d"], k) for x in a["sim_alphas"]])
            if a["simulate"]
            else np.empty(0)
        )
        star = float(hook_values(a["alpha_star"], mix, [()], user=user)[0])
        # alpha*_K itself on the grid (inside it): the cusp is drawn where it is
        at_star = [star] if grid[0] < star < grid[-1] else []
        alphas_k = np.unique(np.concatenate([grid, sim_a, at_star]))
        df = learning_curve(
            mix,
            "cross-entropy",
            alphas_k,
            lam=a["lam"],
            penalty="l2",
            progress=a["progress"],
            options=a["options"],
        )
        rows = _theory_rows(df, mix, a, delta_at=2)
        points = [(float(x),) for x in alphas_k]
        rows["bayes_error"] = hook_values(a["bayes_error"], mix, points, user=user)
        rows["alpha_star"] = star
        simulation_columns(rows, _SIM_KEYS)
        if a["simulate"]:
            _simulate_alphas(rows, mix, sim_a, a)
        if user:
            add_mixture_columns(rows, mix)
        frames.append(rows)
    return pd.concat(frames, ignore_index=True)


def _simulate_alphas(rows: pd.DataFrame, mix: Mixture, sim_a: np.ndarray, a: dict) -> None:
    """Fill the ``sim_*`` columns of one K at the alphas ``sim_a`` (in place)."""
    k = mix.n_clusters
    with progress_bar(
        total=sim_a.size * a["seeds"],
        desc=f"simulate K={k} d={a['d']}",
        unit="seed",
        enabled=a["progress"],
    ) as bar:
        for alpha in sim_a:
            idx = rows.index[np.isclose(rows["alpha"].to_numpy(), alpha, rtol=1e-12)][0]
            res = run_simulation(
                mix,
                loss="cross-entropy",
                lam=a["lam"],
                alpha=float(alpha),
                d=a["d"],
                seeds=a["seeds"],
                seed=a["seed"],
                penalty="l2",
                n_jobs=a["n_jobs"],
            )
            fill_simulation(rows, idx, res, _SIM_KEYS)
            bar.update(a["seeds"])


def plot_fig3_left(df: pd.DataFrame, *, title: str | None = None) -> Figure:
    """Draw :func:`fig3_left`: test error (top) and training error (bottom) against alpha.

    One colour and marker per K; theory solid (wider for smaller K, so that coincident
    curves stay visible), simulations open dots with +-1 standard-error bars; where
    present, the Bayes-optimal error dash-dotted (top) and ``alpha*_K`` as a dotted
    vertical line (both panels).

    Parameters
    ----------
    df : pandas.DataFrame
        A table of :func:`fig3_left`.
    title : str, optional
        The figure's title (default: one naming the mixture, the loss, the penalty and
        lambda).
    """
    df = check_df(df, ["K", "alpha", "test_error", "train_error"])
    fig, axes = new_slide_figure((9.4, 7.0), 2, 1, sharex=True)
    ax_test, ax_train = axes[:, 0]
    ks = list(dict.fromkeys(df["K"].tolist()))
    colours = colour_cycle(len(ks))
    drawn = {"sim": False, "bayes": False, "star": False}
    with mpl.rc_context(SLIDE_STYLE):
        for i, (k, colour) in enumerate(zip(ks, colours)):
            g = df[df["K"] == k].sort_values("alpha", kind="stable")
            marker = MARKERS[i % len(MARKERS)]
            alpha = g["alpha"].to_numpy(dtype=float)
            # wider lines underneath: curves that coincide (zero training error) stay visible
            width = SLIDE_STYLE["lines.linewidth"] + 0.9 * (len(ks) - 1 - i)
            for ax, key in ((ax_test, "test_error"), (ax_train, "train_error")):
                y = g[key].to_numpy(dtype=float)
                ax.plot(alpha, y, "-", color=colour, linewidth=width, marker=marker, ms=3.5)
                drawn["sim"] |= _draw_sim_column(ax, g, key, colour, marker)
            drawn["bayes"] |= _draw_bayes(ax_test, g, colour)
            drawn["star"] |= _draw_alpha_star(ax_test, ax_train, g, colour)
        ax_test.set_ylabel(r"test error $\varepsilon_g$")
        ax_train.set_ylabel(r"training error $\varepsilon_t$")
        ax_train.set_xlabel(AXIS_LABELS["alpha"])
        for ax in (ax_test, ax_train):
            ax.grid(True, which="major", alpha=0.3, linewidth=0.6)
        ax_train.set_ylim(bottom=-0.01)
        handles = [
            Line2D([], [], color=c, marker=MARKERS[i % len(MARKERS)], ms=3.5, label=f"$K = {k}$")
            for i, (k, c) in enumerate(zip(ks, colours))
        ]
        # to the right of both panels: inside, it would cover the curves of some K
        fig.legend(
            handles=handles + _style_handles(df, drawn), loc="outside right center", frameon=False
        )
        fig.suptitle(title if title is not None else _fig3_title(df))
    return fig


def _draw_sim_column(ax: Any, g: pd.DataFrame, key: str, colour: Any, marker: str) -> bool:
    col = f"sim_{key}"
    if col not in g.columns:
        return False
    s = g[np.isfinite(g[col].to_numpy(dtype=float))]
    if s.empty:
        return False
    x = s["sim_alpha"] if "sim_alpha" in s.columns else s["alpha"]
    errorbars(ax, x, s[col], s[f"{col}_se"], colour, marker)
    return True


def _draw_bayes(ax: Any, g: pd.DataFrame, colour: Any) -> bool:
    """The Bayes-optimal error of one K, dash-dotted, where the hook filled it."""
    if "bayes_error" not in g.columns:
        return False
    b = g["bayes_error"].to_numpy(dtype=float)
    if not np.isfinite(b).any():
        return False
    ax.plot(g["alpha"].to_numpy(dtype=float), b, "-.", color=colour, linewidth=1.3)
    return True


def _draw_alpha_star(ax_test: Any, ax_train: Any, g: pd.DataFrame, colour: Any) -> bool:
    if "alpha_star" not in g.columns:
        return False
    x = float(g["alpha_star"].iloc[0])
    if not np.isfinite(x):
        return False
    for ax in (ax_test, ax_train):
        ax.axvline(x, color=colour, linestyle=":", linewidth=1.2)
    return True


def _style_handles(df: pd.DataFrame, drawn: dict) -> list:
    """Legend entries for what the line styles and dots mean."""
    handles = [Line2D([], [], color="0.3", linestyle="-", label="theory")]
    if drawn.get("bayes"):
        handles.append(Line2D([], [], color="0.3", linestyle="-.", label="Bayes-optimal"))
    if drawn.get("star"):
        handles.append(Line2D([], [], color="0.3", linestyle=":", label=r"$\alpha^*_K$"))
    if drawn.get("sim"):
        handles.append(simulation_handle(df))
    return handles


def _fig3_title(df: pd.DataFrame) -> str:
    delta = fmt_g(float(df["delta"].iloc[0])) if "delta" in df.columns else "?"
    ks = sorted(set(int(k) for k in df["K"])) if "K" in df.columns else []
    kk = f"$K = {ks[0]}$" if len(ks) == 1 else f"$K = {ks[0]}..{ks[-1]}$"
    head = "cross-entropy + ridge ($\\ell_2$)"
    if "lam" in df.columns and df["lam"].nunique() == 1:
        head += f", $\\lambda = {fmt_g(float(df['lam'].iloc[0]))}$"
    elif "lam" in df.columns:
        head += f", $\\lambda \\in$ [{fmt_g(df['lam'].min())}, {fmt_g(df['lam'].max())}]"
    user = mixture_title(df)
    if user is not None:
        return f"{head}\n{user}"
    return f"{head}\n{kk} balanced clusters, Gaussian means, $\\Sigma = {delta}\\,I$"


# =========================================================================== Fig. 3 right
def _right_args(
    lams, alphas, mixture, n_clusters, delta, fast, progress, bayes_error, options=None
) -> dict[str, Any]:
    """Validated arguments of :func:`fig3_right` with the presets applied."""
    fast = check_bool("fast", fast)
    preset = FIG3_RIGHT_FAST if fast else FIG3_RIGHT_FULL
    lv = check_array("lams", pick(lams, preset["lams"]), shape=(None,), positive=True)
    if lv.size == 0:
        raise ArgumentError("lams", "must not be empty")
    out: dict[str, Any] = {
        "lams": np.unique(lv),
        "alphas": positive_list("alphas", pick(alphas, preset["alphas"])),
        "progress": check_bool("progress", progress),
        "bayes_error": _check_hook("bayes_error", bayes_error),
        "options": figure_options(options),
    }
    k = pick(n_clusters, 3)
    _mixture_args(out, mixture, n_clusters=k, delta=delta, given=n_clusters)
    return out


def fig3_right(
    lams: Sequence[float] | None = None,
    alphas: Sequence[float] | None = None,
    *,
    mixture: Mixture | None = None,
    n_clusters: int | None = None,
    delta: float | None = None,
    fast: bool = False,
    progress: bool = False,
    bayes_error: BayesHook | None = bayes_optimal_hook,
    options: SolverOptions | Mapping[str, Any] | None = None,
) -> pd.DataFrame:
    """Fig. 3 (right): cross-entropy test error against ``lambda`` at a few alpha (K = 3).

    Parameters
    ----------
    lams : sequence of float, optional
        Penalty strengths (> 0; default :data:`FIG3_RIGHT_FULL`, or
        :data:`FIG3_RIGHT_FAST` with ``fast``), solved from the largest down (annealing).
    alphas : sequence of float, optional
        Sample complexities, one curve each.
    mixture : Mixture, optional
        Any mixture with one-hot labels in place of the paper's (then without
        ``n_clusters`` and ``delta``); its Bayes-optimal error where the hook takes the
        mixture (else NaN, with a ``UserWarning``).
    n_clusters : int, optional
        K (default 3, the paper's).
    delta : float, optional
        Cluster variance ``Sigma_k = Delta I`` (default 0.5).
    fast : bool
        Coarser presets.
    progress : bool
        Progress bars (stderr).
    bayes_error : callable, optional
        ``(mixture, alpha) -> float``: the Bayes-optimal test error, drawn as a
        horizontal dash-dotted line per alpha; None leaves ``bayes_error`` NaN.
    options : SolverOptions or mapping, optional
        The solver's options of every point (``gaussmix figure fig3-right --max-iter N``).
        (A mapping: the solver keywords asked for, also at their defaults; a
        ``SolverOptions``: its fields that differ from the defaults.)

    Returns
    -------
    pandas.DataFrame
        One row per ``(alpha, lam)``: ``K, alpha, lam, delta, loss, penalty, test_error,
        train_error, train_loss, converged, n_iter, integration_error, bayes_error``; with
        ``mixture``, no ``delta`` but ``mixture`` and ``fingerprint`` last.
    """
    a = _right_args(**{k: v for k, v in locals().items()})
    (mix,) = _figure_mixtures(a)
    user = a["mixture"] is not None
    bayes = hook_values(a["bayes_error"], mix, [(float(x),) for x in a["alphas"]], user=user)
    frames = []
    for alpha, best in progress_bar(
        list(zip(a["alphas"], bayes)), desc="fig3-right", enabled=a["progress"], unit="α"
    ):
        df = lambda_sweep(
            mix,
            "cross-entropy",
            a["lams"],
            alpha=float(alpha),
            penalty="l2",
            progress=False,
            options=a["options"],
        )
        rows = _theory_rows(df, mix, a, delta_at=3)
        rows["bayes_error"] = best
        if user:
            add_mixture_columns(rows, mix)
        frames.append(rows)
    return pd.concat(frames, ignore_index=True)


def plot_fig3_right(df: pd.DataFrame, *, title: str | None = None) -> Figure:
    """Draw :func:`fig3_right`: test error against ``lambda`` (log), one curve per alpha,
    each with its colour, line style and marker; the Bayes-optimal error (where present)
    as a horizontal dash-dotted line in the same colour.

    Parameters
    ----------
    df : pandas.DataFrame
        A table of :func:`fig3_right`.
    title : str, optional
        The figure's title (default: one naming the mixture, the loss, the penalty and
        lambda).
    """
    df = check_df(df, ["alpha", "lam", "test_error"])
    fig, axes = new_slide_figure((6.4, 4.6), 1, 1)
    ax = axes[0, 0]
    alphas = list(dict.fromkeys(df["alpha"].tolist()))
    colours = colour_cycle(len(alphas))
    bayes = False
    with mpl.rc_context(SLIDE_STYLE):
        for i, (alpha, colour) in enumerate(zip(alphas, colours)):
            g = df[df["alpha"] == alpha].sort_values("lam", kind="stable")
            lam = g["lam"].to_numpy(dtype=float)
            ax.plot(
                lam,
                g["test_error"].to_numpy(dtype=float),
                linestyle=LINE_STYLES[i % len(LINE_STYLES)],
                marker=MARKERS[i % len(MARKERS)],
                markevery=max(1, lam.size // 6),
                mfc="none",
                color=colour,
                label=rf"$\alpha = {fmt_g(alpha)}$",
            )
            if "bayes_error" in g.columns and np.isfinite(g["bayes_error"].iloc[0]):
                ax.axhline(
                    float(g["bayes_error"].iloc[0]), color=colour, linestyle="-.", zorder=1.5
                )
                bayes = True
        log_axis(ax)
        ax.set_xlabel(AXIS_LABELS["lam"])
        ax.set_ylabel(r"test error $\varepsilon_g$")
        ax.grid(True, which="major", alpha=0.3, linewidth=0.6)
        handles, _ = ax.get_legend_handles_labels()
        if bayes:
            handles.append(Line2D([], [], color="0.3", linestyle="-.", label="Bayes-optimal"))
        ax.legend(handles=handles, loc="best")
        fig.suptitle(title if title is not None else _fig3_title(df))
    return fig


# =========================================================================== registry
register_figure(
    FigureSpec(
        name="fig3-left",
        paper="Fig. 3 (left)",
        description="cross-entropy on K balanced Gaussian clusters (Delta = 0.5), lambda = "
        "1e-4: test and training error vs alpha, with the cusp at the separability threshold "
        "alpha*_K; theory and simulation",
        caption=(
            "Cross-entropy with ridge penalty lambda = 1e-4 on K balanced clusters with "
            "Gaussian means and Sigma = 0.5 I: test error (top) and training error "
            "(bottom) against alpha, one colour per K; lines: theory (Theorems 1-2); "
            "dash-dotted: Bayes-optimal error and dotted verticals: alpha*_K, where "
            "provided. " + ERROR_BAR_CAPTION
        ),
        mixture_caption=(
            "Cross-entropy with ridge penalty lambda on the mixture named below (one-hot "
            "labels): test error (top) and training error (bottom) against alpha; lines: "
            "theory (Theorems 1-2); dash-dotted: Bayes-optimal error and dotted vertical: "
            "alpha*_K, where available for this mixture. " + ERROR_BAR_CAPTION
        ),
        table=fig3_left,
        check=_left_args,
        plot=plot_fig3_left,
        fast={"fast": True},
        fast_note=preset_note(FIG3_LEFT_FAST),
        dots=("simulation",),
        options=(
            FigureOption("--alphas", "alphas", "grid"),
            FigureOption("--n-clusters", "n_clusters", "ints"),
            FigureOption("--delta", "delta", "float"),
            FigureOption("--lam", "lam", "float"),
            FigureOption("--sim-alphas", "sim_alphas", "grid", simulation=True),
            *simulation_options(),
        ),
    )
)

register_figure(
    FigureSpec(
        name="fig3-right",
        paper="Fig. 3 (right)",
        description="cross-entropy, K = 3 Gaussian clusters (Delta = 0.5): test error vs "
        "lambda at a few alpha, falling to the Bayes-optimal error",
        caption=(
            "Cross-entropy with ridge penalty on K = 3 balanced clusters with Gaussian "
            "means and Sigma = 0.5 I: test error against lambda, one curve per alpha "
            "(theory); dash-dotted horizontal lines: the Bayes-optimal error, where "
            "provided. No simulations."
        ),
        mixture_caption=(
            "Cross-entropy with ridge penalty on the mixture named below (one-hot labels): "
            "test error against lambda, one curve per alpha (theory); dash-dotted "
            "horizontal lines: the Bayes-optimal error, where available for this mixture. "
            "No simulations."
        ),
        table=fig3_right,
        check=_right_args,
        plot=plot_fig3_right,
        fast={"fast": True},
        fast_note=preset_note(FIG3_RIGHT_FAST),
        options=(
            FigureOption("--lams", "lams", "grid"),
            FigureOption("--alphas", "alphas", "grid"),
            FigureOption("--n-clusters", "n_clusters", "int"),
            FigureOption("--delta", "delta", "float"),
        ),
    )
)
