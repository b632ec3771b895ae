"""Publication-ready figures of learning curves (matplotlib, no display needed).

Figures are built with the object-oriented API on an Agg canvas
(:class:`matplotlib.figure.Figure` + ``FigureCanvasAgg``): nothing here selects a global
backend or touches ``pyplot``, so the module works headless and does not disturb an
interactive session.  Pass ``ax=`` to draw into an axes of your own figure instead.

Theory curves are lines; simulations (a DataFrame with columns ``x``, ``<y>`` and
``<y>_se``) are dots with error bars in the colour of the matching theory line.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib as mpl
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import Formatter, Locator, LogLocator, MaxNLocator, NullFormatter

__all__ = [
    "plot_learning_curve",
    "plot_lambda_curve",
    "plot_comparison",
    "save_figure",
    "new_axes",
    "LogTicks",
    "LogLabels",
    "log_ticks",
    "tick_labels",
]

#: axis labels of known columns
AXIS_LABELS = {
    "alpha": r"$\alpha = n/d$",
    "lam": r"$\lambda$",
    "lambda": r"$\lambda$",
}
#: legend names of known columns
SERIES_LABELS = {
    "test_error": "test error",
    "train_error": "train error",
    "train_loss": "train loss",
    "free_energy": "free energy",
    "penalty_value": "penalty",
}
#: style applied to figures created here: type of at least 10 pt on the axes (ticks, labels,
#: titles) at the saved size, 9 pt in the legend, readable on a projected slide
STYLE = {
    "font.size": 10.0,
    "axes.labelsize": 11.0,
    "axes.titlesize": 11.0,
    "xtick.labelsize": 10.0,
    "ytick.labelsize": 10.0,
    "legend.fontsize": 9.0,
    "legend.frameon": False,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "lines.linewidth": 1.6,
    "lines.markersize": 4.0,
    "errorbar.capsize": 2.0,
}


def new_axes(figsize: tuple[float, float] = (4.5, 3.2)) -> Axes:
    """A fresh axes on its own Agg figure (with the module's style).

    Parameters
    ----------
    figsize : (float, float)
        Figure size in inches.
    """
    with mpl.rc_context(STYLE):
        fig = Figure(figsize=figsize, layout="constrained")
        FigureCanvasAgg(fig)
        return fig.add_subplot()


#: the most labelled ticks :class:`LogTicks` puts on an axis
MAX_LOG_TICKS = 8
#: the space :class:`LogTicks` keeps between two tick labels, in ems of their font
LABEL_GAP_EM = 1.0
#: widths of the characters of a plain number's label, in ems (DejaVu Sans, matplotlib's
#: default: digits 0.636, the point 0.318; other characters at most 0.84)
_CHAR_EM = {".": 0.33, "-": 0.84, "e": 0.62}
_DIGIT_EM = 0.64


#: the decades beyond which a power of ten is labelled ``10^k`` (``0.001`` to ``10000``
#: are written out)
_PLAIN_DECADES = (-3, 4)


def _label_em(text: str) -> float:
    """The estimated width of the label ``text`` in ems (``$10^{k}$``: the exponent in
    superscript, 0.7 of the size)."""
    if text.startswith("$10^{"):
        return 2 * _DIGIT_EM + 0.7 * _label_em(text[5:-2])
    return sum(_CHAR_EM.get(c, _DIGIT_EM) for c in text)


def _decade(value: float) -> int | None:
    """``k`` if ``value`` is ``10**k``, else None."""
    if value <= 0 or not np.isfinite(value):
        return None
    k = round(float(np.log10(value)))
    return k if np.isclose(value, 10.0**k) else None


def tick_labels(values: Sequence[float]) -> list[str]:
    """The labels of a log axis's ticks ``values``: numbers as written by hand (``0.05``,
    ``2``, ``100``); when every tick is a power of ten and one of them lies outside
    ``0.001`` to ``10000``, all of them as ``10^k`` (one style along the axis)."""
    ks = [_decade(float(v)) for v in values]
    lo, hi = _PLAIN_DECADES
    if values and all(k is not None for k in ks) and any(not lo <= k <= hi for k in ks):
        return [f"$10^{{{k}}}$" for k in ks]
    return [f"{float(v):g}" for v in values]


class LogLabels(Formatter):
    """The labels of :func:`tick_labels`, chosen for the axis's ticks as a whole."""

    def __init__(self) -> None:
        self._labels: dict[float, str] = {}

    def set_locs(self, locs: Sequence[float]) -> None:
        super().set_locs(locs)
        self._labels = dict(zip((float(v) for v in locs), tick_labels(list(locs)), strict=True))

    def __call__(self, x: float, pos: Any = None) -> str:
        return self._labels.get(float(x)) or tick_labels([x])[0]


