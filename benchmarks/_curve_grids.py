"""Curves on random grids, their cost counted in evaluations of the fixed-point map against
the cold points of the same grid (issue 31, item 5): the grids and the counter shared by
``benchmarks/bench_curves.py --grids`` and ``tests/test_curve_grids.py``.

A grid is a mixture, a loss, a penalty and a curve of 20 points (a learning curve over
alpha at one lambda, or a sweep over lambda at one alpha).  Its cost is counted, not timed:
the calls of the channel evaluation (one per evaluation of the fixed-point map, single or
stacked: a stacked evaluation of all the curve's points counts once, as an iteration of
one point does; the error estimate's evaluations on the refined rule included), the same
on any load.  A curve is compared with the median over its points of the point solved cold
(``gm.solve``), the cost a user pays for one point; the target is at most
:data:`TARGET` of them.
"""

from __future__ import annotations

import contextlib
import statistics
import sys
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

#: A curve's evaluations at most this many times its median cold point's (issue 31, item 5).
TARGET = 5.0

#: Points of a curve.
N_POINTS = 20


@dataclass(frozen=True)
class Grid:
    """One curve: ``axis`` is ``'alpha'`` (a learning curve at ``lam``) or ``'lam'`` (a
    sweep at ``alpha``); ``values`` its 20 parameters."""

    name: str
    mixture: str  # a key of MIXTURES
    loss: str
    penalty: str
    axis: str
    values: tuple[float, ...]
    fixed: float  # lam of a learning curve, alpha of a sweep
    kwargs: dict = field(default_factory=dict, hash=False)

    def points(self) -> list[tuple[float, float]]:
        """The ``(lam, alpha)`` of each point."""
        if self.axis == "alpha":
            return [(self.fixed, a) for a in self.values]
        return [(lam, self.fixed) for lam in self.values]

    def describe(self) -> str:
        lo, hi = min(self.values), max(self.values)
        other = "lam" if self.axis == "alpha" else "alpha"
        return (
            f"{self.mixture}, {self.loss} + {self.penalty}, {other} = {self.fixed:.3g}, "
            f"{len(self.values)} {self.axis}s in [{lo:.3g}, {hi:.3g}]"
        )


def mixture(key: str):
    """The mixture of a grid's key."""
    import gaussmix as gm

    return {
        "isotropic binary": lambda: gm.Mixture.isotropic(0.5, "antipodal", labels="binary"),
        "isotropic binary, Delta = 1": lambda: gm.Mixture.isotropic(
            1.0, "antipodal", labels="binary"
        ),
        "block binary": lambda: gm.Mixture.block([0.3, 0.7], [0.2, 1.0]),
        "sparse (0.5, 0.1, 0.5)": lambda: gm.Mixture.sparse(0.5, delta1=0.1, delta2=0.5),
        "sparse (0.1, 0.1, 1)": lambda: gm.Mixture.sparse(0.1, 0.1, 1.0),
        "isotropic K = 3": lambda: gm.Mixture.isotropic(0.5, "simplex", n_clusters=3),
    }[key]()


#: The paper's sparse lasso curve (issue 31: 36 cold points, 809 stacked evaluations at
#: 1a01a4e) and the six curves of ``bench_curves.py``.
EXAMPLES = (
    Grid(
        "sparse lasso (paper)",
        "sparse (0.5, 0.1, 0.5)",
        "square",
        "l1",
        "alpha",
        tuple(np.linspace(0.1, 3.0, N_POINTS)),
        0.01,
    ),
    Grid(
        "binary-logistic",
        "isotropic binary",
        "logistic",
        "l2",
        "alpha",
        tuple(np.linspace(0.2, 4, N_POINTS)),
        0.1,
    ),
    Grid(
        "ce3",
        "isotropic K = 3",
        "cross-entropy",
        "l2",
        "alpha",
        tuple(np.linspace(0.2, 4, N_POINTS)),
        1.0,
    ),
    Grid(
        "ce3-lambda",
        "isotropic K = 3",
        "cross-entropy",
        "l2",
        "lam",
        tuple(np.geomspace(1e-3, 10, N_POINTS)),
        2.0,
    ),
    Grid(
        "lasso-square",
        "sparse (0.1, 0.1, 1)",
        "square",
        "l1",
        "alpha",
        tuple(np.linspace(0.2, 4, N_POINTS)),
        0.1,
    ),
    Grid(
        "lasso-logistic",
        "sparse (0.1, 0.1, 1)",
        "logistic",
        "l1",
        "alpha",
        tuple(np.linspace(0.2, 4, N_POINTS)),
        0.1,
    ),
    Grid(
        "lasso-lambda",
        "sparse (0.1, 0.1, 1)",
        "logistic",
        "l1",
        "lam",
        tuple(np.geomspace(1e-2, 1.0, N_POINTS)),
        1.0,
    ),
)

_BINARY = ("isotropic binary", "isotropic binary, Delta = 1", "block binary")
_SPARSE = ("sparse (0.5, 0.1, 0.5)", "sparse (0.1, 0.1, 1)")


