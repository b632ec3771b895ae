"""Helpers shared by the figure modules (validation of figure arguments, axes, colours)."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import matplotlib as mpl
import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from gaussmix.core.exceptions import ArgumentError, ArgumentTypeError
from gaussmix.core.validation import check_array, check_param_values
from gaussmix.theory.api.api import make_problem
from gaussmix.theory.model.mixture import Mixture

from .plotting import STYLE, log_ticks

#: the rule (:data:`gaussmix.core.validation.PARAMETERS`) of each kind of grid of a figure
_GRID_FACTS = {"alphas": "alpha", "sim_alphas": "alpha", "lams": "lam"}


def check_alphas(name: str, alphas: Any) -> np.ndarray:
    """A figure's grid, sorted and distinct: ``alphas`` / ``sim_alphas`` by the rule of
    ``alpha``, ``lams`` by that of ``lam``, any other (``gammas``) positive."""
    fact = _GRID_FACTS.get(name)
    if fact is not None:
        return np.unique(check_param_values(fact, alphas, name=name))
    a = check_array(name, alphas, shape=(None,), positive=True)
    if a.size == 0:
        raise ValueError(f"{name} must not be empty")
    return np.unique(a)


def positive_list(name: str, values: Any) -> np.ndarray:
    v = check_array(name, values, shape=(None,), positive=True)
    if v.size == 0:
        raise ValueError(f"{name} must not be empty")
    if np.unique(v).size != v.size:
        raise ValueError(f"{name} must not repeat a value, got {v.tolist()}")
    return v


def check_bool(name: str, value: Any) -> bool:
    if not isinstance(value, bool | np.bool_):
        raise TypeError(f"{name} must be a bool, got {value!r}")
    return bool(value)


def fmt_g(x: float) -> str:
    return f"{x:g}"


def colour_cycle(n: int) -> list:
    cycle = mpl.rcParams["axes.prop_cycle"].by_key().get("color", ["C0"])
    return [cycle[i % len(cycle)] for i in range(n)]


def check_df(df: Any, columns: Sequence[str]) -> pd.DataFrame:
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"df must be a pandas DataFrame, got {type(df).__name__}")
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ValueError(f"df has no column(s) {missing}; columns are {list(df.columns)}")
    if df.empty:
        raise ValueError("df has no rows")
    return df


#: style of the figures made for slides (larger type than :data:`STYLE`)
SLIDE_STYLE = {
    **STYLE,
    "font.size": 11.0,
    "axes.labelsize": 12.0,
    "axes.titlesize": 12.0,
    "legend.fontsize": 10.0,
    "xtick.labelsize": 10.0,
    "ytick.labelsize": 10.0,
    "lines.linewidth": 1.8,
    "lines.markersize": 5.0,
}
#: line styles cycled over series of one figure, so that coincident curves stay visible
LINE_STYLES = ("-", "--", "-.", ":")
#: markers cycled over series of one figure (theory lines carry a few of them)
MARKERS = ("o", "s", "^", "D", "v", "P")


def new_slide_figure(figsize: tuple[float, float], nrows: int, ncols: int, **kw: Any):
    """A figure and its axes (``squeeze=False``) in :data:`SLIDE_STYLE`."""
    with mpl.rc_context(SLIDE_STYLE):
        fig = Figure(figsize=figsize, layout="constrained")
        FigureCanvasAgg(fig)
        axes = fig.subplots(nrows, ncols, squeeze=False, **kw)
    return fig, axes


def log_axis(ax: Any, axis: str = "x") -> None:
    """A log scale on ``ax``'s ``axis`` with labels that do not overlap
    (:func:`gaussmix.figures.plotting.log_ticks`)."""
    (ax.set_xscale if axis == "x" else ax.set_yscale)("log")
    log_ticks(ax, axis)


def balanced_alpha(alpha: float, d: int, k: int) -> float:
    """``alpha`` rounded so that ``n = alpha d`` is a positive multiple of ``k``: with
    balanced clusters the simulated class counts are then exactly equal."""
    n = max(k, k * int(np.floor(alpha * d / k + 0.5)))
    return n / d


def simulation_columns(rows: pd.DataFrame, keys: Sequence[str]) -> None:
    """Add empty simulation columns (``sim_alpha``, ``sim_lam``, ``sim_<key>``,
    ``sim_<key>_se``, ``sim_converged``, ``sim_d``, ``sim_seeds``) to ``rows`` in place."""
    for c in ("sim_alpha", "sim_lam"):
        rows[c] = np.nan
    for key in keys:
        rows[f"sim_{key}"] = np.nan
        rows[f"sim_{key}_se"] = np.nan
    rows["sim_converged"] = pd.array([pd.NA] * len(rows), dtype="boolean")
    rows["sim_d"] = np.nan
    rows["sim_seeds"] = np.nan


def fill_simulation(rows: pd.DataFrame, idx: Any, result: Any, keys: Sequence[str]) -> None:
    """Write a :class:`gaussmix.simulate.SimulationResult` into the ``sim_*`` columns of
    ``rows.loc[idx]``."""
    p = result.params
    rows.loc[idx, "sim_alpha"] = float(p["n"]) / float(p["d"])
    rows.loc[idx, "sim_lam"] = float(p["lam"])
    for key in keys:
        rows.loc[idx, f"sim_{key}"] = float(result.mean[key])
        rows.loc[idx, f"sim_{key}_se"] = float(result.se[key])
    rows.loc[idx, "sim_converged"] = bool(result.success)
    rows.loc[idx, "sim_d"] = int(p["d"])
    rows.loc[idx, "sim_seeds"] = int(p["seeds"])


def errorbars(ax: Any, x: Any, y: Any, se: Any, colour: Any, marker: str) -> None:
    """Simulation dots with +-1 standard-error bars."""
    ax.errorbar(
        np.asarray(x, dtype=float),
        np.asarray(y, dtype=float),
        yerr=np.asarray(se, dtype=float),
        fmt=marker,
        color=colour,
        mfc="white",
        mew=1.3,
        capsize=SLIDE_STYLE["errorbar.capsize"] + 1.0,
        markersize=SLIDE_STYLE["lines.markersize"] + 1.0,
        zorder=3,
    )


#: words for the parameters of a preset in :func:`preset_note`
_PRESET_WORDS = {
    "n_clusters": "K",
    "ks": "K",
    "alphas": "alphas",
    "lams": "lambdas",
    "sim_alphas": "simulated alphas",
    "sim_lams": "simulated lambdas",
    "simulate_d": "simulation d",
    "sim_d": "LP d",
    "seeds": "seeds",
    "datasets": "LP data sets per alpha",
    "deltas": "Delta",
    "sim_ks": "LP dots for K",
    "ratios": "Delta1/Delta2",
    "delta2s": "Delta2",
    "gammas": "gamma = p/d",
    "subsamples": "real-data subsamples",
    "epochs": "epochs",
    "hidden": "hidden units",
    "sources": "curves",
    "d": "d",
    "n_points": "points per panel",
}
#: keys whose values are names (data sets, curves), not numbers
_NAME_WORDS = {"datasets": "data sets", "dataset": "data set", "sources": "curves"}


def preset_note(preset: dict[str, Any]) -> str:
    """A preset of a figure in words: ``'K = 2, 3; alphas: 7 in [0.5, 6]; ...'``."""
    parts = []
    for key, value in preset.items():
        name = _PRESET_WORDS.get(key, key)
        if key in _NAME_WORDS and (
            isinstance(value, str) or (isinstance(value, Sequence) and isinstance(value[0], str))
        ):
            names = [value] if isinstance(value, str) else list(value)
            parts.append(f"{_NAME_WORDS[key]}: {', '.join(names)}")
        elif isinstance(value, Sequence) and not isinstance(value, str):
            v = [float(x) for x in value]
            if len(v) > 4:
                parts.append(f"{name}: {len(v)} in [{fmt_g(min(v))}, {fmt_g(max(v))}]")
            else:
                parts.append(f"{name} = {', '.join(fmt_g(x) for x in v)}")
        else:
            parts.append(f"{name} = {value}")
    return "; ".join(parts)


def pick(value: Any, preset: Any) -> Any:
    """``value`` unless it is None, then the preset."""
    return preset if value is None else value


def simulation_handle(df: pd.DataFrame) -> Any:
    """The legend entry of simulation dots: open circles, with d, seeds and the error bars."""
    from matplotlib.lines import Line2D

    d, n = int(df["sim_d"].dropna().iloc[0]), int(df["sim_seeds"].dropna().iloc[0])
    return Line2D(
        [],
        [],
        linestyle="none",
        marker="o",
        mfc="white",
        color="0.3",
        label=rf"simulation $d = {d}$, {n} seeds ($\pm$1 s.e.)",
    )


# ============================================================================ a user's mixture
def user_mixture(
    mixture: Any, loss: str, *, lam: float, alpha: float, **builders: Any
) -> Mixture | None:
    """A figure's ``mixture`` argument: None (the paper's mixtures), or a mixture that the
    figure's ``loss`` (ridge penalty) can train on at ``lam`` and ``alpha`` (validated by
    :func:`gaussmix.theory.api.api.make_problem`, which names what does not fit), given without
    ``builders``: the figure's arguments that build the paper's mixture (None when not
    given)."""
    if mixture is None:
        return None
    if not isinstance(mixture, Mixture):
        raise ArgumentTypeError(
            "mixture", f"must be a gaussmix.Mixture or None, got {type(mixture).__name__}"
        )
    for name, value in builders.items():
        if value is not None:
            raise ArgumentError(
                name,
                "must not be given with mixture (it builds the paper's mixture; "
                "the mixture given defines its clusters, means and covariances)",
            )
    make_problem(mixture, loss, lam=lam, alpha=alpha, penalty="l2")
    return mixture


def add_mixture_columns(rows: pd.DataFrame, mixture: Mixture) -> None:
    """The provenance of a user's mixture in a figure's table (in place): ``mixture`` (the
    structure's ``describe()``) and ``fingerprint`` (:meth:`Mixture.fingerprint`)."""
    rows["mixture"] = mixture.covariance.describe()
    rows["fingerprint"] = mixture.fingerprint()


def mixture_title(df: pd.DataFrame) -> str | None:
    """The title's line naming a user's mixture (:func:`add_mixture_columns`), or None
    for the paper's."""
    if "fingerprint" not in df.columns:
        return None
    return f"mixture {df['mixture'].iloc[0]} (fingerprint {df['fingerprint'].iloc[0]})"


def hook_values(
    hook: Callable[..., float] | None, mixture: Mixture, points: Sequence[Any], *, user: bool
) -> np.ndarray:
    """``hook(mixture, *point)`` for every point (NaN without a hook).  On a user's mixture
    a hook that refuses it (a ``ValueError``: e.g. the Bayes-optimal error needs isotropic
    covariances) leaves the values NaN with a ``UserWarning`` giving its reason; on the
    paper's mixtures its error propagates."""
    if hook is None:
        return np.full(len(points), np.nan)
    try:
        return np.array([float(hook(mixture, *p)) for p in points], dtype=float)
    except ValueError as exc:
        if not user:
            raise
        name = getattr(hook, "__name__", "hook")
        warnings.warn(
            f"{name} is not drawn on this mixture: {' '.join(str(exc).split())}",
            UserWarning,
            stacklevel=3,
        )
        return np.full(len(points), np.nan)


def figure_options(options: Any, **own: Any) -> Any:
    """The solver's options of a figure: the figure's own choices ``own`` (keywords of
    :class:`~gaussmix.theory.solve.options.SolverOptions`, e.g. ``estimate_error=False``) with
    the options a caller asked for over them; validated once.

    Parameters
    ----------
    options : mapping, SolverOptions or None
        The caller's options: a mapping of solver keywords (every one given is asked for,
        also at its default: ``gaussmix figure ten-class --estimate-error``), or a
        :class:`~gaussmix.theory.solve.options.SolverOptions` (the fields that differ from the
        defaults are asked for, :func:`~gaussmix.theory.solve.options.changed_options`); None:
        none.
    **own
        The figure's own solver options.

    Returns
    -------
    SolverOptions

    Raises
    ------
    TypeError
        ``options`` is neither, or names a keyword that is no solver option.
    ValueError
        An option's value is out of range (named).
    """
    from collections.abc import Mapping

    from gaussmix.theory.solve.options import SolverOptions, changed_options, solver_options

    if options is None:
        asked: dict[str, Any] = {}
    elif isinstance(options, SolverOptions):
        asked = changed_options(options)
    elif isinstance(options, Mapping):
        asked = dict(options)
    else:
        raise ArgumentTypeError(
            "options",
            "must be a gaussmix.SolverOptions, a mapping of solver options or None, got "
            f"{type(options).__name__}",
        )
    return solver_options(None, {**own, **asked}, caller="figure")
