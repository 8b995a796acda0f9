"""The stores: migrations match the models, SQLite runs with WAL and foreign keys, pagination helpers."""

from __future__ import annotations

import uuid

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from flask import Flask
from sqlalchemy import select, text
from sqlalchemy.exc import IntegrityError

from blueprints.organizations.models import ApiKey, Organization
from core.db import compared, db
from core.pagination import paginate


def test_migrations_produce_exactly_the_models(app: Flask) -> None:
    with app.app_context(), db.engine.connect() as connection:
        context = MigrationContext.configure(
            connection, opts={"compare_type": False, "include_object": compared}
        )
        differences = compare_metadata(context, db.metadata)
    assert differences == [], "a model changed without a migration: run `flask --app app db migrate`"


def test_sqlite_runs_with_wal_and_foreign_keys(app: Flask) -> None:
    with app.app_context():
        if db.engine.dialect.name != "sqlite":
            pytest.skip("SQLite settings")
        assert db.session.scalar(text("PRAGMA journal_mode")) == "wal"
        assert db.session.scalar(text("PRAGMA foreign_keys")) == 1
        db.session.add(ApiKey(organization_id=uuid.uuid4(), environment="live", prefix="p", key_hash="h"))
        with pytest.raises(IntegrityError):
            db.session.commit()
        db.session.rollback()


def test_paginate_counts_and_windows_in_two_queries(app: Flask, queries) -> None:
    with app.app_context():
        for index in range(7):
            db.session.add(Organization(name=f"org {index:02d}", products=[]))
        db.session.commit()
        statement = select(Organization).order_by(Organization.name)
        with queries() as counted:
            full = paginate(statement, offset=0, limit=5)
        assert [o.name for o in full.items][-1] == "org 04"
        assert full.total == 7
        assert counted.count == 2  # a full page needs the count query
        with queries() as counted:
            last = paginate(statement, offset=5, limit=5)
        assert [o.name for o in last.items] == ["org 05", "org 06"]
        assert last.total == 7 and counted.count == 1  # a short page tells the total by itself
        with queries() as counted:
            beyond = paginate(statement, offset=50, limit=5)
        assert beyond.items == [] and beyond.total == 7 and counted.count == 2
