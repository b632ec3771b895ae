"""The numerical tolerances of the theory layer, one named constant each.

Every threshold that decides when an iteration stops, when a quantity counts as zero or
when a result earns a warning is defined here once, with what it bounds and why it has
that value.  The solver, the channel, the losses' proximal maps and the quadrature rules
import these names; no literal tolerance is repeated elsewhere.

Grouped by where they act:

* proximal map (:meth:`gaussmix.theory.channel.losses.Loss.prox` and the compiled channel kernels);
* fixed-point iteration (:func:`gaussmix.theory.api.api.solve`): defaults of ``tol`` and
  ``quad_tol``, the validity test of a state, the safeguards of Anderson mixing;
* integration error: when the estimate earns an
  :class:`~gaussmix.core.exceptions.IntegrationWarning`;
* small linear algebra and quadrature rules.
"""

from __future__ import annotations

from typing import Any

from gaussmix.core.validation import check_real

__all__ = [
    "PROX_TOL",
    "PROX_MAX_ITER",
    "FIXED_POINT_TOL",
    "MAX_FIXED_POINT_TOL",
    "QUAD_TOL",
    "REFINED_TOL_FACTOR",
    "REFINED_TOL_FLOOR",
    "REFINED_EXTRA_ITER",
    "SINGLE_PHASE_MIN_N",
    "SINGLE_PHASE_TOL",
    "SINGLE_PHASE_MAX_ITER",
    "COARSE_AXES_TAIL",
    "COARSE_AXES_MAX_SHARE",
    "COARSE_AXES_START_TOL",
    "COARSE_AXES_GAIN",
    "COARSE_AXES_MAX_CORRECTIONS",
    "COARSE_AXES_SINGLE_TOL",
    "PSD_RTOL",
    "BIAS_RIDGE",
    "MEAN_STEP_MAX",
    "DEGENERATE_BIAS_STEP",
    "SMALL_LAM_HINT",
    "ANDERSON_RIDGE",
    "ANDERSON_RIDGE_FLOOR",
    "DIVERGENCE_FACTOR",
    "MIN_RESTART_DAMPING",
    "MIN_STEP_FRACTION",
    "MIN_SHORTENED_EXTRAPOLATION",
    "LOG_CHART_MIN_EIG",
    "LOG_CHART_MAX_LAM",
    "HOMOTOPY_STARTS",
    "HOMOTOPY_PATH_SOLVES",
    "HOMOTOPY_STEP",
    "HOMOTOPY_MIN_STEP",
    "HOMOTOPY_MAX_SOLVES",
    "HOMOTOPY_STEP_ITER",
    "ALPHA_HOMOTOPY_STARTS",
    "ALPHA_HOMOTOPY_STEP",
    "ALPHA_HOMOTOPY_MIN_STEP",
    "ALPHA_HOMOTOPY_MAX_SOLVES",
    "ALPHA_HOMOTOPY_STEP_ITER",
    "ALPHA_HOMOTOPY_DAMPING",
    "STALL_WINDOW",
    "RANDOMISED_MIXING_MEMORY",
    "STALL_GAIN",
    "INTEGRATION_WARNING_FLOOR",
    "INTEGRATION_WARNING_FACTOR",
    "integration_warning_threshold",
    "refined_tol",
    "check_tol",
    "SQRTM_2X2_DET_RTOL",
    "QUADRATURE_PRUNE",
    "XI_MAX",
    "TRAIN_QMC_TOL",
    "TRAIN_ERROR_TARGET",
    "TRAIN_CONTROL_ORTHANT_TOL",
    "SMOOTH_Q_MAX",
    "SPREAD_ORTHANT_TOL",
    "REPLICATE_SHIFT_RTOL",
    "SECANT_GAIN_RCOND",
    "SINGLE_REPLICATE_MIN_SHIFT",
    "HALF_REPLICATES_CONFIDENCE",
    "ISOTROPIC_METRIC_RTOL",
    "METRIC_NEG_RTOL",
    "METRIC_EIG_FLOOR",
    "WHITENED_METRIC_RCOND",
    "WHITENED_METRIC_FLOOR",
]

# --------------------------------------------------------------------------- proximal map
#: Stationarity tolerance of every proximal solve: Newton stops at a node when
#: ``max |h - omega + V grad loss(h)| <= PROX_TOL (1 + max |omega| + max |h|) (1 + ||V H||)``
#: (:func:`gaussmix.theory.channel.losses.prox_threshold`): about 450 ulps of the residual's
#: rounding
#: floor (one ulp of ``h`` moves the residual by ``I + V H``), so Newton reaches it, and the
#: proximal point is accurate to a relative ``PROX_TOL``.  It must not grow with the metric
#: alone: the prior turns the error ``|residual| / |V|`` of ``f = V^{-1}(h - omega)`` into an
#: error ``~ |residual|`` of the order parameters; scaled by ``|V|`` (before issue 17) it let
#: the weights collapse at ``lam = 1e-14``.
PROX_TOL = 1e-13
#: Newton steps allowed per proximal solve before a node is reported as failed (typically 3-8
#: are needed from a warm start; bisection safeguards can take a few tens).  At very small
#: ``lam`` (``|V| ~ 1e3-1e5``) a far-tail node of the cross-entropy starts hundreds of units
#: from its proximal point, and damped Newton zigzags across a ridge of the nearly
#: piecewise-linear softmax loss, advancing O(1) per step (measured: ~400 steps at K = 3,
#: lam = 1e-6); such nodes are rare, so a generous cap costs little.
PROX_MAX_ITER = 2000

