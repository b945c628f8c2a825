"""Spark partition transforms equal neve.spec.transforms value for value."""

from __future__ import annotations

import random
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from neve.spark.transforms import decode_partition_key, partition_key, transform_column
from neve.spec.transforms import (
    BucketTransform,
    DayTransform,
    HourTransform,
    IdentityTransform,
    MonthTransform,
    Transform,
    TruncateTransform,
    VoidTransform,
    YearTransform,
)
from neve.spec.types import (
    BINARY,
    BOOLEAN,
    DATE,
    DOUBLE,
    FLOAT,
    INT,
    LONG,
    STRING,
    TIMESTAMP,
    TIMESTAMPTZ,
    DecimalType,
    IcebergType,
)
from neve.spec.values import unscaled_to_decimal

pytestmark = pytest.mark.spark

RNG = random.Random(20240601)
N = 300
MICROS_MIN = -62135596800_000_000  # 0001-01-01
MICROS_MAX = 253402300799_999_999  # 9999-12-31T23:59:59.999999


def _ints(lo: int, hi: int, edges: list[int]) -> list[Any]:
    vals: list[Any] = [*edges, None]
    vals += [RNG.randint(lo, hi) for _ in range(N)]
    vals += [RNG.randint(-1000, 1000) for _ in range(N // 3)]
    return vals


def _strings() -> list[Any]:
    alphabet = "ab/=% +\\é中😀\x00\U0010fffd-_.:"
    vals: list[Any] = ["", "a", "é", "😀😀😀", "ab/=c d", None]
    for _ in range(N):
        vals.append("".join(RNG.choice(alphabet) for _ in range(RNG.randint(0, 9))))
    return vals


def _binaries() -> list[Any]:
    vals: list[Any] = [b"", b"\x00", b"\xff" * 5, None]
    vals += [RNG.randbytes(RNG.randint(0, 12)) for _ in range(N)]
    return vals


DEC = DecimalType(12, 3)
DEC38 = DecimalType(38, 10)
# the lowest values that truncate[50] and truncate[7] keep within their type (below it,
# test_truncate_below_a_decimals_minimum_is_refused)
DEC_LOW = max(-((10**12 - 1) // w) * w for w in (50, 7))
DEC38_LOW = max(-((10**38 - 1) // w) * w for w in (50, 7))
INT_EDGES = [0, 1, -1, 2**31 - 1, -(2**31), -(2**31) + 3, 2**31 - 2]
LONG_EDGES = [0, -1, 2**63 - 1, -(2**63), -(2**63) + 5, 2**63 - 3]
DAY_EDGES = [0, -1, 1, -719162, 2932896, -365, -366, 59, 58]
TS_EDGES = [0, -1, 1, MICROS_MIN, MICROS_MAX, -86_400_000_000, -3_600_000_000 - 1]

COLUMNS: dict[str, tuple[IcebergType, pa.DataType, list[Any]]] = {
    "i": (INT, pa.int32(), _ints(-(2**31), 2**31 - 1, INT_EDGES)),
    "l": (LONG, pa.int64(), _ints(-(2**63), 2**63 - 1, LONG_EDGES)),
    "d": (DATE, pa.date32(), _ints(-719162, 2932896, DAY_EDGES)),
    "ts": (TIMESTAMP, pa.timestamp("us"), _ints(MICROS_MIN, MICROS_MAX, TS_EDGES)),
    "tz": (TIMESTAMPTZ, pa.timestamp("us", tz="UTC"), _ints(MICROS_MIN, MICROS_MAX, TS_EDGES)),
    "s": (STRING, pa.string(), _strings()),
    "b": (BINARY, pa.binary(), _binaries()),
    "dec": (
        DEC,
        pa.decimal128(12, 3),
        [
            Decimal("0"),
            Decimal("-0.001"),
            Decimal("999999999.999"),
            unscaled_to_decimal(DEC_LOW, 3),
            None,
        ]
        + [Decimal(RNG.randint(-(10**12) + 1, 10**12 - 1)).scaleb(-3) for _ in range(N)],
    ),
    # beyond 28 digits (Python's default decimal context) and at the scale Spark's
    # decimal arithmetic would round away: truncate of 1.7E-9 by 5 is 1.5E-9
    "dec38": (
        DEC38,
        pa.decimal128(38, 10),
        [
            unscaled_to_decimal(u, 10)
            for u in [0, 17, -17, 10**38 - 1, DEC38_LOW, DEC38_LOW + 1, 10**28 + 3]
            + [RNG.randint(-(10**38) + 1, 10**38 - 1) for _ in range(N)]
            + [RNG.randint(-(10**12), 10**12) for _ in range(N // 3)]
        ]
        + [None],
    ),
}

TRANSFORMS: dict[str, list[Transform]] = {
    "i": [
        IdentityTransform(),
        BucketTransform(16),
        BucketTransform(7),
        TruncateTransform(10),
        TruncateTransform(2**31 - 1),
        TruncateTransform(3),
        VoidTransform(),
    ],
    "l": [
        IdentityTransform(),
        BucketTransform(16),
        TruncateTransform(10),
        TruncateTransform(1000),
        TruncateTransform(2**31 - 1),
    ],
    "d": [YearTransform(), MonthTransform(), DayTransform(), BucketTransform(10)],
    "ts": [YearTransform(), MonthTransform(), DayTransform(), HourTransform(), BucketTransform(9)],
    "tz": [YearTransform(), MonthTransform(), DayTransform(), HourTransform(), BucketTransform(9)],
    "s": [IdentityTransform(), BucketTransform(16), TruncateTransform(1), TruncateTransform(3)],
    "b": [IdentityTransform(), BucketTransform(5), TruncateTransform(2)],
    "dec": [
        IdentityTransform(),
        BucketTransform(11),
        TruncateTransform(50),
        TruncateTransform(7),
        VoidTransform(),
    ],
    "dec38": [
        IdentityTransform(),
        BucketTransform(11),
        TruncateTransform(50),
        TruncateTransform(7),
    ],
}


def _column_values(name: str) -> tuple[IcebergType, pa.Array]:
    t, arrow_type, values = COLUMNS[name]
    return t, pa.array(values, arrow_type)


@pytest.mark.parametrize("name", sorted(COLUMNS))
def test_transform_columns_equal_spec_transforms(spark: SparkSession, name: str) -> None:
    t, arr = _column_values(name)
    source_values = COLUMNS[name][2]
    df = spark.createDataFrame(pa.table({"v": arr}))
    transforms = TRANSFORMS[name]
    cols = [transform_column(tr, t, F.col("v")).alias(f"r{i}") for i, tr in enumerate(transforms)]
    keys = [partition_key(tr, t, F.col("v")).alias(f"k{i}") for i, tr in enumerate(transforms)]
    out = df.select(F.col("v"), *cols, *keys).toArrow()
    got_source = out.column("v").to_pylist()
    for i, tr in enumerate(transforms):
        result_type = tr.result_type(t)
        got = out.column(f"r{i}").to_pylist()
        key_texts = [
            "__HIVE_DEFAULT_PARTITION__" if k is None else str(k)
            for k in out.column(f"k{i}").to_pylist()
        ]
        for src, value, key, raw in zip(got_source, got, key_texts, source_values, strict=True):
            expected = tr.apply(t, raw)
            if isinstance(tr, IdentityTransform):
                assert value == src  # Spark hands back the very source value
            else:
                assert value == expected, (tr, raw, value, expected)
            assert decode_partition_key(result_type, key) == expected, (tr, raw, key)


def test_keys_of_special_strings_are_directory_safe(spark: SparkSession) -> None:
    values = ["", "a/b", "x=y", "sp ace", "中文", "%41", None, "__HIVE_DEFAULT_PARTITION__"]
    df = spark.createDataFrame(pa.table({"v": pa.array(values, pa.string())}))
    keys = [
        r[0] for r in df.select(partition_key(IdentityTransform(), STRING, F.col("v"))).collect()
    ]
    for v, k in zip(values, keys, strict=True):
        if v is None:
            assert k is None
            continue
        assert k[0] == "x" and all(c in "0123456789ABCDEF" for c in k[1:])
        assert decode_partition_key(STRING, k) == v


@pytest.mark.parametrize(
    ("t", "arrow_type", "values"),
    [
        (BOOLEAN, pa.bool_(), [True, False, None]),
        (DOUBLE, pa.float64(), [0.0, -0.0, 1.5e300, -2.5e-300, float("inf"), None, 0.1]),
        (FLOAT, pa.float32(), [0.1, -3.4e38, 1e-45, None]),
    ],
)
def test_identity_keys_of_other_types_round_trip(
    spark: SparkSession, t: IcebergType, arrow_type: pa.DataType, values: list[Any]
) -> None:
    arr = pa.array(values, arrow_type)
    df = spark.createDataFrame(pa.table({"v": arr}))
    keys = [r[0] for r in df.select(partition_key(IdentityTransform(), t, F.col("v"))).collect()]
    for v, k in zip(arr.to_pylist(), keys, strict=True):
        got = decode_partition_key(t, "__HIVE_DEFAULT_PARTITION__" if k is None else k)
        assert got == v
        if isinstance(v, float):
            assert str(got) == str(v)  # -0.0 stays -0.0


def test_hour_of_far_timestamps_wraps_like_iceberg_java(spark: SparkSession) -> None:
    """Beyond 2**31 hours from 1970 Iceberg-Java's int cast wraps the hour; Spark's
    ANSI cast would fail instead, so neve wraps as Java does."""
    hour = 3_600_000_000
    values = [2**63 - 1, -(2**63) + 1, 2**31 * hour, 2**31 * hour - 1, -(2**31) * hour - 1, 0]
    df = spark.createDataFrame([(v,) for v in values], "v long")
    out = df.select(
        transform_column(HourTransform(), TIMESTAMPTZ, F.timestamp_micros("v")).alias("h")
    ).collect()
    assert [r.h for r in out] == [HourTransform().apply(TIMESTAMPTZ, v) for v in values]
    assert out[0].h == -1732919508


@pytest.mark.parametrize(("precision", "scale"), [(3, 2), (20, 10), (37, 0), (38, 10)])
def test_truncate_below_a_decimals_minimum_is_refused(
    spark: SparkSession, precision: int, scale: int
) -> None:
    """truncate[5] of the type's smallest value rounds below it: refused by the Spark
    job with the same ValidationError the pyarrow engine raises; the lowest value
    that stays in range is kept, exactly."""
    t = DecimalType(precision, scale)
    tr = TruncateTransform(5)
    smallest = -(10**precision - 1)
    lowest = -((10**precision - 1) // 5) * 5
    kept = [unscaled_to_decimal(lowest, scale), unscaled_to_decimal(lowest + 1, scale)]
    df = spark.createDataFrame(pa.table({"v": pa.array(kept, pa.decimal128(precision, scale))}))
    got = [r[0] for r in df.select(transform_column(tr, t, F.col("v"))).collect()]
    assert got == [tr.apply(t, v) for v in kept] == [kept[0], kept[0]]
    bad = pa.array([unscaled_to_decimal(smallest, scale)], pa.decimal128(precision, scale))
    df = spark.createDataFrame(pa.table({"v": bad}))
    with pytest.raises(Exception, match="NEVE_INVALID_VALUE: truncate\\[5\\] rounds a value below"):
        df.select(transform_column(tr, t, F.col("v"))).collect()
