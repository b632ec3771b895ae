"""A fuzzer over the command line's options (hypothesis, derandomised).

For every command it draws combinations of the command's own options (read from the
parser, so that a new option is fuzzed without editing this file), an unknown option now
and then, and values valid and invalid: negative, zero, NaN, infinities, huge, wrong types,
empty, malformed lists and ranges (``1:0:3``), unknown choices.  Each run is in-process
(:func:`gaussmix.cli.commands.main`) with tiny budgets (``--max-iter``, ``--d``,
``--seeds``, ``--n-jobs``, ... are always given, from small values and invalid ones) and must
keep the contract of the README's exit-code table:

* the status is in the table, and is not 1 (an internal error is a defect);
* no Python traceback on stdout or stderr;
* exit 2 is exactly one ``gaussmix: error:`` line, nothing on stdout, nothing written.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
import typer.main
from _cli_helpers import run
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gaussmix.cli.commands import app
from gaussmix.cli.exits import EXIT_BAD_INPUT, EXIT_CODES, EXIT_ERROR

COMMANDS = typer.main.get_command(app).commands

#: values of an option: (valid ones, invalid ones); a run draws how many options get an
#: invalid value (none in about half of the runs), the others get valid ones (which may
#: still conflict with each other: that is tried too)
Pool = tuple[list[str], list[str]]
#: any option without a pool of its own (valid values are those of a float)
ANY: Pool = (["0.1", "0.5", "1", "2"],
             ["nan", "inf", "-inf", "-1", "0", "1e300", "-1e-300", "x", "", "1,2", "1:0:3",
              "[1]", "true"])  # fmt: skip
#: ranges and lists of --alphas, --lams, --gammas
GRIDS: Pool = (
    ["1:2:2", "0.5:1:1", "log:0.1:1:2", "1,2", "0.5"],
    ["1:0:3", "0:1:2", "-1:1:2", "1:2:0", "1:2:-1", "1:2:20000", "log:0:1:2", "a:b:c",
     "1:2", "", "nan:1:2", "1:inf:2", "1,,2", "-1", "1e300:1e301:2"],
)  # fmt: skip
#: the budget of a command: always given (small values), or drawn invalid
BUDGET: dict[str, Pool] = {
    "--max-iter": (["2", "30"], ["-1", "0", "x", "1.5"]),
    "--d": (["20"], ["-1", "0", "1", "x", "1000000000"]),
    "--seeds": (["1", "2"], ["-1", "0", "x"]),
    "--n-jobs": (["1"], ["-2", "0", "x"]),
    "--subsamples": (["1"], ["-1", "0"]),
    "--n-points": (["50"], ["-1", "0"]),
}
VALUES: dict[str, Pool] = {
    "--n-clusters": (["2", "3"], ["-1", "0", "1", "x", "2.5", "p3", "100000000"]),
    "--labels": (["auto", "onehot", "binary"], ["ternary", ""]),
    "--rho": (["0.5,0.5", "0.2,0.3,0.5"], ["1", "0.7,0.7", "-0.5,1.5", "nan,nan", "a,b", ""]),
    "--model": (["isotropic", "block", "sparse"], ["dense", ""]),
    "--delta": (["0.5", "0.1,1", "0.1,0.2,0.3"], ["-1", "0", "nan", "inf", "1,", "x"]),
    "--means": (["auto", "simplex", "gaussian", "antipodal"], ["sparse", "round"]),
    "--fractions": (["0.3,0.7", "1"], ["0.5,0.6", "-1,2", "x"]),
    "--deltas": (["0.2,1", "1"], ["0,1", "-1,1", "x"]),
    "--sparsity": (["0.1", "1"], ["0", "1.5", "nan", "x"]),
    "--delta1": (["0.1", "1"], ["0", "-1", "inf"]),
    "--delta2": (["1"], ["0", "-1", "nan"]),
    "--loss": (["square", "logistic", "cross-entropy", "hinge"], ["huber", ""]),
    "--penalty": (["l2", "l1", "elastic-net"], ["l0"]),
    "--l1-ratio": (["0", "0.5"], ["-0.1", "1.5", "nan"]),
    "--lam": (["0", "1e-3", "0.1", "1", "1e8"], ["-1", "1e9", "nan", "inf", "x"]),
    "--alpha": (["0.5", "1", "2"], ["0", "-1", "1e9", "nan", "x"]),
    "--quad-order": (["3", "20"], ["-1", "0", "1", "361", "x"]),
    "--tol": (["1e-8", "1e-3"], ["0", "-1", "nan", "x"]),
    "--dataset": (["digits"], ["mnist-x", ""]),
    "--datasets": (["digits"], ["x", ""]),
    "--task": (["even-odd", "low-high"], ["clothes-accessories", "x"]),
    "--features": (["none", "rf"], ["x"]),
    "--gamma": (["0.5"], ["0", "-1", "nan"]),
    "--sources": (["theory"], ["x", "", "theory,,real"]),
    "--backend": (["joblib", "serial"], ["spark", ""]),
    "--scheduler": ([], ["", "nohost", "tcp://", "tcp://127.0.0.1:99999", "http://h:1", "h:"]),
    "--epochs": (["1"], ["0", "-1", "x"]),
    "--hidden": (["10"], ["-1", "0", "x"]),
    "--gammas": GRIDS,
    "--alphas": GRIDS,
    "--lams": GRIDS,
    "--sim-alphas": (["1"], ["-1", "x", ""]),
    "--sim-lams": (["0.1"], ["-1", "x"]),
    "--ratios": (["0.1", "0.1,1"], ["-1", "x"]),
    "--delta2s": (["1", "0.5,1"], ["-1", "x"]),
    "--lam-min": (["1e-3", "0.1"], ["0", "-1", "nan", "x"]),
    "--lam-max": (["1", "100"], ["1e9", "-1", "inf", "x"]),
    "--rel-tol": (["0.01"], ["0", "0.5", "nan", "x"]),
    "--data-dir": ([], ["/nonexistent"]),
    "--seed": (["0", "7"], ["-1", "x", "1e30"]),
    # gaussmix explore's own state options
    "--axis": (["alpha", "lambda"], ["beta", ""]),
    "--log-x": (["1", "0", "true"], ["2", "x"]),
    "--show": (["test_error", "test_error,m1,q2"], ["bogus", "m0", ""]),
    "--overlays": (["bayes", "alpha_star,simulation"], ["nope"]),
    "--sim-d": (["20"], ["-1", "0", "x"]),
    "--sim-seeds": (["1"], ["-1", "0", "x"]),
}
#: flags never drawn: they only format the output, or would make a run long ('figure all'
#: is fuzzed through its options of one figure; --download would go to the network)
SKIP = {"--help", "--quiet", "--json", "--list", "--download", "--grid", "--out",
        "--checkpoint", "--fast", "--version"}  # fmt: skip
#: options forced last (the last occurrence wins): keep the theory cheap (alpha* has a
#: closed form for K = 2) without hiding the other options' checks; a figure's small preset
FORCED = {
    "transition": ["--n-clusters", "2"],
    "bayes-optimal": ["--n-clusters", "2"],
    "figure": ["--fast"],
    # the state options are parsed and validated first; a port out of range then ends the
    # run before a server listens
    "explore": ["--port", "-1"],
}
#: options given first (the fuzzed ones after them win): the required ones, small budgets
FIRST = {
    "realdata": ["--dataset", "digits", "--task", "even-odd", "--lam", "0.1", "--alphas",
                 "0.5", "--sources", "theory"],
    "transition": ["--simulate", "--alphas", "1:2:2"],
    "data": ["--label", "label", "--alphas", "0.5", "--sources", "theory,real"],
}  # fmt: skip
#: a figure's options given first (the fuzzed ones after them win): a small budget for a
#: valid run (the fast preset itself is run, and checked, by the atlas: tests/test_atlas.py)
FIGURE_FIRST = {"sparse-setup": ["--alphas", "1:2:2"]}
#: commands whose budget options are not forced (a figure takes only its own options)
NO_BUDGET = {"figure"}
#: positional arguments of a command, drawn from these
POSITIONAL = {
    "figure": ["sparse-setup", "appe-xor-projection", "fig3-right", "no-such-figure"],
    # a labelled table of two classes at d = 8 (80 rows), and a file that does not exist
    "data": [str(Path(__file__).parent / "fixtures" / "owndata_small.csv"), "no-such.npz"],
}
#: options given first when an option of a mixture model is drawn (the model it needs)
COMPANIONS = {
    "--sparsity": ["--model", "sparse", "--delta1", "0.1", "--delta2", "1", "--loss", "square"],
    "--delta1": ["--model", "sparse", "--delta1", "0.1", "--delta2", "1", "--loss", "square"],
    "--delta2": ["--model", "sparse", "--delta1", "0.1", "--delta2", "1", "--loss", "square"],
    "--fractions": ["--model", "block", "--fractions", "0.3,0.7", "--deltas", "0.2,1"],
    "--deltas": ["--model", "block", "--fractions", "0.3,0.7", "--deltas", "0.2,1"],
    "--l1-ratio": ["--penalty", "elastic-net", "--loss", "square", "--labels", "binary"],
}
GRID_FILES = {
    "ok": '[fixed]\nloss = "square"\nlabels = "binary"\n[grid]\nalpha = [1.0, 2.0]\n',
    "bad value": "[grid]\nlam = [-1.0]\n",
    "empty list": "[grid]\nalpha = []\n",
    "unknown": "[grid]\nbogus = [1]\n",
    "wrong type": '[grid]\nalpha = ["x"]\n',
    "not toml": "[grid\nalpha = ",
    "nan": "[grid]\nalpha = [nan]\n",
}


def _flags(name: str, figure: str | None = None) -> tuple[list[str], dict[str, bool]]:
    """The command's fuzzed flags (a figure's own ones), and whether each is a flag."""
    own = None
    if figure is not None:
        from gaussmix.figures import FIGURES

        own = {o.flag for o in FIGURES[figure].options} if figure in FIGURES else set()
    flags, boolean = [], {}
    for p in COMMANDS[name].params:
        if getattr(p, "param_type_name", "") != "option":
            continue
        flag = max(p.opts, key=len)
        if flag in SKIP or (own is not None and flag not in own):
            continue
        flags.append(flag)
        boolean[flag] = bool(getattr(p, "is_flag", False)) or "bool" in _kind(p)
    return flags, boolean


def _kind(param: object) -> str:
    """The value type of a parser's option, as text (click's, or typer's annotation)."""
    click_type = getattr(getattr(param, "type", None), "name", "")
    annotation = getattr(getattr(param, "type_descriptor", None), "annotation", None)
    return f"{click_type} {annotation}"


