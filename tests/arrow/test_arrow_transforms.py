"""Vectorized transforms give exactly what the per-value transforms give."""

from __future__ import annotations

import uuid
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neve.arrow.transforms import result_arrow_type, transform_array
from neve.errors import ValidationError
from neve.spec.transforms import (
    BucketTransform,
    DayTransform,
    HourTransform,
    IdentityTransform,
    MonthTransform,
    Transform,
    TruncateTransform,
    UnknownTransform,
    VoidTransform,
    YearTransform,
)
from neve.spec.types import (
    BINARY,
    DATE,
    DOUBLE,
    INT,
    LONG,
    STRING,
    TIME,
    TIMESTAMP,
    TIMESTAMP_NS,
    TIMESTAMPTZ,
    TIMESTAMPTZ_NS,
    UUID,
    DecimalType,
    FixedType,
    IcebergType,
)
from neve.spec.values import decimal_to_unscaled, unscaled_to_decimal

INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)
# Dates and timestamps within what Arrow's calendar functions and int32 results cover.
DAYS = st.integers(-1_000_000, 1_000_000)
MICROS = st.integers(-(2**53), 2**53)


def decimals(p: int, s: int) -> st.SearchStrategy[Decimal]:
    limit = 10**p - 1
    return st.integers(-limit, limit).map(lambda u: unscaled_to_decimal(u, s))


def make_array(arrow_type: pa.DataType, values: list[Any]) -> pa.Array:
    """An Arrow array of neve-represented values (temporal ones from their integers)."""
    if pa.types.is_date32(arrow_type):
        return pa.array(values, pa.int32()).view(arrow_type)
    if pa.types.is_timestamp(arrow_type) or pa.types.is_time64(arrow_type):
        return pa.array(values, pa.int64()).view(arrow_type)
    return pa.array([v.bytes if isinstance(v, uuid.UUID) else v for v in values], arrow_type)


def actual_values(result: pa.Array) -> list[Any]:
    """Result values in neve's representation (dates as day numbers)."""
    if pa.types.is_date32(result.type):
        return list(result.view(pa.int32()).to_pylist())
    return list(result.to_pylist())


def check(
    transform: Transform, source: IcebergType, arrow_type: pa.DataType, values: list[Any]
) -> None:
    arr = make_array(arrow_type, values)
    if isinstance(source, DecimalType) and isinstance(transform, TruncateTransform):
        smallest = -(10**source.precision - 1)
        applied = [transform.apply(source, v) for v in values if v is not None]
        if any(decimal_to_unscaled(v, source.scale) < smallest for v in applied):
            # truncating next to the type's minimum leaves its precision: Arrow refuses
            with pytest.raises(ValidationError, match="smallest"):
                transform_array(transform, source, arr)
            return
    result = transform_array(transform, source, arr)
    assert result.type == result_arrow_type(transform, arrow_type)
    if isinstance(transform, IdentityTransform):
        assert result.equals(arr)
        return
    expected = [transform.apply(source, v) for v in values]
    assert actual_values(result) == expected
    if len(values) > 2:  # the same through a sliced array and a chunked array
        sliced = arr.slice(1)
        chunked = pa.chunked_array([sliced.slice(0, 1), sliced.slice(1)])
        assert actual_values(transform_array(transform, source, sliced)) == expected[1:]
        assert actual_values(transform_array(transform, source, chunked)) == expected[1:]


NUMS = st.integers(1, 1000)

CASES: list[tuple[IcebergType, pa.DataType, st.SearchStrategy[Any]]] = [
    (INT, pa.int32(), INT32),
    (LONG, pa.int64(), INT64),
    (DATE, pa.date32(), DAYS),
    (TIME, pa.time64("us"), st.integers(0, 86_400_000_000 - 1)),
    (TIMESTAMP, pa.timestamp("us"), MICROS),
    (TIMESTAMPTZ, pa.timestamp("us", tz="UTC"), MICROS),
    (TIMESTAMP_NS, pa.timestamp("ns"), INT64),
    (TIMESTAMPTZ_NS, pa.timestamp("ns", tz="UTC"), INT64),
    (STRING, pa.string(), st.text()),
    (STRING, pa.large_string(), st.text()),
    (BINARY, pa.binary(), st.binary()),
    (BINARY, pa.large_binary(), st.binary()),
    (FixedType(3), pa.binary(3), st.binary(min_size=3, max_size=3)),
    (UUID, pa.binary(16), st.uuids()),
    (DecimalType(9, 2), pa.decimal128(9, 2), decimals(9, 2)),
    (DecimalType(18, 0), pa.decimal128(18, 0), decimals(18, 0)),
    (DecimalType(38, 10), pa.decimal128(38, 10), decimals(38, 10)),
]


