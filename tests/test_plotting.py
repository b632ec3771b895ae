"""Tests of the plotting helpers (headless, Agg canvas)."""

from __future__ import annotations

from pathlib import Path

import matplotlib.colors as mcolors
import numpy as np
import pandas as pd
import pytest
from matplotlib.container import ErrorbarContainer
from matplotlib.figure import Figure

from gaussmix.figures.plotting import (
    new_axes,
    plot_lambda_curve,
    plot_learning_curve,
    save_figure,
)


@pytest.fixture
def theory() -> pd.DataFrame:
    alpha = np.linspace(0.2, 4.0, 8)
    return pd.DataFrame(
        {
            "alpha": alpha,
            "lam": 1.0,
            "test_error": 0.3 / (1 + alpha),
            "train_error": 0.1 * alpha / (1 + alpha),
            "train_loss": 0.5 / (1 + alpha),
            "converged": True,
        }
    )


@pytest.fixture
def sim() -> pd.DataFrame:
    alpha = np.array([0.5, 1.0, 2.0])
    return pd.DataFrame(
        {
            "alpha": alpha,
            "test_error": 0.3 / (1 + alpha) + 0.01,
            "test_error_se": [0.01, 0.02, 0.01],
            "train_error": 0.1 * alpha / (1 + alpha),
            "train_error_se": [0.005, 0.005, 0.005],
        }
    )


def _legend_texts(ax) -> list[str]:
    legend = ax.get_legend()
    assert legend is not None
    return [t.get_text() for t in legend.get_texts()]


def test_learning_curve_labels_and_legend(theory: pd.DataFrame) -> None:
    ax = plot_learning_curve(theory, title="cross-entropy, K=3")
    assert isinstance(ax.figure, Figure)
    assert "alpha" in ax.get_xlabel() and "n/d" in ax.get_xlabel()
    assert ax.get_ylabel() == "error"
    assert ax.get_title() == "cross-entropy, K=3"
    texts = _legend_texts(ax)
    assert any("test error" in t for t in texts) and any("train error" in t for t in texts)
    assert len(ax.get_lines()) == 2
    np.testing.assert_allclose(ax.get_lines()[0].get_xdata(), theory["alpha"])
    assert not ax.containers  # no simulation, no error bars
    assert ax.get_xscale() == "linear" and ax.get_yscale() == "linear"
    assert any(gl.get_visible() for gl in ax.xaxis.get_gridlines())


def test_simulation_error_bars_in_the_theory_colour(
    theory: pd.DataFrame, sim: pd.DataFrame
) -> None:
    ax = plot_learning_curve(theory, sim=sim, logy=True)
    bars = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
    assert len(bars) == 2
    lines = {line.get_label(): line for line in ax.get_lines()}
    for bar, name in zip(bars, ("test error", "train error"), strict=True):
        assert bar.has_yerr
        theory_colour = lines[f"{name} (theory)"].get_color()
        dots = bar.lines[0]
        assert mcolors.same_color(dots.get_color(), theory_colour)
        np.testing.assert_allclose(dots.get_xdata(), sim["alpha"])
        (segments,) = bar.lines[2]
        half_widths = [abs(s[1, 1] - s[0, 1]) / 2 for s in segments.get_segments()]
        np.testing.assert_allclose(half_widths, sim[f"{name.replace(' ', '_')}_se"])
    assert any("simulation" in t for t in _legend_texts(ax))
    assert ax.get_yscale() == "log"


def test_simulation_without_se_and_missing_columns(theory: pd.DataFrame) -> None:
    sim = pd.DataFrame({"alpha": [1.0, 2.0], "test_error": [0.2, 0.1]})
    ax = plot_learning_curve(theory, sim=sim)
    (bar,) = ax.containers
    assert not bar.has_yerr
    with pytest.raises(ValueError, match="train_err"):
        plot_learning_curve(theory, ys=("train_err",))
    with pytest.raises(ValueError, match="sim"):
        plot_learning_curve(theory, sim=pd.DataFrame({"lam": [1.0]}))
    with pytest.raises(TypeError, match="DataFrame"):
        plot_learning_curve({"alpha": [1.0]})


def test_single_series_and_loss_label(theory: pd.DataFrame) -> None:
    ax = plot_learning_curve(theory, ys="train_loss")
    assert ax.get_ylabel() == "loss"
    assert _legend_texts(ax) == ["train loss (theory)"]


def test_lambda_curve_log_axis_and_existing_axes() -> None:
    lam = np.geomspace(1e-3, 10, 6)
    df = pd.DataFrame(
        {"lam": lam, "alpha": 2.0, "test_error": 0.2 + 0.01 * lam, "train_error": 0.01 * lam}
    )
    ax = new_axes()
    out = plot_lambda_curve(df, ax=ax, title="logistic")
    assert out is ax
    assert ax.get_xscale() == "log"
    assert "lambda" in ax.get_xlabel()
    assert ax.get_ylabel() == "error"
    df0 = df.assign(lam=np.linspace(0.0, 1.0, 6))
    assert plot_lambda_curve(df0).get_xscale() == "linear"


def test_rows_are_sorted_and_nan_points_leave_gaps(theory: pd.DataFrame) -> None:
    shuffled = theory.iloc[::-1].copy()
    shuffled.loc[shuffled.index[2], "test_error"] = np.nan
    ax = plot_learning_curve(shuffled)
    x = ax.get_lines()[0].get_xdata()
    assert np.all(np.diff(x) > 0)
    assert np.isnan(ax.get_lines()[0].get_ydata()).sum() == 1


def test_save_figure_png(theory: pd.DataFrame, tmp_path: Path) -> None:
    ax = plot_learning_curve(theory)
    path = save_figure(ax.figure, tmp_path / "sub" / "curve.png")
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 1000
    # an Axes is accepted too, and a missing suffix means PNG
    bare = save_figure(ax, tmp_path / "bare")
    assert bare.read_bytes()[:4] == b"\x89PNG"
    with pytest.raises(TypeError):
        save_figure("not a figure", tmp_path / "x.png")


def test_dpi_is_150(theory: pd.DataFrame, tmp_path: Path) -> None:
    ax = plot_learning_curve(theory)
    path = save_figure(ax.figure, tmp_path / "c.png")
    from PIL import Image  # matplotlib depends on pillow

    with Image.open(path) as im:
        dpi = im.info.get("dpi")
    assert dpi is not None and round(dpi[0]) == 150
