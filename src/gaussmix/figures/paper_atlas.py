"""The paper atlas: every registered figure, listed (:func:`atlas`) and made in one call
(:func:`make_atlas`; on the command line ``gaussmix figure --list`` and ``gaussmix figure
all --out DIR [--fast] [--n-jobs N]``).

:func:`make_atlas` writes, for every figure of :data:`~gaussmix.figures.registry.FIGURES`,
``DIR/<name>.csv``, ``.png`` and ``.json`` (:func:`~gaussmix.figures.write_figure`), and
``DIR/atlas.json``: whether the ``--fast`` presets were used, and per figure its name, its
place in the paper, its status (``'ok'`` or ``'failed'`` with the error), the wall and CPU
seconds it took, the files written, the warnings it raised and the number of points of
its table that did not converge.  A figure that fails does not stop the others.  The
file is rewritten as each figure finishes, so an interrupted run keeps what it made.

Figures are made ``n_jobs`` at a time in separate processes (joblib), one BLAS thread
each; each figure's own simulations then run on one worker.  A figure's bits do not
depend on ``n_jobs``.
"""

from __future__ import annotations

import inspect
import json
import os
import re
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import pandas as pd

from gaussmix.core.caught import caught
from gaussmix.core.jsonio import plain
from gaussmix.core.progress import progress_bar
from gaussmix.core.results import Result
from gaussmix.core.validation import check_choice, check_param
from gaussmix.core.version import __version__

from .registry import DOT_KINDS, FIGURES, FigureSpec, get_figure, write_figure

__all__ = [
    "ATLAS_FILE",
    "AtlasEntry",
    "AtlasResult",
    "atlas",
    "atlas_names",
    "make_atlas",
    "paper_order",
]

#: the summary written next to the figures
ATLAS_FILE = "atlas.json"
#: warnings of one figure kept in ``atlas.json`` (distinct messages)
MAX_WARNINGS = 20
_POSITION = {None: 0, "left": 0, "centre": 1, "right": 2}


def paper_order(paper: str) -> tuple[int, int, int]:
    """Sort key of a figure's place in the paper (:attr:`FigureSpec.paper`): Figs. 1, 2, ...
    (left, centre, right; the appendices' figures are numbered on, Figs. 7-10 of Appendix E),
    then the other places (an appendix by its letter, then a section); ties keep the
    registry's order (a stable sort)."""
    m = re.match(r"Figs?\.\s*(\d+)(?: \((left|centre|right)\))?", paper)
    if m:
        return (0, int(m.group(1)), _POSITION[m.group(2)])
    m = re.match(r"Appendix ([A-Z])", paper)
    return (1, ord(m.group(1)) if m else 99, 0)


def atlas_names() -> list[str]:
    """The registered figures' names in the paper's order."""
    return [spec.name for spec in sorted(FIGURES.values(), key=lambda s: paper_order(s.paper))]


def _dots(spec: FigureSpec) -> str:
    return " + ".join(spec.dots) if spec.dots else "none (theory only)"


def atlas() -> pd.DataFrame:
    """Every reproducible figure of the paper, one row each, in the paper's order.

    Returns
    -------
    pandas.DataFrame
        ``name`` (for ``gaussmix figure NAME``), ``paper`` (where it is in the paper),
        ``description``, ``dots`` (what is drawn besides the theory lines: ``'simulation'``,
        ``'real data'``, ``'LP'``, ``'samples'``, or ``'none (theory only)'``), ``fast``
        (what ``--fast`` changes), ``differs`` (how the figure differs from the paper's,
        with the evidence; empty when it does not: :attr:`FigureSpec.differs`),
        ``command`` and ``mixture`` (``'any'``: it takes a user's mixture, ``gaussmix
        figure NAME --mixture FILE``; else why it does not, :attr:`FigureSpec.fixed_mixture`).
    """
    rows = []
    for name in atlas_names():
        spec = FIGURES[name]
        rows.append(
            {
                "name": name,
                "paper": spec.paper,
                "description": spec.description,
                "dots": _dots(spec),
                "fast": spec.fast_note,
                "differs": spec.differs,
                "command": f"gaussmix figure {name} --out DIR",
                "mixture": "any" if spec.takes_mixture else spec.fixed_mixture,
            }
        )
    columns = ["name", "paper", "description", "dots", "fast", "differs", "command", "mixture"]
    return pd.DataFrame(rows, columns=columns)


