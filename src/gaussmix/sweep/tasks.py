"""Running one point: the theory and simulation payloads, warnings capture, thread limits.

A task is ``(key, spec, limit_threads)``; running it gives the point's checkpoint line, the
strict JSON of ``{'key', 'row', 'warnings', 'quadrature'}`` (:func:`run_task` returns it
decoded).  ``row`` is the ``gaussmix point --json`` (or ``simulate --json``) object of the
point.  A numerical failure becomes a row with ``converged=False``; it does not stop a sweep.

Test hook: the environment variable ``GAUSSMIX_SWEEP_TEST_DELAY`` (seconds; read when this
module is imported, in every worker) makes every task sleep before its work, so that a test
can kill a sweep in the middle.  Not for other uses.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

import numpy as np

from gaussmix.core.caught import caught
from gaussmix.core.exceptions import GaussmixError
from gaussmix.core.jsonio import dumps, loads
from gaussmix.core.version import __version__
from gaussmix.theory.channel.losses import get_loss
from gaussmix.theory.model.outputs import error_keys
from gaussmix.theory.model.penalties import make_penalty
from gaussmix.theory.solve.solver import FixedPointResult, solve_problem

from .spec import PointSpec, check_simulation, point_key

__all__ = [
    "run_task",
    "theory_payload",
    "simulation_payload",
    "check_simulation",
    "theory_keys",
    "simulation_keys",
    "simulation_tol",
    "theory_only_params",
    "ERROR_KEYS",
    "NESTED_KEYS",
    "TEST_DELAY_ENV",
]

#: the observables that simulations report with a standard error over seeds
ERROR_KEYS = error_keys()
#: keys whose values are lists or dicts (JSON strings in tables)
NESTED_KEYS = ("Q", "Q_se", "M", "M_se", "V", "b", "b_se", "integration_errors", "params")
#: test-only: seconds each task sleeps before its work (to kill a sweep in the middle)
TEST_DELAY_ENV = "GAUSSMIX_SWEEP_TEST_DELAY"


class Task(NamedTuple):
    """One unit of work: a point, its key, and whether to pin BLAS to one thread."""

    key: str
    spec: PointSpec
    limit_threads: bool = False


# ============================================================================ rules
# (each loss / penalty / observable rule of the sweep in one function, for a registry)
def theory_keys() -> tuple[str, ...]:
    """Keys of ``gaussmix point --json``: :meth:`FixedPointResult.json_keys` + ``params``."""
    return (*FixedPointResult.json_keys(), "params")


def simulation_keys(extra: Sequence[str] = ()) -> tuple[str, ...]:
    """Keys of ``gaussmix simulate --json``: :func:`theory_keys` with ``<key>_se`` after
    the errors, ``Q``, ``M``, ``b`` and any per-seed observable in ``extra``."""
    keys: list[str] = []
    for k in theory_keys():
        keys.append(k)
        if k in ERROR_KEYS or k in ("Q", "M", "b") or k in extra:
            keys.append(f"{k}_se")
    return tuple(keys)


def simulation_tol(loss: str, penalty: str, l1_ratio: float | None = None) -> float | None:
    """The ERM tolerance of a simulated point in a sweep, as the loss declares it for the
    penalty (``Loss.sweep_erm_tol``: e.g. scikit-learn's saga for logistic fits with an l1
    term), else None (the solver's default)."""
    return get_loss(loss).sweep_erm_tol(make_penalty(penalty, l1_ratio))


def theory_only_params() -> tuple[str, ...]:
    """The ``params`` of a point that only the theory uses (left out of a simulation's)."""
    from .spec import SPEC_SOLVER_OPTIONS

    return ("tol", "max_iter", "quad_order", *SPEC_SOLVER_OPTIONS)


# ============================================================================ payloads
def theory_payload(
    spec: PointSpec,
    *,
    lam: float | None = None,
    alpha: float | None = None,
    throw: bool = False,
) -> dict[str, Any]:
    """The ``gaussmix point --json`` object of one point (NaN errors if no fixed point).

    ``lam`` / ``alpha`` override those of ``spec`` (validated by :func:`make_problem`).
    """
    lam = spec.lam if lam is None else lam
    alpha = spec.alpha if alpha is None else alpha
    if (lam, alpha) != (spec.lam, spec.alpha):
        spec = spec.at(lam=lam, alpha=alpha)
    problem = spec.problem()
    res = solve_problem(problem, throw=throw, **spec.solve_kw(problem))
    payload = res.to_dict()
    payload["params"] = {
        **spec.params,
        "lam": lam,
        "alpha": alpha,
        "quadrature": res.params.get("quadrature"),
        "version": __version__,
    }
    return payload


def simulation_payload(
    spec: Any,
    *,
    d: int,
    seeds: int,
    seed: int = 0,
    n_jobs: int = 1,
    progress: bool = False,
) -> dict[str, Any]:
    """The ``gaussmix simulate --json`` object: means and standard errors over seeds.

    ``spec`` as in :func:`check_simulation`, plus ``penalty_kw`` and ``params``.  Same keys
    as :func:`theory_payload` (``V`` is None and ``free_energy`` NaN: they have no
    finite-size counterpart here) plus ``<key>_se`` for the errors and the overlaps.
    ``n_iter`` and ``residual`` are the largest ERM iteration count and KKT residual over
    the seeds.  The ERM tolerance is :func:`simulation_tol`'s.
    """
    from gaussmix.simulate.simulation import simulate

    res = simulate(
        spec.mixture,
        loss=spec.loss,
        lam=spec.lam,
        alpha=spec.alpha,
        d=d,
        seeds=seeds,
        seed=seed,
        **spec.penalty_kw,
        n_jobs=n_jobs,
        progress=progress,
        tol=simulation_tol(spec.loss, spec.penalty, spec.l1_ratio),
    )
    params = {k: v for k, v in spec.params.items() if k not in theory_only_params()}
    params.update(
        d=int(d),
        n=int(res.params["n"]),
        seeds=int(seeds),
        seed=int(seed),
        quadrature="none (exact orthant probabilities)",
        version=__version__,
    )
    return _simulation_row(res, seeds, params)


def _simulation_row(res: Any, seeds: int, params: dict) -> dict[str, Any]:
    """The simulation's object in the keys of :func:`simulation_keys`."""
    from gaussmix.simulate.simulation import largest_integration_error

    ps = res.per_seed
    n_bad = int((~ps["converged"].astype(bool)).sum())
    ierr = largest_integration_error(ps)
    known: dict[str, Any] = {
        "converged": n_bad == 0,
        "n_iter": int(ps["n_iter"].max()),
        "residual": float(ps["kkt_residual"].max()),
        "Q": res.Q.tolist(),
        "Q_se": res.Q_se.tolist(),
        "M": res.M.tolist(),
        "M_se": res.M_se.tolist(),
        "V": None,
        "b": res.b.tolist(),
        "b_se": res.b_se.tolist(),
        "free_energy": float("nan"),
        "integration_error": ierr,
        "integration_errors": {
            "test_error": float(ps["integration_error"].max()),
            "train_error": 0.0,
            "train_loss": 0.0,
            "test_loss": float(ps["test_loss_integration_error"].max()),
        },
        "message": "converged"
        if n_bad == 0
        else f"{n_bad} of {seeds} seeds did not reach the ERM solver tolerance",
        "params": params,
    }
    # other observables of the theory (e.g. nonzero_fraction) that the seeds measured
    per_seed = [k for k in theory_keys() if k not in known and k in res.mean]
    out: dict[str, Any] = {}
    for key in simulation_keys(per_seed):
        base = key[:-3] if key.endswith("_se") else key
        if key in known:
            out[key] = known[key]
        elif base in ERROR_KEYS or base in per_seed:
            out[key] = float(res.se[base] if key.endswith("_se") else res.mean[base])
        else:
            out[key] = None  # not measured by the simulation
    return out


def _failed_payload(keys: Sequence[str], message: str, params: dict) -> dict[str, Any]:
    row: dict[str, Any] = {k: None if k in NESTED_KEYS else float("nan") for k in keys}
    row.update(converged=False, n_iter=0, message=message, params=params)
    return row


# ============================================================================ tasks
_THREADS_LIMITED = False
_THREAD_LIMITER: Any = None
#: the test hook's delay per task (read when the module is imported, in every worker)
_TEST_DELAY = float(os.environ.get(TEST_DELAY_ENV) or 0.0)
#: numerical failures of one point, reported as a row instead of stopping the sweep
_POINT_FAILURES = (GaussmixError, ArithmeticError, np.linalg.LinAlgError, ValueError)


def _limit_threads_once() -> None:
    """One BLAS/OpenMP thread in this (worker) process, set once."""
    global _THREADS_LIMITED, _THREAD_LIMITER
    if not _THREADS_LIMITED:
        from threadpoolctl import threadpool_limits

        _THREAD_LIMITER = threadpool_limits(1)
        _THREADS_LIMITED = True


def run_task(spec: PointSpec, key: str | None = None) -> dict[str, Any]:
    """Run one point; return ``{'key', 'row', 'warnings', 'quadrature'}`` (JSON values).

    ``row`` is the ``point --json`` (or ``simulate --json``) object of the point, as the
    checkpoint holds it: nested values as lists and dicts, non-finite numbers as None (the
    table turns them into NaN again).  ``key`` defaults to :func:`point_key` ``(spec)``.
    Numerical failures become a row with ``converged=False``.
    """
    if not isinstance(spec, PointSpec):
        raise TypeError(f"spec must be a PointSpec, got {type(spec).__name__}")
    return loads(run_point(Task(point_key(spec) if key is None else key, spec))[1])


@contextlib.contextmanager
def _recording() -> Iterator[list]:
    """Record every warning (numpy's RuntimeWarnings aside) into the yielded list."""
    with caught((RuntimeWarning,)) as log:  # numpy overflow noise dropped
        yield log


def _payload(spec: PointSpec) -> dict[str, Any]:
    """The row of one point (a failed row for a numerical failure)."""
    sim = spec.simulate
    try:
        if sim is None:
            return theory_payload(spec, lam=spec.lam, alpha=spec.alpha, throw=False)
        return simulation_payload(spec, d=sim.d, seeds=sim.seeds, seed=sim.seed)
    except _POINT_FAILURES as exc:
        msg = " ".join(str(exc).split())
        keys = theory_keys() if sim is None else simulation_keys()
        params = {**spec.params, "lam": spec.lam, "alpha": spec.alpha}
        return _failed_payload(keys, f"failed: {type(exc).__name__}: {msg}", params)


def run_point(task: Task, log: list | None = None) -> tuple[str, bytes]:
    """Run one point: its key and its checkpoint line (the record of :func:`run_task`).

    ``log``: the list of an active :func:`_recording`, whose warnings (all of them, then
    emptied) are this point's; by default the point records its own.
    """
    if log is None:
        with _recording() as log:
            return run_point(task, log)
    if task.limit_threads:
        _limit_threads_once()
    if _TEST_DELAY:
        time.sleep(_TEST_DELAY)
    row = _payload(task.spec)
    seen: list[list[str]] = []
    for w in log:
        item = [w.category.__name__, " ".join(str(w.message).split())]
        if item not in seen:
            seen.append(item)
    del log[:]
    p = row.get("params")
    quadrature = p.get("quadrature") if isinstance(p, dict) else None
    record = {"key": task.key, "row": row, "warnings": seen, "quadrature": quadrature}
    # the line is the point's one encoding: the table reads fresh and resumed points alike
    # from their lines (floats round-trip exactly)
    return task.key, dumps(record) + b"\n"


def run_stream(tasks: Sequence[Task]) -> Iterator[tuple[str, bytes]]:
    """:func:`run_point` over ``tasks`` in this process, with one warnings recorder for
    all of them (a recorder per point costs more than the bookkeeping of a cheap point).

    A warning issued while the caller holds the generator between two points is counted
    with the next point.  Close the generator (``contextlib.closing``) when abandoning it.
    """
    with _recording() as log:
        for t in tasks:
            yield run_point(t, log)


def run_points(tasks: Sequence[Task]) -> list[tuple[str, bytes]]:
    """:func:`run_point` over a chunk of tasks (the unit of work sent to a dask worker)."""
    return list(run_stream(tasks))
