"""Take the explorer's view away: the CSV, the PNG, a Python script and a command line.

Each reproduces the explorer's curve exactly: :func:`export_csv` is the library's table
written as ``gaussmix curve`` / ``lambda-curve`` write it; :func:`export_cli` is that
command (the state's options said with the command line's flags); :func:`export_python` a
script calling the mixture's constructor with the arguments the command line's builder
resolves (:func:`~gaussmix.frontend.options.mixture_arguments`), the grid of
:func:`gaussmix.experiments.parse_range` and :func:`gaussmix.learning_curve` or
:func:`gaussmix.lambda_sweep` with the solver's options; :func:`export_png` draws the table
with the library's plotting helpers and the overlays (:func:`export_figure`).
"""

from __future__ import annotations

import dataclasses
import io
import shlex
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from .state import ExplorerState, grid_spec, point_options, setup

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    from matplotlib.figure import Figure

    from .engine import Overlay

__all__ = [
    "export_csv",
    "export_png",
    "export_figure",
    "export_python",
    "export_cli",
    "command",
    "csv_name",
]


def command(state: ExplorerState) -> str:
    """The command of the state's axis: ``'curve'`` (alpha) or ``'lambda-curve'``."""
    return "curve" if state.axis == "alpha" else "lambda-curve"


def csv_name(state: ExplorerState) -> str:
    """The CSV file that command writes in its ``--out`` directory."""
    return "curve.csv" if state.axis == "alpha" else "lambda_curve.csv"


def export_csv(state: ExplorerState, table: pd.DataFrame) -> str:
    """The curve's CSV: the library's table as the command line writes it
    (``DataFrame.to_csv(index=False)``), byte for byte the file of :func:`export_cli`'s
    command.

    Parameters
    ----------
    state : ExplorerState
        The state the table was computed for.
    table : CurveTable
        The library's table (:meth:`gaussmix.explore.CurveJob.wait`).

    Returns
    -------
    str
        The CSV text.
    """
    if table is None:
        raise ValueError("table: no curve to export (the job has not finished)")
    return table.to_csv(index=False)


def export_cli(state: ExplorerState, *, out: str = "gaussmix-out") -> str:
    """The ``gaussmix curve`` / ``lambda-curve`` command writing the same CSV
    (``OUT/curve.csv`` or ``OUT/lambda_curve.csv``) as the explorer's curve.

    Every option of the state that differs from the command line's default is given with
    its flag (floats exactly, by :func:`repr`; a switch as ``--flag`` / ``--no-flag``), the
    solver's options of the state's precision among them
    (:data:`~gaussmix.explore.state.PRECISIONS`: ``--tol 1e-05 --no-estimate-error`` for
    the screen precision), and the grid as ``--alphas`` / ``--lams``
    (:func:`~gaussmix.explore.state.grid_spec`); the swept parameter's own option is left
    out, as the command takes none.

    Parameters
    ----------
    state : ExplorerState
        The controls (a valid state: :func:`gaussmix.explore.validate`).
    out : str
        The command's output directory (``--out``).

    Returns
    -------
    str
        The command line, quoted for a POSIX shell.
    """
    from gaussmix.frontend.options import POINT_FLAGS, PointOptions

    opts = point_options(state)
    swept = "alpha" if state.axis == "alpha" else "lam"
    args = ["gaussmix", command(state)]
    for f in dataclasses.fields(PointOptions):
        value = getattr(opts, f.name)
        if f.name == swept or value == f.default or value is None:
            continue
        flag = POINT_FLAGS[f.name]
        if isinstance(value, bool):  # a switch: --flag / --no-flag
            args.append(flag if value else f"--no-{flag[2:]}")
            continue
        args += [flag, repr(value) if isinstance(value, float) else str(value)]
    args += ["--alphas" if state.axis == "alpha" else "--lams", grid_spec(state)]
    args += ["--out", out]
    return shlex.join(args)


def _literal(value: Any) -> str:
    """Python source of an argument value (floats exactly)."""
    if isinstance(value, np.ndarray):
        return f"np.array({value.tolist()!r})"
    return repr(value)