class LogTicks(Locator):
    """Major ticks of a logarithmic axis whose labels fit along it without overlapping.

    Matplotlib's default log locator labels decades in scientific notation and, on ranges of
    about one decade, also the minor ticks (``2x10^-1``, ``3x10^-1``, ...) whose labels run
    together.  This locator instead takes, of a ladder of round values from sparse to dense
    (every n-th decade; ``1, 3``, ``1, 2, 5`` per decade; then evenly spaced round values
    for ranges shorter than a decade), the one with the most ticks (at most
    :data:`MAX_LOG_TICKS`) whose labels (``0.05``, ``2``, ``100``, ``10^-5``, see
    :func:`log_ticks`) leave :data:`LABEL_GAP_EM` between neighbours at the axis's drawn
    length and its tick labels' font size.  The labels' widths are estimated from the
    default font's character widths (:data:`_CHAR_EM`).
    """

    def __call__(self) -> Sequence[float]:
        vmin, vmax = self.axis.get_view_interval()
        return self.tick_values(vmin, vmax)

    def _room(self) -> tuple[float, float]:
        """The axis's drawn length and its tick labels' font size, in points."""
        axes = self.axis.axes
        horizontal = self.axis.axis_name == "x"
        length = axes.bbox.width if horizontal else axes.bbox.height
        length_pt = float(length) * 72.0 / float(axes.figure.dpi)
        size = float(self.axis.majorTicks[0].label1.get_fontsize())
        return length_pt, size

    def _fits(self, ticks: np.ndarray, lo: float, hi: float, length: float, size: float) -> bool:
        if ticks.size < 2:
            return ticks.size == 1
        pos = (np.log10(ticks) - lo) / (hi - lo) * length
        if self.axis.axis_name == "x":
            half = np.array([_label_em(t) for t in tick_labels(list(ticks))]) * size / 2
        else:  # labels stacked along a vertical axis: their height
            half = np.full(ticks.size, size / 2)
        return bool(np.all(np.diff(pos) >= half[1:] + half[:-1] + LABEL_GAP_EM * size))

    def tick_values(self, vmin: float, vmax: float) -> Sequence[float]:
        vmin, vmax = sorted((float(vmin), float(vmax)))
        if not (np.isfinite(vmin) and np.isfinite(vmax) and 0 < vmin < vmax):
            return LogLocator().tick_values(vmin, vmax)
        lo, hi = np.log10(vmin), np.log10(vmax)
        length, size = self._room()
        best = np.array([])
        for ticks in self._ladder(vmin, vmax):
            ticks = ticks[(ticks >= vmin * (1 - 1e-9)) & (ticks <= vmax * (1 + 1e-9))]
            if best.size < ticks.size <= MAX_LOG_TICKS and self._fits(ticks, lo, hi, length, size):
                best = ticks
        return best if best.size else LogLocator().tick_values(vmin, vmax)

    @staticmethod
    def _ladder(vmin: float, vmax: float) -> list[np.ndarray]:
        """Candidate ticks over ``[vmin, vmax]``, from sparse to dense."""
        k0, k1 = int(np.floor(np.log10(vmin))), int(np.ceil(np.log10(vmax)))
        decades = np.arange(k0, k1 + 1)
        out = [10.0 ** decades[decades % s == 0] for s in (8, 5, 4, 3, 2)]
        out.append(10.0**decades)
        for mantissas in ((1.0, 3.0), (1.0, 2.0, 5.0)):
            out.append(np.array([m * 10.0**k for k in decades for m in mantissas]))
        for nbins in range(1, MAX_LOG_TICKS + 1):  # short ranges: round values, evenly spaced
            ticks = MaxNLocator(nbins=nbins, steps=[1, 2, 2.5, 5, 10]).tick_values(vmin, vmax)
            out.append(np.asarray(ticks[ticks > 0], dtype=float))
        return out


