"""The results of a sweep: the table read from the checkpoint lines, its CSV (written
atomically), its xarray view and its provenance.

The table has the points' coordinates as its first columns, then the keys of
``gaussmix point --json`` (or ``simulate --json``), with the nested ``Q, M, V, b,
integration_errors, params`` as JSON strings; one row per point, in the grid's order.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import math
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import orjson
import pandas as pd

from gaussmix.core.jsonio import dumps, loads, plain
from gaussmix.core.results import Result
from gaussmix.core.version import __version__

from .spec import SpecGrid, current_params, describe_point
from .tasks import NESTED_KEYS

__all__ = ["SweepResult", "matrix_dims", "write_csv_atomic", "csv_bytes"]


def matrix_dims(column: str) -> tuple[str, ...] | None:
    """Extra xarray dimensions of a matrix-valued column of the table (``Q``, ``M``, ``V``,
    ``b`` and their ``*_se``), or None for the other columns.  ``b`` has ``('out',)``; the
    others up to ``('cluster', 'out', 'out2')``, cut to their number of axes."""
    if column in ("b", "b_se"):
        return ("out",)
    if column in ("Q", "Q_se", "M", "M_se", "V"):
        return ("cluster", "out", "out2")
    return None


# ============================================================================ CSV
def _csv_cells(values: np.ndarray) -> list[Any]:
    """The cells of one column for :func:`csv.writer` (see :func:`csv_bytes`)."""
    if values.dtype.kind == "f" and len(values) and not np.isinf(values).any():
        # orjson writes the shortest round-trip text of float64 arrays in one C call (NaN
        # as null -> empty cell), ~2x faster than the repr that pandas uses
        text = orjson.dumps(
            np.ascontiguousarray(values, dtype=np.float64), option=orjson.OPT_SERIALIZE_NUMPY
        ).decode()
        return text[1:-1].replace("null", "").split(",")
    if values.dtype == object:
        return ["" if v is None or (isinstance(v, float) and v != v) else v for v in values]
    return values.tolist()


def csv_bytes(df: pd.DataFrame) -> bytes:
    """``df`` as UTF-8 CSV without index, read back by :func:`pandas.read_csv` exactly as
    ``df.to_csv(index=False)`` (same quoting, empty cells for NaN and None); floats in
    their shortest round-trip text (``1e-8`` where pandas writes ``1e-08``)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(df.columns)
    writer.writerows(zip(*(_csv_cells(df[c].to_numpy()) for c in df.columns)))
    return buf.getvalue().encode()


