"""PATCH semantics for typed verb inputs: ``UNSET`` marks a field that was not sent (``None`` is a
sent null). The CRM's and the members area's typed inputs both use it."""

from __future__ import annotations

import enum
from types import UnionType
from typing import Any, Final, Literal, TypeAlias, TypeGuard, TypeVar, Union, get_args, get_origin

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


def without_unset(hint: Any) -> Any:
    """``X | Unset | None`` -> ``X | None``: what a sent value must be (the typed drafts' field rules)."""
    if get_origin(hint) not in (Union, UnionType):
        return hint
    kept = tuple(arm for arm in get_args(hint) if arm != Unset)
    return kept[0] if len(kept) == 1 else Union[kept]  # noqa: UP007 (arms are only known at run time)
