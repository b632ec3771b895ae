"""The paper's figures as tables and matplotlib figures, and the plotting helpers.

``write_figure(name, out_dir)`` computes a figure registered in :data:`FIGURES` and writes
its CSV and PNG; the table and plot functions of each figure are public too.
"""

from .plotting import (
    new_axes,
    plot_comparison,
    plot_lambda_curve,
    plot_learning_curve,
    save_figure,
)
from .sparse import (
    CURVE_ALPHAS,
    CURVE_DELTA2S,
    CURVE_SEEDS,
    CURVE_SIM_ALPHAS,
    FIGURES,
    SETUP_ALPHAS,
    FigureOutput,
    plot_sparse_curves,
    plot_sparse_setup,
    simulation_alpha,
    sparse_curves,
    sparse_setup,
    validate_figure,
    write_figure,
)

__all__ = [
    "FIGURES",
    "FigureOutput",
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
    "write_figure",
    "validate_figure",
    "plot_learning_curve",
    "plot_lambda_curve",
    "plot_comparison",
    "save_figure",
    "new_axes",
]
