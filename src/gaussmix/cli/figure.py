"""``gaussmix figure``: every figure of the paper's registry, its options read from the
registry (registered by :mod:`gaussmix.cli.commands`)."""

import contextlib
import functools
import inspect
import re
from pathlib import Path
from typing import Annotated, Any

import typer

from gaussmix.core.exceptions import (
    GaussmixError,
)
from gaussmix.core.validation import check_param
from gaussmix.frontend.grids import parse_grid
from gaussmix.frontend.options import (
    SOLVER_OPTIONS,
    PointOptions,
    integer_parser,
    parse_floats,
    read_mixture_file,
)

from .common import OutOption, QuietOption, long_flag, report_curve
from .exits import (
    check_output_path,
    make_out_dir,
)
from .helpers import given, one_blas_thread
from .options import solver_parameters, with_signature

__all__ = ["figure_command", "FIGURE_SOLVER_OPTIONS"]


def _point_option(name: str) -> tuple[tuple[str, ...], str | None]:
    """The declarations and metavar of the point option ``name`` (a field of
    :class:`PointOptions`), for a figure option that is the same option."""
    import dataclasses

    (f,) = [f for f in dataclasses.fields(PointOptions) if f.name == name]
    option = f.metadata["cli_option"]
    return option["decls"], option["metavar"]


#: the solver's options of ``gaussmix figure`` (those of the point commands but
#: ``--quad-order``: a figure's curves have different output dimensions L, and a
#: Gauss-Hermite rule is made for one); a figure whose table function takes ``options``
#: takes them, over its own choices
FIGURE_SOLVER_OPTIONS = tuple(n for n in SOLVER_OPTIONS if n != "quad_order")
#: parameters of ``gaussmix figure`` common to every figure (not declared by the registry)
_FIGURE_COMMON = ("name", "out", "quiet", "fast", "list_")
#: the options of ``gaussmix figure all`` (it makes every figure with its defaults)
_ATLAS_OPTIONS = ("--out", "--fast", "--n-jobs", "--quiet")
_GRID = "a,b,... or [log:]START:STOP:NUM"
#: the options that figures declare (``FigureSpec.options``; each figure takes only its
#: own): parameter -> (type, option declarations, metavar, help); all default to None
_FIGURE_OPTIONS: dict[str, tuple[Any, tuple[str, ...], str | None, str]] = {
    "alphas": (str, ("--alphas",), _GRID, "alpha = n/d: the theory grid (sparse-*, "
               "fig3-left, appe-xor, real data) or one curve each (fig3-right, fig4-left)."),
    "lams": (str, ("--lams",), _GRID, "fig3-right, fig4-*: penalty strengths (> 0)."),
    "n_clusters": (str, ("--n-clusters", "-K"), "K|K1,...", "Numbers of clusters (>= 2): "
                   "fig3-left, fig3-centre: one curve each (K1,...); fig3-right: K [3]."),
    "loss": (str, ("--loss",), "square|logistic|hinge", "sparse-*: training loss [square]."),
    "sparsity": (float, ("--sparsity",), "RHO",
                 "sparse-*: fraction of directions with means [0.1]."),
    "ratios": (str, ("--ratios",), "r1,...",
               "sparse-setup: ratios Delta1/Delta2, one curve each."),
    "delta2": (float, ("--delta2",), "D2", "sparse-setup: variance off the support [1]."),
    "delta1": (float, ("--delta1",), "D1",
               "sparse-curves, sparse-projection: variance on the support [0.1]."),
    "delta2s": (str, ("--delta2s",), "d1,...",
                "sparse-curves, sparse-projection: variances off the support, one each."),
    "delta": (float, ("--delta",), "DELTA",
              "fig3-left/right, appe-xor*: cluster variance, Sigma = DELTA I [0.5]."),
    "deltas": (str, ("--deltas",), "D1,...",
               "fig4-left: the two cluster variances [0.1,0.01]; fig3-centre: one line each."),
    "lam": (float, ("--lam",), "LAMBDA", "fig3-left, appe-*, ten-class: penalty strength."),
    "datasets": (str, ("--datasets",), "NAME,...", "fig5, fig4-right, ten-class: mnist, "
                 "fashion-mnist, digits [mnist,fashion-mnist]."),
    "pool": (int, ("--pool",), "P", "ten-class: block means of P x P pixels (1: pixels) [4]."),
    "dataset": (str, ("--dataset",), "NAME",
                "fig6, appe-*: mnist, fashion-mnist or digits [mnist]."),
    "gammas": (str, ("--gammas",), _GRID, "fig6: random features per dimension, p / d."),
    "epochs": (str, ("--epochs",), "E1,...", "appe-trained: stages of training."),
    "hidden": (int, ("--hidden",), "H", "appe-trained: hidden units [784]."),
    "subsamples": (int, ("--subsamples",), "S",
                   "Real data: training subsamples per point (error bars)."),
    "sources": (str, ("--sources",), "theory,synthetic,real",
                "Real-data figures: the curves drawn."),
    "alpha": (float, ("--alpha",), "ALPHA", "fig4-right: sample complexity [1]."),
    "simulate": (bool, ("--simulate/--no-simulate",), None,
                 "sparse-curves, fig3-left, fig4-left: simulation dots (finite-size ERM) "
                 "[default: simulate]; fig3-centre: LP dots [default: none]."),
    "sim_alphas": (str, ("--sim-alphas",), "a1,...", "sparse-curves, fig3-left: simulated "
                   "alphas (rounded so that classes are balanced)."),
    "sim_lams": (str, ("--sim-lams",), "l1,...", "fig4-left: simulated penalties."),
    "d": (int, ("--d",), "D", "Input dimension of the simulated instances or samples."),
    "n_points": (int, ("--n-points",), "N", "*-projection: points drawn per panel."),
    "seeds": (int, ("--seeds",), "S", "Instances per simulated point (error bars)."),
    "seed": (int, ("--seed",), "N", "Root seed of the simulations or samples [0]."),
    "n_jobs": (int, ("--n-jobs", "-j"), "N", "Worker processes (joblib: -1 = all cores): over "
             "seeds for one figure (sparse-curves: -1, others: 1); over figures for 'all' [1]. "
             "Results do not depend on it."),
    # the point commands' --mixture (PointOptions.mixture), read by the same loader
    "mixture": (str, *_point_option("mixture"), "A mixture file (.npz of gaussmix.Mixture."
                "save) in place of the paper's mixture, for the figures that take one "
                "(fig3-left, fig3-right, fig4-left; see --list); it excludes the options "
                "that build the paper's mixture."),
}  # fmt: skip