def _id(case: tuple[IcebergType, pa.DataType, Any]) -> str:
    return f"{case[0]}-{case[1]}"


@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
@settings(max_examples=40)
@given(data=st.data(), n=NUMS)
def test_bucket_matches_scalar(
    case: tuple[IcebergType, pa.DataType, st.SearchStrategy[Any]], data: st.DataObject, n: int
) -> None:
    source, arrow_type, strategy = case
    values = data.draw(st.lists(st.none() | strategy, max_size=30))
    check(BucketTransform(n), source, arrow_type, values)
    check(IdentityTransform(), source, arrow_type, values)


TRUNCATABLE = [c for c in CASES if TruncateTransform(1).can_transform(c[0])]


@pytest.mark.parametrize("case", TRUNCATABLE, ids=[_id(c) for c in TRUNCATABLE])
@settings(max_examples=40)
@given(data=st.data(), width=st.sampled_from([1, 2, 3, 10, 50, 2**30, 2**31 - 1]))
def test_truncate_matches_scalar(
    case: tuple[IcebergType, pa.DataType, st.SearchStrategy[Any]], data: st.DataObject, width: int
) -> None:
    source, arrow_type, strategy = case
    values = data.draw(st.lists(st.none() | strategy, max_size=30))
    check(TruncateTransform(width), source, arrow_type, values)


TEMPORAL = [c for c in CASES if YearTransform().can_transform(c[0])]


@pytest.mark.parametrize("case", TEMPORAL, ids=[_id(c) for c in TEMPORAL])
@settings(max_examples=40)
@given(data=st.data())
def test_time_transforms_match_scalar(
    case: tuple[IcebergType, pa.DataType, st.SearchStrategy[Any]], data: st.DataObject
) -> None:
    source, arrow_type, strategy = case
    values = data.draw(st.lists(st.none() | strategy, max_size=30))
    for t in (YearTransform(), MonthTransform(), DayTransform(), HourTransform()):
        if t.can_transform(source):
            check(t, source, arrow_type, values)


@pytest.mark.parametrize(
    ("source", "arrow_type", "value"),
    [
        (TIMESTAMP, pa.timestamp("us"), -1),
        (TIMESTAMP, pa.timestamp("us"), -3_600_000_000),
        (TIMESTAMP, pa.timestamp("us"), -3_600_000_001),
        (TIMESTAMP, pa.timestamp("us"), -86_400_000_000 * 365 - 1),
        (TIMESTAMP_NS, pa.timestamp("ns"), -1),
        (DATE, pa.date32(), -1),
        (DATE, pa.date32(), -366),
    ],
)
def test_pre_1970_values_round_down(
    source: IcebergType, arrow_type: pa.DataType, value: int
) -> None:
    for t in (YearTransform(), MonthTransform(), DayTransform(), HourTransform()):
        if t.can_transform(source):
            check(t, source, arrow_type, [value, None, value])


_FAR = [
    (DATE, pa.date32(), [-(2**31), 2**31 - 1, -100_000_001, 100_000_000, 2_932_896, -719_163]),
    (
        TIMESTAMP,
        pa.timestamp("us"),
        [-(2**63), 2**63 - 1, 2**31 * 3_600_000_000, 2**31 * 3_600_000_000 - 1, -(2**62)],
    ),
    (TIMESTAMPTZ, pa.timestamp("us", tz="UTC"), [-(2**63) + 1, 9_000_000_000_000_000_000]),
    (TIMESTAMP_NS, pa.timestamp("ns"), [-(2**63), 2**63 - 1]),
]


@pytest.mark.parametrize("case", _FAR, ids=[str(c[0]) for c in _FAR])
@settings(max_examples=30)
@given(data=st.data())
def test_time_transforms_match_scalar_over_the_whole_range(
    case: tuple[IcebergType, pa.DataType, list[int]], data: st.DataObject
) -> None:
    """Years and months of dates 5.8 million years away and timestamps 290,000 years
    away (pyarrow's calendar kernels were wrong beyond 100 million days, so neve wrote
    partition values its projections did not expect), and hours
    beyond 2**31 wrapping as Iceberg-Java's int cast does."""
    source, arrow_type, edges = case
    bits = 32 if source == DATE else 64
    whole = st.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    values = [*edges, *data.draw(st.lists(st.none() | whole, max_size=30))]
    for t in (YearTransform(), MonthTransform(), DayTransform(), HourTransform()):
        if t.can_transform(source):
            check(t, source, arrow_type, values)


