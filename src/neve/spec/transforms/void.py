"""The void transform, and transforms neve does not know (kept so the table stays readable)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from neve.errors import ValidationError
from neve.spec.transforms.base import Transform, Transformer
from neve.spec.types import (
    STRING,
    IcebergType,
)

__all__ = ["UnknownTransform", "VoidTransform"]


@dataclass(frozen=True)
class VoidTransform(Transform):
    """Always null: keeps a dropped partition field in place (v1 tables)."""

    def __str__(self) -> str:
        return "void"

    def can_transform(self, source: IcebergType) -> bool:
        return True

    def _make_transformer(self, source: IcebergType) -> Transformer:
        return _void

    def to_human_string(self, result_type: IcebergType, value: Any) -> str:
        return "null"


def _void(value: Any) -> None:
    return None


@dataclass(frozen=True)
class UnknownTransform(Transform):
    """A transform neve does not know, kept so such tables can still be read."""

    text: str

    def __str__(self) -> str:
        return self.text

    def can_transform(self, source: IcebergType) -> bool:
        return True

    def result_type(self, source: IcebergType) -> IcebergType:
        return STRING  # the real result type is not known (as Iceberg-Java)

    def _make_transformer(self, source: IcebergType) -> Transformer:
        raise ValidationError(
            f"cannot apply unknown transform {self.text!r}; neve can read this table "
            "but cannot write data to a partition spec that uses it"
        )

    def apply(self, source: IcebergType, value: Any) -> Any:
        return self.transformer(source)(value)
