"""One name per concept (issue 18, item 2): every command-line flag is the keyword of the
function its command calls, with dashes; the old names are refused (flags, grid keys) or
warned about for one release (Python keywords), each naming the new one; old tables and
checkpoints still read."""

from __future__ import annotations

import inspect
import shutil
import warnings
from pathlib import Path

import pandas as pd
import pytest
import typer
from _cli_helpers import assert_one_line_error, run

import gaussmix as gm
import gaussmix.figures
import gaussmix.studies
from gaussmix.cli.commands import app
from gaussmix.cli.grid import Grid, GridError
from gaussmix.cli.renames import RENAMED_FLAGS, RENAMED_GRID_KEYS
from gaussmix.core.renames import RENAMED_KEYWORDS, renamed_keywords
from gaussmix.data import load_dataset
from gaussmix.experiments.lambda_star import optimal_lambda
from gaussmix.experiments.transition import separability_threshold
from gaussmix.explore import ExplorerState
from gaussmix.figures import FIGURES, write_figure
from gaussmix.frontend.options import PointOptions
from gaussmix.simulate import separability_fraction
from gaussmix.simulate.separability import lp_crossing
from gaussmix.simulate.simulation import simulate
from gaussmix.studies import prepare_realdata, realdata_curve
from gaussmix.sweep import sweep
from gaussmix.theory.api.api import make_problem
from gaussmix.theory.limits.bayes import bayes_optimal_error

FIXTURES = Path(__file__).parent / "fixtures" / "checkpoint_v3"

#: what builds the mixture from the point options (the model's constructor)
BUILDERS = (gm.Mixture.isotropic, gm.Mixture.block, gm.Mixture.sparse)
THEORY = (gm.solve, make_problem, *BUILDERS)
#: the library functions each command calls (their keywords are the command's flags)
COMMAND_CALLS = {
    "point": THEORY,
    "curve": (gm.learning_curve, *THEORY),
    "lambda-curve": (gm.lambda_sweep, *THEORY),
    "optimal-lambda": (optimal_lambda, *THEORY),
    "simulate": (simulate, *BUILDERS),
    "compare": (gm.learning_curve, simulate, *THEORY),
    "sweep": (sweep,),
    # and each figure's table function (below); the solver's options as options=SolverOptions
    "figure": (write_figure, gm.SolverOptions),
    "bayes-optimal": (bayes_optimal_error, *BUILDERS),
    "transition": (separability_threshold, separability_fraction, *BUILDERS),
    "realdata": (prepare_realdata, load_dataset, realdata_curve, gm.SolverOptions),
    "data": (gm.load_labelled, gm.study_data),
    # the explorer's state (its mixture_file is the point options' mixture, --mixture)
    "explore": (ExplorerState, PointOptions),
}
#: flags that are no library keyword, and why (none may be a library keyword under another
#: name: :func:`test_the_cli_only_flags_are_no_library_keyword_in_disguise`)
CLI_ONLY = {
    "--out": "the files a command writes (the library returns tables; sweep(out=) excepted)",
    "--json": "the output format of the command",
    "--quiet": "no progress bar: the negation of the library's progress=, as CLIs spell it",
    "--model": "the Mixture constructor (Mixture.isotropic, .block, .sparse) to call",
    "--quad-order": "the order of the GaussHermite rule passed as quadrature=",
    "--lam-min": "the lower end of optimal_lambda's lam_bounds=",
    "--lam-max": "the upper end of optimal_lambda's lam_bounds=",
    "--grid": "the TOML file of the sweep's points (Grid.from_toml)",
    "--list": "prints the list of figures (gaussmix.figures.atlas())",
    "--simulate": "transition: also run the finite-size LP check (separability_fraction)",
    "--theory": "transition: compute alpha* (separability_threshold), or not",
    "--features": "realdata: the feature map built for prepare_realdata(feature_map=)",
    "--gamma": "realdata: p / d of RandomFeatures(p), the feature map of --features rf",
    "--host": "explore: the address the explorer's web server listens on",
    "--port": "explore: the port the explorer's web server listens on",
    "--no-browser": "explore: do not open a browser tab on the explorer",
}


