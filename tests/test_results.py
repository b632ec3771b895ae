"""One result protocol (gaussmix.core.results): every result type has ``success``,
``message``, ``n_iter`` (None where nothing iterates), a JSON-safe ``to_dict()``, a
``to_frame()`` and the deprecated ``converged``; every curve is a CurveTable whose
``.points`` are the per-row results; ``gm.simulate`` / ``gm.sweep`` / ``gm.solve`` are
functions and ``dir(gm)`` lists public names only."""

from __future__ import annotations

import importlib
import inspect
import json
import pickle
import pkgutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import gaussmix as gm
from gaussmix.core.jsonio import dumps, loads
from gaussmix.core.results import Result
from gaussmix.core.tables import CurveTable

ROOT = Path(__file__).resolve().parents[1]
BINARY = gm.Mixture.isotropic(0.5, "simplex", n_clusters=2, labels="binary")
THREE = gm.Mixture.isotropic(0.5, "simplex", n_clusters=3)

#: classes named ``*Result`` that are not results of the API, and why
NOT_RESULTS = {
    "PriorResult": "one half of an evaluation of the fixed-point map (theory.prior)",
}


def _atlas_result():
    from gaussmix.figures.paper_atlas import AtlasEntry, AtlasResult

    ok = AtlasEntry("fig-a", "Fig. 1", "ok", 1.0, 1.0, {"csv": "a.csv"})
    bad = AtlasEntry("fig-b", "Fig. 2", "failed", 0.5, 0.5, error="ValueError: x")
    return AtlasResult(Path("out"), Path("out/atlas.json"), True, 1, 1.5, (ok, bad))


def _sweep_result(tmp_path):
    from gaussmix.sweep import PointSpec

    points = [
        PointSpec(BINARY, "square", lam=0.1, alpha=a, coords={"alpha": a}) for a in (0.5, 2.0)
    ]
    return gm.sweep(points, out=tmp_path / "s.csv", backend="serial", progress=False)


#: one cheap instance of every result type (name -> builder)
BUILDERS = {
    "FixedPointResult": lambda tmp: gm.solve(BINARY, "logistic", lam=0.1, alpha=2.0),
    "MaxMarginResult": lambda tmp: gm.max_margin(BINARY, 1.0),
    "ThresholdEstimate": lambda tmp: importlib.import_module(
        "gaussmix.theory.limits.separability"
    ).separability_threshold_estimate(BINARY),
    "TransitionResult": lambda tmp: gm.separability_threshold(BINARY, evidence=False),
    "BayesOptimalResult": lambda tmp: gm.bayes_optimal_error(THREE, 2.0),
    "OptimalLambdaResult": lambda tmp: gm.optimal_lambda(BINARY, "square", alpha=2.0),
    "SimulationResult": lambda tmp: gm.simulate(
        BINARY, loss="square", lam=0.1, alpha=2.0, d=40, seeds=2
    ),
    "SweepResult": _sweep_result,
    "AtlasResult": lambda tmp: _atlas_result(),
}


def _result_classes() -> dict[str, type]:
    """Every class of the package named ``*Result`` or deriving from Result."""
    import gaussmix

    found: dict[str, type] = {}
    for info in pkgutil.walk_packages(gaussmix.__path__, "gaussmix."):
        if info.name.startswith("gaussmix.cli") or info.name.endswith("__main__"):
            continue  # the command line (and the entry point that runs it): no result type
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if inspect.isclass(obj) and obj.__module__ == info.name:
                if (name.endswith("Result") or issubclass(obj, Result)) and obj is not Result:
                    found[name] = obj
    return found


def test_every_result_type_follows_the_protocol_and_is_tested_here():
    classes = _result_classes()
    for name in NOT_RESULTS:
        assert name in classes and not issubclass(classes[name], Result)
    results = {n: c for n, c in classes.items() if n not in NOT_RESULTS}
    assert all(issubclass(c, Result) for c in results.values()), results
    assert set(results) == set(BUILDERS)


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_the_result_protocol(name, tmp_path):
    res = BUILDERS[name](tmp_path)
    assert type(res).__name__ == name and isinstance(res, Result)
    assert type(res.success) is bool
    assert isinstance(res.message, str) and res.message
    assert res.n_iter is None or (isinstance(res.n_iter, int) and res.n_iter >= 0)
    d = res.to_dict()
    assert isinstance(d, dict) and d
    assert isinstance(loads(dumps(d)), dict)
    json.dumps(d, allow_nan=False)  # strict JSON as it is: no NaN, no numpy types
    frame = res.to_frame()
    assert isinstance(frame, pd.DataFrame) and len(frame) >= 1
    with pytest.warns(FutureWarning, match=r"converged is deprecated.*use \.success"):
        old = res.converged
    assert old is res.success


def test_success_is_false_and_says_why_when_the_computation_fails():
    bad = gm.solve(THREE, "cross-entropy", lam=0.01, alpha=2.0, max_iter=2, throw=False)
    assert bad.success is False and "iteration" in bad.message
    assert bad.to_dict()["converged"] is False  # the JSON key of `gaussmix point`
    atlas = _atlas_result()
    assert atlas.success is False and "fig-b" in atlas.message
    assert atlas.to_frame()["status"].tolist() == ["ok", "failed"]


