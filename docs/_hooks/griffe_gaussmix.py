"""Griffe extension of the gaussmix site: docstrings as the site shows them.

* A few functions and classes share a block of their docstring (e.g. the solver options of
  :func:`gaussmix.theory.api.api.solve` and :class:`gaussmix.SolverOptions`): the source holds a
  line ``%(name)s`` that the module replaces when it is imported.  Griffe reads the source,
  so for such an object the docstring of the imported object is taken instead.
* The docstrings are numpy-style with a few reStructuredText habits (roles such as
  ``:func:`~gaussmix.solve```, double back-quotes, ``::`` before a literal block), which
  mkdocstrings would show as they are: they become Markdown code spans and paragraphs.
* A function that takes the solver options as ``**kwargs`` shows them, as its imported
  signature does (``inspect.signature``), as keyword-only parameters.
* Defaults are the signature's, as Python sees it: griffe reads them from the source (a
  module constant such as ``_DEFAULT.tol`` shows as its name) and the numpy parser takes
  the first of a set of choices ``name : {'a', 'b'}`` as the default (numpydoc's rule,
  which the docstrings here do not follow).  Every parameter's default becomes the
  :func:`render_default` of the imported object's default, a set of choices reads
  ``'a' | 'b'``, and an entry naming several parameters (``a, b : float``; the parser
  would give them all the first one's default) becomes one entry per parameter with the
  same type and description (:func:`split_grouped`).
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import re
from typing import Any

import griffe

_MARK = re.compile(r"^\s*%\(\w+\)s\s*$", re.MULTILINE)  # a mark alone on its line
_ROLE = re.compile(r":(?:[a-z]+:)?[a-z]+:`(~?)([^`]+)`")
_DOUBLE = re.compile(r"``([^`]+?)``", re.DOTALL)
#: a numpydoc parameter line whose type is a set of choices: ``name : {'a', 'b'} ...``
_CHOICES = re.compile(r"^(?P<head>\s*[*\w][\w, *]* : )\{(?P<choices>[^{}]+)\}(?P<tail>.*)$")
#: significant digits of the floats of a rendered default
_DIGITS = 6


def render_default(value: Any) -> str:
    """A default as the API reference shows it: ``repr`` of the value, floats to six
    significant digits (inside tuples and lists too), functions and classes by name, a
    dataclass field's factory by the value it makes."""
    if isinstance(value, float):
        return repr(float(f"{value:.{_DIGITS}g}"))
    if isinstance(value, tuple | list):
        inner = ", ".join(render_default(v) for v in value)
        if isinstance(value, tuple):
            return f"({inner},)" if len(value) == 1 else f"({inner})"
        return f"[{inner}]"
    if inspect.isfunction(value) or inspect.isclass(value) or inspect.isbuiltin(value):
        return value.__qualname__
    if type(value) is object:  # a sentinel: "not given"
        return "<not given>"
    return repr(value)


def runtime_object(obj: griffe.Object) -> Any:
    """The imported object at ``obj.path``."""
    value: Any = importlib.import_module(obj.module.path)
    for part in obj.path[len(obj.module.path) + 1 :].split("."):
        value = getattr(value, part)
    return value


def signature_defaults(value: Any) -> dict[str, str]:
    """Parameter name -> :func:`render_default` of its default, for every parameter of
    ``value``'s signature that has one (a dataclass field's factory: the value it makes)."""
    try:
        sig = inspect.signature(value)
    except (TypeError, ValueError):
        return {}
    factories = (
        {f.name: f.default_factory for f in dataclasses.fields(value)}
        if inspect.isclass(value) and dataclasses.is_dataclass(value)
        else {}
    )
    out = {}
    for name, p in sig.parameters.items():
        if p.default is p.empty:
            continue
        factory = factories.get(name, dataclasses.MISSING)
        default = factory() if factory is not dataclasses.MISSING else p.default
        out[name] = render_default(default)
    return out


def runtime_docstring(obj: griffe.Object) -> str:
    """The docstring of the imported object at ``obj.path`` (``inspect.getdoc``)."""
    doc = inspect.getdoc(runtime_object(obj))
    if doc is None or _MARK.search(doc):
        raise ValueError(f"{obj.path}: the imported docstring still holds a %(name)s line")
    return doc


