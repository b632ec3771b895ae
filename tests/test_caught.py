"""Warnings caught per thread (gaussmix.core.caught): each thread's capture gets its own
thread's warnings, whatever the order in which captures of several threads open and close;
the process's warning state is what it was once the last one closes; captures nest as
``warnings.catch_warnings`` blocks do."""

from __future__ import annotations

import threading
import warnings

import pytest

from gaussmix.core.caught import caught, reissue, routed


def _messages(log: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in log]


def test_interleaved_captures_of_two_threads_keep_their_own_warnings() -> None:
    # A opens, B opens, A closes, B closes: with warnings.catch_warnings, B would put back
    # A's recorder on closing, and every later warning of the process would be lost
    show, filters = warnings.showwarning, list(warnings.filters)
    a_open, b_open, a_closed = threading.Event(), threading.Event(), threading.Event()
    logs: dict[str, list[str]] = {}

    def a() -> None:
        with caught() as log:
            a_open.set()
            b_open.wait(5)
            warnings.warn("from a", UserWarning, stacklevel=1)
        logs["a"] = _messages(log)
        a_closed.set()

    def b() -> None:
        a_open.wait(5)
        with caught() as log:
            b_open.set()
            warnings.warn("from b, early", UserWarning, stacklevel=1)
            a_closed.wait(5)
            warnings.warn("from b, late", UserWarning, stacklevel=1)
        logs["b"] = _messages(log)

    threads = [threading.Thread(target=a), threading.Thread(target=b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert logs == {"a": ["from a"], "b": ["from b, early", "from b, late"]}
    assert warnings.showwarning is show
    assert warnings.filters == filters
    with pytest.warns(UserWarning, match="after both"):  # the process still warns
        warnings.warn("after both", UserWarning, stacklevel=1)


def test_another_threads_warning_is_not_taken() -> None:
    inside, done = threading.Event(), threading.Event()
    taken: list[str] = []

    def worker() -> None:
        with caught() as log:
            inside.set()
            done.wait(5)
        taken.extend(_messages(log))

    t = threading.Thread(target=worker)
    t.start()
    inside.wait(5)
    with pytest.warns(UserWarning, match="main thread's"):
        warnings.warn("the main thread's", UserWarning, stacklevel=1)
    done.set()
    t.join(10)
    assert taken == []


def test_captures_nest() -> None:
    with caught() as outer:
        with caught((DeprecationWarning,), record=False):  # drops one kind, passes the rest
            warnings.warn("dropped", DeprecationWarning, stacklevel=1)
            warnings.warn("passed on", UserWarning, stacklevel=1)
        with caught(drop_message="Line Search") as inner:
            warnings.warn("Line Search failed", UserWarning, stacklevel=1)
            warnings.warn("kept inside", UserWarning, stacklevel=1)
        warnings.warn("repeated", UserWarning, stacklevel=1)
        warnings.warn("repeated", UserWarning, stacklevel=1)  # 'always': both seen
    assert _messages(outer) == ["passed on", "repeated", "repeated"]
    assert _messages(inner) == ["kept inside"]


def test_a_receiver_gets_each_kept_warning() -> None:
    got: list[tuple[str, type]] = []
    with routed(lambda w: got.append((str(w.message), w.category)), (RuntimeWarning,)):
        warnings.warn("noise", RuntimeWarning, stacklevel=1)
        warnings.warn("kept", FutureWarning, stacklevel=1)
    assert got == [("kept", FutureWarning)]


def _library_function() -> None:
    with caught() as log:
        warnings.warn("inner", UserWarning, stacklevel=1)
    reissue(log, stacklevel=2)


def test_reissued_warnings_point_at_the_callers_line() -> None:
    with pytest.warns(UserWarning, match="inner") as rec:
        _library_function()
    assert rec[0].filename == __file__


def test_the_library_catches_warnings_only_through_this_module() -> None:
    # the command line's handler is process-wide by intent (the main thread, one command);
    # calls in code, not in a docstring's example of user code
    import ast
    from pathlib import Path

    import gaussmix

    def calls_it(tree: ast.AST) -> bool:
        return any(
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "catch_warnings"
            for node in ast.walk(tree)
        )

    root = Path(gaussmix.__file__).parent
    users = sorted(
        str(p.relative_to(root)) for p in root.rglob("*.py") if calls_it(ast.parse(p.read_text()))
    )
    assert users == ["cli/commands.py"]