def random_grid(rng: np.random.Generator, index: int, multiclass: bool = True) -> Grid:
    """A random grid: a binary mixture (isotropic, block or sparse) with the square,
    logistic or hinge loss and ridge, lasso or elastic net, or (``multiclass``) K = 3
    cross-entropy or square loss with ridge; lambda log-uniform in [1e-3, 10]; a learning
    curve over alpha from a start log-uniform in [0.05, 1] to 3-30 times it (linear or
    geometric spacing), or (one grid in four) a sweep over lambda over one to three decades
    at alpha log-uniform in [0.1, 8]."""
    if multiclass and rng.random() < 0.2:
        mix, loss, penalty = "isotropic K = 3", str(rng.choice(["cross-entropy", "square"])), "l2"
    else:
        mix = str(rng.choice(_BINARY + _SPARSE))
        loss = str(rng.choice(["square", "logistic", "hinge"]))
        penalty = str(rng.choice(["l2", "l1", "elastic-net"]))
    kwargs = {"l1_ratio": float(rng.uniform(0.2, 0.8))} if penalty == "elastic-net" else {}
    lam = float(10 ** rng.uniform(-3, 1))
    if rng.random() < 0.25:
        top = float(10 ** rng.uniform(-2, 1))
        values = np.geomspace(top / 10 ** rng.uniform(1, 3), top, N_POINTS)
        axis, fixed = "lam", float(10 ** rng.uniform(-1, np.log10(8)))
    else:
        a0 = float(10 ** rng.uniform(np.log10(0.05), 0))
        a1 = a0 * float(rng.uniform(3, 30))
        space = np.geomspace if rng.random() < 0.5 else np.linspace
        values = space(a0, a1, N_POINTS)
        axis, fixed = "alpha", lam
    return Grid(f"random {index}", mix, loss, penalty, axis, tuple(values), fixed, kwargs)


def random_grids(n: int, seed: int = 0, multiclass: bool = True) -> list[Grid]:
    """``n`` grids of :func:`random_grid` from one seeded generator."""
    rng = np.random.default_rng(seed)
    return [random_grid(rng, i, multiclass) for i in range(n)]


def _counting(original):
    """The counting stand-in of the library's ``channel_evaluation`` (made once).  The logs
    of the open :func:`counted_evaluations` blocks (the innermost last) are the stand-in's
    own ``counted_logs``: a second copy of this module (a test loading the script afresh)
    finds the stand-in the first copy installed and counts into the same list."""
    logs: list[list[int]] = []

    def counted(loss, y, M, b, Q, V, *args, **kwargs):
        if logs:
            logs[-1].append(int(np.shape(M)[0]))
        return original(loss, y, M, b, Q, V, *args, **kwargs)

    counted.counted_original = original
    counted.counted_logs = logs
    return counted


@contextlib.contextmanager
def counted_evaluations() -> Iterator[list[int]]:
    """Count the channel evaluations made inside the block: the list it yields gets the
    number of rows of ``M`` (clusters of every point evaluated) of each call.  Every loaded
    module of the library that holds ``channel_evaluation`` (the solver's and the stacked
    curve's, wherever they live) holds the counting stand-in from the first block on (one
    object, so that a module imported inside a block and binding it counts in later
    blocks too)."""
    from gaussmix.theory.channel import channel

    counted = channel.channel_evaluation
    if not hasattr(counted, "counted_original"):
        counted = _counting(counted)
    original = counted.counted_original
    for m in list(sys.modules.values()):
        if getattr(m, "__name__", "").startswith("gaussmix") and getattr(
            m, "channel_evaluation", None
        ) in (original, counted):
            m.channel_evaluation = counted
    log: list[int] = []
    logs = counted.counted_logs
    logs.append(log)
    try:
        yield log
    finally:
        logs.remove(log)


def _kwargs(grid: Grid) -> dict:
    return {"penalty": grid.penalty, **grid.kwargs}


def curve(grid: Grid):
    """The grid's curve (``gm.learning_curve`` or ``gm.lambda_sweep``, default options)."""
    import gaussmix as gm

    mix = mixture(grid.mixture)
    if grid.axis == "alpha":
        return gm.learning_curve(
            mix, grid.loss, list(grid.values), lam=grid.fixed, **_kwargs(grid)
        )
    return gm.lambda_sweep(mix, grid.loss, list(grid.values), alpha=grid.fixed, **_kwargs(grid))


@dataclass
class Cost:
    """The counted cost of a grid's curve and of its points solved cold."""

    grid: Grid
    curve: int  # channel evaluations of the curve
    curve_failed: int  # points of the curve without a fixed point
    cold: list[int]  # channel evaluations of each point solved cold
    cold_failed: list[int]  # indices of the points whose cold solve failed

    @property
    def median_cold(self) -> float:
        return float(statistics.median(self.cold))

    @property
    def ratio(self) -> float:
        """The curve's evaluations in median cold points."""
        return self.curve / max(self.median_cold, 1.0)


def cost(grid: Grid, cold_points: bool = True) -> Cost:
    """Count the curve of ``grid`` and (``cold_points``) each of its points solved cold
    (``gm.solve``; a failed cold solve counts the evaluations it made)."""
    import gaussmix as gm
    from gaussmix.core.exceptions import ConvergenceError, SpuriousFixedPointError

    mix = mixture(grid.mixture)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with counted_evaluations() as log:
            table = curve(grid)
        n_curve = len(log)
        curve_failed = int((~table["converged"].astype(bool)).sum())
        cold, failed = [], []
        for i, (lam, alpha) in enumerate(grid.points() if cold_points else []):
            with counted_evaluations() as log:
                try:
                    gm.solve(mix, grid.loss, lam=lam, alpha=alpha, **_kwargs(grid))
                except (ConvergenceError, SpuriousFixedPointError):
                    failed.append(i)
            cold.append(len(log))
    return Cost(grid, n_curve, curve_failed, cold, failed)