# --------------------------------------------------------------------------- fixed point
#: Default ``tol`` of the fixed-point iteration: converged when
#: ``max_i |T(x)_i - x_i| / s_i < tol`` over every order parameter, ``s_i = max(|x_i|, u_i)``
#: with ``u_i`` the size of the component's block capped at 1
#: (:func:`gaussmix.theory.solve.state.residual_scale`).  The errors of
#: Theorem 2 are smooth functions of the state, so they inherit an error of that order: far
#: below any visible difference on a learning curve or against a simulation.
FIXED_POINT_TOL = 1e-8
#: Largest ``tol`` a solve accepts.  ``tol`` bounds the scaled change of every order
#: parameter, and the errors of Theorem 2 (probabilities) inherit an error of that order:
#: from 1e-2 on they are not accurate to one percent, and the integration-error warning
#: (threshold ``100 tol``) could no longer fire, as no estimate of a probability's error
#: exceeds 1.  Issue 17: ``--tol 1`` was accepted silently.
MAX_FIXED_POINT_TOL = 1e-2
#: default cap on fixed-point iterations per solve (Anderson converges in ~6-30 iterations
#: on every problem of the test suite; the cap only stops a diverging or cycling iteration)
FIXED_POINT_MAX_ITER = 3000
#: Default ``quad_tol``: with ``auto_refine`` the channel rule is refined while the estimated
#: integration error of the test error or the training loss exceeds it.  One order of
#: magnitude above ``FIXED_POINT_TOL``: below it, the iteration error (not the quadrature)
#: dominates the change between two rules, and refining further cannot reduce the estimate.
QUAD_TOL = 1e-7
#: The refined rule of an error estimate iterates to ``REFINED_TOL_FACTOR`` times ``tol``
#: (:func:`refined_tol`): the change of the observables under refinement then also holds the
#: error of stopping the coarser rule's iteration at ``tol`` (at K = 3 cross-entropy,
#: ``lam = 1e-3``: 1.5e-9 in the training error where the integration changed it by 1e-12).
REFINED_TOL_FACTOR = 1e-2
#: ... but not below this (the map's rounding floor: 1e-15 did not converge there).
REFINED_TOL_FLOOR = 1e-12
#: The most evaluations the refined rule's iteration takes beyond ``tol`` (4 at the point
#: above); where it does not reach :func:`refined_tol` in these the state at ``tol`` stands.
REFINED_EXTRA_ITER = 20
#: The re-solves of an error estimate (a finer channel rule, the tighter tolerance, a finer
#: rule of the prior) mix with this many times the solve's Anderson memory
#: (:func:`gaussmix.theory.solve.estimate.resolve_memory`).  They start at a fixed point
#: moved by a small change of the map, where the iteration is in its linear regime and the
#: mixing is a restarted Krylov method (GMRES(m) on ``(I - J) dx = T(x) - x``): a longer
#: memory spans more of the Jacobian's slow directions (K = 3 cross-entropy: 32 order
#: parameters, 6 pairs).  Measured on 12 of the slowest K = 3 lasso points of
#: ``benchmarks/bench_lasso_k3.py`` (seeds 0, 1): their re-solves took 226 evaluations with
#: 6 pairs, 163 with 12, 162 with 24.
RESOLVE_ANDERSON_FACTOR = 2
#: A fixed point whose prior runs on an ``n x n`` matrix with ``n >= SINGLE_PHASE_MIN_N``
#: (the dense ridge prior, ``n = L r``) starts in single precision
#: (:func:`gaussmix.theory.solve.batch_solve.run_points`): there the ``O(n^3)`` prior is most
#: of an iteration, and float32 LAPACK takes about half its time (d = 196, n = 1692: 0.29 s
#: of CPU against 0.73 s; d = 784, n = 6471: 14 s against 29 s).
SINGLE_PHASE_MIN_N = 1500
#: The single-precision phase stops at this residual and the iteration goes on in double
#: precision to ``tol``: the float32 map is within ~1e-6 of the double map (measured at
#: MNIST's size, d = 196 and 784), so its own iteration stalls near there; one decade above.
SINGLE_PHASE_TOL = 1e-5
#: ... or after this many evaluations (where its rounding floor is above
#: ``SINGLE_PHASE_TOL``: an ill-conditioned prior matrix); the double phase goes on from there.
SINGLE_PHASE_MAX_ITER = 40
#: The first phase of a large dense ridge fixed point runs on the leading axes of the
#: covariances' weighted sum (:mod:`gaussmix.theory.solve.coarse_axes`): those whose
#: left-out eigenvalues are at most this share of its trace (MNIST ten classes: 352 of 717
#: axes, the prior at 0.12 of its cost; pooled 2 x 2, 102 of 188).  Measured on the pooled
#: problem at alpha = 8 (``lam = 0.1``): each defect correction divides the double map's
#: residual by about 1e3 (1.2 -> 1.8e-3 -> 1.4e-6 -> 1.6e-9); with 3e-2 of the trace left
#: out by 1e2 to 4e2, with 3e-3 by 1e3 to 2e4.
COARSE_AXES_TAIL = 1e-2
#: ... where those axes are at most this share of the active ones (else the coarse prior
#: costs more than half the prior's: no coarse phase)
COARSE_AXES_MAX_SHARE = 0.8
#: The coarse phase's float32 start stops at this residual: the coarse fixed point is
#: within the axes left out of the fixed point (1e-2 to 1, scaled; MNIST's first full
#: residuals 1.9e-2 to 2.9e-2 at d = 784 and 196), so a correction is worth its evaluation
#: of the full prior from here, and the start's iterations further would converge to the
#: coarse fixed point, not to the full one (MNIST pooled 2 x 2, five alphas: 1e-3 -> 1e-2
#: took the float32 coarse evaluations from 52 to 48, 1e-2 -> 2e-2 to 47, the full
#: residual where the first correction starts the same, 2.2e-2 and 2.3e-2 from coarse
#: residuals of 1.4e-2 and 1.3e-2 as from the next iterates' 6.1e-4 and 1.7e-3; the later
#: evaluations and the full ones the same)
COARSE_AXES_START_TOL = 2e-2
#: The factor by which a defect correction of the coarse phase is expected to divide the
#: residual (about 1e-3 measured at the tail above: 2e-2 -> 5e-6 -> 1e-9 on the pooled
#: MNIST curve): its corrected map is iterated to a tenth of that (the correction's own
#: error left below its gain), and the phase stops after the correction from a residual of
#: at most ``tol`` over this factor (its fixed point then expected within ``tol``).
COARSE_AXES_GAIN = 1e-3
#: ... or after this many corrections (each one evaluation of the full prior)
COARSE_AXES_MAX_CORRECTIONS = 6
#: The first correction's run (its difference that of the full and coarse priors in
#: float32) iterates the float32 coarse map to its target or to this residual, whichever is
#: larger, and only below it goes on in double: the float32 maps' rounding, scaled, at the
#: fixed point (MNIST ten classes pooled 2 x 2, alpha = 8): full 4.3e-7, coarse 2.9e-7, its
#: change between nearby states 1.4e-7 to 2.9e-7 (the corrected map's noise), a decade
#: below the first target (``COARSE_AXES_GAIN`` times the first residual, ~2e-2, over 10).
COARSE_AXES_SINGLE_TOL = 1e-6
#: Relative tolerance of the validity test of a state: ``Q_c`` counts as positive
#: semi-definite when its smallest eigenvalue is ``>= -PSD_RTOL max(1, max |eig Q|)``.
#: Rounding of a singular ``Q_c`` (the cross-entropy gauge ``Q_c 1 = 0``) stays far inside it;
#: a genuinely indefinite extrapolation (docs/design.md pitfall 5) is far outside.
PSD_RTOL = 1e-9
#: Ridge ``BIAS_RIDGE max |sum_c Vhat_c|`` added to the Newton step of the bias condition
#: (``sum_c Vhat_c`` is singular where a class has no curvature, e.g. a hinge loss with every
#: point beyond the margin; ``BIAS_RIDGE`` itself where it vanishes): relative to the matrix,
#: so it changes a regular step by ~1e-12 relative, far below ``tol``.  Relative at every
#: scale: the hats are ``O(lam)`` at small ``lam``, and an absolute floor (``max(1, ...)``
#: before issue 17) turned the Newton step into a step ``~ 1e12 lam`` times too short, which
#: froze the bias (at lam = 1e-14 a bias condition violated by 100% passed for converged).
BIAS_RIDGE = 1e-12
#: Largest change ``max_c |dM_c + db|`` of the logits' means that the mean-field Newton step
#: of the map (:func:`~gaussmix.theory.solve.bias.mean_bias_step`) takes; a longer step is
#: shortened to it.  The step linearises the channel in ``omega``, whose curvature changes
#: over an O(1) change of the logits (softmax, logistic); from a start in saturation
#: (``Vhat ~ 1e-12``) the full step was ``~ 1e31`` (measured: a binary logistic point on
#: dense covariances collapsed).  A shortened step has the same fixed points (the module's
#: docstring of :mod:`~gaussmix.theory.solve.fixed_point`); near one the step is far shorter.
MEAN_STEP_MAX = 1.0
#: A converged state must satisfy the bias condition ``sum_c Mhat_c = 0`` relative to its
#: curvature ``sum_c Vhat_c``: its unregularised Newton step ``|sum Mhat| / (|sum Vhat|
#: max(1, |b|))`` is below ``tol`` at a fixed point of an accurate channel.  A state where it
#: exceeds ``max(DEGENERATE_BIAS_STEP, 100 tol)`` is reported degenerate: the channel's
#: moments have underflowed (the weights collapsed, the predictor is constant), and the
#: condition holds only in absolute terms (issue 17: lam = 1e-14 gave a converged test error
#: of 0.5 with ``Q ~ 1e-103`` and a step of 1/149).
DEGENERATE_BIAS_STEP = 1e-3
#: Below this ``lam`` the message of a failed solve points to the max-margin solver
#: (``gaussmix.max_margin``, the limit ``lam -> 0+`` for separable data), the way out when
#: the fixed point is beyond reach (e.g. three-class cross-entropy at lam = 1e-10, where the
#: proximal solves of far-tail nodes exhaust ``PROX_MAX_ITER``).
SMALL_LAM_HINT = 1e-6
#: Relative Tikhonov term of Anderson's least-squares problem: the normal matrix ``A = dR^T dR``
#: gets ``(ANDERSON_RIDGE tr(A) / m + ANDERSON_RIDGE_FLOOR) I``.  The safeguard of jaxopt's
#: ``AndersonAcceleration`` (its ``ridge``): nearly collinear secant pairs, common close to
#: convergence, would otherwise make the mixing coefficients explode.
ANDERSON_RIDGE = 1e-10
#: Absolute floor of the Anderson ridge (keeps ``A`` invertible when every pair is zero).
ANDERSON_RIDGE_FLOOR = 1e-300
#: An extrapolated step whose residual exceeds ``DIVERGENCE_FACTOR`` times the best one so far
#: has diverged: the secant history is dropped and the damping halved.
DIVERGENCE_FACTOR = 1e4
#: Smallest damping a divergence restart may leave (halving stops there).
MIN_RESTART_DAMPING = 0.05
#: A damped step that leaves the cone of valid overlaps is halved down to this fraction of
#: itself before it is taken anyway (the validity test of the next step then reports it).
MIN_STEP_FRACTION = 1e-6
#: A block of a stacked state whose Anderson extrapolation leaves the cone of valid overlaps
#: tries it shortened towards its damped step, halving the fraction kept down to this one
#: before it takes the damped step and drops its pairs
#: (``gaussmix.theory.solve.stacked_step.per_block``): an extrapolation that must be cut
#: below an eighth of its length to enter the cone is a secant model that no longer
#: describes the block.  Measured on the square loss's sampled curves of
#: ``bench_square_k.py`` (seeds 0 and 1, K = 3-5): down to ``2**-10`` a K = 4 curve at
#: ``lam = 1.5e-4`` kept stale pairs and did not converge stacked (6 s, point by point);
#: at 1/8 every curve measured is at most main's time.
MIN_SHORTENED_EXTRAPOLATION = 0.125
#: The logarithmic chart of the fixed-point iteration (``gaussmix.theory.solve.state.LogChart``)
#: needs positive-definite overlaps: a state whose ``Q_c`` or ``V_c`` has an eigenvalue at or
#: below ``LOG_CHART_MIN_EIG`` times its largest is mixed in the state itself (the logarithm
#: of a near-singular matrix is dominated by the rounding of its small eigenvalue).
LOG_CHART_MIN_EIG = 1e-10
#: The logarithmic chart is used below this ``lam`` only: it is for the large overlaps of
#: small ``lam`` (K = 3, lam = 1e-4: 35 iterations instead of 149); at large ``lam`` the
#: overlaps are small (``Q ~ 1e-6`` at lam = 1e3), the iteration takes 5-12 steps in either
#: coordinates, and the state's own coordinates keep the iteration error of the errors at
#: the level the integration-error estimate (a difference of two solves) relies on
#: (measured at K = 3, alpha = 0.5, lam = 1e3, tol = 1e-11: 1.9e-12 without the chart,
#: 4.9e-9 with it).
LOG_CHART_MAX_LAM = 0.1

