"""The gallery tells the truth: what each figure's description states (its K values, data
sets, lambdas, Deltas) is what the figure draws (the ``"drawn"`` values of its JSON
companion, from its own table), the ``--fast`` presets draw the findings on dense theory
grids, and the "Differs from the paper" notes state what the theory gives.

The checks on the atlas read the fast atlas of ``$GAUSSMIX_ATLAS_DIR`` when it is set (CI
makes it once), else make it once for this module (slow).
"""

from __future__ import annotations

import inspect
import json
import re
from pathlib import Path

import numpy as np
import pytest
from conftest import require_dataset, require_figure
from scipy.optimize import minimize_scalar

import gaussmix as gm
from gaussmix.figures import FIGURES, get_figure
from gaussmix.figures.paper_atlas import atlas_names
from gaussmix.figures.registry import drawn_summary, drawn_values, preset_arguments
from gaussmix.simulate.simulation import fit_erm, overlaps, realise
from gaussmix.studies import SOURCES

slow = pytest.mark.slow
_NUMBER = r"\d+(?:\.\d+)?(?:e[+-]?\d+)?"
_LIST = rf"{_NUMBER}(?:\.\.{_NUMBER}|(?:, {_NUMBER})*)"


# =========================================================================== statements
def _numbers(text: str) -> list[float]:
    """``'2..5'`` -> 2, 3, 4, 5; ``'0.25, 0.5, 1'`` -> the three."""
    if ".." in text:
        lo, hi = (int(x) for x in text.split(".."))
        return [float(k) for k in range(lo, hi + 1)]
    return [float(x) for x in text.split(", ")]


def stated_values(description: str) -> dict[str, list]:
    """What a description states about a figure: ``K = ...``, ``Delta = ...``,
    ``Delta1/Delta2 = ...``, ``lambda = ...`` (not ``lambda*``) and the data sets it names."""
    out: dict[str, list] = {}
    patterns = {
        "K": rf"\bK = ({_LIST})",
        "deltas": rf"\bDelta = ({_LIST})",
        "ratios": rf"\bDelta1/Delta2 = ({_LIST})",
        "lambdas": rf"\blambda = ({_LIST})",
        "gammas": rf"\bgamma = ({_LIST})",
    }
    for key, pattern in patterns.items():
        values = [v for m in re.finditer(pattern, description) for v in _numbers(m.group(1))]
        if values:
            out[key] = values
    names = {
        "fashion-mnist": r"Fashion-MNIST",
        "mnist": r"(?<!Fashion-)\bMNIST\b",
        "digits": r"\bdigits\b",
    }
    found = [name for name, pattern in names.items() if re.search(pattern, description)]
    if found:
        out["datasets"] = found
    return out


def mismatches(description: str, drawn: dict) -> list[str]:
    """Every value a description states that the figure does not draw."""
    bad = []
    for key, values in stated_values(description).items():
        have = drawn.get(key, [])
        for v in values:
            if isinstance(v, str):
                ok = v in have
            else:
                ok = any(isinstance(h, int | float) and np.isclose(h, v, rtol=1e-9) for h in have)
            if not ok:
                bad.append(f"{key} = {v} (drawn: {have})")
    return bad


def test_the_statements_of_a_description_are_read() -> None:
    """The parser finds what a description states, so that a wrong one fails."""
    got = stated_values(
        "cross-entropy, K = 2..5 clusters (Delta = 0.25, 0.5), lambda = 1e-4, lambda* vs "
        "alpha; MNIST and Fashion-MNIST, Delta1/Delta2 = 1, 0.1"
    )
    assert got == {
        "K": [2.0, 3.0, 4.0, 5.0],
        "deltas": [0.25, 0.5],
        "ratios": [1.0, 0.1],
        "lambdas": [1e-4],
        "datasets": ["fashion-mnist", "mnist"],
    }
    drawn = {"K": [2, 3], "deltas": [0.5], "datasets": ["digits"], "lambdas": [0.0001]}
    assert mismatches("K = 2..5, lambda = 1e-4", drawn) == [
        "K = 4.0 (drawn: [2, 3])",
        "K = 5.0 (drawn: [2, 3])",
    ]
    assert mismatches("MNIST and Fashion-MNIST", drawn) == [
        "datasets = fashion-mnist (drawn: ['digits'])",
        "datasets = mnist (drawn: ['digits'])",
    ]
    assert mismatches("K = 2, 3 at Delta = 0.5 and lambda = 0.0001", drawn) == []