#: numpydoc sections whose entries document parameters
_PARAMETER_SECTIONS = ("Parameters", "Other Parameters", "Attributes")
_GROUPED = re.compile(r"^(?P<names>[*\w]+(?:, [*\w]+)+)(?P<type> : .*)?$")


def split_grouped(text: str) -> str:
    """One entry per parameter in the parameter sections: ``a, b : T`` and its indented
    description become ``a : T`` and ``b : T``, each with the description."""
    lines = text.splitlines()
    out: list[str] = []
    section = None
    i = 0
    while i < len(lines):
        line = lines[i]
        if i + 1 < len(lines) and re.fullmatch(r"\s*-{3,}\s*", lines[i + 1]) and line.strip():
            section = line.strip()
        m = _GROUPED.match(line) if section in _PARAMETER_SECTIONS else None
        if m is None:
            out.append(line)
            i += 1
            continue
        j = i + 1
        while j < len(lines) and (not lines[j].strip() or lines[j].startswith((" ", "\t"))):
            if not lines[j].strip() and (j + 1 >= len(lines) or not lines[j + 1].startswith(" ")):
                break
            j += 1
        body = lines[i + 1 : j]
        for name in m.group("names").split(", "):
            out += [f"{name}{m.group('type') or ''}", *body]
        i = j
    return "\n".join(out)


def _role(m: re.Match[str]) -> str:
    target = m.group(2)
    return f"`{target.rsplit('.', 1)[-1] if m.group(1) else target}`"


def markdown_docstring(text: str) -> str:
    """reStructuredText roles, double back-quotes and ``::`` turned into Markdown."""
    text = _DOUBLE.sub(r"`\1`", _ROLE.sub(_role, text))  # spans may cross lines
    text = split_grouped(text)
    out = []
    for line in text.splitlines():
        m = _CHOICES.match(line)
        if m is not None:  # the choices as a type, not the first of them as the default
            choices = " | ".join(c.strip() for c in m.group("choices").split(","))
            line = f"{m.group('head')}{choices}{m.group('tail')}"
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
            if obj.is_function or obj.is_class:
                _set_defaults(obj)
            if obj.docstring is None:
                continue
            if (obj.is_function or obj.is_class) and _MARK.search(obj.docstring.value):
                obj.docstring.value = runtime_docstring(obj)
            obj.docstring.value = markdown_docstring(obj.docstring.value)


def _set_defaults(obj: griffe.Object) -> None:
    """The defaults of ``obj``'s parameters (a class: its ``__init__``'s) from the imported
    object's signature (:func:`signature_defaults`)."""
    try:
        value = runtime_object(obj)
    except (ImportError, AttributeError):
        return  # not importable as written (e.g. defined under a condition)
    defaults = signature_defaults(value)
    if obj.is_class and dataclasses.is_dataclass(value):
        # griffe makes a dataclass's parameters from its fields' values, on each access
        for name, default in defaults.items():
            field = obj.members.get(name)
            if field is not None and not field.is_alias:
                field.value = default
        return
    params = obj.parameters if obj.is_function else _init_parameters(obj)
    if obj.is_function and params is not None:
        _expand_keywords(params, value)
    for p in params or ():
        if p.name in defaults:
            p.default = defaults[p.name]


def _expand_keywords(params: Any, value: Any) -> None:
    """The keyword-only parameters that the imported function's signature shows in place of
    the source's ``**kwargs`` (a function that takes the solver options as keywords,
    ``gaussmix.theory.solve.options.with_options_doc``), added to griffe's ``params``."""
    try:
        sig = inspect.signature(value)
    except (TypeError, ValueError):
        return
    var = [p for p in params if p.kind is griffe.ParameterKind.var_keyword]
    if not var or any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values()):
        return
    del params[var[0].name]
    for name in sig.parameters:
        if name not in params:
            params.add(griffe.Parameter(name, kind=griffe.ParameterKind.keyword_only))


def _init_parameters(cls: griffe.Object) -> Any:
    """The parameters mkdocstrings shows for a class (merged ``__init__``), or None."""
    try:
        return cls.parameters
    except (AttributeError, ValueError):
        return None
