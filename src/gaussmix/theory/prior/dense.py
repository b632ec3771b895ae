"""Ridge prior on general covariances (Appendix C, the l2 case, with the units of Appendix B).

For ``r(W) = ||W||_F^2 / 2`` the prior potential is a Gaussian integral.  With ``W`` (L x d)
flattened row by row (index ``(a, i)``, output ``a`` outer) and

    A = lam I_L (x) I_d + sum_k Vhat_k (x) Sigma_k,          S = A^{-1}       (Ld x Ld),
    m = sum_k Mhat_k (x) mu_k,                               u = S m,
    C = sum_k Qhat_k (x) Sigma_k,

the minimiser of ``lam r(W) + 1/2 sum_k tr(Vhat_k W Sigma_k W^T) - <W, B>`` with the replica
field ``B = sqrt(d) sum_k Mhat_k mu_k^T + N``, ``Cov(vec N) = C`` (Appendix B, eq. of
``Psi_w``), is ``vec W = S vec B``: Gaussian with mean ``sqrt(d) u`` and covariance ``S C S``.
Hence, with ``U = u`` reshaped to (L, d) and ``ptr_k(X)[a, b] = <X_ab, Sigma_k>`` the partial
trace of an (Ld x Ld) matrix against ``Sigma_k`` (``X_ab``: its d x d block ``(a, b)``),

    Q_k = E[W Sigma_k W^T] / d = U Sigma_k U^T + ptr_k(S C S) / d,
    M_k = E[W] mu_k / sqrt(d)  = U mu_k,
    V_k = ptr_k(S) / d,
    Psi_w = -E[vec B^T S vec B] / (2 d) = -(m . u) / 2 - <S, C> / (2 d),
    E[r(W*)] / d = |u|^2 / 2 + tr(S C S) / (2 d).

These are Appendix C's ``Q_k, M_k, V_k`` with the ``sqrt(d)`` of the replica mean term
(Theorem 1 as printed omits it; docs/design.md pitfall 9) and, for covariances with common
eigenvectors ``v_i`` and ``mu^k_i = sqrt(d) mu_k . v_i``, exactly Corollary 3.

Axes on which every covariance vanishes (constant pixels: a zero diagonal entry of a
positive semi-definite matrix zeroes its row and column) are treated in closed form: there
``A = lam I``, so ``u = m / lam`` and nothing enters ``Q_k``, ``V_k`` or ``S C S``; the
matrices below are restricted to the r remaining axes (``d`` stays the input dimension).

Linear algebra per call (:func:`_inverse_and_sandwich`): one Cholesky factorisation
``A = R^T R``, then ``S`` and ``S C S`` from it by triangular congruences that exploit the
symmetry of both sides (LAPACK ``potrf``, ``sygst``, ``trtri``, ``sygst``, ``lauum``): about
``3 n^3`` flops for ``n = L r``, against ``5 n^3`` for the inverse (``potri``) and two
matrix products; the partial traces need the entries of ``S`` and ``S C S``, so a solve
does not suffice.  Only upper triangles are built and read: ``A`` and ``C`` are assembled
block row by block row into Fortran-ordered arrays that LAPACK overwrites in place, and the
partial traces, ``u = S m`` (``symv``) and the mean response (``symm``) read the upper
triangles LAPACK returns (symmetrised copies of the four ``n x n`` matrices took ~6 of
~28 s of CPU per evaluation at d = 784, L = 9, and a third of its memory).
``O(K L^2 d^2)`` for everything else.

Threads (:func:`~.linalg.blas_threads`): a matrix of ``n >= BLAS_THREADS_MIN_N = 3000``
rows (a call of seconds) is factorised on two BLAS threads where the caller's BLAS limit
(threadpoolctl's, e.g. a sweep's worker on one) and the cores allow: at ``n = 6471``
(MNIST's ten classes) one double-precision evaluation took 14.6 s on two threads against
24.7 s on one, on an idle 2-core machine.  Smaller problems stay on one BLAS thread
whatever the caller allows: there two threads gain a fraction of a second, and OpenBLAS
threads on a loaded machine were measured up to 30x slower on factorisations of a few
hundred rows (a cross-entropy point, K = 3, 2 cores under load 3: 1.4-2.0 s at d = 300
and 7-13 s at d = 600 on one thread, 8.6-17 s and 26-35 s on two; BENCHMARKS.md).  On one
thread, from ``n = 1500`` on, the two pairs of independent calls (``trtri`` beside the first
``sygst``, ``lauum`` beside the second) run on two Python threads, each call on one BLAS
thread: the same bits, and ``7 n^3 / 3`` on the longer path where a second core is free.
A threaded factorisation or product splits its sums differently, so the outputs are a
deterministic function of the inputs *and of the thread count*, which the result records
(:attr:`DenseRidgeTerms.blas_threads`): the same bits on every run with the same count, and
within rounding (``~kappa(A) eps``, tested) of the one-thread evaluation otherwise.  In
practice a point of a large dense problem solved by :func:`gaussmix.solve` on an idle
2-core machine (two threads) and the same point in a sweep's one-thread worker or through
a command with ``--n-jobs`` (which runs on one BLAS thread; ``gaussmix realdata`` and
``gaussmix data`` grant their theory the process's threads,
:func:`~.linalg.granted_blas_threads`) can differ in their last bits (measured
up to 7e-16 on the test error and the overlaps where threads were tried, d = 30..600); a
point below the threshold is the same number through every door.
No covariance is inverted or assumed invertible: ``lam > 0`` makes
``A`` positive definite.  The ``O((Lr)^3)`` cost does not depend on K.

``single=True`` runs the same algebra in float32 (LAPACK ``spotrf``, ``ssygst``, ...: about
half the time, and half the memory), the outputs within ``~kappa(A) eps32`` of the double
evaluation (about 1e-6 relative at MNIST's size); the fixed-point iteration uses it for its
first iterations only, far from the fixed point, and never returns it
(:func:`~gaussmix.theory.solve.batch_solve.run_points`).  The mean ``u = S m`` is then
refined to double precision by two steps of iterative refinement against ``A`` applied
from its factors (:func:`_refined_mean`, ``O(K L r^2)``): ``M_k`` and the mean part of
``Q_k`` carry the double evaluation's accuracy, and only ``V_k`` and the trace part of
``Q_k`` the float32 rounding.

:func:`coarse_covariance` gives the same prior on the leading axes of the covariances'
weighted sum (rotated to its eigenbasis, the rest of zero variance): ``(p / r)^3`` of the
cost, an image that differs from this one's by a smooth function of the hats, which the
first phase of a large dense fixed point corrects (:mod:`gaussmix.theory.solve.coarse_axes`).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from scipy.linalg import get_blas_funcs, lapack

from gaussmix.core.exceptions import ArgumentError

from ..model.covariance import DenseCovariance
from ..numerics.linalg import blas_thread_limit, blas_threads

__all__ = ["DenseRidgeTerms", "MeanResponse", "coarse_covariance", "dense_ridge_terms"]


@dataclass(frozen=True)
class DenseRidgeTerms:
    """The ridge prior on a dense structure (module docstring).

    Attributes
    ----------
    Q, V : ndarray (K, L, L); M : ndarray (K, L)
    psi_w, penalty : float
        ``Psi_w`` and ``E[r(W*)] / d`` (NaN unless asked for).
    weight_mean, weight_var : ndarray (L, d) or None
        Mean ``sqrt(d) u`` and variance ``diag(S C S)`` of each component of ``W*``
        (asked for with ``details``).
    mean_response : MeanResponse or None
        The image as a function of ``Mhat`` (asked for with ``mean_response``).
    blas_threads : int
        The BLAS threads the ``O(n^3)`` linear algebra ran on (module docstring: the
        outputs are a deterministic function of the inputs and of this number).
    """

    Q: np.ndarray
    M: np.ndarray
    V: np.ndarray
    psi_w: float = float("nan")
    penalty: float = float("nan")
    weight_mean: np.ndarray | None = None
    weight_var: np.ndarray | None = None
    mean_response: MeanResponse | None = None
    blas_threads: int = 1


@dataclass(frozen=True)
class MeanResponse:
    """The ridge prior's image as a function of ``Mhat`` at fixed ``Qhat`` and ``Vhat``.

    ``U = S m`` is linear in ``Mhat`` (``m = sum_j Mhat_j (x) mu_j``) and ``S`` does not
    depend on it, so ``M_k = U mu_k`` is ``M = G Mhat`` with the gain

        G[k, a, j, b] = dM_k[a] / dMhat_j[b] = mu_k^T S_ab mu_j      (S_ab: block (a, b)),

    and ``Q_k = U Sigma_k U^T + ptr_k(S C S) / d`` changes only through its mean part.  With
    the columns ``S (e_b (x) mu_j)`` (``n x K L`` numbers, from the ``S`` of the evaluation in
    ``O(n^2 K)``) the change of the image under ``Mhat -> Mhat + dMhat`` costs
    ``O(K L r^2)``, not a new ``O(n^3)`` evaluation (:meth:`change`).

    Attributes
    ----------
    gain : ndarray (K, L, K, L)
        ``G`` (the inactive axes, where ``S = I / lam``, included).
    response : ndarray (L, r, L, K)
        ``response[a, i, b, j] = (S (e_b (x) mu_j))_{(a, i)}`` on the active axes.
    U : ndarray (L, d)
        ``u`` of the evaluation, reshaped.
    cov : DenseCovariance
    lam : float
    """

    gain: np.ndarray
    response: np.ndarray
    U: np.ndarray
    cov: DenseCovariance
    lam: float

    def change(self, dMhat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(dQ, dM)``: the prior's ``Q`` and ``M`` at ``Mhat + dMhat`` (the same ``Qhat``,
        ``Vhat``) minus those of the evaluation, ``dM = G dMhat`` and
        ``dQ_k = dU Sigma_k U^T + U Sigma_k dU^T + dU Sigma_k dU^T`` (active axes)."""
        cov = self.cov
        act = cov.active
        dU = (dMhat.T @ cov.means) / self.lam  # on the inactive axes S = I / lam
        dU[:, act] = np.einsum("aibj,jb->ai", self.response, dMhat)
        Ua, dUa = self.U[:, act], dU[:, act]
        Sig_dU = cov.active_covariances @ dUa.T  # (K, r, L)
        cross = np.einsum("ai,kib->kab", Ua, Sig_dU)
        dQ = cross + np.swapaxes(cross, 1, 2) + np.einsum("ai,kib->kab", dUa, Sig_dU)
        if dQ.shape[1] > 1:
            dQ = 0.5 * (dQ + np.swapaxes(dQ, 1, 2))
        return dQ, cov.means @ dU.T


