"""The API reference is right: the defaults it shows are the signatures', every parameter
of the public API is listed in its docstring, and the Examples of the main entry points
run (doctest).

The public API is the names exported by ``gaussmix`` and by its public subpackages
(``__all__``).  The reference is what mkdocstrings renders from griffe's reading of the
docstrings, with the site's griffe extension (``docs/_hooks/griffe_gaussmix.py``); these
tests parse the docstrings the same way.
"""

from __future__ import annotations

import doctest
import importlib
import importlib.util
import inspect
from pathlib import Path

import pytest

import gaussmix as gm

ROOT = Path(__file__).resolve().parents[1]
#: gaussmix and the public subpackages whose ``__all__`` the reference documents
PUBLIC_PACKAGES = (
    "gaussmix",
    "gaussmix.experiments",
    "gaussmix.simulate",
    "gaussmix.sweep",
    "gaussmix.data",
    "gaussmix.studies",
    "gaussmix.figures",
    "gaussmix.explore",
)
#: the packages whose every public parameter is listed, with a description, in a
#: numpydoc Parameters section (a class's fields: Parameters or Attributes); still to be
#: completed: gaussmix.simulate and gaussmix.sweep
DESCRIBED_PACKAGES = (
    "gaussmix",
    "gaussmix.experiments",
    "gaussmix.data",
    "gaussmix.studies",
    "gaussmix.figures",
    "gaussmix.explore",
)
#: the entry points with a runnable Examples section
EXAMPLES = (
    "gaussmix.solve",
    "gaussmix.learning_curve",
    "gaussmix.lambda_sweep",
    "gaussmix.optimal_lambda",
    "gaussmix.separability_threshold",
    "gaussmix.bayes_optimal_error",
    "gaussmix.Mixture",
    "gaussmix.simulate.simulate",
    "gaussmix.data.load_dataset",
    "gaussmix.data.load_raw",
)


