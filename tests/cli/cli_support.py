"""Helpers of the command's tests (``from cli_support import ...``): the installed
command, a table with history, results of a run."""

from __future__ import annotations

import datetime as dt
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

import neve

#: The installed entry point (pyproject's [project.scripts]) next to the interpreter.
NEVE = Path(sys.executable).parent / "neve"

UTC = dt.timezone.utc
SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("name", pa.string()),
        pa.field("ts", pa.timestamp("us", tz="UTC")),
        pa.field("amount", pa.float64()),
        pa.field("day", pa.date32()),
    ]
)


def rows(start: int, n: int, day: int) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(range(start, start + n), pa.int64()),
            "name": [f"name-{i % 7}" for i in range(start, start + n)],
            "ts": pa.array(
                [dt.datetime(2024, 1, 1 + day, i % 24, tzinfo=UTC) for i in range(n)],
                pa.timestamp("us", tz="UTC"),
            ),
            "amount": [i * 0.5 for i in range(start, start + n)],
            "day": pa.array([dt.date(2024, 1, 1 + day)] * n, pa.date32()),
        },
        schema=SCHEMA,
    )


@dataclass
class Result:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


Runner = Callable[..., Result]


@dataclass
class Catalog:
    uri: str
    warehouse: str
    catalog: neve.Catalog

    @property
    def flags(self) -> list[str]:
        return ["--uri", self.uri, "--warehouse", self.warehouse]


def fill(cat: neve.Catalog, name: str = "db.events") -> neve.Table:
    """A table with history: three appends over three days, a merge-on-read delete, a
    tag on the first snapshot and a branch."""
    cat.create_namespace_if_not_exists(name.rsplit(".", 1)[0])
    t = cat.create_table(
        name, SCHEMA, partition_by=["day(ts)"], primary_key=["id"], properties={"owner": "cli"}
    )
    for day in range(3):
        t.append(rows(day * 40, 40, day))
    t.delete("id < 5")
    first = t.snapshots()[0].snapshot_id
    t.create_tag("first", first)
    t.create_branch("dev")
    return t
