"""The figure registry: each figure of the paper declared once, found by name.

A figure module declares each of its figures with :func:`register_figure` at import
time: a :class:`FigureSpec` carrying its name, the paper's figure number, a one-line
description, a caption, the command-line options it takes (:class:`FigureOption`), the
table function, the argument check and the plot function.  :func:`write_figure`,
:func:`validate_figure` and the ``gaussmix figure`` command read the registry; nothing
else dispatches on a figure's name.

Adding a figure::

    def my_table(alphas=..., *, progress=False) -> pd.DataFrame: ...
    def _my_args(alphas, progress) -> tuple: ...      # validates, computes nothing
    def plot_my_table(df: pd.DataFrame) -> Figure: ...

    register_figure(FigureSpec(
        name="my-figure", paper="Fig. 9", description="...", caption="...",
        table=my_table, check=_my_args, plot=plot_my_table,
        options=(FigureOption("--alphas", "alphas", "grid"),),
    ))

The ``check`` function takes the table function's parameters by name (apart from a
``**kw`` catch-all) and raises the ``TypeError`` / ``ValueError`` the table function
would raise, naming the argument.  Every option's flag must exist on the ``gaussmix
figure`` command (a test checks it).
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from gaussmix.core.validation import check_choice
from gaussmix.core.version import __version__

from .plotting import save_figure

__all__ = [
    "FIGURES",
    "FigureOption",
    "FigureSpec",
    "FigureOutput",
    "register_figure",
    "get_figure",
    "validate_figure",
    "write_figure",
    "ERROR_BAR_CAPTION",
]

#: option kinds: how the command line turns an option's text into the table's argument
OPTION_KINDS = ("float", "int", "bool", "str", "grid", "ints")
#: the sentence every caption of a figure with simulation dots carries
ERROR_BAR_CAPTION = (
    "Dots: finite-size simulations (exact ERM); error bars are +-1 standard error over seeds."
)
_MISSING = object()


@dataclass(frozen=True)
class FigureOption:
    """One command-line option of a figure.

    Attributes
    ----------
    flag : str
        The option on ``gaussmix figure`` (e.g. ``'--alphas'``).
    param : str
        The table function's parameter it sets (e.g. ``'alphas'``; ``'--d'`` sets
        ``'simulate_d'``).
    kind : {'float', 'int', 'bool', 'str', 'grid', 'ints'}
        ``'grid'``: a comma list ``a,b,...`` or a range ``[log:]START:STOP:NUM``;
        ``'ints'``: a comma list of integers.
    simulation : bool
        Only meaningful with simulations (refused with ``--no-simulate``).
    cli_default : Any
        Value passed when the option is absent from the command line (default: nothing
        is passed and the table function's default applies).
    """

    flag: str
    param: str
    kind: str
    simulation: bool = False
    cli_default: Any = _MISSING

    def __post_init__(self) -> None:
        if not self.flag.startswith("--"):
            raise ValueError(f"flag must start with '--', got {self.flag!r}")
        check_choice("kind", self.kind, OPTION_KINDS)

    @property
    def has_cli_default(self) -> bool:
        """Whether the command line passes :attr:`cli_default` when the option is absent."""
        return self.cli_default is not _MISSING


@dataclass(frozen=True)
class FigureSpec:
    """A figure of the paper: what it is and how to compute and draw it.

    Attributes
    ----------
    name : str
        Registry key and command-line name (``gaussmix figure NAME``); file stem of the
        outputs.
    paper : str
        Where it is in the paper (e.g. ``'Fig. 3 (left)'``).
    description : str
        One line for ``--help`` and the README.
    caption : str
        Caption written to ``<name>.json`` next to the CSV (what lines, dots and error
        bars are).
    table : callable
        Computes the pandas table (keyword arguments as in :attr:`options`).
    check : callable
        Validates the table function's arguments (by name) without computing.
    plot : callable
        ``plot(df) -> matplotlib.figure.Figure``.
    options : tuple of FigureOption
        The command-line options the figure takes (``--out`` and ``--quiet`` are common
        to all figures).
    """

    name: str
    paper: str
    description: str
    caption: str
    table: Callable[..., pd.DataFrame]
    check: Callable[..., Any]
    plot: Callable[..., Figure]
    options: tuple[FigureOption, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        params = inspect.signature(self.table).parameters
        flags = [o.flag for o in self.options]
        if len(set(flags)) != len(flags):
            raise ValueError(f"figure {self.name!r} declares an option twice: {flags}")
        for o in self.options:
            if o.param not in params:
                raise ValueError(
                    f"figure {self.name!r}: option {o.flag} sets {o.param!r}, which is not a "
                    f"parameter of {self.table.__name__}"
                )

    def option(self, flag: str) -> FigureOption | None:
        """The option ``flag`` of this figure, or None if it takes no such option."""
        for o in self.options:
            if o.flag == flag:
                return o
        return None

    @property
    def simulates(self) -> bool:
        """Whether the figure has simulation dots (takes ``--simulate/--no-simulate``)."""
        return self.option("--simulate") is not None


#: name -> FigureSpec, in registration order
FIGURES: dict[str, FigureSpec] = {}


def register_figure(spec: FigureSpec) -> FigureSpec:
    """Add ``spec`` to :data:`FIGURES` (a name is registered once) and return it."""
    if not isinstance(spec, FigureSpec):
        raise TypeError(f"spec must be a FigureSpec, got {type(spec).__name__}")
    if spec.name in FIGURES and FIGURES[spec.name] is not spec:
        raise ValueError(f"figure {spec.name!r} is already registered")
    FIGURES[spec.name] = spec
    return spec


def get_figure(name: str) -> FigureSpec:
    """The registered figure ``name`` (``ValueError`` naming the known figures otherwise)."""
    check_choice("name", name, tuple(FIGURES))
    return FIGURES[name]


class FigureOutput(NamedTuple):
    """What :func:`write_figure` produced."""

    data: pd.DataFrame
    csv: Path
    png: Path
    meta: Path


def validate_figure(name: str, **kw: Any) -> None:
    """Check the arguments of figure ``name`` without computing anything.

    Raises the ``TypeError`` / ``ValueError`` (naming the argument) that
    :func:`write_figure` would raise at the start, so that a caller can fail before
    creating files (options passed on to a library search are checked when it runs).
    """
    spec = get_figure(name)
    args = _bind(spec, kw)
    spec.check(**args)


def _bind(spec: FigureSpec, kw: Mapping[str, Any]) -> dict[str, Any]:
    """The table function's named parameters with ``kw`` applied (catch-alls dropped)."""
    sig = inspect.signature(spec.table)
    try:
        bound = sig.bind(**kw)
    except TypeError as exc:
        raise TypeError(f"figure {spec.name!r}: {exc}") from None
    bound.apply_defaults()
    return {
        k: v
        for k, v in bound.arguments.items()
        if sig.parameters[k].kind is not inspect.Parameter.VAR_KEYWORD
    }


def _jsonable(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return [_jsonable(v) for v in value.tolist()]
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, np.generic):
        return value.item()
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return repr(value)


def write_figure(name: str, out_dir: str | Path, **kw: Any) -> FigureOutput:
    """Compute figure ``name`` and write ``<name>.csv``, ``<name>.png`` and ``<name>.json``.

    The JSON sidecar holds the figure's name, its place in the paper, the caption (what
    lines, dots and error bars are), the arguments given and the library version.

    Parameters
    ----------
    name : str
        A key of :data:`FIGURES`.
    out_dir : path
        Output directory (created if needed).
    **kw
        Passed to the figure's table function.

    Returns
    -------
    FigureOutput
        The table and the three paths written.
    """
    spec = get_figure(name)
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(f"out_dir {str(out)!r} exists and is not a directory")
    df = spec.table(**kw)
    out.mkdir(parents=True, exist_ok=True)
    csv, png, meta = (out / f"{name}.{ext}" for ext in ("csv", "png", "json"))
    df.to_csv(csv, index=False)
    fig = spec.plot(df)
    save_figure(fig, png)
    title = fig.get_suptitle()
    info = {
        "figure": name,
        "paper": spec.paper,
        "description": spec.description,
        "title": title,
        "caption": spec.caption,
        "arguments": _jsonable({k: v for k, v in kw.items() if k != "progress"}),
        "columns": list(df.columns),
        "gaussmix_version": __version__,
    }
    meta.write_text(json.dumps(info, indent=2) + "\n")
    return FigureOutput(df, csv, png, meta)
