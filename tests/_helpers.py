"""Small helpers shared by the tests."""

from __future__ import annotations

import numpy as np
from scipy import integrate


def random_spd(rng: np.random.Generator, n: int, low: float = 0.05, high: float = 5.0):
    """A random symmetric positive-definite matrix with eigenvalues in [low, high]."""
    A = rng.standard_normal((n, n))
    U, _ = np.linalg.qr(A)
    ev = rng.uniform(low, high, size=n)
    return (U * ev) @ U.T


def check_free_energy(res, *, lam: float, alpha: float, eps: float = 1e-5) -> float:
    """Check the RS free energy of a converged result: its value equals the minimal risk per
    dimension ``alpha eps_l + lam E[r]/d``, and it is stationary (central differences in
    every order parameter, symmetric matrices perturbed symmetrically).  Returns the largest
    finite-difference derivative."""
    from gaussmix.theory.solve.solver import effective_state, free_energy

    st = effective_state(res)
    names = ["Q", "M", "V", "b", "Qhat", "Mhat", "Vhat"]
    args = {k: st[k].copy() for k in names}

    def F(a):
        return free_energy(st["problem"], *(a[k] for k in names), rule=st["rule"])

    f0 = F(args)
    np.testing.assert_allclose(f0, res.free_energy, rtol=1e-10)
    np.testing.assert_allclose(f0, alpha * res.train_loss + lam * res.penalty_value, rtol=1e-7)
    worst = 0.0
    for k in names:
        arr = args[k]
        for idx in np.ndindex(arr.shape):
            if arr.ndim == 3 and idx[1] > idx[2]:
                continue
            plus = {n: v.copy() for n, v in args.items()}
            minus = {n: v.copy() for n, v in args.items()}
            for a, s in ((plus, eps), (minus, -eps)):
                a[k][idx] += s
                if arr.ndim == 3 and idx[1] != idx[2]:
                    a[k][idx[0], idx[2], idx[1]] += s
            worst = max(worst, abs(F(plus) - F(minus)) / (2 * eps))
    return worst


def check_within_3se(theory, sim, keys, *, floor: float = 1e-6) -> None:
    """Assert that every observable in ``keys`` of a theory result lies within 3 standard
    errors (plus ``floor``) of a simulation's mean over seeds; print the comparison."""
    lines, ok = [], True
    for key in keys:
        t = getattr(theory, key)
        m, se = sim.mean[key], sim.se[key]
        good = abs(t - m) <= 3 * se + floor
        ok &= good
        lines.append(
            f"{key}: theory {t:.5f}, simulation {m:.5f} +- {se:.5f} {'' if good else '<--'}"
        )
    print("\n".join(lines))
    assert ok, "\n".join(lines)


def load_benchmark(name: str):
    """The script ``benchmarks/NAME.py`` as a module (registered in ``sys.modules``: a
    dataclass of it looks its module up), with ``benchmarks/`` on the path for the modules
    it imports beside it (``_timing``, ``bench_curves``)."""
    import importlib.util
    import sys
    from pathlib import Path

    bench = Path(__file__).resolve().parents[1] / "benchmarks"
    if str(bench) not in sys.path:
        sys.path.insert(0, str(bench))
    spec = importlib.util.spec_from_file_location(name, bench / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def solved_on_randomised_rule(problem):
    """``problem`` (whose automatic channel rule must be randomised) solved to its fixed
    point on that rule, without the error estimate: ``(problem, options, secant history,
    map, the iteration's outcome)``, for the tests of the estimate's parts."""
    from gaussmix.theory.solve.fixed_point import start_state
    from gaussmix.theory.solve.options import SolverOptions
    from gaussmix.theory.solve.policy import SolveState, channel_rule, policy_for

    opts, history = SolverOptions(), {}
    rule = channel_rule(problem, None, opts.symmetry)
    assert rule.randomised
    x0 = start_state(problem, None)
    state = SolveState(policy_for(problem, opts, warm=True), [problem], opts, None, history, x0)
    T, out = state.run(rule, x0)
    assert out.converged
    return problem, opts, history, T, out


def policy_memory(problem, opts):
    """The Anderson memory the solver's policy declares for a solve of the single point
    ``problem`` with ``opts`` (``policy_for(problem, opts).memory``): what a test that calls
    the estimate's replicates directly passes, so that they mix as in the solver."""
    from gaussmix.theory.solve.policy import policy_for

    return policy_for(problem, opts).memory


def first_solve_memory(T, opts):
    """The Anderson memory of a curve's first stacked solve with the map ``T`` (the policy
    of its points, ``policy_for_points``, for a solve of ``T.rule`` from its start): what a
    test that calls ``converged_solve`` or ``iterated_solve`` directly passes."""
    from gaussmix.theory.solve.memory import Phase
    from gaussmix.theory.solve.policy import policy_for_points

    return policy_for_points(list(T.problems), opts).memory.of(Phase.SOLVE, T.rule)


def replicate_spread(problem, T, x, opts, history):
    """The randomised estimate's standard errors at the fixed point ``x`` of the map ``T``
    (``estimate_randomised``'s: :func:`standard_errors` of all the replicates' values,
    ``_replicate_values`` with the policy's Anderson memory) and the replicates'
    evaluations."""
    from gaussmix.theory.solve import refinement
    from gaussmix.theory.solve.estimate import standard_errors

    anderson = policy_memory(problem, opts)
    found = refinement._replicate_values(problem, T, x, opts, None, history, anderson=anderson)
    assert found is not None
    values, n_iter = found
    return standard_errors(values, T.rule.n_rep), n_iter


def dense_ten_class_mixture():
    """Ten classes fitted from seeded Gaussian data (``Mixture.from_data``; d = 24, 3000
    samples, unequal variances per direction): a mixture whose ridge prior is the dense
    one, for the tests of the ten-class error estimate."""
    import numpy as np

    import gaussmix as gm

    rng = np.random.default_rng(3)
    K, d, n = 10, 24, 3000
    means = rng.standard_normal((K, d))
    y = np.arange(n) % K
    X = means[y] + rng.standard_normal((n, d)) * (0.5 + rng.random(d))
    return gm.Mixture.from_data(X, y)


def soft(b, t):
    """The soft threshold ``sign(b) (|b| - t)_+``."""
    return np.sign(b) * np.maximum(np.abs(b) - t, 0.0)


def gauss_expect(f, m, s, t):
    """``E[f(B)]`` for ``B ~ N(m, s^2)`` by adaptive quadrature, split at the kinks +-t."""
    if s == 0:
        return float(f(m))

    def g(x):
        return f(x) * np.exp(-0.5 * ((x - m) / s) ** 2) / (s * np.sqrt(2 * np.pi))

    lo, hi = m - 40 * s, m + 40 * s
    pts = sorted({lo, hi, *(p for p in (-t, t) if lo < p < hi)})
    total = 0.0
    for a, b in zip(pts[:-1], pts[1:]):
        # full_output: QUADPACK's roundoff notice (asked for 1e-14, beyond what double
        # precision resolves on some pieces) is not a warning here; its error estimate is
        # checked instead, two decades below the comparisons' atol of 1e-11
        val, abserr, *_ = integrate.quad(g, a, b, epsabs=1e-14, epsrel=1e-13, limit=200,
                                         full_output=1)  # fmt: skip
        assert abserr < 1e-13 + 1e-12 * abs(val), (a, b, val, abserr)
        total += val
    return total
