"""The docs site covers the code: every registered figure is in the gallery, every command
in the CLI reference, every public subpackage in the API reference, every page in the nav;
the build hook's gallery works on a hand-made atlas directory; the pages, not the README,
hold the manual.  Cheap (no full ``mkdocs build``: CI runs that, about 30 s)."""

from __future__ import annotations

import importlib
import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest

import gaussmix
from gaussmix.cli import app
from gaussmix.figures import FIGURES

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
#: the subpackages whose API the site documents whole (issue 12); the names ``gaussmix``
#: exports are documented one by one on the pages of their concepts (issue 21)
API_MODULES = (
    "gaussmix",
    "gaussmix.simulate",
    "gaussmix.sweep",
    "gaussmix.data",
    "gaussmix.studies",
    "gaussmix.figures",
)
# a tiny valid PNG (1 x 1 pixel), for the hand-made atlas
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000001e221bc330000000049454e44ae426082"
)


def _hook():
    """The build hook (docs/_hooks/gaussmix_docs.py), imported from its file."""
    name = "gaussmix_docs_hook"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, DOCS / "_hooks" / "gaussmix_docs.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def _command_names() -> list[str]:
    """The names of the commands registered on the typer app."""
    return [c.name or c.callback.__name__.replace("_", "-") for c in app.registered_commands]


def _pages() -> dict[str, str]:
    return {
        p.relative_to(DOCS).as_posix(): p.read_text(encoding="utf-8")
        for p in DOCS.rglob("*.md")
        if "_hooks" not in p.parts
    }


def _nav_pages() -> list[str]:
    yaml = pytest.importorskip("yaml")
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))

    def walk(node):
        if isinstance(node, str):
            yield node
        elif isinstance(node, list):
            for item in node:
                yield from walk(item)
        elif isinstance(node, dict):
            for item in node.values():
                yield from walk(item)

    return list(walk(config["nav"]))


def _atlas(tmp_path: Path) -> Path:
    """A hand-made atlas: two figures with PNG and CSV, one that failed, one unknown."""
    names = list(FIGURES)[:3]
    for name in names[:2]:
        (tmp_path / f"{name}.png").write_bytes(PNG)
        (tmp_path / f"{name}.csv").write_text("alpha,test_error\n1.0,0.25\n")
    rows = [
        {"name": names[0], "paper": "p0", "seconds": 12.34, "status": "ok",
         "png": f"{names[0]}.png", "csv": f"{names[0]}.csv"},
        {"name": names[1], "paper": "p1", "seconds": 125.0, "status": "ok",
         "png": str(tmp_path / f"{names[1]}.png"), "csv": f"{names[1]}.csv"},
        {"name": names[2], "paper": "p2", "seconds": None, "status": "failed",
         "png": f"{names[2]}.png", "csv": None},
    ]  # fmt: skip
    (tmp_path / "atlas.json").write_text(json.dumps({"fast": True, "figures": rows}))
    return tmp_path


# ---------------------------------------------------------------- gallery
def test_gallery_lists_every_registered_figure_without_an_atlas() -> None:
    hook = _hook()
    md = hook.gallery_markdown(hook.figure_rows(), None)
    assert FIGURES
    for name, spec in FIGURES.items():
        assert f"## {name}: {hook.markdown_text(spec.paper)} {{ #{name} }}" in md
        assert f"gaussmix figure {name} --out DIR" in md
        assert hook.markdown_text(spec.caption) in md
        assert hook.markdown_text(spec.description) in md
        # whether it draws a mixture of yours, or why only the paper's
        if spec.takes_mixture:
            assert f"**Any mixture.** `gaussmix figure {name} --mixture FILE" in md
        else:
            assert f"**The paper's mixtures only:** {hook.markdown_text(spec.fixed_mixture)}" in md
    assert "![" not in md  # no images without an atlas ...
    assert "GAUSSMIX_ATLAS_DIR=atlas mkdocs build" in md  # ... but how to add them


