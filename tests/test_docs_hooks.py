"""The site's build hooks for mathematics (TeX -> MathML) and for the examples' output,
without a full ``mkdocs build`` (CI runs that; tests/test_site_browser.py loads the result).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HOOKS = ROOT / "docs" / "_hooks"


def _hook(name: str):
    key = f"gaussmix_site_{name}"
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, HOOKS / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[key] = module
        spec.loader.exec_module(module)
    return sys.modules[key]


def test_arithmatex_spans_become_mathml() -> None:
    pytest.importorskip("latex2mathml")
    math = _hook("gaussmix_math")
    page = (
        '<p>Inline <span class="arithmatex">\\(\\hat{Q}_c &lt; 1\\)</span> and</p>\n'
        '<div class="arithmatex">\\[\\begin{array}{l} a &amp;= b \\end{array}\\]</div>'
    )
    out = math.render_math(page)
    assert "arithmatex" not in out and "\\(" not in out and "\\[" not in out
    assert out.count("<math") == 2
    assert '<math xmlns="http://www.w3.org/1998/Math/MathML" display="inline">' in out
    assert '<div class="gaussmix-math"><math' in out and 'display="block"' in out
    assert "<mo>&lt;</mo>" in out or "<mo>&#x0003C;</mo>" in out  # the escaped '<' is TeX's


@pytest.mark.parametrize(
    "tex",
    [
        "\\notacommand x",  # an unknown command is left as text
        "\\begin{aligned} a &= b \\end{aligned}",  # an alignment the converter lacks
        "\\operatorname*{arg\\,min}_x",  # a spacing command inside the operator name
    ],
)
def test_tex_the_converter_does_not_understand_fails_the_build(tex: str) -> None:
    pytest.importorskip("latex2mathml")
    math = _hook("gaussmix_math")
    with pytest.raises(math.MathError, match="cannot convert"):
        math.tex_to_mathml(tex)


def test_run_markers_and_their_markdown(tmp_path: Path) -> None:
    ex = _hook("gaussmix_examples")
    page = "text\n<!-- gaussmix: run learning_curve.py . --quick -->\n<!-- not: run x -->\n"
    assert ex.page_commands(page) == [("learning_curve.py", ".", "--quick")]
    png = tmp_path / "learning_curve.png"
    png.write_bytes(b"")
    run = ex.ExampleRun(
        command=("learning_curve.py", ".", "--quick"),
        stdout="alpha test_error\n0.5 0.3",
        images={"examples/learning_curve.png": png},
    )
    md = ex.example_markdown(run, "tutorial/learning-curve.md")
    assert "`python examples/learning_curve.py . --quick`" in md
    assert "```text\nalpha test_error\n0.5 0.3\n```" in md
    assert "(../examples/learning_curve.png)" in md  # relative to the page


def test_an_example_that_fails_or_does_not_exist_is_reported(tmp_path: Path) -> None:
    ex = _hook("gaussmix_examples")
    with pytest.raises(ex.ExampleError, match="no example script"):
        ex.run_example(("no_such_example.py",), tmp_path / "a")
    with pytest.raises(ex.ExampleError, match="no example script"):
        ex.run_example(("../README.md",), tmp_path / "b")
    # a real script with a bad argument exits non-zero: the build fails with its stderr
    with pytest.raises(ex.ExampleError, match="exited with"):
        ex.run_example(("learning_curve.py", "/proc/not-writable/out"), tmp_path / "c")


def _theme_worker() -> Path:
    material = pytest.importorskip("material", reason="mkdocs-material is in the docs extra")
    templates = Path(material.__file__).parent / "templates"
    workers = sorted(templates.glob(_hook("gaussmix_search").WORKER_GLOB))
    assert len(workers) == 1, workers
    return workers[0]


def test_search_fix_makes_lunr_token_set_key_unambiguous(tmp_path: Path) -> None:
    search = _hook("gaussmix_search")
    source = _theme_worker().read_text(encoding="utf-8")
    assert '.id+"|"' not in source  # the theme's lunr still concatenates label and id
    fixed = search.fix_token_set_key(source)
    # one expression changed: the key closes each child's id by a separator
    assert len(fixed) == len(source) + len('+"|"')
    assert fixed.count('.id+"|"}return') == 1
    with pytest.raises(search.SearchFixError, match="found 0 times"):
        search.fix_token_set_key(fixed)  # not applied twice
    # on a built site: the worker in place, and a site without one is an error
    worker = tmp_path / "site" / "assets/javascripts/workers" / _theme_worker().name
    worker.parent.mkdir(parents=True)
    worker.write_text(source, encoding="utf-8")
    assert search.fix_site(tmp_path / "site") == [worker]
    assert worker.read_text(encoding="utf-8") == fixed
    with pytest.raises(search.SearchFixError, match="no search worker"):
        search.fix_site(tmp_path / "empty")
