"""rewrite_data_files(strategy="sort"): each file group's rows are written in the given
order (Iceberg-Java's sort_order strings), or the table's, or z-order; the written
files' rows are checked against orders computed here independently (Python sorting;
z-order keys built bit by bit from the values). Bad requests change nothing."""

from __future__ import annotations

import datetime as dt
import random
import struct
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import neve
from neve.errors import ValidationError
from neve.table.table import Table

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("part", pa.int32()),
        pa.field("x", pa.int32()),
        pa.field("f", pa.float64()),
        pa.field("s", pa.string()),
        pa.field("d", pa.date32()),
    ]
)


def batch(ids: list[int], rng: random.Random) -> pa.Table:
    return pa.table(
        {
            "id": ids,
            "part": [i % 2 for i in ids],
            "x": [rng.choice([None, *range(-50, 50)]) for _ in ids],
            "f": [rng.choice([None, -2.5, -0.0, 0.5, 1e9, -1e-9, 3.25]) for _ in ids],
            "s": [
                rng.choice([None, "", "a", "ab", "abcdefghij", "abcdefgh", "zz", "é"]) for _ in ids
            ],
            "d": [rng.choice([None, dt.date(1969, 12, 31), dt.date(2024, 2, 29)]) for _ in ids],
        },
        schema=SCHEMA,
    )


def canon(t: pa.Table) -> list[tuple[Any, ...]]:
    return sorted((tuple(r.values()) for r in t.to_pylist()), key=repr)


@pytest.fixture
def table(sqlite_catalog: neve.Catalog) -> Table:
    t = sqlite_catalog.create_table("db.t", SCHEMA, partition_by=["part"], format_version=2)
    rng = random.Random(7)
    for i in range(6):
        t.append(batch(list(range(i * 40, i * 40 + 40)), rng))
    sevens = ", ".join(str(i) for i in range(0, 240, 7))
    t.delete(f"id in ({sevens})")
    return t


def written_files(t: Table) -> list[pa.Table]:
    """The rows of each live data file, in file order."""
    return [
        pq.read_table(task.file.file_path.removeprefix("file://")) for task in t.scan().plan_files()
    ]


def key_of(direction: str, nulls: str) -> Any:
    def key(v: Any) -> tuple[int, Any]:
        null_rank = 0 if nulls == "first" else 1
        if v is None:
            return (null_rank, 0)
        return (1 - null_rank, -v if direction == "desc" else v)

    return key


def test_rows_are_written_in_the_given_order(table: Table) -> None:
    before = canon(table.scan().to_arrow())
    result = table.maintenance.rewrite_data_files(
        strategy="sort", sort_order="x desc nulls last, id", options={"rewrite-all": "true"}
    )
    assert result.added_data_files_count == 2
    t = table.refresh()
    assert canon(t.scan().to_arrow()) == before
    for rows in written_files(t):
        got = list(zip(rows.column("x").to_pylist(), rows.column("id").to_pylist(), strict=True))
        kx = key_of("desc", "last")
        assert got == sorted(got, key=lambda r: (kx(r[0]), r[1]))
    # files sorted by an order the table does not have record none
    assert all(task.file.sort_order_id is None for task in t.scan().plan_files())


def test_the_tables_sort_order_is_the_default(table: Table) -> None:
    with table.update_sort_order() as order:
        order.asc("s", "nulls-last").desc("id")
    t = table.refresh()
    t.maintenance.rewrite_data_files(strategy="sort", options={"rewrite-all": "true"})
    t = t.refresh()
    order_id = t.metadata.default_sort_order_id
    assert order_id
    for task in t.scan().plan_files():
        assert task.file.sort_order_id == order_id
    for rows in written_files(t):
        got = list(zip(rows.column("s").to_pylist(), rows.column("id").to_pylist(), strict=True))
        ks = key_of("asc", "last")
        assert got == sorted(got, key=lambda r: (ks(r[0]), -r[1]))


def _int_bytes(v: int | None, bits: int = 64) -> bytes:
    if v is None:
        return bytes(8)
    return struct.pack(">Q", (v + (1 << 63)) % (1 << 64))


