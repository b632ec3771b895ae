"""Shared fixtures for the gaussmix tests, and the one rule for optional resources.

A test that needs something the test extra does not install (the MNIST and Fashion-MNIST
packages, Debian's Chromium, a built docs site) calls :func:`skip_optional` when it is
missing: on a bare machine the README's test command then skips it with a reason that names
how to install it.  ``.ci/run`` installs all of them and sets ``GAUSSMIX_REQUIRE_OPTIONAL=1``,
under which such a skip is reported as a *failure*, so CI proves that every one of these tests
ran.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import NoReturn

import numpy as np
import pytest

#: the prefix of every skip for a missing optional resource (the CI hook below reads it)
OPTIONAL_PREFIX = "optional resource missing:"
#: set by .ci/run: a skip for a missing optional resource fails the run
REQUIRE_ENV = "GAUSSMIX_REQUIRE_OPTIONAL"
#: seconds a test waits for work it started in the background (an explorer job, a served
#: explorer, a sweep or a notebook in a subprocess) before calling it a hang.  The suite runs
#: on two workers (``python -m pytest -n 2``) that share the cores with that work, on a machine
#: that may be busy: a wait bounds a hang, not the speed, so it is generous (a job that takes
#: 20 s alone took 250 s at a 0.44-core share); a real hang still fails, only later.
HANG = 600


def skip_optional(what: str) -> NoReturn:
    """Skip the calling test because an optional resource is missing.

    ``what`` names the resource and how to get it (e.g. the library's ``DataNotFoundError``
    message, which names the package to install).  Under ``GAUSSMIX_REQUIRE_OPTIONAL=1`` (CI)
    the skip becomes a failure.
    """
    pytest.skip(f"{OPTIONAL_PREFIX} {what}")


def require_dataset(name: str, task: str | None = None, **kwargs):
    """``gaussmix.data.load_dataset(name, task, **kwargs)``, or skip naming how to install."""
    from gaussmix.data import DataNotFoundError, load_dataset

    try:
        return load_dataset(name, task, **kwargs)
    except DataNotFoundError as exc:
        skip_optional(str(exc))


def worker_blas_threads(workers: int, cores: int) -> int:
    """The BLAS threads of one of ``workers`` test workers on ``cores`` cores: its share,
    at least one."""
    return max(1, cores // max(1, workers))


def pytest_configure(config) -> None:
    """On a test worker (``python -m pytest -n 2``, pytest-xdist) BLAS runs on the worker's
    share of the cores by default (one thread each for two workers on two cores), as a
    sweep's joblib workers do: two workers each starting OpenBLAS's two threads
    oversubscribe the cores, and a threaded OpenBLAS beside other work was measured up to
    30x slower (``gaussmix.theory.numerics.linalg.one_blas_thread``).  Only the default
    changes: a test that sets its BLAS threads (``threadpoolctl.threadpool_limits``) gets
    them, and a serial run keeps OpenBLAS's own default.  scipy's OpenBLAS is loaded first,
    so that its pool is limited too."""
    workers = os.environ.get("PYTEST_XDIST_WORKER_COUNT")
    if os.environ.get("PYTEST_XDIST_WORKER") is None or workers is None:
        return
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on every platform
        cores = os.cpu_count() or 1
    import scipy.linalg  # noqa: F401 - scipy's own OpenBLAS, limited with numpy's
    from threadpoolctl import threadpool_limits

    threadpool_limits(worker_blas_threads(int(workers), cores), user_api="blas")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if not (report.skipped and os.environ.get(REQUIRE_ENV) == "1"):
        return
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else ""
    if OPTIONAL_PREFIX in str(reason):
        report.outcome = "failed"
        report.longrepr = (
            f"{REQUIRE_ENV}=1 (CI installs every optional resource), but this test was "
            f"skipped: {reason}"
        )


#: a directory made by ``gaussmix figure all --fast`` (CI makes it once, for the tests and
#: the docs gallery)
ATLAS_ENV = "GAUSSMIX_ATLAS_DIR"


@pytest.fixture(scope="session")
def atlas_dir(tmp_path_factory) -> Path:
    """A fast atlas: ``$GAUSSMIX_ATLAS_DIR`` if set, else made here once for the run.

    On test workers (``pytest -n 2``, pytest-xdist) it is made once for all of them, in the
    run's shared temporary directory: the first worker to need it makes it under a file lock,
    the others wait for the lock and then read it.  A figure that failed for lack of its data
    set (MNIST, Fashion-MNIST) is allowed here (:func:`require_figure` skips the tests that
    read it); any other failure is not.
    """
    from gaussmix.figures.paper_atlas import ATLAS_FILE

    given = os.environ.get(ATLAS_ENV)
    if given:
        path = Path(given)
        summary = path / ATLAS_FILE
        assert summary.is_file(), f"{ATLAS_ENV}={given} has no {ATLAS_FILE}"
        assert json.loads(summary.read_text())["fast"], f"{given} is not a --fast atlas"
        return path
    try:
        import fcntl  # (POSIX: on Windows each worker makes its own, as one process does)
    except ImportError:
        fcntl = None
    if os.environ.get("PYTEST_XDIST_WORKER") is None or fcntl is None:  # its own directory
        out = tmp_path_factory.mktemp("atlas")
        _make_atlas(out)
        return out
    shared = tmp_path_factory.getbasetemp().parent  # the run's, above each worker's own
    out, done = shared / "atlas", shared / "atlas.done"
    with open(shared / "atlas.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not done.is_file():  # the first worker here; or the first failed, and so will this
            shutil.rmtree(out, ignore_errors=True)
            out.mkdir()
            _make_atlas(out)
            done.touch()
    return out


def _make_atlas(out: Path) -> None:
    """``gaussmix figure all --fast --out out``, failing unless every figure was made or
    failed only for lack of its data set."""
    from _cli_helpers import run

    code, _, err = run("figure", "all", "--fast", "--out", str(out), "-q")
    failed = [f for f in _atlas_figures(out) if f["status"] != "ok"]
    other = [f for f in failed if not str(f.get("error", "")).startswith("DataNotFoundError")]
    assert code == 0 or (failed and not other), err


def _atlas_figures(atlas: Path) -> list[dict]:
    """The figures of ``atlas / atlas.json`` (none for a directory of single figures)."""
    from gaussmix.figures.paper_atlas import ATLAS_FILE

    summary = atlas / ATLAS_FILE
    return json.loads(summary.read_text())["figures"] if summary.is_file() else []


def require_figure(atlas: Path, name: str) -> None:
    """Skip (``skip_optional``) if figure ``name`` of the atlas could not be made for lack
    of its data set."""
    for f in _atlas_figures(atlas):
        if f["name"] == name and f["status"] != "ok":
            skip_optional(f"figure {name} of the atlas: {f.get('error', '')}")


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(12345)


@pytest.fixture
def stacked_calls(monkeypatch) -> list[bool]:
    """Whether each curve was solved stacked (True) or fell back (False): the curves'
    calls of :func:`gaussmix.experiments.continuation.solve_points`."""
    from gaussmix.experiments import continuation, curves

    calls: list[bool] = []
    solve = continuation.solve_points

    def spy(problems, opts, **kw):
        out = solve(problems, opts, **kw)
        calls.append(out is not None)
        return out

    monkeypatch.setattr(curves, "solve_points", spy)
    return calls
