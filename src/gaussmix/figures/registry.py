"""The figure registry: each figure of the paper declared once, found by name.

A figure module declares each of its figures with :func:`register_figure` at import
time: a :class:`FigureSpec` carrying its name, the paper's figure number, a one-line
description, a caption, the table function, the argument check, the plot function, its
``--fast`` preset, the kinds of dots it draws and the command-line options it takes
(:class:`FigureOption`).  :func:`write_figure`, :func:`validate_figure`, the atlas
(:mod:`gaussmix.figures.paper_atlas`) and the ``gaussmix figure`` command read the registry;
nothing else dispatches on a figure's name.

Adding a figure::

    def _my_args(alphas, progress) -> dict: ...       # validates, computes nothing
    def my_table(alphas=..., *, progress=False) -> pd.DataFrame:
        a = _my_args(alphas, progress)                   # its first step
        ...
    def plot_my_table(df: pd.DataFrame) -> Figure: ...   # with a suptitle

    register_figure(FigureSpec(
        name="my-figure", paper="Fig. 9", description="...", caption="...",
        table=my_table, check=_my_args, plot=plot_my_table,
        fast={"alphas": (0.5, 2.0)}, fast_note="two alphas",
        options=(FigureOption("--alphas", "alphas", "grid"),),
    ))

Files of a figure
-----------------
:func:`write_figure` writes ``<name>.csv`` (the tidy table, a plain CSV that any reader
takes), ``<name>.png`` and ``<name>.json``, the CSV's companion: the figure's place in the
paper, its title, the caption (what lines, dots and error bars are -- error bars are +-1
standard error), whether the ``--fast`` preset was used (and what it changes), the
arguments, the columns of the CSV and the library version.

The ``check`` function takes the table function's parameters by name (apart from a
``**kw`` catch-all) and raises the ``TypeError`` / ``ValueError`` the table function
would raise, naming the argument: it is the table's own first step (the validated
arguments the table computes with), so that the two cannot disagree.  Every option's
flag must exist on the ``gaussmix figure`` command (a test checks it).

Any mixture
-----------
A figure whose set-up is "a mixture and curves over alpha or lambda" takes a user's
:class:`~gaussmix.theory.model.mixture.Mixture` in place of the paper's: its table function has a
``mixture`` parameter and its spec a :attr:`FigureSpec.mixture_caption` (the caption then);
``gaussmix figure NAME --mixture FILE`` reads the file as the point commands do.  A figure
tied to a family of the paper's mixtures (it varies Delta or K, draws samples of a given
model, reads real data) declares why in :attr:`FigureSpec.fixed_mixture` instead, and is
refused a mixture in one line naming the figure and that reason.  With a mixture the table
has the columns ``mixture`` (the structure's ``describe()``) and ``fingerprint``
(:meth:`~gaussmix.theory.model.mixture.Mixture.fingerprint`), the title names them, and the JSON
has a ``mixture`` entry (:meth:`~gaussmix.theory.model.mixture.Mixture.describe`, the structure,
the fingerprint and, from the command line, the file and its SHA-256).
"""

from __future__ import annotations

import inspect
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from gaussmix.core.provenance import mixture_provenance, run_record
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
    "DOT_KINDS",
    "simulation_options",
    "figure_arguments",
    "preset_arguments",
    "drawn_values",
    "drawn_summary",
    "mixture_provenance",
]

#: option kinds: how the command line turns an option's text into the table's argument
OPTION_KINDS = ("float", "int", "bool", "str", "grid", "ints")
#: the sentence every caption of a figure with simulation dots carries
ERROR_BAR_CAPTION = (
    "Dots: finite-size simulations (exact ERM); error bars are +-1 standard error over seeds."
)
#: the kinds of dots a figure can draw besides its theory lines (:attr:`FigureSpec.dots`)
DOT_KINDS = {
    "simulation": "finite-size simulations (exact ERM on samples of the mixture)",
    "real data": "ERM on the real data set",
    "LP": "finite-size separability (LP feasibility), with --simulate",
    "samples": "samples of the mixture (no estimator)",
}
_MISSING = object()


