"""The explorer's exports (issue 22): the CSV is the command line's byte for byte (the
command of :func:`export_cli` run), the Python script reproduces the table to the bit, the
PNG is a valid image with the overlays."""

from __future__ import annotations

import contextlib
import io
import os
import shlex

import matplotlib.image
import numpy as np
import pandas as pd
import pytest
from _plot_checks import assert_ticks_readable, assert_type_sizes
from conftest import HANG

import gaussmix as gm
from gaussmix.cli.commands import main
from gaussmix.explore import (
    ExplorerState,
    clear_cache,
    export_cli,
    export_csv,
    export_png,
    export_python,
    start_curve,
    start_overlays,
)
from gaussmix.explore.export import csv_name, export_figure

STATES = {
    "binary": ExplorerState(n_points=8),
    "three clusters": ExplorerState(
        n_clusters=3,
        delta=(0.5, 1.0, 0.25),
        rho=(0.2, 0.3, 0.5),
        loss="cross-entropy",
        lam=0.5,
        n_points=6,
        log_x=False,
        alpha_min=0.5,
        alpha_max=3.0,
    ),
    "lambda axis": ExplorerState(
        axis="lambda", loss="square", alpha=1.5, lam_min=1e-2, lam_max=3.0, n_points=7
    ),
    "block": ExplorerState(
        model="block", fractions=(0.25, 0.75), deltas=(2.0, 0.5), loss="hinge", n_points=5
    ),
    "elastic net": ExplorerState(penalty="elastic-net", l1_ratio=0.5, loss="square", n_points=5),
    "library precision": ExplorerState(precision="library", lam=0.3, n_points=5),
}


@pytest.fixture(autouse=True)
def _fresh_cache():
    clear_cache()
    yield
    clear_cache()


def _run_cli(command: str, cwd) -> None:
    args = shlex.split(command)
    assert args[0] == "gaussmix"
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        old = os.getcwd()
        os.chdir(cwd)
        try:
            code = main([*args[1:], "--quiet"])
        finally:
            os.chdir(old)
    assert code == 0, err.getvalue()


@pytest.mark.parametrize("name", list(STATES))
def test_the_csv_is_the_command_lines_byte_for_byte(name, tmp_path):
    state = STATES[name]
    table = start_curve(state).wait(HANG)
    assert table is not None
    command = export_cli(state, out="out")
    _run_cli(command, tmp_path)
    written = (tmp_path / "out" / csv_name(state)).read_bytes()
    assert export_csv(state, table).encode() == written


def test_the_csv_of_a_mixture_file(tmp_path):
    path = tmp_path / "three.npz"
    gm.Mixture.isotropic(0.5, "gaussian", n_clusters=3).save(path)
    state = ExplorerState(mixture_file=str(path), loss="cross-entropy", n_points=4)
    table = start_curve(state).wait(HANG)
    command = export_cli(state, out="out")
    assert f"--mixture {path}" in command and "--n-clusters" not in command
    _run_cli(command, tmp_path)
    assert export_csv(state, table).encode() == (tmp_path / "out" / "curve.csv").read_bytes()


def test_the_command_names_only_what_differs_from_the_command_lines_defaults():
    assert export_cli(ExplorerState(), out="o") == (
        "gaussmix curve --n-clusters 2 --delta 1.0 --loss logistic --lam 0.1 "
        "--tol 1e-05 --no-estimate-error --alphas log:0.2:8.0:40 --out o"
    )
    # the library's precision is the command line's default: no solver option
    assert export_cli(ExplorerState(precision="library"), out="o") == (
        "gaussmix curve --n-clusters 2 --delta 1.0 --loss logistic --lam 0.1 "
        "--alphas log:0.2:8.0:40 --out o"
    )
    lam = export_cli(STATES["lambda axis"], out="o")
    assert lam.startswith("gaussmix lambda-curve ") and "--lam " not in lam
    assert "--alpha 1.5" in lam and "--lams log:0.01:3.0:7" in lam


@pytest.mark.parametrize("name", ["binary", "three clusters", "lambda axis", "block"])
def test_the_python_script_reproduces_the_table_to_the_bit(name, tmp_path, monkeypatch):
    state = STATES[name]
    table = start_curve(state).wait(HANG)
    script = export_python(state)
    compile(script, "explore.py", "exec")
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    with contextlib.redirect_stdout(io.StringIO()):
        exec(script, namespace)
    pd.testing.assert_frame_equal(namespace["table"], table, check_exact=True)
    for col in table.columns:
        if table[col].dtype.kind == "f":
            assert namespace["table"][col].to_numpy().tobytes() == table[col].to_numpy().tobytes()
    assert (tmp_path / csv_name(state)).read_text() == export_csv(state, table)


def test_the_python_script_of_a_mixture_file_loads_it(tmp_path, monkeypatch):
    path = tmp_path / "two.npz"
    gm.Mixture.isotropic(0.5, "antipodal", labels="binary").save(path)
    state = ExplorerState(mixture_file=str(path), n_points=4)
    table = start_curve(state).wait(HANG)
    script = export_python(state)
    assert f"gm.Mixture.load({str(path)!r})" in script
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    with contextlib.redirect_stdout(io.StringIO()):
        exec(script, namespace)
    pd.testing.assert_frame_equal(namespace["table"], table, check_exact=True)


def _image(png: bytes) -> np.ndarray:
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    return matplotlib.image.imread(io.BytesIO(png), format="png")


def test_the_png_is_an_image_with_the_overlays():
    state = ExplorerState(
        n_points=8, overlays=("bayes", "alpha_star", "simulation"), sim_d=60, sim_seeds=2
    )
    table = start_curve(state).wait(HANG)
    overlays = start_overlays(state).wait(HANG)
    assert {o.unavailable for o in overlays.values()} == {None}
    plain = _image(export_png(state, table))
    drawn = _image(export_png(state, table, overlays))
    assert plain.shape == drawn.shape and plain.shape[0] > 100 and plain.shape[1] > 100
    assert not np.array_equal(plain, drawn)  # the overlays are drawn


def test_the_png_of_the_lambda_axis_and_of_order_parameters():
    state = STATES["lambda axis"].replace(
        show=("test_error", "m1", "q1"), overlays=("bayes", "lambda_star")
    )
    job = start_curve(state)
    job.wait(HANG)
    overlays = start_overlays(state).wait(HANG)
    rows = pd.DataFrame(job.rows)
    with_params = _image(export_png(state, rows, overlays))
    errors_only = _image(export_png(state, job.table, overlays))
    assert not np.array_equal(with_params, errors_only)


@pytest.mark.parametrize(("lo", "hi"), [(0.05, 8.0), (0.2, 3.0), (1.0, 100.0), (0.5, 0.9)])
def test_the_pngs_log_alpha_ticks_do_not_overlap_and_are_readable(lo, hi):
    """The PNG's figure (export_png saves export_figure's) on a log alpha axis: its tick
    labels apart, its type at least 10 pt (the legend 9 pt)."""
    state = ExplorerState(alpha_min=lo, alpha_max=hi, n_points=8, log_x=True)
    alpha = np.geomspace(lo, hi, 8)
    table = pd.DataFrame({"alpha": alpha, "test_error": 0.3 / (1 + alpha)})
    (ax,) = export_figure(state, table).axes
    assert ax.get_xscale() == "log"
    assert_ticks_readable(ax)
    assert_type_sizes(ax)


def test_nothing_to_export_without_a_table():
    with pytest.raises(ValueError, match="no curve to export"):
        export_csv(ExplorerState(), None)
