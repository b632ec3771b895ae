"""Provenance beside every table (:mod:`gaussmix.core.provenance`): each command that writes
a table writes a JSON beside it with the version, the exact command line, the UTC date,
the mixture (structure, fingerprint, the SHA-256 of a mixture file) and every parameter;
each command's JSON is read here and checked against what was asked and against values
computed independently (the mixture's fingerprint by the library, the file's checksum by
hashlib, the columns by reading the CSV)."""

from __future__ import annotations

import datetime
import hashlib
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _cli_helpers import run

import gaussmix as gm
from gaussmix.core.provenance import (
    command_line,
    run_record,
    set_command_line,
    write_provenance,
)
from gaussmix.core.version import __version__

FIXTURE = Path(__file__).parent / "fixtures" / "owndata_small.csv"


def _read(path: Path, argv: list[str]) -> dict:
    """The JSON at ``path``, with the fields every record has checked: the version, the
    command line (``argv`` run as ``gaussmix``), a UTC date of the last ten minutes, and
    the columns of the CSV beside it."""
    meta = json.loads(path.read_text())
    assert meta["gaussmix_version"] == __version__
    assert meta["argv"] == ["gaussmix", *argv]
    assert meta["command"].startswith(f"gaussmix {argv[0]} ")
    date = datetime.datetime.fromisoformat(meta["date"])
    assert date.utcoffset() == datetime.timedelta(0)
    age = datetime.datetime.now(datetime.timezone.utc) - date
    assert datetime.timedelta(0) <= age < datetime.timedelta(minutes=10)
    csv = path.with_suffix(".csv")
    assert meta["table"] == csv.name
    assert meta["columns"] == list(pd.read_csv(csv).columns)
    return meta


def _run(*argv: str) -> None:
    code, _, err = run(*argv)
    assert code == 0, err


def test_curve_records_the_mixture_and_every_parameter(tmp_path):
    argv = ["curve", "-K", "3", "--delta", "0.4", "--lam", "0.5", "--alphas", "0.5:1:2",
            "--tol", "1e-9", "--quiet", "--out", str(tmp_path)]  # fmt: skip
    _run(*argv)
    meta = _read(tmp_path / "curve.json", argv)
    p = meta["parameters"]
    assert (p["loss"], p["penalty"], p["n_clusters"], p["delta"]) == (
        "cross-entropy",
        "l2",
        3,
        0.4,
    )
    assert (p["lam"], p["alphas"], p["alpha"]) == (0.5, [0.5, 1.0], None)
    assert (p["tol"], p["max_iter"], p["quad_order"]) == (1e-9, 3000, None)
    truth = gm.Mixture.isotropic(0.4, "simplex", n_clusters=3)
    assert meta["mixture"]["fingerprint"] == truth.fingerprint()
    assert "K = 3" in meta["mixture"]["structure"]


def test_lambda_curve_records_its_lams(tmp_path):
    argv = ["lambda-curve", "--loss", "logistic", "--alpha", "1.5", "--lams", "0.5:1:2",
            "--quiet", "--out", str(tmp_path)]  # fmt: skip
    _run(*argv)
    p = _read(tmp_path / "lambda_curve.json", argv)["parameters"]
    assert (p["loss"], p["n_clusters"], p["alpha"]) == ("logistic", 2, 1.5)
    assert (p["lams"], p["lam"]) == ([0.5, 1.0], None)


