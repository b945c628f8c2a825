"""Verbs that read rows: ``head`` and ``scan``, as a table, CSV, JSON lines or
Parquet, with a progress bar when rows go to a file; ``take``, a few rows by row id or
position."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import click
import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from neve.cli.context import State, err_console, json_option, pass_state
from neve.cli.output import arrow_table, emit_json, json_value, rows_json, show
from neve.planning.tasks import FileScanTask
from neve.table.scan import TableScan

__all__ = ["VERBS"]

FORMATS = ("table", "csv", "jsonl", "parquet")


def _scan_options(fn: Any) -> Any:
    options: list[Callable[[Any], Any]] = [
        click.argument("table"),
        click.option("--where", "-w", help="A neve filter: \"id < 100 and name = 'x'\"."),
        click.option("--columns", "-c", help="Comma-separated columns to read."),
        click.option("--limit", "-n", type=int, help="Stop after this many rows."),
        click.option("--as-of", help="Time travel to a time (ISO timestamp or epoch ms)."),
        click.option("--snapshot", type=int, help="Time travel to a snapshot id."),
        click.option("--ref", help="Read a branch or tag."),
        click.option(
            "--format",
            "-f",
            "fmt",
            type=click.Choice(FORMATS),
            default=None,
            help="Output format (default: table on a terminal; parquet needs --output).",
        ),
        click.option("--output", "-o", type=click.Path(dir_okay=False), help="Write here."),
        json_option,
        pass_state,
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


def _batches(
    scan: TableScan, tasks: list[FileScanTask], limit: int | None, progress: Progress | None
) -> Iterator[pa.RecordBatch]:
    """The scan's batches up to ``limit`` rows, read task by task (so the progress bar
    advances per planned task: a file, or a part of a large one)."""
    schema = scan.arrow_schema()
    bar = None if progress is None else progress.add_task("reading", total=len(tasks))
    left = limit
    for task in tasks:
        for batch in scan.to_batches([task]):
            batch = batch.cast(schema)  # the types to_arrow() gives (large strings ...)
            if left is not None:
                if left <= 0:
                    break
                batch = batch.slice(0, left)
                left -= batch.num_rows
            yield batch
        if progress is not None and bar is not None:
            progress.advance(bar)
        if left is not None and left <= 0:
            break
    if progress is not None and bar is not None:
        progress.update(bar, completed=len(tasks))


def _write(
    scan: TableScan,
    tasks: list[FileScanTask],
    fmt: str,
    out: IO[bytes],
    limit: int | None,
    progress: Progress | None,
) -> int:
    rows = 0
    writer: Any = None
    try:
        for batch in _batches(scan, tasks, limit, progress):
            if writer is None:
                if fmt == "parquet":
                    writer = pq.ParquetWriter(out, scan.arrow_schema())
                elif fmt == "csv":
                    writer = pa_csv.CSVWriter(out, scan.arrow_schema())
            if fmt == "jsonl":
                for row in batch.to_pylist():
                    out.write(
                        (json.dumps({k: json_value(v) for k, v in row.items()}) + "\n").encode()
                    )
            else:
                writer.write_batch(batch)
            rows += batch.num_rows
        if writer is None and fmt in ("parquet", "csv"):
            # no rows: still write a file with the columns
            empty = scan.arrow_schema()
            writer = (pq.ParquetWriter if fmt == "parquet" else pa_csv.CSVWriter)(out, empty)
    finally:
        if writer is not None:
            writer.close()
    return rows


def _read(
    state: State,
    table: str,
    where: str | None,
    columns: str | None,
    limit: int | None,
    as_of: str | None,
    snapshot: int | None,
    ref: str | None,
    fmt: str | None,
    output: str | None,
    as_json: bool,
) -> None:
    t = state.table(table)
    cols = [c.strip() for c in columns.split(",") if c.strip()] if columns else None
    when: int | str | None = int(as_of) if as_of is not None and as_of.isdigit() else as_of
    scan = t.scan(filter=where, columns=cols, snapshot_id=snapshot, as_of=when, ref=ref)
    tasks = scan.plan_files()  # a filter that does not bind fails here, before any output
    if as_json and fmt not in (None, "table"):
        raise click.UsageError("--json prints one JSON document; leave out --format")
    fmt = fmt or ("jsonl" if output and output.endswith((".jsonl", ".json")) else None)
    fmt = fmt or ("parquet" if output and output.endswith(".parquet") else None)
    fmt = fmt or ("csv" if output and output.endswith(".csv") else None)
    if fmt == "parquet" and not output:
        raise click.UsageError("--format parquet needs --output FILE")
    if output:
        if as_json:
            raise click.UsageError("--json prints to the terminal; leave it out with --output")
        fmt = fmt or "parquet"
        if fmt == "table":
            raise click.UsageError(
                "--format table prints to the terminal; use csv, jsonl or parquet"
            )
        progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("tasks"),
            TimeElapsedColumn(),
            console=err_console,
            disable=not err_console.is_terminal,
        )
        try:
            with progress, open(output, "wb") as out:
                rows = _write(scan, tasks, fmt, out, limit, progress)
        except BaseException:
            Path(output).unlink(missing_ok=True)  # no partial file left behind
            raise
        err_console.print(f"wrote {rows:,} rows to {output} ({fmt})")
        return
    if as_json or fmt in (None, "table"):
        data = pa.Table.from_batches(list(_batches(scan, tasks, limit, None)), scan.arrow_schema())
        if as_json:
            emit_json(rows_json(data))
        else:
            show(arrow_table(data, title=f"{t.name} ({data.num_rows:,} rows)"))
        return
    _write(scan, tasks, fmt, sys.stdout.buffer, limit, None)
    sys.stdout.flush()


@click.command()
@_scan_options
def scan(state: State, **opts: Any) -> None:
    """Read rows (all of them unless --limit), filtered, projected, at any snapshot."""
    _read(state, **opts)


@click.command()
@_scan_options
def head(state: State, **opts: Any) -> None:
    """The first rows (10 unless --limit)."""
    if opts.get("limit") is None:
        opts["limit"] = 10
    _read(state, **opts)


def _ints(text: str | None, option: str) -> list[int] | None:
    if text is None:
        return None
    try:
        return [int(x) for x in text.replace(" ", "").split(",") if x]
    except ValueError:
        raise click.UsageError(f"{option} takes integers separated by commas: 17,90211") from None


@click.command()
@click.argument("table")
@click.option("--row-ids", help="Rows by _row_id (format v3), comma-separated: 17,90211,4000007.")
@click.option("--positions", help="The i-th live rows of the snapshot instead, comma-separated.")
@click.option("--columns", "-c", help="Comma-separated columns to read.")
@click.option("--snapshot", type=int, help="Read this snapshot.")
@click.option("--ref", help="Read a branch or tag.")
@click.option("--as-of", help="Time travel to a time (ISO timestamp or epoch ms).")
@click.option("--skip-missing", is_flag=True, help="Leave out row ids of no live row.")
@json_option
@pass_state
def take(
    state: State,
    table: str,
    row_ids: str | None,
    positions: str | None,
    columns: str | None,
    snapshot: int | None,
    ref: str | None,
    as_of: str | None,
    skip_missing: bool,
    as_json: bool,
) -> None:
    """Read a few rows by row id (or by position), only the pages that hold them."""
    ids = _ints(row_ids, "--row-ids")
    places = _ints(positions, "--positions")
    if (ids is None) == (places is None):
        raise click.UsageError("give one of --row-ids and --positions")
    t = state.table(table)
    cols = [c.strip() for c in columns.split(",") if c.strip()] if columns else None
    when: int | str | None = int(as_of) if as_of is not None and as_of.isdigit() else as_of
    if ids is not None:
        missing = "skip" if skip_missing else "error"
        rows = t.take(ids, columns=cols, snapshot_id=snapshot, as_of=when, ref=ref, missing=missing)
    else:
        rows = t.take_rows(places, columns=cols, snapshot_id=snapshot, as_of=when, ref=ref)
    if as_json:
        emit_json(rows_json(rows))
    else:
        show(arrow_table(rows, title=f"{t.name} ({rows.num_rows:,} rows)"))


VERBS = [head, scan, take]
