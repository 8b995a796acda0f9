"""The three pagination styles of the spec, as query models and one counting helper.

- ``limit``/``offset``: the CRM area (tickets and deals default 100, tasks 20);
- ``skip``/``take``: the messaging area (conversations and members default 20);
- ``page``/``limit``: the members area's AI agent list (page from 1, limit 1-100, default 20).

Areas subclass the query model to set their own default, e.g. ``limit: int = Field(20, ge=1, le=500)``.
"""

from __future__ import annotations

import base64
import binascii
import json
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Generic, TypeVar

from pydantic import Field
from sqlalchemy import Select, and_, func, literal_column, select, tuple_

from core.db import db
from core.errors import ApiError
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


# Lists of an organization's whole history (conversations, messages) count at most this many rows for
# their ``total`` (Elasticsearch's ``track_total_hits`` default): below it ``total`` is exact, above it
# ``total`` is this number (or the end of the page asked for, if further) and ``total_is_exact`` is false,
# so the count costs the same at 10,000 rows as at 1,000,000. Deeper walks use a cursor.
TOTAL_COUNT_CAP = 10_000
# A filtered list (a label, a text search) probes a second index for every row it counts, several times
# the cost of a row of the plain list, so its total stops ten times earlier (GitHub's search stops at
# 1,000 results): the count then costs the same at 100,000 conversations as at 10,000 (bench growth).
FILTERED_TOTAL_COUNT_CAP = 1_000
# Sent with the value ``gte`` when ``total`` is that lower bound (Elasticsearch's ``total.relation``).
TOTAL_RELATION_HEADER = "X-Total-Relation"


@dataclass(frozen=True)
class Page(Generic[T]):
    items: list[T]
    total: int
    total_is_exact: bool = True


def count_of(statement: Select[Any]) -> int:
    counted = select(func.count()).select_from(statement.order_by(None).subquery())
    return int(db.session.scalar(counted) or 0)


def capped_count_of(statement: Select[Any], cap: int) -> tuple[int, bool]:
    """``(count, exact)``: the rows of ``statement``, counted up to ``cap`` (then ``(cap, False)``). The
    rows are counted as constants, so an index that answers the WHERE answers the count alone."""
    rows = statement.order_by(None).with_only_columns(literal_column("1"), maintain_column_froms=True)
    counted = select(func.count()).select_from(rows.limit(cap + 1).subquery())
    found = int(db.session.scalar(counted) or 0)
    return (cap, False) if found > cap else (found, True)


def paginate(
    statement: Select[Any], *, offset: int, limit: int, scalars: bool = True, count_cap: int | None = None
) -> Page[Any]:
    """One query for the window and one for the total, whatever the page size. ``count_cap``: count at
    most that many rows (or to the end of the page, if further): see :data:`TOTAL_COUNT_CAP`."""
    window = statement.offset(offset).limit(limit)
    result = db.session.execute(window)
    items = list(result.scalars()) if scalars else list(result)
    # A short page already tells the total: no count query needed.
    if len(items) < limit and (items or offset == 0):
        return Page(items, offset + len(items))
    if count_cap is None:
        return Page(items, count_of(statement))
    total, exact = capped_count_of(statement, max(count_cap, offset + limit))
    return Page(items, total, exact)


# ---- keyset pagination ---------------------------------------------------------------------------------
# Offset pagination reads and throws away every row before the page (a page 5,000 rows deep reads 5,000
# rows). A keyset page starts from the last row shown instead: ``WHERE (key1, key2) < (:v1, :v2)`` is a
# seek in the index that delivers the ORDER BY, so every page costs what the first one does, and rows
# inserted meanwhile never shift the pages (no row repeated, none skipped). The position travels as an
# opaque ``cursor`` (base64url JSON of the sort and the last row's keys); clients never build one.

CURSOR_MAX_LENGTH = 512


