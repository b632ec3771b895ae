"""The real-data study (gaussmix.studies.realdata) and ``gaussmix realdata``, on
scikit-learn's digits (d = 64, always available offline): the protocol's three curves, their
reproducibility, and the real-data curve against an independent scikit-learn fit."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from _cli_helpers import assert_one_line_error, run
from sklearn.linear_model import LogisticRegression

import gaussmix as gm
from gaussmix.data import load_dataset, subsample_indices
from gaussmix.studies import SOURCES, prepare_realdata, real_curve, realdata_curve

LAM = 0.05


@pytest.fixture(scope="module")
def digits():
    return prepare_realdata("digits", "even-odd", clustering="p2")


def test_prepare_fits_the_p2_and_pk_mixtures(digits):
    mix = digits.mixture
    assert mix.n_clusters == 2 and mix.labels.is_binary and digits.d == 64
    ds = digits.dataset
    # fitted on the training split only (the default): its composition
    assert digits.fit_on == digits.info["fit_on"] == "train"
    assert mix.rho[0] == pytest.approx(np.sum(ds.y_train > 0) / ds.n_train)
    # the paper's protocol: both splits
    both = prepare_realdata(ds, clustering="p2", fit_on="all")
    n_pos = np.sum(np.concatenate([ds.y_train, ds.y_test]) > 0)
    assert both.fit_on == "all"
    assert both.mixture.rho[0] == pytest.approx(n_pos / (ds.n_train + ds.x_test.shape[0]))
    pk = prepare_realdata(ds, clustering="pk")
    assert pk.mixture.n_clusters == 10
    # digit c is labelled +1 iff it is even (the task's map, carried by the label map)
    assert np.array_equal(pk.labels.labels[:, 0], np.where(np.arange(10) % 2 == 0, 1.0, -1.0))


def test_real_curve_matches_an_independent_fit(digits):
    """One subsample refitted with scikit-learn's LogisticRegression (C = 1 / lam on
    x / sqrt(d), the library's documented mapping): the test error on the whole test split
    agrees up to points that sit on the decision boundary within the solvers' tolerances."""
    df = real_curve(digits, loss="logistic", lam=LAM, alphas=[2.0], subsamples=1, seed=3)
    idx = subsample_indices(digits.x_train.shape[0], digits.d, 2.0, seed=3)
    d = digits.d
    clf = LogisticRegression(C=1.0 / LAM, tol=1e-12, max_iter=100_000)
    clf.fit(digits.x_train[idx] / np.sqrt(d), digits.dataset.y_train[idx])
    err = np.mean(clf.predict(digits.x_test / np.sqrt(d)) != digits.dataset.y_test)
    assert df["n"].iloc[0] == round(2.0 * d) == idx.size
    assert abs(df["test_error"].iloc[0] - err) <= 2.0 / digits.x_test.shape[0]


def test_realdata_curve_table_and_reproducibility(digits):
    kw = dict(loss="logistic", lam=LAM, alphas=[1.0, 3.0], subsamples=3, seeds=3, seed=1)
    df = realdata_curve(digits, **kw)
    assert list(df["source"]) == list(SOURCES) * 2
    assert df["converged"].all()
    for col in ("test_error", "train_error", "train_loss"):
        assert df[col].between(0, 1.5).all()
    assert (df.loc[df.source != "theory", "test_error_se"] > 0).all()
    assert (df.loc[df.source == "theory", "test_error_se"] == 0).all()
    # more data, lower test error, for every source
    for _, part in df.groupby("source"):
        assert part.sort_values("alpha")["test_error"].is_monotonic_decreasing
    pd.testing.assert_frame_equal(df, realdata_curve(digits, **kw))
    # each row's result beside it, in the sorted order (theory, synthetic, real per alpha)
    assert isinstance(df, gm.CurveTable) and len(df.points) == len(df)
    for (_, row), r in zip(df.iterrows(), df.points, strict=True):
        if row["source"] == "theory":
            assert isinstance(r, gm.FixedPointResult) and r.test_error == row["test_error"]
            assert r.params["alpha"] == row["alpha"]
        elif row["source"] == "synthetic":
            assert isinstance(r, gm.SimulationResult) and r.params["alpha"] == row["alpha"]
            assert r.mean["test_error"] == row["test_error"]
        else:
            assert r is None


