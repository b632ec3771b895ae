"""MkDocs hook of the gaussmix site: the examples' output and figures, made at build time.

A line ``<!-- gaussmix: run SCRIPT [ARGS...] -->`` in a page runs ``python examples/SCRIPT
ARGS`` (the script the page shows, through ``pymdownx.snippets``) in a fresh directory, as a
user would, and is replaced by what it printed and by the images (``*.png``) it wrote there.
So the output and the figure on a page are those of the code printed above them, made by
this build from the checked-out sources: they cannot drift from it.  A script that fails
fails the build, with the end of its standard error.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
#: where the images go, inside the site
SITE_DIR = "examples"
#: one run of a script at most this long (seconds)
TIMEOUT = 300

_MARKER = re.compile(r"^<!--\s*gaussmix:\s*run\s+(?P<cmd>.+?)\s*-->\s*$", re.MULTILINE)


class ExampleError(RuntimeError):
    """An example script that could not be run, or failed."""


@dataclass(frozen=True)
class ExampleRun:
    """What one run of an example printed and drew."""

    command: tuple[str, ...]
    stdout: str
    images: dict[str, Path]  # site path -> file


def _site_name(command: tuple[str, ...], image: str) -> str:
    stem = Path(command[0]).stem
    return f"{SITE_DIR}/{image}" if Path(image).stem == stem else f"{SITE_DIR}/{stem}-{image}"


def run_example(command: tuple[str, ...], workdir: Path) -> ExampleRun:
    """Run ``examples/command[0]`` with the arguments ``command[1:]`` in ``workdir``."""
    script = EXAMPLES / command[0]
    if not script.is_file() or script.parent != EXAMPLES:
        raise ExampleError(f"no example script {command[0]!r} in {EXAMPLES}")
    workdir.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, MPLBACKEND="Agg", OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(ROOT / "src"), env.get("PYTHONPATH", "")) if p
    )
    try:
        proc = subprocess.run(
            [sys.executable, str(script), *command[1:]],
            cwd=workdir,
            env=env,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )
    except subprocess.TimeoutExpired:
        raise ExampleError(f"{shlex.join(command)} took more than {TIMEOUT} s") from None
    if proc.returncode != 0:
        raise ExampleError(
            f"{shlex.join(command)} exited with {proc.returncode}: {proc.stderr[-2000:]}"
        )
    images = {_site_name(command, p.name): p for p in sorted(workdir.glob("*.png"))}
    return ExampleRun(command=command, stdout=proc.stdout.rstrip(), images=images)


def example_markdown(run: ExampleRun, page: str) -> str:
    """The output block and the images of ``run``, linked from docs page ``page``."""
    name = shlex.join(("python", f"examples/{run.command[0]}", *run.command[1:]))
    lines = [f"Output of `{name}`, run when this site was built:", ""]
    if run.stdout:
        lines += ["```text", run.stdout, "```", ""]
    base = os.path.dirname(page) or "."
    for uri in run.images:
        rel = os.path.relpath(uri, base).replace(os.sep, "/")
        lines += [f"![The figure that {run.command[0]} wrote]({rel})", ""]
    return "\n".join(lines)


def page_commands(markdown: str) -> list[tuple[str, ...]]:
    """The commands of the run markers of a page."""
    return [tuple(shlex.split(m.group("cmd"))) for m in _MARKER.finditer(markdown)]


# ---------------------------------------------------------------- MkDocs events
_state: dict[str, Any] = {"runs": {}}


def on_files(files: Any, config: Any) -> Any:
    """Run every example a page asks for, once, and add its images to the site."""
    from mkdocs.exceptions import PluginError
    from mkdocs.structure.files import File

    tmp = tempfile.TemporaryDirectory(prefix="gaussmix-examples-")
    old = _state.get("tmp")
    _state["tmp"], _state["runs"] = tmp, {}
    if old is not None:
        old.cleanup()
    for f in list(files):
        if not f.src_uri.endswith(".md") or not f.abs_src_path:
            continue
        text = Path(f.abs_src_path).read_text(encoding="utf-8")
        for command in page_commands(text):
            if command in _state["runs"]:
                continue
            workdir = Path(tmp.name) / str(len(_state["runs"]))
            try:
                run = run_example(command, workdir)
            except (ExampleError, ValueError) as exc:
                raise PluginError(f"{f.src_uri}: {exc}") from None
            _state["runs"][command] = run
            for uri, src in run.images.items():
                files.append(File.generated(config, uri, abs_src_path=str(src)))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Replace the run markers of a page by the output and images of their runs."""
    if "gaussmix: run" not in markdown:
        return markdown
    return _MARKER.sub(
        lambda m: example_markdown(
            _state["runs"][tuple(shlex.split(m.group("cmd")))], page.file.src_uri
        ),
        markdown,
    )


def on_post_build(config: Any) -> None:
    """Remove the examples' working directories."""
    tmp = _state.pop("tmp", None)
    if tmp is not None:
        tmp.cleanup()
