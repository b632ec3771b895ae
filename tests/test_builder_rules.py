"""One rule, one message (issues 18 and 22): every rule of the mixture builder and of the
penalty options is the library's, raised as an ``ArgumentError`` naming its keyword; the
command line says the same requirement after the keyword's flag."""

from __future__ import annotations

import pytest
from _builder_rules import RULES, Rule, library_error
from _cli_helpers import assert_one_line_error, run

from gaussmix.frontend.options import POINT_FLAGS


@pytest.mark.parametrize("rule", RULES, ids=[r.id for r in RULES])
def test_the_library_names_the_keyword(rule: Rule) -> None:
    exc = library_error(rule)
    assert exc.argument == rule.keyword
    assert rule.words in exc.requirement
    assert "--" not in str(exc)  # the library's words, not the command line's


@pytest.mark.parametrize("rule", RULES, ids=[r.id for r in RULES])
def test_the_command_line_says_the_requirement_after_the_flag(rule: Rule) -> None:
    code, out, err = run("point", "--json", *rule.cli)
    exc = library_error(rule)
    flag = POINT_FLAGS[rule.keyword]
    assert_one_line_error(code, out, err, f"gaussmix: error: {flag} {rule.words}")
    # the whole requirement is the library's (the values are the same on both sides)
    assert err.strip() == f"gaussmix: error: {exc.named(flag)}"


def test_a_default_named_in_a_message_is_the_callers():
    """The sparse model with the command line's default loss: the message names no default
    (the explorer's default loss is another one)."""
    code, out, err = run("point", "--json", "--model", "sparse", "--delta1", "1", "--delta2", "1")
    assert_one_line_error(code, out, err, "--loss 'cross-entropy' needs one-hot labels")
    assert "default" not in err


def test_ridge_and_lasso_take_the_l1_ratio_they_imply():
    """The command line follows make_penalty: l1_ratio may accompany l2 / l1 with the value
    the penalty implies, and the point's params keep the user's mixing parameter only for a
    penalty that takes one."""
    from _cli_helpers import run_json

    plain = run_json("point", "--loss", "square", "--penalty", "l1", "--lam", "0.3")
    implied = run_json(
        "point", "--loss", "square", "--penalty", "l1", "--l1-ratio", "1", "--lam", "0.3"
    )
    assert implied == plain and implied["params"]["l1_ratio"] is None


@pytest.mark.parametrize("rule", [r for r in RULES if r.state is not None], ids=lambda r: r.id)
def test_gaussmix_explore_says_the_same_line_as_point(rule: Rule) -> None:
    """``gaussmix explore`` refuses the state before serving anything, in the words of
    ``gaussmix point`` (the explorer's message, said with the flag)."""
    expected = run("point", "--json", *rule.cli)
    assert run("explore", "--no-browser", *rule.cli) == expected
