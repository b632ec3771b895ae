"""MkDocs hook of the gaussmix site: TeX to MathML at build time (``hooks:`` in ``mkdocs.yml``).

The pages write mathematics as TeX between ``$...$`` (inline) and ``$$...$$`` (display).
``pymdownx.arithmatex`` in its generic mode protects it from Markdown and wraps it as
``<span class="arithmatex">\\(...\\)</span>`` / ``<div class="arithmatex">\\[...\\]</div>``;
this hook replaces each by the MathML that ``latex2mathml`` (a pure-Python package of the
``docs`` extra) makes of it.

Why MathML at build time rather than KaTeX or MathJax in the browser: the built site carries
no JavaScript for mathematics at all (nothing to fetch from a CDN, nothing to bundle), works
with no network, and browsers render MathML Core natively (Chromium since 109, Firefox,
Safari).  The price is a TeX subset: ``aligned`` is not understood (write
``\\begin{array}{rl}``), nor spacing commands inside ``\\operatorname*{...}``, and bold or
blackboard variants other than the Unicode letters (``\\mathbb{E}``, ``\\mathbb{R}``) are
rendered upright (Chromium's MathML Core ignores ``mathvariant``).  A formula that the
converter does not understand fails the build, naming the page and the TeX.
"""

from __future__ import annotations

import html
import re
from typing import Any

_MATH = re.compile(
    r'<(?P<tag>span|div) class="arithmatex">\s*'
    r"(?:\\\((?P<inline>.*?)\\\)|\\\[(?P<block>.*?)\\\])\s*</(?P=tag)>",
    re.DOTALL,
)
#: what the converter leaves of a command it does not know, or of a TeX alignment
_UNCONVERTED = re.compile(r"<mi>(\\[A-Za-z]+|&amp;|&)</mi>|<mo\s*/>")


class MathError(ValueError):
    """A formula that the TeX-to-MathML conversion does not understand."""


def tex_to_mathml(tex: str, display: bool = False) -> str:
    """MathML (a ``<math>`` element) of the TeX ``tex``; :class:`MathError` if any of it
    would be left unconverted."""
    from latex2mathml.converter import convert

    try:
        out = convert(tex.strip(), display="block" if display else "inline")
    except Exception as exc:  # the converter raises its own zoo of exception types
        raise MathError(f"cannot convert {tex!r}: {exc}") from None
    bad = _UNCONVERTED.search(out)
    if bad is not None:
        raise MathError(f"cannot convert {tex!r}: {bad.group(0)!r} left in the MathML")
    return out


def render_math(page_html: str) -> str:
    """``page_html`` with every arithmatex span / div replaced by its MathML."""

    def repl(m: re.Match) -> str:
        display = m.group("block") is not None
        tex = html.unescape(m.group("block") if display else m.group("inline"))
        mathml = tex_to_mathml(tex, display=display)
        if display:
            return f'<div class="gaussmix-math">{mathml}</div>'
        return mathml

    return _MATH.sub(repl, page_html)


def on_page_content(html_text: str, page: Any, config: Any, files: Any) -> str:
    """Replace the page's TeX by MathML."""
    from mkdocs.exceptions import PluginError

    if "arithmatex" not in html_text:
        return html_text
    try:
        return render_math(html_text)
    except MathError as exc:
        raise PluginError(f"{page.file.src_uri}: {exc}") from None
