"""The SQLAlchemy base, column helpers shared by every area, and the SQLite connection settings."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from flask_sqlalchemy import SQLAlchemy
from sqlalchemy import JSON, DateTime, Index, MetaData, Select, Uuid, event
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.engine import Engine
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, registry
from sqlalchemy.schema import CreateIndex
from sqlalchemy.types import TypeDecorator

# Stable constraint names so that Alembic migrations (and SQLite batch mode) can address them.
NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


def utcnow() -> datetime:
    return datetime.now(UTC)


class UTCDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC datetimes on every backend (SQLite stores naive values)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column")
        return value.astimezone(UTC)

    def process_result_value(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


# JSON documents: JSONB on PostgreSQL (indexable), JSON text elsewhere.
JSONType = JSON().with_variant(JSONB(), "postgresql")


class Base(DeclarativeBase):
    # One registry carries the metadata and the type map (SQLAlchemy 2.1 refuses a per-base map on the
    # subclass that Flask-SQLAlchemy derives from this base).
    registry = registry(
        metadata=MetaData(naming_convention=NAMING_CONVENTION),
        type_annotation_map={
            datetime: UTCDateTime(),
            uuid.UUID: Uuid(as_uuid=True),
            dict[str, Any]: JSONType,
        },
    )


db = SQLAlchemy(model_class=Base)


class TimestampMixin:
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)


class UUIDPrimaryKeyMixin:
    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=uuid.uuid4)


def isoformat(value: datetime | None) -> str | None:
    """ISO 8601 with milliseconds and a Z suffix, the shape every area of the spec returns."""
    if value is None:
        return None
    return value.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _is_sqlite(dbapi_connection: Any) -> bool:
    return type(dbapi_connection).__module__.startswith("sqlite3")


@event.listens_for(Engine, "connect")
def _sqlite_pragmas(dbapi_connection: Any, connection_record: Any) -> None:
    """WAL lets readers work while one writer commits; SQLite leaves foreign keys off unless asked."""
    if not _is_sqlite(dbapi_connection):
        return
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=5000")
    cursor.close()


@event.listens_for(Engine, "savepoint")
def _sqlite_savepoint_inside_a_transaction(connection: Any, name: str) -> None:
    """pysqlite opens a transaction only before a data change: a SAVEPOINT taken before any write would
    itself be the transaction, and its RELEASE a silent early commit of the unit of work. Open the
    transaction first. (Reads keep running outside one, so concurrent read-then-write units still wait
    on busy_timeout instead of failing on a stale snapshot.)"""
    dbapi_connection = connection.connection.dbapi_connection
    if _is_sqlite(dbapi_connection) and not dbapi_connection.in_transaction:
        dbapi_connection.execute("BEGIN")


# Indexes whose column order (``DESC NULLS LAST``) is spelled in their migration: the models declare their
# columns, and the model/migration comparison (autogenerate, tests/core/test_database.py) skips them,
# because PostgreSQL reflects the order and SQLite does not. Their query plans are tested instead.
ORDERED_INDEXES: set[str] = set()


def ordered_index(name: str, *columns: str) -> Index:
    ORDERED_INDEXES.add(name)
    return Index(name, *columns)


# Schema objects that exist only in migrations (text-search indexes, SQLite FTS5 tables and their shadow
# tables), registered by core.textsearch.text_index; skipped by the comparison like the ordered indexes.
UNMODELLED: set[str] = set()


def compared(obj: Any, name: str | None, type_: str, reflected: bool, compare_to: Any) -> bool:
    """Alembic's ``include_object``: everything but the :data:`ORDERED_INDEXES` and :data:`UNMODELLED`."""
    return not ((type_ == "index" and name in ORDERED_INDEXES) or name in UNMODELLED)


@compiles(CreateIndex, "sqlite")
def _sqlite_index_without_nulls_last(element: CreateIndex, compiler: Any, **kw: Any) -> str:
    """Index columns declared ``DESC NULLS LAST`` (the order PostgreSQL needs spelled out) are plain
    ``DESC`` on SQLite, which sorts NULLs first ascending, hence last descending, and refuses the clause
    in an index."""
    return str(compiler.visit_create_index(element, **kw)).replace(" DESC NULLS LAST", " DESC")


def for_update(statement: Select[Any], *, skip_locked: bool = False, no_key: bool = False) -> Select[Any]:
    """``statement`` (rows about to be read, changed and written back) holding their rows until the commit,
    and read afresh: a read-modify-write of a row (a message's JSON ``status`` merge, for one) must take
    turns with a concurrent one or it overwrites the other's change.

    PostgreSQL: ``SELECT ... FOR UPDATE`` (callers order the rows, so concurrent lockers queue instead of
    deadlocking). SQLite has no row locks and pysqlite reads outside a transaction: the database's write
    lock is taken first (``BEGIN IMMEDIATE``, waiting on ``busy_timeout``), so the read sees the last
    commit and nobody writes before ours. ``skip_locked`` (PostgreSQL): rows another transaction holds
    are left out instead of waited for. ``no_key`` (PostgreSQL): ``FOR NO KEY UPDATE``, the lock an
    UPDATE of non-key columns takes: lockers still take turns, but another transaction's foreign-key
    check on the row (``FOR KEY SHARE``: a message inserted or updated in a locked conversation) does
    not wait for it, so that check cannot close a cycle of waits."""
    connection = db.session.connection()
    if connection.dialect.name == "sqlite":
        raw = connection.connection.dbapi_connection
        if raw is not None and not raw.in_transaction:
            raw.execute("BEGIN IMMEDIATE")
        return statement.execution_options(populate_existing=True)
    locked = statement.with_for_update(skip_locked=skip_locked, key_share=no_key)
    return locked.execution_options(populate_existing=True)


# SQLSTATEs of a transaction that lost a lock conflict: a deadlock victim, a serialization failure.
LOCK_CONFLICTS = frozenset({"40P01", "40001"})


def lock_conflict(error: BaseException) -> str | None:
    """The SQLSTATE when ``error`` (a SQLAlchemy error or the driver's own) says the transaction lost a
    lock conflict: rolled back by the database, it can run again as it was; ``None`` otherwise."""
    state = getattr(getattr(error, "orig", None) or error, "sqlstate", None)
    return state if state in LOCK_CONFLICTS else None