def test_drawn_values_and_their_summary() -> None:
    import pandas as pd

    df = pd.DataFrame(
        {
            "K": [3, 2, 2, 3],
            "alpha": [0.5, 0.5, 6.0, 2.0],
            "lam": 1e-4,
            "dataset": ["mnist", "mnist", "fashion-mnist", "mnist"],
            "sim_d": [np.nan, 240.0, np.nan, np.nan],
        }
    )
    drawn = drawn_values(df)
    assert drawn == {
        "K": [2, 3],
        "datasets": ["fashion-mnist", "mnist"],
        "lambdas": [1e-4],
        "simulation_d": [240.0],
        "alphas": {"n": 3, "min": 0.5, "max": 6.0},
    }
    assert drawn_summary(drawn) == (
        "K = 2, 3; data sets = fashion-mnist, mnist; lambda = 0.0001; simulation d = 240; "
        "alphas: 3 in [0.5, 6]"
    )


# =========================================================================== the atlas
def _meta(atlas_dir: Path, name: str) -> dict:
    require_figure(atlas_dir, name)
    return json.loads((atlas_dir / f"{name}.json").read_text())


@slow
def test_every_description_states_what_its_figure_draws(atlas_dir: Path) -> None:
    for name in atlas_names():
        spec, meta = get_figure(name), _meta(atlas_dir, name)
        assert meta["description"] == spec.description
        assert meta["fast_note"] == spec.fast_note and meta["differs"] == spec.differs
        assert mismatches(spec.description, meta["drawn"]) == [], name


@slow
def test_the_real_data_figures_run_on_mnist_and_fashion_mnist(atlas_dir: Path) -> None:
    real = [n for n, s in FIGURES.items() if "real data" in s.dots]
    assert len(real) == 6
    for name in real:
        datasets = set(_meta(atlas_dir, name)["drawn"]["datasets"])
        assert datasets <= {"mnist", "fashion-mnist"} and datasets, name
    for name in ("fig5", "fig4-right"):  # the paper's two data sets
        assert set(_meta(atlas_dir, name)["drawn"]["datasets"]) == {"mnist", "fashion-mnist"}


@slow
def test_the_theory_is_drawn_on_dense_grids(atlas_dir: Path) -> None:
    """At least 40 alphas (or lambdas, for the curves against lambda) per theory curve."""
    for name in ("sparse-setup", "sparse-curves", "fig3-left", "appe-xor"):
        assert _meta(atlas_dir, name)["drawn"]["alphas"]["n"] >= 40, name
    for name in ("fig3-right", "fig4-left"):
        assert len(_meta(atlas_dir, name)["drawn"]["lambdas"]) >= 40, name


@slow
def test_fig3_left_draws_alpha_star_itself(atlas_dir: Path) -> None:
    """alpha*_K is a point of each K's theory grid, so the cusp is drawn where it is."""
    import pandas as pd

    require_figure(atlas_dir, "fig3-left")
    df = pd.read_csv(atlas_dir / "fig3-left.csv")
    for k, g in df.groupby("K"):
        star = float(g["alpha_star"].iloc[0])
        assert np.isclose(g["alpha"], star, rtol=1e-12, atol=0).sum() == 1, k
        assert g["alpha"].min() < star < g["alpha"].max()


# =========================================================================== fig4-left's note
def _fig4_mixture() -> gm.Mixture:
    return gm.Mixture.isotropic(delta=np.array([0.1, 0.01]), means="antipodal", labels="binary")


def _test_mse(mixture: gm.Mixture, alpha: float, lam: float) -> float:
    """The test mean-squared error of ridge regression from the fixed point: per cluster the
    output is Gaussian, mean ``m_c + b`` and variance ``q_c`` (Theorem 2's local field)."""
    r = gm.solve(mixture, loss="square", alpha=alpha, lam=lam, penalty="l2", tol=1e-10)
    assert r.success
    y = mixture.labels.labels[:, 0]
    m, q = r.M[:, 0] + r.b[0], r.Q[:, 0, 0]
    return float(np.sum(mixture.rho * ((y - m) ** 2 + q)))