#: The cold solve's fallback (``SolverOptions.fallback``, a homotopy in ``lam``) starts at
#: ``lam`` times the first of these factors whose point converges from the cold start:
#: above the problem's ``lam`` first, where the fixed point of a larger penalty is close to
#: the cold start, then below (the hinge loss with unbalanced classes at ``lam >= 1``,
#: whose bias tends to a kink of the loss as the penalty grows: issue 31's random set, a
#: K = 3 hinge point at lam = 1 fails cold and converges at lam = 0.5)
HOMOTOPY_STARTS = (100.0, 1e4, 0.1, 0.01)
#: The solves of one path from its starting point (the start's own excluded) before the
#: next starting factor is tried.
HOMOTOPY_PATH_SOLVES = 20
#: The first step changes ``lam`` by this factor; a step that converges grows the
#: next one by half (up to this factor), one that fails is halved in ``log lam`` and tried
#: again from the last point.
HOMOTOPY_STEP = 10.0
#: A path whose step has been halved below this factor of ``lam`` is given up (it has met
#: a point it cannot pass: issue 31's #533, the hinge with an elastic net, from above
#: stalls at the ``lam`` where its weights vanish, 3.593 -> 3.600 failing).
HOMOTOPY_MIN_STEP = 1.01
#: The homotopy gives up after this many solves (the starting points included).
HOMOTOPY_MAX_SOLVES = 40
#: The iteration budget of each intermediate step (a step that needs more is too long: it
#: is halved), except the last, the problem's own point, which has ``max_iter``.
HOMOTOPY_STEP_ITER = 300
#: The homotopy in ``alpha`` (:class:`~gaussmix.theory.solve.homotopy.AlphaHomotopy`, the
#: cold solve's fallback where the weights the loss leaves unbounded stopped it) starts
#: from ``alpha`` times the first of these factors whose point converges from the cold
#: start: more samples move the estimator away from the zero estimator, where the hinge
#: has no curvature (issue 31's random grid 3, hinge + lasso at lam = 9.75: every alpha
#: below 3.6 fails cold at its first evaluation, alpha = 6.2 converges in 143).
ALPHA_HOMOTOPY_STARTS = (2.0, 4.0, 8.0, 16.0, 32.0)
#: The longest step of the homotopy in ``alpha``, a factor (the first step's too); a step
#: that converges grows the next by half, one that fails is halved in ``log alpha``.
ALPHA_HOMOTOPY_STEP = 2.0
#: A path in ``alpha`` whose step is halved below this factor is given up.
ALPHA_HOMOTOPY_MIN_STEP = 1.001
#: The homotopy in ``alpha`` gives up after this many solves (its starts included).
ALPHA_HOMOTOPY_MAX_SOLVES = 60
#: The iteration budget of each solve of the homotopy in ``alpha`` but its last (the
#: problem's own point, which has ``max_iter``): a step that needs more is halved.
ALPHA_HOMOTOPY_STEP_ITER = 100
#: The mixing parameter of the homotopy in ``alpha``'s steps (in
#: :class:`~gaussmix.theory.solve.state.LogChart` coordinates).  Near the zero estimator of
#: the hinge with a lasso the map is stiff: the hinge's curvature ``Vhat`` is the density
#: of the margins at the kink, ``~ exp(-(1 - M)^2 / (2 Q))``, the prior's ``Q ~ 1 / Vhat^2``,
#: so the map's derivative in ``log Q`` is about ``-(1 - M)^2 / Q`` (-90 at random grid 3's
#: alpha = 0.39, Q = 0.011): undamped steps overshoot into the underflow of ``Vhat``
#: (``UnboundedWeightsError``).  Measured on that grid's path from alpha = 6.2 to 0.39:
#: 15 solves and 518 evaluations at 0.03, 28 and 1076 at 0.1, 21 and 836 at 0.01; in the
#: state's own coordinates (no chart) at any damping, 565 solves or more.
ALPHA_HOMOTOPY_DAMPING = 0.03
#: A cold solve that has a fallback gives up early where its iteration stalls: the smallest
#: step ``max |T(x) - x| / max(1, |x|)`` seen (the iteration's own divergence measure) is
#: taken every ``STALL_WINDOW`` evaluations, and the solve stops when it has not fallen by
#: the factor ``STALL_GAIN`` over the last two windows.  Measured on the random problems of
#: seed 0 (``benchmarks/bench_cold.py``): the cold failures that spent ``max_iter`` either
#: never improve on their first step (hinge with an elastic net at large lam, residuals
#: 1e1 to 1e9 oscillating) or creep (0.091 -> 0.053 in 3000 iterations).  Seven of the
#: 898 direct solves that converged circled at a constant residual for 424 to 1580
#: evaluations first: they stall too, and the homotopy finds their fixed points (within
#: 1.4e-9 of the direct ones).
STALL_WINDOW = 100
#: The least Anderson memory (secant pairs) of an iteration whose map integrates its channel
#: with a randomised rule of three to five dimensions (the sharp regime's automatic rule,
#: :func:`~gaussmix.theory.numerics.quadrature.auto_rule`: K = 4 to 6 cross-entropy at small
#: ``lam``): a state of 63 unknowns and more (K = 4) whose map contracts slowly, where six
#: pairs model too few of its slow directions and every evaluation costs 32768 proximal
#: solves a cluster.  Measured on the slowest K = 4 cross-entropy problems of the cold test
#: (``benchmarks/bench_cold.py``, seed 0), with ``anderson`` raised for the whole solve
#: (evaluations to the answer, default 6 -> 12 -> 20): #217 205 -> 156 -> 144 (15: 145),
#: #409 144 -> 104 -> 91, #426 212 -> 155 -> 123.
RANDOMISED_MIXING_MEMORY = 20
#: The factor by which the smallest step must fall over two windows of ``STALL_WINDOW``
#: evaluations (a run converging at a rate slower than 1/2 in 200 evaluations is stopped).
STALL_GAIN = 0.5

