"""The fixed-point maps are frozen values (issue 31, item 1): what one evaluation reuses from
the last travels in the iteration state, never on the map.

Two guards: at run time every write of an attribute after construction raises (each map's
own test: ``test_solver.py``, ``test_stacked_fixed_costs.py``); in the source no method of
a map but its constructor assigns an attribute of ``self`` (a plain, augmented or annotated
assignment, or ``object.__setattr__(self, ...)``), so that a map cannot write its memory
even by going around its ``__setattr__``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest
from _helpers import first_solve_memory

import gaussmix as gm
from gaussmix.theory.solve.fixed_point import FixedPointMap, MapMemory, start_state
from gaussmix.theory.solve.policy import channel_rule

THEORY = Path(gm.__file__).parent / "theory"
#: the maps and the modules that define them
MAPS = {
    "solve/fixed_point.py": ("FixedPointMap",),
    "solve/batch.py": ("StackedPoints",),
    "limits/margin.py": ("_MarginMap",),
}


def _writes_of_self(fn: ast.FunctionDef) -> list[str]:
    """The attributes of ``self`` that the function assigns (plain, augmented, annotated,
    in tuples, or through ``object.__setattr__(self, ...)``)."""
    out = []
    for node in ast.walk(fn):
        targets: list = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        elif isinstance(node, ast.Call):
            f = node.func
            is_setattr = isinstance(f, ast.Attribute) and f.attr == "__setattr__"
            if is_setattr and node.args:
                first = node.args[0]
                if isinstance(first, ast.Name) and first.id == "self":
                    out.append(f"__setattr__ at line {node.lineno}")
        for t in targets:
            for sub in ast.walk(t):
                if (
                    isinstance(sub, ast.Attribute)
                    and isinstance(sub.value, ast.Name)
                    and sub.value.id == "self"
                ):
                    out.append(f"self.{sub.attr} at line {sub.lineno}")
    return out


@pytest.mark.parametrize("module", sorted(MAPS))
def test_no_method_of_a_map_but_its_constructor_writes_an_attribute(module) -> None:
    tree = ast.parse((THEORY / module).read_text())
    found = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name in MAPS[module]:
            found[node.name] = node
            for fn in node.body:
                if isinstance(fn, ast.FunctionDef) and fn.name not in ("__init__", "__setattr__"):
                    assert not _writes_of_self(fn), (node.name, fn.name, _writes_of_self(fn))
    assert sorted(found) == sorted(MAPS[module])  # (the guard sees the classes it names)


def test_the_guard_sees_a_write() -> None:
    # the guard itself: a method that writes its memory is found, in each form
    src = """
class M:
    def hats(self, x):
        self.last = x
        self.count += 1
        self.a, self.b = 1, 2
        object.__setattr__(self, "warm", x)
"""
    (cls,) = ast.parse(src).body
    writes = _writes_of_self(cls.body[0])
    assert [w.split(" at")[0] for w in writes] == [
        "self.last",
        "self.count",
        "self.a",
        "self.b",
        "__setattr__",
    ]


def test_an_iteration_carries_the_memory_of_its_maps() -> None:
    """The memory of the last evaluation is the iteration's (``IterationOutcome.aux``): at a
    converged state returned as the last evaluated one, its channel evaluation is the map's
    at that state, reused without a new evaluation; the same map iterated again from there
    without it evaluates anew, to the same numbers."""
    from gaussmix.theory.solve.iteration import AndersonState, iterate

    mix = gm.Mixture.isotropic(0.5, "simplex", n_clusters=3)
    problem = gm.make_problem(mix, "cross-entropy", lam=0.5, alpha=1.0)
    T = FixedPointMap(problem, channel_rule(problem, None))
    x0 = start_state(problem, None)
    kw = dict(tol=1e-10, max_iter=200, damping=1.0, return_image=False)
    out = iterate(T, x0, AndersonState.init(6), **kw)
    assert out.converged and isinstance(out.aux, MapMemory)
    assert np.array_equal(out.aux.ev.x, out.x)
    assert T.hats(out.x, out.aux) is out.aux.ev
    fresh = T.hats(out.x)
    assert fresh is not out.aux.ev
    for f in ("Qhat", "Mhat", "Vhat"):
        np.testing.assert_allclose(getattr(fresh, f), getattr(out.aux.ev, f), rtol=0, atol=1e-12)


def test_a_stacked_iteration_carries_its_freeze_record() -> None:
    """A stacked iteration's record of which points froze is in its memory, made by the
    caller (or by the first evaluation) and read from the outcome; the map holds none."""
    from gaussmix.experiments import curves
    from gaussmix.theory.solve import batch_solve
    from gaussmix.theory.solve.options import SolverOptions

    opts = SolverOptions()
    mix = gm.Mixture.isotropic(1.0, "antipodal", labels="binary")
    problems = curves._problems(mix, "logistic", [(0.1, a) for a in (0.5, 1.0, 2.0)], "l2", None)
    T = FixedPointMap(
        problems, channel_rule(problems[0], None), freezing=batch_solve.solve_freezing(opts)
    )
    memory = T.memory()
    m = first_solve_memory(T, opts)
    out = batch_solve.converged_solve(T, T.start(), None, opts, memory=memory, anderson=m)
    assert out is not None and out.aux.record is memory.record
    assert memory.record.frozen.all() and memory.record.evaluations == out.n_iter
    again = batch_solve.converged_solve(T, T.start(), None, opts, anderson=m)  # a fresh record
    assert again is not None and again.aux.record is not memory.record
    np.testing.assert_array_equal(again.x, out.x)
    assert not hasattr(T, "frozen") and not hasattr(T, "last")