@dataclass(frozen=True)
class FigureOption:
    """One command-line option of a figure.

    Attributes
    ----------
    flag : str
        The option on ``gaussmix figure`` (e.g. ``'--alphas'``).
    param : str
        The table function's parameter it sets, the flag without dashes (e.g. ``'alphas'``).
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
        One line for ``--help`` and the docs (the paper atlas page).
    caption : str
        Caption written to ``<name>.json`` next to the CSV (what lines, dots and error
        bars are).
    table : callable
        Computes the pandas table (keyword arguments as in :attr:`options`).
    check : callable
        Validates the table function's arguments (by name) without computing.
    plot : callable
        ``plot(df) -> matplotlib.figure.Figure``, with a title (suptitle) naming the
        mixture, the loss, the penalty and lambda.
    fast : mapping
        The ``--fast`` preset: arguments of the table function (applied under those given
        explicitly) that make the figure in seconds -- fewer seeds, smaller d, fewer
        alphas or K, digits instead of MNIST.  ``gaussmix figure all --fast`` uses it.
    fast_note : str
        What the preset changes, in words (appended to the caption when it is used).
    differs : str
        How the figure differs from the paper's, with the evidence, in a few sentences
        (empty: it reproduces the paper's finding).  ``gaussmix figure --list``, the
        figure's JSON and the docs gallery show this one text.
    dots : tuple of str
        The kinds of dots drawn besides the theory lines, keys of :data:`DOT_KINDS`
        (empty: theory only).
    options : tuple of FigureOption
        The command-line options the figure takes (``--out``, ``--fast`` and ``--quiet``
        are common to all figures).
    mixture_caption : str
        The caption with a user's mixture (``mixture=``, ``--mixture FILE``): the figure
        takes one (its table function has a ``mixture`` parameter).  Empty for a figure
        tied to the paper's mixtures, which says why in ``fixed_mixture``.
    fixed_mixture : str
        Why the figure takes no other mixture than the paper's (e.g. ``'it varies Delta
        and K of the isotropic mixture'``), shown when one is given.  Exactly one of
        ``mixture_caption`` and ``fixed_mixture`` is set.
    """

    name: str
    paper: str
    description: str
    caption: str
    table: Callable[..., pd.DataFrame]
    check: Callable[..., Any]
    plot: Callable[..., Figure]
    fast: Mapping[str, Any]
    fast_note: str
    dots: tuple[str, ...] = ()
    differs: str = ""
    options: tuple[FigureOption, ...] = field(default_factory=tuple)
    mixture_caption: str = ""
    fixed_mixture: str = ""

    def __post_init__(self) -> None:
        params = inspect.signature(self.table).parameters
        if bool(self.mixture_caption) == bool(self.fixed_mixture):
            raise ValueError(
                f"figure {self.name!r}: set exactly one of mixture_caption (it takes any "
                "mixture) and fixed_mixture (why it does not)"
            )
        if self.takes_mixture != ("mixture" in params):
            raise ValueError(
                f"figure {self.name!r}: a figure takes a mixture (mixture_caption) exactly "
                f"when {self.table.__name__} has a 'mixture' parameter"
            )
        flags = [o.flag for o in self.options]
        if len(set(flags)) != len(flags):
            raise ValueError(f"figure {self.name!r} declares an option twice: {flags}")
        for o in self.options:
            if o.param not in params:
                raise ValueError(
                    f"figure {self.name!r}: option {o.flag} sets {o.param!r}, which is not a "
                    f"parameter of {self.table.__name__}"
                )
        if not isinstance(self.fast, Mapping):
            raise TypeError(f"figure {self.name!r}: fast must be a mapping of arguments")
        unknown = sorted(set(self.fast) - set(params))
        if unknown:
            raise ValueError(
                f"figure {self.name!r}: the fast preset sets {unknown}, which are not "
                f"parameters of {self.table.__name__}"
            )
        if not self.fast_note:
            raise ValueError(f"figure {self.name!r}: fast_note must say what --fast changes")
        for kind in self.dots:
            check_choice("dots", kind, tuple(DOT_KINDS))

    def option(self, flag: str) -> FigureOption | None:
        """The option ``flag`` of this figure, or None if it takes no such option."""
        for o in self.options:
            if o.flag == flag:
                return o
        return None

    @property
    def takes_mixture(self) -> bool:
        """Whether the figure takes a user's mixture (``mixture=``, ``--mixture FILE``)."""
        return bool(self.mixture_caption)

    @property
    def simulates(self) -> bool:
        """Whether the figure has simulation dots (takes ``--simulate/--no-simulate``)."""
        return self.option("--simulate") is not None


