"""The size rules of docs/STYLE.md, read off the parse trees of ``src/neve``: no
function (or method, or nested function) over 100 lines, no module over 700 lines, and
the transaction (``neve/table/transaction.py``, one orchestration for every engine)
under 500.

A function's length runs from its ``def`` line to its last line, docstring and
comments included; a module's is its number of lines. A failure lists every offender
by path and name, so one run shows all that is left to split. The checker runs on any
tree, so the last tests show it finding offenders in small synthetic modules.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"

MAX_FUNCTION_LINES = 100
MAX_MODULE_LINES = 700
#: The transaction holds orchestration only; engine plumbing lives in the engines.
MAX_TRANSACTION_LINES = 499


@dataclass(frozen=True)
class Offender:
    path: str  # relative to the tree checked
    name: str  # dotted within the module (``Class.method``, ``outer.inner``); "" for a module
    lines: int

    def __str__(self) -> str:
        if not self.name:
            return f"{self.path}: module of {self.lines} lines (limit {MAX_MODULE_LINES})"
        return f"{self.path}: {self.name} has {self.lines} lines (limit {MAX_FUNCTION_LINES})"


def _functions(
    node: ast.AST, prefix: str
) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
            name = f"{prefix}{child.name}"
            yield name, child
            yield from _functions(child, name + ".")
        elif isinstance(child, ast.ClassDef):
            yield from _functions(child, f"{prefix}{child.name}.")
        else:
            yield from _functions(child, prefix)


def offenders(root: Path) -> list[Offender]:
    """Every function and module under ``root`` over its limit, in path order."""
    out: list[Offender] = []
    for path in sorted(root.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        rel = path.relative_to(root).as_posix()
        n = len(text.splitlines())
        if n > MAX_MODULE_LINES:
            out.append(Offender(rel, "", n))
        for name, fn in _functions(ast.parse(text, filename=str(path)), ""):
            assert fn.end_lineno is not None
            length = fn.end_lineno - fn.lineno + 1
            if length > MAX_FUNCTION_LINES:
                out.append(Offender(rel, name, length))
    return out


def test_no_function_or_module_over_its_limit() -> None:
    found = offenders(SRC)
    assert not found, f"{len(found)} over the size limits of docs/STYLE.md:\n" + "\n".join(
        f"src/{o}" for o in found
    )


def test_the_transaction_stays_under_500_lines() -> None:
    path = SRC / "neve" / "table" / "transaction.py"
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_TRANSACTION_LINES, (
        f"src/neve/table/transaction.py has {lines} lines (limit {MAX_TRANSACTION_LINES}): "
        "move what one engine needs into that engine, or planning into neve.planning"
    )


# -- the checker on synthetic trees ------------------------------------------------------


def _function(name: str, lines: int, indent: str = "") -> str:
    """Source of a function of exactly ``lines`` lines."""
    body = "".join(f"{indent}    x{i} = {i}\n" for i in range(lines - 2))
    return f"{indent}def {name}() -> None:\n{body}{indent}    return None\n"


def test_checker_finds_long_functions_methods_and_nested_ones(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "ok.py").write_text(_function("at_limit", MAX_FUNCTION_LINES))
    (pkg / "long.py").write_text(
        _function("too_long", MAX_FUNCTION_LINES + 1)
        + "class C:\n"
        + _function("method", MAX_FUNCTION_LINES + 5, indent="    ")
        + "def outer() -> None:\n"
        + _function("inner", MAX_FUNCTION_LINES + 1, indent="    ")
    )
    found = offenders(tmp_path)
    assert [(o.path, o.name, o.lines) for o in found] == [
        ("pkg/long.py", "too_long", MAX_FUNCTION_LINES + 1),
        ("pkg/long.py", "C.method", MAX_FUNCTION_LINES + 5),
        ("pkg/long.py", "outer", MAX_FUNCTION_LINES + 2),
        ("pkg/long.py", "outer.inner", MAX_FUNCTION_LINES + 1),
    ]
    assert "pkg/long.py: C.method has 105 lines" in str(found[1])


def test_checker_finds_long_modules(tmp_path: Path) -> None:
    short = "".join(f"x{i} = {i}\n" for i in range(MAX_MODULE_LINES))
    (tmp_path / "short.py").write_text(short)
    (tmp_path / "long.py").write_text(short + "y = 0\n")
    assert offenders(tmp_path) == [Offender("long.py", "", MAX_MODULE_LINES + 1)]
