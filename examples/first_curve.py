"""Ten lines: the learning curve of Theorem 2 for three Gaussian clusters, and its figure."""

import numpy as np

import gaussmix as gm
from gaussmix.figures import new_axes, save_figure

mix = gm.Mixture.isotropic(0.5, "simplex", n_clusters=3)  # K = 3, Sigma_c = 0.5 I
alphas = np.linspace(0.1, 4.0, 40)  # sample complexity alpha = n / d
curve = gm.learning_curve(mix, "cross-entropy", alphas, lam=0.01)  # ridge, lam = 0.01
bayes = [gm.bayes_optimal_error(mix, a).test_error for a in alphas]  # Appendix D
print(curve[["alpha", "test_error", "train_error"]].iloc[::6].to_string(index=False))
ax = new_axes((6.0, 4.0))
ax.plot(alphas, curve["test_error"], label="test error")
ax.plot(alphas, curve["train_error"], "--", label="training error")
ax.plot(alphas, bayes, ":", label="Bayes-optimal error")
ax.set(xlabel="alpha = n / d", ylabel="classification error")
ax.legend()
save_figure(ax, "first_curve.png")
