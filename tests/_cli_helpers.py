"""Helpers shared by the command-line tests: run ``gaussmix`` in-process and check its
one-line error contract."""

from __future__ import annotations

import contextlib
import io
import json
import signal
import subprocess
from pathlib import Path
from typing import IO

import numpy as np

from gaussmix.cli.commands import main


class _Terminal(io.StringIO):
    """A captured stream that says it is a terminal (progress bars are drawn only there)."""

    def isatty(self) -> bool:
        return True


def run(*args: str, tty: bool = False) -> tuple[int, str, str]:
    """Run ``gaussmix *args`` in-process; return (exit status, stdout, stderr).  With
    ``tty=True`` stderr behaves as a terminal."""
    out, err = io.StringIO(), (_Terminal() if tty else io.StringIO())
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def run_json(*args: str) -> dict:
    """Run ``gaussmix *args --json``; it must succeed and print one JSON object on one line."""
    code, out, err = run(*args, "--json")
    assert code == 0, err
    assert out.count("\n") == 1, "one JSON object on one line"
    return json.loads(out)


def assert_one_line_error(code: int, out: str, err: str, *needles: str, status: int = 2) -> None:
    """Exit ``status``, nothing on stdout, exactly one ``gaussmix: error:`` line on stderr
    containing every needle, and no traceback."""
    assert code == status, (code, err)
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("gaussmix: error: "), err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


def bad_mixture_files(mixture, folder: Path) -> dict[str, Path]:
    """Files in ``folder`` that are not valid mixture files, by a part of the message that
    refuses each: not an ``.npz``, covariances of the wrong shape, a covariance that is not
    positive semi-definite (from the dense ``mixture``, saved as ``good.npz``), no file."""
    mixture.save(folder / "good.npz")
    with np.load(folder / "good.npz") as f:
        entries = {k: f[k] for k in f.files}
    k, d = entries["means"].shape
    files = {}
    text = folder / "text.npz"
    text.write_text("not a zip\n")
    files["not a readable .npz file"] = text
    shape = folder / "shape.npz"
    np.savez(shape, **{**entries, "covariances": entries["covariances"][:, :-1, :-1]})
    files[f"covariances must have shape ({k}, {d}, {d}), got ({k}, {d - 1}, {d - 1})"] = shape
    cov = entries["covariances"].copy()
    cov[k - 1, 0, 0] = -1.0
    psd = folder / "psd.npz"
    np.savez(psd, **{**entries, "covariances": cov})
    files[f"covariances[{k - 1}] must be positive semi-definite"] = psd
    files["no such file"] = folder / "absent.npz"
    return files


def default_signals() -> None:
    """In a child process, before exec (``preexec_fn``): SIGINT handled (a shell may start
    the tests with it ignored, and the child would inherit that) and not blocked."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def start_in_session(
    cmd: list[str], env: dict[str, str], stderr: IO[str] | int = subprocess.PIPE
) -> subprocess.Popen:
    """``cmd`` started in its own session (so that a signal to its process group reaches
    it and its children, as a terminal's Ctrl-C does) with SIGINT handled, its output
    piped as text; its error stream piped too, or written to ``stderr`` (a file: a
    long-running server whose errors nobody reads while it runs must not block on a
    full pipe)."""
    return subprocess.Popen(
        cmd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
        start_new_session=True,
        preexec_fn=default_signals,
    )