def test_gallery_on_a_hand_made_atlas(tmp_path: Path) -> None:
    hook = _hook()
    atlas = hook.read_atlas(_atlas(tmp_path))
    names = list(FIGURES)[:3]
    assert atlas.fast
    assert atlas.figures[names[0]].png == tmp_path / f"{names[0]}.png"
    assert atlas.figures[names[1]].png == tmp_path / f"{names[1]}.png"  # absolute path
    assert atlas.figures[names[2]].png is None  # listed but missing
    md = hook.gallery_markdown(hook.figure_rows(), atlas)
    for name in names[:2]:
        assert f"](atlas/{name}.png)" in md
        assert f"[table (CSV)](atlas/{name}.csv)" in md
    assert f"](atlas/{names[2]}.png)" not in md
    assert "made in 12.3 s with --fast" in md and "made in 2 min 05 s with --fast" in md
    assert "status: failed; no image" in md
    assert md.count("*Not in this build's atlas.*") == len(FIGURES) - 3
    assert "in 2 min 17 s altogether" in md
    assets = hook.atlas_assets(atlas, list(FIGURES))
    assert assets == {
        f"atlas/{names[0]}.png": tmp_path / f"{names[0]}.png",
        f"atlas/{names[0]}.csv": tmp_path / f"{names[0]}.csv",
        f"atlas/{names[1]}.png": tmp_path / f"{names[1]}.png",
        f"atlas/{names[1]}.csv": tmp_path / f"{names[1]}.csv",
    }


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "no atlas.json there"),
        ("{not json", "not valid JSON"),
        ('{"figures": {}}', "a list 'figures'"),
        ('{"figures": [{"paper": "x"}]}', "string 'name'"),
        ('{"figures": [{"name": "x", "seconds": "fast"}]}', "seconds must be a number"),
    ],
)
def test_a_bad_atlas_is_refused_naming_the_file(
    tmp_path: Path, content: str | None, message: str
) -> None:
    hook = _hook()
    if content is not None:
        (tmp_path / "atlas.json").write_text(content)
    with pytest.raises(hook.DocsError, match=re.escape(message)):
        hook.read_atlas(tmp_path)


def test_atlas_paths_relative_to_the_directory_or_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hook = _hook()
    atlas_dir = tmp_path / "atlas"
    atlas_dir.mkdir()
    for name in ("a", "b", "c"):
        (atlas_dir / f"{name}.png").write_bytes(PNG)
        (atlas_dir / f"{name}.csv").write_text("x\n1\n")
    rows = [
        {"name": "a", "png": "atlas/a.png", "csv": "atlas/a.csv"},  # as written (cwd)
        {"name": "b"},  # no keys: NAME.png, NAME.csv in the directory
        {"name": "c", "png": "", "csv": "elsewhere/missing.csv"},  # not listed / missing
    ]
    (atlas_dir / "atlas.json").write_text(json.dumps({"figures": rows}))
    monkeypatch.chdir(tmp_path)
    atlas = hook.read_atlas("atlas")
    assert not atlas.fast
    assert atlas.figures["a"].png.resolve() == (atlas_dir / "a.png").resolve()
    assert atlas.figures["a"].csv.resolve() == (atlas_dir / "a.csv").resolve()
    assert atlas.figures["b"].png == Path("atlas") / "b.png"
    assert atlas.figures["c"].png is None and atlas.figures["c"].csv is None
    assert atlas.figures["b"].seconds is None and atlas.figures["b"].status == ""


def test_atlas_with_nested_files_errors_and_unconverged_points(tmp_path: Path) -> None:
    """The layout of gaussmix.figures.atlas: file names under "files", "error" and
    "not_converged" per figure."""
    hook = _hook()
    names = list(FIGURES)[:2]
    for name in names:  # the second one's files are left over from an earlier run
        (tmp_path / f"{name}.png").write_bytes(PNG)
        (tmp_path / f"{name}.csv").write_text("x\n1\n")
    rows = [
        {"name": names[0], "paper": "p", "status": "ok", "seconds": 3.0, "cpu_seconds": 2.9,
         "files": {"csv": f"{names[0]}.csv", "png": f"{names[0]}.png", "json": "x.json"},
         "error": None, "warnings": [], "not_converged": 2},
        {"name": names[1], "paper": "p", "status": "failed", "seconds": 0.5, "files": {},
         "error": "ValueError: alpha_star* must be > 0", "warnings": [], "not_converged": 0},
    ]  # fmt: skip
    (tmp_path / "atlas.json").write_text(json.dumps({"fast": True, "failed": [], "figures": rows}))
    atlas = hook.read_atlas(tmp_path)
    first, second = atlas.figures[names[0]], atlas.figures[names[1]]
    assert first.png == tmp_path / f"{names[0]}.png" and first.not_converged == 2
    assert second.png is None and second.csv is None and second.error.startswith("ValueError")
    md = hook.gallery_markdown(hook.figure_rows(), atlas)
    assert f"](atlas/{names[0]}.png)" in md
    assert "2 point(s) of its table did not converge" in md
    assert "status: failed; error: ValueError: alpha\\_star\\* must be \\> 0; no image" in md


