"""Query plans for the tests that hold a list to its index: capture the statements a service sends, and
explain one on the current store (SQLite's ``EXPLAIN QUERY PLAN``; PostgreSQL's ``EXPLAIN`` with scans,
sorts and hashed groupings forbidden, so the plan shows whether an index can deliver the order at all)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import event, text

from core.db import db


@contextmanager
def captured_statements() -> Iterator[list[tuple[str, Any]]]:
    """``(statement, parameters)`` of everything sent to the current store inside the block."""
    seen: list[tuple[str, Any]] = []

    def keep(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool) -> None:
        seen.append((statement, parameters))

    event.listen(db.engine, "before_cursor_execute", keep)
    try:
        yield seen
    finally:
        event.remove(db.engine, "before_cursor_execute", keep)


def query_plan(statement: str, parameters: Any) -> str:
    """The plan of one captured statement, as text (inside the caller's transaction: roll back after)."""
    connection = db.session.connection()
    if connection.dialect.name == "sqlite":
        rows = connection.exec_driver_sql(f"EXPLAIN QUERY PLAN {statement}", parameters).fetchall()
        return "\n".join(str(row[-1]) for row in rows)
    # PostgreSQL would rightly scan a tiny table; forbid the scan and the sort so that the plan shows
    # whether an index can deliver the order at all (a disabled node still appears when nothing else can).
    connection.execute(text("SET LOCAL enable_seqscan = off"))
    connection.execute(text("SET LOCAL enable_sort = off"))
    connection.execute(text("SET LOCAL enable_bitmapscan = off"))
    # and the hash of a GROUP BY, which on a tiny table ties with any index: a group must come in order
    connection.execute(text("SET LOCAL enable_hashagg = off"))
    rows = connection.exec_driver_sql(f"EXPLAIN {statement}", parameters).fetchall()
    return "\n".join(str(row[0]) for row in rows)
