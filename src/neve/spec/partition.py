"""Partition specs (spec "Partitioning"): fields that derive partition values from
source columns through transforms. Partition field ids start at 1000 and are unique
across all specs of a table."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from neve.errors import SchemaError
from neve.spec.schema import Schema
from neve.spec.transforms import Transform, VoidTransform
from neve.spec.types import NestedField, StructType

__all__ = ["PARTITION_DATA_ID_START", "UNPARTITIONED", "PartitionField", "PartitionSpec"]

PARTITION_DATA_ID_START = 1000


@dataclass(frozen=True)
class PartitionField:
    source_id: int
    field_id: int
    transform: Transform
    name: str

    def __str__(self) -> str:
        return f"{self.field_id}: {self.name}: {self.transform}({self.source_id})"


@dataclass(frozen=True)
class PartitionSpec:
    spec_id: int = 0
    fields: tuple[PartitionField, ...] = ()

    @property
    def is_unpartitioned(self) -> bool:
        return all(isinstance(f.transform, VoidTransform) for f in self.fields)

    @property
    def last_assigned_field_id(self) -> int:
        return max((f.field_id for f in self.fields), default=PARTITION_DATA_ID_START - 1)

    def partition_type(self, schema: Schema) -> StructType:
        """The struct type of partition tuples (all fields optional). A source column
        that is no longer in the schema gives the transform's result for an unknown
        type, which only void and identity-of-dropped can produce; we keep strings."""
        out = []
        for f in self.fields:
            src = schema.find_field_or_none(f.source_id)
            if src is None:
                raise SchemaError(
                    f"partition field {f.name!r} refers to column id {f.source_id}, "
                    f"which is not in schema {schema.schema_id}"
                )
            out.append(
                NestedField(f.field_id, f.name, f.transform.result_type(src.field_type), False)
            )
        return StructType(*out)

    def compatible_with(self, other: PartitionSpec) -> bool:
        """Same fields (ignoring spec id)."""
        return self.fields == other.fields

    @cached_property
    def source_ids(self) -> frozenset[int]:
        return frozenset(f.source_id for f in self.fields)

    def __str__(self) -> str:
        return "[" + ", ".join(str(f) for f in self.fields) + "]"


UNPARTITIONED = PartitionSpec(0, ())