def _mean_response(cov: DenseCovariance, lam: float, S: np.ndarray, U: np.ndarray) -> MeanResponse:
    """The :class:`MeanResponse` of an evaluation with ``S = A^{-1}`` (Lr x Lr, its upper
    triangle read: one symmetric product ``symm`` with the ``K L`` columns ``e_b (x) mu_j``)."""
    act = cov.active
    L, r = U.shape[0], int(act.sum())
    mu = cov.means[:, act]  # (K, r)
    K = mu.shape[0]
    cols = np.zeros((L, r, L, K), dtype=S.dtype)
    for b in range(L):
        cols[b, :, b, :] = mu.T
    symm = get_blas_funcs("symm", (S,))
    response = symm(1.0, S, cols.reshape(L * r, L * K), lower=0)
    response = response.reshape(L, r, L, K).astype(np.float64)
    gain = np.einsum("ki,aibj->kajb", mu, response)
    inactive = cov.means[:, ~act]
    gain += np.einsum("kj,ab->kajb", inactive @ inactive.T / lam, np.eye(L))
    return MeanResponse(gain, response, U, cov, lam)


def _kron_sum(coef: np.ndarray, covs: np.ndarray, shift: float = 0.0) -> np.ndarray:
    """The upper triangle of ``shift I + sum_k coef_k (x) Sigma_k`` (Lr x Lr) for ``coef``
    (K, L, L) and ``covs`` (K, r, r), in the precision of ``covs``: a Fortran-ordered matrix whose
    blocks ``(a, b)``, ``a <= b``, are filled and the others zero (what LAPACK reads with
    ``lower=0``; a symmetric block is its own transpose)."""
    K, L, _ = coef.shape
    r = covs.shape[1]
    flat = covs.reshape(K, r * r)
    out = np.zeros((L * r, L * r), dtype=covs.dtype, order="F")
    for a in range(L):  # one block row at a time: (L - a) r^2 numbers at once
        blocks = (coef[:, a, a:].T.astype(covs.dtype) @ flat).reshape(L - a, r, r)
        for b, block in enumerate(blocks, start=a):
            out[a * r : (a + 1) * r, b * r : (b + 1) * r] = block.T
    if shift:
        out[np.diag_indices_from(out)] += shift
    return out