def test_fig4_left_note_states_the_optima_of_the_test_mse() -> None:
    """The optima of the test mean-squared error stated by fig4-left's note are the
    theory's (to the two digits stated), interior, and growing with alpha; the
    classification error has no interior optimum on the same range."""
    note = get_figure("fig4-left").differs
    m = re.search(rf"lambda\* = ({_LIST}) at alpha = ({_LIST})", note)
    assert m is not None, note
    stars, alphas = _numbers(m.group(1)), _numbers(m.group(2))
    assert len(stars) == len(alphas) == 4 and np.all(np.diff(stars) > 0)
    mix = _fig4_mixture()
    for alpha, stated in zip(alphas, stars):
        res = minimize_scalar(
            lambda t, a=alpha: _test_mse(mix, a, float(np.exp(t))),
            bounds=(np.log(stated / 4), np.log(stated * 4)),
            method="bounded",
            options={"xatol": 1e-3},
        )
        assert np.exp(res.x) == pytest.approx(stated, rel=0.05), alpha
        assert res.fun < min(_test_mse(mix, alpha, stated / 4), _test_mse(mix, alpha, stated * 4))
        errors = [
            gm.solve(mix, loss="square", alpha=alpha, lam=lam).test_error
            for lam in (stated / 4, stated, stated * 4)
        ]
        assert errors[0] > errors[1] > errors[2], alpha  # no interior optimum there


@slow
def test_the_test_mse_of_the_fixed_point_against_a_simulation() -> None:
    """The mean-squared-error formula from the overlaps against exact ridge regression on
    samples (d = 400, 6 seeds): the test MSE measured on fresh samples agrees with the
    theory within 3 standard errors plus a 3 % finite-size allowance."""
    mix, alpha, lam, d = _fig4_mixture(), 1.0, 0.06, 400
    theory = _test_mse(mix, alpha, lam)
    y = mix.labels.labels[:, 0]
    measured = []
    for seed in range(6):
        rng = np.random.default_rng(seed)
        inst = realise(mix, d, rng)
        X, cid = inst.sample(int(alpha * d), rng)
        W, b = fit_erm(X, mix.labels, cid, "square", "l2", lam)
        Xt, ct = inst.sample(20_000, rng)
        f = Xt @ np.atleast_2d(W)[0] / np.sqrt(d) + b[0]
        mc = float(np.mean((y[ct] - f) ** 2))
        Q, M, bb = overlaps(inst, W, b)  # the same formula on this instance's overlaps
        exact = float(np.sum(mix.rho * ((y - M[:, 0] - bb[0]) ** 2 + Q[:, 0, 0])))
        assert mc == pytest.approx(exact, rel=0.03)  # Monte Carlo of 20 000 points
        measured.append(exact)
    mean, se = np.mean(measured), np.std(measured, ddof=1) / np.sqrt(len(measured))
    assert abs(mean - theory) <= 3 * se + 0.03 * theory, (mean, se, theory)


# =========================================================================== presets
def _plain(value: object) -> object:
    """A preset's value as JSON reads it back (tuples as lists, numpy scalars as numbers)."""
    if isinstance(value, tuple | list | np.ndarray):
        return [_plain(v) for v in value]
    return value.item() if isinstance(value, np.generic) else value


def test_preset_arguments_are_every_parameter_at_the_preset() -> None:
    """The paper's settings are the table function's defaults, the ``--fast`` preset is
    them with the preset's values; the two differ for every figure, so that a record of
    one is never taken for the other."""
    for name, spec in FIGURES.items():
        full, fast = preset_arguments(name), preset_arguments(name, fast=True)
        sig = inspect.signature(spec.table).parameters
        params = [
            k
            for k, p in sig.items()
            if k not in ("progress", "mixture") and p.kind is not p.VAR_KEYWORD
        ]
        assert list(full) == params == list(fast), name
        for k in params:
            default = sig[k].default
            if not callable(default):
                assert full[k] == _plain(default), (name, k)
            else:
                assert full[k] == f"{default.__module__}.{default.__qualname__}"
            if k in spec.fast:
                assert fast[k] == _plain(spec.fast[k]), (name, k)
            else:
                assert fast[k] == full[k], (name, k)
        assert full != fast, name
        assert json.loads(json.dumps(full)) == full  # JSON-safe


