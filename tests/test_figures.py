"""Tests of the paper's figures (gaussmix.figures.sparse): tables, pictures, files.  Tiny grids."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from matplotlib.container import ErrorbarContainer
from matplotlib.figure import Figure

import gaussmix as gm
from gaussmix.figures import FIGURES, write_figure
from gaussmix.figures.sparse import (
    _simulation_lambda,
    plot_sparse_curves,
    plot_sparse_setup,
    simulation_alpha,
    sparse_curves,
    sparse_setup,
)

SETUP_COLUMNS = ["alpha", "ratio", "lam_star", "at_boundary", "nonzero_fraction", "test_error"]
CURVE_COLUMNS = [
    "alpha",
    "delta2",
    "penalty",
    "lam_star",
    "test_error",
    "train_loss",
    "sim_test_error",
    "sim_test_error_se",
    "sim_train_loss",
    "sim_train_loss_se",
]


@pytest.fixture(scope="module")
def setup_df() -> pd.DataFrame:
    # Delta1/Delta2 = 0.1 at alpha = 0.15: the optimum is lambda -> 0+ (basis pursuit)
    return sparse_setup([0.15, 1.0], ratios=(1.0, 0.1))


@pytest.fixture(scope="module")
def curves_df() -> pd.DataFrame:
    return sparse_curves(
        [0.5, 1.0],
        delta2s=(1.0,),
        sim_alphas=(1.0,),
        d=200,
        seeds=2,
    )


def test_sparse_setup_columns_and_values(setup_df: pd.DataFrame) -> None:
    assert set(SETUP_COLUMNS) <= set(setup_df.columns)
    assert len(setup_df) == 4
    assert sorted(setup_df["ratio"].unique()) == [0.1, 1.0]
    assert np.allclose(setup_df["delta1"], setup_df["ratio"] * setup_df["delta2"])
    for row in setup_df.itertuples():
        mix = gm.Mixture.sparse(0.1, row.delta1, 1.0)
        ref = gm.optimal_lambda(mix, "square", alpha=row.alpha, penalty="l1")
        assert row.at_boundary == ref.at_boundary
        assert row.test_error == pytest.approx(ref.test_error, abs=1e-6)
        assert row.nonzero_fraction == pytest.approx(ref.result.nonzero_fraction, abs=1e-4)
        if ref.at_boundary:
            assert row.lam_star == 0.0
        else:
            assert row.lam_star == pytest.approx(ref.lam_star, rel=2e-2)


def test_sparse_setup_flags_basis_pursuit(setup_df: pd.DataFrame) -> None:
    bp = setup_df[setup_df["at_boundary"]]
    assert len(bp) >= 1
    assert (bp["ratio"] == 0.1).all()
    assert (bp["lam_star"] == 0.0).all()
    # basis pursuit keeps n = alpha d weights
    assert np.allclose(bp["nonzero_fraction"], bp["alpha"], rtol=1e-3)
    assert (setup_df.loc[~setup_df["at_boundary"], "lam_star"] > 0).all()


def test_plot_sparse_setup(setup_df: pd.DataFrame) -> None:
    fig = plot_sparse_setup(setup_df)
    assert isinstance(fig, Figure)
    ax_nz, ax_lam = fig.axes
    assert "non-zero" in ax_nz.get_ylabel()
    assert "lambda" in ax_lam.get_ylabel()
    assert "alpha" in ax_lam.get_xlabel() and "n/d" in ax_lam.get_xlabel()
    assert ax_lam.get_yscale() == "log"
    # the lambda -> 0+ points: downward triangles, and a legend entry saying so
    n_bp = int(setup_df["at_boundary"].sum())
    tri = [ln for ln in ax_lam.get_lines() if ln.get_marker() == "v"]
    assert sum(len(ln.get_xdata()) for ln in tri) == n_bp
    texts = [t.get_text() for t in ax_lam.get_legend().get_texts()]
    assert any("0^+" in t for t in texts)
    assert any("Delta_1/\\Delta_2 = 0.1" in t for t in texts)


def test_sparse_curves_theory_matches_optimal_lambda() -> None:
    df = sparse_curves([0.5, 1.0], delta2s=(1.0, 10.0), simulate=False)
    assert set(CURVE_COLUMNS) <= set(df.columns)
    assert len(df) == 2 * 2 * 2
    assert set(df["penalty"]) == {"l2", "l1"}
    assert df["sim_test_error"].isna().all()
    for row in df.itertuples():
        mix = gm.Mixture.sparse(0.1, 0.1, row.delta2)
        ref = gm.optimal_lambda(mix, "square", alpha=row.alpha, penalty=row.penalty)
        assert row.test_error == pytest.approx(ref.test_error, abs=1e-6)
        assert row.train_loss == pytest.approx(ref.result.train_loss, abs=1e-5)
        assert row.at_boundary == ref.at_boundary


def test_sparse_curves_simulation_columns(curves_df: pd.DataFrame) -> None:
    df = curves_df
    assert set(CURVE_COLUMNS) <= set(df.columns)
    sim = df[df["sim_test_error"].notna()]
    assert len(sim) == 2  # one simulated alpha, two penalties
    assert set(sim["penalty"]) == {"l2", "l1"}
    assert (sim["alpha"] == 1.0).all() and (sim["sim_d"] == 200).all()
    assert (sim["sim_seeds"] == 2).all()
    assert np.all(np.isfinite(sim[["sim_test_error_se", "sim_train_loss_se"]].to_numpy()))
    assert (sim["sim_lam"] > 0).all()
    assert np.all(np.abs(sim["sim_test_error"] - sim["test_error"]) < 0.1)
    rest = df[df["sim_test_error"].isna()]
    assert (rest["alpha"] == 0.5).all()


def test_simulation_alpha_makes_n_even() -> None:
    assert simulation_alpha(0.207, 1000) == pytest.approx(0.208)
    assert simulation_alpha(0.3, 1000) == pytest.approx(0.3)
    assert simulation_alpha(1e-6, 100) == pytest.approx(0.02)
    for a in (0.13, 0.7, 1.55):
        assert round(simulation_alpha(a, 333) * 333) % 2 == 0


def test_simulation_lambda_near_basis_pursuit() -> None:
    """Lasso at lambda* -> 0+ is simulated at a larger penalty with the same errors."""
    mix = gm.Mixture.sparse(0.1, 0.1, 10.0)
    res = gm.optimal_lambda(mix, "square", alpha=0.3, penalty="l1")
    assert res.at_boundary
    lam = _simulation_lambda(res, "l1", 2e-3)
    assert lam > 1e-3
    at = gm.solve(mix, "square", lam=lam, alpha=0.3, penalty="l1", init=res.result)
    assert abs(at.test_error - res.test_error) <= 2e-3
    assert abs(at.train_loss - res.result.train_loss) <= 2e-3
    # ridge is simulated exactly where the theory is
    ridge = gm.optimal_lambda(mix, "square", alpha=0.3, penalty="l2")
    assert _simulation_lambda(ridge, "l2", 2e-3) == ridge.result.params["lam"]


def test_plot_sparse_curves(curves_df: pd.DataFrame) -> None:
    fig = plot_sparse_curves(curves_df)
    ax_err, ax_loss = fig.axes
    assert "test error" in ax_err.get_ylabel() and "training loss" in ax_loss.get_ylabel()
    assert "n/d" in ax_err.get_xlabel()
    styles = {ln.get_linestyle() for ln in ax_err.get_lines() if len(ln.get_xdata()) > 1}
    assert {"--", "-"} <= styles
    assert sum(isinstance(c, ErrorbarContainer) for c in ax_err.containers) == 2
    texts = [t.get_text() for t in fig.legends[0].get_texts()]
    assert any("ridge" in t for t in texts) and any("lasso" in t for t in texts)
    assert any("d = 200" in t for t in texts)


@pytest.mark.parametrize(
    ("name", "kw"),
    [
        ("sparse-setup", {"alphas": [0.2, 1.0], "ratios": (0.1,)}),
        ("sparse-curves", {"alphas": [1.0], "delta2s": (1.0,), "simulate": False}),
    ],
)
def test_write_figure(tmp_path, name, kw) -> None:
    out = write_figure(name, tmp_path / "figs", **kw)
    assert out.csv == tmp_path / "figs" / f"{name}.csv"
    assert out.png == tmp_path / "figs" / f"{name}.png"
    assert out.png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    back = pd.read_csv(out.csv)
    assert list(back.columns) == list(out.data.columns)
    assert len(back) == len(out.data)


def test_bad_input(tmp_path) -> None:
    with pytest.raises(ValueError, match="name"):
        write_figure("fig-99", tmp_path)
    assert {"sparse-setup", "sparse-curves"} <= set(FIGURES)
    with pytest.raises(ValueError, match="sparsity"):
        sparse_setup([1.0], sparsity=0.0)
    with pytest.raises(ValueError, match="sparsity"):
        sparse_curves([1.0], sparsity=1.5, simulate=False)
    with pytest.raises(ValueError, match="ratios"):
        sparse_setup([1.0], ratios=(1.0, -0.1))
    with pytest.raises(ValueError, match="alphas"):
        sparse_setup([])
    with pytest.raises(ValueError, match="loss"):
        sparse_setup([1.0], loss="cross-entropy")
    with pytest.raises(ValueError, match="seeds"):
        sparse_curves([1.0], seeds=0)
    with pytest.raises(ValueError, match="hinge"):
        sparse_curves([1.0], loss="hinge")
    with pytest.raises(TypeError, match="df"):
        plot_sparse_setup([1, 2])
    with pytest.raises(ValueError, match="column"):
        plot_sparse_curves(pd.DataFrame({"alpha": [1.0]}))
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(NotADirectoryError):
        write_figure("sparse-setup", blocker, alphas=[1.0])
