"""MkDocs hook of the gaussmix site (``hooks:`` in ``mkdocs.yml``).

Two things are generated at build time, so that the site cannot drift from the code:

* ``gallery.md``: one entry per figure of the registry :data:`gaussmix.figures.FIGURES`
  (name, place in the paper, description, what the ``--fast`` preset changes, how the
  figure differs from the paper's where it does, caption, the ``gaussmix figure NAME``
  command).
  When the environment variable ``GAUSSMIX_ATLAS_DIR`` names a directory written by
  ``gaussmix figure all --out DIR`` (``DIR/NAME.png``, ``DIR/NAME.csv`` per figure and
  ``DIR/atlas.json = {"fast": bool, "figures": [{"name", "paper", "seconds", "status",
  "png", "csv"}, ...]}``; the file names may also sit in ``"files": {"png", "csv"}``, with
  optional ``"error"`` and ``"not_converged"``), its images and tables are copied into the
  site and each entry shows its image, what the image draws (the ``"drawn"`` values of
  ``DIR/NAME.json``: K, data sets, lambdas, alphas, ...) and its runtime; without it the
  page lists the commands and says how to add the images.
* ``<!-- gaussmix: exports -->``: the table of the names the package exports.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ATLAS_ENV = "GAUSSMIX_ATLAS_DIR"
#: where the gallery page lives and where the atlas files are copied, inside the site
GALLERY_PAGE = "gallery.md"
GALLERY_DIR = "atlas"


class DocsError(ValueError):
    """A problem in the sources of the site (the atlas directory)."""


# ---------------------------------------------------------------- the atlas and the gallery
@dataclass(frozen=True)
class AtlasEntry:
    """One figure of an atlas directory (a row of ``atlas.json``; files that exist only)."""

    name: str
    paper: str
    seconds: float | None
    status: str
    png: Path | None
    csv: Path | None
    error: str | None = None
    not_converged: int = 0
    drawn: dict[str, Any] | None = None


@dataclass(frozen=True)
class Atlas:
    """An atlas directory read from its ``atlas.json``."""

    directory: Path
    fast: bool
    figures: dict[str, AtlasEntry]


def _atlas_file(directory: Path, value: Any, field: str, name: str) -> Path | None:
    """The file an atlas entry names: relative to the atlas directory (or as written, or
    by its file name there); None if it is not listed or does not exist."""
    if value is None:
        default = directory / f"{name}.{field}"
        return default if default.is_file() else None
    if not isinstance(value, str):
        raise DocsError(f"{directory / 'atlas.json'}: figure {name!r}: {field} must be a path")
    if not value:
        return None
    path = Path(value)
    candidates = [path] if path.is_absolute() else [directory / path, path, directory / path.name]
    return next((c for c in candidates if c.is_file()), None)


def read_atlas(directory: str | Path) -> Atlas:
    """Read ``directory/atlas.json`` (written by ``gaussmix figure all --out DIR``).

    Paths in it are relative to ``directory`` (or absolute, or relative to the working
    directory, e.g. ``DIR/NAME.png``); a missing ``png`` / ``csv`` key means ``NAME.png`` /
    ``NAME.csv`` in ``directory``; a file that is listed but missing counts as absent, and
    so do the files of a figure whose status is not ``'ok'``.  A missing or malformed
    ``atlas.json`` raises :class:`DocsError` naming the file and :data:`ATLAS_ENV`.
    """
    directory = Path(directory)
    path = directory / "atlas.json"
    if not path.is_file():
        raise DocsError(
            f"{ATLAS_ENV}={directory}: no atlas.json there; make the directory with "
            f"'gaussmix figure all --fast --out {directory}' or unset {ATLAS_ENV}"
        )
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DocsError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("figures"), list):
        raise DocsError(f"{path}: expected an object with a list 'figures'")
    figures: dict[str, AtlasEntry] = {}
    for row in data["figures"]:
        if not isinstance(row, dict) or not isinstance(row.get("name"), str):
            raise DocsError(f"{path}: every entry of 'figures' needs a string 'name'")
        name = row["name"]
        seconds = row.get("seconds")
        if seconds is not None and (
            isinstance(seconds, bool) or not isinstance(seconds, int | float)
        ):
            raise DocsError(f"{path}: figure {name!r}: seconds must be a number or null")
        files = row.get("files") or {}
        if not isinstance(files, dict):
            raise DocsError(f"{path}: figure {name!r}: files must be an object")
        bad = row.get("not_converged") or 0
        if isinstance(bad, bool) or not isinstance(bad, int):
            raise DocsError(f"{path}: figure {name!r}: not_converged must be an integer")
        status = str(row.get("status", ""))
        png, csv, drawn = None, None, None
        if status in ("", "ok"):  # a failed figure's files are stale ones, if any
            png = _atlas_file(directory, row.get("png", files.get("png")), "png", name)
            csv = _atlas_file(directory, row.get("csv", files.get("csv")), "csv", name)
            drawn = _drawn(
                _atlas_file(directory, row.get("json", files.get("json")), "json", name)
            )
        figures[name] = AtlasEntry(
            name=name,
            paper=str(row.get("paper", "")),
            seconds=None if seconds is None else float(seconds),
            status=status,
            png=png,
            csv=csv,
            error=None if row.get("error") is None else str(row["error"]),
            not_converged=bad,
            drawn=drawn,
        )
    return Atlas(directory=directory, fast=bool(data.get("fast", False)), figures=figures)


def _drawn(path: Path | None) -> dict[str, Any] | None:
    """The ``"drawn"`` values of a figure's JSON companion (None if it has none)."""
    if path is None:
        return None
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DocsError(f"{path}: not valid JSON ({exc})") from None
    drawn = meta.get("drawn") if isinstance(meta, dict) else None
    return drawn if isinstance(drawn, dict) else None


