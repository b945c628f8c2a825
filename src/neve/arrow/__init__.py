"""The pyarrow data path: Arrow schemas with Iceberg field ids, the Parquet writer with
column metrics, partition splitting, the reader with schema evolution, and deletes."""

__all__: list[str] = []
