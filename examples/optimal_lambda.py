"""A lambda sweep and the optimal penalty lambda*.

Two antipodal clusters with different variances (Delta = 0.1 and 1.0), logistic loss with
ridge penalty: the test error over a grid of lambda at alpha = 2 and lambda* found by a
bracketed search (with the boundary cases lambda* -> 0+ and lambda* -> infinity reported,
not extrapolated).  Writes ``optimal_lambda.csv`` and ``optimal_lambda.png``.

Run:  python examples/optimal_lambda.py [OUT_DIR]
"""

import sys
from pathlib import Path

import numpy as np

import gaussmix as gm
from gaussmix.figures import new_axes, save_figure

out = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
out.mkdir(parents=True, exist_ok=True)

mix = gm.Mixture.isotropic([0.1, 1.0], "antipodal", labels="binary")
alpha = 2.0
curve = gm.lambda_sweep(mix, "logistic", np.geomspace(1e-3, 1e2, 16), alpha=alpha)
opt = gm.optimal_lambda(mix, "logistic", alpha=alpha)
curve.to_csv(out / "optimal_lambda.csv", index=False)

ax = new_axes((6.0, 4.2))
ax.semilogx(curve["lam"], curve["test_error"], "-", label="test error (theory)")
if np.isfinite(opt.lam_star) and opt.lam_star > 0:
    ax.axvline(opt.lam_star, ls=":", color="k", label=f"lambda* = {opt.lam_star:.3g}")
ax.set_xlabel("ridge penalty lambda")
ax.set_ylabel("test error")
ax.set_title(f"antipodal clusters, Delta = (0.1, 1.0), logistic, alpha = {alpha}")
ax.legend()
save_figure(ax, out / "optimal_lambda.png")
print(f"lambda* = {opt.lam_star:.6g}, test error there {opt.test_error:.6f}")
print(f"boundary: lambda* -> 0+ {opt.at_boundary}, lambda* -> infinity {opt.at_upper_bound}")