def _figure_mixture(spec: Any, path: str) -> Any:
    """``--mixture FILE`` of a figure: the file's mixture (read as the point commands read
    it), or a one-line refusal naming the figure and why it takes none."""
    if not spec.takes_mixture:
        raise ValueError(f"figure {spec.name} takes no --mixture: {spec.fixed_mixture}")
    return read_mixture_file(path)


def _figure_options(func: Any) -> Any:
    """Give the ``figure`` command every option of :data:`_FIGURE_OPTIONS` (keyword-only,
    default None: not given); the command reads their values from ``ctx.params``."""
    sig = inspect.signature(func)
    added = [
        inspect.Parameter(
            name,
            inspect.Parameter.KEYWORD_ONLY,
            default=None,
            annotation=Annotated[
                type_ | None,
                typer.Option(*decls, metavar=metavar, help=text, show_default=False),
            ],
        )
        for name, (type_, decls, metavar, text) in _FIGURE_OPTIONS.items()
    ]
    added += solver_parameters(FIGURE_SOLVER_OPTIONS)
    own = list(sig.parameters)

    @functools.wraps(func)
    def wrapper(**kwargs: Any) -> Any:
        return func(**{k: kwargs[k] for k in own})

    return with_signature(wrapper, sig, [*sig.parameters.values(), *added])