def _partial_traces(X: np.ndarray, covs: np.ndarray, L: int) -> np.ndarray:
    """``ptr_k(X)[a, b] = <X_ab, Sigma_k>`` (K, L, L), in double precision, for a symmetric
    ``X`` (Lr x Lr) of which only the upper triangle is read (LAPACK's output): the blocks
    ``a < b`` whole, the upper half of each diagonal block (the symmetric covariances make
    ``<X_ab^T, Sigma_k>`` the same number)."""
    K, r, _ = covs.shape
    flat = covs.reshape(K, r * r)
    out = np.empty((K, L, L))
    for a in range(L):
        rows = slice(a * r, (a + 1) * r)
        diag = np.triu(X[rows, rows])
        diag += np.triu(diag, 1).T
        blocks = [diag] + [X[rows, b * r : (b + 1) * r].T for b in range(a + 1, L)]
        values = flat @ np.stack(blocks).reshape(L - a, r * r).T  # (K, L - a)
        out[:, a, a:] = values
        out[:, a:, a] = values
    return out


#: Matrix size from which the independent LAPACK calls of :func:`_inverse_and_sandwich` run
#: two at a time on two Python threads (each on one BLAS thread; below it a thread costs
#: more than it saves)
PAIR_THREADS_MIN_N = 1500


