"""``gaussmix transition`` with the alpha* theory (gaussmix.experiments.transition, written in
another branch): these tests run once that module is merged."""

from __future__ import annotations

import numpy as np
import pandas as pd
from _cli_helpers import run, run_json

import gaussmix as gm

MIX = ("--means", "gaussian", "-K", "3", "--delta", "0.5")
# Two clusters: alpha* by the binary closed form (a fraction of a second instead of ~7 s of
# CPU for K = 3).  The tests below check the command's output, not the value of alpha*
# (the K = 3 value is checked against the library above), so they use the cheap mixture.
MIX2 = ("--means", "gaussian", "-K", "2", "--delta", "0.5")


def test_transition_json_is_the_library_threshold():
    from gaussmix.experiments.transition import separability_threshold

    payload = run_json("transition", *MIX, "--quiet")
    ref = separability_threshold(
        gm.Mixture.isotropic(0.5, "gaussian", n_clusters=3), rel_tol=1e-4, progress=False
    )
    assert payload["converged"] is True and ref.success
    assert payload["alpha_star"] == float(ref.alpha_star)
    assert payload["params"]["means"] == "gaussian" and payload["params"]["n_clusters"] == 3


def test_transition_simulate_centres_the_alphas_on_alpha_star(tmp_path):
    payload = run_json(
        "transition", *MIX2, "--simulate", "--d", "12", "--seeds", "2", "--out",
        str(tmp_path), "--quiet",
    )  # fmt: skip
    star = payload["alpha_star"]
    table = pd.read_csv(tmp_path / "transition.csv")
    np.testing.assert_allclose(table["alpha"], np.linspace(0.7 * star, 1.3 * star, 9))
    assert (tmp_path / "transition.png").stat().st_size > 1000


def test_transition_prints_alpha_star():
    code, out, err = run("transition", *MIX2, "--quiet")
    assert code == 0, err
    assert out.startswith("alpha* = 3.70003 ")  # the binary closed form (test_figures_transition)