# --------------------------------------------------------------------------- integration error
#: Absolute floor of the :class:`~gaussmix.core.exceptions.IntegrationWarning` threshold: an
#: integration error below ``1e-6`` is invisible on any curve and in any comparison with a
#: simulation (whose standard errors are ``>= 1e-4`` at realistic sizes).
INTEGRATION_WARNING_FLOOR = 1e-6
#: The warning threshold grows with a loose ``tol``: an integration error well below the
#: iteration error (``100 tol``) is not worth a warning.
INTEGRATION_WARNING_FACTOR = 100.0


def integration_warning_threshold(tol: float) -> float:
    """Estimated integration error above which a solve warns,
    ``max(INTEGRATION_WARNING_FLOOR, INTEGRATION_WARNING_FACTOR tol)``.

    Parameters
    ----------
    tol : float
        The fixed-point tolerance of the solve.

    Returns
    -------
    float
    """
    return max(INTEGRATION_WARNING_FLOOR, INTEGRATION_WARNING_FACTOR * tol)


def refined_tol(tol: float) -> float:
    """The tolerance of the refined rule's iteration in an error estimate,
    ``min(tol, max(REFINED_TOL_FACTOR tol, REFINED_TOL_FLOOR))``."""
    return min(tol, max(REFINED_TOL_FACTOR * tol, REFINED_TOL_FLOOR))


