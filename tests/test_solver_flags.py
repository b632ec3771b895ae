"""The solver's options on the command line by the names of :func:`gaussmix.solve`: every
field of :class:`~gaussmix.SolverOptions` is a flag of every command that solves fixed
points (or excluded, with its reason), validated by ``SolverOptions`` itself (exit 2 naming
the flag), reaching the solver (point, curve, sweep grids, data, figure), recorded in the
provenance and in the sweep's points without changing the keys of old checkpoints."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _cli_helpers import assert_one_line_error, run

import gaussmix as gm
from gaussmix.cli.figure import FIGURE_SOLVER_OPTIONS
from gaussmix.figures.multiclass import fig3_right
from gaussmix.frontend.options import (
    POINT_FLAGS,
    SOLVER_EXCLUDED,
    SOLVER_OPTIONS,
    PointOptions,
    build_point,
)
from gaussmix.sweep import PointSpec
from gaussmix.sweep.spec import point_key
from gaussmix.theory.solve.options import SolverOptions, option_summaries

FIXTURE = Path(__file__).parent / "fixtures" / "owndata_small.csv"
#: the commands that solve fixed points with the point options or the solver's alone
SOLVING = ("point", "curve", "lambda-curve", "optimal-lambda", "compare", "data", "realdata")
#: commands that solve no fixed point: the solver's flags are refused there
NOT_SOLVING = ("simulate", "bayes-optimal", "transition")


def _flags(names: tuple[str, ...]) -> set[str]:
    """The command-line spellings of the solver options ``names`` (both forms of a
    flag that is True or False)."""
    out = set()
    for name in names:
        flag = POINT_FLAGS[name]
        out.add(flag)
        if isinstance(PointOptions.__dataclass_fields__[name].default, bool):
            out.add("--no-" + flag[2:])
    return out


def _help_flags(command: str) -> set[str]:
    code, out, err = run(command, "--help")
    assert code == 0, err
    return set(re.findall(r"--[a-z0-9][a-z0-9-]*", out))


def test_every_solver_option_is_a_flag_or_excluded_with_its_reason():
    fields = [f.name for f in dataclasses.fields(SolverOptions)]
    for name in fields:  # a flag by its name, or excluded with a reason
        assert (name in SOLVER_OPTIONS) != (name in SOLVER_EXCLUDED), name
        if name in SOLVER_EXCLUDED:
            assert len(SOLVER_EXCLUDED[name]) > 40, name  # a reason, not a placeholder
    assert set(SOLVER_EXCLUDED) == {"quadrature", "throw"}
    assert "--quad-order" in SOLVER_EXCLUDED["quadrature"] and "quad_order" in SOLVER_OPTIONS
    assert set(SOLVER_OPTIONS) - {"quad_order"} <= set(fields)
    # the flag is the keyword with dashes, its help the first sentence of its documentation
    summaries = option_summaries()
    for name in SOLVER_OPTIONS:
        assert POINT_FLAGS[name] == "--" + name.replace("_", "-")
        if name != "quad_order":
            spec = PointOptions.__dataclass_fields__[name].metadata["cli_option"]
            assert spec["help"] == summaries[name]
            assert PointOptions.__dataclass_fields__[name].default == getattr(
                SolverOptions(), name
            )


@pytest.mark.parametrize("command", SOLVING)
def test_every_solving_command_lists_every_solver_flag_in_its_help(command):
    missing = _flags(SOLVER_OPTIONS) - _help_flags(command)
    assert not missing, (command, sorted(missing))
    # grouped under their own heading, after the command's own options
    code, out, _ = run(command, "--help")
    own, solver = out.split("\nSolver options:\n")
    assert _flags(SOLVER_OPTIONS) <= set(re.findall(r"--[a-z0-9-]+", solver))
    assert "--tol" not in re.findall(r"--[a-z0-9-]+", own.split("\nOptions:\n")[1])


def test_figure_lists_every_solver_flag_but_quad_order():
    flags = _help_flags("figure")
    assert _flags(FIGURE_SOLVER_OPTIONS) <= flags
    assert "--quad-order" not in flags


@pytest.mark.parametrize("command", NOT_SOLVING)
def test_commands_that_solve_no_fixed_point_refuse_the_solver_flags(command):
    import typer

    from gaussmix.cli.commands import app

    params = typer.main.get_command(app).commands[command].params
    declared = {o for p in params for o in [*p.opts, *getattr(p, "secondary_opts", [])]}
    assert not _flags(SOLVER_OPTIONS) & declared
    code, _, err = run(command, "--anderson", "2")
    assert code == 2 and "No such option" in err


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("--damping", "2"), "--damping must be <= 1, got 2"),
        (("--anderson", "-1"), "--anderson must be >= 0, got -1"),
        (("--max-refine", "11"), "--max-refine must be <= 10, got 11"),
        (("--prior-panels", "1"), "--prior-panels must be >= 2, got 1"),
        (("--quad-tol", "-1"), "--quad-tol"),
        (("--max-iter", "0"), "--max-iter must be >= 1, got 0"),
        (("--quad-order", "0"), "--quad-order"),
    ],
)
def test_a_bad_solver_option_is_refused_naming_its_flag(args, needle):
    assert_one_line_error(*run("point", *args), needle)


def test_data_checks_the_solver_options_before_reading_any_data(tmp_path):
    """The data file does not exist: the solver's option is refused first, by its flag."""
    code, out, err = run("data", str(tmp_path / "missing.csv"), "--damping", "0",
                         "--out", str(tmp_path / "o"))  # fmt: skip
    assert_one_line_error(code, out, err, "--damping must be")
    assert not (tmp_path / "o").exists()