#: name -> FigureSpec, in registration order
FIGURES: dict[str, FigureSpec] = {}


def register_figure(spec: FigureSpec) -> FigureSpec:
    """Add ``spec`` to :data:`FIGURES` (a name is registered once) and return it.

    Parameters
    ----------
    spec : FigureSpec
        The figure; its name must be new (or the same spec again).
    """
    if not isinstance(spec, FigureSpec):
        raise TypeError(f"spec must be a FigureSpec, got {type(spec).__name__}")
    if spec.name in FIGURES and FIGURES[spec.name] is not spec:
        raise ValueError(f"figure {spec.name!r} is already registered")
    FIGURES[spec.name] = spec
    return spec


def get_figure(name: str) -> FigureSpec:
    """The registered figure ``name`` (``ValueError`` naming the known figures otherwise).

    Parameters
    ----------
    name : str
        A key of :data:`FIGURES`.
    """
    check_choice("name", name, tuple(FIGURES))
    return FIGURES[name]


class FigureOutput(NamedTuple):
    """What :func:`write_figure` produced.

    Attributes
    ----------
    data : pandas.DataFrame
        The figure's table.
    csv, png, meta : pathlib.Path
        The files written: the table, the image and the JSON companion.
    """

    data: pd.DataFrame
    csv: Path
    png: Path
    meta: Path


def simulation_options(*, jobs_default: Any = _MISSING) -> tuple[FigureOption, ...]:
    """The options of a figure with simulation dots: ``--simulate/--no-simulate``, then
    ``--d`` (``d``), ``--seeds``, ``--seed`` and ``--n-jobs`` (``n_jobs``; its
    command-line default ``jobs_default``, else the table function's)."""
    return (
        FigureOption("--simulate", "simulate", "bool"),
        FigureOption("--d", "d", "int", simulation=True),
        FigureOption("--seeds", "seeds", "int", simulation=True),
        FigureOption("--seed", "seed", "int", simulation=True),
        FigureOption("--n-jobs", "n_jobs", "int", simulation=True, cli_default=jobs_default),
    )


def figure_arguments(name: str, *, fast: bool = False, **kw: Any) -> dict[str, Any]:
    """The table function's arguments of figure ``name``: ``kw`` over the ``--fast``
    preset (:attr:`FigureSpec.fast`) when ``fast``."""
    if not isinstance(fast, bool | np.bool_):
        raise TypeError(f"fast must be a bool, got {fast!r}")
    spec = get_figure(name)
    if "mixture" in kw and not spec.takes_mixture:
        raise ValueError(f"figure {name} takes no mixture: {spec.fixed_mixture}")
    return {**spec.fast, **kw} if fast else dict(kw)


def preset_arguments(name: str, *, fast: bool = False) -> dict[str, Any]:
    """Every named parameter of figure ``name``'s table function at a preset, JSON-safe:
    the paper's settings (the function's defaults) or, with ``fast``, the ``--fast`` preset
    over them; ``progress`` and ``mixture`` left out (they do not change the figure), a
    function (a hook) by its qualified name.

    This is what ``gaussmix figure NAME --out DIR`` (with ``--fast``: ``... --fast``)
    computes with, so a record of it tells whether a figure made earlier is the one the
    registry would make now.

    Parameters
    ----------
    name : str
        A key of :data:`FIGURES`.
    fast : bool
        The ``--fast`` preset instead of the paper's settings.
    """
    spec = get_figure(name)
    args = _bind(spec, figure_arguments(name, fast=fast))
    return _jsonable(
        {
            k: f"{v.__module__}.{v.__qualname__}" if callable(v) else v  # a hook: its name
            for k, v in args.items()
            if k not in ("progress", "mixture")
        }
    )


def validate_figure(name: str, *, fast: bool = False, **kw: Any) -> None:
    """Check the arguments of figure ``name`` without computing anything.

    Raises the ``TypeError`` / ``ValueError`` (naming the argument) that
    :func:`write_figure` would raise at the start, so that a caller can fail before
    creating files (options passed on to a library search are checked when it runs).
    ``fast`` applies the figure's ``--fast`` preset under ``kw``.

    Parameters
    ----------
    name : str
        A key of :data:`FIGURES`.
    fast : bool
        Apply the figure's ``--fast`` preset under ``kw``.
    **kw
        The table function's arguments.
    """
    spec = get_figure(name)
    args = _bind(spec, figure_arguments(name, fast=fast, **kw))
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


