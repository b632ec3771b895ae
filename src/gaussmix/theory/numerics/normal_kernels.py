"""Compiled standard normal distribution function and its inverse (numba scalars).

The engine's one compiled ``Phi`` (:func:`ndtr_scalar`) and ``Phi^{-1}``
(:func:`ndtri_scalar`), called from the compiled kernels (not inlined: the same run time,
and the bivariate normal's kernel compiles in 0.9 s instead of 3.1 s): the channel's bivariate
normal (:func:`~gaussmix.theory.numerics.kernels.bvnu`), the lasso prior's line moments
(:mod:`~gaussmix.theory.numerics.lasso_kernels`) and the randomised orthant's integrand
(:mod:`~gaussmix.theory.numerics.sov_kernels`).

:func:`ndtr_scalar` is cephes' ``ndtr``, scipy's ``scipy.special.ndtr``, its rational
functions written out: the same bits as scipy's on the whole line (``tests/
test_normal_kernels.py``), so a compiled kernel and the numpy paths that call scipy agree to
the bit.  Against the exact ``Phi`` of the double argument (200-bit reference) it is within
1 ulp above ``-1.4``, 6 ulp on ``[-1.4, 0]`` (``0.5 + 0.5 erf(x)`` near ``x = -1``) and
up to about ``a^2`` ulp below (the rounding of ``a / sqrt 2``, amplified by the tail's
slope, which every evaluation from a double ``a / sqrt 2`` shares); it is 0 below
``-37.7`` (values under ``6e-311``).  It replaced ``0.5 erfc(-a / sqrt 2)`` with numba's
``math.erfc`` (CPython's series and continued fraction), as accurate within a few ulp
(its tail error of the same order), up to 490 ulp from scipy's values, and 1.5-3
times slower (3.5 / 15 ns a call against 11 / 24 ns on ``[-1.4, 1.4]`` / ``[-8, 8]``).

:func:`ndtri_scalar` is Wichura's algorithm AS241 (PPND16, relative error about
``1e-16`` for ``1e-300 < p < 1``; scipy's ``ndtri`` is not available in numba), within
1.1e-15 relative of scipy's ``ndtri``.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

__all__ = ["ndtr_scalar", "ndtri_scalar"]

_SQRT1_2 = 0.70710678118654752440  # M_SQRT1_2


# cephes' ``ndtr`` (``ndtr.h`` of scipy's special functions): ``erf(x) = x T(x^2) / U(x^2)``
# below 1, ``erfc(x) = exp(-x^2) P(x) / Q(x)`` on ``[1, 8)``, ``exp(-x^2) R(x) / S(x)`` beyond
# (``U``, ``Q``, ``S`` monic), their coefficients written out in Horner's form below
#: cephes' ``MAXLOG``, ``log(DBL_MAX)``: ``exp(-x^2)`` underflows beyond
_MAXLOG = 7.09782712893383996843e2


@njit(cache=True, error_model="numpy", nogil=True)
def ndtr_scalar(a: float) -> float:  # pragma: no cover - compiled
    """Standard normal distribution function ``Phi(a)``: cephes' ``ndtr`` (scipy's bits,
    ``0.5 + 0.5 erf(a / sqrt 2)`` below ``|a| / sqrt 2 = 1``, ``erfc`` of the absolute value
    beyond: no cancellation in the lower tail), written out so that it compiles inline.
    NaN at NaN."""
    x = a * _SQRT1_2
    z = abs(x)
    if z < 1.0:
        t = x * x
        return 0.5 + 0.5 * (
            x
            * (
                (
                    ((9.604973739870516 * t + 90.02601972038427) * t + 2232.005345946843) * t
                    + 7003.325141128051
                )
                * t
                + 55592.30130103949
            )
            / (
                (
                    (((t + 33.56171416475031) * t + 521.3579497801527) * t + 4594.323829709801) * t
                    + 22629.000061389095
                )
                * t
                + 49267.39426086359
            )
        )
    if z * z > _MAXLOG:
        y = 0.0
    else:
        e = math.exp(-z * z)
        if z < 8.0:
            y = 0.5 * (
                (
                    e
                    * (
                        (
                            (
                                (
                                    (
                                        (
                                            (
                                                (2.461969814735305e-10 * z + 0.5641895648310689)
                                                * z
                                                + 7.463210564422699
                                            )
                                            * z
                                            + 48.63719709856814
                                        )
                                        * z
                                        + 196.5208329560771
                                    )
                                    * z
                                    + 526.4451949954773
                                )
                                * z
                                + 934.5285271719576
                            )
                            * z
                            + 1027.5518868951572
                        )
                        * z
                        + 557.5353353693994
                    )
                )
                / (
                    (
                        (
                            (
                                (
                                    (
                                        ((z + 13.228195115474499) * z + 86.70721408859897) * z
                                        + 354.9377788878199
                                    )
                                    * z
                                    + 975.7085017432055
                                )
                                * z
                                + 1823.9091668790973
                            )
                            * z
                            + 2246.3376081871097
                        )
                        * z
                        + 1656.6630919416134
                    )
                    * z
                    + 557.5353408177277
                )
            )
        else:
            y = 0.5 * (
                (
                    e
                    * (
                        (
                            (
                                (
                                    (0.5641895835477551 * z + 1.275366707599781) * z
                                    + 5.019050422511805
                                )
                                * z
                                + 6.160210979930536
                            )
                            * z
                            + 7.4097426995044895
                        )
                        * z
                        + 2.9788666537210022
                    )
                )
                / (
                    (
                        (
                            (
                                ((z + 2.2605286322011726) * z + 9.396035249380015) * z
                                + 12.048953980809666
                            )
                            * z
                            + 17.08144507475659
                        )
                        * z
                        + 9.608968090632859
                    )
                    * z
                    + 3.369076451000815
                )
            )
    if x > 0.0:
        return 1.0 - y
    return y


@njit(cache=True, error_model="numpy", nogil=True)
def ndtri_scalar(p: float) -> float:  # pragma: no cover - compiled
    """Inverse standard normal distribution function ``Phi^{-1}(p)``: Wichura's algorithm
    AS241 (Applied Statistics 37, 477-484, 1988), PPND16, relative error about ``1e-16``.
    ``-inf`` at 0, ``+inf`` at 1, NaN outside ``[0, 1]`` (as scipy's ``ndtri``)."""
    if not (p > 0.0 and p < 1.0):
        if p == 0.0:
            return -np.inf
        if p == 1.0:
            return np.inf
        return np.nan
    q = p - 0.5
    if abs(q) <= 0.425:
        r = 0.180625 - q * q
        num = (
            (
                (
                    (
                        (
                            (
                                (2.5090809287301226727e3 * r + 3.3430575583588128105e4) * r
                                + 6.7265770927008700853e4
                            )
                            * r
                            + 4.5921953931549871457e4
                        )
                        * r
                        + 1.3731693765509461125e4
                    )
                    * r
                    + 1.9715909503065514427e3
                )
                * r
                + 1.3314166789178437745e2
            )
            * r
            + 3.3871328727963666080e0
        ) * q
        den = (
            (
                (
                    (
                        (
                            (5.2264952788528545610e3 * r + 2.8729085735721942674e4) * r
                            + 3.9307895800092710610e4
                        )
                        * r
                        + 2.1213794301586595867e4
                    )
                    * r
                    + 5.3941960214247511077e3
                )
                * r
                + 6.8718700749205790830e2
            )
            * r
            + 4.2313330701600911252e1
        ) * r + 1.0
        return num / den
    r = p if q <= 0.0 else 1.0 - p
    r = math.sqrt(-math.log(r))
    if r <= 5.0:
        r = r - 1.6
        num = (
            (
                (
                    (
                        (
                            (7.74545014278341407640e-4 * r + 2.27238449892691845833e-2) * r
                            + 2.41780725177450611770e-1
                        )
                        * r
                        + 1.27045825245236838258e0
                    )
                    * r
                    + 3.64784832476320460504e0
                )
                * r
                + 5.76949722146069140550e0
            )
            * r
            + 4.63033784615654529590e0
        ) * r + 1.42343711074968357734e0
        den = (
            (
                (
                    (
                        (
                            (1.05075007164441684324e-9 * r + 5.47593808499534494600e-4) * r
                            + 1.51986665636164571966e-2
                        )
                        * r
                        + 1.48103976427480074590e-1
                    )
                    * r
                    + 6.89767334985100004550e-1
                )
                * r
                + 1.67638483018380384940e0
            )
            * r
            + 2.05319162663775882187e0
        ) * r + 1.0
    else:
        r = r - 5.0
        num = (
            (
                (
                    (
                        (
                            (2.01033439929228813265e-7 * r + 2.71155556874348757815e-5) * r
                            + 1.24266094738807843860e-3
                        )
                        * r
                        + 2.65321895265761230930e-2
                    )
                    * r
                    + 2.96560571828504891230e-1
                )
                * r
                + 1.78482653991729133580e0
            )
            * r
            + 5.46378491116411436990e0
        ) * r + 6.65790464350110377720e0
        den = (
            (
                (
                    (
                        (
                            (2.04426310338993978564e-15 * r + 1.42151175831644588870e-7) * r
                            + 1.84631831751005468180e-5
                        )
                        * r
                        + 7.86869131145613259100e-4
                    )
                    * r
                    + 1.48753612908506148525e-2
                )
                * r
                + 1.36929880922735805310e-1
            )
            * r
            + 5.99832206555887937690e-1
        ) * r + 1.0
    x = num / den
    if q < 0.0:
        return -x
    return x
