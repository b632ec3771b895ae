"""Figures take any mixture: the figures whose set-up is a mixture and curves over alpha or
lambda (``FigureSpec.takes_mixture``) drawn on a saved dense mixture and a saved spectral
one, in Python (``mixture=``) and on the command line (``--mixture FILE``), their theory
the numbers of ``gm.learning_curve`` / ``gm.lambda_sweep`` on the same mixture to the bit,
their title, caption, table and JSON naming the mixture; the figures tied to the paper's
mixtures refuse one in one line, and nothing is written on a refusal."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _cli_helpers import assert_one_line_error, bad_mixture_files, run
from _helpers import random_spd

import gaussmix as gm
from gaussmix.figures import FIGURES, FigureSpec, fig3_left, fig3_right, fig4_left, write_figure

D = 12
LAMS = (0.1, 1.0)
ALPHAS = (0.5, 2.0)
#: the theory's columns that must be the library's numbers
NUMBERS = ("test_error", "train_error", "train_loss", "n_iter")


def _dense() -> gm.Mixture:
    """Three one-hot clusters in d = 12 with random positive-definite covariances."""
    rng = np.random.default_rng(0)
    means = 2.0 * rng.standard_normal((3, D)) / np.sqrt(D)
    covs = np.stack([random_spd(rng, D, 0.05, 1.5) for _ in range(3)])
    return gm.Mixture.dense(means, covs)


def _spectral() -> gm.Mixture:
    """Three one-hot clusters on two blocks of directions with their own variances."""
    return gm.Mixture.block([0.3, 0.7], [0.2, 1.0], means="simplex", labels="onehot",
                            n_clusters=3)  # fmt: skip


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> dict[str, tuple[gm.Mixture, Path]]:
    """Each mixture as loaded back from its file (the mixture the command line draws)."""
    folder = tmp_path_factory.mktemp("mixtures")
    out = {}
    for name, mix in (("dense", _dense()), ("spectral", _spectral())):
        path = folder / f"{name}.npz"
        mix.save(path)
        out[name] = (gm.Mixture.load(path), path)
    return out


def _same_theory(df: pd.DataFrame, ref: pd.DataFrame) -> None:
    """The figure's theory columns are the library's numbers, to the bit."""
    assert len(df) == len(ref)
    for key in NUMBERS:
        np.testing.assert_array_equal(df[key].to_numpy(), ref[key].to_numpy(), err_msg=key)
    assert df["converged"].all()


def _lambda_curves(df: pd.DataFrame, mix: gm.Mixture, loss: str) -> None:
    for alpha, g in df.groupby("alpha", sort=False):
        ref = gm.lambda_sweep(mix, loss, g["lam"].to_numpy(), alpha=float(alpha))
        _same_theory(g.reset_index(drop=True), ref)


def _provenance(out_dir: Path, name: str, mix: gm.Mixture, path: Path | None) -> dict:
    """The CSV, the title, the caption and the JSON name the mixture."""
    fp = mix.fingerprint()
    df = pd.read_csv(out_dir / f"{name}.csv")
    assert set(df["fingerprint"]) == {fp}
    assert set(df["mixture"]) == {mix.covariance.describe()}
    info = json.loads((out_dir / f"{name}.json").read_text())
    assert fp in info["title"] and mix.covariance.describe() in info["title"]
    assert info["caption"].startswith(FIGURES[name].mixture_caption)
    assert (
        f"Mixture: {mix.covariance.describe()} (model {mix.kind}), fingerprint {fp}"
        in (info["caption"])
    )
    entry = info["mixture"]
    assert entry["fingerprint"] == fp and entry["structure"] == mix.covariance.describe()
    assert entry["n_clusters"] == mix.n_clusters and entry["kind"] == mix.kind
    assert "mixture" not in info["arguments"]
    if path is None:
        assert "file" not in entry and "sha256" not in entry
    else:
        assert entry["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
        assert entry["file"] == str(path) and path.name in info["caption"]
    return info


# ---------------------------------------------------------------------------- Python
@pytest.mark.parametrize("kind", ["dense", "spectral"])
def test_lambda_figures_draw_any_mixture_in_python(saved, kind: str, tmp_path: Path) -> None:
    mix, _ = saved[kind]
    with pytest.warns(UserWarning, match="bayes_optimal_hook is not drawn on this mixture"):
        res = write_figure("fig3-right", tmp_path, mixture=mix, lams=LAMS, alphas=ALPHAS)
    _lambda_curves(res.data, mix, "cross-entropy")
    assert res.data["bayes_error"].isna().all()  # needs isotropic covariances: not drawn
    assert list(res.data.columns[:5]) == ["K", "alpha", "lam", "loss", "penalty"]
    _provenance(tmp_path, "fig3-right", mix, None)

    res = write_figure("fig4-left", tmp_path, mixture=mix, lams=LAMS, alphas=ALPHAS,
                       simulate=False)  # fmt: skip
    _lambda_curves(res.data, mix, "square")
    _provenance(tmp_path, "fig4-left", mix, None)
    best = gm.optimal_lambda(mix, "square", alpha=ALPHAS[0], lam_bounds=LAMS)
    assert res.data["lam_star"].iloc[0] == best.lam_star


def test_learning_curve_figure_draws_a_dense_mixture_with_simulations(saved) -> None:
    """fig3-left on a dense mixture: its theory is gm.learning_curve on the same grid, its
    dots gm.simulate at the mixture's own dimension; the hooks that need a spectral or
    isotropic structure leave their columns NaN with a warning naming the reason."""
    mix, _ = saved["dense"]
    with pytest.warns(UserWarning) as caught:
        df = fig3_left(alphas=ALPHAS, mixture=mix, lam=0.1, sim_alphas=[1.0], d=D, seeds=2)
    reasons = " ".join(str(w.message) for w in caught)
    assert "separability_hook is not drawn" in reasons and "dense covariance" in reasons
    assert "bayes_optimal_hook is not drawn" in reasons
    ref = gm.learning_curve(mix, "cross-entropy", df["alpha"].to_numpy(), lam=0.1)
    _same_theory(df, ref)
    assert df["alpha_star"].isna().all() and df["bayes_error"].isna().all()
    row = df[df["sim_seeds"].notna()].iloc[0]
    sim = gm.simulate(mix, loss="cross-entropy", lam=0.1, alpha=float(row["sim_alpha"]), d=D,
                      seeds=2, seed=0)  # fmt: skip
    assert row["sim_test_error"] == sim.mean["test_error"]
    assert row["sim_test_error_se"] == sim.se["test_error"]
    assert set(df["K"]) == {3} and "delta" not in df.columns


def test_an_isotropic_mixture_given_keeps_its_hooks() -> None:
    """The hooks run on a user's mixture they can take: the Bayes-optimal error of a saved
    isotropic mixture is drawn, equal to gm.bayes_optimal_error."""
    mix = gm.Mixture.isotropic([0.3, 0.5, 0.8], means="simplex", n_clusters=3)
    df = fig3_right(lams=[1.0], alphas=[1.0], mixture=mix)
    assert df["bayes_error"].iloc[0] == gm.bayes_optimal_error(mix, 1.0).test_error


def test_a_figure_refuses_what_does_not_fit_its_mixture(saved, tmp_path: Path) -> None:
    dense, _ = saved["dense"]
    cases = [
        (lambda: fig3_left(n_clusters=[2, 3], mixture=dense), ValueError, "n_clusters must not"),
        (lambda: fig3_right(mixture=dense, delta=0.5), ValueError, "delta must not be given"),
        (lambda: fig3_right(mixture=dense, n_clusters=3), ValueError, "n_clusters must not"),
        (lambda: fig4_left(mixture=dense, deltas=[0.1, 0.2]), ValueError, "deltas must not"),
        (
            lambda: fig4_left(mixture=dense, d=20),
            ValueError,
            "d must equal the dimension 12",
        ),  # fmt: skip
        (lambda: fig3_right(mixture="dense.npz"), TypeError, "mixture must be a gaussmix"),
        (
            lambda: fig3_right(mixture=gm.Mixture.isotropic(0.5, labels="binary")),
            ValueError,
            "one-hot",
        ),
    ]
    for call, error, match in cases:
        with pytest.raises(error, match=match):
            call()
    for name in ("fig3-centre", "sparse-setup", "fig5"):
        with pytest.raises(ValueError, match=f"figure {name} takes no mixture: it "):
            write_figure(name, tmp_path / "out", mixture=dense)
    assert not (tmp_path / "out").exists()


def test_the_registry_declares_which_figures_take_a_mixture() -> None:
    takes = sorted(name for name, spec in FIGURES.items() if spec.takes_mixture)
    assert takes == ["fig3-left", "fig3-right", "fig4-left"]
    for spec in FIGURES.values():  # each says either how it draws one or why it does not
        assert bool(spec.mixture_caption) != bool(spec.fixed_mixture), spec.name
    table = gm.figures.atlas().set_index("name")["mixture"]
    assert table["fig3-right"] == "any" and table["fig3-centre"].startswith("it varies K")
    spec = FIGURES["fig3-right"]
    with pytest.raises(ValueError, match="exactly one of mixture_caption .* and fixed_mixture"):
        FigureSpec(**{**spec.__dict__, "fixed_mixture": "tied"})
    with pytest.raises(ValueError, match="'mixture' parameter"):
        FigureSpec(**{**FIGURES["fig3-centre"].__dict__, "fixed_mixture": "",
                      "mixture_caption": "any"})  # fmt: skip


# ---------------------------------------------------------------------------- command line
@pytest.mark.parametrize("kind", ["dense", "spectral"])
def test_figures_take_a_mixture_file_on_the_command_line(saved, kind: str, tmp_path: Path):
    mix, path = saved[kind]
    grid = ("--lams", "0.1,1", "--alphas", "0.5,2", "--quiet")
    for name, loss, extra in (
        ("fig3-right", "cross-entropy", ()),
        ("fig4-left", "square", ("--no-simulate",)),
    ):
        out = tmp_path / name
        code, stdout, err = run("figure", name, "--mixture", str(path), *grid, *extra,
                                "--out", str(out))  # fmt: skip
        assert code == 0, err
        df = pd.read_csv(out / f"{name}.csv")
        _lambda_curves(df, mix, loss)
        _provenance(out, name, mix, path)
    if kind == "dense":  # the learning curve with its dots, at the mixture's dimension
        out = tmp_path / "fig3-left"
        code, stdout, err = run("figure", "fig3-left", "--mixture", str(path), "--alphas",
                                "0.5,2", "--lam", "0.1", "--sim-alphas", "1", "--d", str(D),
                                "--seeds", "2", "--quiet", "--out", str(out))  # fmt: skip
        assert code == 0, err
        assert "separability_hook is not drawn on this mixture" in err
        df = pd.read_csv(out / "fig3-left.csv")
        _same_theory(df, gm.learning_curve(mix, "cross-entropy", df["alpha"].to_numpy(),
                                           lam=0.1))  # fmt: skip
        _provenance(out, "fig3-left", mix, path)


def test_the_command_line_refuses_a_mixture_in_one_line(saved, tmp_path: Path) -> None:
    _, path = saved["dense"]
    out = tmp_path / "out"
    m = ("--mixture", str(path), "--out", str(out))
    cases = [
        (("fig3-centre",), "figure fig3-centre takes no --mixture: it varies K and Delta"),
        (("sparse-curves",), "figure sparse-curves takes no --mixture: it varies Delta2"),
        (("fig4-right",), "figure fig4-right takes no --mixture: it compares real data"),
        (("appe-xor-projection",), "figure appe-xor-projection takes no --mixture"),
        (("fig3-right", "--delta", "0.5"), "--delta must not be given with mixture"),
        (("fig3-right", "--n-clusters", "3"), "--n-clusters must not be given with mixture"),
        (("fig3-left", "--n-clusters", "2,3"), "--n-clusters must not be given with"),
        (("fig4-left", "--deltas", "0.1,0.2"), "--deltas must not be given with mixture"),
        (("fig4-left", "--d", "20"), "--d must equal the dimension 12"),
        (("fig3-left", "--fast"), "--d must equal the dimension 12 of the mixture"),
        (("all",), "--mixture is not an option of figure all"),
    ]
    for args, needle in cases:
        assert_one_line_error(*run("figure", *args, *m), needle)
        assert not out.exists(), args
    code, listing, err = run("figure", "--list")
    assert code == 0 and listing.count("--mixture FILE: draws any mixture") == 3, err
    binary = tmp_path / "binary.npz"
    gm.Mixture.isotropic(0.5, labels="binary").save(binary)
    code, stdout, err = run("figure", "fig3-right", "--mixture", str(binary), "--out", str(out))
    assert_one_line_error(code, stdout, err, "one-hot")
    assert not out.exists()


def test_bad_mixture_files_are_refused_by_the_figures(saved, tmp_path: Path) -> None:
    dense, _ = saved["dense"]
    folder = tmp_path / "files"
    folder.mkdir()
    out = tmp_path / "out"
    for needle, path in bad_mixture_files(dense, folder).items():
        for name in ("fig3-right", "fig4-left"):
            code, stdout, err = run("figure", name, "--mixture", str(path), "--out", str(out))
            assert_one_line_error(code, stdout, err, f"mixture file {str(path)!r}: ", needle)
            assert not out.exists()
