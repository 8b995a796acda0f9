"""Plans of text searches: PostgreSQL reads a GIN trigram index only through a bitmap scan, which
``tests/support/plans.query_plan`` forbids; these helpers allow it."""

from __future__ import annotations

from typing import Any

from flask import Flask
from sqlalchemy import select, text

from core.db import db
from core.environments import LIVE, in_environment
from core.textsearch import TextIndex, contains
from tests.support.plans import captured_statements, query_plan


def assert_trigram_indexes_serve(app: Flask, index: TextIndex, search: str) -> None:
    """PostgreSQL: the search predicate alone, explained with table scans forbidden, is read through a
    trigram index for each searched column."""
    model = next(m.class_ for m in db.Model.registry.mappers if m.local_table.name == index.table)
    with in_environment(app, LIVE):
        with captured_statements() as seen:
            db.session.execute(select(model.id).where(contains(index, model, search))).all()
        plan = text_plan(*seen[-1])
        db.session.rollback()
    for column in index.columns:
        assert index.trigram_index(column) in plan, plan
    assert "Seq Scan" not in plan, plan


def text_plan(statement: str, parameters: Any) -> str:
    """``query_plan`` with bitmap scans allowed on PostgreSQL: a GIN index is only read through one."""
    connection = db.session.connection()
    if connection.dialect.name == "sqlite":
        return query_plan(statement, parameters)
    connection.execute(text("SET LOCAL enable_seqscan = off"))
    rows = connection.exec_driver_sql(f"EXPLAIN {statement}", parameters).fetchall()
    return "\n".join(str(row[0]) for row in rows)