def _in_pairs(
    paired: bool, first: Callable[[], Any], second: Callable[[], Any]
) -> tuple[Any, Any]:
    """``(first(), second())``, the two at once on two threads with ``paired``.

    The LAPACK wrappers release the GIL, and each call runs on the one BLAS thread of
    :func:`dense_ridge_terms`, so every call computes the same bits as it would alone: the
    pair costs the longer of the two on a machine with a free core, their sum otherwise.
    """
    if not paired:
        return first(), second()
    with ThreadPoolExecutor(max_workers=1) as pool:
        future = pool.submit(second)
        return first(), future.result()


#: the LAPACK routines of :func:`_inverse_and_sandwich`, in double (False) and single (True)
#: precision
_LAPACK = {
    single: tuple(
        getattr(lapack, ("s" if single else "d") + f) for f in ("potrf", "sygst", "trtri", "lauum")
    )
    for single in (False, True)
}


def _inverse_and_sandwich(
    A: np.ndarray, C: np.ndarray, single: bool = False, paired: bool = False
) -> tuple[np.ndarray, np.ndarray, float]:
    """``S = A^{-1}``, ``Z = S C S`` and ``tr(S C)`` for a symmetric positive-definite ``A``
    and a symmetric ``C`` (the upper triangles of Fortran-ordered arrays, :func:`_kron_sum`;
    both overwritten), from one Cholesky factorisation, in ``3 n^3`` flops instead of the
    ``5 n^3`` of an inverse and two matrix products; ``S`` and ``Z`` are returned as upper
    triangles (the strict lower ones hold no values); in float32 with ``single``.

    With ``A = R^T R`` (``potrf``, ``n^3 / 3``) and ``Y = R^{-1}`` (``trtri``, ``n^3 / 3``):
    ``X = R^{-T} C R^{-1}`` (``sygst``, type 1, ``n^3``: the reduction of the generalised
    symmetric eigenproblem to standard form, which exploits the symmetry of both sides),
    ``Z = S C S = R^{-1} X R^{-T} = Y X Y^T`` (``sygst``, type 2 with ``Y`` as the factor,
    ``n^3``) and ``S = Y Y^T`` (``lauum``, ``n^3 / 3``; ``trtri`` + ``lauum`` is what
    ``potri`` does); ``tr(S C) = tr(X)``.  With ``paired`` (one BLAS thread, a large
    matrix: :func:`dense_ridge_terms`) ``trtri`` runs beside the first ``sygst`` and
    ``lauum`` beside the second (:func:`_in_pairs`): ``7 n^3 / 3`` on the longer path;
    otherwise each runs after the ``sygst`` that reads its input, in that input's buffer
    (two ``n x n`` matrices fewer to allocate and fault in: at ``n = 6471``, 670 MB).

    Raises
    ------
    numpy.linalg.LinAlgError
        If ``A`` is not numerically positive definite (the solver then retreats).
    """
    potrf, sygst, trtri, lauum = _LAPACK[single]
    # Fortran-ordered upper triangles (:func:`_kron_sum`), overwritten in place
    R, info = potrf(A, lower=0, clean=0, overwrite_a=1)
    if info != 0:
        raise np.linalg.LinAlgError(
            "the ridge prior's matrix lam I + sum_k Vhat_k (x) Sigma_k is not positive "
            f"definite (Cholesky pivot {info})"
        )
    # unpaired, each second call runs after the first, which reads its input: in place
    in_place = int(not paired)
    (X, info_x), (Y, info_y) = _in_pairs(
        paired,
        lambda: sygst(C, R, itype=1, lower=0, overwrite_a=1),
        lambda: trtri(R, lower=0, overwrite_c=in_place),  # paired: R is read meanwhile
    )
    A = R = None  # (one buffer, not read again: freed before the second pair)
    if info_x != 0 or info_y != 0:
        raise np.linalg.LinAlgError(
            f"the ridge prior's inverse failed (sygst info {info_x}, trtri info {info_y})"
        )
    tr_sc = float(np.trace(X))
    (Z, info_z), (S, info_s) = _in_pairs(
        paired,
        lambda: sygst(X, Y, itype=2, lower=0, overwrite_a=1),
        lambda: lauum(Y, lower=0, overwrite_c=in_place),  # paired: Y is read meanwhile
    )
    if info_z != 0 or info_s != 0:
        raise np.linalg.LinAlgError(
            f"the ridge prior's inverse failed (sygst info {info_z}, lauum info {info_s})"
        )
    return S, Z, tr_sc


