"""Griffe extension of the gaussmix site: docstrings completed at import time.

A few functions share a block of their docstring (e.g. the solver options of
:func:`gaussmix.theory.solver.solve`): the source holds a line ``%(name)s`` that the module
replaces when it is imported.  Griffe reads the source, so for such a function this
extension takes the docstring of the imported object instead.
"""

from __future__ import annotations

import importlib
import inspect
import re
from typing import Any

import griffe

_MARK = re.compile(r"^\s*%\(\w+\)s\s*$", re.MULTILINE)  # a mark alone on its line


class RuntimeDocstrings(griffe.Extension):
    """Replace a docstring holding a ``%(name)s`` mark by the imported object's."""

    def on_function_instance(self, *, node: Any, func: griffe.Function, **kwargs: Any) -> None:
        if func.docstring is None or not _MARK.search(func.docstring.value):
            return
        obj: Any = importlib.import_module(func.module.path)
        for part in func.path[len(func.module.path) + 1 :].split("."):
            obj = getattr(obj, part)
        doc = inspect.getdoc(obj)
        if doc is None or _MARK.search(doc):
            raise ValueError(f"{func.path}: the imported docstring still holds a %(name)s mark")
        func.docstring.value = doc
