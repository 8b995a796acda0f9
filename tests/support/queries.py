"""Count the SQL statements a block of code sends, to hold list endpoints to a constant query budget."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Engine


class QueryCounter:
    def __init__(self) -> None:
        self.statements: list[str] = []

    @property
    def count(self) -> int:
        return len(self.statements)

    def __call__(self) -> int:
        return self.count


@contextmanager
def count_queries() -> Iterator[QueryCounter]:
    counter = QueryCounter()

    def _record(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool) -> None:
        if not statement.lstrip().upper().startswith(("PRAGMA", "SAVEPOINT", "RELEASE")):
            counter.statements.append(statement)

    event.listen(Engine, "after_cursor_execute", _record)
    try:
        yield counter
    finally:
        event.remove(Engine, "after_cursor_execute", _record)


class CommitCounter:
    def __init__(self) -> None:
        self.count = 0


@contextmanager
def count_commits() -> Iterator[CommitCounter]:
    """Count COMMITs sent to any database (both stores) inside the block."""
    counter = CommitCounter()

    def _record(conn: Any) -> None:
        counter.count += 1

    event.listen(Engine, "commit", _record)
    try:
        yield counter
    finally:
        event.remove(Engine, "commit", _record)
