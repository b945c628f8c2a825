"""Fit Arrow data to a table schema before writing: match columns by name, fill missing
optional columns, check required columns, and cast safely.

Only casts that cannot change a value are applied: widening (int to long, float to
double, seconds to microseconds, ``string`` to ``large_string``), and narrowing that
pyarrow checks value by value (an ``int64`` column into an ``int`` field succeeds when
every value fits, nanoseconds into microseconds when none has a sub-microsecond part).
Anything else raises :class:`DataSchemaMismatchError` naming the column and both types.
"""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa
import pyarrow.compute as pc

from neve.arrow.schema import constant_array, to_arrow_schema, to_arrow_type
from neve.errors import DataSchemaMismatchError
from neve.spec.schema import Schema
from neve.spec.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestampNsType,
    TimestampType,
    TimestamptzNsType,
    TimestamptzType,
    TimeType,
    UnknownType,
    UUIDType,
)

__all__ = ["conform_table"]


def conform_table(data: pa.Table, schema: Schema) -> pa.Table:
    """``data`` with the table's Arrow schema (``to_arrow_schema(schema)``).

    Columns are matched by name, case-sensitively. A missing optional column becomes
    its ``write_default`` or nulls; a missing required column, nulls in a required
    column, extra columns and unsafe casts raise :class:`DataSchemaMismatchError`.
    """
    names = data.column_names
    if len(set(names)) != len(names):
        dupes = sorted({n for n in names if names.count(n) > 1})
        raise DataSchemaMismatchError(
            f"the data has duplicate column names {dupes}; rename them before writing"
        )
    extra = [n for n in names if schema.struct.field_by_name(n) is None]
    if extra:
        raise DataSchemaMismatchError(
            f"the data has columns {extra} that the table does not have "
            f"(table columns: {schema.column_names}); drop them, or add them to the "
            "table with a schema update first"
        )
    target = to_arrow_schema(schema)
    n = data.num_rows
    columns = []
    for f, af in zip(schema.fields, target, strict=True):
        if f.name in names:
            col = data.column(f.name)
            chunks = [_conform(chunk, f, f.name, None) for chunk in col.chunks]
            columns.append(pa.chunked_array(chunks, type=af.type))
        else:
            columns.append(pa.chunked_array([_missing(f, f.name, n)], type=af.type))
    return pa.Table.from_arrays(columns, schema=target)


def _missing(f: NestedField, path: str, length: int) -> pa.Array:
    if f.write_default is None and f.required:
        raise DataSchemaMismatchError(
            f"required column {path!r} is missing from the data; add it, or make the "
            "column optional in the table"
        )
    return constant_array(f.write_default, f.field_type, length)


def _check_required(
    arr: pa.Array, f: NestedField, path: str, parent_valid: pa.Array | None
) -> None:
    if not f.required or arr.null_count == 0:
        return
    if parent_valid is None:
        count = arr.null_count
    else:  # nulls under a null parent struct are not the child's nulls
        count = pc.sum(pc.and_(pc.is_null(arr), parent_valid)).as_py() or 0
    if count:
        raise DataSchemaMismatchError(
            f"column {path!r} is required but has {count} null value(s); fill them, "
            "or make the column optional in the table"
        )


