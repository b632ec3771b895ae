"""The covariance protocol (every structure answers name, fingerprint, check_dim, realise,
describe), mixture files (Mixture.save / Mixture.load) and the sweep's checkpoint keys over
every structure, old checkpoints included."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import gaussmix as gm
from gaussmix.cli.grid import run_grid
from gaussmix.sweep import PointSpec, point_key, sweep
from gaussmix.theory.model.covariance import STRUCTURES, CovarianceStructure
from gaussmix.theory.model.mixture import MIXTURE_FILE_VERSION, load_mixture

FIXTURES = Path(__file__).parent / "fixtures" / "checkpoint_v3"


def _dense(k: int = 3, d: int = 12, seed: int = 0) -> gm.Mixture:
    """A mixture fitted to ``k`` Gaussian classes in dimension ``d`` (distinct covariances)."""
    rng = np.random.default_rng(seed)
    X, y = [], []
    for c in range(k):
        A = rng.standard_normal((d, d)) / np.sqrt(d) * (0.5 + 0.5 * c)
        X.append(rng.standard_normal((4 * d, d)) @ A.T + rng.standard_normal(d))
        y += [c] * (4 * d)
    return gm.Mixture.from_data(np.vstack(X), np.array(y))


def mixtures() -> dict[str, gm.Mixture]:
    """One mixture of every model (and so of every structure)."""
    rng = np.random.default_rng(0)
    return {
        "isotropic": gm.Mixture.isotropic([0.5, 1.0, 2.0], "simplex", rho=[0.2, 0.3, 0.5]),
        "block": gm.Mixture.block([0.25, 0.75], [0.5, 2.0]),
        "sparse": gm.Mixture.sparse(0.2, 0.5, 1.0),
        "spectral": gm.Mixture.spectral(
            rng.uniform(0.5, 2.0, (8, 2)), rng.normal(size=(8, 2)), labels="binary"
        ),
        "dense": _dense(),
    }


# ---------------------------------------------------------------------------- the protocol
@pytest.mark.parametrize("kind", list(mixtures()))
def test_every_structure_answers_the_protocol(kind: str) -> None:
    mix = mixtures()[kind]
    cov = mix.covariance
    assert isinstance(cov, CovarianceStructure)
    assert STRUCTURES.get(cov.name) is type(cov)
    assert cov.structure in ("spectral", "dense")  # the families the priors know
    line = cov.describe()
    assert isinstance(line, str) and "\n" not in line and f"K = {mix.n_clusters}" in line
    # the fingerprint is content-based: equal for an equal mixture built again, different
    # when one number changes, the same in another process
    again = mixtures()[kind]
    assert again is not mix and again.fingerprint() == mix.fingerprint()
    assert cov.fingerprint() == again.covariance.fingerprint()
    other = gm.Mixture(
        rho=mix.rho, labels=mix.labels, covariance=cov.permute(np.arange(mix.n_clusters)[::-1])
    )
    assert other.fingerprint() != mix.fingerprint()
    # realise: the structure decides which d it exists in
    d = mix.covariance.dim if kind == "dense" else (8 if kind == "spectral" else 9)
    r = cov.realise(d, np.random.default_rng(1))
    assert r.means.shape == (mix.n_clusters, d) and r.variances.shape == (mix.n_clusters, d)
    assert (r.factors is not None) == (kind == "dense")
    if kind in ("isotropic", "spectral", "dense"):  # these realise their law exactly
        np.testing.assert_allclose(r.means @ r.means.T, mix.gram, atol=1e-12, rtol=1e-12)
    if kind in ("isotropic", "spectral", "dense"):
        with pytest.raises(ValueError, match=r"^d must "):
            cov.check_dim(2 if kind == "isotropic" else d + 1)
    with pytest.raises(ValueError, match="--d must be an integer >= 2, got 0"):
        cov.check_dim(0, "--d")


def test_fingerprint_is_the_same_in_another_process() -> None:
    code = (
        "import numpy as np, gaussmix as gm\n"
        "rng = np.random.default_rng(5)\n"
        "X = rng.standard_normal((60, 7)); y = np.repeat([0, 1, 2], 20)\n"
        "print(gm.Mixture.from_data(X, y).fingerprint())\n"
    )
    rng = np.random.default_rng(5)
    X, y = rng.standard_normal((60, 7)), np.repeat([0, 1, 2], 20)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == gm.Mixture.from_data(X, y).fingerprint()


# ---------------------------------------------------------------------------- files
@pytest.mark.parametrize("kind", list(mixtures()))
def test_save_then_load_gives_the_same_mixture_to_the_bit(kind: str, tmp_path: Path) -> None:
    mix = mixtures()[kind]
    mix.save(tmp_path / "m")  # numpy's rule: '.npz' is added
    back = gm.Mixture.load(tmp_path / "m.npz")
    assert type(back.covariance) is type(mix.covariance) and back.kind == mix.kind
    assert back.labels.kind == mix.labels.kind and back.info == mix.info
    np.testing.assert_array_equal(back.rho, mix.rho)
    np.testing.assert_array_equal(back.labels.labels, mix.labels.labels)
    for name, a in mix.covariance.arrays().items():
        b = back.covariance.arrays()[name]
        assert (a is None and b is None) or np.array_equal(a, b), name
    assert back.fingerprint() == mix.fingerprint()
    assert back.describe() == mix.describe()
    # the same theory, bit for bit
    loss = "square"
    r1 = gm.solve(mix, loss, lam=0.3, alpha=1.5)
    r2 = gm.solve(back, loss, lam=0.3, alpha=1.5)
    assert r1.test_error == r2.test_error and np.array_equal(r1.Q, r2.Q)
    assert load_mixture(tmp_path / "m.npz").fingerprint() == mix.fingerprint()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.npz"]  # no temporary left


def _entries(mix: gm.Mixture, tmp_path: Path) -> dict[str, np.ndarray]:
    mix.save(tmp_path / "good.npz")
    with np.load(tmp_path / "good.npz") as f:
        return {k: f[k] for k in f.files}


def _bad_psd(e: dict) -> dict:
    cov = e["covariances"].copy()
    v = np.zeros(cov.shape[1])
    v[0] = 1.0
    cov[1] -= 5.0 * np.outer(v, v) * (1.0 + cov[1, 0, 0])
    return {**e, "covariances": cov}


BAD_DENSE = [
    (lambda e: {k: v for k, v in e.items() if k != "rho"}, r"missing entries \['rho'\]"),
    (lambda e: {k: v for k, v in e.items() if k != "covariances"}, "missing entries"),
    (lambda e: {**e, "version": np.int64(99)}, "format version 99 is not supported"),
    (lambda e: {**e, "structure": np.str_("toeplitz")}, "structure must be one of"),
    (lambda e: {**e, "extra": np.zeros(2)}, r"unknown entries \['extra'\]"),
    (lambda e: {**e, "means": e["means"][:, :-1]}, "covariances must have shape"),
    (
        lambda e: {**e, "rho": np.full(2, 0.5)},
        r"rho has shape \(2,\) but the dense structure has K = 3",
    ),
    (lambda e: {**e, "labels": np.eye(2)}, r"labels has shape \(2, 2\) but the dense .* K = 3"),
    (lambda e: {**e, "rho": np.full(3, 0.5)}, "rho must sum to 1"),
    (lambda e: {**e, "means": e["means"] * np.nan}, "means must contain only finite"),
    (_bad_psd, r"covariances\[1\] must be positive semi-definite"),
    (lambda e: {**e, "version": np.str_("1")}, "entry 'version' must be an integer"),
    (lambda e: {**e, "info": np.str_("[1]")}, "entry 'info' must hold a JSON object"),
]


@pytest.mark.parametrize(("change", "match"), BAD_DENSE)
def test_a_malformed_mixture_file_is_refused_in_one_line(change, match, tmp_path: Path) -> None:
    entries = change(_entries(_dense(k=3, d=6), tmp_path))
    bad = tmp_path / "bad.npz"
    np.savez(bad, **entries)
    with pytest.raises(ValueError, match=match) as info:
        gm.Mixture.load(bad)
    msg = str(info.value)
    assert msg.startswith(f"mixture file {str(bad)!r}: ") and "\n" not in msg


def test_files_that_are_not_mixture_files(tmp_path: Path) -> None:
    text = tmp_path / "m.npz"
    text.write_text("means = 1\n")
    npy = tmp_path / "a.npy"
    np.save(npy, np.eye(2))
    truncated = tmp_path / "t.npz"
    mixtures()["block"].save(truncated)
    truncated.write_bytes(truncated.read_bytes()[:100])
    pickled = tmp_path / "p.npz"
    np.savez(pickled, version=np.array([{"a": 1}], dtype=object))
    cases = [
        (text, "not a readable .npz file"),
        (npy, "not an .npz archive"),
        (truncated, "not a readable .npz file"),
        (tmp_path / "absent.npz", "no such file"),
        (tmp_path, "is a directory"),
        (pickled, "not a readable .npz file"),
    ]
    for path, match in cases:
        with pytest.raises(ValueError, match=match) as info:
            gm.Mixture.load(path)
        assert "\n" not in str(info.value)
    assert zipfile.is_zipfile(tmp_path / "p.npz")


# ---------------------------------------------------------------------------- sweeps
def _old_specs() -> list[PointSpec]:
    """The library points of the fixture (``specs()`` of its make.py, which wrote it)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("checkpoint_v3_make", FIXTURES / "make.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.specs()


def test_checkpoints_written_before_the_protocol_still_resume(tmp_path: Path) -> None:
    """Checkpoints written by gaussmix at 5a24a11 (before the covariance protocol): every
    point's key is found again, nothing is recomputed, the rows are the checkpoint's own
    numbers to the bit, and a fresh run's errors agree with them to the solver's tolerance
    (tol = 1e-8; the convergence test of small overlap blocks became relative since, which
    moves some points' last digits: at most 3e-9 on these errors)."""
    for name in ("specs", "grid"):
        shutil.copy(FIXTURES / f"{name}.checkpoint.jsonl", tmp_path / f"{name}.jsonl")
    old = sweep(_old_specs(), checkpoint=tmp_path / "specs.jsonl", backend="serial",
                progress=False)  # fmt: skip
    assert (old.computed, old.resumed) == (0, 8)
    stored = [
        json.loads(line)["row"]
        for line in (FIXTURES / "specs.checkpoint.jsonl").read_text().splitlines()
    ]
    for col in ("test_error", "train_error", "train_loss", "Q", "M", "V", "b"):
        got = [json.loads(v) if isinstance(v, str) else v for v in old.df[col]]
        assert sorted(map(json.dumps, got)) == sorted(json.dumps(r[col]) for r in stored), col
    fresh = sweep(_old_specs(), backend="serial", progress=False)
    for col in ("test_error", "train_error", "train_loss"):
        np.testing.assert_allclose(old.df[col], fresh.df[col], rtol=0, atol=1e-8)
    grid = run_grid(FIXTURES / "grid.toml", checkpoint=tmp_path / "grid.jsonl",
                    backend="serial", progress=False)  # fmt: skip
    assert (grid.computed, grid.resumed) == (0, 4)


def test_a_sweep_over_a_dense_mixture_resumes_from_its_checkpoint(tmp_path: Path) -> None:
    mix = _dense()
    specs = [
        PointSpec(mix, "cross-entropy", lam=lam, alpha=a, coords={"lam": lam, "alpha": a})
        for lam in (0.5, 1.0)
        for a in (1.0, 2.0)
    ]
    ck = tmp_path / "ck.jsonl"
    full = sweep(specs, backend="serial", progress=False)
    assert full.df["converged"].all()
    sweep(specs, checkpoint=ck, backend="serial", progress=False)
    lines = ck.read_bytes().splitlines(keepends=True)
    ck.write_bytes(b"".join(lines[:2]) + lines[2][:40])  # killed after two points
    res = sweep(specs, checkpoint=ck, backend="serial", progress=False)
    assert (res.computed, res.resumed) == (2, 2)
    pd.testing.assert_frame_equal(res.df, full.df, check_exact=True)
    # the key reads the content: a mixture loaded from a file has the same keys
    mix.save(tmp_path / "m.npz")
    loaded = gm.Mixture.load(tmp_path / "m.npz")
    assert point_key(specs[0]) == point_key(
        PointSpec(loaded, "cross-entropy", lam=0.5, alpha=1.0, coords={"lam": 0.5, "alpha": 1.0})
    )
    assert MIXTURE_FILE_VERSION == 1


# ---------------------------------------------------------------------------- the rule
LAYERS_ABOVE = ("sweep", "simulate", "experiments", "figures", "cli", "studies")


def _dispatches_on_mixtures(path: Path, names: set[str]) -> list[str]:
    """``isinstance`` / names of the structure classes and comparisons with a model or
    structure name in one source file."""
    import ast

    tree = ast.parse(path.read_text())
    found = []
    classes = {cls.__name__ for cls in STRUCTURES}
    for node in ast.walk(tree):
        ident = getattr(node, "id", None) or getattr(node, "attr", None)
        if isinstance(node, ast.Name | ast.Attribute) and ident in classes:
            found.append(f"{path.name}:{node.lineno}: {ident}")
        if isinstance(node, ast.Compare):
            for side in (node.left, *node.comparators):
                values = side.elts if isinstance(side, ast.Tuple | ast.List | ast.Set) else [side]
                for v in values:
                    if isinstance(v, ast.Constant) and v.value in names:
                        found.append(f"{path.name}:{node.lineno}: compares with {v.value!r}")
    return found


def test_no_layer_above_the_theory_dispatches_on_a_mixture_model_or_structure(
    tmp_path: Path,
) -> None:
    """The layers ask the structure (the protocol) or the model's declaration
    (MIXTURE_MODELS); none tests a class or a model / structure name itself."""
    from gaussmix.theory.model.mixture import MIXTURE_MODELS

    names = set(MIXTURE_MODELS.names()) | set(STRUCTURES.names())
    src = Path(gm.__file__).parent
    found = [
        hit
        for layer in LAYERS_ABOVE
        for path in sorted((src / layer).rglob("*.py"))
        for hit in _dispatches_on_mixtures(path, names)
    ]
    assert found == []
    # the check finds what it looks for
    probe = tmp_path / "probe.py"
    probe.write_text(
        'ok = isinstance(cov, DenseCovariance)\nblock = opts.model == "block"\n'
        'full = name in ("dense", "x")\n'
    )
    assert sorted(_dispatches_on_mixtures(probe, names)) == [
        "probe.py:1: DenseCovariance",
        "probe.py:2: compares with 'block'",
        "probe.py:3: compares with 'dense'",
    ]
