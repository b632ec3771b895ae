"""The theory: Theorems 1-2 of the paper for a Gaussian mixture.

Rooms by job, lowest first (a room imports its own modules and lower rooms only;
tests/test_layers.py checks it):

* ``numerics`` (0): Numerical building blocks that know no model: the named tolerances,
  linear algebra, the compiled kernels, quadrature rules and Gaussian orthant probabilities.
* ``model`` (1): What a problem is made of, independent of the solver: the mixture (label
  map, covariance structures, finite-d realisations), the penalties, the mapping to
  scikit-learn's conventions and the names of the outputs.
* ``channel`` (2): The loss half of the fixed point: the losses and their proximal maps, the
  channel's Gaussian expectations and the normaliser.
* ``prior`` (2): The penalty half of the fixed point: the priors (ridge on spectral and
  dense covariances, lasso and elastic net).
* ``problem`` (3): One validated problem (mixture + loss + penalty + alpha, lambda) and its
  symmetry reduction.
* ``solve`` (4): The fixed-point solver: options, state, the map, the iteration, refinement
  and error estimate, observables (Theorem 2) and results.
* ``limits`` (5): Answers built on the solver: the separability threshold, the max-margin
  estimator and the Bayes-optimal error.
* ``api`` (6): The validating entry points: make_problem and solve (gm.make_problem,
  gm.solve).
"""
