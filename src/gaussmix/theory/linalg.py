"""Small dense linear algebra on stacks of tiny matrices (run at every iteration)."""

from __future__ import annotations

import functools
from contextlib import AbstractContextManager

import numpy as np

__all__ = ["sym_eigvals", "one_blas_thread"]


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
    return _blas_pools().limit(limits=1, user_api="blas")


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
