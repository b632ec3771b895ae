"""A labelled data set of the user's own, from files or arrays: read, checked, split and
preprocessed under one recorded protocol (the docs, "Your own data").

Formats (:func:`load_labelled`), told by the suffix:

* ``.npz``: arrays ``X`` (n, d) and the labels (key ``label``, default ``'y'``), optionally
  the cluster ids and the split (keys named by ``cluster_ids`` and ``split``);
* ``.csv`` / ``.parquet``: a table; ``label`` names the label column (required), ``cluster_ids``
  and ``split`` optional columns; every other column is a feature and must be numeric
  (Parquet needs ``pyarrow``: ``pip install 'gaussmix[parquet]'``);
* ``.npy`` with a second ``.npy``: the features and the labels.

Every file read is recorded with its SHA-256 checksum.  The checks of :func:`check_labelled`
(finite, numeric features; one label per row; at least two classes; at least two samples
per class) and of :func:`check_memory` raise a :class:`DataFileError` (a ``ValueError``) with
one line naming the problem.

Preprocessing (:func:`preprocess`), fitted on the training split only and applied to both:
the training mean is subtracted (always), then ``scale``:

* ``'none'``: nothing else;
* ``'standard'``: each feature divided by its training standard deviation (features constant
  on the training split are left as they are);
* ``'max'``: all features divided by the largest absolute training value (one number, as
  pixels / 255).

The held-out split is either given (``split``: ``'train'`` / ``'test'`` or booleans, True for
test) or drawn reproducibly (:func:`split_indices`: a fraction ``test_fraction`` of every
class, ``numpy.random.default_rng(seed)``).
"""

from __future__ import annotations

import difflib
import hashlib
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..core.exceptions import GaussmixError
from ..core.npzfile import read_npz

__all__ = [
    "DataFileError",
    "LabelledData",
    "SCALINGS",
    "as_split",
    "available_memory",
    "check_labelled",
    "check_memory",
    "largest_magnitude",
    "load_labelled",
    "preprocess",
    "py_value",
    "sha256_file",
    "split_indices",
]

#: the scaling options of :func:`preprocess`
SCALINGS = ("none", "standard", "max")

#: file suffixes read by :func:`load_labelled`
FORMATS = (".npz", ".csv", ".parquet", ".npy")


class DataFileError(GaussmixError, ValueError):
    """A data set that cannot be used as given: the message is one line naming the problem
    (exit status 2 on the command line)."""


@dataclass(frozen=True, eq=False)
class LabelledData:
    """Features, labels and, optionally, cluster ids and a split, with their provenance.

    Attributes
    ----------
    X : ndarray (n, d)
        Features, float64 (or float32 as stored).
    y : ndarray (n,)
        Class labels (numbers or strings).
    cluster_ids : ndarray (n,) or None
        Cluster id of every row (several clusters may share a class), or one cluster per
        class.
    split : ndarray of bool (n,) or None
        True for the rows of the held-out (test) split, if given.
    columns : list of str or None
        The feature names (tables).
    info : dict
        Provenance: the files with their SHA-256 checksums, the format, the columns used.
    """

    X: np.ndarray
    y: np.ndarray
    cluster_ids: np.ndarray | None = None
    split: np.ndarray | None = None
    columns: list[str] | None = None
    info: dict = field(default_factory=dict)


def py_value(v: Any) -> Any:
    """A numpy scalar as the Python value (a label, a cluster id), anything else as it is."""
    return v.item() if isinstance(v, np.generic) else v