#: Steps of iterative refinement of the mean ``u = S m`` after a float32 evaluation
#: (:func:`_refined_mean`): each multiplies its error by ``eta = |I - S32 A| ~ kappa(A)
#: eps32``, so two take it from ``eta`` to ``eta^3`` relative, below the double evaluation's
#: own rounding wherever ``eta < 1e-5``
MEAN_REFINEMENT_STEPS = 2


def _ridge_matvec(u: np.ndarray, lam: float, Vhat: np.ndarray, covs: np.ndarray) -> np.ndarray:
    """``A u`` for ``A = lam I + sum_k Vhat_k (x) Sigma_k`` (active axes) in double
    precision, from the factors (``(Vhat_k (x) Sigma_k) vec U = vec(Vhat_k U Sigma_k)``,
    ``U = u`` reshaped to (L, r)): ``O(K L r^2)``, not the ``n^2`` of the assembled ``A``."""
    L, r = Vhat.shape[1], covs.shape[1]
    Ua = u.reshape(L, r)
    return (lam * Ua + np.einsum("kab,kbi->ai", Vhat, Ua @ covs)).reshape(-1)


def _refined_mean(
    u: np.ndarray,
    m: np.ndarray,
    lam: float,
    Vhat: np.ndarray,
    covs: np.ndarray,
    S: np.ndarray,
    symv: Callable,
) -> np.ndarray:
    """The mean ``u = A^{-1} m`` of a float32 evaluation refined to double precision:
    :data:`MEAN_REFINEMENT_STEPS` steps ``u <- u + S32 (m - A u)``, the residual in double
    (:func:`_ridge_matvec`), the correction by the float32 inverse ``S32`` (its upper
    triangle, ``symv``).

    Classical iterative refinement: with ``eta = |I - S32 A|`` (about ``kappa(A) eps32``,
    the float32 inverse's relative error) a step maps the error ``e`` to ``(I - S32 A) e``
    plus the double residual's rounding, so ``|u_k - u| <= eta^(k+1) |u| + O(kappa(A)
    eps64) |u|`` from ``u_0 = S32 m`` (tested).  The mean enters ``M_k = U mu_k`` and the
    mean part ``U Sigma_k U^T`` of ``Q_k``, which carried most of the float32 evaluation's
    rounding (MNIST ten classes pooled 2 x 2, alpha = 8: ``Q`` 4.1e-7 and ``M`` 2.1e-7
    relative from the double evaluation, 2.2e-8 and 1.8e-15 with the refined mean).  The
    float32 phase's floor is then that of ``V`` (1.1e-7 there, 3.4e-7 of its scale): the
    evaluations of the MNIST curve did not change (BENCHMARKS.md, "The MNIST ten-class
    curve's evaluations, counted").  ``O(K L r^2)`` a step, against the evaluation's
    ``O(n^3)``."""
    for _ in range(MEAN_REFINEMENT_STEPS):
        res = m - _ridge_matvec(u, lam, Vhat, covs)
        u = u + symv(1.0, S, res.astype(S.dtype), lower=0)
    return u


