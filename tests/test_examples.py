"""Every script in ``examples/`` runs, from a clean directory, and writes what it says.

The scripts are what researchers copy and edit; running them here keeps them in step with
the API.  Each runs in a subprocess (as a user would run it) on the checked-out sources.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


def _run(script: str, *args: str, cwd: Path) -> str:
    env = dict(os.environ, MPLBACKEND="Agg", OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(ROOT / "src"), env.get("PYTHONPATH", "")) if p
    )
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES / script), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    return proc.stdout


def test_every_example_is_tested() -> None:
    tested = {
        "first_curve.py",
        "learning_curve.py",
        "custom_mixture.py",
        "optimal_lambda.py",
        "dask_sweep.py",
    }
    assert {p.name for p in EXAMPLES.glob("*.py")} == tested


def test_first_curve(tmp_path: Path) -> None:
    """The home page's ten lines: the table they print is the learning curve that a cold
    ``gm.solve`` gives point by point (the curve warm-starts along alpha), and they draw."""
    import gaussmix as gm

    out = _run("first_curve.py", cwd=tmp_path)
    assert (tmp_path / "first_curve.png").stat().st_size > 0
    rows = [ln.split() for ln in out.strip().splitlines()]
    assert rows[0] == ["alpha", "test_error", "train_error"]
    table = np.array(rows[1:], dtype=float)
    assert len(table) == 7
    mix = gm.Mixture.isotropic(0.5, "simplex", n_clusters=3)
    for alpha, test_error, train_error in table[[1, 4]]:
        res = gm.solve(mix, "cross-entropy", lam=0.01, alpha=alpha)
        # printed with 6 significant digits; the two solves agree to the solver's tolerance
        assert abs(res.test_error - test_error) <= 1e-6 * max(1.0, test_error) + 1e-6
        assert abs(res.train_error - train_error) <= 1e-6 * max(1.0, train_error) + 1e-6
    assert np.all(np.diff(table[:, 1]) < 0)  # more data, lower test error
    assert table[0, 2] < 1e-9 < 1e-3 < table[-1, 2]  # separable at first, not at the end


def test_learning_curve(tmp_path: Path) -> None:
    _run("learning_curve.py", str(tmp_path), "--quick", cwd=tmp_path)
    df = pd.read_csv(tmp_path / "learning_curve.csv")
    assert (tmp_path / "learning_curve.png").stat().st_size > 0
    theory = df[df["source"] == "theory"].sort_values("alpha")
    sims = df[df["source"] != "theory"]
    assert len(theory) == 12 and len(sims) == 3
    # more data, lower test error (cross-entropy with ridge: no double descent at lam = 0.1)
    assert np.all(np.diff(theory["test_error"].to_numpy()) < 0)
    assert np.all(sims["test_error_se"].to_numpy() >= 0)


def test_custom_mixture(tmp_path: Path) -> None:
    out = _run("custom_mixture.py", cwd=tmp_path)
    lines = [ln for ln in out.splitlines() if "test" in ln]
    assert len(lines) == 3
    for ln in lines:
        err = float(ln.split("test")[1].split()[0])
        assert 0.0 < err < 0.5


def test_optimal_lambda(tmp_path: Path) -> None:
    out = _run("optimal_lambda.py", str(tmp_path), cwd=tmp_path)
    df = pd.read_csv(tmp_path / "optimal_lambda.csv")
    assert (tmp_path / "optimal_lambda.png").stat().st_size > 0
    lam_star = float(out.split("lambda* = ")[1].split(",")[0])
    err_star = float(out.split("test error there ")[1].split()[0])
    # an interior optimum, no worse than any grid point
    assert df["lam"].min() < lam_star < df["lam"].max()
    assert err_star <= df["test_error"].min() + 1e-9


@pytest.mark.slow
def test_dask_sweep(tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    _run("dask_sweep.py", str(tmp_path), cwd=tmp_path)
    df = pd.read_csv(tmp_path / "dask_sweep.csv")
    assert len(df) == 12
    assert df["test_error"].notna().all()
    # resumable: a second run finds every point in the checkpoint and gives the same table
    _run("dask_sweep.py", str(tmp_path), cwd=tmp_path)
    pd.testing.assert_frame_equal(df, pd.read_csv(tmp_path / "dask_sweep.csv"))
