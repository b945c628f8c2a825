from __future__ import annotations

import pickle

from neve.expressions import ALWAYS_FALSE, ALWAYS_TRUE, ResidualEvaluator, bind, parse
from neve.spec.partition import UNPARTITIONED, PartitionField, PartitionSpec
from neve.spec.schema import Schema
from neve.spec.temporal import parse_iso_date
from neve.spec.transforms import BucketTransform, DayTransform, IdentityTransform
from neve.spec.types import LONG, STRING, TIMESTAMP, NestedField

SCHEMA = Schema(
    NestedField(1, "id", LONG),
    NestedField(2, "ts", TIMESTAMP),
    NestedField(3, "cat", STRING),
)
SPEC = PartitionSpec(
    1,
    (
        PartitionField(2, 1000, DayTransform(), "ts_day"),
        PartitionField(3, 1001, IdentityTransform(), "cat"),
    ),
)


def day(text: str) -> int:
    return parse_iso_date(text)


def residual(text: str, partition: tuple[object, ...], spec: PartitionSpec = SPEC) -> str:
    return str(ResidualEvaluator(spec, SCHEMA, parse(text)).residual_for(partition))


def test_predicates_decided_by_the_partition_disappear() -> None:
    f = "ts > '2024-01-02T10:00:00' AND id = 5"
    assert residual(f, (day("2024-01-03"), "a")) == "id = 5"
    assert residual(f, (day("2024-01-02"), "a")) == "ts > '2024-01-02T10:00:00.000000' AND id = 5"
    assert residual(f, (day("2024-01-01"), "a")) == "false"
    assert residual(f, (None, "a")) == "false"


def test_identity_partitions_decide_completely() -> None:
    assert residual("cat = 'a'", (0, "a")) == "true"
    assert residual("cat = 'a'", (0, "b")) == "false"
    assert residual("cat IN ('a', 'b') OR id = 1", (0, "c")) == "id = 1"
    assert residual("cat IN ('a', 'b') OR id = 1", (0, "b")) == "true"
    assert residual("cat IS NULL", (0, None)) == "true"
    assert residual("cat != 'a'", (0, None)) == "true"  # null satisfies not_eq
    assert residual("cat < 'z'", (0, None)) == "false"


def test_not_is_pushed_down_before_evaluation() -> None:
    assert residual("NOT (cat = 'a' AND id = 1)", (0, "a")) == "id != 1"
    assert residual("NOT (cat = 'a' AND id = 1)", (0, "b")) == "true"
    # null partition: cat >= 'm' (the pushed-down NOT) is false, so is the residual.
    assert residual("NOT cat < 'm'", (0, None)) == "false"


def test_bucket_decides_only_what_it_can() -> None:
    spec = PartitionSpec(2, (PartitionField(1, 1000, BucketTransform(4), "b"),))
    b = BucketTransform(4).apply(LONG, 17)
    other = (b + 1) % 4
    assert residual("id = 17", (b,), spec) == "id = 17"
    assert residual("id = 17", (other,), spec) == "false"
    assert residual("id != 17", (other,), spec) == "true"
    assert residual("id < 17", (other,), spec) == "id < 17"


def test_unpartitioned_keeps_the_whole_filter() -> None:
    ev = ResidualEvaluator(UNPARTITIONED, SCHEMA, parse("id = 1 OR NOT cat = 'x'"))
    assert ev.residual_for(()) == bind(SCHEMA, parse("id = 1 OR cat != 'x'"))


def test_residuals_are_bound_constants_or_filters_and_pickle() -> None:
    ev = ResidualEvaluator(SPEC, SCHEMA, parse("ts >= '2024-01-02T00:00:00' AND id < 3"))
    r = ev.residual_for((day("2024-01-01"), "a"))
    assert r is ALWAYS_FALSE
    assert ev.residual_for((day("2024-01-05"), "a")).is_bound
    assert ResidualEvaluator(SPEC, SCHEMA, parse("cat = 'a'")).residual_for((1, "a")) is ALWAYS_TRUE
    again = pickle.loads(pickle.dumps(ev))
    assert again.residual_for((day("2024-01-05"), "a")) == ev.residual_for((day("2024-01-05"), "a"))
    assert pickle.loads(pickle.dumps(ev.residual_for((day("2024-01-02"), "a")))) == ev.residual_for(
        (day("2024-01-02"), "a")
    )