def _pool(name: str, flag: str) -> Pool:
    if flag in BUDGET and name not in NO_BUDGET:
        return BUDGET[flag]
    return VALUES.get(flag, ANY)


@st.composite
def command_lines(draw: st.DrawFn, name: str) -> tuple[list[str], str]:
    """The options of one run of ``name``, and the sweep's grid file (a key of
    :data:`GRID_FILES`)."""
    args = [draw(st.sampled_from(POSITIONAL[name]))] if name in POSITIONAL else []
    flags, boolean = _flags(name, args[0] if name == "figure" else None)
    args += FIRST.get(name, []) + (FIGURE_FIRST.get(args[0], []) if name == "figure" else [])
    chosen = draw(st.lists(st.sampled_from(flags), max_size=4, unique=True)) if flags else []
    for flag in chosen:
        if name != "figure" and flag in COMPANIONS and draw(st.booleans()):
            args += COMPANIONS[flag]
    budget = [] if name in NO_BUDGET else [f for f in flags if f in BUDGET and f not in chosen]
    valued = [f for f in budget + chosen if not boolean[f]]
    n_bad = min(draw(st.sampled_from([0, 0, 1, 1, 2])), len(valued))
    bad = set(draw(st.lists(st.sampled_from(valued or [""]), min_size=n_bad, max_size=n_bad,
                            unique=True)))  # fmt: skip
    for flag in budget + chosen:
        if boolean[flag]:
            args.append(flag)
            continue
        valid, invalid = _pool(name, flag)
        values = invalid if flag in bad or not valid else valid
        args += [flag, draw(st.sampled_from(values))]
    if draw(st.sampled_from([False] * 9 + [True])):  # an option the command does not have
        args += ["--bogus", "1"]
    return args + FORCED.get(name, []), draw(st.sampled_from(list(GRID_FILES)))


