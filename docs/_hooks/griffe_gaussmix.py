"""Griffe extension of the gaussmix site: docstrings as the site shows them.

* A few functions share a block of their docstring (e.g. the solver options of
  :func:`gaussmix.theory.api.solve`): the source holds a line ``%(name)s`` that the
  module replaces when it is imported.  Griffe reads the source, so for such a function the
  docstring of the imported object is taken instead.
* The docstrings are numpy-style with a few reStructuredText habits (roles such as
  ``:func:`~gaussmix.solve```, double back-quotes, ``::`` before a literal block), which
  mkdocstrings would show as they are: they become Markdown code spans and paragraphs.
"""

from __future__ import annotations

import importlib
import inspect
import re
from typing import Any

import griffe

_MARK = re.compile(r"^\s*%\(\w+\)s\s*$", re.MULTILINE)  # a mark alone on its line
_ROLE = re.compile(r":(?:[a-z]+:)?[a-z]+:`(~?)([^`]+)`")
_DOUBLE = re.compile(r"``([^`]+?)``", re.DOTALL)


def runtime_docstring(obj: griffe.Object) -> str:
    """The docstring of the imported object at ``obj.path`` (``inspect.getdoc``)."""
    value: Any = importlib.import_module(obj.module.path)
    for part in obj.path[len(obj.module.path) + 1 :].split("."):
        value = getattr(value, part)
    doc = inspect.getdoc(value)
    if doc is None or _MARK.search(doc):
        raise ValueError(f"{obj.path}: the imported docstring still holds a %(name)s line")
    return doc


def _role(m: re.Match[str]) -> str:
    target = m.group(2)
    return f"`{target.rsplit('.', 1)[-1] if m.group(1) else target}`"


def markdown_docstring(text: str) -> str:
    """reStructuredText roles, double back-quotes and ``::`` turned into Markdown."""
    text = _DOUBLE.sub(r"`\1`", _ROLE.sub(_role, text))  # spans may cross lines
    out = []
    for line in text.splitlines():
        if line.rstrip().endswith("::") and not line.lstrip().startswith(">>>"):
            stripped = line.rstrip()[:-2].rstrip()
            line = stripped + ":" if stripped else ""
        out.append(line)
    return "\n".join(out)


def _walk(obj: griffe.Object) -> Any:
    yield obj
    for member in obj.members.values():
        if not member.is_alias:
            yield from _walk(member)


class GaussmixDocstrings(griffe.Extension):
    """Complete ``%(name)s`` docstrings from the imported objects; rST habits to Markdown.

    Runs once the package is loaded, so that docstrings other extensions add (attribute
    comments read by griffe-sphinx) are seen too.
    """

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        for obj in _walk(pkg):
            if obj.docstring is None:
                continue
            if obj.is_function and _MARK.search(obj.docstring.value):
                obj.docstring.value = runtime_docstring(obj)
            obj.docstring.value = markdown_docstring(obj.docstring.value)
