"""Real data against Gaussian-mixture theory: the plot of a real-data study (Fig. 5 style).

Two panels against ``alpha``: the test error and the training loss.  Theory: a line;
synthetic data from the fitted mixture: open circles; real data: filled squares; both with
one-standard-error bars.  The table comes from :func:`gaussmix.studies.realdata_curve`.
"""

from __future__ import annotations

import matplotlib as mpl
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from .plotting import AXIS_LABELS, STYLE

__all__ = ["plot_realdata", "SLIDE_STYLE"]

#: larger fonts than the library's default style: these figures are shown in talks
SLIDE_STYLE = {
    **STYLE,
    "font.size": 11.0,
    "axes.labelsize": 12.0,
    "axes.titlesize": 12.0,
    "legend.fontsize": 10.0,
}

_MARKERS = {"synthetic": ("o", "none"), "real": ("s", None)}
_NAMES = {"theory": "theory", "synthetic": "synthetic (fitted mixture)", "real": "real data"}


def plot_realdata(
    df: pd.DataFrame, *, title: str | None = None, figsize: tuple[float, float] = (10.0, 4.0)
) -> Figure:
    """Test error and training loss against alpha for each source of ``df``.

    Parameters
    ----------
    df : pandas.DataFrame
        Columns ``alpha, source, test_error, test_error_se, train_loss, train_loss_se``
        (one row per (alpha, source)).
    title : str, optional
        The figure's title (name the data set, task, loss, penalty and lambda).
    """
    missing = [c for c in ("alpha", "source", "test_error", "train_loss") if c not in df]
    if missing:
        raise ValueError(f"df lacks the columns {missing}")
    with mpl.rc_context(SLIDE_STYLE):
        fig = Figure(figsize=figsize, layout="constrained")
        FigureCanvasAgg(fig)
        axes = fig.subplots(1, 2)
        for ax, y, name in zip(
            axes, ("test_error", "train_loss"), ("test error", "training loss")
        ):
            for i, (source, part) in enumerate(df.groupby("source", sort=False)):
                part = part.sort_values("alpha")
                color = f"C{i}"
                label = _NAMES.get(str(source), str(source))
                if str(source) == "theory":
                    ax.plot(part["alpha"], part[y], "-", color=color, label=label, zorder=1)
                    continue
                marker, face = _MARKERS.get(str(source), ("^", None))
                ax.errorbar(
                    part["alpha"],
                    part[y],
                    yerr=part.get(f"{y}_se"),
                    fmt=marker,
                    color=color,
                    mfc=face if face is not None else color,
                    label=f"{label} (±1 s.e.)",
                    zorder=2 + i,
                )
            ax.set_xlabel(AXIS_LABELS["alpha"])
            ax.set_ylabel(name)
            ax.set_title(name)
        axes[0].legend()
        if title:
            fig.suptitle(title)
    return fig
