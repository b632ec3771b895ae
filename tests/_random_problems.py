"""Seeded random valid problems over every registered mixture model, loss and penalty (issue
31): the measuring instrument of the cold solve, shared by ``tests/test_cold.py`` and
``benchmarks/bench_cold.py``.

Each problem draws, in order: a mixture model of :data:`gaussmix.MIXTURE_MODELS`, a loss of
:data:`gaussmix.LOSSES`, the number of clusters ``K`` in 2..4 (2 for the sparse model), the
labels the loss takes (binary losses: one +-1 label per cluster; cross-entropy: one-hot;
the square loss either), a penalty of :data:`gaussmix.PENALTIES` among those with a prior
on the mixture's covariance structure (:data:`gaussmix.theory.prior.prior.PRIORS`: dense
covariances have ridge only), ``lam`` log-uniform in ``[1e-3, 10]`` and ``alpha``
log-uniform in ``[0.05, 8]``.  The model's parameters:

* isotropic: ``Delta`` shared or per cluster in ``[0.2, 2]``, a named family of means;
* block: two or three blocks (Dirichlet fractions), variances in ``[0.1, 3]``;
* sparse: ``sparsity`` in ``[0.1, 1]``, ``delta1``, ``delta2`` in ``[0.1, 2]``;
* spectral: 4 to 12 directions, eigenvalues in ``[0.1, 3]``, Gaussian mean components;
* dense: ``d`` in 4..10, Wishart covariances of unit mean variance, Gaussian means.

Priors are balanced or a random point of the simplex bounded away from its faces.  The
stream is a function of the seed alone (one ``numpy`` generator, a fixed order of draws),
so that the problem ``i`` of seed ``s`` is the same on every machine.
"""

from __future__ import annotations

import signal
import time
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import gaussmix as gm
from gaussmix.theory.numerics.quadrature import SobolRQMC
from gaussmix.theory.prior.prior import PRIORS

__all__ = [
    "RandomProblem",
    "Outcome",
    "random_problems",
    "quick_subset",
    "ci_subset",
    "long_only",
    "run",
    "warm_up",
    "LAM_RANGE",
    "ALPHA_RANGE",
]

#: the ranges of the issue: ``lam`` and ``alpha`` log-uniform in them
LAM_RANGE = (1e-3, 10.0)
ALPHA_RANGE = (0.05, 8.0)


@dataclass(frozen=True)
class RandomProblem:
    """One drawn problem: :meth:`solve` solves it cold with the default options."""

    index: int
    model: str
    n_clusters: int
    loss: str
    penalty: str
    l1_ratio: float | None
    lam: float
    alpha: float
    mixture: gm.Mixture = field(repr=False)
    detail: str = ""

    def kwargs(self) -> dict[str, Any]:
        """The arguments of :func:`gaussmix.solve`."""
        return dict(
            mixture=self.mixture,
            loss=self.loss,
            penalty=self.penalty,
            l1_ratio=self.l1_ratio,
            lam=self.lam,
            alpha=self.alpha,
        )

    def solve(self, **options: Any) -> gm.FixedPointResult:
        """The cold solve (``gm.solve``, default options unless given)."""
        return gm.solve(**self.kwargs(), **options)

    def describe(self) -> str:
        """One line naming the problem (enough to rebuild it with its seed and index)."""
        pen = self.penalty if self.l1_ratio is None else f"{self.penalty}({self.l1_ratio:.3g})"
        return (
            f"#{self.index} {self.model}[{self.detail}] K={self.n_clusters} {self.loss} {pen} "
            f"lam={self.lam:.4g} alpha={self.alpha:.4g}"
        )


def _log_uniform(rng: np.random.Generator, low: float, high: float) -> float:
    return float(np.exp(rng.uniform(np.log(low), np.log(high))))


def _label_kind(loss: str) -> str | None:
    """The labels a loss requires (``'binary'``, ``'onehot'``), None if it takes any."""
    kind = gm.LOSSES.get(loss).labels
    return None if kind == "any" else kind


