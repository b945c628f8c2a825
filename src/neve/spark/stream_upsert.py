"""Upserting a stream's micro-batches with Spark jobs: a ``foreachBatch`` function.

The ``neve`` sink (``writeStream.format("neve").option("upsert", "true")``) merges each
micro-batch on the driver: a Python stream writer commits in a worker process that has
no SparkSession. A ``foreachBatch`` function runs on the driver with the batch's own
session, so each micro-batch is upserted by the Spark engine (the key join on the
executors, one commit on the driver), with the sink's guarantees: one snapshot per
micro-batch, its summary carrying the query and batch ids under Iceberg-Java's keys,
and a batch whose id is not above the last one committed for the query on the branch
skipped as a replay (exactly once per micro-batch). Rows of a changelog
(``_change_type``) become the row kinds of the table's ``rowkind.field``, in the order
the changes happened.

    query = (changes.writeStream
             .foreachBatch(neve.spark.upsert_batches("db.orders", query_id="orders-copy",
                                                     catalog="prod"))
             .option("checkpointLocation", "/chk/orders-copy")
             .start())
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from neve.catalog.connect import connect
from neve.errors import ValidationError
from neve.planning.changelog import CHANGE_ORDINAL, CHANGE_TYPE, COMMIT_SNAPSHOT_ID, ChangeType
from neve.spark.engine import SparkEngine
from neve.spark.streaming import BATCH_ID_PROPERTY, QUERY_ID_PROPERTY, last_committed_batch
from neve.spec.refs import MAIN_BRANCH
from neve.table.transaction import Transaction

__all__ = ["changelog_rows", "upsert_batches"]

_KINDS = {
    ChangeType.INSERT.value: "+I",
    ChangeType.UPDATE_AFTER.value: "+U",
    ChangeType.UPDATE_BEFORE.value: "-U",
    ChangeType.DELETE.value: "-D",
}


def changelog_rows(rows: DataFrame, row_kind_field: str | None) -> DataFrame:
    """A micro-batch ready for an upsert: rows of a changelog (``_change_type``) sorted
    in the order the changes happened (ordinal, then what a change removes before what
    it adds), the change type as the table's row kind column, the change columns
    dropped; other rows as they are."""
    if CHANGE_TYPE not in rows.columns:
        return rows
    if not row_kind_field:
        raise ValidationError(
            "upserting a changelog (rows with _change_type) needs the target table's "
            "row kind column: set its property rowkind.field (e.g. set_properties("
            '{"rowkind.field": "_row_kind"})) so deletes and updates apply '
            "(docs/MERGE-ENGINES.md); or drop _change_type to upsert every row"
        )
    kind = F.col(CHANGE_TYPE)
    mapped = F.lit(None).cast("string")
    for change, row_kind in _KINDS.items():
        mapped = F.when(kind == change, F.lit(row_kind)).otherwise(mapped)
    removes_first = F.when(kind.isin("DELETE", "UPDATE_BEFORE"), 0).otherwise(1)
    ordinal = F.col(CHANGE_ORDINAL) if CHANGE_ORDINAL in rows.columns else F.lit(0)
    ordered = rows.withColumn(row_kind_field, mapped).orderBy(ordinal, removes_first)
    bad = ordered.where(F.col(row_kind_field).isNull()).select(kind).distinct().limit(5)
    unknown = [r[0] for r in bad.collect()]
    if unknown:
        raise ValidationError(
            f"_change_type values {unknown} are not INSERT, DELETE, UPDATE_BEFORE or UPDATE_AFTER"
        )
    return ordered.drop(*[c for c in (CHANGE_TYPE, CHANGE_ORDINAL, COMMIT_SNAPSHOT_ID)])


def upsert_batches(
    table: str,
    *,
    query_id: str,
    catalog: str | None = None,
    warehouse: str | None = None,
    branch: str = MAIN_BRANCH,
    properties: Mapping[str, str] | None = None,
) -> Callable[[DataFrame, int], None]:
    """A ``foreachBatch`` function upserting each micro-batch into ``table`` (a name in
    ``catalog``: a configured catalog name or a URI with its ``warehouse`` and catalog
    ``properties``, as :func:`neve.connect` takes them) with the Spark engine, exactly
    once per batch for ``query_id`` (a stable id of the query: it survives restarts
    from the checkpoint)."""
    if not query_id:
        raise ValidationError("upsert_batches needs query_id=<a stable id of the query>")

    def upsert(batch: DataFrame, batch_id: int) -> None:
        cat = connect(catalog, warehouse, **(properties or {}))
        target = cat.load_table(table)
        last = last_committed_batch(target.metadata, branch, query_id)
        if last is not None and batch_id <= last:
            return  # a replay of a batch already committed
        rows = changelog_rows(batch, target.properties.get("rowkind.field"))
        props = {QUERY_ID_PROPERTY: query_id, BATCH_ID_PROPERTY: str(batch_id)}
        txn = Transaction(target, SparkEngine(batch.sparkSession), autocommit=True)
        txn.upsert(rows, branch=branch, snapshot_properties=props)

    return upsert
