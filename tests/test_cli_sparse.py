"""Tests of the sparse-mixture command line: ``--model sparse``, ``--penalty l1|elastic-net``,
``--l1-ratio``, ``gaussmix optimal-lambda`` and ``gaussmix figure``.

In-process runs of :func:`gaussmix.cli.commands.main` on tiny problems.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from _cli_helpers import assert_one_line_error, run, run_json

import gaussmix as gm
from gaussmix.cli.grid import Grid, GridError
from gaussmix.sweep import sweep

SPARSE = ("--model", "sparse", "--delta1", "0.1", "--delta2", "1", "--loss", "square")
MIX = gm.Mixture.sparse(0.1, 0.1, 1.0)


# --------------------------------------------------------------------------- point
def test_point_json_lasso_equals_direct_solve() -> None:
    d = run_json("point", *SPARSE, "--penalty", "l1", "--lam", "0.1", "--alpha", "1")
    ref = gm.solve(MIX, "square", lam=0.1, alpha=1.0, penalty="l1")
    for key in ("test_error", "train_error", "train_loss", "nonzero_fraction"):
        assert d[key] == pytest.approx(getattr(ref, key), rel=1e-9, abs=1e-12), key
    assert 0.0 < d["nonzero_fraction"] < 1.0
    p = d["params"]
    assert p["model"] == "sparse" and p["n_clusters"] == 2 and p["labels"] == "binary"
    assert (p["sparsity"], p["delta1"], p["delta2"]) == (0.1, 0.1, 1.0)
    assert p["penalty"] == "l1" and p["l1_ratio"] is None
    assert np.asarray(d["Q"]).shape == (2, 1, 1)


def test_point_json_elastic_net_and_sparsity() -> None:
    args = ("--penalty", "elastic-net", "--l1-ratio", "0.5", "--lam", "0.2", "--sparsity", "0.3")
    d = run_json("point", *SPARSE, *args)
    mix = gm.Mixture.sparse(0.3, 0.1, 1.0)
    ref = gm.solve(mix, "square", lam=0.2, alpha=2.0, penalty="elastic-net", l1_ratio=0.5)
    assert d["test_error"] == pytest.approx(ref.test_error, rel=1e-9)
    assert d["nonzero_fraction"] == pytest.approx(ref.nonzero_fraction, rel=1e-9)
    assert d["params"]["l1_ratio"] == 0.5 and d["params"]["sparsity"] == 0.3


def test_point_json_ridge_and_logistic_lasso() -> None:
    ridge = run_json("point", *SPARSE, "--lam", "0.5")
    assert ridge["nonzero_fraction"] == 1.0
    ref = gm.solve(MIX, "square", lam=0.5, alpha=2.0)
    assert ridge["test_error"] == pytest.approx(ref.test_error, rel=1e-9)
    # the lasso on the isotropic binary model: labels and K follow from the penalty
    d = run_json(
        "point", "--loss", "logistic", "--penalty", "l1", "--lam", "0.3", "--rho", "0.4,0.6"
    )
    mix = gm.Mixture.isotropic(0.5, "simplex", n_clusters=2, rho=[0.4, 0.6], labels="binary")
    ref = gm.solve(mix, "logistic", lam=0.3, alpha=2.0, penalty="l1")
    assert d["test_error"] == pytest.approx(ref.test_error, rel=1e-7)
    assert d["nonzero_fraction"] == pytest.approx(ref.nonzero_fraction, rel=1e-7)
    sq = run_json("point", "--loss", "square", "--penalty", "l1", "--lam", "0.3")
    assert sq["params"]["labels"] == "binary" and sq["params"]["n_clusters"] == 2


def test_point_human_output_shows_nonzero_fraction() -> None:
    code, out, err = run("point", *SPARSE, "--penalty", "l1", "--lam", "0.1")
    assert code == 0, err
    assert "nonzero_fraction" in out and "sparse sparsity=0.1" in out


# --------------------------------------------------------------------------- bad input
BAD = [
    (["--sparsity", "0"], "--sparsity"),
    (["--sparsity", "1.5"], "--sparsity"),
    (["--sparsity", "-0.1"], "--sparsity"),
    (["--sparsity", "nan"], "--sparsity"),
    (["--delta1", "0"], "--delta1"),
    (["--delta2", "-1"], "--delta2"),
    (["--delta", "0.5"], "--delta"),
    (["--fractions", "0.5,0.5"], "--fractions"),
    (["--deltas", "1,2"], "--deltas"),
    (["--means", "simplex"], "--means"),
    (["--labels", "onehot"], "--labels"),
    (["--n-clusters", "3"], "--n-clusters"),
    (["--rho", "0.2,0.3,0.5"], "--rho"),
    (["--loss", "cross-entropy"], "--loss"),
    (["--penalty", "elastic-net"], "--l1-ratio"),
    (["--penalty", "elastic-net", "--l1-ratio", "1.5"], "--l1-ratio"),
    (["--penalty", "elastic-net", "--l1-ratio", "-0.5"], "--l1-ratio"),
    (["--penalty", "l1", "--l1-ratio", "0.5"], "--l1-ratio"),
    (["--l1-ratio", "0.5"], "--l1-ratio"),
    (["--penalty", "l3"], "--penalty"),
    (["--penalty", "l1", "--lam", "0"], "--lam"),
]


@pytest.mark.parametrize("args, name", BAD, ids=[" ".join(a) for a, _ in BAD])
def test_sparse_bad_input_is_one_line(args: list[str], name: str) -> None:
    code, out, err = run("point", "--json", *SPARSE, *args)
    assert_one_line_error(code, out, err, name)


def test_point_json_three_class_lasso_equals_direct_solve() -> None:
    """One-hot labels take l1 / elastic-net too (K = 3 cross-entropy by default)."""
    d = run_json("point", "--penalty", "l1", "--lam", "0.1", "--alpha", "2")
    mix = gm.Mixture.isotropic(0.5, "simplex", n_clusters=3)
    ref = gm.solve(mix, "cross-entropy", lam=0.1, alpha=2.0, penalty="l1")
    for key in ("test_error", "train_error", "train_loss", "nonzero_fraction"):
        assert d[key] == pytest.approx(getattr(ref, key), rel=1e-9, abs=1e-12), key
    assert 0.0 < d["nonzero_fraction"] < 1.0


BAD_OTHER = [
    (["--model", "sparse", "--delta1", "0.1", "--loss", "square"], "--delta2"),
    (["--delta1", "0.1"], "--delta1 is a parameter of model='sparse'"),
    (["--sparsity", "0.2", "--loss", "square"], "--sparsity is a parameter of model='sparse'"),
]


@pytest.mark.parametrize("args, name", BAD_OTHER, ids=[" ".join(a) for a, _ in BAD_OTHER])
def test_other_models_bad_input_is_one_line(args: list[str], name: str) -> None:
    code, out, err = run("point", "--json", *args)
    assert_one_line_error(code, out, err, name)


# --------------------------------------------------------------------------- optimal-lambda
def test_optimal_lambda_interior_equals_library() -> None:
    d = run_json("optimal-lambda", *SPARSE, "--penalty", "l1", "--alpha", "1")
    ref = gm.optimal_lambda(MIX, "square", alpha=1.0, penalty="l1")
    assert d["at_boundary"] is False and d["at_upper_bound"] is False
    assert d["lam_star"] == pytest.approx(ref.lam_star, rel=1e-6)
    assert d["test_error"] == pytest.approx(ref.test_error, rel=1e-9)
    assert d["nonzero_fraction"] == pytest.approx(ref.result.nonzero_fraction, rel=1e-6)
    assert d["params"]["lam"] == pytest.approx(d["lam_star"])
    assert abs(d["derivative"]) < 1e-3
    for key in ("train_error", "train_loss", "converged", "Q", "M", "V", "b", "n_evaluations"):
        assert key in d, key


def test_optimal_lambda_boundary_is_zero_with_flag() -> None:
    d = run_json("optimal-lambda", *SPARSE, "--penalty", "l1", "--alpha", "0.2")
    ref = gm.optimal_lambda(MIX, "square", alpha=0.2, penalty="l1")
    assert ref.at_boundary
    assert d["lam_star"] == 0.0 and d["at_boundary"] is True
    assert d["test_error"] == pytest.approx(ref.test_error, rel=1e-9)
    assert d["params"]["lam"] == pytest.approx(d["lam_min"]) and d["lam_min"] < 1e-5
    assert d["nonzero_fraction"] == pytest.approx(0.2, rel=1e-3)  # basis pursuit: n weights
    code, out, err = run("optimal-lambda", *SPARSE, "--penalty", "l1", "--alpha", "0.2")
    assert code == 0, err
    assert "0+" in out


def test_optimal_lambda_upper_boundary_is_null_in_json() -> None:
    # ridge with equal variances: the optimum is the mean estimator, lambda -> infinity
    args = ("--model", "sparse", "--delta1", "0.1", "--delta2", "0.1", "--loss", "square")
    d = run_json("optimal-lambda", *args, "--alpha", "0.5")
    assert d["lam_star"] is None and d["at_upper_bound"] is True and d["at_boundary"] is False
    assert math.isfinite(d["test_error"])


def test_optimal_lambda_logistic_balanced_is_the_upper_boundary() -> None:
    """Issue 9 item 5: it reported an interior lam_star ~ 539 although ``point --lam 1e4``
    has a lower test error."""
    d = run_json("optimal-lambda", "--loss", "logistic", "--alpha", "1")
    assert d["lam_star"] is None and d["at_upper_bound"] is True and d["at_boundary"] is False
    assert d["lam_max"] >= 1e4 and d["params"]["lam"] == d["lam_max"]
    p = run_json("point", "--loss", "logistic", "--alpha", "1", "--lam", "1e4")
    assert d["test_error"] <= p["test_error"]
    code, out, err = run("optimal-lambda", "--loss", "logistic", "--alpha", "1")
    assert code == 0, err
    assert "inf (lambda -> infinity" in out


@pytest.mark.parametrize(
    "args, name",
    [
        (["--lam", "0.3"], "--lam"),
        (["--lam-min", "0"], "--lam-min"),
        (["--lam-min", "1", "--lam-max", "0.5"], "--lam-max"),
        (["--lam-max", "nan"], "--lam-max"),
        (["--sparsity", "2"], "--sparsity"),
    ],
)
def test_optimal_lambda_bad_input(args: list[str], name: str) -> None:
    code, out, err = run("optimal-lambda", "--json", *SPARSE, "--penalty", "l1", *args)
    assert_one_line_error(code, out, err, name)


# --------------------------------------------------------------------------- sweep, simulate
def test_sweep_grid_takes_the_sparse_options() -> None:
    fixed = {
        "model": "sparse",
        "delta1": 0.1,
        "delta2": 1.0,
        "loss": "square",
        "penalty": "elastic-net",
        "l1-ratio": 0.5,
        "lam": 0.2,
    }
    grid = Grid({"alpha": [0.5, 1.0], "sparsity": [0.1, 0.3]}, fixed=fixed)
    res = sweep(grid, backend="serial", progress=False)
    assert len(res.df) == 4
    for row in res.df.itertuples():
        mix = gm.Mixture.sparse(row.sparsity, 0.1, 1.0)
        ref = gm.solve(
            mix, "square", lam=0.2, alpha=row.alpha, penalty="elastic-net", l1_ratio=0.5
        )
        assert row.test_error == pytest.approx(ref.test_error, rel=1e-9)
        assert row.nonzero_fraction == pytest.approx(ref.nonzero_fraction, rel=1e-9)
    with pytest.raises(GridError, match="sparsity"):
        Grid({"sparsity": [0.1, 1.5]}, fixed=fixed)


def test_simulate_command_reports_nonzero_fraction() -> None:
    d = run_json(
        "simulate",
        *SPARSE,
        "--penalty",
        "l1",
        "--lam",
        "0.3",
        "--alpha",
        "1",
        "--d",
        "100",
        "--seeds",
        "2",
        "--n-jobs",
        "1",
        "--quiet",
    )
    assert 0.0 < d["nonzero_fraction"] < 1.0
    assert math.isfinite(d["nonzero_fraction_se"])
    assert d["params"]["model"] == "sparse" and d["params"]["penalty"] == "l1"


# --------------------------------------------------------------------------- figure
def test_figure_sparse_setup_writes_csv_and_png(tmp_path) -> None:
    out = tmp_path / "figs"
    code, stdout, err = run(
        "figure",
        "sparse-setup",
        "--alphas",
        "0.15:1:2",
        "--ratios",
        "1,0.1",
        "--out",
        str(out),
        "-q",
    )
    assert code == 0, err
    csv, png = out / "sparse-setup.csv", out / "sparse-setup.png"
    assert f"wrote {csv}" in stdout and f"wrote {png}" in stdout
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    df = pd.read_csv(csv)
    assert len(df) == 4
    for col in ("alpha", "ratio", "lam_star", "at_boundary", "nonzero_fraction", "test_error"):
        assert col in df.columns
    bp = df[df["at_boundary"]]
    assert len(bp) == 1 and bp["ratio"].iloc[0] == 0.1 and bp["lam_star"].iloc[0] == 0.0


def test_figure_sparse_curves_with_simulation(tmp_path) -> None:
    code, _, err = run(
        "figure",
        "sparse-curves",
        "--alphas",
        "1:1:1",
        "--delta2s",
        "1",
        "--sim-alphas",
        "1",
        "--d",
        "100",
        "--seeds",
        "2",
        "--n-jobs",
        "1",
        "--out",
        str(tmp_path),
        "--quiet",
    )
    assert code == 0, err
    df = pd.read_csv(tmp_path / "sparse-curves.csv")
    assert sorted(df["penalty"]) == ["l1", "l2"]
    assert df["sim_test_error"].notna().all() and (df["sim_d"] == 100).all()
    assert (tmp_path / "sparse-curves.png").stat().st_size > 1000
    code, _, err = run(
        "figure", "sparse-curves", "--alphas", "1:1:1", "--delta2s", "1", "--no-simulate",
        "--out", str(tmp_path / "theory"), "-q",
    )  # fmt: skip
    assert code == 0, err
    df = pd.read_csv(tmp_path / "theory" / "sparse-curves.csv")
    assert df["sim_test_error"].isna().all()


@pytest.mark.parametrize(
    "args, name",
    [
        (["nope"], "NAME"),
        (["sparse-setup", "--d", "100"], "--d"),
        (["sparse-setup", "--delta2s", "1"], "--delta2s"),
        (["sparse-setup", "--simulate"], "--simulate"),
        (["sparse-curves", "--ratios", "1"], "--ratios"),
        (["sparse-curves", "--no-simulate", "--seeds", "3"], "--seeds"),
        (["sparse-curves", "--seeds", "0"], "--seeds"),
        (["sparse-curves", "--sparsity", "0", "--no-simulate"], "--sparsity"),
        (["sparse-curves", "--sim-alphas", "1,x"], "--sim-alphas"),
        (["sparse-setup", "--ratios", "1,-0.1"], "--ratios"),
        (["sparse-setup", "--loss", "cross-entropy"], "--loss"),
        (["sparse-setup", "--alphas", "0:1:3"], "--alphas"),
    ],
)
def test_figure_bad_input_creates_nothing(tmp_path, args: list[str], name: str) -> None:
    out = tmp_path / "never"
    code, stdout, err = run("figure", *args, "--out", str(out), "-q")
    assert_one_line_error(code, stdout, err, name)
    assert not out.exists()
