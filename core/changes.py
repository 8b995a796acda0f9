"""PATCH semantics for typed verb inputs: ``UNSET`` marks a field that was not sent (``None`` is a
sent null). The CRM's and the members area's typed inputs both use it."""

from __future__ import annotations

import enum
from typing import Final, Literal, TypeAlias, TypeGuard, TypeVar

T = TypeVar("T")


class _Unset(enum.Enum):
    UNSET = "UNSET"

    def __repr__(self) -> str:
        return "UNSET"


UNSET: Final = _Unset.UNSET
Unset: TypeAlias = Literal[_Unset.UNSET]


def sent(value: T | Unset) -> TypeGuard[T]:
    """The field was sent (null included)."""
    return value is not UNSET


def given(value: T | Unset | None) -> TypeGuard[T]:
    """The field was sent with a value that is not null."""
    return value is not UNSET and value is not None
