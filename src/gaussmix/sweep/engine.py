"""Sweeps: any grid of independent points, for the theory or for simulations, on an executor.

A :class:`Grid` is a table of *fixed* point options (the options of ``gaussmix point``,
see :class:`gaussmix.cli.options.PointOptions`) and *grid* options (option -> list of values); the
sweep runs the Cartesian product of the grid options, first option slowest.  With a
``simulate`` table (``d``, ``seeds``, optional ``seed``) every point is a finite-size
simulation (:func:`gaussmix.simulate.simulate`) instead of a fixed point
(:func:`gaussmix.solve`).  Every point of the grid is validated before any work starts::

    from gaussmix.sweep import Grid, sweep

    grid = Grid({"alpha": [0.5, 1.0, 2.0], "lam": [0.01, 0.1, 1.0]}, fixed={"loss": "logistic"})
    res = sweep(grid, out="sweep.csv")       # joblib on all cores; re-run to resume
    res.df                                   # pandas, one row per point, in grid order
    res.to_xarray()                          # dims (alpha, lam), attrs = provenance
    sweep(grid, scheduler="tcp://host:8786") # the same on a dask.distributed cluster

Each point is an independent task, a plain ``dict`` keyed by a stable hash of its
parameters (:func:`point_key`), run by :func:`run_task` on

* ``backend='joblib'`` (default): local processes (loky), ``jobs`` workers;
* ``backend='dask'``: a ``dask.distributed`` cluster at ``scheduler`` (an address such as
  ``tcp://host:8786`` or a ``distributed.Client``), or a new ``LocalCluster`` of ``jobs``
  workers when no scheduler is given;
* ``backend='serial'``: in this process.

Checkpoint and resume
---------------------
Finished points stream to a checkpoint file (JSON lines, one per point: ``{"key", "row",
"warnings", "quadrature"}``; strict JSON by :mod:`gaussmix.core.jsonio`: floats as their shortest
round-trip text, non-finite numbers as ``null``), each appended with a single ``os.write``
of a complete line to a file opened with ``O_APPEND``.  The table is read back from these
lines for fresh and resumed points alike.  A process killed at any moment (even by
SIGKILL) leaves at most an incomplete last line, which the next run discards; running the
same sweep again skips every point already in the checkpoint, so a killed sweep loses only
the points that were in flight.  The data reach
the kernel with every row; ``fsync`` (protection against a crash of the *machine*) runs at
most every ``fsync_interval`` seconds and when the sweep ends.  Only one sweep at a time may
use a checkpoint (an advisory lock).  The checkpoint is kept after the sweep: delete it to
recompute from scratch.  The final CSV is written atomically (temporary file +
``os.replace``), in grid order, one row per grid point.

Results
-------
:class:`SweepResult` holds the table (``.df``: the grid options as columns, then the keys
of ``gaussmix point --json`` -- or of ``gaussmix simulate --json`` -- with the nested
``Q, M, V, b, integration_errors, params`` as JSON strings) and converts it to an
:class:`xarray.Dataset` (:meth:`SweepResult.to_xarray`) whose dimensions are the grid
options and whose ``attrs`` carry the provenance.  A point without a fixed point (or whose
simulation failed) is a row with ``converged=False``, NaN observables and a ``message``; it
does not stop the sweep.

Test hook: the environment variable ``GAUSSMIX_SWEEP_TEST_DELAY`` (seconds; read when this
module is imported, in every worker) makes every task sleep before its work, so that a test
can kill a sweep in the middle.  Not for other uses.

Reproducibility: BLAS runs one thread per task (parallelism comes from the workers), so a
point gives the same bits on every backend and with any number of workers, and seeded
simulations are reproducible bit for bit.
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import datetime as _dt
import functools
import hashlib
import io
import itertools
import json
import math
import os
import sys
import time
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_args

import numpy as np
import orjson
import pandas as pd

from gaussmix.cli.options import PointOptions, PointSetup, build_point
from gaussmix.core.exceptions import ConvergenceWarning, GaussmixError
from gaussmix.core.jsonio import dumps, loads
from gaussmix.core.version import __version__
from gaussmix.theory.solver import solve, solve_problem

__all__ = [
    "Grid",
    "GridError",
    "SweepResult",
    "sweep",
    "run_task",
    "point_key",
    "checkpoint_path",
    "theory_payload",
    "simulation_payload",
    "check_simulation",
    "theory_keys",
    "simulation_keys",
    "ERROR_KEYS",
    "NESTED_KEYS",
    "BACKENDS",
    "TEST_DELAY_ENV",
]

#: the observables that simulations report with a standard error over seeds
ERROR_KEYS = ("test_error", "train_error", "train_loss")
#: keys whose values are lists or dicts (JSON strings in tables)
NESTED_KEYS = ("Q", "Q_se", "M", "M_se", "V", "b", "b_se", "integration_errors", "params")
BACKENDS = ("joblib", "dask", "serial")
#: keys of the ``simulate`` table
SIMULATE_KEYS = ("d", "seeds", "seed")
#: test-only: seconds each task sleeps before its work (to kill a sweep in the middle)
TEST_DELAY_ENV = "GAUSSMIX_SWEEP_TEST_DELAY"
#: largest number of points in one dask task (see ``_run_dask``)
DASK_CHUNK = 16
#: how long to try to reach a dask scheduler
CONNECT_TIMEOUT = "20s"
#: largest number of grid points
MAX_POINTS = 1_000_000
#: options that vary a point without changing its mixture (cheap re-validation)
_CHEAP = ("lam", "alpha")
#: version 2: checkpoint lines and point keys by orjson (strict JSON)
_CHECKPOINT_VERSION = 2


class GridError(ValueError):
    """A grid (or its TOML file) is invalid; the message names the problem."""

    #: the CLI prints the message as it is (its names are those of the TOML file)
    cli_verbatim = True


# ============================================================================ options
def _field_kinds() -> dict[str, tuple[str, bool]]:
    """PointOptions field -> (base type 'int'|'float'|'str', accepts None)."""
    kinds = {}
    for f in dataclasses.fields(PointOptions):
        t = f.metadata["cli_type"]
        args = set(get_args(t)) or {t}
        optional = type(None) in args
        args.discard(type(None))
        (base,) = args
        kinds[f.name] = ({int: "int", float: "float", str: "str"}[base], optional)
    return kinds


_KINDS = _field_kinds()


def _number_text(v: Any) -> str:
    return str(int(v)) if isinstance(v, int) else repr(float(v))


def _coerce(name: str, where: str, value: Any) -> tuple[Any, Any]:
    """Convert a TOML / Python value to the PointOptions field type.

    Returns ``(option value, display value)``: the display value is what the table shows
    (the number for a number, the comma list for a list).
    """
    kind, optional = _KINDS[name]
    if value is None:
        if optional:
            return None, None
        raise GridError(f"{where} cannot be empty (None)")
    if isinstance(value, bool):
        raise GridError(f"{where} must be a {kind}, got the boolean {value!r}")
    if kind == "float":
        if isinstance(value, int | float | np.integer | np.floating):
            return float(value), float(value)
        if isinstance(value, str):
            try:
                return float(value), float(value)
            except ValueError:
                pass
        raise GridError(f"{where} must be a number, got {value!r}")
    if kind == "int":
        if isinstance(value, int | np.integer):
            return int(value), int(value)
        if isinstance(value, float | np.floating) and float(value).is_integer():
            return int(value), int(value)
        raise GridError(f"{where} must be an integer, got {value!r}")
    # str options, some of which are comma lists of numbers (rho, delta, ...)
    if isinstance(value, str):
        return value, value
    if isinstance(value, int | float | np.integer | np.floating):
        return _number_text(value), value
    if isinstance(value, list | tuple) and value:
        if all(
            isinstance(v, int | float | np.integer | np.floating) and not isinstance(v, bool)
            for v in value
        ):
            text = ",".join(_number_text(v) for v in value)
            return text, text
    raise GridError(f"{where} must be a string, a number or a list of numbers, got {value!r}")


def _option_name(where: str, name: Any, extra: Sequence[str] = ()) -> str:
    """Normalise ``max-iter`` / ``max_iter``; reject unknown names listing the valid ones."""
    if not isinstance(name, str):
        raise GridError(f"{where}: option names must be strings, got {name!r}")
    norm = name.strip().replace("-", "_")
    if norm in _KINDS or norm in extra:
        return norm
    valid = ", ".join(sorted(set(_KINDS) | set(extra)))
    raise GridError(f"{where}: unknown parameter {name!r}; valid parameters are: {valid}")


def _check_simulate(table: Any, where: str = "[simulate]") -> dict[str, int] | None:
    if table is None:
        return None
    if not isinstance(table, Mapping):
        raise GridError(f"{where} must be a table with 'd' and 'seeds', got {table!r}")
    unknown = [k for k in table if k not in SIMULATE_KEYS]
    if unknown:
        raise GridError(
            f"{where}: unknown parameter {unknown[0]!r}; valid parameters are: "
            + ", ".join(SIMULATE_KEYS)
        )
    for key in ("d", "seeds"):
        if key not in table:
            raise GridError(f"{where} needs {key!r} (the {_SIM_HELP[key]})")
    return {key: _sim_value(where, key, table.get(key, 0)) for key in SIMULATE_KEYS}


_SIM_HELP = {
    "d": "input dimension, a positive integer",
    "seeds": "number of independent seeds, a positive integer",
    "seed": "root seed, an integer >= 0",
}


def _sim_value(where: str, key: str, value: Any) -> int:
    ok = isinstance(value, int | np.integer) and not isinstance(value, bool)
    if not ok and isinstance(value, float) and value.is_integer():
        value, ok = int(value), True
    low = 0 if key == "seed" else 1
    if not ok or int(value) < low:
        raise GridError(f"{where} {key!r} must be the {_SIM_HELP[key]}, got {value!r}")
    return int(value)


def _describe_point(point: Mapping[str, Any]) -> str:
    return ", ".join(f"{k} = {v!r}" for k, v in point.items())


# ============================================================================ grid
class Grid:
    """A validated grid of points: fixed options + grid options (Cartesian product).

    Parameters
    ----------
    grid : mapping
        Option -> non-empty list of values (the options of ``gaussmix point`` with
        underscores or dashes: ``alpha``, ``lam``, ``delta``, ``loss``, ``max-iter``, ...).
        The points are the Cartesian product, first option slowest.  In simulation mode
        ``d``, ``seeds`` and ``seed`` may be grid options too.
    fixed : mapping, optional
        Option -> value, shared by every point.
    simulate : mapping, optional
        ``{'d': int >= 1, 'seeds': int >= 1, 'seed': int >= 0 (default 0)}``: simulate every
        point instead of solving the theory.

    Raises
    ------
    GridError
        (a ``ValueError``) for an unknown option, an empty or repeated list of values, a
        non-positive ``d`` or ``seeds``, or any point that the library rejects (the message
        names the point and the problem).  Nothing is run.

    Attributes
    ----------
    fixed : dict
        The fixed options (``PointOptions`` field names, typed values).
    axes : dict
        Grid column -> tuple of display values (the table's coordinates).
    simulate : dict or None
    """

    def __init__(
        self,
        grid: Mapping[str, Sequence[Any]],
        fixed: Mapping[str, Any] | None = None,
        simulate: Mapping[str, Any] | None = None,
    ) -> None:
        self.simulate = _check_simulate(simulate)
        extra = SIMULATE_KEYS if self.simulate is not None else ()
        fixed = {} if fixed is None else fixed
        if not isinstance(fixed, Mapping):
            raise GridError(f"[fixed] must be a table of options, got {fixed!r}")
        if not isinstance(grid, Mapping):
            raise GridError(f"[grid] must be a table of option = [values], got {grid!r}")
        self.fixed: dict[str, Any] = {}
        self._fixed_display: dict[str, Any] = {}
        for name, value in fixed.items():
            norm = _option_name("[fixed]", name)
            if norm in self.fixed:
                raise GridError(f"[fixed]: option {norm!r} is given twice")
            self.fixed[norm], self._fixed_display[name] = _coerce(norm, f"[fixed] {norm!r}", value)
        if not grid:
            raise GridError(
                "[grid] is empty: give at least one option with a list of values, "
                "e.g. alpha = [0.5, 1.0, 2.0]"
            )
        self.axes: dict[str, tuple] = {}
        self._fields: dict[str, str] = {}  # column -> field name
        self._values: dict[str, list] = {}  # column -> typed option values
        for name, values in grid.items():
            norm = _option_name("[grid]", name, extra)
            if norm in self._fields.values():
                raise GridError(f"[grid]: option {norm!r} is given twice")
            if norm in self.fixed:
                raise GridError(f"option {norm!r} is both in [fixed] and in [grid]")
            if isinstance(values, np.ndarray) and values.ndim == 1:
                values = values.tolist()
            if isinstance(values, str | bytes) or not isinstance(values, Sequence):
                raise GridError(
                    f"[grid] {name!r} must be a list of values, got {values!r} "
                    f"(write {name} = [{values!r}] for a single value)"
                )
            if len(values) == 0:
                raise GridError(f"[grid] {name!r} has an empty list of values")
            typed, shown = [], []
            for v in values:
                if norm in SIMULATE_KEYS:
                    t = _sim_value(f"[grid] {name!r}:", norm, v)
                    typed.append(t)
                    shown.append(t)
                else:
                    t, s = _coerce(norm, f"[grid] {norm!r}", v)
                    typed.append(t)
                    shown.append(s)
            dup = sorted({repr(s) for s in shown if shown.count(s) > 1})
            if dup:
                raise GridError(f"[grid] {name!r} has repeated values {', '.join(dup)}")
            self._fields[str(name)] = norm
            self._values[str(name)] = typed
            self.axes[str(name)] = tuple(shown)
        self.shape = tuple(len(v) for v in self.axes.values())
        n = math.prod(self.shape)
        if n > MAX_POINTS:
            raise GridError(f"the grid has {n} points, more than {MAX_POINTS}")
        self._tasks = self._validate()

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_dict(cls, spec: Mapping[str, Any]) -> Grid:
        """From ``{'fixed': {...}, 'grid': {...}, 'simulate': {...}}`` (a parsed TOML file)."""
        if not isinstance(spec, Mapping):
            raise GridError(f"a grid must be a table, got {type(spec).__name__}")
        unknown = [k for k in spec if k not in ("fixed", "grid", "simulate")]
        if unknown:
            raise GridError(
                f"unknown table or key {unknown[0]!r}: a grid file has the tables [fixed], "
                "[grid] and (optionally) [simulate]"
            )
        if "grid" not in spec:
            raise GridError("missing [grid] table (option = [values], e.g. alpha = [1, 2])")
        return cls(spec["grid"], spec.get("fixed"), spec.get("simulate"))

    @classmethod
    def from_toml(cls, path: str | os.PathLike) -> Grid:
        """Read a TOML file with ``[fixed]``, ``[grid]`` and optional ``[simulate]`` tables."""
        if sys.version_info >= (3, 11):
            import tomllib
        else:  # pragma: no cover
            import tomli as tomllib
        p = Path(path)
        try:
            text = p.read_bytes()
        except OSError as exc:
            raise GridError(f"cannot read grid file {str(p)!r}: {exc.strerror}") from None
        try:
            spec = tomllib.loads(text.decode("utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise GridError(f"{str(p)!r} is not valid TOML: {exc}") from None
        try:
            return cls.from_dict(spec)
        except GridError as exc:
            raise GridError(f"{p.name}: {exc}") from None

    def with_simulate(self, simulate: Mapping[str, Any] | None) -> Grid:
        """The same grid in simulation mode (``simulate`` table) or theory mode (None)."""
        return Grid({c: list(v) for c, v in self.axes.items()}, self._fixed_display, simulate)

    # ------------------------------------------------------------------ content
    @property
    def mode(self) -> str:
        """``'simulation'`` with a simulate table, else ``'theory'``."""
        return "theory" if self.simulate is None else "simulation"

    @property
    def columns(self) -> tuple[str, ...]:
        """The grid options, as table columns."""
        return tuple(self.axes)

    def __len__(self) -> int:
        return len(self._tasks)

    def __repr__(self) -> str:
        axes = ", ".join(f"{k}[{len(v)}]" for k, v in self.axes.items())
        return f"Grid({len(self)} points: {axes}; mode={self.mode})"

    def points(self) -> list[dict[str, Any]]:
        """The grid points in order: column -> display value."""
        return [dict(t["point"]) for t in self._tasks]

    def tasks(self) -> list[dict[str, Any]]:
        """The tasks of :func:`run_task`, in grid order (plain, picklable dicts)."""
        return [dict(t) for t in self._tasks]

    def keys(self) -> list[str]:
        """The stable key of every point, in grid order."""
        return [t["key"] for t in self._tasks]

    def _validate(self) -> list[dict[str, Any]]:
        cols = list(self.axes)
        tasks = []
        # the points that differ only in lam / alpha (or in the simulation settings) share
        # a setup, validated once: by the indices of the other grid options
        cache: dict[tuple, PointSetup] = {}
        setup_keys: dict[tuple, str] = {}  # those indices -> hash of the setup's options
        shared = [self._fields[c] not in (*_CHEAP, *SIMULATE_KEYS) for c in cols]
        n = math.prod(self.shape)
        for i, idx in enumerate(itertools.product(*(range(k) for k in self.shape))):
            point = {c: self.axes[c][j] for c, j in zip(cols, idx)}
            options = dict(self.fixed)
            sim = dict(self.simulate) if self.simulate is not None else None
            for c, j in zip(cols, idx):
                f, v = self._fields[c], self._values[c][j]
                if f in SIMULATE_KEYS:
                    sim[f] = v
                else:
                    options[f] = v
            full = {**_DEFAULTS, **options}
            setup_idx = tuple(j for j, s in zip(idx, shared) if s)
            try:
                base = _base_setup(full, cache, setup_idx)
                lam, alpha = full["lam"], full["alpha"]
                if (lam, alpha) != (base.lam, base.alpha):
                    # the library's checks that depend on lam / alpha (the rest of the
                    # point was validated with its setup)
                    base.check(lam=lam, alpha=alpha)
                if sim is not None:
                    check_simulation(
                        base.at(lam=lam, alpha=alpha),
                        d=sim["d"],
                        seeds=sim["seeds"],
                        seed=sim["seed"],
                    )
            except (ValueError, TypeError, GaussmixError) as exc:
                raise GridError(
                    f"grid point {i + 1} of {n} ({_describe_point(point)}): {exc}"
                ) from None
            setup_key = setup_keys.get(setup_idx)
            if setup_key is None:
                setup_key = setup_keys[setup_idx] = point_key(dict(_setup_options(full)))
            tasks.append(
                {
                    "key": point_key(full, sim),
                    "point": point,
                    "options": full,
                    "simulate": sim,
                    "setup": setup_key,
                }
            )
        return tasks

    def provenance(self) -> dict[str, Any]:
        """Fixed options, grid axes and simulation settings (JSON-friendly)."""
        return {
            "fixed": dict(self._fixed_display),
            "grid": {k: list(v) for k, v in self.axes.items()},
            "simulate": None if self.simulate is None else dict(self.simulate),
        }


def point_key(options: Mapping[str, Any], simulate: Mapping[str, Any] | None = None) -> str:
    """Stable hash of a point: all its options (defaults included) and simulation settings."""
    spec = {
        "v": _CHECKPOINT_VERSION,
        "mode": "theory" if simulate is None else "simulation",
        "options": dict(options),
        "simulate": None if simulate is None else dict(simulate),
    }
    return hashlib.sha256(dumps(spec, sort_keys=True)).hexdigest()[:20]


#: every PointOptions field with its default, in field order
_DEFAULTS = {f.name: f.default for f in dataclasses.fields(PointOptions)}


def _setup_options(options: Mapping[str, Any]) -> tuple:
    """The options of a point that its setup depends on (all but lam / alpha), hashable."""
    return tuple((k, v) for k, v in options.items() if k not in _CHEAP)


def _base_setup(
    options: Mapping[str, Any], cache: dict[Any, PointSetup], key: Any = None
) -> PointSetup:
    """A validated setup for every point that differs from ``options`` only in lam/alpha.

    ``options`` has every PointOptions field; ``key`` identifies them up to lam / alpha in
    ``cache`` (default: :func:`_setup_options`).  Built (and validated) by ``build_point``
    at the first such point; the returned setup carries that point's lam and alpha.
    """
    if key is None:
        key = _setup_options(options)
    setup = cache.get(key)
    if setup is None:
        setup = build_point(PointOptions(**options))
        if len(cache) >= 256:
            cache.clear()
        cache[key] = setup
    return setup


# ============================================================================ one point
@functools.lru_cache(maxsize=1)
def theory_keys() -> tuple[str, ...]:
    """Keys of ``gaussmix point --json`` (:meth:`FixedPointResult.to_dict` + ``params``).

    Read from the result of a tiny closed-form problem, so that tables follow the result
    object when it gains a key.
    """
    from gaussmix.theory.mixture import Mixture

    mix = Mixture.isotropic(0.5, "antipodal", n_clusters=2, labels="binary")
    res = solve(mix, "square", lam=1.0, alpha=1.0, estimate_error=False)
    return (*res.to_dict(), "params")


def simulation_keys(extra: Sequence[str] = ()) -> tuple[str, ...]:
    """Keys of ``gaussmix simulate --json``: :func:`theory_keys` with ``<key>_se`` after
    the errors, ``Q``, ``M``, ``b`` and any per-seed observable in ``extra``."""
    keys: list[str] = []
    for k in theory_keys():
        keys.append(k)
        if k in ERROR_KEYS or k in ("Q", "M", "b") or k in extra:
            keys.append(f"{k}_se")
    return tuple(keys)


def theory_payload(
    setup: PointSetup,
    *,
    lam: float | None = None,
    alpha: float | None = None,
    throw: bool = False,
) -> dict[str, Any]:
    """The ``gaussmix point --json`` object of one point (NaN errors if no fixed point).

    ``lam`` / ``alpha`` override those of ``setup`` (validated by the solver).
    """
    lam = setup.lam if lam is None else lam
    alpha = setup.alpha if alpha is None else alpha
    # the setup's problem at this lam / alpha: the checks of make_problem that depend on
    # them (the mixture, loss and penalty were validated with the setup)
    problem = setup.check(lam=lam, alpha=alpha)
    res = solve_problem(problem, throw=throw, **setup.solve_kw)
    payload = res.to_dict()
    payload["params"] = {
        **setup.params,
        "lam": lam,
        "alpha": alpha,
        "quadrature": res.params.get("quadrature"),
        "version": __version__,
    }
    return payload


#: solver tolerance of simulated logistic fits with an l1 term (saga): the KKT residual is
#: then ~1e-7 and the observables move by < 1e-4 (see tests/test_sparse_validation.py)
SAGA_L1_TOL = 1e-5
#: theory settings that a simulation does not use
_THEORY_ONLY = ("tol", "max_iter", "quad_order")


def check_simulation(setup: PointSetup, *, d: Any, seeds: Any, seed: Any = 0) -> dict:
    """Validate a simulation of ``setup`` at dimension ``d`` before running it.

    Returns the validated simulation parameters (with ``n = round(alpha d)``).
    """
    from gaussmix.simulate import simulation as sim

    p = sim._validate(
        setup.mixture,
        setup.loss,
        setup.lam,
        setup.alpha,
        d,
        seeds,
        seed,
        setup.penalty,
        setup.l1_ratio,
        "fixed",
        1,
        None,
    )
    k = setup.mixture.n_clusters
    if setup.mixture.kind == "isotropic" and p["d"] < k:
        raise ValueError(f"d must be >= the number of clusters K={k}, got {p['d']}")
    return p


def simulation_payload(
    setup: PointSetup,
    *,
    d: int,
    seeds: int,
    seed: int = 0,
    n_jobs: int = 1,
    progress: bool = False,
) -> dict[str, Any]:
    """The ``gaussmix simulate --json`` object: means and standard errors over seeds.

    Same keys as :func:`theory_payload` (``V`` is None and ``free_energy`` NaN: they have
    no finite-size counterpart here) plus ``<key>_se`` for the errors and the overlaps.
    ``n_iter`` and ``residual`` are the largest ERM iteration count and KKT residual over
    the seeds.  Logistic / cross-entropy fits with an l1 term (saga) stop at a relative
    tolerance of :data:`SAGA_L1_TOL` on the coefficients (the default 1e-10 takes about a
    minute per seed at d = 1000).
    """
    from gaussmix.simulate.simulation import simulate

    saga_l1 = setup.loss in ("logistic", "cross-entropy") and setup.penalty != "l2"
    res = simulate(
        setup.mixture,
        loss=setup.loss,
        lam=setup.lam,
        alpha=setup.alpha,
        d=d,
        seeds=seeds,
        seed=seed,
        **setup.penalty_kw,
        n_jobs=n_jobs,
        progress=progress,
        tol=SAGA_L1_TOL if saga_l1 else None,
    )
    ps = res.per_seed
    n_bad = int((~ps["converged"].astype(bool)).sum())
    ierr = float(ps["integration_error"].max())
    params = {k: v for k, v in setup.params.items() if k not in _THEORY_ONLY}
    params.update(
        d=int(d),
        n=int(res.params["n"]),
        seeds=int(seeds),
        seed=int(seed),
        quadrature="none (exact orthant probabilities)",
        version=__version__,
    )
    known: dict[str, Any] = {
        "converged": n_bad == 0,
        "n_iter": int(ps["n_iter"].max()),
        "residual": float(ps["kkt_residual"].max()),
        "Q": res.Q.tolist(),
        "Q_se": res.Q_se.tolist(),
        "M": res.M.tolist(),
        "M_se": res.M_se.tolist(),
        "V": None,
        "b": res.b.tolist(),
        "b_se": res.b_se.tolist(),
        "free_energy": float("nan"),
        "integration_error": ierr,
        "integration_errors": {"test_error": ierr, "train_error": 0.0, "train_loss": 0.0},
        "message": "converged"
        if n_bad == 0
        else f"{n_bad} of {seeds} seeds did not reach the ERM solver tolerance",
        "params": params,
    }
    # other observables of the theory (e.g. nonzero_fraction) that the seeds measured
    per_seed = [k for k in theory_keys() if k not in known and k in res.mean]
    out: dict[str, Any] = {}
    for key in simulation_keys(per_seed):
        base = key[:-3] if key.endswith("_se") else key
        if key in known:
            out[key] = known[key]
        elif base in ERROR_KEYS or base in per_seed:
            out[key] = float(res.se[base] if key.endswith("_se") else res.mean[base])
        else:
            out[key] = None  # not measured by the simulation
    return out


def _failed_payload(keys: Sequence[str], message: str, params: dict) -> dict[str, Any]:
    row: dict[str, Any] = {k: None if k in NESTED_KEYS else float("nan") for k in keys}
    row.update(converged=False, n_iter=0, message=message, params=params)
    return row


# ============================================================================ tasks
_WORKER_SETUPS: dict[tuple, PointSetup] = {}
_THREADS_LIMITED = False


def _limit_threads_once() -> None:
    """One BLAS/OpenMP thread in this (worker) process, set once."""
    global _THREADS_LIMITED, _THREAD_LIMITER
    if not _THREADS_LIMITED:
        from threadpoolctl import threadpool_limits

        _THREAD_LIMITER = threadpool_limits(1)
        _THREADS_LIMITED = True


_THREAD_LIMITER: Any = None
#: the test hook's delay per task (read when the module is imported, in every worker)
_TEST_DELAY = float(os.environ.get(TEST_DELAY_ENV) or 0.0)
#: numerical failures of one point, reported as a row instead of stopping the sweep
_POINT_FAILURES = (GaussmixError, ArithmeticError, np.linalg.LinAlgError, ValueError)


def run_task(task: Mapping[str, Any]) -> dict[str, Any]:
    """Run one point; return ``{'key', 'row', 'warnings', 'quadrature'}`` (JSON values).

    ``row`` is the ``point --json`` (or ``simulate --json``) object of the point, as the
    checkpoint holds it: nested values as lists and dicts, non-finite numbers as None (the
    table turns them into NaN again).

    ``task`` is one of :meth:`Grid.tasks`: ``{'key', 'point', 'options', 'simulate',
    'setup'}`` (``options``: every :class:`~gaussmix.cli.options.PointOptions` field;
    ``simulate``: None or ``{'d', 'seeds', 'seed'}``; ``setup``: a hash of the options
    other than lam and alpha, which this process validates once), plus
    ``'limit_threads': True`` to pin BLAS to one thread in this process.  Numerical failures
    become a row with ``converged=False``.
    """
    return loads(_run_point(task)[1])


@contextlib.contextmanager
def _recording() -> Iterator[list]:
    """Record every warning (numpy's RuntimeWarnings aside) into the yielded list."""
    with warnings.catch_warnings(record=True) as log:
        warnings.simplefilter("always")
        warnings.simplefilter("ignore", RuntimeWarning)  # numpy overflow noise
        yield log


def _run_point(task: Mapping[str, Any], log: list | None = None) -> tuple[str, bytes]:
    """Run one point: its key and its checkpoint line (the record of :func:`run_task`).

    ``log``: the list of an active :func:`_recording`, whose warnings (all of them, then
    emptied) are this point's; by default the point records its own.
    """
    if log is None:
        with _recording() as log:
            return _run_point(task, log)
    if task.get("limit_threads"):
        _limit_threads_once()
    if _TEST_DELAY:
        time.sleep(_TEST_DELAY)
    sim = task.get("simulate")
    base = None
    try:
        options = task["options"]
        lam, alpha = options["lam"], options["alpha"]
        base = _base_setup(options, _WORKER_SETUPS, task.get("setup"))
        if sim is None:
            row = theory_payload(base, lam=lam, alpha=alpha, throw=False)
        else:
            row = simulation_payload(
                base.at(lam=lam, alpha=alpha),
                d=sim["d"],
                seeds=sim["seeds"],
                seed=sim.get("seed", 0),
            )
    except _POINT_FAILURES as exc:
        msg = " ".join(str(exc).split())
        keys = theory_keys() if sim is None else simulation_keys()
        params = {} if base is None else {**base.params, "lam": lam, "alpha": alpha}
        row = _failed_payload(keys, f"failed: {type(exc).__name__}: {msg}", params)
    seen: list[list[str]] = []
    for w in log:
        item = [w.category.__name__, " ".join(str(w.message).split())]
        if item not in seen:
            seen.append(item)
    del log[:]
    p = row.get("params")
    quadrature = p.get("quadrature") if isinstance(p, dict) else None
    record = {"key": task["key"], "row": row, "warnings": seen, "quadrature": quadrature}
    # the line is the point's one encoding: the table reads fresh and resumed points alike
    # from their lines (floats round-trip exactly)
    return task["key"], dumps(record) + b"\n"


def _run_stream(tasks: Sequence[Mapping[str, Any]]) -> Iterator[tuple[str, bytes]]:
    """:func:`_run_point` over ``tasks`` in this process, with one warnings recorder for
    all of them (a recorder per point costs more than the bookkeeping of a cheap point).

    A warning issued while the caller holds the generator between two points is counted
    with the next point.  Close the generator (``contextlib.closing``) when abandoning it.
    """
    with _recording() as log:
        for t in tasks:
            yield _run_point(t, log)


def _run_points(tasks: Sequence[Mapping[str, Any]]) -> list[tuple[str, bytes]]:
    """:func:`_run_point` over a chunk of tasks (the unit of work sent to a dask worker)."""
    return list(_run_stream(tasks))


# ============================================================================ checkpoint
def checkpoint_path(out: str | os.PathLike) -> Path:
    """The checkpoint of the final table ``out``: ``<out>.checkpoint.jsonl`` next to it."""
    p = Path(out)
    return p.with_name(p.name + ".checkpoint.jsonl")


class _Checkpoint:
    """Append-only JSON-lines file of finished points, one complete line per write."""

    def __init__(self, path: Path, *, fsync_interval: float) -> None:
        self.path = path
        self.fsync_interval = fsync_interval
        self.fd: int | None = None
        self._last_sync = time.monotonic()
        self._dirty = False

    def open(self) -> dict[str, bytes]:
        """Lock the file, drop an incomplete last line and return the finished points' lines
        (key -> line; the first line of a key wins)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            self._lock(fd)
            records = self._load(fd)
        except BaseException:
            os.close(fd)
            raise
        self.fd = fd
        return records

    def _lock(self, fd: int) -> None:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not POSIX
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise OSError(
                f"checkpoint {str(self.path)!r} is in use by another running sweep"
            ) from None

    def _load(self, fd: int) -> dict[str, bytes]:
        size = os.fstat(fd).st_size
        data = os.pread(fd, size, 0) if size else b""
        end = data.rfind(b"\n") + 1
        if end < len(data):  # a killed writer left half a line: drop it
            os.ftruncate(fd, end)
            data = data[:end]
        records: dict[str, bytes] = {}
        bad = 0
        for line in data.splitlines(keepends=True):
            if not line.strip():
                continue
            try:
                rec = loads(line)
                key = rec["key"]
                if not isinstance(rec["row"], dict):
                    raise TypeError
            except (ValueError, KeyError, TypeError):
                bad += 1
                continue
            records.setdefault(key, line)
        if bad:
            warnings.warn(
                f"checkpoint {str(self.path)!r}: ignored {bad} unreadable line(s)",
                UserWarning,
                stacklevel=4,
            )
        return records

    def append(self, line: bytes) -> None:
        assert self.fd is not None
        n = os.write(self.fd, line)
        if n < len(line):  # (a regular file takes the whole line at once)
            view = memoryview(line)[n:]
            while view:
                view = view[os.write(self.fd, view) :]
        self._dirty = True
        now = time.monotonic()
        if now - self._last_sync >= self.fsync_interval:
            os.fsync(self.fd)
            self._last_sync = now
            self._dirty = False

    def close(self) -> None:
        if self.fd is None:
            return
        try:
            if self._dirty:
                os.fsync(self.fd)
        finally:
            os.close(self.fd)  # releases the lock
            self.fd = None


def _csv_cells(values: np.ndarray) -> list[Any]:
    """The cells of one column for :func:`csv.writer` (see :func:`_csv_bytes`)."""
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


def _csv_bytes(df: pd.DataFrame) -> bytes:
    """``df`` as UTF-8 CSV without index, read back by :func:`pandas.read_csv` exactly as
    ``df.to_csv(index=False)`` (same quoting, empty cells for NaN and None); floats in
    their shortest round-trip text (``1e-8`` where pandas writes ``1e-08``)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(df.columns)
    writer.writerows(zip(*(_csv_cells(df[c].to_numpy()) for c in df.columns)))
    return buf.getvalue().encode()


def _write_csv_atomic(df: pd.DataFrame, path: Path) -> Path:
    import tempfile

    data = _csv_bytes(df)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return path


# ============================================================================ executors
def _run_serial(tasks: list[dict]) -> Iterator[tuple[str, bytes]]:
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):
        yield from _run_stream(tasks)


def _run_joblib(tasks: list[dict], jobs: int) -> Iterator[tuple[str, bytes]]:
    from joblib import Parallel, delayed, effective_n_jobs, parallel_config

    if effective_n_jobs(jobs) == 1 or len(tasks) == 1:
        yield from _run_serial(tasks)
        return
    with parallel_config(backend="loky", inner_max_num_threads=1):
        gen = Parallel(n_jobs=jobs, return_as="generator_unordered")(
            delayed(_run_point)(t) for t in tasks
        )
        yield from gen


def _run_dask(tasks: list[dict], scheduler: Any, jobs: int) -> Iterator[tuple[str, bytes]]:
    try:
        from distributed import Client, LocalCluster, as_completed
    except ImportError as exc:  # pragma: no cover
        raise ImportError(
            "backend='dask' needs dask.distributed (pip install 'gaussmix[dask]')"
        ) from exc
    cluster = client = None
    if isinstance(scheduler, Client):
        c = scheduler
    else:
        if scheduler is None:
            from joblib import effective_n_jobs

            cluster = LocalCluster(
                n_workers=effective_n_jobs(jobs),
                threads_per_worker=1,
                processes=True,
                dashboard_address=None,
            )
            target: Any = cluster
        else:
            target = scheduler
        try:
            client = Client(target, set_as_default=False, timeout=CONNECT_TIMEOUT)
        except (OSError, TimeoutError) as exc:
            if cluster is not None:
                cluster.close()
            raise OSError(f"cannot connect to the dask scheduler {scheduler!r}: {exc}") from None
        c = client
    futures = []
    try:
        todo = [{**t, "limit_threads": True} for t in tasks]
        # points travel in chunks (a few per worker and round) so that the scheduler's cost
        # per task stays small against cheap points; a chunk is in flight as a whole
        n_workers = max(1, len(c.scheduler_info().get("workers", {})))
        size = max(1, min(DASK_CHUNK, len(todo) // (4 * n_workers)))
        chunks = [todo[i : i + size] for i in range(0, len(todo), size)]
        keys = [f"gaussmix-sweep-{ch[0]['key']}-{len(ch)}" for ch in chunks]
        futures = c.map(_run_points, chunks, key=keys)
        for fut, recs in as_completed(futures, loop=c.loop, with_results=True):
            fut.release()
            yield from recs
    finally:
        pending = [f for f in futures if not f.done()]
        if pending:
            c.cancel(pending)
        if client is not None:
            client.close()
        if cluster is not None:
            cluster.close()


# ============================================================================ results
def _table(
    grid: Grid, tasks: Sequence[Mapping[str, Any]], lines: Sequence[bytes]
) -> tuple[pd.DataFrame, int, list[tuple[str, str, str]], list[str]]:
    """The table of a sweep from its points' checkpoint lines (in grid order).

    Returns the DataFrame (grid columns, then the keys of the fullest row and any other key
    seen; nested values as JSON text, missing numbers as NaN), the number of failed points,
    the warnings ``(category, message, point)`` and the distinct quadrature rules.  Each
    line is decoded and dropped in turn (holding a thousand decoded records makes the
    garbage collector scan them, which costs more than the decoding).
    """
    columns: dict[str, list] = {}
    fullest: list[str] = []
    found: list[tuple[str, str, str]] = []
    quads: list[str] = []
    failed = 0
    for i, (task, line) in enumerate(zip(tasks, lines)):
        rec = loads(line)
        row = rec["row"]
        if not row.get("converged"):
            failed += 1
        for cat, msg in rec.get("warnings", ()):
            found.append((cat, msg, _describe_point(task["point"])))
        q = rec.get("quadrature")
        if q and q not in quads:
            quads.append(q)
        if len(row) > len(fullest):
            fullest = list(row)
        for k, v in row.items():
            col = columns.get(k)
            if col is None:
                col = columns[k] = [None] * i
            col.append(dumps(v).decode() if isinstance(v, list | dict) else v)
        if len(row) < len(columns):  # keys that this row lacks
            for col in columns.values():
                if len(col) == i:
                    col.append(None)
    data = {c: [t["point"][c] for t in tasks] for c in grid.columns}
    for k in [*fullest, *(k for k in columns if k not in fullest)]:
        col = columns[k]
        if not (k in NESTED_KEYS or k == "message") and None in col:
            col = [math.nan if v is None else v for v in col]
        data[k] = col
    return pd.DataFrame(data), failed, found, quads


@dataclass(eq=False)
class SweepResult:
    """The table of a sweep, one row per grid point in grid order.

    Attributes
    ----------
    df : pandas.DataFrame
        Grid options as columns, then the keys of ``gaussmix point --json`` (theory) or
        ``gaussmix simulate --json`` (simulation); nested values are JSON strings.
    grid : Grid
    attrs : dict
        Provenance (see :meth:`to_xarray`).
    computed, resumed, failed : int
        Points computed by this run, taken from the checkpoint, and without a valid
        result (``converged=False``).
    out, checkpoint : Path or None
    warnings : list of (category, message, point)
        Warnings raised while computing the points (including resumed ones).
    """

    df: pd.DataFrame
    grid: Grid
    attrs: dict
    computed: int = 0
    resumed: int = 0
    failed: int = 0
    elapsed: float = 0.0
    out: Path | None = None
    checkpoint: Path | None = None
    warnings: list = field(default_factory=list)

    @property
    def mode(self) -> str:
        return self.grid.mode

    def to_csv(self, path: str | os.PathLike) -> Path:
        """Write the table atomically (temporary file + ``os.replace``)."""
        return _write_csv_atomic(self.df, Path(path))

    def to_xarray(self) -> Any:
        """The table as an :class:`xarray.Dataset` with the grid options as dimensions.

        Scalar observables are variables over the grid; ``Q, M, V, b`` (and ``*_se``) get
        the extra dimensions ``cluster``, ``out``, ``out2`` when every point has the same
        shape (else they stay JSON strings); ``message``, ``params`` and
        ``integration_errors`` are strings.  ``attrs`` carry the provenance: gaussmix
        version, mode, tolerance, quadrature rule, seeds / d / seed (simulations), the fixed
        options and grid (JSON), backend and the date.
        """
        import xarray as xr

        dims = list(self.grid.columns)
        shape = self.grid.shape
        coords = {c: list(v) for c, v in self.grid.axes.items()}
        data_vars: dict[str, Any] = {}
        for col in self.df.columns:
            if col in dims:
                continue
            values = self.df[col].to_numpy()
            if col in ("Q", "Q_se", "M", "M_se", "V", "b", "b_se"):
                arr = _stack_nested(values)
                if arr is not None:
                    extra = ("cluster", "out", "out2")[: arr.ndim - 1]
                    if col.startswith("b"):
                        extra = ("out",)
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


def _provenance(
    grid: Grid, quads: Sequence[str], backend: str, created: str, failed: int
) -> dict[str, Any]:
    swept = set(grid._fields.values())

    def setting(name: str) -> Any:  # fixed value, default, or 'grid' (a dimension)
        return "grid" if name in swept else grid.fixed.get(name, _DEFAULTS[name])

    attrs: dict[str, Any] = {
        "title": f"gaussmix sweep ({grid.mode})",
        "gaussmix_version": __version__,
        "mode": grid.mode,
        "created": created,
        "backend": backend,
        "n_points": len(grid),
        "n_failed": failed,
        "quadrature": "; ".join(quads) if quads else "none",
        "fixed": dict(grid._fixed_display),
        "grid": {k: list(v) for k, v in grid.axes.items()},
        "python": sys.version.split()[0],
        "numpy": np.__version__,
    }
    if grid.simulate is None:
        attrs["tol"] = setting("tol")
        attrs["max_iter"] = setting("max_iter")
        attrs["quad_order"] = setting("quad_order")  # None: the library's default rule
    else:
        from gaussmix.simulate import simulation as sim

        attrs["erm_tolerances"] = dict(getattr(sim, "_DEFAULT_TOL", {}))
        for key in SIMULATE_KEYS:
            attrs[key] = "grid" if key in grid._fields.values() else grid.simulate[key]
        attrs["seeding"] = "numpy.random.SeedSequence(seed).spawn(seeds)"
    return attrs


# ============================================================================ sweep
def sweep(
    grid: Grid | Mapping[str, Any] | str | os.PathLike,
    *,
    out: str | os.PathLike | None = None,
    checkpoint: str | os.PathLike | None = None,
    simulate: Mapping[str, Any] | None = None,
    backend: str | None = None,
    jobs: int = -1,
    scheduler: Any = None,
    progress: bool = True,
    fsync_interval: float = 1.0,
) -> SweepResult:
    """Run every point of ``grid`` on an executor, with checkpoint and resume.

    Parameters
    ----------
    grid : Grid, mapping or path
        A :class:`Grid`, a mapping ``{'fixed', 'grid', 'simulate'}`` or a TOML file.
    out : path, optional
        Final CSV (written atomically, in grid order).  Its checkpoint defaults to
        :func:`checkpoint_path` ``(out)``.
    checkpoint : path, optional
        JSON-lines checkpoint; re-running the same sweep skips the points already there.
        Without ``out`` and ``checkpoint`` nothing is written.
    simulate : mapping, optional
        ``{'d', 'seeds', 'seed'}``: simulate the points (replaces the grid's own table).
    backend : {'joblib', 'dask', 'serial'}, optional
        Default: ``'dask'`` when ``scheduler`` is given, else ``'joblib'``.
    jobs : int
        Workers for joblib (joblib convention, -1 = all cores) and for a LocalCluster
        started by ``backend='dask'`` without scheduler.
    scheduler : str or distributed.Client, optional
        Address of a dask scheduler (``tcp://host:8786``) or a client.
    progress : bool
        Progress bar on stderr.
    fsync_interval : float
        Seconds between ``fsync`` calls on the checkpoint (0: after every row).

    Returns
    -------
    SweepResult

    Raises
    ------
    GridError
        Invalid grid (before any work).
    OSError
        Checkpoint in use by another sweep, unreachable scheduler, unwritable output.
    """
    t0 = time.perf_counter()
    if isinstance(grid, str | os.PathLike):
        grid = Grid.from_toml(grid)
    elif isinstance(grid, Mapping):
        grid = Grid.from_dict(grid)
    elif not isinstance(grid, Grid):
        raise TypeError(f"grid must be a Grid, a mapping or a TOML path, got {grid!r}")
    if simulate is not None:
        grid = grid.with_simulate(simulate)
    if backend is None:
        backend = "dask" if scheduler is not None else "joblib"
    if backend not in BACKENDS:
        raise ValueError(
            f"backend must be one of {', '.join(map(repr, BACKENDS))}; got {backend!r}"
        )
    if scheduler is not None and backend != "dask":
        raise ValueError(f"scheduler is only used with backend='dask', got backend={backend!r}")
    if isinstance(jobs, bool) or not isinstance(jobs, int | np.integer) or jobs == 0:
        raise ValueError(f"jobs must be a non-zero integer (joblib convention), got {jobs!r}")
    fsync_interval = float(fsync_interval)
    if not fsync_interval >= 0:
        raise ValueError(f"fsync_interval must be >= 0, got {fsync_interval}")
    out_path = Path(out) if out is not None else None
    ck_path = Path(checkpoint) if checkpoint is not None else None
    if ck_path is None and out_path is not None:
        ck_path = checkpoint_path(out_path)
    created = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")

    tasks = grid._tasks  # (read only: the executors send copies or leave them alone)
    keys = grid.keys()
    records: dict[str, bytes] = {}  # key -> checkpoint line
    ck = _Checkpoint(ck_path, fsync_interval=fsync_interval) if ck_path is not None else None
    if ck is not None:
        done = ck.open()
        wanted = set(keys)
        records = {k: v for k, v in done.items() if k in wanted}
    resumed = len(records)
    todo = [t for t in tasks if t["key"] not in records]
    computed = 0
    try:
        from tqdm.auto import tqdm

        with tqdm(
            total=len(tasks),
            initial=resumed,
            desc=f"sweep ({grid.mode})",
            unit="pt",
            disable=not progress,
            file=sys.stderr,
            smoothing=0.05,
        ) as bar:
            if todo:
                if backend == "serial":
                    stream = _run_serial(todo)
                elif backend == "joblib":
                    stream = _run_joblib(todo, int(jobs))
                else:
                    stream = _run_dask(todo, scheduler, int(jobs))
                with contextlib.closing(stream):
                    for key, line in stream:
                        if ck is not None:
                            ck.append(line)
                        records[key] = line
                        computed += 1
                        bar.update()
    finally:
        if ck is not None:
            ck.close()

    # fresh and resumed points alike: the table reads every point from its line
    df, failed, found, quads = _table(grid, tasks, [records[k] for k in keys])
    attrs = _provenance(grid, quads, backend, created, failed)
    result = SweepResult(
        df=df,
        grid=grid,
        attrs=attrs,
        computed=computed,
        resumed=resumed,
        failed=failed,
        out=out_path,
        checkpoint=ck_path,
        warnings=found,
    )
    if out_path is not None:
        result.to_csv(out_path)
    result.elapsed = time.perf_counter() - t0
    _reemit(found, failed, len(tasks))
    return result


def _reemit(found: list[tuple[str, str, str]], failed: int, total: int) -> None:
    """Re-issue the points' warnings in this process (one per distinct message)."""
    from gaussmix.core import exceptions
    from gaussmix.simulate import simulation as simulate

    classes: dict[str, type[Warning]] = {}
    for mod in (exceptions, simulate):
        for name in dir(mod):
            obj = getattr(mod, name)
            if isinstance(obj, type) and issubclass(obj, Warning):
                classes[name] = obj
    seen = set()
    for cat, msg, where in found:
        if (cat, msg) in seen:
            continue
        seen.add((cat, msg))
        warnings.warn(f"{msg} (at {where})", classes.get(cat, UserWarning), stacklevel=3)
    if failed:
        warnings.warn(
            f"{failed} of {total} grid points have no valid result (converged=False; "
            "see the message column)",
            ConvergenceWarning,
            stacklevel=3,
        )