FigureName = Annotated[
    str | None,
    typer.Argument(
        metavar="NAME",
        help="sparse-projection, sparse-setup (Fig. 1), sparse-curves (Fig. 2), fig3-left, "
        "fig3-centre, fig3-right (Fig. 3), fig4-left, fig4-right (Fig. 4), fig5, fig6, "
        "ten-class (Section 3.3), appe-trained, appe-p2-p10, appe-xor-projection, appe-xor "
        "(Appendix E); or 'all' (the whole atlas); see --list.",
        show_default=False,
    ),
]
FigureList = Annotated[
    bool,
    typer.Option(
        "--list",
        help="List every reproducible figure: name, place in the paper, the dots drawn "
        "besides the theory lines, description.",
    ),
]
FigureFast = Annotated[
    bool,
    typer.Option(
        "--fast",
        help="The figure's small preset (dense theory grids; fewer seeds, K, subsamples; "
        "small d; MNIST and Fashion-MNIST with fewer points): seconds per figure (see "
        "--list).",
    ),
]


@_figure_options
def figure_command(
    ctx: typer.Context,
    name: FigureName = None,
    out: OutOption = Path("gaussmix-out"),
    list_: FigureList = False,
    fast: FigureFast = False,
    quiet: QuietOption = False,
) -> None:
    """A figure of the paper: writes DIR/NAME.csv (the tidy table), DIR/NAME.png and
    DIR/NAME.json (its companion: place in the paper, title, caption saying what lines,
    dots and +-1 standard-error bars are, arguments).  Each figure takes only its own
    options (others are refused); --fast runs its small preset.

    gaussmix figure --list names every figure with its place in the paper.

    gaussmix figure all --out DIR makes every figure of the list (PNG + CSV + JSON each)
    and DIR/atlas.json (per figure: status, seconds, files), N figures at a time with
    --n-jobs N; a figure that fails does not stop the others, and the command then exits 1
    naming it.  With --fast the whole atlas takes about 2 minutes; with the paper's settings
    (simulations at d = 1000) about 11 minutes with --n-jobs 2 (see BENCHMARKS.md).
    """
    if list_:
        passed = [p for p in ctx.command.params if p.name != "list_" and given(ctx, p.name)]
        if name is not None or passed:
            raise ValueError("--list takes no NAME and no other option")
        _print_atlas()
        return
    if name is None:
        raise ValueError("NAME is missing: a figure of 'gaussmix figure --list', or 'all'")
    if name == "all":
        _figure_all(ctx, out, fast, quiet)
        return
    from gaussmix.figures import FIGURES, validate_figure, write_figure

    if name not in FIGURES:
        allowed = ", ".join(repr(n) for n in (*FIGURES, "all"))
        raise ValueError(f"NAME must be one of {allowed}; got {name!r}")
    spec = FIGURES[name]
    kw = _figure_kwargs(ctx, spec)
    kw["progress"] = not quiet
    validate_figure(name, fast=fast, **kw)
    check_output_path("--out", out, kind="dir")
    simulates = spec.simulates and kw.get("simulate", True)
    with one_blas_thread() if simulates else contextlib.nullcontext():
        res = write_figure(name, out, fast=fast, mixture_file=ctx.params["mixture"], **kw)
    report_curve(res.data, (res.csv, res.png, res.meta), partial_fails=False)


def _print_atlas() -> None:
    """``gaussmix figure --list``: one line per figure of the atlas."""
    from gaussmix.figures import atlas

    df = atlas()
    cols = ("name", "paper", "dots", "description")
    widths = {c: max(len(c), *(len(str(v)) for v in df[c])) for c in cols[:-1]}
    typer.echo("  ".join(c.upper().ljust(widths.get(c, 0)) for c in cols).rstrip())
    indent = " " * (sum(widths.values()) + 2 * len(widths))
    for row in df.itertuples(index=False):
        typer.echo("  ".join(str(getattr(row, c)).ljust(widths.get(c, 0)) for c in cols))
        typer.echo(f"{indent}--fast: {row.fast}")
        if row.mixture == "any":
            typer.echo(f"{indent}--mixture FILE: draws any mixture in place of the paper's")
        if row.differs:
            typer.echo(f"{indent}differs from the paper: {row.differs}")
    typer.echo(
        f"{len(df)} figures: gaussmix figure NAME --out DIR [--fast]; all of them: "
        "gaussmix figure all --out DIR [--fast] [--n-jobs N]"
    )


