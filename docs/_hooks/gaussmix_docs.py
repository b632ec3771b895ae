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
  The paper's settings take too long to remake at every build: their images are made once
  (``gaussmix figure all --out DIR``, then ``python docs/_hooks/gaussmix_docs.py
  full-gallery DIR``, which copies each ``NAME.png`` and ``NAME.csv`` into ``docs/gallery``
  with ``docs/gallery/manifest.json``: the command, the library's version and commit, the
  date, and each figure's parameters, what it draws and its runtime) and committed; each
  entry shows that image first and the ``--fast`` image of the atlas directory, which CI
  remakes at every run, beside it as what CI checks.
* ``<!-- gaussmix: exports -->``: the table of the names the package exports.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

ATLAS_ENV = "GAUSSMIX_ATLAS_DIR"
#: where the gallery page lives and where the atlas files are copied, inside the site
GALLERY_PAGE = "gallery.md"
GALLERY_DIR = "atlas"
ROOT = Path(__file__).resolve().parents[2]
#: the images of the paper's settings, committed (inside the docs: the site serves them at
#: ``gallery/NAME.png``), and their manifest
FULL_DIR = ROOT / "docs" / "gallery"
FULL_URI = "gallery"
MANIFEST = "manifest.json"
#: the command that makes the atlas the committed gallery is copied from
FULL_COMMAND = "gaussmix figure all --out DIR"
#: an image of the paper's settings larger than this is stored with a palette of 256
#: colours (the size the repository keeps per image)
FULL_PNG_BYTES = 200_000


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


def _figures_json(path: Path) -> dict[str, Any]:
    """The JSON object of an atlas or a gallery manifest at ``path``, with its list
    ``figures`` (else a :class:`DocsError` naming the file)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DocsError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("figures"), list):
        raise DocsError(f"{path}: expected an object with a list 'figures'")
    return data


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
    data = _figures_json(path)
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


# ---------------------------------------------------------------- the paper's settings
@dataclass(frozen=True)
class FullEntry:
    """One figure of the committed gallery of the paper's settings (a row of its manifest)."""

    name: str
    png: Path
    csv: Path | None
    seconds: float | None
    drawn: dict[str, Any] | None
    parameters: dict[str, Any]


@dataclass(frozen=True)
class FullGallery:
    """The committed gallery of the paper's settings, read from its manifest."""

    directory: Path
    command: str
    gaussmix_version: str
    commit: str
    date: str
    figures: dict[str, FullEntry]
    pending: dict[str, str]


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _git_commit() -> str:
    """The repository's ``HEAD`` (``'unknown'`` outside a git checkout)."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
        )
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return out.stdout.strip()


def _copy_png(src: Path, dst: Path) -> bool:
    """Copy the image ``src`` to ``dst``; one larger than :data:`FULL_PNG_BYTES` is stored
    with a palette of 256 colours instead (Pillow, matplotlib's own dependency).  Returns
    whether it was."""
    if src.stat().st_size <= FULL_PNG_BYTES:
        shutil.copyfile(src, dst)
        return False
    from PIL import Image

    with Image.open(src) as img:
        img.quantize(colors=256, method=Image.Quantize.FASTOCTREE).save(dst, optimize=True)
    return True


def write_full_gallery(
    atlas_dirs: str | Path | list[str | Path],
    out_dir: str | Path = FULL_DIR,
    *,
    commit: str | None = None,
    note: str = "",
    pending: dict[str, str] | None = None,
) -> Path:
    """Copy atlases of the paper's settings (``gaussmix figure all --out DIR``, without
    ``--fast``; several directories may each hold some of the figures, the first that has
    a figure gives it) into ``out_dir``: ``NAME.png`` and ``NAME.csv`` of every figure made,
    and ``manifest.json`` recording the command, the library's version, ``commit`` (the
    code that made the atlases; default: the checkout's ``HEAD``), the date the last atlas
    was written and, per figure, its parameters
    (:func:`gaussmix.figures.registry.preset_arguments`, so run this with the checkout that
    made the atlases), what it draws (``drawn`` of its JSON companion), its title, its wall
    and CPU seconds, the SHA-256 of both files and whether the image was stored with a
    palette (``palette``: one larger than :data:`FULL_PNG_BYTES`).  ``note`` (e.g. the
    machine's load) is recorded as given; ``pending`` maps a figure not made to why (its
    measured time, its error), recorded as ``"pending"`` (the gallery then shows its
    ``--fast`` image, saying so).  An atlas of the ``--fast`` presets, a figure made with
    options of its own or one that failed (unless it is pending) is refused naming it.
    Returns the manifest's path.
    """
    from gaussmix.figures.paper_atlas import atlas_names
    from gaussmix.figures.registry import get_figure, preset_arguments

    dirs = [atlas_dirs] if isinstance(atlas_dirs, str | Path) else list(atlas_dirs)
    found: dict[str, tuple[Path, AtlasEntry, dict[str, Any]]] = {}
    versions, dates = set(), []
    for directory in map(Path, dirs):
        path = directory / "atlas.json"
        atlas = read_atlas(directory)
        data = json.loads(path.read_text(encoding="utf-8"))
        if atlas.fast:
            raise DocsError(f"{path}: made with --fast; the gallery shows the paper's settings")
        failed = sorted(
            n
            for n, e in atlas.figures.items()
            if e.status not in ("", "ok") and n not in (pending or {})
        )
        if failed:
            raise DocsError(f"{path}: figures that failed: {', '.join(failed)}")
        versions.add(str(data.get("gaussmix_version", "")))
        dates.append(datetime.fromtimestamp(path.stat().st_mtime, tz=timezone.utc))
        rows = {r["name"]: r for r in data["figures"]}
        for name, entry in atlas.figures.items():
            if entry.png is not None and name not in found:
                found[name] = (directory, entry, rows[name])
    if len(versions) > 1:
        raise DocsError(f"the atlases were made by different versions: {sorted(versions)}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    figures = []
    for name in atlas_names():
        if name not in found:
            continue
        directory, entry, row = found[name]
        meta_path = directory / f"{name}.json"
        meta = json.loads(meta_path.read_text(encoding="utf-8")) if meta_path.is_file() else {}
        if meta.get("fast") or meta.get("arguments"):
            raise DocsError(f"{meta_path}: not made with the paper's settings (--fast or options)")
        png, csv = out / f"{name}.png", out / f"{name}.csv"
        palette = _copy_png(entry.png, png)
        files = {"png": png.name}
        sha = {"png": _sha256(png)}
        if entry.csv is not None:
            shutil.copyfile(entry.csv, csv)
            files["csv"], sha["csv"] = csv.name, _sha256(csv)
        figures.append(
            {
                "name": name,
                # which figure of the paper it is: the registry's (as its parameters are)
                "paper": get_figure(name).paper,
                "title": meta.get("title", ""),
                "parameters": preset_arguments(name),
                "drawn": meta.get("drawn", {}),
                "seconds": entry.seconds,
                "cpu_seconds": row.get("cpu_seconds"),
                "not_converged": entry.not_converged,
                "warnings": len(row.get("warnings") or []),
                "files": files,
                "sha256": sha,
                "palette": palette,
            }
        )
    manifest = {
        "command": FULL_COMMAND,
        "gaussmix_version": versions.pop() if versions else "",
        "commit": commit or _git_commit(),
        "date": max(dates).strftime("%Y-%m-%dT%H:%M:%SZ") if dates else "",
        "n_jobs": 1,
        "seconds": round(sum(f["seconds"] or 0.0 for f in figures), 2),
        "note": note,
        "figures": figures,
        "pending": [
            {"name": n, "reason": r} for n, r in (pending or {}).items() if n not in found
        ],
    }
    target = out / MANIFEST
    target.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return target


def read_full_gallery(directory: str | Path = FULL_DIR) -> FullGallery | None:
    """The committed gallery of the paper's settings (:func:`write_full_gallery`), or None
    when ``directory`` has no manifest; a malformed manifest, or a file it names that is
    missing, raises :class:`DocsError` naming it."""
    directory = Path(directory)
    path = directory / MANIFEST
    if not path.is_file():
        return None
    data = _figures_json(path)
    figures: dict[str, FullEntry] = {}
    for row in data["figures"]:
        try:
            name, files = row["name"], row["files"]
            png = directory / files["png"]
            csv = directory / files["csv"] if "csv" in files else None
        except (KeyError, TypeError):
            raise DocsError(
                f"{path}: every figure needs a 'name' and 'files' with 'png'"
            ) from None
        for f in (png, csv):
            if f is not None and not f.is_file():
                raise DocsError(f"{path}: figure {name!r}: {f.name} is missing")
        figures[name] = FullEntry(
            name=name,
            png=png,
            csv=csv,
            seconds=row.get("seconds"),
            drawn=row.get("drawn"),
            parameters=row.get("parameters", {}),
        )
    return FullGallery(
        directory=directory,
        command=str(data.get("command", FULL_COMMAND)),
        gaussmix_version=str(data.get("gaussmix_version", "")),
        commit=str(data.get("commit", "")),
        date=str(data.get("date", "")),
        figures=figures,
        pending={str(r["name"]): str(r["reason"]) for r in data.get("pending", [])},
    )


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


def gallery_markdown(
    rows: list[dict[str, str]], atlas: Atlas | None, full: FullGallery | None = None
) -> str:
    """The gallery page: every figure of ``rows``, with its image of the paper's settings
    when ``full`` (the committed gallery, :func:`read_full_gallery`) has it, and its image of
    ``atlas`` (the ``--fast`` presets that CI remakes) beside it as what CI checks."""
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
    if full is not None:
        total = sum(e.seconds for e in full.figures.values() if e.seconds is not None)
        lines += [
            "**The paper's settings.** The large images are the figures at the paper's "
            f"settings, made once by `{full.command}` (gaussmix {full.gaussmix_version}, "
            f"commit `{full.commit[:12]}`, {full.date}; {format_seconds(total)} of wall "
            "time, at the load the manifest's `note` records) and kept in the repository "
            f"(`docs/{FULL_URI}/`, with `{MANIFEST}`: each figure's parameters, what it "
            "draws and its runtime); a test checks that each figure's recorded parameters "
            "are the registry's, so that a changed setting without new images fails.",
            "",
        ]
        if full.pending:
            lines += [
                "Not in it yet, so shown with their `--fast` image: "
                + "; ".join(
                    f"[`{n}`](#{n}) ({markdown_text(why)})" for n, why in full.pending.items()
                )
                + ".",
                "",
            ]
    if atlas is None:
        lines += [
            '!!! note "No --fast images in this build"',
            "",
            "    This site was built without an atlas directory, so the `--fast` images "
            "that CI checks are not shown. To add them, make the atlas and build again:",
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
        what = (
            "**What CI checks.** The small images were made with "
            if full is not None
            else "The images were made with "
        )
        lines += [
            f"{what}{mode} by `gaussmix figure all"
            f"{' --fast' if atlas.fast else ''} --out DIR`, in {format_seconds(total)} "
            "altogether, when this site was built (every CI run remakes them and tests "
            "them); the runtime of each figure is given below it.",
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
        big = None if full is None else full.figures.get(name)
        if big is not None:
            lines += [f"![{name}: {paper}, the paper's settings]({FULL_URI}/{name}.png)", ""]
            lines += _full_lines(r, big)
            if entry is not None and entry.png is not None:
                lines += [
                    f"![{name}: {paper}, the --fast preset]({GALLERY_DIR}/{name}.png)"
                    '{ width="360" }',
                    "",
                ]
        elif entry is not None and entry.png is not None:
            lines += [f"![{name}: {paper}]({GALLERY_DIR}/{name}.png)", ""]
        lines += _preset_lines(r, entry, atlas, full=big is not None)
        if full is not None and big is None:
            why = full.pending.get(name)
            lines += [
                "*The paper's settings of this figure are not in the committed gallery: the "
                "image is the `--fast` preset"
                + (f" ({markdown_text(why)})" if why else "")
                + ".*",
                "",
            ]
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


def _full_lines(r: dict[str, str], big: FullEntry) -> list[str]:
    """What the image of the paper's settings draws, its runtime and its table."""
    from gaussmix.figures.registry import drawn_summary

    drawn = f": {markdown_text(drawn_summary(big.drawn))}" if big.drawn else ""
    made = f" Made in {format_seconds(big.seconds)}." if big.seconds is not None else ""
    table = f" [Table (CSV)]({FULL_URI}/{big.csv.name})." if big.csv is not None else ""
    return [f"**Shown here** (the paper's settings){drawn}.{made}{table}", ""]


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


def _preset_lines(
    r: dict[str, str], entry: AtlasEntry | None, atlas: Atlas | None, *, full: bool = False
) -> list[str]:
    """What the atlas's image shows (its ``drawn`` values) and what ``--fast`` changes; with
    ``full`` (an image of the paper's settings shown above it), it is what CI checks."""
    from gaussmix.figures.registry import drawn_summary

    fast = f"`--fast` changes: {markdown_text(r['fast'])}."
    if entry is None or entry.png is None or atlas is None:
        if full:
            return [f"**What CI checks**: the `--fast` preset, not in this build; {fast}", ""]
        return [f"**Paper's settings** by default; {fast}", ""]
    preset = "the `--fast` preset" if atlas.fast else "the paper's settings"
    drawn = f": {markdown_text(drawn_summary(entry.drawn))}" if entry.drawn else ""
    if full:
        return [f"**What CI checks** (small image: {preset}){drawn}. {fast}", ""]
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
    """Add the generated gallery page (and the atlas files) to the site's files; the
    committed images of the paper's settings (``docs/gallery``) are files of the docs
    already."""
    from mkdocs.exceptions import PluginError
    from mkdocs.structure.files import File

    rows = figure_rows()
    atlas_dir = os.environ.get(ATLAS_ENV)
    try:
        atlas = read_atlas(atlas_dir) if atlas_dir else None
    except DocsError as exc:
        raise PluginError(str(exc)) from None
    try:
        full = read_full_gallery(FULL_DIR)
    except DocsError as exc:
        raise PluginError(str(exc)) from None
    files.append(File.generated(config, GALLERY_PAGE, content=gallery_markdown(rows, atlas, full)))
    if atlas is not None:
        for uri, src in atlas_assets(atlas, [r["name"] for r in rows]).items():
            files.append(File.generated(config, uri, abs_src_path=str(src)))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Expand the exports marker of a page."""
    if _EXPORTS_MARKER in markdown:
        markdown = markdown.replace(_EXPORTS_MARKER, exports_markdown())
    return markdown


# ---------------------------------------------------------------- command line
def main(argv: list[str] | None = None) -> int:
    """``python docs/_hooks/gaussmix_docs.py full-gallery ATLAS_DIR [--commit C] [--note T]``:
    :func:`write_full_gallery` into ``docs/gallery``."""
    import argparse

    parser = argparse.ArgumentParser(prog="gaussmix_docs.py")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("full-gallery", help="copy an atlas of the paper's settings into docs")
    p.add_argument("atlas_dir", nargs="+", help=f"the directories of '{FULL_COMMAND}'")
    p.add_argument("--out", default=str(FULL_DIR), help="where (default: docs/gallery)")
    p.add_argument("--commit", default=None, help="the commit that made it (default: HEAD)")
    p.add_argument("--note", default="", help="recorded as given (e.g. the machine's load)")
    p.add_argument(
        "--pending", action="append", default=[], metavar="NAME=WHY", help="a figure not made"
    )
    args = parser.parse_args(argv)
    pending = dict(item.split("=", 1) for item in args.pending)
    try:
        path = write_full_gallery(
            args.atlas_dir, args.out, commit=args.commit, note=args.note, pending=pending
        )
    except DocsError as exc:
        parser.error(str(exc))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