def _umask() -> int:
    """The process's umask (read without changing it where /proc allows)."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_csv_atomic(df: pd.DataFrame, path: str | os.PathLike) -> Path:
    """Write ``df`` (:func:`csv_bytes`) to ``path`` atomically: a temporary file in the same
    directory, ``fsync``, then ``os.replace``.  The file gets the mode of a new file under
    the umask (``0o666 & ~umask``), like every other output."""
    import tempfile

    path = Path(path)
    data = csv_bytes(df)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            os.fchmod(fh.fileno(), 0o666 & ~_umask())
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return path


# ============================================================================ table
@dataclass
class _Columns:
    """The columns of a table, filled row by row (keys missing from a row: None)."""

    data: dict[str, list] = field(default_factory=dict)
    fullest: list[str] = field(default_factory=list)

    def add(self, i: int, row: Mapping[str, Any]) -> None:
        if len(row) > len(self.fullest):
            self.fullest = list(row)
        for k, v in row.items():
            col = self.data.get(k)
            if col is None:
                col = self.data[k] = [None] * i
            col.append(dumps(v).decode() if isinstance(v, (list, dict)) else v)
        if len(row) < len(self.data):  # keys that this row lacks
            for col in self.data.values():
                if len(col) == i:
                    col.append(None)

    def ordered(self) -> dict[str, list]:
        """The keys of the fullest row, then any other; missing numbers as NaN."""
        out = {}
        for k in [*self.fullest, *(k for k in self.data if k not in self.fullest)]:
            col = self.data[k]
            if not (k in NESTED_KEYS or k == "message") and None in col:
                col = [math.nan if v is None else v for v in col]
            out[k] = col
        return out


def read_table(
    grid: SpecGrid, lines: Sequence[bytes]
) -> tuple[pd.DataFrame, int, list[tuple[str, str, str]], list[str]]:
    """The table of a sweep from its points' checkpoint lines (in the grid's order).

    Returns the DataFrame (coordinate columns, then the keys of the fullest row and any
    other key seen; nested values as JSON text, missing numbers as NaN), the number of
    failed points, the warnings ``(category, message, point)`` and the distinct quadrature
    rules.  Each line is decoded and dropped in turn (holding a thousand decoded records
    makes the garbage collector scan them, which costs more than the decoding).
    """
    columns = _Columns()
    found: list[tuple[str, str, str]] = []
    quads: list[str] = []
    failed = 0
    for i, (spec, line) in enumerate(zip(grid.points, lines)):
        rec = loads(line)
        row = rec["row"]
        if isinstance(row.get("params"), dict):  # a row of a checkpoint of version 3
            row["params"] = current_params(row["params"])
        if not row.get("converged"):
            failed += 1
        for cat, msg in rec.get("warnings", ()):
            found.append((cat, msg, describe_point(spec.coords)))
        q = rec.get("quadrature")
        if q and q not in quads:
            quads.append(q)
        columns.add(i, row)
    data = {c: [p.coords[c] for p in grid.points] for c in grid.columns}
    data.update(columns.ordered())
    return pd.DataFrame(data), failed, found, quads


# ============================================================================ result
@dataclass(eq=False)
class SweepResult(Result):
    """The table of a sweep, one row per point in the grid's order (the result protocol of
    :mod:`gaussmix.core.results`: :meth:`to_frame` is the table, :meth:`to_dict` the
    summary).

    Attributes
    ----------
    df : pandas.DataFrame
        The points' coordinates as columns, then the keys of ``gaussmix point --json``
        (theory) or ``gaussmix simulate --json`` (simulation); nested values are JSON
        strings.
    grid : SpecGrid
        The points of the sweep (their specs and coordinates).
    attrs : dict
        Provenance (see :meth:`to_xarray`).
    computed, resumed, failed : int
        Points computed by this run, taken from the checkpoint, and without a valid
        result (``converged=False``).
    out, checkpoint : Path or None
        The CSV written and its checkpoint (None when the sweep wrote nothing).
    elapsed : float
        Wall time of this run, in seconds.
    warnings : list of (category, message, point)
        Warnings raised while computing the points (including resumed ones).
    success : bool
        Every point has a valid result (property).
    message : str
        How many points were computed, resumed and failed (property).
    """

    #: nothing iterates (the result protocol's ``n_iter`` does not apply)
    n_iter: ClassVar[None] = None

    df: pd.DataFrame
    grid: SpecGrid
    attrs: dict
    computed: int = 0
    resumed: int = 0
    failed: int = 0
    elapsed: float = 0.0
    out: Path | None = None
    checkpoint: Path | None = None
    warnings: list = field(default_factory=list)

    @property
    def success(self) -> bool:
        return self.failed == 0

    @property
    def message(self) -> str:
        n = len(self.df)
        text = f"{n} points: {self.computed} computed, {self.resumed} from the checkpoint"
        if self.failed:
            text += f"; {self.failed} without a valid result (converged=False)"
        return text

    def to_frame(self) -> pd.DataFrame:
        """The table (:attr:`df`, one row per point)."""
        return self.df

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe summary: ``success, message, mode, n_points, computed, resumed, failed,
        elapsed, out, checkpoint, attrs`` (the rows are :meth:`to_frame`)."""
        return plain(
            {
                "success": self.success,
                "message": self.message,
                "mode": self.mode,
                "n_points": len(self.df),
                "computed": self.computed,
                "resumed": self.resumed,
                "failed": self.failed,
                "elapsed": self.elapsed,
                "out": None if self.out is None else str(self.out),
                "checkpoint": None if self.checkpoint is None else str(self.checkpoint),
                "attrs": self.attrs,
            }
        )

    @property
    def mode(self) -> str:
        """``'theory'`` or ``'simulation'``."""
        return self.grid.mode

    def to_csv(self, path: str | os.PathLike) -> Path:
        """Write the table atomically (:func:`write_csv_atomic`)."""
        return write_csv_atomic(self.df, Path(path))

    def to_xarray(self) -> Any:
        """The table as an :class:`xarray.Dataset` with the grid's axes as dimensions.

        Scalar observables are variables over the grid; ``Q, M, V, b`` (and ``*_se``) get
        the extra dimensions of :func:`matrix_dims` when every point has the same shape
        (else they stay JSON strings); ``message``, ``params`` and ``integration_errors``
        are strings.  Points that are not a Cartesian product have one dimension ``point``
        (their coordinates are coordinates along it).  ``attrs`` carry the provenance:
        gaussmix version, mode, tolerance, quadrature rule, seeds / d / seed
        (simulations), the fixed options and grid (JSON), backend and the date.
        """
        import xarray as xr

        dims, shape = list(self.grid.dims), self.grid.shape
        if self.grid.axes:
            coords: dict[str, Any] = {c: list(v) for c, v in self.grid.axes.items()}
        else:
            coords = {"point": np.arange(len(self.df))}
            coords.update({c: ("point", self.df[c].to_list()) for c in self.grid.columns})
        data_vars: dict[str, Any] = {}
        for col in self.df.columns:
            if col in self.grid.columns:
                continue
            values = self.df[col].to_numpy()
            extra = matrix_dims(col)
            arr = _stack_nested(values) if extra is not None else None
            if arr is not None:
                extra = extra[: arr.ndim - 1]
                data_vars[col] = (dims + list(extra), arr.reshape(shape + arr.shape[1:]))
                continue
            if values.dtype == object:
                values = np.array(["" if v is None else str(v) for v in values], dtype=str)
            data_vars[col] = (dims, values.reshape(shape))
        return xr.Dataset(data_vars, coords=coords, attrs=_netcdf_attrs(self.attrs))