#: columns of a figure's table whose distinct values :func:`drawn_values` records, and
#: the key each gets in the figure's JSON (``"drawn"``)
DRAWN_COLUMNS = {
    "K": "K",
    "dataset": "datasets",
    "lam": "lambdas",
    "delta": "deltas",
    "delta1": "delta1s",
    "delta2": "delta2s",
    "ratio": "ratios",
    "gamma": "gammas",
    "epoch": "epochs",
    "mixture": "mixtures",
    "sim_d": "simulation_d",
    "sim_seeds": "simulation_seeds",
}


def drawn_values(df: pd.DataFrame) -> dict[str, Any]:
    """What a figure's table draws: the sorted distinct values of each column of
    :data:`DRAWN_COLUMNS` it has (the K values, data sets, lambdas, Deltas, ...), and the
    number and range of its alphas (``"alphas": {"n", "min", "max"}``).

    Recorded as ``"drawn"`` in the figure's JSON, so that what a description or the gallery
    says about a figure can be checked against the figure itself."""
    out: dict[str, Any] = {}
    for column, key in DRAWN_COLUMNS.items():
        if column in df.columns:
            values = df[column].dropna().unique().tolist()
            if values:
                out[key] = sorted(_jsonable(values), key=lambda v: (isinstance(v, str), v))
    if "alpha" in df.columns:
        a = np.unique(df["alpha"].dropna().to_numpy(dtype=float))
        if a.size:
            out["alphas"] = {"n": int(a.size), "min": float(a[0]), "max": float(a[-1])}
    return out


#: how :func:`drawn_summary` names the keys of :func:`drawn_values`
_DRAWN_WORDS = {
    "K": "K",
    "datasets": "data sets",
    "lambdas": "lambda",
    "deltas": "Delta",
    "delta1s": "Delta1",
    "delta2s": "Delta2",
    "ratios": "Delta1/Delta2",
    "gammas": "gamma = p/d",
    "epochs": "epochs",
    "mixtures": "mixtures",
    "simulation_d": "simulation d",
    "simulation_seeds": "seeds",
}


