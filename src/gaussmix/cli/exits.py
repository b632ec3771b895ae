"""The exit statuses of ``gaussmix``: one table, and the one place that maps an exception to
its status and its one-line message (:func:`classify`), and that checks an output path
before anything is created (:func:`check_output_path`, :func:`make_out_dir`).

=====  ===================================================================================
code   meaning
=====  ===================================================================================
0      success
1      an unexpected internal error (a bug: please report it), or ``figure all`` with a
       figure that failed (the others are made)
2      bad input: an option's value (or a problem too large for the memory), a missing
       data set, an unusable output path (not writable, a file where a directory is
       needed, a read-only file system); nothing is written
3      no fixed point, or partial results: the points that did not converge are written
       as NaN with ``converged`` False and counted on stderr
4      the distributed scheduler was lost during a sweep: the finished points are in the
       checkpoint, and the same command resumes
130    interrupted (Ctrl-C, SIGINT); a sweep's finished points are in its checkpoint
=====  ===================================================================================

Only :mod:`gaussmix.cli.commands` and this module import typer; nothing here imports click
(click's exceptions are recognised by class name, see :func:`is_a`).
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import numpy as np

from gaussmix.core.exceptions import ConvergenceError, GaussmixError, SchedulerLostError

__all__ = [
    "EXIT_OK",
    "EXIT_ERROR",
    "EXIT_BAD_INPUT",
    "EXIT_NO_FIXED_POINT",
    "EXIT_SCHEDULER_LOST",
    "EXIT_INTERRUPTED",
    "EXIT_CODES",
    "OutputPathError",
    "PartialResultsError",
    "SchedulerLostError",
    "Interrupted",
    "classify",
    "check_output_path",
    "make_out_dir",
]

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_BAD_INPUT = 2
EXIT_NO_FIXED_POINT = 3
EXIT_SCHEDULER_LOST = 4
EXIT_INTERRUPTED = 130

#: every status the command line returns, with its meaning (the table of the README and of
#: the docs' "Command line")
EXIT_CODES: dict[int, str] = {
    EXIT_OK: "success",
    EXIT_ERROR: "internal error (a bug), or figure all with a failed figure",
    EXIT_BAD_INPUT: "bad input or unusable output path (nothing written)",
    EXIT_NO_FIXED_POINT: "no fixed point, or partial results (non-converged points marked)",
    EXIT_SCHEDULER_LOST: "distributed scheduler lost during a sweep (finished points kept)",
    EXIT_INTERRUPTED: "interrupted (SIGINT)",
}


class OutputPathError(GaussmixError, OSError):
    """An output path that cannot be used (exit 2); the message names the option."""


class PartialResultsError(ConvergenceError):
    """Some points have no fixed point; what there is was written (exit 3)."""


class Interrupted(GaussmixError):
    """A command interrupted (SIGINT), with what was kept and how to resume (exit 130)."""


def is_a(exc: BaseException, name: str) -> bool:
    """Whether ``exc`` is an instance of a class called ``name``: typer raises click's
    exceptions, from the ``click`` package or from the copy it vendors (typer >= 0.20), so
    they are recognised by class name."""
    return any(c.__name__ == name for c in type(exc).__mro__)


def classify(exc: BaseException) -> tuple[int, str]:
    """The exit status and the one-line message of an exception that ended a command.

    Click's own exceptions (usage errors, ``--help``) are handled by the caller; anything
    not recognised here is an internal error (status 1).
    """
    if isinstance(exc, KeyboardInterrupt) or is_a(exc, "Abort"):
        return EXIT_INTERRUPTED, "interrupted"
    if isinstance(exc, Interrupted):
        return EXIT_INTERRUPTED, str(exc)
    if isinstance(exc, SchedulerLostError):
        return EXIT_SCHEDULER_LOST, str(exc)
    if isinstance(exc, ConvergenceError):
        return EXIT_NO_FIXED_POINT, str(exc)
    if isinstance(exc, np.linalg.LinAlgError | ArithmeticError):
        return EXIT_NO_FIXED_POINT, f"numerical failure: {exc}"
    if isinstance(exc, MemoryError):  # a problem too large for this machine
        return EXIT_BAD_INPUT, f"out of memory: the problem is too large ({exc})"
    if isinstance(exc, ValueError | TypeError | OutputPathError):
        return EXIT_BAD_INPUT, str(exc)
    if isinstance(exc, OSError):
        return EXIT_BAD_INPUT, _os_message(exc)
    if isinstance(exc, GaussmixError):
        return EXIT_ERROR, str(exc)
    return EXIT_ERROR, f"internal error ({type(exc).__name__}): {exc}"


def _os_message(exc: OSError) -> str:
    """``exc`` as a sentence naming the file, with EROFS said as a read-only file system."""
    if exc.filename is None or exc.strerror is None:
        return str(exc)
    return f"cannot write {str(exc.filename)!r}: {_reason(exc.errno, exc.strerror)}"


def _reason(code: int | None, strerror: str | None) -> str:
    if code == errno.EROFS:
        return "read-only file system"
    if code in (errno.EACCES, errno.EPERM):
        return "permission denied"
    return (strerror or "cannot be written").lower()


def _read_only(path: Path) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def check_output_path(option: str, path: Path, *, kind: str) -> None:
    """Check that ``path`` can be made an output directory (``kind='dir'``) or file
    (``kind='file'``) without creating anything: an existing ``path`` has the right kind,
    and its nearest existing ancestor is a writable directory on a writable file system.

    Raises
    ------
    OutputPathError
        Naming ``option``, the path and the reason.
    """
    path = Path(path)
    if path.exists():
        if kind == "dir" and not path.is_dir():
            raise OutputPathError(f"{option}: {str(path)!r} is a file, not a directory")
        if kind == "file" and path.is_dir():
            raise OutputPathError(
                f"{option}: {str(path)!r} is a directory; give a file name such as out.csv"
            )
    target = path.absolute() if kind == "dir" else path.absolute().parent
    existing = target
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise OutputPathError(
            f"{option}: cannot write {str(path)!r}: {str(existing)!r} is a file, not a directory"
        )
    if _read_only(existing):
        raise OutputPathError(
            f"{option}: cannot write {str(path)!r}: read-only file system at {str(existing)!r}"
        )
    if not os.access(existing, os.W_OK | os.X_OK):
        verb = "write to" if existing == target else "create"
        raise OutputPathError(
            f"{option}: cannot write {str(path)!r}: permission denied to {verb} the "
            f"directory {str(target)!r}"
        )


def make_out_dir(out: Path, option: str = "--out") -> Path:
    """Create the output directory ``out`` (checked by :func:`check_output_path` first);
    call it only after every other input was validated."""
    out = Path(out)
    check_output_path(option, out, kind="dir")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputPathError(
            f"{option}: cannot create directory {str(out)!r}: {_reason(exc.errno, exc.strerror)}"
        ) from None
    return out
