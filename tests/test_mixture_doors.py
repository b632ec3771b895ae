"""Every mixture through every door: a mixture fitted to data (``Mixture.from_data``, a
dense structure) through ``solve``, a learning curve, ``simulate``, a checkpointed sweep and
the command line (``--mixture FILE`` and a sweep TOML's ``mixture = "file.npz"``), giving
the same point the same numbers everywhere; and the command line's refusals of bad mixture
files and of ``--mixture`` combined with the options that build a mixture."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _cli_helpers import assert_one_line_error, bad_mixture_files, run, run_json
from _helpers import check_within_3se
from threadpoolctl import threadpool_limits

import gaussmix as gm
from gaussmix.cli.grid import run_grid
from gaussmix.simulate import simulate
from gaussmix.sweep import PointSpec, sweep

D = 30
LOSS, LAM, ALPHA = "cross-entropy", 0.5, 2.0
#: the point's numbers that every door reports
NUMBERS = ("test_error", "train_error", "train_loss")


@pytest.fixture(autouse=True)
def _one_blas_thread():
    """ERM at d = 30 is many tiny BLAS calls: more threads only add contention.  (The dense
    prior runs on one BLAS thread whatever the setting below ``n = 3000``, every size here,
    so the theory's bits do not depend on it:
    test_a_dense_point_is_the_same_number_whatever_the_blas_threads.)"""
    with threadpool_limits(1):
        yield


def fit_three_classes(d: int) -> gm.Mixture:
    """Three Gaussian classes in dimension d with distinct, correlated covariances, fitted
    (``Mixture.from_data`` on 300 points per class)."""
    rng = np.random.default_rng(18)
    X, y = [], []
    for c in range(3):
        A = np.eye(d) + rng.standard_normal((d, d)) / np.sqrt(d) * 0.5 * (1 + c)
        mean = 1.5 * np.eye(d)[c] + 0.1 * rng.standard_normal(d)
        X.append(rng.standard_normal((300, d)) @ A.T + mean)
        y += [f"class{c}"] * 300
    return gm.Mixture.from_data(np.vstack(X), np.array(y))


@pytest.fixture(scope="module")
def fitted() -> gm.Mixture:
    """Three Gaussian classes at d = 30, fitted."""
    return fit_three_classes(D)


@pytest.fixture(scope="module")
def solved(fitted: gm.Mixture) -> gm.FixedPointResult:
    res = gm.solve(fitted, LOSS, lam=LAM, alpha=ALPHA)
    assert res.success
    return res


def _same(row: dict | pd.Series, res: gm.FixedPointResult) -> None:
    """Bit-identical observables and overlaps (the same engine on the same inputs)."""
    for key in NUMBERS:
        assert row[key] == getattr(res, key), key
    for key in ("Q", "M", "b"):
        value = row[key]
        value = json.loads(value) if isinstance(value, str) else value
        assert np.array_equal(np.asarray(value), getattr(res, key)), key


def test_a_fitted_mixture_through_every_door(
    fitted: gm.Mixture, solved: gm.FixedPointResult, tmp_path: Path
) -> None:
    # a learning curve: its first point is solved cold, as gm.solve does; the next one
    # warm-started, to the solver's tolerance
    curve = gm.learning_curve(fitted, LOSS, alphas=[ALPHA, 3.0], lam=LAM)
    results = curve.points
    _same({**curve.iloc[0].to_dict(), **{k: getattr(results[0], k) for k in "QMb"}}, solved)
    assert curve["test_error"].iloc[0] == solved.test_error
    cold = gm.solve(fitted, LOSS, lam=LAM, alpha=3.0)
    assert abs(curve["test_error"].iloc[1] - cold.test_error) < 1e-6

    # a checkpointed sweep of library points, interrupted after one point and resumed
    specs = [PointSpec(fitted, LOSS, lam=LAM, alpha=a, coords={"alpha": a}) for a in (ALPHA, 3.0)]
    ck = tmp_path / "sweep.jsonl"
    sweep(specs, checkpoint=ck, backend="serial", progress=False)
    ck.write_bytes(ck.read_bytes().splitlines(keepends=True)[0])
    res = sweep(specs, checkpoint=ck, backend="serial", progress=False)
    assert (res.computed, res.resumed) == (1, 1)
    _same(res.df.iloc[0], solved)

    # the command line, from the mixture's file
    fitted.save(tmp_path / "fitted.npz")
    args = ("--mixture", str(tmp_path / "fitted.npz"), "--loss", LOSS)
    payload = run_json("point", *args, "--lam", str(LAM), "--alpha", str(ALPHA))
    _same(payload, solved)
    assert payload["params"]["fingerprint"] == fitted.fingerprint()
    assert payload["params"]["structure"] == "dense: K = 3, d = 30"

    # a sweep TOML naming the file relative to itself, run from elsewhere
    (tmp_path / "grids").mkdir()
    grid = tmp_path / "grids" / "grid.toml"
    grid.write_text(
        f'[fixed]\nmixture = "../fitted.npz"\nlam = {LAM}\n[grid]\nalpha = [{ALPHA}]\n'
    )
    table = run_grid(grid, out=tmp_path / "toml.csv", backend="serial", progress=False)
    _same(table.df.iloc[0], solved)
    assert json.loads(table.df["params"].iloc[0])["fingerprint"] == fitted.fingerprint()

    # the simulation of the same point, at the mixture's own d, within its error bars
    sim = simulate(fitted, loss=LOSS, lam=LAM, alpha=ALPHA, d=D, seeds=60, seed=1)
    check_within_3se(solved, sim, NUMBERS)
    few = simulate(fitted, loss=LOSS, lam=LAM, alpha=ALPHA, d=D, seeds=8, seed=2)
    cli = run_json("simulate", *args, "--lam", str(LAM), "--alpha", str(ALPHA), "--d", str(D),
                   "--seeds", "8", "--seed", "2", "--n-jobs", "1")  # fmt: skip
    for key in NUMBERS:
        assert cli[key] == few.mean[key] and cli[f"{key}_se"] == few.se[key]


def test_a_dense_point_is_the_same_number_whatever_the_blas_threads(tmp_path: Path) -> None:
    """The dense prior's linear algebra runs on one BLAS thread whatever the caller's
    setting below ``n = 3000`` (here ``n = 200``): the same dense point through
    ``gm.solve`` and ``gaussmix point`` on two BLAS threads, and through a sweep (whose
    workers run on one), to the bit.  At d = 100 the
    threaded matrix products (and, once, scipy's own threaded LAPACK, missed by the thread
    limit) moved the last bits of these numbers."""
    mix = fit_three_classes(100)
    mix.save(tmp_path / "m.npz")
    point = ("--mixture", str(tmp_path / "m.npz"), "--loss", "square", "--lam", "0.5")
    with threadpool_limits(2):
        res = gm.solve(mix, "square", lam=0.5, alpha=ALPHA)
        payload = run_json("point", *point, "--alpha", str(ALPHA))
    with threadpool_limits(1):
        one = gm.solve(mix, "square", lam=0.5, alpha=ALPHA)
    grid = tmp_path / "grid.toml"
    grid.write_text(
        f'[fixed]\nmixture = "m.npz"\nloss = "square"\nlam = 0.5\n[grid]\nalpha = [{ALPHA}]\n'
    )
    code, out, err = run("sweep", "--grid", str(grid), "--out", str(tmp_path / "s.csv"),
                         "--quiet", "--n-jobs", "1")  # fmt: skip
    assert code == 0, err
    row = pd.read_csv(tmp_path / "s.csv").iloc[0]
    assert res.success
    for other in (one, payload, row):
        _same(other if isinstance(other, dict | pd.Series) else other.to_dict(), res)
    assert row["V"] and np.array_equal(np.asarray(json.loads(row["V"])), res.V)


@pytest.mark.parametrize(
    "command",
    [
        ("point",),
        ("curve", "--out", "{out}"),
        ("lambda-curve", "--out", "{out}"),
        ("optimal-lambda",),
        ("simulate", "--d", "30"),
        ("compare", "--d", "30", "--out", "{out}"),
        ("transition",),
        ("bayes-optimal",),
    ],
)
def test_every_command_with_point_options_reads_a_mixture_file(command, tmp_path: Path) -> None:
    missing = str(tmp_path / "missing.npz")
    args = [a.format(out=tmp_path / "out") for a in command]
    code, out, err = run(*args, "--mixture", missing)
    assert_one_line_error(code, out, err, f"mixture file {missing!r}: no such file")
    assert list(tmp_path.iterdir()) == []  # nothing written


@pytest.mark.slow
def test_every_command_with_mixture_options_takes_a_mixture_file(
    fitted: gm.Mixture, tmp_path: Path
) -> None:
    path = str(tmp_path / "m.npz")
    fitted.save(path)
    point = ("--mixture", path, "--lam", str(LAM))
    code, out, err = run("curve", *point, "--alphas", "1:2:2", "--out", str(tmp_path / "c"),
                         "--quiet")  # fmt: skip
    assert code == 0, err
    df = pd.read_csv(tmp_path / "c" / "curve.csv")  # warm-started: to the solver's tolerance
    assert (
        abs(df["test_error"].iloc[-1] - gm.solve(fitted, LOSS, lam=LAM, alpha=2.0).test_error)
        < 1e-6
    )
    code, out, err = run("lambda-curve", "--mixture", path, "--lams", "0.5:1:2", "--out",
                         str(tmp_path / "l"), "--quiet")  # fmt: skip
    assert code == 0, err
    ol = run_json("optimal-lambda", "--mixture", path, "--lam-min", "0.01", "--lam-max", "10")
    assert ol["lam_star"] > 0 and ol["converged"]
    code, out, err = run("compare", *point, "--alphas", "2:2:1", "--d", str(D), "--seeds", "2",
                         "--out", str(tmp_path / "cmp"), "--quiet", "--n-jobs", "1")  # fmt: skip
    assert code == 0, err
    # the commands whose theory needs a spectral law say so in one line
    code, out, err = run("transition", "--mixture", path)
    assert_one_line_error(code, out, err, f"--mixture {path}:", "dense covariance structure")
    code, out, err = run("bayes-optimal", "--mixture", path)
    assert_one_line_error(code, out, err, f"--mixture {path}:", "isotropic covariances")


def test_a_spectral_mixture_file_gives_the_points_of_its_options(tmp_path: Path) -> None:
    """A saved isotropic or sparse mixture through --mixture: the numbers of the options
    that built it (the same arrays: the same engine, bit for bit)."""
    for options, mix in (
        (("--n-clusters", "3", "--delta", "0.5"), gm.Mixture.isotropic(0.5, n_clusters=3)),
        (
            (
                "--model",
                "sparse",
                "--delta1",
                "0.5",
                "--delta2",
                "1",
                "--sparsity",
                "0.2",
                "--loss",
                "square",
            ),  # fmt: skip
            gm.Mixture.sparse(0.2, 0.5, 1.0),
        ),
    ):
        path = tmp_path / f"{mix.kind}.npz"
        mix.save(path)
        loss = options[-1] if "--loss" in options else LOSS
        by_options = run_json("point", *options, "--lam", "0.2")
        by_file = run_json("point", "--mixture", str(path), "--loss", loss, "--lam", "0.2")
        for key in (*NUMBERS, "Q", "M", "V", "b"):
            assert by_file[key] == by_options[key], key


# ---------------------------------------------------------------------------- bad input
def test_bad_mixture_files_on_the_command_line(fitted: gm.Mixture, tmp_path: Path) -> None:
    for needle, path in bad_mixture_files(fitted, tmp_path).items():
        for command in (("point",), ("simulate", "--d", "30")):
            code, out, err = run(*command, "--mixture", str(path))
            assert_one_line_error(code, out, err, f"mixture file {str(path)!r}: ", needle)


@pytest.mark.parametrize(
    ("options", "flags"),
    [
        (("--delta", "0.3"), "--delta"),
        (("--model", "sparse", "--delta1", "1"), "--model, --delta1"),
        (
            ("-K", "3", "--labels", "onehot", "--rho", "0.2,0.3,0.5"),
            "--n-clusters, --labels, --rho",
        ),
        (("--means", "gaussian"), "--means"),
    ],
)
def test_mixture_file_excludes_the_options_that_build_a_mixture(
    fitted: gm.Mixture, tmp_path: Path, options: tuple, flags: str
) -> None:
    fitted.save(tmp_path / "m.npz")
    code, out, err = run("point", "--mixture", str(tmp_path / "m.npz"), *options)
    assert_one_line_error(code, out, err, f"--mixture cannot be combined with {flags}")


def test_unsupported_combinations_are_named_in_one_line(fitted: gm.Mixture, tmp_path: Path):
    fitted.save(tmp_path / "m.npz")
    m = ("--mixture", str(tmp_path / "m.npz"))
    code, out, err = run("point", *m, "--loss", "logistic")
    assert_one_line_error(code, out, err, "--loss 'logistic' needs binary labels")
    code, out, err = run("simulate", *m, "--d", "20")
    assert_one_line_error(code, out, err, "--d must equal the dimension 30")
    binary = gm.Mixture.from_data(
        np.random.default_rng(0).standard_normal((40, 4)), np.repeat([-1, 1], 20), labels="binary"
    )
    binary.save(tmp_path / "b.npz")
    code, out, err = run("point", "--mixture", str(tmp_path / "b.npz"), "--loss", "logistic",
                         "--penalty", "l1", "--lam", "0.1")  # fmt: skip
    assert_one_line_error(code, out, err, "--penalty 'l1' is not available on a 'dense'")


def test_sweep_toml_with_a_mixture_file(fitted: gm.Mixture, tmp_path: Path) -> None:
    fitted.save(tmp_path / "fitted.npz")
    grid = tmp_path / "grid.toml"
    grid.write_text('[fixed]\nmixture = "fitted.npz"\nlam = 0.5\n[grid]\nalpha = [1.0, 2.0]\n')
    out = tmp_path / "out.csv"
    code, stdout, err = run(
        "sweep", "--grid", str(grid), "--out", str(out), "--quiet", "--n-jobs", "1"
    )
    assert code == 0, err
    df = pd.read_csv(out)
    assert df["converged"].all() and len(df) == 2
    # the checkpoint keys read the file's content, not its name: a renamed copy resumes
    (tmp_path / "fitted.npz").rename(tmp_path / "renamed.npz")
    grid.write_text(grid.read_text().replace("fitted.npz", "renamed.npz"))
    code, stdout, err = run(
        "sweep", "--grid", str(grid), "--out", str(out), "--quiet", "--n-jobs", "1"
    )
    assert code == 0 and "0 computed, 2 from the checkpoint" in stdout, (stdout, err)
    # killed after its first point (the second line cut short): the resumed run computes
    # the other one, and the table is the same to the bit
    ck = Path(f"{out}.checkpoint.jsonl")
    lines = ck.read_bytes().splitlines(keepends=True)
    assert len(lines) == 2
    ck.write_bytes(lines[0] + lines[1][:30])
    out.unlink()
    code, stdout, err = run(
        "sweep", "--grid", str(grid), "--out", str(out), "--quiet", "--n-jobs", "1"
    )
    assert code == 0 and "1 computed, 1 from the checkpoint" in stdout, (stdout, err)
    pd.testing.assert_frame_equal(pd.read_csv(out), df, check_exact=True)
    # a [grid] list of mixture files: one column of file names, each file's own numbers
    iso = gm.Mixture.isotropic(0.5, n_clusters=3)
    iso.save(tmp_path / "iso.npz")
    grid.write_text('[fixed]\nlam = 0.5\n[grid]\nmixture = ["renamed.npz", "iso.npz"]\n')
    code, stdout, err = run("sweep", "--grid", str(grid), "--out", str(tmp_path / "two.csv"),
                            "--quiet", "--n-jobs", "1")  # fmt: skip
    assert code == 0, err
    two = pd.read_csv(tmp_path / "two.csv")
    assert two["mixture"].tolist() == ["renamed.npz", "iso.npz"]
    assert two["test_error"].tolist() == [
        df["test_error"].iloc[1],
        gm.solve(iso, LOSS, lam=0.5, alpha=2.0).test_error,
    ]
    # a missing file: one line, exit 2, nothing written
    empty = tmp_path / "empty"
    empty.mkdir()
    bad = empty / "grid.toml"
    bad.write_text('[fixed]\nmixture = "missing.npz"\n[grid]\nalpha = [1.0]\n')
    code, stdout, err = run(
        "sweep", "--grid", str(bad), "--out", str(empty / "o.csv"), "--n-jobs", "1"
    )
    missing = str(empty / "missing.npz")
    assert_one_line_error(code, stdout, err, "grid.toml: grid point 1 of 1 (alpha = 1.0): ",
                          f"mixture file {missing!r}: no such file")  # fmt: skip
    assert sorted(p.name for p in empty.iterdir()) == ["grid.toml"]
    # a file with a non-PSD covariance, also refused before any work
    for needle, path in bad_mixture_files(fitted, tmp_path).items():
        bad.write_text(f'[fixed]\nmixture = "{path}"\n[grid]\nalpha = [1.0]\n')
        code, stdout, err = run(
            "sweep", "--grid", str(bad), "--out", str(empty / "o.csv"), "--n-jobs", "1"
        )
        assert_one_line_error(code, stdout, err, needle)
        assert sorted(p.name for p in empty.iterdir()) == ["grid.toml"]
