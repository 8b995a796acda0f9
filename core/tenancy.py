"""Tenant-scoped lookups: the one way to turn a client-supplied id into an object (Redash's
``get_by_id_and_org``).

Every model an organization owns carries ``organization_id``; an object of another organization, an id
that names nothing and an id that is not even well-formed are all the same "not found" to the caller, so a
response never tells whether an id exists elsewhere. ``tests/core/test_tenancy.py`` fails when a service
looks up a tenant-owned model by primary key without going through here.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any, TypeVar

from sqlalchemy import inspect, select
from sqlalchemy.orm import Mapper
from sqlalchemy.orm.util import identity_key

from core.db import db
from core.errors import not_found

M = TypeVar("M")


def _coerce(model: type[Any], object_id: Any) -> Any:
    """Ids arrive as text from paths and bodies; a UUID key needs a UUID (a malformed one finds nothing)."""
    mapper: Mapper[Any] = model.__mapper__  # type: ignore[attr-defined]
    key_type = mapper.primary_key[0].type.python_type
    if key_type is uuid.UUID and not isinstance(object_id, uuid.UUID):
        try:
            return uuid.UUID(str(object_id))
        except ValueError:
            return None
    return object_id


def find_for_org(
    model: type[M],
    object_id: Any,
    organization_id: Any,
    *,
    options: Iterable[Any] = (),
    fresh: bool = False,
    loads: Iterable[str] | None = None,
) -> M | None:
    """The object of ``organization_id`` with this id, or None.

    An object this session already holds is returned without a query (the query would return that same
    object, attributes unchanged), provided ``options`` load nothing it lacks: with options, ``loads``
    names the attributes they load, and the shortcut is taken only when all of them are loaded."""
    options = tuple(options)
    if object_id is None:
        return None
    key = _coerce(model, object_id)
    if key is None:
        return None
    if not fresh and (not options or loads is not None):
        # Already loaded by this request (a page shows one conversation in four fragments' worth of
        # services): the session's copy, as the query below would return it anyway, without the query.
        present = db.session.identity_map.get(identity_key(model, key))
        if (
            present is not None
            and present not in db.session.deleted
            and not (inspect(present).unloaded & set(loads or ()))
        ):
            return present if present.organization_id == organization_id else None  # type: ignore[attr-defined]
    mapper: Mapper[Any] = model.__mapper__  # type: ignore[attr-defined]
    statement = (
        select(model)
        .where(mapper.primary_key[0] == key, model.organization_id == organization_id)  # type: ignore[attr-defined]
        .options(*options)
    )
    if fresh:
        statement = statement.execution_options(populate_existing=True)
    return db.session.scalars(statement).first()


def get_for_org(
    model: type[M],
    object_id: Any,
    organization_id: Any,
    resource: str | None = None,
    *,
    options: Iterable[Any] = (),
    fresh: bool = False,
) -> M:
    """The object of ``organization_id`` with this id, or 404 ``No <resource> found``."""
    found = find_for_org(model, object_id, organization_id, options=options, fresh=fresh)
    if found is None:
        raise not_found(resource or model.__name__)
    return found


def missing_ids(
    model: type[Any], ids: Iterable[Any], organization_id: Any, *, column: Any = None
) -> list[Any]:
    """Which of ``ids`` name no object of ``organization_id`` (one query for the whole list)."""
    wanted = list(dict.fromkeys(i for i in ids if i is not None))
    if not wanted:
        return []
    mapper: Mapper[Any] = model.__mapper__  # type: ignore[attr-defined]
    key_column = column if column is not None else mapper.primary_key[0]
    coerced = {i: _coerce(model, i) if column is None else i for i in wanted}
    found = set(
        db.session.scalars(
            select(key_column).where(
                key_column.in_([c for c in coerced.values() if c is not None]),
                model.organization_id == organization_id,  # type: ignore[attr-defined]
            )
        )
    )
    return [i for i, c in coerced.items() if c is None or c not in found]