def _conform(arr: pa.Array, f: NestedField, path: str, parent_valid: pa.Array | None) -> pa.Array:
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    if isinstance(arr.type, pa.BaseExtensionType):
        arr = arr.storage
    _check_required(arr, f, path, parent_valid)
    t = f.field_type
    target = to_arrow_type(t)
    if pa.types.is_null(arr.type):
        return pa.nulls(len(arr), target)
    if isinstance(t, StructType):
        return _conform_struct(arr, t, target, path, parent_valid)
    if isinstance(t, ListType):
        return _conform_list(arr, t, target, path)
    if isinstance(t, MapType):
        return _conform_map(arr, t, target, path)
    accept = _ACCEPTS.get(type(t))
    if accept is None or not accept(arr.type, t):
        raise _mismatch(path, arr.type, t)
    if arr.type == target:
        return arr
    try:
        return arr.cast(target, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise DataSchemaMismatchError(
            f"column {path!r} of type {arr.type} cannot be written as {t}: {exc}; "
            "fix the values or cast the column yourself"
        ) from exc


def _mismatch(path: str, got: pa.DataType, want: IcebergType) -> DataSchemaMismatchError:
    return DataSchemaMismatchError(
        f"column {path!r} has Arrow type {got}, which cannot be written to the table's "
        f"type {want} without losing information; cast the column to "
        f"{to_arrow_type(want)} (or evolve the table schema) first"
    )


def _conform_struct(
    arr: pa.Array, t: StructType, target: pa.DataType, path: str, parent_valid: pa.Array | None
) -> pa.Array:
    if not pa.types.is_struct(arr.type):
        raise _mismatch(path, arr.type, t)
    by_name = {arr.type.field(i).name: i for i in range(arr.type.num_fields)}
    extra = [n for n in by_name if t.field_by_name(n) is None]
    if extra:
        raise DataSchemaMismatchError(
            f"struct column {path!r} has fields {extra} that the table does not have; "
            "drop them, or add them to the table with a schema update first"
        )
    valid = pc.is_valid(arr)
    if parent_valid is not None:
        valid = pc.and_(valid, parent_valid)
    children = []
    for child in t.fields:
        child_path = f"{path}.{child.name}"
        if child.name in by_name:
            children.append(_conform(arr.field(by_name[child.name]), child, child_path, valid))
        elif child.required and child.write_default is None and arr.null_count < len(arr):
            raise DataSchemaMismatchError(
                f"required field {child_path!r} is missing from the data; add it, or make "
                "the field optional in the table"
            )
        else:
            children.append(constant_array(child.write_default, child.field_type, len(arr)))
    mask = pc.is_null(arr) if arr.null_count else None
    return pa.StructArray.from_arrays(children, fields=list(target), mask=mask)


def _list_window(arr: pa.Array) -> tuple[pa.Array, int, int]:
    """Offsets rebased to 0, and the start and length of the child values in use."""
    offsets = arr.offsets.cast(pa.int64())
    start = offsets[0].as_py()
    end = offsets[len(offsets) - 1].as_py()
    return pc.subtract(offsets, start), start, end - start


def _conform_list(arr: pa.Array, t: ListType, target: pa.DataType, path: str) -> pa.Array:
    if (
        pa.types.is_fixed_size_list(arr.type)
        or pa.types.is_list_view(arr.type)
        or (pa.types.is_large_list_view(arr.type))
    ):
        arr = arr.cast(pa.large_list(arr.type.value_field))
    if not (pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type)):
        raise _mismatch(path, arr.type, t)
    offsets, start, length = _list_window(arr)
    values = _conform(arr.values.slice(start, length), t.element_field, f"{path}.element", None)
    mask = pc.is_null(arr) if arr.null_count else None
    return pa.LargeListArray.from_arrays(offsets, values, type=target, mask=mask)


def _conform_map(arr: pa.Array, t: MapType, target: pa.DataType, path: str) -> pa.Array:
    if not pa.types.is_map(arr.type):
        raise _mismatch(path, arr.type, t)
    offsets, start, length = _list_window(arr)
    keys = _conform(arr.keys.slice(start, length), t.key_field, f"{path}.key", None)
    items = _conform(arr.items.slice(start, length), t.value_field, f"{path}.value", None)
    mask = pc.is_null(arr) if arr.null_count else None
    return pa.MapArray.from_arrays(offsets.cast(pa.int32()), keys, items, type=target, mask=mask)


# -- which Arrow types may be written to which Iceberg type -------------------------------

Accept = Callable[[pa.DataType, IcebergType], bool]
_T = pa.types


def _integer(a: pa.DataType, _t: IcebergType) -> bool:
    return bool(_T.is_integer(a))


def _decimal(a: pa.DataType, _t: IcebergType) -> bool:
    return bool(_T.is_decimal(a))


def _timestamp(with_tz: bool) -> Accept:
    def accept(a: pa.DataType, _t: IcebergType) -> bool:
        return bool(_T.is_timestamp(a)) and (a.tz is not None) == with_tz

    return accept


def _fixed(a: pa.DataType, t: IcebergType) -> bool:
    if _T.is_fixed_size_binary(a):
        return isinstance(t, (FixedType, UUIDType)) and a.byte_width == (
            t.length if isinstance(t, FixedType) else 16
        )
    return bool(_T.is_binary(a) or _T.is_large_binary(a) or _T.is_binary_view(a))


_ACCEPTS: dict[type, Accept] = {
    BooleanType: lambda a, _t: bool(_T.is_boolean(a)),
    IntegerType: _integer,
    LongType: _integer,
    FloatType: lambda a, _t: bool(_T.is_float16(a) or _T.is_float32(a)),
    DoubleType: lambda a, _t: bool(_T.is_floating(a)),
    DecimalType: _decimal,
    DateType: lambda a, _t: bool(_T.is_date(a)),
    TimeType: lambda a, _t: bool(_T.is_time(a)),
    TimestampType: _timestamp(False),
    TimestampNsType: _timestamp(False),
    TimestamptzType: _timestamp(True),
    TimestamptzNsType: _timestamp(True),
    StringType: lambda a, _t: bool(
        _T.is_string(a) or _T.is_large_string(a) or _T.is_string_view(a)
    ),
    BinaryType: lambda a, _t: bool(
        _T.is_binary(a)
        or _T.is_large_binary(a)
        or _T.is_binary_view(a)
        or _T.is_fixed_size_binary(a)
    ),
    FixedType: _fixed,
    UUIDType: _fixed,
    UnknownType: lambda a, _t: bool(_T.is_null(a)),
}