def _commands() -> dict:
    return typer.main.get_command(app).commands


def _flag(param) -> str:
    return max(param.opts, key=len)


def _keywords(*funcs) -> set[str]:
    return {name for f in funcs for name in inspect.signature(f).parameters}


def _options(command) -> list:
    return [p for p in command.params if p.param_type_name == "option"]


def test_every_flag_is_the_keyword_of_the_function_its_command_calls():
    commands = _commands()
    assert set(commands) == set(COMMAND_CALLS), "a new command: say what it calls"
    for name, command in commands.items():
        keywords = _keywords(*COMMAND_CALLS[name])
        if name == "figure":  # the options each figure declares, and a mixture for those
            keywords |= {o.param for spec in FIGURES.values() for o in spec.options}
            keywords |= {"mixture"} & _keywords(*(s.table for s in FIGURES.values()))
        for p in _options(command):
            flag = _flag(p)
            if flag in CLI_ONLY:
                continue
            assert flag == "--" + p.name.replace("_", "-"), (name, flag, p.name)
            assert p.name in keywords, (
                f"gaussmix {name} {flag}: not a keyword of {COMMAND_CALLS[name]} (rename it, "
                "or say in CLI_ONLY why it is the command line's own)"
            )


def test_every_figure_option_is_a_keyword_of_its_table_function():
    for name, spec in FIGURES.items():
        params = inspect.signature(spec.table).parameters
        for opt in spec.options:
            assert opt.flag == "--" + opt.param.replace("_", "-"), (name, opt)
            assert opt.param in params, (name, opt.param)


def test_the_cli_only_flags_are_no_library_keyword_in_disguise():
    """A CLI-only flag is no keyword of any command's functions, and no old name of one."""
    # (the explorer's state names its controls after the command line's options, --model
    # included: its fields are no library keywords)
    calls = {f for name, funcs in COMMAND_CALLS.items() if name != "explore" for f in funcs}
    every = _keywords(*calls)
    every |= {o.param for spec in FIGURES.values() for o in spec.options}
    old = {o for renames in RENAMED_KEYWORDS.values() for o in renames}
    old |= {f[2:].replace("-", "_") for table in RENAMED_FLAGS.values() for f in table}
    for flag in CLI_ONLY:
        keyword = flag[2:].replace("-", "_")
        assert keyword not in every - {"out", "simulate"}, flag  # sweep(out=), figures
        assert keyword not in old, flag
    used = {_flag(p) for c in _commands().values() for p in _options(c)}
    assert set(CLI_ONLY) <= used, set(CLI_ONLY) - used  # no stale entry


# ---------------------------------------------------------------------------- old names
def test_every_renamed_flag_is_gone_and_names_its_new_flag(tmp_path: Path):
    commands = _commands()
    for command, table in RENAMED_FLAGS.items():
        for old, new in table.items():
            where = [command] if command else [c for c in commands if c != "realdata"]
            for name in where:
                flags = {o for p in commands[name].params for o in p.opts}
                assert old not in flags, (name, old)
                if name in ("figure", "sweep", "realdata") or new not in flags:
                    continue  # figure: new is some figure's; sweep: no mixture options
                code, out, err = run(name, old, "2", "--out", str(tmp_path / "x"))
                assert_one_line_error(code, out, err, f"{old} was renamed {new}")
                assert err == f"gaussmix: error: {old} was renamed {new}\n"
    for args, line in [
        (("figure", "fig3-left", "--ks", "2"), "--ks was renamed --n-clusters"),
        (("figure", "all", "--jobs=2"), "--jobs was renamed --n-jobs"),
        (("realdata", "--clusters", "pk"), "--clusters was renamed --clustering"),
        (("transition", "--datasets", "3"), "--datasets was renamed --seeds"),
        (("sweep", "--grid", "g.toml", "--out", "o.csv", "-j", "1", "--jobs", "1"), "--n-jobs"),
    ]:
        assert_one_line_error(*run(*args), line)
    assert not (tmp_path / "x").exists()
    # --datasets is still fig5's list of data sets; --clusters is nowhere
    assert "--datasets" in {o for p in commands["figure"].params for o in p.opts}


