"""Tests of :mod:`gaussmix.sweep` (point specs, executors, checkpoint / resume, provenance)
and of the grids of :mod:`gaussmix.cli.grid` that translate option names into specs.

The dask test starts a real ``distributed.LocalCluster`` (two worker processes on the
loopback interface); the SIGKILL test runs ``python -m gaussmix.cli.commands sweep`` in a
subprocess, kills it in the middle and resumes it.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _cli_helpers import assert_one_line_error, run
from conftest import HANG

import gaussmix as gm
from gaussmix.cli.commands import main
from gaussmix.cli.grid import Grid, GridError, run_grid
from gaussmix.sweep import (
    TEST_DELAY_ENV,
    PointSpec,
    Simulation,
    SpecGrid,
    SweepResult,
    checkpoint_path,
    executors,
    point_key,
    run_task,
    simulation_keys,
    sweep,
    tasks,
    theory_keys,
)
from gaussmix.sweep import checkpoint as ck_module
from gaussmix.sweep.table import csv_bytes

BINARY = {"loss": "logistic", "lam": 0.1}
SQUARE = {"loss": "square", "labels": "binary", "lam": 0.1}


def small_grid(**simulate) -> Grid:
    """Six binary logistic points (alpha x delta)."""
    return Grid(
        {"alpha": [0.5, 1.0, 2.0], "delta": [0.25, 0.5]},
        fixed=BINARY,
        simulate=simulate or None,
    )


def checkpoint_lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


@pytest.fixture(scope="module")
def theory_serial() -> SweepResult:
    return sweep(small_grid(), backend="serial", progress=False)


# ---------------------------------------------------------------------------- grids
def test_grid_points_in_product_order() -> None:
    g = small_grid()
    assert len(g) == 6 and g.shape == (3, 2) and g.mode == "theory"
    assert g.points()[:3] == [
        {"alpha": 0.5, "delta": 0.25},
        {"alpha": 0.5, "delta": 0.5},
        {"alpha": 1.0, "delta": 0.25},
    ]
    assert len(set(g.keys())) == 6


def test_grid_accepts_dashes_lists_and_integers() -> None:
    g = Grid(
        {"max-iter": [500, 1000], "rho": [[0.3, 0.7], "0.5,0.5"]},
        fixed={"loss": "square", "alpha": 2, "quad-order": 32},
    )
    assert g.columns == ("max-iter", "rho")
    assert g.axes["rho"] == ("0.3,0.7", "0.5,0.5")
    spec = g.specs()[0]
    assert spec.max_iter == 500 and spec.params["max_iter"] == 500
    assert Grid({"alpha": np.linspace(1, 2, 3)}).axes["alpha"] == (1.0, 1.5, 2.0)
    assert spec.alpha == 2.0 and isinstance(spec.alpha, float)
    assert spec.quad_order == 32 and spec.params["quad_order"] == 32
    assert spec.coords == {"max-iter": 500, "rho": "0.3,0.7"}


def test_point_key_is_stable_and_complete() -> None:
    a = Grid({"alpha": [1]}, fixed=BINARY).keys()[0]
    b = Grid({"alpha": [1.0]}, fixed={**BINARY, "tol": 1e-8}).keys()[0]  # tol = default
    assert a == b
    assert Grid({"alpha": [1.0]}, fixed={**BINARY, "tol": 1e-9}).keys()[0] != a
    sim = Grid({"alpha": [1.0]}, fixed=BINARY, simulate={"d": 50, "seeds": 2}).keys()[0]
    assert sim != a
    spec = Grid({"alpha": [1.0]}, fixed=BINARY).specs()[0]
    assert point_key(spec) == a  # pure function of the parameters


@pytest.mark.parametrize(
    ("grid", "fixed", "simulate", "needles"),
    [
        ({"alpah": [1.0]}, {}, None, ["unknown parameter 'alpah'", "alpha", "lam"]),
        ({"alpha": [1.0]}, {"lamda": 1.0}, None, ["unknown parameter 'lamda'"]),
        ({"alpha": []}, {}, None, ["'alpha'", "empty list"]),
        ({}, {}, None, ["[grid] is empty"]),
        ({"alpha": 1.0}, {}, None, ["'alpha' must be a list"]),
        ({"alpha": [1.0, 1.0]}, {}, None, ["repeated values"]),
        ({"alpha": [1.0]}, {"alpha": 2.0}, None, ["both in [fixed] and in [grid]"]),
        (
            {"alpha": [1.0]},
            {},
            {"d": 0, "seeds": 2},
            ["[simulate] 'd' must be an integer >= 2, got 0"],
        ),
        ({"alpha": [1.0]}, {}, {"d": -10, "seeds": 2}, ["'d'", "got -10"]),
        (
            {"alpha": [1.0]},
            {},
            {"d": 50, "seeds": 0},
            ["[simulate] 'seeds' must be an integer >= 1, got 0"],
        ),
        ({"alpha": [1.0]}, {}, {"d": 50.5, "seeds": 2}, ["'d'"]),
        ({"alpha": [1.0]}, {}, {"seeds": 2}, ["needs 'd'"]),
        ({"alpha": [1.0]}, {}, {"d": 50, "seeds": 2, "n": 3}, ["unknown parameter 'n'"]),
        ({"seeds": [1, 0]}, {}, {"d": 50, "seeds": 2}, ["'seeds'", "got 0"]),
        ({"n_clusters": [2.5]}, {}, None, ["'n_clusters' must be an integer >= 2, got 2.5"]),
        ({"clusters": [2]}, {}, None, ["'clusters' was renamed 'n_clusters'"]),
        ({"lam": [1.0, -1.0]}, {}, None, ["grid point 2 of 2", "lam = -1.0", "lam must be"]),
        ({"alpha": [1.0, 0.0]}, {}, None, ["grid point 2 of 2", "alpha"]),
        # the checks that depend on lam / alpha are those of make_problem, per point
        ({"lam": [0.1, 0.0]}, {"loss": "logistic", "labels": "binary"}, None, ["lam 0 is only"]),
        ({"alpha": [2.0, 0.5]}, {"loss": "square", "lam": 0.0}, None, ["grid point 2 of 2"]),
        (
            {"lam": [0.1, 0.0]},
            {"loss": "square", "penalty": "l1", "model": "sparse", "delta1": 0.1, "delta2": 1.0},
            None,
            ["grid point 2 of 2", "basis pursuit"],
        ),
        ({"loss": ["square", "logistc"]}, {}, None, ["grid point 2 of 2", "logistc"]),
        ({"alpha": [1.0]}, {"n_clusters": 3}, {"d": 2, "seeds": 2}, ["number of clusters"]),
    ],
)
def test_bad_grids_fail_with_a_message_naming_the_problem(
    grid: dict, fixed: dict, simulate: dict | None, needles: list[str]
) -> None:
    with pytest.raises(GridError) as info:
        Grid(grid, fixed=fixed, simulate=simulate)
    assert isinstance(info.value, ValueError)
    for needle in needles:
        assert needle in str(info.value), (needle, str(info.value))


def test_bad_toml_files(tmp_path: Path) -> None:
    cases = {
        "syntax.toml": ("[grid]\nalpha = [1, 2\n", "not valid TOML"),
        "table.toml": ("[grids]\nalpha = [1, 2]\n", "unknown table or key 'grids'"),
        "nogrid.toml": ("[fixed]\nlam = 1.0\n", "missing [grid]"),
        "unknown.toml": ("[grid]\nalpah = [1, 2]\n", "unknown parameter 'alpah'"),
    }
    for name, (text, needle) in cases.items():
        path = tmp_path / name
        path.write_text(text)
        with pytest.raises(GridError, match=None) as info:
            Grid.from_toml(path)
        assert needle in str(info.value), (name, str(info.value))
        assert name in str(info.value) or "TOML" in str(info.value)
    with pytest.raises(GridError, match="cannot read grid file"):
        Grid.from_toml(tmp_path / "missing.toml")


def test_bad_grid_fails_before_any_work(tmp_path: Path, monkeypatch) -> None:
    calls = []
    monkeypatch.setattr(tasks, "run_point", lambda task: calls.append(task))
    out = tmp_path / "out.csv"
    spec = {"fixed": BINARY, "grid": {"alpha": [1.0, 2.0]}, "simulate": {"d": 0, "seeds": 3}}
    with pytest.raises(GridError, match="'d'"):
        run_grid(spec, out=out, backend="serial", progress=False)
    spec = {"fixed": BINARY, "grid": {"alpha": [1.0, 2.0, -1.0]}}
    with pytest.raises(GridError, match="grid point 3 of 3"):
        run_grid(spec, out=out, backend="serial", progress=False)
    assert calls == []
    assert list(tmp_path.iterdir()) == []  # no checkpoint, no output


def test_bad_sweep_arguments() -> None:
    g = small_grid()
    with pytest.raises(ValueError, match="backend must be one of"):
        sweep(g, backend="spark", progress=False)
    with pytest.raises(ValueError, match="jobs"):
        sweep(g, n_jobs=0, progress=False)
    with pytest.raises(ValueError, match="scheduler is only used with backend='dask'"):
        sweep(g, backend="joblib", scheduler="tcp://127.0.0.1:1", progress=False)


# ---------------------------------------------------------------------------- tables
def test_theory_table_matches_direct_solves(theory_serial: SweepResult) -> None:
    df = theory_serial.df
    assert list(df.columns) == ["alpha", "delta", *theory_keys()]
    assert len(df) == 6 and theory_serial.computed == 6 and theory_serial.failed == 0
    for row in df.itertuples(index=False):
        mix = gm.Mixture.isotropic(row.delta, "simplex", n_clusters=2, labels="binary")
        ref = gm.solve(mix, "logistic", lam=0.1, alpha=row.alpha)
        assert row.test_error == ref.test_error
        assert row.train_loss == ref.train_loss
        np.testing.assert_array_equal(json.loads(row.Q), ref.Q.tolist())
        assert json.loads(row.params)["alpha"] == row.alpha


def test_sweep_rows_have_the_keys_of_point_json(theory_serial: SweepResult) -> None:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["point", "--json", "--loss", "logistic", "--lam", "0.1", "--alpha", "0.5",
                     "--delta", "0.25"]) == 0  # fmt: skip
    point = json.loads(buf.getvalue())
    assert tuple(point) == theory_keys()
    row = theory_serial.df.iloc[0]
    assert row["test_error"] == point["test_error"]
    assert json.loads(row["params"]) == point["params"]


def test_joblib_equals_serial(theory_serial: SweepResult) -> None:
    res = sweep(small_grid(), backend="joblib", n_jobs=2, progress=False)
    pd.testing.assert_frame_equal(res.df, theory_serial.df, check_exact=True)


def test_failed_point_is_a_row_not_a_crash() -> None:
    g = Grid({"max_iter": [1, 3000]}, fixed={"alpha": 2.0})  # K = 3 cross-entropy
    with pytest.warns(gm.ConvergenceWarning, match="1 of 2 grid points"):
        res = sweep(g, backend="serial", progress=False)
    bad, good = res.df.iloc[0], res.df.iloc[1]
    assert not bad["converged"] and np.isnan(bad["test_error"])
    assert "did not converge" in bad["message"]
    assert good["converged"] and 0 < good["test_error"] < 1
    assert res.failed == 1
    assert res.attrs["max_iter"] == "grid" and res.attrs["tol"] == 1e-8


def test_xarray_dims_and_provenance(theory_serial: SweepResult) -> None:
    ds = theory_serial.to_xarray()
    assert dict(ds.sizes)["alpha"] == 3 and dict(ds.sizes)["delta"] == 2
    assert ds["test_error"].dims == ("alpha", "delta")
    assert ds["Q"].dims == ("alpha", "delta", "cluster", "out", "out2")
    assert ds["b"].dims == ("alpha", "delta", "out")
    assert ds["test_error"].sel(alpha=1.0, delta=0.5).item() == (
        theory_serial.df.query("alpha == 1.0 and delta == 0.5")["test_error"].item()
    )
    a = ds.attrs
    assert a["gaussmix_version"] == gm.__version__
    assert a["mode"] == "theory" and a["tol"] == 1e-8 and a["max_iter"] == 3000
    assert "gauss-hermite" in a["quadrature"]
    assert json.loads(a["fixed"]) == BINARY
    assert json.loads(a["grid"]) == {"alpha": [0.5, 1.0, 2.0], "delta": [0.25, 0.5]}
    assert a["created"].endswith("+00:00")
    assert all(isinstance(v, str | int | float) for v in a.values())


# ---------------------------------------------------------------------------- simulations
def test_simulation_sweep_reproducible_and_provenance() -> None:
    g = Grid({"alpha": [1.0, 2.0]}, fixed=BINARY, simulate={"d": 40, "seeds": 2, "seed": 7})
    a = sweep(g, backend="serial", progress=False)
    b = sweep(g, backend="joblib", n_jobs=2, progress=False)
    pd.testing.assert_frame_equal(a.df, b.df, check_exact=True)
    assert list(a.df.columns) == ["alpha", *simulation_keys()]
    assert (a.df["test_error_se"] > 0).all()
    attrs = a.to_xarray().attrs
    assert attrs["mode"] == "simulation"
    assert (attrs["d"], attrs["seeds"], attrs["seed"]) == (40, 2, 7)
    # the same numbers as the simulation engine called directly
    mix = gm.Mixture.isotropic(0.5, "simplex", n_clusters=2, labels="binary")
    from threadpoolctl import threadpool_limits

    from gaussmix.simulate.simulation import simulate

    with threadpool_limits(1):
        ref = simulate(mix, loss="logistic", lam=0.1, alpha=2.0, d=40, seeds=2, seed=7)
    assert a.df["test_error"].iloc[1] == ref.mean["test_error"]
    assert a.df["test_error_se"].iloc[1] == ref.se["test_error"]


def test_simulate_argument_switches_mode() -> None:
    g = small_grid().with_simulate({"d": 30, "seeds": 2})
    assert g.mode == "simulation" and g.columns == ("alpha", "delta")
    res = run_grid(
        Grid({"alpha": [1.0]}, fixed=BINARY),
        simulate={"d": 30, "seeds": 2},
        backend="serial",
        progress=False,
    )
    assert "test_error_se" in res.df.columns


def test_dask_local_cluster_equals_joblib(tmp_path: Path, theory_serial: SweepResult) -> None:
    distributed = pytest.importorskip("distributed")
    sim_grid = Grid({"alpha": [1.0, 2.0]}, fixed=BINARY, simulate={"d": 40, "seeds": 2})
    sim_joblib = sweep(sim_grid, backend="joblib", n_jobs=2, progress=False)
    theory_joblib = sweep(small_grid(), backend="joblib", n_jobs=2, progress=False)
    with distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address=None,
    ) as cluster:
        address = cluster.scheduler_address
        theory_dask = sweep(small_grid(), scheduler=address, progress=False)
        sim_dask = sweep(sim_grid, scheduler=address, progress=False)
        # and through the command line
        toml = tmp_path / "grid.toml"
        toml.write_text(
            '[fixed]\nloss = "logistic"\nlam = 0.1\n'
            "[grid]\nalpha = [0.5, 1.0, 2.0]\ndelta = [0.25, 0.5]\n"
        )
        for name, extra in (("dask.csv", ["--scheduler", address]), ("joblib.csv", [])):
            args = ["sweep", "--grid", str(toml), "--out", str(tmp_path / name), "-q", *extra]
            with contextlib.redirect_stdout(io.StringIO()):
                assert main(args) == 0
    assert theory_dask.attrs["backend"] == "dask"
    pd.testing.assert_frame_equal(theory_dask.df, theory_joblib.df, check_exact=True)
    pd.testing.assert_frame_equal(theory_dask.df, theory_serial.df, check_exact=True)
    pd.testing.assert_frame_equal(sim_dask.df, sim_joblib.df, check_exact=True)
    assert (tmp_path / "dask.csv").read_text() == (tmp_path / "joblib.csv").read_text()
    assert (tmp_path / "dask.csv").read_bytes() == csv_bytes(theory_serial.df)


def test_unreachable_scheduler_is_an_oserror(monkeypatch) -> None:
    pytest.importorskip("distributed")
    monkeypatch.setattr(executors, "CONNECT_TIMEOUT", "1s")
    g = Grid({"alpha": [1.0]}, fixed=BINARY)
    with pytest.raises(OSError, match="cannot connect to the dask scheduler"):
        sweep(g, scheduler="tcp://127.0.0.1:9", progress=False)


# ---------------------------------------------------------------------------- checkpoint
def test_resume_skips_finished_points(tmp_path: Path, theory_serial: SweepResult) -> None:
    out = tmp_path / "t.csv"
    first = sweep(small_grid(), out=out, backend="serial", progress=False)
    ck = checkpoint_path(out)
    assert first.checkpoint == ck and len(checkpoint_lines(ck)) == 6
    text = out.read_text()
    second = sweep(small_grid(), out=out, backend="serial", progress=False)
    assert (second.computed, second.resumed) == (0, 6)
    assert out.read_text() == text
    pd.testing.assert_frame_equal(second.df, theory_serial.df, check_exact=True)
    assert pd.read_csv(out).shape == (6, 2 + len(theory_keys()))


def test_resume_after_partial_line(tmp_path: Path, theory_serial: SweepResult) -> None:
    ck = tmp_path / "ck.jsonl"
    sweep(small_grid(), checkpoint=ck, backend="serial", progress=False)
    lines = ck.read_bytes().splitlines(keepends=True)
    # a killed writer: two whole rows lost, half of the next one written
    ck.write_bytes(b"".join(lines[:3]) + lines[3][: len(lines[3]) // 2])
    res = sweep(small_grid(), checkpoint=ck, backend="serial", progress=False)
    assert (res.computed, res.resumed) == (3, 3)
    pd.testing.assert_frame_equal(res.df, theory_serial.df, check_exact=True)
    recs = checkpoint_lines(ck)  # every line parses: the half line was dropped
    assert len(recs) == 6 and len({r["key"] for r in recs}) == 6


def test_checkpoint_of_another_grid_is_not_reused(tmp_path: Path) -> None:
    ck = tmp_path / "ck.jsonl"
    sweep(Grid({"alpha": [1.0, 2.0]}, fixed=BINARY), checkpoint=ck, backend="serial",
          progress=False)  # fmt: skip
    res = sweep(
        Grid({"alpha": [1.0, 2.0]}, fixed={**BINARY, "lam": 0.2}),
        checkpoint=ck,
        backend="serial",
        progress=False,
    )
    assert (res.computed, res.resumed) == (2, 0)
    assert res.df["params"].map(lambda p: json.loads(p)["lam"]).tolist() == [0.2, 0.2]


def test_checkpoint_is_locked_while_in_use(tmp_path: Path) -> None:
    ck = tmp_path / "ck.jsonl"
    holder = ck_module.Checkpoint(ck, fsync_interval=0.0)
    holder.open()
    try:
        with pytest.raises(OSError, match="in use by another running sweep"):
            sweep(Grid({"alpha": [1.0]}, fixed=BINARY), checkpoint=ck, progress=False)
    finally:
        holder.close()


def _count_complete_lines(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def test_sigkill_then_resume_equals_uninterrupted_run(tmp_path: Path) -> None:
    grid = tmp_path / "grid.toml"
    grid.write_text(
        '[fixed]\nloss = "square"\nlabels = "binary"\nlam = 0.1\n'
        "[grid]\nalpha = [0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 2.5, 3.0, 4.0]\n"
        "delta = [0.25, 0.5, 1.0]\n"
    )
    n_points = 30

    def command(out: Path) -> list[str]:
        return [sys.executable, "-m", "gaussmix.cli.commands", "sweep", "--grid", str(grid),
                "--out", str(out), "--n-jobs", "2", "--quiet"]  # fmt: skip

    env = {k: v for k, v in os.environ.items() if k != TEST_DELAY_ENV}
    out = tmp_path / "killed.csv"
    ck = checkpoint_path(out)
    slow = {**env, TEST_DELAY_ENV: "0.15"}
    proc = subprocess.Popen(
        command(out),
        env=slow,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + HANG
        while _count_complete_lines(ck) < 5:
            assert proc.poll() is None, proc.stderr.read().decode()
            assert time.monotonic() < deadline, "the sweep did not start"
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=HANG)
    finally:
        with contextlib.suppress(ProcessLookupError):  # its worker processes too
            os.killpg(proc.pid, signal.SIGKILL)
        proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL
    saved = _count_complete_lines(ck)
    assert 5 <= saved < n_points, saved
    assert not out.exists()

    resumed = subprocess.run(command(out), env=env, capture_output=True, text=True, timeout=HANG)
    assert resumed.returncode == 0, resumed.stderr
    assert f"{n_points - saved} computed, {saved} from the checkpoint" in resumed.stdout

    # an uninterrupted run (in this process, serially): the same table, byte for byte
    ref = run_grid(grid, out=tmp_path / "reference.csv", backend="serial", progress=False)
    assert ref.computed == n_points
    assert out.read_text() == (tmp_path / "reference.csv").read_text()
    df = pd.read_csv(out)
    assert len(df) == n_points and not df.duplicated(["alpha", "delta"]).any()
    keys = [r["key"] for r in checkpoint_lines(ck)]
    assert len(keys) == len(set(keys)) == n_points


def test_warnings_of_points_are_reemitted(monkeypatch) -> None:
    real = tasks.theory_payload

    def noisy(setup, **kw):
        warnings.warn("coarse rule", gm.IntegrationWarning, stacklevel=2)
        return real(setup, **kw)

    monkeypatch.setattr(tasks, "theory_payload", noisy)
    with pytest.warns(gm.IntegrationWarning, match=r"coarse rule \(at alpha = 1.0\)"):
        res = sweep(Grid({"alpha": [1.0]}, fixed=BINARY), backend="serial", progress=False)
    assert res.warnings == [("IntegrationWarning", "coarse rule", "alpha = 1.0")]


def test_warnings_belong_to_their_point_and_filters_are_restored(
    tmp_path: Path, monkeypatch
) -> None:
    # the serial stream records warnings once for all points: each point must still get its
    # own, and the caller's warning filters must be back after the sweep, even one that fails
    real = tasks.theory_payload

    def noisy(setup, *, lam, alpha, **kw):
        if alpha == 2.0:
            warnings.warn("coarse rule", gm.IntegrationWarning, stacklevel=2)
        return real(setup, lam=lam, alpha=alpha, **kw)

    monkeypatch.setattr(tasks, "theory_payload", noisy)
    grid = Grid({"alpha": [1.0, 2.0, 3.0]}, fixed=BINARY)
    before = list(warnings.filters)
    with pytest.warns(gm.IntegrationWarning, match=r"coarse rule \(at alpha = 2.0\)"):
        res = sweep(grid, backend="serial", progress=False)
    assert res.warnings == [("IntegrationWarning", "coarse rule", "alpha = 2.0")]
    assert warnings.filters == before

    def full_disk(self, line):
        raise OSError("no space left on device")

    monkeypatch.setattr(ck_module.Checkpoint, "append", full_disk)
    with pytest.raises(OSError, match="no space left") as info:
        sweep(grid, checkpoint=tmp_path / "ck.jsonl", backend="serial", progress=False)
    # (while the traceback, and with it the sweep's frame, is alive)
    assert info.value is not None and warnings.filters == before
    with pytest.warns(UserWarning, match="still recorded"):
        warnings.warn("still recorded", UserWarning, stacklevel=1)


def test_csv_writer_reads_back_like_pandas() -> None:
    # the sweep writes its CSV itself (float text by orjson): pandas must read back exactly
    # the frame that it reads from its own to_csv, on every kind of cell of a table
    df = pd.DataFrame(
        {
            "alpha": [0.5, 1e-8, 1e22],
            "loss": ["square", "hinge", 'a "quoted", text'],
            "x": [np.nan, -0.0, 5e-324],
            "y": [0.1, 2.5e-300, 1.7976931348623157e308],
            "converged": [True, False, True],
            "n_iter": [3, 0, 12],
            "Q": ["[[0.1,0.2]]", None, '{"a":1,"b":[null]}'],
            "message": ["converged", "failed: ValueError: x, y", "line\nbreak"],
            "mixed": [1.5, None, "text"],
        }
    )
    # a float column that is a strided view of a 2-D block (Fortran order)
    block = np.asfortranarray(np.random.default_rng(0).normal(size=(3, 2)))
    df = pd.concat([df, pd.DataFrame(block, columns=["f0", "f1"])], axis=1)
    ours = pd.read_csv(io.BytesIO(csv_bytes(df)))
    theirs = pd.read_csv(io.StringIO(df.to_csv(index=False)))
    pd.testing.assert_frame_equal(ours, theirs, check_exact=True)
    assert b"1e-8" in csv_bytes(df) and ours["y"].iloc[2] == 1.7976931348623157e308
    # infinities (never in a sweep's table) are kept, not emptied
    inf = pd.DataFrame({"v": [np.inf, -np.inf, 1.0]})
    assert pd.read_csv(io.BytesIO(csv_bytes(inf)))["v"].tolist() == [np.inf, -np.inf, 1.0]


# ---------------------------------------------------------------------------- library points
def binary_spec(alpha: float, delta: float, **kw) -> PointSpec:
    mix = gm.Mixture.isotropic(delta, "simplex", n_clusters=2, labels="binary")
    coords = {"alpha": alpha, "delta": delta}
    return PointSpec(mix, "logistic", lam=0.1, alpha=alpha, coords=coords, **kw)


def test_sweep_of_library_specs_equals_the_option_grid(theory_serial: SweepResult) -> None:
    specs = [binary_spec(a, d) for a in (0.5, 1.0, 2.0) for d in (0.25, 0.5)]
    res = sweep(specs, backend="serial", progress=False)
    assert res.grid.axes == {"alpha": (0.5, 1.0, 2.0), "delta": (0.25, 0.5)}
    assert list(res.df.columns) == list(theory_serial.df.columns)
    numbers = ["alpha", "delta", "test_error", "train_loss", "Q", "M", "V", "b"]
    pd.testing.assert_frame_equal(res.df[numbers], theory_serial.df[numbers], check_exact=True)
    params = json.loads(res.df["params"].iloc[0])  # the default params: the mixture and settings
    assert params["mixture"]["kind"] == "isotropic" and params["loss"] == "logistic"
    assert res.to_xarray()["test_error"].dims == ("alpha", "delta")
    # points that are not a Cartesian product: one dimension 'point'
    part = sweep(specs[:3], backend="serial", progress=False)
    ds = part.to_xarray()
    assert ds["test_error"].dims == ("point",) and ds["Q"].dims[0] == "point"
    assert ds["alpha"].values.tolist() == [0.5, 0.5, 1.0]
    pd.testing.assert_frame_equal(part.df, res.df.iloc[:3], check_exact=True)


def test_spec_grid_validates_points_and_run_task() -> None:
    spec = binary_spec(1.0, 0.5)
    rec = run_task(spec)
    assert rec["key"] == point_key(spec) and rec["row"]["converged"]
    assert point_key(spec) == point_key(binary_spec(1.0, 0.5))
    assert point_key(spec) != point_key(binary_spec(1.0, 0.5, tol=1e-9))
    assert point_key(spec) != point_key(spec.at(lam=0.2))
    sim = binary_spec(1.0, 0.5, simulate=Simulation(d=40, seeds=2))
    assert point_key(sim) != point_key(spec) and sim.mode == "simulation"
    with pytest.raises(TypeError, match="mixture must be a gaussmix.Mixture"):
        PointSpec("isotropic", "logistic", lam=0.1, alpha=1.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="seeds must be an integer >= 1"):
        Simulation(d=40, seeds=0)
    bad = [binary_spec(1.0, 0.5), binary_spec(2.0, 0.5).at(lam=-1.0)]
    with pytest.raises(ValueError, match=r"point 2 of 2 \(alpha = 2.0, delta = 0.5\): lam"):
        SpecGrid(tuple(bad))
    with pytest.raises(ValueError, match="d must be an integer >= 2, got 1"):
        Simulation(d=1, seeds=2)
    three = PointSpec(gm.Mixture.isotropic(0.5, n_clusters=3), "cross-entropy", lam=0.1, alpha=4.0)
    with pytest.raises(ValueError, match="d must be >= the number of clusters K=3"):
        SpecGrid((three.at(simulate=Simulation(d=2, seeds=2)),))
    with pytest.raises(ValueError, match="all be theory points or all simulations"):
        SpecGrid((spec, sim))
    with pytest.raises(TypeError, match="points must be a SpecGrid"):
        sweep(42, progress=False)  # type: ignore[arg-type]


def test_sweep_and_point_options_work_without_typer() -> None:
    # the library's sweep never imports the command-line framework, and the resolution of
    # the point options does not need it (options.py builds typer options only for commands)
    options = Path(__file__).resolve().parents[1] / "src/gaussmix/frontend/options.py"
    code = f"""
