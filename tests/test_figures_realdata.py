"""The real-data figures (Fig. 4 right, 5, 6, Appendix E) on scikit-learn's digits (fast,
offline), and the Appendix E comparison of four clusters with their matched two-cluster
mixtures (theory)."""

from __future__ import annotations

import numpy as np
import pytest

from gaussmix.figures.appendix_e import (
    p2_p10_table,
    plot_p2_p10,
    plot_trained_features,
    plot_xor,
    trained_features_table,
    xor_mixtures,
    xor_table,
)
from gaussmix.figures.realdata import (
    fig4_right_table,
    fig5_table,
    fig6_table,
    plot_fig4_right,
    plot_fig5,
    plot_fig6,
)


def _drawn(fig) -> None:
    fig.canvas.draw()
    assert fig.axes and all(ax.has_data() for ax in fig.axes)


def test_fig5_on_digits():
    df = fig5_table(["digits"], [1.0, 2.0], subsamples=2, seeds=2)
    assert set(df["source"]) == {"theory", "synthetic", "real"}
    assert (df["lam"] == 0.05).all() and (df["task"] == "even-odd").all()
    assert df["converged"].all()
    _drawn(plot_fig5(df))


def test_fig6_random_features_dimension():
    df = fig6_table("digits", gammas=[0.5, 1.0], alphas=[1.0], subsamples=2)
    assert sorted(set(df["p"])) == [32, 64]
    # alpha is n / p: the real subsample has round(alpha p) images
    real = df[df["source"] == "real"]
    assert np.array_equal(real["n"].to_numpy(), real["p"].to_numpy())
    _drawn(plot_fig6(df))


def test_fig4_right_large_penalty_predicts_the_majority_class():
    """lambda -> infinity: the weights vanish and the unpenalised bias predicts the larger
    class, so the theory's test error tends to the smaller class's prior."""
    df = fig4_right_table(["digits"], lams=[0.01, 1.0, 1e3], alpha=1.0, subsamples=2)
    th = df[df["source"] == "theory"].set_index("lam")
    from gaussmix.studies import prepare_realdata

    rho = prepare_realdata("digits", "even-odd", fit_on="all").mixture.rho  # (the figure's)
    assert th.loc[1e3, "test_error"] == pytest.approx(rho.min(), abs=1e-3)
    assert th.loc[0.01, "test_error"] < th.loc[1.0, "test_error"] < th.loc[1e3, "test_error"]
    _drawn(plot_fig4_right(df))


def test_trained_features_change_with_training():
    df = trained_features_table("digits", epochs=[1, 5], alphas=[1.0], hidden=64, subsamples=2)
    th = df[df["source"] == "theory"].set_index("epoch")
    assert th["converged"].all()
    # more training, features that separate the task better
    assert th.loc[5, "test_error"] < th.loc[1, "test_error"]
    _drawn(plot_trained_features(df))


def test_p2_and_p10_on_digits():
    df = p2_p10_table("digits", alphas=[1.0], subsamples=2, seeds=2)
    assert set(df["mixture"]) == {"P2", "P10", "data"}
    assert df[df["source"] == "theory"]["converged"].all()
    _drawn(plot_p2_p10(df))


def test_xor_matched_mixtures_agree_with_their_four_cluster_mixtures():
    """Four isotropic clusters +-e1 +-e2 against the two-cluster mixtures with the same class
    means and covariances.  The matched mixture is exact at dimension d; its difference from
    the four-cluster limit is O(1/d) (a spike of weight 1/d), so it shrinks four-fold from
    d = 1000 to 4000.  For the XOR labels the two also coincide: by the symmetry x -> -x of
    the XOR mixture (clusters 1 <-> 4, 2 <-> 3, labels kept) the overlaps with the means
    vanish, every cluster's local field is the same Gaussian, and so is the matched one."""
    alphas = [0.5, 2.0]
    for model in ("realisable", "xor"):
        gaps = []
        for d in (1000, 4000):
            df = xor_table(alphas, lam=1e-2, d=d)
            part = df[df["model"] == model]
            k4 = part[part["mixture"] == "K = 4"]["test_error"].to_numpy()
            k2 = part[part["mixture"] == "matched K = 2"]["test_error"].to_numpy()
            gaps.append(np.max(np.abs(k4 - k2)))
        if model == "realisable":
            assert 3.0 < gaps[0] / gaps[1] < 5.0, gaps
        assert gaps[1] < 1e-4, gaps
    xor = xor_table(alphas, lam=1e-2)
    assert np.allclose(xor[xor["model"] == "xor"]["test_error"], 0.5, atol=1e-12)
    _drawn(plot_xor(xor))


def test_xor_mixtures_bad_input():
    with pytest.raises(ValueError, match="model must be one of"):
        xor_mixtures("parity")
    k4, k2 = xor_mixtures("xor", 0.5, 10)
    assert k4.n_clusters == 4 and k2.n_clusters == 2