# =========================================================================== fig6's note
def _stated(note: str, values: list[float], digits: int) -> None:
    """``values``, rounded to ``digits`` decimals as the note states them, are in the note
    in this order (as one comma-separated list)."""
    text = ", ".join(f"{v:.{digits}f}" for v in values)
    assert text in note, (text, note)


@slow
def test_fig6_note_states_the_papers_map_against_ours() -> None:
    """The paper's erf(F x) against the library's erf(F x / sqrt d), the same F, on MNIST
    even/odd at gamma = 0.5: the pre-activations' spread, the saturated share, the theory's
    test error and training loss and the real data's distance to the theory, as stated."""
    from scipy.special import erf

    from gaussmix.data import RandomFeatures
    from gaussmix.studies import prepare_realdata, realdata_curve

    class PaperFeatures(RandomFeatures):
        """erf(F x), the paper's map (no 1 / sqrt(d))."""

        def transform(self, X: object) -> np.ndarray:
            return erf(np.asarray(X, dtype=float) @ self.F_.T)

    note = get_figure("fig6").differs
    ds = require_dataset("mnist", "even-odd")
    assert f"|x|^2 / d = {np.mean(np.sum(ds.x_train**2, axis=1)) / ds.d:.3f}" in note
    x = ds.x_train[:5000]
    p, alphas = round(0.5 * ds.d), (0.5, 1.0, 2.0)
    results = {}
    for key, cls, scale in (
        ("ours", RandomFeatures, np.sqrt(ds.d)),
        ("paper", PaperFeatures, 1.0),
    ):
        fmap = cls(p, seed=0).fit(ds.x_train)
        pre = x @ fmap.F_.T / scale
        saturated = np.mean(np.abs(fmap.transform(x)) > 0.99)
        results[key] = (float(pre.std()), float(saturated))
        df = realdata_curve(
            prepare_realdata(ds, feature_map=fmap, fit_on="all"),
            loss="logistic",
            lam=0.05,
            alphas=alphas,
            subsamples=2,
            sources=("theory", "real"),
        )
        theory = df[df.source == "theory"].sort_values("alpha")
        real = df[df.source == "real"].sort_values("alpha")
        _stated(note, list(theory.test_error), 3)
        _stated(note, list(theory.train_loss), 3)
        gap = np.max(np.abs(real.test_error.to_numpy() - theory.test_error.to_numpy()))
        results[key] += (float(gap),)
        falls = np.all(np.diff(theory.train_loss) < 0)
        assert falls if key == "ours" else np.all(np.diff(theory.train_loss) > 0), key
    assert f"standard deviation {results['paper'][0]:.1f}" in note
    assert f"{100 * results['paper'][1]:.0f} % of its features are saturated" in note
    assert f"here {results['ours'][0]:.2f}, in erf's linear range" in note
    assert results["ours"][1] == 0.0
    assert f"within {results['ours'][2]:.3f} of the theory here" in note
    assert f"{results['paper'][2]:.3f} with the paper's map" in note


# ===================================================================== appe-trained's note
def test_appe_trained_note_states_the_gap_at_the_papers_settings() -> None:
    """The ratios of the real-data test error to the theory's stated for the paper's
    settings are those of the committed figure (docs/gallery/appe-trained.csv)."""
    import pandas as pd

    hook, manifest = _full()
    if "appe-trained" in {r["name"] for r in manifest.get("pending", [])}:
        pytest.fail("appe-trained's note states the paper's settings: commit its figure")
    df = pd.read_csv(hook.FULL_DIR / "appe-trained.csv")
    assert sorted(df.epoch.unique()) == [1, 5, 20]
    err = df.pivot_table(index=["alpha", "epoch"], columns="source", values="test_error")
    ratio = (err["real"] / err["theory"]).unstack("epoch")
    note = get_figure("appe-trained").differs
    for alpha in (0.5, 3.0):
        lo, hi = ratio.loc[alpha].min(), ratio.loc[alpha].max()
        assert f"{lo:.1f} to {hi:.1f} at alpha = {alpha:g}" in note, (alpha, lo, hi)
    assert np.all(np.diff(ratio.to_numpy(), axis=0) > 0)  # the factor grows with alpha
    assert preset_arguments("appe-trained")["hidden"] == 784


