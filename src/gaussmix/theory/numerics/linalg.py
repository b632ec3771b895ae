"""Small dense linear algebra on stacks of tiny matrices (run at every iteration)."""

from __future__ import annotations

import contextlib
import functools
import math
import os
from collections.abc import Iterator
from contextlib import AbstractContextManager
from contextvars import ContextVar

import numpy as np

try:  # numpy's gufunc behind ``np.linalg.inv`` (:func:`inv`)
    from numpy.linalg._umath_linalg import inv as _INV
except ImportError:  # pragma: no cover - numpy's private module renamed
    _INV = None

__all__ = [
    "complement_of_ones",
    "inv",
    "sym_eigvals",
    "one_blas_thread",
    "blas_threads",
    "blas_thread_limit",
    "granted_blas_threads",
    "process_cores",
]


@functools.cache
def _blas_pools():
    """The BLAS thread pools of the process (inspected once, on first use), scipy's
    included: scipy ships its own OpenBLAS, loaded with ``scipy.linalg``; inspected before
    it was loaded, the pools missed it and the dense prior's LAPACK calls ran threaded."""
    import scipy.linalg  # noqa: F401 - load scipy's BLAS before the pools are listed
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def one_blas_thread() -> AbstractContextManager:
    """A context in which BLAS / LAPACK run on one thread (restored on exit).

    For dense LAPACK factorisations of a few hundred to a few thousand rows (Cholesky,
    symmetric eigenvalues): threaded OpenBLAS gains little there on an idle machine and, on
    a loaded one, was measured 30x slower (Cholesky and inverse at d = 717: 3.6 s against
    0.12 s on the project's shared 2-core machine; BENCHMARKS.md).
    """
    return blas_thread_limit(1)


def blas_thread_limit(threads: int) -> AbstractContextManager:
    """A context in which BLAS / LAPACK run on ``threads`` threads (restored on exit)."""
    return _blas_pools().limit(limits=threads, user_api="blas")


#: Matrix size ``n`` from which an ``O(n^3)`` LAPACK computation on an ``n x n`` matrix runs
#: on two BLAS threads where the caller allows them (:func:`blas_threads`): a call of a
#: second or more.  One evaluation of the dense ridge prior (K = 10, L = 9, Wishart
#: covariances), best of three on the project's 2-core machine idle (2026-11-27), one BLAS
#: thread (the independent calls paired on two Python threads from ``n = 1500``) against
#: two: ``n = 1710`` 0.44 / 0.32 s (float32 0.23 / 0.21 s), ``n = 2997`` 2.28 / 1.44 s
#: (1.35 / 1.14 s), ``n = 4500`` 7.8 / 5.1 s (3.7 / 2.5 s); at ``n = 6471`` (MNIST's
#: pixels) 24.7 / 14.6 s (13.4 / 7.2 s).  Below, the gain is a fraction of a second, and
#: on a loaded machine threads cost up to 30x (:func:`one_blas_thread`).
BLAS_THREADS_MIN_N = 3000
#: ... and at most this many (the machine the budgets are set on has two cores; more threads
#: on sygst's and trtri's blocked loops gained little where they were measured).
MAX_BLAS_THREADS = 2