def test_the_protocol_keeps_the_documented_json_keys():
    res = gm.solve(BINARY, "logistic", lam=0.1, alpha=2.0)
    assert tuple(res.to_dict()) == type(res).json_keys() and "success" not in res.to_dict()
    assert res.to_dict()["converged"] is True
    row = res.to_frame()
    assert row.loc[0, "converged"] and row.loc[0, "test_error"] == res.test_error


# --------------------------------------------------------------------------- curves
def test_a_curve_is_a_table_with_its_points_beside_the_rows():
    df = gm.learning_curve(BINARY, "logistic", [0.5, 1.0, 2.0], lam=0.1)
    assert isinstance(df, CurveTable) and isinstance(df, pd.DataFrame)
    assert len(df.points) == len(df) == 3
    for (_, row), r in zip(df.iterrows(), df.points, strict=True):
        assert (
            r.success and r.test_error == row["test_error"] and r.params["alpha"] == row["alpha"]
        )
    # a table derived from it is a plain DataFrame: the points belong to the rows computed
    assert type(df[df["alpha"] > 0.7]) is pd.DataFrame and type(df.copy()) is pd.DataFrame
    assert type(df.to_frame()) is pd.DataFrame
    pd.testing.assert_frame_equal(df.to_frame(), pd.DataFrame(df))
    back = pickle.loads(pickle.dumps(df))
    assert isinstance(back, CurveTable) and [r.test_error for r in back.points] == list(
        df["test_error"]
    )


def test_lambda_sweep_points_follow_the_order_asked_for():
    lams = [0.01, 1.0, 0.1]  # solved from large to small, reported in this order
    df = gm.lambda_sweep(BINARY, "logistic", lams, alpha=2.0)
    assert isinstance(df, CurveTable)
    assert [r.params["lam"] for r in df.points] == lams == df["lam"].tolist()
    np.testing.assert_array_equal([r.test_error for r in df.points], df["test_error"])


def test_return_results_is_deprecated_and_names_the_replacement():
    with pytest.warns(FutureWarning, match=r"\.points"):
        df, res = gm.learning_curve(BINARY, "logistic", [1.0, 2.0], lam=0.1, return_results=True)
    assert isinstance(df, CurveTable) and list(res) == list(df.points)


def test_the_same_table_whatever_is_asked():
    df = gm.optimal_lambda_curve(BINARY, "square", [1.0, 2.0])
    assert isinstance(df, CurveTable) and len(df.points) == 2
    assert [r.lam_star for r in df.points] == df["lam_star"].tolist()


# --------------------------------------------------------------------------- package face
def test_solve_simulate_and_sweep_are_functions():
    for name in ("solve", "simulate", "sweep"):
        assert inspect.isfunction(getattr(gm, name)), name
    res = gm.simulate(BINARY, loss="square", lam=0.1, alpha=2.0, d=40, seeds=2)
    assert isinstance(res, gm.SimulationResult) and res.success


@pytest.mark.parametrize(
    "code",
    [
        # a submodule imported first: the import system binds it on the package, which
        # declines it for these names (the function stays)
        "import gaussmix.simulate, gaussmix.sweep, gaussmix as gm; "
        "assert inspect.isfunction(gm.simulate) and inspect.isfunction(gm.sweep); "
        "assert isinstance(sys.modules['gaussmix.sweep'], types.ModuleType)",
        "from gaussmix.sweep import PointSpec, SpecGrid; import gaussmix as gm; "
        "assert inspect.isfunction(gm.sweep) and PointSpec.__module__ == 'gaussmix.sweep.spec'",
        "from gaussmix.simulate import simulate, realise; from gaussmix import simulate as s; "
        "assert s is simulate and inspect.isfunction(s)",
        # the function first, then the subpackage
        "import gaussmix as gm; f = gm.sweep; import gaussmix.sweep.runner; "
        "assert gm.sweep is f and inspect.isfunction(f)",
        # `import a.b as c` binds the attribute b of a (IMPORT_FROM): here the function;
        # the subpackage is sys.modules['gaussmix.sweep'] / importlib.import_module
        "import gaussmix.sweep as m; assert inspect.isfunction(m); "
        "assert importlib.import_module('gaussmix.sweep').PointSpec",
        # so `import a.b.c as d` looks c up on the function and fails; `from a.b import c`
        # (the documented form) reads the subpackage from sys.modules
        "from gaussmix.sweep import tasks as t; from gaussmix.simulate import separability; "
        "assert t.run_task and separability.lp_crossing\n"
        "try:\n    import gaussmix.sweep.tasks as t2\n"
        "except ImportError:\n    pass\nelse:\n    raise AssertionError('bound')",
    ],
)
def test_the_functions_and_their_subpackages_in_a_fresh_interpreter(code):
    prelude = "import importlib, inspect, sys, types; "
    proc = subprocess.run(
        [sys.executable, "-c", prelude + code],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT / "src"), "PATH": ""},
    )
    assert proc.returncode == 0, proc.stderr


def test_dir_lists_public_names_only():
    names = dir(gm)
    assert names == sorted(
        set(gm.__all__) | {"data", "experiments", "figures", "studies", "theory"}
    )
    assert [n for n in names if n.startswith("_")] == ["__version__"]
    for n in gm.__all__:
        assert getattr(gm, n) is not None, n
    namespace: dict = {}
    exec("from gaussmix import *", namespace)
    assert set(gm.__all__) <= set(namespace)
