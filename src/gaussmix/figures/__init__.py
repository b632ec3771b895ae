"""The paper's figures as tables and matplotlib figures, and the plotting helpers.

Every figure is declared once in :data:`FIGURES` (:mod:`gaussmix.figures.registry`) by
the module that makes it: :mod:`~gaussmix.figures.sparse` (Figs. 1 right and 2).
``write_figure(name, out_dir)`` computes one and writes its CSV, PNG and JSON caption;
the table and plot functions of each figure are public too.
"""

from .plotting import (
    new_axes,
    plot_comparison,
    plot_lambda_curve,
    plot_learning_curve,
    save_figure,
)
from .registry import (
    FIGURES,
    FigureOption,
    FigureOutput,
    FigureSpec,
    get_figure,
    register_figure,
    validate_figure,
    write_figure,
)
from .sparse import (
    CURVE_ALPHAS,
    CURVE_DELTA2S,
    CURVE_SEEDS,
    CURVE_SIM_ALPHAS,
    SETUP_ALPHAS,
    plot_sparse_curves,
    plot_sparse_setup,
    simulation_alpha,
    sparse_curves,
    sparse_setup,
)

__all__ = [
    "FIGURES",
    "FigureSpec",
    "FigureOption",
    "FigureOutput",
    "register_figure",
    "get_figure",
    "write_figure",
    "validate_figure",
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
    "plot_learning_curve",
    "plot_lambda_curve",
    "plot_comparison",
    "save_figure",
    "new_axes",
]