import importlib.util, sys
sys.modules["typer"] = None  # any import of typer fails
sys.modules["click"] = None
import gaussmix.sweep
spec = importlib.util.spec_from_file_location("isolated_options", {str(options)!r})
mod = importlib.util.module_from_spec(spec)
sys.modules["isolated_options"] = mod
spec.loader.exec_module(mod)
r = mod.resolve_options(mod.PointOptions(loss="logistic"))
assert (r.n_clusters, r.labels, r.means) == (2, "binary", "simplex"), r
r = mod.resolve_options(mod.PointOptions(model="block", fractions="0.5,0.5", deltas="1,2"))
assert (r.n_clusters, r.labels, r.means) == (2, "onehot", "antipodal"), r
r = mod.resolve_options(mod.PointOptions(delta="0.5,0.5,1,1"))
assert (r.n_clusters, r.labels, r.means) == (4, "onehot", "simplex"), r
try:
    mod.resolve_options(mod.PointOptions(rho="0.5,0.5", delta="1,1,1"))
except ValueError as exc:
    assert str(exc) == "delta implies 3 clusters, but rho implies 2", exc
else:
    raise AssertionError("no error")
mod.build_point(mod.PointOptions(model="sparse", loss="square", delta1=0.1, delta2=1.0))
print("ok")
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout == "ok\n", proc.stderr


