"""A learning curve against finite-size simulations.

Three isotropic clusters (Delta = 0.5, means at the vertices of a regular simplex), softmax
cross-entropy with ridge penalty lam = 0.1: the asymptotic test and training errors of
Theorem 2 over alpha = n / d, and exact ERM at dimension d over a few seeds (error bars are
one standard error over seeds).  Writes ``learning_curve.csv`` and ``learning_curve.png``.

Run:  python examples/learning_curve.py [OUT_DIR] [--quick]
"""

import sys
from pathlib import Path

import numpy as np
import pandas as pd

import gaussmix as gm
from gaussmix.figures import new_axes, save_figure

quick = "--quick" in sys.argv
args = [a for a in sys.argv[1:] if not a.startswith("--")]
out = Path(args[0] if args else ".")
out.mkdir(parents=True, exist_ok=True)

# edit here: the mixture, the loss, the penalty
mix = gm.Mixture.isotropic(0.5, "simplex", n_clusters=3)
loss, lam = "cross-entropy", 0.1
d, seeds = (200, 2) if quick else (1000, 10)

theory = gm.learning_curve(mix, loss, np.linspace(0.25, 3.0, 12), lam=lam)
rows = []
for alpha in (0.5, 1.5, 3.0):
    sim = gm.simulate(mix, loss=loss, lam=lam, alpha=alpha, d=d, seeds=seeds)
    rows.append(
        {
            "alpha": alpha,
            "test_error": sim.mean["test_error"],
            "test_error_se": sim.se["test_error"],
            "train_error": sim.mean["train_error"],
            "train_error_se": sim.se["train_error"],
        }
    )
sims = pd.DataFrame(rows)
table = pd.concat([theory.assign(source="theory"), sims.assign(source=f"simulation d={d}")])
table.to_csv(out / "learning_curve.csv", index=False)

ax = new_axes((6.0, 4.2))
ax.plot(theory["alpha"], theory["test_error"], "-", label="test error (theory)")
ax.plot(theory["alpha"], theory["train_error"], "--", label="training error (theory)")
ax.errorbar(sims["alpha"], sims["test_error"], sims["test_error_se"], fmt="o", label="test (ERM)")
ax.errorbar(
    sims["alpha"], sims["train_error"], sims["train_error_se"], fmt="s", label="train (ERM)"
)
ax.set_xlabel("sample complexity alpha = n / d")
ax.set_ylabel("classification error")
ax.set_title(f"K = 3, Delta = 0.5, simplex means, {loss}, ridge lam = {lam}")
ax.legend()
save_figure(ax, out / "learning_curve.png")
print(table.to_string(index=False, columns=["source", "alpha", "test_error", "train_error"]))
