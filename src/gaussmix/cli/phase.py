"""``gaussmix bayes-optimal`` and ``gaussmix transition``: the Bayes-optimal error and the
separability threshold of a mixture (the commands are registered in
:mod:`gaussmix.cli.commands`).

Interface contract (checked outside the repository -- keep it stable)
--------------------------------------------------------------------
* ``gaussmix bayes-optimal [mixture options of point] --alpha A --json`` prints one JSON
  object: ``test_error, error_estimate, cluster_errors, groups, learned_gram, K, rho,
  delta, gram, alpha`` (:meth:`BayesOptimalResult.to_dict`) and ``params``.
* ``gaussmix transition [mixture options of point] --json`` prints one JSON object with
  (at least) ``alpha_star`` and ``converged`` (the ``to_dict()`` of
  ``gaussmix.experiments.transition.separability_threshold``) and ``params``.  With
  ``--simulate [--d 100,200,400 --seeds N --alphas ...]`` it also measures the fraction
  of linearly separable samples (:func:`gaussmix.simulate.separability_fraction`), writes
  ``DIR/transition.csv`` and ``DIR/transition.png`` and adds ``simulation`` (paths and the
  50 % crossing per ``d``) to the JSON.  ``--no-theory`` skips alpha* (then
  ``alpha_star`` and ``converged`` are null) and needs ``--simulate --alphas``.

The mixture options are those of ``point`` without the estimator's (--loss, --penalty,
--l1-ratio, --lam) and the solver's (--tol, --max-iter, --quad-order): neither quantity
depends on them.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Annotated, Any

import typer

from gaussmix.core.exceptions import ArgumentError, ConvergenceError, GaussmixError
from gaussmix.core.jsonio import finite_or_none
from gaussmix.core.version import __version__
from gaussmix.frontend.grids import parse_grid
from gaussmix.frontend.options import (
    MODELS,
    SOLVER_OPTIONS,
    PointOptions,
    build_point,
    parse_floats,
    read_mixture_file,
)
from gaussmix.theory.channel.losses import LOSSES
from gaussmix.theory.model.mixture import MIXTURE_MODELS, Mixture

from .exits import PartialResultsError, check_output_path, make_out_dir
from .helpers import given, one_blas_thread
from .options import point_options

__all__ = ["ESTIMATOR_OPTIONS", "bayes_optimal", "transition"]

#: point options that do not define the mixture (the estimator's and the solver's)
ESTIMATOR_OPTIONS = ("loss", "penalty", "l1_ratio", "lam", *SOLVER_OPTIONS)

#: defaults of ``gaussmix transition --simulate``
TRANSITION_D = "100,200,400"
TRANSITION_SEEDS = 20
#: without --alphas, the simulated alphas are this many points on [lo, hi] * alpha*
TRANSITION_SPAN = (0.7, 1.3, 9)


def _mixture(opts: PointOptions, alpha: float | None = None) -> tuple[Mixture, dict]:
    """The mixture of the point options and its JSON description (``params``).

    The options are resolved as ``point`` resolves them; a model with binary labels only
    (``--model sparse``) is resolved with a binary loss, the estimator being irrelevant here.
    """
    loss = opts.loss
    if opts.mixture is not None:
        binary = read_mixture_file(opts.mixture).labels.is_binary
    else:
        binary = opts.model in MODELS and MIXTURE_MODELS.get(opts.model).binary
    if binary:
        loss = next(c.name for c in LOSSES if c.labels == "binary")
    setup = build_point(dataclasses.replace(opts, loss=loss), alpha=alpha)
    params = {k: v for k, v in setup.params.items() if k not in ESTIMATOR_OPTIONS}
    if alpha is None:
        params.pop("alpha", None)
    return setup.mixture, {**params, "version": __version__}


def _model_message(opts: PointOptions, exc: ValueError) -> ValueError:
    """The library's refusal of the mixture (an ``ArgumentError`` naming ``mixture``) said
    with the options that built it: ``--model block: ...`` or ``--mixture FILE: ...``."""
    if isinstance(exc, ArgumentError) and exc.argument == "mixture":
        flag = f"--model {opts.model}" if opts.mixture is None else f"--mixture {opts.mixture}"
        return exc.named(flag)
    return exc


JsonOption = Annotated[
    bool, typer.Option("--json", help="Print one JSON object (machine-readable).")
]


# ======================================================================= bayes-optimal
@point_options
def bayes_optimal(opts: PointOptions, json_out: JsonOption = False) -> None:
    """Bayes-optimal test error at --alpha (Appendix D, corrected; isotropic mixtures).

    Takes the mixture options of ``point`` and --alpha.  The error of the best possible
    classifier that knows the model (rho, Delta_c, the law of the means) and sees
    n = alpha d labelled samples, as d -> infinity: the floor of every ERM test error.
    Clusters of different variance are never confused (|x|^2 / d identifies them).
    """
    from gaussmix.theory.limits.bayes import bayes_optimal_error

    mixture, params = _mixture(opts, alpha=opts.alpha)
    try:
        res = bayes_optimal_error(mixture, opts.alpha)
    except ValueError as exc:
        raise _model_message(opts, exc) from None
    payload = {**res.to_dict(), "params": params}
    if json_out:
        typer.echo(json.dumps(finite_or_none(payload), allow_nan=False))
        return
    typer.echo(
        f"K={params['n_clusters']} ({params['means']} means, rho={params['rho']}), "
        f"delta={params.get('delta')}, alpha={opts.alpha:g}"
    )
    typer.echo(f"  {'test_error':<18} {res.test_error:.6g} ± {res.error_estimate:.2g}")
    typer.echo(f"  {'cluster_errors':<18} {[round(float(v), 6) for v in res.cluster_errors]}")
    if len(res.groups) > 1:
        typer.echo(f"  {'variance groups':<18} {res.groups}")


# ========================================================================== transition
DOption = Annotated[
    str,
    typer.Option("--d", metavar="d1,d2,...", help="--simulate: input dimensions of the samples."),
]
SeedsOption = Annotated[
    int,
    typer.Option("--seeds", metavar="N", help="--simulate: samples per (d, alpha)."),
]
TransitionAlphas = Annotated[
    str | None,
    typer.Option(
        "--alphas",
        metavar="[log:]START:STOP:NUM",
        help="--simulate: sample complexities [default: 9 points on [0.7, 1.3] alpha*].",
    ),
]


@point_options
def transition(
    ctx: typer.Context,
    opts: PointOptions,
    simulate: Annotated[
        bool,
        typer.Option(
            "--simulate",
            help="Also measure the fraction of linearly separable samples (LP, HiGHS) at "
            "each --d and --alphas; writes DIR/transition.csv and DIR/transition.png.",
        ),
    ] = False,
    theory: Annotated[
        bool,
        typer.Option(
            "--theory/--no-theory",
            help="Compute alpha* (--no-theory: the LP check only; needs --simulate --alphas).",
        ),
    ] = True,
    rel_tol: Annotated[
        float, typer.Option("--rel-tol", metavar="TOL", help="Relative tolerance on alpha*.")
    ] = 1e-4,
    d: DOption = TRANSITION_D,
    seeds: SeedsOption = TRANSITION_SEEDS,
    alphas: TransitionAlphas = None,
    seed: Annotated[
        int, typer.Option("--seed", metavar="N", help="--simulate: root seed (reproducible).")
    ] = 0,
    n_jobs: Annotated[
        int,
        typer.Option("--n-jobs", "-j", metavar="N", help="--simulate: worker processes."),
    ] = 1,
    out: Annotated[Path, typer.Option("--out", "-o", help="--simulate: output directory.")] = Path(
        "gaussmix-out"
    ),
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
    json_out: JsonOption = False,
) -> None:
    """Separability threshold alpha* (lam -> 0+: training error 0 below it).

    Takes the mixture options of ``point``.  With --simulate, checks it at finite size:
    the fraction of samples of n = round(alpha d) points that a linear classifier with
    bias separates (an LP per sample), against alpha for each --d, with the 50 %
    crossings (logistic fit, standard error).
    """
    sim_only = ("d", "seeds", "alphas", "seed", "n_jobs", "out")
    if not simulate:
        for name in sim_only:
            if given(ctx, name):
                flag = "--" + name.replace("_", "-")
                raise ValueError(f"{flag} is only valid with --simulate")
        if not theory:
            raise ValueError("--no-theory needs --simulate (there is nothing else to do)")
    if not theory and alphas is None:
        raise ValueError("--no-theory needs --alphas (the default range is around alpha*)")
    from gaussmix.core.validation import check_real

    rel_tol = check_real("--rel-tol", rel_tol, low=0.0, low_open=True, high=0.1)
    mixture, params = _mixture(opts)
    sim: dict[str, Any] = {}
    if simulate:
        sim = _simulation_options(d, seeds, alphas, seed, n_jobs, parse_grid)
        _check_sizes(mixture, sim)
        check_output_path("--out", out, kind="dir")
    payload = _theory_payload(opts, mixture, rel_tol, quiet) if theory else _no_theory()
    payload["params"] = params
    if simulate:
        record = {**params, "rel_tol": rel_tol, "theory": theory, **sim}
        payload["simulation"] = _simulate(
            mixture, sim, payload, out, quiet, record=record, mixture_file=opts.mixture
        )
    if json_out:
        typer.echo(json.dumps(finite_or_none(payload), allow_nan=False))
    else:
        _print_transition(payload)
    if theory and not payload["converged"]:  # printed, and said: exit 3
        raise PartialResultsError(f"alpha* not found: {payload.get('message', '')}")


def _no_theory() -> dict[str, Any]:
    return {"alpha_star": None, "converged": None, "message": "not computed (--no-theory)"}


def _theory_payload(
    opts: PointOptions, mixture: Mixture, rel_tol: float, quiet: bool
) -> dict[str, Any]:
    """``separability_threshold(...).to_dict()`` (the experiments layer's alpha*)."""
    try:
        from gaussmix.experiments.transition import separability_threshold
    except ImportError as exc:
        raise GaussmixError(
            "the theory of alpha* (gaussmix.experiments.transition) is not available in "
            f"this installation ({exc}); use --simulate --no-theory --alphas ... for the "
            "finite-size check alone"
        ) from None
    try:
        res = separability_threshold(mixture, rel_tol=rel_tol, progress=not quiet)
    except ValueError as exc:
        raise _model_message(opts, exc) from None
    payload = dict(res.to_dict())
    payload["alpha_star"] = float(res.alpha_star) if res.alpha_star is not None else None
    payload["converged"] = bool(res.success)
    return payload


def _simulation_options(
    d: str, seeds: int, alphas: str | None, seed: int, n_jobs: int, parse_range: Any
) -> dict[str, Any]:
    """Parsed and checked ``--d, --seeds, --alphas, --seed, --n-jobs`` (before any work)."""
    from gaussmix.core.validation import PARAMETERS, check_param

    dims = []
    for v in parse_floats("--d", d):
        if v != int(v):
            raise ValueError(f"--d must be {PARAMETERS['d']}, got {v:g}")
        dims.append(check_param("d", int(v), name="--d"))
    check_param("seeds", seeds, name="--seeds")
    check_param("seed", seed, name="--seed")
    check_param("n_jobs", n_jobs, name="--n-jobs")
    grid = None if alphas is None else parse_range("alphas", alphas, fact="alpha")
    return {"d": dims, "seeds": seeds, "alphas": grid, "seed": seed, "n_jobs": n_jobs}


def _check_sizes(mixture: Mixture, sim: dict[str, Any]) -> None:
    from gaussmix.simulate.simulation import check_dimension, check_sample_size

    for dim in sim["d"]:
        check_dimension(mixture, dim, name="--d")
        if sim["alphas"] is not None:
            for a in sim["alphas"]:
                if round(a * dim) < 1:
                    raise ValueError(f"--alphas value {a:g} gives no sample at --d {dim}")
                check_sample_size(round(a * dim), dim)


def _simulate(
    mixture: Mixture,
    sim: dict[str, Any],
    theory: dict[str, Any],
    out: Path,
    quiet: bool,
    *,
    record: dict[str, Any],
    mixture_file: str | None,
) -> dict[str, Any]:
    """Run the LP check, write the CSV, its provenance (``transition.json``: ``record``,
    the parameters, with the theory's alpha*) and the PNG; return the ``simulation``
    entry."""
    import numpy as np

    from gaussmix.core.provenance import write_provenance
    from gaussmix.simulate.separability import lp_crossing, separability_fraction

    grid = sim["alphas"]
    star = theory.get("alpha_star")
    if grid is None:
        if star is None or not theory.get("converged"):
            raise ConvergenceError(
                "alpha* is not available to centre the simulated alphas "
                f"({theory.get('message')}); give --alphas"
            )
        lo, hi, num = TRANSITION_SPAN
        grid = np.linspace(lo * star, hi * star, num)
        _check_sizes(mixture, {**sim, "alphas": grid})
    with one_blas_thread():
        table = separability_fraction(
            mixture,
            grid,
            d=sim["d"],
            seeds=sim["seeds"],
            seed=sim["seed"],
            n_jobs=sim["n_jobs"],
            progress=not quiet,
        )
    crossings = []
    for dim in sim["d"]:
        try:
            a50, se = lp_crossing(table, d=dim)
            crossings.append({"d": dim, "alpha_50": a50, "se": se, "message": "ok"})
        except ValueError as exc:
            crossings.append({"d": dim, "alpha_50": None, "se": None, "message": str(exc)})
    out = make_out_dir(out)
    csv_path = out / "transition.csv"
    png_path = out / "transition.png"
    table.to_csv(csv_path, index=False)
    json_path = write_provenance(
        csv_path,
        {**record, "alphas": grid},
        mixture=mixture,
        mixture_file=mixture_file,
        columns=list(table.columns),
        alpha_star=star,
        crossings=crossings,
    )
    _plot(table, star if theory.get("converged") else None, png_path)
    return {
        "csv": str(csv_path),
        "png": str(png_path),
        "json": str(json_path),
        "d": sim["d"],
        "seeds": sim["seeds"],
        "seed": sim["seed"],
        "crossings": crossings,
    }


def _plot(table: Any, alpha_star: float | None, path: Path) -> None:
    """Fraction of separable samples against alpha, one curve per d; alpha* dashed."""
    from gaussmix.figures.plotting import new_axes, save_figure

    ax = new_axes()
    for dim, t in table.groupby("d"):
        ax.errorbar(t["alpha"], t["fraction"], yerr=t["se"], marker="o", label=f"d = {dim}")
    if alpha_star is not None:
        ax.axvline(alpha_star, color="k", linestyle="--", linewidth=1.0, label="α* (theory)")
    ax.set_xlabel("α = n / d")
    ax.set_ylabel("fraction linearly separable")
    ax.set_ylim(-0.03, 1.03)
    ax.legend(frameon=False)
    save_figure(ax.figure, path)


def _print_transition(payload: dict[str, Any]) -> None:
    star = payload.get("alpha_star")
    if payload.get("converged") is None:
        typer.echo("alpha*: not computed (--no-theory)")
    else:
        state = "converged" if payload["converged"] else "NOT converged"
        value = f"{star:.6g}" if star is not None else "none"
        typer.echo(f"alpha* = {value} ({state}: {payload.get('message', '')})")
    sim = payload.get("simulation")
    if sim:
        for c in sim["crossings"]:
            if c["alpha_50"] is None:
                typer.echo(f"  d = {c['d']}: {c['message']}")
            else:
                a50, se = c["alpha_50"], c["se"]
                typer.echo(f"  d = {c['d']}: 50 % separable at alpha = {a50:.4g} ± {se:.2g}")
        typer.echo(f"wrote {sim['csv']}")
        typer.echo(f"wrote {sim['png']}")
        typer.echo(f"wrote {sim['json']}")
