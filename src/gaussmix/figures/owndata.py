"""The figure and the files of a study of your own data (:func:`gaussmix.study_data`):
test error, training error and the Gaussian-equivalence gap against alpha (or lambda)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import matplotlib as mpl
import numpy as np
from matplotlib.figure import Figure

from gaussmix.core.provenance import write_provenance
from gaussmix.studies.owndata import DataStudy

from ._common import SLIDE_STYLE, log_axis, new_slide_figure
from .plotting import AXIS_LABELS, save_figure
from .realdata import draw_sources

__all__ = ["plot_data_study", "save_data_study"]

#: the files :func:`save_data_study` writes into its directory
FILES = ("data.csv", "data.json", "data.png")


def plot_data_study(study: DataStudy, *, figsize: tuple[float, float] = (15.0, 4.6)) -> Figure:
    """Three panels against alpha (or lambda): the test error of theory, samples of the
    fitted mixture and the real data (with the theory at ``lambda*`` and the target, when
    the study has them), the training error, and the gap (real or synthetic minus theory,
    one standard error).

    Parameters
    ----------
    study : DataStudy
        The answer of :func:`gaussmix.study_data`.
    figsize : (float, float)
        Figure size in inches.
    """
    df = study.table
    x = "lam" if df["lam"].nunique() > 1 and df["alpha"].nunique() == 1 else "alpha"
    main = df[df["source"] != "optimal"]
    fig, axes = new_slide_figure(figsize, 1, 3)
    with mpl.rc_context(SLIDE_STYLE):
        ax_test, ax_train, ax_gap = axes[0]
        draw_sources(ax_test, main, x, "test_error", "C0", "")
        draw_sources(ax_train, main, x, "train_error", "C0", "")
        best = df[df["source"] == "optimal"].sort_values("alpha")
        if not best.empty:
            ax_test.plot(
                best["alpha"],
                best["test_error"],
                "--",
                color="C2",
                label="theory at lambda*(alpha)",
            )
        if study.target is not None:
            ax_test.axhline(
                study.target["target_error"],
                color="C3",
                ls=":",
                lw=1.0,
                label=f"target {study.target['target_error']:g}",
            )
        for t, colour in ((study.target, "C3"), (study.target_optimal, "C2")):
            if t is not None and x == "alpha":
                which = (
                    f"lambda* = {t['lam']:.3g}" if t["optimal_lam"] else f"lambda = {t['lam']:g}"
                )
                ax_test.axvline(
                    t["alpha"],
                    color=colour,
                    ls=":",
                    lw=1.0,
                    label=f"reached at alpha = {t['alpha']:.3g} (n = {t['n']}), {which}",
                )
        for i, source in enumerate(("real", "synthetic")):
            part = main[main["source"] == source].sort_values(x)
            if part.empty or "test_error_gap" not in part:
                continue
            ax_gap.errorbar(
                part[x],
                part["test_error_gap"],
                yerr=part["test_error_gap_se"],
                fmt="s" if source == "real" else "o",
                color=f"C{i + 4}",
                mfc=None if source == "real" else "none",
                label=f"{source} - theory ±1 s.e.",
            )
        ax_gap.axhline(0.0, color="0.4", lw=0.8)
        for ax, name in zip(
            (ax_test, ax_train, ax_gap),
            ("test error", "training error", "test error gap (minus theory)"),
            strict=True,
        ):
            ax.set_xlabel(AXIS_LABELS.get(x, x))
            ax.set_ylabel(name)
            if x == "lam":
                log_axis(ax)
            ax.grid(True, which="major", alpha=0.3, linewidth=0.6)
        handles, labels = [], []
        for ax in (ax_test, ax_gap):
            h, lab = ax.get_legend_handles_labels()
            handles += h
            labels += lab
        fig.legend(handles, labels, loc="outside right center", frameon=False)
        info = study.info
        lam = info.get("lam")
        lam_text = f"lambda = {lam:g}" if isinstance(lam, float) else "lambda varies"
        fig.suptitle(
            f"{info.get('dataset', 'data')} (d = {info.get('d')}, {len(info.get('classes', []))} "
            f"classes, {info.get('preprocessing', {}).get('scale', 'none')} scaling), "
            f"{info.get('loss')} + ridge, {lam_text}\nmixture fitted on "
            + ("both splits" if info.get("fit_on") == "all" else "the training split")
            + (
                "; every row trains on the same class counts (theory: priors n_c/n)"
                if info.get("counts") == "fixed"
                else ""
            )
        )
    return fig


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


def save_data_study(study: DataStudy, out: str | Path) -> list[Path]:
    """Write ``data.csv`` (the table), ``data.json`` (provenance, the target answer) and
    ``data.png`` (:func:`plot_data_study`) into the directory ``out`` (created); the figure
    and the texts are made before any file is written.

    Parameters
    ----------
    study : DataStudy
        The answer of :func:`gaussmix.study_data`.
    out : path
        The output directory.

    Returns
    -------
    list of Path
        The files written.
    """
    fig = plot_data_study(study)
    csv = study.table.to_csv(index=False)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / name for name in FILES]
    paths[0].write_text(csv)
    info = _jsonable(study.info)
    write_provenance(
        paths[0],
        info.pop("parameters", {}),
        mixture=study.problem.mixture,
        columns=list(study.table.columns),
        **info,
    )
    save_figure(fig, paths[2])
    return paths
