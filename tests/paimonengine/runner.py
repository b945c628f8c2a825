"""Run with pypaimon's own Python (``.venv-paimon/bin/python``, see
tests/paimonengine/__init__.py): reads a job as JSON on stdin (merge engine, table
options, batches of rows of the schema ``k`` long key, ``s``, ``n`` long, ``t`` string,
``b`` boolean), writes each batch as one commit to a primary-key table in a local
filesystem catalog, and prints the table's rows as JSON."""

from __future__ import annotations

import json
import sys
import tempfile

import pyarrow as pa
from pypaimon import CatalogFactory, Schema

SCHEMA = pa.schema(
    [
        pa.field("k", pa.int64(), nullable=False),
        pa.field("s", pa.int64()),
        pa.field("n", pa.int64()),
        pa.field("t", pa.string()),
        pa.field("b", pa.bool_()),
    ]
)


def main() -> None:
    job = json.load(sys.stdin)
    where = tempfile.mkdtemp()
    catalog = CatalogFactory.create({"warehouse": where})
    catalog.create_database("db", False)
    options = {"bucket": "1", **job["options"]}
    schema = Schema.from_pyarrow_schema(SCHEMA, primary_keys=["k"], options=options)
    catalog.create_table("db.t", schema, False)
    table = catalog.get_table("db.t")
    for rows in job["batches"]:
        if not rows:
            continue
        builder = table.new_batch_write_builder()
        write, commit = builder.new_write(), builder.new_commit()
        write.write_arrow(pa.Table.from_pylist(rows, schema=SCHEMA))
        commit.commit(write.prepare_commit())
        write.close()
        commit.close()
    read = table.new_read_builder()
    out = read.new_read().to_arrow(read.new_scan().plan().splits())
    json.dump(out.to_pylist(), sys.stdout)


if __name__ == "__main__":
    main()
