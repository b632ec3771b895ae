"""Every tolerance is one named constant (gaussmix.theory.numerics.tolerances), used where it
acts."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

from gaussmix.theory.api.api import solve
from gaussmix.theory.channel.losses import LogisticLoss, Loss
from gaussmix.theory.numerics import tolerances as tols
from gaussmix.theory.numerics.quadrature import GaussHermite
from gaussmix.theory.solve.solver import SolverOptions, solve_problem

THEORY = Path(__file__).resolve().parents[1] / "src" / "gaussmix" / "theory"


def test_defaults_are_the_named_constants():
    assert inspect.signature(Loss.prox).parameters["tol"].default == tols.PROX_TOL
    assert inspect.signature(LogisticLoss.prox).parameters["tol"].default == tols.PROX_TOL
    assert SolverOptions().tol == tols.FIXED_POINT_TOL == 1e-8
    assert SolverOptions().quad_tol == tols.QUAD_TOL == 1e-7
    for func in (solve, solve_problem):
        params = inspect.signature(func).parameters
        assert params["tol"].default == tols.FIXED_POINT_TOL
        assert params["quad_tol"].default == tols.QUAD_TOL
    assert GaussHermite(8).prune == tols.QUADRATURE_PRUNE


@pytest.mark.parametrize("tol,expected", [(1e-8, 1e-6), (1e-10, 1e-6), (1e-7, 1e-5)])
def test_integration_warning_threshold(tol, expected):
    assert tols.integration_warning_threshold(tol) == pytest.approx(expected, rel=1e-15)


def test_every_constant_is_documented_and_exported():
    text = (THEORY / "numerics/tolerances.py").read_text()
    for name in tols.__all__:
        assert hasattr(tols, name), name
        if name.isupper():
            assert re.search(rf"^#: .*\n(#: .*\n)*{name} = ", text, re.M), name


SOLVER_LITERALS = ("1e-13", "1e-8", "1e-7", "1e-6", "1e-10", "1e-12", "1e-16", "1e4")


@pytest.mark.parametrize(
    "module,literals",
    [
        ("solve/solver.py", SOLVER_LITERALS),
        ("channel/channel.py", SOLVER_LITERALS),
        ("numerics/quadrature.py", SOLVER_LITERALS),
        ("channel/losses.py", ("1e-13",)),  # (its Newton line search has constants of its own)
    ],
)
def test_no_literal_solver_tolerance_outside_the_constants(module, literals):
    """The prox tolerance (1e-13), the fixed-point and quadrature defaults (1e-8, 1e-7), the
    warning floor (1e-6) and the Anderson / bias ridges are written only in tolerances.py."""
    code = "\n".join(line.split("#")[0] for line in (THEORY / module).read_text().splitlines())
    for literal in literals:
        assert not re.search(rf"(?<![\w.]){re.escape(literal)}(?![\w.])", code), literal
