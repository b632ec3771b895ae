"""Your own labelled data against Gaussian-mixture theory: the study of
:mod:`gaussmix.studies.realdata` on any data set (the docs, "Your own data").

The protocol, each step recorded in :attr:`DataStudy.info`:

1. the data (a file, :func:`gaussmix.data.files.load_labelled`, or arrays) are checked
   (:func:`gaussmix.data.files.check_labelled`, then the memory the study needs);
2. a held-out split, given (``split``) or drawn per class with ``seed``
   (``test_fraction``);
3. the inputs centred on the training mean and scaled (``scale``), fitted on the training
   split only;
4. the labels encoded for the loss: two classes as +1 (the second class in sorted order)
   and -1 for the binary losses and the square loss, one-hot vectors otherwise (a multi-class
   problem, or cross-entropy);
5. a Gaussian mixture fitted per class, or per given cluster id (each cluster inside one
   class: its label is its class's), on the training split only (``fit_on='train'``, the
   default: the held-out split is never seen) or on the inputs of both splits
   (``fit_on='all'``, the paper's protocol)
   (:func:`gaussmix.studies.realdata.fit_problem`); a cluster with no more samples than
   dimensions has a singular covariance, said once
   (:class:`~gaussmix.core.exceptions.SingularCovarianceWarning`, by ``fit_problem``):
   the theory then describes the fitted mixture;
6. the curves of :func:`gaussmix.studies.realdata_curve` (theory, samples of the fitted
   mixture, the real data subsampled at the same alphas, with error bars and the
   Gaussian-equivalence gap), over alpha at one lam or over lam at one alpha; with fixed
   counts (the default) all three train on the same counts ``n_c`` and the theory's
   training priors are exactly ``n_c / n``, all three tested under the test split's
   composition (:func:`gaussmix.studies.realdata.training_mixture`);
7. optionally, the smallest alpha (and n) at which the theory's test error reaches a
   target (:func:`target_alpha`), and the theory at the optimal penalty ``lambda*(alpha)``
   (:func:`gaussmix.optimal_lambda_curve`; rows of source ``'optimal'``), with the target
   at the optimal penalty too.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from gaussmix.core.exceptions import ArgumentError, ConvergenceError
from gaussmix.core.progress import progress_bar
from gaussmix.core.tables import CurveTable
from gaussmix.core.validation import check_choice, check_int, check_real
from gaussmix.data import Dataset
from gaussmix.data.files import (
    SCALINGS,
    DataFileError,
    LabelledData,
    as_split,
    check_labelled,
    check_memory,
    preprocess,
    py_value,
    split_indices,
)
from gaussmix.experiments.curves import learning_curve
from gaussmix.experiments.lambda_star import optimal_lambda, optimal_lambda_curve
from gaussmix.theory.api.api import solve
from gaussmix.theory.channel.losses import get_loss
from gaussmix.theory.model.labels import LabelMap
from gaussmix.theory.model.mixture import Mixture
from gaussmix.theory.problem.problem import effective_loss
from gaussmix.theory.solve.options import SolverOptions, solver_options, with_options_doc

from .realdata import (
    FIT_ON,
    SOURCES,
    RealDataProblem,
    curve_points,
    fit_problem,
    realdata_curve,
    realdata_lambda_curve,
    sample_size,
    training_counts,
)

__all__ = ["DataStudy", "label_dim", "prepare_data", "study_data", "target_alpha"]

#: the smallest alpha of the search of :func:`target_alpha`
ALPHA_MIN = 0.05


@dataclass(frozen=True, eq=False)
class DataStudy:
    """The answer of :func:`study_data`.

    Attributes
    ----------
    table : CurveTable
        One row per (point, source): the columns of :func:`gaussmix.studies.realdata_curve`
        (with the ``*_gap`` columns), and rows of source ``'optimal'`` (theory at
        ``lambda*(alpha)``, in ``lam``) when asked for.
    problem : RealDataProblem
        The data after the protocol and the fitted mixture.
    target : dict or None
        :func:`target_alpha`'s answer at the given ``lam``, when a target error was given.
    target_optimal : dict or None
        Its answer at the optimal penalty, when ``optimal_lam`` was asked for too.
    info : dict
        Provenance: files and checksums (or the arrays' checksum), split, preprocessing,
        d, class and cluster counts, label map, estimator, singular clusters.
    """

    table: CurveTable
    problem: RealDataProblem
    target: dict | None = None
    target_optimal: dict | None = None
    info: dict = field(default_factory=dict)


def _as_labelled(data: Any, y: Any, cluster_ids: Any, split: Any) -> LabelledData:
    if isinstance(data, LabelledData):
        if y is not None or cluster_ids is not None or split is not None:
            raise ArgumentError("y", "must not be given with a LabelledData (it has its labels)")
        return data
    if y is None:
        raise ArgumentError("y", "is required with an array of features")
    X = np.asarray(data)
    info = {"format": "arrays"}
    if X.dtype != object and np.issubdtype(X.dtype, np.number):
        info["sha256"] = hashlib.sha256(np.ascontiguousarray(X).tobytes()).hexdigest()
    sp = None if split is None else as_split(split, "split")
    return LabelledData(
        X=X,
        y=np.asarray(y).reshape(-1) if np.ndim(y) else np.asarray([y]),
        cluster_ids=None if cluster_ids is None else np.asarray(cluster_ids).reshape(-1),
        split=sp,
        info=info,
    )


def _encoding(loss: str, n_classes: int) -> str:
    """``'binary'`` (+-1) or ``'onehot'`` labels for ``loss`` on ``n_classes`` classes."""
    kind = get_loss(loss).labels
    if kind == "binary" and n_classes > 2:
        raise ArgumentError(
            "loss",
            f"{loss!r} needs two classes; the data have {n_classes}: use 'cross-entropy' or "
            "'square' (one-hot labels)",
        )
    if kind == "binary" or (kind == "any" and n_classes == 2):
        return "binary"
    return "onehot"


def label_dim(loss: str, y: Any) -> int:
    """The effective output dimension ``L'`` of the fixed points of the study of labels
    ``y`` with ``loss`` (the labels of step 4 of the module's protocol; what a quadrature
    rule of the channel integrates over, :func:`gaussmix.theory.problem.problem.effective_loss`):
    1 for +-1 labels, the number of classes for one-hot ones, one less for
    cross-entropy."""
    n_classes = np.unique(np.asarray(y).reshape(-1)).size
    binary = _encoding(loss, n_classes) == "binary"
    labels = LabelMap(np.array([[-1.0], [1.0]]) if binary else np.eye(n_classes))
    return int(effective_loss(loss, labels)[1].shape[0])


def _clusters(
    y: np.ndarray, cluster_ids: np.ndarray | None, classes: np.ndarray
) -> tuple[np.ndarray, np.ndarray, list]:
    """Cluster index of every row, the class index of every cluster, and the cluster ids."""
    class_of_row = np.searchsorted(classes, y)
    if cluster_ids is None:
        return class_of_row, np.arange(classes.size), [py_value(c) for c in classes]
    ids, cid = np.unique(cluster_ids, return_inverse=True)
    class_of = np.empty(ids.size, dtype=int)
    for k in range(ids.size):
        inside = np.unique(class_of_row[cid == k])
        if inside.size > 1:
            raise DataFileError(
                f"cluster {py_value(ids[k])!r} holds samples of several classes "
                f"({', '.join(repr(py_value(classes[i])) for i in inside[:3])}): each "
                "cluster must lie inside one class"
            )
        class_of[k] = inside[0]
    few = [(py_value(ids[k]), int(n)) for k, n in enumerate(np.bincount(cid)) if n < 2]
    if few:
        raise DataFileError(
            f"cluster {few[0][0]!r} has {few[0][1]} sample: at least two per cluster are "
            "needed to fit its mean and covariance"
        )
    return cid, class_of, [py_value(c) for c in ids]


def prepare_data(
    data: Any,
    y: Any = None,
    *,
    loss: str = "logistic",
    cluster_ids: Any = None,
    split: Any = None,
    test_fraction: float = 0.25,
    seed: int = 0,
    scale: str = "none",
    name: str | None = None,
    max_memory: float | None = None,
    fit_on: str = "train",
) -> RealDataProblem:
    """Steps 1–5 of the module's protocol: a labelled data set ready for the curves of
    :func:`gaussmix.studies.realdata_curve` (its ``info`` records every step).

    Parameters
    ----------
    data : array (n, d) or LabelledData
        The features (with ``y``), or a data set read by
        :func:`gaussmix.data.files.load_labelled`.
    y : array (n,), optional
        Class labels (numbers or strings).
    loss : str
        The loss the study trains (it fixes the label encoding, step 4).
    cluster_ids : array (n,), optional
        Cluster ids, each cluster inside one class (default: one cluster per class).
    split : array (n,), optional
        The held-out split: ``'train'`` / ``'test'`` or booleans (True: test).
    test_fraction : float
        Without ``split``: the fraction of every class held out, in (0, 1).
    seed : int
        Seed of the drawn split.
    scale : {'none', 'standard', 'max'}
        Scaling after centring on the training mean
        (:func:`gaussmix.data.files.preprocess`).
    name : str, optional
        A name for titles (default: the file's name, or ``'data'``).
    max_memory : float, optional
        GiB the study may use (default: the memory available now).
    fit_on : {'train', 'all'}
        Fit the mixture on the training split only (default: the held-out split is never
        seen), or on both splits (the paper's protocol, which lets the theory see the test
        rows: optimistic on small data).

    Raises
    ------
    DataFileError
        Bad data (:func:`gaussmix.data.files.check_labelled`), too large for memory, a
        cluster across classes, a split without both parts.
    """
    scale = check_choice("scale", scale, SCALINGS)
    fit_on = check_choice("fit_on", fit_on, FIT_ON)
    seed = check_int("seed", seed, low=0)
    test_fraction = check_real(
        "test_fraction", test_fraction, low=0, high=1, low_open=True, high_open=True
    )
    ld = check_labelled(_as_labelled(data, y, cluster_ids, split))
    X, yv = ld.X, ld.y
    classes, class_counts = np.unique(yv, return_counts=True)
    encoding = _encoding(loss, classes.size)
    cid, class_of, ids = _clusters(yv, ld.cluster_ids, classes)
    n, d = X.shape
    n_out = 1 if encoding == "binary" else classes.size
    limit = (
        None if max_memory is None else check_real("max_memory", max_memory, low=0, low_open=True)
    )
    check_memory(n, d, len(ids), n_out, limit=None if limit is None else limit * 2**30)
    if ld.split is None:
        train, test = split_indices(yv, test_fraction, seed)
        split_info = {"split": "drawn per class", "test_fraction": test_fraction, "seed": seed}
    else:
        train, test = np.flatnonzero(~ld.split), np.flatnonzero(ld.split)
        if train.size == 0 or test.size == 0:
            raise DataFileError(
                f"split: the given split has {train.size} training and {test.size} test rows; "
                "both must be non-empty"
            )
        split_info = {"split": "given"}
    x_train, x_test, prep = preprocess(X[train], X[test], scale)
    if encoding == "binary":
        rows = np.where(class_of == classes.size - 1, 1.0, -1.0)[:, None]
        label_of = {str(py_value(classes[i])): (1 if i == 1 else -1) for i in range(2)}
    else:
        rows = np.eye(classes.size)[class_of]
        label_of = {str(py_value(c)): f"e_{i}" for i, c in enumerate(classes)}
    labels = LabelMap(rows)
    counts = np.bincount(cid, minlength=len(ids))
    files = ld.info.get("files")
    title = name or (files[0]["path"].rsplit("/", 1)[-1] if files else "data")
    ds = Dataset(
        name=title,
        x_train=x_train,
        classes_train=class_of[cid[train]],
        x_test=x_test,
        classes_test=class_of[cid[test]],
        mean=X[train].mean(axis=0),
        class_names=tuple(str(py_value(c)) for c in classes),
        source=ld.info.get("format", "arrays"),
    )
    info = {
        "dataset": title,
        "data": ld.info,
        "n_samples": int(n),
        "d": int(d),
        "n_train": int(train.size),
        "n_test": int(test.size),
        **split_info,
        "preprocessing": prep,
        "classes": [py_value(c) for c in classes],
        "class_counts": {
            str(py_value(c)): int(k) for c, k in zip(classes, class_counts, strict=True)
        },
        "clustering": "per class" if ld.cluster_ids is None else "per given cluster id",
        "clusters": ids,
        "cluster_counts": counts.tolist(),
        "encoding": encoding,
        "label_map": label_of,
        "features": "as given",
    }
    return fit_problem(
        ds,
        cid[train],
        cid[test],
        labels,
        features="as given",
        info=info,
        cluster_names=ids,
        fit_on=fit_on,
    )


def target_alpha(
    mixture: Mixture,
    loss: str,
    *,
    lam: float | None,
    target_error: float,
    d: int,
    alpha_max: float = 100.0,
    n_grid: int = 12,
    xtol: float = 1e-2,
    progress: bool = False,
    options: SolverOptions | None = None,
) -> dict:
    """The smallest sample complexity at which the theory's test error (Theorem 2) reaches
    ``target_error``, at penalty ``lam`` or at the optimal penalty ``lambda*(alpha)``.

    At a given ``lam``: the learning curve on a log grid of ``n_grid`` points in
    ``[0.05, alpha_max]`` (warm-started); the first point at or below the target and the
    one before it bracket the crossing, which bisection on ``log alpha`` (each point a
    fixed point of Theorem 1) finds to a relative ``xtol``.  A curve that dips below the
    target between two grid points and rises again is not seen.  At the optimal penalty
    the error ``min_lam eps_g(alpha, lam)`` does not rise with alpha, so the bisection runs
    on the whole interval from its ends (each point a search of
    :func:`gaussmix.optimal_lambda`).

    Parameters
    ----------
    mixture : Mixture
        The (fitted) mixture.
    loss : str
        The loss of the ERM.
    lam : float or None
        The ridge penalty; None: the optimal penalty at every alpha.
    target_error : float
        The test error to reach, in (0, 1].
    d : int
        The dimension (``n = ceil(alpha d)``).
    alpha_max : float
        The largest alpha searched.
    n_grid : int
        Points of the log grid (at a given ``lam``).
    xtol : float
        Bisection tolerance on ``log alpha`` (the relative accuracy of alpha and n).
    progress : bool
        Show progress: the grid's curve, and one step per bisection (or per end of the
        interval) with the bracket of alpha.
    options : SolverOptions, optional
        The solver's options at every fixed point (default: the solver's).

    Returns
    -------
    dict
        ``target_error``, ``lam`` (``lambda*`` at the crossing when ``lam`` is None, and
        ``optimal_lam`` True), ``alpha`` (the crossing), ``n = ceil(alpha d)``,
        ``test_error`` there, ``below_grid`` (True when already reached at the smallest
        alpha: ``alpha`` is then an upper bound), ``alpha_max``.

    Raises
    ------
    ArgumentError
        (``target_error``) when the theory never reaches the target on the grid, saying
        the best test error and where.
    ConvergenceError
        When no point of the grid converged.
    """
    target = check_real("target_error", target_error, low=0, high=1, low_open=True)
    amax = check_real("alpha_max", alpha_max, low=ALPHA_MIN, low_open=True)
    check_int("n_grid", n_grid, low=2)
    optimal = lam is None
    kw = {} if options is None else {"options": options}
    at = "at the optimal lambda" if optimal else f"at lam = {lam:g}"
    bar = progress_bar(
        total=math.ceil(math.log2(math.log(amax / ALPHA_MIN) / xtol)) + 2,
        desc=f"alpha reaching {target:g} {at}",
        unit="step",
        enabled=progress,
    )
    with bar:
        answer = _target_search(
            mixture, loss, lam, target, d, amax, n_grid, xtol, progress, kw, bar
        )
        bar.total = bar.n  # the bisection may stop early: the bar ends full
        bar.refresh()
    return answer


def _target_search(
    mixture: Mixture,
    loss: str,
    lam: float | None,
    target: float,
    d: int,
    amax: float,
    n_grid: int,
    xtol: float,
    progress: bool,
    kw: dict,
    bar: Any,
) -> dict:
    """:func:`target_alpha`'s search, its steps counted on ``bar``."""
    optimal = lam is None
    if optimal:  # the two ends: monotone in alpha
        grid = np.array([ALPHA_MIN, amax])
        ends = []
        for a in grid:
            ends.append(optimal_lambda(mixture, loss, alpha=float(a), **kw))
            bar.update()
        lams = np.array([r.lam_star for r in ends], dtype=float)
        err = np.array([r.test_error for r in ends], dtype=float)
        ok = np.array([r.success for r in ends], dtype=bool) & np.isfinite(err)
        points: list = [None, None]
    else:
        check_int("n_grid", n_grid, low=2)
        grid = np.geomspace(ALPHA_MIN, amax, n_grid)
        curve = learning_curve(mixture, loss, grid, lam=lam, progress=progress, **kw)
        bar.update(2)
        lams = np.full(grid.size, float(lam))
        err = curve["test_error"].to_numpy(dtype=float)
        ok = curve["converged"].to_numpy(dtype=bool) & np.isfinite(err)
        points = list(curve.points)
    if not ok.any():
        raise ConvergenceError(f"no fixed point on the grid alpha in [{ALPHA_MIN}, {amax:g}]")
    hit = np.flatnonzero(ok & (err <= target))
    at = "at the optimal lambda" if optimal else f"at lam = {lam:g}"
    if hit.size == 0:
        best = int(np.nanargmin(np.where(ok, err, np.nan)))
        raise ArgumentError(
            "target_error",
            f"{target:g} is never reached by the theory {at} for alpha in "
            f"[{ALPHA_MIN}, {amax:g}]: the best test error is {err[best]:.4g} "
            f"(at alpha = {grid[best]:.3g}); ask for a larger error, a larger alpha_max"
            + ("" if optimal else " or another penalty"),
        )
    answer: dict[str, Any] = {"target_error": target, "optimal_lam": optimal, "alpha_max": amax}
    j = int(hit[0])
    lo, hi, e_hi, lam_hi = np.log(grid[max(j - 1, 0)]), np.log(grid[j]), err[j], lams[j]
    warm = points[j]
    while j > 0 and hi - lo > xtol:
        mid = 0.5 * (lo + hi)
        if optimal:
            res = optimal_lambda(mixture, loss, alpha=float(np.exp(mid)), **kw)
            good, e, lam_mid = res.success, res.test_error, res.lam_star
        else:
            res = solve(mixture, loss, lam=lam, alpha=float(np.exp(mid)), init=warm, **kw)
            good, e, lam_mid = res.success, res.test_error, lam
        if good and e <= target:
            hi, e_hi, lam_hi, warm = mid, e, lam_mid, (None if optimal else res)
        else:
            lo = mid
        bar.update()
        bar.set_postfix_str(f"alpha in [{np.exp(lo):.3g}, {np.exp(hi):.3g}]")
    alpha = float(np.exp(hi))
    return {
        **answer,
        "lam": float(lam_hi),
        "alpha": alpha,
        "n": math.ceil(alpha * d),
        "test_error": float(e_hi),
        "below_grid": j == 0,
    }


