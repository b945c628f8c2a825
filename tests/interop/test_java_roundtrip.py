"""neve and Iceberg-Java 1.10.2 on one SQLite catalog read each other's tables exactly.

For format versions 2 and 3, a table partitioned by identity, bucket, truncate and day
is written in two commits by one engine and read by both: the same rows unfiltered, the
same partition tuples for the same rows (neve's transforms write what Java's write), and
the same rows for filters that prune through each partition field, so each engine's
pruning runs on partition values and metrics the other one wrote.
"""

from __future__ import annotations

import datetime as dt
import math
import uuid
from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from javaengine import IcebergJava, JdbcCatalog, canon_rows
from javaengine.filters import And, Filter, Not, Or, P, java_ids, matches, neve_expr
from javaengine.sql import insert_values
from neve.catalog import SqlCatalog

pytestmark = pytest.mark.java

UTC = dt.timezone.utc
COLUMNS: list[tuple[str, pa.DataType, str]] = [
    ("id", pa.int64(), "bigint"),
    ("cat", pa.string(), "string"),
    ("i", pa.int32(), "int"),
    ("d", pa.float64(), "double"),
    ("f", pa.float32(), "float"),
    ("amount", pa.decimal128(10, 2), "decimal(10,2)"),
    ("day", pa.date32(), "date"),
    ("ts", pa.timestamp("us", tz="UTC"), "timestamp"),
    ("local", pa.timestamp("us"), "timestamp_ntz"),
    ("raw", pa.binary(), "binary"),
    ("flag", pa.bool_(), "boolean"),
]
NAMES = [c[0] for c in COLUMNS]
TYPES = {n: t for n, _, t in COLUMNS}
SCHEMA = pa.schema([pa.field(n, t, nullable=(n != "id")) for n, t, _ in COLUMNS])
PARTITION_BY = ["cat", "bucket(8, id)", "truncate(100, i)", "day(ts)"]
JAVA_PARTITION_BY = "cat, bucket(8, id), truncate(100, i), days(ts)"


def make_rows(start: int, n: int) -> list[dict[str, Any]]:
    t0 = dt.datetime(1969, 12, 30, 20, tzinfo=UTC)
    rows = []
    for k in range(start, start + n):
        rows.append(
            {
                "id": k,
                "cat": None if k % 9 == 4 else ["a", "b", "c", ""][k % 4],
                "i": None if k % 11 == 5 else (k * 37) % 700 - 350,
                "d": math.nan if k % 10 == 3 else (-0.0 if k % 10 == 7 else k / 4),
                "f": None if k % 6 == 1 else float(k % 13) - 6.5,
                "amount": Decimal(k * 7919 % 100000 - 50000) / 100,
                "day": dt.date(1969, 12, 25) + dt.timedelta(days=k * 3),
                "ts": None if k % 13 == 12 else t0 + dt.timedelta(hours=9 * k, microseconds=k),
                "local": dt.datetime(2000, 2, 28, 12) + dt.timedelta(hours=k * 7),
                "raw": bytes([k % 256, (k * 7) % 256]) if k % 5 else b"",
                "flag": None if k % 7 == 0 else k % 2 == 0,
            }
        )
    return rows


BATCHES = [make_rows(0, 24), make_rows(24, 16)]
ALL_ROWS = [r for batch in BATCHES for r in batch]

FILTERS: dict[str, Filter] = {
    "cat_eq_b": P("eq", "cat", ("b",)),
    "cat_empty_or_null": Or(P("eq", "cat", ("",)), P("is_null", "cat")),
    "id_eq_17": P("eq", "id", (17,)),
    "id_in": P("in", "id", (3, 22, 31, 39)),
    "i_ge_150": P("ge", "i", (150,)),
    "i_lt_neg200": P("lt", "i", (-200,)),
    "ts_day_range": And(
        P("ge", "ts", (dt.datetime(1970, 1, 2, tzinfo=UTC),)),
        P("lt", "ts", (dt.datetime(1970, 1, 4, tzinfo=UTC),)),
    ),
    "ts_pre_epoch": P("lt", "ts", (dt.datetime(1970, 1, 1, tzinfo=UTC),)),
    "not_cat_a_and_d_nan": And(Not(P("eq", "cat", ("a",))), P("is_nan", "d")),
}


def oracle(f: Filter) -> Counter[int]:
    return Counter(r["id"] for r in ALL_ROWS if matches(f, r))


def write_with_neve(catalog: SqlCatalog, ns: str, version: int) -> None:
    t = catalog.create_table((ns, "t"), SCHEMA, partition_by=PARTITION_BY, format_version=version)
    for batch in BATCHES:
        t.append(pa.Table.from_pylist(batch, schema=SCHEMA))
        t = t.refresh()