def test_known_bucket_values() -> None:
    arr = pa.array([34, None, 17486], pa.int64())
    assert transform_array(BucketTransform(2**31 - 1), LONG, arr).to_pylist() == [
        2017239379,
        None,
        (-653330422) & 0x7FFFFFFF,
    ]
    strings = pa.array(["iceberg", None])
    assert transform_array(BucketTransform(2**31 - 1), STRING, strings).to_pylist() == [
        1210000089,
        None,
    ]


def test_other_arrow_units_follow_the_source_semantics() -> None:
    micros = [-1_500_000, 0, 1_510_871_468_123_456]
    seconds = [-2, 0, 1_510_871_468]
    for arrow_unit, values in (("ms", [v // 1000 for v in micros]), ("s", seconds)):
        arr = pa.array(values, pa.int64()).view(pa.timestamp(arrow_unit))
        as_micros = [v * (1000 if arrow_unit == "ms" else 1_000_000) for v in values]
        for t in (BucketTransform(7), DayTransform(), HourTransform(), MonthTransform()):
            assert actual_values(transform_array(t, TIMESTAMP, arr)) == [
                t.apply(TIMESTAMP, v) for v in as_micros
            ]
    # nanosecond data in a microsecond column: bucket hashes the floored micros
    ns = pa.array([-1, 1_999], pa.int64()).view(pa.timestamp("ns"))
    assert transform_array(BucketTransform(97), TIMESTAMP, ns).to_pylist() == [
        BucketTransform(97).apply(TIMESTAMP, -1),
        BucketTransform(97).apply(TIMESTAMP, 1),
    ]
    small = pa.array([-7, None, 12], pa.int16())
    assert transform_array(TruncateTransform(5), INT, small).to_pylist() == [-10, None, 10]
    assert transform_array(BucketTransform(16), INT, small).to_pylist() == [
        BucketTransform(16).apply(INT, -7),
        None,
        BucketTransform(16).apply(INT, 12),
    ]


def test_dictionary_arrays() -> None:
    arr = pa.array(["apple", "banana", None, "apple", "cherry"]).dictionary_encode()
    values = ["apple", "banana", None, "apple", "cherry"]
    bucketed = transform_array(BucketTransform(8), STRING, arr)
    assert bucketed.to_pylist() == [BucketTransform(8).apply(STRING, v) for v in values]
    assert transform_array(TruncateTransform(2), STRING, arr).to_pylist() == [
        None if v is None else v[:2] for v in values
    ]
    assert transform_array(IdentityTransform(), STRING, arr) is arr


def test_uuid_extension_arrays() -> None:
    values = [uuid.UUID(int=i * 7919) for i in range(5)]
    arr = pa.array([v.bytes for v in values], pa.uuid())
    assert transform_array(BucketTransform(10), UUID, arr).to_pylist() == [
        BucketTransform(10).apply(UUID, v) for v in values
    ]


def test_void_identity_and_result_types() -> None:
    arr = pa.array([1, None, 3], pa.int64())
    void = transform_array(VoidTransform(), LONG, arr)
    assert void.type == pa.null() and len(void) == 3 and void.null_count == 3
    assert transform_array(IdentityTransform(), LONG, arr) is arr
    assert (
        transform_array(DayTransform(), TIMESTAMP, pa.nulls(2, pa.timestamp("us"))).type
        == pa.date32()
    )
    assert transform_array(BucketTransform(3), STRING, pa.nulls(2)).type == pa.int32()
    assert (
        transform_array(YearTransform(), DATE, pa.chunked_array([], pa.date32())).type == pa.int32()
    )


def test_truncate_keeps_the_input_arrow_type() -> None:
    arr = pa.array(["abcdef", None], pa.large_string())
    out = transform_array(TruncateTransform(3), STRING, arr)
    assert out.type == pa.large_string() and out.to_pylist() == ["abc", None]
    dec = pa.array([Decimal("10.65"), Decimal("-10.65")], pa.decimal128(9, 2))
    out = transform_array(TruncateTransform(50), DecimalType(9, 2), dec)
    assert out.type == pa.decimal128(9, 2)
    assert out.to_pylist() == [Decimal("10.50"), Decimal("-11.00")]
    edge = pa.array([Decimal("-99.99")], pa.decimal128(4, 2))
    assert TruncateTransform(50).apply(DecimalType(4, 2), Decimal("-99.99")) == Decimal("-100.00")
    with pytest.raises(ValidationError, match="smallest"):
        transform_array(TruncateTransform(50), DecimalType(4, 2), edge)
    wide_edge = pa.array([Decimal("-" + "9" * 20)], pa.decimal128(20, 0))
    with pytest.raises(ValidationError, match="smallest"):
        transform_array(TruncateTransform(2), DecimalType(20, 0), wide_edge)


def test_forbidden_or_unknown_transforms_raise() -> None:
    with pytest.raises(ValidationError):
        transform_array(BucketTransform(4), DOUBLE, pa.array([1.0]))
    with pytest.raises(ValidationError):
        transform_array(HourTransform(), DATE, pa.array([1], pa.int32()).view(pa.date32()))
    with pytest.raises(ValidationError):
        transform_array(UnknownTransform("zorder"), LONG, pa.array([1], pa.int64()))


def test_large_arrays_match_scalar_on_a_sample() -> None:
    n = 200_000
    values = [(i * 2_654_435_761) % (2**40) - 2**39 for i in range(n)]
    arr = pa.array(values, pa.int64())
    result = transform_array(BucketTransform(1024), LONG, arr).to_pylist()
    for i in range(0, n, 997):
        assert result[i] == BucketTransform(1024).apply(LONG, values[i])
    days = transform_array(DayTransform(), TIMESTAMP, arr.view(pa.timestamp("us")))
    assert days.view(pa.int32()).to_pylist()[::997] == [v // 86_400_000_000 for v in values[::997]]


def test_decimal_bucket_at_byte_length_boundaries() -> None:
    edges = [0, 1, -1, 127, 128, -128, -129, 255, 256, 32767, 32768, -32768, -32769]
    edges += [2**23 - 1, 2**23, -(2**23) - 1, 2**31 - 1, 2**31, -(2**31) - 1, 2**39, 2**55]
    edges += [-(2**55) - 1, 10**18 - 1, -(10**18) + 1]
    values = [Decimal(v).scaleb(-3) for v in edges]
    source = DecimalType(18, 3)
    arr = pa.array(values, pa.decimal128(18, 3))
    b = BucketTransform(2**31 - 1)
    assert transform_array(b, source, arr).to_pylist() == [b.apply(source, v) for v in values]


@pytest.mark.parametrize(("precision", "scale"), [(9, 2), (18, 0), (20, 10), (38, 10)])
def test_decimal_truncate_refuses_exactly_the_values_it_rounds_below_the_type(
    precision: int, scale: int
) -> None:
    """Both sides of the edge, with 38 digits (beyond Python's default decimal
    context, which once refused the lowest value that fits)."""
    source, tr = DecimalType(precision, scale), TruncateTransform(5)
    arrow_type = pa.decimal128(precision, scale)
    lowest = -((10**precision - 1) // 5) * 5
    kept = [unscaled_to_decimal(u, scale) for u in (lowest, lowest + 1, 10**precision - 1)]
    got = transform_array(tr, source, pa.array(kept, arrow_type)).to_pylist()
    assert got == [tr.apply(source, v) for v in kept]
    below = pa.array([unscaled_to_decimal(lowest - 1, scale)], arrow_type)
    with pytest.raises(ValidationError, match=r"truncate\[5\] rounds a value below the smallest"):
        transform_array(tr, source, below)


@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
def test_empty_and_all_null_arrays(case: tuple[IcebergType, pa.DataType, Any]) -> None:
    source, arrow_type, _ = case
    transforms: list[Transform] = [
        BucketTransform(4),
        TruncateTransform(3),
        YearTransform(),
        MonthTransform(),
        DayTransform(),
        HourTransform(),
        IdentityTransform(),
        VoidTransform(),
    ]
    for t in (t for t in transforms if t.can_transform(source)):
        for arr in (pa.array([], arrow_type), pa.nulls(3, arrow_type)):
            out = transform_array(t, source, arr)
            assert out.type == result_arrow_type(t, arrow_type)
            assert len(out) == len(arr) and out.null_count == len(arr)