def check_tol(tol: Any) -> float:
    """``tol`` as a float in ``(0, MAX_FIXED_POINT_TOL]``, or ``ValueError`` / ``TypeError``
    naming it: the one check of the fixed-point tolerance, which
    :class:`gaussmix.theory.solve.options.SolverOptions` (every solve, curve and sweep point) and
    the sweep's validation call.

    Parameters
    ----------
    tol : float

    Returns
    -------
    float
    """
    return check_real("tol", tol, low=0.0, high=MAX_FIXED_POINT_TOL, low_open=True)


# --------------------------------------------------------------------------- linear algebra
#: The closed-form square root of a 2 x 2 block, ``(A + s I) / sqrt(tr A + 2 s)`` with
#: ``s = sqrt(det A)``, is used when ``det A > SQRTM_2X2_DET_RTOL tr(A)^2`` for every block;
#: closer to singular it loses digits to cancellation and an eigendecomposition is used.
SQRTM_2X2_DET_RTOL = 1e-12
#: Default pruning of tensor Gauss-Hermite rules in more than one dimension: nodes whose
#: weight is below ``QUADRATURE_PRUNE`` times the largest are dropped (their total mass is
#: below double-precision rounding of the sum).
QUADRATURE_PRUNE = 1e-16
#: Half-width of the truncated line of :class:`~gaussmix.theory.numerics.quadrature.GradedPanels`:
#: the Gaussian mass outside ``[-9, 9]`` is ``2 Phi(-9) = 2.3e-19`` per dimension, and the
#: integrands (bounded, or growing like ``sqrt(Q) |xi|`` for the loss) lose at most
#: ``~ 9 sqrt(Q) phi(9) < 1e-15`` for ``Q <= 1e4``: far below every integration tolerance.
#: (Refinement does not see this error; it is bounded here instead.)
XI_MAX = 9.0
#: a pair of soft thresholds whose fields' correlation has ``1 - r^2`` at most this is
#: integrated by the rule with panels at the kinks
#: (:func:`gaussmix.theory.numerics.soft_threshold.soft_threshold_products`), not the closed
#: form, whose terms divide by ``sqrt(1 - r^2)``.  Measured over 3000 random pairs against
#: that rule (400 panels of 16 nodes): just above 1e-12 within 2e-13 of the pair's scale
#: ``s_x s_y + |mu_x mu_y|``, below 5e-15 at ``1 - r^2 >= 1e-4``; between, at 1e-8, the rule
#: is the one off (up to 7e-10: ``E[S(Y) | X]`` bends within ``sqrt(1 - r^2)`` of its kinks)
SOFT_PAIR_DEGENERATE = 1e-12
#: Target standard error of the randomised-QMC training error (three or more effective
#: outputs, where no boundary-integral formula is used): the points per randomisation double
#: until the standard error is below it, or the cap is reached (then the estimate is
#: reported as it is).  Half of issue 10's target of 1e-4 for the training error's estimate,
#: whose other part is the change under refinement of the channel rule.
TRAIN_QMC_TOL = 5e-5
#: Issue 10's target for the estimated integration error of the training error with a
#: randomised channel rule (K >= 4 cross-entropy): the automatic rule is refined (twice the
#: points per randomisation, up to ``2**16`` nodes in all) while the estimate exceeds it.
#: Measured at K = 10, lam = 1e-4, alpha = 10 (exchangeable clusters): 1.6e-4 with
#: 8 x 2**11 points, 6.7e-5 with 8 x 2**13.
TRAIN_ERROR_TARGET = 1e-4
#: Standard error at which the seeded orthant probability of the training error's control
#: variate stops (cross-entropy with three or more effective outputs, the orthant of
#: ``omega + V y``: :func:`gaussmix.theory.solve.observables.train_accuracy`): a tenth of
#: :data:`TRAIN_QMC_TOL`, the target of the whole estimate, which the control's error adds to.
TRAIN_CONTROL_ORTHANT_TOL = 5e-6
#: Standard error at which the seeded orthant probabilities (dimension >= 3) stop when they
#: only serve the replicate spread of a randomised channel rule (differences between nearby
#: states with common random numbers: the same points at every replicate, so their own noise
#: cancels in the spread far below this).  Measured against 1e-6 (the value before): the
#: spreads of the test and training errors agree to 1e-4 relative on ten classes from
#: digits (2.4172e-5 / 2.4170e-5) and to 2e-4 on seven unequal classes (lam = 0.1,
#: alpha = 4), at a third to a half of the replicates' cost (digits: 9.0 s -> 2.9 s).
#: 1e-3 since the randomised orthant's eight sequences (its first block, 8 x 2**9 points,
#: about 6e-5 for nine variables, where sixteen stopped at their first block at 5e-5): the
#: digits point's estimates of the test / training error 2.9875e-5 / 4.3696e-5 against
#: 2.9830e-5 / 4.3683e-5 at 5e-5 and 2.9823e-5 / 4.3682e-5 at 1e-6, the seven unequal
#: classes' the same to the printed digits at all three.
SPREAD_ORTHANT_TOL = 1e-3
#: Relative accuracy of the shift of a replicate's fixed point in the error estimate of a
#: randomised channel rule (:func:`gaussmix.theory.solve.estimate.replicate_state`): the
#: replicate's iteration from the full rule's fixed point ``x*`` stops at the first state
#: ``x`` whose scaled residual, and the length of the next step from it, are at most this
#: fraction of its scaled distance from ``x*`` (they measure the distance to the
#: replicate's fixed point: measured on ten classes from digits, the first Anderson step
#: from ``x*`` on the full rule's secant pairs, the linear response ``(I - J)^{-1} (T_r(x*)
#: - x*)``, landed 5 to 11 % of the shift from the replicate's fixed point, with residuals
#: within 3 % of those distances; where the map contracts slowly the residual alone
#: understates the distance: on a sharp K = 4 point, ~0.6 an evaluation, it let the
#: spread run 31 % off the re-solved replicates', 14 % with the step).
#: The spread the estimate is made of has a relative standard error of ``1 / sqrt(14)``
#: (27 %) with its eight replicates.
REPLICATE_SHIFT_RTOL = 0.2
#: The smallest gain of the linearised map on the span of a run's secant pairs
#: (:func:`gaussmix.theory.solve.estimate.secant_gain`, the replicates' stop) leaves out the
#: directions of the span whose singular value, the pairs normalised, is below this
#: fraction of the largest: a direction that only a near-cancelling combination of the
#: pairs reaches, whose gain is then their inconsistency (each pair is one Jacobian's only
#: to its second-order term and its images' accuracy) over that singular value.  Measured
#: on the runs of three randomised-rule points, the normalised pairs' singular values fall
#: in two groups: at least 8.5e-4 of the largest (the sharp K = 4 point #426 of the cold
#: stream: its smallest gain 0.048, the same, 0.05-0.07, at any cut from 1e-4 to 1e-12)
#: and at most 3.4e-8 (K = 10 and 8 isotropic cross-entropy, ``lam`` 1e-2 and 0.1: runs
#: that converge along one direction, their last pairs collinear; "gains" of 4e-7 to 1e7
#: there, 0.23 and 0.47 without them).
SECANT_GAIN_RCOND = 1e-5
#: A replicate's fixed point in the error estimate of a randomised rule is found with the
#: prior in single precision (where the solve's first phase is: the dense ridge prior on a
#: large matrix) only where its scaled shift from the full rule's fixed point is at least
#: this: the float32 map is within ~1e-6 of the double map (``SINGLE_PHASE_TOL``), so its
#: state is then within 1 % of the shift, well inside ``REPLICATE_SHIFT_RTOL``; a smaller
#: shift is found again in double precision.  (MNIST ten-class pooled to d = 196,
#: ``lam = 0.1``, alpha = 2: shifts 3e-3 to 1e-2.)
SINGLE_REPLICATE_MIN_SHIFT = 1e-4
#: Two-sided confidence of the interval of the standard error over which the first half of
#: a randomised rule's replicates must lead to one refinement for the estimate to be made
#: from them alone (:func:`gaussmix.theory.solve.refinement._half_decides`; the dense prior):
#: its bounds at 5 % and 95 %, a factor 4.7 apart with four replicates.  A true standard
#: error that would refine otherwise lies outside it with a probability of at most 5 %
#: (Gaussian errors).  Four groups of two replicates without that check crossed the
#: training error's target on MNIST d = 196 and refined its rule (the estimate 0.75 -> 2.27
#: times the solve).
HALF_REPLICATES_CONFIDENCE = 0.9
#: Regime of a one-dimensional channel integrand: the proximal map changes regime over a
#: width ~1 of the output, i.e. ``~ 1 / sqrt(q)`` of ``xi`` (``q`` the largest eigenvalue of
#: any ``Q_c``).  With ``q <= SMOOTH_Q_MAX`` the features are at least half a unit of ``xi``
#: wide and Gauss-Hermite (64 nodes, refined) is accurate to ~1e-10 (measured: binary
#: logistic at lam >= 1e-3); beyond, the solver switches to graded panels.
SMOOTH_Q_MAX = 4.0
#: The cross-entropy training accuracy is an orthant probability when every metric is
#: isotropic (``gaussmix.theory.solve.observables.isotropic_softmax_metric``); a metric counts as
#: isotropic when ``max |V_c - v_c I| <= ISOTROPIC_METRIC_RTOL v_c``.  Exchangeable clusters
#: reach it to rounding (~1e-15); the residual anisotropy moves the ordering of the proximal
#: point's components by at most ``ISOTROPIC_METRIC_RTOL v``, far below every error estimate.
ISOTROPIC_METRIC_RTOL = 1e-10
#: The multi-output lasso's metric ``V_c`` (``E[du/dB]``, positive definite) comes from
#: Stein's lemma across lines, which need not keep it so: near the zero estimator its
#: eigenvalues were measured 1.4e-11, 2.6e-17 and -1.3e-20 (K = 4 cross-entropy, lam =
#: 5.7).  A negative eigenvalue is raised to ``METRIC_EIG_FLOOR`` times the largest one
#: (:func:`gaussmix.theory.prior.prior.multi_output_elastic_net_prior`) when it is at most
#: ``METRIC_NEG_RTOL`` times the largest: the truth being positive semi-definite, the
#: negative part is below the metric's own integration error, and the projection moves
#: the metric by no more than it (closer to the truth, in Frobenius norm).  A deeper one
#: is left for the solver's cone test to reject.
METRIC_NEG_RTOL = 1e-6
#: ... the floor, relative to the largest eigenvalue: far above the rounding of the
#: rebuilt matrix (a few ``eps``), so that it stays positive definite, far below any
#: integration error
METRIC_EIG_FLOOR = 1e-12
#: The cross-entropy channel's clusters of small metric (more than two reduced outputs) are
#: solved in the coordinates whitened by the Cholesky factor ``V = L_V L_V^T``
#: (:mod:`gaussmix.theory.numerics.ce_small_metric`) when every squared pivot of ``L_V`` is
#: at least ``WHITENED_METRIC_RCOND`` times the largest diagonal entry of ``V`` (``V`` then
#: has a condition number of order at most its inverse): the Stein term is mapped back by
#: ``L_V^{-1}`` on both sides, which multiplies its rounding (a few ``eps``) by at most the
#: condition number, 1e-12 relative at this bound, far below any integration error.  A
#: metric that is singular, indefinite by rounding or worse conditioned keeps the kernel's
#: unwhitened form.
WHITENED_METRIC_RCOND = 1e-4
#: ... and when its largest diagonal entry is at least ``WHITENED_METRIC_FLOOR``: the
#: whitened Hessian's entries are products of the softmax probabilities with the metric's
#: scale, which stay far above the subnormal range (``2.2e-308``) for every probability the
#: Stein term's sum can feel; a smaller metric (the lasso's on its way to the zero
#: estimator) keeps the unwhitened form, whose entries carry no factor ``V``.
WHITENED_METRIC_FLOOR = 1e-100
#: A run of a coarser rule whose fixed point only starts a finer rule's run (the channel's
#: coarser rule of a multi-output lasso point, or its prior's first rule where the prior's
#: refinement re-solves from it directly) stops where its residual is below
#: ``RULE_ERROR_FRACTION`` times the two rules' difference ``max |T'(x) - T(x)| / s`` at
#: its last iterate (the coarser rule's own error in the map), instead of at ``tol``
#: (:func:`gaussmix.theory.solve.iteration.iterate_to_rule_error`).  The coarser fixed
#: point is about ``1 / (1 - r)`` times that difference from the finer one and the run's
#: end about ``1 / (1 - r)`` times its residual from the coarser one (``r`` the map's
#: contraction), so the finer run's start, and the change under refinement that estimates
#: the coarser rule's error, move by about this fraction (1 %) of that change.  (At 0.1 the
#: cross-entropy's points take 1477 prior evaluations instead of 1533, but one answer moved
#: by 1.14 times its estimate, 2.6e-9: kept at 1 %.)
RULE_ERROR_FRACTION = 1e-2
#: ... and where the two rules' difference is measured: at the first iterate of the
#: coarser run whose residual is below ``RULE_ERROR_CHECK`` (one evaluation of the finer
#: map, which is the finer run's first where the run stops there).  The K = 3 lasso points
#: of ``benchmarks/bench_lasso_k3.py`` (seeds 0-2) measure the coarser rules' differences
#: 1e-3 to 0.6 where the cold phase is long (the prior's 8 x 8 panels against 16 x 16, the
#: channel's coarser graded panels against its rule), so that at 1e-5 those stop at the
#: check; a run that goes on past it pays that evaluation.  Counted on those 120 points
#: (prior evaluations, cross-entropy / square at 8 x 8, 16 x 16, 32 x 32 panels; main 1576
#: / 1586, 791, 138), with a continued run that evaluated its start again: a check at 1e-3
#: 1533 / 1314, 822, 140; 1e-4 1515 / 1314, 781, 139; 3e-5 1499 / 1320, 766, 139; 1e-5
#: 1484 / 1346, 766, 140 (its start's image kept: 1464 / 1340, 766, 140).
RULE_ERROR_CHECK = 1e-5
#: ... and the check is made only where the run took at least ``RULE_ERROR_MIN_RUN``
#: evaluations to get there: a run that converges fast has a short tail to cut, and the
#: finer map's evaluation then costs more than it saves (``bench_lasso_k3.py``, 120 points,
#: the cross-entropy's points of lam above 0.5, 1-6 evaluations to the check: 5-25 % more
#: CPU with the check; its slow points, 13-54 evaluations, 5-20 % less).
RULE_ERROR_MIN_RUN = 10
