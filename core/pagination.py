"""The three pagination styles of the spec, as query models and one counting helper.

- ``limit``/``offset``: the CRM area (tickets and deals default 100, tasks 20);
- ``skip``/``take``: the messaging area (conversations and members default 20);
- ``page``/``limit``: the members area's AI agent list (page from 1, limit 1-100, default 20).

Areas subclass the query model to set their own default, e.g. ``limit: int = Field(20, ge=1, le=500)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import Field
from sqlalchemy import Select, func, select

from core.db import db
from core.validation import QueryModel

T = TypeVar("T")

MAX_LIMIT = 500
MAX_TAKE = 200
MAX_PAGE_LIMIT = 100


class LimitOffsetQuery(QueryModel):
    limit: int = Field(100, ge=1, le=MAX_LIMIT)
    offset: int = Field(0, ge=0)


class SkipTakeQuery(QueryModel):
    skip: int = Field(0, ge=0)
    take: int = Field(20, ge=1, le=MAX_TAKE)


class PageLimitQuery(QueryModel):
    page: int = Field(1, ge=1)
    limit: int = Field(20, ge=1, le=MAX_PAGE_LIMIT)

    @property
    def offset(self) -> int:
        return (self.page - 1) * self.limit


@dataclass(frozen=True)
class Page(Generic[T]):
    items: list[T]
    total: int


def count_of(statement: Select[Any]) -> int:
    counted = select(func.count()).select_from(statement.order_by(None).subquery())
    return int(db.session.scalar(counted) or 0)


def paginate(statement: Select[Any], *, offset: int, limit: int, scalars: bool = True) -> Page[Any]:
    """One query for the window and one for the total, whatever the page size."""
    window = statement.offset(offset).limit(limit)
    result = db.session.execute(window)
    items = list(result.scalars()) if scalars else list(result)
    # A short page already tells the total: no count query needed.
    total = offset + len(items) if len(items) < limit and (items or offset == 0) else count_of(statement)
    return Page(items, total)