def test_no_function_of_the_sweep_is_longer_than_80_lines() -> None:
    import ast

    root = Path(__file__).resolve().parents[1] / "src/gaussmix"
    files = [*(root / "sweep").glob("*.py"), root / "cli/options.py", root / "cli/grid.py"]
    long = []
    for path in files:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                if node.end_lineno - node.lineno + 1 > 80:
                    long.append(f"{path.name}:{node.name}")
    assert long == []


# ---------------------------------------------------------------------------- command line
TOML = '[fixed]\nloss = "logistic"\nlam = 0.1\n[grid]\nalpha = [0.5, 1.0]\n'


def sweep_cli(tmp_path: Path, *args: str) -> tuple[int, str, str, float]:
    grid = tmp_path / "grid.toml"
    grid.write_text(TOML)
    t0 = time.monotonic()
    code, out, err = run("sweep", "--grid", str(grid), *args)
    return code, out, err, time.monotonic() - t0


@pytest.mark.parametrize("address", ["notaurl", "tcp://host", "tcp://127.0.0.1:99999", ""])
def test_malformed_scheduler_is_refused_before_any_work(tmp_path: Path, address: str) -> None:
    out = tmp_path / "o.csv"
    code, stdout, err, elapsed = sweep_cli(tmp_path, "--out", str(out), "--scheduler", address)
    assert_one_line_error(code, stdout, err, "--scheduler", repr(address), "tcp://host:8786")
    assert elapsed < 5
    assert sorted(p.name for p in tmp_path.iterdir()) == ["grid.toml"]


