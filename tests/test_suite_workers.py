"""The test suite's own set-up on two workers (``python -m pytest -n 2``): each worker's BLAS
pools on its share of the cores (``conftest.pytest_configure``)."""

from __future__ import annotations

import os

from conftest import worker_blas_threads
from threadpoolctl import threadpool_info, threadpool_limits


def test_a_workers_share_of_the_cores() -> None:
    assert worker_blas_threads(2, 2) == 1
    assert worker_blas_threads(2, 8) == 4
    assert worker_blas_threads(4, 2) == 1  # at least one
    assert worker_blas_threads(1, 2) == 2


def test_blas_runs_on_the_workers_share() -> None:
    """On a worker every BLAS pool (numpy's and scipy's OpenBLAS) is at the worker's share
    by default, and a test that asks for more threads still gets them."""
    import scipy.linalg  # noqa: F401 - its own OpenBLAS

    workers = os.environ.get("PYTEST_XDIST_WORKER_COUNT")
    pools = [p for p in threadpool_info() if p["user_api"] == "blas"]
    assert pools
    if os.environ.get("PYTEST_XDIST_WORKER") is None or workers is None:
        return  # a serial run: OpenBLAS's own default, whatever it is
    share = worker_blas_threads(int(workers), len(os.sched_getaffinity(0)))
    assert {p["num_threads"] for p in pools} == {share}, pools
    with threadpool_limits(2, user_api="blas"):
        assert {p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"} == {2}
    assert {p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"} == {share}
