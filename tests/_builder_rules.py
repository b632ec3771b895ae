"""The rules of the mixture builder and of the estimator's options, each checked once by the
library (issue 18: one validated problem; issue 22: the explorer answers with the library's
message): one row per rule, with the library call that breaks it, the keyword it names,
the command line that breaks it and the explorer state that does."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gaussmix as gm
from gaussmix.core.exceptions import ArgumentError
from gaussmix.theory.model.mixture import MIXTURE_MODELS, parametric_model

#: a valid sparse mixture on the command line (a loss that takes its binary labels)
SPARSE_CLI = ("--model", "sparse", "--delta1", "0.5", "--delta2", "1", "--loss", "logistic")
#: the same in the explorer
SPARSE_STATE = {"model": "sparse", "delta1": 0.5, "delta2": 1.0}


@dataclass(frozen=True)
class Rule:
    """One rule: ``call`` breaks it in the library, which names ``keyword`` (the error's
    requirement contains ``words``); ``cli`` breaks it on the command line (``gaussmix
    point ...``) and ``state`` in the explorer (None: no control can break it)."""

    id: str
    call: Callable[[], Any]
    keyword: str
    words: str
    cli: tuple[str, ...]
    state: dict[str, Any] | None


def _sparse(**kw: Any) -> Callable[[], Any]:
    args = {"sparsity": 0.1, "delta1": 0.5, "delta2": 1.0, **kw}
    return lambda: gm.Mixture.sparse(**args)


RULES = [
    Rule("delta1 > 0", _sparse(delta1=0.0), "delta1", "must be > 0, got 0",
         (*SPARSE_CLI, "--delta1", "0"), {**SPARSE_STATE, "delta1": 0.0}),
    Rule("delta2 > 0", _sparse(delta2=-1.0), "delta2", "must be > 0, got -1",
         (*SPARSE_CLI, "--delta2", "-1"), {**SPARSE_STATE, "delta2": -1.0}),
    Rule("sparsity <= 1", _sparse(sparsity=1.5), "sparsity", "must be <= 1, got 1.5",
         (*SPARSE_CLI, "--sparsity", "1.5"), {**SPARSE_STATE, "sparsity": 1.5}),
    Rule("sparsity > 0", _sparse(sparsity=0.0), "sparsity", "must be > 0, got 0",
         (*SPARSE_CLI, "--sparsity", "0"), {**SPARSE_STATE, "sparsity": 0.0}),
    Rule("sparse: K = 2", _sparse(n_clusters=3), "n_clusters", "must be 2 with the sparse",
         (*SPARSE_CLI, "--n-clusters", "3"), {**SPARSE_STATE, "n_clusters": 3}),
    Rule("sparse: binary labels", _sparse(labels="onehot"), "labels", "must be 'binary'",
         (*SPARSE_CLI, "--labels", "onehot"), {**SPARSE_STATE, "labels": "onehot"}),
    Rule("sparse: own means", _sparse(means="simplex"), "means", "must be 'sparse'",
         (*SPARSE_CLI, "--means", "simplex"), {**SPARSE_STATE, "means": "simplex"}),
    Rule("sparse: two priors", _sparse(rho=[0.2, 0.3, 0.5]), "rho", "must have shape (2)",
         (*SPARSE_CLI, "--rho", "0.2,0.3,0.5"), {**SPARSE_STATE, "rho": (0.2, 0.3, 0.5)}),
    Rule("sparse: a binary loss",
         lambda: gm.make_problem(_sparse()(), "cross-entropy", lam=0.1, alpha=1.0),
         "loss", "'cross-entropy' needs one-hot labels",
         (*SPARSE_CLI, "--loss", "cross-entropy"), {**SPARSE_STATE, "loss": "cross-entropy"}),
    Rule("block: fractions required",
         lambda: MIXTURE_MODELS.get("block").check_parameters({"deltas": [1.0]}),
         "fractions", "is required with model='block'",
         ("--model", "block", "--deltas", "1"), {"model": "block", "deltas": (1.0,)}),
    Rule("block: deltas required",
         lambda: MIXTURE_MODELS.get("block").check_parameters({"fractions": [1.0]}),
         "deltas", "is required with model='block'",
         ("--model", "block", "--fractions", "1"), {"model": "block", "fractions": (1.0,)}),
    Rule("another model's parameter",
         lambda: MIXTURE_MODELS.get("isotropic").check_parameters({"delta1": 0.5}),
         "delta1", "is a parameter of model='sparse', not of model='isotropic'",
         ("--delta1", "0.5"), None),
    Rule("a model built from numbers", lambda: parametric_model("dense"), "model",
         "must be one of 'isotropic', 'block', 'sparse'; got 'dense'",
         ("--model", "dense"), {"model": "dense"}),
    Rule("l1_ratio required", lambda: gm.make_penalty("elastic-net"), "l1_ratio",
         "is required with penalty='elastic-net'",
         ("--penalty", "elastic-net"), {"penalty": "elastic-net"}),
    Rule("l1_ratio <= 1", lambda: gm.make_penalty("elastic-net", 1.5), "l1_ratio",
         "must be <= 1, got 1.5",
         ("--penalty", "elastic-net", "--l1-ratio", "1.5"),
         {"penalty": "elastic-net", "l1_ratio": 1.5}),
    Rule("l1_ratio >= 0", lambda: gm.make_penalty("elastic-net", -0.5), "l1_ratio",
         "must be >= 0, got -0.5",
         ("--penalty", "elastic-net", "--l1-ratio", "-0.5"),
         {"penalty": "elastic-net", "l1_ratio": -0.5}),
    Rule("l1_ratio of ridge", lambda: gm.make_penalty("l2", 0.5), "l1_ratio",
         "0.5 contradicts penalty='l2'", ("--l1-ratio", "0.5"), {"l1_ratio": 0.5}),
    Rule("a named penalty", lambda: gm.make_penalty("l3"), "penalty",
         "must be one of 'l2', 'l1', 'elastic-net'; got 'l3'",
         ("--penalty", "l3"), {"penalty": "l3"}),
]  # fmt: skip


def library_error(rule: Rule) -> ArgumentError:
    """The library's error for ``rule`` (it must be an ArgumentError naming its keyword)."""
    try:
        rule.call()
    except ArgumentError as exc:
        return exc
    raise AssertionError(f"{rule.id}: the library accepted it")
