"""``gaussmix simulate`` and ``gaussmix compare``: finite-size simulations of a point's
mixture, and their comparison with the theory's curve (registered by
:mod:`gaussmix.cli.commands`)."""

import json
import math
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import typer

from gaussmix.core.jsonio import finite_or_none
from gaussmix.frontend.grids import parse_grid
from gaussmix.frontend.options import (
    POINT_FLAGS,
    SOLVER_OPTIONS,
    PointOptions,
    PointSetup,
    build_point,
)
from gaussmix.theory.model.outputs import simulated_keys

from .common import (
    JobsOption,
    OutOption,
    QuietOption,
    check_finite_errors,
    check_grid,
    describe_params,
    fmt,
    lazy,
    report_curve,
    without_options,
    write_provenance,
)
from .exits import (
    check_output_path,
    make_out_dir,
)
from .helpers import flag_message, one_blas_thread
from .options import point_options

__all__ = ["simulate", "compare"]

learning_curve = lazy("gaussmix.experiments", "learning_curve")


DOption = Annotated[
    int, typer.Option("--d", metavar="D", help="Input dimension of the simulated instances.")
]
SeedOption = Annotated[
    int,
    typer.Option(
        "--seed",
        metavar="N",
        help="Root seed (numpy SeedSequence(N).spawn(seeds)): reproducible bit for bit.",
    ),
]


def _seeds_option(help_text: str) -> Any:
    return typer.Option("--seeds", metavar="S", help=help_text)


@without_options(*SOLVER_OPTIONS)
@point_options
def simulate(
    opts: PointOptions,
    d: DOption = 1000,
    seeds: Annotated[
        int, _seeds_option("Number of independent instances; standard errors over them.")
    ] = 5,
    seed: SeedOption = 0,
    n_jobs: JobsOption = -1,
    json_out: Annotated[
        bool, typer.Option("--json", help="Print one JSON object (machine-readable).")
    ] = False,
    quiet: QuietOption = False,
) -> None:
    """Finite-size ERM on samples of the mixture: errors averaged over seeds.

    Takes the options of ``point`` except the theory solver's (its "Solver options"): the
    ERM is solved exactly, to scikit-learn tolerances of 1e-10.  Each
    seed realises the mixture at dimension --d, draws n = alpha d training points and
    measures the test error exactly.  With --json, prints the keys
    of ``point --json`` (means over seeds) plus <key>_se (standard errors).
    """
    from gaussmix.sweep import check_simulation, simulation_payload

    setup = build_point(opts)
    check_simulation(setup, d=d, seeds=seeds, seed=seed, n_jobs=n_jobs)
    with one_blas_thread():
        payload = simulation_payload(
            setup, d=d, seeds=seeds, seed=seed, n_jobs=n_jobs, progress=not quiet
        )
    check_finite_errors(payload)
    if json_out:
        typer.echo(json.dumps(finite_or_none(payload), allow_nan=False))
        return
    p = payload["params"]
    typer.echo(f"{describe_params(setup.params)}; d={d}, n={p['n']}, {seeds} seeds (seed {seed})")
    sparse = setup.problem.penalty_spec.sparse
    keys = [k for k in simulated_keys(sparse) if f"{k}_se" in payload]
    for key in keys:
        se = payload[f"{key}_se"]
        err = f" ± {se:.2g}" if math.isfinite(se) else ""
        typer.echo(f"  {key:<18} {payload[key]:.6g}{err}")
    typer.echo(
        f"  {'converged':<18} {payload['converged']} (at most {payload['n_iter']} ERM "
        f"iterations; {payload['message']})"
    )
    typer.echo(f"  {'b':<18} {fmt(payload['b'])}")


#: default penalty of ``gaussmix compare`` (training error 0 below the separability
#: threshold, then rising: a more telling picture than lam = 1)
COMPARE_LAM = 0.1
COMPARE_ALPHAS = "0.25:3:12"
COMPARE_D = 1000
COMPARE_SEEDS = 10


AlphasOption = Annotated[
    str,
    typer.Option(
        "--alphas",
        metavar="[log:]START:STOP:NUM",
        help="Sample complexities alpha = n/d (linear, or log-spaced with 'log:').",
    ),
]