def _solver_record(opts: SolverOptions) -> dict[str, Any]:
    """The solver's options as JSON-safe values (a quadrature rule by its description)."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(opts):
        value = getattr(opts, f.name)
        out[f.name] = (
            value
            if value is None or isinstance(value, bool | int | float)
            else (value.describe() if hasattr(value, "describe") else repr(value))
        )
    return out


def _check_alphas(problem: RealDataProblem, alpha: float, counts: str) -> None:
    """Refuse, before any work, an alpha asking for more training rows than there are
    (in a cluster, with fixed counts)."""
    n = sample_size(problem.d, alpha)
    have = np.bincount(problem.cluster_train, minlength=problem.mixture.n_clusters)
    need = training_counts(problem, alpha) if counts == "fixed" else np.array([n])
    have = have if counts == "fixed" else np.array([have.sum()])
    if np.any(need > have):
        worst = float(np.min(have / np.maximum(need, 1) * alpha))
        raise ArgumentError(
            "alphas",
            f"asks for n = round(alpha d) = {n} training rows at alpha = {alpha:g} (d = "
            f"{problem.d}); the training split has {problem.x_train.shape[0]}"
            f"{' (counted per class)' if counts == 'fixed' else ''}: choose alphas up to "
            f"about {worst:.3g}",
        )


@with_options_doc
def study_data(
    data: Any,
    y: Any = None,
    *,
    loss: str = "logistic",
    lam: float | Sequence[float] = 0.1,
    alphas: float | Sequence[float] = (0.5, 1.0, 2.0, 4.0),
    cluster_ids: Any = None,
    split: Any = None,
    test_fraction: float = 0.25,
    seed: int = 0,
    scale: str = "none",
    subsamples: int = 5,
    seeds: int = 5,
    sources: Sequence[str] = SOURCES,
    counts: str = "fixed",
    target_error: float | None = None,
    alpha_max: float = 100.0,
    optimal_lam: bool = False,
    name: str | None = None,
    max_memory: float | None = None,
    progress: bool = False,
    fit_on: str = "train",
    options: SolverOptions | None = None,
    **solver: Any,
) -> DataStudy:
    """Theory, samples of the fitted mixture and the real data, for a labelled data set of
    your own (the module's protocol): ``gaussmix data`` in Python.

    Parameters
    ----------
    data, y, loss, cluster_ids, split, test_fraction, seed, scale, name, max_memory, fit_on
        As in :func:`prepare_data` (``fit_on='train'`` by default: the mixture never sees
        the held-out split; ``'all'`` is the paper's protocol).
    lam : float or sequence of float
        The ridge penalty (a curve over ``alphas``), or several (a curve over lam at one
        alpha, ``alphas`` a number).
    alphas : sequence of float or float
        Sample complexities ``n / d`` of the training subsamples.
    subsamples, seeds, sources
        As in :func:`gaussmix.studies.realdata_curve`.
    counts : {'fixed', 'random'}
        Cluster counts of the training subsamples and of the mixture's samples: ``'fixed'``
        (default), the same counts ``n_c = round(rho_c n)`` (largest remainder) in both,
        and the theory of exactly that composition: training priors ``n_c / n``, the test
        error weighted by the test split's composition (a prior shift,
        :func:`gaussmix.studies.realdata.training_mixture`; at small ``n`` the rounded
        counts move the bias, and with it the error, by more than the Gaussian-equivalence
        gap); the table's ``train_priors`` and ``test_priors`` columns say so.
        ``'random'``: real subsamples drawn from the whole training split and multinomial
        counts in the samples (which raises the error at small n), the theory at the
        fitted priors.
    target_error : float, optional
        Also find the smallest alpha at which the theory reaches this test error
        (:func:`target_alpha`, at ``lam``, which must then be one number; with
        ``optimal_lam`` at the optimal penalty too, the answer to "how many samples, and
        which lambda?").
    alpha_max : float
        The largest alpha of that search.
    optimal_lam : bool
        Also the theory at ``lambda*(alpha)`` at every alpha (rows of source
        ``'optimal'``).
    progress : bool
        Show progress bars (also of the searches of ``target_error`` and
        ``optimal_lam``).
    options : SolverOptions, optional
        The solver's options at every fixed point of the theory (the curves, the target's
        search, lambda*), as one object; or any of them as a keyword, by the names of
        :func:`gaussmix.solve` (below), which override its fields.
    %(solver_options)s
    """
    points, x = curve_points(lam, alphas)  # every option checked before any work
    opts = solver_options(options, solver, caller="study_data")
    kw = {"options": opts} if options is not None or solver else {}  # else the curves' own
    counts = check_choice("counts", counts, ("fixed", "random"))
    if not sources or any(s not in SOURCES for s in sources):
        raise ArgumentError(
            "sources", f"must be a non-empty subset of {', '.join(SOURCES)}; got {list(sources)}"
        )
    check_int("subsamples", subsamples, low=1)
    check_int("seeds", seeds, low=1)
    if target_error is not None:
        check_real("target_error", target_error, low=0, high=1, low_open=True)
        check_real("alpha_max", alpha_max, low=ALPHA_MIN, low_open=True)
    if target_error is not None and x != "alpha":
        raise ArgumentError("target_error", "needs one lam (a curve over alpha)")
    if optimal_lam and x != "alpha":
        raise ArgumentError("optimal_lam", "needs a curve over alpha (one lam)")
    problem = prepare_data(
        data,
        y,
        loss=loss,
        cluster_ids=cluster_ids,
        split=split,
        test_fraction=test_fraction,
        seed=seed,
        scale=scale,
        name=name,
        max_memory=max_memory,
        fit_on=fit_on,
    )
    mixture = problem.mixture
    if "real" in sources:
        _check_alphas(problem, max(a for _, a in points), counts)
    target = target_optimal = None
    if target_error is not None:  # first: a target never reached stops before the curves
        search = {"target_error": target_error, "d": problem.d, "alpha_max": alpha_max}
        search.update(progress=progress, options=kw.get("options"))
        target = target_alpha(mixture, loss, lam=points[0][0], **search)
        if optimal_lam:
            target_optimal = target_alpha(mixture, loss, lam=None, **search)
    common = {
        "subsamples": subsamples,
        "seeds": seeds,
        "seed": seed,
        "sources": sources,
        "progress": progress,
        "counts": counts,
        **kw,
    }
    if x == "alpha":
        table = realdata_curve(problem, loss=loss, lam=lam, alphas=alphas, **common)
    else:
        table = realdata_lambda_curve(
            problem, loss=loss, lams=list(lam), alpha=float(alphas), **common
        )
    if optimal_lam:
        best = optimal_lambda_curve(mixture, loss, [a for _, a in points], progress=progress, **kw)
        rows = pd.DataFrame(
            {
                "alpha": best["alpha"].astype(float),
                "lam": best["lam_star"].astype(float),
                "source": "optimal",
                "n": [sample_size(problem.d, a) for a in best["alpha"].to_numpy(dtype=float)],
                "test_error": best["test_error"],
                "train_error": best["train_error"],
                "train_loss": best["train_loss"],
                "converged": best["converged"].astype(bool),
                # (lambda*: the fitted mixture's priors, the question of how many samples)
                "train_priors": "mixture rho",
                "test_priors": "mixture rho",
            }
        )
        for key in ("test_error", "train_error", "train_loss"):
            rows[f"{key}_se"] = 0.0  # theory: exact
        df = pd.concat([table, rows], ignore_index=True)
        table = CurveTable.from_rows(df, [*table.points, *best.points])
    info = {
        **problem.info,
        "loss": loss,
        "penalty": "l2",
        "lam": list(lam) if np.ndim(lam) else float(lam),
        "subsamples": subsamples,
        "seeds": seeds,
        "sources": list(sources),
        "counts": counts,
        "fit_on": problem.fit_on,
        "train_priors": "sample n_c/n" if counts == "fixed" else "mixture rho",
        "test_priors": "test split" if counts == "fixed" else "mixture rho",
        "target": target,
        "target_optimal": target_optimal,
        "parameters": {  # every argument of the study but the data (the provenance)
            "loss": loss,
            "penalty": "l2",
            "lam": list(lam) if np.ndim(lam) else float(lam),
            "alphas": [a for _, a in points] if x == "alpha" else float(alphas),
            "test_fraction": test_fraction,
            "seed": seed,
            "scale": scale,
            "subsamples": subsamples,
            "seeds": seeds,
            "sources": list(sources),
            "counts": counts,
            "target_error": target_error,
            "alpha_max": alpha_max,
            "optimal_lam": optimal_lam,
            "max_memory": max_memory,
            "fit_on": fit_on,
            "solver": _solver_record(opts),
        },
        "caption": "mixture fitted on "
        + ("the training split only" if problem.fit_on == "train" else "both splits")
        + "; "
        + (
            "every row trains on the same class counts n_c (theory: priors n_c/n), tested "
            "under the test split's composition; "
            if counts == "fixed"
            else ""
        )
        + "error bars: one standard error over training subsamples (real) or over "
        "samples of the fitted mixture (synthetic); *_gap: real or synthetic minus theory at "
        "the same point, with that row's standard error (for the real test error combined "
        "with the binomial error of the finite test split)",
    }
    return DataStudy(
        table=table, problem=problem, target=target, target_optimal=target_optimal, info=info
    )