def test_cli_real_data_figures(tmp_path):
    import json

    import pandas as pd
    from _cli_helpers import assert_one_line_error, run

    code, _, err = run(
        "figure", "fig5", "--datasets", "digits", "--alphas", "1,2", "--subsamples", "2",
        "--seeds", "2", "--out", str(tmp_path), "--quiet",
    )  # fmt: skip
    assert code == 0, err
    df = pd.read_csv(tmp_path / "fig5.csv")
    assert set(df["source"]) == {"theory", "synthetic", "real"} and set(df["alpha"]) == {1, 2}
    meta = json.loads((tmp_path / "fig5.json").read_text())
    assert meta["paper"] == "Fig. 5" and "standard error" in meta["caption"]
    code, _, err = run("figure", "appe-xor", "--alphas", "0.5,2", "--out", str(tmp_path))
    assert code == 0, err
    assert (tmp_path / "appe-xor.png").stat().st_size > 0
    assert_one_line_error(
        *run("figure", "fig5", "--n-clusters", "2", "--out", str(tmp_path)),
        "--n-clusters is not an option",
    )
    assert_one_line_error(
        *run("figure", "fig5", "--datasets", "cifar", "--out", str(tmp_path / "x")), "datasets"
    )


class _Work(Exception):
    """Raised by the stand-ins of the data and the computations: a table got past its
    arguments."""


_TABLES = {
    "fig5": "fig5_table",
    "fig6": "fig6_table",
    "ten-class": "tenclass_table",
    "fig4-right": "fig4_right_table",
    "appe-trained": "trained_features_table",
    "appe-p2-p10": "p2_p10_table",
    "appe-xor": "xor_table",
}
_BAD = [
    ("fig5", {"datasets": []}),
    ("fig5", {"alphas": [-1.0]}),
    ("fig5", {"seed": -1}),
    ("fig5", {"sources": ["nope"]}),
    ("fig6", {"gammas": [0.0]}),
    ("fig6", {"seeds": 0}),
    ("ten-class", {"datasets": ["digits"], "pool": 4}),
    ("ten-class", {"datasets": ["digits"], "pool": 0}),
    ("ten-class", {"lam": 0.0}),
    ("fig4-right", {"lams": [-1.0]}),
    ("fig4-right", {"seed": 1.5}),
    ("appe-trained", {"epochs": []}),
    ("appe-trained", {"epochs": [0]}),
    ("appe-trained", {"hidden": 0}),
    ("appe-p2-p10", {"dataset": "fashion-mnist"}),
    ("appe-p2-p10", {"lam": -1.0, "subsamples": 0}),
    ("appe-xor", {"delta": 0.0}),
    ("appe-xor", {"d": 2}),
]


@pytest.mark.parametrize(("name", "kw"), _BAD)
def test_each_check_is_its_tables_arguments_step(name, kw, monkeypatch):
    """A figure's check (run before any work by ``gaussmix figure``) refuses what its table
    refuses, with the same error: the data and the computations are replaced by stand-ins
    that raise, so the table's refusal comes from its arguments alone."""
    import gaussmix.figures.appendix_e as appendix_e
    import gaussmix.figures.realdata as realdata
    from gaussmix.figures import validate_figure

    def work(*args, **kwargs):
        raise _Work

    modules = (realdata, appendix_e)
    for stage in ("load_dataset", "_pixels_problem", "prepare_realdata", "realdata_curve",
                  "realdata_lambda_curve", "learning_curve", "NetworkFeatures"):  # fmt: skip
        for module in modules:
            if hasattr(module, stage):
                monkeypatch.setattr(module, stage, work)
    with pytest.raises((ValueError, TypeError)) as checked:
        validate_figure(name, **kw)
    table = next(getattr(m, _TABLES[name]) for m in modules if hasattr(m, _TABLES[name]))
    with pytest.raises((ValueError, TypeError)) as tabled:
        table(**kw)
    assert (type(tabled.value), str(tabled.value)) == (type(checked.value), str(checked.value))


def test_cli_refuses_a_ten_class_pool_for_digits_before_any_work(tmp_path):
    from _cli_helpers import assert_one_line_error, run

    out = tmp_path / "out"
    code, stdout, err = run("figure", "ten-class", "--datasets", "digits", "--pool", "4",
                            "--out", str(out), "--quiet")  # fmt: skip
    assert_one_line_error(code, stdout, err, "pool must be 1 for digits (8 x 8 images)")
    assert not out.exists()


def test_the_ten_class_subsamples_have_every_class(monkeypatch) -> None:
    """At the figure's n = alpha d = 49 (4 x 4 pooling, alpha = 1) a random subsample misses
    one of ten classes about one time in twenty (a fit with nothing to learn of it): the
    figure draws fixed class counts, which the theory's training priors follow."""
    import pandas as pd

    import gaussmix.figures.realdata as fr
    from gaussmix.simulate import largest_remainder

    seen: list[dict] = []

    def fake_curve(problem, **kw):
        seen.append(kw)
        return pd.DataFrame({"alpha": list(kw["alphas"])})

    monkeypatch.setattr(fr, "realdata_curve", fake_curve)
    monkeypatch.setattr(fr, "prepare_realdata", lambda ds, **kw: type("P", (), {"d": 49})())
    monkeypatch.setattr(fr, "load_dataset", lambda name, task: None)
    fr.tenclass_table(datasets=("digits",), pool=1, alphas=(1.0,))
    assert seen and all(kw["counts"] == "fixed" for kw in seen)
    # and fixed counts at n = 49 over ten near-equal priors give every class a sample
    assert largest_remainder(np.full(10, 0.1), 49).min() >= 4