def write_with_java(java: IcebergJava, ns: str, version: int) -> None:
    columns = ", ".join(f"`{n}` {t}{' NOT NULL' if n == 'id' else ''}" for n, _, t in COLUMNS)
    java.sql(
        f"CREATE TABLE neve.{ns}.t ({columns}) USING iceberg "
        f"PARTITIONED BY ({JAVA_PARTITION_BY}) TBLPROPERTIES ('format-version'='{version}')"
    )
    for batch in BATCHES:
        rows = [[r[n] for n in NAMES] for r in batch]
        java.sql(insert_values(f"neve.{ns}.t", rows, [t for _, _, t in COLUMNS]))


def neve_partitions(catalog: SqlCatalog, ns: str) -> Counter[tuple[Any, ...]]:
    t = catalog.load_table((ns, "t"))
    return Counter(task.file.partition for task in t.scan().plan_files())


def java_partitions(java: IcebergJava, ns: str) -> Counter[tuple[Any, ...]]:
    out: Counter[tuple[Any, ...]] = Counter()
    files = java.sql(f"SELECT partition FROM neve.{ns}.t.files").rows
    for (p,) in files:
        day = p["ts_day"]  # Spark shows the day transform as a date
        days = None if day is None else (day - dt.date(1970, 1, 1)).days
        out[(p["cat"], p["id_bucket"], p["i_trunc"], days)] += 1
    return out


@pytest.mark.parametrize("version", [2, 3])
@pytest.mark.parametrize("writer", ["neve", "java"])
def test_each_engine_reads_the_others_table(
    iceberg_java: IcebergJava,
    java_catalog: SqlCatalog,
    java_ns: str,
    writer: str,
    version: int,
) -> None:
    if writer == "neve":
        write_with_neve(java_catalog, java_ns, version)
    else:
        write_with_java(iceberg_java, java_ns, version)
    table = java_catalog.load_table((java_ns, "t"))
    assert table.format_version == version
    assert len(table.snapshots()) == 2

    expected = canon_rows([[r[n] for n in NAMES] for r in ALL_ROWS])
    ours = table.scan().to_arrow().select(NAMES).to_pylist()
    assert canon_rows(ours) == expected
    theirs = iceberg_java.sql(f"SELECT {', '.join(NAMES)} FROM neve.{java_ns}.t").rows
    assert canon_rows(theirs) == expected

    # The same partition tuples, file for file: both engines partition rows alike.
    assert neve_partitions(java_catalog, java_ns) == java_partitions(iceberg_java, java_ns)

    java = java_ids(iceberg_java, f"neve.{java_ns}.t", FILTERS, TYPES)
    for name, f in FILTERS.items():
        want = oracle(f)
        assert want and sum(want.values()) < len(ALL_ROWS), name  # each filter prunes
        got_neve = Counter(table.scan(filter=neve_expr(f)).to_arrow().column("id").to_pylist())
        assert got_neve == want, f"{name}: neve read {sorted(got_neve.elements())}"
        assert java[name] == want, f"{name}: Iceberg-Java read {sorted(java[name].elements())}"


@pytest.mark.postgres
def test_shared_postgresql_catalog(
    iceberg_java: IcebergJava, postgres_uri: str, tmp_path: Path
) -> None:
    """The same exchange on a PostgreSQL catalog database (Debian's JDBC driver)."""
    name = f"pg_{uuid.uuid4().hex[:10]}"  # the catalog name Java and neve both use
    catalog = SqlCatalog(name, postgres_uri, str(tmp_path / "warehouse"))
    catalog.create_namespace("db")  # neve creates the catalog tables first
    iceberg_java.add_catalog(JdbcCatalog.from_sqlalchemy(name, postgres_uri, catalog.warehouse))
    iceberg_java.sql(
        f"CREATE TABLE {name}.db.t (id bigint NOT NULL, cat string) USING iceberg "
        "PARTITIONED BY (cat) TBLPROPERTIES ('format-version'='3')"
    )
    iceberg_java.sql(f"INSERT INTO {name}.db.t VALUES (1, 'a'), (2, 'b')")
    t = catalog.load_table("db.t")
    assert sorted(t.scan().to_arrow().column("id").to_pylist()) == [1, 2]
    t.append(pa.table({"id": pa.array([3], pa.int64()), "cat": ["a"]}))
    rows = iceberg_java.sql(f"SELECT id, cat, _row_id FROM {name}.db.t WHERE cat = 'a'").rows
    assert sorted(rows) == [(1, "a", 0), (3, "a", 2)]