def _stack_nested(values: np.ndarray) -> np.ndarray | None:
    arrays = [None if v is None or v != v else np.asarray(json.loads(v), float) for v in values]
    shapes = {a.shape for a in arrays if a is not None}
    if len(shapes) != 1:
        return None
    (shape,) = shapes
    out = np.full((len(arrays), *shape), np.nan)
    for i, a in enumerate(arrays):
        if a is not None:
            out[i] = a
    return out


def _netcdf_attrs(attrs: Mapping[str, Any]) -> dict[str, Any]:
    """Attributes that netCDF accepts: str, numbers (None -> 'none', dicts -> JSON)."""
    out = {}
    for k, v in attrs.items():
        if v is None:
            out[k] = "none"
        elif isinstance(v, bool):
            out[k] = int(v)
        elif isinstance(v, str | int | float):
            out[k] = v
        else:
            out[k] = json.dumps(v)
    return out


# ============================================================================ provenance
def _setting(grid: SpecGrid, name: str, values: Sequence[Any]) -> Any:
    """The value shared by every point, or ``'grid'`` (a swept setting)."""
    if name in grid.swept:
        return "grid"
    first = values[0]
    return first if all(v == first for v in values) else "grid"


def provenance(
    grid: SpecGrid, quads: Sequence[str], backend: str, created: str, failed: int
) -> dict[str, Any]:
    """The ``attrs`` of a sweep's result (see :meth:`SweepResult.to_xarray`)."""
    desc = grid.description
    attrs: dict[str, Any] = {
        "title": f"gaussmix sweep ({grid.mode})",
        "gaussmix_version": __version__,
        "mode": grid.mode,
        "created": created,
        "backend": backend,
        "n_points": len(grid),
        "n_failed": failed,
        "quadrature": "; ".join(quads) if quads else "none",
        "fixed": dict(desc.get("fixed", {})),
        "grid": dict(desc.get("grid", {c: list(v) for c, v in (grid.axes or {}).items()})),
        "python": sys.version.split()[0],
        "numpy": np.__version__,
    }
    if grid.mode == "theory":
        for name in ("tol", "max_iter", "quad_order"):  # quad_order None: the default rule
            attrs[name] = _setting(grid, name, [getattr(p, name) for p in grid.points])
        # the solver's other options, those that some point sets (or the grid sweeps)
        from gaussmix.theory.solve.options import DEFAULT_OPTIONS

        changed = {k for p in grid.points for k in p.solver} | (
            set(grid.swept) - {"tol", "max_iter", "quad_order", "d", "seeds", "seed"}
        )
        for name in sorted(changed):
            default = getattr(DEFAULT_OPTIONS, name)
            values = [p.solver.get(name, default) for p in grid.points]
            attrs[name] = _setting(grid, name, values)
    else:
        from gaussmix.simulate import simulation as sim

        attrs["erm_tolerances"] = dict(getattr(sim, "_DEFAULT_TOL", {}))
        for name in ("d", "seeds", "seed"):
            values = [getattr(p.simulate, name) for p in grid.points]
            attrs[name] = _setting(grid, name, values)
        attrs["seeding"] = "numpy.random.SeedSequence(seed).spawn(seeds)"
    return attrs