def test_unreachable_scheduler_fails_fast_and_leaves_nothing(tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    out = tmp_path / "o.csv"
    code, stdout, err, elapsed = sweep_cli(
        tmp_path, "--out", str(out), "--scheduler", "tcp://127.0.0.1:1"
    )
    assert_one_line_error(code, stdout, err, "--scheduler", "cannot connect", "127.0.0.1:1")
    assert elapsed < 15, elapsed  # the connect timeout (3 s) and the client's start
    assert sorted(p.name for p in tmp_path.iterdir()) == ["grid.toml"]  # no checkpoint, CSV


def test_unwritable_out_is_a_bad_option(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "afile").write_text("")
    code, stdout, err, _ = sweep_cli(tmp_path, "--out", str(tmp_path / "afile" / "x.csv"))
    assert_one_line_error(code, stdout, err, "--out", "not a directory")
    code, stdout, err, _ = sweep_cli(
        tmp_path, "--out", str(tmp_path / "o.csv"), "--checkpoint", str(tmp_path / "afile/c")
    )
    assert_one_line_error(code, stdout, err, "--checkpoint", "not a directory")
    if os.geteuid() != 0:  # (root writes into read-only directories)
        ro = tmp_path / "ro"
        ro.mkdir(mode=0o555)
        code, stdout, err, _ = sweep_cli(tmp_path, "--out", str(ro / "x.csv"))
        assert_one_line_error(code, stdout, err, "--out", "permission denied")
    # a directory that this user cannot create (as a user other than root would see it)
    real_access = os.access

    def access(path, mode, **kw) -> bool:  # '/' is not writable for this user
        return False if str(path) == "/" else real_access(path, mode, **kw)

    monkeypatch.setattr(os, "access", access)
    code, stdout, err, _ = sweep_cli(tmp_path, "--out", "/nonexistent/dir/x.csv")
    assert_one_line_error(code, stdout, err, "--out", "/nonexistent/dir", "permission denied")
    assert not Path("/nonexistent").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) in (
        ["afile", "grid.toml"],
        ["afile", "grid.toml", "ro"],
    )


