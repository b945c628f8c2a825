"""``truncate`` at the integer limits against Iceberg-Java 1.10.2.

Iceberg-Java computes ``truncate(W, v)`` as ``v - (((v % W) + W) % W)`` in Java's
wrapping int (long) arithmetic, so near the minimum the partition value wraps around:
``truncate(100, -2147483648)`` is ``2147483596`` and ``truncate(1000, -2**63)`` is
``9223372036854775000`` (checked below, with more widths and values). neve must write the
same values, so that both engines read each other's partitions alike.

With such partition values a projection of ``i < -5`` to ``i_trunc <= -100`` no longer
holds for the rows that wrapped. neve must never prune a row that matches, whatever the
stored partition value: every filter below returns exactly the matching rows through
neve, on a table Java wrote and on one neve wrote. Iceberg-Java 1.10.2 itself prunes
those partitions wrongly: ``JAVA_DROPS`` pins the rows it loses, so that the difference
stays documented (and is noticed should a fixed Java be used).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pyarrow as pa
import pytest

from javaengine import IcebergJava
from javaengine.filters import Filter, Not, P, java_ids, matches, neve_expr
from javaengine.sql import insert_values
from neve.catalog import SqlCatalog
from neve.spec.transforms import TruncateTransform
from neve.spec.types import IntegerType, LongType

pytestmark = pytest.mark.java

I_MIN, I_MAX = -(2**31), 2**31 - 1
L_MIN, L_MAX = -(2**63), 2**63 - 1
TYPES = {"id": "bigint", "i": "int", "l": "bigint"}
SCHEMA = pa.schema(
    [pa.field("id", pa.int64(), nullable=False), ("i", pa.int32()), ("l", pa.int64())]
)
I_VALUES = [I_MIN, I_MIN + 1, I_MIN + 47, I_MIN + 48, I_MIN + 49, -101, -100, -5, -1, 0, 7,
            99, 100, I_MAX - 48, I_MAX - 47, I_MAX, None]  # fmt: skip
L_VALUES = [L_MIN, L_MIN + 1, L_MIN + 807, L_MIN + 808, L_MIN + 809, -1001, -1000, -5, -1, 0,
            7, 999, 1000, L_MAX - 807, L_MAX - 806, L_MAX, None]  # fmt: skip
ROWS: list[dict[str, Any]] = [
    {"id": k, "i": i, "l": v} for k, (i, v) in enumerate(zip(I_VALUES, L_VALUES, strict=True))
]

FILTERS: dict[str, Filter] = {
    "i_lt_neg5": P("lt", "i", (-5,)),
    "i_lt_0": P("lt", "i", (0,)),
    "i_le_min": P("le", "i", (I_MIN,)),
    "i_eq_min": P("eq", "i", (I_MIN,)),
    "i_ge_min": P("ge", "i", (I_MIN,)),
    "i_gt_0": P("gt", "i", (0,)),
    "i_lt_min_plus_48": P("lt", "i", (I_MIN + 48,)),
    "i_in_min_7": P("in", "i", (I_MIN, 7)),
    "i_ne_min": P("ne", "i", (I_MIN,)),
    "not_i_ge_neg100": Not(P("ge", "i", (-100,))),
    "l_lt_neg5": P("lt", "l", (-5,)),
    "l_le_min": P("le", "l", (L_MIN,)),
    "l_eq_min": P("eq", "l", (L_MIN,)),
    "l_ge_min": P("ge", "l", (L_MIN,)),
    "l_gt_0": P("gt", "l", (0,)),
}

# The rows Iceberg-Java 1.10.2 loses through its own projection of the wrapped
# partition values, on either table (ids index ROWS). Below zero, it misses rows 0-2,
# whose truncation wraps to the top (i below I_MIN + 48, l below L_MIN + 808). For
# ``>= MIN`` it projects to ``trunc >= trunc(MIN)``, the wrapped value near the maximum,
# and keeps only the partitions above it.
JAVA_DROPS: dict[str, set[int]] = {
    "i_lt_neg5": {0, 1, 2},
    "i_lt_0": {0, 1, 2},
    "not_i_ge_neg100": {0, 1, 2},
    "i_ge_min": set(range(3, 14)),
    "l_lt_neg5": {0, 1, 2},
    "l_ge_min": set(range(3, 16)),
}


def oracle(f: Filter) -> Counter[int]:
    return Counter(r["id"] for r in ROWS if matches(f, r))


def test_neve_truncates_as_java_does(iceberg_java: IcebergJava) -> None:
    """Iceberg-Java's own ``system.truncate`` and neve's transform agree at the limits."""
    cases: list[tuple[int, int, str]] = []
    for w in (1, 3, 7, 100, 1000, 2**31 - 1):
        cases += [(w, v, "int") for v in I_VALUES if v is not None]
    for w in (1, 7, 1000, 2**31 - 1):
        cases += [(w, v, "bigint") for v in L_VALUES if v is not None]
    sql = "SELECT " + ", ".join(
        f"neve.system.truncate({w}, CAST('{v}' AS {t.upper()})) AS c{k}"
        for k, (w, v, t) in enumerate(cases)
    )
    theirs = dict(enumerate(iceberg_java.sql(sql).rows[0]))
    for k, (w, v, t) in enumerate(cases):
        ours = TruncateTransform(w).apply(IntegerType() if t == "int" else LongType(), v)
        assert ours == theirs[k], f"truncate({w}, {v}) as {t}: neve {ours}, Java {theirs[k]}"
    assert theirs[[c[:2] for c in cases].index((100, I_MIN))] == 2147483596


def make_table(writer: str, java: IcebergJava, catalog: SqlCatalog, ns: str) -> None:
    if writer == "java":
        java.sql(
            f"CREATE TABLE neve.{ns}.t (id bigint NOT NULL, i int, l bigint) USING iceberg "
            "PARTITIONED BY (truncate(100, i), truncate(1000, l))"
        )
        for half in (ROWS[::2], ROWS[1::2]):
            rows = [[r["id"], r["i"], r["l"]] for r in half]
            java.sql(insert_values(f"neve.{ns}.t", rows, ["bigint", "int", "bigint"]))
    else:
        t = catalog.create_table(
            (ns, "t"), SCHEMA, partition_by=["truncate(100, i)", "truncate(1000, l)"]
        )
        for half in (ROWS[::2], ROWS[1::2]):
            t.append(pa.Table.from_pylist(half, schema=SCHEMA))
            t = t.refresh()


@pytest.mark.parametrize("writer", ["java", "neve"])
def test_filters_at_the_minimum(
    iceberg_java: IcebergJava, java_catalog: SqlCatalog, java_ns: str, writer: str
) -> None:
    make_table(writer, iceberg_java, java_catalog, java_ns)
    table = java_catalog.load_table((java_ns, "t"))

    # Every row's partition (as Java reads it from the manifests) is neve's transform of it.
    found = iceberg_java.sql(f"SELECT i, l, _partition FROM neve.{java_ns}.t").rows
    assert len(found) == len(ROWS)
    for i, v, part in found:
        assert part["i_trunc"] == TruncateTransform(100).apply(IntegerType(), i), (i, part)
        assert part["l_trunc"] == TruncateTransform(1000).apply(LongType(), v), (v, part)

    java = java_ids(iceberg_java, f"neve.{java_ns}.t", FILTERS, TYPES)
    java_lost = {
        name: set((oracle(f) - java[name]).elements())
        for name, f in FILTERS.items()
        if oracle(f) != java[name]
    }
    assert all(not (java[name] - oracle(f)) for name, f in FILTERS.items())
    assert java_lost == JAVA_DROPS, java_lost

    wrong: dict[str, Any] = {}
    for name, f in FILTERS.items():
        want = oracle(f)
        got = Counter(table.scan(filter=neve_expr(f)).to_arrow().column("id").to_pylist())
        if got != want:
            wrong[name] = {"neve": sorted(got.elements()), "matching": sorted(want.elements())}
    assert not wrong, f"neve pruned matching rows ({writer}'s table): {wrong}"


def test_delete_below_zero_deletes_the_minimum(java_catalog: SqlCatalog, java_ns: str) -> None:
    """``delete("i < 0")`` removes the rows whose partition value wrapped too."""
    t = java_catalog.create_table((java_ns, "t"), SCHEMA, partition_by=["truncate(100, i)"])
    t.append(pa.Table.from_pylist(ROWS, schema=SCHEMA))
    t.refresh().delete("i < 0")
    left = sorted(
        t.refresh().scan().to_arrow().column("i").to_pylist(), key=lambda v: (v is None, v)
    )
    assert left == sorted(
        (v for v in I_VALUES if v is None or v >= 0), key=lambda v: (v is None, v)
    )
