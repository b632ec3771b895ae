"""Tests of the commands ``gaussmix simulate``, ``gaussmix compare`` and ``gaussmix sweep``.

They run :func:`gaussmix.cli.commands.main` in-process (the console script's entry point,
including its one-line error handling) on small instances (d <= 80).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _cli_helpers import assert_one_line_error, run, run_json
from threadpoolctl import threadpool_limits

import gaussmix as gm
from gaussmix.cli.grid import run_grid
from gaussmix.simulate.simulation import simulate
from gaussmix.sweep import checkpoint_path, simulation_keys, theory_keys

SMALL = ("--d", "60", "--seeds", "3", "--quiet")


# ---------------------------------------------------------------------------- help
def test_help_lists_the_new_commands() -> None:
    code, out, _ = run("--help")
    assert code == 0
    for command in ("simulate", "compare", "sweep", "point", "curve", "lambda-curve"):
        assert command in out
    code, out, _ = run("simulate", "--help")
    assert code == 0
    for option in ("--d", "--seeds", "--seed", "--n-jobs", "--json", "--quiet", "--lam", "--loss"):
        assert option in out
    code, out, _ = run("compare", "--help")
    assert code == 0
    for option in ("--alphas", "--d", "--seeds", "--out", "--quiet"):
        assert option in out
    assert "0.1" in out  # compare's own default lam
    code, out, _ = run("sweep", "--help")
    assert code == 0
    for option in ("--grid", "--out", "--scheduler", "--n-jobs", "--quiet"):
        assert option in out


# ---------------------------------------------------------------------------- simulate
def test_simulate_json_has_the_point_keys_plus_standard_errors() -> None:
    point = run_json("point", "--loss", "logistic")
    sim = run_json("simulate", "--loss", "logistic", *SMALL)
    assert set(point) <= set(sim), set(point) - set(sim)
    assert tuple(sim) == simulation_keys()
    for key in ("test_error", "train_error", "train_loss"):
        assert isinstance(sim[key], float) and math.isfinite(sim[key])
        se = sim[f"{key}_se"]
        assert isinstance(se, float) and se >= 0.0
    assert sim["test_error_se"] > 0
    assert 0.0 < sim["test_error"] < 0.5
    assert sim["converged"] is True
    assert np.asarray(sim["Q"]).shape == (2, 1, 1) and np.asarray(sim["b"]).shape == (1,)
    p = sim["params"]
    assert (p["d"], p["seeds"], p["seed"], p["n"]) == (60, 3, 0, 120)
    assert p["loss"] == "logistic" and p["version"] == gm.__version__


def test_simulate_is_reproducible_bit_for_bit() -> None:
    args = ("simulate", "--lam", "0.5", "--alpha", "1.5", "--d", "60", "--seeds", "4", "-q")
    first = run(*args, "--json")
    assert first[0] == 0, first[2]
    assert run(*args, "--json") == first
    assert run(*args, "--json", "--n-jobs", "2")[1] == first[1]  # workers do not change bits
    assert run(*args, "--json", "--n-jobs", "1")[1] == first[1]
    other = run_json(*args, "--seed", "1")
    assert other["test_error"] != json.loads(first[1])["test_error"]


def test_simulate_equals_the_library() -> None:
    sim = run_json("simulate", "--loss", "square", "--alpha", "3", *SMALL)
    mix = gm.Mixture.isotropic(0.5, "simplex", n_clusters=3)
    with threadpool_limits(1):
        ref = simulate(mix, loss="square", lam=1.0, alpha=3.0, d=60, seeds=3, seed=0)
    assert sim["test_error"] == ref.mean["test_error"]
    assert sim["train_loss_se"] == ref.se["train_loss"]
    np.testing.assert_array_equal(sim["M"], ref.M.tolist())


def test_simulate_table_output() -> None:
    code, out, err = run("simulate", "--loss", "logistic", *SMALL)
    assert code == 0, err
    assert "test_error" in out and "±" in out and "d=60, n=120, 3 seeds" in out
    with pytest.raises(json.JSONDecodeError):
        json.loads(out)


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (("--d", "0"), ("--d must be an integer >= 2, got 0",)),
        (("--d", "-5"), ("--d",)),
        (("--seeds", "0"), ("--seeds must be an integer >= 1, got 0",)),
        (("--seed", "-1"), ("--seed must be an integer >= 0, got -1",)),
        (("--d", "2"), ("--d", "number of clusters K=3")),
        (
            ("--n-jobs", "0"),
            ("--n-jobs must be a non-zero integer (joblib: -1 = all cores), got 0",),
        ),
        (("--d", "abc"), ("--d",)),
        (("--lam", "-1"), ("--lam",)),
    ],
)
def test_simulate_bad_input_is_one_line(args: tuple[str, ...], needles: tuple[str, ...]) -> None:
    assert_one_line_error(*run("simulate", *args, "--quiet"), *needles)


# ---------------------------------------------------------------------------- compare
def test_compare_writes_csv_and_png(tmp_path: Path) -> None:
    code, out, err = run(
        "compare", "--alphas", "0.5:1.5:2", "--d", "60", "--seeds", "2", "--out",
        str(tmp_path), "--quiet",
    )  # fmt: skip
    assert code == 0, err
    assert "compare.csv" in out and "compare.png" in out
    df = pd.read_csv(tmp_path / "compare.csv")
    assert df["alpha"].tolist() == [0.5, 1.5]
    assert (df["lam"] == 0.1).all()  # compare's default
    for key in ("test_error", "train_error", "train_loss"):
        assert key in df.columns and df[key].notna().all()
        assert f"sim_{key}" in df.columns and f"sim_{key}_se" in df.columns
    assert (df["sim_d"] == 60).all() and (df["sim_seeds"] == 2).all()
    assert df["sim_converged"].all()
    assert abs(df["sim_test_error"] - df["test_error"]).max() < 0.1
    png = (tmp_path / "compare.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000
    # each simulation dot is `gaussmix simulate` at that alpha
    sim = run_json("simulate", "--lam", "0.1", "--alpha", "1.5", "--d", "60", "--seeds", "2")
    assert df["sim_test_error"].iloc[1] == sim["test_error"]


def test_compare_validates_before_work(tmp_path: Path) -> None:
    out = tmp_path / "never"
    for args, needle in (
        (("--d", "0"), "--d"),
        (("--seeds", "0"), "--seeds"),
        (("--alphas", "0:1:3"), "--alphas"),
        (("--alphas", "0.001:1:3", "--d", "50"), "--alphas value 0.001"),
    ):
        assert_one_line_error(*run("compare", *args, "--out", str(out), "--quiet"), needle)
    assert not out.exists()


# ---------------------------------------------------------------------------- sweep
GRID = """
[fixed]
loss = "logistic"
lam = 0.1

