"""The ``changes`` verb: a table's changelog between two snapshots
(``table.changes``, docs/CHANGELOG-READS.md) as a table, CSV, JSON lines or Parquet."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click
import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

from neve.cli.context import State, err_console, json_option, pass_state
from neve.cli.output import arrow_table, emit_json, json_value, rows_json, show

__all__ = ["VERBS"]

FORMATS = ("table", "csv", "jsonl", "parquet")


def _time(raw: str | None) -> int | str | None:
    return int(raw) if raw is not None and raw.lstrip("-").isdigit() else raw


def _write(rows: pa.Table, fmt: str, out: Any) -> None:
    if fmt == "parquet":
        pq.write_table(rows, out)
    elif fmt == "csv":
        pa_csv.write_csv(rows, out)
    else:
        for row in rows.to_pylist():
            out.write((json.dumps({k: json_value(v) for k, v in row.items()}) + "\n").encode())


@click.command()
@click.argument("table")
@click.option("--from", "start", type=int, help="Start after this snapshot id (exclusive).")
@click.option("--to", "end", type=int, help="End at this snapshot id (default: the head).")
@click.option("--since", help="Start at snapshots committed at or after this time.")
@click.option("--until", help="End at the snapshot that was the head at this time.")
@click.option("--net", is_flag=True, help="One change per key across the range.")
@click.option("--no-updates", is_flag=True, help="DELETE and INSERT rows, no update pairs.")
@click.option("--key", help="Comma-separated key columns (default: the primary key).")
@click.option("--where", "-w", help="A neve filter on the changed rows.")
@click.option("--columns", "-c", help="Comma-separated columns to show.")
@click.option("--branch", default="main", show_default=True, help="The branch's history.")
@click.option(
    "--format",
    "-f",
    "fmt",
    type=click.Choice(FORMATS),
    default=None,
    help="Output format (default: table on a terminal; parquet needs --output).",
)
@click.option("--output", "-o", type=click.Path(dir_okay=False), help="Write here.")
@json_option
@pass_state
def changes(
    state: State,
    table: str,
    start: int | None,
    end: int | None,
    since: str | None,
    until: str | None,
    net: bool,
    no_updates: bool,
    key: str | None,
    where: str | None,
    columns: str | None,
    branch: str,
    fmt: str | None,
    output: str | None,
    as_json: bool,
) -> None:
    """The rows that changed between two snapshots, with _change_type (INSERT, DELETE,
    UPDATE_BEFORE, UPDATE_AFTER), _change_ordinal and _commit_snapshot_id."""
    if as_json and fmt not in (None, "table"):
        raise click.UsageError("--json prints one JSON document; leave out --format")
    if fmt == "parquet" and not output:
        raise click.UsageError("--format parquet needs --output FILE")
    t = state.table(table)
    rows = t.changes(
        start_snapshot_id=start,
        end_snapshot_id=end,
        start_time=_time(since),
        end_time=_time(until),
        columns=[c.strip() for c in columns.split(",") if c.strip()] if columns else None,
        filter=where,
        compute_updates=not no_updates,
        net_changes=net,
        identifier_columns=[c.strip() for c in key.split(",") if c.strip()] if key else None,
        branch=branch,
    )
    if output:
        if as_json:
            raise click.UsageError("--json prints to the terminal; leave it out with --output")
        fmt = fmt or ("csv" if output.endswith(".csv") else None)
        fmt = fmt or ("jsonl" if output.endswith((".jsonl", ".json")) else "parquet")
        if fmt == "table":
            raise click.UsageError(
                "--format table prints to the terminal; use csv, jsonl or parquet"
            )
        try:
            with open(output, "wb") as out:
                _write(rows, fmt, out)
        except BaseException:
            Path(output).unlink(missing_ok=True)  # no partial file left behind
            raise
        err_console.print(f"wrote {rows.num_rows:,} changed rows to {output} ({fmt})")
        return
    if as_json:
        emit_json(rows_json(rows))
    elif fmt in (None, "table"):
        show(arrow_table(rows, title=f"{t.name}: {rows.num_rows:,} changed rows"))
    else:
        _write(rows, fmt, sys.stdout.buffer)
        sys.stdout.flush()


VERBS = [changes]
