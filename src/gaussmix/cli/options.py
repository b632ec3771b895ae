"""The typer options of the point options: the command line's face of
:class:`~gaussmix.frontend.options.PointOptions`, whose fields describe their options as
plain data (:mod:`gaussmix.frontend.options`, which the explorer shares and which imports no
command-line framework).  :func:`point_options` attaches every point option to a command,
:func:`solver_options` every solver option (:data:`~gaussmix.frontend.options.SOLVER_OPTIONS`)
to a command that takes no point options.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable
from typing import Annotated, Any

from gaussmix.frontend.options import (
    SOLVER_OPTIONS,
    PointOptions,
    integer_parser,
    solver_keywords,
)

__all__ = [
    "point_options",
    "with_signature",
    "solver_options",
    "solver_parameters",
]


@functools.cache
def _typer_option(name: str) -> Any:
    """The typer option of a :class:`PointOptions` field (made once, when a command needs it)."""
    import typer

    spec = PointOptions.__dataclass_fields__[name].metadata["cli_option"]
    extra = {}
    if spec["parser"] is not None:
        extra["parser"] = integer_parser(spec["parser"], spec["decls"][0])
    return typer.Option(
        *spec["decls"],
        help=spec["help"],
        metavar=spec["metavar"],
        show_default=spec["show_default"],
        rich_help_panel=spec["panel"],
        **extra,
    )


def _annotation(f: dataclasses.Field) -> Any:
    type_ = f.metadata["cli_type"]
    return Annotated[type_, _typer_option(f.name)]


def point_options(
    func: Callable[..., Any] | None = None, /, **defaults: Any
) -> Callable[..., Any]:
    """Attach every :class:`PointOptions` option to a typer command.

    ``func`` must accept a keyword parameter ``opts`` (a :class:`PointOptions`); its other
    parameters are kept as they are (they may be typer options of their own).  Use it
    *below* ``@app.command()``, as ``@point_options`` or, to change the command-line
    defaults of some options for this command, ``@point_options(lam=0.1)``.
    """
    unknown = sorted(set(defaults) - set(PointOptions.option_names()))
    if unknown:
        raise TypeError(f"point_options: unknown options {unknown}")
    if func is None:
        return lambda f: point_options(f, **defaults)
    sig = inspect.signature(func)
    if "opts" not in sig.parameters:
        raise TypeError(f"{func.__name__} must take a keyword parameter 'opts: PointOptions'")
    # the command's own annotations, resolved where it was written (they may be strings
    # naming typer there: the wrapper's globals are this module's, which lacks typer)
    try:
        hints = typing.get_type_hints(func, include_extras=True)
    except (NameError, TypeError):  # left to typer, as before
        hints = {}
    own = [
        p.replace(kind=inspect.Parameter.KEYWORD_ONLY, annotation=hints.get(p.name, p.annotation))
        for p in sig.parameters.values()
        if p.name != "opts"
    ]
    names = PointOptions.option_names()
    clash = sorted(set(names) & {p.name for p in own})
    if clash:
        raise TypeError(f"{func.__name__} redefines point options {clash}")
    added = [
        inspect.Parameter(
            f.name,
            inspect.Parameter.KEYWORD_ONLY,
            default=defaults.get(f.name, f.default),
            annotation=_annotation(f),
        )
        for f in dataclasses.fields(PointOptions)
    ]

    @functools.wraps(func)
    def wrapper(**kwargs: Any) -> Any:
        opts = PointOptions(**{n: kwargs.pop(n) for n in names})
        return func(opts=opts, **kwargs)

    return with_signature(wrapper, sig, added + own)


def with_signature(
    wrapper: Callable[..., Any], sig: inspect.Signature, params: list[inspect.Parameter]
) -> Callable[..., Any]:
    """``wrapper`` (made with :func:`functools.wraps`) presenting ``sig`` with the
    parameters ``params`` to typer: the wrapped function's signature is hidden, so that
    typer builds the command's options from ``params``."""
    del wrapper.__wrapped__  # type: ignore[attr-defined]
    wrapper.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]
    wrapper.__annotations__ = {p.name: p.annotation for p in params}
    return wrapper


def solver_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """Attach every solver option (:data:`SOLVER_OPTIONS`, the same options as the point
    commands') to a typer command that does not take the point options.

    ``func`` must accept a keyword parameter ``solver``: it receives the options' values as
    a dict (name -> value), for :func:`~gaussmix.frontend.options.solver_keywords`.  Use it
    *below* ``@app.command()``.
    """
    sig = inspect.signature(func)
    if "solver" not in sig.parameters:
        raise TypeError(f"{func.__name__} must take a keyword parameter 'solver: dict'")
    try:
        hints = typing.get_type_hints(func, include_extras=True)
    except (NameError, TypeError):
        hints = {}
    own = [
        p.replace(kind=inspect.Parameter.KEYWORD_ONLY, annotation=hints.get(p.name, p.annotation))
        for p in sig.parameters.values()
        if p.name != "solver"
    ]
    clash = sorted(set(SOLVER_OPTIONS) & {p.name for p in own})
    if clash:
        raise TypeError(f"{func.__name__} redefines solver options {clash}")
    added = solver_parameters(SOLVER_OPTIONS)

    @functools.wraps(func)
    def wrapper(**kwargs: Any) -> Any:
        solver = {name: kwargs.pop(name) for name in SOLVER_OPTIONS}
        solver_keywords(solver, 1)  # checked before any data is read (said with the flag)
        return func(solver=solver, **kwargs)

    return with_signature(wrapper, sig, own + added)


def solver_parameters(names: tuple[str, ...]) -> list[inspect.Parameter]:
    """The keyword-only parameters (typer options, at their defaults) of the solver
    options ``names`` (of :data:`SOLVER_OPTIONS`), for a command's signature."""
    fields = PointOptions.__dataclass_fields__
    return [
        inspect.Parameter(
            name,
            inspect.Parameter.KEYWORD_ONLY,
            default=fields[name].default,
            annotation=_annotation(fields[name]),
        )
        for name in names
    ]