def _rho(rng: np.random.Generator, k: int) -> np.ndarray | None:
    """Balanced priors, or random ones of at least ``0.4 / k`` each."""
    if rng.random() < 0.5:
        return None
    w = 0.4 + 1.2 * rng.random(k)
    return w / w.sum()


def _labels(rng: np.random.Generator, loss: str, k: int) -> Any:
    """Labels the loss takes: +-1 per cluster (both signs present) or one-hot."""
    binary = _label_kind(loss)
    if binary is None:  # the square loss takes either
        binary = "binary" if rng.random() < 0.5 else "onehot"
    if binary == "onehot":
        return "onehot"
    if k == 2:
        return "binary"
    signs = np.ones(k)
    signs[rng.permutation(k)[: int(rng.integers(1, k))]] = -1.0
    return signs[:, None]


def _mixture(rng: np.random.Generator, model: str, k: int, labels: Any) -> tuple[Any, str]:
    """The mixture of ``model`` with random parameters, and a short description of them."""
    rho = _rho(rng, k)
    if model == "isotropic":
        means = str(rng.choice(["simplex", "gaussian"] + (["antipodal"] if k == 2 else [])))
        if rng.random() < 0.5:
            delta: Any = _log_uniform(rng, 0.2, 2.0)
            text = f"delta={delta:.3g},{means}"
        else:
            delta = np.array([_log_uniform(rng, 0.2, 2.0) for _ in range(k)])
            text = f"delta={np.round(delta, 3).tolist()},{means}"
        mix = gm.Mixture.isotropic(delta, means, n_clusters=k, rho=rho, labels=labels)
        return mix, text
    if model == "block":
        nb = int(rng.integers(2, 4))
        fractions = rng.dirichlet(np.full(nb, 2.0))
        fractions = fractions / fractions.sum()
        deltas = np.array([_log_uniform(rng, 0.1, 3.0) for _ in range(nb)])
        means = "antipodal" if k == 2 else str(rng.choice(["simplex", "gaussian"]))
        mix = gm.Mixture.block(
            fractions, deltas, means=means, rho=rho, labels=labels, n_clusters=k
        )
        text = f"fractions={np.round(fractions, 3).tolist()},deltas={np.round(deltas, 3).tolist()}"
        return mix, text
    if model == "sparse":
        sp = float(rng.uniform(0.1, 1.0))
        d1, d2 = _log_uniform(rng, 0.1, 2.0), _log_uniform(rng, 0.1, 2.0)
        mix = gm.Mixture.sparse(sp, d1, d2, rho=rho)
        return mix, f"sparsity={sp:.3g},delta1={d1:.3g},delta2={d2:.3g}"
    if model == "spectral":
        d = int(rng.integers(4, 13))
        sigma = np.exp(rng.uniform(np.log(0.1), np.log(3.0), size=(d, k)))
        mu = rng.standard_normal((d, k))
        mix = gm.Mixture.spectral(sigma, mu, rho=rho, labels=labels)
        return mix, f"d={d}"
    if model == "dense":
        d = int(rng.integers(4, 11))
        means = rng.standard_normal((k, d))
        covs = np.empty((k, d, d))
        for c in range(k):
            A = rng.standard_normal((d, 2 * d))
            S = A @ A.T / (2 * d)
            covs[c] = S / (np.trace(S) / d)
        mix = gm.Mixture.dense(means, covs, rho=rho, labels=labels)
        return mix, f"d={d}"
    raise ValueError(f"no generator for the mixture model {model!r}: add one here")