def _check(name: str, args: list[str], grid_file: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        extra: list[str] = []
        if name == "sweep":
            grid = root / "grid.toml"
            grid.write_text(GRID_FILES[grid_file])
            extra = ["--grid", str(grid), "--out", str(root / "out" / "s.csv")]
        elif any(p.name == "out" for p in COMMANDS[name].params):
            extra = ["--out", str(root / "out")]
        if any(p.name == "quiet" for p in COMMANDS[name].params):
            extra.append("--quiet")
        before = sorted(p.name for p in root.iterdir())
        code, out, err = run(name, *args, *extra)
        line = f"gaussmix {name} {' '.join(args)}" + (f" [{grid_file}]" if extra else "")
        assert code in EXIT_CODES and code != EXIT_ERROR, (line, code, err)
        assert "Traceback" not in out + err, (line, err)
        if code == EXIT_BAD_INPUT:
            lines = err.splitlines()
            assert len(lines) == 1 and lines[0].startswith("gaussmix: error: "), (line, err)
            assert out == "", (line, out)
            assert sorted(p.name for p in root.iterdir()) == before, (line, "written")


#: examples per command (derandomised: the same every run); about 50 s in all on 2 cores
EXAMPLES = {
    "figure": 8,
    "realdata": 8,
    "data": 12,
    "transition": 8,
    "bayes-optimal": 8,
    "sweep": 15,
}


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_fuzz_command_line(name: str) -> None:
    @settings(
        max_examples=EXAMPLES.get(name, 20),
        derandomize=True,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(command_lines(name))
    def fuzz(case: tuple[list[str], str]) -> None:
        _check(name, *case)

    fuzz()