def export_python(state: ExplorerState) -> str:
    """A runnable script computing the explorer's curve: the same table, to the bit.

    The script builds the mixture with its constructor (``gm.Mixture.isotropic``, ...,
    or :meth:`gaussmix.Mixture.load` for a mixture file), the grid with
    :func:`gaussmix.experiments.parse_range`, calls :func:`gaussmix.learning_curve` or
    :func:`gaussmix.lambda_sweep` with the solver's options, and writes the CSV.

    Parameters
    ----------
    state : ExplorerState
        The controls (a valid state; an invalid one raises the library's error).

    Returns
    -------
    str
        The script's source (it imports only ``numpy`` and ``gaussmix``).
    """
    from gaussmix.frontend.options import mixture_arguments, resolve_options

    point, _ = setup(state)
    r = resolve_options(point_options(state))
    if r.loaded is not None:
        build = f"gm.Mixture.load({state.mixture_file!r})"
    else:
        model, arguments = mixture_arguments(r)
        args = ", ".join(f"{k}={_literal(v)}" for k, v in arguments.items())
        build = f"gm.Mixture.{model.build.__name__}({args})"
    options = {**point.penalty_kw, **point.solve_kw}
    if state.axis == "alpha":
        call = "gm.learning_curve(mixture, {loss!r}, grid, lam={x!r}, {opts})"
        x = point.lam
    else:
        call = "gm.lambda_sweep(mixture, {loss!r}, grid, alpha={x!r}, {opts})"
        x = point.alpha
    opts = ", ".join(f"{k}={_literal(v)}" for k, v in options.items())
    lines = [
        '"""The gaussmix explorer\'s curve, reproduced exactly (gaussmix '
        f'{_version()}): {command(state)} of {point.loss}, K = {point.mixture.n_clusters}."""',
        "",
        "import numpy as np  # noqa: F401 (arrays of per-cluster parameters)",
        "",
        "import gaussmix as gm",
        "from gaussmix.experiments import parse_range",
        "",
        f"mixture = {build}",
        f"grid = parse_range({grid_spec(state)!r})",
        "table = " + call.format(loss=point.loss, x=float(x), opts=opts),
        f"table.to_csv({csv_name(state)!r}, index=False)",
        "print(table.to_string(index=False))",
        "",
    ]
    return "\n".join(lines)


def _version() -> str:
    from gaussmix.core.version import __version__

    return __version__


def export_png(
    state: ExplorerState,
    table: pd.DataFrame,
    overlays: Mapping[str, Overlay] | None = None,
    *,
    dpi: int = 150,
) -> bytes:
    """The view as a PNG image: :func:`export_figure` saved at ``dpi``.

    Parameters
    ----------
    state : ExplorerState
        The controls the table was computed for (axis, shown columns, log axis, title).
    table : DataFrame
        The curve: the library's table, or a DataFrame of the job's rows.
    overlays : mapping of str to Overlay, optional
        The overlays to draw, by name (None: none).
    dpi : int
        Resolution of the image in dots per inch.

    Returns
    -------
    bytes
        The PNG file's content.
    """
    buf = io.BytesIO()
    export_figure(state, table, overlays).savefig(buf, format="png", dpi=dpi)
    return buf.getvalue()


def export_figure(
    state: ExplorerState,
    table: pd.DataFrame,
    overlays: Mapping[str, Overlay] | None = None,
) -> Figure:
    """The view as a matplotlib figure: the shown columns of ``table`` drawn by
    :func:`gaussmix.figures.plotting.plot_learning_curve` (Agg), with the overlays
    (:attr:`gaussmix.explore.OverlayJob.results`): the Bayes-optimal error (dashed),
    alpha* and lambda* (vertical lines on their axis, lambda* on the alpha axis as the
    optimal-penalty test error), simulation points with standard errors.

    ``table`` may hold the order parameters too (a DataFrame of
    :attr:`gaussmix.explore.CurveJob.rows`); shown columns that it lacks are skipped.

    Parameters
    ----------
    state : ExplorerState
        The controls the table was computed for (axis, shown columns, log axis, title).
    table : DataFrame
        The curve: the library's table, or a DataFrame of the job's rows.
    overlays : mapping of str to Overlay, optional
        The overlays to draw, by name (None: none).

    Returns
    -------
    matplotlib.figure.Figure
        The figure (Agg canvas).
    """
    import pandas as pd

    from gaussmix.figures.plotting import plot_learning_curve

    overlays = dict(overlays or {})
    x = "alpha" if state.axis == "alpha" else "lam"
    ys = [y for y in state.show if y in table.columns] or ["test_error"]
    sim = overlays.get("simulation")
    sim_df = pd.DataFrame(sim.rows) if sim is not None and sim.rows else None
    point, _ = setup(state)
    fixed = f"λ={point.lam:g}" if x == "alpha" else f"α={point.alpha:g}"
    title = f"{point.loss}, K={point.mixture.n_clusters}, {fixed}"
    ax = plot_learning_curve(table, x=x, ys=ys, sim=sim_df, logx=state.log_x, title=title)
    bayes = overlays.get("bayes")
    if bayes is not None and bayes.rows:
        if x == "alpha":
            b = pd.DataFrame(bayes.rows).sort_values("alpha")
            ax.plot(b["alpha"], b["test_error"], "k--", label="Bayes-optimal error")
        else:
            ax.axhline(bayes.value, color="k", linestyle="--", label="Bayes-optimal error")
    star = overlays.get("alpha_star")
    if star is not None and star.value is not None and x == "alpha":
        ax.axvline(star.value, color="0.4", linestyle=":", label=f"α* = {star.value:.3g}")
    lam_star = overlays.get("lambda_star")
    if lam_star is not None and lam_star.rows:
        if x == "alpha":
            s = pd.DataFrame(lam_star.rows).sort_values("alpha")
            ax.plot(s["alpha"], s["test_error"], "s:", color="0.3", label="test error at λ*")
        elif lam_star.value is not None:
            ax.axvline(
                lam_star.value, color="0.3", linestyle="-.", label=f"λ* = {lam_star.value:.3g}"
            )
    ax.legend(loc="best")
    return ax.figure