@slow
def test_appe_trained_note_states_where_the_gap_comes_from() -> None:
    """On the --fast preset's network (epoch 5): Gaussian samples of the fitted mixture
    follow the theory, the real data lie 2-6 times above it, the mixture of the test split
    alone and the test on images the network saw move the two only a little, as stated."""
    import dataclasses

    from gaussmix.data import NetworkFeatures
    from gaussmix.figures.appendix_e import _Fitted
    from gaussmix.studies import prepare_realdata, realdata_curve

    note = get_figure("appe-trained").differs
    fast = get_figure("appe-trained").fast
    ds = require_dataset("mnist", "even-odd")
    net = NetworkFeatures(epochs=(1, 5), hidden=fast["hidden"], seed=0)
    net = net.fit(ds.x_train, ds.y_train)
    problem = prepare_realdata(
        ds, feature_map=_Fitted(net.at(5), "network, epoch 5"), fit_on="all"
    )
    alphas, kw = fast["alphas"], {"loss": "logistic", "lam": 0.05, "subsamples": 2}
    df = realdata_curve(problem, alphas=alphas, seeds=2, sources=SOURCES, **kw)
    errors = {s: g.sort_values("alpha").test_error.to_numpy() for s, g in df.groupby("source")}
    for source in SOURCES:
        _stated(note, list(errors[source]), 3)
    ratio = errors["real"] / errors["theory"]
    assert np.all((ratio > 2) & (ratio < 6.5)) and ratio[-1] > ratio[0], ratio
    test_only = gm.Mixture.from_data(problem.x_test, problem.cluster_test, labels=problem.labels)
    theory_test = realdata_curve(
        dataclasses.replace(problem, mixture=test_only), sources=("theory",), alphas=alphas, **kw
    ).test_error.to_numpy()
    _stated(note, list(theory_test), 3)
    assert np.all(theory_test < errors["real"] / 1.5)
    xt, ct = problem.x_train, problem.cluster_train
    seen = dataclasses.replace(
        problem, x_train=xt[:50_000], cluster_train=ct[:50_000], x_test=xt[50_000:],
        cluster_test=ct[50_000:],
    )  # fmt: skip
    real_seen = realdata_curve(seen, sources=("real",), alphas=alphas, **kw)
    _stated(note, list(real_seen.sort_values("alpha").test_error), 3)
    assert np.all(real_seen.sort_values("alpha").test_error.to_numpy() > 1.4 * errors["theory"])


# ============================================================ the paper's settings, committed
def _full() -> tuple[object, dict]:
    """The docs build hook and the committed gallery's manifest."""
    from test_docs import _hook

    hook = _hook()
    path = hook.FULL_DIR / hook.MANIFEST
    assert path.is_file(), f"no {path}: make it as the gallery page says"
    return hook, json.loads(path.read_text(encoding="utf-8"))