def log_ticks(ax: Axes, axis: str = "x") -> None:
    """Give ``ax``'s ``axis`` (``'x'`` or ``'y'``, already logarithmic) the ticks of
    :class:`LogTicks` with the labels of :func:`tick_labels` (``0.05``, ``2``, ``100``;
    ``10^-5`` ... ``10^2`` for decades reaching beyond ``0.001`` to ``10000``), unlabelled
    minor ticks.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
        The axes.
    axis : {'x', 'y'}
        Which axis.
    """
    if axis not in ("x", "y"):
        raise ValueError(f"axis must be 'x' or 'y', got {axis!r}")
    target = ax.xaxis if axis == "x" else ax.yaxis
    target.set_major_locator(LogTicks())
    target.set_major_formatter(LogLabels())
    target.set_minor_formatter(NullFormatter())


def _y_label(ys: Sequence[str]) -> str:
    if all(y.endswith("_error") for y in ys):
        return "error"
    if all(y.endswith("_loss") for y in ys):
        return "loss"
    if len(ys) == 1:
        return SERIES_LABELS.get(ys[0], ys[0])
    return "value"


def _check_columns(name: str, df: Any, columns: Sequence[str]) -> pd.DataFrame:
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"{name} must be a pandas DataFrame, got {type(df).__name__}")
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ValueError(f"{name} has no column(s) {missing}; columns are {list(df.columns)}")
    return df


def plot_learning_curve(
    df: pd.DataFrame,
    *,
    x: str = "alpha",
    ys: str | Sequence[str] = ("test_error", "train_error"),
    sim: pd.DataFrame | None = None,
    ax: Axes | None = None,
    logx: bool = False,
    logy: bool = False,
    title: str | None = None,
) -> Axes:
    """Theory curves ``ys`` against ``x``, with optional simulation points.

    Parameters
    ----------
    df : DataFrame
        Theory table, e.g. from :func:`gaussmix.learning_curve` (columns ``x`` and ``ys``).
        Rows are sorted by ``x``; NaN rows (points without a fixed point) leave gaps.
    x : str
        Column on the horizontal axis (``'alpha'`` or ``'lam'``).
    ys : str or sequence of str
        Columns to draw as lines.
    sim : DataFrame, optional
        Simulation table with columns ``x``, ``<y>`` and (for error bars) ``<y>_se`` for
        each ``y`` of ``ys``; missing ``<y>`` columns are skipped.
    ax : Axes, optional
        Draw into this axes (default: a new figure, see :func:`new_axes`).
    logx, logy : bool
        Logarithmic axes.
    title : str, optional
        The axes' title.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn into; its figure is ``ax.figure`` (see :func:`save_figure`).
    """
    ys = (ys,) if isinstance(ys, str) else tuple(ys)
    if not ys:
        raise ValueError("ys must name at least one column")
    _check_columns("df", df, [x, *ys])
    if sim is not None:
        _check_columns("sim", sim, [x])
    if ax is None:
        ax = new_axes()
    with mpl.rc_context(STYLE):
        theory = df.sort_values(x, kind="stable")
        xv = theory[x].to_numpy(dtype=float)
        for y in ys:
            name = SERIES_LABELS.get(y, y)
            (line,) = ax.plot(xv, theory[y].to_numpy(dtype=float), "-", label=f"{name} (theory)")
            if sim is None or y not in sim.columns:
                continue
            s = sim.sort_values(x, kind="stable")
            se = f"{y}_se"
            yerr = s[se].to_numpy(dtype=float) if se in s.columns else None
            ax.errorbar(
                s[x].to_numpy(dtype=float),
                s[y].to_numpy(dtype=float),
                yerr=yerr,
                fmt="o",
                color=line.get_color(),
                capsize=STYLE["errorbar.capsize"],
                markersize=STYLE["lines.markersize"],
                label=f"{name} (simulation)",
            )
        if logx:
            ax.set_xscale("log")
            log_ticks(ax, "x")
        if logy:
            ax.set_yscale("log")
            log_ticks(ax, "y")
        ax.set_xlabel(AXIS_LABELS.get(x, x))
        ax.set_ylabel(_y_label(ys))
        if title:
            ax.set_title(title)
        ax.grid(True, which="major", alpha=0.3, linewidth=0.6)
        ax.legend(loc="best")
    return ax


