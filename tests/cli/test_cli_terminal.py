"""The command's Rich output as a person sees it: run in a real terminal (tmux, 120 x
40) and read back with capture-pane. describe and snapshots --plot are compared with
goldens in tests/cli/goldens (paths, ids and times normalised; NEVE_UPDATE_GOLDENS=1
rewrites them); a scan to a file and a maintenance verb end with their progress shown
complete."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from cli_support import NEVE, Catalog, rows

import neve
from terminal import TerminalRun, run_in_terminal

GOLDENS = Path(__file__).parent / "goldens"


def _neve(home: Path, sqlite: Catalog, *args: str) -> TerminalRun:
    return run_in_terminal(
        [str(NEVE), *sqlite.flags, *args], cwd=home, width=120, height=40, timeout=120
    )


def _screen(run: TerminalRun) -> str:
    """The output without tmux's closing note and the blank rest of the pane."""
    lines = [line for line in run.text.splitlines() if not line.startswith("Pane is dead")]
    return "\n".join(lines).strip("\n") + "\n"


def _normalise(text: str, sqlite: Catalog, table: neve.Table) -> str:
    text = text.replace(str(Path(sqlite.warehouse).parent), "<tmp>")
    for s in table.snapshots():
        text = text.replace(str(s.snapshot_id), "<snapshot-id>")
    # commit times keep their width so the table's borders stay put
    return re.sub(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", "YYYY-MM-DD hh:mm:ss", text)


def _golden(name: str, text: str) -> None:
    path = GOLDENS / name
    if os.environ.get("NEVE_UPDATE_GOLDENS"):
        path.write_text(text)
    assert text == path.read_text(), f"{name} changed; NEVE_UPDATE_GOLDENS=1 rewrites it"


def test_describe(home: Path, sqlite: Catalog, events: neve.Table) -> None:
    shown = _neve(home, sqlite, "describe", "db.events")
    assert shown.exit_code == 0, shown.text
    _golden("describe.txt", _normalise(_screen(shown), sqlite, events.refresh()))


def _bytes_free(text: str) -> str:
    """File sizes depend on the Parquet writer's version: blank the bytes measure (its
    numbers, their padding and its bar), keep everything else."""
    text = re.sub(
        r"│ +[\d.]+ (?:B|KiB|MiB) │ [█▉▊▋▌▍▎▏ ]+ │$", "│ <bytes> │ <bar> │", text, flags=re.M
    )
    return re.sub(r"data files, [\d.]+ (?:B|KiB|MiB)", "data files, <bytes>", text)


def test_snapshots_plot(home: Path, sqlite: Catalog, events: neve.Table) -> None:
    shown = _neve(home, sqlite, "snapshots", "db.events", "--plot")
    assert shown.exit_code == 0, shown.text
    text = _bytes_free(_normalise(_screen(shown), sqlite, events.refresh()))
    assert text.count("<bar>") == 4  # one bytes bar per snapshot
    _golden("snapshots_plot.txt", text)


def test_progress_ends_complete(home: Path, sqlite: Catalog, events: neve.Table) -> None:
    for day in range(3, 9):
        events.append(rows(10_000 * day, 3000, day))
    tasks = len(events.scan().plan_files())
    target = home / "all.parquet"
    shown = run_in_terminal(
        [str(NEVE), *sqlite.flags, "scan", "db.events", "--output", str(target)],
        cwd=home,
        width=120,
        height=40,
        timeout=120,
    )
    assert shown.exit_code == 0, shown.text
    lines = _screen(shown).strip().splitlines()
    assert re.match(rf"^reading .*━ {tasks}/{tasks} tasks", lines[-2]), lines
    assert lines[-1] == f"wrote {18115:,} rows to {target} (parquet)"
    compacted = run_in_terminal(
        [str(NEVE), *sqlite.flags, "compact", "db.events", "--option", "min-input-files=2"],
        cwd=home,
        width=120,
        height=40,
        timeout=120,
    )
    assert compacted.exit_code == 0, compacted.text
    assert re.search(r"^✓ compacting db\.events: done in \d+\.\d\d s$", compacted.text, re.M)


@pytest.mark.parametrize("verb", ["describe", "snapshots"])
def test_unknown_table_in_a_terminal(home: Path, sqlite: Catalog, verb: str) -> None:
    sqlite.catalog.create_namespace("db")
    shown = _neve(home, sqlite, verb, "db.nope")
    assert shown.exit_code == 1
    assert _screen(shown).strip().splitlines() == [
        "error: table db.nope does not exist in catalog 'neve'; list_tables('db') shows the "
        "tables there"
    ]


def test_history_plot(home: Path, sqlite: Catalog, events: neve.Table) -> None:
    """The history of main, rolled back once: the chart goes down to the second
    snapshot's totals at the end."""
    second = events.refresh().snapshots()[1].snapshot_id
    events.rollback_to_snapshot(second)
    shown = _neve(home, sqlite, "history", "db.events", "--plot")
    assert shown.exit_code == 0, shown.text
    text = _bytes_free(_normalise(_screen(shown), sqlite, events.refresh()))
    assert text.count("<bar>") == 5
    _golden("history_plot.txt", text)
