"""One path per meaning: a curve's solver options given as keywords or as one
``options=`` object are the same options, and take the same engine to the same bits; the
curves take every option :func:`gaussmix.solve` takes, by the same names; the curve's axis is
a parameter of the engine, not a label."""

from __future__ import annotations

import dataclasses
import inspect

import numpy as np
import pandas as pd
import pytest

import gaussmix as gm
from gaussmix.core.exceptions import ArgumentError
from gaussmix.experiments import curves
from gaussmix.experiments.continuation import STACKED_MIN_POINTS

BINARY = gm.Mixture.isotropic(0.5, "antipodal", labels="binary")
K3 = gm.Mixture.isotropic(0.5, "simplex", n_clusters=3)
COLUMNS = ["test_error", "train_error", "train_loss", "n_iter", "residual", "converged"]


def _same(a: pd.DataFrame, b: pd.DataFrame) -> None:
    """The two tables are the same to the bit (NaN where NaN)."""
    pd.testing.assert_frame_equal(a[COLUMNS], b[COLUMNS], check_exact=True)


@pytest.mark.parametrize("n_points", [6, STACKED_MIN_POINTS + 2])
def test_learning_curve_keywords_and_options_object_agree_to_the_bit(n_points: int) -> None:
    # fewer points than a stacked solve takes, and enough: each engine whichever spelling
    alphas = np.geomspace(0.3, 4.0, n_points)
    kw = gm.learning_curve(BINARY, "logistic", alphas, lam=0.1, tol=1e-11)
    obj = gm.learning_curve(
        BINARY, "logistic", alphas, lam=0.1, options=gm.SolverOptions(tol=1e-11)
    )
    _same(kw, obj)
    # and the default tolerance is another answer: the option was read in both spellings
    default = gm.learning_curve(BINARY, "logistic", alphas, lam=0.1)
    assert not np.array_equal(default["n_iter"].to_numpy(), kw["n_iter"].to_numpy())


def test_lambda_sweep_keywords_and_options_object_agree_to_the_bit() -> None:
    lams = np.geomspace(0.01, 3.0, STACKED_MIN_POINTS)
    kw = gm.lambda_sweep(BINARY, "hinge", lams, alpha=1.5, tol=1e-11, max_iter=400)
    obj = gm.lambda_sweep(
        BINARY, "hinge", lams, alpha=1.5, options=gm.SolverOptions(tol=1e-11, max_iter=400)
    )
    mixed = gm.lambda_sweep(
        BINARY, "hinge", lams, alpha=1.5, options=gm.SolverOptions(tol=1e-11), max_iter=400
    )
    _same(kw, obj)
    _same(kw, mixed)


def test_keywords_override_the_options_object() -> None:
    alphas = [0.5, 1.0, 2.0]
    base = gm.SolverOptions(tol=1e-5)
    over = gm.learning_curve(K3, "cross-entropy", alphas, lam=0.1, options=base, tol=1e-11)
    plain = gm.learning_curve(K3, "cross-entropy", alphas, lam=0.1, tol=1e-11)
    _same(over, plain)


@pytest.mark.parametrize("fn", [gm.learning_curve, gm.lambda_sweep])
def test_curves_take_the_options_solve_takes_by_the_same_names(fn) -> None:
    solve = inspect.signature(gm.solve).parameters
    curve = inspect.signature(fn).parameters
    names = [f.name for f in dataclasses.fields(gm.SolverOptions)]
    for name in ["options", *names]:
        assert name in curve, name
        assert curve[name].default == solve[name].default, name
    assert "%(solver_options)s" not in fn.__doc__
    for name in names:  # each option documented in the curve's docstring
        assert f"    {name} : " in fn.__doc__, name


def test_unknown_keyword_and_bad_options_named_at_the_door() -> None:
    with pytest.raises(
        TypeError, match=r"learning_curve\(\) got an unexpected keyword.*tolerance"
    ):
        gm.learning_curve(BINARY, "logistic", [0.5, 1.0], lam=0.1, tolerance=1e-8)
    with pytest.raises(TypeError, match=r"lambda_sweep\(\) got an unexpected keyword.*'inti'"):
        gm.lambda_sweep(BINARY, "logistic", [0.5, 1.0], alpha=1.0, inti=None)
    with pytest.raises(TypeError, match="options must be a gaussmix.SolverOptions"):
        gm.learning_curve(BINARY, "logistic", [0.5, 1.0], lam=0.1, options={"tol": 1e-8})
    with pytest.raises(ValueError, match="max_iter"):
        gm.lambda_sweep(BINARY, "logistic", [0.5, 1.0], alpha=1.0, max_iter=0)


def test_the_axis_is_a_parameter_of_the_engine() -> None:
    opts = gm.SolverOptions()
    points = [(0.1, 0.5), (0.1, 1.0)]
    common = dict(penalty="l2", progress=False, opts=opts)
    with pytest.raises(ArgumentError, match="axis must be 'alpha' or 'lam'"):
        curves._curve(BINARY, "logistic", points, axis="lambda", **common)
    # the predictor of a curve over lambda works in log lambda, whatever the progress label
    by_alpha = curves._curve(BINARY, "logistic", points, axis="alpha", **common)
    assert all(r.success for r in by_alpha)


def test_optimal_lambda_takes_options_and_keywords_the_same_way() -> None:
    kw = dict(alpha=1.0, lam_bounds=(1e-2, 10.0), n_grid=5, derivative=False)
    by_kw = gm.optimal_lambda(BINARY, "logistic", tol=1e-10, max_iter=500, **kw)
    by_obj = gm.optimal_lambda(
        BINARY, "logistic", options=gm.SolverOptions(tol=1e-10, max_iter=500), **kw
    )
    assert by_kw.lam_star == by_obj.lam_star
    assert by_kw.test_error == by_obj.test_error
    assert by_kw.n_evaluations == by_obj.n_evaluations
    with pytest.raises(TypeError, match=r"optimal_lambda\(\) got an unexpected keyword"):
        gm.optimal_lambda(BINARY, "logistic", tolerance=1e-8, **kw)
    assert "options" in inspect.signature(gm.optimal_lambda).parameters


def test_changed_options_are_what_was_asked_however_spelled() -> None:
    from gaussmix.theory.solve.options import changed_options, solver_options

    assert changed_options(gm.SolverOptions()) == {}
    asked = solver_options(gm.SolverOptions(tol=1e-10), {"max_iter": 3000, "anderson": 3})
    assert changed_options(asked) == {"tol": 1e-10, "anderson": 3}


def test_the_front_ends_record_the_options_the_library_calls_changed() -> None:
    """One judgement of "asked for": a point's ``params`` record the options that
    :func:`changed_options` calls changed, except those every point records anyway."""
    from gaussmix.frontend.options import changed_solver_options
    from gaussmix.theory.solve.options import changed_options

    defaults = gm.SolverOptions()
    assert changed_solver_options({"anderson": defaults.anderson, "tol": 1e-12}) == {}
    given = {"anderson": 3, "max_iter": 50, "tol": 1e-9, "symmetry": not defaults.symmetry}
    recorded = changed_solver_options(given)
    assert recorded == {"anderson": 3, "symmetry": not defaults.symmetry}
    library = changed_options(gm.SolverOptions(**given))
    assert recorded == {k: v for k, v in library.items() if k not in ("tol", "max_iter")}