def _g(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def drawn_summary(drawn: Mapping[str, Any]) -> str:
    """What a figure draws (:func:`drawn_values`) in words: ``'K = 2, 3; lambda = 0.0001;
    alphas: 41 in [0.25, 6]; ...'`` (more than six values: their number and range)."""
    parts = []
    for key, word in _DRAWN_WORDS.items():
        values = drawn.get(key)
        if not values:
            continue
        if len(values) > 6 and all(isinstance(v, int | float) for v in values):
            parts.append(f"{word}: {len(values)} in [{_g(values[0])}, {_g(values[-1])}]")
        else:
            parts.append(f"{word} = {', '.join(_g(v) for v in values)}")
    a = drawn.get("alphas")
    if a:
        parts.append(
            f"alpha = {_g(a['min'])}"
            if a["n"] == 1
            else f"alphas: {a['n']} in [{_g(a['min'])}, {_g(a['max'])}]"
        )
    return "; ".join(parts)


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


def _mixture_sentence(prov: Mapping[str, Any]) -> str:
    """The caption's last sentence for a user's mixture."""
    text = (
        f" Mixture: {prov['structure']} (model {prov['kind']}), fingerprint {prov['fingerprint']}"
    )
    if "file" in prov:
        text += f", read from {Path(prov['file']).name} (SHA-256 {prov['sha256']})"
    return text + "."


def _solver_record(options: Any) -> Any:
    """The solver's ``options`` of a figure as its JSON records them: the options asked
    for (a mapping's keywords; of a :class:`~gaussmix.theory.solve.options.SolverOptions`, those
    that differ from the defaults, :func:`~gaussmix.theory.solve.options.changed_options`), a
    quadrature rule by its description."""
    from gaussmix.theory.solve.options import SolverOptions, changed_options

    if isinstance(options, SolverOptions):
        options = changed_options(options)
    if not isinstance(options, Mapping):
        return options
    return {k: v.describe() if hasattr(v, "describe") else v for k, v in options.items()}


def _check_some_converged(name: str, df: pd.DataFrame) -> None:
    """Refuse a table none of whose theory points has a fixed point (every ``converged``
    False, e.g. with ``options=SolverOptions(max_iter=1)``): there is no curve to draw, and
    nothing is written (a :class:`~gaussmix.core.exceptions.ConvergenceError`, exit 3 of
    ``gaussmix figure``); a table with some is drawn, its failed points NaN."""
    if "converged" not in df.columns or df.empty:
        return
    values = df["converged"].tolist()
    if all(isinstance(v, bool | np.bool_) and not v for v in values):
        from gaussmix.core.exceptions import ConvergenceError

        raise ConvergenceError(
            f"figure {name}: none of its {len(values)} theory points has a fixed point "
            "(converged False everywhere); nothing written"
        )


def write_figure(
    name: str,
    out_dir: str | Path,
    *,
    fast: bool = False,
    mixture_file: str | os.PathLike | None = None,
    **kw: Any,
) -> FigureOutput:
    """Compute figure ``name`` and write ``<name>.csv``, ``<name>.png`` and ``<name>.json``.

    The CSV is the tidy table; the JSON is its companion: the figure's name, its place in
    the paper, its title, the caption (what lines, dots and error bars are; with ``fast``
    it ends with what the preset changes), whether the preset was used and what it changes
    (``fast_note``), how the figure differs from the paper's (``differs``, empty when it
    does not), what it draws (``drawn``: :func:`drawn_values` of the table), the arguments
    given, the file names, the CSV's columns and the library version.

    Parameters
    ----------
    name : str
        A key of :data:`FIGURES`.
    out_dir : path
        Output directory (created if needed).
    fast : bool
        Apply the figure's ``--fast`` preset (:attr:`FigureSpec.fast`) under ``kw``.
    mixture_file : path, optional
        The file the ``mixture`` argument was read from (:meth:`Mixture.load`): the JSON
        records its name and SHA-256 (:func:`mixture_provenance`).
    **kw
        Passed to the figure's table function (``mixture=`` a
        :class:`~gaussmix.theory.model.mixture.Mixture` for a figure that takes one,
        :attr:`FigureSpec.takes_mixture`).

    Returns
    -------
    FigureOutput
        The table and the three paths written.
    """
    spec = get_figure(name)
    args = figure_arguments(name, fast=fast, **kw)
    mixture = args.get("mixture")
    if mixture_file is not None and mixture is None:
        raise ValueError("mixture_file needs mixture (the mixture read from it)")
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(f"out_dir {str(out)!r} exists and is not a directory")
    df = spec.table(**args)
    _check_some_converged(name, df)
    out.mkdir(parents=True, exist_ok=True)
    csv, png, meta = (out / f"{name}.{ext}" for ext in ("csv", "png", "json"))
    df.to_csv(csv, index=False)
    fig = spec.plot(df)
    save_figure(fig, png)
    caption = spec.mixture_caption if mixture is not None else spec.caption
    caption += f" Fast preset (--fast): {spec.fast_note}." if fast else ""
    prov = None if mixture is None else mixture_provenance(mixture, mixture_file)
    caption += "" if prov is None else _mixture_sentence(prov)
    info = {
        "figure": name,
        "paper": spec.paper,
        "description": spec.description,
        "title": fig.get_suptitle(),
        "caption": caption,
        "fast": bool(fast),
        "fast_note": spec.fast_note,
        "differs": spec.differs,
        "drawn": drawn_values(df),
        "dots": list(spec.dots),
        "arguments": _jsonable(
            {
                k: _solver_record(v) if k == "options" else v
                for k, v in args.items()
                if k not in ("progress", "mixture")
            }
        ),
        **({} if prov is None else {"mixture": prov}),
        "files": {"csv": csv.name, "png": png.name},
        "columns": list(df.columns),
        "gaussmix_version": __version__,
    }
    record = run_record({})  # the command line and the date of this run
    info.update(
        command=record["command"], argv=record["argv"], date=record["date"], table=csv.name
    )
    meta.write_text(json.dumps(info, indent=2) + "\n")
    return FigureOutput(df, csv, png, meta)
