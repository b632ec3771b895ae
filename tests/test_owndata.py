"""Your own data (``gaussmix data``, :func:`gaussmix.study_data`): files and arrays in,
the protocol's steps (split, centring, scaling, label encoding, clusters), the three
curves agreeing on data that are a Gaussian mixture, the gap columns, the target error,
lambda*, scikit-learn's digits and breast-cancer sets, and every bad input said in one
line (exit 2, nothing written)."""

from __future__ import annotations

import hashlib
import json
import math
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _cli_helpers import assert_one_line_error, run

import gaussmix as gm
from gaussmix.core.exceptions import ArgumentError, SingularCovarianceWarning
from gaussmix.data.files import (
    DataFileError,
    check_memory,
    load_labelled,
    preprocess,
    split_indices,
)
from gaussmix.studies import prepare_data, target_alpha

D = 50


def gaussian_classes(k: int, n_per: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``k`` Gaussian classes at d = 50: means of norm about 1 (``N(0, 0.15^2 I)`` for two
    opposite classes, ``N(0, 0.2^2 I)`` each for three), covariances ``(1 + 0.3 c)^2 I``."""
    rng = np.random.default_rng(seed)
    if k == 2:
        mu = 0.15 * rng.standard_normal(D)
        means = np.stack([mu, -mu])
    else:
        means = 0.2 * rng.standard_normal((k, D))
    X = np.concatenate(
        [means[c] + (1 + 0.3 * c) * rng.standard_normal((n_per, D)) for c in range(k)]
    )
    return X, np.repeat(np.arange(k), n_per)


# ------------------------------------------------------------------ the three curves agree


@pytest.mark.parametrize(
    ("k", "loss"), [(2, "logistic"), (2, "hinge"), (3, "cross-entropy"), (3, "square")]
)
def test_theory_synthetic_and_real_agree_on_gaussian_classes(k, loss):
    """Data that are a Gaussian mixture: the fitted mixture is the truth up to O(1/sqrt(n))
    (8 000 samples per class), so the real curve, the samples of the fitted mixture and
    the theory agree within their error bars: a subsample's standard error over 16 draws,
    plus for the real curve the binomial error of its finite test split (the same rows
    for every draw)."""
    X, y = gaussian_classes(k, 8000)
    study = gm.study_data(
        X, y, loss=loss, lam=1.0, alphas=[2.0, 4.0], seeds=16, subsamples=16, test_fraction=0.5
    )
    df = study.table
    n_test = study.info["n_test"]
    assert n_test == k * 4000 and study.info["counts"] == "fixed"
    for alpha in (2.0, 4.0):
        at = df[df["alpha"] == alpha].set_index("source")
        theory, syn, real = (at.loc[s] for s in ("theory", "synthetic", "real"))
        assert theory["converged"] and syn["converged"] and real["converged"]
        split_noise = math.sqrt(real["test_error"] * (1 - real["test_error"]) / n_test)
        real_se = math.hypot(real["test_error_se"], split_noise)
        assert real["test_error_gap_se"] == pytest.approx(real_se, rel=1e-12)
        assert abs(real["test_error_gap"]) <= 3 * real_se, (alpha, real)
        assert abs(syn["test_error_gap"]) <= 3 * syn["test_error_se"], (alpha, syn)
        both = math.hypot(real_se, syn["test_error_se"])
        assert abs(real["test_error"] - syn["test_error"]) <= 3 * both
        # the gap columns are the differences they say
        assert real["test_error_gap"] == pytest.approx(real["test_error"] - theory["test_error"])
        assert syn["test_error_gap_se"] == syn["test_error_se"]
        assert np.isnan(theory["test_error_gap"])


# ------------------------------------------------------------------ reading files


def _files(tmp_path, X, y):
    cols = [f"f{i}" for i in range(X.shape[1])]
    table = pd.DataFrame(X, columns=cols).assign(label=y)
    paths = {
        "npz": tmp_path / "d.npz",
        "csv": tmp_path / "d.csv",
        "parquet": tmp_path / "d.parquet",
        "npy": tmp_path / "X.npy",
    }
    np.savez(paths["npz"], X=X, y=y)
    table.to_csv(paths["csv"], index=False)
    table.to_parquet(paths["parquet"])
    np.save(paths["npy"], X)
    np.save(tmp_path / "y.npy", y)
    return paths


def test_every_format_reads_the_same_data_with_its_checksum(tmp_path):
    pytest.importorskip("pyarrow")
    X, y = gaussian_classes(2, 20)
    paths = _files(tmp_path, X, y)
    read = {
        "npz": load_labelled(paths["npz"]),
        "csv": load_labelled(paths["csv"], label="label"),
        "parquet": load_labelled(paths["parquet"], label="label"),
        "npy": load_labelled(paths["npy"], tmp_path / "y.npy"),
    }
    for fmt, data in read.items():
        np.testing.assert_allclose(data.X, X, rtol=1e-15, atol=0, err_msg=fmt)
        np.testing.assert_array_equal(data.y, y, err_msg=fmt)
        first = data.info["files"][0]
        assert first["sha256"] == hashlib.sha256(open(first["path"], "rb").read()).hexdigest()
        assert data.info["format"] == fmt
    assert read["csv"].columns == [f"f{i}" for i in range(D)]
    assert len(read["npy"].info["files"]) == 2


# ------------------------------------------------------------------ the protocol's steps


def test_preprocessing_is_fitted_on_the_training_split():
    rng = np.random.default_rng(3)
    a = rng.normal(2.0, 3.0, (40, 4))
    a[:, 2] = 7.0  # a constant feature
    b = rng.normal(2.0, 3.0, (10, 4))
    for scale in ("none", "standard", "max"):
        ta, tb, rec = preprocess(a, b, scale)
        np.testing.assert_allclose(ta.mean(axis=0), 0.0, atol=1e-12)
        shift = tb - (b - a.mean(axis=0))
        if scale == "none":
            np.testing.assert_array_equal(shift, 0.0)
        if scale == "standard":
            np.testing.assert_allclose(ta.std(axis=0)[[0, 1, 3]], 1.0)
            np.testing.assert_array_equal(ta[:, 2], 0.0)
            np.testing.assert_allclose(tb[:, 0], (b[:, 0] - a[:, 0].mean()) / a[:, 0].std())
            assert rec["constant_features"] == 1
        if scale == "max":
            assert np.abs(ta).max() == pytest.approx(1.0)
            np.testing.assert_allclose(tb * rec["divided_by"], b - a.mean(axis=0))
        assert rec["scale"] == scale and "training mean" in rec["centring"]


def test_the_split_is_stratified_and_reproducible():
    y = np.repeat(["a", "b", "c"], [10, 31, 200])
    train, test = split_indices(y, 0.25, seed=5)
    assert np.intersect1d(train, test).size == 0 and train.size + test.size == y.size
    assert [int(np.sum(y[test] == c)) for c in "abc"] == [2, 8, 50]  # round(0.25 n_c)
    again = split_indices(y, 0.25, seed=5)
    np.testing.assert_array_equal(test, again[1])
    assert not np.array_equal(test, split_indices(y, 0.25, seed=6)[1])


def test_a_given_split_is_kept():
    X, y = gaussian_classes(2, 60)
    split = np.where(np.arange(120) % 4 == 0, "test", "train")
    p = prepare_data(X, y, split=split)
    assert p.info["split"] == "given" and p.info["n_test"] == 30
    np.testing.assert_allclose(p.x_test + p.dataset.mean, X[split == "test"])


def test_label_encoding_follows_the_loss():
    X, y = gaussian_classes(3, 80)
    two = (X[y < 2], np.where(y[y < 2] == 0, "no", "yes"))
    p = prepare_data(*two, loss="logistic")
    assert p.labels.is_binary and p.info["label_map"] == {"no": -1, "yes": 1}
    yes = p.dataset.class_names.index("yes")  # one cluster per class, in sorted order
    assert p.labels.labels[yes, 0] == 1.0 and p.labels.labels[1 - yes, 0] == -1.0
    assert prepare_data(*two, loss="square").labels.is_binary
    assert prepare_data(*two, loss="cross-entropy").labels.is_onehot
    three = prepare_data(X, y, loss="square")
    assert three.labels.is_onehot and three.labels.dim == 3
    with pytest.raises(ArgumentError, match="needs two classes; the data have 3"):
        prepare_data(X, y, loss="hinge")


def test_clusters_with_their_classes_label_map():
    X, y = gaussian_classes(3, 60)
    cls = np.where(y == 0, "a", "b")  # two classes, the second one made of two clusters
    p = prepare_data(X, cls, cluster_ids=y, loss="logistic")
    assert p.mixture.n_clusters == 3 and p.labels.dim == 1
    np.testing.assert_array_equal(p.labels.labels[:, 0], [-1.0, 1.0, 1.0])
    assert p.info["clustering"] == "per given cluster id"
    assert p.info["cluster_counts"] == [60, 60, 60]
    with pytest.raises(DataFileError, match="several classes"):
        prepare_data(X, cls, cluster_ids=np.arange(180) % 2)


def test_a_singular_covariance_is_said_once_with_the_count():
    X, y = gaussian_classes(2, 40)  # 40 samples per class at d = 50
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        p = prepare_data(X, y)
    said = [w for w in caught if issubclass(w.category, SingularCovarianceWarning)]
    assert len(said) == 1, [str(w.message) for w in caught]
    text = str(said[0].message)
    # (fitted on the training split: 30 of each class's 40 rows, test_fraction 0.25)
    assert "0: 30" in text and "1: 30" in text and "d = 50" in text
    assert "theory describes the fitted Gaussian mixture" in text
    assert p.info["singular_clusters"] == [
        {"cluster": 0, "count": 30},
        {"cluster": 1, "count": 30},
    ]
    eig = np.linalg.eigvalsh(p.mixture.covariance.covariances[0])
    assert eig[0] < 1e-10 * eig[-1]  # rank <= 29 < 50: singular indeed


def test_memory_estimate_and_refusal():
    need = check_memory(1000, 100, 3, 1, limit=10**9)
    assert need == 8 * (2 * 1000 * 100 + 3 * 100**2 + 3 * 100**2)
    with pytest.raises(DataFileError, match=r"too large for memory: 70000 x 3072 .* GiB"):
        check_memory(70000, 3072, 10, 10, limit=8 * 2**30)


# ------------------------------------------------------------------ target error, lambda*


@pytest.fixture(scope="module")
def two_classes():
    X, y = gaussian_classes(2, 3000, seed=1)
    return prepare_data(X, y)


def test_target_alpha_is_the_crossing(two_classes):
    mix = two_classes.mixture
    t = target_alpha(mix, "logistic", lam=0.1, target_error=0.25, d=D)
    assert not t["below_grid"] and t["n"] == math.ceil(t["alpha"] * D)
    at = gm.solve(mix, "logistic", lam=0.1, alpha=t["alpha"])
    before = gm.solve(mix, "logistic", lam=0.1, alpha=t["alpha"] * math.exp(-2e-2))
    assert at.test_error <= 0.25 < before.test_error
    assert t["test_error"] == pytest.approx(at.test_error, abs=1e-9)
    with pytest.raises(ArgumentError, match=r"never reached .* best test error is 0\.\d+"):
        target_alpha(mix, "logistic", lam=0.1, target_error=0.01, d=D, alpha_max=20)


def test_target_alpha_at_the_optimal_lambda():
    """'How many samples, and which lambda?': at lambda*(alpha) the target is reached no
    later than at a fixed lambda, and the crossing is one (the error there at lambda* is
    below the target, 2 % of alpha before it above).  Any mixture: here two isotropic
    clusters of different variances, whose lambda* is finite."""
    mix = gm.Mixture.isotropic([0.3, 1.0], "antipodal", n_clusters=2, labels="binary")
    t = target_alpha(mix, "logistic", lam=None, target_error=0.2, d=100)
    fixed = target_alpha(mix, "logistic", lam=0.01, target_error=0.2, d=100)
    assert t["optimal_lam"] and not fixed["optimal_lam"]
    assert t["alpha"] < fixed["alpha"] and t["n"] == math.ceil(t["alpha"] * 100)
    at = gm.optimal_lambda(mix, "logistic", alpha=t["alpha"])
    before = gm.optimal_lambda(mix, "logistic", alpha=t["alpha"] * math.exp(-2e-2))
    assert at.test_error <= 0.2 < before.test_error
    assert 0 < t["lam"] < np.inf and t["lam"] == pytest.approx(at.lam_star, rel=1e-2)


@pytest.mark.slow
def test_optimal_lambda_rows_are_no_worse_than_the_given_lambda(two_classes):
    X = np.concatenate([two_classes.x_train, two_classes.x_test])
    y = np.concatenate([two_classes.cluster_train, two_classes.cluster_test])
    study = gm.study_data(X, y, lam=1.0, alphas=[2.0], sources=["theory"], optimal_lam=True)
    df = study.table
    for alpha in (2.0,):
        at = df[df["alpha"] == alpha].set_index("source")
        assert at.loc["optimal", "test_error"] <= at.loc["theory", "test_error"] + 1e-9
        assert at.loc["optimal", "lam"] != 1.0


def test_a_curve_over_lambda(two_classes):
    X = np.concatenate([two_classes.x_train, two_classes.x_test])
    y = np.concatenate([two_classes.cluster_train, two_classes.cluster_test])
    study = gm.study_data(X, y, lam=[0.01, 0.1, 1.0], alphas=2.0, seeds=2, subsamples=2)
    df = study.table
    assert sorted(df["lam"].unique()) == [0.01, 0.1, 1.0] and set(df["alpha"]) == {2.0}
    assert set(df["source"]) == {"theory", "synthetic", "real"}


# ------------------------------------------------------------------ scikit-learn's data sets


def test_breast_cancer_from_a_csv_file_through_the_command_line(tmp_path):
    from sklearn.datasets import load_breast_cancer

    bc = load_breast_cancer(as_frame=True)
    table = bc.frame.assign(target=np.where(bc.frame["target"] == 1, "benign", "malignant"))
    path = tmp_path / "breast_cancer.csv"
    table.to_csv(path, index=False)
    out = tmp_path / "out"
    code, stdout, err = run(
        "data", str(path), "--label", "target", "--scale", "standard", "--lam", "1",
        "--alphas", "1,3", "--seeds", "3", "--subsamples", "3", "--target-error", "0.08",
        "--quiet", "--out", str(out),
    )  # fmt: skip
    assert code == 0, err
    assert "reached by the theory at alpha" in stdout
    df = pd.read_csv(out / "data.csv")
    meta = json.loads((out / "data.json").read_text())
    assert (out / "data.png").stat().st_size > 10_000
    assert meta["d"] == 30 and meta["n_samples"] == 569
    assert meta["class_counts"] == {"benign": 357, "malignant": 212}
    assert meta["data"]["files"][0]["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert meta["preprocessing"]["scale"] == "standard"
    assert meta["target"]["n"] == math.ceil(meta["target"]["alpha"] * 30)
    real = df[df["source"] == "real"]
    assert np.all(np.isfinite(real["test_error_gap"])) and np.all(real["test_error"] < 0.5)
    assert df[df["source"] == "theory"]["converged"].all()


def test_digits_three_classes_with_cross_entropy(tmp_path):
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    keep = y < 3
    np.savez(tmp_path / "digits3.npz", X=X[keep], y=y[keep])
    data = load_labelled(tmp_path / "digits3.npz")
    study = gm.study_data(
        data, loss="cross-entropy", lam=1.0, alphas=[1.0, 2.0], scale="max", seeds=2, subsamples=3
    )
    df = study.table
    assert study.problem.labels.is_onehot and study.problem.mixture.n_clusters == 3
    assert study.info["classes"] == [0, 1, 2] and study.info["d"] == 64
    assert study.info["preprocessing"]["divided_by"] > 0
    assert df[df["source"] == "theory"]["converged"].all()
    assert np.all(np.isfinite(df[df["source"] == "real"]["test_error_gap"]))


# ------------------------------------------------------------------ bad input: one line


def _bad_files(tmp_path):
    X, y = gaussian_classes(2, 10)
    cols = [f"f{i}" for i in range(D)]
    table = pd.DataFrame(X, columns=cols).assign(label=y)
    files = {}

    def csv(name, df):
        files[name] = tmp_path / f"{name}.csv"
        df.to_csv(files[name], index=False)

    csv("good", table)
    X2, y2 = gaussian_classes(2, 200)
    csv("big", pd.DataFrame(X2, columns=cols).assign(label=y2))
    csv("header_only", table.iloc[:0])
    nan = table.copy()
    nan.loc[3, "f7"] = np.nan
    csv("nan", nan)
    inf = table.copy()
    inf.loc[5, "f1"] = np.inf
    csv("inf", inf)
    csv("single", table.assign(label=0))
    one = table.copy()
    one.loc[0, "label"] = 9
    csv("one_sample", one)
    csv("text", table.assign(f3="abc"))
    files["empty"] = tmp_path / "empty.csv"
    files["empty"].write_bytes(b"")
    files["garbage"] = tmp_path / "garbage.npz"
    files["garbage"].write_bytes(b"not a zip file at all")
    files["txt"] = tmp_path / "data.txt"
    files["txt"].write_text("1 2 3\n")
    np.save(tmp_path / "X.npy", X)
    np.save(tmp_path / "y_short.npy", y[:-3])
    files["parquet"] = tmp_path / "d.parquet"
    files["parquet"].write_bytes(b"PAR1")
    files["no_x"] = tmp_path / "no_x.npz"
    np.savez(files["no_x"], features=X, y=y)
    files["xy"] = tmp_path / "xy.npz"
    np.savez(files["xy"], X=X, y=y)
    three = table.assign(label=np.arange(20) % 3)
    csv("three", three)
    csv("constant", table.assign(**{c: 1.5 for c in cols}))
    huge = table.copy()
    huge["f4"] = 1e300 * np.sign(huge["f4"])
    csv("huge", huge)
    files["text_npz"] = tmp_path / "text.npz"
    files["text_npz"].write_text("f0,f1,label\n1,2,0\n3,4,1\n")
    return files


BAD = [
    (["{missing}"], "does not exist"),
    (["{empty}", "--label", "label"], "is empty"),
    (["{garbage}"], "garbage.npz': not a readable .npz file"),
    (["{text_npz}"], "text.npz': not a readable .npz file (neither a zip of plain arrays, "
                     "as numpy.savez writes, nor an .npy array)"),
    (["{constant}", "--label", "label"], "every feature of 'constant.csv' is constant"),
    (["{huge}", "--label", "label"], "column 'f4' of 'huge.csv' holds values up to 1e+300"),
    (["{huge}", "--label", "label", "--scale", "standard"], "covariance overflows float64"),
    (["{txt}"], "unknown format '.txt'"),
    (["{header_only}", "--label", "label"], "has no rows"),
    (["{good}"], "needs --label"),
    (["{good}", "--label", "lable"], "did you mean 'label'?"),
    (["{good}", "--label", "zzz"], "label column 'zzz' is not in"),
    (["{nan}", "--label", "label"], "features must be finite: 1 NaN value"),
    (["{inf}", "--label", "label"], "1 infinite value in the data of 'inf.csv', the first at row"
     " 5, column 'f1'"),
    (["{single}", "--label", "label"], "single class (0)"),
    (["{one_sample}", "--label", "label"], "class 9 has 1 sample"),
    (["{text}", "--label", "label"], "column 'f3'"),
    (["{X}", "{y_short}"], "labels of mismatched length: 17 labels for 20 rows"),
    (["{no_x}"], "array 'X' is not in"),
    (["{xy}", "--label", "yy"], "label array 'yy' is not in"),
    (["{three}", "--label", "label", "--loss", "logistic"], "--loss 'logistic' needs two"),
    (["{good}", "--label", "label", "--alphas", "1,2"], "--alphas asks for n = round(alpha d)"),
    (["{good}", "--label", "label", "--sources", "theory,x"], "--sources must be a non-empty"),
    (["{big}", "--label", "label", "--target-error", "0.001", "--alpha-max", "2"],
     "--target-error 0.001 is never reached by the theory"),
    (["{good}", "--label", "label", "--max-memory", "1e-6"], "too large for memory"),
    (["{good}", "--label", "label", "--lam", "0.1,1", "--alphas", "1,2"], "--lam takes several"),
    (["{good}", "--label", "label", "--scale", "unit"], "scale must be one of"),
    (["{good}", "--label", "label", "--counts", "some"], "counts must be one of"),
]  # fmt: skip


@pytest.mark.parametrize(("args", "needle"), BAD, ids=[n for _, n in BAD])
def test_bad_input_is_one_line_and_writes_nothing(tmp_path, args, needle):
    files = _bad_files(tmp_path)
    files["missing"] = tmp_path / "nope.npz"
    files["X"], files["y_short"] = tmp_path / "X.npy", tmp_path / "y_short.npy"
    argv = [a.format(**{k: str(v) for k, v in files.items()}) for a in args]
    out = tmp_path / "out"
    code, stdout, err = run(
        "data", *argv, "--alphas" if "--alphas" not in argv else "--seed",
        "0.2" if "--alphas" not in argv else "0", "--seeds", "2", "--subsamples", "2",
        "--quiet", "--out", str(out),
    )  # fmt: skip
    assert_one_line_error(code, stdout, err, needle)
    assert not out.exists()


def test_the_bound_on_magnitudes_is_where_the_covariance_overflows():
    """:func:`largest_magnitude` is where float64 gives out: features of that size (signs
    alternating, so centred values are as large) have a finite trace of their covariance
    (n products per entry, d entries), four times as large overflow it; the refusal names
    every column beyond it and the file."""
    from gaussmix.data.files import LabelledData, check_labelled, largest_magnitude

    n, d = 40, 6
    m = largest_magnitude(n, d)
    X = np.where(np.arange(n)[:, None] % 2 == 0, m, -m) * np.ones((n, d))
    with np.errstate(over="ignore"):
        assert np.isfinite(np.trace(np.cov(X.T, bias=True) * n))
        assert not np.isfinite(np.trace(np.cov((4 * X).T, bias=True) * n))
    y = np.arange(n) % 2
    X[:, :2] *= 1.01
    X[:, 5] = 0.0
    data = LabelledData(X, y, info={"files": [{"path": "/x/mine.npz", "sha256": ""}]})
    with pytest.raises(DataFileError, match=r"columns 0, 1 of 'mine.npz' hold values up to"):
        check_labelled(data)
    X[:, :2] /= 1.01
    assert check_labelled(data).info["constant_features"] == [5]


def test_some_constant_features_are_kept_and_recorded(tmp_path):
    """Constant features (the border pixels of images) are a covariance with zero
    eigenvalues, which the theory handles: the study runs and data.json names them."""
    X, y = gaussian_classes(2, 60)
    X[:, [3, 7]] = 2.0
    cols = [f"f{i}" for i in range(D)]
    path = tmp_path / "c.csv"
    pd.DataFrame(X, columns=cols).assign(label=y).to_csv(path, index=False)
    out = tmp_path / "out"
    code, _, err = run("data", str(path), "--label", "label", "--alphas", "0.5", "--sources",
                       "theory", "--quiet", "--out", str(out))  # fmt: skip
    assert code == 0, err
    meta = json.loads((out / "data.json").read_text())
    assert meta["data"]["constant_features"] == ["f3", "f7"]


def test_parquet_without_pyarrow_names_the_extra(tmp_path, monkeypatch):
    files = _bad_files(tmp_path)
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow -> ImportError
    out = tmp_path / "out"
    code, stdout, err = run("data", str(files["parquet"]), "--label", "y", "--out", str(out))
    assert_one_line_error(code, stdout, err, "pip install 'gaussmix[parquet]'")
    assert not out.exists()


def test_arrays_of_mismatched_length_and_non_numbers_in_python():
    X, y = gaussian_classes(2, 10)
    with pytest.raises(DataFileError, match="mismatched length"):
        prepare_data(X, y[:-1])
    with pytest.raises(DataFileError, match="real numbers"):
        prepare_data(X.astype(str), y)
    with pytest.raises(DataFileError, match="real numbers"):
        prepare_data(X > 0, y)


def test_a_npy_too_large_is_refused_from_its_header(tmp_path, monkeypatch):
    import gaussmix.data.files as files

    X, y = gaussian_classes(2, 10)
    np.save(tmp_path / "X.npy", X)
    np.save(tmp_path / "y.npy", y)
    monkeypatch.setattr(files, "available_memory", lambda: 4096)
    with pytest.raises(DataFileError, match=r"too large for memory: 20 x 50 .* available"):
        load_labelled(tmp_path / "X.npy", tmp_path / "y.npy")


def test_the_command_line_says_a_singular_covariance_once(tmp_path):
    files = _bad_files(tmp_path)  # 'good': 10 samples per class at d = 50
    out = tmp_path / "out"
    code, stdout, err = run(
        "data", str(files["good"]), "--label", "label", "--alphas", "0.1,0.2", "--seeds", "2",
        "--subsamples", "2", "--quiet", "--out", str(out),
    )  # fmt: skip
    assert code == 0, err
    said = [line for line in err.splitlines() if "SingularCovarianceWarning" in line]
    assert len(said) == 1, err
    # (fitted on the training split: 8 of each class's 10 rows, test_fraction 0.25)
    assert "(0: 8, 1: 8)" in said[0] and "theory describes the fitted Gaussian" in said[0]
    meta = json.loads((out / "data.json").read_text())
    assert meta["singular_clusters"] == [{"cluster": 0, "count": 8}, {"cluster": 1, "count": 8}]
    assert meta["fit_on"] == "train"


def test_rows_that_did_not_converge_are_written_marked_and_exit_3(tmp_path, monkeypatch):
    import gaussmix.studies as studies

    real = studies.study_data

    def one_row_fails(*args, **kw):
        study = real(*args, **kw)
        study.table.loc[0, "converged"] = False
        return study

    monkeypatch.setattr(studies, "study_data", one_row_fails)
    out = tmp_path / "out"
    own = Path(__file__).parent / "fixtures" / "owndata_small.csv"
    code, _, err = run("data", str(own), "--label", "label", "--alphas", "0.5", "--seeds", "1",
                       "--subsamples", "1", "--quiet", "--out", str(out))  # fmt: skip
    assert code == 3, err
    assert err.splitlines()[-1].startswith("gaussmix: error: 1 of 3 rows did not converge")
    assert not pd.read_csv(out / "data.csv")["converged"].iloc[0]


def test_cluster_ids_and_a_given_split_from_a_table(tmp_path):
    """Ten-digit-like data: three clusters, two classes (the label map from the table), and
    the split of a column; the JSON records both."""
    X, cid = gaussian_classes(3, 120, seed=4)
    cols = [f"f{i}" for i in range(D)]
    table = pd.DataFrame(X, columns=cols).assign(
        label=np.where(cid == 1, "odd", "even"),
        group=cid,
        part=np.where(np.arange(360) % 3 == 0, "test", "train"),
    )
    path = tmp_path / "groups.csv"
    table.to_csv(path, index=False)
    out = tmp_path / "out"
    code, _, err = run(
        "data", str(path), "--label", "label", "--cluster-ids", "group", "--split", "part",
        "--alphas", "1", "--seeds", "1", "--subsamples", "2", "--quiet", "--out", str(out),
    )  # fmt: skip
    assert code == 0, err
    meta = json.loads((out / "data.json").read_text())
    assert meta["clustering"] == "per given cluster id" and meta["clusters"] == [0, 1, 2]
    assert meta["label_map"] == {"even": -1, "odd": 1} and meta["d"] == D
    assert meta["split"] == "given" and meta["n_test"] == 120 and meta["n_train"] == 240
    assert meta["data"]["columns"] == {
        "y": "label", "cluster_ids": "group", "split": "part", "features": D
    }  # fmt: skip