@dataclass(frozen=True)
class AtlasEntry:
    """One figure of an atlas run.

    Attributes
    ----------
    name, paper : str
    status : {'ok', 'failed'}
    seconds, cpu_seconds : float
        Wall and CPU time of the process that made it.
    files : dict
        ``{'csv': ..., 'png': ..., 'json': ...}`` (file names in the output directory;
        empty when it failed).
    error : str or None
        ``'<ExceptionType>: <message>'`` when it failed.
    warnings : tuple of str
        The distinct warnings it raised (``'<Category>: <message>'``).
    not_converged : int
        Rows of its table with ``converged`` False.
    """

    name: str
    paper: str
    status: str
    seconds: float
    cpu_seconds: float
    files: dict[str, str] = field(default_factory=dict)
    error: str | None = None
    warnings: tuple[str, ...] = ()
    not_converged: int = 0


@dataclass(frozen=True)
class AtlasResult(Result):
    """What :func:`make_atlas` made: one :class:`AtlasEntry` per figure (paper order); the
    result protocol of :mod:`gaussmix.core.results` (``success``: no figure failed;
    :meth:`to_frame`: one row per figure).

    Attributes
    ----------
    out_dir : pathlib.Path
        The output directory.
    path : pathlib.Path
        ``out_dir / 'atlas.json'``.
    fast : bool
        Whether the ``--fast`` presets were used.
    n_jobs : int
        Figures made at once.
    seconds : float
        Wall time of the whole run.
    entries : tuple of AtlasEntry
        One per figure, in the paper's order.
    """

    #: nothing iterates (the result protocol's ``n_iter`` does not apply)
    n_iter: ClassVar[None] = None

    out_dir: Path
    path: Path
    fast: bool
    n_jobs: int
    seconds: float
    entries: tuple[AtlasEntry, ...]

    @property
    def failed(self) -> list[str]:
        """Names of the figures that failed."""
        return [e.name for e in self.entries if e.status != "ok"]

    @property
    def success(self) -> bool:
        return not self.failed

    @property
    def message(self) -> str:
        n = len(self.entries)
        if not self.failed:
            return f"{n} figures made in {self.seconds:g} s"
        return f"{len(self.failed)} of {n} figures failed: {', '.join(self.failed)}"

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe: ``success, message, out_dir, path, fast, n_jobs, seconds`` and one
        dict per figure (:class:`AtlasEntry`'s fields)."""
        return plain(
            {
                "success": self.success,
                "message": self.message,
                "out_dir": str(self.out_dir),
                "path": str(self.path),
                "fast": self.fast,
                "n_jobs": self.n_jobs,
                "seconds": self.seconds,
                "entries": [asdict(e) for e in self.entries],
            }
        )

    def to_frame(self) -> pd.DataFrame:
        """One row per figure: ``name, paper, status, seconds, cpu_seconds, error,
        not_converged`` and the number of warnings."""
        rows = [
            {
                **{
                    k: getattr(e, k)
                    for k in (
                        "name",
                        "paper",
                        "status",
                        "seconds",
                        "cpu_seconds",
                        "error",
                        "not_converged",
                    )
                },  # fmt: skip
                "warnings": len(e.warnings),
            }
            for e in self.entries
        ]
        return pd.DataFrame(rows)


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _make_one(name: str, out_dir: Path, fast: bool) -> AtlasEntry:
    """Make figure ``name`` (no progress bar); a failure is returned, not raised."""
    spec = get_figure(name)
    kw = {"progress": False} if "progress" in inspect.signature(spec.table).parameters else {}
    t0, c0 = time.perf_counter(), time.process_time()
    status, error, files, bad = "ok", None, {}, 0
    with caught() as log:
        try:
            res = write_figure(name, out_dir, fast=fast, **kw)
        except Exception as exc:  # noqa: BLE001 - one figure's failure is reported, not raised
            status, error = "failed", _one_line(f"{type(exc).__name__}: {exc}")
        else:
            files = {"csv": res.csv.name, "png": res.png.name, "json": res.meta.name}
            if "converged" in res.data.columns:
                bad = int((~res.data["converged"].fillna(False).astype(bool)).sum())
    seen = dict.fromkeys(_one_line(f"{w.category.__name__}: {w.message}") for w in log)
    return AtlasEntry(
        name=name,
        paper=spec.paper,
        status=status,
        seconds=round(time.perf_counter() - t0, 2),
        cpu_seconds=round(time.process_time() - c0, 2),
        files=files,
        error=error,
        warnings=tuple(list(seen)[:MAX_WARNINGS]),
        not_converged=bad,
    )


def _run(names: Sequence[str], out_dir: Path, fast: bool, n_jobs: int) -> Iterator[AtlasEntry]:
    """The entries of ``names`` in the order they finish (``n_jobs`` processes)."""
    from joblib import Parallel, delayed, effective_n_jobs, parallel_config
    from threadpoolctl import threadpool_limits

    if effective_n_jobs(n_jobs) == 1 or len(names) == 1:
        with threadpool_limits(1):  # as in the workers: the same bits for any n_jobs
            for name in names:
                yield _make_one(name, out_dir, fast)
        return
    with parallel_config(backend="loky", inner_max_num_threads=1):
        yield from Parallel(n_jobs=n_jobs, return_as="generator_unordered")(
            delayed(_make_one)(name, out_dir, fast) for name in names
        )


def _write_summary(path: Path, info: dict[str, Any], entries: dict[str, AtlasEntry]) -> None:
    """``atlas.json`` with the entries finished so far (paper order), written atomically."""
    order = {n: i for i, n in enumerate(atlas_names())}
    done = sorted(entries.values(), key=lambda e: order.get(e.name, len(order)))
    body = {
        **info,
        "failed": [e.name for e in done if e.status != "ok"],
        "figures": [{**asdict(e), "warnings": list(e.warnings)} for e in done],
    }
    tmp = path.with_name(path.name + ".part")
    tmp.write_text(json.dumps(body, indent=2) + "\n")
    os.replace(tmp, path)


def make_atlas(
    out_dir: str | Path,
    *,
    fast: bool = False,
    n_jobs: int = 1,
    names: Sequence[str] | None = None,
    progress: bool = False,
) -> AtlasResult:
    """Make every figure of the atlas (or ``names``) in ``out_dir``, and ``atlas.json``.

    Parameters
    ----------
    out_dir : path
        Output directory (created if needed).
    fast : bool
        Each figure's ``--fast`` preset (:attr:`FigureSpec.fast`): the whole atlas in
        about two minutes (the paper's settings: about 11 minutes with ``n_jobs=2``).
    n_jobs : int
        Figures made at once, in separate processes (joblib convention: -1 = all cores);
        a worker's start-up (imports) costs a few seconds, so the fast presets are made
        quicker in one process.
    names : sequence of str, optional
        A subset of the registered figures (default: all of them, in the paper's order).
    progress : bool
        A progress bar over the figures (stderr, on a terminal).

    Returns
    -------
    AtlasResult
        The entries in the paper's order; :attr:`AtlasResult.failed` names the figures
        that failed (the others are made all the same).
    """
    if not isinstance(fast, bool):
        raise TypeError(f"fast must be a bool, got {fast!r}")
    n_jobs = check_param("n_jobs", n_jobs)
    all_names = atlas_names()
    todo = (
        all_names if names is None else [check_choice("names", n, tuple(FIGURES)) for n in names]
    )
    if not todo or len(set(todo)) != len(todo):
        raise ValueError(f"names must be distinct registered figures, got {list(todo)}")
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(f"out_dir {str(out)!r} exists and is not a directory")
    out.mkdir(parents=True, exist_ok=True)
    path = out / ATLAS_FILE
    info = {
        "fast": fast,
        "n_jobs": n_jobs,
        "gaussmix_version": __version__,
        "seconds": None,
        "dot_kinds": DOT_KINDS,
    }
    done: dict[str, AtlasEntry] = {}
    t0 = time.perf_counter()
    with progress_bar(total=len(todo), desc="atlas", unit="figure", enabled=progress) as bar:
        for entry in _run(todo, out, fast, n_jobs):
            done[entry.name] = entry
            _write_summary(path, info, done)
            bar.set_postfix_str(f"{entry.name}: {entry.status} ({entry.seconds:.0f} s)")
            bar.update(1)
    info["seconds"] = round(time.perf_counter() - t0, 2)
    _write_summary(path, info, done)
    order = {n: i for i, n in enumerate(all_names)}
    entries = tuple(sorted(done.values(), key=lambda e: order[e.name]))
    return AtlasResult(out, path, fast, n_jobs, info["seconds"], entries)
