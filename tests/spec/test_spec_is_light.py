"""spec/ is the format as data and its codecs: no module of it imports polars or numpy
(planning's fast manifest reading and the vectorized metrics live above it, and
tests/test_layers.py keeps spec from importing those rooms). Checked on the parse
trees, because importing any neve module first runs the package's ``__init__``."""

from __future__ import annotations

import ast
from pathlib import Path

SPEC = Path(__file__).resolve().parents[2] / "src" / "neve" / "spec"
HEAVY = {"polars", "numpy"}


def _imported_packages(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module.split(".")[0])
    return found


def test_spec_imports_neither_polars_nor_numpy() -> None:
    files = sorted(SPEC.rglob("*.py"))
    assert len(files) > 10
    heavy = {p.name: _imported_packages(p) & HEAVY for p in files}
    assert {k: v for k, v in heavy.items() if v} == {}


def test_the_check_sees_a_heavy_import(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("def f():\n    import numpy.typing as npt\n    from polars import col\n")
    assert _imported_packages(module) & HEAVY == HEAVY
