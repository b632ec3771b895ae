"""Tests of the command-line interface (``gaussmix point | curve | lambda-curve``).

Most tests run :func:`gaussmix.cli.commands.main` in-process (it is the console script's entry
point, including the one-line error handling); two tests run the installed console script
end to end.
"""

from __future__ import annotations

import inspect
import json
import math
import shutil
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Annotated

import numpy as np
import pandas as pd
import pytest
import typer
from _cli_helpers import assert_one_line_error, run, run_json
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gaussmix as gm
import gaussmix.cli.commands as cli
from gaussmix.cli.commands import PointOptions, build_point, mixture_from_options, point_options
from gaussmix.frontend.options import POINT_FLAGS, SOLVER_OPTIONS

JSON_KEYS = (
    "test_error",
    "train_error",
    "train_loss",
    "test_loss",
    "converged",
    "n_iter",
    "Q",
    "M",
    "V",
    "b",
    "integration_error",
    "params",
)


def point_json(*args: str) -> dict:
    return run_json("point", *args)


# --------------------------------------------------------------------------- point --json
def _shape(x) -> tuple[int, ...]:
    return np.asarray(x, dtype=float).shape


CASES = {
    "binary-logistic": (["--loss", "logistic"], 2, 1),
    "binary-hinge": (["--loss", "hinge"], 2, 1),
    "square-hetero": (["--loss", "square", "--delta", "0.3,0.6", "--rho", "0.3,0.7"], 2, 2),
    "K3-cross-entropy": ([], 3, 3),
    "block-logistic": (
        ["--model", "block", "--fractions", "0.5,0.5", "--deltas", "0.3,1", "--loss", "logistic"],
        2,
        1,
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_point_json_keys_and_types(case: str) -> None:
    args, K, L = CASES[case]
    d = point_json(*args)
    for key in JSON_KEYS:
        assert key in d, key
    for key in ("test_error", "train_error", "train_loss", "test_loss", "integration_error"):
        assert isinstance(d[key], float) and math.isfinite(d[key]), key
    assert 0.0 <= d["test_error"] <= 1.0 and 0.0 <= d["train_error"] <= 1.0
    assert d["converged"] is True
    assert isinstance(d["n_iter"], int) and d["n_iter"] >= 1
    assert _shape(d["Q"]) == (K, L, L)
    assert _shape(d["V"]) == (K, L, L)
    assert _shape(d["M"]) == (K, L)
    assert _shape(d["b"]) == (L,)
    p = d["params"]
    assert p["n_clusters"] == K
    assert p["labels"] == ("binary" if L == 1 else "onehot")
    assert len(p["rho"]) == K


def _direct(case: str) -> gm.FixedPointResult:
    if case == "binary-logistic":
        mix = gm.Mixture.isotropic(0.5, "simplex", n_clusters=2, labels="binary")
        return gm.solve(mix, "logistic", lam=1.0, alpha=2.0, tol=1e-8)
    if case == "binary-hinge":
        mix = gm.Mixture.isotropic(0.5, "simplex", n_clusters=2, labels="binary")
        return gm.solve(mix, "hinge", lam=1.0, alpha=2.0, tol=1e-8)
    if case == "square-hetero":
        mix = gm.Mixture.isotropic([0.3, 0.6], "simplex", rho=[0.3, 0.7], labels="onehot")
        return gm.solve(mix, "square", lam=1.0, alpha=2.0, tol=1e-8)
    if case == "K3-cross-entropy":
        mix = gm.Mixture.isotropic(0.5, "simplex", n_clusters=3)
        return gm.solve(mix, "cross-entropy", lam=1.0, alpha=2.0, tol=1e-8)
    mix = gm.Mixture.block([0.5, 0.5], [0.3, 1.0], means="antipodal", labels="binary")
    return gm.solve(mix, "logistic", lam=1.0, alpha=2.0, tol=1e-8)


@pytest.mark.parametrize("case", list(CASES))
def test_point_json_equals_direct_solve(case: str) -> None:
    d = point_json(*CASES[case][0])
    ref = _direct(case).to_dict()
    for key in ("test_error", "train_error", "train_loss", "test_loss", "integration_error"):
        assert d[key] == pytest.approx(ref[key], rel=1e-12, abs=1e-15), key
    for key in ("Q", "M", "V", "b"):
        np.testing.assert_allclose(d[key], ref[key], rtol=1e-12, atol=1e-15)
    assert d["n_iter"] == ref["n_iter"]


def test_point_defaults_and_params() -> None:
    p = point_json()["params"]
    assert p["n_clusters"] == 3
    assert p["model"] == "isotropic"
    assert p["loss"] == "cross-entropy"
    assert p["labels"] == "onehot"
    assert p["means"] == "simplex"
    assert p["delta"] == 0.5
    assert p["lam"] == 1.0 and p["alpha"] == 2.0
    assert p["penalty"] == "l2"
    assert p["tol"] == 1e-8
    assert p["quad_order"] is None
    assert p["rho"] == pytest.approx([1 / 3] * 3)
    assert p["version"] == gm.__version__


def test_point_quad_order_and_options_reach_the_solver() -> None:
    d = point_json("--quad-order", "24", "--lam", "0.5", "--alpha", "1.5", "--tol", "1e-9")
    mix = gm.Mixture.isotropic(0.5, "simplex", n_clusters=3)
    ref = gm.solve(
        mix, "cross-entropy", lam=0.5, alpha=1.5, tol=1e-9, quadrature=gm.GaussHermite(24, 2)
    )
    assert d["test_error"] == pytest.approx(ref.test_error, rel=1e-12)
    assert d["params"]["quad_order"] == 24
    assert "n=" in d["params"]["quadrature"]


def test_binary_labels_imply_two_clusters() -> None:
    d = point_json("--labels", "binary", "--loss", "square")
    assert d["params"]["n_clusters"] == 2
    assert _shape(d["M"]) == (2, 1)


def test_point_table_without_json() -> None:
    code, out, err = run("point", "--loss", "logistic")
    assert code == 0, err
    assert "test_error" in out and "train_error" in out and "K=2" in out
    with pytest.raises(json.JSONDecodeError):
        json.loads(out)


def test_help_works() -> None:
    code, out, _ = run("--help")
    assert code == 0
    for command in ("point", "curve", "lambda-curve"):
        assert command in out
    code, out, _ = run("point", "--help")
    assert code == 0
    for option in ("--n-clusters", "--rho", "--delta", "--fractions", "--quad-order", "--json"):
        assert option in out
    code, out, _ = run("curve", "--help")
    assert code == 0 and "--alphas" in out and "--out" in out and "--lam" in out


def test_warnings_are_single_lines_after_success(monkeypatch: pytest.MonkeyPatch) -> None:
    real = cli.solve

    def noisy(*args, **kwargs):
        warnings.warn(
            "quadrature\nis coarse (quadrature=GaussHermite(n, dim))",
            gm.IntegrationWarning,
            stacklevel=2,
        )
        return real(*args, **kwargs)

    monkeypatch.setattr(cli, "solve", noisy)
    code, out, err = run("point", "--json", "--loss", "logistic")
    assert code == 0
    json.loads(out)
    want = (
        "gaussmix: warning: IntegrationWarning: quadrature is coarse "
        "(quadrature=GaussHermite(n, dim)) (on the command line: "
    )
    assert err.splitlines() == [want + "--quad-order N)"]


def test_many_warnings_are_summarised(monkeypatch: pytest.MonkeyPatch) -> None:
    real = cli.solve

    def noisy(*args, **kwargs):
        for i in range(5):
            warnings.warn(
                f"error {i} is large; pass quadrature=GaussHermite(n, dim)",
                gm.IntegrationWarning,
                stacklevel=2,
            )
        return real(*args, **kwargs)

    monkeypatch.setattr(cli, "solve", noisy)
    code, out, err = run("point", "--json", "--loss", "hinge")
    assert code == 0
    lines = err.splitlines()
    assert len(lines) == cli.MAX_WARNINGS + 1
    assert "--quad-order N" in lines[0]
    assert lines[-1] == "gaussmix: warning: IntegrationWarning: 2 more not shown"


# --------------------------------------------------------------------------- curves
def test_curve_writes_csv_and_png(tmp_path: Path) -> None:
    out_dir = tmp_path / "new" / "dir"
    code, out, err = run("curve", "--alphas", "0.5:2:3", "--out", str(out_dir), "--quiet")
    assert code == 0, err
    csv, png = out_dir / "curve.csv", out_dir / "curve.png"
    assert str(csv) in out and str(png) in out
    df = pd.read_csv(csv)
    for col in ("alpha", "lam", "test_error", "train_error", "train_loss", "converged"):
        assert col in df.columns
    assert len(df) == 3
    np.testing.assert_allclose(df["alpha"], [0.5, 1.25, 2.0])
    assert df["converged"].all()
    assert (df["lam"] == 1.0).all()
    assert df["test_error"].between(0, 1).all()
    data = png.read_bytes()
    assert len(data) > 1000 and data[:8] == b"\x89PNG\r\n\x1a\n"
    # the curve agrees with the point command at its last alpha
    d = point_json("--alpha", "2")
    assert df["test_error"].iloc[-1] == pytest.approx(d["test_error"], abs=1e-7)


def test_lambda_curve_writes_csv_and_png_with_progress(tmp_path: Path) -> None:
    args = ("lambda-curve", "--lams", "log:0.1:1:3", "--loss", "logistic", "--out")
    code, out, err = run(*args, str(tmp_path), tty=True)
    assert code == 0, err
    assert "lambda:" in err and "/3" in err  # the progress bar goes to a terminal's stderr...
    assert "it/s" not in out  # ...never to stdout
    code, out, err = run(*args, str(tmp_path / "piped"))
    assert code == 0 and err == "" and "it/s" not in out  # and is not drawn off a terminal
    df = pd.read_csv(tmp_path / "lambda_curve.csv")
    np.testing.assert_allclose(df["lam"], [0.1, np.sqrt(0.1), 1.0])
    assert (df["alpha"] == 2.0).all() and df["converged"].all()
    assert (tmp_path / "lambda_curve.png").stat().st_size > 1000


@pytest.mark.parametrize(
    "args, names",
    [
        (["curve", "--alphas", "1:2"], ["--alphas"]),
        (["curve", "--alphas", "-1:2:3"], ["--alphas"]),
        (["curve", "--alphas", "a:b:c"], ["--alphas"]),
        (["curve", "--alphas", "log:0:1:3"], ["--alphas"]),
        (["curve", "--loss", "square", "--lam", "0", "--alphas", "0.5:2:3"], ["--alphas", "lam"]),
        (["lambda-curve", "--lams", "0:1:3"], ["--lams"]),
        (["lambda-curve", "--lams", "-1:1:3"], ["--lams"]),
        (["lambda-curve", "--lams", "0:1:20000"], ["--lams: at most 10000 points, got 20000"]),
        (["curve", "--alphas", "inf:2:3"], ["--alphas must be a real number in", "got inf"]),
        (["curve", "--delta", "-1", "--alphas", "0.5:2:3"], ["--delta"]),
    ],
)
def test_curve_bad_input(args: list[str], names: list[str], tmp_path: Path) -> None:
    code, out, err = run(*args, "--out", str(tmp_path / "out"), "--quiet")
    assert_one_line_error(code, out, err, *names)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "spec, requirement",
    [
        ("1:2", "must look like 'start:stop:num' (or 'log:start:stop:num'), got '1:2'"),
        ("log:1:2", "must look like 'start:stop:num' (or 'log:start:stop:num'), got 'log:1:2'"),
        ("a:b:c", ": cannot parse 'a:b:c' as start:stop:num"),
        ("1:2:2.5", ": cannot parse '1:2:2.5' as start:stop:num"),
        ("1:2:0", ": the number of points must be >= 1, got 0"),
        ("log:0:1:3", ": a log range needs positive ends, got 'log:0:1:3'"),
    ],
)
def test_a_malformed_range_names_its_argument(spec: str, requirement: str, tmp_path: Path) -> None:
    """The range parser refuses with an ArgumentError naming the argument (not a flag in
    its text), which the command line says with the flag of that keyword."""
    from gaussmix.core.exceptions import ArgumentError
    from gaussmix.frontend.grids import parse_grid

    with pytest.raises(ArgumentError) as info:
        gm.experiments.parse_range(spec, name="lams")
    assert (info.value.argument, info.value.requirement) == ("lams", requirement)
    with pytest.raises(ArgumentError) as info:
        parse_grid("alphas", spec, fact="alpha")
    assert info.value.argument == "alphas"
    code, out, err = run("curve", "--alphas", spec, "--out", str(tmp_path / "out"), "--quiet")
    sep = "" if requirement.startswith(":") else " "
    assert_one_line_error(code, out, err, f"--alphas{sep}{requirement}")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("spec", ["1:nan:3", "inf:2:3", "-inf:1:1"])
def test_a_range_with_an_end_that_is_not_finite(spec: str) -> None:
    """Alone, the parser says the ends must be finite; given the parameter, its own rule
    refuses the end, with the message a single value gets (as every door does)."""
    from gaussmix.core.exceptions import ArgumentError

    with pytest.raises(ArgumentError) as info:
        gm.experiments.parse_range(spec, name="lams")
    assert info.value.requirement == f": the ends must be finite numbers, got {spec!r}"
    end = next(e for e in spec.split(":")[:2] if not np.isfinite(float(e)))
    with pytest.raises(ArgumentError) as info:
        gm.experiments.parse_range(spec, name="alphas", fact="alpha")
    with pytest.raises(ArgumentError) as single:
        gm.experiments.parse_range(f"{end}:{end}:1", name="alphas", fact="alpha")
    assert info.value.argument == "alphas"
    assert info.value.requirement == single.value.requirement
    assert info.value.requirement.endswith(f"got {float(end)}")


def _fake_curve(converged: list[bool]):
    def fake(mixture, loss, alphas, *, lam, **kwargs):
        n = len(alphas)
        ok = np.array(converged[:n])
        err = np.where(ok, 0.2, np.nan)
        return pd.DataFrame(
            {"alpha": alphas, "lam": lam, "test_error": err, "train_error": err, "converged": ok}
        )

    return fake


def test_curve_reports_points_without_fixed_point(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cli, "learning_curve", _fake_curve([True, False, True]))
    code, out, err = run("curve", "--alphas", "1:2:3", "--out", str(tmp_path), "-q")
    assert code == 3, err  # partial results: written, marked, exit 3
    assert "1 of 3 points did not converge" in err.splitlines()[-1]
    assert pd.read_csv(tmp_path / "curve.csv")["test_error"].isna().sum() == 1

    monkeypatch.setattr(cli, "learning_curve", _fake_curve([False, False, False]))
    code, out, err = run("curve", "--alphas", "1:2:3", "--out", str(tmp_path / "x"), "-q")
    assert_one_line_error(code, out, err, "--alphas", status=3)


def test_curve_unwritable_out(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    code, out, err = run("curve", "--alphas", "1:2:2", "--out", str(blocker / "sub"), "-q")
    assert_one_line_error(code, out, err, "--out", "is a file, not a directory", status=2)


# --------------------------------------------------------------------------- bad input
BAD_POINT = [
    (["--delta", "-0.5"], "--delta"),
    (["--delta", "0.3,-0.6"], "--delta"),
    (["--rho", "0.2,0.3,0.4"], "--rho"),
    (["--rho", "0.5,0.5", "--n-clusters", "3"], "--rho"),
    (["--rho", "0.5,0.5", "--delta", "1,1,1"], "--delta implies 3 clusters, but rho implies 2"),
    (["--delta", "0.5,0.5", "--n-clusters", "3"], "--delta"),
    (["--rho", "a,b"], "--rho"),
    (["--rho", "0.5,,0.5"], "--rho"),
    (["--alpha", "0"], "--alpha"),
    (["--alpha", "-1"], "--alpha"),
    (["--lam", "-1"], "--lam"),
    (["--lam", "nan"], "--lam"),
    (["--loss", "logistic", "--lam", "0"], "--lam"),
    (["--loss", "logistic", "--n-clusters", "3"], "--loss"),
    (["--loss", "hinge", "--n-clusters", "3"], "--loss"),
    (["--loss", "nope"], "--loss"),
    (["--means", "nope"], "--means"),
    (["--model", "nope"], "--model"),
    (["--labels", "nope"], "--labels"),
    (["--labels", "binary", "--loss", "square", "--n-clusters", "3"], "--labels"),
    (["--n-clusters", "1"], "--n-clusters"),
    (["--fractions", "0.5,0.5", "--deltas", "1,2"], "--fractions"),
    (["--deltas", "1,2"], "--deltas"),
    (["--model", "block"], "--fractions"),
    (["--model", "block", "--fractions", "0.5,0.5", "--deltas", "1,2", "--delta", "1"], "--delta"),
    (["--model", "block", "--fractions", "0.5,0.6", "--deltas", "1,2"], "--fractions"),
    (["--model", "block", "--fractions", "0.5,0.5", "--deltas", "1,2,3"], "--deltas"),
    (["--tol", "0"], "--tol"),
    (["--quad-order", "0"], "--quad-order"),
    (["--unknown-option", "3"], "--unknown-option"),
    (["--alpha", "abc"], "--alpha"),
    (["--n-clusters", "x"], "--n-clusters"),
    (["--n-clusters", "2.5"], "--n-clusters"),
    (["--alpha"], "--alpha"),
]


@pytest.mark.parametrize("args, name", BAD_POINT, ids=[" ".join(a) for a, _ in BAD_POINT])
def test_point_bad_input_is_one_line(args: list[str], name: str) -> None:
    code, out, err = run("point", "--json", *args)
    assert_one_line_error(code, out, err, name)


@pytest.mark.parametrize("args", [[], ["nope"], ["point", "extra-argument"]])
def test_bad_command_line(args: list[str]) -> None:
    assert_one_line_error(*run(*args))


@pytest.mark.parametrize(
    "exc, status",
    [
        (gm.ConvergenceError("fixed point not found: did not converge in 3000 iterations"), 3),
        (gm.SpuriousFixedPointError("fixed point not found: spurious fixed point"), 3),
        (FloatingPointError("overflow"), 3),
        (RuntimeError("something\nunexpected"), 1),
    ],
)
def test_solver_failures_are_one_line(
    exc: Exception, status: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fail(*args, **kwargs):
        raise exc

    monkeypatch.setattr(cli, "solve", fail)
    code, out, err = run("point", "--json")
    assert_one_line_error(code, out, err, status=status)
    assert str(exc).split("\n")[0] in err


def test_no_fixed_point_from_the_library_exits_3() -> None:
    # too few iterations: the library reports non-convergence, the CLI exits 3
    code, out, err = run("point", "--json", "--loss", "hinge", "--max-iter", "2")
    assert_one_line_error(code, out, err, status=3)
    assert "did not converge" in err


def test_absurd_lambda_is_bad_input() -> None:
    code, out, err = run("point", "--json", "--loss", "hinge", "--lam", "1e300")
    assert_one_line_error(code, out, err, "--lam", status=2)


# --------------------------------------------------------------------------- fuzz
_garbage = st.text(alphabet="abcxyz,:.+-eE0123456789 ", max_size=8)
_negative = st.floats(max_value=-1e-12, allow_nan=False, allow_infinity=False).map(repr)
_moderate = st.floats(min_value=0.05, max_value=20.0).map(lambda x: f"{x:.3g}")
_special = st.sampled_from(["0", "-0", "nan", "inf", "-inf", "1e300", "-1e300", "1e999"])


def _number() -> st.SearchStrategy[str]:
    return st.one_of(_moderate, _negative, _special, _garbage)


def _list(n: st.SearchStrategy[int]) -> st.SearchStrategy[str]:
    return n.flatmap(lambda k: st.lists(_number(), min_size=k, max_size=k)).map(",".join)


# Absurdly small positive lambdas or huge variances send the cross-entropy solver into
# thousands of slow iterations (minutes); the fuzz test keeps those out so that it stays
# fast, and draws huge numbers where the library fails fast.  Each example starts from a
# valid point and replaces up to three options by arbitrary (often invalid) values.
_rho_ok = {2: st.sampled_from(["0.3,0.7", "0.5,0.5", "0.9,0.1"]), 3: st.just("0.2,0.3,0.5")}
FUZZ_VALID = {
    "--lam": st.one_of(_moderate, st.just("1e8")),
    "--alpha": st.one_of(_moderate, st.sampled_from(["1e-300", "1e8"])),
    "--delta": st.floats(min_value=0.05, max_value=5.0).map(lambda x: f"{x:.3g}"),
    "--tol": st.sampled_from(["1e-8", "1e-6"]),
}
FUZZ_ANY = {
    "--lam": _number(),
    "--alpha": _number(),
    "--delta": st.one_of(_number(), _list(st.integers(2, 3))),
    "--tol": st.sampled_from(["0", "-1", "x", "nan"]),
    "--rho": st.one_of(_list(st.integers(1, 3)), _rho_ok[2], _rho_ok[3]),
    "--n-clusters": st.one_of(st.integers(-2, 3).map(str), _garbage, st.just("1e300")),
    "--loss": st.sampled_from(["square", "logistic", "cross-entropy", "hinge", "Logistic", ""]),
    "--labels": st.sampled_from(["onehot", "binary", "auto", "ternary"]),
    "--means": st.sampled_from(["simplex", "gaussian", "antipodal", "auto", "cube"]),
    "--model": st.sampled_from(["isotropic", "block", "diagonal"]),
    "--fractions": _list(st.integers(1, 2)),
    "--deltas": _list(st.integers(1, 2)),
    "--penalty": st.sampled_from(["l2", "l1"]),
    "--unknown": _garbage,
}


@st.composite
def _argv(draw) -> list[str]:
    loss = draw(st.sampled_from(["square", "logistic", "cross-entropy", "hinge"]))
    k = 2 if loss in ("logistic", "hinge") else draw(st.sampled_from([2, 3]))
    opts = {"--loss": loss, "--n-clusters": str(k)}
    if draw(st.integers(0, 3)) == 0:
        opts.update({"--model": "block", "--fractions": "0.4,0.6", "--deltas": "0.3,1"})
    for name in draw(st.lists(st.sampled_from(sorted(FUZZ_VALID)), max_size=3, unique=True)):
        opts[name] = draw(FUZZ_VALID[name])
    if draw(st.booleans()):
        opts["--rho"] = draw(_rho_ok[k])
    for name in draw(st.lists(st.sampled_from(sorted(FUZZ_ANY)), max_size=3, unique=True)):
        opts[name] = draw(FUZZ_ANY[name])
    argv = ["point", "--json"]
    for name, value in opts.items():
        argv += [name, value]
    return argv


@settings(
    max_examples=30,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(_argv())
def test_fuzz_point_json_or_one_line_error(argv: list[str]) -> None:
    code, out, err = run(*argv)
    assert "Traceback" not in out + err
    if code == 0:
        d = json.loads(out)
        assert d["converged"] is True
        for key in ("test_error", "train_error"):
            assert isinstance(d[key], float) and 0.0 <= d[key] <= 1.0, (key, d[key])
        assert math.isfinite(d["train_loss"])
        assert all(line.startswith("gaussmix: warning: ") for line in err.splitlines())
    else:
        assert code in (1, 2, 3)
        assert out == ""
        lines = err.splitlines()
        assert len(lines) == 1 and lines[0].startswith("gaussmix: error: "), err
        assert code != 1, f"unexpected internal error: {err}"


# --------------------------------------------------------------------------- reuse
def test_point_options_attach_to_a_new_command() -> None:
    app = typer.Typer()
    seen: dict = {}

    @app.command()
    @point_options
    def simulate(
        opts: PointOptions,
        seeds: Annotated[int, typer.Option("--seeds")] = 3,
    ) -> None:
        seen["opts"], seen["seeds"] = opts, seeds

    app(["--loss", "logistic", "--alpha", "3", "--seeds", "5"], standalone_mode=False)
    opts = seen["opts"]
    assert seen["seeds"] == 5
    assert opts == PointOptions(loss="logistic", alpha=3.0)
    setup = build_point(opts)
    assert setup.mixture.labels.is_binary and setup.alpha == 3.0 and setup.lam == 1.0
    with pytest.raises(TypeError, match="opts"):
        point_options(lambda x: None)


def test_mixture_from_options() -> None:
    block = mixture_from_options(PointOptions(model="block", fractions="0.25,0.75", deltas="1,2"))
    assert block.kind == "block" and block.n_clusters == 2
    np.testing.assert_allclose(block.gram, [[1, -1], [-1, 1]])
    np.testing.assert_allclose(block.sigma, [[1, 1], [2, 2]])
    iso = mixture_from_options(PointOptions(rho="0.2,0.3,0.5", means="gaussian"))
    assert iso.n_clusters == 3 and iso.labels.is_onehot
    np.testing.assert_allclose(iso.rho, [0.2, 0.3, 0.5])
    np.testing.assert_allclose(iso.gram, np.eye(3))
    binary = mixture_from_options(PointOptions(loss="hinge"))
    assert binary.labels.is_binary and binary.n_clusters == 2
    setup = build_point(PointOptions(quad_order=11), lam=0.3)
    assert setup.lam == 0.3 and setup.solve_kw["quadrature"] == gm.GaussHermite(11, 2)


# --------------------------------------------------------------------------- console script
def _script() -> str | None:
    here = Path(sys.executable).with_name("gaussmix")
    return str(here) if here.exists() else shutil.which("gaussmix")


@pytest.mark.skipif(_script() is None, reason="console script not installed")
def test_console_script_end_to_end() -> None:
    script = _script()
    ok = subprocess.run(
        [script, "point", "--json", "--loss", "logistic"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["test_error"] == pytest.approx(
        _direct("binary-logistic").test_error, rel=1e-12
    )
    bad = subprocess.run(
        [script, "point", "--json", "--rho", "0.2,0.2,0.2"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert_one_line_error(bad.returncode, bad.stdout, bad.stderr, "--rho")


# --------------------------------------------------------------------------- ignored options
#: command -> the point options it replaces or does not use (issue 9, item 7)
NOT_OFFERED = {
    "curve": {"--alpha": "5"},
    "compare": {"--alpha": "5"},
    "lambda-curve": {"--lam": "0.5"},
    "optimal-lambda": {"--lam": "0.5"},
    # every solver option (tests/test_solver_flags.py checks them all)
    "simulate": {"--tol": "1e-6", "--max-iter": "10", "--quad-order": "16", "--anderson": "2",
                 "--damping": "0.5", "--quad-tol": "1e-6", "--max-refine": "2",
                 "--prior-panels": "8", "--estimate-error": "", "--no-symmetry": ""},
}  # fmt: skip


def _options_of(command: str) -> set[str]:
    click_command = typer.main.get_command(cli.app).commands[command]
    return {o for p in click_command.params for o in p.opts}


@pytest.mark.parametrize(
    "command, option, value",
    [(c, o, v) for c, opts in NOT_OFFERED.items() for o, v in opts.items()],
)
def test_an_option_a_command_ignores_is_not_offered(command, option, value) -> None:
    """``gaussmix curve --alpha 5`` exited 0 and ignored --alpha: now the command does not
    have it (not in --help) and the parser refuses it in one line."""
    assert option not in _options_of(command)
    given = (option, value) if value else (option,)  # a switch takes no value
    code, out, err = run(command, *given, "--out", "/nonexistent/never-written")
    assert_one_line_error(code, out, err, "No such option", option)


def test_commands_keep_every_other_point_option() -> None:
    point = _options_of("point")
    solver = {POINT_FLAGS[name] for name in SOLVER_OPTIONS}
    for command, dropped in NOT_OFFERED.items():
        gone = set(dropped) | (solver if command == "simulate" else set())
        assert point - gone - {"--json"} <= _options_of(command), command
    assert "--alphas" in _options_of("curve") and "--lams" in _options_of("lambda-curve")
    assert "--lam" in _options_of("curve") and "--alpha" in _options_of("lambda-curve")


def test_without_options_rejects_an_unknown_name() -> None:
    with pytest.raises(TypeError, match="not point options"):
        cli.without_options("alphas")


def test_without_options_passes_the_default_to_the_command() -> None:
    seen = {}

    @cli.without_options("alpha", "tol")
    @point_options(alpha=0.7)
    def command(opts: PointOptions) -> None:
        seen["opts"] = opts

    params = inspect.signature(command).parameters
    assert "alpha" not in params and "tol" not in params and "lam" in params
    command(**{n: p.default for n, p in params.items()})
    assert seen["opts"].alpha == 0.7 and seen["opts"].tol == PointOptions().tol
