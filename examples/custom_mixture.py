"""Your own mixture: unbalanced clusters, a Gram matrix of your choice, block covariances.

Builds three mixtures and compares their asymptotic errors at one (lam, alpha):

* isotropic clusters with per-cluster variances, priors rho and a custom Gram matrix of the
  means ``Theta_kk' = mu_k . mu_k'``;
* a *block* covariance law (covariances sharing eigenvectors: 30 % of the directions with
  variance 0.2, the rest 1.0), binary labels;
* an empirical spectral law built from arrays (eigenvalues and rescaled mean components per
  direction), e.g. estimated from data.

Run:  python examples/custom_mixture.py
"""

import numpy as np

import gaussmix as gm

# 1. isotropic, unbalanced, correlated means (Theta must be symmetric PSD)
theta = np.array([[1.0, 0.3, 0.0], [0.3, 1.0, 0.2], [0.0, 0.2, 0.8]])
iso = gm.Mixture.isotropic([0.4, 0.5, 0.6], theta, rho=[0.5, 0.3, 0.2])
r1 = gm.solve(iso, "cross-entropy", lam=0.5, alpha=2.0)

# 2. block law, binary +-1 labels, logistic loss
blk = gm.Mixture.block([0.3, 0.7], [0.2, 1.0], labels="binary")
r2 = gm.solve(blk, "logistic", lam=0.1, alpha=2.0)

# 3. empirical spectral law: sigma[i, k] eigenvalue of Sigma_k on direction i,
#    mu[i, k] = sqrt(d) mu_k . v_i
d = 400
rng = np.random.default_rng(0)
sigma = np.column_stack([rng.uniform(0.2, 1.0, d), rng.uniform(0.2, 1.0, d)])
z = rng.standard_normal(d)
emp = gm.Mixture.spectral(sigma, np.column_stack([z, -z]), labels="binary")
r3 = gm.solve(emp, "square", lam=0.1, alpha=2.0)

for name, r in (("isotropic, K = 3", r1), ("block, K = 2", r2), ("spectral, K = 2", r3)):
    print(f"{name:18s} test {r.test_error:.4f}  train {r.train_error:.4f}  ({r.n_iter} iter)")