@dataclass(frozen=True)
class Keyset:
    """The ORDER BY of a list as key columns, all in one direction, the last one unique (the id).
    ``nullable_first``: the first key may be NULL, and NULLs sort last in either direction."""

    columns: tuple[Any, ...]
    descending: bool
    nullable_first: bool = False

    def position(self, row: Any) -> list[Any]:
        return [getattr(row, column.key) for column in self.columns]

    def after(self, position: list[Any]) -> Any:
        """Rows after ``position`` in this order (a NULL first key: only the NULL tail is left)."""
        first, *rest = self.columns
        if position[0] is None:
            return and_(first.is_(None), _beyond(tuple_(*rest), tuple(position[1:]), self.descending))
        return _beyond(tuple_(*self.columns), tuple(position), self.descending)


def _beyond(keys: Any, values: tuple[Any, ...], descending: bool) -> Any:
    return keys < values if descending else keys > values


@dataclass(frozen=True)
class CursorPage(Generic[T]):
    items: list[T]
    total: int
    next_cursor: str | None  # None: this is the last page
    total_is_exact: bool = True


def encode_cursor(sort: str, position: list[Any]) -> str:
    payload = json.dumps([sort, [_encode_value(value) for value in position]], separators=(",", ":"))
    return base64.urlsafe_b64encode(payload.encode()).decode().rstrip("=")


def decode_cursor(cursor: str, sort: str) -> list[Any]:
    """The position in ``cursor``; 400 ``cursor: ...`` for anything not made by :func:`encode_cursor` for
    this ``sort`` (a cursor of another order would silently skip rows)."""
    try:
        if len(cursor) > CURSOR_MAX_LENGTH:
            raise ValueError
        raw = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        cursor_sort, values = raw
        position = [_decode_value(value) for value in values]
    except (ValueError, TypeError, binascii.Error, UnicodeDecodeError):
        raise ApiError(400, "cursor: not a cursor this list returned", param="cursor") from None
    if cursor_sort != sort:
        raise ApiError(
            400, "cursor: made for another order; send the same order_by and order", param="cursor"
        )
    return position


def _encode_value(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, datetime):
        return "d:" + value.isoformat()  # microseconds kept: a rounded key would repeat or skip rows
    if isinstance(value, uuid.UUID):
        return "u:" + value.hex
    return "s:" + str(value)


def _decode_value(value: Any) -> Any:
    if value is None:
        return None
    kind, text = value[:2], value[2:]
    if kind == "d:":
        parsed = datetime.fromisoformat(text)
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    if kind == "u:":
        return uuid.UUID(hex=text)
    if kind == "s:":
        return text
    raise ValueError(value)


def keyset_paginate(
    statement: Select[Any],
    keyset: Keyset,
    *,
    cursor: str | None,
    limit: int,
    sort: str,
    offset: int = 0,
    count_cap: int | None = None,
) -> CursorPage[Any]:
    """The page after ``cursor`` (the first page for None or ""), ``limit`` rows, with the cursor of the
    next page and the same ``total`` as :func:`paginate` (every row the filters find). ``offset``: the
    caller's skip, refused unless 0 (a cursor already is the position)."""
    position = decode_cursor(cursor, sort) if cursor else None
    if offset:
        raise ApiError(
            400, "cursor: cannot be combined with skip (the cursor is the position)", param="cursor"
        )
    window = statement if position is None else statement.where(keyset.after(position))
    # One row more than the page tells whether there is a next page without a last, empty one.
    items = list(db.session.scalars(window.limit(limit + 1)))
    if len(items) <= limit and position is not None and position[0] is not None and keyset.nullable_first:
        # A seek on the row value leaves out the NULL tail (which sorts last): read it after the rest.
        tail = statement.where(keyset.columns[0].is_(None)).limit(limit + 1 - len(items))
        items += list(db.session.scalars(tail))
    more = len(items) > limit
    items = items[:limit]
    next_cursor = encode_cursor(sort, keyset.position(items[-1])) if more else None
    if position is None and not more:
        return CursorPage(items, len(items), next_cursor)
    if count_cap is None:
        return CursorPage(items, count_of(statement), next_cursor)
    total, exact = capped_count_of(statement, count_cap)
    return CursorPage(items, total, next_cursor, exact)
