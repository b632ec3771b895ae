"""Tests of the plotting helpers (headless, Agg canvas)."""

from __future__ import annotations

from pathlib import Path

import matplotlib.colors as mcolors
import numpy as np
import pandas as pd
import pytest
from _plot_checks import assert_ticks_readable, assert_type_sizes, shown_tick_labels
from matplotlib.container import ErrorbarContainer
from matplotlib.figure import Figure

from gaussmix.figures.plotting import (
    log_ticks,
    new_axes,
    plot_comparison,
    plot_lambda_curve,
    plot_learning_curve,
    save_figure,
    tick_labels,
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


def _log_curve(lo: float, hi: float, x: str = "alpha") -> pd.DataFrame:
    v = np.geomspace(lo, hi, 12)
    return pd.DataFrame({x: v, "test_error": 0.4 / (1 + v), "train_error": 0.1 / (1 + v)})


#: ranges of a log alpha (or lambda) axis: several decades, about one, less than one
LOG_RANGES = [(0.05, 8.0), (0.2, 3.0), (1.0, 100.0), (0.5, 0.9), (0.2, 8.0), (1e-5, 10.0)]


@pytest.mark.parametrize(("lo", "hi"), LOG_RANGES)
def test_log_axis_tick_labels_do_not_overlap(lo: float, hi: float) -> None:
    ax = plot_learning_curve(_log_curve(lo, hi), logx=True)
    texts = assert_ticks_readable(ax)
    # each label says its tick's value, as a plain number (a power of ten beyond 1e-3..1e4
    # as 10^k)
    for value, text, _ in shown_tick_labels(ax):
        if text.startswith("$10^{"):
            assert value == pytest.approx(10.0 ** int(text[5:-2]))
        else:
            assert float(text) == pytest.approx(value), texts
    # on the figure's other sizes as well: a narrow one keeps fewer labels, still apart
    ax = plot_learning_curve(_log_curve(lo, hi), logx=True, ax=new_axes((2.5, 2.5)))
    assert_ticks_readable(ax)


def test_log_ticks_of_a_short_range_are_round_values_inside_it() -> None:
    ax = plot_learning_curve(_log_curve(0.5, 0.9), logx=True)
    assert [float(t) for t in assert_ticks_readable(ax)] == [0.5, 0.6, 0.7, 0.8, 0.9]
    ax = plot_learning_curve(_log_curve(0.05, 8.0), logx=True)
    shown = [float(t) for t in assert_ticks_readable(ax)]
    assert {0.1, 1.0} <= set(shown) and len(shown) <= 8


def test_log_ticks_on_a_vertical_axis_and_bad_axis() -> None:
    ax = plot_learning_curve(_log_curve(1e-3, 1e3), logx=True, logy=True)
    assert_ticks_readable(ax, "y")
    with pytest.raises(ValueError, match="axis must be 'x' or 'y'"):
        log_ticks(ax, "z")


def test_lambda_curve_and_comparison_log_ticks_do_not_overlap() -> None:
    assert_ticks_readable(plot_lambda_curve(_log_curve(1e-4, 30.0, "lam")))
    df = _log_curve(0.2, 8.0).assign(train_loss=lambda d: 0.3 / (1 + d["alpha"]))
    fig = plot_comparison(df, logx=True)
    for ax in fig.axes:
        assert_ticks_readable(ax)


def test_curve_commands_png_has_readable_log_ticks(monkeypatch, tmp_path: Path) -> None:
    """``gaussmix curve`` on a log alpha grid: the figure it saves, as saved."""
    from _cli_helpers import run

    import gaussmix.figures.plotting as plotting

    saved = []
    real = plotting.save_figure

    def keep(fig, path, **kw):
        saved.append(fig)
        return real(fig, path, **kw)

    monkeypatch.setattr(plotting, "save_figure", keep)
    code, _, err = run("curve", "--alphas", "log:0.05:8:5", "--out", str(tmp_path), "--quiet")
    assert code == 0, err
    assert (tmp_path / "curve.png").is_file() and len(saved) == 1
    (ax,) = saved[0].axes
    assert ax.get_xscale() == "log"
    assert_ticks_readable(ax)
    assert_type_sizes(ax)


def test_type_is_readable_at_a_talks_size(theory: pd.DataFrame, sim: pd.DataFrame) -> None:
    ax = plot_learning_curve(theory, sim=sim, title="logistic")
    assert_type_sizes(ax)
    # the type is in points, so the saved figure (4.5 x 3.2 inches by default) carries it
    # at that size: a tick label of 10 pt at 150 dpi is about 21 pixels tall
    assert tuple(ax.figure.get_size_inches()) == (4.5, 3.2)
    fig = plot_comparison(theory.assign(sim_test_error=theory["test_error"]), title="t")
    for a in fig.axes:
        assert_type_sizes(a)


def test_tick_labels_keep_one_style_along_an_axis() -> None:
    assert tick_labels([0.01, 0.1, 1.0, 10.0]) == ["0.01", "0.1", "1", "10"]
    # decades reaching beyond 0.001..10000: every decade as 10^k, 1 and 100 too
    assert tick_labels([1e-4, 1e-2, 1.0, 100.0]) == [
        "$10^{-4}$", "$10^{-2}$", "$10^{0}$", "$10^{2}$"
    ]  # fmt: skip
    assert tick_labels([1e-4, 2e-4, 5e-4]) == ["0.0001", "0.0002", "0.0005"]
    ax = plot_lambda_curve(_log_curve(1e-5, 10.0, "lam"))
    texts = assert_ticks_readable(ax)
    assert all(t.startswith("$10^{") for t in texts), texts
