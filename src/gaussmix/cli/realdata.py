"""``gaussmix realdata``: a learning curve on real data, on synthetic data from the fitted
Gaussian mixture, and from theory (:mod:`gaussmix.studies.realdata`).

Interface contract (checked outside the repository -- keep it stable): ``gaussmix realdata
--dataset mnist|fashion-mnist --task even-odd|clothes-accessories|low-high --loss logistic
--lam L --alphas a1,a2,... [--features rf --gamma G] [--subsamples S] --out DIR`` writes
``DIR/realdata.csv`` with one row per (alpha, source), source in {theory, synthetic, real},
and at least the columns ``alpha, source, test_error, test_error_se, train_error,
train_loss``; and ``DIR/realdata.png``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from gaussmix.frontend.grids import parse_grid
from gaussmix.frontend.options import parse_floats, solver_keywords

from .commands import app
from .common import OutOption, QuietOption
from .exits import check_output_path, make_out_dir
from .helpers import FitOnOption, one_blas_thread
from .options import solver_options

__all__ = ["realdata_command"]


def parse_alphas(text: str) -> list[float]:
    """``--alphas``: a range ``[log:]start:stop:num`` (:func:`~gaussmix.frontend.grids.parse_grid`,
    each value a valid alpha) or a list ``a1,a2,...``; refused with an
    :class:`~gaussmix.core.exceptions.ArgumentError` naming ``alphas``."""
    if ":" in text:
        return parse_grid("alphas", text, fact="alpha").tolist()
    return parse_floats("alphas", text)


#: why the data commands' ``--lam`` defaults to 0.1 while the point commands' is 1 (said in
#: their help)
LAM_REASON = (
    "[default: 0.1, as gaussmix compare: on data a small penalty is the telling regime, "
    "where the training error is 0 below the separability threshold; the point commands' "
    "default is 1, the paper's]"
)

#: the feature maps of ``--features``
FEATURES = ("none", "rf")


#: the words of titles and captions for ``--fit-on``
_FITTED_ON = {"train": "the training split", "all": "both splits"}


def _choice(option: str, value: str, names: tuple[str, ...]) -> str:
    if value not in names:
        raise ValueError(f"{option} must be one of {', '.join(names)}; got {value!r}")
    return value


@app.command("realdata")
@solver_options
def realdata_command(
    dataset: Annotated[
        str,
        typer.Option(
            "--dataset",
            metavar="mnist|fashion-mnist|digits",
            help="mnist, fashion-mnist or digits (scikit-learn's).",
        ),
    ],
    task: Annotated[
        str,
        typer.Option(
            "--task",
            metavar="even-odd|low-high|clothes-accessories|ten-class",
            help="Binary tasks: even-odd, low-high (mnist, digits), clothes-accessories "
            "(fashion-mnist); or ten-class (one class per digit or garment, any data set: "
            "--loss cross-entropy).",
        ),
    ],
    lam: Annotated[
        float,
        typer.Option(
            "--lam",
            metavar="LAMBDA",
            help=f"Ridge penalty lam ||w||^2 / 2.  {LAM_REASON}",
            show_default=False,
        ),
    ] = 0.1,
    alphas: Annotated[
        str,
        typer.Option(
            "--alphas",
            metavar="a1,... | [log:]START:STOP:NUM",
            help="Sample complexities: a1,a2,... or start:stop:num.",
        ),
    ] = "0.5,1,2,3",
    loss: Annotated[
        str, typer.Option("--loss", metavar="LOSS", help="Loss (cross-entropy for ten-class).")
    ] = "logistic",
    features: Annotated[
        str,
        typer.Option(
            "--features",
            metavar="none|rf",
            help="none, rf (random features erf(F x / sqrt d)).",
        ),
    ] = "none",
    gamma: Annotated[
        float | None,
        typer.Option(
            "--gamma", metavar="GAMMA", help="Random features: p / d (with --features rf)."
        ),
    ] = None,
    clustering: Annotated[
        str | None,
        typer.Option(
            "--clustering",
            metavar="p2|pk",
            help="p2 (one cluster per class) or pk (per digit); default p2, pk for ten-class.",
        ),
    ] = None,
    subsamples: Annotated[
        int,
        typer.Option(
            "--subsamples", metavar="S", help="Real data: training subsamples per alpha."
        ),
    ] = 5,
    seeds: Annotated[
        int,
        typer.Option(
            "--seeds", metavar="S", help="Synthetic data: samples of the mixture per alpha."
        ),
    ] = 5,
    seed: Annotated[
        int, typer.Option("--seed", metavar="N", help="First seed (subsamples, features).")
    ] = 0,
    sources: Annotated[
        str,
        typer.Option(
            "--sources",
            metavar="theory,synthetic,real",
            help="Comma list of theory, synthetic, real.",
        ),
    ] = "theory,synthetic,real",
    data_dir: Annotated[
        Path | None,
        typer.Option("--data-dir", metavar="DIR", help="Directory with the data files."),
    ] = None,
    download: Annotated[
        bool, typer.Option("--download", help="Download missing data (checksums verified).")
    ] = False,
    solver: dict | None = None,
    fit_on: FitOnOption = "train",
    out: OutOption = Path("gaussmix-out"),
    quiet: QuietOption = False,
) -> None:
    """Learning curve on real data, on samples of the Gaussian mixture fitted to it, and
    from theory: writes DIR/realdata.csv and DIR/realdata.png.

    The protocol (the docs, "Real data"): pixels / 255, flattened, centred on the training
    mean; the mixture fitted on the training split (--fit-on all: on both splits, the
    paper's protocol); real: n = round(alpha d) training images,
    tested on the whole test split; error bars are one standard error over subsamples
    (real) or seeds (synthetic).
    """
    from gaussmix.core.provenance import write_provenance
    from gaussmix.data import DATASETS, TASKS, RandomFeatures, get_task, load_dataset
    from gaussmix.figures.plotting import save_figure
    from gaussmix.figures.realdata import plot_realdata
    from gaussmix.studies import CLUSTERINGS, SOURCES, prepare_realdata, realdata_curve
    from gaussmix.studies.realdata import FIT_ON
    from gaussmix.theory.problem.problem import effective_loss
    from gaussmix.theory.solve.options import SolverOptions

    _choice("--dataset", dataset, tuple(DATASETS))
    _choice("--task", task, TASKS.names())
    get_task(task, dataset)
    if clustering is not None:
        _choice("--clustering", clustering, CLUSTERINGS.names())
    _choice("--features", features, FEATURES)
    _choice("--fit-on", fit_on, FIT_ON)
    src = [s.strip() for s in sources.split(",")]
    for s in src:
        _choice("--sources", s, SOURCES)
    a = parse_alphas(alphas)
    if features == "none" and gamma is not None:
        raise ValueError("--gamma applies only with --features rf")
    if features == "rf" and gamma is None:
        raise ValueError("--features rf needs --gamma (the number of features over d)")
    if gamma is not None and not gamma > 0:
        raise ValueError(f"--gamma must be > 0, got {gamma:g}")
    check_output_path("--out", out, kind="dir")
    with one_blas_thread(theory=True):
        ds = load_dataset(dataset, task, data_dir=data_dir, download=download)
        fmap = None
        if features == "rf":
            fmap = RandomFeatures(max(1, round(gamma * ds.d)), seed=seed)
        problem = prepare_realdata(ds, clustering=clustering, feature_map=fmap, fit_on=fit_on)
        dim = effective_loss(loss, problem.labels)[1].shape[0]  # the channel's L'
        solver_kw = solver_keywords(solver, dim)
        df = realdata_curve(
            problem,
            loss=loss,
            lam=lam,
            alphas=a,
            subsamples=subsamples,
            seeds=seeds,
            seed=seed,
            sources=src,
            progress=not quiet,
            options=SolverOptions(**solver_kw),
        )
    out = make_out_dir(out)
    csv = out / "realdata.csv"
    df.to_csv(csv, index=False)
    parameters = {
        "dataset": dataset,
        "task": task,
        "loss": loss,
        "penalty": "l2",
        "lam": lam,
        "alphas": a,
        "features": features,
        "gamma": gamma,
        "clustering": problem.info["clustering"],
        "subsamples": subsamples,
        "seeds": seeds,
        "seed": seed,
        "sources": src,
        "d": problem.d,
        **solver,
    }
    meta = {
        **problem.info,
        "loss": loss,
        "penalty": "l2",
        "lam": lam,
        "subsamples": subsamples,
        "seeds": seeds,
        "seed": seed,
        "d": problem.d,
        "caption": f"mixture fitted on {_FITTED_ON[fit_on]}; error bars: one standard error "
        "over training subsamples (real) or over samples of the fitted mixture (synthetic)",
    }
    json_path = write_provenance(
        csv, parameters, mixture=problem.mixture, columns=list(df.columns), **meta
    )
    title = (
        f"{problem.info['dataset']} {problem.info['task']} ({problem.info['clustering']}, "
        f"{problem.features}), {loss} + ridge, lambda = {lam:g}, mixture fitted on "
        f"{_FITTED_ON[fit_on]}"
    )
    png = save_figure(plot_realdata(df, title=title), out / "realdata.png")
    for p in (csv, json_path, png):
        typer.echo(f"wrote {p}")