def dense_ridge_terms(
    cov: DenseCovariance,
    lam: float,
    Qhat: np.ndarray,
    Mhat: np.ndarray,
    Vhat: np.ndarray,
    *,
    details: bool = False,
    mean_response: bool = False,
    single: bool = False,
    basis: np.ndarray | None = None,
) -> DenseRidgeTerms:
    """``Q_k, M_k, V_k`` of the ridge prior on general covariances (module docstring;
    Appendix C, l2 case), on the BLAS threads of :func:`~.linalg.blas_threads` for its
    matrix size ``n = L r``: one below ``BLAS_THREADS_MIN_N``, else up to two.

    Parameters
    ----------
    cov : DenseCovariance
        Means (input units) and covariances.
    lam : float
        Penalty strength, ``> 0`` (the covariances may be singular).
    Qhat, Vhat : ndarray (K, L, L); Mhat : ndarray (K, L)
        Hat parameters in the effective output space.
    details : bool
        Also compute ``psi_w``, ``penalty`` and the law of each weight component.
    mean_response : bool
        Also return the image as a function of ``Mhat`` (:class:`MeanResponse`: ``O(n^2 K)``
        beside the ``O(n^3)``), for the mean-field Newton step of the fixed-point map
        (:func:`~gaussmix.theory.solve.bias.mean_bias_step`).
    single : bool
        Run the ``O(n^3)`` linear algebra in single precision (module docstring): about
        half the time, every output within ``~kappa(A) eps32`` relative of the double
        evaluation (``M`` and the weights' mean within its rounding: the mean is refined
        in double), and in double precision all the same.
    basis : ndarray (L, L_full), optional
        The law of each component of the full weights ``basis^T w`` in the details (the
        square loss solved on the complement of ``1``: its full weights), instead of the
        effective ones'.

    Raises
    ------
    ValueError
        If ``lam <= 0``.
    numpy.linalg.LinAlgError
        If ``lam I + sum_k Vhat_k (x) Sigma_k`` is not numerically positive definite.
    """
    if not lam > 0.0:
        raise ArgumentError(
            "lam",
            f"must be > 0 on a dense covariance structure (its covariances may be "
            f"singular, and lam = 0 leaves the weights undetermined there); got lam={lam:g}",
        )
    n = Mhat.shape[1] * int(np.count_nonzero(cov.active))
    threads = blas_threads(n)
    with blas_thread_limit(threads):
        terms = _dense_ridge_terms(
            cov,
            lam,
            Qhat,
            Mhat,
            Vhat,
            details,
            mean_response,
            single,
            paired=threads == 1 and n >= PAIR_THREADS_MIN_N,
            basis=basis,
        )
    return replace(terms, blas_threads=threads)