def _extension():
    pytest.importorskip("griffe")  # the docs extra (the site's extension imports it)
    spec = importlib.util.spec_from_file_location(
        "griffe_gaussmix_ext", ROOT / "docs" / "_hooks" / "griffe_gaussmix.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def reference():
    """(griffe package as the site loads it, the site's extension module)."""
    griffe = pytest.importorskip("griffe")
    pytest.importorskip("griffe_sphinx")
    extensions = griffe.load_extensions(
        "griffe_sphinx", str(ROOT / "docs" / "_hooks" / "griffe_gaussmix.py")
    )
    pkg = griffe.load(
        "gaussmix",
        search_paths=[str(ROOT / "src")],
        extensions=extensions,
        docstring_parser="numpy",
        resolve_aliases=False,
    )
    return pkg, _extension()


def public_objects(packages=PUBLIC_PACKAGES) -> dict[str, object]:
    """Defining path -> object, for every function and class of the packages' ``__all__``."""
    out: dict[str, object] = {}
    for name in packages:
        module = importlib.import_module(name)
        for attr in module.__all__:
            obj = getattr(module, attr)
            if inspect.isfunction(obj) or inspect.isclass(obj):
                out.setdefault(f"{obj.__module__}.{obj.__qualname__}", obj)
    return out


def _parameters(obj) -> list[str]:
    """The parameters the reference must describe: a class whose constructor is inherited
    from another library (``CurveTable``: pandas' ``DataFrame``) has none of its own."""
    if inspect.isclass(obj):
        ctor = next(
            (k for k in obj.__mro__ if "__init__" in vars(k) or "__new__" in vars(k)), object
        )
        if not ctor.__module__.startswith("gaussmix") and ctor is not object:
            return []
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return []
    return [
        name
        for name, p in sig.parameters.items()
        if name not in ("self", "cls")
        and not name.startswith("_")
        and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]


def _documented(pkg, path: str) -> dict[str, tuple[str, object]]:
    """Parameter name -> (section, DocstringParameter) as the reference renders them."""
    g = pkg[path[len("gaussmix.") :]]
    if g.is_alias:
        g = g.final_target
    out: dict[str, tuple[str, object]] = {}
    if g.docstring is None:
        return out
    sections = ("parameters", "other parameters") + (("attributes",) if g.is_class else ())
    for section in g.docstring.parse("numpy", warnings=False):
        if section.kind.value in sections:
            for item in section.value:
                out.setdefault(item.name, (section.kind.value, item))
    return out


def test_the_public_api_is_not_empty() -> None:
    objs = public_objects()
    assert len(objs) > 100
    assert (
        "gaussmix.theory.api.api.solve" in objs and "gaussmix.data.datasets.load_dataset" in objs
    )


def test_rendered_defaults_are_the_signatures(reference) -> None:
    """Every default the reference shows (a Parameters entry, or an Attributes entry that
    shows one) is the rendering of the signature's default: no source name such as
    ``_DEFAULT.tol``, no first-of-the-choices, no grouped entry's shared default."""
    pkg, ext = reference
    bad = []
    for path, obj in public_objects().items():
        want = ext.signature_defaults(obj)
        for name, (section, item) in _documented(pkg, path).items():
            if name not in _parameters(obj):
                continue
            shown = None if item.value is None else str(item.value)
            if section == "attributes" and shown is None:
                continue  # an attribute's entry shows no default
            if shown != want.get(name):
                bad.append(f"{path}({name}): shows {shown}, signature {want.get(name)}")
    assert not bad, "\n".join(bad)


def test_the_issues_defaults(reference) -> None:
    """The defaults the reference used to get wrong."""
    pkg, _ = reference
    solve = dict(_documented(pkg, "gaussmix.theory.api.api.solve"))
    assert str(solve["loss"][1].value) == "'logistic'"
    assert str(solve["tol"][1].value) == repr(
        inspect.signature(gm.solve).parameters["tol"].default
    )
    assert str(solve["max_iter"][1].value) == "3000"
    sweep = dict(_documented(pkg, "gaussmix.sweep.runner.sweep"))
    assert str(sweep["backend"][1].value) == "None"


def test_render_default() -> None:
    ext = _extension()
    assert ext.render_default(1e-8) == "1e-08"
    assert ext.render_default((0.1, 0.117703781794, 5.0)) == "(0.1, 0.117704, 5.0)"
    assert ext.render_default((2,)) == "(2,)" and ext.render_default("l2") == "'l2'"
    assert ext.render_default(gm.solve) == "solve" and ext.render_default(None) == "None"


def test_split_grouped_entries() -> None:
    ext = _extension()
    text = "\n".join(
        ["Parameters", "----------", "a, b : float", "    Shared.", "c : int", ""]
        + ["Returns", "-------", "x, y : int"]
    )
    assert ext.split_grouped(text).splitlines() == [
        "Parameters",
        "----------",
        "a : float",
        "    Shared.",
        "b : float",
        "    Shared.",
        "c : int",
        "",
        "Returns",
        "-------",
        "x, y : int",  # not a parameter section: left alone
    ]


@pytest.mark.parametrize("package", DESCRIBED_PACKAGES)
def test_every_public_parameter_is_described(reference, package) -> None:
    pkg, _ = reference
    missing = []
    for path, obj in public_objects((package,)).items():
        documented = _documented(pkg, path)
        for name in _parameters(obj):
            entry = documented.get(name)
            if entry is None:
                missing.append(f"{path}({name}): not listed")
            elif not entry[1].description.strip():
                missing.append(f"{path}({name}): no description")
    assert not missing, "\n".join(missing)


@pytest.mark.parametrize("dotted", EXAMPLES)
def test_examples_run(dotted: str) -> None:
    """The Examples section exists and its doctest passes (numbers printed rounded)."""
    module_name, _, attr = dotted.rpartition(".")
    obj = getattr(importlib.import_module(module_name), attr)
    doc = inspect.getdoc(obj) or ""
    assert "Examples\n--------" in doc and ">>>" in doc, dotted
    finder = doctest.DocTestFinder(recurse=False)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    globs = {**vars(importlib.import_module(obj.__module__))}
    tests = finder.find(obj, dotted, globs=globs)
    assert tests and tests[0].examples
    for test in tests:
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0 and result.attempted > 0, dotted


def test_shared_docstring_blocks() -> None:
    """A ``%(name)s`` line becomes the block, indented as the mark; an unknown block is an
    error; the studies' curves read their shared blocks."""
    from gaussmix.core.docstrings import shared_doc
    from gaussmix.studies import realdata_curve

    @shared_doc(common="x : int\n    The x.")
    def f(x: int) -> None:
        """Do.

        Parameters
        ----------
        %(common)s
        """

    assert inspect.getdoc(f).splitlines()[4:6] == ["x : int", "    The x."]

    def g() -> None:
        """Do.

        %(other)s
        """

    with pytest.raises(KeyError, match="other"):
        shared_doc(common="")(g)

    doc = inspect.getdoc(realdata_curve)
    assert "%(" not in doc and "problem : RealDataProblem" in doc