def random_problems(n: int, seed: int = 0) -> list[RandomProblem]:
    """The first ``n`` problems of the stream of ``seed``."""
    rng = np.random.default_rng(seed)
    models = gm.MIXTURE_MODELS.names()
    losses = gm.LOSSES.names()
    out = []
    for i in range(n):
        model = str(rng.choice(models))
        binary_model = gm.MIXTURE_MODELS.get(model).binary
        # (a model of +-1 labels, the sparse one, takes the losses of binary labels only)
        allowed = [n for n in losses if not (binary_model and _label_kind(n) == "onehot")]
        loss = str(rng.choice(allowed))
        k = 2 if binary_model else int(rng.integers(2, 5))
        labels = _labels(rng, loss, k) if not binary_model else "binary"
        mixture, detail = _mixture(rng, model, k, labels)
        structure = mixture.covariance.structure
        penalties = [p for p in gm.PENALTIES.names() if (gm.PENALTIES.get(p), structure) in PRIORS]
        penalty = str(rng.choice(penalties))
        l1_ratio = float(rng.uniform(0.1, 0.9)) if penalty == "elastic-net" else None
        lam = _log_uniform(rng, *LAM_RANGE)
        alpha = _log_uniform(rng, *ALPHA_RANGE)
        out.append(
            RandomProblem(i, model, k, loss, penalty, l1_ratio, lam, alpha, mixture, detail)
        )
    return out


def multi_output_lasso(p: RandomProblem) -> bool:
    """Whether ``p`` has a lasso / elastic-net prior of three or more outputs (one-hot labels
    of K >= 3), whose integrals across lines in ``L' - 1`` dimensions cost seconds to
    minutes a solve."""
    return p.penalty != "l2" and p.mixture.labels.dim >= 3


def long_only(p: RandomProblem) -> bool:
    """Whether ``p`` is a multi-output lasso (:func:`multi_output_lasso`) of four outputs
    with the cross-entropy loss: its channel by quadrature in three dimensions (the sharp
    regime's randomised rule) and its prior by quadrature across lines in two cost 0.3 to
    25 s of CPU a solve, median 6.3 s (31 of the first 1,000 problems of seed 0, 222 s in
    all, measured on 2026-12-06: too long for the test suite, ``tests/test_cold.py``'s
    ``-m long`` runs them)."""
    return multi_output_lasso(p) and p.mixture.labels.dim >= 4 and p.loss == "cross-entropy"


def ci_subset(n: int, seed: int = 0) -> list[RandomProblem]:
    """The first ``n`` problems of ``seed`` but the :func:`long_only` ones: the subset the
    test suite runs (every mixture model, loss and penalty, the multi-output lasso of three
    outputs with either loss and of four with the square loss)."""
    return [p for p in random_problems(n, seed) if not long_only(p)]


def quick_subset(n: int, seed: int = 0, size: int = 200) -> list[RandomProblem]:
    """The first ``size`` of the first ``n`` problems of ``seed`` without a multi-output
    lasso prior (:func:`multi_output_lasso`)."""
    return [p for p in random_problems(n, seed) if not multi_output_lasso(p)][:size]


@dataclass(frozen=True)
class Outcome:
    """The cold solve of one problem: its result's summary, or the error it raised."""

    problem: RandomProblem
    success: bool
    seconds: float
    cpu_seconds: float
    n_iter: int
    error: str = ""
    fallback: str = ""
    nonzero_fraction: float = float("nan")
    #: the largest ``|Q_c|`` of the (last) iterate, NaN without one
    q_max: float = float("nan")

    @property
    def zero_regime(self) -> bool:
        """A failure of a sparse penalty past the threshold where its estimator is exactly
        zero (issue 31's first failure kind, not the cold solve's): NaN order parameters,
        or a last iterate with ``max |Q_c| < 1e-20`` (``W* = 0``)."""
        return (
            not self.success
            and self.problem.penalty != "l2"
            and ("NaN or infinite order parameters" in self.error or self.q_max < 1e-20)
        )

    def describe(self) -> str:
        how = f", {self.fallback}" if self.fallback else ""
        return (
            f"{self.problem.describe()}: {self.seconds:.2f} s ({self.cpu_seconds:.2f} s CPU), "
            f"{self.n_iter} iterations{how}"
            + ("" if self.success else f" FAILED {self.error[:300]}")
        )