def test_bad_sources(digits):
    with pytest.raises(ValueError, match="sources"):
        realdata_curve(digits, lam=LAM, alphas=[1.0], sources=["theory", "nope"])
    with pytest.raises(ValueError, match="task is required"):
        prepare_realdata("digits")


def test_cli_realdata_writes_the_contract(tmp_path):
    code, out, err = run(
        "realdata", "--dataset", "digits", "--task", "even-odd", "--loss", "logistic",
        "--lam", "0.05", "--alphas", "1,2", "--subsamples", "2", "--seeds", "2",
        "--out", str(tmp_path), "--quiet",
    )  # fmt: skip
    assert code == 0, err
    df = pd.read_csv(tmp_path / "realdata.csv")
    for col in ("alpha", "source", "test_error", "test_error_se", "train_error", "train_loss"):
        assert col in df.columns
    assert sorted(zip(df.alpha, df.source)) == sorted(
        (a, s) for a in (1.0, 2.0) for s in ("theory", "synthetic", "real")
    )
    assert (tmp_path / "realdata.png").stat().st_size > 0
    meta = json.loads((tmp_path / "realdata.json").read_text())
    assert meta["dataset"] == "digits" and "standard error" in meta["caption"]


def test_cli_realdata_random_features(tmp_path):
    code, _, err = run(
        "realdata", "--dataset", "digits", "--task", "even-odd", "--lam", "0.05",
        "--alphas", "1", "--features", "rf", "--gamma", "0.5", "--sources", "theory,real",
        "--subsamples", "2", "--out", str(tmp_path), "--quiet",
    )  # fmt: skip
    assert code == 0, err
    df = pd.read_csv(tmp_path / "realdata.csv")
    assert set(df.source) == {"theory", "real"}
    assert (df["n"] == 32).all()  # d = p = 0.5 * 64 features
    assert json.loads((tmp_path / "realdata.json").read_text())["d"] == 32


@pytest.mark.parametrize(
    "args,needle",
    [
        (["--dataset", "cifar", "--task", "even-odd"], "--dataset must be one of"),
        (["--dataset", "digits", "--task", "clothes-accessories"], "applies to"),
        (["--dataset", "digits", "--task", "even-odd", "--features", "rf"], "--gamma"),
        (["--dataset", "digits", "--task", "even-odd", "--gamma", "2"], "--features rf"),
        (["--dataset", "digits", "--task", "even-odd", "--alphas", "1,x"], "--alphas"),
        (["--dataset", "digits", "--task", "even-odd", "--sources", "theory,x"], "--sources"),
    ],
)
def test_cli_realdata_bad_input(tmp_path, args, needle):
    code, out, err = run("realdata", *args, "--lam", "0.05", "--out", str(tmp_path / "o"))
    assert_one_line_error(code, out, err, needle)
    assert not (tmp_path / "o").exists()


def test_loaded_data_follow_the_protocol():
    ds = load_dataset("digits", "even-odd")
    assert np.allclose(ds.x_train.mean(axis=0), 0.0, atol=1e-12)


def test_lambda_curve_over_the_penalty(digits):
    from gaussmix.studies import realdata_lambda_curve

    df = realdata_lambda_curve(
        digits, lams=[1e-2, 1.0, 1e2], alpha=2.0, subsamples=2, seeds=2, sources=["theory", "real"]
    )
    assert list(df["source"]) == ["theory", "real"] * 3
    assert (df["alpha"] == 2.0).all() and sorted(set(df["lam"])) == [1e-2, 1.0, 1e2]
    # a very large penalty shrinks the weights: the training loss tends to log 2 (logistic
    # at h ~ b), larger than at small penalty
    th = df[df.source == "theory"].set_index("lam")
    assert th.loc[1e2, "train_loss"] > th.loc[1e-2, "train_loss"]
