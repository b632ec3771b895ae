"""One rule per fact: every door of the library refuses the same inputs with the same message.

The bounds of ``lam``, ``alpha``, the simulation dimension ``d``, ``seeds``, ``n_jobs`` and
the number of clusters K are stated once (:data:`gaussmix.core.validation.PARAMETERS`).
Each case below is tried through the theory (``solve``, ``learning_curve``,
``lambda_sweep``), the simulation (``simulate``, ``separability_fraction``), the sweeps
(``PointSpec``, ``Simulation``, ``sweep``) and the command line (``point``, ``simulate``,
``curve``): the message is ``'<keyword> must be <rule>, got <value>'``, on the command line
``gaussmix: error: `` + the same message with the flag in place of the keyword.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from _cli_helpers import assert_one_line_error, run

import gaussmix as gm
from gaussmix.core.validation import PARAMETERS, check_param
from gaussmix.simulate import separability_fraction
from gaussmix.simulate.simulation import simulate
from gaussmix.sweep import PointSpec, Simulation, SpecGrid, sweep

BINARY = gm.Mixture.isotropic(0.5, n_clusters=2, labels="binary")
THREE = gm.Mixture.isotropic(0.5, n_clusters=3)

BAD_LAM = [-1.0, float("nan"), float("inf"), 1e9]
BAD_ALPHA = [0.0, -1.0, float("nan"), 1e9]


def message(fact: str, name: str, value: float) -> str:
    """The one message of a bad number: the rule of ``fact`` read from the table."""
    return f"{name} must be {PARAMETERS[fact]}, got {value:g}"


def flag(keyword: str) -> str:
    """One name per concept: the flag is the keyword with dashes."""
    return "--" + keyword.replace("_", "-")


def refuses(call, expected: str, err: type[Exception] = ValueError) -> None:
    """``call()`` raises ``err`` whose message is exactly ``expected`` (or ends with it,
    after a sweep's ``point i of n (...): `` prefix)."""
    with pytest.raises(err) as info:
        call()
    text = str(info.value)
    assert text == expected or text.endswith(": " + expected), (text, expected)


def cli_refuses(tmp_path: Path, args: tuple[str, ...], keyword: str, expected: str) -> None:
    """``gaussmix *args`` exits 2 with the one line ``gaussmix: error: <expected>``, the
    keyword as its flag, and writes nothing."""
    out = tmp_path / "out"
    code, stdout, stderr = run(
        *args, *(("--out", str(out)) if args[0] in ("curve", "lambda-curve") else ())
    )
    line = "gaussmix: error: " + expected.replace(keyword, flag(keyword), 1)
    assert_one_line_error(code, stdout, stderr)
    assert stderr.rstrip("\n").endswith(line.removeprefix("gaussmix: error: ")), (stderr, line)
    assert not out.exists()


def test_the_rules_are_the_documented_ones():
    """The table states the theory's ranges; the messages read them."""
    assert str(PARAMETERS["lam"]) == "a real number in [0, 1e+08]"
    assert str(PARAMETERS["alpha"]) == "a real number in [1e-08, 1e+08]"
    assert str(PARAMETERS["d"]) == "an integer >= 2"
    assert str(PARAMETERS["seeds"]) == "an integer >= 1"
    assert str(PARAMETERS["n_clusters"]) == "an integer >= 2"
    assert message("lam", "lam", -1.0) == "lam must be a real number in [0, 1e+08], got -1"
    for fact, good in [("lam", 0.0), ("lam", 1e8), ("alpha", 1e-8), ("alpha", 1e8)]:
        assert check_param(fact, good) == good  # the ends are included
    assert check_param("n_jobs", -2) == -2  # joblib: all cores but one
    assert check_param("d", 2) == 2 and check_param("seeds", 1) == 1


@pytest.mark.parametrize("lam", BAD_LAM)
def test_every_door_refuses_the_same_lam(lam: float, tmp_path: Path):
    want = message("lam", "lam", lam)
    refuses(lambda: gm.solve(BINARY, "logistic", lam=lam, alpha=1.0), want)
    refuses(lambda: gm.learning_curve(BINARY, "logistic", [1.0], lam=lam), want)
    refuses(
        lambda: gm.lambda_sweep(BINARY, "logistic", [lam], alpha=1.0), message("lam", "lams", lam)
    )
    refuses(lambda: simulate(BINARY, loss="logistic", lam=lam, alpha=2.0, d=10, seeds=1), want)
    spec = PointSpec(BINARY, "logistic", lam=lam, alpha=1.0)
    refuses(spec.problem, want)
    refuses(lambda: SpecGrid((spec,)), want)
    cli_refuses(tmp_path, ("point", "--loss", "logistic", "--lam", str(lam)), "lam", want)
    cli = ("simulate", "--loss", "logistic", "--lam", str(lam), "--d", "10", "--seeds", "1")
    cli_refuses(tmp_path, cli, "lam", want)
    cli = ("curve", "--loss", "logistic", "--lam", str(lam), "--alphas", "1:2:2")
    cli_refuses(tmp_path, cli, "lam", want)
    cli = ("lambda-curve", "--loss", "logistic", "--lams", f"{lam}:{lam}:1", "--alpha", "1")
    cli_refuses(tmp_path, cli, "lams", message("lam", "lams", lam))


@pytest.mark.parametrize("alpha", BAD_ALPHA)
def test_every_door_refuses_the_same_alpha(alpha: float, tmp_path: Path):
    want = message("alpha", "alpha", alpha)
    refuses(lambda: gm.solve(BINARY, "logistic", lam=0.1, alpha=alpha), want)
    grid = message("alpha", "alphas", alpha)
    refuses(lambda: gm.learning_curve(BINARY, "logistic", [alpha], lam=0.1), grid)
    refuses(lambda: gm.lambda_sweep(BINARY, "logistic", [0.1], alpha=alpha), want)
    refuses(lambda: simulate(BINARY, loss="logistic", lam=0.1, alpha=alpha, d=10, seeds=1), want)
    spec = PointSpec(BINARY, "logistic", lam=0.1, alpha=alpha)
    refuses(spec.problem, want)
    refuses(lambda: SpecGrid((spec,)), want)
    cli_refuses(tmp_path, ("point", "--loss", "logistic", "--alpha", str(alpha)), "alpha", want)
    cli = ("simulate", "--loss", "logistic", "--alpha", str(alpha), "--d", "10", "--seeds", "1")
    cli_refuses(tmp_path, cli, "alpha", want)
    cli = ("curve", "--loss", "logistic", "--alphas", f"{alpha}:{alpha}:1")
    cli_refuses(tmp_path, cli, "alphas", grid)


def test_every_door_refuses_the_same_simulation_sizes(tmp_path: Path):
    sim = ("simulate", "--loss", "logistic", "--lam", "0.1")
    for d in (0, 1):
        want = message("d", "d", d)
        refuses(
            lambda d=d: simulate(BINARY, loss="logistic", lam=0.1, alpha=2.0, d=d, seeds=1), want
        )
        refuses(lambda d=d: Simulation(d=d, seeds=1), want)
        refuses(lambda d=d: separability_fraction(BINARY, [2.0], d=d, seeds=1), want)
        cli_refuses(tmp_path, (*sim, "--d", str(d), "--seeds", "1"), "d", want)
    want = message("seeds", "seeds", 0)
    refuses(lambda: simulate(BINARY, loss="logistic", lam=0.1, alpha=2.0, d=10, seeds=0), want)
    refuses(lambda: Simulation(d=10, seeds=0), want)
    cli_refuses(tmp_path, (*sim, "--d", "10", "--seeds", "0"), "seeds", want)
    # d >= K where the means are realised exactly: one check (simulate.check_dimension, which
    # asks the covariance structure: IsotropicLaw.check_dim)
    want = "d must be >= the number of clusters K=3 to realise the Gram matrix of the means "
    want += "exactly, got 2"
    refuses(lambda: simulate(THREE, loss="square", lam=0.1, alpha=2.0, d=2, seeds=1), want)
    refuses(lambda: separability_fraction(THREE, [2.0], d=2, seeds=1), want)
    spec = PointSpec(THREE, "square", lam=0.1, alpha=2.0, simulate=Simulation(d=2, seeds=1))
    refuses(lambda: SpecGrid((spec,)), want)
    cli_refuses(tmp_path, ("simulate", "--d", "2", "--seeds", "1"), "d", want)


def test_every_door_refuses_the_same_n_jobs(tmp_path: Path):
    want = message("n_jobs", "n_jobs", 0)
    assert want == "n_jobs must be a non-zero integer (joblib: -1 = all cores), got 0"
    call = lambda: simulate(BINARY, loss="logistic", lam=0.1, alpha=2.0, d=10, seeds=1, n_jobs=0)  # noqa: E731
    refuses(call, want)
    refuses(lambda: separability_fraction(BINARY, [2.0], d=10, seeds=1, n_jobs=0), want)
    spec = PointSpec(BINARY, "logistic", lam=0.1, alpha=1.0)
    refuses(lambda: sweep([spec], n_jobs=0, progress=False), want)
    cli = ("simulate", "--loss", "logistic", "--lam", "0.1", "--d", "10", "--seeds", "1")
    cli_refuses(tmp_path, (*cli, "--n-jobs", "0"), "n_jobs", want)


def test_a_float_number_of_clusters_is_refused(tmp_path: Path):
    want = "n_clusters must be an integer >= 2, got 2.5 (float)"
    refuses(lambda: gm.Mixture.isotropic(0.5, n_clusters=2.5), want, TypeError)
    refuses(lambda: gm.Mixture.block([0.5, 0.5], [1.0, 2.0], n_clusters=2.5), want, TypeError)
    want = "n_clusters must be an integer >= 2, got 1"
    refuses(lambda: gm.Mixture.isotropic(0.5, n_clusters=1), want)
    cli_refuses(tmp_path, ("point", "--n-clusters", "1"), "n_clusters", want)
    # a float is refused by the rule of K, as the library refuses it, on every door
    want = "n_clusters must be an integer >= 2, got 2.5 (float)"
    for args in [("point", "--n-clusters", "2.5"), ("simulate", "-K", "2.5")]:
        cli_refuses(tmp_path, args, "n_clusters", want)
    cli_refuses(tmp_path, ("figure", "fig3-right", "--n-clusters", "2.5"), "n_clusters", want)
    grid = tmp_path / "grid.toml"
    grid.write_text("[fixed]\nn_clusters = 2.5\n[grid]\nalpha = [1.0]\n")
    code, out, err = run("sweep", "--grid", str(grid), "--out", str(tmp_path / "s.csv"))
    assert_one_line_error(
        code, out, err, "[fixed] 'n_clusters' must be an integer >= 2, got 2.5 (float)"
    )