@without_options("alpha")
@point_options(lam=COMPARE_LAM)
def compare(
    opts: PointOptions,
    alphas: AlphasOption = COMPARE_ALPHAS,
    d: DOption = COMPARE_D,
    seeds: Annotated[
        int, _seeds_option("Simulated instances per alpha (error bars: standard errors).")
    ] = COMPARE_SEEDS,
    seed: SeedOption = 0,
    n_jobs: JobsOption = -1,
    out: OutOption = Path("gaussmix-out"),
    quiet: QuietOption = False,
) -> None:
    """Theory learning curve against simulations: writes DIR/compare.csv and .png.

    Takes the options of ``point`` except --alpha (default --lam 0.1 here); ``--alphas``
    replaces it.  The theory (lines) is the fixed point at each alpha; each simulation
    (dots, error bars = standard error over --seeds) is ``gaussmix simulate`` at that
    alpha.  With no options: the K = 3 cross-entropy problem (Delta = 0.5, simplex
    means, lam = 0.1) at d = 1000 with 10 seeds per alpha, about a minute on 2 cores.
    CSV columns: the theory curve (alpha, lam, test_error, train_error, train_loss,
    test_loss, ...) then sim_<key> and sim_<key>_se for each error and loss,
    sim_converged, sim_d, sim_seeds.
    """
    import pandas as pd

    grid = parse_grid("alphas", alphas, fact="alpha")
    setup = build_point(opts, alpha=float(grid.max()))
    check_grid(setup, "--alphas", grid, "alpha")
    setups = _simulation_setups(setup, grid, d=d, seeds=seeds, seed=seed, n_jobs=n_jobs)
    check_output_path("--out", out, kind="dir")
    theory = learning_curve(
        setup.mixture,
        setup.loss,
        grid,
        lam=setup.lam,
        **setup.penalty_kw,
        progress=not quiet,
        **setup.solve_kw,
    )
    sims = _simulate_curve(setups, grid, d=d, seeds=seeds, seed=seed, n_jobs=n_jobs, quiet=quiet)
    df = pd.concat([theory.reset_index(drop=True), sims], axis=1)
    logx = alphas.startswith("log:")
    paths = _write_comparison(
        df,
        out,
        setup,
        opts.mixture,
        logx=logx,
        alpha=None,
        alphas=grid,
        d=d,
        seeds=seeds,
        seed=seed,
        n_jobs=n_jobs,
    )
    report_curve(df, paths)


def _simulation_setups(
    setup: PointSetup, grid: np.ndarray, *, d: int, seeds: int, seed: int, n_jobs: int
) -> list[PointSetup]:
    """The setup at each alpha of ``grid``, each checked for simulation (before any work)."""
    from gaussmix.sweep import check_simulation

    check_simulation(setup, d=d, seeds=seeds, seed=seed, n_jobs=n_jobs)
    setups = [setup.at(alpha=float(a)) for a in grid]
    for a, s in zip(grid, setups):
        try:
            check_simulation(s, d=d, seeds=seeds, seed=seed)
        except ValueError as exc:
            raise ValueError(f"--alphas value {a:g}: {flag_message(exc, POINT_FLAGS)}") from None
    return setups


def _simulate_curve(
    setups: list[PointSetup],
    grid: np.ndarray,
    *,
    d: int,
    seeds: int,
    seed: int,
    n_jobs: int,
    quiet: bool,
) -> Any:
    """The ``sim_*`` columns of ``compare``: one simulation per alpha, with a progress bar."""
    import pandas as pd

    from gaussmix.core.progress import progress_bar
    from gaussmix.sweep import simulation_payload

    sims = []
    with (
        one_blas_thread(),
        progress_bar(
            total=len(grid) * seeds,
            desc=f"simulate d={d}",
            unit="seed",
            enabled=not quiet,
        ) as bar,
    ):
        for a, s in zip(grid, setups):
            bar.set_postfix_str(f"alpha={a:.3g}")
            p = simulation_payload(s, d=d, seeds=seeds, seed=seed, n_jobs=n_jobs)
            row = {}
            for key in ("test_error", "train_error", "train_loss", "test_loss"):
                row[f"sim_{key}"] = p[key]
                row[f"sim_{key}_se"] = p[f"{key}_se"]
            row.update(sim_converged=p["converged"], sim_d=d, sim_seeds=seeds)
            sims.append(row)
            bar.update(seeds)
    return pd.DataFrame(sims)


def _write_comparison(
    df: Any,
    out: Path,
    setup: PointSetup,
    mixture_file: str | None,
    *,
    logx: bool,
    d: int,
    seeds: int,
    **parameters: Any,
) -> tuple[Path, Path, Path]:
    """``DIR/compare.csv``, its provenance ``DIR/compare.json`` and ``DIR/compare.png``
    (log alpha axis for a 'log:' range)."""
    from gaussmix.figures.plotting import plot_comparison, save_figure

    params = setup.params
    out = make_out_dir(out)
    csv_path = out / "compare.csv"
    png_path = out / "compare.png"
    df.to_csv(csv_path, index=False)
    json_path = write_provenance(csv_path, df, setup, mixture_file, d=d, seeds=seeds, **parameters)
    title = (
        f"{params['loss']}, K={params['n_clusters']}, λ={params['lam']:g}: theory (lines) vs "
        f"simulation (d={d}, {seeds} seeds)"
    )
    fig = plot_comparison(df, title=title, logx=logx)
    save_figure(fig, png_path)
    return csv_path, json_path, png_path