def sha256_file(path: str | os.PathLike[str]) -> str:
    """SHA-256 checksum (hex) of a file's bytes, read in 1 MiB blocks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _check_file(path: Path) -> None:
    if not path.exists():
        raise DataFileError(f"data file {str(path)!r} does not exist")
    if not path.is_file():
        raise DataFileError(f"data file {str(path)!r} is not a file")
    if path.stat().st_size == 0:
        raise DataFileError(f"data file {str(path)!r} is empty")
    if path.suffix.lower() not in FORMATS:
        raise DataFileError(
            f"data file {str(path)!r}: unknown format {path.suffix!r}; expected one of "
            f"{', '.join(FORMATS)} (.npy with a second .npy of labels)"
        )


def _unreadable(path: Path, exc: BaseException) -> DataFileError:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return DataFileError(f"data file {str(path)!r} cannot be read as {path.suffix}: {text}")


def _no_such(kind: str, name: str, known: list[str], path: Path) -> DataFileError:
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    shown = ", ".join(repr(k) for k in known[:8]) + (", ..." if len(known) > 8 else "")
    return DataFileError(
        f"{kind} {name!r} is not in {str(path)!r}{hint} (it has {shown or 'nothing'})"
    )


def load_labelled(
    path: str | os.PathLike[str],
    labels_path: str | os.PathLike[str] | None = None,
    *,
    label: str | None = None,
    cluster_ids: str | None = None,
    split: str | None = None,
) -> LabelledData:
    """Read a labelled data set from a file (formats in the module's docstring).

    Parameters
    ----------
    path : path
        ``.npz``, ``.csv``, ``.parquet``, or ``.npy`` (the features, with ``labels_path``).
    labels_path : path, optional
        The ``.npy`` file of the labels, with a ``.npy`` of features.
    label : str, optional
        The label column (tables, required) or array (``.npz``, default ``'y'``).
    cluster_ids, split : str, optional
        The column or array of the cluster ids, and of the split.

    Raises
    ------
    DataFileError
        A missing, empty or unreadable file, a missing column (with the close match), or
        features that are not numbers.
    """
    p = Path(path)
    _check_file(p)
    suffix = p.suffix.lower()
    files = [p]
    if suffix == ".npy":
        if labels_path is None:
            raise DataFileError(
                f"data file {str(p)!r}: a .npy file of features needs a second .npy file "
                "with the labels"
            )
        if label is not None or cluster_ids is not None or split is not None:
            raise DataFileError(
                "a pair of .npy files has no columns: --label, --cluster-ids and --split apply "
                "to .npz, .csv and .parquet files"
            )
        q = Path(labels_path)
        _check_file(q)
        files.append(q)
        X = _read_npy(p, check_size=True)
        y = _read_npy(q)
        cl = sp = None
        cols = None
        used = {"X": p.name, "y": q.name}
    elif labels_path is not None:
        raise DataFileError(
            f"a second file is read only with a .npy file of features, not with {suffix}"
        )
    elif suffix == ".npz":
        X, y, cl, sp, used = _read_npz(p, label or "y", cluster_ids, split)
        cols = None
    else:
        if label is None:
            raise DataFileError(
                f"data file {str(p)!r}: a table needs --label, the name of its label column"
            )
        X, y, cl, sp, cols, used = _read_table(p, label, cluster_ids, split)
    info = {
        "format": suffix.lstrip("."),
        "files": [{"path": str(f), "sha256": sha256_file(f)} for f in files],
        "columns": used,
    }
    return LabelledData(
        X=X, y=np.asarray(y).reshape(-1), cluster_ids=cl, split=sp, columns=cols, info=info
    )


def _read_npy(path: Path, check_size: bool = False) -> np.ndarray:
    try:
        if check_size:  # the header's shape, before reading: the least a study needs
            shape = np.load(path, mmap_mode="r", allow_pickle=False).shape
            if len(shape) == 2:
                check_memory(shape[0], shape[1], 2, 1)
        return np.load(path, allow_pickle=False)
    except DataFileError:
        raise
    except Exception as exc:  # noqa: BLE001 - any failure to parse is an unreadable file
        raise _unreadable(path, exc) from None


def _read_npz(
    path: Path, label: str, cluster_ids: str | None, split: str | None
) -> tuple[Any, Any, Any, Any, dict]:
    try:
        arrays = read_npz(path, written_by="numpy.savez")
    except ValueError as exc:  # the wording of every .npz input (also --mixture's)
        raise DataFileError(f"data file {str(path)!r}: {exc}") from None
    known = sorted(arrays)
    for kind, key in (("array", "X"), ("label array", label), ("array", cluster_ids)):
        if key is not None and key not in arrays:
            raise _no_such(kind, key, known, path)
    if split is not None and split not in arrays:
        raise _no_such("array", split, known, path)
    used = {"X": "X", "y": label, "cluster_ids": cluster_ids, "split": split}
    return (
        arrays["X"],
        arrays[label],
        None if cluster_ids is None else arrays[cluster_ids],
        None if split is None else as_split(arrays[split], split),
        used,
    )


def _read_table(
    path: Path, label: str, cluster_ids: str | None, split: str | None
) -> tuple[Any, Any, Any, Any, list[str], dict]:
    import pandas as pd

    try:
        if path.suffix.lower() == ".parquet":
            try:
                import pyarrow  # noqa: F401
            except ImportError:
                raise DataFileError(
                    "reading Parquet needs pyarrow: pip install 'gaussmix[parquet]'"
                ) from None
            df = pd.read_parquet(path)
        else:
            df = pd.read_csv(path)
    except DataFileError:
        raise
    except Exception as exc:  # noqa: BLE001
        raise _unreadable(path, exc) from None
    if df.shape[0] == 0:
        raise DataFileError(f"data file {str(path)!r} has no rows")
    known = [str(c) for c in df.columns]
    df.columns = known
    for kind, key in (("label column", label), ("column", cluster_ids), ("column", split)):
        if key is not None and key not in known:
            raise _no_such(kind, key, known, path)
    special = [c for c in (label, cluster_ids, split) if c is not None]
    if len(set(special)) < len(special):
        raise DataFileError(
            f"--label, --cluster-ids and --split must name different columns: {special}"
        )
    features = [c for c in known if c not in special]
    if not features:
        raise DataFileError(f"data file {str(path)!r} has no feature column")
    bad = [c for c in features if not pd.api.types.is_numeric_dtype(df[c])]
    if bad or any(pd.api.types.is_bool_dtype(df[c]) for c in features):
        bad = bad or [c for c in features if pd.api.types.is_bool_dtype(df[c])]
        raise DataFileError(
            f"features must be numbers: column {bad[0]!r} of {str(path)!r} is not numeric"
            + (f" (and {len(bad) - 1} more)" if len(bad) > 1 else "")
        )
    X = df[features].to_numpy(dtype=np.float64)
    used = {"y": label, "cluster_ids": cluster_ids, "split": split, "features": len(features)}
    sp = None if split is None else as_split(df[split].to_numpy(), split)
    cl = None if cluster_ids is None else df[cluster_ids].to_numpy()
    return X, df[label].to_numpy(), cl, sp, features, used


def as_split(values: Any, name: str) -> np.ndarray:
    """The test mask of a split column: 'train' / 'test' (any case) or booleans / 0-1
    (True, 1: test).

    Parameters
    ----------
    values : array (n,)
        The split of every row.
    name : str
        The column's name, for the message.
    """
    v = np.asarray(values).reshape(-1)
    if v.dtype.kind in "biuf":
        if not np.all(np.isin(v, (0, 1))):
            raise DataFileError(f"split {name!r} must hold 'train' / 'test' or 0 / 1 (1: test)")
        return v.astype(bool)
    low = np.char.lower(v.astype(str))
    if not np.all(np.isin(low, ("train", "test"))):
        other = sorted(set(low.tolist()) - {"train", "test"})[:3]
        raise DataFileError(f"split {name!r} must hold 'train' or 'test', got {other}")
    return low == "test"


def check_labelled(data: LabelledData) -> LabelledData:
    """Check a data set's shapes and values; return it with float features.

    Raises
    ------
    DataFileError
        Features that are not a 2-d array of finite real numbers, labels (or cluster ids,
        or split) of another length than the rows, fewer than two classes, or a class with
        fewer than two samples.
    """
    X = np.asarray(data.X)
    if X.dtype == object or not (np.issubdtype(X.dtype, np.number) and not np.iscomplexobj(X)):
        raise DataFileError(f"features must be real numbers, got dtype {X.dtype}")
    if np.issubdtype(X.dtype, np.bool_):
        raise DataFileError("features must be real numbers, got booleans")
    if X.ndim != 2 or X.shape[0] == 0 or X.shape[1] == 0:
        raise DataFileError(f"features must be a non-empty table (n, d), got shape {X.shape}")
    n = X.shape[0]
    y = np.asarray(data.y)
    if y.ndim != 1 or y.shape[0] != n:
        raise DataFileError(
            f"labels of mismatched length: {y.shape[0] if y.ndim else 1} labels for "
            f"{n} rows of features"
        )
    for name, arr in (("cluster ids", data.cluster_ids), ("split", data.split)):
        if arr is not None and np.asarray(arr).reshape(-1).shape[0] != n:
            raise DataFileError(
                f"{name} of mismatched length: {np.asarray(arr).size} for {n} rows of features"
            )
    if not np.issubdtype(X.dtype, np.floating):
        X = X.astype(np.float64)
    finite = np.isfinite(X)
    where = _source(data)
    if not finite.all():
        rows, cols = np.nonzero(~finite)
        kind = "NaN" if np.isnan(X[rows[0], cols[0]]) else "infinite"
        raise DataFileError(
            f"features must be finite: {rows.size} {kind if rows.size == 1 else 'NaN or infinite'}"
            f" value{'s' if rows.size > 1 else ''} in the data{where}, the first at row "
            f"{rows[0]}, column {_column_names(data, cols[:1])}"
        )
    info = dict(data.info)
    info["constant_features"] = _check_values(X, data, where)
    if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
        raise DataFileError("labels must not be NaN or infinite")
    classes, counts = np.unique(y, return_counts=True)
    if classes.size < 2:
        only = py_value(classes[0]) if classes.size else None
        raise DataFileError(f"labels hold a single class ({only!r}): at least two are needed")
    few = [(py_value(c), int(k)) for c, k in zip(classes, counts, strict=True) if k < 2]
    if few:
        c, k = few[0]
        raise DataFileError(
            f"class {c!r} has {k} sample: at least two per class are needed to fit its "
            "mean and covariance"
        )
    return LabelledData(X, y, data.cluster_ids, data.split, data.columns, info)


def largest_magnitude(n: int, d: int) -> float:
    """The largest absolute feature value whose fitted covariance is finite in float64.

    Centred values are at most ``2 m`` in magnitude for features within ``[-m, m]``; a
    covariance entry sums ``n`` products of two of them, and its trace ``d`` such entries,
    so ``(2 m)^2 n d`` must stay below the largest float64 (about 1.8e308):
    ``m < sqrt(max / (n d)) / 2`` (about 1e152 for 569 rows of 30 features).
    """
    return 0.5 * math.sqrt(np.finfo(np.float64).max / (max(n, 1) * max(d, 1)))


def _source(data: LabelledData) -> str:
    """`` of 'file'`` naming the data's file(s), or nothing for arrays."""
    files = data.info.get("files") or []
    if not files:
        return ""
    return " of " + " and ".join(repr(Path(f["path"]).name) for f in files[:1])


def _column_names(data: LabelledData, idx: Any, most: int = 5) -> str:
    """The feature columns ``idx``: their names (tables) or indices, the first ``most``."""
    idx = [int(i) for i in idx]
    names = [repr(data.columns[i]) if data.columns else str(i) for i in idx[:most]]
    more = f" and {len(idx) - most} more" if len(idx) > most else ""
    return ", ".join(names) + more


def _check_values(X: np.ndarray, data: LabelledData, where: str) -> list:
    """Refuse features that no study can use: values so large that centring or the
    covariance overflows (:func:`largest_magnitude`), or every feature constant (nothing
    to learn, every covariance zero).  Some constant features are fine (a covariance with
    zero eigenvalues, e.g. the border pixels of images): their names are returned."""
    n, d = X.shape
    bound = largest_magnitude(n, d)
    peak = np.abs(X).max(axis=0)
    huge = np.flatnonzero(peak > bound)
    if huge.size:
        s, verb = ("s", "hold") if huge.size > 1 else ("", "holds")
        raise DataFileError(
            f"features too large: column{s} {_column_names(data, huge)}{where} {verb}"
            f" values up to {peak[huge].max():.3g} in magnitude; with n = {n} rows and d = {d} "
            f"features the covariance overflows float64 beyond |x| = {bound:.3g}: divide "
            "them by a constant (e.g. their largest value) before the study"
        )
    constant = np.flatnonzero(np.all(X == X[0], axis=0))
    if constant.size == d:
        raise DataFileError(
            f"every feature{where} is constant ({d} column{'s' if d > 1 else ''}, the same "
            "value in every row): the data carry no information to learn from"
        )
    return [data.columns[i] if data.columns else int(i) for i in constant]


def available_memory() -> int:
    """Bytes of memory available now (``MemAvailable`` of ``/proc/meminfo``, else the
    physical memory)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))


def check_memory(
    n: int, d: int, n_clusters: int, n_outputs: int, *, itemsize: int = 8, limit: int | None = None
) -> int:
    """The memory a study of an ``n x d`` data set needs, checked against ``limit``.

    Counted: two copies of the features (read and preprocessed), the ``K`` covariances
    ``d x d`` of the fitted mixture, and three ``(L d) x (L d)`` matrices of the dense
    prior (Appendix C), all of ``itemsize`` bytes.

    Returns
    -------
    int
        The estimate in bytes.

    Raises
    ------
    DataFileError
        If the estimate exceeds ``limit`` (default :func:`available_memory`), saying how
        large and what to do.
    """
    need = itemsize * (2 * n * d + n_clusters * d * d + 3 * (n_outputs * d) ** 2)
    limit = available_memory() if limit is None else int(limit)
    if need > limit:
        raise DataFileError(
            f"the data set is too large for memory: {n} x {d} with {n_clusters} clusters and "
            f"{n_outputs} output{'s' if n_outputs > 1 else ''} needs about {need / 2**30:.3g} GiB "
            f"at float64, {limit / 2**30:.3g} GiB are available; reduce d (e.g. principal "
            "components or pooled features) or the number of classes"
        )
    return need


def split_indices(y: np.ndarray, test_fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Training and test row indices: in every class, ``round(test_fraction n_c)`` rows
    (at least one, at most ``n_c - 1``) drawn for the test split by
    ``numpy.random.default_rng(seed)``; both sorted."""
    rng = np.random.default_rng(seed)
    classes, inverse = np.unique(y, return_inverse=True)
    test = []
    for c in range(classes.size):
        rows = np.flatnonzero(inverse == c)
        k = min(max(1, round(test_fraction * rows.size)), rows.size - 1)
        test.append(rng.choice(rows, size=k, replace=False))
    mask = np.zeros(y.shape[0], dtype=bool)
    mask[np.concatenate(test)] = True
    return np.flatnonzero(~mask), np.flatnonzero(mask)


def preprocess(
    x_train: np.ndarray, x_test: np.ndarray, scale: str = "none"
) -> tuple[np.ndarray, np.ndarray, dict]:
    """Centre on the training mean and scale (module docstring); fitted on ``x_train``.

    Returns
    -------
    x_train, x_test : ndarray of float64
    record : dict
        ``centring``, ``scale`` and the constants used (the number of constant features).
    """
    if scale not in SCALINGS:
        raise DataFileError(f"scale must be one of {', '.join(SCALINGS)}; got {scale!r}")
    mean = x_train.mean(axis=0)
    a = np.asarray(x_train, dtype=np.float64) - mean
    b = np.asarray(x_test, dtype=np.float64) - mean
    record: dict[str, Any] = {"centring": "training mean subtracted", "scale": scale}
    if scale == "standard":
        sd = a.std(axis=0)
        constant = sd == 0
        sd[constant] = 1.0
        a /= sd
        b /= sd
        record["constant_features"] = int(constant.sum())
    elif scale == "max":
        m = float(np.abs(a).max())
        if m > 0:
            a /= m
            b /= m
        record["divided_by"] = m
    return a, b, record