def test_an_old_grid_key_names_the_new_one(tmp_path: Path):
    for old, new in RENAMED_GRID_KEYS.items():
        for kw in ({"fixed": {old: 3}}, {}):
            grid = {"alpha": [1.0]} if kw else {old: [2, 3]}
            with pytest.raises(GridError, match=f"'{old}' was renamed '{new}'"):
                Grid(grid, **kw)
    toml = tmp_path / "g.toml"
    toml.write_text("[fixed]\nclusters = 3\n[grid]\nalpha = [1.0]\n")
    out = tmp_path / "o.csv"
    code, stdout, err = run("sweep", "--grid", str(toml), "--out", str(out))
    assert_one_line_error(code, stdout, err, "[fixed]: 'clusters' was renamed 'n_clusters'")
    assert not out.exists()


def test_renamed_keywords_warn_for_one_release_naming_the_new_one():
    @renamed_keywords(jobs="n_jobs")
    def run_it(x: int, *, n_jobs: int = 1) -> tuple[int, int]:
        return x, n_jobs

    assert inspect.signature(run_it).parameters.keys() == {"x", "n_jobs"}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert run_it(1, n_jobs=3) == (1, 3)  # the new name: no warning
    with pytest.warns(FutureWarning, match="keyword 'jobs' was renamed 'n_jobs'"):
        assert run_it(1, jobs=2) == (1, 2)
    with pytest.raises(TypeError, match="got both 'jobs' and 'n_jobs'"):
        run_it(1, jobs=2, n_jobs=2)
    with pytest.raises(TypeError, match="must take 'n_jobs' and not 'jobs'"):
        renamed_keywords(jobs="n_jobs")(lambda jobs: jobs)


def test_the_library_functions_accept_their_old_keywords_with_a_warning():
    declared = {k.rsplit(".", 1)[-1]: v for k, v in RENAMED_KEYWORDS.items()}
    assert declared["sweep"] == {"jobs": "n_jobs"}
    assert declared["separability_fraction"] == {"n_datasets": "seeds"}
    assert declared["prepare_realdata"] == {"clusters": "clustering"}
    assert declared["fig3_left"] == {"ks": "n_clusters", "simulate_d": "d"}
    mix = gm.Mixture.isotropic(0.5, "gaussian", n_clusters=2)
    new = separability_fraction(mix, [2.0, 6.0], d=12, seeds=3, seed=1)
    with pytest.warns(FutureWarning, match="'n_datasets' was renamed 'seeds'"):
        old = separability_fraction(mix, [2.0, 6.0], d=12, n_datasets=3, seed=1)
    pd.testing.assert_frame_equal(old, new)
    assert "seeds" in new.columns and "n_datasets" not in new.columns
    # a table written before the renaming (column n_datasets) still gives its crossing
    assert lp_crossing(new.rename(columns={"seeds": "n_datasets"})) == lp_crossing(new)
    for name, fn in [("fig3_centre", gaussmix.figures.transition.fig3_centre)]:
        with pytest.raises(ValueError, match="n_clusters must be an integer >= 2, got 1"):
            with pytest.warns(FutureWarning, match=f"{name}\\(\\): keyword 'ks'"):
                fn(ks=[1])


def test_old_checkpoints_resume_and_read_with_the_new_names(tmp_path: Path):
    """The grid checkpoint of version 3 (params say ``clusters``): every point is found
    again and the table says ``n_clusters``."""
    import json

    from gaussmix.cli.grid import run_grid

    shutil.copy(FIXTURES / "grid.checkpoint.jsonl", tmp_path / "g.jsonl")
    assert '"clusters":2' in (tmp_path / "g.jsonl").read_text()
    res = run_grid(FIXTURES / "grid.toml", checkpoint=tmp_path / "g.jsonl", backend="serial",
                   progress=False)  # fmt: skip
    assert (res.computed, res.resumed) == (0, 4)
    params = [json.loads(p) for p in res.df["params"]]
    assert all(p["n_clusters"] == 2 and "clusters" not in p for p in params)