def _float_bytes(v: float | None) -> bytes:
    if v is None:
        return bytes(8)
    (raw,) = struct.unpack(">Q", struct.pack(">d", v))
    raw = raw ^ 0xFFFFFFFFFFFFFFFF if raw >> 63 else raw | (1 << 63)
    return struct.pack(">Q", raw)


def _str_bytes(v: str | None, width: int) -> bytes:
    if v is None:
        return bytes(width)
    return v.encode()[:width].ljust(width, b"\0")


def _interleave(parts: list[bytes]) -> int:
    """The z-order key: bit b of every column in turn, columns whose bytes ran out
    skipped; as one big integer compared like the bytes."""
    bits = [[(byte >> (7 - i)) & 1 for byte in p for i in range(8)] for p in parts]
    out: list[int] = []
    for b in range(max(len(x) for x in bits)):
        out += [x[b] for x in bits if b < len(x)]
    return int("".join(map(str, out)), 2) if out else 0


@pytest.mark.parametrize("width", [8, 3, 12])
def test_zorder_interleaves_the_order_preserving_bytes(table: Table, width: int) -> None:
    before = canon(table.scan().to_arrow())
    options = {"rewrite-all": "true", "var-length-contribution": str(width)}
    table.maintenance.rewrite_data_files(
        strategy="sort", sort_order="zorder(x, s, f, d)", options=options
    )
    t = table.refresh()
    assert canon(t.scan().to_arrow()) == before
    files = written_files(t)
    assert len(files) == 2
    epoch = dt.date(1970, 1, 1)
    for rows in files:
        keys = []
        for r in rows.to_pylist():
            days = None if r["d"] is None else (r["d"] - epoch).days
            keys.append(
                _interleave(
                    [
                        _int_bytes(r["x"]),
                        _str_bytes(r["s"], width),
                        _float_bytes(r["f"]),
                        _int_bytes(days),
                    ]
                )
            )
        assert keys == sorted(keys)
        assert len(set(keys)) > 5  # the order is not trivially satisfied


def test_bad_sort_requests_change_nothing(table: Table) -> None:
    md = table.metadata_location

    def refused(match: str, **kwargs: Any) -> None:
        with pytest.raises(ValidationError, match=match):
            table.maintenance.rewrite_data_files(**kwargs)
        assert table.refresh().metadata_location == md

    refused("needs a sort order", strategy="sort")  # the table has none
    refused("unknown rewrite strategy", strategy="shuffle")
    refused("is for strategy='sort'", sort_order="id")
    refused("not in the table", strategy="sort", sort_order="zorder(x, nope)")
    refused("identity partition column", strategy="sort", sort_order="zorder(part, x)")
    refused("needs at least one column", strategy="sort", sort_order="zorder()")
    refused("sort_order='nope'", strategy="sort", sort_order="nope")
    # options of another strategy, as Iceberg-Java refuses them
    refused("unknown rewrite_data_files options", options={"compression-factor": "2"})
    refused(
        "unknown rewrite_data_files options",
        strategy="sort",
        sort_order="id",
        options={"var-length-contribution": "4"},
    )
    refused(
        "is not a number", strategy="sort", sort_order="id", options={"compression-factor": "x"}
    )
    # accepted and ignored by the pyarrow engine (they tune Spark's shuffle)
    ok = table.maintenance.rewrite_data_files(
        strategy="sort",
        sort_order="id",
        options={"compression-factor": "2", "shuffle-partitions-per-file": "4"},
        dry_run=True,
    )
    assert ok.dry_run


def test_transform_terms_sort_by_their_values(table: Table) -> None:
    before = canon(table.scan().to_arrow())
    table.maintenance.rewrite_data_files(
        strategy="sort", sort_order="truncate(2, s) desc, id", options={"rewrite-all": "true"}
    )
    t = table.refresh()
    assert canon(t.scan().to_arrow()) == before
    for rows in written_files(t):
        got = list(zip(rows.column("s").to_pylist(), rows.column("id").to_pylist(), strict=True))

        def key(r: tuple[str | None, int]) -> tuple[int, list[int], int]:
            # desc puts nulls last by default; a longer string sorts after its prefix
            if r[0] is None:
                return (1, [], r[1])
            return (0, [-b for b in r[0][:2].encode()] + [1], r[1])

        assert got == sorted(got, key=key)