def plot_lambda_curve(
    df: pd.DataFrame,
    *,
    ys: str | Sequence[str] = ("test_error", "train_error"),
    sim: pd.DataFrame | None = None,
    ax: Axes | None = None,
    logx: bool | None = None,
    logy: bool = False,
    title: str | None = None,
) -> Axes:
    """Errors against the penalty strength ``lam`` (e.g. :func:`gaussmix.lambda_sweep`).

    The horizontal axis is logarithmic unless ``logx=False`` or some ``lam`` is <= 0.
    Other parameters as in :func:`plot_learning_curve`.

    Parameters
    ----------
    df : pandas.DataFrame
        Theory: a table with ``lam`` and the columns ``ys``.
    ys : str or sequence of str
        The columns drawn.
    sim : pandas.DataFrame, optional
        Simulations (``lam`` and ``<y>``, ``<y>_se``), drawn as dots with error bars.
    ax : matplotlib.axes.Axes, optional
        Where to draw (default: new axes).
    logx, logy : bool
        Logarithmic axes (``logx`` default: log unless some ``lam`` <= 0).
    title : str, optional
        The axes' title.
    """
    _check_columns("df", df, ["lam"])
    if logx is None:
        lam = df["lam"].to_numpy(dtype=float)
        logx = bool(np.all(lam[np.isfinite(lam)] > 0))
    return plot_learning_curve(
        df, x="lam", ys=ys, sim=sim, ax=ax, logx=logx, logy=logy, title=title
    )


def plot_comparison(
    df: pd.DataFrame,
    *,
    x: str = "alpha",
    prefix: str = "sim_",
    logx: bool = False,
    title: str | None = None,
    figsize: tuple[float, float] = (8.0, 3.2),
) -> Figure:
    """Theory against simulation in two panels: errors, and training loss.

    ``df`` has the theory columns ``x, test_error, train_error, train_loss`` and the
    simulation columns ``<prefix><y>`` and ``<prefix><y>_se`` (as written by
    ``gaussmix compare``).  Theory: lines; simulation: dots with standard-error bars.

    Parameters
    ----------
    df : pandas.DataFrame
        Theory and simulation columns, as above.
    x : str
        The column on the horizontal axis.
    prefix : str
        The prefix of the simulation columns.
    logx : bool
        A logarithmic horizontal axis.
    title : str, optional
        The figure's title.
    figsize : (float, float)
        Figure size in inches.
    """
    ys = ("test_error", "train_error", "train_loss")
    _check_columns("df", df, [x, *ys])
    sim = pd.DataFrame({x: df[x]})
    for y in ys:
        for suffix in ("", "_se"):
            col = f"{prefix}{y}{suffix}"
            if col in df.columns:
                sim[f"{y}{suffix}"] = df[col]
    with mpl.rc_context(STYLE):
        fig = Figure(figsize=figsize, layout="constrained")
        FigureCanvasAgg(fig)
        ax_err, ax_loss = fig.subplots(1, 2)
    plot_learning_curve(df, x=x, ys=ys[:2], sim=sim, ax=ax_err, logx=logx)
    plot_learning_curve(df, x=x, ys=ys[2:], sim=sim, ax=ax_loss, logx=logx)
    with mpl.rc_context(STYLE):
        ax_err.set_title("classification error")
        ax_loss.set_title("training loss")
        if title:
            fig.suptitle(title, fontsize=STYLE["axes.titlesize"])
    return fig


def save_figure(fig: Figure | Axes, path: str | Path, *, dpi: int = 150) -> Path:
    """Save a figure (or the figure of an axes) with a tight bounding box.

    The format follows the suffix of ``path`` (PNG when there is none); parent
    directories are created.  Returns the path written.

    Parameters
    ----------
    fig : matplotlib.figure.Figure or matplotlib.axes.Axes
        What to save.
    path : path
        The file written.
    dpi : int
        Resolution of raster formats.
    """
    if isinstance(fig, Axes):
        fig = fig.figure
    if not isinstance(fig, Figure):
        raise TypeError(f"fig must be a matplotlib Figure or Axes, got {type(fig).__name__}")
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fmt = p.suffix[1:].lower() if p.suffix else "png"
    if fig.canvas is None or not hasattr(fig.canvas, "print_figure"):
        FigureCanvasAgg(fig)
    fig.savefig(p, dpi=dpi, bbox_inches="tight", format=fmt)
    return p
