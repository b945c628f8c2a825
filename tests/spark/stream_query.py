"""The streaming query of the streaming copy test, run in a process of its own so the
test can kill it (tests/spark/test_streaming_copy.py): the source's changelog, with a
consumer id, upserted into the copy through the neve sink, until killed.

    python stream_query.py <catalog uri> <warehouse> <checkpoint>
"""

from __future__ import annotations

import sys

from neve.spark import local_session
from neve.spark.datasource import register_datasource


def main(uri: str, warehouse: str, checkpoint: str) -> None:
    spark = local_session(
        "local[2]",
        "neve-stream-query",
        conf={"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "4"},
    )
    spark.sparkContext.setLogLevel("ERROR")
    register_datasource(spark)
    options = {"uri": uri, "warehouse": warehouse}
    changes = (
        spark.readStream.format("neve")
        .options(**options)
        .option("mode", "changelog")
        .option("consumer-id", "copier")
        .option("max-files-per-trigger", "6")
        .load("db.src")
    )
    query = (
        changes.writeStream.format("neve")
        .options(**options)
        .option("upsert", "true")
        .option("checkpointLocation", checkpoint)
        .trigger(processingTime="1 second")
        .start("db.copy")
    )
    print("started", flush=True)
    query.awaitTermination()


if __name__ == "__main__":
    main(*sys.argv[1:4])
