"""What a clean clone must hold: nothing that only makes sense on one machine."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _tracked() -> list[tuple[str, str]]:
    out = subprocess.run(
        ["git", "ls-files", "-s"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout
    rows = []
    for line in out.splitlines():
        meta, path = line.split("\t", 1)
        rows.append((meta.split()[0], path))
    return rows


def test_no_symlinks_are_tracked() -> None:
    # A worktree links the reference engines' virtualenvs to another checkout; committed,
    # such a link points at itself in a clean clone and `make setup` cannot build there.
    links = [path for mode, path in _tracked() if mode == "120000"]
    assert links == []


def test_no_virtualenv_is_tracked() -> None:
    venvs = [path for _, path in _tracked() if path.split("/", 1)[0].startswith(".venv")]
    assert venvs == []
