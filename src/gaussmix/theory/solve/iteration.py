"""The fixed-point iteration: Anderson mixing and the safeguarded loop.

:func:`iterate` drives a map ``x -> T(x)`` (a
:class:`~gaussmix.theory.solve.fixed_point.FixedPointMap`, or anything with its ``K``,
``L``, ``log_chart``, ``hats_memory`` and ``image``, the two halves of an evaluation, which
take the memory of the last evaluation and return their own with the channel evaluation and
the image: the state's ``aux``) from a starting state with a secant
history (:class:`AndersonState`, immutable, ``init`` / ``update`` in the spirit of
jaxopt's ``AndersonAcceleration``) to an :class:`IterationOutcome` whose
:class:`IterationStatus` says why it stopped.  Convergence is declared when
``max_i |T(x)_i - x_i| / s_i < tol`` (:func:`~gaussmix.theory.solve.state.residual_scale`).

The iteration is a pure :class:`FixedPointIteration` (``init`` / ``step`` / ``terminate``
over an immutable :class:`IterationState`, in the spirit of optimistix's solvers); the loop
that drives it is :func:`iterate`.  No I/O and no warnings: what happened is in the outcome;
the solver (:mod:`gaussmix.theory.solve.solver`) reports it.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple, Protocol

import numpy as np

from gaussmix.core.exceptions import (
    ConvergenceError,
    SpuriousFixedPointError,
    UnboundedWeightsError,
)
from gaussmix.core.interrupt import check_interrupt
from gaussmix.core.memo import IdentityMemo

from ..numerics.tolerances import (
    ANDERSON_RIDGE,
    ANDERSON_RIDGE_FLOOR,
    DIVERGENCE_FACTOR,
    MIN_RESTART_DAMPING,
    MIN_STEP_FRACTION,
    RULE_ERROR_CHECK,
    RULE_ERROR_FRACTION,
    RULE_ERROR_MIN_RUN,
)
from .stacked_step import back as _back
from .stacked_step import image_psd as _image_psd
from .stacked_step import moving_blocks as _moving_blocks
from .stacked_step import next_iterate_moving as _next_iterate_moving
from .stacked_step import per_block as _per_block
from .state import LogChart, is_valid_state, residual_scale

try:  # numpy's gufunc behind ``np.linalg.solve`` for a vector right-hand side (:func:`_solve`)
    from numpy.linalg._umath_linalg import solve1 as _SOLVE1
except ImportError:  # pragma: no cover - numpy's private module renamed
    _SOLVE1 = None


class IteratedMap(Protocol):
    """What :func:`iterate` reads of a map (a
    :class:`~gaussmix.theory.solve.fixed_point.FixedPointMap`): its clusters ``K`` and
    outputs ``L``, whether it mixes in the logarithmic chart, and the two halves of an
    evaluation, each taking the memory of the last and returning its own."""

    K: int
    L: int
    log_chart: bool

    def hats_memory(self, x: np.ndarray, memory: Any) -> tuple[Any, Any]: ...

    def image(self, x: np.ndarray, ev: Any, memory: Any) -> tuple[np.ndarray, Any]: ...


__all__ = [
    "IterationStatus",
    "AndersonState",
    "IterationOutcome",
    "IterationState",
    "FixedPointIteration",
    "iterate",
    "iterate_to_rule_error",
    "KnownImage",
]

#: consecutive images T(x) outside the cone of valid states (a ``Q_c`` that is not positive
#: semi-definite) after which a fixed point is reported spurious (docs/design.md pitfall 5): the
#: map of a valid state is valid in exact arithmetic, so this is a numerical breakdown
#: (Appendix E's note on numerical instabilities), which the iteration cannot step around
_MAX_INVALID_IMAGES = 3


# --------------------------------------------------------------------------- status
class IterationStatus(enum.Enum):
    """Why a fixed-point iteration stopped (``FixedPointResult.status``)."""

    #: the scaled residual fell below ``tol`` at a valid state
    CONVERGED = "converged"
    #: ``max_iter`` iterations without convergence
    MAX_ITER = "max-iter"
    #: stopped before ``max_iter`` where the iteration made no progress (a cold solve
    #: with a fallback, :class:`~gaussmix.theory.solve.policy.FailFast`)
    STALLED = "stalled"
    #: NaN or infinite order parameters
    NON_FINITE = "non-finite"
    #: converged to a state whose ``Q_c`` or ``V_c`` is not positive (semi-)definite
    NOT_POSITIVE_DEFINITE = "not-positive-definite"
    #: the map failed at the starting point (no earlier iterate to retreat to)
    MAP_FAILED = "map-failed"
    #: the observables could not be evaluated at the fixed point
    NUMERICAL_FAILURE = "numerical-failure"
    #: converged to a degenerate state: the bias condition holds only in absolute terms
    #: (the channel's moments underflowed; see
    #: :func:`~gaussmix.theory.solve.fixed_point.bias_condition_step`)
    DEGENERATE = "degenerate"
    #: the map failed at the starting point because a sparse penalty keeps weights where
    #: the loss has no curvature (:class:`~gaussmix.core.exceptions.UnboundedWeightsError`)
    UNBOUNDED_WEIGHTS = "unbounded-weights"

    @property
    def spurious(self) -> bool:
        """Whether the iteration reached an invalid point (docs/design.md pitfall 5), or a
        degenerate one."""
        return self in (
            IterationStatus.NON_FINITE,
            IterationStatus.NOT_POSITIVE_DEFINITE,
            IterationStatus.DEGENERATE,
        )

    @property
    def error_class(self) -> type[ConvergenceError]:
        """The exception raised for this status with ``throw=True``:
        :class:`~gaussmix.core.exceptions.SpuriousFixedPointError` for an invalid point,
        :class:`~gaussmix.core.exceptions.UnboundedWeightsError` for weights the loss leaves
        unbounded, :class:`~gaussmix.core.exceptions.ConvergenceError` otherwise."""
        if self is IterationStatus.UNBOUNDED_WEIGHTS:
            return UnboundedWeightsError
        return SpuriousFixedPointError if self.spurious else ConvergenceError


@dataclass(frozen=True)
class AndersonState:
    """Secant history of Anderson mixing: the last ``memory`` difference pairs.

    ``dxs[i] = x_{j+1} - x_j`` and ``dgs[i] = T(x_{j+1}) - T(x_j)`` for consecutive iterates;
    together they are a secant model of the Jacobian of ``T``.  Immutable: :meth:`update`
    and :meth:`cleared` return new states.  A state outlives one iteration only through the
    ``history`` of :func:`~gaussmix.theory.solve.solver.solve_problem`, which hands the final state
    of a point of a curve to the next point as a quasi-Newton warm start.

    Attributes
    ----------
    dxs, dgs : tuple of ndarray
        The pairs, oldest first.
    memory : int
        Largest number of pairs kept (0: plain damped iteration).
    log_chart : bool
        Whether the pairs are differences in :class:`~gaussmix.theory.solve.state.LogChart`
        coordinates (an iteration in the other coordinates starts without them).
    blocks : ndarray of int, optional
        For a state made of independent blocks (the points of a curve stacked in one state,
        :mod:`gaussmix.theory.solve.batch`), the block of each component: each block is
        mixed with its own coefficients, as if iterated alone (None: one block).
    """

    dxs: tuple[np.ndarray, ...]
    dgs: tuple[np.ndarray, ...]
    memory: int
    log_chart: bool = False
    blocks: np.ndarray | None = field(default=None, compare=False)

    @classmethod
    def init(cls, memory: int, previous: AndersonState | None = None) -> AndersonState:
        """A state with memory ``memory``, starting from the newest pairs of ``previous``."""
        if previous is None:
            return cls((), (), memory)
        start = max(0, len(previous.dxs) - memory)
        return cls(previous.dxs[start:], previous.dgs[start:], memory, previous.log_chart)

    @property
    def empty(self) -> bool:
        """Whether there are no pairs."""
        return not self.dxs

    def update(self, dx: np.ndarray, dg: np.ndarray) -> AndersonState:
        """The state with the pair ``(dx, dg)`` appended (the oldest dropped beyond memory)."""
        dxs, dgs = self.dxs + (dx,), self.dgs + (dg,)
        if len(dxs) > self.memory:
            dxs, dgs = dxs[1:], dgs[1:]
        return AndersonState(dxs, dgs, self.memory, self.log_chart, self.blocks)

    def cleared(self) -> AndersonState:
        """The state without pairs (a restart of the mixing)."""
        return AndersonState((), (), self.memory, self.log_chart, self.blocks)

    def extrapolate(
        self, x: np.ndarray, r: np.ndarray, beta: float, scale: np.ndarray
    ) -> np.ndarray:
        """The Anderson-mixed step from ``x`` with residual ``r = T(x) - x`` and damping
        ``beta``: ``x + beta r - (dX + beta (dG - dX)) gamma``, with ``gamma`` minimising the
        scaled linearised residual ``|(r - (dG - dX) gamma) / scale|``.

        The normal equations carry the ridge ``(ANDERSON_RIDGE tr(A) / m +
        ANDERSON_RIDGE_FLOOR) I`` (:mod:`gaussmix.theory.numerics.tolerances`).  Raises
        ``numpy.linalg.LinAlgError`` if they are singular all the same.
        """
        if self.blocks is not None:
            return self._extrapolate_blocks(x, r, beta, scale)
        # (the pairs as the columns of C-ordered arrays, as np.stack(..., axis=1) makes them,
        # without its Python-level checks: a tenth of a binary solve's Python work)
        dX = np.array(self.dxs).T.copy()
        dG = np.array(self.dgs).T.copy()
        dGX = dG - dX
        dR = dGX / scale[:, None]
        A = dR.T @ dR
        m = A.shape[0]
        # (the ridge on the diagonal alone, through a view of it: the same sums as adding it
        # times the identity)
        A.ravel()[:: m + 1] += ANDERSON_RIDGE * A.trace() / m + ANDERSON_RIDGE_FLOOR
        gamma = _solve(A, dR.T @ (r / scale))
        return x + beta * r - (dX + beta * dGX) @ gamma

    def _extrapolate_blocks(
        self, x: np.ndarray, r: np.ndarray, beta: float, scale: np.ndarray
    ) -> np.ndarray:
        """:meth:`extrapolate` with one ``gamma`` per block (the same normal equations,
        ridge and step, summed over each block's components).

        The pairs are kept as rows (``(m, N)``: the components contiguous), so that no
        ``(N, m)`` copy of them is made; each block's sums are one bincount over (block,
        column) pairs, linear in the number of components (a dense block-by-component
        indicator matrix made a long stacked curve quadratic), each sum adding its block's
        components in order, of the upper triangle of the symmetric normal matrix only (its
        entry (j, i) is the same sum of the same products, bit for bit, as (i, j)).  Where
        the blocks are runs of components (a stacked curve's points), the products are
        formed and summed a few whole blocks at a time into one scratch array of at most
        :data:`_BLOCK_TERMS` numbers (:func:`_block_layout`): each block's sums are the
        same additions in the same order, and the scratch stays small (the products of a
        whole K = 5 curve at once were 2.4 MB a step, mapped and faulted in afresh each
        time by the C allocator: 40 % of that curve's time).
        """
        XT = np.array(self.dxs)  # (m, N)
        GXT = np.array(self.dgs)
        GXT -= XT  # dG - dX, the same numbers as the difference made anew
        RT = GXT / scale  # the scaled columns, as rows
        m = RT.shape[0]
        n_blocks, chunks, full = _block_layout(self.blocks, m)
        n_up = m * (m + 1) // 2
        cols = n_up + m
        rs = r / scale
        sums = np.empty(n_blocks * cols)
        scratch = np.empty(cols * max(c1 - c0 for c0, c1, *_ in chunks))
        for c0, c1, s0, s1, index in chunks:
            terms = scratch[: cols * (c1 - c0)].reshape(cols, c1 - c0)
            k = 0
            for i in range(m):  # (the upper triangle's columns (i, i..m-1), np.triu_indices')
                np.multiply(RT[i, c0:c1], RT[i:, c0:c1], out=terms[k : k + m - i])
                k += m - i
            np.multiply(RT[:, c0:c1], rs[c0:c1], out=terms[n_up:])
            sums[s0:s1] = np.bincount(index, weights=terms.ravel(), minlength=s1 - s0)
        sums = sums.reshape(n_blocks, cols)
        A = sums[:, full]  # (n_blocks, m * m: each entry its upper triangle's sum)
        rhs = sums[:, n_up:]
        # (the ridge on each diagonal alone, through a view of it, as :meth:`extrapolate`
        # adds its own: the same sums as adding it times the identity, without np.eye)
        diag = A[:, :: m + 1]
        diag += ANDERSON_RIDGE * diag.sum(axis=1, keepdims=True) / m + ANDERSON_RIDGE_FLOOR
        A = A.reshape(n_blocks, m, m)
        gamma = _solve(A, rhs)  # (one per block: the gufunc's batch, without the checks)
        GXT *= beta
        GXT += XT  # dX + beta (dG - dX), as rows
        GXT *= gamma.T[:, self.blocks]
        if m < _SEQUENTIAL_SUM_MAX:
            # numpy sums fewer than 8 numbers of a row one after the other: the rows added
            # in order are the same sums as the (N, m) product's along its rows
            step = GXT[0].copy()
            for k in range(1, m):
                step += GXT[k]
        else:  # (its pairwise sums beyond: the (N, m) layout's own)
            step = np.ascontiguousarray(GXT.T).sum(axis=1)
        return x + beta * r - step


def _solve(A: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``np.linalg.solve(A, b)`` for one square ``A`` and a vector ``b``, or a stack of them
    (``A`` (n, m, m), ``b`` (n, m): a block-mixed step's, one system per block): numpy's
    own LAPACK routine (the same numbers, to the bit), without the call's Python-level
    checks (a third of an extrapolation's cost at a binary point's two to seven numbers,
    about ten microseconds a block-mixed step of a curve); raises
    ``numpy.linalg.LinAlgError`` where the solution is not finite (a singular or
    non-finite ``A``), as ``np.linalg.solve`` does for a singular one (whose routine also
    flags an invalid operation: silent in :func:`iterate`'s ``np.errstate``, a
    ``RuntimeWarning`` outside it; the ridge of :meth:`AndersonState.extrapolate` keeps
    its ``A`` regular)."""
    if _SOLVE1 is None:  # (a numpy without the routine under its known name)
        return np.linalg.solve(A, b) if b.ndim == 1 else np.linalg.solve(A, b[..., None])[..., 0]
    x = _SOLVE1(A, b, signature="dd->d")
    if not all(map(math.isfinite, x.ravel().tolist())):  # (floats: cheaper than np.isfinite)
        raise np.linalg.LinAlgError("Singular matrix")
    return x


#: the layouts of block-mixed extrapolations, by the blocks array's identity and then by
#: memory (:func:`_block_layout`), for the last 8 blocks arrays (a curve's stages: its
#: points, its groups of points; the oldest forgotten first)
_LAYOUTS = IdentityMemo(8)
#: largest number of products a block-mixed extrapolation forms at once (runs of whole
#: blocks, :func:`_block_layout`): 256 kB of scratch, reused across the runs of a step
_BLOCK_TERMS = 2**15
#: numpy's sum of a row of fewer than this many numbers adds them one after the other
#: (pairwise beyond: eight partial sums), :meth:`AndersonState._extrapolate_blocks`
_SEQUENTIAL_SUM_MAX = 8


def _block_layout(
    blocks: np.ndarray, m: int
) -> tuple[int, list[tuple[int, int, int, int, np.ndarray]], np.ndarray]:
    """The index arrays of :meth:`AndersonState._extrapolate_blocks` for the components'
    blocks ``blocks`` and ``m`` pairs: the number of blocks; the runs of components whose
    products are summed together, each ``(c0, c1, s0, s1, index)``: components ``c0:c1``,
    whose sums are the entries ``s0:s1`` of the flattened (block, column) sums and
    ``index`` the bin of each product within them (``n_up + m`` columns: the normal
    matrix's upper triangle in ``np.triu_indices`` order, then the right-hand side; column
    by column, each over the run's components); and the column of the upper triangle of
    each entry of the ``m x m`` matrix (row-major).  Where ``blocks`` is non-decreasing
    (each block a run of components) the runs are whole blocks, as many as fit in
    :data:`_BLOCK_TERMS` products (at least one); otherwise one run of every component.
    Remembered for the last few ``blocks`` arrays (by identity: the iteration of a stacked
    map mixes with one array, not modified, every step; the stacked maps of a curve share
    theirs)."""

    def make() -> tuple[int, list[tuple[int, int, int, int, np.ndarray]], np.ndarray]:
        n_blocks = int(blocks.max()) + 1
        iu, ju = np.triu_indices(m)
        cols = iu.size + m
        column = np.empty((m, m), dtype=np.intp)
        column[iu, ju] = column[ju, iu] = np.arange(iu.size)
        N = blocks.size
        if np.all(blocks[1:] >= blocks[:-1]):
            ends = np.searchsorted(blocks, np.arange(n_blocks), side="right")
            per_run = max(1, _BLOCK_TERMS // cols)  # components a run may hold
            runs, b0 = [], 0
            while b0 < n_blocks:
                c0 = int(ends[b0 - 1]) if b0 else 0
                # the most whole blocks from b0 that fit (at least one)
                b1 = max(b0 + 1, int(np.searchsorted(ends, c0 + per_run, side="right")))
                runs.append((b0, b1, c0, int(ends[b1 - 1])))
                b0 = b1
        else:
            runs = [(0, n_blocks, 0, N)]
        chunks = []
        for b0, b1, c0, c1 in runs:
            index = (np.arange(cols)[:, None] + (blocks[c0:c1] - b0) * cols).ravel()
            chunks.append((c0, c1, b0 * cols, b1 * cols, index))
        return n_blocks, chunks, column.ravel()

    return _LAYOUTS.get(blocks, m, make)


@dataclass(frozen=True)
class IterationOutcome:
    """How one Anderson-accelerated iteration ended.

    Attributes
    ----------
    x : ndarray
        The returned state (on convergence ``T(x)`` or the last evaluated state, see
        :func:`iterate`; otherwise the last iterate).
    n_iter : int
        Evaluations of the map.
    residual : float
        Last scaled residual ``max |T(x) - x| / s``
        (:func:`~gaussmix.theory.solve.state.residual_scale`).
    status : IterationStatus
    message : str
    anderson : AndersonState
        The final secant history (a warm start for the next point of a curve).
    aux : object
        The map's memory after its last evaluation (``T.image``'s: for a single point's
        map a :class:`~gaussmix.theory.solve.fixed_point.MapMemory`, whose channel
        evaluation at the returned state, where it is the last evaluated one, the
        observables reuse); None before any evaluation.
    image : ndarray or None
        On convergence, the map's image ``T(x)`` at the state its test passed at (``x``
        itself where the iteration returns its image; with ``return_image=False`` the answer
        of a run that converged at its first evaluation, whose last iterate is its start);
        None otherwise.
    """

    x: np.ndarray
    n_iter: int
    residual: float
    status: IterationStatus
    message: str
    anderson: AndersonState
    aux: Any = None
    image: np.ndarray | None = None

    @property
    def converged(self) -> bool:
        """Whether the status is :attr:`IterationStatus.CONVERGED`."""
        return self.status is IterationStatus.CONVERGED


class IterationState(NamedTuple):
    """The state of a :class:`FixedPointIteration` between two evaluations of the map.

    Attributes
    ----------
    x : ndarray
        The state at which the map is evaluated next.
    n_iter : int
        Evaluations of the map so far.
    anderson : AndersonState
        The secant history, in the chart's coordinates.
    chart : LogChart or None
        The coordinates of the mixing (None: the state itself).
    last : tuple of ndarray or None
        ``(y, T(x))`` of the last accepted evaluation, in chart coordinates (where a failed
        evaluation retreats to; None after a restart).
    best : float
        Smallest step ``max |T(x) - x| / max(1, |x|)`` seen (the divergence test).
    damping : float
        Current mixing parameter (halved by retreats and restarts).
    residual : float
        Last scaled residual ``max |T(x) - x| / s`` (inf before the first evaluation), or,
        where ``pending`` is set, its lower bound the step ``max |T(x) - x| / max(1, |x|)``
        (:meth:`exact_residual`).
    invalid_images : int
        Consecutive images with a ``Q_c`` that is not positive semi-definite.
    evaluated : bool
        Whether the last step computed a residual (the callback reports it).
    pending : tuple of ndarray or None
        ``(T(x) - x, x, K, L)`` of a step whose residual was not computed (see
        :class:`FixedPointIteration`'s ``report``).
    outcome : IterationOutcome or None
        Set by the step that ended the iteration.
    aux : object
        The map's memory after its last evaluation (what ``T.image`` returns with the
        image and takes back at the next evaluation: the last channel evaluation, the warm
        start of the proximal solves), as ``anderson`` is the mixing's; the map itself
        keeps nothing across calls.

    Notes
    -----
    A named tuple (immutable; a step makes the next one with ``_replace``): it is made once
    per evaluation of the map, where a frozen dataclass's ``replace`` cost 5 us.
    """

    x: np.ndarray
    n_iter: int
    anderson: AndersonState
    chart: LogChart | None
    last: tuple[np.ndarray, np.ndarray] | None
    best: float
    damping: float
    residual: float
    invalid_images: int = 0
    evaluated: bool = False
    outcome: IterationOutcome | None = None
    pending: tuple | None = None
    aux: Any = None

    def exact_residual(self) -> float:
        """:attr:`residual`, computed where the step left it pending."""
        if self.pending is None:
            return self.residual
        r, x, K, L = self.pending
        return float(np.max(np.abs(r) / residual_scale(x, K, L)))


@dataclass(frozen=True)
class FixedPointIteration:
    """Anderson-accelerated fixed-point iteration with safeguards, as a pure
    ``init`` / ``step`` / ``terminate`` (in the spirit of optimistix's solvers); :func:`iterate`
    is the loop that drives it.

    On convergence (``max |T(x) - x| / s < tol``,
    :func:`~gaussmix.theory.solve.state.residual_scale`) the image ``T(x)`` is returned, or ``x``
    itself with ``return_image=False`` (whose channel moments the outcome's ``aux`` holds).
    A failing map evaluation, or a non-finite image, retreats half-way to the previous
    iterate with half the damping; an extrapolation that diverges or leaves the cone of
    valid states drops the history (of a stacked state's points, the history of those
    points that leave it or that it does not help, :func:`_next_iterate`); a damped step
    that leaves the cone is shortened.

    The mixing (secant pairs, extrapolation, damped steps) happens in the map's chart
    (:class:`~gaussmix.theory.solve.state.LogChart` where ``T.log_chart``, else the state itself);
    the residual and the convergence test are always those of the state.

    Attributes
    ----------
    tol : float
        Tolerance of the convergence test.
    max_iter : int
        Largest number of evaluations of the map.
    damping : float
        Mixing parameter in (0, 1].
    return_image : bool
        Return ``T(x)`` (True) or ``x`` on convergence.
    report : bool
        Compute the residual of every step (for a callback).  Otherwise a step whose
        ``max |T(x) - x| / max(1, |x|)`` is at least ``tol`` leaves it pending
        (:meth:`IterationState.exact_residual`): the residual's scales ``max(|x_i|, u_i)``,
        ``u_i <= 1``, are at most ``max(1, |x_i|)``, so the residual is at least that step
        and the convergence test fails all the same (the outcomes are unchanged; a solve
        saves one :func:`~gaussmix.theory.solve.state.residual_scale` per iteration).
    """

    tol: float
    max_iter: int
    damping: float
    return_image: bool = True
    report: bool = True

    def init(
        self, T: IteratedMap, x0: np.ndarray, anderson: AndersonState, aux: Any = None
    ) -> IterationState:
        """The state before the first evaluation, from ``x0`` with the secant history
        ``anderson`` (dropped if its pairs are in the other coordinates; its memory is the
        caller's, :class:`~gaussmix.theory.solve.memory.AndersonMemory`) and the map's
        memory ``aux`` (an earlier evaluation's, or None)."""
        chart = LogChart(T.K, T.L) if getattr(T, "log_chart", False) else None
        if anderson.log_chart != (chart is not None):  # pairs of the other coordinates
            anderson = replace(anderson.cleared(), log_chart=chart is not None)
        return IterationState(
            x0.copy(), 0, anderson, chart, None, np.inf, self.damping, np.inf, aux=aux
        )

    def terminate(self, s: IterationState) -> bool:
        """Whether the iteration has ended (an outcome, or ``max_iter`` evaluations)."""
        return s.outcome is not None or s.n_iter >= self.max_iter

    def outcome(self, s: IterationState) -> IterationOutcome:
        """The outcome of an ended iteration (:attr:`IterationStatus.MAX_ITER` if no step
        ended it)."""
        if s.outcome is not None:
            return s.outcome
        res = s.exact_residual()
        msg = f"did not converge in {self.max_iter} iterations (residual {res:.3g})"
        st = IterationStatus.MAX_ITER
        return IterationOutcome(s.x, self.max_iter, res, st, msg, s.anderson, s.aux)

    def step(self, T: IteratedMap, s: IterationState) -> IterationState:
        """One evaluation of the map at ``s.x`` and the next iterate (or the outcome)."""
        K, L = T.K, T.L
        S = IterationStatus
        chart, state, last, beta = s.chart, s.anderson, s.last, s.damping
        x, it = s.x, s.n_iter + 1

        def ended(xr: np.ndarray, res: float, status: IterationStatus, msg: str, st, image=None):
            out = IterationOutcome(xr, it, res, status, msg, st, aux, image)
            return s._replace(
                n_iter=it, residual=res, evaluated=True, outcome=out, pending=None, aux=aux
            )

        def retreat(**changes: Any) -> IterationState:  # half-way back to the last image
            x_back = _back(chart, last[0] + 0.5 * beta * (last[1] - last[0]))
            cleared = state.cleared()
            return s._replace(x=x_back, n_iter=it, anderson=cleared, last=None, aux=aux, **changes)

        aux = s.aux
        try:  # (in two halves: a failing image keeps the channel's memory for the next)
            ev, aux = T.hats_memory(x, aux)
            g, aux = T.image(x, ev, aux)
        except (FloatingPointError, np.linalg.LinAlgError) as exc:
            if last is not None:
                return retreat(damping=0.5 * beta, evaluated=False)
            why = S.UNBOUNDED_WEIGHTS if isinstance(exc, UnboundedWeightsError) else S.MAP_FAILED
            out = IterationOutcome(x, it, np.inf, why, f"map failed: {exc}", state, aux)
            return s._replace(n_iter=it, evaluated=False, outcome=out)
        r = g - x
        # the mixing's weights and measure of a step (divergence), in units max(1, |x|);
        # the convergence test is relative to the size of each block (residual_scale)
        scale = np.maximum(1.0, np.abs(x))
        step = float((np.abs(r) / scale).max())  # (the method: np.max's dispatch saved)
        pending = None
        if not math.isfinite(step):
            res = step
        elif self.report or step < self.tol or it >= self.max_iter:
            res = float(np.max(np.abs(r) / residual_scale(x, K, L)))
        else:  # the residual is at least the step: the test fails without it
            res, pending = step, (r, x, K, L)
        if not math.isfinite(step):
            if last is not None:  # a step from a finite image overflowed: retreat from it
                return retreat(damping=0.5 * beta, residual=res, evaluated=True, pending=None)
            return ended(x, res, S.NON_FINITE, "NaN or infinite order parameters", state)
        invalid_images = 0 if _image_psd(g, r, K, L, state.blocks) else s.invalid_images + 1
        if invalid_images >= _MAX_INVALID_IMAGES:
            msg = (
                "spurious fixed point: the map returns an overlap matrix Q_c that is not "
                f"positive semi-definite ({invalid_images} iterations in a row)"
            )
            if pending is not None:
                res = float(np.max(np.abs(r) / residual_scale(x, K, L)))
            return ended(x, res, S.NOT_POSITIVE_DEFINITE, msg, state)
        converged = res < self.tol
        xr = g if self.return_image else x

        def going_on(
            x_next: np.ndarray,
            st: AndersonState,
            last_pair: tuple[np.ndarray, np.ndarray] | None,
            best: float,
            beta: float,
        ) -> IterationState:
            """The state after an evaluation that did not end the iteration."""
            return IterationState(
                x_next, it, st, chart, last_pair, best, beta, res, invalid_images, True,
                None, pending, aux,
            )  # fmt: skip

        y, yg = (x, g) if chart is None else (chart.forward(x), chart.forward(g))
        if y is None or yg is None:  # outside the chart: a plain step, history dropped
            state = state.cleared()
            if converged:
                return ended(xr, res, S.CONVERGED, "converged", state, g)
            x, state = _next_iterate(x, r, beta, scale, state, K, L, None)
            return going_on(x, state, None, s.best, beta)
        if last is not None:
            state = state.update(y - last[0], yg - last[1])
        if converged:
            return ended(xr, res, S.CONVERGED, "converged", state, g)
        best = s.best
        if step > DIVERGENCE_FACTOR * best and not state.empty:
            # divergence of the extrapolation: restart from here with more damping
            state = state.cleared()
            beta = max(MIN_RESTART_DAMPING, 0.5 * beta)
        best = min(best, step)
        yscale = scale if chart is None else np.maximum(1.0, np.abs(y))
        x, state = _next_iterate(y, yg - y, beta, yscale, state, K, L, chart)
        return going_on(x, state, (y, yg), best, beta)


def iterate(
    T: IteratedMap,
    x0: np.ndarray,
    anderson: AndersonState,
    *,
    tol: float,
    max_iter: int,
    damping: float,
    callback: Callable[[int, float], Any] | None = None,
    return_image: bool = True,
    on_step: Callable[[IterationState], IterationState | None] | None = None,
    aux: Any = None,
) -> IterationOutcome:
    """Run a :class:`FixedPointIteration` of ``T`` from ``x0`` with the secant history
    ``anderson`` to its outcome.

    ``callback(iteration, residual)`` is called after every evaluation of the map that
    computed a residual, and :func:`gaussmix.core.interrupt.check_interrupt` after every
    step (the caller's cooperative stop, which raises).  ``on_step(state)``, if given, is
    called after every step that did not end the iteration, and the state it returns (if
    not None) is the one the iteration goes on from: a caller's change of the next iterate
    and its secant pairs (the stacked curves' restart of slow points,
    :mod:`gaussmix.theory.solve.batch`).  ``aux``: the map's memory to start from (an
    earlier evaluation's: its channel evaluation reused at the same state, its proximal
    points as the warm start), None for a fresh one.  numpy's floating-point warnings
    are off during the loop: a trial state far from the fixed point (an Anderson
    extrapolation) can overflow inside the map, and its image is then rejected by the
    explicit finiteness test, not reported as a RuntimeWarning.
    """
    solver = FixedPointIteration(tol, max_iter, damping, return_image, report=callback is not None)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        s = solver.init(T, x0, anderson, aux)
        while not solver.terminate(s):
            s = solver.step(T, s)
            if callback is not None and s.evaluated:
                callback(s.n_iter, s.residual)
            check_interrupt()  # a cooperative stop asked by the caller's thread
            if on_step is not None and not solver.terminate(s):
                s = on_step(s) or s
    return solver.outcome(s)


@dataclass(frozen=True)
class KnownImage:
    """A map ``T`` whose image at one state is known: ``(x, g, memory)``, its evaluation made
    before the iteration that starts there, returned again at ``x`` with that evaluation's
    memory instead of a second evaluation (the same numbers); every other state is ``T``'s,
    and so is every other attribute (the map's ``K``, ``L``, chart, rule and prior panels).

    The one mechanism of an image known at a run's start: a run continued from its last
    image (:func:`_go_on`), the finer rule's evaluation at the coarser run's end
    (:func:`iterate_to_rule_error`, its first refinement's re-solve in
    :func:`~gaussmix.theory.solve.refinement.refine_prior`), and the coarse image a defect
    correction is formed from (:func:`~gaussmix.theory.solve.defect.corrected_at`, the
    coarse map inside :class:`~gaussmix.theory.solve.defect.DefectCorrected`).  ``memory``
    is what the evaluation at ``x`` would have handed on: the iteration's next evaluation
    starts from it whatever memory the map is handed at ``x``."""

    T: Any
    known: tuple[np.ndarray, np.ndarray, Any]

    def __getattr__(self, name: str) -> Any:
        return getattr(self.T, name)

    def hats_memory(self, x: np.ndarray, memory: Any) -> tuple[Any, Any]:
        return self.T.hats_memory(x, memory)

    def image(self, x: np.ndarray, ev: Any, memory: Any) -> tuple[np.ndarray, Any]:
        x0, g, known = self.known
        if x0.shape == x.shape and (x0 == x).all():
            return g.copy(), known
        return self.T.image(x, ev, memory)


def iterate_to_rule_error(
    T: IteratedMap,
    x0: np.ndarray,
    anderson: AndersonState,
    finer: Callable[[IterationOutcome], tuple[np.ndarray, Any]],
    *,
    tol: float,
    max_iter: int,
    damping: float,
    callback: Callable[[int, float], Any] | None = None,
    fresh: Callable[[], dict] = dict,
    aux: Any = None,
) -> tuple[IterationOutcome, Any]:
    """:func:`iterate` of a coarser rule's map ``T`` whose fixed point only starts a finer
    rule's run, stopped near the coarser rule's own error rather than at ``tol``.

    The run goes to the residual
    :data:`~gaussmix.theory.numerics.tolerances.RULE_ERROR_CHECK` (or ``tol``, if larger);
    there the finer rule's map is evaluated once at the last iterate ``x`` (``finer(out)``:
    its image and its memory of that evaluation), and the two rules' difference there,
    ``delta = max |T'(x) - T(x)| / s`` (:func:`~gaussmix.theory.solve.state.residual_scale`),
    the coarser rule's own error in the map, sets the stop: the run goes on (from ``x``,
    with its secant pairs, memory and image there: the same iterates as one run) to
    ``max(tol, RULE_ERROR_FRACTION * delta)``.  The coarser fixed
    point is about ``delta / (1 - r)`` from the finer one (``r`` the map's contraction), so
    iterating the coarser rule further would move the finer run's start by less than that
    fraction of its distance to the finer fixed point.  A finer evaluation that fails or
    is not finite leaves the stop at ``tol``, and a run that got to the check in fewer than
    :data:`~gaussmix.theory.numerics.tolerances.RULE_ERROR_MIN_RUN` evaluations goes on to
    ``tol`` without it (its tail is as short: the finer evaluation would cost more than it
    saves).
    Returns the outcome (``return_image=False``: the last iterate, its channel evaluation
    in the outcome's ``aux``), and the finer map's evaluation ``(x, T'(x), memory)`` at the
    outcome's state where the run stopped at the check (the finer run's first evaluation
    is then at that same state: the caller's to reuse, :class:`KnownImage`), else None.
    ``fresh()``: the keywords of each :func:`iterate` call made (a fresh ``on_step``
    each)."""
    kw = dict(damping=damping, callback=callback, return_image=False)
    check = max(tol, RULE_ERROR_CHECK)
    out = iterate(T, x0, anderson, tol=check, max_iter=max_iter, aux=aux, **kw, **fresh())
    if not out.converged or check == tol:
        return out, None
    stop, x, known = tol, out.x, None
    if out.n_iter < RULE_ERROR_MIN_RUN:  # (a short run: its tail is short too)
        return _go_on(T, out, tol, max_iter, kw, fresh), None
    try:
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            g, memory = finer(out)
            image = x if out.image is None else out.image
            delta = float(np.max(np.abs(g - image) / residual_scale(x, T.K, T.L)))
        if math.isfinite(delta):
            stop, known = max(tol, RULE_ERROR_FRACTION * delta), (x, g, memory)
    except (FloatingPointError, np.linalg.LinAlgError):
        pass
    if out.residual < stop:
        return out, known
    return _go_on(T, out, stop, max_iter, kw, fresh), None


def _go_on(
    T: IteratedMap, out: IterationOutcome, tol: float, max_iter: int, kw: dict, fresh: Callable
) -> IterationOutcome:
    """The run ``out`` of ``T`` (converged to a looser tolerance, its last iterate ``x``)
    continued to ``tol``: from ``x`` with its pairs, memory and image there (not evaluated
    again; that step is no evaluation of its own)."""
    x = out.x
    image = KnownImage(T, (x, out.image, out.aux)) if out.image is not None else T
    spent = out.n_iter - (image is not T)
    more = iterate(
        image, x, out.anderson, tol=tol, max_iter=max_iter - spent, aux=out.aux, **kw, **fresh()
    )
    return replace(more, n_iter=spent + more.n_iter)


def _next_iterate(
    y: np.ndarray,
    r: np.ndarray,
    beta: float,
    scale: np.ndarray,
    state: AndersonState,
    K: int,
    L: int,
    chart: LogChart | None = None,
) -> tuple[np.ndarray, AndersonState]:
    """The next iterate (a state) from chart coordinates ``y`` with residual ``r = T(x) - x``
    in the chart: the Anderson extrapolation when it stays in the cone of valid states
    (else the history is dropped), otherwise the damped step ``y + beta r``, shortened until
    it is valid (without a chart, ``y`` is the state itself).  A state of independent
    blocks (``state.blocks``: the points of a curve) is judged block by block
    (:func:`~gaussmix.theory.solve.stacked_step.per_block`): only the blocks that leave the
    cone, or that the extrapolation does not help, take the damped step and lose their
    pairs; the blocks that no longer move (frozen: residual zero) are left out of it
    (:func:`~gaussmix.theory.solve.stacked_step.next_iterate_moving`)."""
    if state.blocks is not None and chart is None and L > 1:
        moving = _moving_blocks(r, state.blocks)
        step = (
            None
            if moving is None
            else _next_iterate_moving(y, r, beta, scale, state, K, L, moving)
        )
        if step is not None:
            return step
    if not state.empty and state.memory > 0:
        try:
            cand = _back(chart, state.extrapolate(y, r, beta, scale))
            if is_valid_state(cand, K, L):
                return cand, state
            if state.blocks is not None:
                kept = _per_block(y, r, beta, scale, cand, state, K, L, chart)
                if kept is not None:
                    return kept
            state = state.cleared()
        except np.linalg.LinAlgError:
            state = state.cleared()
    t = 1.0
    x_new = _back(chart, y + beta * r)
    while t > MIN_STEP_FRACTION and not is_valid_state(x_new, K, L):
        t *= 0.5
        x_new = _back(chart, y + t * beta * r)
    return x_new, state