def warm_up() -> float:
    """Load what the first solve of each kind would otherwise pay for inside its timing (the
    lazily imported modules, the compiled kernels read from their cache): two iterations of
    a binary problem of each loss and a penalty of each, and of a three-class cross-entropy
    with ridge and with a lasso (the multi-output lasso's kernels), without an estimate or
    a fallback, and of a four-class cross-entropy with the sharp regime's randomised rule
    (the kernel of three reduced outputs; the Sobol' sets, from ``scipy.stats``).  Returns
    the CPU seconds spent.

    Measured: the first problem of the multi-output lasso stream (#16 of seed 0, two
    iterations) took 8.1 s of CPU without it (imports and the compiled kernels' compilation
    in a fresh checkout), 0.01 s after it; the second (#17) 10.7 s and 0.45 s.  The first
    K = 4 cross-entropy problem in the sharp regime paid about 1 s of CPU (2.2 s profiled)
    for the import of ``scipy.stats`` alone."""
    c0 = time.process_time()
    quick = dict(max_iter=2, estimate_error=False, fallback=False, throw=False)
    binary = gm.Mixture.isotropic(1.0, "antipodal", labels="binary")
    three = gm.Mixture.isotropic(1.0, "simplex", n_clusters=3, labels="onehot")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for loss in gm.LOSSES.names():
            mix = three if _label_kind(loss) == "onehot" else binary
            for penalty in gm.PENALTIES.names():
                l1_ratio = 0.5 if penalty == "elastic-net" else None
                for m in {mix, three} if loss == "square" else {mix}:
                    gm.solve(
                        m, loss, lam=0.1, alpha=1.0, penalty=penalty, l1_ratio=l1_ratio, **quick
                    )
        four = gm.Mixture.isotropic(1.0, "simplex", n_clusters=4, labels="onehot")
        rule = SobolRQMC(3, 6, 2)
        gm.solve(four, "cross-entropy", lam=0.1, alpha=1.0, quadrature=rule, **quick)
    return time.process_time() - c0


class _Timeout(Exception):
    """A solve stopped after the timeout of :func:`run`."""


def _alarm(signum: int, frame: Any) -> None:
    raise _Timeout


def _caused_by_timeout(exc: BaseException | None) -> bool:
    """Whether ``exc`` is the alarm of :func:`run`, or raised from it."""
    while exc is not None:
        if isinstance(exc, _Timeout):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def run(problem: RandomProblem, timeout: float | None = None, **options: Any) -> Outcome:
    """Solve ``problem`` cold (``gm.solve``, default options unless given), timed; an error
    of the library (:class:`gaussmix.GaussmixError`: not converged, spurious) is an
    unsuccessful outcome, and so is a solve stopped after ``timeout`` seconds of this
    process's CPU time (``ITIMER_PROF``, by ``SIGPROF``: the main thread of a Unix process
    only; CPU time, so that the limit does not depend on the machine's load); any other
    exception propagates."""
    t0, c0 = time.perf_counter(), time.process_time()
    if timeout is not None:
        previous = signal.signal(signal.SIGPROF, _alarm)
        signal.setitimer(signal.ITIMER_PROF, timeout)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", gm.IntegrationWarning)
            try:
                res = problem.solve(**options)
            except gm.GaussmixError as exc:
                res, error = getattr(exc, "result", None), f"{type(exc).__name__}: {exc}"
            except (_Timeout, SystemError) as exc:
                # (the alarm raised inside a compiled kernel arrives as its SystemError)
                if not _caused_by_timeout(exc):
                    raise
                res, error = None, f"timeout: stopped after {timeout:g} s CPU"
            else:
                error = "" if res.success else f"not converged: {res.message}"
    finally:
        if timeout is not None:
            signal.setitimer(signal.ITIMER_PROF, 0)
            signal.signal(signal.SIGPROF, previous)
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    ok = res is not None and bool(res.success) and np.isfinite(res.test_error) and not error
    if res is not None and ok and not np.isfinite(res.train_loss):
        ok, error = False, "non-finite training loss"
    return Outcome(
        problem,
        ok,
        seconds,
        cpu,
        int(res.n_iter) if res is not None else -1,
        error,
        str((res.params or {}).get("fallback", "")) if res is not None else "",
        float(getattr(res, "nonzero_fraction", np.nan)) if res is not None else np.nan,
        float(np.max(np.abs(res.Q))) if res is not None and res.Q is not None else np.nan,
    )