def _dense_ridge_terms(
    cov: DenseCovariance,
    lam: float,
    Qhat: np.ndarray,
    Mhat: np.ndarray,
    Vhat: np.ndarray,
    details: bool,
    mean_response: bool = False,
    single: bool = False,
    paired: bool = False,
    basis: np.ndarray | None = None,
) -> DenseRidgeTerms:
    """:func:`dense_ridge_terms` after its check, on the caller's BLAS threads (its
    independent LAPACK calls two at a time on two Python threads with ``paired``)."""
    K, L = Mhat.shape
    d = cov.dim
    act = cov.active
    dtype = np.float32 if single else np.float64
    covs = cov.active_covariances  # (K, r, r): axes of zero variance everywhere left out
    covs_w = covs.astype(dtype, copy=False)
    r = covs.shape[1]
    S, Z, tr_sc = _inverse_and_sandwich(
        _kron_sum(Vhat, covs_w, lam), _kron_sum(Qhat, covs_w), single, paired
    )
    m = Mhat.T @ cov.means  # (L, d): sum_k Mhat_k mu_k^T
    U = m / lam  # on the inactive axes S = I / lam exactly
    ma = np.ascontiguousarray(m[:, act]).reshape(-1)
    symv = get_blas_funcs("symv", (S,))
    ua = symv(1.0, S, ma.astype(dtype), lower=0).astype(np.float64)
    if single:  # the mean in double precision all the same (:func:`_refined_mean`)
        ua = _refined_mean(ua, ma, lam, Vhat, covs, S, symv)
    Ua = ua.reshape(L, r)
    U[:, act] = Ua
    SigU = covs @ Ua.T  # (K, r, L)
    Q = np.einsum("ai,kib->kab", Ua, SigU) + _partial_traces(Z, covs_w, L) / d
    M = cov.means @ U.T
    V = _partial_traces(S, covs_w, L) / d
    if L > 1:
        Q = 0.5 * (Q + np.swapaxes(Q, 1, 2))
    response = _mean_response(cov, lam, S, U) if mean_response else None
    if not details:
        return DenseRidgeTerms(Q=Q, M=M, V=V, mean_response=response)
    psi_w = -0.5 * float(np.vdot(m, U)) - 0.5 * tr_sc / d
    penalty = 0.5 * float(np.vdot(U, U)) + 0.5 * float(np.trace(Z)) / d
    if basis is None:
        var = np.zeros((L, d))
        var[:, act] = np.clip(np.diag(Z), 0.0, None).reshape(L, r)
    else:  # the full components basis^T w: each coordinate's L x L block of Z, rotated
        Zd = np.einsum("aibi->abi", np.asarray(Z, dtype=float).reshape(L, r, L, r))
        var = np.zeros((basis.shape[1], d))
        var[:, act] = np.clip(np.einsum("ae,be,abi->ei", basis, basis, Zd), 0.0, None)
        U = basis.T @ U
    return DenseRidgeTerms(
        Q=Q,
        M=M,
        V=V,
        psi_w=psi_w,
        penalty=penalty,
        weight_mean=np.sqrt(d) * U,
        weight_var=var,
        mean_response=response,
    )


