"""The explorer's status line (gaussmix.explore.status): the words the page shows for a
curve job, and its running clock."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from gaussmix.explore.status import CLOCK_FROM_S, curve_status, running_seconds


def _job(**kw: object) -> SimpleNamespace:
    base = dict(
        error=None,
        cancelled=False,
        done=False,
        cached=False,
        progress=(0, 40),
        preview=[],
        refining=False,
        started=100.0,
    )
    return SimpleNamespace(**{**base, **kw})


def test_a_running_job_says_computing_and_how_far() -> None:
    assert curve_status(_job(progress=(3, 40)), now=100.2) == "computing: 3 of 40 points"
    coarse = _job(preview=[{}] * 4)
    assert curve_status(coarse, now=100.2) == "computing: a coarse curve first (4 points)"
    refining = _job(preview=[{}] * 10, refining=True, progress=(7, 40))
    assert curve_status(refining, now=100.2) == (
        "computing: refining... 7 of 40 points in place of the coarse curve"
    )


def test_the_clock_shows_whole_seconds_from_clock_from_s_while_running() -> None:
    job = _job(progress=(0, 40))
    assert running_seconds(job, now=100.0 + CLOCK_FROM_S / 2) is None
    assert running_seconds(job, now=100.0 + CLOCK_FROM_S) == int(CLOCK_FROM_S)
    assert running_seconds(job, now=112.7) == 12
    assert curve_status(job, now=112.7) == "computing: 0 of 40 points, 12 s"
    # a job that has ended shows no clock
    job.done, job.progress = True, (40, 40)
    assert running_seconds(job, now=112.7) is None
    assert curve_status(job, now=112.7) == "40 of 40 points"


@pytest.mark.parametrize(
    ("kw", "text"),
    [
        ({"error": "lam must be >= 0"}, "**Not computed**: lam must be >= 0"),
        ({"cancelled": True}, "cancelled (a newer request replaced it)"),
        ({"done": True, "progress": (5, 5), "cached": True}, "5 of 5 points (cached)"),
    ],
)
def test_an_ended_job_says_how_it_ended(kw: dict, text: str) -> None:
    assert curve_status(_job(**kw), now=130.0) == text
