"""The house rules of docs/ARCHITECTURE.md, read off the parse trees of ``src/neve``.

- A module imports only from its own room or from rooms below it in :data:`LAYERS`
  (imports under ``if TYPE_CHECKING:`` count: a type is a dependency too).
- No import cycle between modules.
- No module imports another module's private (``_name``) name.
- An import inside a function carries a comment (on its line or the line above) that
  says why it is not at the top: code that runs on Spark executors, an optional or
  heavy dependency only some calls need.

The checker runs on any package tree, so the tests below also show it failing on small
synthetic trees with one deliberate violation each.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"

#: neve's rooms, bottom to top, one per layer (docs/ARCHITECTURE.md says what each holds);
#: "" is the package itself (neve/__init__.py, the public API).
LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors",),
    ("io",),
    ("spec",),
    ("expressions",),
    ("planning",),
    ("actions",),
    ("engine",),
    ("arrow",),
    ("table",),
    ("catalog",),
    ("spark",),
    ("server",),
    ("tpch",),
    ("demo",),
    ("cli",),
    ("",),
)


@dataclass(frozen=True)
class ImportSite:
    module: str  # the importing module, dotted
    target: str  # the imported module, dotted
    names: tuple[str, ...]
    line: int
    in_function: bool
    commented: bool


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules(root: Path, package: str) -> dict[str, Path]:
    return {module_name(root, p): p for p in sorted((root / package).rglob("*.py"))}


def _top_level_ids(tree: ast.Module) -> set[int]:
    """Statements that run at import time: the module body, and the bodies of its
    top-level ``if`` (``TYPE_CHECKING``) and ``try`` blocks."""
    ids: set[int] = set()
    for node in tree.body:
        ids.add(id(node))
        blocks: list[list[ast.stmt]] = []
        if isinstance(node, ast.If):
            blocks += [node.body, node.orelse]
        if isinstance(node, ast.Try):
            blocks += [node.body, node.orelse, node.finalbody]
            blocks += [h.body for h in node.handlers]
        for block in blocks:
            ids.update(id(s) for s in block)
    return ids


def import_sites(root: Path, package: str) -> Iterator[ImportSite]:
    modules = _modules(root, package)
    for mod, path in modules.items():
        text = path.read_text()
        lines = text.splitlines()
        tree = ast.parse(text)
        top = _top_level_ids(tree)
        is_pkg = path.name == "__init__.py"
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found = [(a.name, ()) for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = mod.split(".") if is_pkg else mod.split(".")[:-1]
                    base = base[: len(base) - (node.level - 1)]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                names = tuple(a.name for a in node.names)
                # ``from pkg import submodule`` depends on the submodule itself
                subs = [n for n in names if f"{target}.{n}" in modules]
                found = [(f"{target}.{n}", ()) for n in subs]
                rest = tuple(n for n in names if n not in subs)
                if rest or not subs:
                    found.append((target, rest))
            else:
                continue
            here = lines[node.lineno - 1]
            above = lines[node.lineno - 2].strip() if node.lineno > 1 else ""
            commented = "#" in here or above.startswith("#")
            for target, names in found:
                yield ImportSite(mod, target, names, node.lineno, id(node) not in top, commented)


def room_of(module: str, package: str) -> str:
    rest = module[len(package) :].lstrip(".")
    return rest.split(".")[0]


def layer_of(room: str, layers: Sequence[Sequence[str]]) -> int:
    for i, rooms in enumerate(layers):
        if room in rooms:
            return i
    raise AssertionError(f"room {room!r} is in no layer: add it to LAYERS and ARCHITECTURE.md")


def problems(root: Path, package: str, layers: Sequence[Sequence[str]]) -> list[str]:
    """Every broken house rule in the package under ``root``, as readable lines."""
    out: list[str] = []
    graph: dict[str, set[str]] = {}
    modules = set(_modules(root, package))
    for site in import_sites(root, package):
        where = f"{site.module}:{site.line}"
        internal = site.target == package or site.target.startswith(package + ".")
        if site.in_function and not site.commented:
            out.append(f"{where}: import of {site.target} inside a function without a comment why")
        if not internal:
            continue
        if site.target in modules:
            graph.setdefault(site.module, set()).add(site.target)
        src, dst = room_of(site.module, package), room_of(site.target, package)
        if src != dst and layer_of(dst, layers) >= layer_of(src, layers):
            out.append(
                f"{where}: {site.module} ({src or package}) imports {site.target} "
                f"({dst or package}), which is not below it"
            )
        private = [n for n in site.names if n.startswith("_") and not n.startswith("__")]
        if private and site.target != site.module:
            out.append(f"{where}: imports private {', '.join(private)} of {site.target}")
    out += [f"import cycle among {', '.join(c)}" for c in _cycles(graph)]
    return out


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The modules of each import cycle: strongly connected components of more than
    one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


# -- neve itself -----------------------------------------------------------------------


def test_neve_keeps_its_house_rules() -> None:
    found = problems(SRC, "neve", LAYERS)
    assert found == [], "\n".join(found)


def test_every_room_is_in_a_layer() -> None:
    rooms = {room_of(m, "neve") for m in _modules(SRC, "neve")}
    for room in rooms:
        layer_of(room, LAYERS)


# -- the checker, on synthetic trees -----------------------------------------------------

SYNTHETIC_LAYERS = (("low",), ("mid",), ("top",))


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in {"pkg/__init__.py": "", **files}.items():
        p = tmp_path / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return tmp_path


CLEAN = {
    "pkg/low/__init__.py": "",
    "pkg/low/a.py": "X = 1\n",
    "pkg/mid/__init__.py": "",
    "pkg/mid/b.py": "from pkg.low.a import X\n\ndef f():\n    # heavy: only some calls\n    import json\n",
    "pkg/top.py": "from pkg.mid import b\nfrom pkg.low import a\n",
}


def test_a_clean_tree_passes(tmp_path: Path) -> None:
    assert problems(_tree(tmp_path, CLEAN), "pkg", SYNTHETIC_LAYERS) == []


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"pkg/low/a.py": "from pkg.mid.b import f\nX = 1\n"}, "which is not below it"),
        (
            {
                "pkg/low/a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                "    from pkg.top import b\nX = 1\n"
            },
            "which is not below it",
        ),
        ({"pkg/low/a.py": "def g():\n    from pkg.mid import b\nX = 1\n"}, "not below it"),
        (
            {
                "pkg/mid/c.py": "from pkg.mid.b import f\n",
                "pkg/mid/b.py": "from pkg.mid.c import *\n",
            },
            "import cycle among pkg.mid.b, pkg.mid.c",
        ),
        ({"pkg/top.py": "from pkg.low.a import _hidden\n"}, "imports private _hidden of pkg.low.a"),
        ({"pkg/mid/b.py": "def f():\n    import json\n"}, "inside a function without a comment"),
        (
            {"pkg/mid/b.py": "from . import c\n", "pkg/mid/c.py": "from .b import *\n"},
            "import cycle",
        ),
    ],
    ids=[
        "upward",
        "upward-type-only",
        "upward-in-function",
        "cycle",
        "private",
        "uncommented",
        "relative-cycle",
    ],
)
def test_the_checker_finds_a_deliberate_violation(
    tmp_path: Path, change: dict[str, str], expected: str
) -> None:
    found = problems(_tree(tmp_path, {**CLEAN, **change}), "pkg", SYNTHETIC_LAYERS)
    assert any(expected in line for line in found), found
