"""The solver reachable from every command and study that solves fixed points, by the
names of :func:`gaussmix.solve`; the remedies that warnings name are options of the entry
point that said them; progress of the searches; the help texts of ``data``, ``realdata``
and ``figure`` (metavars, tasks, figures, the reason of ``--lam``'s default)."""

from __future__ import annotations

import dataclasses
import inspect
import json
import re
import warnings
from pathlib import Path

import pytest
from _cli_helpers import run

import gaussmix as gm
from gaussmix.cli.commands import _WARNING_REMEDIES, app
from gaussmix.core.exceptions import IntegrationWarning
from gaussmix.theory.numerics.quadrature import GaussHermite
from gaussmix.theory.solve.options import SolverOptions

FIXTURE = Path(__file__).parent / "fixtures" / "owndata_small.csv"
#: the commands that solve fixed points of the theory
SOLVING = ("point", "curve", "lambda-curve", "optimal-lambda", "compare", "data", "realdata")


def _help(command: str) -> str:
    code, out, err = run(command, "--help")
    assert code == 0, err
    return out


def _flags(command: str) -> set[str]:
    import typer

    group = typer.main.get_command(app)
    return {o for p in group.commands[command].params for o in getattr(p, "opts", [])}


@pytest.mark.parametrize("command", SOLVING)
def test_every_solving_command_takes_the_solver_options_and_the_remedies(command):
    flags = _flags(command)
    assert {"--tol", "--max-iter", "--quad-order"} <= flags
    for _, _, remedy in _WARNING_REMEDIES:  # e.g. "on the command line: --quad-order N"
        for flag in re.findall(r"--[a-z-]+", remedy):
            assert flag in flags, (command, flag)


def test_study_data_takes_every_solver_option_by_solves_names():
    params = inspect.signature(gm.study_data).parameters
    solve_params = inspect.signature(gm.solve).parameters
    for f in dataclasses.fields(SolverOptions):
        assert f.name in params and f.name in solve_params, f.name
    assert "options" in params
    # the library's remedies name keywords that study_data takes
    assert "quadrature=" in GaussHermite(8, 1).remedy()
    X, y = _two_classes()
    with pytest.raises(TypeError, match="study_data.*'quad_order'"):
        gm.study_data(X, y, quad_order=8)


def _two_classes():
    import numpy as np

    rng = np.random.default_rng(0)
    X = rng.standard_normal((160, 8)) + np.repeat([[0.4], [-0.4]], 80, axis=0)
    return X, np.repeat([0, 1], 80)


def test_study_data_uses_the_solver_options_given():
    """A tolerance and a rule given to the study reach its fixed points: the theory row's
    result carries them, and the provenance records them."""
    X, y = _two_classes()
    rule = GaussHermite(24, 1)
    study = gm.study_data(
        X, y, alphas=[1.0], sources=["theory"], tol=1e-10, quadrature=rule, estimate_error=False
    )
    (point,) = study.table.points
    assert point.params["quadrature"] == rule.describe()
    solver = study.info["parameters"]["solver"]
    assert (solver["tol"], solver["quadrature"], solver["estimate_error"]) == (
        1e-10,
        rule.describe(),
        False,
    )
    default = gm.study_data(X, y, alphas=[1.0], sources=["theory"])
    assert default.info["parameters"]["solver"]["tol"] == SolverOptions().tol


def test_data_quad_order_reaches_the_fixed_points(tmp_path):
    """``--quad-order N`` is ``quadrature=GaussHermite(N, L')`` with the problem's
    effective output dimension: 2 for three classes and cross-entropy (shift invariance),
    as :func:`gaussmix.theory.problem.problem.effective_loss` says."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(1)
    X = rng.standard_normal((300, 6)) + np.repeat(np.eye(3, 6), 100, axis=0)
    path = tmp_path / "three.csv"
    pd.DataFrame(X).assign(label=np.repeat([0, 1, 2], 100)).to_csv(path, index=False)
    out = tmp_path / "out"
    code, _, err = run("data", str(path), "--label", "label", "--loss", "cross-entropy",
                       "--alphas", "1", "--sources", "theory", "--quad-order", "10",
                       "--quiet", "--out", str(out))  # fmt: skip
    assert code == 0, err
    meta = json.loads((out / "data.json").read_text())
    assert meta["parameters"]["solver"]["quadrature"] == GaussHermite(10, 2).describe()


def test_a_warning_names_an_option_the_command_takes(tmp_path, monkeypatch):
    """The library's integration warning names ``quadrature=GaussHermite(n, dim)``; the
    command line adds its own form, ``--quad-order N``, which ``data`` accepts."""
    import gaussmix.studies as studies

    real = studies.study_data

    def warns(*args, **kw):
        warnings.warn(
            f"estimated integration error is large; {GaussHermite(8, 1).remedy()}",
            IntegrationWarning,
            stacklevel=1,
        )
        return real(*args, **kw)

    monkeypatch.setattr(studies, "study_data", warns)
    code, _, err = run("data", str(FIXTURE), "--label", "label", "--alphas", "0.5",
                       "--sources", "theory", "--quiet", "--out", str(tmp_path))  # fmt: skip
    assert code == 0, err
    (line,) = [ln for ln in err.splitlines() if "IntegrationWarning" in ln]
    flag = re.search(r"on the command line: (--[a-z-]+)", line).group(1)
    assert flag in _help("data")


def test_the_target_search_shows_progress_and_quiet_silences_it(tmp_path):
    args = ["data", str(FIXTURE), "--label", "label", "--alphas", "0.5", "--sources",
            "theory", "--target-error", "0.3", "--optimal-lam"]  # fmt: skip
    code, _, err = run(*args, "--out", str(tmp_path / "a"), tty=True)
    assert code == 0, err
    assert "alpha reaching 0.3 at lam = 0.1" in err
    assert "alpha reaching 0.3 at the optimal lambda" in err
    code, _, err = run(*args, "--quiet", "--out", str(tmp_path / "b"), tty=True)
    assert code == 0 and "alpha reaching" not in err


def test_data_and_realdata_help_say_what_each_option_takes():
    for command in ("data", "realdata"):
        text = _help(command)
        assert "<str>" not in text and "<list[" not in text and "{files}" not in text
        assert "[default: 0.1, as gaussmix compare" in " ".join(text.split())
    data = _help("data")
    assert data.splitlines()[0] == "Usage: gaussmix data [OPTIONS] {FILE}..."
    assert re.search(r"^  FILE  FILE\.npz", data, re.M)
    realdata = " ".join(_help("realdata").split())
    assert "--task even-odd|low-high|clothes-accessories|ten-class" in realdata
    assert "low-high (mnist, digits)" in realdata
    assert "or ten-class (one class per digit or garment, any data set" in realdata


def test_figure_help_names_every_figure():
    from gaussmix.figures import FIGURES

    text = " ".join(_help("figure").split()).replace("- ", "-")
    for name in FIGURES:
        assert name in text, name
