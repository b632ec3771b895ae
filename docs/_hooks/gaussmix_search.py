"""MkDocs hook of the gaussmix site: a fix of the search's lunr (``hooks:`` in ``mkdocs.yml``).

mkdocs-material's search worker bundles lunr 2.3.9, which builds the set of the index's
terms as a minimised automaton (``lunr.TokenSet``).  Minimisation merges two nodes when
their keys, ``TokenSet.prototype.toString``, are equal, and that key concatenates each
edge's label with its child's numeric id, with nothing between them: with digits among the
labels two different nodes can get the same key (a node with the one edge ``"1"`` to node
234 and a node with the edges ``"1"`` to node 2 and ``"3"`` to node 4 are both ``"01234"``),
so they are merged and the automaton spells terms that are not in the index.  A query
whose prefix reaches such a term (Material searches every word as a prefix: ``"2"`` is
``2*``) then fails inside lunr (``posting._index`` of a missing term), the worker logs an
error and the search shows nothing.  On this site every query with the word ``2`` failed
("Theorem 2", "alpha 2").

After the build this hook rewrites that one expression of the worker so that each child's
id is closed by a separator (``label + id + "|"``): a label is a single character and an id
only digits, so the key is unambiguous, and the minimised automaton spells exactly the
index's terms.  The build fails if the expression is not found exactly once (a new
mkdocs-material whose lunr differs: check whether it still needs the fix).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

#: the search worker of mkdocs-material, inside the built site
WORKER_GLOB = "assets/javascripts/workers/search.*.min.js"

#: the minified ``TokenSet.prototype.toString`` of lunr 2.3.9: its loop's
#: ``str = str + label + node.id`` (minified names vary between builds of the theme)
_TOSTRING = re.compile(
    r"(?P<head>TokenSet\.prototype\.toString=function\(\)\{if\(this\._str\)return this\._str;"
    r"[^{}]*\{var (?P<label>\w+)=\w+\[\w+\],(?P<node>\w+)=this\.edges\[(?P=label)\];)"
    r"(?P<str>\w+)=(?P=str)\+(?P=label)\+(?P=node)\.id\}"
)


class SearchFixError(RuntimeError):
    """The search worker does not hold the lunr code that this hook fixes."""


def fix_token_set_key(source: str) -> str:
    """``source`` (the minified search worker) with lunr's ``TokenSet`` key made unambiguous:
    ``str + label + node.id + "|"``; :class:`SearchFixError` unless found exactly once."""
    found = _TOSTRING.findall(source)
    if len(found) != 1:
        raise SearchFixError(
            f"lunr's TokenSet.prototype.toString found {len(found)} times in the search "
            "worker, expected once: the theme's lunr changed, check whether its digit bug "
            "is fixed there and update docs/_hooks/gaussmix_search.py"
        )

    def repl(m: re.Match[str]) -> str:
        s, label, node = m.group("str"), m.group("label"), m.group("node")
        return f'{m.group("head")}{s}={s}+{label}+{node}.id+"|"}}'

    return _TOSTRING.sub(repl, source)


def fix_site(site_dir: str | Path) -> list[Path]:
    """Apply :func:`fix_token_set_key` to every search worker of the built site in
    ``site_dir``; the workers fixed."""
    workers = sorted(Path(site_dir).glob(WORKER_GLOB))
    if not workers:
        raise SearchFixError(f"no search worker {WORKER_GLOB} in {site_dir}")
    for worker in workers:
        worker.write_text(fix_token_set_key(worker.read_text(encoding="utf-8")), "utf-8")
    return workers


def on_post_build(config: Any) -> None:
    """Fix the built site's search worker."""
    from mkdocs.exceptions import PluginError

    try:
        fix_site(config["site_dir"])
    except SearchFixError as exc:
        raise PluginError(str(exc)) from None