#: the coarse covariances of :func:`coarse_covariance`, by the id of the covariance they
#: were made from (an entry leaves with its covariance) and then by ``(weights, tail)``
_COARSE: dict[int, dict[tuple, DenseCovariance | None]] = {}


def coarse_covariance(
    cov: DenseCovariance, weights: np.ndarray, tail: float, max_share: float
) -> DenseCovariance | None:
    """The covariances restricted to the leading axes of their weighted sum, in its
    eigenbasis: a cheaper ridge prior whose image differs from ``cov``'s smoothly.

    With ``Sigma = sum_k w_k Sigma_k = E diag(t) E^T`` on the active axes (``t``
    descending), the ``p`` leading axes are the fewest whose left-out eigenvalues sum to at
    most ``tail`` of ``tr Sigma``; the coarse covariances are ``E_p^T Sigma_k E_p`` on axes
    ``0 .. p - 1`` of the rotated coordinates (means ``mu_k^T E``), every other axis of
    zero variance (treated in closed form by :func:`dense_ridge_terms`).  The prior's
    ``Q_k, M_k, V_k`` are invariant under a rotation of the axes (``A``, ``C`` and ``m``
    rotate together), so only the truncation changes them, by a smooth function of the
    hats (the axes left out), not by rounding; the prior costs ``(p / r)^3`` of ``cov``'s.
    Its weights' statistics (``details``) are in the rotated coordinates.

    Made once for each ``cov``, ``weights`` and ``tail`` (an eigendecomposition and ``K``
    rotations, ``O(K d^3)``).  None where ``p > max_share r``: no cheaper prior.
    """
    key = (tuple(np.asarray(weights, dtype=float).tolist()), float(tail), float(max_share))
    cached = _COARSE.get(id(cov))
    if cached is None:
        cached = _COARSE[id(cov)] = {}
        weakref.finalize(cov, _COARSE.pop, id(cov), None)
    if key not in cached:
        cached[key] = _coarse_covariance(cov, np.asarray(weights, dtype=float), tail, max_share)
    return cached[key]


def _coarse_covariance(
    cov: DenseCovariance, weights: np.ndarray, tail: float, max_share: float
) -> DenseCovariance | None:
    """:func:`coarse_covariance`, made."""
    act = cov.active
    covs = cov.active_covariances  # (K, r, r)
    r = covs.shape[1]
    t, E = np.linalg.eigh(np.tensordot(weights, covs, axes=1))
    t, E = t[::-1], E[:, ::-1]
    left_out = np.cumsum(t[::-1])[::-1]  # left_out[p] = sum_{i >= p} t_i
    total = float(left_out[0])
    p = int(np.argmax(np.append(left_out, 0.0) <= tail * total))
    if p > max_share * r or p < 1:
        return None
    K, d = cov.means.shape
    Ep = E[:, :p]
    means = np.zeros((K, d))
    means[:, :r] = cov.means[:, act] @ E
    means[:, r:] = cov.means[:, ~act]
    coarse = np.zeros((K, d, d))
    coarse[:, :p, :p] = np.einsum("ia,kij,jb->kab", Ep, covs, Ep, optimize=True)
    return DenseCovariance(means, coarse)
