"""The identity transform."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from neve.spec.transforms.base import Transform, Transformer
from neve.spec.types import (
    IcebergType,
    PrimitiveType,
    VariantType,
)

__all__ = ["IdentityTransform", "identity_value"]


@dataclass(frozen=True)
class IdentityTransform(Transform):
    """The source value, unmodified."""

    def __str__(self) -> str:
        return "identity"

    def can_transform(self, source: IcebergType) -> bool:
        return isinstance(source, PrimitiveType) and not isinstance(source, VariantType)

    def _make_transformer(self, source: IcebergType) -> Transformer:
        return identity_value

    @property
    def preserves_order(self) -> bool:
        return True

    def satisfies_order_of(self, other: Transform) -> bool:
        # Ordering by the value orders by anything that preserves order.
        return other.preserves_order


def identity_value(value: Any) -> Any:
    return value
