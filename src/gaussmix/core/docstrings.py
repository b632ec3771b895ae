"""Docstring blocks shared by several functions, written once.

A docstring holds a line ``%(name)s`` (alone, indented as the block should be) where a
shared block goes; :func:`shared_doc` replaces it when the module is imported.  The site's
griffe extension reads such a function's docstring from the imported object.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable
from typing import TypeVar

__all__ = ["shared_doc"]

F = TypeVar("F", bound=Callable)
_MARK = re.compile(r"^([ \t]*)%\((\w+)\)s[ \t]*\n", re.MULTILINE)


def shared_doc(**blocks: str) -> Callable[[F], F]:
    """A decorator replacing each line ``%(name)s`` of a docstring by ``blocks[name]``
    (dedented, then indented as the mark).

    Parameters
    ----------
    **blocks : str
        The shared blocks by name.

    Raises
    ------
    KeyError
        If the docstring marks a block that is not given.
    """

    def fill(func: F) -> F:
        def block(m: re.Match[str]) -> str:
            name = m.group(2)
            if name not in blocks:
                raise KeyError(f"{func.__qualname__}: no shared docstring block {name!r}")
            text = textwrap.dedent(blocks[name]).strip("\n")
            return textwrap.indent(text, m.group(1)) + "\n"

        func.__doc__ = _MARK.sub(block, func.__doc__ or "")
        return func

    return fill