def format_seconds(seconds: float) -> str:
    """``12.3 s``, ``4 min 05 s``, ``1 h 02 min``."""
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, sec = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {sec:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def paper_order(paper: str) -> tuple[int, int, int]:
    """Sort key of a figure's place in the paper: the atlas's
    (:func:`gaussmix.figures.paper_atlas.paper_order`)."""
    from gaussmix.figures.paper_atlas import paper_order as order

    return order(paper)


def figure_rows() -> list[dict[str, str]]:
    """The atlas (:func:`gaussmix.figures.atlas`: name, paper, description, what ``--fast``
    changes, how the figure differs from the paper, command, in the paper's order) with
    each figure's caption, as plain rows."""
    from gaussmix.figures import FIGURES, atlas

    keys = ("name", "paper", "description", "fast", "differs", "command", "mixture")
    return [
        {**{k: str(row[k]) for k in keys}, "caption": FIGURES[row["name"]].caption}
        for _, row in atlas().iterrows()
    ]


def markdown_text(text: str) -> str:
    """Plain text (a description, a caption) with Markdown's special characters escaped
    (``<`` as an HTML entity: Python-Markdown has no backslash escape for it, so
    ``1 <-> 4`` would show its backslash)."""
    return re.sub(r"([\\`*_\[\]>|])", r"\\\1", text).replace("<", "&lt;")


def gallery_markdown(rows: list[dict[str, str]], atlas: Atlas | None) -> str:
    """The gallery page: every figure of ``rows``, with its image when ``atlas`` has it."""
    lines = [
        "# Gallery",
        "",
        "Every figure of the paper that gaussmix reproduces, from the figure registry "
        "(`gaussmix.figures.FIGURES`; `gaussmix figure --help` lists the options of each). "
        "`gaussmix figure NAME --out DIR` writes `DIR/NAME.png`, the table `DIR/NAME.csv` "
        "and `DIR/NAME.json` (the caption: what lines, dots and error bars are). Each entry "
        "says which figure of the paper it reproduces, what the image draws, what the "
        "`--fast` preset changes against the paper's settings (the default), and, where "
        "the result differs from the paper's, how and on what evidence; and whether it "
        "draws a mixture of yours (`--mixture FILE`) or only the paper's, and why.",
        "",
    ]
    if atlas is None:
        lines += [
            '!!! note "No images in this build"',
            "",
            "    This site was built without an atlas directory, so the figures are listed "
            "without their images. To add them, make the atlas and build again:",
            "",
            "    ```bash",
            "    gaussmix figure all --fast --out atlas",
            f"    {ATLAS_ENV}=atlas mkdocs build",
            "    ```",
            "",
        ]
    else:
        mode = "the `--fast` presets" if atlas.fast else "the full settings"
        total = sum(e.seconds for e in atlas.figures.values() if e.seconds is not None)
        lines += [
            f"The images were made with {mode} by `gaussmix figure all"
            f"{' --fast' if atlas.fast else ''} --out DIR`, in {format_seconds(total)} "
            "altogether; the runtime of each figure is given below it (on the machine that "
            "built this site).",
            "",
        ]
    lines += ["| figure | paper | what it shows |", "|---|---|---|"]
    for r in rows:
        paper, what = markdown_text(r["paper"]), markdown_text(r["description"])
        lines.append(f"| [`{r['name']}`](#{r['name']}) | {paper} | {what} |")
    lines.append("")
    for r in rows:
        name = r["name"]
        paper = markdown_text(r["paper"])
        lines += [f"## {name}: {paper} {{ #{name} }}", "", markdown_text(r["description"]), ""]
        entry = None if atlas is None else atlas.figures.get(name)
        if entry is not None and entry.png is not None:
            lines += [f"![{name}: {paper}]({GALLERY_DIR}/{name}.png)", ""]
        lines += _preset_lines(r, entry, atlas)
        if r["differs"]:
            lines += [
                '!!! warning "Differs from the paper"',
                "",
                f"    {markdown_text(r['differs'])}",
                "",
            ]
        lines += [
            f"**Caption.** {markdown_text(r['caption'])}",
            "",
            *_mixture_lines(r),
            "```bash",
            r["command"],
            "```",
            "",
        ]
        if atlas is not None:
            lines.append(_atlas_line(entry, atlas.fast))
            lines.append("")
    return "\n".join(lines)


def _mixture_lines(r: dict[str, str]) -> list[str]:
    """Whether the figure draws a user's mixture (``atlas()``'s ``mixture``: ``'any'`` or
    why not); nothing for rows without the column."""
    why = r.get("mixture")
    if not why:
        return []
    if why == "any":
        return [
            f"**Any mixture.** `gaussmix figure {r['name']} --mixture FILE --out DIR` draws "
            "it on a mixture of yours (a file of `Mixture.save`; `mixture=` in Python).",
            "",
        ]
    return [f"**The paper's mixtures only:** {markdown_text(why)}.", ""]


def _preset_lines(r: dict[str, str], entry: AtlasEntry | None, atlas: Atlas | None) -> list[str]:
    """What the image shows (its ``drawn`` values) and what ``--fast`` changes."""
    from gaussmix.figures.registry import drawn_summary

    fast = f"`--fast` changes: {markdown_text(r['fast'])}."
    if entry is None or entry.png is None or atlas is None:
        return [f"**Paper's settings** by default; {fast}", ""]
    preset = "the `--fast` preset" if atlas.fast else "the paper's settings"
    drawn = f": {markdown_text(drawn_summary(entry.drawn))}" if entry.drawn else ""
    return [f"**Shown here** ({preset}){drawn}. {fast}", ""]


def _atlas_line(entry: AtlasEntry | None, fast: bool) -> str:
    if entry is None:
        return "*Not in this build's atlas.*"
    parts = []
    if entry.seconds is not None:
        parts.append(f"made in {format_seconds(entry.seconds)}{' with --fast' if fast else ''}")
    if entry.status and entry.status != "ok":
        parts.append(f"status: {entry.status}")
    if entry.error:
        parts.append(f"error: {markdown_text(entry.error)}")
    if entry.not_converged:
        parts.append(f"{entry.not_converged} point(s) of its table did not converge")
    if entry.png is None:
        parts.append("no image")
    if entry.csv is not None:
        parts.append(f"[table (CSV)]({GALLERY_DIR}/{entry.name}.csv)")
    return "*" + "; ".join(parts) + ".*" if parts else ""


def atlas_assets(atlas: Atlas, names: list[str]) -> dict[str, Path]:
    """Site path -> source file of every image and table of ``atlas`` for ``names``."""
    out: dict[str, Path] = {}
    for name in names:
        entry = atlas.figures.get(name)
        if entry is None:
            continue
        if entry.png is not None:
            out[f"{GALLERY_DIR}/{name}.png"] = entry.png
        if entry.csv is not None:
            out[f"{GALLERY_DIR}/{name}.csv"] = entry.csv
    return out


# ---------------------------------------------------------------- the package's namespace
_EXPORTS_MARKER = "<!-- gaussmix: exports -->"


def exports_markdown() -> str:
    """A table of the names of ``gaussmix.__all__``, each linked to its API entry (under
    the name of the module that defines it, where the reference documents it)."""
    import importlib

    import gaussmix

    rows = ["| name | defined in |", "|---|---|"]
    for name in gaussmix.__all__:
        module = gaussmix._EXPORTS.get(name)  # the package's lazy-import table
        if module is None:
            continue
        home = _defining_module(getattr(importlib.import_module(module), name), module)
        rows.append(f"| [`gm.{name}`][{home}.{name}] | `{home}` |")
    return "\n".join(rows)


def _defining_module(obj: Any, module: str) -> str:
    """The module that defines ``obj`` (a function or class; a constant: ``module``, the
    package's lazy-import table names the module that assigns it)."""
    import inspect

    return obj.__module__ if inspect.isfunction(obj) or inspect.isclass(obj) else module


# ---------------------------------------------------------------- MkDocs events


def on_files(files: Any, config: Any) -> Any:
    """Add the generated gallery page (and the atlas files) to the site's files."""
    from mkdocs.exceptions import PluginError
    from mkdocs.structure.files import File

    rows = figure_rows()
    atlas_dir = os.environ.get(ATLAS_ENV)
    try:
        atlas = read_atlas(atlas_dir) if atlas_dir else None
    except DocsError as exc:
        raise PluginError(str(exc)) from None
    files.append(File.generated(config, GALLERY_PAGE, content=gallery_markdown(rows, atlas)))
    if atlas is not None:
        for uri, src in atlas_assets(atlas, [r["name"] for r in rows]).items():
            files.append(File.generated(config, uri, abs_src_path=str(src)))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Expand the exports marker of a page."""
    if _EXPORTS_MARKER in markdown:
        markdown = markdown.replace(_EXPORTS_MARKER, exports_markdown())
    return markdown