def test_csv_follows_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        res = sweep(small_grid(), out=tmp_path / "t.csv", backend="serial", progress=False)
    finally:
        os.umask(old)
    assert (res.out.stat().st_mode & 0o777) == 0o640  # not the 0600 of a temporary file
    assert (res.checkpoint.stat().st_mode & 0o777) == 0o640
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_progress_on_a_pipe_has_no_escape_codes(tmp_path: Path) -> None:
    grid = tmp_path / "grid.toml"
    grid.write_text(TOML)
    env = {k: v for k, v in os.environ.items() if k != TEST_DELAY_ENV}
    cmd = [sys.executable, "-m", "gaussmix.cli.commands", "sweep", "--grid", str(grid),
           "--out", str(tmp_path / "o.csv"), "--n-jobs", "1"]  # fmt: skip
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "\x1b[" not in proc.stderr and "\r" not in proc.stderr
    assert proc.stderr.count("sweep (theory)") <= 1, proc.stderr
    assert "2 computed" in proc.stdout


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_policy_draws_only_on_a_terminal() -> None:
    from gaussmix.core.progress import progress_bar, progress_enabled

    pipe = io.StringIO()
    with progress_bar(total=3, desc="outer", file=pipe) as outer:
        with progress_bar(total=2, desc="inner", position=1, file=pipe) as inner:
            inner.update(2)
        outer.update(3)
    assert pipe.getvalue() == ""
    term = _Terminal()
    with progress_bar(total=3, desc="outer", file=term) as bar:
        bar.update(3)
    assert "outer" in term.getvalue()
    with progress_bar(total=3, desc="off", file=term, enabled=False) as bar:
        bar.update(3)
    assert "off" not in term.getvalue()
    assert not progress_enabled(True, pipe) and progress_enabled(True, term)
    assert not progress_enabled(False, term)