def process_cores() -> int:
    """The cores this process may run on (its affinity where the platform has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on every platform
        return os.cpu_count() or 1


#: BLAS threads granted to :func:`blas_threads` by a caller that limits the process's pools
#: for other work (:func:`granted_blas_threads`); None: the pools' own limit decides
_GRANTED: ContextVar[int | None] = ContextVar("gaussmix_granted_blas_threads", default=None)


@contextlib.contextmanager
def granted_blas_threads(threads: int) -> Iterator[None]:
    """A context in which :func:`blas_threads` may use up to ``threads`` BLAS threads for
    large LAPACK work although the process's pools are limited to fewer.

    For a caller that limits BLAS to one thread for work of its own that runs before or
    after the theory, never beside it: the command line's real-data and own-data studies,
    whose seeded simulations run on one thread so that their bits do not depend on the
    machine, while their dense theory (MNIST's pixels: ``n = 6471``) would otherwise lose
    its second core.  Not for a process whose other threads or workers compute meanwhile.
    """
    token = _GRANTED.set(max(1, int(threads)))
    try:
        yield
    finally:
        _GRANTED.reset(token)


def pools_thread_limit() -> int:
    """The current thread limit of the process's BLAS pools (the smallest, 1 if none)."""
    pools = _blas_pools().select(user_api="blas").lib_controllers
    return min((int(pool.num_threads) for pool in pools), default=1)


def blas_threads(n: int) -> int:
    """The BLAS threads for ``O(n^3)`` LAPACK work on an ``n x n`` matrix: one below
    :data:`BLAS_THREADS_MIN_N`, otherwise ``min(MAX_BLAS_THREADS, the caller's limit,
    cores)``, the caller's limit being the current one of the process's BLAS pools
    (threadpoolctl's: a sweep worker limited to one thread stays on one), or the threads
    a caller granted (:func:`granted_blas_threads`).

    A threaded factorisation or product splits its sums differently from a serial one, so a
    result computed this way is a deterministic function of its inputs *and of this number*:
    the same bits on every run with the same count, within rounding (``~kappa eps``) of the
    one-thread result otherwise.
    """
    if n < BLAS_THREADS_MIN_N:
        return 1
    granted = _GRANTED.get()
    allowed = pools_thread_limit() if granted is None else granted
    return max(1, min(MAX_BLAS_THREADS, allowed, process_cores()))


def inv(A: np.ndarray) -> np.ndarray:
    """``np.linalg.inv(A)`` of a float64 ``A`` (..., m, m): numpy's own LAPACK routine (the
    same numbers, to the bit), without the call's Python-level checks and error-state
    context (about two thirds of its cost on the 2 x 2 blocks of a K = 3 prior).  Where
    the inverse is not finite (a singular or non-finite ``A``) the answer and the error
    are ``np.linalg.inv``'s own: it is called again (the routine itself having flagged an
    invalid operation: silent under an ``np.errstate`` that ignores it, as the fixed-point
    iteration's, a ``RuntimeWarning`` outside one)."""
    if _INV is None or A.dtype != np.float64:  # (a numpy without the routine by that name)
        return np.linalg.inv(A)
    out = _INV(A, signature="d->d")
    if not all(map(math.isfinite, out.ravel().tolist())):  # (floats: cheaper than np.isfinite)
        return np.linalg.inv(A)
    return out


def sym_eigvals(A: np.ndarray) -> np.ndarray:
    """Eigenvalues, ascending, of the symmetric part of each block of ``A`` (..., m, m).

    Closed forms for ``m = 1`` (the entry) and ``m = 2`` (``tr/2 -+ hypot((a - c)/2, b)``,
    no LAPACK call: ~10x cheaper on the small stacks of the solver and the orthant
    probabilities); :func:`numpy.linalg.eigvalsh` beyond.  Absolute error ~1e-16 times the
    largest ``|eigenvalue|`` in every case.
    """
    A = np.asarray(A, dtype=float)
    m = A.shape[-1]
    if m == 1:
        return A[..., 0, :].copy()
    if m == 2:
        a, c = A[..., 0, 0], A[..., 1, 1]
        b = 0.5 * (A[..., 0, 1] + A[..., 1, 0])
        half, rad = 0.5 * (a + c), np.hypot(0.5 * (a - c), b)
        return np.stack([half - rad, half + rad], axis=-1)
    return np.linalg.eigvalsh(0.5 * (A + np.swapaxes(A, -1, -2)))


def complement_of_ones(L: int) -> np.ndarray:
    """Orthonormal basis (L-1, L) of the complement of (1, ..., 1) (Helmert rows): the
    effective output space ``P`` of the shift-invariant cross-entropy."""
    P = np.zeros((L - 1, L))
    for i in range(1, L):
        P[i - 1, :i] = 1.0
        P[i - 1, i] = -i
        P[i - 1] /= np.sqrt(i * (i + 1))
    return P