def test_a_sweep_over_k_written_before_the_renaming_resumes(tmp_path: Path):
    """clusters.checkpoint.jsonl was written by gaussmix at 651c8e3 from clusters.toml (grid
    key ``clusters``): the old file is refused naming the new key, and with the key renamed
    every point is found in the old checkpoint, its numbers to the bit."""
    import json

    from gaussmix.cli.grid import run_grid

    ck = tmp_path / "ck.jsonl"
    shutil.copy(FIXTURES / "clusters.checkpoint.jsonl", ck)
    with pytest.raises(GridError, match="'clusters' was renamed 'n_clusters'"):
        run_grid(FIXTURES / "clusters.toml", checkpoint=ck, backend="serial", progress=False)
    res = run_grid(FIXTURES / "clusters_renamed.toml", checkpoint=ck, backend="serial",
                   progress=False)  # fmt: skip
    assert (res.computed, res.resumed) == (0, 2)
    assert res.df["n_clusters"].tolist() == [2, 3]
    stored = [json.loads(line)["row"] for line in ck.read_text().splitlines()]
    assert sorted(res.df["test_error"]) == sorted(r["test_error"] for r in stored)
    assert [json.loads(p)["n_clusters"] for p in res.df["params"]] == [2, 3]


def test_a_bad_argument_is_said_with_the_flag_of_the_command_that_took_it(tmp_path: Path):
    """The library raises an ArgumentError naming its keyword; the command line says it
    with the flag of that keyword, read from the command's own options (no text
    rewriting); an argument the command has no flag for is said as the library said it."""
    cases = [
        (("point", "--n-clusters", "1"), "--n-clusters must be an integer >= 2, got 1"),
        (("point", "--n-clusters", "2.5"), "--n-clusters must be an integer >= 2, got 2.5"),
        (("point", "--quad-order", "0"), "--quad-order must be >= 1, got 0"),
        (("point", "--loss", "logistic", "-K", "3"), "--loss 'logistic' needs binary labels"),
        (("simulate", "--d", "2", "-K", "3", "--seeds", "1"), "--d must be >= the number"),
        (("figure", "fig3-right", "-K", "1"), "--n-clusters must be an integer >= 2, got 1"),
        (("figure", "sparse-projection", "--n-points", "1"), "--n-points must be >= 2"),
    ]
    for args, needle in cases:
        assert_one_line_error(*run(*args, "--out", str(tmp_path / "x"))
                              if args[0] == "figure" else run(*args), needle)  # fmt: skip
    grid = tmp_path / "g.toml"
    grid.write_text("[grid]\nalpha = [1.0]\n")
    out = tmp_path / "o.csv"
    code, stdout, err = run("sweep", "--grid", str(grid), "--out", str(out), "-j", "0")
    assert_one_line_error(code, stdout, err, "--n-jobs must be a non-zero integer")
    assert not out.exists()


def test_a_warning_gets_the_flag_of_the_remedy_it_names_and_no_other():
    """The command line adds ``--quad-order N`` only to a warning whose remedy is the
    Gauss-Hermite rule that flag builds; a warning saying no option helps stays as it is."""
    from gaussmix.cli.commands import _warning_text

    finer = "error 1e-05 is large; pass a finer quadrature rule (quadrature=GaussHermite(n, dim))"
    capped = "error 4e-06 is large; at the sampling cap, so no solver option reduces it"
    assert _warning_text("IntegrationWarning", finer).endswith(
        "(on the command line: --quad-order N)"
    )
    assert _warning_text("IntegrationWarning", capped) == capped
    assert _warning_text("ConvergenceWarning", finer) == finer
