"""Sweep grids written with the options of ``gaussmix point``, translated into library
point specifications (:class:`gaussmix.sweep.PointSpec`).

A :class:`Grid` is a table of *fixed* point options (those of ``gaussmix point``, see
:class:`gaussmix.frontend.options.PointOptions`) and *grid* options (option -> list of values);
its points are the Cartesian product of the grid options, first option slowest.  With a
``simulate`` table (``d``, ``seeds``, optional ``seed``) every point is a finite-size
simulation instead of a fixed point.  Every point is validated when the grid is built,
before any work starts::

    from gaussmix.cli.grid import Grid
    from gaussmix.sweep import sweep

    grid = Grid({"alpha": [0.5, 1.0, 2.0], "lam": [0.01, 0.1, 1.0]}, fixed={"loss": "logistic"})
    res = sweep(grid, out="sweep.csv")       # (grid.spec_grid(): the library's points)
    res = run_grid("grid.toml", out="sweep.csv")  # a TOML file or a mapping

The TOML file of ``gaussmix sweep --grid`` has the tables ``[fixed]``, ``[grid]`` and
optionally ``[simulate]``.
"""

from __future__ import annotations

import dataclasses
import math
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, get_args

import numpy as np

from gaussmix.core.exceptions import GaussmixError
from gaussmix.core.validation import PARAMETERS, check_param
from gaussmix.frontend.options import (
    SOLVER_OPTIONS,
    PointOptions,
    PointSetup,
    build_point,
    changed_solver_options,
    integer_parser,
)
from gaussmix.sweep import PointSpec, Simulation, SpecGrid, SweepResult, sweep
from gaussmix.sweep.spec import MAX_POINTS, describe_point

from .renames import RENAMED_GRID_KEYS

__all__ = ["Grid", "GridError", "run_grid", "spec_of_setup", "SIMULATE_KEYS"]

#: keys of the ``simulate`` table
SIMULATE_KEYS = ("d", "seeds", "seed")
#: options that vary a point without changing its mixture (cheap re-validation)
_CHEAP = ("lam", "alpha")
#: every PointOptions field with its default, in field order
_DEFAULTS = {f.name: f.default for f in dataclasses.fields(PointOptions)}
#: spec settings that the provenance reports as 'grid' when they are grid options
_SWEPT = (*SOLVER_OPTIONS, *SIMULATE_KEYS)


class GridError(ValueError):
    """A grid (or its TOML file) is invalid; the message names the problem."""


# ============================================================================ values
def _field_kinds() -> dict[str, tuple[str, bool]]:
    """PointOptions field -> (base type 'int'|'float'|'str'|'bool', accepts None)."""
    kinds = {}
    for f in dataclasses.fields(PointOptions):
        t = f.metadata["cli_type"]
        args = set(get_args(t)) or {t}
        optional = type(None) in args
        args.discard(type(None))
        (base,) = args
        kinds[f.name] = ({int: "int", float: "float", str: "str", bool: "bool"}[base], optional)
    return kinds


_KINDS = _field_kinds()
#: PointOptions field -> the fact whose rule reads its integer (:func:`integer_parser`)
_PARSERS = {
    f.name: f.metadata["cli_option"]["parser"]
    for f in dataclasses.fields(PointOptions)
    if f.metadata["cli_option"]["parser"] is not None
}


def _number_text(v: Any) -> str:
    return str(int(v)) if isinstance(v, int) else repr(float(v))


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float | np.integer | np.floating) and not isinstance(v, bool)


def _coerce_number(kind: str, where: str, value: Any) -> tuple[Any, Any]:
    if kind == "float":
        if _is_number(value):
            return float(value), float(value)
        if isinstance(value, str):
            try:
                return float(value), float(value)
            except ValueError:
                pass
        raise GridError(f"{where} must be a number, got {value!r}")
    if isinstance(value, int | np.integer):
        return int(value), int(value)
    if isinstance(value, float | np.floating) and float(value).is_integer():
        return int(value), int(value)
    raise GridError(f"{where} must be an integer, got {value!r}")


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
    if kind == "bool":
        if isinstance(value, bool | np.bool_):
            return bool(value), bool(value)
        raise GridError(f"{where} must be true or false, got {value!r}")
    if isinstance(value, bool):
        raise GridError(f"{where} must be a {kind}, got the boolean {value!r}")
    if kind in ("float", "int"):
        fact = _PARSERS.get(name)
        if fact is not None and not (_is_number(value) and float(value).is_integer()):
            try:  # the library's rule of the fact (a float K: the message of check_param)
                integer_parser(fact, where)(value)
            except (TypeError, ValueError) as exc:
                raise GridError(str(exc)) from None
        return _coerce_number(kind, where, value)
    # str options, some of which are comma lists of numbers (rho, delta, ...)
    if isinstance(value, str):
        return value, value
    if _is_number(value):
        return _number_text(value), value
    if isinstance(value, list | tuple) and value and all(_is_number(v) for v in value):
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
    if norm in RENAMED_GRID_KEYS:
        raise GridError(f"{where}: {name!r} was renamed {RENAMED_GRID_KEYS[norm]!r}")
    valid = ", ".join(sorted(set(_KINDS) | set(extra)))
    raise GridError(f"{where}: unknown parameter {name!r}; valid parameters are: {valid}")