[grid]
alpha = [0.5, 1.0, 2.0]
delta = [0.25, 0.5]
"""


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_sweep_cli_writes_the_table(tmp_path: Path) -> None:
    grid = write(tmp_path / "grid.toml", GRID)
    out = tmp_path / "res" / "sweep.csv"
    code, stdout, err = run("sweep", "--grid", str(grid), "--out", str(out), "--quiet")
    assert code == 0, err
    assert "6 points: 6 computed, 0 from the checkpoint" in stdout
    df = pd.read_csv(out)
    assert list(df.columns) == ["alpha", "delta", *theory_keys()]
    assert df[["alpha", "delta"]].values.tolist() == [
        [0.5, 0.25], [0.5, 0.5], [1.0, 0.25], [1.0, 0.5], [2.0, 0.25], [2.0, 0.5]
    ]  # fmt: skip
    assert df["converged"].all()
    assert json.loads(df["Q"].iloc[0])[0][0][0] > 0
    # the same table as the Python API, and a second run only resumes
    api = run_grid(grid, backend="serial", progress=False)
    assert api.to_csv(tmp_path / "api.csv").read_bytes() == out.read_bytes()
    code, stdout, err = run("sweep", "--grid", str(grid), "--out", str(out), "--quiet")
    assert code == 0 and "0 computed, 6 from the checkpoint" in stdout
    assert checkpoint_path(out).exists()


def test_sweep_cli_simulation_mode(tmp_path: Path) -> None:
    grid = write(
        tmp_path / "sim.toml",
        '[fixed]\nloss = "logistic"\nlam = 0.1\n[grid]\nalpha = [1.0, 2.0]\n'
        "[simulate]\nd = 40\nseeds = 2\nseed = 3\n",
    )
    out = tmp_path / "sim.csv"
    code, _, err = run("sweep", "--grid", str(grid), "--out", str(out), "-q", "--n-jobs", "1")
    assert code == 0, err
    df = pd.read_csv(out)
    assert list(df.columns) == ["alpha", *simulation_keys()]
    for key in ("test_error_se", "train_error_se", "train_loss_se"):
        assert df[key].notna().all()
    first = run_json("simulate", "--loss", "logistic", "--lam", "0.1", "--alpha", "1.0",
                     "--d", "40", "--seeds", "2", "--seed", "3", "-q")  # fmt: skip
    assert df["test_error"].iloc[0] == first["test_error"]
    assert json.loads(df["params"].iloc[0]) == first["params"]


@pytest.mark.parametrize(
    ("text", "needles"),
    [
        ("[grid]\nalpah = [1.0, 2.0]\n", ("unknown parameter 'alpah'", "alpha")),
        ("[grid]\nalpha = []\n", ("'alpha'", "empty list")),
        ("[grid]\nalpha = [1.0]\n[simulate]\nd = 0\nseeds = 2\n", ("'d'", "got 0")),
        ("[grid]\nalpha = [1.0]\n[simulate]\nd = 50\nseeds = -1\n", ("'seeds'", "got -1")),
        ("[grid]\nalpha = [1.0, 2.0\n", ("not valid TOML",)),
        ("[grids]\nalpha = [1.0]\n", ("'grids'",)),
        ('[fixed]\nloss = "hinj"\n[grid]\nalpha = [1.0]\n', ("grid point 1 of 1", "hinj")),
        (
            "[grid]\nlam = [1.0, -2.0]\n",
            ("grid point 2 of 2", "lam must be a real number in [0, 1e+08], got -2"),
        ),
    ],
)
def test_sweep_cli_bad_grid_fails_before_work(
    tmp_path: Path, text: str, needles: tuple[str, ...]
) -> None:
    grid = write(tmp_path / "bad.toml", text)
    out = tmp_path / "out.csv"
    assert_one_line_error(*run("sweep", "--grid", str(grid), "--out", str(out)), *needles)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.toml"]


def test_sweep_cli_failed_points(tmp_path: Path) -> None:
    grid = write(tmp_path / "grid.toml", "[grid]\nmax-iter = [1, 3000]\n")
    out = tmp_path / "out.csv"
    code, stdout, err = run("sweep", "--grid", str(grid), "--out", str(out), "-q", "-j", "1")
    assert code == 3, err  # partial results: written, marked, exit 3
    assert "1 without a valid result" in stdout
    assert "ConvergenceWarning: 1 of 2 grid points" in err
    assert err.splitlines()[-1] == (
        "gaussmix: error: 1 of 2 grid points have no valid result (converged False, NaN; "
        f"see the message column of {out})"
    )
    assert pd.read_csv(out)["converged"].tolist() == [False, True]
    grid = write(tmp_path / "bad.toml", "[grid]\nmax-iter = [1, 2]\n")
    code, stdout, err = run("sweep", "--grid", str(grid), "--out", str(out), "-q", "-j", "1")
    assert code == 3 and "gaussmix: error: no grid point has a valid result" in err
    assert len(pd.read_csv(out)) == 2  # the table is written all the same


def test_sweep_cli_usage_errors(tmp_path: Path) -> None:
    grid = write(tmp_path / "grid.toml", GRID)
    assert_one_line_error(*run("sweep", "--out", str(tmp_path / "x.csv")), "--grid")
    assert_one_line_error(*run("sweep", "--grid", str(grid)), "--out")
    assert_one_line_error(
        *run("sweep", "--grid", str(tmp_path / "nope.toml"), "--out", str(tmp_path / "x.csv")),
        "cannot read grid file",
    )
    assert_one_line_error(
        *run("sweep", "--grid", str(grid), "--out", str(tmp_path)), "is a directory"
    )
    assert_one_line_error(
        *run("sweep", "--grid", str(grid), "--out", str(tmp_path / "x.csv"), "--backend", "mpi"),
        "backend must be one of",
    )