def test_registry_text_is_escaped_for_markdown() -> None:
    """Captions say lambda* and alpha*_K: no emphasis may swallow the stars."""
    text = _hook().markdown_text
    assert text("lambda*(alpha) and alpha*_K [1] <b> `c` |") == (
        "lambda\\*(alpha) and alpha\\*\\_K \\[1\\] &lt;b\\> \\`c\\` \\|"
    )
    md = _hook().gallery_markdown(_hook().figure_rows(), None)
    assert "lambda\\*" in md


def test_format_seconds() -> None:
    f = _hook().format_seconds
    assert [f(0.04), f(59.94), f(60.0), f(3599.4), f(3600.0), f(7322.0)] == [
        "0.0 s",
        "59.9 s",
        "1 min 00 s",
        "59 min 59 s",
        "1 h 00 min",
        "2 h 02 min",
    ]


def test_the_hook_adds_the_gallery_and_the_atlas_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The MkDocs event on a real configuration (mkdocs.yml), with and without an atlas."""
    pytest.importorskip("mkdocs")
    from mkdocs.config import load_config
    from mkdocs.structure.files import get_files

    hook = _hook()
    config = load_config(str(ROOT / "mkdocs.yml"))
    assert "docs/_hooks/gaussmix_docs.py" in config.plugins  # hooks: in mkdocs.yml
    names = list(FIGURES)[:2]
    monkeypatch.delenv(hook.ATLAS_ENV, raising=False)
    files = config.plugins.on_files(get_files(config), config=config)  # runs the hook
    assert files.get_file_from_path("gallery.md") is not None
    assert files.get_file_from_path(f"atlas/{names[0]}.png") is None
    monkeypatch.setenv(hook.ATLAS_ENV, str(_atlas(tmp_path)))
    # the second pass is about the atlas: the examples hook, which the first pass ran (two
    # example scripts in subprocesses, half of this test's time), is left out of it
    examples = config.plugins["docs/_hooks/gaussmix_examples.py"].on_files
    events = config.plugins.events["files"]
    assert examples in events
    monkeypatch.setitem(config.plugins.events, "files", [e for e in events if e != examples])
    files = config.plugins.on_files(get_files(config), config=config)
    gallery = files.get_file_from_path("gallery.md")
    assert f"](atlas/{names[0]}.png)" in gallery.content_string
    for name in names:
        for ext in ("png", "csv"):
            f = files.get_file_from_path(f"atlas/{name}.{ext}")
            assert f is not None and Path(f.abs_src_path) == tmp_path / f"{name}.{ext}"


# ---------------------------------------------------------------- CLI reference
def test_cli_reference_is_generated_from_every_command() -> None:
    page = (DOCS / "cli.md").read_text(encoding="utf-8")
    assert "::: mkdocs-click" in page
    assert ":module: gaussmix.cli.reference" in page and ":command: command" in page
    from gaussmix.cli.reference import command

    names = _command_names()
    assert len(names) >= 11 and "realdata" in names and "figure" in names
    assert sorted(command.commands) == sorted(names)
    docs = pytest.importorskip("mkdocs_click._docs")
    style = re.search(r":style: (\w+)", page).group(1)
    depth = int(re.search(r":depth: (\d+)", page).group(1))
    md = "\n".join(
        docs.make_command_docs(
            prog_name="gaussmix", command=command, depth=depth, style=style, list_subcommands=True
        )
    )
    for name in names:
        assert re.search(rf"^### {re.escape(name)}$", md, flags=re.M), name
        assert f"gaussmix {name} [OPTIONS]" in md
    # options are rendered (typer's own click objects, read by the plain style)
    assert "--n-clusters" in md and "--out" in md


# ---------------------------------------------------------------- pages and nav
def test_every_page_is_in_the_nav_and_every_api_module_documented() -> None:
    nav = _nav_pages()
    pages = _pages()
    assert sorted(set(pages) | {"gallery.md"}) == sorted(nav)
    assert "gallery.md" not in pages  # generated by the hook
    directives = {
        m.group(1) for text in pages.values() for m in re.finditer(r"^::: ([\w.-]+)$", text, re.M)
    }
    assert set(API_MODULES) <= directives
    assert "mkdocs-click" in directives
    # every name gaussmix exports, under the module that defines it
    import inspect

    for name in gaussmix.__all__:
        module = gaussmix._EXPORTS.get(name)
        if module is None:
            continue
        obj = getattr(gaussmix, name)
        home = obj.__module__ if inspect.isfunction(obj) or inspect.isclass(obj) else module
        # or on the page of the subpackage that re-exports it (gaussmix.simulate.simulate)
        package = home.rpartition(".")[0]
        by_package = package in directives and name in importlib.import_module(package).__all__
        assert f"{home}.{name}" in directives or home in directives or by_package, name
    # and no internals of the solver
    assert not {d for d in directives if d.endswith(("AndersonState", "LogChart", "pack_state"))}


def test_the_pages_are_the_source_not_the_readme() -> None:
    """The README is the door, the pages the manual: no page includes README text any
    more, and the README is short and links into the site (relative links that work on
    GitHub, each to a page that exists)."""
    for page, text in _pages().items():
        assert "<!-- README:" not in text, page
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\((docs/[^)#\s]+\.md)(?:#[^)]*)?\)", readme)
    assert len(set(links)) >= 8
    for link in links:
        assert (ROOT / link).is_file(), link


def test_readme_and_benchmarks_stay_short() -> None:
    """Issue 34: the README at most 300 lines, BENCHMARKS.md (the current summary) at most
    400 and naming every script of ``benchmarks/``; the session-by-session history lives
    on its archive page, in the site's nav."""
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) <= 300
    summary = (ROOT / "BENCHMARKS.md").read_text(encoding="utf-8")
    assert len(summary.splitlines()) <= 400
    scripts = sorted(p.name for p in (ROOT / "benchmarks").glob("*.py") if p.name[0] != "_")
    assert len(scripts) >= 20
    assert [s for s in scripts if s not in summary] == []
    assert "benchmarks-history.md" in _nav_pages()