def test_every_figure_has_a_committed_image_of_the_papers_settings() -> None:
    """docs/gallery holds, for every registered figure, its image and table at the paper's
    settings, and the manifest records the command, the commit, the date and each figure's
    parameters: those of the registry now (a changed preset without new images fails
    here), what it draws (which its description states) and the files' SHA-256."""
    import hashlib

    hook, manifest = _full()
    assert manifest["command"] == "gaussmix figure all --out DIR"
    assert re.fullmatch(r"[0-9a-f]{40}", manifest["commit"]), manifest["commit"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", manifest["date"])
    rows = {r["name"]: r for r in manifest["figures"]}
    # a figure too long to make here is listed as pending, with why (its measured time)
    pending = {r["name"]: r["reason"] for r in manifest.get("pending", [])}
    assert sorted([*rows, *pending]) == sorted(FIGURES) and all(pending.values()), pending
    order = [n for n in atlas_names() if n in rows]
    assert [r["name"] for r in manifest["figures"]] == order  # the paper's order
    names = {hook.MANIFEST}
    for name, row in rows.items():
        spec = get_figure(name)
        assert row["paper"] == spec.paper
        assert row["parameters"] == preset_arguments(name), name
        assert mismatches(spec.description, row["drawn"]) == [], name
        assert row["seconds"] > 0 and row["not_converged"] == 0, name
        for kind, file in row["files"].items():
            data = (hook.FULL_DIR / file).read_bytes()
            assert hashlib.sha256(data).hexdigest() == row["sha256"][kind], file
            names.add(file)
        png = (hook.FULL_DIR / row["files"]["png"]).read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and 20_000 < len(png) <= hook.FULL_PNG_BYTES, name
        assert row["files"]["csv"] == f"{name}.csv"
    assert sorted(p.name for p in hook.FULL_DIR.iterdir()) == sorted(names)  # nothing stale


def test_the_gallery_page_shows_the_papers_settings_and_what_ci_checks(tmp_path: Path) -> None:
    """With the committed gallery and an atlas of the --fast presets, every entry shows the
    paper's image first and the --fast one after it, each with what it draws; a figure the
    committed gallery lacks shows its --fast image, said to be one."""
    hook, manifest = _full()
    full = hook.read_full_gallery()
    assert sorted([*full.figures, *full.pending]) == sorted(FIGURES)
    png = (hook.FULL_DIR / manifest["figures"][0]["files"]["png"]).read_bytes()
    rows = [{"name": n, "status": "ok", "seconds": 1.5} for n in FIGURES]
    for n in FIGURES:
        (tmp_path / f"{n}.png").write_bytes(png)
    (tmp_path / "atlas.json").write_text(json.dumps({"fast": True, "figures": rows}))
    md = hook.gallery_markdown(hook.figure_rows(), hook.read_atlas(tmp_path), full)
    for name, why in full.pending.items():
        section = md.split(f"## {name}: ")[1].split("\n## ")[0]
        assert f"](gallery/{name}.png)" not in section and f"](atlas/{name}.png)" in section
        assert f"the image is the `--fast` preset ({hook.markdown_text(why)})" in section
    for name in full.figures:
        section = md.split(f"## {name}: ")[1].split("\n## ")[0]
        big = section.index(f"](gallery/{name}.png)")
        small = section.index(f"](atlas/{name}.png){{ width=")
        assert big < section.index("**Shown here** (the paper's settings)") < small, name
        assert small < section.index("**What CI checks** (small image: the `--fast` preset")
    assert "made once by `gaussmix figure all --out DIR`" in md
    n_pending = len(full.pending)
    del full.figures[next(iter(full.figures))]
    md = hook.gallery_markdown(hook.figure_rows(), hook.read_atlas(tmp_path), full)
    assert md.count("not in the committed gallery: the image is the `--fast` preset") == (
        n_pending + 1
    )


def test_the_built_gallery_shows_both_images() -> None:
    """The site built as CI builds it (``GAUSSMIX_SITE_DIR``, with the --fast atlas): the
    gallery page has each figure's image at the paper's settings (but those pending) and its
    --fast image, and the site holds the files."""
    import os
    from html.parser import HTMLParser

    from conftest import skip_optional

    site = os.environ.get("GAUSSMIX_SITE_DIR")
    if not site or not (Path(site) / "gallery" / "index.html").is_file():
        skip_optional("GAUSSMIX_SITE_DIR is not set to a built site (mkdocs build --site-dir)")
    page = Path(site) / "gallery" / "index.html"

    class Images(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.src: list[str] = []

        def handle_starttag(self, tag: str, attrs: list) -> None:
            if tag == "img":
                self.src.append(dict(attrs)["src"])

    parser = Images()
    parser.feed(page.read_text(encoding="utf-8"))
    _, manifest = _full()
    for name in FIGURES:
        assert f"../atlas/{name}.png" in parser.src, name
        assert (Path(site) / "atlas" / f"{name}.png").is_file()
    for name in (r["name"] for r in manifest["figures"]):
        assert f"{name}.png" in parser.src, name  # gallery/NAME.png, beside the page
        assert f"../atlas/{name}.png" in parser.src, name
        assert (page.parent / f"{name}.png").is_file() and (page.parent / f"{name}.csv").is_file()
