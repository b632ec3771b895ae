"""``gaussmix data``: theory, samples of the fitted Gaussian mixture and the real data for a
labelled data set of your own (:func:`gaussmix.study_data`).

``gaussmix data FILE [FILE2] [--label COLUMN] [--cluster-ids COLUMN] [--split COLUMN]
[--test-fraction F] [--scale none|standard|max] --loss LOSS --lam L --alphas a1,a2,...
[--target-error E] [--optimal-lam] --out DIR`` writes ``DIR/data.csv`` (one row per
(alpha, source), with the ``*_gap`` columns), ``DIR/data.json`` (provenance: file
checksums, split, preprocessing, d, class counts, label map; the target's answer) and
``DIR/data.png``.  Bad data or options: one line, exit 2, nothing written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from gaussmix.frontend.options import parse_floats, solver_keywords

from .commands import app
from .common import OutOption, QuietOption
from .exits import PartialResultsError, check_output_path, make_out_dir
from .helpers import FitOnOption, one_blas_thread
from .options import solver_options
from .realdata import LAM_REASON, parse_alphas

__all__ = ["data_command"]


@app.command("data")
@solver_options
def data_command(
    files: Annotated[
        list[Path],
        typer.Argument(
            metavar="FILE",
            help="FILE.npz (X, y), FILE.csv / FILE.parquet (with --label), or X.npy y.npy.",
            show_default=False,
        ),
    ],
    label: Annotated[
        str | None,
        typer.Option(
            "--label", metavar="NAME", help="Label column (tables) or array (.npz; default y)."
        ),
    ] = None,
    cluster_ids: Annotated[
        str | None,
        typer.Option(
            "--cluster-ids",
            metavar="NAME",
            help="Column / array of cluster ids (each inside one class).",
        ),
    ] = None,
    split: Annotated[
        str | None,
        typer.Option(
            "--split", metavar="NAME", help="Column / array: train / test (or 0 / 1) per row."
        ),
    ] = None,
    test_fraction: Annotated[
        float,
        typer.Option("--test-fraction", metavar="F", help="Without --split: held out per class."),
    ] = 0.25,
    scale: Annotated[
        str,
        typer.Option(
            "--scale",
            metavar="none|standard|max",
            help="After centring: none, standard (per feature), max.",
        ),
    ] = "none",
    loss: Annotated[
        str,
        typer.Option(
            "--loss",
            metavar="LOSS",
            help="logistic, hinge, square (binary); cross-entropy, square (multi-class).",
        ),
    ] = "logistic",
    lam: Annotated[
        str,
        typer.Option(
            "--lam",
            metavar="LAMBDA[,...]",
            help=f"Ridge penalty, or l1,l2,... with one --alphas value.  {LAM_REASON}",
            show_default=False,
        ),
    ] = "0.1",
    alphas: Annotated[
        str,
        typer.Option(
            "--alphas",
            metavar="a1,... | [log:]START:STOP:NUM",
            help="Sample complexities n / d: a1,a2,... or start:stop:num.",
        ),
    ] = "0.5,1,2,4",
    subsamples: Annotated[
        int,
        typer.Option(
            "--subsamples", metavar="S", help="Real data: training subsamples per point."
        ),
    ] = 5,
    seeds: Annotated[
        int, typer.Option("--seeds", metavar="S", help="Samples of the fitted mixture per point.")
    ] = 5,
    seed: Annotated[
        int, typer.Option("--seed", metavar="N", help="Seed of the split, subsamples, samples.")
    ] = 0,
    sources: Annotated[
        str,
        typer.Option(
            "--sources",
            metavar="theory,synthetic,real",
            help="Comma list of theory, synthetic, real.",
        ),
    ] = "theory,synthetic,real",
    counts: Annotated[
        str,
        typer.Option(
            "--counts",
            metavar="fixed|random",
            help="Class counts of the subsamples: fixed round(rho n) (the theory's priors "
            "then n_c / n, tested under the test split's), or random.",
        ),
    ] = "fixed",
    fit_on: FitOnOption = "train",
    target_error: Annotated[
        float | None,
        typer.Option(
            "--target-error",
            metavar="E",
            help="Smallest alpha (and n) where theory reaches it.",
        ),
    ] = None,
    alpha_max: Annotated[
        float,
        typer.Option(
            "--alpha-max", metavar="ALPHA", help="Largest alpha of the --target-error search."
        ),
    ] = 100.0,
    optimal_lam: Annotated[
        bool, typer.Option("--optimal-lam", help="Also the theory at lambda*(alpha).")
    ] = False,
    max_memory: Annotated[
        float | None,
        typer.Option(
            "--max-memory", metavar="GIB", help="GiB the study may use (default: available now)."
        ),
    ] = None,
    solver: dict | None = None,
    out: OutOption = Path("gaussmix-out"),
    quiet: QuietOption = False,
) -> None:
    """Your own labelled data: the Gaussian mixture fitted per class, the theory curve,
    samples of the fitted mixture and the real data subsampled at the same alphas, with
    error bars and the Gaussian-equivalence gap: writes DIR/data.csv, data.json, data.png.

    The protocol (the docs, "Your own data"): a held-out split given or drawn per class with
    --seed; centring on the training mean, then --scale; the mixture fitted on the
    training split (--fit-on all: on both splits, the paper's protocol);
    real: n = round(alpha d) training rows, tested on the whole test split.
    """
    from gaussmix.core.exceptions import ArgumentError
    from gaussmix.data.files import load_labelled
    from gaussmix.figures.owndata import save_data_study
    from gaussmix.studies import study_data
    from gaussmix.studies.owndata import label_dim

    if len(files) > 2:
        raise ArgumentError("files", f"takes one data file or two .npy files, got {len(files)}")
    lams = parse_floats("--lam", lam)
    a = parse_alphas(alphas)
    if len(lams) > 1 and len(a) > 1:
        raise ArgumentError(
            "lam", "takes several values only with one --alphas value (a curve over lambda)"
        )
    check_output_path("--out", out, kind="dir")
    data = load_labelled(
        files[0],
        files[1] if len(files) > 1 else None,
        label=label,
        cluster_ids=cluster_ids,
        split=split,
    )
    dim = 1 if solver["quad_order"] is None else label_dim(loss, data.y)
    solver_kw = solver_keywords(solver, dim)
    with one_blas_thread(theory=True):
        study = study_data(
            data,
            loss=loss,
            lam=lams[0] if len(lams) == 1 else lams,
            alphas=a if len(lams) == 1 else a[0],
            test_fraction=test_fraction,
            seed=seed,
            scale=scale,
            subsamples=subsamples,
            seeds=seeds,
            sources=[s.strip() for s in sources.split(",")],
            counts=counts,
            fit_on=fit_on,
            target_error=target_error,
            alpha_max=alpha_max,
            optimal_lam=optimal_lam,
            max_memory=max_memory,
            progress=not quiet,
            **solver_kw,
        )
    paths = save_data_study(study, make_out_dir(out))
    for p in paths:
        typer.echo(f"wrote {p}")
    for t in (study.target, study.target_optimal):
        if t is not None:
            bound = "at most " if t["below_grid"] else ""
            which = "lambda* = " if t["optimal_lam"] else "lam = "
            typer.echo(
                f"test error {t['target_error']:g} reached by the theory at alpha = {bound}"
                f"{t['alpha']:.4g} (n = {t['n']}) with {which}{t['lam']:.4g}"
            )
    df = study.table
    failed = int((~df["converged"].astype(bool)).sum())
    if failed:  # written and marked (converged False, NaN where no fixed point): exit 3
        raise PartialResultsError(
            f"{failed} of {len(df)} rows did not converge (converged False; see {paths[0]})"
        )