def _library(options: PointOptions, **solver) -> gm.FixedPointResult:
    setup = build_point(options)
    return gm.solve(setup.mixture, setup.loss, lam=setup.lam, alpha=setup.alpha, **solver)


def test_point_reaches_the_solver_with_each_option():
    code, _, err = run("point", "--max-iter", "1")
    assert code == 3 and "did not converge in 1 iterations" in err
    default = json.loads(run("point", "--json")[1])
    plain = json.loads(run("point", "--anderson", "0", "--json")[1])
    lib = _library(PointOptions(), anderson=0)
    assert plain["n_iter"] == lib.n_iter != default["n_iter"]  # plain iteration: slower
    assert plain["params"]["anderson"] == 0 and "anderson" not in default["params"]
    coarse = json.loads(run("point", "--no-estimate-error", "--json")[1])
    lib = _library(PointOptions(), estimate_error=False)
    assert coarse["integration_error"] == pytest.approx(lib.integration_error, rel=0, abs=0)
    assert coarse["integration_error"] != default["integration_error"]
    assert coarse["params"]["estimate_error"] is False


def test_curve_provenance_records_every_solver_option(tmp_path):
    code, _, err = run("curve", "--alphas", "1:2:2", "--anderson", "2", "--no-symmetry",
                       "--out", str(tmp_path))  # fmt: skip
    assert code == 0, err
    meta = json.loads((tmp_path / "curve.json").read_text())
    solver = meta["parameters"]["solver"]
    assert set(solver) == set(SOLVER_OPTIONS)
    assert (solver["anderson"], solver["symmetry"], solver["damping"]) == (2, False, 1.0)
    df = pd.read_csv(tmp_path / "curve.csv")
    lib = gm.learning_curve(
        build_point(PointOptions()).mixture, "cross-entropy", [1.0, 2.0], lam=1.0,
        anderson=2, symmetry=False,
    )  # fmt: skip
    np.testing.assert_array_equal(df["n_iter"].to_numpy(), lib["n_iter"].to_numpy())


def test_a_point_at_the_default_options_keeps_its_checkpoint_key():
    """The key hashes the settings; the solver's other options enter it only when set, so a
    checkpoint written before they existed still resumes (tests/fixtures/checkpoint_v3 is
    read by test_names.py)."""
    setup = build_point(PointOptions())
    spec = PointSpec(setup.mixture, setup.loss, setup.lam, setup.alpha, params=setup.params)
    assert "solver" not in spec.settings()
    changed = PointSpec(setup.mixture, setup.loss, setup.lam, setup.alpha,
                        params=setup.params, solver={"anderson": 0})  # fmt: skip
    assert changed.settings()["solver"] == {"anderson": 0}
    assert point_key(changed) != point_key(spec)
    assert changed.solve_kw(changed.problem())["anderson"] == 0
    with pytest.raises(TypeError, match="not solver options here"):
        PointSpec(setup.mixture, setup.loss, 1.0, 1.0, solver={"throw": False})


def test_a_sweep_grid_takes_the_solver_options_by_their_names(tmp_path):
    grid = tmp_path / "g.toml"
    grid.write_text('[fixed]\nalpha = 1.0\nestimate-error = false\n'
                    '[grid]\nanderson = [0, 6]\n')  # fmt: skip
    out = tmp_path / "s.csv"
    code, _, err = run("sweep", "--grid", str(grid), "-o", str(out), "--n-jobs", "1",
                       "--quiet")  # fmt: skip
    assert code == 0, err
    df = pd.read_csv(out)
    params = [json.loads(p) for p in df["params"]]
    assert [p.get("anderson", 6) for p in params] == df["anderson"].tolist() == [0, 6]
    assert all(p["estimate_error"] is False for p in params)
    opts = PointOptions(alpha=1.0)
    for anderson, n_iter, err_ in zip(df["anderson"], df["n_iter"], df["integration_error"]):
        lib = _library(opts, anderson=int(anderson), estimate_error=False)
        assert (n_iter, err_) == (lib.n_iter, lib.integration_error)
    bad = tmp_path / "bad.toml"
    bad.write_text("[fixed]\nsymmetry = 1\n[grid]\nalpha = [1.0]\n")
    code, out_, err = run("sweep", "--grid", str(bad), "-o", str(tmp_path / "b.csv"))
    assert_one_line_error(code, out_, err, "'symmetry' must be true or false, got 1")


