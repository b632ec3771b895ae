"""The paper's figures as tables and matplotlib figures, and the plotting helpers.

Every figure is declared once in :data:`FIGURES` (:mod:`gaussmix.figures.registry`) by
the module that makes it: :mod:`~gaussmix.figures.projections` (Fig. 1 left and the XOR
set-up of Appendix E), :mod:`~gaussmix.figures.sparse` (Figs. 1 right and 2),
:mod:`~gaussmix.figures.multiclass` (Fig. 3 left and right),
:mod:`~gaussmix.figures.transition` (Fig. 3 centre),
:mod:`~gaussmix.figures.regularisation` (Fig. 4 left) and
:mod:`~gaussmix.figures.realdata` (Figs. 4 right, 5, 6 and ten classes) and
:mod:`~gaussmix.figures.appendix_e` (the real-data figures of Appendix E).
``write_figure(name, out_dir)`` computes one and writes its CSV, PNG and JSON caption; the
table and plot functions of each figure are public too.  :func:`atlas` lists them all and
:func:`make_atlas` makes them all (:mod:`gaussmix.figures.paper_atlas`).
"""

from .appendix_e import xor_table  # noqa: F401  (registers the real-data figures of App. E)
from .multiclass import (
    FIG3_LEFT_FAST,
    FIG3_LEFT_FULL,
    FIG3_RIGHT_FAST,
    FIG3_RIGHT_FULL,
    fig3_left,
    fig3_right,
    plot_fig3_left,
    plot_fig3_right,
)
from .owndata import plot_data_study, save_data_study
from .paper_atlas import AtlasResult, atlas, make_atlas
from .plotting import (
    new_axes,
    plot_comparison,
    plot_lambda_curve,
    plot_learning_curve,
    save_figure,
)
from .projections import (  # registers Fig. 1 left and the XOR set-up of Appendix E
    plot_sparse_projection,
    plot_xor_projection,
    sparse_projection,
    xor_projection,
)
from .realdata import REAL_SETUPS, plot_realdata  # registers Figs. 4 right, 5, 6, ten classes
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
from .regularisation import FIG4_LEFT_FAST, FIG4_LEFT_FULL, fig4_left, plot_fig4_left
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
from .transition import fig3_centre, plot_fig3_centre  # registers Fig. 3 centre

__all__ = [
    "atlas",
    "make_atlas",
    "AtlasResult",
    "sparse_projection",
    "plot_sparse_projection",
    "xor_projection",
    "plot_xor_projection",
    "REAL_SETUPS",
    "plot_realdata",
    "plot_data_study",
    "save_data_study",
    "fig3_centre",
    "plot_fig3_centre",
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
    "FIG3_LEFT_FULL",
    "FIG3_LEFT_FAST",
    "FIG3_RIGHT_FULL",
    "FIG3_RIGHT_FAST",
    "fig3_left",
    "plot_fig3_left",
    "fig3_right",
    "plot_fig3_right",
    "FIG4_LEFT_FULL",
    "FIG4_LEFT_FAST",
    "fig4_left",
    "plot_fig4_left",
    "plot_learning_curve",
    "plot_lambda_curve",
    "plot_comparison",
    "save_figure",
    "new_axes",
]