_SIM_HELP = {
    "d": f"input dimension, {PARAMETERS['d']}",
    "seeds": f"number of independent seeds, {PARAMETERS['seeds']}",
    "seed": f"root seed, {PARAMETERS['seed']}",
}


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


def _sim_value(where: str, key: str, value: Any) -> int:
    """A ``[simulate]`` value by the library's rule of ``key`` (a TOML ``1000.0`` is 1000)."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    try:
        return check_param(key, value, name=repr(key))
    except (TypeError, ValueError) as exc:
        raise GridError(f"{where} {exc}") from None


def _grid_values(name: str, norm: str, values: Any) -> tuple[list, tuple]:
    """The typed and the display values of one grid option (checked: a non-empty list
    without repetitions)."""
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
    return typed, tuple(shown)


# ============================================================================ specs
def spec_of_setup(
    setup: PointSetup,
    simulate: Mapping[str, int] | None = None,
    coords: Mapping[str, Any] | None = None,
) -> PointSpec:
    """The library's :class:`~gaussmix.sweep.PointSpec` of a resolved point (its
    ``params`` are the setup's, the ``params`` of ``gaussmix point --json``)."""
    kw = setup.solve_kw
    quadrature = kw.get("quadrature")
    return PointSpec(
        mixture=setup.mixture,
        loss=setup.loss,
        lam=setup.lam,
        alpha=setup.alpha,
        penalty=setup.penalty,
        l1_ratio=setup.l1_ratio,
        tol=kw["tol"],
        max_iter=kw["max_iter"],
        quad_order=None if quadrature is None else quadrature.n,
        solver=changed_solver_options(kw) if simulate is None else {},
        simulate=None if simulate is None else Simulation(**simulate),
        params=setup.params,
        coords={} if coords is None else coords,
    )


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
        *,
        base: str | os.PathLike | None = None,
    ) -> None:
        self._base = None if base is None else Path(base)
        self.simulate = _check_simulate(simulate)
        self._read_fixed({} if fixed is None else fixed)
        self._read_grid(grid)
        self._refuse_solver_options_in_simulation()
        self.shape = tuple(len(v) for v in self.axes.values())
        n = math.prod(self.shape)
        if n > MAX_POINTS:
            raise GridError(f"the grid has {n} points, more than {MAX_POINTS}")
        self._specs = self._validate()

    def _refuse_solver_options_in_simulation(self) -> None:
        """A ``[simulate]`` grid solves no fixed point: a solver option there would be
        ignored, so it is refused (as ``gaussmix simulate`` does not take them)."""
        if self.simulate is None:
            return
        for table, names in (("[fixed]", self.fixed), ("[grid]", self._fields.values())):
            given = [n for n in names if n in SOLVER_OPTIONS]
            if given:
                raise GridError(
                    f"{table} {given[0]!r} is an option of the theory's solver: a grid with "
                    "[simulate] solves no fixed point (remove it, or the [simulate] table)"
                )

    def _read_fixed(self, fixed: Any) -> None:
        if not isinstance(fixed, Mapping):
            raise GridError(f"[fixed] must be a table of options, got {fixed!r}")
        self.fixed: dict[str, Any] = {}
        self._fixed_display: dict[str, Any] = {}
        for name, value in fixed.items():
            norm = _option_name("[fixed]", name)
            if norm in self.fixed:
                raise GridError(f"[fixed]: option {norm!r} is given twice")
            self.fixed[norm], self._fixed_display[name] = _coerce(norm, f"[fixed] {norm!r}", value)
            self.fixed[norm] = self._path(norm, self.fixed[norm])

    def _read_grid(self, grid: Any) -> None:
        extra = SIMULATE_KEYS if self.simulate is not None else ()
        if not isinstance(grid, Mapping):
            raise GridError(f"[grid] must be a table of option = [values], got {grid!r}")
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
            typed, shown = _grid_values(str(name), norm, values)
            self._fields[str(name)] = norm
            self._values[str(name)] = [self._path(norm, v) for v in typed]
            self.axes[str(name)] = shown

    def _path(self, norm: str, value: Any) -> Any:
        """A ``mixture`` file relative to the grid's folder (``base``), else ``value``."""
        if norm != "mixture" or value is None or self._base is None:
            return value
        return str(self._base / Path(value).expanduser())

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_dict(cls, spec: Mapping[str, Any], *, base: str | os.PathLike | None = None) -> Grid:
        """From ``{'fixed': {...}, 'grid': {...}, 'simulate': {...}}`` (a parsed TOML file);
        a relative ``mixture`` file is read from the folder ``base`` (default: the current
        one)."""
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
        return cls(spec["grid"], spec.get("fixed"), spec.get("simulate"), base=base)

    @classmethod
    def from_toml(cls, path: str | os.PathLike) -> Grid:
        """Read a TOML file with ``[fixed]``, ``[grid]`` and optional ``[simulate]`` tables
        (a relative ``mixture = "file.npz"`` is read next to the TOML file)."""
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
            return cls.from_dict(spec, base=p.parent)
        except GridError as exc:
            raise GridError(f"{p.name}: {exc}") from None

    @classmethod
    def coerce(cls, grid: Grid | Mapping[str, Any] | str | os.PathLike) -> Grid:
        """A :class:`Grid`, a mapping ``{'fixed', 'grid', 'simulate'}`` or a TOML path."""
        if isinstance(grid, Grid):
            return grid
        if isinstance(grid, str | os.PathLike):
            return cls.from_toml(grid)
        if isinstance(grid, Mapping):
            return cls.from_dict(grid)
        raise TypeError(f"grid must be a Grid, a mapping or a TOML path, got {grid!r}")

    def with_simulate(self, simulate: Mapping[str, Any] | None) -> Grid:
        """The same grid in simulation mode (``simulate`` table) or theory mode (None)."""
        return Grid(
            {c: list(v) for c, v in self.axes.items()},
            self._fixed_display,
            simulate,
            base=self._base,
        )

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
        return len(self._specs)

    def __repr__(self) -> str:
        axes = ", ".join(f"{k}[{len(v)}]" for k, v in self.axes.items())
        return f"Grid({len(self)} points: {axes}; mode={self.mode})"

    def points(self) -> list[dict[str, Any]]:
        """The grid points in order: column -> display value."""
        return [dict(s.coords) for s in self._specs.points]

    def specs(self) -> list[PointSpec]:
        """The library's point specifications, in grid order."""
        return list(self._specs.points)

    def spec_grid(self) -> SpecGrid:
        """The points as the library's :class:`~gaussmix.sweep.SpecGrid` (what
        :func:`gaussmix.sweep.sweep` runs)."""
        return self._specs

    def keys(self) -> list[str]:
        """The stable key of every point (:func:`gaussmix.sweep.point_key`), in grid order."""
        return self._specs.keys()

    def provenance(self) -> dict[str, Any]:
        """Fixed options, grid axes and simulation settings (JSON-friendly)."""
        return {
            "fixed": dict(self._fixed_display),
            "grid": {k: list(v) for k, v in self.axes.items()},
            "simulate": None if self.simulate is None else dict(self.simulate),
        }

    # ------------------------------------------------------------------ validation
    def _point(self, idx: tuple[int, ...]) -> tuple[dict, dict, dict | None]:
        """Coordinates, options (every PointOptions field) and simulation of a point."""
        cols = list(self.axes)
        point = {c: self.axes[c][j] for c, j in zip(cols, idx)}
        options = dict(self.fixed)
        sim = dict(self.simulate) if self.simulate is not None else None
        for c, j in zip(cols, idx):
            f, v = self._fields[c], self._values[c][j]
            if f in SIMULATE_KEYS:
                sim[f] = v  # type: ignore[index]
            else:
                options[f] = v
        return point, {**_DEFAULTS, **options}, sim

    def _validate(self) -> SpecGrid:
        """Resolve every point into a spec (the points that differ only in lam / alpha or
        in the simulation settings share one setup, validated once); then the library's
        checks of every point."""
        cache: dict[tuple, PointSpec] = {}
        shared = [self._fields[c] not in (*_CHEAP, *SIMULATE_KEYS) for c in self.axes]
        n = math.prod(self.shape)
        specs = []
        for i, idx in enumerate(np.ndindex(*self.shape)):
            point, options, sim = self._point(idx)
            key = tuple(j for j, s in zip(idx, shared) if s)
            try:
                base = cache.get(key)
                if base is None:  # the setup's spec, validated once
                    setup = build_point(PointOptions(**options))
                    base = cache[key] = spec_of_setup(setup)
                spec = base.at(
                    lam=options["lam"],
                    alpha=options["alpha"],
                    coords=point,
                    simulate=None if sim is None else Simulation(**sim),
                )
            except (ValueError, TypeError, GaussmixError) as exc:
                where = f"grid point {i + 1} of {n} ({describe_point(point)})"
                raise GridError(f"{where}: {exc}") from None
            specs.append(spec)
            if len(cache) > 256:
                cache.clear()
        swept = {f for f in self._fields.values() if f in _SWEPT}
        description = {
            "fixed": dict(self._fixed_display),
            "grid": {k: list(v) for k, v in self.axes.items()},
        }
        try:
            return SpecGrid(tuple(specs), self.axes, description, frozenset(swept))
        except (ValueError, TypeError, GaussmixError) as exc:
            raise GridError(f"grid {exc}") from None


def run_grid(
    grid: Grid | Mapping[str, Any] | str | os.PathLike,
    *,
    simulate: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> SweepResult:
    """:func:`gaussmix.sweep.sweep` of a :class:`Grid`, a mapping ``{'fixed', 'grid',
    'simulate'}`` or a TOML file; ``simulate`` (``{'d', 'seeds', 'seed'}``) replaces the
    grid's own table.  The other keyword arguments are those of :func:`~gaussmix.sweep.sweep`."""
    g = Grid.coerce(grid)
    if simulate is not None:
        g = g.with_simulate(simulate)
    return sweep(g, **kwargs)
