"""``gaussmix bayes-optimal`` and ``gaussmix transition --simulate --no-theory`` (the parts
that do not need the alpha* theory; those are in test_cli_transition_theory.py)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from _cli_helpers import assert_one_line_error, run, run_json

import gaussmix as gm
from gaussmix.simulate import separability_fraction
from gaussmix.theory.limits.bayes import bayes_optimal_error


def test_bayes_optimal_json_is_the_library_result():
    payload = run_json("bayes-optimal", "--means", "gaussian", "-K", "3", "--alpha", "2")
    ref = bayes_optimal_error(gm.Mixture.isotropic(0.5, "gaussian", n_clusters=3), 2.0)
    assert payload["test_error"] == ref.test_error
    assert payload["error_estimate"] == ref.error_estimate
    assert payload["K"] == 3 and payload["delta"] == [0.5] * 3
    assert payload["gram"] == np.eye(3).tolist()  # --means gaussian: Theta = I
    assert payload["params"]["means"] == "gaussian" and payload["params"]["alpha"] == 2.0


def test_bayes_optimal_takes_the_mixture_options():
    payload = run_json(
        "bayes-optimal", "--rho", "0.5,0.3,0.2", "--delta", "0.5,0.5,1", "--alpha", "1.5"
    )
    mix = gm.Mixture.isotropic(np.array([0.5, 0.5, 1.0]), "simplex", rho=[0.5, 0.3, 0.2])
    assert payload["test_error"] == bayes_optimal_error(mix, 1.5).test_error
    assert payload["groups"] == [[0, 1], [2]]
    code, out, _ = run("bayes-optimal", "--alpha", "1.5")
    assert code == 0 and "test_error" in out


@pytest.mark.parametrize(
    "args,needles",
    [
        (("--alpha", "0"), ("--alpha",)),
        (("--lam", "1"), ("No such option: --lam",)),
        (("--loss", "square"), ("No such option: --loss",)),
        (("--model", "block", "--fractions", "0.5,0.5", "--deltas", "1,2"), ("--model block",)),
        (("--model", "sparse", "--delta1", "1", "--delta2", "2"), ("--model sparse",)),
        (("--rho", "0.5,0.5", "--delta", "1,2,3"), ("--delta implies 3 clusters, but rho",)),
    ],
)
def test_bayes_optimal_bad_input_is_one_line(args, needles):
    assert_one_line_error(*run("bayes-optimal", *args), *needles)


def test_transition_simulate_writes_the_table_and_the_figure(tmp_path):
    args = ("--means", "gaussian", "-K", "2", "--d", "12,16", "--alphas", "2:6:3")
    payload = run_json(
        "transition", "--simulate", "--no-theory", *args, "--seeds", "4", "--out",
        str(tmp_path), "--quiet",
    )  # fmt: skip
    assert payload["alpha_star"] is None and payload["converged"] is None
    sim = payload["simulation"]
    table = pd.read_csv(sim["csv"])
    ref = separability_fraction(
        gm.Mixture.isotropic(0.5, "gaussian", n_clusters=2), [2.0, 4.0, 6.0], d=[12, 16],
        seeds=4, seed=0,
    )  # fmt: skip
    pd.testing.assert_frame_equal(table, ref, check_dtype=False)
    assert (tmp_path / "transition.png").stat().st_size > 1000
    assert [c["d"] for c in sim["crossings"]] == [12, 16]
    assert sim["seeds"] == 4 and sim["seed"] == 0


@pytest.mark.parametrize(
    "args,needles,status",
    [
        (("--d", "100"), ("--d is only valid with --simulate",), 2),
        (("--seeds", "3"), ("--seeds is only valid with --simulate",), 2),
        (("--no-theory",), ("--no-theory needs --simulate",), 2),
        (("--simulate", "--no-theory"), ("--no-theory needs --alphas",), 2),
        (("--simulate", "--no-theory", "--alphas", "1:2:3", "--d", "1.5"), ("--d must",), 2),
        (("--simulate", "--no-theory", "--alphas", "1:2:3", "--d", "2"), ("--d must be >=",), 2),
        (
            ("--simulate", "--no-theory", "--alphas", "1:2:3", "--seeds", "0"),
            ("--seeds",),
            2,
        ),
        (("--simulate", "--no-theory", "--alphas", "-1:2:3"), ("--alphas",), 2),
        (("--simulate", "--no-theory", "--alphas", "1:2:3", "--n-jobs", "0"), ("--n-jobs",), 2),
        (("--alpha", "2"), ("No such option: --alpha",), 2),
        (("--rel-tol", "0"), ("--rel-tol",), 2),
    ],
)
def test_transition_bad_input_is_one_line(args, needles, status):
    assert_one_line_error(*run("transition", *args), *needles, status=status)


def test_help_lists_the_new_commands():
    code, out, _ = run("--help")
    assert code == 0 and "bayes-optimal" in out and "transition" in out
