"""The theory: Theorems 1-2 of the paper for a Gaussian mixture.

Data flow inside the layer: ``mixture`` (the data model) and ``losses`` / ``prior`` (the
two halves of the fixed point: ``channel`` over ``quadrature`` nodes, and the penalty's
prior) feed the ``solver``; ``observables`` (with ``orthant`` probabilities) turn its fixed
point into Theorem 2's errors; ``bayes`` gives the Bayes-optimal error of Appendix D
(:func:`~gaussmix.theory.bayes.bayes_optimal_error`), the floor of every test error.
``problem`` validates a mixture + loss + penalty; ``conventions`` is the single mapping of
the theory's parameters to scikit-learn's.
"""
