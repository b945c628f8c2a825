"""Turning results into what a person or a script reads: Rich tables, one JSON
document (``--json``), CSV, JSON lines and Parquet."""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import decimal
import json
import math
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import click
import pyarrow as pa
from rich.table import Table as RichTable

from neve.cli.context import out_console

__all__ = [
    "arrow_table",
    "emit_json",
    "json_value",
    "key_values",
    "result_json",
    "rows_json",
    "show",
    "text",
]


def json_value(value: Any) -> Any:
    """A JSON-ready form of a value Arrow or neve hands out: times as ISO strings,
    decimals as strings (no precision lost), bytes as base64, maps as objects, NaN and
    infinities as strings (JSON has no such numbers)."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, Mapping):
        return {str(k): json_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        # Arrow gives maps as lists of (key, value) pairs
        if value and all(isinstance(p, tuple) and len(p) == 2 for p in value):
            return {str(json_value(k)): json_value(v) for k, v in value}
        return [json_value(v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: json_value(getattr(value, f.name)) for f in dataclasses.fields(value)}
    return str(value)


def rows_json(table: pa.Table) -> list[dict[str, Any]]:
    return [{k: json_value(v) for k, v in row.items()} for row in table.to_pylist()]


def result_json(result: Any) -> dict[str, Any]:
    """A maintenance result (a frozen dataclass) as a JSON object."""
    out = json_value(result)
    assert isinstance(out, dict)
    return out


def emit_json(doc: Any) -> None:
    click.echo(json.dumps(doc, indent=2, ensure_ascii=False))


def text(value: Any) -> str:
    """How a value reads in a table cell."""
    if value is None:
        return ""
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, (list, tuple, dict)):
        return json.dumps(json_value(value), ensure_ascii=False)
    return str(value)


def arrow_table(
    table: pa.Table, title: str | None = None, columns: Sequence[str] | None = None
) -> RichTable:
    names = list(columns) if columns is not None else table.column_names
    out = RichTable(title=title, title_justify="left", show_lines=False)
    for name in names:
        numeric = pa.types.is_integer(table.schema.field(name).type) or pa.types.is_floating(
            table.schema.field(name).type
        )
        out.add_column(name, justify="right" if numeric else "left", overflow="fold")
    for row in table.select(names).to_pylist():
        out.add_row(*(text(row[n]) for n in names))
    return out


def key_values(pairs: Iterable[tuple[str, Any]], title: str | None = None) -> RichTable:
    out = RichTable(title=title, title_justify="left", show_header=False, box=None)
    out.add_column(style="bold")
    out.add_column(overflow="fold")
    for k, v in pairs:
        out.add_row(k, text(v))
    return out


def show(renderable: Any) -> None:
    out_console.print(renderable)