def _figure_all(ctx: typer.Context, out: Path, fast: bool, quiet: bool) -> None:
    """``gaussmix figure all``: every figure of the atlas, and DIR/atlas.json."""
    for p in ctx.command.params:
        if p.name not in _FIGURE_COMMON and given(ctx, p.name) and p.name != "n_jobs":
            raise ValueError(
                f"{long_flag(p)} is not an option of figure all (its options: "
                f"{', '.join(_ATLAS_OPTIONS)})"
            )
    n_jobs = ctx.params["n_jobs"] if ctx.params["n_jobs"] is not None else 1
    check_param("n_jobs", n_jobs, name="--n-jobs")
    out = make_out_dir(out)
    from gaussmix.figures import make_atlas

    res = make_atlas(out, fast=fast, n_jobs=n_jobs, progress=not quiet)
    width = max(len(e.name) for e in res.entries)
    for e in res.entries:
        notes = [f"{len(e.warnings)} warnings"] if e.warnings else []
        if e.not_converged:
            notes.append(f"{e.not_converged} points did not converge")
        if e.error:
            notes.append(e.error)
        line = f"{e.name.ljust(width)}  {e.status:<6}  {e.seconds:8.1f} s"
        typer.echo("  ".join([line, *notes]) if notes else line)
    typer.echo(f"wrote {res.path} ({len(res.entries)} figures, {res.seconds:.1f} s)")
    if res.failed:
        raise GaussmixError(
            f"{len(res.failed)} of {len(res.entries)} figures failed: "
            f"{', '.join(res.failed)} (errors in {res.path})"
        )


def _figure_kwargs(ctx: typer.Context, spec: Any) -> dict[str, Any]:
    """The table function's arguments from the options given on the command line; an
    option the figure does not take, or a simulation option with ``--no-simulate``, is
    refused naming it."""
    passed = [p for p in ctx.command.params if p.name not in _FIGURE_COMMON and given(ctx, p.name)]
    no_sim = given(ctx, "simulate") and ctx.params["simulate"] is False
    kw: dict[str, Any] = {}
    solver = [p for p in passed if p.name in FIGURE_SOLVER_OPTIONS]
    if solver:
        from gaussmix.figures import FIGURES

        if not _takes_solver_options(spec):
            raise ValueError(
                f"{long_flag(solver[0])} is not an option of figure {spec.name} (it takes no "
                "solver options; the figures that do: "
                f"{', '.join(n for n, s in FIGURES.items() if _takes_solver_options(s))})"
            )
        # the options given, also at their defaults (over the figure's own choices)
        kw["options"] = {p.name: ctx.params[p.name] for p in solver}
    for p in passed:
        if p.name in FIGURE_SOLVER_OPTIONS:
            continue
        if p.name == "mixture":
            kw["mixture"] = _figure_mixture(spec, ctx.params["mixture"])
            continue
        opt = spec.option(long_flag(p))
        if opt is None:
            takes = ", ".join(o.flag for o in spec.options) or "none"
            raise ValueError(
                f"{long_flag(p)} is not an option of figure {spec.name} (its options: {takes})"
            )
        if opt.simulation and no_sim:
            raise ValueError(f"{opt.flag} cannot be used with --no-simulate")
        kw[opt.param] = _figure_value(opt, ctx.params[p.name])
    for opt in spec.options:
        if opt.param not in kw and opt.has_cli_default and not (opt.simulation and no_sim):
            kw[opt.param] = opt.cli_default
    return kw


def _takes_solver_options(spec: Any) -> bool:
    """Whether the table function of a figure takes the solver's ``options``."""
    return "options" in inspect.signature(spec.table).parameters


def _figure_value(opt: Any, value: Any) -> Any:
    """The text of a list option parsed by the option's kind (others pass as they are)."""
    if opt.kind == "grid":
        if ":" in str(value):
            return parse_grid(opt.flag, str(value), fact=None)
        return parse_floats(opt.flag, value)
    if opt.kind == "int" and isinstance(value, str):  # a flag that other figures read as a list
        return integer_parser(opt.param, opt.flag)(value)
    if opt.kind == "ints":
        parts = [t.strip() for t in str(value).split(",")]
        if not all(re.fullmatch(r"[+-]?\d+", t) for t in parts):
            raise ValueError(f"{opt.flag} must be comma-separated integers, got {value!r}")
        return [int(t) for t in parts]
    return value
