"""The package's layout is its architecture (docs/design.md, "What does what"), checked, not
hoped for.

Layers, lowest first: ``core`` < ``theory`` | ``data`` < ``experiments`` | ``simulate`` <
``sweep`` | ``studies`` < ``figures`` < ``frontend`` < ``explore`` < ``cli``.  ``frontend``
holds what the two front ends share (the point options and their translation into library
objects, ranges of points) below both: the explorer builds its points with it, and the
command line, which starts the explorer, sits above them all.  ``data`` (real data sets,
feature maps) is a peer of ``theory``: neither imports the other, and the layers above may
use both.  ``studies`` (real data against theory) uses the theory, the experiments and the
simulations.  A module may import its own subpackage and any lower layer; never a higher
one, never a peer of its own rank, never the top-level ``gaussmix`` package (which
re-exports the public API and so sits above everything but the CLI).  The command-line
framework (typer, click) is imported only by ``gaussmix.cli``.

No import cycle at all: the graph has an edge for every ``import`` anywhere in a module, at
module level or inside a function (a deferred import still ties the two modules together),
and for every module named by a string literal to ``importlib.import_module`` or
``__import__`` (an import by name is an import all the same).
No module imports a private name (``_x``, not a dunder) of another module; a private
*module* (``_kernels``) may be imported only from inside the package that holds it.

A subpackage may be divided into ranked rooms of its own (:data:`SUBLAYERS`): inside it the
same rules hold one level down (a room imports its own modules and lower rooms, never a
higher room or a peer of its rank), every module of it sits in a ranked room, and no room
imports the subpackage's own ``__init__`` (which re-exports its rooms and so sits above
them).

No source file is longer than :data:`MAX_LINES` lines: a longer one is split by job.

The checker reads the source with :mod:`ast` and is itself tested on a small package with
each kind of violation.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"

#: rank of each subpackage; equal ranks are independent peers
LAYERS = {
    "core": 0,
    "theory": 1,
    "data": 1,
    "experiments": 2,
    "simulate": 2,
    "sweep": 3,
    "studies": 3,
    "figures": 4,
    # the point options and ranges of points that the explorer and the command line share
    "frontend": 5,
    # the interactive explorer: builds its points with gaussmix.frontend
    "explore": 6,
    # the command line: ``gaussmix explore`` starts the explorer (importlib, by name)
    "cli": 7,
    "__main__": 8,  # ``python -m gaussmix``: the entry point, above the CLI it runs
}
#: rank of each room (sub-subpackage) of a subpackage divided into rooms; equal ranks are
#: independent peers
SUBLAYERS: dict[str, dict[str, int]] = {
    "theory": {
        "numerics": 0,
        "model": 1,
        "channel": 2,
        "prior": 2,
        "problem": 3,
        "solve": 4,
        "limits": 5,
        "api": 6,
    },
}
CLI_ONLY = ("typer", "click")
#: the longest a source file may be
MAX_LINES = 1000
#: files allowed over :data:`MAX_LINES` for now, with the reason; an entry whose file is gone
#: or back under the limit fails the test, so the list only shrinks
OVER_THE_LIMIT: dict[str, str] = {}


def _module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(root: Path, path: Path) -> list[tuple[str, tuple[str, ...], int]]:
    """``(module, names, line)`` for every import in ``path``, wherever it is (at module
    level, in a function, under ``if TYPE_CHECKING``)."""
    name = _module_name(root, path)
    is_pkg = path.name == "__init__.py"
    package = name if is_pkg else name.rpartition(".")[0]
    tree = ast.parse(path.read_text(), str(path))
    out = []
    for node in ast.walk(tree):
        by_name = _imported_by_name(node)
        if by_name is not None:
            out.append((by_name, (), node.lineno))
        elif isinstance(node, ast.Import):
            for a in node.names:
                out.append((a.name, (), node.lineno))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                if node.level > 1:
                    base = base[: len(base) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            out.append((mod, tuple(a.name for a in node.names), node.lineno))
    return out


def _imported_by_name(node: ast.AST) -> str | None:
    """The module a call ``importlib.import_module("m")``, ``import_module("m")`` or
    ``__import__("m")`` imports, when its first argument is a string literal (absolute)."""
    if not isinstance(node, ast.Call) or not node.args:
        return None
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    if name not in ("import_module", "__import__"):
        return None
    first = node.args[0]
    if isinstance(first, ast.Constant) and isinstance(first.value, str):
        if not first.value.startswith("."):
            return first.value
    return None


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def check_layers(
    root: Path,
    package: str = "gaussmix",
    layers: dict[str, int] | None = None,
    sublayers: dict[str, dict[str, int]] | None = None,
) -> list[str]:
    """Every violation of the layering rules in ``root/package``, one line each
    (``layers``, ``sublayers``: :data:`LAYERS`, :data:`SUBLAYERS` by default)."""
    LAYERS = globals()["LAYERS"] if layers is None else layers
    rooms = SUBLAYERS if sublayers is None else sublayers
    problems: list[str] = []
    files = sorted((root / package).rglob("*.py"))
    modules = {_module_name(root, f) for f in files}
    graph: dict[str, set[str]] = {}
    for f in files:
        me = _module_name(root, f)
        parts = me.split(".")
        sub = parts[1] if len(parts) > 1 else None  # None: the top-level __init__
        my_package = me if f.name == "__init__.py" else me.rpartition(".")[0]
        where = f"{f.relative_to(root)}"
        graph[me] = set()
        my_room = _room(parts, f.name == "__init__.py", rooms)
        if my_room == "":
            problems.append(f"{where}: {me} is in no ranked room of {package}.{sub}")
        for mod, names, line in _imports(root, f):
            head = mod.split(".")[0]
            if head in CLI_ONLY and sub != "cli":
                problems.append(f"{where}:{line}: imports {mod} (only {package}.cli may)")
            if head != package:
                continue
            # ``from P import m`` with m a submodule depends on m (P, its parent, is imported
            # first anyway); any other name makes it depend on P itself
            submodules = [f"{mod}.{n}" for n in names if f"{mod}.{n}" in modules]
            targets = submodules + ([mod] if len(submodules) < len(names) or not names else [])
            graph[me].update(t for t in targets if t in modules and t != me)
            for t in targets:
                tp = t.split(".")
                for i in range(1, len(tp)):
                    owner = ".".join(tp[:i])
                    inside = my_package == owner or my_package.startswith(owner + ".")
                    if _is_private(tp[i]) and not inside:
                        problems.append(
                            f"{where}:{line}: imports the private module {t} from outside {owner}"
                        )
            private = [n for n in names if _is_private(n) and f"{mod}.{n}" not in modules]
            if private and mod != me:
                problems.append(f"{where}:{line}: imports private {private} of {mod}")
            if my_room:
                problems += _room_problems(where, line, sub, my_room, targets, rooms[sub])
            tparts = mod.split(".")
            if sub is None:
                continue  # the top-level package re-exports the layers below it
            if len(tparts) == 1:
                problems.append(f"{where}:{line}: imports the top-level package {package}")
                continue
            tsub = tparts[1]
            if tsub not in LAYERS:
                problems.append(f"{where}:{line}: imports {mod}, outside every layer")
                continue
            if sub not in LAYERS:
                problems.append(f"{where}: subpackage {sub!r} has no layer")
                continue
            if tsub != sub:
                if LAYERS[tsub] > LAYERS[sub]:
                    problems.append(f"{where}:{line}: upward import of {mod} ({sub} -> {tsub})")
                elif LAYERS[tsub] == LAYERS[sub]:
                    problems.append(f"{where}:{line}: peer import of {mod} ({sub} -> {tsub})")
    problems += [f"import cycle: {' -> '.join(c)}" for c in _cycles(graph)]
    return problems


def _room(parts: list[str], is_init: bool, rooms: dict[str, dict[str, int]]) -> str | None:
    """The room of the module ``parts`` (``['pkg', 'theory', 'solve', 'solver']`` ->
    ``'solve'``): None outside a divided subpackage and for its own ``__init__``; ``''``
    for a module of a divided subpackage that is in no room."""
    if len(parts) < 3 or parts[1] not in rooms:
        return None
    room = parts[2]
    if len(parts) == 3 and not is_init:  # a plain module beside the rooms
        return ""
    return room if room in rooms[parts[1]] else ""


def _room_problems(
    where: str, line: int, sub: str, my_room: str, targets: list[str], ranks: dict[str, int]
) -> list[str]:
    """The violations of the ranks inside the divided subpackage ``sub`` by a module of its
    room ``my_room`` that imports ``targets``."""
    out = []
    for t in targets:
        tp = t.split(".")
        if len(tp) < 2 or tp[1] != sub:
            continue  # another subpackage: the layers between subpackages judge it
        if len(tp) == 2:
            out.append(f"{where}:{line}: imports {t}, the top of its own subpackage")
            continue
        room = tp[2]
        if room == my_room or room not in ranks:
            continue  # its own room; a module in no room is reported where it lives
        if ranks[room] > ranks[my_room]:
            out.append(f"{where}:{line}: upward import of {t} ({sub}: {my_room} -> {room})")
        elif ranks[room] == ranks[my_room]:
            out.append(f"{where}:{line}: peer import of {t} ({sub}: {my_room} -> {room})")
    return out


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One representative cycle per strongly connected component with a cycle (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or v in graph.get(v, ()):
                found.append(sorted(comp) + [sorted(comp)[0]])

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_package_respects_its_layers():
    problems = check_layers(SRC)
    assert not problems, "\n".join(problems)


def _n_lines(path: Path) -> int:
    return len(path.read_text().splitlines())


def long_files(root: Path, limit: int = MAX_LINES) -> list[str]:
    """``path: N lines`` for every ``.py`` file under ``root`` longer than ``limit`` lines."""
    out = []
    for f in sorted(root.rglob("*.py")):
        n = _n_lines(f)
        if n > limit:
            out.append(f"{f.relative_to(root)}: {n} lines (at most {limit}; split it by job)")
    return out


def test_no_source_file_is_over_the_limit():
    problems = [p for p in long_files(SRC) if p.partition(":")[0] not in OVER_THE_LIMIT]
    assert not problems, "\n".join(problems)
    stale = [f for f in OVER_THE_LIMIT if not (SRC / f).exists() or _n_lines(SRC / f) <= MAX_LINES]
    assert not stale, f"no longer over {MAX_LINES} lines (drop from OVER_THE_LIMIT): {stale}"


def test_the_length_check_finds_a_long_file(tmp_path):
    _write(tmp_path, {"pkgx/short.py": "x = 1\n" * MAX_LINES, "pkgx/long.py": "x = 1\n" * 1001})
    assert long_files(tmp_path) == [
        f"pkgx/long.py: 1001 lines (at most {MAX_LINES}; split it by job)"
    ]


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


CLEAN = {
    "pkgx/__init__.py": "from .theory.solver import solve\n",
    "pkgx/core/__init__.py": "",
    "pkgx/core/validation.py": "import numpy\n",
    "pkgx/core/version.py": "__version__ = '1'\n",
    "pkgx/theory/__init__.py": "",
    "pkgx/theory/_kernels.py": "",
    "pkgx/theory/solver.py": (
        "from pkgx.core.validation import numpy\n"
        "from pkgx.core.version import __version__\n"
        "from . import _kernels, prior\n"
    ),
    "pkgx/theory/prior.py": "def f():\n    import numpy\n",
    "pkgx/theory/sub/__init__.py": "",
    "pkgx/theory/sub/inner.py": "from pkgx.theory._kernels import f\n",
    "pkgx/cli/__init__.py": "import typer\nfrom pkgx.theory.solver import solve\n",
}


@pytest.mark.parametrize(
    "extra,expected",
    [
        ({}, None),
        ({"pkgx/theory/up.py": "from pkgx.cli import main\n"}, "upward import of pkgx.cli"),
        ({"pkgx/theory/top.py": "import pkgx\n"}, "imports the top-level package"),
        (
            {
                "pkgx/simulate/__init__.py": "",
                "pkgx/experiments/__init__.py": "from pkgx.simulate import x\n",
            },
            "peer import",
        ),
        ({"pkgx/cli/x.py": "from pkgx.theory.solver import _unpack\n"}, "private ['_unpack']"),
        ({"pkgx/theory/y.py": "from .solver import _unpack\n"}, "private ['_unpack']"),
        (
            {"pkgx/theory/z.py": "def f():\n    from pkgx.theory.prior import _g\n"},
            "private ['_g'] of pkgx.theory.prior",
        ),
        ({"pkgx/cli/y.py": "from pkgx.theory._kernels import f\n"}, "private module"),
        ({"pkgx/cli/w.py": "from pkgx.theory import _kernels\n"}, "private module"),
        ({"pkgx/theory/t.py": "import typer\n"}, "only pkgx.cli may"),
        (
            {"pkgx/theory/byname.py": "import importlib\nimportlib.import_module('pkgx.cli')\n"},
            "upward import of pkgx.cli",
        ),
        (
            {"pkgx/theory/dunder.py": "def f():\n    return __import__('pkgx.cli')\n"},
            "upward import of pkgx.cli",
        ),
        (
            {
                "pkgx/theory/a.py": "from . import b\n",
                "pkgx/theory/b.py": "import importlib\nimportlib.import_module('pkgx.theory.a')\n",
            },
            "import cycle: pkgx.theory.a -> pkgx.theory.b -> pkgx.theory.a",
        ),
        (
            {
                "pkgx/theory/a.py": "from . import b\n",
                "pkgx/theory/b.py": "from .a import x\n",
            },
            "import cycle: pkgx.theory.a -> pkgx.theory.b -> pkgx.theory.a",
        ),
        (
            {
                "pkgx/theory/a.py": "from . import b\n",
                "pkgx/theory/b.py": "def f():\n    from .a import x\n",
            },
            "import cycle: pkgx.theory.a -> pkgx.theory.b -> pkgx.theory.a",
        ),
        (
            {
                "pkgx/experiments/__init__.py": "from .curves import f\n",
                "pkgx/experiments/curves.py": "def g():\n    from pkgx.experiments import h\n",
            },
            "import cycle: pkgx.experiments -> pkgx.experiments.curves -> pkgx.experiments",
        ),
    ],
)
def test_the_checker_finds_each_kind_of_violation(tmp_path, extra, expected):
    _write(tmp_path, {**CLEAN, **extra})
    problems = check_layers(tmp_path, "pkgx", sublayers={})  # a flat theory
    if expected is None:
        assert problems == []
    else:
        assert any(expected in p for p in problems), problems


#: a toy package whose ``theory`` is divided into ranked rooms
ROOMS = {"theory": {"numerics": 0, "model": 1, "channel": 2, "prior": 2, "solve": 3}}
ROOMED = {
    "pkgx/__init__.py": "from .theory.solve.solver import solve\n",
    "pkgx/core/__init__.py": "",
    "pkgx/theory/__init__.py": "from .solve.solver import solve\n",
    "pkgx/theory/numerics/__init__.py": "",
    "pkgx/theory/numerics/linalg.py": "import numpy\nfrom pkgx.core import x\n",
    "pkgx/theory/numerics/_kernels.py": "",
    "pkgx/theory/model/__init__.py": "from .mixture import Mixture\n",
    "pkgx/theory/model/mixture.py": "from ..numerics import linalg\nfrom . import labels\n",
    "pkgx/theory/model/labels.py": "from pkgx.theory.numerics.linalg import f\n",
    "pkgx/theory/channel/__init__.py": "",
    "pkgx/theory/channel/channel.py": "from ..model.mixture import Mixture\n",
    "pkgx/theory/prior/__init__.py": "",
    "pkgx/theory/prior/prior.py": "from pkgx.theory.model import Mixture\n",
    "pkgx/theory/solve/__init__.py": "",
    "pkgx/theory/solve/solver.py": (
        "from ..channel import channel\nfrom ..prior.prior import g\n"
        "from ..numerics.linalg import f\n"
    ),
    "pkgx/cli/__init__.py": (
        "from pkgx.theory.solve.solver import solve\nfrom pkgx.theory import solve\n"
    ),
}


@pytest.mark.parametrize(
    "extra,expected",
    [
        ({}, None),
        (
            {"pkgx/theory/model/up.py": "from ..solve.solver import solve\n"},
            "upward import of pkgx.theory.solve.solver (theory: model -> solve)",
        ),
        (
            {
                "pkgx/theory/model/up2.py": (
                    "def f():\n    from pkgx.theory.channel import channel\n"
                )
            },
            "upward import of pkgx.theory.channel.channel (theory: model -> channel)",
        ),
        (
            {"pkgx/theory/channel/peer.py": "from ..prior import prior\n"},
            "peer import of pkgx.theory.prior.prior (theory: channel -> prior)",
        ),
        (
            {
                "pkgx/theory/prior/byname.py": (
                    "import importlib\nimportlib.import_module('pkgx.theory.channel.channel')\n"
                )
            },
            "peer import of pkgx.theory.channel.channel (theory: prior -> channel)",
        ),
        (
            {"pkgx/theory/model/top.py": "from pkgx.theory import Mixture\n"},
            "imports pkgx.theory, the top of its own subpackage",
        ),
        (
            {"pkgx/theory/model/top2.py": "from .. import x\n"},
            "imports pkgx.theory, the top of its own subpackage",
        ),
        ({"pkgx/theory/loose.py": ""}, "pkgx.theory.loose is in no ranked room of pkgx.theory"),
        (
            {"pkgx/theory/attic/__init__.py": "", "pkgx/theory/attic/old.py": ""},
            "pkgx.theory.attic.old is in no ranked room of pkgx.theory",
        ),
        (
            {
                "pkgx/theory/solve/_private.py": "",
                "pkgx/theory/model/p.py": "from ..solve import _private\n",
            },
            "private module pkgx.theory.solve._private",
        ),
        (
            {
                "pkgx/theory/numerics/a.py": "from . import b\n",
                "pkgx/theory/numerics/b.py": "def f():\n    from .a import x\n",
            },
            "import cycle: pkgx.theory.numerics.a -> pkgx.theory.numerics.b",
        ),
    ],
)
def test_the_checker_finds_each_kind_of_violation_inside_rooms(tmp_path, extra, expected):
    _write(tmp_path, {**ROOMED, **extra})
    problems = check_layers(tmp_path, "pkgx", sublayers=ROOMS)
    if expected is None:
        assert problems == []
    else:
        assert any(expected in p for p in problems), problems


def test_rooms_are_not_judged_without_their_ranks(tmp_path):
    """The same upward import inside ``theory`` is no violation when ``theory`` is not
    divided (the rule is the ranks', not a guess from the folders)."""
    _write(tmp_path, {**ROOMED, "pkgx/theory/model/up.py": "from ..solve.solver import solve\n"})
    assert check_layers(tmp_path, "pkgx", sublayers={}) == []
