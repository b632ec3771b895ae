"""Small helpers shared by the tests."""

from __future__ import annotations

import numpy as np


def random_spd(rng: np.random.Generator, n: int, low: float = 0.05, high: float = 5.0):
    """A random symmetric positive-definite matrix with eigenvalues in [low, high]."""
    A = rng.standard_normal((n, n))
    U, _ = np.linalg.qr(A)
    ev = rng.uniform(low, high, size=n)
    return (U * ev) @ U.T