def test_the_atlas_page_lists_every_registered_figure() -> None:
    """The table of docs/atlas.md names every figure of the registry once, in the paper's
    order (``gm.figures.atlas()``), each with its command: it cannot drift as it did (14
    rows against 15 figures)."""
    from gaussmix.figures import atlas

    text = (DOCS / "atlas.md").read_text(encoding="utf-8")
    table = text[text.index("| figure | paper | what |") :].split("\n\n")[0]
    rows = re.findall(r"^\| `([\w-]+)` \|.*\| `(gaussmix figure [^`]*)` \|$", table, re.M)
    assert [name for name, _ in rows] == list(atlas()["name"])
    for name, command in rows:
        assert command.startswith(f"gaussmix figure {name} --out DIR"), command


def test_the_exports_table_lists_the_public_names() -> None:
    md = _hook().exports_markdown()
    for name in gaussmix.__all__:
        if name != "__version__":
            assert f"[`gm.{name}`]" in md, name


# ---------------------------------------------------------------- API reference docstrings
def _griffe_extension():
    name = "gaussmix_griffe_extension"
    if name not in sys.modules:
        pytest.importorskip("griffe")
        path = DOCS / "_hooks" / "griffe_gaussmix.py"
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def test_docstrings_rst_habits_become_markdown() -> None:
    ext = _griffe_extension()
    text = "\n".join(
        [
            "See :func:`~gaussmix.theory.solve.solver.solve` and :class:`Mixture`, ``a +",
            "b``::",
            "",
            "    x = 1  # code",
            "",
            "Adding a figure::",
            ">>> f(x)::",
        ]
    )
    assert ext.markdown_docstring(text).splitlines() == [
        "See `solve` and `Mixture`, `a +",
        "b`:",
        "",
        "    x = 1  # code",
        "",
        "Adding a figure:",
        ">>> f(x)::",
    ]
    assert ext.markdown_docstring(ext.markdown_docstring(text)) == ext.markdown_docstring(text)


def test_shared_docstring_blocks_are_completed_from_the_imported_object() -> None:
    """``solve``'s docstring holds a %(solver_options)s line that only the import fills."""
    griffe = pytest.importorskip("griffe")
    ext = _griffe_extension()
    module = griffe.load("gaussmix.theory.api.api", search_paths=[str(ROOT / "src")])
    func = module["solve"]
    assert ext._MARK.search(func.docstring.value)
    doc = ext.runtime_docstring(func)
    assert not ext._MARK.search(doc)
    assert "tol" in doc and "Parameters" in doc


def test_the_gallery_follows_the_papers_order() -> None:
    hook = _hook()
    papers = ["Appendix E (x)", "Fig. 3 (right)", "Fig. 1 (right)", "Fig. 3 (left)", "Fig. 2"]
    assert sorted(papers, key=hook.paper_order) == [
        "Fig. 1 (right)",
        "Fig. 2",
        "Fig. 3 (left)",
        "Fig. 3 (right)",
        "Appendix E (x)",
    ]
    rows = hook.figure_rows()
    assert sorted(r["name"] for r in rows) == sorted(FIGURES)
    keys = [hook.paper_order(r["paper"]) for r in rows]
    assert keys == sorted(keys)