def test_compare_with_a_mixture_file_names_it_and_its_checksum(tmp_path):
    mixture = gm.Mixture.isotropic(0.3, "antipodal", n_clusters=2, labels="binary")
    path = tmp_path / "mine.npz"
    mixture.save(path)
    out = tmp_path / "out"
    argv = ["compare", "--mixture", str(path), "--loss", "logistic", "--alphas", "1:2:2",
            "--d", "60", "--seeds", "2", "--seed", "7", "--n-jobs", "1", "--quiet",
            "--out", str(out)]  # fmt: skip
    _run(*argv)
    meta = _read(out / "compare.json", argv)
    m = meta["mixture"]
    assert m["file"] == str(path)
    assert m["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert m["fingerprint"] == mixture.fingerprint()
    p = meta["parameters"]
    assert (p["d"], p["seeds"], p["seed"], p["n_jobs"], p["alphas"]) == (60, 2, 7, 1, [1.0, 2.0])
    assert (p["loss"], p["lam"], p["fingerprint"]) == ("logistic", 0.1, mixture.fingerprint())


def test_transition_simulation_records_its_sizes(tmp_path):
    argv = ["transition", "--simulate", "--no-theory", "--alphas", "1:2:2", "--d", "40",
            "--seeds", "2", "--quiet", "--out", str(tmp_path)]  # fmt: skip
    _run(*argv)
    meta = _read(tmp_path / "transition.json", argv)
    p = meta["parameters"]
    assert (p["d"], p["seeds"], p["alphas"], p["theory"]) == ([40], 2, [1.0, 2.0], False)
    assert meta["mixture"]["n_clusters"] == p["n_clusters"] == 3  # the default K
    assert meta["crossings"][0]["d"] == 40


def test_data_json_records_the_run_the_file_and_the_fitted_mixture(tmp_path):
    argv = ["data", str(FIXTURE), "--label", "label", "--alphas", "0.5", "--sources",
            "theory", "--lam", "0.3", "--max-iter", "500", "--quiet",
            "--out", str(tmp_path)]  # fmt: skip
    _run(*argv)
    meta = _read(tmp_path / "data.json", argv)
    assert meta["data"]["files"][0]["sha256"] == hashlib.sha256(FIXTURE.read_bytes()).hexdigest()
    p = meta["parameters"]
    assert (p["loss"], p["lam"], p["alphas"], p["seed"], p["scale"]) == (
        "logistic", 0.3, [0.5], 0, "none"
    )  # fmt: skip
    assert p["solver"]["max_iter"] == 500 and p["solver"]["tol"] == 1e-8
    study = gm.study_data(
        gm.data.files.load_labelled(FIXTURE, label="label"), lam=0.3, alphas=[0.5],
        sources=["theory"],
    )  # fmt: skip
    assert meta["mixture"]["fingerprint"] == study.problem.mixture.fingerprint()


def test_realdata_json_records_the_run(tmp_path):
    argv = ["realdata", "--dataset", "digits", "--task", "even-odd", "--lam", "0.2",
            "--alphas", "0.5", "--sources", "theory", "--quiet",
            "--out", str(tmp_path)]  # fmt: skip
    _run(*argv)
    meta = _read(tmp_path / "realdata.json", argv)
    p = meta["parameters"]
    assert (p["dataset"], p["task"], p["lam"], p["alphas"], p["d"]) == (
        "digits", "even-odd", 0.2, [0.5], 64
    )  # fmt: skip
    assert (p["tol"], p["max_iter"]) == (1e-8, 3000)
    assert meta["mixture"]["n_clusters"] == 2 and len(meta["mixture"]["fingerprint"]) == 20


def test_figure_json_records_the_command_and_date(tmp_path):
    argv = ["figure", "sparse-setup", "--alphas", "0.2,1", "--ratios", "0.1", "--quiet",
            "--out", str(tmp_path)]  # fmt: skip
    _run(*argv)
    meta = _read(tmp_path / "sparse-setup.json", argv)
    assert meta["figure"] == "sparse-setup"


def test_sweep_records_its_grid_file(tmp_path):
    grid = tmp_path / "g.toml"
    grid.write_text('[fixed]\nloss = "logistic"\nlam = 1.0\n\n[grid]\nalpha = [1.0, 2.0]\n')
    argv = ["sweep", "--grid", str(grid), "--out", str(tmp_path / "res.csv"), "--backend",
            "serial", "--quiet"]  # fmt: skip
    _run(*argv)
    meta = _read(tmp_path / "res.json", argv)
    p = meta["parameters"]
    assert p["grid"] == grid.read_text() and p["points"] == 2
    assert p["grid_sha256"] == hashlib.sha256(grid.read_bytes()).hexdigest()


def test_the_command_line_defaults_to_sys_argv(monkeypatch):
    set_command_line(None)
    monkeypatch.setattr("sys.argv", ["script.py", "--x", "a b"])
    record = run_record({"lam": np.float64(0.5), "alphas": np.array([1.0, np.nan])})
    assert record["argv"] == command_line() == ["script.py", "--x", "a b"]
    assert record["command"] == "script.py --x 'a b'"  # as a shell reads it back
    assert record["parameters"] == {"lam": 0.5, "alphas": [1.0, None]}
    assert record["mixture"] is None


def test_a_command_run_in_process_is_forgotten_when_it_ends(monkeypatch):
    monkeypatch.setattr("sys.argv", ["python-session"])
    for argv in (["curve", "--help"], ["curve", "--alphas", "x"]):  # success and failure
        run(*argv)
        assert command_line() == ["python-session"]


def test_write_provenance_keeps_its_own_keys(tmp_path):
    set_command_line(["gaussmix", "x"])
    table = tmp_path / "t.csv"
    table.write_text("a\n1\n")
    path = write_provenance(table, {"k": 1}, columns=["a"], date="forged", note="kept")
    meta = json.loads(path.read_text())
    assert path.name == "t.json" and meta["note"] == "kept" and meta["date"] != "forged"
    assert meta["argv"] == ["gaussmix", "x"] and meta["parameters"] == {"k": 1}


@pytest.fixture(autouse=True)
def _forget_command_line():
    yield
    set_command_line(None)
