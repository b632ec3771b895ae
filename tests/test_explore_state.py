"""The explorer's state (issue 22): its URL query round-trips, a malformed query names the
field, and :func:`validate` answers each bad control with the library's own message."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from _builder_rules import RULES, library_error
from hypothesis import given, settings
from hypothesis import strategies as st

import gaussmix as gm
from gaussmix.core.exceptions import ArgumentError
from gaussmix.explore import OVERLAYS, ExplorerState, validate
from gaussmix.explore.state import grid, point_options, setup

# ---------------------------------------------------------------------------- the query
finite = st.floats(allow_nan=False, allow_infinity=False, width=64)
positive = st.floats(min_value=1e-300, max_value=1e300, allow_nan=False)
names = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
    min_size=1,
    max_size=30,
)


@st.composite
def states(draw: st.DrawFn) -> ExplorerState:
    """Valid-looking states: every field drawn from its type (floats of any magnitude,
    tuples of one or K values, strings with characters a URL must escape)."""
    k = draw(st.integers(2, 8))
    per_cluster = st.lists(positive, min_size=k, max_size=k).map(tuple)
    return ExplorerState(
        n_clusters=k,
        delta=draw(st.one_of(st.tuples(positive), per_cluster)),
        rho=draw(st.one_of(st.none(), per_cluster)),
        means=draw(st.sampled_from(["auto", "simplex", "gaussian", "antipodal"])),
        model=draw(st.sampled_from(["isotropic", "block", "sparse"])),
        fractions=draw(
            st.one_of(st.none(), st.lists(positive, min_size=1, max_size=4).map(tuple))
        ),
        deltas=draw(st.one_of(st.none(), st.lists(positive, min_size=1, max_size=4).map(tuple))),
        sparsity=draw(positive),
        delta1=draw(st.one_of(st.none(), positive)),
        delta2=draw(st.one_of(st.none(), positive)),
        mixture_file=draw(st.one_of(st.none(), names)),
        labels=draw(st.sampled_from(["auto", "onehot", "binary"])),
        loss=draw(st.sampled_from(gm.LOSSES.names())),
        penalty=draw(st.sampled_from(gm.PENALTIES.names())),
        l1_ratio=draw(st.one_of(st.none(), st.floats(0, 1))),
        lam=draw(finite),
        axis=draw(st.sampled_from(["alpha", "lambda"])),
        alpha_min=draw(finite),
        alpha_max=draw(finite),
        n_points=draw(st.integers(1, 10_000)),
        log_x=draw(st.booleans()),
        alpha=draw(finite),
        lam_min=draw(finite),
        lam_max=draw(finite),
        show=draw(
            st.lists(
                st.sampled_from([*gm.OBSERVABLES.names(), "m1", "q2", "v3"]),
                min_size=1,
                max_size=5,
            ).map(tuple)
        ),
        overlays=draw(st.lists(st.sampled_from(OVERLAYS), max_size=4, unique=True).map(tuple)),
        sim_d=draw(st.integers(2, 100_000)),
        sim_seeds=draw(st.integers(1, 64)),
    )


@settings(max_examples=300, deadline=None)
@given(states())
def test_the_query_round_trips_every_state(state):
    query = state.to_query()
    back = ExplorerState.from_query(query)
    assert back == state
    # floats to the bit (0.0 and -0.0 compare equal: their signs too)
    for f in dataclasses.fields(state):
        a, b = getattr(state, f.name), getattr(back, f.name)
        if isinstance(a, float):
            assert math.copysign(1, a) == math.copysign(1, b)
    assert ExplorerState.from_query("?" + query) == state


def test_the_default_state_is_the_empty_query_and_only_changes_are_written():
    assert ExplorerState().to_query() == ""
    assert ExplorerState.from_query("") == ExplorerState()
    state = ExplorerState(lam=0.01, rho=(0.25, 0.75), log_x=False)
    assert state.to_query() == "rho=0.25,0.75&lam=0.01&log_x=0"


@pytest.mark.parametrize(
    ("query", "field", "words"),
    [
        ("lamda=1", "lamda", "is not a control of the explorer"),
        ("n_points=forty", "n_points", "must be an integer, got 'forty'"),
        ("n_points=4.5", "n_points", "must be an integer"),
        ("lam=abc", "lam", "must be a number, got 'abc'"),
        ("delta=1,x", "delta", "must be a number, got 'x'"),
        ("log_x=yes", "log_x", "must be 0 or 1"),
        ("lam=1&lam=2", "lam", "is given twice"),
    ],
)
def test_a_malformed_query_names_the_field(query, field, words):
    with pytest.raises(ArgumentError) as info:
        ExplorerState.from_query(query)
    assert info.value.argument == field
    assert words in str(info.value)


def test_sequences_are_kept_as_tuples():
    state = ExplorerState(delta=0.5, rho=[0.25, 0.75], show=["test_error"], overlays=[])
    assert (state.delta, state.rho, state.show, state.overlays) == (
        (0.5,),
        (0.25, 0.75),
        ("test_error",),
        (),
    )
    assert state == ExplorerState(delta=(0.5,), rho=(0.25, 0.75), show=("test_error",))
    assert ExplorerState.from_query(state.to_query()) == state
    from_numpy = ExplorerState(delta=np.array([0.5, 1.0]), lam=np.float64(0.25))
    assert from_numpy.to_query() == "delta=0.5,1.0&lam=0.25"
    assert ExplorerState.from_query(from_numpy.to_query()) == from_numpy


def test_replace_refuses_an_unknown_control():
    assert ExplorerState().replace(lam=0.5).lam == 0.5
    with pytest.raises(ArgumentError, match="lamda is not a control"):
        ExplorerState().replace(lamda=0.5)


# ---------------------------------------------------------------------------- the one path
def test_the_grid_is_the_command_lines():
    state = ExplorerState(alpha_min=0.3, alpha_max=7.0, n_points=13)
    np.testing.assert_array_equal(grid(state), np.geomspace(0.3, 7.0, 13))
    lin = state.replace(axis="lambda", log_x=False, lam_min=0.5, lam_max=2.0, n_points=4)
    np.testing.assert_array_equal(grid(lin), np.linspace(0.5, 2.0, 4))


def test_the_mixture_is_built_by_the_library_constructors():
    point, _ = setup(
        ExplorerState(
            n_clusters=3, delta=(0.5, 1.0, 2.0), rho=(0.2, 0.3, 0.5), loss="cross-entropy"
        )
    )
    expected = gm.Mixture.isotropic(
        np.array([0.5, 1.0, 2.0]), "simplex", n_clusters=3, labels="onehot", rho=[0.2, 0.3, 0.5]
    )
    assert point.mixture.fingerprint() == expected.fingerprint()
    block = ExplorerState(model="block", fractions=(0.5, 0.5), deltas=(0.5, 2.0))
    opts = point_options(block)
    assert (opts.fractions, opts.deltas, opts.delta, opts.sparsity) == (
        "0.5,0.5",
        "0.5,2.0",
        None,
        None,
    )


# ---------------------------------------------------------------------------- validation
def _library_message(call) -> str:
    with pytest.raises((ValueError, TypeError)) as info:
        call()
    return str(info.value)


def test_a_valid_state_has_no_message():
    assert validate(ExplorerState()) == {}
    assert validate(ExplorerState(n_clusters=3, loss="cross-entropy", axis="lambda")) == {}
    assert validate(ExplorerState(model="sparse", delta1=1.0, delta2=0.5, penalty="l1")) == {}


def test_rho_not_summing_to_one_gets_the_librarys_message():
    errors = validate(ExplorerState(rho=(0.3, 0.3)))
    message = _library_message(
        lambda: gm.Mixture.isotropic(1.0, "simplex", n_clusters=2, rho=[0.3, 0.3])
    )
    assert errors == {"rho": message}
    assert "rho must sum to 1" in message


def test_a_negative_lambda():
    errors = validate(ExplorerState(lam=-1.0))
    mix = gm.Mixture.isotropic(1.0, "antipodal", labels="binary")
    assert errors == {
        "lam": _library_message(lambda: gm.make_problem(mix, "logistic", lam=-1.0, alpha=1.0))
    }


def test_one_cluster():
    errors = validate(ExplorerState(n_clusters=1))
    assert list(errors) == ["n_clusters"]
    assert errors["n_clusters"] == "n_clusters must be an integer >= 2, got 1"


def test_a_loss_that_does_not_fit_the_labels():
    errors = validate(ExplorerState(labels="onehot"))  # logistic needs binary labels
    assert list(errors) == ["loss"]
    assert "loss 'logistic' needs binary labels" in errors["loss"]
    errors = validate(ExplorerState(loss="cross-entropy", labels="binary"))
    assert list(errors) == ["loss"] and "needs one-hot labels" in errors["loss"]


def test_a_penalty_option_out_of_its_range():
    assert list(validate(ExplorerState(penalty="elastic-net", l1_ratio=2.0))) == ["l1_ratio"]
    errors = validate(ExplorerState(penalty="lasso"))
    assert list(errors) == ["penalty"] and "'l1'" in errors["penalty"]


def test_a_model_without_its_parameters_and_a_bad_parameter():
    errors = validate(ExplorerState(model="block"))
    assert errors == {
        "fractions": "fractions is required with model='block' (which takes fractions, deltas)"
    }
    errors = validate(ExplorerState(model="sparse", delta1=-1.0, delta2=1.0))
    assert errors == {"delta1": "delta1 must be > 0, got -1"}


@pytest.mark.parametrize("field", ["delta", "rho", "fractions"])
def test_an_empty_list_is_named_by_its_field_without_a_flag(field):
    """The list options are read by the command line's parser, which names the keyword
    (the command line says its flag, ``--rho must be comma-separated numbers``)."""
    block = {"model": "block", "fractions": (0.5, 0.5), "deltas": (1.0, 2.0)}
    state = ExplorerState(**{**(block if field == "fractions" else {}), field: ()})
    assert validate(state) == {field: f"{field} must be comma-separated numbers, got ''"}


@pytest.mark.parametrize("rule", [r for r in RULES if r.state is not None], ids=lambda r: r.id)
def test_a_builder_rule_is_answered_with_the_librarys_text_under_its_field(rule):
    """One rule, one message: the library's text (no command-line flag) under the control
    of the keyword it names, and nothing else."""
    errors = validate(ExplorerState(**rule.state))
    assert errors == {rule.keyword: str(library_error(rule))}
    assert "--" not in errors[rule.keyword]


def test_a_missing_or_malformed_mixture_file(tmp_path):
    missing = validate(ExplorerState(mixture_file=str(tmp_path / "nope.npz")))
    assert list(missing) == ["mixture_file"] and "no such file" in missing["mixture_file"]
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a zip file")
    errors = validate(ExplorerState(mixture_file=str(bad)))
    assert list(errors) == ["mixture_file"]
    assert errors["mixture_file"] == _library_message(lambda: gm.Mixture.load(bad))


def test_a_mixture_file_is_valid(tmp_path):
    path = tmp_path / "mix.npz"
    gm.Mixture.isotropic(0.5, "simplex", n_clusters=3).save(path)
    assert validate(ExplorerState(mixture_file=str(path), loss="cross-entropy")) == {}


@pytest.mark.parametrize(
    ("changes", "field", "words"),
    [
        ({"alpha_min": 0.0}, "alpha_min", "alpha_min must be a real number in [1e-08"),
        ({"alpha_max": 1e12}, "alpha_max", "alpha_max must be a real number in [1e-08"),
        ({"axis": "lambda", "log_x": False, "lam_min": -1.0}, "lam_min", "lam_min must be"),
        ({"axis": "lambda", "lam_min": 0.0}, "lam_min", "lam_min: a log range needs positive"),
        ({"axis": "lambda", "alpha": -2.0}, "alpha", "alpha must be a real number"),
        ({"n_points": 0}, "n_points", "n_points must be >= 1, got 0"),
        ({"axis": "beta"}, "axis", "axis must be one of"),
        ({"show": ("test_error", "tset_error")}, "show", "unknown column 'tset_error'"),
        ({"overlays": ("bayes", "oracle")}, "overlays", "unknown overlay 'oracle'"),
        ({"overlays": ("simulation",), "sim_d": 1}, "sim_d", "sim_d must be an integer >= 2"),
    ],
)
def test_the_axis_and_the_explorers_own_controls(changes, field, words):
    errors = validate(ExplorerState(**changes))
    assert field in errors, errors
    assert words in errors[field]


@pytest.mark.parametrize(
    ("axis", "name", "field"), [("alpha", "alphas", "alpha_min"), ("lambda", "lams", "lam_min")]
)
def test_a_malformed_range_is_put_under_the_range_control(axis, name, field):
    """The grid's parser names the range (an ArgumentError naming ``alphas`` / ``lams``),
    which the explorer puts under the start of the swept axis, without reading the text."""
    from gaussmix.explore.state import field_of
    from gaussmix.frontend.grids import MAX_POINTS

    state = ExplorerState(axis=axis, n_points=MAX_POINTS + 1)
    with pytest.raises(ArgumentError) as info:
        grid(state)
    assert info.value.argument == name
    assert str(info.value) == f"{name}: at most {MAX_POINTS} points, got {MAX_POINTS + 1}"
    assert field_of(info.value, state) == field
    # a plain error naming the flag in its text is not taken for the range
    assert field_of(ValueError(f"--{name}: {info.value.requirement}"), state) == "model"


def test_every_message_is_one_line():
    for state in (
        ExplorerState(rho=(0.3, 0.3)),
        ExplorerState(labels="onehot"),
        ExplorerState(model="block"),
        ExplorerState(n_clusters=1, lam=-1.0),
    ):
        for message in validate(state).values():
            assert "\n" not in message and message


def test_numpy_scalars_are_the_numbers_they_hold():
    """A state made from numpy scalars (an array's elements, a widget's value) is the state
    of the Python numbers: its range was written ``np.float64(0.5)`` and refused."""
    state = ExplorerState(
        alpha_min=np.float64(0.5), n_points=np.int64(5), log_x=np.bool_(True), lam=np.float32(0.25)
    )
    plain = ExplorerState(alpha_min=0.5, n_points=5, log_x=True, lam=0.25)
    assert state == plain and type(state.alpha_min) is float and type(state.n_points) is int
    assert validate(state) == {}
    np.testing.assert_array_equal(grid(state), np.geomspace(0.5, 8.0, 5))
    assert ExplorerState(delta=(np.float64(0.5), 1.0)).delta == (0.5, 1.0)