def test_figure_passes_the_solver_options(tmp_path):
    args = ("figure", "fig3-right", "--fast", "--alphas", "1", "--lams", "0.1,1")
    code, _, err = run(*args, "--max-iter", "1", "--quiet", "--out", str(tmp_path / "a"))
    assert code == 3 and "none of its 2 theory points has a fixed point" in err
    assert not (tmp_path / "a").exists()
    code, _, err = run(*args, "--anderson", "0", "--quiet", "--out", str(tmp_path / "b"))
    assert code == 0, err
    meta = json.loads((tmp_path / "b" / "fig3-right.json").read_text())
    assert meta["arguments"]["options"] == {"anderson": 0}
    df = pd.read_csv(tmp_path / "b" / "fig3-right.csv")
    table = dict(lams=[0.1, 1.0], alphas=[1.0], fast=True, bayes_error=None)
    lib = fig3_right(**table, options=SolverOptions(anderson=0))
    default = fig3_right(**table)
    np.testing.assert_array_equal(df["n_iter"].to_numpy(), lib["n_iter"].to_numpy())
    assert not np.array_equal(lib["n_iter"].to_numpy(), default["n_iter"].to_numpy())


def test_a_figure_without_solver_options_refuses_them_naming_those_that_take_them(tmp_path):
    code, out, err = run("figure", "sparse-projection", "--fast", "--anderson", "2",
                         "--out", str(tmp_path))  # fmt: skip
    assert_one_line_error(code, out, err,
                          "--anderson is not an option of figure sparse-projection",
                          "fig3-right", "sparse-setup", "appe-xor")  # fmt: skip


#: the figures that solve no fixed point of Theorem 1, and so take no solver options
NO_FIXED_POINT = {
    "sparse-projection": "samples of the mixture only",
    "appe-xor-projection": "samples of the mixture only",
    "fig3-centre": "the separability threshold alpha*_K (the max-margin limit, not the "
    "fixed-point iteration)",
}


def test_every_figure_that_solves_fixed_points_takes_the_solver_options():
    from gaussmix.cli.figure import _takes_solver_options
    from gaussmix.figures import FIGURES

    without = {name for name, spec in FIGURES.items() if not _takes_solver_options(spec)}
    assert without == set(NO_FIXED_POINT)


def test_the_docs_table_lists_every_solver_flag():
    text = (Path(__file__).parents[1] / "docs" / "cli.md").read_text()
    section = text.split("## Solver options\n")[1].split("\n## ")[0]
    rows = [line for line in section.splitlines() if line.startswith("| `--")]
    flags = {re.match(r"\| `(--[a-z-]+)", row).group(1) for row in rows}
    assert flags == {POINT_FLAGS[name] for name in SOLVER_OPTIONS}
    for name in SOLVER_EXCLUDED:
        assert f"`{name}`" in section


def test_a_simulation_grid_refuses_the_solver_options(tmp_path):
    """A [simulate] grid solves no fixed point: a solver option there would be ignored."""
    grid = tmp_path / "sim.toml"
    grid.write_text("[fixed]\nmax-iter = 10\n[grid]\nalpha = [1.0]\n[simulate]\nd = 40\n"
                    "seeds = 1\n")  # fmt: skip
    code, out, err = run("sweep", "--grid", str(grid), "-o", str(tmp_path / "s.csv"))
    assert_one_line_error(code, out, err, "[fixed] 'max_iter' is an option of the theory's")
    assert not (tmp_path / "s.csv").exists()


def test_figure_options_put_the_callers_options_over_the_figures_own():
    from gaussmix.figures._common import figure_options

    # ten-class's own estimate_error=False: --estimate-error (the default) still wins
    assert figure_options({"estimate_error": True}, estimate_error=False).estimate_error
    assert not figure_options(None, estimate_error=False).estimate_error
    both = figure_options(SolverOptions(anderson=2), estimate_error=False)
    assert (both.anderson, both.estimate_error) == (2, False)
    with pytest.raises(TypeError, match="'quad_order'"):
        figure_options({"quad_order": 8})
    with pytest.raises(TypeError, match="options must be"):
        figure_options("anderson=2")
    with pytest.raises(ValueError, match="damping"):
        figure_options({"damping": 0.0})


def test_fig4_left_solves_its_curves_with_the_options():
    from gaussmix.figures.regularisation import fig4_left

    table = dict(alphas=[1.0], lams=[0.1, 1.0], simulate=False)
    df = fig4_left(**table, options={"anderson": 2})
    mix = gm.Mixture.isotropic(delta=np.array([0.1, 0.01]), means="antipodal", labels="binary")
    lib = gm.lambda_sweep(mix, "square", [0.1, 1.0], alpha=1.0, anderson=2)
    default = gm.lambda_sweep(mix, "square", [0.1, 1.0], alpha=1.0)
    np.testing.assert_array_equal(df["n_iter"].to_numpy(), lib["n_iter"].to_numpy())
    assert not np.array_equal(lib["n_iter"].to_numpy(), default["n_iter"].to_numpy())
    np.testing.assert_array_equal(df["test_error"].to_numpy(), lib["test_error"].to_numpy())
